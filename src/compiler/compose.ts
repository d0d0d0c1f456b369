/**
 * Composing typed kernels: the IR half of `fuse`. A ufunc is IR plus a layout, so a chain of
 * vectorize calls `mul(gauss(saxpy(a, x, y)), x)` is one vectorize kernel whose body is the three
 * bodies one after the other, each step's result held in a local of the step's declared dtype:
 *
 *     (a, x, y) => { let saxpy1_a = a, saxpy1_x = x, saxpy1_y = y;
 *                    let saxpy1_result: float32 = saxpy1_a * saxpy1_x + saxpy1_y;   // saxpy's body
 *                    let gauss2_x = saxpy1_result; let gauss2_result: float32 = …;   // gauss's body
 *                    let mul3_a = gauss2_result, mul3_b = x; …; return mul3_result; }
 *
 * Why the bits are those of the separate calls: each step's `return` already converts to the
 * step's return dtype (typing inserts the cast), which is what storing into its output array did;
 * a step that reads another dtype than its producer wrote gets the cast that copying the array to
 * the loop's dtype did (a conversion is defined as a typed-array store, ir.ts); scalars and the
 * user's arrays are parameters of the dtype each step's loop declared, so the front converts them
 * exactly as it did for each call. Nothing is reordered across steps.
 *
 * Bodies are inlined, not called as helpers, so the Wasm engine can still vectorise the fused
 * loop (emit-simd.ts refuses kernels with helpers). A `return` inside an `if` becomes an
 * assignment and a `done` flag guarding the statements after it; a body that returns from inside
 * a loop (rare in element-wise kernels) is kept as a helper and called.
 */
import type { DType } from '../dtypes.js';
import type { Argument, Expr, HelperFunction, KernelTable, Stmt, TypedKernel, Variable } from './ir.js';
import { isArrayType } from './ir.js';
import type { SourceLocation } from '../errors.js';
import { forEachStmt } from './ir-walk.js';
import { convertConstant } from './constant-folding.js';

/** Where a step's argument comes from: a parameter of the fused kernel, or an earlier step's result. */
export type StepInput = { readonly kind: 'param'; readonly index: number } | { readonly kind: 'step'; readonly index: number };

/** One call of the chain: a vectorize kernel typed for the loop the call selected, and its arguments. */
export interface ComposedStep {
  readonly kernel: TypedKernel;
  readonly inputs: readonly StepInput[];
}

/**
 * The kernel that runs the steps one after the other and returns the last one's result.
 *
 * @param params - the fused kernel's parameters: their names (for the IR dump) and dtypes
 * @param steps - in an order where every step comes after the steps it reads
 * @returns a typed vectorize kernel with parameters `params`, returning the last step's dtype
 * @throws Error (internal) when the steps are not vectorize kernels or disagree on `fastmath`
 * @example composeKernels([{ name: 'x', dtype: 'float32' }], [{ kernel: square, inputs: [{ kind: 'param', index: 0 }] }])
 */
export function composeKernels(params: readonly { readonly name: string; readonly dtype: DType }[], steps: readonly ComposedStep[]): TypedKernel {
  const last = steps[steps.length - 1];
  if (!last) throw new Error('internal: composeKernels needs at least one step');
  const builder = new KernelBuilder();
  const { paramVars, results, body } = builder.steps(params, steps);
  const result = results[results.length - 1]!;
  body.push({ kind: 'return', value: builder.read(result), loc: builder.loc });
  const fastmath = steps.some((s) => s.kernel.fastmath);
  return {
    // Named after its calls (`saxpy > gauss > mul`): what messages and the IR dump show.
    name: steps.map((st) => st.kernel.name).join(' > '),
    params: paramVars,
    returnType: result.type as DType,
    body,
    locals: builder.locals,
    helpers: builder.helpers,
    ...(builder.tables.length ? { tables: builder.tables } : {}),
    source: steps.map((s) => s.kernel.source).join('\n'),
    ...(fastmath ? { fastmath: true } : {}),
  };
}

/**
 * The kernel that runs the steps and stores several of their results: a guvectorize kernel of
 * layout `(),…->(),…` whose outputs are one-element slices (`out[0] = …`), as a recorded gpu chain
 * fuses (targets/gpu/runtime/chain-fusion.ts) — every output the user still holds is written.
 *
 * @param params - the input parameters (scalars), as for composeKernels
 * @param steps - as for composeKernels
 * @param stores - the steps whose results are stored, in the order of the output parameters
 * @param name - the kernel's name, for messages (`saxpy > gauss > mul`)
 * @returns a typed kernel with parameters (inputs…, outputs…) returning void
 * @example composeStores(params, steps, [0, 2], 'saxpy > gauss > mul')
 */
export function composeStores(
  params: readonly { readonly name: string; readonly dtype: DType }[],
  steps: readonly ComposedStep[],
  stores: readonly number[],
  name: string,
): TypedKernel {
  const builder = new KernelBuilder();
  const { paramVars, results, body } = builder.steps(params, steps);
  const outs = stores.map((k, o) => builder.fresh(`out${o + 1}`, { kind: 'array', dtype: results[k]!.type as DType, ndim: 1 }));
  const zero: Expr = { kind: 'const', value: 0, type: 'int32', loc: builder.loc };
  stores.forEach((k, o) => body.push({ kind: 'store', array: outs[o]!, indices: [zero], value: builder.read(results[k]!), loc: builder.loc }));
  const fastmath = steps.some((s) => s.kernel.fastmath);
  return {
    name,
    params: [...paramVars, ...outs],
    returnType: 'void',
    body,
    locals: builder.locals,
    helpers: builder.helpers,
    ...(builder.tables.length ? { tables: builder.tables } : {}),
    source: steps.map((s) => s.kernel.source).join('\n'),
    ...(fastmath ? { fastmath: true } : {}),
  };
}

/** A kernel's body as a helper's: one that may end without `return` returns the kernel's default result there. */
function withFinalReturn(body: Stmt[], returnType: TypedKernel['returnType']): Stmt[] {
  if (returnType === 'void' || body[body.length - 1]?.kind === 'return') return body;
  const loc = { line: 1, column: 1 };
  return [...body, { kind: 'return', value: { kind: 'const', value: undefinedValue(returnType), type: returnType, loc }, loc }];
}

/** The default result of a kernel that ends without `return` (as cpu/codegen.ts's `undefinedAs`). */
function undefinedValue(t: DType): number | bigint | boolean {
  if (t === 'bool') return false;
  if (t === 'int64' || t === 'uint64') return 0n;
  return t === 'float32' || t === 'float64' ? NaN : 0;
}

const containsReturn = (body: readonly Stmt[]): boolean => {
  let found = false;
  forEachStmt(body, (s) => {
    if (s.kind === 'return') found = true;
  });
  return found;
};

/** Whether every `return` of `body` can become an assignment (none inside a loop). */
function returnsOutsideLoops(body: readonly Stmt[]): boolean {
  return body.every((s) => {
    if (s.kind === 'loop') return !containsReturn([...s.init, ...s.update, ...s.body]);
    if (s.kind === 'if') return returnsOutsideLoops(s.then) && returnsOutsideLoops(s.otherwise);
    return true;
  });
}

/** Builds the fused kernel's body: fresh variables, inlined steps, the helpers they keep. */
export class KernelBuilder {
  readonly locals: Variable[] = [];
  readonly helpers: HelperFunction[] = [];
  /** The steps' lookup tables, each once: their variables are kept, not copied, so every step reads them. */
  readonly tables: KernelTable[] = [];
  private nextId = 0;
  readonly loc: SourceLocation = { line: 1, column: 1 };
  /** A step's helpers as the fused kernel holds them (renamed where two steps' helpers share a name). */
  private readonly helperCopies = new Map<HelperFunction, HelperFunction>();
  private readonly helperNames = new Set<string>();
  /** A kernel kept as a helper (a body that returns from a loop), by kernel. */
  private readonly kernelHelpers = new Map<TypedKernel, HelperFunction>();

  /** The parameters as variables, and the steps inlined one after the other: their results and the statements. */
  steps(params: readonly { readonly name: string; readonly dtype: DType }[], steps: readonly ComposedStep[]): { paramVars: Variable[]; results: Variable[]; body: Stmt[] } {
    const paramVars = params.map((p) => this.fresh(p.name, p.dtype));
    const results: Variable[] = [];
    const body: Stmt[] = [];
    steps.forEach((step, k) => {
      const args = step.inputs.map((input): Expr => this.read(input.kind === 'param' ? paramVars[input.index]! : results[input.index]!));
      results.push(this.inline(step.kernel, args, body, `${step.kernel.name}${k + 1}_`));
    });
    return { paramVars, results, body };
  }

  fresh(name: string, type: Variable['type']): Variable {
    return { id: this.nextId++, name, type };
  }

  local(name: string, type: DType): Variable {
    const v = this.fresh(name, type);
    this.locals.push(v);
    return v;
  }

  read(v: Variable): Expr {
    return { kind: 'var', variable: v, type: v.type as DType, loc: this.loc };
  }

  cast(e: Expr, to: DType): Expr {
    return e.type === to ? e : { kind: 'cast', value: e, type: to, loc: e.loc };
  }

  /**
   * Appends a step to `body`: its parameters bound to `args` (converted to their dtypes), its body
   * with fresh variables, its result in a new local.
   */
  inline(kernel: TypedKernel, args: readonly Expr[], body: Stmt[], prefix: string): Variable {
    if (kernel.returnType === 'void') throw new Error('internal: only vectorize kernels are composed');
    const returnType = kernel.returnType;
    this.addTables(kernel);
    const tableVars = new Set((kernel.tables ?? []).map((t) => t.variable));
    if (!returnsOutsideLoops(kernel.body)) {
      const helper = this.kernelHelper(kernel);
      const call: Expr = { kind: 'call', helper, args: args.map((a, i) => this.cast(a, kernel.params[i]!.type as DType)), type: returnType, loc: this.loc };
      const result = this.local(`${prefix}result`, returnType);
      body.push({ kind: 'let', variable: result, init: call, loc: this.loc });
      return result;
    }
    const vars = new Map<Variable, Variable>();
    const mapVar = (v: Variable): Variable => {
      if (tableVars.has(v)) return v;
      let copy = vars.get(v);
      if (!copy) {
        copy = this.fresh(`${prefix}${v.name}`, v.type);
        if (!isArrayType(v.type)) this.locals.push(copy);
        vars.set(v, copy);
      }
      return copy;
    };
    const mapper = new IrMapper(mapVar, (h) => this.helperCopy(h));
    kernel.params.forEach((p, i) => {
      body.push({ kind: 'let', variable: mapVar(p), init: this.cast(args[i]!, p.type as DType), loc: this.loc });
    });
    const stmts = mapper.stmts(kernel.body);
    const lastStmt = stmts[stmts.length - 1];
    const simple = !containsReturn(stmts.slice(0, -1)) && (lastStmt === undefined || lastStmt.kind !== 'if' || !containsReturn([lastStmt]));
    if (simple) {
      // Straight-line (the common case): the statements, then the returned value in a new local.
      const ends = lastStmt?.kind === 'return';
      body.push(...(ends ? stmts.slice(0, -1) : stmts));
      const value = ends && lastStmt.value ? lastStmt.value : ({ kind: 'const', value: undefinedValue(returnType), type: returnType, loc: this.loc } as Expr);
      const result = this.local(`${prefix}result`, returnType);
      body.push({ kind: 'let', variable: result, init: value, loc: this.loc });
      return result;
    }
    const result = this.local(`${prefix}result`, returnType);
    const done = this.local(`${prefix}done`, 'bool');
    const constant = (value: number | bigint | boolean, type: DType): Expr => ({ kind: 'const', value: convertConstant(value, type), type, loc: this.loc });
    body.push({ kind: 'let', variable: result, init: constant(undefinedValue(returnType), returnType), loc: this.loc });
    body.push({ kind: 'let', variable: done, init: constant(false, 'bool'), loc: this.loc });
    body.push(...this.withoutReturns(stmts, result, done));
    return result;
  }

  /**
   * `stmts` with every `return v` turned into `result = v; done = true`, and the statements after
   * an `if` that may return guarded by `if (!done)`. Loops hold no `return` here (see inline).
   */
  private withoutReturns(stmts: readonly Stmt[], result: Variable, done: Variable): Stmt[] {
    const out: Stmt[] = [];
    for (let i = 0; i < stmts.length; i++) {
      const s = stmts[i]!;
      if (s.kind === 'return') {
        if (s.value) out.push({ kind: 'assign', variable: result, value: s.value, loc: s.loc });
        out.push({ kind: 'assign', variable: done, value: { kind: 'const', value: true, type: 'bool', loc: s.loc }, loc: s.loc });
        return out;
      }
      if (s.kind === 'if' && containsReturn([s])) {
        out.push({ ...s, then: this.withoutReturns(s.then, result, done), otherwise: this.withoutReturns(s.otherwise, result, done) });
        const rest = stmts.slice(i + 1);
        if (rest.length > 0) {
          const notDone: Expr = { kind: 'unary', op: '!', arg: this.read(done), type: 'bool', loc: s.loc };
          out.push({ kind: 'if', cond: notDone, then: this.withoutReturns(rest, result, done), otherwise: [], loc: s.loc });
        }
        return out;
      }
      out.push(s);
    }
    return out;
  }

  /** A step's helper under a name no other helper of the fused kernel has, its calls remapped. */
  helperCopy(h: HelperFunction): HelperFunction {
    const known = this.helperCopies.get(h);
    if (known) return known;
    const mapper = new IrMapper((v) => v, (callee) => this.helperCopy(callee));
    const copy: HelperFunction = { ...h, name: this.uniqueName(h.name), body: mapper.stmts(h.body) };
    this.helperCopies.set(h, copy);
    this.helpers.push(copy); // after its callees, which mapping the body added
    return copy;
  }

  /** A whole kernel as a helper (as fused-store.ts does), for a body that returns from a loop. */
  kernelHelper(kernel: TypedKernel): HelperFunction {
    const known = this.kernelHelpers.get(kernel);
    if (known) return known;
    this.addTables(kernel);
    const mapper = new IrMapper((v) => v, (callee) => this.helperCopy(callee));
    const helper: HelperFunction = {
      // (A composed kernel's name, `saxpy > gauss`, is not an identifier.)
      name: this.uniqueName(kernel.name.replace(/[^A-Za-z0-9_$]+/g, '_') || 'step'), params: kernel.params, returnType: kernel.returnType, body: withFinalReturn(mapper.stmts(kernel.body), kernel.returnType),
      locals: kernel.locals, writesParam: kernel.params.map(() => false),
    };
    this.kernelHelpers.set(kernel, helper);
    this.helpers.push(helper);
    return helper;
  }

  /** The kernel's lookup tables, each once, among the fused kernel's. */
  addTables(kernel: TypedKernel): void {
    for (const t of kernel.tables ?? []) if (!this.tables.includes(t)) this.tables.push(t);
  }

  private uniqueName(name: string): string {
    let unique = name;
    for (let k = 1; this.helperNames.has(unique); k++) unique = `${name}_${k}`;
    this.helperNames.add(unique);
    return unique;
  }
}

/**
 * Copies IR with its variables and helpers replaced. Subclasses may replace a statement by
 * several (`expand`) or an expression by another (`expr`); nested bodies go through both.
 */
export class IrMapper {
  constructor(
    protected readonly variable: (v: Variable) => Variable,
    private readonly helper: (h: HelperFunction) => HelperFunction,
  ) {}

  stmts(body: readonly Stmt[]): Stmt[] {
    return body.flatMap((s) => this.expand(s));
  }

  /** The statements a statement becomes: its copy. */
  protected expand(s: Stmt): Stmt[] {
    return [this.stmt(s)];
  }

  protected stmt(s: Stmt): Stmt {
    switch (s.kind) {
      case 'let': return { ...s, variable: this.variable(s.variable), init: this.expr(s.init) };
      case 'local-array': case 'draw': return { ...s, variable: this.variable(s.variable) };
      case 'assign': return { ...s, variable: this.variable(s.variable), value: this.expr(s.value) };
      case 'store': return { ...s, array: this.variable(s.array), indices: s.indices.map((e) => this.expr(e)), value: this.expr(s.value) };
      case 'if': return { ...s, cond: this.expr(s.cond), then: this.stmts(s.then), otherwise: this.stmts(s.otherwise) };
      case 'loop':
        return { ...s, init: this.stmts(s.init), cond: s.cond && this.expr(s.cond), update: this.stmts(s.update), body: this.stmts(s.body) };
      case 'return': return { ...s, value: s.value && this.expr(s.value) };
      case 'call': return { ...s, call: this.expr(s.call) as Extract<Expr, { kind: 'call' }> };
      case 'break': case 'continue': return s;
    }
  }

  protected expr(e: Expr): Expr {
    switch (e.kind) {
      case 'const': return e;
      case 'var': return { ...e, variable: this.variable(e.variable) };
      case 'unary': return { ...e, arg: this.expr(e.arg) };
      case 'binary': case 'compare': case 'logical': return { ...e, left: this.expr(e.left), right: this.expr(e.right) };
      case 'select': return { ...e, cond: this.expr(e.cond), then: this.expr(e.then), otherwise: this.expr(e.otherwise) };
      case 'cast': return { ...e, value: this.expr(e.value) };
      case 'math': return { ...e, args: e.args.map((a) => this.expr(a)) };
      case 'call': return { ...e, helper: this.helper(e.helper), args: e.args.map((a) => this.argument(a)) };
      case 'index': return { ...e, array: this.variable(e.array), indices: e.indices.map((i) => this.expr(i)) };
      case 'dim': return { ...e, array: this.variable(e.array) };
    }
  }

  protected argument(a: Argument): Argument {
    return a.kind === 'array-ref' ? { ...a, array: this.variable(a.array) } : this.expr(a);
  }
}
