/**
 * SPMD vectorisation of per-row (guvectorize) kernels, in the model of Intel's ISPC: the rows of
 * a call are independent, so 4 of them (32-bit values) or 2 (where a value per row is float64)
 * run in the lanes of one 128-bit vector.
 *
 * Values are *uniform* (the same in every row of a call: constants, core sizes, scalar and
 * broadcast operands, loop counters, and what is computed only from those) or *varying* (per-row
 * scalars, array elements, and what depends on them). Uniform values stay scalar — so loops,
 * index arithmetic and bounds checks run once for all lanes, by the scalar emitter — and are
 * splatted where they meet varying ones. Varying values live in v128 lanes. Every array index
 * must be uniform: then element `[i]` of the lanes' rows is one slot of 16 bytes (8 where 2 rows
 * hold 32-bit values: lanes 0–1).
 *
 * Rows are copied, lane-interleaved, into a scratch area of the thread (slot `i` holds element `i`
 * of each lane's row), the body runs on the slots with plain v128 loads and stores, and the rows
 * that the kernel writes are copied back (a kernel without a loop reads its inputs of 8-bit
 * elements from their rows instead: `directInputs`). So nothing reaches the operands before a
 * block of rows is complete: an index out of bounds leaves the vector loop (the `bail` label) and
 * the scalar loop redoes the block from its first row, which throws exactly where the JS engine
 * throws, having written exactly what it writes.
 *
 * A divergent `if` (a condition that varies per row) runs both branches under lane masks, as for
 * element-wise kernels; stores and assignments keep inactive lanes' values. A loop whose condition
 * varies per row, or with a `continue` under such a condition, runs while any lane still loops,
 * under the mask of those that do (ISPC's varying control flow). What is not vectorised (the
 * kernel then runs the scalar Wasm loop, and `explain` says why): `return` under a varying
 * condition, a per-row `break` out of a loop whose condition is uniform (a search, faster scalar),
 * an index that varies per row, bool arrays or arrays with more than 2 core dimensions. Helpers
 * are inlined. 8- and 16-bit integers live in 32-bit lanes as exact int32 values (copied in and
 * out one lane access per element) — or, where every per-row value fits or only wraps
 * (row-int-lanes.ts), in lanes of their width: 8 rows per vector in 16-bit lanes, 16 in 8-bit
 * lanes (emit-row-int-lanes.ts), copied a square of rows × elements at a time (lane-transpose.ts).
 *
 * Decided per call, before the loop: rows overlapping an output in any way other than being the
 * very same view (in place), negative strides, or cores larger than the scratch area run the
 * scalar loop.
 */
import { type DType, DTYPES } from '../../../dtypes.js';
import type { Expr, HelperFunction, Stmt, TypedKernel, Variable } from '../../../compiler/ir.js';
import { isArrayType } from '../../../compiler/ir.js';
import type { MemoryLayout } from '../memory-layout.js';
import { MiscOp, Op, SimdOp, ValType } from './encoder.js';
import { emitLoop, type FunctionEmitter, type LoopLabels, type ModuleContext, sizeShift, type WasmArray } from './emit-scalar.js';
import { laneType as laneTypeOf, SimdEmitter } from './emit-simd.js';
import { integralSource } from './int-lanes.js';
import { floatRange } from './float-ranges.js';
import { WASM_MATH } from './math-support.js';
import { analyseCoverage } from '../../../compiler/passes/output-coverage.js';
import { narrowExactDoubles } from './exact-doubles.js';
import { HIGH_LANES_LOW, JOIN_LOW_LANES, JOIN_MASKS, pairsRefusal } from './row-pairs.js';
import { type RowIntLanes, rowIntLanes } from './row-int-lanes.js';
import { transposeSquare } from './lane-transpose.js';

/** Bytes of each thread's scratch area for lane-interleaved rows and local arrays. */
export const ROW_SCRATCH_BYTES = 64 * 1024;

/** Types lanes hold: 8- and 16-bit integers as exact int32 values (as element-wise lanes do). */
const LANE_TYPES = new Set<DType>(['float32', 'float64', 'int32', 'uint32', 'int8', 'uint8', 'uint8c', 'int16', 'uint16']);
const SIGNED_NARROW = new Set<DType>(['int8', 'int16']);

/**
 * Emits a branch to `exit` unless the elements of one row of `a` (strides ≥ 0, in elements) are at
 * distinct addresses. Sufficient test, not necessary: 1-D, a stride ≠ 0 (or one element); 2-D,
 * one axis's step clears the other axis's whole extent (row- or column-major, spaced or not).
 */
function exitUnlessDistinctElements(e: FunctionEmitter, a: WasmArray, dimLocal: (d: WasmArray['dims'][number]) => number, exit: number): void {
  const stride = (axis: number) => {
    const st = a.strides[axis]!;
    if (st === 'unit') e.i32(1);
    else e.get(st);
  };
  const dim = (axis: number) => e.get(dimLocal(a.dims[axis]!));
  if (a.dims.length === 1) {
    if (a.strides[0] === 'unit') return;
    dim(0);
    e.i32(1).op(Op.i32_gt_u);
    stride(0);
    e.op(Op.i32_eqz).op(Op.i32_and).br(exit, true);
    return;
  }
  if (a.dims.length !== 2) {
    e.br(exit);
    return;
  }
  // fits(outer, inner): (d_inner ≤ 1 or s_inner ≠ 0) and (d_outer ≤ 1 or s_outer > (d_inner − 1)·s_inner)
  const fits = (outer: number, inner: number) => {
    dim(inner);
    e.i32(1).op(Op.i32_le_u);
    stride(inner);
    e.i32(0).op(Op.i32_ne).op(Op.i32_or);
    dim(outer);
    e.i32(1).op(Op.i32_le_u);
    // in i64: (d − 1)·s may pass 2³² for large strides
    stride(outer);
    e.op(Op.i64_extend_i32_u);
    dim(inner);
    e.i32(1).op(Op.i32_sub).op(Op.i64_extend_i32_u);
    stride(inner);
    e.op(Op.i64_extend_i32_u).op(Op.i64_mul).op(Op.i64_gt_u).op(Op.i32_or).op(Op.i32_and);
  };
  fits(0, 1);
  fits(1, 0);
  e.op(Op.i32_or).op(Op.i32_eqz).br(exit, true);
}

/** How a per-row kernel is vectorised (see the file comment). */
export interface RowPlan {
  /**
   * The kernel the lanes run: the kernel itself, or where that fills 4 lanes instead of 2, its
   * form with float64 locals that hold only int32 or float32 values held in those types
   * (exact-doubles.ts; the scalar loop runs the kernel itself, with the same results).
   */
  readonly kernel: TypedKernel;
  /** 16 and 8: rows of 8- and 16-bit integers in lanes of their width (row-int-lanes.ts, {@link intLanes}). */
  readonly lanes: 16 | 8 | 4 | 2;
  /** Where the rows run in 8- or 16-bit lanes: how (row-int-lanes.ts; emit-row-int-lanes.ts emits them). */
  readonly intLanes?: RowIntLanes;
  /** Where the rows run in 8- or 16-bit lanes: the 4-lane plan, which runs the rows they leave (fewer than a vector's). */
  readonly fourLanes?: RowPlan;
  /**
   * 4 rows per vector although values per row are float64: each float64 value held as a pair of
   * f64x2 vectors, rows 0–1 and rows 2–3 (row-pairs.ts).
   */
  readonly pairs?: boolean;
  /**
   * Blocks of `lanes` rows per step of the loop (see {@link rowGroups}), each with its own slots
   * and vector locals: a statement that varies per row is emitted once per group, in a loop that
   * carries a value (`chains`) one group after the other in each iteration.
   */
  readonly groups: number;
  readonly varying: ReadonlySet<Variable>;
  /** Indices of the kernel's array parameters that the kernel or a helper stores into. */
  readonly written: ReadonlySet<number>;
  /**
   * Output rows (1-D) that the kernel writes whole before reading them (output-coverage.ts, for
   * any length): their slots need not be filled from memory first, unless another operand
   * shares them (in place), whose reads must see memory.
   */
  readonly covered: ReadonlySet<number>;
  /**
   * Loops run under a lane mask (SimdEmitter.maskedLoop): their condition varies per row (their
   * trip count differs), or a `continue` sits under a condition that does.
   */
  readonly masked: ReadonlySet<Stmt>;
  /**
   * Loops that carry a value from one iteration to the next (assign a variable declared outside
   * them), or contain such a loop: their groups of rows run side by side, iteration by iteration.
   * A per-row value so carried (`acc += a[i] * b[i]`) is a dependency chain through every
   * iteration, which two groups halve; a uniform one (Hermite's `c *= i`) must be computed once,
   * not once per group. Other loops run whole for one group, then for the next.
   */
  readonly chains: ReadonlySet<Stmt>;
  /** Byte offsets of lane-interleaved local arrays within the row scratch area. */
  readonly localOffsets: ReadonlyMap<Variable, number>;
  readonly localBytes: number;
}

/** Whether an expression varies per row (under a set of varying variables). */
export function varies(e: Expr, varying: ReadonlySet<Variable>): boolean {
  switch (e.kind) {
    case 'const':
    case 'dim':
      return false;
    case 'var':
      return varying.has(e.variable);
    case 'index':
    case 'call':
      return true;
    case 'unary':
      return varies(e.arg, varying);
    case 'cast':
      return varies(e.value, varying);
    case 'binary':
    case 'compare':
    case 'logical':
      return varies(e.left, varying) || varies(e.right, varying);
    case 'select':
      return varies(e.cond, varying) || varies(e.then, varying) || varies(e.otherwise, varying);
    case 'math':
      return e.args.some((a) => varies(a, varying));
  }
}

class Refusal extends Error {}

/** The row plan of a guvectorize kernel for a memory layout, or why it runs scalar (a phrase). */
export function rowPlan(kernel: TypedKernel, layout: MemoryLayout): RowPlan | string {
  const plan = tryAnalyse(kernel, layout);
  if (typeof plan === 'string') return plan;
  return narrowLanes(fourLanes(plan, kernel, layout));
}

/** The vector loop runs rows whose every core size fits the scratch in 8-byte slots (exitUnlessRowsFitScratch). */
const MAX_CORE = ROW_SCRATCH_BYTES / 8;

/**
 * A 2-lane plan as 4 lanes: its float64 locals that only hold 32-bit values held so
 * (exact-doubles.ts), else its true doubles in pairs of vectors where the layout asks (row-pairs.ts).
 */
function fourLanes(plan: RowPlan, kernel: TypedKernel, layout: MemoryLayout): RowPlan {
  if (plan.lanes === 4) return plan;
  const narrowed = narrowDoubles ? narrowExactDoubles(kernel, MAX_CORE) : kernel;
  const full = narrowed === kernel ? plan : tryAnalyse(narrowed, layout);
  if (typeof full !== 'string' && full.lanes === 4) return full;
  // True doubles left: in pairs of vectors where the layout asks (a variant that calibration
  // times: engine-calibration.ts), with the fewest float64 values (the narrowed kernel's).
  const wide = typeof full === 'string' ? plan : full;
  if (!(floatPairs ?? layout.floatPairs) || pairsRefusal(wide.kernel, layout)) return plan;
  // A value carried along the row already runs as two independent chains in pairs (its halves),
  // what a second group of rows gives elsewhere: one group where a loop carries one (two measured
  // 1.2–1.6× slower: cumsum, unit rows; bench/results/rows-ab-pairs-intel-xeon-2c.md).
  return { ...wide, lanes: 4, pairs: true, groups: groupsOverride ?? (wide.chains.size ? 1 : wide.groups) };
}

/** A 4-lane plan as 8 or 16 rows per vector where its rows' values fit narrow integer lanes (row-int-lanes.ts). */
function narrowLanes(plan: RowPlan): RowPlan {
  if (plan.lanes !== 4 || plan.pairs || !intRows) return plan;
  const int = rowIntLanes(plan.kernel, plan.varying, MAX_CORE, (e) => varies(e, plan.varying));
  return typeof int === 'string' ? plan : { ...plan, lanes: int.bits === 16 ? 8 : 16, intLanes: int, fourLanes: plan };
}

function tryAnalyse(kernel: TypedKernel, layout: MemoryLayout): RowPlan | string {
  try {
    return analyse(kernel, layout);
  } catch (error) {
    if (error instanceof Refusal) return error.message;
    throw error;
  }
}

function analyse(kernel: TypedKernel, layout: MemoryLayout): RowPlan {
  const refuse = (why: string): never => {
    throw new Refusal(why);
  };
  let wide = false;
  const varying = varyingParams(kernel, layout, refuse);
  // An array's rows are copied through the lane-interleaved slots whether or not the kernel reads
  // it, and a float64 slot holds 2 lanes.
  if (kernel.params.some((p) => isArrayType(p.type) && p.type.dtype === 'float64')) wide = true;
  const written = new Set<number>();
  const masked = new Set<Stmt>();
  /** Loops with a `break` under a per-row condition, and one such `break`. */
  const earlyExits = new Map<Stmt, Stmt>();
  const localOffsets = new Map<Variable, number>();
  let localBytes = 0;
  /** Varying-condition depth at each variable's declaration (per call site, in walk order). */
  const declared = new Map<Variable, number>();

  interface Context {
    /** Enclosing varying conditions, call sites included. */
    readonly depth: number;
    /** A varying condition encloses this point within the current function. */
    readonly fnVarying: boolean;
    /** A varying condition encloses this point within the innermost loop. */
    readonly loopVarying: boolean;
    /** The innermost loop (of the current function). */
    readonly loop?: Stmt;
    /** Helper array parameters → the kernel parameter index or local array they stand for. */
    readonly env: ReadonlyMap<Variable, number | Variable>;
  }
  const root = (v: Variable, c: Context): number | Variable => {
    const r = c.env.get(v);
    if (r !== undefined) return r;
    const i = kernel.params.indexOf(v);
    return i >= 0 ? i : v;
  };
  const laneType = (t: DType, what: string) => {
    if (t === 'bool') return;
    if (!LANE_TYPES.has(t)) refuse(`${what} is ${t} per row`);
    if (t === 'float64') wide = true;
  };

  const expr = (e: Expr, c: Context): void => {
    switch (e.kind) {
      case 'call': return call(e, c);
      case 'unary': expr(e.arg, c); break;
      // A conversion to an integer of a select of integer literals (`x[i] > t ? 255 : 0`) computes the select in int32 (int-lanes.ts).
      case 'cast': expr(integralSource(e) ?? e.value, c); break;
      case 'binary': case 'compare': case 'logical': expr(e.left, c); expr(e.right, c); break;
      case 'select': expr(e.cond, c); expr(e.then, c); expr(e.otherwise, c); break;
      case 'math': e.args.forEach((a) => expr(a, c)); break;
      case 'index':
        for (const i of e.indices) {
          expr(i, c);
          if (varies(i, varying)) refuse(`an index of \`${e.array.name}\` at kernel line ${e.loc.line}:${e.loc.column} varies per row`);
        }
        break;
      default: break;
    }
    if (!varies(e, varying)) return;
    laneType(e.type, `a value at kernel line ${e.loc.line}:${e.loc.column}`);
    // Uniform operands are splatted: they need a lane type too.
    const operands: Expr[] =
      e.kind === 'unary' ? [e.arg] : e.kind === 'cast' ? [integralSource(e) ?? e.value] : e.kind === 'binary' || e.kind === 'compare' || e.kind === 'logical' ? [e.left, e.right]
        : e.kind === 'select' ? [e.cond, e.then, e.otherwise] : e.kind === 'math' ? [...e.args] : [];
    for (const o of operands) laneType(o.type, `a value at kernel line ${o.loc.line}:${o.loc.column}`);
    switch (e.kind) {
      case 'binary':
        if (e.op === '%' && !(e.type === 'float32' || e.type === 'float64')) refuse('integer `%` has no SIMD instruction');
        if (e.op === '**') refuse('`**` has no SIMD form here');
        if (['<<', '>>', '>>>'].includes(e.op) && e.right.kind !== 'const') refuse('a shift count varies per row');
        break;
      case 'compare':
        laneType(e.operandType, 'a comparison');
        break;
      case 'cast':
        // Every conversion between lane types has a lane form (SimdEmitter.cast); the types were checked above.
        break;
      case 'math':
        if ((laneTypeOf(e.type) === 'int32' || e.type === 'uint32') && (!WASM_MATH[e.fn].intLanes || (e.fn === 'abs' && e.type === 'uint32'))) refuse(`Math.${e.fn} on integers per row`);
        if (e.fn === 'fround' && e.args[0]!.type !== 'float32') wide = true;
        break;
      default:
        break;
    }
  };

  const assignTo = (v: Variable, value: Expr, c: Context) => {
    expr(value, c);
    if (isArrayType(v.type)) refuse('an array variable is assigned');
    if (varies(value, varying) || c.depth > (declared.get(v) ?? 0)) varying.add(v);
    if (varying.has(v)) laneType(v.type as DType, `\`${v.name}\``);
  };

  const call = (x: Extract<Expr, { kind: 'call' }>, c: Context): void => {
    const h: HelperFunction = x.helper;
    const env = new Map(c.env);
    h.params.forEach((p, i) => {
      const a = x.args[i]!;
      if (a.kind === 'array-ref') env.set(p, root(a.array, c));
      else {
        declared.set(p, c.depth);
        assignTo(p, a, c);
      }
    });
    stmts(h.body, { depth: c.depth, fnVarying: false, loopVarying: false, loop: undefined, env });
  };

  const stmts = (list: readonly Stmt[], c: Context): void => {
    for (const s of list) stmt(s, c);
  };
  const stmt = (s: Stmt, c: Context): void => {
    switch (s.kind) {
      case 'let':
        declared.set(s.variable, c.depth);
        assignTo(s.variable, s.init, c);
        return;
      case 'assign':
        assignTo(s.variable, s.value, c);
        return;
      case 'local-array': {
        if (c.fnVarying || c.depth > 0) refuse('a local array is declared under a condition that varies per row');
        const dtype = (s.variable.type as { dtype: DType }).dtype;
        if (!LANE_TYPES.has(dtype)) refuse(`the local array \`${s.variable.name}\` is ${dtype}`);
        if (dtype === 'float64') wide = true;
        if (!localOffsets.has(s.variable)) {
          localOffsets.set(s.variable, localBytes);
          localBytes += s.length * 16;
        }
        return;
      }
      case 'store': {
        for (const i of s.indices) {
          expr(i, c);
          if (varies(i, varying)) refuse(`an index of \`${s.array.name}\` at kernel line ${s.loc.line}:${s.loc.column} varies per row`);
        }
        expr(s.value, c);
        laneType(s.value.type, 'a stored value');
        const r = root(s.array, c);
        if (typeof r === 'number') written.add(r);
        return;
      }
      case 'if': {
        expr(s.cond, c);
        const inner = varies(s.cond, varying) ? { ...c, depth: c.depth + 1, fnVarying: true, loopVarying: true } : c;
        stmts(s.then, inner);
        stmts(s.otherwise, inner);
        return;
      }
      case 'loop': {
        if (s.cond && varies(s.cond, varying)) masked.add(s);
        // A masked loop is a varying condition for what it assigns (rows leave it at different
        // iterations), its own init included: a counter declared there stays uniform inside.
        const region = masked.has(s) ? { ...c, depth: c.depth + 1, fnVarying: true } : c;
        stmts(s.init, region);
        if (s.cond) expr(s.cond, region);
        const inner = { ...region, loopVarying: false, loop: s };
        stmts(s.body, inner);
        stmts(s.update, inner);
        if (s.cond) expr(s.cond, region);
        return;
      }
      case 'break':
      case 'continue':
        if (c.loopVarying && c.loop) {
          masked.add(c.loop);
          if (s.kind === 'break') earlyExits.set(c.loop, s);
        }
        return;
      case 'return':
        if (c.fnVarying) refuse(`\`return\` at kernel line ${s.loc.line}:${s.loc.column} is under a condition that varies per row`);
        if (s.value) expr(s.value, c);
        return;
      case 'call':
        call(s.call, c);
        return;
    }
  };

  // Varying-ness spreads (a variable assigned a varying value makes its readers varying): walk
  // until nothing changes.
  for (let size = -1, loops = -1; size !== varying.size || loops !== masked.size;) {
    size = varying.size;
    loops = masked.size;
    stmts(kernel.body, { depth: 0, fnVarying: false, loopVarying: false, env: new Map() });
  }
  // A per-row `break` out of a loop whose condition is the same for every row is a search: the
  // scalar loop reads each row only up to its `break`, where lanes read whole rows into the slots
  // and loop until the last lane breaks — measured 2x slower (bench/lanes.ts first-above). Loops
  // whose condition varies per row run masked whatever their `break`s.
  for (const [loop, exit] of earlyExits) {
    const l = loop as Extract<Stmt, { kind: 'loop' }>;
    if (!l.cond || !varies(l.cond, varying)) refuse(`\`break\` at kernel line ${exit.loc.line}:${exit.loc.column} leaves a loop early per row (a search: the scalar loop reads each row only up to it)`);
  }
  for (const v of varying) if (v.type === 'float64') wide = true;
  const chains = chainLoops(kernel.body);
  return { kernel, lanes: wide ? 2 : 4, groups: rowGroups(kernel, masked, chains), varying, written, covered: coveredRows(kernel, written), masked, chains, localOffsets, localBytes };
}

/**
 * The loops of the kernel's body that assign a variable declared outside them — a value carried
 * from one iteration to the next — or contain such a loop. (Helpers' bodies are inlined whole
 * per group: their loops never run side by side.)
 */
function chainLoops(body: readonly Stmt[]): Set<Stmt> {
  const chains = new Set<Stmt>();
  /** Walks `list`; returns the variables it assigns that it does not declare. */
  const walk = (list: readonly Stmt[]): Set<Variable> => {
    const declared = new Set<Variable>();
    const assigned = new Set<Variable>();
    for (const s of list) {
      if (s.kind === 'let') declared.add(s.variable);
      else if (s.kind === 'assign') assigned.add(s.variable);
      else if (s.kind === 'if') for (const v of [...walk(s.then), ...walk(s.otherwise)]) assigned.add(v);
      else if (s.kind === 'loop') {
        // Its counter, declared in its init, is carried too: only what is declared outside counts.
        const inner = walk([...s.init, ...s.body, ...s.update]);
        if (inner.size || containsChain(s.body, chains)) chains.add(s);
        for (const v of inner) assigned.add(v);
      }
    }
    for (const v of declared) assigned.delete(v);
    return assigned;
  };
  walk(body);
  return chains;
}

/** Whether a statement list holds one of `loops` at any depth. */
function containsChain(list: readonly Stmt[], loops: ReadonlySet<Stmt>): boolean {
  return list.some((s) => loops.has(s) || (s.kind === 'if' && (containsChain(s.then, loops) || containsChain(s.otherwise, loops))) || (s.kind === 'loop' && containsChain(s.body, loops)));
}

/** Set by tests and benchmarks (`__testing.setRowGroups`): the groups of every plan made after. */
let groupsOverride: number | undefined;
/** Cleared by tests and benchmarks (`__testing.setNarrowDoubles`): plans made after keep every float64 local. */
let narrowDoubles = true;
/** Set by tests and benchmarks (`__testing.setFloatPairs`): plans made after hold true doubles in pairs (true) or not (false) whatever the layout asks. */
let floatPairs: boolean | undefined;
/** Cleared by tests and benchmarks (`__testing.setIntRows`): plans made after keep 32-bit lanes for narrow integer rows. */
let intRows = true;

/**
 * How many blocks of rows run side by side: 2 where a loop carries a value along the row, or
 * where the body has no loop; else 1. A loop along a row carries its reductions (`acc += a[i] *
 * b[i]`, a running max) from one element to the next: with one block of rows, each step waits for
 * the last add's latency. Two blocks give the core two independent chains per step — what several
 * accumulators give a loop along one row, without changing the order of any row's additions (each
 * row keeps its own accumulator, added to in the row's order, so the results are the JS engine's
 * bit for bit). A body without loops interleaves two blocks as element-wise code runs several
 * vectors per step. Loops that carry nothing, and masked loops, would run whole per group, one
 * after the other: nothing side by side, only more live row addresses (measured up to 1.25×
 * slower: add-scalar-rows) and a longer tail of rows for the one-group loop.
 */
function rowGroups(kernel: TypedKernel, masked: ReadonlySet<Stmt>, chains: ReadonlySet<Stmt>): number {
  if (groupsOverride !== undefined) return groupsOverride;
  if (masked.size) return 1;
  return chains.size || !hasLoop(kernel) ? 2 : 1;
}

/** Whether a statement list holds a loop at any depth. */
function containsLoop(list: readonly Stmt[]): boolean {
  return list.some((s) => s.kind === 'loop' || (s.kind === 'if' && (containsLoop(s.then) || containsLoop(s.otherwise))));
}

/**
 * Hooks for tests and benchmarks: not part of the public API.
 * @internal
 */
export const __testing = {
  /** Sets the groups of row plans made from now on (1: one block of rows per step); undefined restores the rule. */
  setRowGroups(groups: number | undefined): void {
    groupsOverride = groups;
  },
  /** Whether row plans made from now on hold float64 locals exactly as int32 or float32 where that fills 4 lanes (exact-doubles.ts). */
  setNarrowDoubles(on: boolean): void {
    narrowDoubles = on;
  },
  /**
   * Whether row plans made from now on hold true float64 values in pairs of vectors, 4 rows per
   * vector (row-pairs.ts), whatever the layout asks; undefined: where the layout asks (the
   * variant calibration times).
   */
  setFloatPairs(on: boolean | undefined): void {
    floatPairs = on;
  },
  /** Whether row plans made from now on run rows of 8- and 16-bit integers in lanes of their width where exact (row-int-lanes.ts). */
  setIntRows(on: boolean): void {
    intRows = on;
  },
  /** Whether plans emitted from now on touch the next block's rows while a block computes (touchNextBlock). */
  setTouchAhead(on: boolean): void {
    touchAhead = on;
  },
  /** Whether plans emitted from now on let kernels without a loop read inputs of 8-bit elements from their rows (directInputs). */
  setDirectReads(on: boolean): void {
    directReads = on;
  },
};

/** The parameters that vary per row (refusing those lanes cannot hold): the start of analyse's walk. */
function varyingParams(kernel: TypedKernel, layout: MemoryLayout, refuse: (why: string) => never): Set<Variable> {
  const varying = new Set<Variable>();
  kernel.params.forEach((p, i) => {
    if (isArrayType(p.type)) {
      if (!LANE_TYPES.has(p.type.dtype)) refuse(`\`${p.name}\` is a ${p.type.dtype} array`);
      if (p.type.ndim > 2) refuse(`\`${p.name}\` has ${p.type.ndim} core dimensions (at most 2 are vectorised)`);
    } else if (layout.inner[i] !== 'scalar' && layout.inner[i] !== 'broadcast') {
      if (!LANE_TYPES.has(p.type)) refuse(`\`${p.name}\` is a ${p.type} per row`);
      varying.add(p);
    }
  });
  return varying;
}

/** The written 1-D array parameters whose rows the kernel writes whole before reading them. */
function coveredRows(kernel: TypedKernel, written: ReadonlySet<number>): Set<number> {
  const covered = new Set<number>();
  for (const p of written) {
    const t = kernel.params[p]!.type;
    if (!isArrayType(t) || t.ndim !== 1) continue;
    // Written whole for a length of 2³⁰ means by a loop up to the row's length: for any length.
    const coverage = analyseCoverage(kernel, [p], 2 ** 30);
    if (coverage.writesAll && coverage.memoryReads.size === 0) covered.add(p);
  }
  return covered;
}

/** Emits the vector body of a per-row kernel (the block runner calls `stmts` on the kernel body). */
export class RowSimdEmitter extends SimdEmitter {
  private readonly loopLabels: LoopLabels[] = [];
  /** Per enclosing loop of the function being emitted (innermost last): whether it runs masked. */
  private readonly loopMasked: boolean[] = [];
  /** Per function being emitted (the kernel body, then inlined helpers): where `return` goes. */
  readonly returns: { result: number | readonly [number, number] | undefined; depth: number }[] = [];

  /** The group of rows being emitted (RowPlan.groups), its variables' locals and its arrays' bindings. */
  private group = 0;
  private readonly groupVars: Map<Variable, number>[];
  private groupArrays: ReadonlyMap<Variable, WasmArray>[] = [];
  /** A statement is being emitted for one group (what it contains is too). */
  private inGroup = false;

  /**
   * Float64 values in pairs (RowPlan.pairs): the half of the block's rows a float64 value is
   * being emitted for (0: rows 0–1, 1: rows 2–3), undefined outside {@link inHalves}; per group,
   * the locals of float64 variables' second halves.
   */
  private half: 0 | 1 | undefined;
  private readonly groupVarsHigh: Map<Variable, number>[];
  /**
   * Per {@link inHalves} (innermost last): 4-lane values computed in the first half, for the
   * second, and float64 results of inlined helpers (both halves, computed in the first).
   */
  private readonly halfValues: Map<Expr, number | readonly [number, number]>[] = [];

  constructor(e: FunctionEmitter, ctx: ModuleContext, lanes: 16 | 8 | 4 | 2, protected readonly plan: RowPlan) {
    super(e, ctx, lanes, e.local(ValType.v128));
    this.groupVars = Array.from({ length: plan.groups }, () => new Map());
    this.groupVarsHigh = Array.from({ length: plan.groups }, () => new Map());
  }

  private varies(x: Expr): boolean {
    return varies(x, this.plan.varying);
  }

  /** Whether values of type `t` are held in pairs of vectors. */
  private paired(t: DType | 'void'): boolean {
    return this.plan.pairs === true && t === 'float64';
  }

  override varLocal(v: Variable): number {
    if (this.paired(v.type as DType) && this.half === undefined) throw new Error(`float64 \`${v.name}\` read outside a half of the rows`);
    const vars = (this.half === 1 && this.paired(v.type as DType) ? this.groupVarsHigh : this.groupVars)[this.group]!;
    let l = vars.get(v);
    if (l === undefined) vars.set(v, (l = this.e.local(ValType.v128)));
    return l;
  }

  /** Sets variable `v`'s lanes (both halves, where paired) to the vector in local `from`. */
  setLanes(v: Variable, from: number): void {
    if (!this.paired(v.type as DType)) {
      this.e.get(from).set(this.varLocal(v));
      return;
    }
    for (const h of [0, 1] as const) {
      this.half = h;
      this.e.get(from).set(this.varLocal(v));
    }
    this.half = undefined;
  }

  /**
   * Emits `emit` once per half of the rows (float64 values in pairs): first for rows 0–1, then for
   * rows 2–3, with what the first computed of 4-lane values kept for the second.
   */
  private inHalves(emit: (h: 0 | 1) => void): void {
    const outer = this.half;
    this.halfValues.push(new Map());
    for (const h of [0, 1] as const) {
      this.half = h;
      emit(h);
    }
    this.halfValues.pop();
    this.half = outer;
  }

  /**
   * A value of 4 lanes (32-bit or a mask) read where a half of the rows is being emitted: computed
   * whole in the first half, kept in a local for the second.
   */
  private wholeInHalf(x: Expr): void {
    const kept = this.halfValues[this.halfValues.length - 1]!;
    const l = kept.get(x);
    if (l !== undefined) {
      this.e.get(l as number);
      return;
    }
    const half = this.half;
    this.half = undefined;
    this.expr(x);
    this.half = half;
    const local = this.e.local(ValType.v128);
    this.e.tee(local);
    kept.set(x, local);
  }

  /** The 4-lane vector on the stack → its lanes of half `h` in lanes 0–1. */
  private halfLanes(h: 0 | 1): void {
    if (h === 0) return;
    const v = this.e.local(ValType.v128);
    this.e.tee(v).get(v).shuffle(HIGH_LANES_LOW);
  }

  /**
   * Float64 `x` converted (cast or fround) to `to`, as one 4-lane vector: each half's f64x2
   * converted into lanes 0–1 (SimdEmitter.cast), the two joined.
   */
  private joinHalves(x: Expr, to: DType, range: Parameters<SimdEmitter['cast']>[2]): void {
    const parts = [this.e.local(ValType.v128), this.e.local(ValType.v128)];
    this.inHalves((h) => {
      this.expr(x);
      this.cast('float64', to, range);
      this.e.set(parts[h]!);
    });
    this.e.get(parts[0]!).get(parts[1]!).shuffle(to === 'bool' ? JOIN_MASKS : JOIN_LOW_LANES);
  }

  /** A comparison of float64 values, as one mask of 4 lanes. */
  private compareInHalves(x: Extract<Expr, { kind: 'compare' }>): void {
    const parts = [this.e.local(ValType.v128), this.e.local(ValType.v128)];
    this.inHalves((h) => {
      this.expr(x.left);
      this.expr(x.right);
      this.compare(x.op, 'float64');
      this.e.set(parts[h]!);
    });
    this.e.get(parts[0]!).get(parts[1]!).shuffle(JOIN_MASKS);
  }

  /** Half `h` of a 32-bit value (or a mask) converted to float64. */
  private toFloat64InHalf(value: Expr, h: 0 | 1): void {
    this.wholeInHalf(value);
    const from = laneTypeOf(value.type);
    if (from === 'bool') {
      this.simd(h === 0 ? SimdOp.i64x2_extend_low_i32x4_s : SimdOp.i64x2_extend_high_i32x4_s);
      this.constant(1, 'float64');
      this.simd(SimdOp.v128_and);
      return;
    }
    this.halfLanes(h);
    this.simd(from === 'float32' ? SimdOp.f64x2_promote_low_f32x4 : from === 'uint32' ? SimdOp.f64x2_convert_low_i32x4_u : SimdOp.f64x2_convert_low_i32x4_s);
  }

  /** The active lanes' mask (4 lanes) on the stack → that of half `h` (2 lanes of 64 bits). */
  private maskOfHalf(h: 0 | 1): void {
    this.simd(h === 0 ? SimdOp.i64x2_extend_low_i32x4_s : SimdOp.i64x2_extend_high_i32x4_s);
  }

  /** `let`/assignment of a float64 variable held in pairs: half by half, inactive lanes kept. */
  private assignInHalves(s: Extract<Stmt, { kind: 'let' | 'assign' }>): void {
    const value = s.kind === 'let' ? s.init : s.value;
    this.inHalves((h) => {
      this.expr(value);
      const local = this.varLocal(s.variable);
      if (s.kind === 'assign' && this.activeMask()) {
        this.maskOfHalf(h);
        const m = this.e.local(ValType.v128);
        this.e.set(m);
        this.e.get(local).get(m);
        this.simd(SimdOp.v128_bitselect);
      }
      this.e.set(local);
    });
  }

  /**
   * Expressions where float64 values in pairs meet 4-lane ones; false for any other (emitted as
   * in 2- or 4-lane code).
   */
  private pairedExpr(x: Expr): boolean {
    if (this.half === undefined) {
      if (x.type === 'float64') throw new Error('a float64 value outside a half of the rows');
      if (x.kind === 'compare' && x.operandType === 'float64' && this.varies(x)) {
        this.compareInHalves(x);
        return true;
      }
      if (x.kind === 'cast' && this.varies(x)) {
        const value = integralSource(x) ?? x.value;
        if (value.type !== 'float64') return false;
        this.joinHalves(value, x.type, floatRange(value));
        return true;
      }
      return false;
    }
    if (x.type !== 'float64') {
      this.wholeInHalf(x);
      return true;
    }
    if (!this.varies(x)) return false;
    if (x.kind === 'cast' && x.value.type !== 'float64') {
      this.toFloat64InHalf(x.value, this.half);
      return true;
    }
    if (x.kind === 'select') {
      this.expr(x.then);
      this.expr(x.otherwise);
      this.wholeInHalf(x.cond);
      this.maskOfHalf(this.half);
      this.simd(SimdOp.v128_bitselect);
      return true;
    }
    if (x.kind === 'call') {
      // Inlined once, in the first half (its statements run for all 4 rows); its result's halves kept.
      const kept = this.halfValues[this.halfValues.length - 1]!;
      let pair = kept.get(x) as readonly [number, number] | undefined;
      if (!pair) {
        const half = this.half;
        this.half = undefined;
        pair = this.inline(x) as readonly [number, number];
        this.half = half;
        kept.set(x, pair);
      }
      this.e.get(pair[this.half]);
      return true;
    }
    return false;
  }

  /** Per binding of an array the body reads straight from its rows (directInputs), the operand as that binding's group sees it. */
  private readonly directRows = new Map<WasmArray, RowOperand>();
  /**
   * Per statement list being emitted (innermost last): the vectors loaded from such arrays at
   * constant indices, by binding and index. A load is reused in its list and the lists nested in
   * it (which run only after it), never after its list ends (a branch that did not run).
   */
  private readonly directLoaded: Map<WasmArray, Map<string, number>>[] = [];

  override stmts(list: readonly Stmt[]): void {
    this.directLoaded.push(new Map());
    super.stmts(list);
    this.directLoaded.pop();
  }

  /** Per group, where the kernel's arrays live in the row scratch (bindToScratch), and which of them the body reads from their rows. */
  bindGroups(arrays: ReadonlyMap<Variable, WasmArray>[], direct: ReadonlySet<RowOperand> = new Set()): void {
    this.groupArrays = arrays;
    this.directRows.clear();
    arrays.forEach((bound, g) => {
      for (const o of direct) this.directRows.set(bound.get(o.v)!, groupOperand(o, this.plan.lanes, g));
    });
    this.useGroup(0);
  }

  /** Makes group `g` the one whose variables and arrays the emitted code uses. */
  useGroup(g: number): void {
    this.group = g;
    for (const [v, a] of this.groupArrays[g] ?? []) this.e.arrays.set(v, a);
  }

  /**
   * Whether a statement is emitted once per group: all but the uniform control around them —
   * uniform assignments, loops that are not masked, `if`s on uniform conditions (their bodies are
   * walked statement by statement), and `break`, `continue`, `return` there.
   */
  private perGroup(s: Stmt): boolean {
    switch (s.kind) {
      case 'let':
      case 'assign':
        return this.plan.varying.has(s.variable);
      case 'loop':
        return this.plan.masked.has(s) || !this.plan.chains.has(s);
      case 'if':
        return this.varies(s.cond);
      case 'break':
      case 'continue':
      case 'return':
        return false;
      default:
        return true;
    }
  }

  /** The slot at the address on the stack: 16 bytes, or 8 into lanes 0–1 (slotBytesOf). */
  private loadSlot(a: WasmArray): void {
    if (a.shift === 3) this.e.simd(SimdOp.v128_load64_zero).code.u32(3).u32(0);
    else this.e.simd(SimdOp.v128_load).code.u32(4).u32(0);
  }

  override expr(x: Expr): void {
    if (this.plan.pairs && this.pairedExpr(x)) return;
    if (x.kind === 'call') {
      this.e.get(this.inline(x) as number);
      return;
    }
    if (!this.varies(x)) {
      this.e.expr(x);
      this.splatUniform(x.type);
      return;
    }
    if (x.kind === 'index') {
      const a = this.e.arrays.get(x.array)!;
      const view = this.directRows.get(a);
      if (view) {
        this.loadFromRows(x, a, view);
        return;
      }
      this.e.get(this.e.address(x.array, a, x.indices, x.loc));
      this.loadSlot(a);
      return;
    }
    super.expr(x);
  }

  /**
   * `x` (an element of an array bound by directInputs) loaded from each lane's row: its index
   * checked, then one lane access per row into zeros — the vector a slot would hold. At constant
   * indices, once per statement list (directLoaded).
   */
  private loadFromRows(x: Extract<Expr, { kind: 'index' }>, a: WasmArray, view: RowOperand): void {
    const key = x.indices.every((i) => i.kind === 'const') ? x.indices.map((i) => String((i as { value: unknown }).value)).join(',') : undefined;
    const known = key === undefined ? undefined : this.directLoaded.map((m) => m.get(a)?.get(key)).find((l) => l !== undefined);
    if (known !== undefined) {
      this.e.get(known);
      return;
    }
    const into = this.e.local(ValType.v128);
    this.e.i32(0).simd(SimdOp.i32x4_splat).set(into);
    loadLanes(this.e, this.plan.lanes, view, this.e.address(x.array, a, x.indices, x.loc), into);
    this.e.get(into);
    if (key === undefined) return;
    const level = this.directLoaded[this.directLoaded.length - 1]!;
    if (!level.has(a)) level.set(a, new Map());
    level.get(a)!.set(key, into);
  }

  protected override math(fn: Parameters<SimdEmitter['math']>[0], args: readonly Expr[], t: DType, fastmath: boolean): void {
    if (fn === 'fround') {
      if (this.plan.pairs && args[0]!.type === 'float64') return this.joinHalves(args[0]!, 'float32', undefined);
      this.expr(args[0]!);
      if (args[0]!.type === 'float64') this.simd(SimdOp.f32x4_demote_f64x2_zero);
      return;
    }
    super.math(fn, args, t, fastmath);
  }

  protected override stmt(s: Stmt): void {
    if (this.inGroup || this.plan.groups === 1 || !this.perGroup(s)) {
      this.groupStmt(s);
      return;
    }
    for (let g = 0; g < this.plan.groups; g++) {
      this.useGroup(g);
      this.inGroup = true;
      this.groupStmt(s);
      this.inGroup = false;
    }
    this.useGroup(0);
  }

  /** A statement for the current group (uniform ones: for all). */
  private groupStmt(s: Stmt): void {
    const e = this.e;
    switch (s.kind) {
      case 'let':
      case 'assign':
        if (!this.plan.varying.has(s.variable)) e.stmt(s);
        else if (this.paired(s.variable.type as DType)) this.assignInHalves(s);
        else super.stmt(s);
        return;
      case 'store': {
        const a = e.arrays.get(s.array)!;
        const address = e.address(s.array, a, s.indices, s.loc);
        e.get(address);
        this.expr(s.value);
        if (this.activeMask()) {
          this.narrowMask(a.dtype);
          const m = e.local(ValType.v128);
          e.set(m);
          e.get(address);
          this.loadSlot(a);
          e.get(m);
          this.simd(SimdOp.v128_bitselect);
        }
        // An 8-byte slot takes lanes 0–1 (the 2 rows' 32-bit values).
        if (a.shift === 3) e.simd(SimdOp.v128_store64_lane).code.u32(3).u32(0).byte(0);
        else e.simd(SimdOp.v128_store).code.u32(4).u32(0);
        return;
      }
      case 'if':
        if (this.varies(s.cond)) {
          super.stmt(s);
          return;
        }
        e.expr(s.cond);
        e.open('if');
        this.stmts(s.then);
        if (s.otherwise.length) {
          e.else();
          this.stmts(s.otherwise);
        }
        e.close();
        return;
      case 'loop':
        this.loop(s);
        return;
      case 'break':
      case 'continue':
        if (this.loopMasked[this.loopMasked.length - 1]) this.maskedExit(s.kind === 'break');
        else {
          const labels = this.loopLabels[this.loopLabels.length - 1]!;
          e.br(s.kind === 'break' ? labels.breakDepth : labels.continueDepth);
        }
        return;
      case 'return': {
        const to = this.returns[this.returns.length - 1]!;
        const result = to.result;
        if (s.value && typeof result === 'number') {
          this.expr(s.value);
          e.set(result);
        } else if (s.value && result !== undefined) {
          // A float64 result held in pairs: half by half.
          const value = s.value;
          const pair = result as readonly [number, number];
          this.inHalves((h) => {
            this.expr(value);
            e.set(pair[h]);
          });
        }
        e.br(to.depth);
        return;
      }
      case 'call':
        this.inline(s.call);
        return;
      case 'local-array': {
        const a = e.arrays.get(s.variable)!;
        e.get(a.base).i32(0).i32(s.length * 16).misc(MiscOp.memory_fill).code.byte(0);
        return;
      }
    }
  }

  private loop(s: Extract<Stmt, { kind: 'loop' }>): void {
    const masked = this.plan.masked.has(s);
    this.loopMasked.push(masked);
    if (!masked) emitLoop(this.e, s, (list) => this.stmts(list), this.loopLabels);
    else {
      const cond = s.cond;
      const varying = cond !== undefined && this.varies(cond);
      this.maskedLoop(s, varying, () => (varying ? this.expr(cond) : this.e.expr(cond!)));
    }
    this.loopMasked.pop();
  }

  /**
   * A helper call, inlined: parameters bound, body in a block that `return` leaves.
   *
   * @returns the local of its result (a pair of locals for a float64 one held in pairs), or undefined for a void helper
   */
  private inline(x: Extract<Expr, { kind: 'call' }>): number | readonly [number, number] | undefined {
    const e = this.e;
    const h = x.helper;
    h.params.forEach((p, i) => {
      const a = x.args[i]!;
      if (a.kind === 'array-ref') e.arrays.set(p, e.arrays.get(a.array)!);
      else this.stmt({ kind: 'let', variable: p, init: a, loc: a.loc });
    });
    let result: number | readonly [number, number] | undefined;
    if (h.returnType !== 'void') {
      // A helper that ends without `return` gives undefined: NaN, or 0 once converted.
      const t = h.returnType;
      const local = () => {
        const l = e.local(ValType.v128);
        this.constant(t === 'float32' || t === 'float64' ? NaN : t === 'bool' ? false : 0, t);
        e.set(l);
        return l;
      };
      result = this.paired(t) ? [local(), local()] : local();
    }
    e.open('block');
    this.returns.push({ result, depth: e.depth() - 1 });
    const outer = this.loopLabels.splice(0);
    const outerMasked = this.loopMasked.splice(0);
    this.stmts(h.body);
    this.loopLabels.push(...outer);
    this.loopMasked.push(...outerMasked);
    this.returns.pop();
    e.close();
    return result;
  }
}

/** The operand locals of `run` (module.ts): per operand, its pointer and step locals. */
export interface RunLocals {
  readonly pointer: readonly (number | undefined)[];
  readonly step: readonly (number | undefined)[];
  /** The loop index and the number of rows. */
  readonly k: number;
  readonly count: number;
}

/** An operand of the row loop that is not a scalar argument, with its locals. */
interface RowOperand {
  readonly index: number;
  readonly v: Variable;
  readonly dtype: DType;
  readonly shift: number;
  /** Source binding (pointer, strides in elements, dims). */
  readonly src?: WasmArray;
  /** Local: step between rows in bytes. */
  readonly stepBytes: number;
  /** Locals: this block's row address per lane, group after group (RowPlan.groups). */
  readonly lane: number[];
  /** Array operands: locals for the scratch address, the number of elements, the alias flag. */
  readonly slot?: number;
  /** Array operands: the scratch address per group (the first is `slot`). */
  readonly slots?: readonly number[];
  /** Array operands: bytes of one slot (one element of every lane's row): see {@link slotBytesOf}. */
  readonly slotBytes?: 8 | 16;
  readonly elems?: number;
  readonly aliased?: number;
  /** Array operands: another operand shares this one's slots. */
  readonly shared?: number;
}

/** What the steps of the row loop share. */
interface RowLoop {
  readonly e: FunctionEmitter;
  readonly kernel: TypedKernel;
  readonly layout: MemoryLayout;
  readonly plan: RowPlan;
  readonly locals: RunLocals;
  /** The kernel's arrays as `run` binds them, for the scalar loop after this one. */
  readonly saved: ReadonlyMap<Variable, WasmArray>;
  readonly operands: readonly RowOperand[];
  /** The operands that are arrays. */
  readonly arrays: readonly RowOperand[];
  /** The depth of the block whose end leaves the remaining rows to the scalar loop. */
  readonly exit: number;
  /** Per array operand read from memory, the local holding how many bytes of each row of the next block to touch (touchBytesPerRow). */
  touches?: ReadonlyMap<RowOperand, number>;
}

/**
 * The vector loop over blocks of `lanes` rows, before `run`'s scalar loop (which runs the rest:
 * the tail, or everything where a check before the loop fails, or the block where an index was
 * out of bounds). `rowScratch` is the local holding the row scratch area's address.
 *
 * Each block copies its rows' array elements into the row scratch, lane-interleaved (element i of
 * lane l's row at slot i, lane l), runs the kernel's body there in SIMD lanes, and copies what the
 * kernel writes back to the rows.
 */
export function emitRowVectorLoop(
  e: FunctionEmitter, ctx: ModuleContext, layout: MemoryLayout, plan: RowPlan, locals: RunLocals, rowScratch: number,
  simd: RowSimdEmitter = new RowSimdEmitter(e, ctx, plan.lanes, plan),
): void {
  const { kernel } = plan;
  const saved = new Map(e.arrays);
  const operands = rowOperands(e, kernel, layout, plan, locals.step, saved);
  e.open('block');
  const loop: RowLoop = { e, kernel, layout, plan, locals, saved, operands, arrays: operands.filter((o) => o.src), exit: e.depth() - 1 };
  // Checks, once per call of run: any failure leaves every row to the scalar loop.
  const extents = exitUnlessRowsFitScratch(loop, rowScratch);
  exitUnlessOutputsApart(loop, extents);
  if (touchAhead && hasLoop(kernel)) loop.touches = touchBytesPerRow(loop, extents);
  // Each group's slots lie in its own region of the scratch, at the first group's offsets.
  for (const o of loop.arrays) o.slots!.forEach((slot, g) => g > 0 && e.get(o.slot!).i32(g * groupRegionBytes(plan)).op(Op.i32_add).set(slot));
  const direct = directInputs(loop);
  if (direct.size) {
    // The body reads these from their rows; a call where one shares an output's slots (in place)
    // runs the staged loop after this one instead.
    e.open('block');
    const staged = e.depth() - 1;
    for (const o of direct) e.get(o.shared!).get(o.aliased!).op(Op.i32_or).br(staged, true);
    simd.bindGroups(bindToScratch(loop, rowScratch, direct), direct);
    emitBlocksOfRows(loop, simd, direct);
    e.close();
  }
  simd.bindGroups(bindToScratch(loop, rowScratch));
  emitBlocksOfRows(loop, simd);
  e.close(); // exit
  // The scalar loop sees the operands again.
  e.arrays.clear();
  for (const [v, a] of saved) e.arrays.set(v, a);
}

/**
 * The row loop's operands (all but scalar arguments) and their locals: the step between rows in
 * bytes (set here), a row address per lane, and for arrays their slots' address, element count
 * and alias flags.
 */
function rowOperands(e: FunctionEmitter, kernel: TypedKernel, layout: MemoryLayout, plan: RowPlan, step: RunLocals['step'], saved: ReadonlyMap<Variable, WasmArray>): RowOperand[] {
  const { groups } = plan;
  const lanes = plan.lanes * groups;
  const operands: RowOperand[] = [];
  kernel.params.forEach((v, i) => {
    const s = layout.inner[i];
    if (s === 'scalar') return;
    const dtype = isArrayType(v.type) ? v.type.dtype : v.type;
    const shift = sizeShift(dtype);
    const stepBytes = e.local(ValType.i32);
    if (s === 'strided') e.get(step[i]!).set(stepBytes);
    else e.i32(s === 'broadcast' ? 0 : 1 << shift).set(stepBytes);
    const lane = Array.from({ length: lanes }, () => e.local(ValType.i32));
    if (isArrayType(v.type)) {
      const slots = Array.from({ length: groups }, () => e.local(ValType.i32));
      const slotBytes = slotBytesOf(plan, dtype);
      operands.push({ index: i, v, dtype, shift, src: saved.get(v)!, stepBytes, lane, slot: slots[0]!, slots, slotBytes, elems: e.local(ValType.i32), aliased: e.local(ValType.i32), shared: e.local(ValType.i32) });
    } else operands.push({ index: i, v, dtype, shift, stepBytes, lane });
  });
  return operands;
}

const dimLocal = (d: WasmArray['dims'][number]) => (d as { local: number }).local;

/**
 * Bytes of an array operand's slot: 16, or 8 where 2 rows per vector hold 32-bit lanes (float32,
 * int32, uint32, and 8- and 16-bit integers, which lanes hold as int32): such a slot is lanes 0–1
 * only, so copies store and the body loads half the bytes (`load64_zero`, `store64_lane`).
 */
function slotBytesOf(plan: RowPlan, dtype: DType): 8 | 16 {
  return plan.lanes === 2 && DTYPES[dtype].bytes <= 4 ? 8 : 16;
}

/**
 * Bytes of the row scratch each group of rows has: its local arrays, then its rows' slots. Groups
 * lie this far apart: less than an even share by 2,064 bytes, so that slot i of one group and
 * slot i of the next are not a multiple of 4 KiB apart (x86 cores compare a load with earlier
 * stores by the low 12 address bits, and wait where those match: "4K aliasing").
 */
const groupRegionBytes = (plan: RowPlan) => (plan.groups === 1 ? ROW_SCRATCH_BYTES : ROW_SCRATCH_BYTES / plan.groups - 2064);

/** Operand `o` as group `g` of a block sees it: that group's rows and slots. */
function groupOperand(o: RowOperand, lanes: number, g: number): RowOperand {
  return { ...o, lane: o.lane.slice(g * lanes, (g + 1) * lanes), slot: o.slots?.[g] };
}

const memarg = (e: FunctionEmitter, align: number) => e.code.u32(align).u32(0);

/**
 * Leaves every row to the scalar loop unless the rows fit the vector loop: at least `lanes` rows,
 * each array's row within the scratch (its slots laid out one array after another), no negative
 * step or stride (the overlap tests assume ascending rows), and an output's rows and elements
 * apart from one another.
 *
 * @returns per array operand, the local holding the bytes one row spans (0 when empty)
 */
function exitUnlessRowsFitScratch({ e, plan, locals: { count }, arrays, exit }: RowLoop, rowScratch: number): Map<RowOperand, number> {
  // In units of 8 bytes: an 8-byte slot is one, a 16-byte slot two (at an even unit, 16-byte aligned).
  const capUnits = (groupRegionBytes(plan) - plan.localBytes) / 8;
  e.get(count).i32(plan.lanes * plan.groups).op(Op.i32_lt_u).br(exit, true);
  const used = e.local(ValType.i32);
  e.i32(0).set(used);
  const extent = new Map<RowOperand, number>();
  for (const o of arrays) {
    const a = o.src!;
    // elems = Π dims, each checked against the scratch capacity first (no i32 overflow).
    e.i32(1).set(o.elems!);
    for (const d of a.dims) {
      e.get(dimLocal(d)).i32(capUnits).op(Op.i32_gt_u).br(exit, true);
      e.get(o.elems!).get(dimLocal(d)).op(Op.i32_mul).set(o.elems!);
    }
    e.get(o.elems!).i32(capUnits).op(Op.i32_gt_u).br(exit, true);
    const units = o.slotBytes! / 8;
    if (units === 2) e.get(used).i32(1).op(Op.i32_add).i32(-2).op(Op.i32_and).set(used);
    e.get(rowScratch).i32(plan.localBytes).op(Op.i32_add).get(used).i32(3).op(Op.i32_shl).op(Op.i32_add).set(o.slot!);
    e.get(used).get(o.elems!).i32(units).op(Op.i32_mul).op(Op.i32_add).tee(used).i32(capUnits).op(Op.i32_gt_u).br(exit, true);
    e.i32(0).set(o.aliased!);
    e.i32(0).set(o.shared!);
    // Negative steps or strides: not vectorised (the overlap tests below assume ascending rows).
    e.get(o.stepBytes).i32(0).op(Op.i32_lt_s).br(exit, true);
    a.strides.forEach((st) => {
      if (st !== 'unit') e.get(st).i32(0).op(Op.i32_lt_s).br(exit, true);
    });
    // Bytes one row spans: (Σ (dim−1)·stride + 1) · size, or 0 when empty.
    const ext = e.local(ValType.i32);
    e.i32(1);
    a.dims.forEach((d, axis) => {
      const st = a.strides[axis]!;
      e.get(dimLocal(d)).i32(1).op(Op.i32_sub);
      if (st !== 'unit') e.get(st).op(Op.i32_mul);
      e.op(Op.i32_add);
    });
    e.i32(o.shift).op(Op.i32_shl);
    e.i32(0).get(o.elems!).op(Op.select).set(ext);
    extent.set(o, ext);
    if (plan.written.has(o.index)) {
      // The rows of one output must not overlap one another,
      e.get(o.stepBytes).get(ext).op(Op.i32_lt_s).br(exit, true);
      // nor the elements of one row (a stride-0 core axis, say): the lanes' slots are distinct,
      // so a row whose elements alias would read what the scalar loop does not.
      exitUnlessDistinctElements(e, a, dimLocal, exit);
    }
  }
  return extent;
}

/**
 * Operands overlapping an output: the very same view shares its slots (in place); any other
 * overlap leaves every row to the scalar loop.
 *
 * @param extent - per array operand, the bytes one row spans
 */
function exitUnlessOutputsApart({ e, plan, locals: { pointer, count }, arrays, exit }: RowLoop, extent: ReadonlyMap<RowOperand, number>): void {
  const hi = new Map<RowOperand, number>();
  for (const o of arrays) {
    const h = e.local(ValType.i32);
    e.get(pointer[o.index]!).get(count).i32(1).op(Op.i32_sub).get(o.stepBytes).op(Op.i32_mul).op(Op.i32_add).get(extent.get(o)!).op(Op.i32_add).set(h);
    hi.set(o, h);
  }
  for (let j = 0; j < arrays.length; j++) {
    for (let i = 0; i < j; i++) {
      const a = arrays[i]!;
      const b = arrays[j]!;
      if (!plan.written.has(a.index) && !plan.written.has(b.index)) continue;
      const sa = a.src!;
      const sb = b.src!;
      const comparable = a.dtype === b.dtype && sa.dims.length === sb.dims.length && sa.strides.every((s, x) => (s === 'unit') === (sb.strides[x] === 'unit'));
      e.open('block');
      const next = e.depth() - 1;
      if (comparable) {
        // identical: same pointer, step, dims and strides → share a's slots.
        e.get(pointer[a.index]!).get(pointer[b.index]!).op(Op.i32_eq);
        e.get(a.stepBytes).get(b.stepBytes).op(Op.i32_eq).op(Op.i32_and);
        sa.dims.forEach((d, x) => e.get(dimLocal(d)).get(dimLocal(sb.dims[x]!)).op(Op.i32_eq).op(Op.i32_and));
        sa.strides.forEach((s, x) => {
          if (s !== 'unit') e.get(s).get(sb.strides[x] as number).op(Op.i32_eq).op(Op.i32_and);
        });
        e.open('if');
        e.get(b.aliased!).op(Op.i32_eqz).open('if');
        e.get(a.slot!).set(b.slot!);
        e.i32(1).set(b.aliased!);
        e.i32(1).set(a.shared!);
        e.close();
        e.br(next);
        e.close();
      }
      // disjoint or empty: lo_a < hi_b && lo_b < hi_a overlaps (unsigned byte addresses).
      e.get(pointer[a.index]!).get(hi.get(b)!).op(Op.i32_lt_u);
      e.get(pointer[b.index]!).get(hi.get(a)!).op(Op.i32_lt_u).op(Op.i32_and);
      e.get(a.elems!).op(Op.i32_eqz).get(b.elems!).op(Op.i32_eqz).op(Op.i32_or).op(Op.i32_eqz).op(Op.i32_and);
      e.br(exit, true);
      e.close();
    }
  }
}

/**
 * Binds the kernel's arrays to the row scratch for the vector body, per group of rows: local
 * arrays lane-interleaved at fixed offsets of the group's region, array operands at the group's
 * slots (contiguous, one slot of 8 or 16 bytes per element: {@link slotBytesOf}).
 */
function bindToScratch({ e, kernel, plan, saved, arrays }: RowLoop, rowScratch: number, direct?: ReadonlySet<RowOperand>): Map<Variable, WasmArray>[] {
  const zero = e.local(ValType.i32);
  return Array.from({ length: plan.groups }, (_, g) => {
    const bound = new Map<Variable, WasmArray>();
    for (const [v, offset] of plan.localOffsets) {
      const base = e.local(ValType.i32);
      e.get(rowScratch).i32(g * groupRegionBytes(plan) + offset).op(Op.i32_add).set(base);
      bound.set(v, { base, strides: ['unit'], dims: [{ constant: (saved.get(v)?.dims[0] as { constant: number } | undefined)?.constant ?? localLength(kernel, v) }], dtype: (v.type as { dtype: DType }).dtype, shift: 4 });
    }
    for (const o of arrays) {
      const a = o.src!;
      if (direct?.has(o)) {
        bound.set(o.v, { base: zero, strides: a.strides, dims: a.dims, dtype: o.dtype, shift: o.shift });
        continue;
      }
      const strides: WasmArray['strides'][number][] = a.dims.length === 2 ? [dimLocal(a.dims[1]!), 'unit'] : a.dims.map(() => 'unit' as const);
      bound.set(o.v, { base: o.slots![g]!, strides, dims: a.dims, dtype: o.dtype, shift: o.slotBytes === 8 ? 3 : 4 });
    }
    return bound;
  });
}

/**
 * The loop over blocks of `lanes` rows: each lane's row addresses, the scalar arguments, the rows
 * copied into their slots, the kernel's body in lanes (an index out of bounds leaves this block
 * and the rest to the scalar loop), the written slots copied back, the next block.
 */
function emitBlocksOfRows(loop: RowLoop, simd: RowSimdEmitter, direct?: ReadonlySet<RowOperand>): void {
  const { e, kernel, layout, plan, locals: { pointer, k, count }, operands, arrays, exit } = loop;
  const { lanes, groups } = plan;
  const rows = lanes * groups;
  e.open('loop');
  const top = e.depth() - 1;
  e.get(k).i32(rows).op(Op.i32_add).get(count).op(Op.i32_gt_u).br(exit, true);
  for (const o of operands) {
    e.get(pointer[o.index]!).set(o.lane[0]!);
    for (let l = 1; l < rows; l++) e.get(o.lane[l - 1]!).get(o.stepBytes).op(Op.i32_add).set(o.lane[l]!);
  }
  loadScalarArguments(loop, simd);
  // Rows → slots.
  for (const o of arrays) {
    if (direct?.has(o)) continue;
    e.get(o.aliased!).op(Op.i32_eqz);
    if (plan.covered.has(o.index)) e.get(o.shared!).op(Op.i32_and);
    e.open('if');
    new RowCopy(e, lanes, o, true, groups, groupRegionBytes(plan)).emit();
    e.close();
  }
  touchNextBlock(loop);
  e.open('block');
  const bail = e.depth() - 1;
  e.open('block');
  simd.returns.push({ result: undefined, depth: e.depth() - 1 });
  e.bailTo = bail;
  simd.stmts(kernel.body);
  e.bailTo = undefined;
  simd.returns.pop();
  e.close();
  // Slots → rows, for what the kernel writes.
  for (const o of arrays) {
    if (plan.written.has(o.index)) new RowCopy(e, lanes, o, false, groups, groupRegionBytes(plan)).emit();
  }
  for (const o of operands) {
    if (layout.inner[o.index] === 'broadcast') continue;
    e.get(pointer[o.index]!).get(o.stepBytes).i32(rows).op(Op.i32_mul).op(Op.i32_add).set(pointer[o.index]!);
  }
  e.get(k).i32(rows).op(Op.i32_add).set(k);
  e.br(top);
  e.close(); // bail: an index was out of bounds; the scalar loop redoes this block
  e.br(exit);
  e.close(); // loop
}

/** Rows spanning fewer bytes are not touched ahead (touchNextBlock): the hardware's own prefetch follows rows that short. */
const TOUCH_MIN_BYTES = 64;
/** The most bytes of each row touched ahead: the start of longer rows (more lines would fill the core's queue of misses, and the hardware's prefetch follows a long row). */
const TOUCH_MAX_BYTES = 256;
/**
 * Off: touching the next block's rows ahead measured 0.70–1.0× on the 2-core VM but 1.06–1.43× on
 * the 16-core host (row-dot, a float64 row sum: bench/results/rows-ab-reductions-*.md), so no
 * kernel runs it until the engine choice can time it as a candidate. Tests and bench/rows-ab.ts set
 * it (`__testing.setTouchAhead`).
 */
let touchAhead = false;
/** Cleared by benchmarks (`__testing.setDirectReads`): plans emitted after copy every operand's rows into slots. */
let directReads = true;

/**
 * The operands a kernel without a loop reads straight from their rows, with a lane access per
 * element and row where the body reads it (RowSimdEmitter.loadFromRows), instead of copying them
 * into slots first: inputs of 8-bit elements the kernel does not write. Their copy is that lane
 * access per element already (RowCopy.element) plus a store to the slot and the body's load from
 * it: rgb-to-gray's rows of 3 bytes and a norm of rows of 4 bytes took 0.73–0.84× of the staged
 * form (bench/rows-ab.ts, new-staged). Not for 16-bit elements (0.92× on one kernel, 1.05× on
 * another), nor wider ones, which are copied a vector per row and transposed where a row has a
 * vector's worth (a float32 quaternion's norm read lane by lane: 1.2× slower); a kernel that loops
 * reads each element many times: staged too.
 */
function directInputs({ kernel, plan, arrays }: RowLoop): Set<RowOperand> {
  if (!directReads || hasLoop(kernel) || plan.intLanes) return new Set();
  return new Set(arrays.filter((o) => !plan.written.has(o.index) && DTYPES[o.dtype].bytes === 1));
}

/**
 * Whether the kernel loops (along its rows, presumably): only then are the next block's rows
 * touched ahead. A body without a loop reads a few elements at fixed indices — rows that short the
 * hardware's prefetch follows, and a per-block check for them measured 5–8% slower (rgb-to-gray).
 */
const hasLoop = (kernel: TypedKernel) => containsLoop(kernel.body) || kernel.helpers.some((h) => containsLoop(h.body));

/**
 * Per array operand whose rows are read from memory (not an output written whole), a local
 * holding how many bytes of each row the block loop touches ahead: 0 for rows spanning under
 * TOUCH_MIN_BYTES, else the span up to TOUCH_MAX_BYTES. Decided once per call.
 */
function touchBytesPerRow({ e, plan, arrays }: RowLoop, extents: ReadonlyMap<RowOperand, number>): Map<RowOperand, number> {
  const touches = new Map<RowOperand, number>();
  for (const o of arrays) {
    if (plan.covered.has(o.index)) continue;
    const bytes = e.local(ValType.i32);
    const span = extents.get(o)!;
    e.get(span).i32(TOUCH_MAX_BYTES).get(span).i32(TOUCH_MAX_BYTES).op(Op.i32_lt_u).op(Op.select);
    e.i32(0).get(span).i32(TOUCH_MIN_BYTES).op(Op.i32_ge_u).op(Op.select).set(bytes);
    touches.set(o, bytes);
  }
  return touches;
}

/**
 * Loads one byte of every 64-byte line of the next block's rows (their first touchBytesPerRow
 * bytes), once this block's rows are in their slots. Wasm has no prefetch instruction; these
 * loads depend on nothing, so the core issues them at once and the lines travel from memory
 * while the body computes this block — else each block's copy would wait for its rows' misses
 * after the previous block's body, the two never overlapping (a body along a row is longer than
 * the core's window of instructions). The last block touches its own rows again (no row past the
 * call's is read). Results are unchanged: the loaded bytes are dropped.
 */
function touchNextBlock({ e, plan, locals: { k, count }, arrays, touches }: RowLoop): void {
  if (!touches) return;
  const rows = plan.lanes * plan.groups;
  const ahead = e.local(ValType.i32);
  const at = e.local(ValType.i32);
  const sink = e.local(ValType.i32);
  for (const o of arrays) {
    const bytes = touches.get(o);
    if (bytes === undefined) continue;
    e.open('block');
    const done = e.depth() - 1;
    e.get(bytes).op(Op.i32_eqz).br(done, true);
    // The next block's rows are `rows` steps on, where the next block is a whole one.
    e.get(o.stepBytes).i32(rows).op(Op.i32_mul).i32(0);
    e.get(k).i32(2 * rows).op(Op.i32_add).get(count).op(Op.i32_le_u).op(Op.select).set(ahead);
    e.i32(0).set(at);
    e.open('loop');
    const again = e.depth() - 1;
    for (const lane of o.lane) {
      e.get(lane).get(ahead).op(Op.i32_add).get(at).op(Op.i32_add);
      e.code.byte(Op.i32_load8_u).u32(0).u32(0);
      e.get(sink).op(Op.i32_or).set(sink);
    }
    e.get(at).i32(64).op(Op.i32_add).tee(at).get(bytes).op(Op.i32_lt_u).br(again, true);
    e.close();
    e.close();
  }
}

/** Scalar parameters: uniform ones as the scalar loop sets them; per-row ones from each lane's row. */
function loadScalarArguments({ e, kernel, layout, plan, locals: { pointer, step }, operands }: RowLoop, simd: RowSimdEmitter): void {
  kernel.params.forEach((v, i) => {
    if (isArrayType(v.type)) return;
    const s = layout.inner[i];
    const isVarying = plan.varying.has(v);
    if (s === 'scalar' || s === 'broadcast') {
      if (s === 'scalar') e.get(step[i]!);
      else {
        e.get(pointer[i]!);
        e.load(v.type);
      }
      if (isVarying) {
        simd.splatUniform(v.type);
        const splat = e.local(ValType.v128);
        e.set(splat);
        for (let g = 0; g < plan.groups; g++) {
          simd.useGroup(g);
          simd.setLanes(v, splat);
        }
        simd.useGroup(0);
      } else e.set(e.varLocal(v));
      return;
    }
    const o = operands.find((x) => x.index === i)!;
    for (let g = 0; g < plan.groups; g++) {
      simd.useGroup(g);
      loadLanes(e, plan.lanes, groupOperand(o, plan.lanes, g), undefined, simd.varLocal(v));
    }
    simd.useGroup(0);
  });
}

/** Bytes of one row's lane in a vector of `lanes` rows (2-row code keeps 32-bit values in 32-bit lanes 0–1). */
const laneBytesOf = (lanes: number) => (lanes === 2 ? 4 : 16 / lanes);

/**
 * The lane access of one element of `dtype` for row `l` of a vector of `lanes` rows, and its lane
 * index (in elements of its size): narrower elements go to the low bytes of their row's lane.
 */
function laneAccess(dtype: DType, l: number, load: boolean, lanes: number): [SimdOp, number] {
  const bytes = DTYPES[dtype].bytes;
  const lane = bytes === 8 ? l : (l * laneBytesOf(lanes)) / bytes;
  switch (bytes) {
    case 8: return [load ? SimdOp.v128_load64_lane : SimdOp.v128_store64_lane, lane];
    case 4: return [load ? SimdOp.v128_load32_lane : SimdOp.v128_store32_lane, lane];
    case 2: return [load ? SimdOp.v128_load16_lane : SimdOp.v128_store16_lane, lane];
    default: return [load ? SimdOp.v128_load8_lane : SimdOp.v128_store8_lane, lane];
  }
}

/** Sets vector local `into` to the lanes' elements at byte `offset` (a local; none: 0) of their rows. */
function loadLanes(e: FunctionEmitter, lanes: number, o: RowOperand, offset: number | undefined, into: number): void {
  const laneBytes = laneBytesOf(lanes);
  const narrow = DTYPES[o.dtype].bytes < laneBytes;
  if (narrow) {
    // Zero-extended by loading into zeros; sign-extended after, with a shift up and back.
    e.i32(0).simd(SimdOp.i32x4_splat);
    e.set(into);
  }
  for (let l = 0; l < lanes; l++) {
    const [op, lane] = laneAccess(o.dtype, l, true, lanes);
    e.get(o.lane[l]!);
    if (offset !== undefined) e.get(offset).op(Op.i32_add);
    e.get(into);
    e.simd(op);
    memarg(e, o.shift);
    e.code.byte(lane);
    e.set(into);
  }
  if (narrow && SIGNED_NARROW.has(o.dtype)) {
    const shift = 8 * (laneBytes - DTYPES[o.dtype].bytes);
    const [shl, shr] = laneBytes === 4 ? [SimdOp.i32x4_shl, SimdOp.i32x4_shr_s] : [SimdOp.i16x8_shl, SimdOp.i16x8_shr_s];
    e.get(into).i32(shift).simd(shl).i32(shift).simd(shr).set(into);
  }
}

/**
 * Copies an array operand between the lanes' rows and its slots (`into`: rows → slots), over its
 * core axes in nested loops, innermost last, `offset` counting bytes from each row's start. A
 * contiguous innermost axis of 32- or 64-bit elements goes a group at a time: `group` consecutive
 * elements of every lane's row (one v128 load or store per row) and `group` slots, transposed with
 * shuffles — instead of one lane access per element and lane. Each group of rows of a block
 * (RowPlan.groups) is copied in the same loops, its slots `groupBytes` after the previous group's.
 */
class RowCopy {
  private readonly v: number;
  private readonly offset: number;
  private readonly slot: number;
  private readonly bytes: number;
  private readonly group: number;
  private readonly rowVectors: number[];
  private readonly slotVectors: number[];
  /** Bytes of a slot (slotBytesOf), and the v128s that `group` slots fill. */
  private readonly slotBytes: number;
  private readonly slotVectorCount: number;

  /** Per group of rows, the operand as that group sees it (its rows' addresses). */
  private readonly views: RowOperand[];
  /** 8-bit elements in 16-bit lanes: loaded extended, stored as their low bytes. */
  private readonly widened: boolean;

  constructor(
    private readonly e: FunctionEmitter, private readonly lanes: 16 | 8 | 4 | 2, private readonly o: RowOperand, private readonly into: boolean,
    rowGroups: number, private readonly groupBytes: number,
  ) {
    this.views = Array.from({ length: rowGroups }, (_, g) => groupOperand(o, lanes, g));
    this.v = e.local(ValType.v128);
    this.offset = e.local(ValType.i32);
    this.slot = e.local(ValType.i32);
    this.bytes = 1 << o.shift;
    this.widened = lanes === 8 && this.bytes === 1;
    // Narrow integer lanes (8 or 16 rows per vector) copy a square of `lanes` elements of `lanes` rows.
    this.group = lanes >= 8 ? lanes : 16 / this.bytes;
    this.slotBytes = o.slotBytes ?? 16;
    this.slotVectorCount = (this.group * this.slotBytes) / 16;
    this.rowVectors = Array.from({ length: lanes }, () => e.local(ValType.v128));
    this.slotVectors = Array.from({ length: this.slotVectorCount }, () => e.local(ValType.v128));
  }

  emit(): void {
    this.e.get(this.o.slot!).set(this.slot);
    this.e.i32(0).set(this.offset);
    this.axis(0);
  }

  /** The loop over core axis `x` and those inside it (past the last: one element). */
  private axis(x: number): void {
    const { e, o, bytes, group, offset, lanes } = this;
    const a = o.src!;
    if (x === a.dims.length) {
      this.element();
      return;
    }
    const j = e.local(ValType.i32);
    const start = e.local(ValType.i32);
    e.get(offset).set(start);
    e.i32(0).set(j);
    if (x === a.dims.length - 1 && a.strides[x] === 'unit' && (bytes >= 4 || lanes >= 8)) {
      // Whole groups first, then the elements left one by one (the loop below, from j).
      e.open('block');
      const done = e.depth() - 1;
      e.open('loop');
      const again = e.depth() - 1;
      e.get(j).i32(group).op(Op.i32_add).get(dimLocal(a.dims[x]!)).op(Op.i32_gt_u).br(done, true);
      this.groupOfElements();
      e.get(start).i32(group * bytes).op(Op.i32_add).tee(start).set(offset);
      e.get(j).i32(group).op(Op.i32_add).set(j);
      e.br(again);
      e.close();
      e.close();
    }
    e.open('block');
    const out = e.depth() - 1;
    e.open('loop');
    const top = e.depth() - 1;
    e.get(j).get(dimLocal(a.dims[x]!)).op(Op.i32_ge_u).br(out, true);
    this.axis(x + 1);
    // next element along axis x: start += stride·size; offset = start
    const st = a.strides[x]!;
    e.get(start);
    if (st === 'unit') e.i32(1 << o.shift);
    else e.get(st).i32(o.shift).op(Op.i32_shl);
    e.op(Op.i32_add).tee(start).set(offset);
    e.get(j).i32(1).op(Op.i32_add).set(j);
    e.br(top);
    e.close();
    e.close();
  }

  /** One element of every lane's row, and its slot, for each group of rows. */
  private element(): void {
    const { e, o, v, offset, slot, lanes, groupBytes } = this;
    const half = this.slotBytes === 8;
    this.views.forEach((view, g) => {
      if (this.into) {
        loadLanes(e, lanes, view, offset, v);
        e.get(slot).get(v);
        if (half) e.simd(SimdOp.v128_store64_lane).code.u32(3).u32(g * groupBytes).byte(0);
        else e.simd(SimdOp.v128_store).code.u32(4).u32(g * groupBytes);
      } else {
        e.get(slot);
        if (half) e.simd(SimdOp.v128_load64_zero).code.u32(3).u32(g * groupBytes);
        else e.simd(SimdOp.v128_load).code.u32(4).u32(g * groupBytes);
        e.set(v);
        for (let l = 0; l < lanes; l++) {
          // Narrow elements keep their lane's low bytes: the kernel's store converted the value.
          const [op, lane] = laneAccess(o.dtype, l, false, lanes);
          e.get(view.lane[l]!).get(offset).op(Op.i32_add).get(v);
          e.simd(op);
          memarg(e, o.shift);
          e.code.byte(lane);
        }
      }
    });
    e.get(slot).i32(this.slotBytes).op(Op.i32_add).set(slot);
  }

  /** `group` consecutive elements of every lane's row, and their `group` slots, for each group of rows. */
  private groupOfElements(): void {
    const { e, o, offset, slot, lanes, group, rowVectors, slotVectors, groupBytes } = this;
    this.views.forEach((view, g) => {
      if (this.into) {
        for (let l = 0; l < lanes; l++) {
          e.get(view.lane[l]!).get(offset).op(Op.i32_add);
          // 8-bit elements for 16-bit lanes: 8 of them, sign- or zero-extended.
          if (this.widened) e.simd(SIGNED_NARROW.has(o.dtype) ? SimdOp.v128_load8x8_s : SimdOp.v128_load8x8_u).code.u32(0).u32(0);
          else {
            e.simd(SimdOp.v128_load);
            memarg(e, o.shift);
          }
          e.set(rowVectors[l]!);
        }
        this.transpose(rowVectors, slotVectors, true);
        for (let i = 0; i < this.slotVectorCount; i++) {
          e.get(slot).get(slotVectors[i]!);
          e.simd(SimdOp.v128_store);
          e.code.u32(4).u32(g * groupBytes + 16 * i);
        }
      } else {
        for (let i = 0; i < this.slotVectorCount; i++) {
          e.get(slot);
          e.simd(SimdOp.v128_load);
          e.code.u32(4).u32(g * groupBytes + 16 * i);
          e.set(slotVectors[i]!);
        }
        this.transpose(slotVectors, rowVectors, false);
        for (let l = 0; l < lanes; l++) {
          e.get(view.lane[l]!).get(offset).op(Op.i32_add).get(rowVectors[l]!);
          if (this.widened) {
            // The low byte of each 16-bit lane: the element (the kernel's store converted it).
            e.get(rowVectors[l]!).shuffle([0, 2, 4, 6, 8, 10, 12, 14, 0, 2, 4, 6, 8, 10, 12, 14]);
            e.simd(SimdOp.v128_store64_lane).code.u32(0).u32(0).byte(0);
            continue;
          }
          e.simd(SimdOp.v128_store);
          memarg(e, o.shift);
        }
      }
    });
    e.get(slot).i32(this.slotBytes * group).op(Op.i32_add).set(slot);
  }

  /**
   * Transposes `from` (lanes × group, or group × lanes) into `to`. 4 lanes × 4 f32: two rounds
   * of shuffles; 2 lanes × 2 f64: one; 2 lanes × 4 32-bit elements into 4 slots of 8 bytes (2-row
   * code keeps 32-bit values in lanes 0–1), two v128s of slots: one round.
   */
  private transpose(from: readonly number[], to: readonly number[], toSlots: boolean): void {
    const { e } = this;
    if (this.lanes >= 8) {
      // Narrow integer lanes: `lanes` rows × `lanes` elements, square.
      transposeSquare(e, from, to, (16 / this.lanes) as 1 | 2);
      return;
    }
    const shuffle = (x: number, y: number, picks: readonly number[], size: number) => this.shuffle(x, y, picks, size);
    if (this.slotBytes === 8) {
      // 2 rows × 4 32-bit elements ↔ 4 slots of 8 bytes in 2 v128s: [a0 b0 a1 b1], [a2 b2 a3 b3].
      if (toSlots) {
        shuffle(from[0]!, from[1]!, [0, 4, 1, 5], 4);
        e.set(to[0]!);
        shuffle(from[0]!, from[1]!, [2, 6, 3, 7], 4);
        e.set(to[1]!);
      } else {
        shuffle(from[0]!, from[1]!, [0, 2, 4, 6], 4);
        e.set(to[0]!);
        shuffle(from[0]!, from[1]!, [1, 3, 5, 7], 4);
        e.set(to[1]!);
      }
    } else if (this.bytes === 8) {
      shuffle(from[0]!, from[1]!, [0, 2], 8);
      e.set(to[0]!);
      shuffle(from[0]!, from[1]!, [1, 3], 8);
      e.set(to[1]!);
    } else if (this.lanes === 4) {
      const t = [e.local(ValType.v128), e.local(ValType.v128), e.local(ValType.v128), e.local(ValType.v128)];
      shuffle(from[0]!, from[1]!, [0, 4, 1, 5], 4);
      e.set(t[0]!);
      shuffle(from[0]!, from[1]!, [2, 6, 3, 7], 4);
      e.set(t[1]!);
      shuffle(from[2]!, from[3]!, [0, 4, 1, 5], 4);
      e.set(t[2]!);
      shuffle(from[2]!, from[3]!, [2, 6, 3, 7], 4);
      e.set(t[3]!);
      shuffle(t[0]!, t[2]!, [0, 1, 4, 5], 4);
      e.set(to[0]!);
      shuffle(t[0]!, t[2]!, [2, 3, 6, 7], 4);
      e.set(to[1]!);
      shuffle(t[1]!, t[3]!, [0, 1, 4, 5], 4);
      e.set(to[2]!);
      shuffle(t[1]!, t[3]!, [2, 3, 6, 7], 4);
      e.set(to[3]!);
    } else throw new Error('2 rows of 32-bit elements have 8-byte slots (slotBytesOf)');
  }

  /** Pushes shuffle(x, y) picking `picks` (element indices of x ++ y, in elements of `size` bytes). */
  private shuffle(x: number, y: number, picks: readonly number[], size: number): void {
    this.e.get(x).get(y).shuffle(picks.flatMap((q) => Array.from({ length: size }, (_, b) => q * size + b)));
  }
}

/** The length of a local array declared anywhere in the kernel or its helpers. */
function localLength(kernel: TypedKernel, v: Variable): number {
  let found = 0;
  const visit = (list: readonly Stmt[]): void => {
    for (const s of list) {
      if (s.kind === 'local-array' && s.variable === v) found = s.length;
      else if (s.kind === 'if') {
        visit(s.then);
        visit(s.otherwise);
      } else if (s.kind === 'loop') {
        visit(s.init);
        visit(s.body);
      }
    }
  };
  visit(kernel.body);
  for (const h of kernel.helpers) visit(h.body);
  return found;
}
