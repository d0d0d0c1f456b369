/**
 * Asynchronous call chains (chain.ts), the buffer pool (buffer-pool.ts) and host operands read at
 * call time: on a real WebGPU device (lavapipe here).
 */
import { afterAll, afterEach, beforeAll, expect, it } from 'vitest';
import { DeviceError, KernelRuntimeError } from '../../../src/errors.js';
import { DeviceArray, deviceArray, guvectorize, synchronize, toDevice, vectorize } from '../../../src/index.js';
import { bufferPoolStats, sizeClass } from '../../../src/targets/gpu/runtime/buffer-pool.js';
import { LEAN_READBACK_MAX_BYTES } from '../../../src/targets/gpu/runtime/buffers.js';
import { EARLY_SUBMIT_BYTES, flushChain, MAX_CALLS_PER_BATCH } from '../../../src/targets/gpu/runtime/chain.js';
import { setChainFusion } from '../../../src/targets/gpu/runtime/chain-fusion.js';
import { setChunkBytes } from '../../../src/targets/gpu/runtime/streaming.js';
import { setTransferTrace } from '../../../src/targets/gpu/runtime/transfer-trace.js';
import { acquireDevice, setIdleReleaseMs } from '../../../src/targets/gpu/runtime/device.js';
import { describeGpu } from '../../gpu-available.js';
import { differences } from './compare-targets.js';

const iota = (n: number, scale = 1) => Float32Array.from({ length: n }, (_, i) => i * scale);
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Counts `queue.submit` calls made while `work` runs. */
async function countSubmits(work: () => Promise<void>): Promise<number> {
  const submit = GPUQueue.prototype.submit;
  let submits = 0;
  GPUQueue.prototype.submit = function (this: GPUQueue, ...args: Parameters<GPUQueue['submit']>) {
    submits++;
    return submit.apply(this, args);
  };
  try {
    await work();
  } finally {
    GPUQueue.prototype.submit = submit;
  }
  return submits;
}

/**
 * Makes the next `queue.submit` invalid — its command buffer is submitted twice, and WebGPU
 * reports a validation error for the second — and returns the function that undoes it.
 */
function failNextSubmission(): () => void {
  const submit = GPUQueue.prototype.submit;
  let broken = true;
  GPUQueue.prototype.submit = function (this: GPUQueue, buffers: Iterable<GPUCommandBuffer>) {
    if (broken) {
      broken = false;
      const list = [...buffers];
      submit.call(this, list);
      return submit.call(this, list);
    }
    return submit.call(this, buffers);
  } as typeof submit;
  return () => {
    GPUQueue.prototype.submit = submit;
  };
}

/** The kernels of these tests: an element-wise one, and a per-row one that reads one element. */
const axpy = vectorize(['float32(float32, float32, float32)'], { target: 'gpu' })((a: number, x: number, y: number) => a * x + y);
const reader = guvectorize(['void(float32[:], int32, float32[:])'], '(n),()->()', { target: 'gpu' })((x: Float32Array, i: number, out: Float32Array) => {
  out[0] = x[i]!;
});

describeGpu('asynchronous chains', { timeout: 60_000 }, () => {
  // These count the submissions, passes, params slots and bindings of calls recorded one by one;
  // chain-fusion.test.ts covers calls held and fused (an in-place chain of `axpy` would fuse).
  beforeAll(() => setChainFusion(false));
  afterAll(() => setChainFusion(true)); // the default
  afterEach(async () => {
    setIdleReleaseMs(200);
    await synchronize().catch(() => {});
  });

  it('a chain of calls on device arrays is recorded into shared submissions and gives the right result', async () => {
    const n = 4096;
    const x = await toDevice(iota(n));
    const y = await toDevice(iota(n, 0.5));
    await axpy(1, x, y, { out: y }); // compile
    await synchronize();
    const calls = 300;
    const submits = await countSubmits(async () => {
      for (let k = 0; k < calls; k++) await axpy(1, x, y, { out: y });
    });
    // One submission per batch (not per call): the batch also ends at a turn of the event loop.
    expect(submits).toBeLessThanOrEqual(Math.ceil(calls / MAX_CALLS_PER_BATCH) + 1);
    const expected = iota(n, 0.5);
    for (let k = 0; k < calls + 1; k++) for (let i = 0; i < n; i++) expected[i] = Math.fround(i + expected[i]!);
    expect(differences((await y.toHost()) as Float32Array, expected)).toEqual([]);
  });

  it('calls laid out alike (the fast path) still bind their own buffers and JS scalars', async () => {
    const n = 257;
    const xs = await Promise.all([1, 2, 3].map((k) => toDevice(iota(n, k))));
    const outs = await Promise.all([0, 1, 2].map(() => deviceArray([n], 'float32')));
    for (let round = 0; round < 3; round++) {
      for (let k = 0; k < 3; k++) await axpy(k + round, xs[k]!, xs[(k + 1) % 3]!, { out: outs[k]! });
      // In place: the output is also an input (one binding for both).
      await axpy(1, xs[0]!, outs[2]!, { out: outs[2]! });
      for (let k = 0; k < 2; k++) {
        const expected = iota(n, k + 1).map((v, i) => Math.fround((k + round) * v + (i * (((k + 1) % 3) + 1))));
        expect(differences((await outs[k]!.toHost()) as Float32Array, expected)).toEqual([]);
      }
      const third = iota(n, 3).map((v, i) => Math.fround(Math.fround((2 + round) * v + i) + i));
      expect(differences((await outs[2]!.toHost()) as Float32Array, third)).toEqual([]);
    }
  });

  it('an out-of-bounds index in a chained call surfaces at the next synchronize(), as a KernelRuntimeError naming the call', async () => {
    const x = await toDevice({ data: iota(8), shape: [2, 4] });
    const bad = await reader(x, Int32Array.from([0, 9])); // returns at once: nothing waited
    expect(bad).toBeInstanceOf(DeviceArray);
    const next = await axpy(2, bad as DeviceArray, 1); // chained on the failed call's output
    expect(next).toBeInstanceOf(DeviceArray);
    const error = await synchronize().then(() => undefined, (e: unknown) => e);
    expect(error).toBeInstanceOf(KernelRuntimeError);
    expect((error as Error).message).toMatch(
      /^gpu call #\d+ \(`kernel`\) failed: Index \[9\] is out of bounds for `x` at tests\/targets\/gpu\/chain\.test\.ts:61:12 \(its shape is \[4\]\)\. The outputs may be partially written\.\n {2}out\[0\] = x\[i\]!;\n {11}\^$/,
    );
    expect((error as Error).cause).toBeInstanceOf(KernelRuntimeError);
    // Reported once by synchronize(); data computed from the failed call keeps reporting it.
    await expect(synchronize()).resolves.toBeUndefined();
    await expect((next as DeviceArray).toHost()).rejects.toThrow(KernelRuntimeError);
    await expect((next as DeviceArray).toHost()).rejects.toThrow(/failed: Index \[9\] is out of bounds/);
    // Unrelated data is not affected.
    const fine = await axpy(1, x, 0);
    expect(differences((await (fine as DeviceArray).toHost()) as Float32Array, iota(8))).toEqual([]);
  });

  it('toHost() of data from calls still in flight queues its copy behind them: right data, and a failed call is thrown with `into` untouched', async () => {
    const x = await toDevice({ data: iota(8), shape: [2, 4] });
    // Clean chain read back while its calls are in flight (nothing synchronised first).
    let y = (await axpy(2, await toDevice(iota(1024)), 1)) as DeviceArray;
    for (let k = 0; k < 5; k++) y = (await axpy(1, y, 1)) as DeviceArray;
    const want = Float32Array.from(iota(1024), (v) => 2 * v + 6);
    expect(differences((await y.toHost()) as Float32Array, want)).toEqual([]);
    const strided = y.view([4], [3], 5); // a strided view gathers on the host after the same wait
    expect(Array.from((await strided.toHost()) as Float32Array)).toEqual([16, 22, 28, 34]);
    // A failed call in flight: toHost throws its error and writes nothing into `into`.
    const bad = (await reader(x, Int32Array.from([0, 9]))) as DeviceArray;
    const next = (await axpy(2, bad, 1)) as DeviceArray;
    const into = new Float32Array([-7, -7]);
    await expect(next.toHost(into)).rejects.toThrow(KernelRuntimeError);
    expect(Array.from(into)).toEqual([-7, -7]);
    await expect(next.toHost(into)).rejects.toThrow(/^gpu call #\d+ \(`kernel`\) failed: Index \[9\] is out of bounds/);
    expect(Array.from(into)).toEqual([-7, -7]);
    await expect(synchronize()).resolves.toBeUndefined(); // already reported by toHost()
  });

  it('equal calls in a row share a params slot and bindings, different ones do not, and the results stay right', async () => {
    const n = 1000;
    const x = await toDevice(iota(n));
    const y = await deviceArray([n], 'float32');
    const z = await deviceArray([n], 'float32');
    await axpy(1, x, y, { out: y }); // compile
    await synchronize();
    const setBindGroup = GPUComputePassEncoder.prototype.setBindGroup;
    let binds = 0;
    GPUComputePassEncoder.prototype.setBindGroup = function (this: GPUComputePassEncoder, ...args: unknown[]) {
      binds++;
      return (setBindGroup as (...a: unknown[]) => undefined).apply(this, args);
    } as typeof setBindGroup;
    try {
      // 300 equal calls (more than a batch has params slots), then calls whose scalar or output changes.
      for (let k = 0; k < 300; k++) await axpy(1, x, y, { out: y });
      await axpy(2, x, y, { out: y });
      await axpy(2, x, y, { out: z }); // same params, another bind group
      await axpy(1, x, y, { out: y }); // back to the first params
    } finally {
      GPUComputePassEncoder.prototype.setBindGroup = setBindGroup;
    }
    // Once per batch of equal calls (a new batch starts a new pass), once per change.
    expect(binds).toBeLessThanOrEqual(Math.ceil(300 / MAX_CALLS_PER_BATCH) + 3);
    const expectedY = iota(n).map((v) => v); // y after the compile call: x
    for (let k = 0; k < 300; k++) for (let i = 0; i < n; i++) expectedY[i] = Math.fround(i + expectedY[i]!);
    const expectedZ = new Float32Array(n);
    for (let i = 0; i < n; i++) {
      expectedY[i] = Math.fround(2 * i + expectedY[i]!);
      expectedZ[i] = Math.fround(2 * i + expectedY[i]!);
      expectedY[i] = Math.fround(i + expectedY[i]!);
    }
    expect(differences((await z.toHost()) as Float32Array, expectedZ)).toEqual([]);
    expect(differences((await y.toHost()) as Float32Array, expectedY)).toEqual([]);
  });

  it('a chain of large calls is submitted in parts as it is recorded (EARLY_SUBMIT_BYTES), and gives the right result', async () => {
    const n = 1 << 21; // three 8 MiB buffers a call
    const x = await toDevice(iota(n, 1 / n));
    const y = await toDevice(iota(n));
    const z = await deviceArray([n], 'float32');
    await axpy(2, x, y, { out: z }); // compile
    await synchronize();
    const perCall = 3 * sizeClass(4 * n);
    // Enough calls for two early submissions, fewer than a batch holds.
    const callsPerSubmit = Math.ceil(EARLY_SUBMIT_BYTES / perCall);
    const calls = 2 * callsPerSubmit + 3;
    expect(calls).toBeLessThan(MAX_CALLS_PER_BATCH);
    // The number of calls recorded when each submission happens.
    const submittedAfter: number[] = [];
    let recorded = 0;
    const submits = await countSubmits(async () => {
      const submit = GPUQueue.prototype.submit;
      GPUQueue.prototype.submit = function (this: GPUQueue, ...args: Parameters<GPUQueue['submit']>) {
        submittedAfter.push(recorded);
        return submit.apply(this, args);
      };
      try {
        for (let k = 0; k < calls; k++) {
          await axpy(k, x, y, { out: z });
          recorded++;
        }
      } finally {
        GPUQueue.prototype.submit = submit;
      }
    });
    // A batch is submitted by the call that brings its bindings to the limit, counting every
    // binding of every call (the same `out` bound again counts again); without the limit nothing
    // would be submitted before the read-back. (`recorded` counts a call once it has returned,
    // so the call that submits is not counted yet.)
    expect(submittedAfter).toEqual([callsPerSubmit - 1, 2 * callsPerSubmit - 1]);
    expect(submits).toBe(2);
    const got = (await z.toHost()) as Float32Array;
    const last = calls - 1;
    expect(differences(got, iota(n).map((v, i) => Math.fround(Math.fround(last * Math.fround(i / n)) + v)))).toEqual([]);
  });

  it('bounds-check records are read back through reused buffers, and kernels with no checked index read nothing back', async () => {
    const x = await toDevice({ data: iota(8), shape: [2, 4] });
    const v = await toDevice(iota(8));
    await reader(x, Int32Array.from([0, 1]));
    await axpy(1, v, v);
    await synchronize();
    const { device } = await acquireDevice();
    const createBuffer = device.createBuffer;
    let readable = 0;
    device.createBuffer = function (this: GPUDevice, descriptor: GPUBufferDescriptor) {
      if (descriptor.usage & GPUBufferUsage.MAP_READ) readable++;
      return createBuffer.call(this, descriptor);
    } as typeof createBuffer;
    try {
      // Batches in separate turns of the event loop: each is submitted and read back on its own.
      for (let k = 0; k < 4; k++) {
        await reader(x, Int32Array.from([k % 4, 3]));
        await synchronize();
      }
      const readerBuffers = readable;
      for (let k = 0; k < 4; k++) {
        await axpy(1, v, v); // every index proven in bounds: no record to read
        await synchronize();
      }
      expect(readerBuffers).toBe(0); // the records' buffer of the warm-up batch is reused
      expect(readable).toBe(0);
    } finally {
      device.createBuffer = createBuffer;
    }
    // Still reported: a failing call after the reused read-backs.
    await reader(x, Int32Array.from([0, 7]));
    await expect(synchronize()).rejects.toThrow(/Index \[7\] is out of bounds/);
  });

  /** Runs `work` with `queue.writeBuffer` into the params arena counted, and made to fail (a validation error, nothing written) while `fail()` says so. */
  async function paramsWrites(work: () => Promise<void>, fail: () => boolean = () => false): Promise<number> {
    const writeBuffer = GPUQueue.prototype.writeBuffer;
    let writes = 0;
    GPUQueue.prototype.writeBuffer = function (this: GPUQueue, buffer: GPUBuffer, offset: number, ...rest: unknown[]) {
      if (buffer.label !== 'ufunc params arena') return (writeBuffer as (...a: unknown[]) => undefined).call(this, buffer, offset, ...rest);
      writes++;
      return (writeBuffer as (...a: unknown[]) => undefined).call(this, buffer, fail() ? buffer.size + 256 : offset, ...rest);
    } as typeof writeBuffer;
    try {
      await work();
    } finally {
      GPUQueue.prototype.writeBuffer = writeBuffer;
    }
    return writes;
  }

  it('a batch whose params the arena holds already from the batch before skips writing them, and results stay right', async () => {
    const n = 1000;
    const x = await toDevice(iota(n));
    const y = await toDevice(iota(n, 0.5));
    const z = await deviceArray([n], 'float32');
    await axpy(1, x, y, { out: y }); // compile
    await synchronize();
    const { device } = await acquireDevice();
    const writes = await paramsWrites(async () => {
      // Five batches of one equal call each (each flushed), then one with another scalar, then the first again.
      for (let k = 0; k < 5; k++) {
        await axpy(1, x, y, { out: y });
        flushChain(device);
      }
      await axpy(3, x, z, { out: z });
      flushChain(device);
      await axpy(1, x, y, { out: y });
      flushChain(device);
    });
    expect(writes).toBe(2); // the scalar 3, then 1 again; the five equal batches wrote nothing
    const expectedY = iota(n, 0.5).map((v, i) => Math.fround(i + v));
    for (let k = 0; k < 6; k++) for (let i = 0; i < n; i++) expectedY[i] = Math.fround(i + expectedY[i]!);
    const expectedZ = iota(n).map((v) => Math.fround(3 * v));
    expect(differences((await y.toHost()) as Float32Array, expectedY)).toEqual([]);
    expect(differences((await z.toHost()) as Float32Array, expectedZ)).toEqual([]);
  });

  it('a batch that skipped its params write fails when the write it relied on failed; an error of the writing batch\'s work alone does not fail it', async () => {
    const n = 64;
    const x = await toDevice(iota(n));
    const zero = await toDevice(new Float32Array(n));
    const [y, z, w, v, u] = await Promise.all([0, 1, 2, 3, 4].map(() => deviceArray([n], 'float32')));
    await axpy(1, x, zero, { out: y }); // compile; the arena now holds the params of a = 1
    await synchronize();
    const { device } = await acquireDevice();
    let failing = true;
    await paramsWrites(async () => {
      await axpy(2, x, zero, { out: z }); // its write of a = 2 fails: the arena still says a = 1
      flushChain(device);
      failing = false;
      await axpy(2, x, zero, { out: w }); // the same params words: skips its write, relying on the failed one
      flushChain(device);
    }, () => failing);
    await expect(z.toHost()).rejects.toThrow(/error writing the parameters of gpu call #\d+ \(`\w+`\), so they ran with wrong parameters/);
    const error = await w.toHost().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(DeviceError);
    expect((error as Error).message).toMatch(/gpu call #\d+ \(`\w+`\) failed: The GPU reported an error writing the parameters of gpu call #\d+ \(`\w+`\) \(the same words as those of gpu call #\d+ \(`\w+`\), submitted before them, whose write they relied on\)/);
    await expect(synchronize()).resolves.toBeUndefined(); // both already thrown by toHost()
    // Once the failure is known, the next batch with those params writes them again, and is right.
    const writes = await paramsWrites(async () => {
      await axpy(2, x, zero, { out: v });
      await synchronize();
    });
    expect(writes).toBe(1);
    expect(differences((await v.toHost()) as Float32Array, iota(n, 2))).toEqual([]);

    // A batch whose work fails (an invalid submission) but whose params write succeeded: the next
    // batch relying on that write runs and is right.
    const restoreSubmit = failNextSubmission();
    try {
      await axpy(5, x, zero, { out: y });
      flushChain(device);
    } finally {
      restoreSubmit();
    }
    await axpy(5, x, zero, { out: u });
    flushChain(device);
    await expect(synchronize()).rejects.toThrow(/gpu call #\d+ \(`\w+`\) failed: The GPU reported an error for gpu call #\d+ \(`\w+`\), so none of their work was done/);
    expect(differences((await u.toHost()) as Float32Array, iota(n, 5))).toEqual([]);
  });

  it('synchronize() counts the other failed calls', async () => {
    const x = await toDevice({ data: iota(8), shape: [2, 4] });
    await reader(x, Int32Array.from([0, 5]));
    await reader(x, Int32Array.from([6, 0]));
    await expect(synchronize()).rejects.toThrow(/Index \[5\] is out of bounds .* \(1 more call failed since the last synchronize\(\)\)\n {2}out\[0\] = x\[i\]!;\n {11}\^$/);
  });

  it('a device lost while a chain is in flight surfaces at the next synchronisation as a DeviceError', async () => {
    const x = await toDevice(iota(1 << 16));
    await axpy(1, x, x);
    await synchronize();
    const { device } = await acquireDevice();
    const y = await axpy(3, x, x);
    device.destroy(); // before the batch is submitted
    await expect(synchronize()).rejects.toThrow(DeviceError);
    await expect((y as DeviceArray).toHost()).rejects.toThrow(DeviceError);
    await sleep(20);
    // The next call gets a new device.
    expect(differences((await axpy(2, iota(4), 1)) as Float32Array, Float32Array.from([1, 3, 5, 7]))).toEqual([]);
  });
});

describeGpu('host operands are read when the call is made', { timeout: 60_000 }, () => {
  it('changing a host input right after the call does not change the result (first and later calls)', async () => {
    const scale = vectorize(['float32(float32, float32)'], { target: 'gpu' })((a: number, s: number) => a * s);
    for (let attempt = 0; attempt < 2; attempt++) {
      const x = iota(1000);
      const pending = scale(x, 2);
      x.fill(-1);
      expect(differences((await pending) as Float32Array, iota(1000, 2))).toEqual([]);
    }
  });

  it('also with a device output and a new ufunc whose first call has to wait for the device', async () => {
    const add = vectorize(['float32(float32, float32)'], { target: 'gpu' })((a: number, b: number) => a + b);
    const dx = await toDevice(iota(64));
    const host = iota(64, 10);
    const pending = add(dx, host);
    host.fill(1e6);
    const result = (await pending) as DeviceArray;
    expect(differences((await result.toHost()) as Float32Array, iota(64, 11))).toEqual([]);
    const again = add(dx, host);
    host.fill(0);
    expect(differences((await ((await again) as DeviceArray).toHost()) as Float32Array, iota(64).map((v) => v + 1e6))).toEqual([]);
  });
});

describeGpu('the buffer pool', { timeout: 60_000 }, () => {
  afterEach(() => setIdleReleaseMs(200));

  it('size classes are at most 25% over the request', () => {
    for (const n of [1, 255, 256, 257, 1000, 1025, 4096, 5000, 2 ** 26 + 4, 3 * 2 ** 28]) {
      const c = sizeClass(n);
      expect(c).toBeGreaterThanOrEqual(n);
      expect(c % 4).toBe(0);
      expect(c).toBeLessThanOrEqual(Math.max(256, n * 1.25 + 4));
      expect(sizeClass(c)).toBe(c);
    }
  });

  it('outputs of calls reuse the buffers of destroyed arrays, and results stay right', async () => {
    setIdleReleaseMs(Infinity);
    const ctx = await acquireDevice();
    const axpy = vectorize(['float32(float32, float32, float32)'], { target: 'gpu' })((a: number, x: number, y: number) => a * x + y);
    const n = 10_000;
    const x = await toDevice(iota(n));
    const first = (await axpy(2, x, 1)) as DeviceArray;
    const buffer = first.buffer;
    first.destroy();
    const before = bufferPoolStats(ctx);
    const seen = new Set<GPUBuffer>();
    for (let k = 0; k < 20; k++) {
      const z = (await axpy(k, x, 1)) as DeviceArray;
      seen.add(z.buffer);
      expect(differences((await z.toHost()) as Float32Array, iota(n).map((v) => Math.fround(k * v + 1)))).toEqual([]);
      z.destroy();
    }
    const after = bufferPoolStats(ctx);
    expect(seen.has(buffer)).toBe(true); // the very buffer given back is handed out again
    expect(seen.size).toBe(1);
    expect(after.reused - before.reused).toBeGreaterThanOrEqual(20);
    expect(after.created - before.created).toBe(0);
  });

  it('a chain of fresh outputs, each previous one destroyed, reuses buffers without a submission per call', async () => {
    setIdleReleaseMs(Infinity);
    const ctx = await acquireDevice();
    const axpy = vectorize(['float32(float32, float32, float32)'], { target: 'gpu' })((a: number, x: number, y: number) => a * x + y);
    const x = await toDevice(iota(4096));
    (await axpy(1, x, 1)).destroy(); // compile, and one buffer of the class in the pool
    await synchronize();
    const before = bufferPoolStats(ctx);
    let z: DeviceArray | undefined;
    const submits = await countSubmits(async () => {
      for (let k = 0; k < 50; k++) {
        const next = (await axpy(k, x, 1)) as DeviceArray;
        z?.destroy();
        z = next;
      }
    });
    expect(submits).toBeLessThanOrEqual(1);
    expect(bufferPoolStats(ctx).created - before.created).toBeLessThanOrEqual(1); // two buffers take turns
    expect(differences((await z!.toHost()) as Float32Array, iota(4096).map((v) => Math.fround(49 * v + 1)))).toEqual([]);
  });

  it('a reused buffer is zeroed for a guvectorize output that the kernel writes only in part', async () => {
    setIdleReleaseMs(Infinity);
    const firstOnly = guvectorize(['void(float32, float32[:])'], '()->(n)', { target: 'gpu' })((x: number, out: Float32Array) => {
      if (x > 0) out[0] = x;
    });
    const fill = guvectorize(['void(float32, float32[:])'], '()->(n)', { target: 'gpu' })((x: number, out: Float32Array) => {
      for (let i = 0; i < out.length; i++) out[i] = x;
    });
    const xs = await toDevice(Float32Array.from([1, 0, 3]));
    const dirty = (await fill(xs, { dims: { n: 4 } })) as DeviceArray;
    dirty.destroy(); // back to the pool, full of non-zero values
    const out = (await firstOnly(xs, { dims: { n: 4 } })) as DeviceArray;
    expect([...((await out.toHost()) as Float32Array)]).toEqual([1, 0, 0, 0, 0, 0, 0, 0, 3, 0, 0, 0]);
    const zeroed = await deviceArray([3, 4], 'float32'); // deviceArray() is always zero-filled
    expect([...((await zeroed.toHost()) as Float32Array)]).toEqual(new Array(12).fill(0));
  });

  it('a destroyed array stays unusable even when its buffer is reused', async () => {
    const x = await toDevice(iota(100));
    const view = x.view([50], [2], 0);
    x.destroy();
    await expect(view.toHost()).rejects.toThrow('this DeviceArray was destroyed; it has no data any more');
  });
});

describeGpu('lean small read-backs', { timeout: 60_000 }, () => {
  // Counts the submissions and error scopes of calls recorded one by one (see above).
  beforeAll(() => setChainFusion(false));
  afterAll(() => setChainFusion(true)); // the default
  afterEach(async () => {
    setIdleReleaseMs(200);
    await synchronize().catch(() => {});
  });

  /** Counts `queue.submit` and `pushErrorScope` calls, and the copies into MAP_READ buffers, made while `work` runs. */
  async function countQueueWork(work: () => Promise<unknown>): Promise<{ submits: number; scopes: number; readCopies: number }> {
    const counts = { submits: 0, scopes: 0, readCopies: 0 };
    const submit = GPUQueue.prototype.submit;
    const push = GPUDevice.prototype.pushErrorScope;
    const copy = GPUCommandEncoder.prototype.copyBufferToBuffer;
    GPUQueue.prototype.submit = function (this: GPUQueue, ...args: Parameters<GPUQueue['submit']>) {
      counts.submits++;
      return submit.apply(this, args);
    };
    GPUDevice.prototype.pushErrorScope = function (this: GPUDevice, filter: GPUErrorFilter) {
      counts.scopes++;
      return push.call(this, filter);
    };
    GPUCommandEncoder.prototype.copyBufferToBuffer = function (this: GPUCommandEncoder, ...args: unknown[]) {
      if (((args[2] as GPUBuffer).usage & GPUBufferUsage.MAP_READ) !== 0) counts.readCopies++;
      return (copy as (...a: unknown[]) => undefined).apply(this, args);
    } as typeof copy;
    try {
      await work();
    } finally {
      GPUQueue.prototype.submit = submit;
      GPUDevice.prototype.pushErrorScope = push;
      GPUCommandEncoder.prototype.copyBufferToBuffer = copy;
    }
    return counts;
  }

  /** Makes the copies into MAP_READ buffers (read-backs) invalid — a source range outside the buffer — while `fail()` says so. */
  async function failingReadCopies<T>(work: () => Promise<T>, fail: () => boolean = () => true): Promise<T> {
    const copy = GPUCommandEncoder.prototype.copyBufferToBuffer;
    GPUCommandEncoder.prototype.copyBufferToBuffer = function (this: GPUCommandEncoder, ...args: unknown[]) {
      const [source, offset, destination] = args as [GPUBuffer, number, GPUBuffer];
      if ((destination.usage & GPUBufferUsage.MAP_READ) !== 0 && fail()) args[1] = source.size + 256 + offset;
      return (copy as (...a: unknown[]) => undefined).apply(this, args);
    } as typeof copy;
    try {
      return await work();
    } finally {
      GPUCommandEncoder.prototype.copyBufferToBuffer = copy;
    }
  }

  it('a small toHost() at the end of a chain records its copy into the chain\'s batch: one submission and one set of error scopes for calls and read-back', async () => {
    const n = 1000;
    const x = await toDevice(iota(n));
    const y = await toDevice(iota(n, 0.5));
    await axpy(1, x, y, { out: y }); // compile
    await y.toHost(); // a staging buffer of the read-back's size is in the pool now
    await synchronize();
    const want = iota(n, 0.5);
    for (let k = 0; k < 6; k++) for (let i = 0; i < n; i++) want[i] = Math.fround(i + want[i]!);
    const wantAfter = want.map((v, i) => Math.fround(i + v));
    const into = new Float32Array(n);
    const counts = await countQueueWork(async () => {
      for (let k = 0; k < 5; k++) await axpy(1, x, y, { out: y });
      await y.toHost(into);
    });
    // The old path submitted the calls' batch, then its own copy inside a runScoped section (three
    // scopes of its own): 2 submissions and 4 scopes.
    expect(counts).toEqual({ submits: 1, scopes: 1, readCopies: 1 });
    expect(differences(into, want)).toEqual([]);
    // A strided view (gathered on the host from the span it touches), and one element.
    const strided = await countQueueWork(async () => {
      await axpy(1, x, y, { out: y });
      expect(Array.from((await y.view([3], [7], 10).toHost()) as Float32Array)).toEqual([10, 17, 24].map((i) => wantAfter[i]!));
    });
    expect(strided).toEqual({ submits: 1, scopes: 1, readCopies: 1 });
    // With the GPU idle: one submission of its own, still inside error scopes.
    const idle = await countQueueWork(async () => {
      expect(Array.from((await y.view([1], [1], 999).toHost()) as Float32Array)).toEqual([wantAfter[999]]);
    });
    expect(idle).toEqual({ submits: 1, scopes: 1, readCopies: 1 });
    // Above LEAN_READBACK_MAX_BYTES a read-back keeps its own path (copy in a runScoped section).
    const big = await toDevice(new Float32Array(LEAN_READBACK_MAX_BYTES / 4 + 1).fill(2));
    await big.toHost();
    const large = await countQueueWork(async () => {
      await axpy(1, big, 1, { out: big });
      expect(((await big.toHost()) as Float32Array).every((v) => v === 3)).toBe(true);
    });
    expect(large.submits).toBe(2);
  });

  it('a call\'s host output above 1 MiB is read back in the call\'s own submission once a staging buffer of its size is pooled; in chunks, one submission per chunk', async () => {
    const n = LEAN_READBACK_MAX_BYTES / 4 + 1000; // over 1 MiB: toHost() would take its own path
    const x = iota(n, 0.25);
    const z = new Float32Array(n);
    const want = x.map((v, i) => Math.fround(2 * v + i));
    const y = iota(n);
    for (let k = 0; k < 3; k++) await axpy(2, x, y, { out: z }); // pools the read-back's staging buffer
    const whole = await countQueueWork(() => axpy(2, x, y, { out: z }));
    // The old path: the call's submission, then the copy's own once the call was seen done.
    expect(whole).toEqual({ submits: 1, scopes: 1, readCopies: 1 });
    expect(differences(z, want)).toEqual([]);
    const previous = setChunkBytes(n * 12 / 4); // host operands of 4 chunks
    try {
      z.fill(0);
      for (let k = 0; k < 3; k++) await axpy(2, x, y, { out: z });
      z.fill(0);
      let chunks = 0;
      setTransferTrace((e) => void (e.kind === 'chunk-issued' && chunks++));
      const chunked = await countQueueWork(() => axpy(2, x, y, { out: z }));
      expect(chunks).toBeGreaterThanOrEqual(4);
      expect(chunked.readCopies).toBe(chunks);
      expect(chunked.submits).toBe(chunks);
      expect(differences(z, want)).toEqual([]);
    } finally {
      setChunkBytes(previous);
      setTransferTrace(undefined);
    }
  });

  it('a small toHost() right after a set() not yet awaited still reads what set() wrote', async () => {
    const a = await toDevice(iota(16));
    await a.toHost(); // a staging buffer of this size in the pool
    const written = a.set(iota(16, 5));
    const back = (await a.toHost()) as Float32Array;
    await written;
    expect(differences(back, iota(16, 5))).toEqual([]);
  });

  it('the lean read-back: a call in flight that failed is thrown first with its own class and message, and `into` stays untouched', async () => {
    const x = await toDevice({ data: iota(8), shape: [2, 4] });
    const warm = await reader(x, Int32Array.from([0, 1]));
    await (warm as DeviceArray).toHost();
    const bad = (await reader(x, Int32Array.from([0, 9]))) as DeviceArray;
    const into = new Float32Array([-7, -7]);
    let error: unknown;
    const counts = await countQueueWork(async () => {
      error = await bad.toHost(into).catch((e: unknown) => e);
    });
    expect(counts.submits).toBe(1); // the lean path was taken
    expect(error).toBeInstanceOf(KernelRuntimeError);
    expect((error as Error).message).toMatch(/^gpu call #\d+ \(`kernel`\) failed: Index \[9\] is out of bounds/);
    expect(Array.from(into)).toEqual([-7, -7]);
    await expect(synchronize()).resolves.toBeUndefined(); // already reported by toHost()
  });

  it('the lean read-back: an error WebGPU reports for the calls\' submission is their DeviceError, thrown first; unrelated data read in that submission is read again', async () => {
    const n = 64;
    const x = await toDevice(iota(n));
    const other = await toDevice(iota(n, 3));
    const y = await deviceArray([n], 'float32');
    await axpy(1, x, 0, { out: y }); // compile
    await Promise.all([y.toHost(), other.toHost()]); // two staging buffers of the read-backs' size in the pool
    await synchronize();
    const restoreSubmit = failNextSubmission();
    const into = new Float32Array(n).fill(-1);
    let error: unknown;
    let unrelated: Float32Array;
    try {
      await axpy(2, x, 0, { out: y });
      // The first read-back (of data no call of the batch wrote) is recorded into the batch and
      // submits it; the second (of the calls' output) goes in a submission of its own.
      const both = [other.toHost(), y.toHost(into).catch((e: unknown) => e)] as const;
      unrelated = (await both[0]) as Float32Array;
      error = await both[1];
    } finally {
      restoreSubmit();
    }
    expect(error).toBeInstanceOf(DeviceError);
    expect((error as Error).message).toMatch(
      /^gpu call #\d+ \(`\w+`\) failed: The GPU reported an error for gpu call #\d+ \(`\w+`\) and the read-back \(toHost\) recorded after them, so none of their work was done/,
    );
    expect(Array.from(into)).toEqual(Array.from(new Float32Array(n).fill(-1)));
    expect(differences(unrelated!, iota(n, 3))).toEqual([]);
    await expect(synchronize()).resolves.toBeUndefined();
  });

  it('the lean read-back: a copy that fails is a DeviceError with nothing written; one that fails once is read again through the usual path', async () => {
    const n = 16;
    const x = await toDevice(iota(n, 2));
    await x.toHost();
    await synchronize();
    const into = new Float32Array(n).fill(-1);
    // Every read-back copy fails: the lean one, then the usual path's, which says what failed.
    const idle = await failingReadCopies(() => x.toHost(into).catch((e: unknown) => e));
    expect(idle).toBeInstanceOf(DeviceError);
    expect((idle as Error).message).toMatch(/validation error/i);
    expect(Array.from(into)).toEqual(Array.from(new Float32Array(n).fill(-1)));
    // Only the lean copy fails: the data still comes back right.
    await x.toHost(); // the failed copies' staging buffers were dropped: one for the lean path again
    let copies = 0;
    const again = await failingReadCopies(() => x.toHost(into), () => copies++ === 0);
    expect(copies).toBe(2);
    expect(differences(again as Float32Array, iota(n, 2))).toEqual([]);
    // A copy recorded into a batch of calls fails the batch's submission: the calls did not run, and
    // their DeviceError names the read-back recorded with them.
    await x.toHost();
    into.fill(-1);
    const inFlight = await failingReadCopies(async () => {
      await axpy(1, x, 1, { out: x });
      return x.toHost(into).catch((e: unknown) => e);
    });
    expect(inFlight).toBeInstanceOf(DeviceError);
    expect((inFlight as Error).message).toMatch(/failed: The GPU reported an error for gpu call #\d+ \(`\w+`\) and the read-back \(toHost\) recorded after them, so none of their work was done/);
    expect(Array.from(into)).toEqual(Array.from(new Float32Array(n).fill(-1)));
    await expect(synchronize()).resolves.toBeUndefined();
    // The error follows the data, as any failed call's does.
    await expect(x.toHost()).rejects.toThrow(/and the read-back \(toHost\) recorded after them/);
  });

  it('an awaited call on host arrays copies its output out in its own submission: one submission a call, the right elements (dense and strided outputs, 1 and 4,096 elements)', async () => {
    const saxpy = vectorize(['float32(float32, float32, float32)'], { target: 'gpu' })((a: number, x: number, y: number) => a * x + y);
    for (const n of [1, 4096]) {
      const [x, y] = [iota(n, 0.5), iota(n, 0.25)];
      const out = new Float32Array(n);
      await saxpy(2, x, y, { out }); // the first call of a size pools the staging buffer
      await synchronize();
      for (let round = 0; round < 3; round++) {
        out.fill(-1);
        const counts = await countQueueWork(() => saxpy(2 + round, x, y, { out }));
        expect(counts.submits).toBe(1);
        expect(counts.readCopies).toBe(1);
        expect(differences(out, iota(n).map((i) => (2 + round) * i * 0.5 + i * 0.25))).toEqual([]);
      }
    }
    // A strided output (every other element of a host array): scattered back, the rest untouched.
    const wide = new Float32Array(16).fill(-3);
    const view = { data: wide, shape: [8], strides: [2] };
    const [x, y] = [iota(8), iota(8)];
    await saxpy(1, x, y, { out: view });
    wide.fill(-3);
    const counts = await countQueueWork(() => saxpy(3, x, y, { out: view }));
    expect(counts.submits).toBe(1);
    expect(Array.from(wide)).toEqual(Array.from({ length: 16 }, (_, i) => (i % 2 === 0 ? 4 * (i / 2) : -3)));
  });

  it('an awaited call on host arrays that fails its bounds check throws its KernelRuntimeError and leaves the host output untouched (output copied out in the same submission)', async () => {
    const gather = guvectorize(['void(float32[:], int32, float32[:])'], '(n),()->()', { target: 'gpu' })((a: Float32Array, i: number, out: Float32Array) => {
      out[0] = a[i]!;
    });
    const a = { data: iota(8), shape: [2, 4] };
    const out = new Float32Array(2);
    await gather(a, Int32Array.from([0, 1]), { out });
    expect(Array.from(out)).toEqual([0, 5]);
    out.fill(-7);
    let error: unknown;
    const counts = await countQueueWork(async () => {
      error = await gather(a, Int32Array.from([0, 9]), { out }).catch((e: unknown) => e);
    });
    expect(counts.submits).toBe(1);
    expect(error).toBeInstanceOf(KernelRuntimeError);
    expect(Array.from(out)).toEqual([-7, -7]);
    // The next call still reads back right.
    await gather(a, Int32Array.from([3, 2]), { out });
    expect(Array.from(out)).toEqual([3, 6]);
  });

  it('the lean read-back: a device lost while it is in flight is a DeviceError with nothing written', async () => {
    const x = await toDevice(iota(16));
    await x.toHost();
    await synchronize();
    const { device } = await acquireDevice();
    const into = new Float32Array(16).fill(-1);
    const pending = x.toHost(into);
    device.destroy();
    await expect(pending).rejects.toThrow(DeviceError);
    expect(Array.from(into)).toEqual(Array.from(new Float32Array(16).fill(-1)));
    // In a chain: the calls' DeviceError.
    await sleep(20);
    const y = await toDevice(iota(16));
    await y.toHost();
    const { device: next } = await acquireDevice();
    await axpy(1, y, 1, { out: y });
    const inChain = y.toHost(into);
    next.destroy();
    await expect(inChain).rejects.toThrow(DeviceError);
    expect(Array.from(into)).toEqual(Array.from(new Float32Array(16).fill(-1)));
    await sleep(20);
  });
});
