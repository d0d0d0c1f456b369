/**
 * The parallel target on a thread without `Atomics.waitAsync` (browsers that lack it): an async
 * call then polls the pool's counters on a short timer instead of sleeping on them. Here the
 * calling thread's `Atomics.waitAsync` reads as undefined (a getter counts the reads, so the test
 * knows the fallback was taken); the Node workers keep their own blocking loop. The page's worker
 * has the same fallback, tested in tests/browser/example-page.test.ts.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import os from 'node:os';
import { CallTimeoutError, guvectorize, KernelRuntimeError, type NDArray, setParallelOptions, vectorize } from '../../../src/index.js';
import { __testing, DEFAULT_THRESHOLD } from '../../../src/targets/parallel/index.js';

// Heavy enough that a call outlasts the calling thread's brief blocking wait and goes async.
const kernel = (x: number): number => {
  let s = 0;
  for (let i = 0; i < 200; i++) s += Math.sin(x + i);
  return s;
};
const onCpu = vectorize(['float64(float64)'], { target: 'cpu' })(kernel);
const onParallel = vectorize(['float64(float64)'], { target: 'parallel' })(kernel);
// Writes out of bounds in row 77,777 only: a KernelRuntimeError raised in a worker.
const writeAt = guvectorize(['void(int32, int32[:])'], '()->(n)', { target: 'parallel' })((i: number, out: Int32Array) => {
  out[i] = i;
});

describe('parallel calls without Atomics.waitAsync on the calling thread', () => {
  const original = Object.getOwnPropertyDescriptor(Atomics, 'waitAsync');
  let reads = 0;

  beforeAll(async () => {
    setParallelOptions({ workers: Math.max(2, os.availableParallelism()), threshold: 0 });
    // Workers only: the calling thread claims no chunks, so it always waits for them.
    await __testing.resetPool({ callerRuns: false });
    await __testing.readyPool();
    Object.defineProperty(Atomics, 'waitAsync', {
      configurable: true,
      get() {
        reads++;
        return undefined;
      },
    });
  }, 30_000);

  afterAll(async () => {
    if (original) Object.defineProperty(Atomics, 'waitAsync', original);
    setParallelOptions({ workers: os.availableParallelism(), threshold: DEFAULT_THRESHOLD });
    await __testing.resetPool();
  });

  it('give the cpu results, one call and several at once', async () => {
    const xs = Float64Array.from({ length: 100_000 }, (_, i) => i * 0.001);
    const expected = await onCpu(xs);
    reads = 0;
    expect(await onParallel(xs)).toEqual(expected);
    expect(reads).toBeGreaterThan(0);
    const together = await Promise.all([onParallel(xs), onParallel(xs.subarray(1)), onParallel(xs)]);
    expect(together[0]).toEqual(expected);
    expect(together[1]).toEqual(expected.subarray(1));
    expect(together[2]).toEqual(expected);
  }, 60_000);

  it("fail with the kernel's own error when it fails in a worker", async () => {
    const indices = new Int32Array(100_000).map((_, r) => r % 4);
    indices[77_777] = 1000;
    await expect(writeAt(indices, { dims: { n: 4 } })).rejects.toThrow(KernelRuntimeError);
    indices[77_777] = 1;
    const rows = (await writeAt(indices, { dims: { n: 4 } })) as NDArray;
    expect(rows.shape).toEqual([100_000, 4]);
    expect(rows.data[77_777 * 4 + 1]).toBe(1);
  }, 60_000);

  it('with a time limit, finish within it or stop at it', async () => {
    const small = Float64Array.from({ length: 100_000 }, (_, i) => i * 0.001);
    reads = 0;
    expect(await onParallel(small, { timeout: 60_000 })).toEqual(await onCpu(small));
    expect(reads).toBeGreaterThan(0);
    const xs = new Float64Array(20_000_000);
    await expect(onParallel(xs, { timeout: 50 })).rejects.toBeInstanceOf(CallTimeoutError);
    expect(await onParallel(xs.subarray(0, 10))).toEqual(await onCpu(xs.subarray(0, 10)));
  }, 60_000);
});
