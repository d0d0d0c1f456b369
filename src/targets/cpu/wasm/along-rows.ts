/**
 * Per-row (guvectorize) kernels vectorised along the row: rows run one after another, as in the
 * scalar loop, and a loop along the row whose iterations are independent runs 4 (32-bit values)
 * or 2 (float64) of its iterations per vector, reading and writing its elements with contiguous
 * v128 loads and stores — what Numba's LLVM does with such a loop, where rows in lanes
 * (emit-rows.ts) must transpose rows into lanes and back.
 *
 * A loop qualifies (`alongRowLoops`) where
 * - it is a bounded counter loop `for (let i = start; i < end; i++)` (loop-counters.ts),
 * - its body is `let`s of its own variables, assignments to them, stores `out[i] = …` into 1-D
 *   arrays contiguous along the row, and `if`s of those (run under lane masks, as element-wise
 *   SIMD code runs them),
 * - it reads 1-D contiguous arrays at `a[i + c]` (c a constant; arrays it writes only at `[i]`),
 *   and values that do not change in the loop (per-row scalars, values computed before it): no
 *   value is carried from one iteration to the next but reductions (a row's max, min, sum or
 *   product: {@link AlongReduction}), each kept bit for bit as the scalar loop computes it,
 * - every expression has a lane form (as element-wise SIMD code: emit-simd.ts), helpers included
 *   (inlined; they take no arrays); `i` as a value is a float64 vector of consecutive counts.
 * Each element then gets the operations the scalar loop gives it, in the same order: the results
 * are the JS engine's bit for bit.
 *
 * The vector loop runs iterations whose every access is in bounds, worked out once per loop:
 * from the first `i` with `i + c ≥ 0` for every read, while `i + lanes − 1 < end`, every read's
 * `i + lanes − 1 + c` and every store's index is below its array's length. The scalar loop then
 * goes on from where the vector loop stopped: the last iterations, or all of them where the first
 * reads before an array's start (where the JS engine reports the index out of bounds). A loop runs
 * scalar also where its output row overlaps a row it reads (or another output) in memory, unless
 * it is the very same row and either every access to it is at `[i]`, or it is read only at
 * `i + c`, `c ≥ 0`, before the body's one store (each element is then read before it is written,
 * as in the scalar order).
 *
 * A variant that calibration times beside rows in lanes (engine-calibration.ts): faster where the
 * loops along the row are most of the work and rows are long enough to fill vectors (softmax: its
 * max in lanes, its exp in 4 float32 lanes where rows in lanes hold the float64 sum's 2), slower
 * where loops that carry a value other than a reduction (a running sum stored per element) run
 * scalar here but in lanes there.
 */
import { type DType, DTYPES } from '../../../dtypes.js';
import type { Expr, HelperFunction, Stmt, TypedKernel, Variable } from '../../../compiler/ir.js';
import { isArrayType } from '../../../compiler/ir.js';
import { childExprs, forEachExpr, forEachStmt } from '../../../compiler/ir-walk.js';
import type { MemoryLayout } from '../memory-layout.js';
import { Op, SimdOp, ValType } from './encoder.js';
import type { FunctionEmitter, ModuleContext, WasmArray } from './emit-scalar.js';
import { laneType, SimdEmitter } from './emit-simd.js';
import { integralSource } from './int-lanes.js';
import { isInt32Exact } from './loop-counters.js';
import { elementAddress, loadLanes, storeLanes } from './lane-memory.js';
import { WASM_MATH } from './math-support.js';
import { type NarrowBody, narrowBody, NarrowAlongSteps } from './along-int-lanes.js';

/** Lane types of values (8- and 16-bit integers as exact int32, as element-wise lanes hold them). */
const LANE_TYPES = new Set<DType>(['float32', 'float64', 'int32', 'uint32', 'int8', 'uint8', 'uint8c', 'int16', 'uint16', 'bool']);

/** How one loop along the row runs in lanes. */
export interface AlongLoop {
  readonly counter: Variable;
  /** The loop runs while `counter < end` (an int32-exact expression). */
  readonly end: Expr;
  /**
   * 4 (32-bit values), or 2 where a value is float64 (32-bit values then in lanes 0–1); 8 and 16
   * where the body runs in 16- or 8-bit integer lanes ({@link narrow}).
   */
  readonly lanes: 16 | 8 | 4 | 2;
  /** The body as an element-wise kernel in 8- or 16-bit integer lanes, where it is exact there (along-int-lanes.ts). */
  readonly narrow?: NarrowBody;
  /** Vectors per step: each array moves in 16 bytes, and float64 arithmetic runs two chains side by side. */
  readonly vectors: number;
  /** Per array the loop reads: the least and the greatest `c` of its reads `a[i + c]`. */
  readonly reads: ReadonlyMap<Variable, { readonly min: number; readonly max: number }>;
  /** The arrays the loop stores into, at `[i]`. */
  readonly writes: ReadonlySet<Variable>;
  /** The variables held in lanes: the body's own, and inlined helpers' parameters and locals. */
  readonly locals: ReadonlySet<Variable>;
  /** The body's only store is its last statement (see the file comment: in-place rows). */
  readonly storeLast: boolean;
  /** The arrays read or written that are operands (not local arrays): they may share memory. */
  readonly operands: ReadonlySet<Variable>;
  /** The values the loop carries from one iteration to the next, each a reduction of a value computed in lanes. */
  readonly reductions: ReadonlyMap<Variable, AlongReduction>;
}

/**
 * A value a loop carries, updated by one statement at the top of its body, `v = v ∘ e` (∘ one of
 * `+ - *`, float64) or `v = Math.max(v, e)` / `Math.min` (float32 or float64), where nothing else
 * in the loop (`e` included) reads or writes `v`. `e` is computed in lanes like any
 * other value of the body; how it is combined into `v` keeps the scalar loop's result bit for bit:
 * - `+ - *`: lane by lane, in the order of the iterations, into the scalar `v` (a float sum is
 *   not associative: adding lanes side by side would round differently);
 * - max and min: into a vector of partial results, combined into `v` after the vector loop.
 *   Math.max and Math.min of a set do not depend on the order (NaN wins, +0 above −0), and
 *   f32x4/f64x2 max and min follow exactly those rules (emit-simd.ts minMax).
 * A loop with `+ - *` reductions qualifies only where it also stores (analyseLoop says why).
 */
export interface AlongReduction {
  readonly op: '+' | '-' | '*' | 'max' | 'min';
  /** The value each iteration combines into the variable, computed in lanes. */
  readonly operand: Expr;
  /** The statement converts a float32 operand to float64: its lanes are float32, each promoted as it is combined. */
  readonly promoted: boolean;
  /**
   * The operand is an element `a[i + c]` that memory still holds after the vector loop (an input,
   * or an array the loop stores into before this statement): a sum or product is combined after
   * the vector loop, from memory, in order — not in the vector loop, where V8 keeps a carried
   * scalar beside an out-of-line call (softmax's exp) in memory (bench/results/rows-ab-mixed-*.md).
   */
  readonly fromMemory?: { readonly array: Variable; readonly offset: number };
}

/** Set by tests and benchmarks (`__testing.setAlongRows`): every guvectorize module made after runs its loops along the row where they qualify (true), or never (false). */
let override: boolean | undefined;

/**
 * Hooks for tests and benchmarks: not part of the public API.
 * @internal
 */
export const __testing = {
  /** Whether modules compiled from now on run loops along the row (true), never (false), or where the layout asks (undefined). */
  setAlongRows(on: boolean | undefined): void {
    override = on;
  },
};

/** Whether a per-row kernel's module for `layout` runs its qualifying loops along the row. */
export function wantsAlongRows(layout: MemoryLayout): boolean {
  return override ?? layout.alongRows === true;
}

/**
 * The loops of a per-row kernel that run along the row in lanes (keyed by their statement), or
 * why none does.
 */
export function alongRowLoops(kernel: TypedKernel, layout: MemoryLayout, counters: ReadonlySet<Variable>): Map<Stmt, AlongLoop> | string {
  const contiguous = new Set<Variable>();
  kernel.params.forEach((p, i) => {
    if (isArrayType(p.type) && p.type.ndim === 1 && layout.coreUnit[i]?.[0]) contiguous.add(p);
  });
  forEachStmt(kernel.body, (s) => {
    if (s.kind === 'local-array') contiguous.add(s.variable);
  });
  const loops = new Map<Stmt, AlongLoop>();
  let why: string | undefined;
  forEachStmt(kernel.body, (s) => {
    if (s.kind !== 'loop') return;
    const plan = analyse(s, contiguous, counters, kernel);
    if (typeof plan === 'string') why ??= plan;
    else loops.set(s, plan);
  });
  return loops.size ? loops : (why ?? 'the kernel has no loop');
}

class Refusal extends Error {}

function refuse(why: string): never {
  throw new Refusal(why);
}

function analyse(s: Extract<Stmt, { kind: 'loop' }>, contiguous: ReadonlySet<Variable>, counters: ReadonlySet<Variable>, kernel: TypedKernel): AlongLoop | string {
  try {
    return analyseLoop(s, contiguous, counters, kernel);
  } catch (error) {
    if (error instanceof Refusal) return error.message;
    throw error;
  }
}

/** `a[i + c]`: the constant c, or undefined where the index is not of that form. */
function offsetOf(index: Expr, counter: Variable): number | undefined {
  if (index.kind === 'var') return index.variable === counter ? 0 : undefined;
  if (index.kind !== 'binary' || (index.op !== '+' && index.op !== '-')) return undefined;
  const small = (x: Expr) => (x.kind === 'const' && typeof x.value === 'number' && Number.isInteger(x.value) && Math.abs(x.value) < 2 ** 20 ? x.value : undefined);
  const isCounter = (x: Expr) => x.kind === 'var' && x.variable === counter;
  if (isCounter(index.left)) {
    const c = small(index.right);
    return c === undefined ? undefined : index.op === '+' ? c : -c;
  }
  return index.op === '+' && isCounter(index.right) ? small(index.left) : undefined;
}

/** The reduction that `v = …` is (see {@link AlongReduction}), or undefined. */
function reductionOf(st: Extract<Stmt, { kind: 'assign' }>): AlongReduction | undefined {
  const v = st.variable;
  const x = st.value;
  const isV = (y: Expr) => y.kind === 'var' && y.variable === v;
  if (x.kind === 'binary' && (x.op === '+' || x.op === '-' || x.op === '*') && x.type === 'float64' && v.type === 'float64') {
    // `e + v` and `e * v` as `v + e`, `v * e`: IEEE addition and multiplication commute.
    const operand = isV(x.left) ? x.right : x.op !== '-' && isV(x.right) ? x.left : undefined;
    if (!operand) return undefined;
    const promoted = operand.kind === 'cast' && operand.value.type === 'float32';
    return { op: x.op, operand: promoted ? operand.value : operand, promoted };
  }
  if (x.kind === 'math' && (x.fn === 'max' || x.fn === 'min') && x.args.length === 2 && (x.type === 'float32' || x.type === 'float64') && v.type === x.type) {
    const at = x.args.findIndex(isV);
    const operand = x.args[1 - at];
    if (at < 0 || !operand) return undefined;
    return { op: x.fn, operand, promoted: false };
  }
  return undefined;
}

function analyseLoop(s: Extract<Stmt, { kind: 'loop' }>, contiguous: ReadonlySet<Variable>, counters: ReadonlySet<Variable>, kernel: TypedKernel): AlongLoop {
  const init = s.init[0];
  const counter = init?.kind === 'let' ? init.variable : undefined;
  if (!counter || !counters.has(counter) || s.cond?.kind !== 'compare') refuse('a loop is not `for (let i = start; i < end; i++)`');
  const end = s.cond.right;
  if (!isInt32Exact(end, new Set())) refuse('a loop\'s end is not an int32 value');
  const locals = new Set<Variable>();
  const reads = new Map<Variable, { min: number; max: number }>();
  const writes = new Set<Variable>();
  const types = new Set<DType>();
  const bytes: number[] = [];
  /** A function in lanes costs more than an instruction or two (emit-simd.ts callsOutOfLine). */
  let outOfLine = false;
  const seeType = (t: DType) => {
    if (!LANE_TYPES.has(t)) refuse(`a loop computes in ${t}`);
    types.add(laneType(t));
  };
  /** Whether an expression varies from one iteration to the next (else it is computed once, in scalar code). */
  const varies = (x: Expr): boolean => x.kind === 'index' || x.kind === 'call' || (x.kind === 'var' && (locals.has(x.variable) || x.variable === counter)) || childExprs(x).some(varies);
  const visit = (x: Expr): void => {
    seeType(x.type);
    if (!varies(x)) return;
    switch (x.kind) {
      case 'index': {
        const a = x.array;
        if (!contiguous.has(a)) refuse(`\`${a.name}\` is not a 1-D array contiguous along the row`);
        const c = offsetOf(x.indices[0]!, counter);
        if (c === undefined) refuse(`\`${a.name}\` is read at an index other than \`i + c\``);
        if (writes.has(a) && c !== 0) refuse(`a loop reads \`${a.name}\`, which it writes, at another index than \`i\``);
        const r = reads.get(a);
        reads.set(a, { min: Math.min(c, r?.min ?? c), max: Math.max(c, r?.max ?? c) });
        bytes.push(DTYPES[(a.type as { dtype: DType }).dtype].bytes);
        return;
      }
      case 'call':
        x.args.forEach((a) => {
          if (a.kind === 'array-ref') refuse('a helper takes an array');
          visit(a);
        });
        helper(x.helper);
        return;
      case 'binary':
        if (!(x.type === 'float32' || x.type === 'float64') && x.op === '%') refuse('integer `%` has no SIMD instruction');
        if (x.op === '%') outOfLine = true; // fmod, lane by lane
        if (['<<', '>>', '>>>'].includes(x.op) && x.right.kind !== 'const') refuse('a shift count varies');
        break;
      case 'compare':
        seeType(x.operandType);
        break;
      case 'cast':
        // `p > t ? 255 : 0` stored into uint8 is computed in int32 lanes (emit-simd.ts SimdEmitter.cast).
        visit(integralSource(x) ?? x.value);
        return;
      case 'math':
        if (WASM_MATH[x.fn].floatLanes !== 'instructions') outOfLine = true;
        if ((laneType(x.type) === 'int32' || x.type === 'uint32') && (!WASM_MATH[x.fn].intLanes || (x.fn === 'abs' && x.type === 'uint32'))) refuse(`Math.${x.fn} on integers`);
        break;
      case 'var':
        return;
      default:
        break;
    }
    childExprs(x).forEach(visit);
  };
  const seen = new Set<HelperFunction>();
  const helper = (h: HelperFunction): void => {
    if (seen.has(h)) return;
    seen.add(h);
    h.params.forEach((p) => locals.add(p));
    if (h.returnType !== 'void') seeType(h.returnType);
    helperStmts(h.body);
  };
  const helperStmts = (list: readonly Stmt[]): void => {
    for (const st of list) {
      switch (st.kind) {
        case 'let': case 'assign':
          locals.add(st.variable);
          seeType(st.variable.type as DType);
          visit(st.kind === 'let' ? st.init : st.value);
          break;
        case 'if': visit(st.cond); helperStmts(st.then); helperStmts(st.otherwise); break;
        case 'return': if (st.value) visit(st.value); break;
        default: refuse(`a helper has a ${st.kind === 'local-array' ? 'local array' : st.kind} statement`);
      }
    }
  };
  const reductions = new Map<Variable, AlongReduction>();
  let storeLast = true;
  let stores = 0;
  forEachStmt(s.body, (st) => {
    if (st.kind === 'store') writes.add(st.array);
  });
  const statements = (list: readonly Stmt[], top: boolean): void => list.forEach((st, at) => {
    switch (st.kind) {
      case 'let':
        locals.add(st.variable);
        seeType(st.variable.type as DType);
        visit(st.init);
        return;
      case 'assign': {
        if (locals.has(st.variable)) {
          visit(st.value);
          return;
        }
        const reduction = top ? reductionOf(st) : undefined;
        if (!reduction) refuse(`\`${st.variable.name}\` carries a value from one iteration to the next`);
        reductions.set(st.variable, reduction);
        visit(reduction.operand);
        return;
      }
      case 'store': {
        const a = st.array;
        const dtype = (a.type as { dtype: DType }).dtype;
        if (!contiguous.has(a)) refuse(`\`${a.name}\` is not a 1-D array contiguous along the row`);
        if (offsetOf(st.indices[0]!, counter) !== 0) refuse(`\`${a.name}\` is written at an index other than \`i\``);
        if (st.value.type !== dtype || dtype === 'bool') refuse(`\`${a.name}\` is written a ${st.value.type} value`);
        seeType(dtype);
        bytes.push(DTYPES[dtype].bytes);
        visit(st.value);
        if (!top || at !== list.length - 1) storeLast = false;
        stores++;
        return;
      }
      case 'if':
        // Both branches under lane masks (emit-simd.ts); a store keeps inactive lanes' elements.
        visit(st.cond);
        statements(st.then, false);
        statements(st.otherwise, false);
        return;
      default:
        refuse(`a loop has a ${st.kind === 'local-array' ? 'local array' : st.kind} statement`);
    }
  });
  statements(s.body, true);
  if (!writes.size && !reductions.size) refuse('a loop stores nothing');
  // Such a loop is one dependent add (or multiply) per element along the row, where rows in lanes
  // run one such chain per lane side by side: a row sum, a row dot and logsumexp's sum of exp
  // measured 1.09–1.2× slower along the row (2-core VM, bench/rows-ab.ts). With stores, the chain
  // runs beside their work (softmax's exp).
  if (!writes.size && [...reductions.values()].some((r) => r.op !== 'max' && r.op !== 'min')) refuse('a loop only sums or multiplies, and would run one dependent operation per element');
  for (const [v, r] of reductions) {
    if (r.op === 'max' || r.op === 'min' || r.operand.kind !== 'index') continue;
    const a = r.operand.array;
    const at = s.body.findIndex((st) => st.kind === 'assign' && st.variable === v);
    const storedAfter = s.body.slice(at).some((st) => {
      let stores = false;
      forEachStmt([st], (x) => {
        if (x.kind === 'store' && x.array === a) stores = true;
      });
      return stores;
    });
    if (!storedAfter) reductions.set(v, { ...r, fromMemory: { array: a, offset: offsetOf(r.operand.indices[0]!, counter)! } });
  }
  for (const v of reductions.keys()) {
    // Its own statement's one read: another (in its operand, another statement, a second update)
    // would see a value the lanes have not combined yet. (The loop's end, int32, reads no float.)
    let count = 0;
    forEachExpr(s.body, (x) => {
      if (x.kind === 'var' && x.variable === v) count++;
    });
    if (count !== 1) refuse(`\`${v.name}\` carries a value from one iteration to the next`);
  }
  const narrow = reductions.size ? undefined : narrowBody(s.body, counter, (index) => offsetOf(index, counter)!, varies, kernel.source);
  const lanes = narrow ? (narrow.plan.lanes.bits === 16 ? 8 : 16) : types.has('float64') ? 2 : 4;
  const narrowest = Math.min(...bytes);
  // Each array moves 16 bytes per step; and at least two vectors per step where the body is
  // arithmetic (half the loop's own instructions per element, two dependency chains side by side:
  // 0.86–0.92× the time of one on add-scalar-rows, box blur and a clamp of float32 on the 2-core
  // VM, four 0.91–0.93×); out-of-line functions would only double their code (log returns 1.11×).
  const fill = Math.max(1, 16 / (lanes * narrowest));
  const vectors = outOfLine ? fill : Math.max(fill, 2);
  const params = new Set(kernel.params);
  const operands = new Set([...reads.keys(), ...writes].filter((a) => params.has(a)));
  return { counter, end, lanes, narrow, vectors, reads, writes, locals, storeLast: storeLast && stores === 1, operands, reductions };
}

/**
 * Emits the vector loop of a loop along the row (its `init` included), before the scalar loop
 * that runs the rest (the caller emits it, without its `init`).
 */
export function emitAlongRowLoop(e: FunctionEmitter, ctx: ModuleContext, s: Extract<Stmt, { kind: 'loop' }>, loop: AlongLoop): void {
  e.stmts(s.init);
  const i = e.varLocal(loop.counter);
  const lanes = loop.narrow ? new NarrowAlongSteps(e, ctx, loop.narrow, i) : new AlongRowEmitter(e, ctx, loop, i, s.body);
  const reduces = lanes instanceof AlongRowEmitter ? lanes : undefined;
  e.open('block');
  const skip = e.depth() - 1;
  exitUnlessApart(e, loop, skip);
  // Every read's first element in bounds from here on (i only grows).
  const least = Math.min(0, ...[...loop.reads.values()].map((r) => r.min));
  e.get(i).i32(-least).op(Op.i32_lt_s).br(skip, true);
  const limit = endOfAccesses(e, loop);
  lanes.hoistUniforms();
  reduces?.startReductions();
  const steps = loop.vectors > 1 ? [loop.vectors, 1] : [1];
  for (const vectors of steps) {
    // The last i that starts a step of `vectors` vectors: limit − elements per step (limit < 2³¹).
    const perStep = loop.lanes * vectors;
    e.open('block');
    const exit = e.depth() - 1;
    // A limit below a step's elements: no step (limit − perStep could pass below −2³¹).
    e.get(limit).i32(perStep).op(Op.i64_extend_i32_s).op(Op.i64_lt_s).br(exit, true);
    const last = e.local(ValType.i32);
    e.get(limit).i32(perStep).op(Op.i64_extend_i32_s).op(Op.i64_sub).op(Op.i32_wrap_i64).set(last);
    e.open('loop');
    const top = e.depth() - 1;
    e.get(i).get(last).op(Op.i32_gt_s).br(exit, true);
    for (let part = 0; part < vectors; part++) lanes.step(part);
    e.get(i).i32(perStep).op(Op.i32_add).set(i);
    e.br(top);
    e.close();
    e.close();
  }
  reduces?.finishReductions();
  e.close();
}

/**
 * Pushes nothing; returns a local (i64) holding the bound that `i + elements per step` must not
 * pass: the loop's end, and each array's length less its greatest offset read.
 */
function endOfAccesses(e: FunctionEmitter, loop: AlongLoop): number {
  const limit = e.local(ValType.i64);
  e.int32(loop.end);
  e.op(Op.i64_extend_i32_s).set(limit);
  const atMost = (push: () => void) => {
    const v = e.local(ValType.i64);
    push();
    e.set(v);
    e.get(v).get(limit).get(v).get(limit).op(Op.i64_lt_s).op(Op.select).set(limit);
  };
  const length = (a: Variable) => {
    const dim = e.arrays.get(a)!.dims[0]!;
    if ('local' in dim) e.get(dim.local).op(Op.i64_extend_i32_u);
    else e.i32(dim.constant).op(Op.i64_extend_i32_u);
  };
  for (const [a, r] of loop.reads) atMost(() => {
    length(a);
    e.i32(r.max).op(Op.i64_extend_i32_s).op(Op.i64_sub);
  });
  for (const a of loop.writes) atMost(() => length(a));
  return limit;
}

/**
 * Branches to `skip` where an output row shares memory with another row the loop reads or writes,
 * other than as the very same row where that is safe (see the file comment).
 */
function exitUnlessApart(e: FunctionEmitter, loop: AlongLoop, skip: number): void {
  const span = (a: WasmArray) => {
    // [base, base + length·size) in i64
    e.get(a.base).op(Op.i64_extend_i32_u);
    const dim = a.dims[0]!;
    if ('local' in dim) e.get(dim.local).op(Op.i64_extend_i32_u);
    else e.i32(dim.constant).op(Op.i64_extend_i32_u);
    e.i32(DTYPES[a.dtype].bytes).op(Op.i64_extend_i32_u).op(Op.i64_mul).op(Op.i64_add);
  };
  const writes = [...loop.writes].filter((a) => loop.operands.has(a));
  const others = [...writes, ...[...loop.reads.keys()].filter((a) => loop.operands.has(a) && !loop.writes.has(a))];
  writes.forEach((w, k) => {
    for (const r of others.slice(k + 1)) {
      const a = e.arrays.get(w)!;
      const b = e.arrays.get(r)!;
      // apart: a ends before b starts, or b before a
      span(a);
      e.get(b.base).op(Op.i64_extend_i32_u).op(Op.i64_le_u);
      span(b);
      e.get(a.base).op(Op.i64_extend_i32_u).op(Op.i64_le_u).op(Op.i32_or);
      const reads = loop.reads.get(r);
      // The very same row: safe where every access to it is at [i] (each element then gets the
      // scalar order's operations), or where it is read only ahead, before the body's one store.
      if (!reads || (reads.min === 0 && reads.max === 0) || (loop.storeLast && reads.min >= 0)) e.get(a.base).get(b.base).op(Op.i32_eq).op(Op.i32_or);
      e.op(Op.i32_eqz).br(skip, true);
    }
  });
}

/** Emits a qualifying loop's body in lanes, one vector's iterations per call of {@link step}. */
class AlongRowEmitter extends SimdEmitter {
  /** The vector of the step being emitted (its first iteration is `i + part · lanes`). */
  private part = 0;
  /** Values the loop does not change, splatted once before it. */
  private readonly uniforms = new Map<Expr, number>();
  /** Per max or min reduction, its vector of partial results, and lane masks of what they may have missed (see {@link reduce}). */
  private readonly partials = new Map<Variable, { readonly value: number; readonly nan: number; readonly zero: number }>();
  /** Where the vector loop started (i32), for the reductions from memory. */
  private start: number | undefined;

  constructor(e: FunctionEmitter, ctx: ModuleContext, private readonly loop: AlongLoop, private readonly counter: number, private readonly loopBody: readonly Stmt[]) {
    super(e, ctx, loop.lanes, e.local(ValType.v128));
  }

  private varies(x: Expr): boolean {
    if (x.kind === 'var') return this.loop.locals.has(x.variable) || x.variable === this.loop.counter;
    return x.kind === 'index' || x.kind === 'call' || childExprs(x).some((c) => this.varies(c));
  }

  /** The counter's values in the step's vector (float64 lanes: the counter is a float64 of the language). */
  private counterLanes(): void {
    const bytes = new Uint8Array(16);
    const view = new DataView(bytes.buffer);
    for (let l = 0; l < 2; l++) view.setFloat64(8 * l, this.part * 2 + l, true);
    this.e.get(this.counter).op(Op.f64_convert_i32_s);
    this.simd(SimdOp.f64x2_splat);
    this.simd(SimdOp.v128_const);
    this.e.code.bytes(bytes);
    this.simd(SimdOp.f64x2_add);
  }

  /** Before the vector loop: each max or min reduction's partial results start as its value; where reductions from memory start. */
  startReductions(): void {
    if ([...this.loop.reductions.values()].some((r) => r.fromMemory)) this.e.get(this.counter).set((this.start = this.e.local(ValType.i32)));
    for (const [v, r] of this.loop.reductions) {
      if (r.op !== 'max' && r.op !== 'min') continue;
      const partial = { value: this.e.local(ValType.v128), nan: this.e.local(ValType.v128), zero: this.e.local(ValType.v128) };
      this.e.get(this.e.varLocal(v));
      this.splat(v.type as DType);
      this.e.set(partial.value);
      this.constant(false, 'bool');
      this.e.set(partial.nan);
      this.constant(false, 'bool');
      this.e.set(partial.zero);
      this.partials.set(v, partial);
    }
  }

  /**
   * After the vector loop: each max or min reduction's partial results combined into its value
   * (in any order: see AlongReduction); the reductions from memory over the vector loop's
   * elements, in order.
   */
  finishReductions(): void {
    if (this.start !== undefined) {
      const j = this.start;
      this.e.open('block');
      const exit = this.e.depth() - 1;
      this.e.open('loop');
      const top = this.e.depth() - 1;
      this.e.get(j).get(this.counter).op(Op.i32_ge_s).br(exit, true);
      for (const [v, r] of this.loop.reductions) {
        if (!r.fromMemory) continue;
        const local = this.e.varLocal(v);
        const array = this.e.arrays.get(r.fromMemory.array)!;
        this.e.get(local);
        this.e.load(array.dtype, elementAddress(this.e, array, j, r.fromMemory.offset));
        if (r.promoted) this.e.op(Op.f64_promote_f32);
        this.e.op(r.op === '+' ? Op.f64_add : r.op === '-' ? Op.f64_sub : Op.f64_mul);
        this.e.set(local);
      }
      this.e.get(j).i32(1).op(Op.i32_add).set(j);
      this.e.br(top);
      this.e.close();
      this.e.close();
    }
    for (const [v, partial] of this.partials) {
      const t = v.type as DType;
      const f64 = t === 'float64';
      const max = this.loop.reductions.get(v)!.op === 'max';
      // A lane that met NaN is NaN; one whose partial is a zero and met the zero the rule prefers
      // (max: +0, min: −0) is that zero.
      this.constant(NaN, t);
      this.constant(max ? 0 : -0, t);
      this.e.get(partial.value);
      this.e.get(partial.value);
      this.constant(0, t);
      this.simd(f64 ? SimdOp.f64x2_eq : SimdOp.f32x4_eq);
      this.e.get(partial.zero);
      this.simd(SimdOp.v128_and);
      this.simd(SimdOp.v128_bitselect);
      this.e.get(partial.nan);
      this.simd(SimdOp.v128_bitselect);
      this.e.set(partial.value);
      const local = this.e.varLocal(v);
      for (let lane = 0; lane < this.loop.lanes; lane++) {
        this.e.get(local).get(partial.value);
        this.lane(f64 ? SimdOp.f64x2_extract_lane : SimdOp.f32x4_extract_lane, lane);
        this.e.op(max ? (f64 ? Op.f64_max : Op.f32_max) : f64 ? Op.f64_min : Op.f32_min);
        this.e.set(local);
      }
    }
  }

  /** One iteration of a reduction per lane (see AlongReduction). */
  private reduce(v: Variable, r: AlongReduction): void {
    if (r.fromMemory) return;
    const partial = this.partials.get(v);
    if (partial !== undefined) {
      // The pseudo-maximum `partial < e ? e : partial` (pmax, pmin alike) is one instruction and
      // one short step of the chain from vector to vector, where f32x4.max's NaN and ±0 rules cost
      // V8 about seven dependent ones; what it gets wrong is kept apart, off the chain: a NaN `e`
      // is passed over (a NaN partial stays), and between zeros the first one met stays. So each
      // lane notes whether it met NaN, and the zero the rule prefers, for finishReductions.
      const t = v.type as DType;
      const f64 = t === 'float64';
      const max = r.op === 'max';
      const e = this.e.local(ValType.v128);
      this.expr(r.operand);
      this.e.set(e);
      this.e.get(partial.value).get(e);
      this.simd(max ? (f64 ? SimdOp.f64x2_pmax : SimdOp.f32x4_pmax) : f64 ? SimdOp.f64x2_pmin : SimdOp.f32x4_pmin);
      this.e.set(partial.value);
      this.e.get(partial.nan).get(e).get(e);
      this.simd(f64 ? SimdOp.f64x2_ne : SimdOp.f32x4_ne);
      this.simd(SimdOp.v128_or);
      this.e.set(partial.nan);
      this.e.get(partial.zero).get(e);
      this.constant(max ? 0 : -0, t);
      this.simd(f64 ? SimdOp.i64x2_eq : SimdOp.i32x4_eq);
      this.simd(SimdOp.v128_or);
      this.e.set(partial.zero);
      return;
    }
    const lanes = this.e.local(ValType.v128);
    const local = this.e.varLocal(v);
    this.expr(r.operand);
    this.e.set(lanes);
    for (let lane = 0; lane < this.loop.lanes; lane++) {
      this.e.get(local).get(lanes);
      if (r.promoted) this.lane(SimdOp.f32x4_extract_lane, lane).e.op(Op.f64_promote_f32);
      else this.lane(SimdOp.f64x2_extract_lane, lane);
      this.e.op(r.op === '+' ? Op.f64_add : r.op === '-' ? Op.f64_sub : Op.f64_mul);
      this.e.set(local);
    }
  }

  /** Splats, before the loop, each value that the body's lanes read and the loop does not change. */
  hoistUniforms(): void {
    const walk = (x: Expr): void => {
      if (!this.varies(x)) {
        if (x.kind === 'const' || this.uniforms.has(x)) return;
        this.e.expr(x);
        this.splatUniform(x.type);
        const local = this.e.local(ValType.v128);
        this.e.set(local);
        this.uniforms.set(x, local);
        return;
      }
      if (x.kind === 'index') return;
      childExprs(x).forEach(walk);
    };
    const statements = (list: readonly Stmt[]) => {
      for (const st of list) {
        if (st.kind === 'let') walk(st.init);
        else if (st.kind === 'assign' && this.loop.reductions.has(st.variable)) {
          const r = this.loop.reductions.get(st.variable)!;
          if (!r.fromMemory) walk(r.operand);
        }
        else if (st.kind === 'assign' || st.kind === 'store') walk(st.value);
        else if (st.kind === 'if') {
          walk(st.cond);
          statements(st.then);
          statements(st.otherwise);
        }
      }
    };
    statements(this.loopBody);
  }

  /** The body, for the `part`-th vector of a step. */
  step(part: number): void {
    this.part = part;
    this.mask = undefined;
    this.anyDone = false;
    this.allReturned = false;
    this.stmts(this.loopBody);
  }

  /** Pushes the address of element `i + c` of the step's vector of `a`; returns the memarg offset to add. */
  private address(a: Variable, c: number): number {
    return elementAddress(this.e, this.e.arrays.get(a)!, this.counter, c + this.part * this.loop.lanes);
  }

  override expr(x: Expr): void {
    const hoisted = this.uniforms.get(x);
    if (hoisted !== undefined) {
      this.e.get(hoisted);
      return;
    }
    if (!this.varies(x)) {
      this.e.expr(x);
      this.splatUniform(x.type);
      return;
    }
    if (x.kind === 'var' && x.variable === this.loop.counter) return this.counterLanes();
    if (x.kind === 'index') {
      const offset = this.address(x.array, offsetOf(x.indices[0]!, this.loop.counter)!);
      loadLanes(this.e, this.e.arrays.get(x.array)!.dtype, this.loop.lanes, offset);
      return;
    }
    super.expr(x);
  }

  protected override math(fn: Parameters<SimdEmitter['math']>[0], args: readonly Expr[], t: DType, fastmath: boolean): void {
    if (fn === 'fround') {
      this.expr(args[0]!);
      if (args[0]!.type === 'float64') this.simd(SimdOp.f32x4_demote_f64x2_zero);
      return;
    }
    super.math(fn, args, t, fastmath);
  }

  protected override stmt(s: Stmt): void {
    const reduction = s.kind === 'assign' ? this.loop.reductions.get(s.variable) : undefined;
    if (reduction) return this.reduce((s as { variable: Variable }).variable, reduction);
    if (s.kind !== 'store') return super.stmt(s);
    const dtype = this.e.arrays.get(s.array)!.dtype;
    const offset = this.address(s.array, 0);
    this.expr(s.value);
    if (this.activeMask()) {
      // Under an `if`: inactive lanes' elements keep what memory holds.
      this.narrowMask(dtype);
      const mask = this.e.local(ValType.v128);
      this.e.set(mask);
      this.address(s.array, 0);
      loadLanes(this.e, dtype, this.loop.lanes, offset);
      this.e.get(mask);
      this.simd(SimdOp.v128_bitselect);
    }
    storeLanes(this.e, dtype, this.loop.lanes, offset);
  }
}

/** What `explain` says of the loops along the row. */
export function describeAlongRows(loops: ReadonlyMap<Stmt, AlongLoop>): string {
  return [...loops].map(([s, l]) => {
    const narrow = l.narrow ? ` in ${l.narrow.plan.lanes.bits}-bit lanes` : '';
    const carried = [...l.reductions].map(([v, r]) => `\`${v.name}\` ${r.op === 'max' || r.op === 'min' ? `a ${r.op} of lanes` : r.fromMemory ? 'in order from memory after the vector loop' : 'lane by lane in order'}`);
    return `the loop at line ${s.loc.line} in SIMD along the row, ${l.lanes} elements per vector${narrow}${l.vectors > 1 ? ` × ${l.vectors} vectors per step` : ''}${carried.length ? ` (${carried.join(', ')})` : ''}`;
  }).join('; ');
}
