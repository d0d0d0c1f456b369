/**
 * Calls on shared host arrays across several devices run on one worker thread per GPU
 * (device-workers.ts, device-worker.ts). lavapipe has one adapter: each worker opens a device of
 * its own on it. Every result is compared bit for bit with one device's on the calling thread.
 */
import { afterAll, afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import {
  getGpuOptions, guvectorize, KernelRuntimeError, type NDArray, setGpuOptions, sharedArray, sharedNDArray, vectorize, WorkerError,
} from '../../../src/index.js';
import { resetDevice, shutdownDevice } from '../../../src/targets/gpu/runtime/device.js';
import { __testing, runsOnDeviceWorkers } from '../../../src/targets/gpu/runtime/device-workers.js';
import { setChunkBytes } from '../../../src/targets/gpu/runtime/streaming.js';
import { hermiteUfuncs } from '../../../examples/hermite.js';
import { describeGpu } from '../../gpu-available.js';

// Each worker compiles its kernels on lavapipe's CPU threads, on a loaded CI machine.
vi.setConfig({ testTimeout: 60_000 });

const DEFAULT_LIMIT = getGpuOptions().memoryLimit;
/** `xs` filled in place (`map` would return an array in new, unshared memory). */
const fill = (xs: Float32Array, seed = 1) => {
  for (let i = 0; i < xs.length; i++) xs[i] = (((i + seed) * 7919) % 1000) / 100 - 5;
  return xs;
};
const shared = (n: number, seed = 1) => fill(sharedArray(n, 'float32'), seed);
const bits = (x: Float32Array) => new Uint32Array(x.buffer, x.byteOffset, x.length);
/** The first index where two arrays' bits differ, -1 when none (toEqual on large arrays is slow). */
const firstDifference = (a: Float32Array, b: Float32Array) => {
  const x = bits(a);
  const y = bits(b);
  return x.length !== y.length ? -2 : x.findIndex((v, i) => v !== y[i]);
};
const saxpy = vectorize(['float32(float32, float32, float32)'], { target: 'gpu' })((a: number, x: number, y: number) => a * x + y);
const hermite = hermiteUfuncs('gpu').fromScalar;

/** `call` on one device (the calling thread), then on `devices`. */
async function onOneAndMany<T>(devices: number, call: () => Promise<T>): Promise<[T, T]> {
  setGpuOptions({ devices: 1 });
  const one = await call();
  setGpuOptions({ devices });
  return [one, await call()];
}

// Small calls run on the workers too (by default only those of 16 MiB or more do).
beforeEach(() => __testing.setMinBytes(0));
afterEach(() => {
  __testing.setMinBytes(undefined);
  setChunkBytes(undefined);
  setGpuOptions({ devices: 1, memoryLimit: DEFAULT_LIMIT });
  resetDevice();
});
afterAll(() => shutdownDevice());

describeGpu('one worker thread per GPU for calls on shared host arrays', () => {
  it('SAXPY on shared arrays into a shared out runs on the workers: the bits of one device', async () => {
    const n = 100_003;
    const xs = shared(n);
    const ys = shared(n, 5);
    const [one, two] = await onOneAndMany(2, async () => {
      const out = sharedArray(n, 'float32');
      await saxpy(2.5, xs, ys, { out });
      return out;
    });
    expect(__testing.running()).toEqual([0, 1]);
    expect(firstDifference(two, one)).toBe(-1);
  });

  it('explain says when the blocks are copied by the GPUs\' worker threads', async () => {
    setGpuOptions({ devices: 2 });
    const xs = shared(1000);
    const out = sharedArray(1000, 'float32');
    await saxpy(1, xs, xs, { out }); // loads the target
    expect(saxpy.explain(1, xs, xs, { out })).toMatch(/split over 2 devices \(setGpuOptions\(\{ devices \}\)\), one block of the outermost dimension each, each copied to and from its device by a worker thread of its own/);
    expect(saxpy.explain(1, new Float32Array(1000), xs, { out })).not.toMatch(/worker thread/);
  });

  it('ordinary arrays, or an ordinary out, keep the calling thread', async () => {
    const n = 20_001;
    const xs = shared(n);
    const plain = fill(new Float32Array(n), 3);
    const [one, two] = await onOneAndMany(2, () => saxpy(-1, xs, plain) as Promise<Float32Array>);
    expect(__testing.running()).toEqual([]);
    expect(firstDifference(two, one)).toBe(-1);
    // A shared out, but an ordinary input: the calling thread too.
    const out = sharedArray(n, 'float32');
    await saxpy(-1, xs, plain, { out });
    expect(__testing.running()).toEqual([]);
    expect(firstDifference(out, one)).toBe(-1);
  });

  it('the Hermite table ()->(n) into a shared NDArray, and SAXPY in place on a shared array', async () => {
    const xs = shared(5001);
    const table = (out: NDArray) => hermite(xs, { dims: { n: 16 }, out }) as Promise<NDArray>;
    const [one, two] = await onOneAndMany(2, () => table(sharedNDArray([5001, 16], 'float32')));
    expect(__testing.running()).toEqual([0, 1]);
    expect(firstDifference(two.data as Float32Array, one.data as Float32Array)).toBe(-1);

    const [inPlaceOne, inPlaceTwo] = await onOneAndMany(2, async () => {
      const ys = shared(30_001, 9);
      await saxpy(0.5, xs.subarray(0, 1), ys, { out: ys }); // x broadcast from one element
      return ys;
    });
    expect(firstDifference(inPlaceTwo, inPlaceOne)).toBe(-1);
  });

  it('each worker streams its block when it exceeds the memory limit: the bits of one device', async () => {
    const n = 60_000;
    const xs = shared(n);
    const ys = shared(n, 3);
    setGpuOptions({ devices: 1 });
    const expected = sharedArray(n, 'float32');
    await saxpy(-1.25, xs, ys, { out: expected });
    setGpuOptions({ devices: 2, memoryLimit: 96 * 1024 });
    setChunkBytes(40 * 1024);
    const got = sharedArray(n, 'float32');
    await saxpy(-1.25, xs, ys, { out: got });
    expect(__testing.running()).toEqual([0, 1]);
    expect(firstDifference(got, expected)).toBe(-1);
  });

  it("a kernel's error in a worker is the calling thread's error, of the same class", async () => {
    const rows = guvectorize(['void(float32[:], float32[:])'], '(n)->(n)', { target: 'gpu' })((x: Float32Array, out: Float32Array) => {
      for (let i = 0; i < x.length; i++) out[i] = x[i + 1]!;
    });
    const xs = { data: shared(64 * 8), shape: [64, 8] };
    const out = () => ({ data: sharedArray(64 * 8, 'float32'), shape: [64, 8] });
    setGpuOptions({ devices: 1 });
    const one = await (rows(xs, { out: out() }) as Promise<unknown>).catch((e: unknown) => e);
    setGpuOptions({ devices: 2 });
    const two = await (rows(xs, { out: out() }) as Promise<unknown>).catch((e: unknown) => e);
    expect(__testing.running()).toEqual([0, 1]);
    expect(one).toBeInstanceOf(KernelRuntimeError);
    expect(two).toBeInstanceOf(KernelRuntimeError);
    expect((two as Error).message).toMatch(/out of bounds/);
  });

  it('a worker that ends mid-call fails the call with a WorkerError naming its device, no hang; the next call works', async () => {
    const n = 40_001;
    const xs = shared(n);
    const ys = shared(n, 2);
    setGpuOptions({ devices: 1 });
    const expected = sharedArray(n, 'float32');
    await saxpy(3, xs, ys, { out: expected });
    setGpuOptions({ devices: 2 });
    await saxpy(3, xs, ys, { out: sharedArray(n, 'float32') }); // both workers started
    await __testing.exitAtNextRun(1);
    const failed = await (saxpy(3, xs, ys, { out: sharedArray(n, 'float32') }) as Promise<unknown>).catch((e: unknown) => e);
    expect(failed).toBeInstanceOf(WorkerError);
    expect((failed as Error).message).toMatch(/worker thread of GPU device 1 \(.+\) stopped \(exit code 1\)/);
    expect(__testing.running()).toEqual([0]);
    const got = sharedArray(n, 'float32');
    await saxpy(3, xs, ys, { out: got });
    expect(__testing.running()).toEqual([0, 1]);
    expect(firstDifference(got, expected)).toBe(-1);
  });
});

describe('runsOnDeviceWorkers', () => {
  it('takes calls whose arrays are all shared and that have no limits', () => {
    const plan = (data: Float32Array, limits?: object) =>
      ({ operands: [{ dtype: 'float32', data, offset: 0, loopStrides: [1], coreShape: [], coreStrides: [] }, { dtype: 'float32', data: Float32Array.of(2), scalar: 2 }], loopShape: [4], limits }) as never;
    expect(runsOnDeviceWorkers(plan(sharedArray(4, 'float32')))).toBe(true);
    expect(runsOnDeviceWorkers(plan(new Float32Array(4)))).toBe(false);
    expect(runsOnDeviceWorkers(plan(sharedArray(4, 'float32'), { timeout: 100 }))).toBe(false);
  });

  it('leaves calls under 16 MiB of host operands to the calling thread by default', () => {
    const plan = (n: number) => ({ operands: [{ dtype: 'float32', data: sharedArray(n, 'float32'), offset: 0, loopStrides: [1], coreShape: [], coreStrides: [] }], loopShape: [n] }) as never;
    __testing.setMinBytes(undefined);
    expect(runsOnDeviceWorkers(plan(2 ** 20))).toBe(false);
    expect(runsOnDeviceWorkers(plan(2 ** 22))).toBe(true);
  });
});
