/**
 * Types for writing kernels in TypeScript. A kernel's array parameters are core slices, not real
 * typed arrays: these say what a kernel may do with them (index, `.length`, `.shape[k]`).
 *
 * @example
 * guvectorize(['void(float32[:,:], float32[:,:], float32[:,:])'], '(m,n),(n,p)->(m,p)')(
 *   (a: Slice2, b: Slice2, c: Slice2) => { … c[i][j] = s; },
 * );
 */

/** A 1-D core slice (`float32[:]`): `x[i]`, `x.length`, `x.shape[0]`. */
export interface Slice<T = number> {
  [index: number]: T;
  readonly length: number;
  readonly shape: readonly [number];
}

/** A 2-D core slice (`float32[:,:]`): `a[i][j]`, `a.length` (rows), `a.shape[1]` (columns). */
export interface Slice2<T = number> {
  [index: number]: Slice<T>;
  readonly length: number;
  readonly shape: readonly [number, number];
}
