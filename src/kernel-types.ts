/**
 * Types for writing kernels in TypeScript. A kernel's array parameters are core slices, not real
 * typed arrays: these say what a kernel may do with them (index, `.length`, `.shape[k]`).
 *
 * @example
 * guvectorize(['void(float32[:,:], float32[:,:], float32[:,:])'], '(m,n),(n,p)->(m,p)')(
 *   (a: Slice2, b: Slice2, c: Slice2) => { … c[i][j] = s; },
 * );
 */

/**
 * A 1-D core slice (`float32[:]`): `x[i]`, `x.length` (and `x.shape[0]`, the same). A local typed
 * array and a plain array are slices too, so a helper typed `Slice` takes them; kernel parameters
 * typed from a signature are {@link CoreSlice}s, which have `shape` for sure. Under
 * `noUncheckedIndexedAccess`, `x[i]` is `T | undefined` as for any array: write `x[i]!`.
 */
export interface Slice<T = number> {
  [index: number]: T;
  readonly length: number;
  readonly shape?: readonly [number];
}

/** A kernel's 1-D core slice parameter: a {@link Slice} whose `shape` is there. */
export interface CoreSlice<T = number> extends Slice<T> {
  readonly shape: readonly [number];
}

/**
 * A 2-D core slice (`float32[:,:]`): `a[i][j]`, `a.length` (rows), `a.shape[1]` (columns). Under
 * `noUncheckedIndexedAccess`: `a[i]![j]!`.
 */
export interface Slice2<T = number> {
  [index: number]: CoreSlice<T>;
  readonly length: number;
  readonly shape: readonly [number, number];
}
