/**
 * Typed IR → JavaScript source. The declared types are honoured here: float32 operations are
 * rounded with `Math.fround` after each operation, int32/uint32 wrap (`| 0`, `>>> 0`,
 * `Math.imul`), 64-bit integers are bigints wrapped with `BigInt.asIntN`, and conversions are
 * those of typed-array stores. The emitted code is the meaning of a kernel: the parallel target
 * runs it too, and the gpu target is tested against it.
 */
import { type DType, DTYPES, isBigInt, isFloat } from '../../../dtypes.js';
import type { Argument, ArrayType, Expr, HelperFunction, KernelTable, Stmt, Variable } from '../../../compiler/ir.js';
import { type IndexCheckSite, indexCheckSite } from '../../../compiler/source-excerpt.js';
import { tableBase64 } from '../../../compiler/tables.js';
import { isArrayType } from '../../../compiler/ir.js';
import { MATH, type MathFunction } from '../../../compiler/math-functions.js';
import { type ArrayAccessNode, findInBoundsAccesses } from '../../../compiler/passes/bounds.js';

/** How generated code reaches the elements and dimensions of one array variable. */
export interface ArrayAccess {
  /** The typed array. */
  readonly data: string;
  /** Element offset of [0, 0, …]. */
  readonly base: string;
  /** Per axis: stride in elements, or `1` when known to be contiguous (then omitted). */
  readonly strides: readonly string[];
  /** Per axis: the size. */
  readonly dims: readonly string[];
  readonly dtype: DType;
}

/** Names of the runtime support functions the generated code calls (see runtime.ts). */
export const RT = {
  oob: '$oob',
  toInt64: '$toI64',
  toUint64: '$toU64',
  toUint8Clamped: '$toU8c',
  div64: '$div64',
  rem64: '$rem64',
  fastExpF32: '$fastExpF32',
  timeout: '$timeout',
  drawFloat64: '$drawF64',
  drawFloat32: '$drawF32',
  table: '$table',
} as const;

/**
 * Module-level state of a runner whose kernel draws random numbers (compiler/random-stream.ts):
 * the call's key, the loop iteration and its next draw number. Module-level so that helpers,
 * which are functions of their own, continue the iteration's stream.
 */
export const RANDOM_STATE = 'let $rngKey0 = 0, $rngKey1 = 0, $rngItem = 0, $rngDraw = 0;\n';

/**
 * Loop iterations between two looks at the clock in a kernel run with a `timeout` (a decrement and
 * a compare per iteration; `performance.now()` every this many).
 */
export const DEADLINE_TICKS = 4096;

/**
 * Module-level code of a runner that checks a deadline: `$tock()` throws the call's
 * CallTimeoutError once `$deadline` (`performance.now()` time) has passed.
 */
export const DEADLINE_SUPPORT = `let $deadline = Infinity;\nfunction $tock() { if (performance.now() >= $deadline) ${RT.timeout}(); }\n`;

/**
 * The countdown each checked function (the runner, each helper) declares: a local, so that the
 * decrement stays in a register (a module-level counter cost the loop 3×).
 */
export const DEADLINE_COUNTER = `let $tick = ${DEADLINE_TICKS};`;

/** The statement a checked loop starts each iteration with: the clock every {@link DEADLINE_TICKS} iterations. */
export const DEADLINE_CHECK = `if (--$tick === 0) { $tick = ${DEADLINE_TICKS}; $tock(); }`;

export class JsEmitter {
  private labelCount = 0;
  private readonly loops: string[] = [];
  /** The accesses of the body being emitted that passes/bounds.ts proves in bounds: not checked. */
  private inBounds = findInBoundsAccesses([]);
  /** The kernel's lookup tables, which every function reads as module-level constants. */
  private readonly tables = new Map<Variable, ArrayAccess>();

  constructor(
    private readonly arrays: Map<Variable, ArrayAccess>,
    private readonly boundsCheck: boolean,
    /** How `return` is emitted: inline kernels assign a result and leave their block. */
    private readonly onReturn: (value: string | undefined) => string,
    /** Sites of index checks: `$oob(site, …)` reports `sites[site]`; shared with helpers' emitters. */
    readonly sites: IndexCheckSite[] = [],
    /** Every loop checks the call's deadline ({@link DEADLINE_CHECK}): a call with a `timeout`. */
    private readonly deadlineChecks = false,
  ) {}

  /** A float32 `Math.exp` the fastmath pass marked: computed in float32 (targets/cpu/fast-exp.ts). */
  private isFastExp(e: Expr): boolean {
    return e.kind === 'math' && e.fastmath === true;
  }

  static varName(v: Variable): string {
    return `${v.name}_${v.id}`;
  }

  /**
   * Asks which accesses of a function body need no bounds check; call before emitting that body.
   *
   * @param body - the kernel's or helper's statements this emitter is about to emit
   */
  prove(body: readonly Stmt[]): void {
    if (this.boundsCheck) this.inBounds = findInBoundsAccesses(body);
  }

  /**
   * Declares the kernel's lookup tables (compiler/tables.ts) for this emitter and the helpers it
   * emits; call before emitting any function.
   *
   * @returns module-level code that decodes each table once, from base64 text in the source (so a
   *   worker sent the source has the table too)
   */
  declareTables(tables: readonly KernelTable[] | undefined): string {
    let out = '';
    (tables ?? []).forEach((t, k) => {
      const dtype = (t.variable.type as ArrayType).dtype;
      const access: ArrayAccess = { data: `$t${k}`, base: '0', strides: ['1'], dims: [String(t.data.length)], dtype };
      this.tables.set(t.variable, access);
      this.arrays.set(t.variable, access);
      out += `const $t${k} = new ${DTYPES[dtype].arrayType.name}(${RT.table}("${tableBase64(t.data)}"));\n`;
    });
    return out;
  }

  // ------------------------------------------------------------------ statements

  stmts(list: readonly Stmt[], indent: string): string {
    return list.map((s) => this.stmt(s, indent)).join('');
  }

  stmt(s: Stmt, ind: string): string {
    switch (s.kind) {
      case 'let':
        return `${ind}let ${JsEmitter.varName(s.variable)} = ${this.expr(s.init)};\n`;
      case 'local-array': {
        // Allocated once, outside the element loop (see declareLocalArrays); zeroed where declared.
        const access = this.arrays.get(s.variable)!;
        return `${ind}${access.data}.fill(${isBigInt(access.dtype) ? '0n' : '0'});\n`;
      }
      case 'assign':
        return `${ind}${JsEmitter.varName(s.variable)} = ${this.expr(s.value)};\n`;
      case 'store': {
        const access = this.arrays.get(s.array)!;
        const { check, address } = this.address(s, access);
        return `${ind}${check ? `if (${check}) ${address.oob};\n${ind}` : ''}${access.data}[${address.index}] = ${this.stored(s.value, access.dtype)};\n`;
      }
      case 'if': {
        const otherwise = s.otherwise.length ? ` else {\n${this.stmts(s.otherwise, ind + '  ')}${ind}}` : '';
        return `${ind}if (${this.expr(s.cond)}) {\n${this.stmts(s.then, ind + '  ')}${ind}}${otherwise}\n`;
      }
      case 'loop':
        return this.loop(s, ind);
      case 'break':
        return `${ind}break;\n`;
      case 'continue': {
        const label = this.loops[this.loops.length - 1];
        return label ? `${ind}break ${label};\n` : `${ind}continue;\n`;
      }
      case 'return':
        return `${ind}${this.onReturn(s.value ? this.expr(s.value) : undefined)}\n`;
      case 'call':
        return `${ind}${this.expr(s.call)};\n`;
      case 'draw':
        return `${ind}let ${JsEmitter.varName(s.variable)} = ${s.variable.type === 'float32' ? RT.drawFloat32 : RT.drawFloat64}($rngKey0, $rngKey1, $rngItem, $rngDraw++);\n`;
    }
  }

  /**
   * `continue` must run a `for` loop's update, which the IR keeps as statements; such loops put
   * the body in a labelled block and turn `continue` into leaving that block.
   */
  private loop(s: Extract<Stmt, { kind: 'loop' }>, ind: string): string {
    const init = s.init.length ? this.stmts(s.init, ind + '  ') : '';
    const cond = s.cond ? this.expr(s.cond) : 'true';
    const label = s.update.length && continues(s.body) ? `$body${this.labelCount++}` : '';
    this.loops.push(label);
    const check = this.deadlineChecks && !finiteCountingLoop(s) ? `${label ? ind + '    ' : ind + '  '}${DEADLINE_CHECK}\n` : '';
    const body = check + this.stmts(s.body, label ? ind + '    ' : ind + '  ');
    this.loops.pop();
    const update = this.stmts(s.update, ind + '  ');
    let out: string;
    if (!s.testFirst) {
      out = `${ind}do {\n${body}${ind}} while (${cond});\n`;
    } else if (label) {
      out = `${ind}while (${cond}) {\n${ind}  ${label}: {\n${body}${ind}  }\n${update}${ind}}\n`;
    } else if (s.update.length) {
      out = `${ind}while (${cond}) {\n${body}${update}${ind}}\n`;
    } else {
      out = `${ind}while (${cond}) {\n${body}${ind}}\n`;
    }
    return init ? `${ind}{\n${init}${out.replace(/^/gm, '  ').replace(/^ {2}$/gm, '')}${ind}}\n` : out;
  }

  // ------------------------------------------------------------------ expressions

  /**
   * A value about to be stored into an array of `dtype`. A Float32Array store rounds exactly as
   * `Math.fround` does, so the last rounding of a float32 operation is left to the store.
   */
  stored(e: Expr, dtype: DType): string {
    if (dtype !== 'float32' || e.type !== 'float32') return this.expr(e);
    if (e.kind === 'binary') return `(${this.expr(e.left)} ${e.op} ${this.expr(e.right)})`;
    if (e.kind === 'cast' && (e.value.type === 'float64' || e.value.type === 'int32' || e.value.type === 'uint32')) return this.expr(e.value);
    if (e.kind === 'math' && !MATH[e.fn].exactInFloat32 && e.args.every((a) => a.type === 'float32') && !this.isFastExp(e)) return `Math.${e.fn}(${e.args.map((a) => this.expr(a)).join(', ')})`;
    return this.expr(e);
  }

  expr(e: Expr): string {
    switch (e.kind) {
      case 'const':
        return literal(e.value, e.type);
      case 'var':
        return JsEmitter.varName(e.variable);
      case 'unary':
        return this.unary(e.op, this.expr(e.arg), e.type);
      case 'binary':
        return binary(e.op, this.expr(e.left), this.expr(e.right), e.type);
      case 'compare': {
        const op = e.op === '==' ? '===' : e.op === '!=' ? '!==' : e.op;
        return `(${this.expr(e.left)} ${op} ${this.expr(e.right)})`;
      }
      case 'logical':
        return `(${this.expr(e.left)} ${e.op} ${this.expr(e.right)})`;
      case 'select':
        return `(${this.expr(e.cond)} ? ${this.expr(e.then)} : ${this.expr(e.otherwise)})`;
      case 'cast':
        return cast(this.expr(e.value), e.value.type, e.type);
      case 'math':
        if (this.isFastExp(e)) return `${RT.fastExpF32}(${this.expr(e.args[0]!)})`;
        return math(e.fn, e.args.map((a) => this.expr(a)), e.type);
      case 'call':
        return `${helperName(e.helper)}(${e.args.map((a) => this.argument(a)).join(', ')})`;
      case 'index': {
        const access = this.arrays.get(e.array)!;
        const { check, address } = this.address(e, access);
        const load = `${access.data}[${address.index}]`;
        const value = access.dtype === 'bool' ? `(${load} !== 0)` : load;
        return check ? `(${check} ? ${address.oob} : ${value})` : value;
      }
      case 'dim':
        return this.arrays.get(e.array)!.dims[e.axis]!;
    }
  }

  private unary(op: '-' | '!' | '~', arg: string, type: DType): string {
    if (op === '!') return `!${arg}`;
    if (isBigInt(type)) return `BigInt.as${type === 'int64' ? 'Int' : 'Uint'}N(64, ${op}${arg})`;
    if (op === '~') return `(~${arg})`;
    if (type === 'int32') return `(-${arg} | 0)`;
    if (type === 'uint32') return `(-${arg} >>> 0)`;
    return `(-${arg})`;
  }

  /** Arrays are passed to helpers as their parts: data, base, strides, dims. */
  private argument(a: Argument): string {
    if (a.kind !== 'array-ref') return this.expr(a);
    const access = this.arrays.get(a.array)!;
    return [access.data, access.base, ...access.strides, ...access.dims].join(', ');
  }

  /** The element index of `array[indices]`, and the bounds check guarding it. */
  private address(node: ArrayAccessNode, access: ArrayAccess) {
    const { array, indices, loc } = node;
    const idx = indices.map((i) => this.expr(i));
    const terms = idx.map((i, axis) => (access.strides[axis] === '1' ? i : `${i} * ${access.strides[axis]}`));
    const index = access.base === '0' ? terms.join(' + ') : [access.base, ...terms].join(' + ');
    if (!this.boundsCheck || this.inBounds.has(node)) return { check: '', address: { index, oob: '' } };
    const site = this.sites.length;
    this.sites.push(indexCheckSite(array.name, loc));
    // `i >>> 0` maps negative indices above every valid size, so one comparison checks both ends;
    // a float index must also survive the conversion unchanged (no fraction, no NaN).
    const check = idx
      .map((i, axis) => (isFloat(indices[axis]!.type) ? `(${i} >>> 0) !== ${i} || ${i} >= ${access.dims[axis]}` : `(${i} >>> 0) >= ${access.dims[axis]}`))
      .join(' || ');
    const oob = `${RT.oob}(${site}, [${idx.join(', ')}], [${access.dims.join(', ')}])`;
    return { check, address: { index, oob } };
  }

  // ------------------------------------------------------------------ helpers

  /** A helper as a JS function; its local arrays live in the enclosing scope (no recursion). */
  helper(h: HelperFunction): string {
    const arrays = new Map<Variable, ArrayAccess>(this.tables);
    const params = h.params.flatMap((p) => {
      if (!isArrayType(p.type)) return [JsEmitter.varName(p)];
      const n = JsEmitter.varName(p);
      const axes = [...Array(p.type.ndim).keys()];
      arrays.set(p, { data: `${n}$d`, base: `${n}$o`, strides: axes.map((a) => `${n}$s${a}`), dims: axes.map((a) => `${n}$n${a}`), dtype: p.type.dtype });
      return [`${n}$d`, `${n}$o`, ...axes.map((a) => `${n}$s${a}`), ...axes.map((a) => `${n}$n${a}`)];
    });
    const localArrays = declareLocalArrays(h.body, arrays, `${helperName(h)}$`);
    const emitter = new JsEmitter(arrays, this.boundsCheck, (value) => `return${value === undefined ? '' : ` ${value}`};`, this.sites, this.deadlineChecks);
    emitter.prove(h.body);
    const body = emitter.stmts(h.body, '  ');
    const ticks = this.deadlineChecks ? `  ${DEADLINE_COUNTER}\n` : '';
    return `${localArrays}function ${helperName(h)}(${params.join(', ')}) {\n${ticks}${body}}\n`;
  }
}

/**
 * An innermost `for (let i = a; i < B; i += c)` (or `<=`) with c ≥ 1, B a constant up to 65,536 or
 * a core size (bounded by the data), and `i` assigned nowhere else: it ends after at most B
 * iterations, so it needs no deadline check of its own (enclosing loops and the element loop have
 * theirs). The checks then cost nothing in the usual short counting loops, where a decrement per
 * iteration was a large part of the work.
 */
function finiteCountingLoop(s: Extract<Stmt, { kind: 'loop' }>): boolean {
  const [init] = s.init;
  const [update] = s.update;
  if (!s.testFirst || s.init.length !== 1 || s.update.length !== 1 || init?.kind !== 'let' || update?.kind !== 'assign' || !s.cond) return false;
  const i = init.variable;
  const isI = (e: Expr) => e.kind === 'var' && e.variable === i;
  const unwrap = (e: Expr): Expr => (e.kind === 'cast' ? unwrap(e.value) : e);
  const c = s.cond;
  if (c.kind !== 'compare' || (c.op !== '<' && c.op !== '<=') || !isI(unwrap(c.left))) return false;
  const bound = unwrap(c.right);
  const finite = (bound.kind === 'const' && typeof bound.value === 'number' && Math.abs(bound.value) <= 65_536) || bound.kind === 'dim';
  const step = update.value;
  const steps = update.variable === i && step.kind === 'binary' && step.op === '+' && isI(unwrap(step.left)) && step.right.kind === 'const' && typeof step.right.value === 'number' && step.right.value >= 1;
  if (!finite || !steps) return false;
  let assignedOrNested = false;
  const visit = (list: readonly Stmt[]) => {
    for (const t of list) {
      if (((t.kind === 'assign' || t.kind === 'let') && t.variable === i) || t.kind === 'loop') assignedOrNested = true;
      if (t.kind === 'if') { visit(t.then); visit(t.otherwise); }
    }
  };
  visit(s.body);
  return !assignedOrNested;
}

/** Whether a loop body continues its own loop (nested loops' `continue`s are their own). */
function continues(body: readonly Stmt[]): boolean {
  return body.some((s) => s.kind === 'continue' || (s.kind === 'if' && (continues(s.then) || continues(s.otherwise))));
}

export function helperName(h: HelperFunction): string {
  return `$h_${h.name}`;
}

/**
 * Local typed arrays are allocated once per generated function (not per element) and zeroed where
 * the kernel declares them, which is the same as allocating them there.
 */
export function declareLocalArrays(body: readonly Stmt[], arrays: Map<Variable, ArrayAccess>, prefix = ''): string {
  let out = '';
  const visit = (list: readonly Stmt[]) => {
    for (const s of list) {
      if (s.kind === 'local-array') {
        const name = JsEmitter.varName(s.variable);
        const dtype = (s.variable.type as { dtype: DType }).dtype;
        arrays.set(s.variable, { data: prefix + name, base: '0', strides: ['1'], dims: [String(s.length)], dtype });
        out += `const ${prefix}${name} = new ${DTYPES[dtype].arrayType.name}(${s.length});\n`;
      } else if (s.kind === 'if') {
        visit(s.then);
        visit(s.otherwise);
      } else if (s.kind === 'loop') {
        visit(s.init);
        visit(s.body);
      }
    }
  };
  visit(body);
  return out;
}

export function literal(value: number | bigint | boolean, type: DType): string {
  if (typeof value === 'boolean') return String(value);
  if (typeof value === 'bigint' || isBigInt(type)) return `${BigInt(value)}n`;
  if (Object.is(value, -0)) return '-0';
  if (Number.isNaN(value)) return 'NaN';
  if (value === Infinity) return 'Infinity';
  if (value === -Infinity) return '-Infinity';
  return value < 0 ? `(${value})` : String(value);
}

function binary(op: string, a: string, b: string, type: DType): string {
  if (isFloat(type)) {
    const e = `${a} ${op} ${b}`;
    return type === 'float32' ? `Math.fround(${e})` : `(${e})`;
  }
  if (isBigInt(type)) {
    const wrap = type === 'int64' ? 'BigInt.asIntN(64, ' : 'BigInt.asUintN(64, ';
    switch (op) {
      case '/': return `${RT.div64}(${a}, ${b}, ${type === 'int64'})`;
      case '%': return `${RT.rem64}(${a}, ${b})`;
      case '<<': return `${wrap}${a} << (${b} & 63n))`;
      case '>>': return `(${a} >> (${b} & 63n))`;
      default: return `${wrap}${a} ${op} ${b})`;
    }
  }
  const u = type === 'uint32';
  switch (op) {
    case '*': return u ? `(Math.imul(${a}, ${b}) >>> 0)` : `Math.imul(${a}, ${b})`;
    // (a / b) | 0 truncates toward zero, wraps −2³¹ / −1, and gives 0 for x / 0 (Infinity | 0).
    case '+': case '-': case '/': case '%': return u ? `((${a} ${op} ${b}) >>> 0)` : `((${a} ${op} ${b}) | 0)`;
    default: return `(${a} ${op} ${b})`; // bitwise: JS already gives int32 (uint32 for >>>)
  }
}

/** Conversions, with the semantics of storing into a typed array of `to` (see ir.ts `cast`). */
export function cast(v: string, from: DType, to: DType): string {
  if (from === to) return v;
  if (to === 'bool') return isBigInt(from) ? `(${v} !== 0n)` : `!!(${v})`;
  if (from === 'bool') return isBigInt(to) ? `(${v} ? 1n : 0n)` : `(${v} ? 1 : 0)`;
  if (isBigInt(to)) {
    if (isBigInt(from)) return `BigInt.as${to === 'int64' ? 'Int' : 'Uint'}N(64, ${v})`;
    return `${to === 'int64' ? RT.toInt64 : RT.toUint64}(${v})`;
  }
  // A clamped store sees the whole value (a bigint's sign and size too), as Uint8ClampedArray does.
  if (to === 'uint8c') return from === 'uint8' ? v : `${RT.toUint8Clamped}(${isBigInt(from) ? `Number(${v})` : v})`;
  const num = isBigInt(from) ? (to === 'float64' || to === 'float32' ? `Number(${v})` : `Number(BigInt.asIntN(32, ${v}))`) : v;
  switch (to) {
    case 'float64': return num;
    case 'float32': return `Math.fround(${num})`;
    case 'int32': return `(${num} | 0)`;
    case 'uint32': return `(${num} >>> 0)`;
    case 'int16': return `((${num} << 16) >> 16)`;
    case 'int8': return `((${num} << 24) >> 24)`;
    case 'uint16': return `(${num} & 65535)`;
    case 'uint8': return `(${num} & 255)`;
    case 'int64': case 'uint64': throw new Error(`unreachable cast ${from} → ${to}: handled above`);
    default: {
      const never: never = to;
      throw new Error(`unreachable cast ${from} → ${String(never)}`);
    }
  }
}

/**
 * How generated JS computes each Math function: V8's own `Math.*`, and for the functions whose
 * typing keeps 64-bit integers (math-functions.ts), their bigint form.
 */
const JS_MATH: Readonly<Record<MathFunction, { readonly bigint?: (args: readonly string[]) => string }>> = {
  abs: { bigint: ([a]) => `(${a} < 0n ? BigInt.asIntN(64, -${a}) : ${a})` },
  sign: { bigint: ([a]) => `(${a} > 0n ? 1n : ${a} < 0n ? -1n : 0n)` },
  min: { bigint: (args) => args.reduce((x, y) => `(${x} < ${y} ? ${x} : ${y})`) },
  max: { bigint: (args) => args.reduce((x, y) => `(${x} > ${y} ? ${x} : ${y})`) },
  floor: {}, ceil: {}, round: {}, trunc: {}, fround: {},
  sqrt: {}, cbrt: {}, exp: {}, expm1: {}, log: {}, log1p: {}, log2: {}, log10: {},
  sin: {}, cos: {}, tan: {}, asin: {}, acos: {}, atan: {}, sinh: {}, cosh: {}, tanh: {}, asinh: {}, acosh: {}, atanh: {},
  atan2: {}, pow: {}, hypot: {}, imul: {}, clz32: {},
};

function math(fn: MathFunction, args: string[], type: DType): string {
  const bigint = JS_MATH[fn].bigint;
  if (isBigInt(type) && bigint) return bigint(args);
  const call = `Math.${fn}(${args.join(', ')})`;
  if (type === 'float32' && !MATH[fn].exactInFloat32) return `Math.fround(${call})`;
  if (type === 'int32' && fn === 'abs') return `(${call} | 0)`;
  return call;
}
