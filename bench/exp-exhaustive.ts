/**
 * Checks the Wasm engine's vector exp (fdlibm's exp in f64x2 lanes, src/engines/wasm/fdlibm.ts)
 * on every float32 input (all 2^32 bit patterns), through the public API on arrays in Wasm memory
 * (SIMD lanes; explain is printed): a float64 kernel on each input as a double must give
 * `Math.exp(x)` exactly, and a float32 kernel (f32x4 → two f64x2 halves → float32) exactly
 * `Math.fround(Math.exp(x))`; NaN wherever Math.exp gives NaN. Prints the mismatch counts (the
 * claim: 0 and 0) and how many inputs the vector code computes itself (2^-28 ≤ |x| ≤ 708, x ≠ 1;
 * the rest go to the scalar port). Takes a few minutes.
 *
 *   npx tsx bench/exp-exhaustive.ts
 */
import { setEngineMode } from '../src/engines/wasm/index.js';
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
const t0 = performance.now();
for (let base = 0; base < 2 ** 32; base += CHUNK) {
  for (let i = 0; i < CHUNK; i++) inBits[i] = (base + i) | 0;
  in64.set(in32);
  exp64.sync(in64, { out: out64 });
  exp32.sync(in32, { out: out32 });
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
  inputs: 2 ** 32, vectorCode, mismatch64, mismatch32, first,
  seconds: +((performance.now() - t0) / 1000).toFixed(1),
}));
