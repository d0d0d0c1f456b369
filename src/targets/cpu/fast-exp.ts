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
 * e^x in float32 under `fastmath` (see the module comment): within 1 ulp of the correctly rounded
 * result, bit-identical to the Wasm engine's scalar and SIMD code.
 *
 * @param x - a float32 value (a double is rounded to float32 first)
 * @returns a float32 value (as a double)
 */
export function fastExpF32(x: number): number {
  const f = Math.fround;
  const P = FAST_EXP_P;
  const c = Math.min(Math.max(f(x), FAST_EXP_LO), FAST_EXP_HI);
  const k = Math.floor(f(f(c * FAST_EXP_LOG2E) + 0.5));
  const r = f(f(c - f(k * FAST_EXP_C1)) - f(k * FAST_EXP_C2));
  const z = f(r * r);
  let p = P[0]!;
  for (let i = 1; i < P.length; i++) p = f(f(p * r) + P[i]!);
  const y = f(f(f(p * z) + r) + 1);
  const k1 = Math.floor(k / 2);
  return f(f(y * 2 ** k1) * 2 ** (k - k1));
}
