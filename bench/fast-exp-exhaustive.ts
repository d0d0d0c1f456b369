/**
 * Checks the `fastmath` float32 exp on every float32 input (all 2^32 bit patterns), as the Wasm
 * engine computes it (SIMD lanes, through the public API), against Math.fround(Math.exp(x)):
 * prints how many results are 0 and 1 ulp away and the largest distance (the claim: ≤ 1 ulp,
 * NaN exactly where Math.exp gives NaN). Takes about a minute or two.
 *
 *   npx tsx bench/fast-exp-exhaustive.ts
 */
import { setEngineMode } from '../src/targets/cpu/wasm/index.js';
import { sharedArray, vectorize } from '../src/index.js';

setEngineMode('wasm');
const exp = vectorize(['float32(float32)'], { fastmath: true })((x: number) => Math.exp(x));
const CHUNK = 1 << 24;
const input = sharedArray(CHUNK, 'float32');
const out = sharedArray(CHUNK, 'float32');
const inBits = new Int32Array(input.buffer, input.byteOffset, CHUNK);
const outBits = new Int32Array(out.buffer, out.byteOffset, CHUNK);
const ref = new Float32Array(1);
const refBits = new Int32Array(ref.buffer);
const ordinal = (i: number) => (i < 0 ? -(i & 0x7fffffff) : i);
const counts = [0, 0];
let worst = 0;
let worstX = 0;
let nanMismatch = 0;
const t0 = performance.now();
for (let base = 0; base < 2 ** 32; base += CHUNK) {
  for (let i = 0; i < CHUNK; i++) inBits[i] = (base + i) | 0;
  exp.sync(input, { out });
  for (let i = 0; i < CHUNK; i++) {
    ref[0] = Math.exp(input[i]!);
    const r = refBits[0]!;
    if (ref[0] !== ref[0]) {
      if (out[i] === out[i]) nanMismatch++;
      continue;
    }
    const d = Math.abs(ordinal(outBits[i]!) - ordinal(r));
    if (d <= 1) counts[d]!++;
    if (d > worst) {
      worst = d;
      worstX = input[i]!;
    }
  }
}
console.log(JSON.stringify({
  inputs: 2 ** 32, exact: counts[0], oneUlp: counts[1], worstUlps: worst, worstX, nanMismatch,
  seconds: +((performance.now() - t0) / 1000).toFixed(1),
}));
