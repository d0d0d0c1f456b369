/**
 * The types of the ufunc methods (methods.ts): their options and signatures.
 */
import type { UfuncResult } from '../callable.js';
import type { DType } from '../dtypes.js';

/** Options of `reduce`. */
export interface ReduceOptions {
  /** The axis or axes to fold; `null` folds every element. @default 0 */
  readonly axis?: number | readonly number[] | null;
  /** Keep the folded axes in the result, with size 1. @default false */
  readonly keepdims?: boolean;
  /** The value the fold starts from (and the result of an empty fold). @default none: the fold starts from the first element */
  readonly initial?: number | bigint | boolean;
  /** The older name of `initial`. */
  readonly identity?: number | bigint | boolean;
  /** A boolean mask broadcast to `x`'s shape: only elements where it is true are folded (needs `initial` or the ufunc's `identity`). */
  readonly where?: unknown;
  /** Where to write the result (its shape is the result's, with `keepdims` the kept axes too). */
  readonly out?: unknown;
  /** The dtype the fold is done in (NumPy's `dtype`): host arrays are converted to it first (unsafe casting, as NumPy's reductions); a DeviceArray must have it. @default x's dtype */
  readonly dtype?: DType | string;
}

/** Options of `accumulate` and `reduceat`. */
export interface AxisOptions {
  /** The axis to run along. @default 0 */
  readonly axis?: number;
  /** Where to write the result. */
  readonly out?: unknown;
  /** The dtype the fold is done in, as `reduce`'s. */
  readonly dtype?: DType | string;
}

export interface UfuncMethods {
  /** Folds `x` along axes: `f(…f(f(x₀, x₁), x₂)…)`. @example await add.reduce(xs) // sum */
  reduce(x: unknown, options?: ReduceOptions): Promise<UfuncResult>;
  /** The running fold, same shape as `x`. @example await add.accumulate(xs) // prefix sums */
  accumulate(x: unknown, options?: AxisOptions): Promise<UfuncResult>;
  /** `f(a[i…], b[j…])` for every pair: shape `[...a.shape, ...b.shape]`. */
  outer(a: unknown, b: unknown, options?: { readonly out?: unknown }): Promise<UfuncResult>;
  /**
   * Folds the slices `x[indices[i]:indices[i+1]]` along an axis (`x[indices[i]]` where the next index
   * is not larger; the last slice runs to the end), as NumPy's `reduceat`.
   * @example await add.reduceat(Float64Array.of(1, 2, 3, 4), Int32Array.of(0, 2)) // [3, 7]
   */
  reduceat(x: unknown, indices: ArrayLike<number>, options?: AxisOptions): Promise<UfuncResult>;
  /**
   * In place and unbuffered: `a[indices[k]] = f(a[indices[k]], b[k])` for k in order, so a repeated
   * index is applied each time (NumPy's `ufunc.at`). For an n-D `a`, `indices` is a tuple of n index
   * lists (a number or a one-element list stands for every k), as `np.add.at(a, (rows, cols), b)`;
   * `b` a scalar or a 1-D array of one value per index.
   * @example await add.at(counts, Int32Array.of(1, 1, 3), 1) // counts[1] += 2, counts[3] += 1
   * @example await add.at(image, [rows, cols], 1) // image[rows[k], cols[k]] += 1
   */
  at(a: unknown, indices: ArrayLike<number> | readonly (ArrayLike<number> | number)[], b?: unknown): Promise<void>;
}
