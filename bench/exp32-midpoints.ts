/**
 * Finds the float32 inputs for tests/targets/cpu/wasm/fdlibm.test.ts's midpoint test: over every
 * float32 x with FAST32_LO ≤ x ≤ FAST32_HI (the float32 exp's rounding-test range, fdlibm.ts),
 * those whose Math.exp(x) lies within 8 double ulps of a float32 rounding midpoint, and those
 * whose approximation y (a JS replica of emitExp32Approx) lies within 2 ulps of the test's edge,
 * 0x10000000 ± MARGIN in its low 29 bits. Prints them as float32 bit patterns (~1 min).
 *
 *   npx tsx bench/exp32-midpoints.ts
 */
import { EXP32_TEST } from '../src/targets/cpu/wasm/fdlibm.js';

const { lo: LO, hi: HI, p: P, margin: MARGIN, invln2: INV } = EXP32_TEST;
const f32 = new Float32Array(1);
const u32 = new Uint32Array(f32.buffer);
const f64 = new Float64Array(1);
const w = new Uint32Array(f64.buffer);
const nearMidpoint: string[] = [];
const nearEdge: string[] = [];
f32[0] = HI;
const hiBits = u32[0]!;
f32[0] = LO;
const loBits = u32[0]!;
for (const [from, to] of [[0, hiBits], [0x80000000, loBits]] as const) {
  for (let b = from; b <= to; b++) {
    u32[0] = b;
    const x = f32[0]!;
    f64[0] = Math.exp(x);
    if (Math.abs((w[0]! & 0x1fffffff) - 2 ** 28) <= 8) nearMidpoint.push('0x' + b.toString(16));
    const t = x * INV;
    let k = Math.round(t);
    if (k - t === 0.5 && k % 2 !== 0) k -= 1;
    const r = x - k * Math.LN2;
    let p = P[7]!;
    for (let j = 6; j >= 0; j--) p = p * r + P[j]!;
    f64[0] = p * 2 ** k;
    const d = Math.abs((w[0]! & 0x1fffffff) - 2 ** 28);
    if (Math.abs(d - MARGIN) <= 2) nearEdge.push('0x' + b.toString(16));
  }
}
console.log(JSON.stringify({ nearMidpoint, nearEdge }));
