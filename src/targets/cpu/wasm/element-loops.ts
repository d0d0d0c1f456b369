/**
 * Element-wise kernels with loops in SIMD lanes, in the model of Intel's ISPC (as per-row kernels
 * run, emit-rows.ts): values are *uniform* — the same for every element of a call: constants,
 * scalar and broadcast operands, loop counters, and what is computed only from those — or
 * *varying* (the elements, and what depends on them). Uniform values stay scalar, so a loop whose
 * trip count is the same for every element (a Horner loop over a coefficient count, a fixed
 * number of Newton steps) runs its counter and its test once for all lanes, as scalar code; only
 * varying values live in lanes, and a uniform value is splatted where it meets them. The lanes
 * are 4 unless a varying value is float64: a float64 counter (the language's rule 1) no longer
 * halves them.
 *
 * A loop whose condition varies per element, or with a `break` or `continue` under a condition
 * that does, runs while any lane still loops, under the mask of those that do
 * (SimdEmitter.maskedLoop) — where asked: by default such kernels run the scalar loop (see
 * {@link vectorizeShape}). A `return` inside a loop or a uniform `if` records the lanes that
 * return (as a `return` under a varying condition does) and leaves the function once every lane
 * has returned; the lanes that returned also leave the masked loops they were in.
 *
 * Each lane computes exactly what the scalar code computes for its element: uniform values are
 * the scalar code's values (the same instructions), varying ones IEEE arithmetic per lane.
 */
import type { DType } from '../../../dtypes.js';
import type { Expr, HelperFunction, Stmt, TypedKernel, Variable } from '../../../compiler/ir.js';
import type { MemoryLayout } from '../memory-layout.js';
import { Op, SimdOp, ValType } from './encoder.js';
import { emitLoop, type FunctionEmitter, type LoopLabels, type ModuleContext } from './emit-scalar.js';
import { type ElementLoops, SimdEmitter, type SimdShape, simdShape } from './emit-simd.js';
import { varies } from './emit-rows.js';

/**
 * Which element-wise loops lanes take: `uniform` (the default) those that every element runs for
 * the same number of iterations; `all` those that elements leave at different iterations too
 * (tests and benchmarks: see {@link vectorizeShape}); `none` none (benchmarks: the scalar loop, as
 * before lanes took loops).
 */
type LanesTake = 'uniform' | 'all' | 'none';
let lanesTake: LanesTake = 'uniform';
export const __testing = {
  setLanesTake(which: LanesTake): void {
    lanesTake = which;
  },
};

/**
 * How a vectorize kernel runs in lanes for a memory layout, or why it runs scalar (emit-simd.ts).
 * A kernel with a loop that elements may leave at different iterations — a condition, `break` or
 * `continue` that varies per element, a `return` inside a loop — runs the scalar loop unless the
 * layout asks for masked lanes (`maskedLoops`): in lanes every vector runs until its last lane
 * leaves, and each iteration also tests, masks and blends, which pays for some kernels and not
 * others (bench/element-loops.ts, 2-core VM: an escape-time `while` 1.12× the scalar loop's time, a
 * growth loop left by `break` 1.58×, Mandelbrot 0.87–0.91×), so calibration times both variants
 * on large calls (engine-calibration.ts, {@link hasMaskedVariant}).
 */
export function vectorizeShape(kernel: TypedKernel, layout: MemoryLayout): SimdShape | string {
  if (lanesTake === 'none' || !hasLoop(kernel)) return simdShape(kernel, 'vectorize', layout);
  const loops = elementLoops(kernel, layout);
  if (lanesTake === 'uniform' && !layout.maskedLoops) {
    const exits = varyingExits(kernel, loops);
    if (exits) return `elements leave a loop at different iterations (${exits}); large calls also time it in masked lanes and run that where it measures faster`;
  }
  return simdShape(kernel, 'vectorize', layout, loops);
}

/** How elements leave a loop at different iterations in a kernel, in words, or undefined where they do not. */
function varyingExits(kernel: TypedKernel, loops: ElementLoops): string | undefined {
  if (loops.masked.size) return 'a condition, `break` or `continue` that varies per element';
  if (returnsInLoop(kernel)) return 'a `return` inside it';
  return undefined;
}

/**
 * Whether a kernel's loop in lanes for a layout differs from its default by the masked-lanes
 * variant: elements leave a loop at different iterations, and the kernel can run in lanes.
 */
export function hasMaskedVariant(kernel: TypedKernel, layout: MemoryLayout): boolean {
  if (lanesTake !== 'uniform' || layout.maskedLoops || !hasLoop(kernel)) return false;
  const loops = elementLoops(kernel, layout);
  return varyingExits(kernel, loops) !== undefined && typeof simdShape(kernel, 'vectorize', layout, loops) !== 'string';
}

/** Whether the kernel or a helper returns from inside a loop. */
function returnsInLoop(kernel: TypedKernel): boolean {
  const inList = (list: readonly Stmt[], looping: boolean): boolean => list.some((s) =>
    s.kind === 'return' ? looping
      : s.kind === 'if' ? inList(s.then, looping) || inList(s.otherwise, looping)
        : s.kind === 'loop' && inList(s.body, true));
  return inList(kernel.body, false) || kernel.helpers.some((h) => inList(h.body, false));
}

/** Whether a kernel or one of its helpers has a loop. */
export function hasLoop(kernel: TypedKernel): boolean {
  const inList = (list: readonly Stmt[]): boolean =>
    list.some((s) => s.kind === 'loop' || (s.kind === 'if' && (inList(s.then) || inList(s.otherwise))));
  return inList(kernel.body) || kernel.helpers.some((h) => inList(h.body));
}

/**
 * The uniform/varying split of an element-wise kernel: operands that are not scalars or broadcast
 * vary, and varying-ness spreads through assignments — a variable assigned a varying value, or
 * assigned under a varying condition (a varying `if`, a masked loop) outside the block that
 * declares it, varies — until nothing changes.
 */
export function elementLoops(kernel: TypedKernel, layout: MemoryLayout): ElementLoops {
  const varying = new Set<Variable>();
  kernel.params.forEach((p, i) => {
    if (layout.inner[i] !== 'scalar' && layout.inner[i] !== 'broadcast') varying.add(p);
  });
  const masked = new Set<Stmt>();
  /** Varying-condition depth at each variable's declaration (per call site, in walk order). */
  const declared = new Map<Variable, number>();
  interface Context {
    /** Enclosing varying conditions, call sites included. */
    readonly depth: number;
    /** A varying condition encloses this point within the innermost loop of the current function. */
    readonly loopVarying: boolean;
    readonly loop?: Stmt;
  }
  const expr = (e: Expr, c: Context): void => {
    switch (e.kind) {
      case 'call': call(e, c); return;
      case 'unary': expr(e.arg, c); return;
      case 'cast': expr(e.value, c); return;
      case 'binary': case 'compare': case 'logical': expr(e.left, c); expr(e.right, c); return;
      case 'select': expr(e.cond, c); expr(e.then, c); expr(e.otherwise, c); return;
      case 'math': e.args.forEach((a) => expr(a, c)); return;
      default: return;
    }
  };
  const assign = (v: Variable, value: Expr, c: Context): void => {
    expr(value, c);
    if (varies(value, varying) || c.depth > (declared.get(v) ?? 0)) varying.add(v);
  };
  const call = (x: Extract<Expr, { kind: 'call' }>, c: Context): void => {
    const h: HelperFunction = x.helper;
    h.params.forEach((p, i) => {
      const a = x.args[i]!;
      if (a.kind === 'array-ref') return;
      declared.set(p, c.depth);
      assign(p, a, c);
    });
    stmts(h.body, { depth: c.depth, loopVarying: false });
  };
  const stmts = (list: readonly Stmt[], c: Context): void => {
    for (const s of list) stmt(s, c);
  };
  const stmt = (s: Stmt, c: Context): void => {
    switch (s.kind) {
      case 'let':
        declared.set(s.variable, c.depth);
        assign(s.variable, s.init, c);
        return;
      case 'assign':
        assign(s.variable, s.value, c);
        return;
      case 'if': {
        expr(s.cond, c);
        const inner = varies(s.cond, varying) ? { ...c, depth: c.depth + 1, loopVarying: true } : c;
        stmts(s.then, inner);
        stmts(s.otherwise, inner);
        return;
      }
      case 'loop': {
        if (s.cond && varies(s.cond, varying)) masked.add(s);
        // A masked loop is a varying condition for what it assigns (elements leave it at different
        // iterations), its own init included: a counter declared there stays uniform inside.
        const region = masked.has(s) ? { ...c, depth: c.depth + 1 } : c;
        stmts(s.init, region);
        if (s.cond) expr(s.cond, region);
        const inner = { ...region, loopVarying: false, loop: s };
        stmts(s.body, inner);
        stmts(s.update, inner);
        return;
      }
      case 'break':
      case 'continue':
        if (c.loopVarying && c.loop) masked.add(c.loop);
        return;
      case 'return':
        if (s.value) expr(s.value, c);
        return;
      case 'call':
        call(s.call, c);
        return;
      default:
        return;
    }
  };
  for (let size = -1, loops = -1; size !== varying.size || loops !== masked.size;) {
    size = varying.size;
    loops = masked.size;
    stmts(kernel.body, { depth: 0, loopVarying: false });
  }
  return { varying, masked, varies: (e) => varies(e, varying) };
}

/** Whether a function's body has a `return` inside an `if` or a loop (not counting helpers it calls). */
function returnsNested(list: readonly Stmt[], nested = false): boolean {
  return list.some((s) =>
    s.kind === 'return' ? nested
      : s.kind === 'if' ? returnsNested(s.then, true) || returnsNested(s.otherwise, true)
        : s.kind === 'loop' && returnsNested(s.body, true));
}

/** Emits the vector body of an element-wise kernel with loops (see the file comment). */
export class LoopSimdEmitter extends SimdEmitter {
  private readonly loopLabels: LoopLabels[] = [];
  /** Per enclosing loop of the function being emitted (innermost last): whether it runs masked. */
  private readonly loopMasked: boolean[] = [];
  /**
   * The function being emitted (the kernel, or an inlined helper): the block a `return` leaves
   * once every lane has returned, the lanes active at its start (undefined: all), and the masked
   * loops of its callers (below `maskedBase`).
   */
  private fn: { exit: number; entry: number | undefined; maskedBase: number } | undefined;

  constructor(e: FunctionEmitter, ctx: ModuleContext, lanes: 4 | 2, result: number, private readonly plan: ElementLoops) {
    super(e, ctx, lanes, result);
  }

  /** SimdEmitter's, refusing a uniform float64 in 4 lanes (simdShape counts only varying values' types). */
  override splatUniform(t: DType): void {
    if (t === 'float64' && this.lanes !== 2) throw new Error('a uniform float64 value meets 4 lanes (simdShape sees its type)');
    super.splatUniform(t);
  }

  override body(list: readonly Stmt[]): void {
    const e = this.e;
    const outer = this.fn;
    let entry: number | undefined;
    if (this.activeMask()) e.set((entry = e.local(ValType.v128)));
    // A `return` in a loop or under a uniform `if` is recorded in `done` (see stmt): every
    // statement before it, which a later iteration runs again, must already leave those lanes be.
    if (returnsNested(list)) this.anyDone = true;
    e.open('block');
    this.fn = { exit: e.depth() - 1, entry, maskedBase: this.maskedLoops.length };
    const labels = this.loopLabels.splice(0);
    const masked = this.loopMasked.splice(0);
    this.stmts(list);
    this.loopLabels.push(...labels);
    this.loopMasked.push(...masked);
    e.close();
    this.fn = outer;
  }

  override expr(x: Expr): void {
    if (x.kind !== 'const' && !this.plan.varies(x)) {
      this.e.expr(x);
      this.splatUniform(x.type);
      return;
    }
    super.expr(x);
  }

  protected override stmt(s: Stmt): void {
    const e = this.e;
    switch (s.kind) {
      case 'let':
      case 'assign':
        if (this.plan.varying.has(s.variable)) super.stmt(s);
        else e.stmt(s);
        return;
      case 'if':
        if (this.plan.varies(s.cond)) {
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
      case 'loop': {
        const masked = this.plan.masked.has(s);
        this.loopMasked.push(masked);
        if (!masked) emitLoop(e, s, (list) => this.stmts(list), this.loopLabels);
        else {
          const cond = s.cond;
          const varying = cond !== undefined && this.plan.varies(cond);
          this.maskedLoop(s, varying, () => (varying ? this.expr(cond) : e.expr(cond!)));
        }
        this.loopMasked.pop();
        return;
      }
      case 'break':
      case 'continue':
        if (this.loopMasked[this.loopMasked.length - 1]) this.maskedExit(s.kind === 'break');
        else {
          const labels = this.loopLabels[this.loopLabels.length - 1]!;
          e.br(s.kind === 'break' ? labels.breakDepth : labels.continueDepth);
        }
        return;
      case 'return':
        this.return(s, this.fn!);
        return;
      default:
        super.stmt(s);
    }
  }

  /**
   * `return` (see the file comment): the base class's, and where it records lanes in `done` (a
   * `return` under a condition, or after one), those lanes also leave this function's masked loops,
   * and the function ends once no lane that entered it is left — so that no loop after it, or the
   * one it is in, runs on without a lane (a `while (true)` would never end).
   */
  private return(s: Extract<Stmt, { kind: 'return' }>, fn: NonNullable<LoopSimdEmitter['fn']>): void {
    const e = this.e;
    const loops = this.maskedLoops.slice(fn.maskedBase);
    const active = e.local(ValType.v128);
    if (loops.length) {
      if (!this.activeMask()) this.allOnes();
      e.set(active);
    }
    super.stmt(s);
    if (this.allReturned) return;
    for (const loop of loops) e.get(loop.looping).get(active).simd(SimdOp.v128_andnot).set(loop.looping);
    if (fn.entry === undefined) e.get(this.done).simd(SimdOp.i32x4_all_true);
    else e.get(fn.entry).get(this.done).simd(SimdOp.v128_andnot).simd(SimdOp.v128_any_true).op(Op.i32_eqz);
    e.br(fn.exit, true);
  }
}
