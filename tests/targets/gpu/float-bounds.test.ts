/**
 * The float results docs/gpu.md says may differ on the gpu, checked against exactly what it says
 * (float-ops.test.ts covers `+ - * /`, sqrt, exp, log, log2, sin, cos and pow):
 * - float64 values that are not constants are computed in f32: the gpu's result is the f32
 *   evaluation of the same expression, every double constant rounded to f32 first, bit for bit
 *   (a product followed by a sum may be fused into one rounding, WGSL §15.7.5);
 * - the other Math functions are within the bounds the page gives for lavapipe (measured there;
 *   WGSL leaves them inherited from the formulas the built-ins are made of), over the domains it
 *   names, with random inputs and special values; outside those domains only special values are
 *   promised (float-ops.test.ts, "special values follow JS exactly").
 */
import fc from 'fast-check';
import { afterAll, expect, it } from 'vitest';
import { shutdownDevice } from '../../../src/targets/gpu/runtime/device.js';
import { describeGpu } from '../../gpu-available.js';
import { runBoth } from './compare-targets.js';

const RUNS = { numRuns: 8 };
const f = Math.fround;

/** The spacing of float32 values at |x| (the larger one at a power of two), as WGSL's ULP. */
function ulp(x: number): number {
  const a = Math.abs(x);
  if (a < 2 ** -126) return 2 ** -149;
  return 2 ** (Math.floor(Math.log2(a)) - 23);
}

const SPECIALS = [NaN, Infinity, -Infinity, 0, -0, 1, -1, 0.5, 3.4028234663852886e38, 16777217, 1e-3];
const anyF32 = fc.oneof(fc.constantFrom(...SPECIALS), fc.float(), fc.float({ min: -1000, max: 1000, noNaN: true }));

/** Bitwise equality with NaN equal to NaN. */
const same = (a: number, b: number) => Object.is(a, b) || (Number.isNaN(a) && Number.isNaN(b));

describeGpu('float64 values computed in f32: the f32 evaluation, bit for bit', () => {
  afterAll(() => shutdownDevice());
  // Each kernel with its f32 model: every float64 operation rounded to f32, constants too; and the
  // model with the product and sum fused (one rounding), which WGSL allows.
  const cases: { name: string; kernel: Function; model: (a: number, b: number) => number; fused: (a: number, b: number) => number }[] = [
    {
      name: 'a double local: s = a; s = s * b; s = s - 0.1',
      kernel: (a: number, b: number) => {
        let s = 0;
        s = s + a;
        s = s * b;
        s = s - 0.1;
        return s;
      },
      model: (a, b) => f(f(f(0 + a) * b) - f(0.1)),
      fused: (a, b) => f(f(0 + a) * b - f(0.1)),
    },
    {
      name: 'a double accumulator of float32 values',
      kernel: (a: number, b: number) => {
        let s = 0;
        s += a;
        s += b;
        s += a * b; // a float32 product (exact IEEE single on both targets), added in double
        return s;
      },
      model: (a, b) => f(f(f(0 + a) + b) + f(a * b)),
      fused: (a, b) => f(f(f(0 + a) + b) + f(a * b)),
    },
    {
      name: 'an integer counter times a float32 (double on the cpu)',
      kernel: (a: number, b: number) => {
        let c = 1;
        for (let i = 1; i < 4; i++) c = c * (i + a);
        return c - b;
      },
      model: (a, b) => {
        let c = 1;
        for (let i = 1; i < 4; i++) c = f(c * f(i + a));
        return f(c - b);
      },
      fused: (a, b) => {
        let c = 1;
        for (let i = 1; i < 3; i++) c = f(c * f(i + a));
        return f(c * f(3 + a) - b);
      },
    },
  ];
  for (const { name, kernel, model, fused } of cases) {
    it(name, async () => {
      await fc.assert(
        fc.asyncProperty(fc.array(fc.tuple(anyF32, anyF32), { minLength: 1, maxLength: 200 }), async (ps) => {
          const a = Float32Array.from(ps, (p) => p[0]);
          const b = Float32Array.from(ps, (p) => p[1]);
          const { gpu } = await runBoth(kernel, 'float32(float32, float32)', [a, b]);
          const bad: string[] = [];
          gpu.forEach((g, i) => {
            const m = model(a[i]!, b[i]!);
            if (same(g as number, m) || same(g as number, fused(a[i]!, b[i]!))) return;
            if (bad.length < 5) bad.push(`(${a[i]}, ${b[i]}): gpu ${g}, f32 model ${m}`);
          });
          expect(bad).toEqual([]);
        }),
        RUNS,
      );
    }, 60_000);
  }
});

/**
 * The documented bound of each Math function on lavapipe: over `domain`, the gpu's result is
 * within `ulps` ULPs of the exact result (the cpu's double result), or — where the exact result is
 * smaller than 0.5 in magnitude, so that a small absolute error is many ULPs — within `absolute`.
 */
interface Bound {
  readonly fn: string;
  readonly kernel: Function;
  readonly exact: (x: number, y: number) => number;
  readonly x: [number, number];
  readonly y?: [number, number];
  readonly ulps: number;
  readonly absolute: number;
}

const one = (fn: (x: number) => number) => ({ kernel: new Function('x', '_y', `return Math.${fn.name}(x);`), exact: (x: number) => fn(x) });
/** docs/gpu.md's table, row for row (measured on lavapipe with about twice the margin found). */
export const MATH_BOUNDS: readonly Bound[] = [
  { fn: 'tan', ...one(Math.tan), x: [-1.5, 1.5], ulps: 8, absolute: 2 ** -21 },
  { fn: 'atan', ...one(Math.atan), x: [-1e6, 1e6], ulps: 128, absolute: 2 ** -17 },
  { fn: 'atan2', kernel: (y: number, x: number) => Math.atan2(y, x), exact: (y, x) => Math.atan2(y, x), x: [-1e3, 1e3], y: [-1e3, 1e3], ulps: 128, absolute: 2 ** -17 },
  { fn: 'asin', ...one(Math.asin), x: [-1, 1], ulps: 8192, absolute: 2 ** -13 },
  { fn: 'acos', ...one(Math.acos), x: [-1, 1], ulps: 8192, absolute: 2 ** -13 },
  { fn: 'sinh', ...one(Math.sinh), x: [-80, 80], ulps: 128, absolute: 2 ** -20 },
  { fn: 'cosh', ...one(Math.cosh), x: [-80, 80], ulps: 128, absolute: 2 ** -20 },
  { fn: 'tanh', ...one(Math.tanh), x: [-20, 20], ulps: 8, absolute: 2 ** -21 },
  { fn: 'expm1', ...one(Math.expm1), x: [-80, 80], ulps: 128, absolute: 2 ** -20 },
  { fn: 'asinh', ...one(Math.asinh), x: [-1e10, 1e10], ulps: 8, absolute: 2 ** -21 },
  { fn: 'acosh', ...one(Math.acosh), x: [1, 1e10], ulps: 8, absolute: 2 ** -21 },
  { fn: 'atanh', ...one(Math.atanh), x: [-0.9999, 0.9999], ulps: 8, absolute: 2 ** -21 },
  { fn: 'cbrt', ...one(Math.cbrt), x: [-1e30, 1e30], ulps: 2, absolute: 2 ** -23 },
  { fn: 'log1p', ...one(Math.log1p), x: [-0.9999, 1e30], ulps: 4, absolute: 2 ** -21 },
  { fn: 'log10', ...one(Math.log10), x: [1e-30, 1e30], ulps: 4, absolute: 2 ** -21 },
  { fn: 'hypot', kernel: (x: number, y: number) => Math.hypot(x, y), exact: (x, y) => Math.hypot(x, y), x: [-1e18, 1e18], y: [-1e18, 1e18], ulps: 4, absolute: 2 ** -23 },
  { fn: 'sin', ...one(Math.sin), x: [-1e4, 1e4], ulps: 4, absolute: 2 ** -21 },
  { fn: 'cos', ...one(Math.cos), x: [-1e4, 1e4], ulps: 4, absolute: 2 ** -21 },
];

describeGpu('Math functions within the bounds docs/gpu.md gives for lavapipe', () => {
  afterAll(() => shutdownDevice());
  const range = ([min, max]: [number, number]) =>
    fc.oneof(
      fc.float({ min: f(min), max: f(max), noNaN: true }),
      // magnitudes spread over many binades, not only near the ends of the range
      fc.tuple(fc.float({ min: 0, max: 40, noNaN: true }), fc.boolean()).map(([e, neg]) => {
        const m = Math.max(Math.abs(min), Math.abs(max));
        const v = f((neg ? -1 : 1) * m * 2 ** -e);
        return v < min || v > max ? f(min + (max - min) / 2) : v;
      }),
    );
  for (const b of MATH_BOUNDS) {
    it(`Math.${b.fn}: ${b.ulps} ULP, or absolute 2^${Math.log2(b.absolute)} where |result| < 0.5, over [${b.x.join(', ')}]${b.y ? ` × [${b.y.join(', ')}]` : ''}`, async () => {
      await fc.assert(
        fc.asyncProperty(fc.array(fc.tuple(range(b.x), b.y ? range(b.y) : fc.constant(0)), { minLength: 1, maxLength: 300 }), async (ps) => {
          const x = Float32Array.from(ps, (p) => p[0]);
          const y = Float32Array.from(ps, (p) => p[1]);
          const { gpu } = await runBoth(b.kernel, 'float32(float32, float32)', [x, y]);
          const bad: string[] = [];
          gpu.forEach((g, i) => {
            const e = b.exact(x[i]!, y[i]!);
            // Subnormal inputs and results are outside the bounds (a device may flush them to zero).
            if ([x[i]!, y[i]!, e].some((v) => v !== 0 && Math.abs(v) < 2 ** -126)) return;
            // Beyond the float32 range the answer is ±Infinity on both sides.
            if (!Number.isFinite(f(e))) {
              if (g !== f(e) && bad.length < 5) bad.push(`(${x[i]}, ${y[i]}): gpu ${g}, exact ${e}`);
              return;
            }
            const error = Math.abs((g as number) - e);
            const ok = error <= b.ulps * ulp(e) || (Math.abs(e) < 0.5 && error <= b.absolute);
            if (!ok && bad.length < 5) bad.push(`(${x[i]}, ${y[i]}): gpu ${g}, exact ${e}, error ${error} = ${(error / ulp(e)).toFixed(1)} ULP`);
          });
          expect(bad).toEqual([]);
        }),
        RUNS,
      );
    }, 60_000);
  }
});
