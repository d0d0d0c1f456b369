/**
 * The JS engine's `fastExpF32` (src/targets/cpu/fast-exp.ts) against the float32 chain it
 * implements, written plainly (every operation rounded with Math.fround, 2^k as `2 ** k`), over
 * every float32 input: the faster function must give the same bits (NaN equal to NaN).
 *
 *   npx tsx bench/fast-exp-js-reference.ts [STEP]     (STEP > 1 checks every STEP-th input)
 *
 * ~40 min of CPU on the 2-core development machine; prints the number of differences.
 */
import {
  FAST_EXP_C1, FAST_EXP_C2, FAST_EXP_HI, FAST_EXP_LO, FAST_EXP_LOG2E, FAST_EXP_P, fastExpF32,
} from '../src/targets/cpu/fast-exp.js';

/** The chain of fast-exp.ts's module comment, one rounding per float32 operation. */
function reference(x: number): number {
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

const step = Number(process.argv[2] ?? 1);
const bits = new Uint32Array(1);
const value = new Float32Array(bits.buffer);
let differences = 0;
for (let i = 0; i < 2 ** 32; i += step) {
  bits[0] = i;
  const x = value[0]!;
  const a = fastExpF32(x);
  const b = reference(x);
  if (!(Object.is(a, b) || (a !== a && b !== b)) && differences++ < 5) console.log(`input 0x${i.toString(16)}: ${a} vs ${b}`);
}
console.log(JSON.stringify({ inputs: Math.ceil(2 ** 32 / step), differences }));
