/**
 * The frontend: ESTree of a kernel + the types of its parameters → typed IR (ir.ts).
 *
 * One handler per ESTree node type, in two tables (statements and expressions); a node type that
 * is in neither is a `KernelCompileError` naming the construct and its line:column. Typing happens
 * here, once, before any backend: every expression gets its type and every conversion becomes an
 * explicit `cast` node.
 *
 * Local variables are typed by unification: a variable's type is the join (typing-rules.ts) of the
 * types of every value assigned to it, so `let s = 0; … s += a[i]` makes `s` a float when `a` holds
 * floats. The lowering is repeated until no variable's type changes (types only widen, so this
 * ends after a few rounds).
 */
import { canCastScalar } from '../cast-rules.js';
import { type DType, DTYPES, isBigInt, isFloat, isInteger } from '../dtypes.js';
import { KernelCompileError, type SourceLocation } from '../errors.js';
import {
  type Argument, type ArrayType, type BitwiseOp, type CompareOp, type Expr, type HelperFunction, MATH_CONSTANTS,
  type Stmt, type TypedKernel, type ValueType, type Variable, isArrayType,
} from './ir.js';
import { compileError, type EsNode, locationOf, type ParsedFunction, parseFunction } from './parse.js';
import { isMathFunction, MATH, MATH_FUNCTIONS, type MathFunction } from './math-functions.js';
import { arithmeticType, floatFor, isMixedSignComparison, joinTypes, promote } from './typing-rules.js';
import { convertConstant, foldBinary, foldCompare, foldMath, foldUnary } from './constant-folding.js';
import { type KernelTable, tableDType } from './tables.js';

/** Names a kernel may use besides its parameters: helper functions, numeric constants and lookup tables (typed arrays, tables.ts). */
export type KernelEnv = Readonly<Record<string, unknown>>;

/** A helper in `env`: a function, or its source text (which no minifier or coverage tool changes). */
// eslint-disable-next-line @typescript-eslint/no-unsafe-function-type
type HelperSource = Function | string | TypedHelper;

/**
 * A helper whose results are converted to one dtype, as a vectorize kernel's are to its return
 * type: the ufunc methods call the ufunc's kernel this way, so that every step of a fold is the
 * loop's type (NumPy's), whatever type the kernel's own expressions have (`return 0` is a double).
 */
export class TypedHelper {
  // eslint-disable-next-line @typescript-eslint/no-unsafe-function-type
  constructor(readonly fn: Function | string, readonly returns: DType) {}
}

function isHelper(value: unknown): value is HelperSource {
  return typeof value === 'function' || typeof value === 'string' || value instanceof TypedHelper;
}

/** The parameters a kernel is specialised for: a scalar dtype or an array per parameter. */
export interface KernelSpec {
  readonly params: readonly ValueType[];
  /** `void` for guvectorize; a dtype for vectorize; `infer` to take the join of the returned values. */
  readonly returnType: DType | 'void' | 'infer';
  /** Names of the parameters as the signature's user sees them in messages (`argument 2`). */
  readonly env: KernelEnv;
}

/** A number literal not yet given a type: it takes the type of the operand it meets. */
interface Weak {
  readonly kind: 'weak';
  readonly value: number;
  readonly loc: SourceLocation;
}
type Value = Expr | Weak;

const LOCAL_ARRAY_TYPES: Readonly<Record<string, DType>> = {
  Float32Array: 'float32', Float64Array: 'float64', Int32Array: 'int32', Uint32Array: 'uint32',
  Int16Array: 'int16', Uint16Array: 'uint16', Int8Array: 'int8', Uint8Array: 'uint8', Uint8ClampedArray: 'uint8c',
};

const MAX_ROUNDS = 12;

/**
 * The float type of float literals and of float math over integers: float64, as every JS number
 * is a double. A literal next to a float32 operand still becomes float32 (`x * 0.5`), so float32
 * kernels stay float32 unless they declare a double on purpose (`let c = 1.0`). The gpu target
 * computes such float64 locals in float32 (WGSL has no f64) and documents the difference.
 */
const KERNEL_FLOAT: DType = 'float64';

type Binding =
  | { readonly kind: 'scalar'; readonly variable: Variable; readonly isConst: boolean }
  | { readonly kind: 'array'; readonly variable: Variable; readonly localLength?: number };

/** Compiles one function (the kernel or a helper) for one set of parameter types. */
class FunctionLowering {
  private scopes: Map<string, Binding>[] = [];
  private nextId = 0;
  private loopDepth = 0;
  readonly locals: Variable[] = [];
  /** Types assumed this round, by declaration position; widened by what the round observes. */
  private observed = new Map<number, DType>();
  private returnTypes: DType[] = [];
  changed = false;

  constructor(
    private readonly fn: ParsedFunction,
    private readonly paramTypes: readonly ValueType[],
    private readonly returnType: DType | 'void' | 'infer',
    private readonly assumed: Map<number, DType>,
    private readonly context: KernelContext,
    private readonly roles: ParamRoles,
    /** For `infer`: the return type settled on by the previous round, which every return converts to. */
    private readonly assumedReturn: DType | undefined,
  ) {}

  private params: Variable[] = [];

  private isReadOnly(v: Variable): boolean {
    if (this.context.isTable(v)) return true;
    const i = this.params.indexOf(v);
    return i >= 0 && this.roles.readOnly(i);
  }

  private coreDimValue(v: Variable, axis: number): number | undefined {
    const i = this.params.indexOf(v);
    return i >= 0 ? this.roles.coreDim(i, axis) : undefined;
  }

  /** Parameters this function stores into, directly or through helpers. */
  readonly written = new Set<Variable>();

  /** The initial values of `const` scalars, for values needed when compiling (local array lengths). */
  private readonly constInits = new Map<Variable, Value>();

  get source(): string {
    return this.fn.source;
  }

  fail(node: EsNode, message: string): never {
    throw compileError(this.fn, locationOf(node), message);
  }

  /**
   * The position of `node` in this function's text, with the function where it was given as one:
   * a run-time error at it (an index out of bounds) says the position in the user's file.
   */
  private at(node: EsNode): SourceLocation {
    const loc = locationOf(node);
    return this.fn.fn ? { ...loc, fn: this.fn.fn } : loc;
  }

  text(node: EsNode): string {
    // Positions are in the parsed text, which starts with the `(` we added.
    return this.fn.source.slice(node.start - 1, node.end - 1);
  }

  /** The inferred type of values the function returns (for `infer`). */
  inferredReturnType(): DType | 'void' {
    if (this.returnTypes.length === 0) return 'void';
    return this.returnTypes.reduce(joinTypes);
  }

  lower(): { params: Variable[]; body: Stmt[] } {
    this.scopes = [new Map()];
    const params = (this.params = this.fn.params.map((name, i) => {
      const type = this.paramTypes[i]!;
      const variable = this.newVariable(name, type);
      this.scopes[0]!.set(name, isArrayType(type) ? { kind: 'array', variable } : { kind: 'scalar', variable, isConst: false });
      return variable;
    }));
    const node = this.fn.node;
    let body: Stmt[];
    if (node.body.type === 'BlockStatement') {
      body = this.block(node.body.body);
    } else {
      // `(a, b) => a + b`: the body is the returned expression.
      body = this.withDraws(() => [this.returnStatement(node.body, node.body)]);
    }
    return { params, body };
  }

  private newVariable(name: string, type: ValueType): Variable {
    const variable = { id: this.nextId++, name, type };
    this.locals.push(variable);
    return variable;
  }

  private lookup(name: string): Binding | undefined {
    for (let i = this.scopes.length - 1; i >= 0; i--) {
      const b = this.scopes[i]!.get(name);
      if (b) return b;
    }
    return this.context.tableBinding(name);
  }

  private declare(node: EsNode, name: string, binding: Binding): void {
    const scope = this.scopes[this.scopes.length - 1]!;
    if (scope.has(name)) this.fail(node, `\`${name}\` is declared twice in the same block`);
    scope.set(name, binding);
  }

  private observe(declStart: number, t: DType): void {
    const previous = this.observed.get(declStart);
    const next = previous === undefined ? t : joinTypes(previous, t);
    this.observed.set(declStart, next);
    const assumed = this.assumed.get(declStart);
    const widened = assumed === undefined ? next : joinTypes(assumed, next);
    if (widened !== assumed) {
      this.assumed.set(declStart, widened);
      this.changed = true;
    }
  }

  private declStart = new Map<number, number>(); // variable id → declaration position

  // ---------------------------------------------------------------- statements

  block(statements: EsNode[]): Stmt[] {
    this.scopes.push(new Map());
    const out: Stmt[] = [];
    for (const s of statements) out.push(...this.statement(s));
    this.scopes.pop();
    return out;
  }

  private statement(node: EsNode): Stmt[] {
    const handler = STATEMENTS[node.type];
    if (!handler) this.fail(node, `${describeNode(node)} is not supported in kernels`);
    return this.withDraws(() => handler(this, node));
  }

  /**
   * The `Math.random()` calls of the statement being lowered, by source position: each becomes a
   * `draw` statement before it, in source order, so expressions stay free of effects (ir.ts). A
   * position seen twice is one call that lowering looked at twice (compound assignments).
   */
  private draws = new Map<number, { stmt: Stmt; value: Expr }>();
  /** Where `Math.random()` may not be called (a loop's test or update), for the message. */
  private drawRefusal: string | undefined;

  private withDraws(lowerStatement: () => Stmt[]): Stmt[] {
    const outer = this.draws;
    this.draws = new Map();
    try {
      const lowered = lowerStatement();
      return this.draws.size ? [...[...this.draws.values()].map((d) => d.stmt), ...lowered] : lowered;
    } finally {
      this.draws = outer;
    }
  }

  private refusingDraws<T>(where: string, lowerPart: () => T): T {
    const outer = this.drawRefusal;
    this.drawRefusal = where;
    try {
      return lowerPart();
    } finally {
      this.drawRefusal = outer;
    }
  }

  /** `Math.random()` (float64) or `Math.fround(Math.random())` (float32): the next draw of the iteration's stream. */
  private draw(node: EsNode, type: 'float64' | 'float32'): Value {
    if ((node.arguments as EsNode[]).length) this.fail(node, '`Math.random` takes no arguments');
    if (this.drawRefusal) {
      this.fail(node, `\`Math.random()\` is not supported in ${this.drawRefusal}, which runs again on every iteration: draw into a variable in the loop's body (\`const u = Math.random();\`)`);
    }
    const known = this.draws.get(node.start as number);
    if (known) return known.value;
    const loc = this.at(node);
    const variable = this.newVariable('random', type);
    const value: Expr = { kind: 'var', variable, type, loc };
    this.draws.set(node.start as number, { stmt: { kind: 'draw', variable, loc }, value });
    return value;
  }

  variableDeclaration(node: EsNode): Stmt[] {
    if (node.kind === 'var') this.fail(node, '`var` is not supported in kernels: declare with `let` or `const`');
    const out: Stmt[] = [];
    for (const d of node.declarations as EsNode[]) {
      if (d.id.type !== 'Identifier') this.fail(d.id, 'destructuring is not supported in kernels: declare one name at a time');
      const name = d.id.name as string;
      if (!d.init) this.fail(d, `\`${name}\` must be declared with an initial value, e.g. \`let ${name} = 0\``);
      const loc = this.at(d);
      if (d.init.type === 'NewExpression') {
        const { dtype, length } = this.localArray(d.init);
        const variable = this.newVariable(name, { kind: 'array', dtype, ndim: 1 });
        this.declare(d, name, { kind: 'array', variable, localLength: length });
        out.push({ kind: 'local-array', variable, length, loc });
        continue;
      }
      if (d.init.type === 'Identifier') {
        const b = this.lookup(d.init.name);
        if (b?.kind === 'array') {
          if (node.kind !== 'const') this.fail(d, `an array can only be given another name with \`const\`: \`const ${name} = ${d.init.name}\``);
          this.declare(d, name, b);
          continue;
        }
      }
      const init = this.expression(d.init);
      const initType = init.kind === 'weak' ? weakDefault(init) : promoteVar(init.type);
      const start = d.start as number;
      this.observe(start, initType);
      const type = this.assumed.get(start)!;
      const variable = this.newVariable(name, type);
      this.declStart.set(variable.id, start);
      this.declare(d, name, { kind: 'scalar', variable, isConst: node.kind === 'const' });
      if (node.kind === 'const') this.constInits.set(variable, init);
      out.push({ kind: 'let', variable, init: this.coerce(init, type), loc });
    }
    return out;
  }

  private localArray(node: EsNode): { dtype: DType; length: number } {
    const ctor = node.callee.type === 'Identifier' ? (node.callee.name as string) : '';
    const dtype = LOCAL_ARRAY_TYPES[ctor];
    if (!dtype) {
      this.fail(node, `\`new ${this.text(node.callee)}\` is not supported in kernels; local arrays are \`new Float32Array(K)\`, \`Float64Array\`, \`Int32Array\`, \`Uint32Array\`, \`Int16Array\`, \`Uint16Array\`, \`Int8Array\`, \`Uint8Array\` or \`Uint8ClampedArray\``);
    }
    if (node.arguments.length !== 1) this.fail(node, `\`new ${ctor}\` takes one argument, the length`);
    const length = this.constantInteger(node.arguments[0]);
    if (length === undefined || length < 1 || length > 1 << 20) {
      this.fail(node.arguments[0], `the length of a local array must be a positive integer known when the kernel is compiled (a literal, an \`env\` constant, a core dimension such as \`out.length\`, a \`const\` holding one, or arithmetic on these), found \`${this.text(node.arguments[0])}\``);
    }
    return { dtype, length };
  }

  /**
   * Evaluates an expression that must be known at compile time: literals, env constants, core
   * dimensions, `const` locals holding such values, and arithmetic on them
   * (`const n = x.length; new Float32Array(2 * n)`).
   */
  private constantInteger(node: EsNode): number | undefined {
    const n = this.compileTimeNumber(this.expression(node));
    return n !== undefined && Number.isInteger(n) ? n : undefined;
  }

  /**
   * The value of `v` when it is known at compile time, computed as it would be at run time (by the
   * constant folder, constant-folding.ts): only what a local array length may be made of.
   */
  private compileTimeNumber(v: Value): number | undefined {
    const known = (x: Value | undefined) => (x === undefined ? undefined : this.compileTimeNumber(x));
    const typed = (n: number | undefined, t: DType) => {
      if (n === undefined) return undefined;
      const c = convertConstant(n, t);
      return typeof c === 'number' ? c : undefined;
    };
    switch (v.kind) {
      case 'weak': return v.value;
      case 'const': return typeof v.value === 'number' ? v.value : undefined;
      case 'dim': return this.coreDimValue(v.array, v.axis);
      case 'var': return known(this.constInits.get(v.variable));
      case 'cast': return typed(known(v.value), v.type);
      case 'unary': {
        const x = known(v.arg);
        return v.op === '-' && x !== undefined ? foldUnary('-', x, v.type) : undefined;
      }
      case 'binary': {
        const [a, b] = [known(v.left), known(v.right)];
        if (a === undefined || b === undefined || !['+', '-', '*', '/', '%'].includes(v.op)) return undefined;
        return foldBinary(v.op, a, b, v.type);
      }
      case 'math': {
        const args = v.args.map(known);
        if (!MATH[v.fn].integral || args.some((a) => a === undefined)) return undefined;
        return typed(foldMath(v.fn, args as number[]), v.type);
      }
      default: return undefined;
    }
  }

  expressionStatement(node: EsNode): Stmt[] {
    const e = node.expression as EsNode;
    if (node.directive) return []; // 'use strict'
    switch (e.type) {
      case 'AssignmentExpression':
        return this.assignment(e);
      case 'UpdateExpression':
        return this.update(e);
      case 'CallExpression': {
        const call = this.call(e);
        if (call.kind !== 'call') this.fail(e, `the result of \`${this.text(e)}\` is unused`);
        return [{ kind: 'call', call, loc: this.at(e) }];
      }
      case 'SequenceExpression':
        return (e.expressions as EsNode[]).flatMap((x) => this.expressionStatement({ ...node, expression: x, directive: undefined }));
      default:
        this.fail(e, `\`${this.text(e)}\` has no effect; a statement must assign, update (\`++\`/\`--\`) or call a helper`);
    }
  }

  private assignTarget(node: EsNode): { kind: 'var'; variable: Variable; current: Expr } | { kind: 'store'; array: Variable; indices: Expr[]; current: Expr } {
    if (node.type === 'Identifier') {
      const b = this.lookup(node.name);
      if (!b) this.fail(node, this.missingName(node.name));
      if (b.kind === 'array' && this.context.isTable(b.variable)) this.fail(node, tableWriteMessage(node.name));
      if (b.kind === 'array') this.fail(node, `\`${node.name}\` is an array; assign to its elements (\`${node.name}[i] = …\`), not to the name`);
      if (b.isConst) this.fail(node, `\`${node.name}\` is \`const\` and cannot be assigned`);
      const current: Expr = { kind: 'var', variable: b.variable, type: b.variable.type as DType, loc: this.at(node) };
      return { kind: 'var', variable: b.variable, current };
    }
    if (node.type === 'MemberExpression' && node.computed) {
      const current = this.member(node);
      if (current.kind !== 'index') this.fail(node, `\`${this.text(node)}\` cannot be assigned`);
      if (this.context.isTable(current.array)) this.fail(node, tableWriteMessage(current.array.name));
      if (this.isReadOnly(current.array)) {
        this.fail(node, `\`${current.array.name}\` is an input; a kernel writes only its outputs (declare \`${current.array.name}\` as an output in the layout, or pass the same array as \`out\` to update it in place)`);
      }
      return { kind: 'store', array: current.array, indices: [...current.indices], current };
    }
    this.fail(node, `\`${this.text(node)}\` cannot be assigned; assign to a local variable or an array element`);
  }

  private write(target: ReturnType<FunctionLowering['assignTarget']>, value: Value, node: EsNode): Stmt {
    const loc = this.at(node);
    if (target.kind === 'store') {
      this.written.add(target.array);
      return { kind: 'store', array: target.array, indices: target.indices, value: this.coerce(value, target.current.type), loc };
    }
    const start = this.declStart.get(target.variable.id);
    if (start !== undefined) this.observe(start, value.kind === 'weak' ? weakDefault(value) : promoteVar(value.type));
    return { kind: 'assign', variable: target.variable, value: this.coerce(value, target.variable.type as DType), loc };
  }

  private assignment(node: EsNode): Stmt[] {
    const target = this.assignTarget(node.left);
    if (node.operator === '=') return [this.write(target, this.expression(node.right), node)];
    const op = (node.operator as string).slice(0, -1);
    if (op === '&&' || op === '||' || op === '??') this.fail(node, `\`${node.operator}\` is not supported in kernels; write an \`if\``);
    const value = this.binary(op, target.current, this.expression(node.right), node);
    return [this.write(target, value, node)];
  }

  private update(node: EsNode): Stmt[] {
    const target = this.assignTarget(node.argument);
    const one: Weak = { kind: 'weak', value: 1, loc: this.at(node) };
    return [this.write(target, this.binary(node.operator === '++' ? '+' : '-', target.current, one, node), node)];
  }

  ifStatement(node: EsNode): Stmt[] {
    const cond = this.condition(node.test);
    const then = this.branch(node.consequent);
    const otherwise = node.alternate ? this.branch(node.alternate) : [];
    return [{ kind: 'if', cond, then, otherwise, loc: this.at(node) }];
  }

  private branch(node: EsNode): Stmt[] {
    return node.type === 'BlockStatement' ? this.block(node.body) : this.block([node]);
  }

  forStatement(node: EsNode): Stmt[] {
    this.scopes.push(new Map());
    let init: Stmt[] = [];
    if (node.init) {
      init = node.init.type === 'VariableDeclaration'
        ? this.variableDeclaration(node.init)
        : this.expressionStatement({ ...node.init, type: 'ExpressionStatement', expression: node.init });
    }
    const cond = node.test ? this.refusingDraws('a loop\'s test', () => this.condition(node.test)) : undefined;
    const update = node.update ? this.refusingDraws('a `for` loop\'s update', () => this.expressionStatement({ ...node.update, type: 'ExpressionStatement', expression: node.update })) : [];
    const body = this.loopBody(node.body);
    this.scopes.pop();
    return [{ kind: 'loop', init, cond, update, body, testFirst: true, loc: this.at(node) }];
  }

  whileStatement(node: EsNode, testFirst: boolean): Stmt[] {
    const cond = this.refusingDraws('a loop\'s test', () => this.condition(node.test));
    const body = this.loopBody(node.body);
    return [{ kind: 'loop', init: [], cond, update: [], body, testFirst, loc: this.at(node) }];
  }

  private loopBody(node: EsNode): Stmt[] {
    this.loopDepth++;
    try {
      return this.branch(node);
    } finally {
      this.loopDepth--;
    }
  }

  jump(node: EsNode): Stmt[] {
    const word = node.type === 'BreakStatement' ? 'break' : 'continue';
    if (node.label) this.fail(node, `labelled \`${word}\` is not supported in kernels`);
    if (this.loopDepth === 0) this.fail(node, `\`${word}\` outside a loop`);
    return [{ kind: word, loc: this.at(node) }];
  }

  returnStatement(node: EsNode, argument: EsNode | null): Stmt {
    const loc = this.at(node);
    if (!argument) {
      if (this.returnType !== 'void' && this.returnType !== 'infer') this.fail(node, `this kernel must return a ${this.returnType} value`);
      return { kind: 'return', value: undefined, loc };
    }
    if (this.returnType === 'void') {
      this.fail(argument, 'this kernel returns nothing (its signature is `void`): write its results into the output arrays');
    }
    const value = this.expression(argument);
    if (this.returnType === 'infer') {
      const t = value.kind === 'weak' ? weakDefault(value) : promoteVar(value.type);
      this.returnTypes.push(t);
      const joined = this.inferredReturnType() as DType;
      return { kind: 'return', value: this.coerce(value, this.assumedReturn ?? joined), loc };
    }
    return { kind: 'return', value: this.coerce(value, this.returnType), loc };
  }

  // ---------------------------------------------------------------- expressions

  expression(node: EsNode): Value {
    const handler = EXPRESSIONS[node.type];
    if (!handler) this.fail(node, `${describeNode(node)} is not supported in kernels`);
    return handler(this, node);
  }

  condition(node: EsNode): Expr {
    return this.toBool(this.expression(node), node);
  }

  private toBool(v: Value, node: EsNode): Expr {
    if (v.kind === 'weak') return constant(v.value, 'bool', v.loc);
    if (v.type === 'bool') return v;
    return { kind: 'cast', value: v, type: 'bool', loc: this.at(node) };
  }

  /** Gives `v` the type `t`: a weak literal becomes a constant, an expression of another type a cast. */
  coerce(v: Value, t: DType): Expr {
    if (v.kind === 'weak') return constant(v.value, t, v.loc);
    if (v.type === t) return v;
    if (v.kind === 'const') return constant(v.value, t, v.loc);
    return { kind: 'cast', value: v, type: t, loc: v.loc };
  }

  literal(node: EsNode): Value {
    const loc = this.at(node);
    if (typeof node.value === 'number') return { kind: 'weak', value: node.value, loc };
    if (typeof node.value === 'boolean') return { kind: 'const', value: node.value, type: 'bool', loc };
    if (typeof node.bigint === 'string') return { kind: 'const', value: BigInt(node.bigint), type: 'int64', loc };
    const strings = typeof node.value === 'string' ? ' (strings cannot be built or measured in a kernel; to print values, run it as plain JS with `{ disableJit: true }`)' : '';
    this.fail(node, `the literal \`${node.raw}\` is not supported in kernels: only numbers, booleans and bigints are${strings}`);
  }

  identifier(node: EsNode): Value {
    const name = node.name as string;
    const loc = this.at(node);
    const b = this.lookup(name);
    if (b) {
      if (b.kind === 'array') this.fail(node, `\`${name}\` is an array; index it (\`${name}[i]\`) or pass it to a helper`);
      return { kind: 'var', variable: b.variable, type: b.variable.type as DType, loc };
    }
    if (name === 'Infinity') return { kind: 'weak', value: Infinity, loc };
    if (name === 'NaN') return { kind: 'weak', value: NaN, loc };
    if (Object.prototype.hasOwnProperty.call(this.context.env, name)) {
      const value = this.context.env[name];
      if (typeof value === 'number') return { kind: 'weak', value, loc };
      if (typeof value === 'boolean') return { kind: 'const', value, type: 'bool', loc };
      if (isHelper(value)) this.fail(node, `\`${name}\` is a helper function; call it: \`${name}(…)\``);
      this.fail(node, envValueMessage(name, value));
    }
    this.fail(node, this.unknownName(name));
  }

  /** Why `name` is no array or scalar the kernel can use: a value of `env` it cannot hold, or no such name. */
  private missingName(name: string): string {
    return Object.prototype.hasOwnProperty.call(this.context.env, name) ? envValueMessage(name, this.context.env[name]) : this.unknownName(name);
  }

  private unknownName(name: string): string {
    const message = `\`${name}\` is not defined in the kernel: it is not a parameter, a local variable or a name in \`env\` (a kernel cannot see variables around it: pass constants and helper functions as \`{ env: { ${name} } }\`)`;
    // A minifier renames the kernel's references to a helper (`scale(x)` → `Ht(x)`) but not the
    // key of `env` that passes it (`{ scale: Ht }`): helpers that the kernel never names by their key
    // are the sign.
    const unnamed = Object.keys(this.context.env).filter((key) => !new RegExp(`\\b${key}\\b`).test(this.fn.source));
    if (unnamed.length === 0) return message;
    return (
      `${message}. \`env\` has ${unnamed.map((k) => `\`${k}\``).join(', ')}, which the kernel never names: ` +
      'if this code was minified, its names no longer match the keys of `env` (and `--keep-names` hides the new names too). Give the kernel and its helpers as source text ' +
      '(`vectorize(sigs, { env: { scale: \'(v) => 3 * v\' } })(\'(a, b) => scale(a) * b\')`), which no minifier changes, or keep identifiers when minifying ' +
      '(esbuild without `--minify-identifiers` and `--keep-names`, terser `mangle: false`)'
    );
  }

  binaryExpression(node: EsNode): Value {
    const op = node.operator as string;
    const normalized = op === '===' ? '==' : op === '!==' ? '!=' : op;
    if (normalized === 'in' || normalized === 'instanceof') this.fail(node, `\`${op}\` is not supported in kernels`);
    return this.binary(normalized, this.expression(node.left), this.expression(node.right), node);
  }

  binary(op: string, left: Value, right: Value, node: EsNode): Value {
    const loc = this.at(node);
    if (left.kind === 'weak' && right.kind === 'weak') {
      // Literal-only expressions are computed as JS computes them, when the kernel is compiled.
      if (COMPARISONS.includes(op)) return { kind: 'const', value: foldCompare(op as CompareOp, left.value, right.value), type: 'bool', loc };
      if (!ARITHMETIC.includes(op) && !BITWISE.includes(op)) this.fail(node, `the operator \`${op}\` is not supported in kernels`);
      return { kind: 'weak', value: foldBinary(op as BitwiseOp, left.value, right.value, literalType(op)) as number, loc };
    }
    if (op === '**') return this.math('pow', [left, right], node);
    if (BITWISE.includes(op)) return this.bitwise(op, left, right, node);
    const lt = left.kind === 'weak' ? weakTypeAgainst(left.value, (right as Expr).type) : left.type;
    const rt = right.kind === 'weak' ? weakTypeAgainst(right.value, (left as Expr).type) : right.type;
    if (COMPARISONS.includes(op)) {
      if (lt === 'bool' && rt === 'bool' && (op === '==' || op === '!=')) {
        return { kind: 'compare', op: op as '==', left: this.coerce(left, 'bool'), right: this.coerce(right, 'bool'), operandType: 'bool', type: 'bool', loc };
      }
      if (isMixedSignComparison(lt, rt)) {
        this.fail(node, `\`${this.text(node)}\` compares a signed with an unsigned integer (${promote(lt)} and ${promote(rt)}); convert one side first, e.g. \`x | 0\` (to int32) or \`x >>> 0\` (to uint32)`);
      }
      const operandType = arithmeticType(lt, rt);
      return { kind: 'compare', op: op as '<', left: this.coerce(left, operandType), right: this.coerce(right, operandType), operandType, type: 'bool', loc };
    }
    if (!ARITHMETIC.includes(op)) this.fail(node, `the operator \`${op}\` is not supported in kernels`);
    let type = arithmeticType(lt, rt);
    // `/` is JS's true division: on integers it gives a double (`(a / b) | 0` truncates, as in JS);
    // 64-bit integers are JS bigints, whose `/` truncates.
    if (op === '/' && !isFloat(type) && !isBigInt(type)) type = 'float64';
    return { kind: 'binary', op: op as '+', left: this.coerce(left, type), right: this.coerce(right, type), type, loc };
  }

  /**
   * JS bitwise operators convert their operands with ToInt32 and give an int32 (`>>>`: uint32).
   * 64-bit integers keep 64 bits (bigint semantics, shift counts modulo 64).
   */
  private bitwise(op: string, left: Value, right: Value, node: EsNode): Value {
    const loc = this.at(node);
    const wide = [left, right].find((v): v is Expr => v.kind !== 'weak' && isBigInt(v.type));
    if (wide) {
      const type = [left, right].some((v) => v.kind !== 'weak' && v.type === 'uint64') ? 'uint64' : 'int64';
      if (op === '>>>') this.fail(node, '`>>>` is not defined for 64-bit integers (as for JS bigints); use `>>`');
      return { kind: 'binary', op: op as '&', left: this.coerce(left, type), right: this.coerce(right, type), type, loc };
    }
    const leftType = op === '>>>' ? 'uint32' : 'int32';
    const rightType = op === '<<' || op === '>>' || op === '>>>' ? 'uint32' : 'int32';
    return {
      kind: 'binary', op: op as '&',
      left: this.toInt32Family(left, leftType), right: this.toInt32Family(right, rightType),
      type: leftType, loc,
    };
  }

  private toInt32Family(v: Value, t: DType): Expr {
    return this.coerce(v, t);
  }

  logical(node: EsNode): Value {
    const op = node.operator as string;
    if (op === '??') this.fail(node, '`??` is not supported in kernels: values are never null');
    const left = this.expression(node.left);
    const right = this.expression(node.right);
    for (const [side, v] of [[node.left, left], [node.right, right]] as const) {
      if (v.kind === 'weak' || v.type !== 'bool') {
        this.fail(side, `\`${op}\` takes booleans in kernels (JS's \`a ${op} b\` on numbers returns one of them, which kernels do not copy); found \`${this.text(side)}\`, a number: compare it, e.g. \`${this.text(side)} !== 0\``);
      }
    }
    return { kind: 'logical', op: op as '&&', left: left as Expr, right: right as Expr, type: 'bool', loc: this.at(node) };
  }

  unary(node: EsNode): Value {
    const op = node.operator as string;
    const loc = this.at(node);
    if (op === 'typeof' || op === 'void' || op === 'delete') this.fail(node, `the operator \`${op}\` is not supported in kernels`);
    const arg = this.expression(node.argument);
    if (op === '!') {
      const b = this.toBool(arg, node.argument);
      if (b.kind === 'const') return { ...b, value: !b.value };
      return { kind: 'unary', op: '!', arg: b, type: 'bool', loc };
    }
    if (op === '-' || op === '+') {
      if (arg.kind === 'weak') return { kind: 'weak', value: op === '-' ? (foldUnary('-', arg.value, KERNEL_FLOAT) as number) : arg.value, loc };
      const type = promote(arg.type);
      const value = this.coerce(arg, type);
      return op === '+' ? value : { kind: 'unary', op: '-', arg: value, type, loc };
    }
    if (op === '~') {
      if (arg.kind === 'weak') return { kind: 'weak', value: foldUnary('~', arg.value, 'int32') as number, loc };
      const type = isBigInt(arg.type) ? arg.type : 'int32';
      return { kind: 'unary', op: '~', arg: this.coerce(arg, type), type, loc };
    }
    this.fail(node, `the operator \`${op}\` is not supported in kernels`);
  }

  conditional(node: EsNode): Value {
    const cond = this.condition(node.test);
    const then = this.expression(node.consequent);
    const otherwise = this.expression(node.alternate);
    if (then.kind === 'weak' && otherwise.kind === 'weak') {
      const t = joinTypes(weakDefault(then), weakDefault(otherwise));
      return { kind: 'select', cond, then: this.coerce(then, t), otherwise: this.coerce(otherwise, t), type: t, loc: this.at(node) };
    }
    const tt = then.kind === 'weak' ? weakTypeAgainst(then.value, (otherwise as Expr).type) : then.type;
    const ot = otherwise.kind === 'weak' ? weakTypeAgainst(otherwise.value, (then as Expr).type) : otherwise.type;
    const type = joinTypes(tt, ot);
    return { kind: 'select', cond, then: this.coerce(then, type), otherwise: this.coerce(otherwise, type), type, loc: this.at(node) };
  }

  member(node: EsNode): Value {
    const loc = this.at(node);
    if (!node.computed) {
      const prop = node.property.name as string;
      if (node.object.type === 'Identifier' && node.object.name === 'Math' && !this.lookup('Math')) {
        if (Object.prototype.hasOwnProperty.call(MATH_CONSTANTS, prop)) return { kind: 'weak', value: MATH_CONSTANTS[prop]!, loc };
        this.fail(node, `\`Math.${prop}\` is not a constant the kernel language knows (constants: ${Object.keys(MATH_CONSTANTS).join(', ')})`);
      }
      if (node.object.type === 'Identifier' && node.object.name === 'Number' && !this.lookup('Number')) {
        const constants: Record<string, number> = { EPSILON: Number.EPSILON, MAX_VALUE: Number.MAX_VALUE, MIN_VALUE: Number.MIN_VALUE, POSITIVE_INFINITY: Infinity, NEGATIVE_INFINITY: -Infinity, NaN: NaN, MAX_SAFE_INTEGER: Number.MAX_SAFE_INTEGER, MIN_SAFE_INTEGER: Number.MIN_SAFE_INTEGER };
        if (prop in constants) return { kind: 'weak', value: constants[prop]!, loc };
      }
      if (prop === 'length') {
        const array = this.arrayOperand(node.object);
        return this.dimension(array, 0, loc);
      }
      this.fail(node, `\`${this.text(node)}\` is not supported in kernels (arrays have \`.length\` and \`.shape[k]\`)`);
    }
    // `a.shape[k]`
    if (node.object.type === 'MemberExpression' && !node.object.computed && node.object.property.name === 'shape') {
      const array = this.arrayOperand(node.object.object);
      const axis = this.expression(node.property);
      const arrayType = array.type as ArrayType;
      if (axis.kind !== 'weak' || !Number.isInteger(axis.value) || axis.value < 0 || axis.value >= arrayType.ndim) {
        this.fail(node.property, `\`.shape[…]\` takes a literal axis from 0 to ${arrayType.ndim - 1} for \`${array.name}\`, which has ${arrayType.ndim} dimension${arrayType.ndim === 1 ? '' : 's'}`);
      }
      return this.dimension(array, axis.value, loc);
    }
    // `a[i]`, `a[i][j]`: collect the indices from the outside in.
    const indexNodes: EsNode[] = [];
    let base: EsNode = node;
    while (base.type === 'MemberExpression' && base.computed) {
      indexNodes.unshift(base.property);
      base = base.object;
    }
    const array = this.arrayOperand(base);
    const arrayType = array.type as ArrayType;
    if (indexNodes.length !== arrayType.ndim) {
      this.fail(node, `\`${array.name}\` has ${arrayType.ndim} dimension${arrayType.ndim === 1 ? '' : 's'} and is indexed with ${indexNodes.length}: write \`${array.name}${'[…]'.repeat(arrayType.ndim)}\` to read one element`);
    }
    const indices = indexNodes.map((n) => this.index(n));
    return { kind: 'index', array, indices, type: arrayType.dtype, loc };
  }

  /** An index is an integer value (converted to int32) or a double that must hold an integer (checked when run). */
  private index(node: EsNode): Expr {
    const v = this.expression(node);
    if (v.kind === 'weak') {
      if (!Number.isInteger(v.value)) this.fail(node, `an array index must be an integer, found \`${this.text(node)}\``);
      return constant(v.value, Math.abs(v.value) < 2 ** 31 ? 'int32' : 'float64', v.loc);
    }
    if (isFloat(v.type)) return v;
    if (!isInteger(v.type) && v.type !== 'bool') this.fail(node, `an array index must be a number, found \`${this.text(node)}\` of type ${v.type}`);
    return this.coerce(v, 'int32');
  }

  private dimension(array: Variable, axis: number, loc: SourceLocation): Value {
    const b = this.lookupArray(array) ?? (this.context.isTable(array) ? (this.context.tableBinding(array.name) as Extract<Binding, { kind: 'array' }>) : undefined);
    if (b?.localLength !== undefined) return { kind: 'weak', value: b.localLength, loc };
    // Core dimensions stay symbolic (one compiled kernel serves every size) except where a value
    // must be known when compiling: the length of a local array (see constantInteger).
    return { kind: 'dim', array, axis, type: 'int32', loc };
  }

  private lookupArray(v: Variable): Extract<Binding, { kind: 'array' }> | undefined {
    for (const scope of this.scopes) for (const b of scope.values()) if (b.kind === 'array' && b.variable === v) return b;
    return undefined;
  }

  private arrayOperand(node: EsNode): Variable {
    if (node.type !== 'Identifier') {
      // What the expression is, or its own error (a string literal, an object): never "not an array" for those.
      const v = this.expression(node);
      const type = v.kind === 'weak' ? weakDefault(v) : v.type;
      this.fail(node, `\`${this.text(node)}\` is a ${type} value, not an array: only arrays (array arguments and local typed arrays, by name: \`out.length\`, \`a[i]\`) have a length and elements`);
    }
    const b = this.lookup(node.name);
    if (!b) this.fail(node, this.missingName(node.name));
    if (b.kind !== 'array') this.fail(node, `\`${node.name}\` is a scalar, not an array (its signature type has no \`[:]\`)`);
    return b.variable;
  }

  call(node: EsNode): Value {
    const callee = node.callee as EsNode;
    const args = node.arguments as EsNode[];
    if (args.some((a) => a.type === 'SpreadElement')) this.fail(node, 'spread arguments (`...`) are not supported in kernels');
    if (callee.type === 'MemberExpression' && !callee.computed && callee.object.type === 'Identifier' && callee.object.name === 'Math' && !this.lookup('Math')) {
      const name = callee.property.name as string;
      if (name === 'random') return this.draw(node, 'float64');
      if (name === 'fround' && args.length === 1 && isMathRandomCall(args[0]!)) return this.draw(args[0]!, 'float32');
      if (!isMathFunction(name)) {
        this.fail(callee, `\`Math.${name}\` is not supported in kernels (supported: ${MATH_FUNCTIONS.join(', ')})`);
      }
      return this.math(name, args.map((a) => this.expression(a)), node);
    }
    if (callee.type === 'Identifier' && !this.lookup(callee.name)) {
      const name = callee.name as string;
      if (name === 'isNaN' || name === 'isFinite') {
        if (args.length !== 1) this.fail(node, `\`${name}\` takes one argument`);
        const v = this.expression(args[0]!);
        const t = v.kind === 'weak' ? weakDefault(v) : v.type;
        const x = this.coerce(v, isFloat(t) ? t : KERNEL_FLOAT);
        const loc = this.at(node);
        const isNan: Expr = { kind: 'compare', op: '!=', left: x, right: x, operandType: x.type, type: 'bool', loc };
        if (name === 'isNaN') return isNan;
        // isFinite(x) ⇔ x − x == 0 (false for NaN and ±Infinity)
        const diff: Expr = { kind: 'binary', op: '-', left: x, right: x, type: x.type, loc };
        return { kind: 'compare', op: '==', left: diff, right: constant(0, x.type, loc), operandType: x.type, type: 'bool', loc };
      }
      const helper = this.context.helperNamed(name);
      // `Number(x)`: JS's conversion to a double (an int64's bigint to the nearest double, a bool to 0 or 1).
      if (name === 'Number' && (helper === undefined || helper === Number)) return this.toDouble(args, node);
      if (isBuiltinGlobal(name, helper)) this.fail(callee, builtinAdvice(name));
      if (isHelper(helper)) return this.helperCall(name, helper, args, node);
      if (helper !== undefined) this.fail(callee, `\`env.${name}\` is ${describeValue(helper)}, not a function or its source text`);
      this.fail(callee, this.unknownName(name));
    }
    if (callee.type === 'MemberExpression' && callee.object.type === 'Identifier' && callee.object.name === 'console' && !this.lookup('console')) {
      this.fail(callee, `\`${this.text(callee)}(…)\` cannot run in a compiled kernel: to print from a kernel, run it as plain JS with \`{ disableJit: true }\` (or the environment variable UFUNC_DISABLE_JIT=1), where console.log and the debugger work (docs/debugging.md)`);
    }
    this.fail(callee, `\`${this.text(callee)}(…)\` is not supported in kernels: call \`Math.*\` functions or helpers passed in \`env\``);
  }

  /** `Number(x)`: a float64 (a number literal stays one, adapting to what it meets). */
  private toDouble(args: EsNode[], node: EsNode): Value {
    if (args.length !== 1) this.fail(node, `\`Number\` takes one argument in kernels, found ${args.length}`);
    const v = this.expression(args[0]!);
    return v.kind === 'weak' ? v : this.coerce(v, 'float64');
  }

  private helperCall(name: string, fn: HelperSource, argNodes: EsNode[], node: EsNode): Value {
    const args: Argument[] = [];
    const types: ValueType[] = [];
    for (const a of argNodes) {
      if (a.type === 'Identifier' && this.lookup(a.name)?.kind === 'array') {
        const array = (this.lookup(a.name) as Extract<Binding, { kind: 'array' }>).variable;
        args.push({ kind: 'array-ref', array, loc: this.at(a) });
        types.push(array.type);
        continue;
      }
      const v = this.expression(a);
      const t = v.kind === 'weak' ? weakDefault(v) : promoteVar(v.type);
      args.push(this.coerce(v, t));
      types.push(t);
    }
    const helper = this.context.specialiseHelper(name, fn, types, node, this);
    if (helper.params.length !== args.length) {
      this.fail(node, `\`${name}\` takes ${helper.params.length} argument${helper.params.length === 1 ? '' : 's'}, found ${args.length}`);
    }
    helper.params.forEach((p, i) => {
      const a = args[i]!;
      if (a.kind !== 'array-ref' || !helper.writesParam[i]) return;
      if (this.context.isTable(a.array)) this.fail(argNodes[i]!, `\`${name}\` writes to its parameter \`${p.name}\`: ${tableWriteMessage(a.array.name)}`);
      if (this.isReadOnly(a.array)) {
        this.fail(argNodes[i]!, `\`${name}\` writes to its parameter \`${p.name}\`, and \`${a.array.name}\` is an input the kernel may not write`);
      }
      this.written.add(a.array);
    });
    const type = helper.returnType === 'void' ? 'bool' : helper.returnType;
    return { kind: 'call', helper, args, type, loc: this.at(node) };
  }

  /** `Math.*` typing, as the function's entry in math-functions.ts says (`MathTyping`). */
  math(fn: MathFunction, args: Value[], node: EsNode): Value {
    const loc = this.at(node);
    const info = MATH[fn];
    const [lo, hi] = info.arity;
    if (args.length < lo || args.length > hi) {
      this.fail(node, `\`Math.${fn}\` takes ${lo === hi ? lo : `${lo} or more`} argument${hi === 1 ? '' : 's'} in kernels, found ${args.length}`);
    }
    if (args.every((a) => a.kind === 'weak')) {
      return { kind: 'weak', value: foldMath(fn, args.map((a) => (a as Weak).value)), loc };
    }
    const typed = args.map((a) => (a.kind === 'weak' ? undefined : promote(a.type)));
    const joined = typed.reduce<DType | undefined>((acc, t) => (t === undefined ? acc : acc === undefined ? t : arithmeticType(acc, t)), undefined)!;
    const withWeak = args.reduce<DType>((acc, a) => (a.kind === 'weak' ? arithmeticType(acc, weakTypeAgainst(a.value, acc)) : acc), joined);
    let argType: DType;
    let type: DType;
    switch (info.typing) {
      case 'int32':
        return { kind: 'math', fn, args: args.map((a) => this.toInt32Family(a, 'int32')), type: 'int32', loc };
      case 'float32':
        argType = isFloat(withWeak) ? withWeak : KERNEL_FLOAT;
        type = 'float32';
        if (argType === 'float32') return this.coerce(args[0]!, 'float32');
        break;
      case 'keeps': case 'rounding':
        argType = withWeak;
        type = withWeak;
        if (isInteger(withWeak) && info.typing === 'rounding') return this.coerce(args[0]!, withWeak);
        break;
      case 'float':
        argType = floatFor(withWeak);
        type = argType;
    }
    if (isBigInt(argType) && info.typing !== 'keeps') {
      argType = 'float64';
      type = 'float64';
    }
    return { kind: 'math', fn, args: args.map((a) => this.coerce(a, argType)), type, loc };
  }

  newExpression(node: EsNode): Value {
    this.fail(node, 'local arrays are created only in a declaration: `const tmp = new Float32Array(K)`');
  }
}

type Handler<R> = (l: FunctionLowering, node: EsNode) => R;

function isMathRandomCall(node: EsNode): boolean {
  const callee = node.type === 'CallExpression' ? (node.callee as EsNode) : undefined;
  return callee?.type === 'MemberExpression' && !callee.computed && callee.object.type === 'Identifier' && callee.object.name === 'Math' && callee.property.name === 'random';
}

/** Statements of the kernel language; any other statement type is refused with its location. */
const STATEMENTS: Readonly<Record<string, Handler<Stmt[]>>> = {
  BlockStatement: (l, n) => l.block(n.body),
  EmptyStatement: () => [],
  VariableDeclaration: (l, n) => l.variableDeclaration(n),
  ExpressionStatement: (l, n) => l.expressionStatement(n),
  IfStatement: (l, n) => l.ifStatement(n),
  ForStatement: (l, n) => l.forStatement(n),
  WhileStatement: (l, n) => l.whileStatement(n, true),
  DoWhileStatement: (l, n) => l.whileStatement(n, false),
  BreakStatement: (l, n) => l.jump(n),
  ContinueStatement: (l, n) => l.jump(n),
  ReturnStatement: (l, n) => [l.returnStatement(n, n.argument)],
};

/** Expressions of the kernel language; any other expression type is refused with its location. */
const EXPRESSIONS: Readonly<Record<string, Handler<Value>>> = {
  Literal: (l, n) => l.literal(n),
  Identifier: (l, n) => l.identifier(n),
  BinaryExpression: (l, n) => l.binaryExpression(n),
  LogicalExpression: (l, n) => l.logical(n),
  UnaryExpression: (l, n) => l.unary(n),
  ConditionalExpression: (l, n) => l.conditional(n),
  MemberExpression: (l, n) => l.member(n),
  CallExpression: (l, n) => l.call(n),
  NewExpression: (l, n) => l.newExpression(n),
  ChainExpression: (l, n) => l.fail(n, 'optional chaining (`?.`) is not supported in kernels'),
  AssignmentExpression: (l, n) => l.fail(n, 'an assignment inside an expression is not supported in kernels: assignments are statements'),
  UpdateExpression: (l, n) => l.fail(n, '`++`/`--` inside an expression is not supported in kernels: write it as a statement of its own'),
};

const DESCRIPTIONS: Readonly<Record<string, string>> = {
  ObjectExpression: 'an object literal', ArrayExpression: 'an array literal', TemplateLiteral: 'a template string',
  ThisExpression: '`this`', ArrowFunctionExpression: 'a nested function (closure)', FunctionExpression: 'a nested function (closure)',
  FunctionDeclaration: 'a nested function declaration (pass helpers in `env`)', TryStatement: '`try`/`catch`',
  ThrowStatement: '`throw`', SwitchStatement: '`switch`', ForOfStatement: '`for…of`', ForInStatement: '`for…in`',
  AwaitExpression: '`await`', YieldExpression: '`yield`', ClassDeclaration: 'a class', ClassExpression: 'a class',
  LabeledStatement: 'a labelled statement', WithStatement: '`with`', SequenceExpression: 'the comma operator',
  TaggedTemplateExpression: 'a tagged template', SpreadElement: 'spread (`...`)', DebuggerStatement: '`debugger`',
};

function describeNode(node: EsNode): string {
  const d = DESCRIPTIONS[node.type];
  return d ? `${d[0]!.toUpperCase()}${d.slice(1)}` : `The construct \`${node.type}\``;
}

function describeValue(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'a JS Array';
  if (ArrayBuffer.isView(v)) return `a ${(Object.getPrototypeOf(v)?.constructor?.name as string | undefined) ?? 'view of an ArrayBuffer'}`;
  return `a ${typeof v}`;
}

/** Why a value of `env` is none the kernel can use, and what env may hold. */
function envValueMessage(name: string, value: unknown): string {
  const asTable = Array.isArray(value) ? ` (for a lookup table pass a typed array: \`Float64Array.from(${name})\`)` : '';
  return `\`env.${name}\` is ${describeValue(value)}${asTable}; env may hold numbers, booleans, helper functions and lookup tables (Float32Array, Float64Array, Int8Array…Int32Array, Uint8Array…Uint32Array, Uint8ClampedArray, BigInt64Array, BigUint64Array)`;
}

/**
 * The type a literal takes on its own (`let i = 0`, a helper argument): float64, because every JS
 * number is a double — so `let c = 1; c *= i` counts exactly past 2³¹ as it does in JS. Integer
 * semantics (wrapping, truncating `%`) belong to values that are declared integers: int arrays and
 * parameters, `.length`, bitwise results, and locals assigned from those.
 */
function weakDefault(_w: Weak): DType {
  return KERNEL_FLOAT;
}

/** The type a weak literal takes next to an operand of type `other`. */
function weakTypeAgainst(value: number, other: DType): DType {
  const t = promote(other);
  if (isFloat(t)) return t;
  if (Number.isInteger(value) && !Object.is(value, -0)) {
    if (isBigInt(t) || canCastScalar(value, t)) return t;
    if (DTYPES[t].kind === 'u' && canCastScalar(value, 'int32')) return 'int32';
  }
  return KERNEL_FLOAT;
}

/** Locals hold promoted types: a local assigned an int8 element is an int32. */
function promoteVar(t: DType): DType {
  return t === 'bool' ? 'bool' : promote(t);
}

function constant(value: number | bigint | boolean, type: DType, loc: SourceLocation): Expr {
  return { kind: 'const', value: convertConstant(value, type), type, loc };
}

/** The operators, by the type of operation lowering makes of them. */
const ARITHMETIC: readonly string[] = ['+', '-', '*', '/', '%', '**'];
const BITWISE: readonly string[] = ['&', '|', '^', '<<', '>>', '>>>'];
const COMPARISONS: readonly string[] = ['<', '<=', '>', '>=', '==', '!='];

/** The type of an operation on two literals, which are JS numbers: a double, except JS's int32 bitwise operators (`>>>`: uint32). */
function literalType(op: string): DType {
  return op === '>>>' ? 'uint32' : BITWISE.includes(op) ? 'int32' : KERNEL_FLOAT;
}

/** What lowering needs to know beyond one function: env, helper specialisations, core dims. */
class KernelContext {
  private readonly specialisations = new Map<string, HelperFunction>();
  private readonly inProgress = new Set<string>();
  private readonly parsedHelpers = new Map<HelperSource, ParsedFunction>();
  private readonly names = new Map<string, number>();
  /** The lookup tables the kernel and its helpers read, by name in `env`: one variable each for every function. */
  private readonly tables = new Map<string, { binding: Extract<Binding, { kind: 'array' }>; table: KernelTable }>();

  constructor(readonly env: KernelEnv) {}

  /** The binding of the table `env[name]`, made on first use; undefined when `env[name]` is no table. */
  tableBinding(name: string): Binding | undefined {
    const known = this.tables.get(name);
    if (known) return known.binding;
    if (!Object.prototype.hasOwnProperty.call(this.env, name)) return undefined;
    const data = this.env[name];
    const dtype = tableDType(data);
    if (dtype === undefined) return undefined;
    // An id no function's own variables reach (they count from 0), so generated names stay distinct.
    const variable: Variable = { id: TABLE_ID_BASE + this.tables.size, name, type: { kind: 'array', dtype, ndim: 1 } };
    const table: KernelTable = { variable, data: data as KernelTable['data'] };
    const binding = { kind: 'array', variable, localLength: table.data.length } as const;
    this.tables.set(name, { binding, table });
    return binding;
  }

  isTable(v: Variable): boolean {
    return this.tables.get(v.name)?.table.variable === v;
  }

  /** The tables read so far, in the order first read. */
  usedTables(): KernelTable[] {
    return [...this.tables.values()].map((t) => t.table);
  }

  /**
   * The helper a kernel calls as `name`: `env[name]`; else, when `env` has no such key, the one
   * helper function whose own name is `name`. That second rule is what makes minified code work:
   * a minifier renames the helper (`function scale` → `function Ht`) and the kernel's calls to it
   * (`Ht(x)`), but not the key that passes it (`env: { scale: Ht }`); the function still knows
   * its new name (`Ht.name === 'Ht'`) unless `--keep-names` restores the old one.
   */
  helperNamed(name: string): unknown {
    if (Object.prototype.hasOwnProperty.call(this.env, name)) return this.env[name];
    const byOwnName = Object.values(this.env).filter((value) => typeof value === 'function' && value.name === name);
    return byOwnName.length === 1 ? byOwnName[0] : undefined;
  }

  /** The message for a call of a helper being specialised: direct recursion, or the cycle of helpers that leads back. */
  private recursionMessage(key: string): string {
    const chain = [...this.inProgress].slice([...this.inProgress].indexOf(key)).map((k) => k.slice(0, k.indexOf('(')));
    const name = chain[0]!;
    const tail = 'recursion is not supported in kernels (GPUs have no call stack): write a loop';
    if (chain.length === 1) return `\`${name}\` calls itself; ${tail}`;
    const cycle = [...chain, name].map((n) => `\`${n}\``).join(' → ');
    const via = chain.slice(1).map((n) => `\`${n}\``).join(', which calls ');
    return `\`${name}\` calls ${via}, which calls \`${name}\` again (${cycle}): recursion, direct or through other helpers, is not supported in kernels (GPUs have no call stack): write a loop`;
  }

  specialiseHelper(name: string, fn: HelperSource, types: ValueType[], node: EsNode, caller: FunctionLowering): HelperFunction {
    const key = `${name}(${types.map((t) => (isArrayType(t) ? `${t.dtype}[${t.ndim}]` : t)).join(',')})`;
    const done = this.specialisations.get(key);
    if (done) return done;
    if (this.inProgress.has(key)) caller.fail(node, this.recursionMessage(key));
    const returns = fn instanceof TypedHelper ? fn.returns : 'infer';
    const source = fn instanceof TypedHelper ? fn.fn : fn;
    let parsed = this.parsedHelpers.get(source);
    if (!parsed) {
      parsed = parseFunction(source, `helper \`${name}\``);
      this.parsedHelpers.set(source, parsed);
    }
    if (parsed.params.length !== types.length) {
      caller.fail(node, `\`${name}\` takes ${parsed.params.length} argument${parsed.params.length === 1 ? '' : 's'}, found ${types.length}`);
    }
    this.inProgress.add(key);
    try {
      const count = this.names.get(name) ?? 0;
      this.names.set(name, count + 1);
      const helperName = count === 0 ? name : `${name}_${count}`;
      // Whether a helper may write an array is decided at each call site, which knows the array.
      const roles: ParamRoles = { readOnly: () => false, coreDim: () => undefined };
      const { params, body, locals, returnType, written } = lowerToFixpoint(parsed, types, returns, this, roles);
      const writesParam = params.map((p) => written.has(p));
      const helper: HelperFunction = { name: helperName, params, body, locals, returnType, writesParam };
      this.specialisations.set(key, helper);
      return helper;
    } finally {
      this.inProgress.delete(key);
    }
  }
}

/**
 * Whether `name` (called as a function, not a local) is one of JS's built-in functions (`String`,
 * `parseInt`, `BigInt`, …) rather than a helper: not in `env`, or in it as the built-in itself.
 */
function isBuiltinGlobal(name: string, helper: unknown): boolean {
  const global = (globalThis as Record<string, unknown>)[name];
  if (typeof global !== 'function' || (helper !== undefined && helper !== global)) return false;
  return /\{\s*\[native code\]\s*\}$/.test(Function.prototype.toString.call(global));
}

/** What a kernel that calls a JS built-in is told instead of "pass it in `env`", which a built-in cannot be. */
function builtinAdvice(name: string): string {
  return `\`${name}\` is a JavaScript built-in, which kernels cannot use: kernels compute numbers and booleans (convert with \`Number(x)\` to a double, \`x | 0\` to an int32, \`x !== 0\` to a bool; docs/kernel-language.md lists what kernels may use)`;
}

/** How a function may use each parameter, by index. */
interface ParamRoles {
  readOnly(param: number): boolean;
  /** The size of a core dimension when it is known at specialisation, else undefined. */
  coreDim(param: number, axis: number): number | undefined;
}

function lowerToFixpoint(
  fn: ParsedFunction,
  paramTypes: readonly ValueType[],
  returnType: DType | 'void' | 'infer',
  context: KernelContext,
  roles: ParamRoles,
): { params: Variable[]; body: Stmt[]; locals: Variable[]; returnType: DType | 'void'; written: ReadonlySet<Variable> } {
  const assumed = new Map<number, DType>();
  let inferred: DType | undefined;
  for (let round = 0; round < MAX_ROUNDS; round++) {
    const l = new FunctionLowering(fn, paramTypes, returnType, assumed, context, roles, inferred);
    const { params, body } = l.lower();
    const r = returnType === 'infer' ? l.inferredReturnType() : returnType;
    const returnChanged = returnType === 'infer' && r !== 'void' && r !== inferred;
    if (!l.changed && !returnChanged) {
      const locals = l.locals.filter((v) => !params.includes(v) && !isArrayType(v.type));
      return { params, body, locals, returnType: r, written: l.written };
    }
    if (returnChanged) inferred = r as DType;
  }
  throw new KernelCompileError(`The types of \`${fn.name}\`'s variables did not settle after ${MAX_ROUNDS} rounds of inference; give the variables explicit initial values of the type you mean (e.g. \`0.0\`).`);
}

/**
 * Types a parsed kernel for one signature.
 *
 * @param parsed - from `parseFunction`
 * @param spec - parameter types, return type and env
 * @param options.outputs - indices of parameters the kernel may write (guvectorize outputs)
 * @param options.coreDims - core dimension sizes known when specialising (for local array lengths)
 * @returns the typed kernel every backend compiles
 * @throws KernelCompileError with the kernel's line:column
 */
export function typeKernel(
  parsed: ParsedFunction,
  spec: KernelSpec,
  options: { writable?: ReadonlySet<number>; coreDims?: (param: number, axis: number) => number | undefined } = {},
): TypedKernel {
  if (parsed.params.length !== spec.params.length) {
    throw new KernelCompileError(
      `The kernel \`${parsed.name}\` takes ${parsed.params.length} parameter${parsed.params.length === 1 ? '' : 's'} (${parsed.params.join(', ')}) but its signature has ${spec.params.length} argument${spec.params.length === 1 ? '' : 's'}.`,
    );
  }
  const context = new KernelContext(spec.env);
  const roles: ParamRoles = {
    readOnly: (i) => !(options.writable?.has(i) ?? false),
    coreDim: (i, axis) => options.coreDims?.(i, axis),
  };
  const { params, body, locals, returnType } = lowerToFixpoint(parsed, spec.params, spec.returnType, context, roles);
  return {
    name: parsed.name,
    params,
    returnType: returnType === 'void' && spec.returnType === 'infer' ? 'float64' : returnType,
    body,
    locals,
    helpers: reachableHelpers(body),
    tables: context.usedTables(),
    source: parsed.source,
  };
}

const TABLE_ID_BASE = 1_000_000;

function tableWriteMessage(name: string): string {
  return `\`${name}\` is a lookup table from \`env\`, which kernels only read (its contents are fixed when the ufunc is made, on every target): compute into a local array (\`const t = new Float64Array(n)\`) or an output instead`;
}

/** The helpers a body calls, directly or not, callees before callers (the order backends emit). */
function reachableHelpers(body: readonly Stmt[]): HelperFunction[] {
  const order: HelperFunction[] = [];
  const seen = new Set<HelperFunction>();
  const visitHelper = (h: HelperFunction) => {
    if (seen.has(h)) return;
    seen.add(h);
    h.body.forEach(visitStmt);
    order.push(h);
  };
  const visitExpr = (e: Expr): void => {
    switch (e.kind) {
      case 'unary': visitExpr(e.arg); break;
      case 'cast': visitExpr(e.value); break;
      case 'binary': case 'compare': case 'logical': visitExpr(e.left); visitExpr(e.right); break;
      case 'select': visitExpr(e.cond); visitExpr(e.then); visitExpr(e.otherwise); break;
      case 'math': e.args.forEach(visitExpr); break;
      case 'index': e.indices.forEach(visitExpr); break;
      case 'call': e.args.forEach((a) => a.kind !== 'array-ref' && visitExpr(a)); visitHelper(e.helper); break;
      default: break;
    }
  };
  const visitStmt = (s: Stmt): void => {
    switch (s.kind) {
      case 'let': visitExpr(s.init); break;
      case 'assign': visitExpr(s.value); break;
      case 'store': s.indices.forEach(visitExpr); visitExpr(s.value); break;
      case 'if': visitExpr(s.cond); s.then.forEach(visitStmt); s.otherwise.forEach(visitStmt); break;
      case 'loop': s.init.forEach(visitStmt); if (s.cond) visitExpr(s.cond); s.update.forEach(visitStmt); s.body.forEach(visitStmt); break;
      case 'return': if (s.value) visitExpr(s.value); break;
      case 'call': visitExpr(s.call); break;
      default: break;
    }
  };
  body.forEach(visitStmt);
  return order;
}
