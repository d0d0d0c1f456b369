/** Outputs the front allocates for a parallel call live in shared memory, so nothing is copied back. */
import { expect, it } from 'vitest';
import { getParallelOptions, guvectorize, isShared, vectorize, type NDArray } from '../../../src/index.js';

it('allocates large outputs in shared memory, small ones in ordinary memory', async () => {
  const { threshold } = getParallelOptions();
  const twice = vectorize(['float64(float64)'], { target: 'parallel' })((x: number) => 2 * x);
  const big = await twice(new Float64Array(threshold * 2).fill(1));
  expect(isShared(big)).toBe(true);
  expect(big.every((v: number) => v === 2)).toBe(true);
  expect(isShared(twice.sync(new Float64Array(threshold * 2).fill(1)))).toBe(true);
  expect(isShared(await twice(new Float64Array(4)))).toBe(false);

  const ramp = guvectorize(['void(float64, float64[:])'], '()->(n)', { target: 'parallel' })((x: number, out: Float64Array) => {
    for (let i = 0; i < out.length; i++) out[i] = x + i;
  });
  const table = (await ramp(new Float64Array(threshold).fill(1), { dims: { n: 4 } })) as NDArray;
  expect(isShared(table)).toBe(true);
  expect([...table.data.subarray(0, 4)]).toEqual([1, 2, 3, 4]);
});
