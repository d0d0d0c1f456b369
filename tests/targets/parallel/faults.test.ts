/**
 * Faults on the parallel target: a kernel that throws in a worker fails the call with the kernel's
 * own error (class, message, kernel location); a worker that exits or runs out of memory fails the
 * calls in flight with a `WorkerError` and is replaced; concurrent calls are all answered; nothing
 * hangs (every test has a timeout). Sync and async calls are checked alike: a sync call cannot
 * receive events while it blocks, so it learns of a death another way.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { guvectorize, KernelRuntimeError, sharedArray, setParallelOptions, type Ufunc, vectorize, WorkerError } from '../../../src/index.js';
import { __testing, DEFAULT_THRESHOLD } from '../../../src/targets/parallel/index.js';
import { outcomeOf, sameBits } from './arrays.js';

const TIMEOUT = 30_000;

/** Writes `out[i] = i`: out of bounds for every row whose `i` is not in 0…3. */
const writeAt = (target: 'cpu' | 'parallel') =>
  guvectorize(['void(int32, int32[:])'], '()->(n)', { target })((i: number, out: Int32Array) => {
    out[i] = i;
  });

const double = (target: 'cpu' | 'parallel') => vectorize(['float64(float64)'], { target })((x: number) => 2 * x);

function rowsWithBadIndexAt(rows: number, bad: readonly number[]): Int32Array {
  const indices = new Int32Array(rows).map((_, r) => r % 4);
  for (const r of bad) indices[r] = 100 + r;
  return indices;
}

const ramp = (n: number) => Float64Array.from({ length: n }, (_, i) => i * 0.5 - 7);

describe.each([
  { callerRuns: true, label: 'calling thread claiming chunks' },
  { callerRuns: false, label: 'only workers running chunks' },
])('a kernel that throws, $label', ({ callerRuns }) => {
  beforeAll(async () => {
    setParallelOptions({ threshold: 0 });
    await __testing.resetPool({ callerRuns, minChunk: 1 });
    await __testing.readyPool();
  });
  afterAll(async () => {
    setParallelOptions({ threshold: DEFAULT_THRESHOLD });
    await __testing.resetPool();
  });

  // The first bad row in loop order is what the cpu target reports; the parallel target must report
  // that one whichever thread reaches which chunk first.
  it.each([
    { bad: [0], where: 'in the first row' },
    { bad: [5000, 9999], where: 'in the middle and at the end' },
    { bad: [9999], where: 'in the last row' },
    { bad: [...Array(10_000).keys()].filter((r) => r % 3 === 1), where: 'in every third row' },
  ])('fails with the cpu target’s error when a row $where is out of bounds', async ({ bad }) => {
    const indices = rowsWithBadIndexAt(10_000, bad);
    const expected = await outcomeOf(() => writeAt('cpu').sync(indices, { dims: { n: 4 } }));
    expect(expected).toMatchObject({ ok: false, name: 'KernelRuntimeError' });
    const parallel = writeAt('parallel');
    for (let attempt = 0; attempt < 5; attempt++) {
      expect(await outcomeOf(() => parallel(indices, { dims: { n: 4 } }))).toEqual(expected);
      expect(await outcomeOf(() => parallel.sync(indices, { dims: { n: 4 } }))).toEqual(expected);
    }
    const error = await parallel(indices, { dims: { n: 4 } }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(KernelRuntimeError);
    expect((error as Error).message).toMatch(/out of bounds for `out` at tests\/targets\/parallel\/faults\.test\.ts:18:5 \(/);
  }, TIMEOUT);

  it('runs the next call normally after a kernel error', async () => {
    const parallel = writeAt('parallel');
    await expect(parallel(rowsWithBadIndexAt(1000, [10]), { dims: { n: 4 } })).rejects.toThrow(KernelRuntimeError);
    const good = rowsWithBadIndexAt(1000, []);
    expect(sameBits(await parallel(good, { dims: { n: 4 } }), writeAt('cpu').sync(good, { dims: { n: 4 } }))).toBe(true);
  }, TIMEOUT);
});

describe('a worker that dies', () => {
  beforeAll(() => setParallelOptions({ threshold: 0 }));
  afterEach(async () => __testing.resetPool());
  afterAll(() => setParallelOptions({ threshold: DEFAULT_THRESHOLD }));

  /** Readies a pool (workers only: a death must hit a call's chunk) and tells worker 0 to die in the next call. */
  async function poolWithDoomedWorker(death: 'crash' | 'exhaust-memory'): Promise<void> {
    await __testing.resetPool({
      callerRuns: false,
      minChunk: 1,
      ...(death === 'exhaust-memory' ? { resourceLimits: { maxOldGenerationSizeMb: 24, maxYoungGenerationSizeMb: 4 } } : {}),
    });
    const pool = await __testing.readyPool();
    expect(pool.size).toBeGreaterThanOrEqual(1);
    __testing.postToWorker(0, { type: death });
  }

  describe.each(['crash', 'exhaust-memory'] as const)('by %s', (death) => {
    it.each(['async', 'sync'] as const)('fails the %s call in flight with a WorkerError, and the pool recovers', async (mode) => {
      await poolWithDoomedWorker(death);
      const parallel = double('parallel');
      const x = ramp(50_000);
      const outcome = await outcomeOf(() => (mode === 'sync' ? parallel.sync(x) : parallel(x)));
      expect(outcome).toMatchObject({ ok: false, name: 'WorkerError' });
      expect((outcome as { message: string }).message).toMatch(/^Worker 0 of the parallel target stopped while running this call/);
      // The replacement takes part in later calls; every call is answered correctly.
      const expected = double('cpu').sync(x);
      for (let i = 0; i < 3; i++) {
        expect(sameBits(await parallel(x), expected)).toBe(true);
        expect(sameBits(parallel.sync(x), expected)).toBe(true);
      }
      const pool = await __testing.readyPool();
      expect(pool.messagesPosted.length).toBe(pool.size);
    }, TIMEOUT);
  });

  it('is a WorkerError, which is a UfuncError', async () => {
    await poolWithDoomedWorker('crash');
    const error = await double('parallel')(ramp(10_000)).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(WorkerError);
    expect((error as Error).name).toBe('WorkerError');
  }, TIMEOUT);
});

describe('concurrent calls', () => {
  beforeAll(async () => {
    setParallelOptions({ threshold: 0 });
    await __testing.resetPool({ minChunk: 16 });
  });
  afterAll(async () => {
    setParallelOptions({ threshold: DEFAULT_THRESHOLD });
    await __testing.resetPool();
  });

  it('answers every call of many async tasks, mixed with sync calls, correctly', async () => {
    const kernels = [double, writeAt].map((make) => ({ cpu: make('cpu'), parallel: make('parallel') }));
    const inputs = Array.from({ length: 24 }, (_, k) => (k % 2 === 0 ? ramp(1000 + 997 * k) : rowsWithBadIndexAt(500 + 331 * k, k % 3 === 0 ? [7 * k] : [])));
    // Two kernels of different layouts share this caller: typed loosely.
    const call = (f: Ufunc, k: number) => f(inputs[k], ...(k % 2 === 0 ? [] : [{ dims: { n: 4 } }]));
    const expected = await Promise.all(inputs.map((_, k) => outcomeOf(() => call(kernels[k % 2]!.cpu, k))));
    const tasks = inputs.map(async (_, k) => {
      await new Promise((resolve) => setTimeout(resolve, k % 5));
      return outcomeOf(() => call(kernels[k % 2]!.parallel, k));
    });
    // A sync call while async ones are queued and in flight: it must neither hang nor disturb them.
    const syncX = ramp(30_000);
    await new Promise((resolve) => setTimeout(resolve, 2));
    expect(sameBits(kernels[0]!.parallel.sync(syncX), kernels[0]!.cpu.sync(syncX))).toBe(true);
    const actual = await Promise.all(tasks);
    actual.forEach((outcome, k) => {
      expect(outcome.ok).toBe(expected[k]!.ok);
      if (outcome.ok && expected[k]!.ok) expect(sameBits(outcome.value, expected[k]!.value)).toBe(true);
      else expect(outcome).toEqual(expected[k]);
    });
  }, TIMEOUT);

  it('shares one pool between ufuncs, with shared and ordinary memory mixed', async () => {
    const x = sharedArray(40_000, 'float64');
    for (let i = 0; i < x.length; i++) x[i] = Math.cos(i);
    const y = Float64Array.from(x);
    const results = await Promise.all([double('parallel')(x), double('parallel')(y), double('parallel')(x, { out: sharedArray(x.length, 'float64') })]);
    const expected = double('cpu').sync(y);
    for (const r of results) expect(sameBits(r, expected)).toBe(true);
  }, TIMEOUT);
});
