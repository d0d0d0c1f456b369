/**
 * Kernels that several test files compile on several targets and engines, written once.
 */

/** What a kernel indexes: a typed array, or a row of one as the engines pass it. */
export type Row = { [i: number]: number; length: number };

/**
 * Seed 001's normalised Hermite recurrence, one row per x: out[0] = 1, out[1] = x,
 * out[i] = x·out[i−1] − (i−1)·out[i−2], then out[i] /= √(i!). The benches' and the example's
 * `()->(n)` kernel (examples/hermite.ts keeps its own copy, to read on its own). `c` is a double,
 * as in the seed (an int32 would overflow at 13!).
 */
export function hermiteRow(x: number, out: Row): void {
  out[0] = 1;
  out[1] = x;
  for (let i = 2; i < out.length; i++) out[i] = x * out[i - 1]! - (i - 1) * out[i - 2]!;
  let c = 1.0;
  for (let i = 2; i < out.length; i++) {
    c *= i;
    out[i] /= Math.sqrt(c);
  }
}
