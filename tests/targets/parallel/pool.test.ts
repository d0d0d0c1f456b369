/**
 * The pool as a user and the workers see it: options, the threshold, one pool for every ufunc, and
 * kernels and argument sets sent to each worker once.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { ArgumentError, getParallelOptions, isShared, setParallelOptions, sharedArray, sharedNDArray, vectorize } from '../../../src/index.js';
import { __testing, DEFAULT_THRESHOLD } from '../../../src/targets/parallel/index.js';
import { callCounts } from '../../call-paths.js';
import os from 'node:os';

// These tests are of the pool's own workings: every call the pool could take goes there, not to the
// calling thread where that measured faster (placement.ts, tested in placement.test.ts).
let measuredPlacement: boolean;
beforeAll(() => void (measuredPlacement = __testing.measuredPlacement(false)));
afterAll(() => void __testing.measuredPlacement(measuredPlacement));

const saxpy = vectorize(['float32(float32, float32, float32)'], { target: 'parallel' })((a: number, x: number, y: number) => a * x + y);

describe('parallel options', () => {
  afterEach(() => setParallelOptions({ workers: os.availableParallelism(), threshold: DEFAULT_THRESHOLD }));

  it('default to one worker per core and the measured threshold', () => {
    expect(getParallelOptions()).toEqual({ workers: os.availableParallelism(), threshold: DEFAULT_THRESHOLD });
  });

  it('refuse what is not a non-negative integer', () => {
    expect(() => setParallelOptions({ workers: -1 })).toThrow(ArgumentError);
    expect(() => setParallelOptions({ threshold: 1.5 })).toThrowErrorMatchingInlineSnapshot(`[ArgumentError: \`threshold\` must be a non-negative integer, found 1.5.]`);
  });

  it('resize the pool at the next call', async () => {
    setParallelOptions({ workers: 1, threshold: 0 });
    await saxpy(2, new Float32Array(100), new Float32Array(100));
    expect((await __testing.readyPool()).size).toBe(1);
    setParallelOptions({ workers: 3 });
    await saxpy(2, new Float32Array(100), new Float32Array(100));
    expect((await __testing.readyPool()).size).toBe(3);
    // Run from source, each new worker compiles the library through tsx: seconds on a loaded machine.
  }, 20_000);

  it('run every call on the calling thread with no workers, and small calls below the threshold', async () => {
    const x = sharedArray(5000, 'float32').fill(1);
    setParallelOptions({ workers: 0, threshold: 0 });
    callCounts(true);
    expect((await saxpy(2, x, x))[4999]).toBe(3);
    expect(callCounts(true)).toEqual({ pool: 0, callingThread: 1, unsplittable: 0 });
    setParallelOptions({ workers: 2, threshold: 5000 });
    saxpy.sync(2, x.subarray(1), x.subarray(1));
    expect(callCounts(true)).toEqual({ pool: 0, callingThread: 1, unsplittable: 0 });
    saxpy.sync(2, x, x, { out: sharedArray(5000, 'float32') });
    expect(callCounts(true)).toEqual({ pool: 1, callingThread: 0, unsplittable: 0 });
  });

  it('ask four times the work of calls that must copy operands into shared memory', () => {
    setParallelOptions({ threshold: 5000 });
    const ordinary = new Float32Array(20_000).fill(1);
    const shared = sharedArray(20_000, 'float32').fill(1);
    callCounts(true);
    saxpy.sync(2, ordinary.subarray(1), shared.subarray(1)); // 19,999 < 4 × 5,000: here
    saxpy.sync(2, shared.subarray(1), shared.subarray(1), { out: sharedArray(19_999, 'float32') });
    saxpy.sync(2, ordinary, shared);
    expect(callCounts(true)).toEqual({ pool: 2, callingThread: 1, unsplittable: 0 });
  });
});

describe('what workers are sent', () => {
  beforeAll(async () => {
    setParallelOptions({ threshold: 0 });
    await __testing.resetPool({ callerRuns: false });
    await __testing.readyPool();
  });
  afterAll(async () => {
    setParallelOptions({ threshold: DEFAULT_THRESHOLD });
    await __testing.resetPool();
  });

  const posted = async () => (await __testing.readyPool()).messagesPosted.reduce((a, b) => a + b, 0);

  // Calls touching fewer than 16,384 elements: none is a trial of the engine choice (which would
  // send the other engine's runner too, once).
  it('sends a kernel and an argument set once per worker; later calls send nothing', async () => {
    const x = sharedArray(5_000, 'float32');
    const y = sharedArray(5_000, 'float32');
    const z = sharedArray(5_000, 'float32');
    const before = await posted();
    await saxpy(2, x, y, { out: z });
    const workers = (await __testing.readyPool()).size;
    expect((await posted()) - before).toBe(2 * workers); // the runner and the argument set
    const after = await posted();
    // Other scalars travel in the control block: the same argument set serves.
    for (const a of [3, -0, Number.NaN]) await saxpy(a, x, y, { out: z });
    saxpy.sync(4, x, y, { out: z });
    expect(await posted()).toBe(after);
    // Other arrays: a new argument set, the same runner.
    await saxpy(2, y, x, { out: z });
    expect((await posted()) - after).toBe(workers);
  });

  it('stages ordinary memory into the same arena call after call, so nothing is sent again', async () => {
    const x = new Float32Array(5_000).fill(1);
    const y = new Float32Array(5_000).fill(2);
    const z = new Float32Array(5_000);
    await saxpy(2, x, y, { out: z });
    const after = await posted();
    for (let i = 0; i < 3; i++) await saxpy(2, x, y, { out: z });
    expect(await posted()).toBe(after);
    expect(z[4999]).toBe(4);
  });
});

describe('shared memory helpers', () => {
  it.each(['float32', 'float64', 'int32', 'uint8', 'int64', 'bool'] as const)('sharedArray(…, %s) is zeroed shared memory of that type', (dtype) => {
    const a = sharedArray(5, dtype);
    expect(isShared(a)).toBe(true);
    expect(a.length).toBe(5);
    expect([...a].every((v) => v === 0 || v === 0n)).toBe(true);
    expect(a.constructor.name).toBe({ float32: 'Float32Array', float64: 'Float64Array', int32: 'Int32Array', uint8: 'Uint8Array', int64: 'BigInt64Array', bool: 'Uint8Array' }[dtype]);
  });

  it('sharedNDArray is C-contiguous', () => {
    const m = sharedNDArray([3, 4], 'float32');
    expect(m).toMatchObject({ shape: [3, 4], strides: [4, 1], offset: 0, dtype: 'float32' });
    expect(m.data.length).toBe(12);
    expect(isShared(m)).toBe(true);
    expect(isShared(new Float32Array(2))).toBe(false);
  });

  it('refuse bad lengths, shapes and dtypes', () => {
    expect(() => sharedArray(-1, 'float32')).toThrow(ArgumentError);
    expect(() => sharedNDArray([2, 0.5])).toThrow(ArgumentError);
    expect(() => sharedArray(3, 'float16' as never)).toThrowErrorMatchingInlineSnapshot(`[ArgumentError: Unknown dtype \`float16\`; the dtypes are bool, int8, int16, int32, int64, uint8, uint8c, uint16, uint32, uint64, float32, float64.]`);
  });
});
