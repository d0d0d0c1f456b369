/** Outputs the front allocates for a parallel call live in shared memory, so nothing is copied back. */
import { expect, it } from 'vitest';
import { getParallelOptions, guvectorize, isShared, vectorize, type NDArray } from '../../../src/index.js';
import { isInWasmMemory } from '../../../src/targets/cpu/wasm/index.js';

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

it('runs repeated large calls with a scalar argument on the pool (the fast path keeps them splittable)', async () => {
  const { callCounts } = await import('../../call-paths.js');
  const { threshold } = getParallelOptions();
  const saxpy = vectorize(['float32(float32, float32, float32)'], { target: 'parallel' })((a: number, x: number, y: number) => a * x + y);
  const x = new Float32Array(threshold * 8).fill(1);
  const out = new Float32Array(x.length);
  callCounts(true);
  for (let i = 0; i < 3; i++) await saxpy(2, x, x, { out });
  expect(callCounts().pool).toBe(3);
  expect(out.every((v) => v === 3)).toBe(true);
});

it('keeps a result safe while any view of it lives: a subarray of a dropped result is never overwritten by later calls', async () => {
  const { setFlagsFromString } = await import('node:v8');
  const { runInNewContext } = await import('node:vm');
  setFlagsFromString('--expose-gc');
  const gc = runInNewContext('gc') as () => void;
  const { threshold } = getParallelOptions();
  const plusOne = vectorize(['float64(float64)'], { target: 'parallel' })((x: number) => x + 1);
  let result: Float64Array | undefined = (await plusOne(new Float64Array(threshold * 2).fill(1))) as Float64Array;
  // Not a block of the Wasm memory, which is freed when the array object is collected, views or not.
  expect(isInWasmMemory(result)).toBe(false);
  const head = result.subarray(0, 4);
  const whole = new Float64Array(result.buffer, result.byteOffset, 4);
  result = undefined;
  // The result object is collected; its memory must not be handed to the next calls' outputs.
  for (let i = 0; i < 12; i++) {
    gc();
    await new Promise((resolve) => setTimeout(resolve, 20));
    await plusOne(new Float64Array(threshold * 2).fill(41 + i));
    expect([...head]).toEqual([2, 2, 2, 2]);
    expect([...whole]).toEqual([2, 2, 2, 2]);
  }
});
