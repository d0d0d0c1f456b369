/**
 * Cases from NumPy's numpy/_core/tests/test_umath.py (TestDivision, TestRemainder, the special
 * values of floor/ceil/trunc/fmod/maximum/sqrt), as kernels a user writes in the kernel language.
 * Expected values are NumPy 1.24's on the same grids. Where the kernel language is JS and NumPy is
 * not, the test says so: `Math.max(-0, 0)` is +0 in JS where `np.maximum(-0., 0.)` is −0 (it keeps
 * the second operand of equal values), so signed zeros are left out of `maximum`.
 */
import { describe, expect, it } from 'vitest';
import { vectorize } from '../../src/index.js';
import { FLOAT64_TARGETS, TARGETS } from '../targets.js';

const A = [-7, -1, 0, 1, 7, -2147483648, 2147483647];
const B = [-2, -1, 1, 2, 0];
const grid = () => {
  const a: number[] = [];
  const b: number[] = [];
  for (const x of A) for (const y of B) a.push(x), b.push(y);
  return [Int32Array.from(a), Int32Array.from(b)] as const;
};
const SPECIAL = [NaN, Infinity, -Infinity, -0, 0, -1.5, 1.5, 2.5, -2.5];

describe.each(TARGETS)('NumPy test_umath.py cases on %s', { timeout: 60_000 }, (target) => {
  it('TestRemainder: np.remainder (sign of the divisor) and np.fmod (sign of the dividend) on int32, x % 0 = 0', async () => {
    const remainder = vectorize(['int32(int32, int32)'], { target })((a: number, b: number) => ((a % b) + b) % b);
    const fmod = vectorize(['int32(int32, int32)'], { target })((a: number, b: number) => a % b);
    const [a, b] = grid();
    // np.remainder(A, B) over np.meshgrid(A, B, indexing='ij')
    expect([...((await remainder(a, b)) as Int32Array)]).toEqual([-1, 0, 0, 1, 0, -1, 0, 0, 1, 0, 0, 0, 0, 0, 0, -1, 0, 0, 1, 0, -1, 0, 0, 1, 0, 0, 0, 0, 0, 0, -1, 0, 0, 1, 0]);
    expect([...((await fmod(a, b)) as Int32Array)]).toEqual([-1, 0, 0, -1, 0, -1, 0, 0, -1, 0, 0, 0, 0, 0, 0, 1, 0, 0, 1, 0, 1, 0, 0, 1, 0, 0, 0, 0, 0, 0, 1, 0, 0, 1, 0]);
  });

  it('floor, ceil, trunc and fmod of special values keep NaN, infinities and the sign of zero', async () => {
    const x = Float32Array.from(SPECIAL);
    const run = async (k: (v: number) => number) => [...((await vectorize(['float32(float32)'], { target })(k)(x)) as Float32Array)];
    expect(await run((v) => Math.floor(v))).toEqual([NaN, Infinity, -Infinity, -0, 0, -2, 1, 2, -3]);
    expect(await run((v) => Math.ceil(v))).toEqual([NaN, Infinity, -Infinity, -0, 0, -1, 2, 3, -2]);
    expect(await run((v) => Math.trunc(v))).toEqual([NaN, Infinity, -Infinity, -0, 0, -1, 1, 2, -2]);
    // np.fmod(x, 2.)
    expect(await run((v) => v % 2)).toEqual([NaN, NaN, NaN, -0, 0, -1.5, 1.5, 0.5, -0.5]);
    // np.maximum(x, 1.): NaN propagates
    expect(await run((v) => (v > 1 || v !== v ? v : 1))).toEqual([NaN, Infinity, 1, 1, 1, 1, 1.5, 2.5, 1]);
  });
});

describe.each(FLOAT64_TARGETS)('NumPy test_umath.py cases with doubles on %s', { timeout: 60_000 }, (target) => {
  it('TestDivision: np.floor_divide on int32, x // 0 = 0 and -2**31 // -1 wrapping', async () => {
    const floorDivide = vectorize(['int32(int32, int32)'], { target })((a: number, b: number) => Math.floor(a / b));
    const [a, b] = grid();
    expect([...((await floorDivide(a, b)) as Int32Array)]).toEqual([
      3, 7, -7, -4, 0, 0, 1, -1, -1, 0, 0, 0, 0, 0, 0, -1, -1, 1, 0, 0, -4, -7, 7, 3, 0,
      1073741824, -2147483648, -2147483648, -1073741824, 0, -1073741824, -2147483647, 2147483647, 1073741823, 0,
    ]);
  });

  it('np.sqrt of special values (float64)', async () => {
    const sqrt = vectorize(['float64(float64)'], { target })((v: number) => Math.sqrt(v));
    expect([...((await sqrt(Float64Array.from(SPECIAL))) as Float64Array)]).toEqual([NaN, Infinity, NaN, -0, 0, NaN, 1.224744871391589, 1.5811388300841898, NaN]);
  });
});
