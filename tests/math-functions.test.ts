/**
 * Math functions against an oracle nobody here wrote: mathjs. float64 kernels match it to a few
 * ulps (JS's own Math is not correctly rounded either); float32 kernels are the float64 result
 * rounded once, so they match within one float32 ulp.
 */
import fc from 'fast-check';
import * as mathjs from 'mathjs';
import { describe, expect, it } from 'vitest';
import { vectorize } from '../src/index.js';

const FUNCTIONS: [string, (x: number) => number, (x: number) => number, [number, number]][] = [
  ['sinh', (x) => Math.sinh(x), (x) => mathjs.sinh(x), [-20, 20]],
  ['cosh', (x) => Math.cosh(x), (x) => mathjs.cosh(x), [-20, 20]],
  ['tanh', (x) => Math.tanh(x), (x) => mathjs.tanh(x), [-20, 20]],
  ['cbrt', (x) => Math.cbrt(x), (x) => mathjs.cbrt(x) as number, [-1e6, 1e6]],
  ['expm1', (x) => Math.expm1(x), (x) => mathjs.expm1(x), [-10, 10]],
  ['log1p', (x) => Math.log1p(x), (x) => mathjs.log1p(x) as number, [0, 1e6]],
  ['log2', (x) => Math.log2(x), (x) => mathjs.log2(x) as number, [1e-6, 1e6]],
  ['log10', (x) => Math.log10(x), (x) => mathjs.log10(x) as number, [1e-6, 1e6]],
  ['asinh', (x) => Math.asinh(x), (x) => mathjs.asinh(x), [-1e3, 1e3]],
  ['atan', (x) => Math.atan(x), (x) => mathjs.atan(x), [-1e3, 1e3]],
  ['exp', (x) => Math.exp(x), (x) => mathjs.exp(x), [-50, 50]],
];

const relativeError = (a: number, b: number) => (a === b ? 0 : Math.abs(a - b) / Math.max(Math.abs(b), Number.MIN_VALUE));

describe.each(FUNCTIONS)('Math.%s', (name, kernel, oracle, [lo, hi]) => {
  const values = fc.array(fc.double({ min: lo, max: hi, noNaN: true }), { minLength: 1, maxLength: 64 });

  it('float64 matches mathjs within 4 ulps', async () => {
    const f = vectorize(['float64(float64)'])(kernel);
    await fc.assert(
      fc.asyncProperty(values, async (xs) => {
        const z = await f(Float64Array.from(xs));
        xs.forEach((x, i) => expect(relativeError(z[i], oracle(x))).toBeLessThanOrEqual(4 * Number.EPSILON));
      }),
      { numRuns: 20 },
    );
  });

  it('float32 is the double result rounded once (within 1 float32 ulp of mathjs)', async () => {
    const f = vectorize(['float32(float32)'])(kernel);
    await fc.assert(
      fc.asyncProperty(values, async (xs) => {
        const input = Float32Array.from(xs);
        const z = await f(input);
        input.forEach((x, i) => {
          const exact = oracle(x);
          const ulp = Math.abs(Math.fround(exact) - Math.fround(exact * (1 + 2 ** -23))) || 2 ** -149;
          expect(Math.abs(z[i] - exact)).toBeLessThanOrEqual(ulp);
        });
      }),
      { numRuns: 20 },
    );
  });
  void name;
});
