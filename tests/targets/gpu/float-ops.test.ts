/**
 * float32 kernels on the gpu against the cpu:
 * - exactly equal for `+ - *`, negation, conversions, `%` (exact fmod), and the functions whose
 *   JS results are exact (abs, floor, ceil, trunc, round, sign, min, max, fround), including NaN,
 *   ±Infinity, −0 and subnormals. WGSL lets a device flush subnormal inputs and results to zero
 *   and ignore the sign of a zero that results (§15.7.2): lavapipe keeps subnormals, NVIDIA's
 *   Vulkan driver flushes them. So a result also passes when, flushed, it is the cpu's result for
 *   the flushed inputs, flushed (docs/gpu.md);
 * - within the accuracy WGSL guarantees elsewhere — WGSL §15.7.4 "Floating Point Accuracy"
 *   (table "Accuracy of concrete floating point expressions"), f32 column:
 *     x / y             2.5 ULP for |y| in [2^-126, 2^126]
 *     sqrt(x)           inherited from 1.0 / inverseSqrt(x): inverseSqrt is 2 ULP, then a 2.5 ULP
 *                       division → 4.5 ULP
 *     exp(x), exp2(x)   3 + 2·|x| ULP
 *     log(x), log2(x)   3 ULP outside [0.5, 2.0]; absolute error at most 2^-21 inside
 *     sin(x), cos(x)    absolute error at most 2^-11 for x in [-π, π]
 *     pow(x, y)         inherited from exp2(y * log2(x))
 *   measured against the exact result (computed in double); the cpu's own result is correctly
 *   rounded (within 0.5 ULP) from the same exact result.
 * Special values of the functions with JS-specific rules (Math.pow, atan2, log of 0 and of
 * negatives, …) are compared exactly.
 */
import fc from 'fast-check';
import { afterAll, expect, it } from 'vitest';
import { shutdownDevice } from '../../../src/targets/gpu/runtime/device.js';
import { describeGpu } from '../../gpu-available.js';
import { differences, runBoth } from './compare-targets.js';

const RUNS = { numRuns: 10 };
const SPECIALS = [NaN, Infinity, -Infinity, 0, -0, 1, -1, 0.5, -0.5, 1.5, -2.5, 2 ** -149, -(2 ** -149), 1e-40, 2 ** -126, 3.4028234663852886e38, -3.4028234663852886e38, 16777217, 0.49999997];
const anyF32 = fc.oneof(fc.constantFrom(...SPECIALS), fc.float());

/** The spacing of float32 values at |x| (the larger one at a power of two), as WGSL's ULP. */
function ulp(x: number): number {
  const a = Math.abs(x);
  if (a < 2 ** -126) return 2 ** -149;
  return 2 ** (Math.floor(Math.log2(a)) - 23);
}

/** Runs `kernel` on both targets over float32 pairs; returns inputs and results. */
async function pairs(kernel: Function, xs: number[], ys: number[]) {
  const a = Float32Array.from(xs);
  const b = Float32Array.from(ys);
  const { cpu, gpu } = await runBoth(kernel, 'float32(float32, float32)', [a, b]);
  return { a, b, cpu: cpu as Float32Array, gpu: gpu as Float32Array };
}

const MIN_NORMAL = 2 ** -126;
/** A subnormal as a device that flushes sees it: a zero of its sign. */
const flush = (v: number) => (v !== 0 && Math.abs(v) < MIN_NORMAL ? (v < 0 ? -0 : 0) : v);

/**
 * Property: over random pairs from the arbitraries, the gpu equals the cpu bit for bit (NaNs as
 * NaN) — or, where subnormals are involved, equals the cpu's result for the flushed inputs,
 * flushed (any sign of zero).
 */
async function exact(kernel: Function, x: fc.Arbitrary<number> = anyF32, y: fc.Arbitrary<number> = anyF32) {
  await fc.assert(
    fc.asyncProperty(fc.array(fc.tuple(x, y), { minLength: 1, maxLength: 300 }), async (ps) => {
      const r = await pairs(kernel, ps.map((p) => p[0]), ps.map((p) => p[1]));
      const flushed = await pairs(kernel, ps.map((p) => flush(Math.fround(p[0]))), ps.map((p) => flush(Math.fround(p[1]))));
      const bad: string[] = [];
      r.gpu.forEach((g, i) => {
        if (Object.is(g, r.cpu[i])) return;
        // Flushed comparisons may pick an input that is itself passed through unflushed.
        const f = flush(flushed.cpu[i]!);
        const h = flush(g);
        if (Object.is(h, f) || (h === 0 && f === 0)) return;
        if (bad.length < 5) bad.push(`(${r.a[i]}, ${r.b[i]}): cpu ${r.cpu[i]}, gpu ${g}, cpu on flushed inputs ${flushed.cpu[i]}`);
      });
      expect(bad).toEqual([]);
    }),
    RUNS,
  );
}

/**
 * Property: the gpu result is within `bound(x, y, exact)` (an absolute error) of the exact result,
 * computed in double by `reference`.
 */
async function within(
  kernel: Function,
  reference: (x: number, y: number) => number,
  bound: (x: number, y: number, exact: number) => number,
  x: fc.Arbitrary<number>,
  y: fc.Arbitrary<number> = fc.constant(0),
) {
  await fc.assert(
    fc.asyncProperty(fc.array(fc.tuple(x, y), { minLength: 1, maxLength: 300 }), async (ps) => {
      const r = await pairs(kernel, ps.map((p) => p[0]), ps.map((p) => p[1]));
      const bad: string[] = [];
      r.gpu.forEach((g, i) => {
        const exactValue = reference(r.a[i]!, r.b[i]!);
        const limit = bound(r.a[i]!, r.b[i]!, exactValue);
        // Subnormal inputs and results are outside the bounds (a device may flush them).
        if ([r.a[i]!, r.b[i]!, exactValue].some((v) => v !== 0 && Math.abs(v) < MIN_NORMAL)) return;
        // Beyond the float32 range the answer is ±Infinity on both sides.
        const overflows = !Number.isFinite(Math.fround(exactValue));
        const ok = overflows ? g === Math.fround(exactValue) : Math.abs(g - exactValue) <= limit;
        if (!ok && bad.length < 5) {
          bad.push(`(${r.a[i]}, ${r.b[i]}): gpu ${g}, exact ${exactValue}, error ${Math.abs(g - exactValue)} > ${limit}`);
        }
      });
      expect(bad).toEqual([]);
    }),
    RUNS,
  );
}

const range = (min: number, max: number) => fc.float({ min: Math.fround(min), max: Math.fround(max), noNaN: true });

describeGpu('float32: exact where JS and WGSL are exact', () => {
  afterAll(() => shutdownDevice());
  it('a + b', () => exact((a: number, b: number) => a + b), 60_000);
  it('a - b', () => exact((a: number, b: number) => a - b), 60_000);
  it('a * b', () => exact((a: number, b: number) => a * b), 60_000);
  it('-a, and comparisons (NaN compares false)', () => exact((a: number, b: number) => (a < b ? -a : a >= b ? b : NaN)), 60_000);
  it('a % b is IEEE fmod, exactly (sign of a; NaN for b = 0 or a = ±Infinity)', () => exact((a: number, b: number) => a % b), 60_000);
  it('abs, floor, ceil, trunc', () => exact((a: number, b: number) => Math.abs(a) + (b > 0 ? Math.floor(a) : b < 0 ? Math.ceil(a) : Math.trunc(a))), 60_000);
  it('Math.round rounds half toward +Infinity and keeps −0', () => exact((a: number, _b: number) => Math.round(a)), 60_000);
  it('Math.min/max propagate NaN and order −0 < +0; Math.sign keeps ±0 and NaN', () =>
    exact((a: number, b: number) => (a > 1 ? Math.min(a, b) : a < -1 ? Math.max(a, b) : Math.sign(b))), 60_000);
});

describeGpu('float32: within WGSL accuracy bounds', () => {
  afterAll(() => shutdownDevice());
  it('a / b: 2.5 ULP for |b| in [2^-126, 2^126]', () =>
    within(
      (a: number, b: number) => a / b,
      (a, b) => a / b,
      (_a, _b, e) => 2.5 * ulp(e),
      range(-1e30, 1e30),
      fc.oneof(range(2 ** -126, 2 ** 126), range(-(2 ** 126), -(2 ** -126))),
    ), 60_000);
  it('Math.sqrt: inherited from 1 / inverseSqrt(x), 4.5 ULP', () =>
    within((a: number, _b: number) => Math.sqrt(a), (a) => Math.sqrt(a), (_a, _b, e) => 4.5 * ulp(e), range(0, 3e38)), 60_000);
  it('Math.exp: 3 + 2|x| ULP', () =>
    within((a: number, _b: number) => Math.exp(a), (a) => Math.exp(a), (a, _b, e) => (3 + 2 * Math.abs(a)) * ulp(e), range(-80, 80)), 60_000);
  it('Math.log and Math.log2: 3 ULP outside [0.5, 2], absolute 2^-21 inside', async () => {
    const bound = (a: number, _b: number, e: number) => (a >= 0.5 && a <= 2 ? 2 ** -21 : 3 * ulp(e));
    await within((a: number, _b: number) => Math.log(a), (a) => Math.log(a), bound, fc.oneof(range(1e-30, 1e30), range(0.5, 2)));
    await within((a: number, _b: number) => Math.log2(a), (a) => Math.log2(a), bound, fc.oneof(range(1e-30, 1e30), range(0.5, 2)));
  }, 60_000);
  it('Math.sin and Math.cos: absolute 2^-11 in [-π, π]', async () => {
    await within((a: number, _b: number) => Math.sin(a), (a) => Math.sin(a), () => 2 ** -11, range(-Math.PI, Math.PI));
    await within((a: number, _b: number) => Math.cos(a), (a) => Math.cos(a), () => 2 ** -11, range(-Math.PI, Math.PI));
  }, 60_000);
  it('Math.pow (x ** y): inherited from exp2(y * log2(x))', () =>
    within(
      (a: number, b: number) => a ** b,
      (a, b) => a ** b,
      (a, b, e) => {
        // log2(x) is off by at most eL; y·log2(x) then rounds (1 ULP: WGSL's "correctly rounded"
        // allows either neighbour); exp2 adds 3 + 2|t| ULP, and an error δ in its argument
        // scales the result by 2^δ ≈ 1 + δ·ln 2.
        const l = Math.log2(a);
        const eL = a >= 0.5 && a <= 2 ? 2 ** -21 : 3 * ulp(l);
        const t = b * l;
        const argumentError = Math.abs(b) * eL + ulp(t);
        return Math.abs(e) * Math.LN2 * argumentError * 1.01 + (3 + 2 * Math.abs(t)) * ulp(e);
      },
      range(0.1, 10),
      range(-8, 8),
    ), 60_000);
});

describeGpu('special values follow JS exactly', () => {
  afterAll(() => shutdownDevice());
  const xs = [NaN, Infinity, -Infinity, 0, -0, 1, -1, 2, -2, 0.5, -0.5, 3, -3];
  const grid = xs.flatMap((x) => xs.map((y) => [x, y] as const));
  // Each kernel returns the function's value where JS gives a special result (NaN, ±Infinity,
  // ±0, or a value fixed by JS's rules such as atan2(0, -1) = π) and 1 elsewhere: the ordinary
  // values are the accuracy tests' business.
  const cases: [string, Function][] = [
    ['Math.pow / **', (a: number, b: number) => {
      const r = a ** b;
      return isFinite(r) && r !== 0 && isFinite(a) && isFinite(b) && a !== 0 ? 1 : r;
    }],
    ['Math.atan2', (a: number, b: number) => (isFinite(a) && isFinite(b) && a !== 0 && b !== 0 ? 1 : Math.atan2(a, b))],
    ['Math.hypot', (a: number, b: number) => (isFinite(a) && isFinite(b) && a !== 0 && b !== 0 ? 1 : Math.hypot(a, b))],
    ['Math.log, log2, log10, log1p at 0, negatives, ±Infinity', (a: number, b: number) =>
      a > 0 && isFinite(a) ? 1 : b > 0 ? Math.log(a) : b < 0 ? Math.log2(a) : b === 0 ? Math.log10(a) : Math.log1p(a - 1)],
    ['Math.sqrt, Math.cbrt of negatives, ±0, ±Infinity', (a: number, b: number) => (a > 0 && isFinite(a) ? 1 : b > 0 ? Math.sqrt(a) : Math.cbrt(a))],
    ['Math.asin, acos, acosh, atanh outside their domains', (a: number, b: number) => {
      const r = b > 0 ? Math.asin(a * 3) : b < 0 ? Math.acos(a * 3) : isNaN(b) ? Math.acosh(a * 0.25) : Math.atanh(a);
      return isFinite(r) && r !== 0 ? 1 : r;
    }],
    ['Math.exp, expm1, sinh, cosh, tanh, asinh at ±0 and ±Infinity', (a: number, b: number) =>
      isFinite(a) && a !== 0 ? 1 : b > 0 ? Math.exp(a) : b < 0 ? Math.expm1(a) : b === 0 ? Math.sinh(a) : isNaN(b) ? Math.tanh(a) : Math.asinh(a) + Math.cosh(a)],
    ['a / b with b = ±0 or ±Infinity', (a: number, b: number) => (b === 0 || !isFinite(b) ? a / b : 1)],
    ['isNaN and isFinite', (a: number, b: number) => (isNaN(a) ? 1 : 0) + (isFinite(b) ? 2 : 0) + (a !== a ? 4 : 0)],
  ];
  for (const [name, kernel] of cases) {
    it(name, async () => {
      const r = await pairs(kernel, grid.map((p) => p[0]), grid.map((p) => p[1]));
      expect(differences(r.cpu, r.gpu, [r.a, r.b])).toEqual([]);
    });
  }
});
