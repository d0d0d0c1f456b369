/**
 * Checks the Wasm engine's vector exp (fdlibm's exp in f64x2 lanes, src/targets/cpu/wasm/fdlibm.ts)
 * on every float32 input (all 2^32 bit patterns), through the public API on arrays in Wasm memory
 * (SIMD lanes; explain is printed): a float64 kernel on each input as a double must give
 * `Math.exp(x)` exactly, and a float32 kernel (f32x4 → two f64x2 halves → float32) exactly
 * `Math.fround(Math.exp(x))`; NaN wherever Math.exp gives NaN. Prints the mismatch counts (the
 * claim: 0 and 0) and how many inputs the vector code computes itself (2^-28 ≤ |x| ≤ 708, x ≠ 1;
 * the rest go to the scalar port). Takes a few minutes.
 *
 * The float32 kernel first tries a cheap double y ≈ e^x with a rounding test (fdlibm.ts,
 * emitExp32Lanes); a JS replica of y (the same IEEE operations) counts the lanes and 4-lane
 * vectors that test sends to the exact path (fallback32Lanes / fallback32Vectors, of those off
 * the range FAST32_LO ≤ x ≤ FAST32_HI: offRange32) and the largest |y − Math.exp(x)| in ulps of
 * y over the range (maxUlps32; the test's margin assumes < 2^19 + 3).
 *
 *   npx tsx bench/exp-exhaustive.ts
 */
import { setEngineMode } from '../src/targets/cpu/wasm/index.js';
import { EXP32_TEST } from '../src/targets/cpu/wasm/fdlibm.js';
import { sharedArray, vectorize } from '../src/index.js';

setEngineMode('wasm');
const exp64 = vectorize(['float64(float64)'])((x: number) => Math.exp(x));
const exp32 = vectorize(['float32(float32)'])((x: number) => Math.exp(x));
const CHUNK = 1 << 24;
const in32 = sharedArray(CHUNK, 'float32');
const out32 = sharedArray(CHUNK, 'float32');
const in64 = sharedArray(CHUNK);
const out64 = sharedArray(CHUNK);
const inBits = new Int32Array(in32.buffer, in32.byteOffset, CHUNK);
const explain = [exp64.explain(in64, { out: out64 }), exp32.explain(in32, { out: out32 })];
let mismatch64 = 0;
let mismatch32 = 0;
let vectorCode = 0;
let first = '';
const { lo: LO, hi: HI, p: P, margin: MARGIN, invln2: INV } = EXP32_TEST;
const yChunk = new Float64Array(CHUNK);
const yWords = new Uint32Array(yChunk.buffer);
let fallback32Lanes = 0;
let fallback32Vectors = 0;
let offRange32 = 0;
let maxUlps32 = 0;
const t0 = performance.now();
for (let base = 0; base < 2 ** 32; base += CHUNK) {
  for (let i = 0; i < CHUNK; i++) inBits[i] = (base + i) | 0;
  in64.set(in32);
  exp64.sync(in64, { out: out64 });
  exp32.sync(in32, { out: out32 });
  // The replica of emitExp32Approx and the rounding test, lane by lane.
  for (let i = 0; i < CHUNK; i++) {
    const x = in64[i]!;
    const t = x * INV;
    let k = Math.round(t);
    if (k - t === 0.5 && k % 2 !== 0) k -= 1; // nearest, ties to even (f64x2.nearest)
    const r = x - k * Math.LN2;
    let p = P[7]!;
    for (let j = 6; j >= 0; j--) p = p * r + P[j]!;
    yChunk[i] = p * 2 ** k;
  }
  for (let v = 0; v < CHUNK; v += 4) {
    let bad = 0;
    for (let i = v; i < v + 4; i++) {
      const x = in64[i]!;
      if (!(x >= LO && x <= HI)) {
        offRange32++;
        bad++;
        continue;
      }
      const y = yChunk[i]!;
      const ulp = 2 ** (((yWords[2 * i + 1]! >>> 20) & 0x7ff) - 1075);
      const d = Math.abs(y - Math.exp(x)) / ulp;
      if (d > maxUlps32) maxUlps32 = d;
      if (((yWords[2 * i]! - (2 ** 28 - MARGIN)) & 0x1fffffff) <= 2 * MARGIN) bad++;
    }
    fallback32Lanes += bad;
    if (bad) fallback32Vectors++;
  }
  for (let i = 0; i < CHUNK; i++) {
    const x = in64[i]!;
    const e = Math.exp(x);
    const a = Math.abs(x);
    if (a >= 2 ** -28 && a <= 708 && x !== 1) vectorCode++;
    if (e !== e) {
      if (out64[i] === out64[i]) mismatch64++;
      if (out32[i] === out32[i]) mismatch32++;
      continue;
    }
    if (!Object.is(out64[i], e)) {
      mismatch64++;
      first ||= `float64: exp(${x}) = ${out64[i]}, Math.exp ${e}`;
    }
    if (!Object.is(out32[i], Math.fround(e))) {
      mismatch32++;
      first ||= `float32: exp(${x}) = ${out32[i]}, Math.fround(Math.exp) ${Math.fround(e)}`;
    }
  }
}
console.log(explain.join('\n'));
console.log(JSON.stringify({
  inputs: 2 ** 32, vectorCode, mismatch64, mismatch32, first, offRange32, fallback32Lanes, fallback32Vectors,
  maxUlps32: Math.round(maxUlps32),
  seconds: +((performance.now() - t0) / 1000).toFixed(1),
}));
