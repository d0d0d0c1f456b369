/**
 * `Math.exp` of a float32 under the `fastmath` option: computed in float32 (as Numba's fastmath
 * and LLVM's vectorised `expf` do), not as V8's float64 fdlibm `exp` rounded to float32. The same
 * sequence of float32 operations runs in every engine — this function in the JS engine, scalar
 * f32 and f32x4 lanes in the Wasm engine (wasm/fast-exp.ts) — so results are bit-identical across
 * engines, the cpu and parallel targets, SIMD bodies and scalar tails. No fused multiply-add is
 * used anywhere (Wasm has none outside relaxed SIMD), which keeps every step one IEEE rounding.
 *
 * Algorithm (Cephes `expf`'s reduction and polynomial):
 * 1. clamp x to [−104, 89] (NaN stays NaN): e^89 overflows float32 and e^−104 < 2^−150 rounds to
 *    0, so the clamp changes no result and keeps k below in range;
 * 2. k = floor(x·log2(e) + ½), an integer in [−150, 128];
 * 3. r = (x − k·C1) − k·C2 with C1 + C2 ≈ ln 2 (C1 = 355/512 has 9 bits, so k·C1 is exact);
 *    |r| ≤ ~0.35;
 * 4. e^r ≈ 1 + r + r²·P(r), P of degree 5 (Horner);
 * 5. scale by 2^k as 2^⌊k/2⌋ · 2^(k−⌊k/2⌋), each factor built from its exponent bits: the first
 *    product is exact (it stays a normal float), the second rounds once, so subnormal results
 *    are rounded once (not flushed) and 2^128 never has to be represented.
 *
 * Error (tests/targets/cpu/fast-exp.test.ts): within 1 ulp of float32 of the correctly rounded e^x
 * for every float32 x (checked against `Math.fround(Math.exp(x))`, exhaustively over all 2^32
 * inputs by bench/fast-exp-exhaustive.ts and over millions of inputs in the tests); special values:
 * NaN → NaN, +∞ and x > 88.72284 → +∞, −∞ and x < −103.97 → +0, ±0 → 1.
 */

/** The clamp of x: beyond it every result is +∞ or +0. */
export const FAST_EXP_LO = -104;
export const FAST_EXP_HI = 89;
export const FAST_EXP_LOG2E = Math.fround(1.44269504088896341);
export const FAST_EXP_C1 = 0.693359375;
export const FAST_EXP_C2 = Math.fround(-2.12194440e-4);
/** P(r), highest degree first. */
export const FAST_EXP_P: readonly number[] = [
  1.9875691500e-4, 1.3981999507e-3, 8.3334519073e-3, 4.1665795894e-2, 1.6666665459e-1, 5.0000001201e-1,
].map(Math.fround);

/**
 * 2^i for i in [−75, 64], at `POW2[i + 75]`: the two scale factors of step 5. V8 computes a
 * variable `2 ** i` with a call to `Math.pow` (it made this function ten times slower than
 * `Math.exp`); a table lookup gives the same doubles.
 */
const POW2_BIAS = 75;
const POW2 = Float64Array.from({ length: 140 }, (_, i) => 2 ** (i - POW2_BIAS));
const [P0, P1, P2, P3, P4, P5] = FAST_EXP_P as [number, number, number, number, number, number];

/**
 * e^x in float32 under `fastmath` (see the module comment): within 1 ulp of the correctly rounded
 * result, bit-identical to the Wasm engine's scalar and SIMD code.
 *
 * @param x - a float32 value (a double is rounded to float32 first)
 * @returns a float32 value (as a double)
 */
export function fastExpF32(x: number): number {
  const f = Math.fround;
  const c = Math.min(Math.max(f(x), FAST_EXP_LO), FAST_EXP_HI);
  const k = Math.floor(f(f(c * FAST_EXP_LOG2E) + 0.5));
  // Roundings that cannot change anything are left out (each Math.fround costs two conversions
  // in V8): k·C1 is exact (|k| ≤ 150 has 8 bits, C1 9), and so is c − k·C1 (Cody–Waite: for
  // k ≠ 0, |c| ≥ 0.34 and |c − k·C1| < 0.38, a multiple of ulp(c) ≥ 2⁻²⁵ below 2²⁴·ulp(c); for
  // k = 0 it is c), in float32 as in double. Checked over all 2³² inputs against the float32 chain.
  const r = f(c - k * FAST_EXP_C1 - f(k * FAST_EXP_C2));
  const z = f(r * r);
  const p = f(f(f(f(f(f(f(f(f(f(P0 * r) + P1) * r) + P2) * r) + P3) * r) + P4) * r) + P5);
  const y = f(f(f(p * z) + r) + 1);
  // k is an integer in [−150, 128] (NaN for a NaN x: the index is then 0 and the result NaN).
  const k1 = Math.floor(k / 2);
  // y·2^k1 is exact too: y is within [0.7, 1.5] and k1 within [−75, 64], so it stays a normal float32.
  return f(y * POW2[(k1 + POW2_BIAS) | 0]! * POW2[(k - k1 + POW2_BIAS) | 0]!);
}
