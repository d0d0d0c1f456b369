/**
 * Strided views: the one place that knows how shape, strides and offset map indices to elements.
 *
 * Element (i₀ … i_{n−1}) of a view lives at `offset + Σ strides[d]·i_d` of its storage. Strides
 * count elements (not bytes), may be 0 (a broadcast axis, every index reads the same element) or
 * negative (a reversed axis). The front, every target and the device arrays describe their data
 * this way and ask this module what a view reaches, whether it is C-contiguous, and which loop
 * dimensions can run as one.
 */
import type { DType } from './dtypes.js';

/** Where the elements of an n-dimensional view live in its storage. */
export interface StridedLayout {
  readonly shape: readonly number[];
  /** Elements to step per index of each axis (0: broadcast; negative: reversed). */
  readonly strides: readonly number[];
  /** Element index of [0, 0, …]. */
  readonly offset: number;
}

/** A strided layout whose elements have a known dtype: arrays, operands, device arrays. */
export interface StridedView extends StridedLayout {
  readonly dtype: DType;
}

/** The lowest and highest element index a view touches, both inclusive. */
export interface Reach {
  readonly low: number;
  readonly high: number;
}

/**
 * The number of elements of a shape (1 for `[]`, a 0-d view).
 *
 * @example sizeOf([2, 3]) // 6
 */
export function sizeOf(shape: readonly number[]): number {
  let n = 1;
  for (let d = 0; d < shape.length; d++) n *= shape[d]!;
  return n;
}

/**
 * Whether two per-axis lists (shapes, strides) are equal, axis for axis: how the plan cache
 * compares a call's layout with the one it planned for.
 */
export function sameAxes(a: readonly number[], b: readonly number[]): boolean {
  if (a.length !== b.length) return false;
  for (let d = 0; d < a.length; d++) if (a[d] !== b[d]) return false;
  return true;
}

/**
 * The strides of a C-ordered (row-major, last axis fastest) array of this shape.
 *
 * @example cOrderStrides([2, 3, 4]) // [12, 4, 1]
 */
export function cOrderStrides(shape: readonly number[]): number[] {
  const strides = new Array<number>(shape.length);
  let step = 1;
  for (let d = shape.length - 1; d >= 0; d--) {
    strides[d] = step;
    step *= shape[d]!;
  }
  return strides;
}

/**
 * Whether a view's elements are C-ordered with no gaps: element k of the view is element
 * `offset + k` of the storage. An axis of extent 1 is never stepped over, so its stride does not
 * matter (NumPy's rule: `[3, 1]` with strides `[1, 7]` is contiguous).
 *
 * @example isCContiguous([2, 3], [3, 1]) // true
 */
export function isCContiguous(shape: readonly number[], strides: readonly number[]): boolean {
  let step = 1;
  for (let d = shape.length - 1; d >= 0; d--) {
    if (shape[d] !== 1 && strides[d] !== step) return false;
    step *= shape[d]!;
  }
  return true;
}

/**
 * Whether a view's elements are Fortran-ordered (column-major, first axis fastest) with no gaps;
 * as for `isCContiguous`, axes of extent 1 do not count.
 *
 * @example isFContiguous([2, 3], [1, 2]) // true
 */
export function isFContiguous(shape: readonly number[], strides: readonly number[]): boolean {
  let step = 1;
  for (let d = 0; d < shape.length; d++) {
    if (shape[d] !== 1 && strides[d] !== step) return false;
    step *= shape[d]!;
  }
  return true;
}

/**
 * The elements a view touches, as the lowest and highest index into its storage; undefined when
 * the view is empty (an axis of extent 0), which touches nothing.
 *
 * @param shape - extents of the axes
 * @param strides - one per axis, in elements
 * @param offset - index of element [0, …] @default 0
 * @example reachOf([2, 3], [-3, 1], 3) // { low: 0, high: 5 }
 */
export function reachOf(shape: readonly number[], strides: readonly number[], offset = 0): Reach | undefined {
  let low = offset;
  let high = offset;
  for (let d = 0; d < shape.length; d++) {
    const n = shape[d]!;
    if (n === 0) return undefined;
    const span = (n - 1) * strides[d]!;
    if (span < 0) low += span;
    else high += span;
  }
  return { low, high };
}

/**
 * Merges adjacent loop dimensions that every operand walks contiguously (NumPy's "coalescing"),
 * so that a C-contiguous 1000×1000 call runs as one flat loop of 10⁶. Dimensions of size 1 are
 * dropped (they move nothing), so a loop of one element has rank 0.
 *
 * @param shape - the loop shape
 * @param strides - per operand, its stride along each loop dimension
 * @returns the merged shape and, per operand, its strides along the merged dimensions
 * @example mergeLoopDims([4, 5], [[5, 1], [0, 0]]) // { shape: [20], strides: [[1], [0]] }
 */
export function mergeLoopDims(shape: readonly number[], strides: readonly (readonly number[])[]): { shape: number[]; strides: number[][] } {
  const outShape: number[] = [];
  const outStrides: number[][] = strides.map(() => []);
  for (let d = 0; d < shape.length; d++) {
    if (shape[d] === 1) continue;
    const last = outShape.length - 1;
    if (last >= 0 && strides.every((s, i) => outStrides[i]![last] === s[d]! * shape[d]!)) {
      outShape[last]! *= shape[d]!;
      strides.forEach((s, i) => (outStrides[i]![last] = s[d]!));
      continue;
    }
    outShape.push(shape[d]!);
    strides.forEach((s, i) => outStrides[i]!.push(s[d]!));
  }
  return { shape: outShape, strides: outStrides };
}

/**
 * One operand of a call as the loop sees it: element (i₀ … i_{L−1}; c₀ … c_{C−1}) lives at
 * `offset + Σ loopStrides[d]·i_d + Σ coreStrides[a]·c_a` — the loop dimensions are the call's
 * broadcast loop, the core dimensions the slice one loop index hands the kernel.
 */
export interface LoopOperandLayout {
  readonly offset: number;
  readonly loopStrides: readonly number[];
  readonly coreShape: readonly number[];
  readonly coreStrides: readonly number[];
}

/** What an operand reaches over a whole call, relative to its `offset`, and what one loop index reaches. */
export interface OperandReach extends Reach {
  /** Lowest and highest element of one core slice, relative to that slice's first element. */
  readonly coreLow: number;
  readonly coreHigh: number;
}

/**
 * The elements an operand reaches over a loop, relative to its offset; undefined when it reaches
 * nothing (a core dimension of size 0, or an empty loop).
 *
 * @example operandReach({ offset: 4, loopStrides: [3], coreShape: [3], coreStrides: [1] }, [2])
 * // { low: 0, high: 5, coreLow: 0, coreHigh: 2 }
 */
export function operandReach(operand: LoopOperandLayout, loopShape: readonly number[]): OperandReach | undefined {
  const core = reachOf(operand.coreShape, operand.coreStrides);
  const loop = core && reachOf(loopShape, operand.loopStrides);
  if (!core || !loop) return undefined;
  return { low: core.low + loop.low, high: core.high + loop.high, coreLow: core.low, coreHigh: core.high };
}
