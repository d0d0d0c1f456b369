/**
 * How often the Math ports' lanes leave a vector to the scalar function (lanes.ts `vectorPort`'s
 * fallback: one call per lane when any lane is outside the vector code's mask), for the inputs of
 * the corpus kernels that call exp, log, log1p and pow (bench/corpus/kernels.ts's ranges, drawn
 * uniformly). The masks are evaluated here in JS as the lane code computes them:
 * - exp (fdlibm.ts `fastLanes`): 2^-28 ≤ |x| ≤ 708 and x ≠ 1;
 * - log (log.ts `LOG_LANES.covers`): x normal, positive, finite, and the low 20 bits of its high
 *   word not 0xffffe, 0xfffff or 0;
 * - log1p (log.ts `LOG1P_LANES.covers`): −1 < x < 2^53, and 1 + x near 1 by the high word or k ≠ 0
 *   with hu′ ≠ 0;
 * - pow (pow.ts): x finite, not ±0 or ±1, |y| ≤ 2^31 by the high word, |y·log2|x|| < 1020 (the
 *   lanes' z differs from y·log2|x| by far less than the margin to 1020 here).
 * If a mask here and in the lane code drifted apart, the figures would be wrong, not the results:
 * the lanes' results are proven against V8 by bench/math-exhaustive.ts.
 *
 *   npx tsx bench/math-lane-fallbacks.ts
 */
const f = new Float64Array(1);
const b = new BigInt64Array(f.buffer);
/** The high word of x, signed (fdlibm's GET_HIGH_WORD into an int32). */
const high = (x: number) => ((f[0] = x), Number(b[0]! >> 32n));

const expCovers = (x: number) => Math.abs(x) >= 2 ** -28 && Math.abs(x) <= 708 && x !== 1;
const logCovers = (x: number) => x >= 2 ** -1022 && x < Infinity && (((high(x) & 0xfffff) + 2) & 0xfffff) > 2;
function log1pCovers(x: number): boolean {
  const hx = high(x);
  const nearZero = hx < 0x3fda827a && (hx > 0 || hx <= (0xbfd2bec4 | 0));
  const huFull = high(1 + x) >>> 0;
  const hu = huFull & 0xfffff;
  const k = (huFull >>> 20) - 1023 + (hu >= 0x6a09e ? 1 : 0);
  return x > -1 && x < 2 ** 53 && (nearZero || (k !== 0 && !(hu === 0 || hu >= 0xffffd)));
}
function powCovers(x: number, y: number): boolean {
  const ax = Math.abs(x);
  return ax < Infinity && ax !== 0 && ax !== 1 && (high(y) & 0x7fffffff) <= 0x41e00000 && Math.abs(y * Math.log2(ax)) < 1020;
}

let seed = 1234567;
const next = () => ((seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) / 2 ** 32);
const uniform = (lo: number, hi: number) => lo + (hi - lo) * next();
const N = 1 << 22;

const CASES: [string, () => number[], (...a: number[]) => boolean][] = [
  ['softplus: exp(−abs(x)), x in [−20, 20]', () => [-Math.abs(uniform(-20, 20))], expCovers],
  ['softplus: log1p(exp(−abs(x)))', () => [Math.exp(-Math.abs(uniform(-20, 20)))], log1pCovers],
  ['normal-pdf: exp(−z²/2), x in [−5, 5], mu 0.5, sigma 1.5', () => [-0.5 * ((uniform(-5, 5) - 0.5) / 1.5) ** 2], expCovers],
  ['log-returns: log(p[i] / p[i − 1]), p in [50, 150]', () => [uniform(50, 150) / uniform(50, 150)], logCovers],
  ['annuity-pv: (1 + rate) ** −periods', () => [1 + uniform(0.001, 0.1), -uniform(1, 360)], powCovers],
  ['lennard-jones: (sigma / r) ** 6, r in [0.9, 3]', () => [1 / uniform(0.9, 3), 6], powCovers],
  ['srgb-to-linear: ((c + 0.055) / 1.055) ** 2.4, float32 c in [0, 1)', () => [(Math.fround(next()) + 0.055) / 1.055, Math.fround(2.4)], powCovers],
];

console.log(`${N} inputs per case, in vectors of 2 lanes (float32: f64x2 halves alike)\n`);
console.log('| call | lanes outside the mask | vectors to the scalar function |\n| --- | ---: | ---: |');
for (const [name, draw, covers] of CASES) {
  let lanes = 0;
  let vectors = 0;
  for (let i = 0; i < N; i += 2) {
    const a = covers(...draw());
    const c = covers(...draw());
    lanes += Number(!a) + Number(!c);
    vectors += Number(!a || !c);
  }
  console.log(`| ${name} | ${lanes} | ${vectors} of ${N / 2} (${((100 * vectors) / (N / 2)).toPrecision(2)}%) |`);
}
