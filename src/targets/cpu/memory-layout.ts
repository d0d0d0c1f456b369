/**
 * What a cpu runner is specialised on, and the data it reads: the call's loop merged where every
 * operand is contiguous, each operand's innermost step, and the plain arrays posted to a runner.
 * Both cpu engines (JS runners in js/, Wasm in wasm/) and the parallel target's workers share it.
 */
import { mergeLoopDims } from '../../layout.js';
import type { CallPlan } from '../../plan.js';

/**
 * How one operand moves along the innermost loop dimension. `origin` is a unit step from element 0
 * in a one-level loop (a whole typed array): its index is the loop counter itself, which V8 runs
 * measurably faster than `offset + k`.
 */
export type InnerStep = 'scalar' | 'broadcast' | 'unit' | 'origin' | 'strided';

/** What the generated code is specialised on: equal layouts share code. */
export interface MemoryLayout {
  /** Loop dimensions after merging those that are contiguous for every operand (0, 1 or more → 2). */
  readonly rank: 0 | 1 | 2;
  readonly inner: readonly InnerStep[];
  /** Per operand, per core axis: whether its stride is 1. */
  readonly coreUnit: readonly (readonly boolean[])[];
  /**
   * Every array has fewer than 2³¹ elements, so offsets, strides and sizes are int32: the runner
   * says so (`| 0`), and V8 then indexes with integer arithmetic instead of checking doubles.
   */
  readonly int32Indices: boolean;
  /**
   * The Wasm engine runs element-wise loops that elements leave at different iterations in masked
   * SIMD lanes rather than one element at a time (element-loops.ts): a variant that calibration
   * times beside the others (engine-calibration.ts), absent on layouts of the JS engine.
   */
  readonly maskedLoops?: true;
  /**
   * The Wasm engine runs per-row kernels of 32-bit rows that keep true doubles 4 rows per vector,
   * each float64 value a pair of vectors (row-pairs.ts), rather than 2 rows per vector: a variant
   * that calibration times beside the others, absent on layouts of the JS engine.
   */
  readonly floatPairs?: true;
  /**
   * The Wasm engine runs a per-row kernel's rows one after another, its loops whose iterations
   * are independent in SIMD lanes along the row (along-rows.ts), rather than rows in lanes: a
   * variant that calibration times beside the others, absent on layouts of the JS engine.
   */
  readonly alongRows?: true;
}

/** The data a runner reads, in plain arrays (also what is posted to workers). */
export interface RunnerArgs {
  readonly data: readonly ArrayLike<unknown>[];
  readonly offset: readonly number[];
  readonly loopShape: readonly number[];
  /** Per operand, per (merged) loop dimension. */
  readonly loopStrides: readonly (readonly number[])[];
  readonly coreShape: readonly (readonly number[])[];
  readonly coreStrides: readonly (readonly number[])[];
  readonly scalars: readonly (number | bigint | boolean | undefined)[];
  /** `performance.now()` by which a runner compiled with deadline checks must stop (a call's `timeout`). */
  readonly deadline?: number;
}

export type Runner = (args: RunnerArgs, start: number, end: number) => void;

export function prepareRunnerArgs(plan: CallPlan): { args: RunnerArgs; layout: MemoryLayout } {
  const ops = plan.operands;
  const n = ops.length;
  // One-dimensional loops (every vectorize call on 1-D data) need no merging: this runs on every
  // call, so the common case avoids the general walk.
  const merged = plan.loopShape.length === 1
    ? { shape: plan.loopShape[0] === 1 ? [] : (plan.loopShape as number[]), strides: ops.map((o) => (plan.loopShape[0] === 1 ? [] : (o.loopStrides as number[]))) }
    : mergeLoopDims(plan.loopShape, ops.map((o) => o.loopStrides));
  const rank = Math.min(merged.shape.length, 2) as 0 | 1 | 2;
  const last = merged.shape.length - 1;
  const inner = new Array<InnerStep>(n);
  const coreUnit = new Array<boolean[]>(n);
  const data = new Array<ArrayLike<unknown>>(n);
  const offset = new Array<number>(n);
  const coreShape = new Array<readonly number[]>(n);
  const coreStrides = new Array<readonly number[]>(n);
  const scalars = new Array<number | bigint | boolean | undefined>(n);
  let int32Indices = true;
  for (let i = 0; i < n; i++) {
    const o = ops[i]!;
    const s = rank === 0 ? 0 : merged.strides[i]![last]!;
    inner[i] = o.scalar !== undefined ? 'scalar' : s === 0 ? 'broadcast' : s === 1 ? (rank === 1 && o.offset === 0 ? 'origin' : 'unit') : 'strided';
    const units: boolean[] = [];
    for (const c of o.coreStrides) units.push(c === 1);
    coreUnit[i] = units;
    data[i] = o.data as ArrayLike<unknown>;
    offset[i] = o.offset;
    coreShape[i] = o.coreShape;
    coreStrides[i] = o.coreStrides;
    scalars[i] = o.scalar;
    if ((o.data as ArrayLike<unknown>).length >= 2 ** 31) int32Indices = false;
  }
  const args: RunnerArgs = { data, offset, loopShape: merged.shape, loopStrides: merged.strides, coreShape, coreStrides, scalars };
  return { args, layout: { rank, inner, coreUnit, int32Indices } };
}

const STEP_CODES: Readonly<Record<InnerStep, number>> = { scalar: 0, broadcast: 1, unit: 2, strided: 3, origin: 4 };

/**
 * A key for a layout, equal for equal layouts. A number where it fits (it is looked up on every
 * call, and numbers hash faster than strings), else a string.
 */
export function layoutKey(layout: MemoryLayout): number | string {
  let code = layout.rank * 2 + (layout.int32Indices ? 1 : 0);
  for (const step of layout.inner) code = code * 5 + STEP_CODES[step];
  for (const axes of layout.coreUnit) for (const unit of axes) code = code * 2 + (unit ? 1 : 0);
  code = code * 2 + (layout.maskedLoops ? 1 : 0);
  code = code * 2 + (layout.floatPairs ? 1 : 0);
  code = code * 2 + (layout.alongRows ? 1 : 0);
  if (code < 2 ** 50) return code;
  return `${layout.rank}|${layout.int32Indices}|${layout.inner.join(',')}|${layout.coreUnit.map((c) => c.map((u) => (u ? '1' : 's')).join('')).join(',')}${layout.maskedLoops ? '|masked' : ''}${layout.floatPairs ? '|pairs' : ''}${layout.alongRows ? '|along' : ''}`;
}
