/**
 * Arrays dropped without destroy(): the buffer pool reports its device memory to V8, and a call
 * that had to create a buffer while more than the pool limit is taken resolves after the current
 * task, so finalisers of collected arrays can give buffers back during a chain (buffer-pool.ts).
 */
import { afterEach, expect, it } from 'vitest';
import { type DeviceArray, deviceArray, toDevice, vectorize } from '../../../src/index.js';
import { bufferPoolStats, setBufferPoolLimit, sizeClass, trimBufferPool } from '../../../src/targets/gpu/runtime/buffer-pool.js';
import { acquireDevice, setIdleReleaseMs } from '../../../src/targets/gpu/runtime/device.js';
import { describeGpu } from '../../gpu-available.js';

const MiB = 2 ** 20;
const iota = (n: number) => Float32Array.from({ length: n }, (_, i) => i);

afterEach(() => {
  setBufferPoolLimit(2 ** 30);
  setIdleReleaseMs(200);
});

describeGpu('buffer pool under pressure', () => {
  it('reports the device memory of its buffers to V8, in untouched 64 MiB ArrayBuffers', async () => {
    setIdleReleaseMs(Infinity);
    const ctx = await acquireDevice();
    trimBufferPool(ctx);
    const before = bufferPoolStats(ctx);
    const external = process.memoryUsage().arrayBuffers;
    const arrays = await Promise.all([0, 1, 2].map(() => deviceArray([(40 * MiB) / 4], 'float32')));
    const during = bufferPoolStats(ctx);
    expect(during.heldBytes - before.heldBytes).toBe(3 * sizeClass(40 * MiB));
    expect(during.reportedBytes).toBe(Math.floor(during.heldBytes / (64 * MiB)) * 64 * MiB);
    expect(during.reportedBytes).toBeGreaterThanOrEqual(before.reportedBytes + 64 * MiB);
    expect(process.memoryUsage().arrayBuffers - external).toBeGreaterThanOrEqual(during.reportedBytes - before.reportedBytes);
    for (const a of arrays) a.destroy();
    trimBufferPool(ctx); // destroys the free buffers: less device memory, less reported
    const after = bufferPoolStats(ctx);
    expect(after.heldBytes).toBe(during.heldBytes - 3 * sizeClass(40 * MiB));
    expect(after.reportedBytes).toBe(Math.floor(after.heldBytes / (64 * MiB)) * 64 * MiB);
  });

  it('a call that creates a buffer while more than the limit is taken resolves after the current task; results stay right', async () => {
    setIdleReleaseMs(Infinity);
    const ctx = await acquireDevice();
    const axpy = vectorize(['float32(float32, float32, float32)'], { target: 'gpu' })((a: number, x: number, y: number) => a * x + y);
    const n = 16_384; // 64 KiB
    const x = await toDevice(iota(n));
    (await axpy(1, x, 1)).destroy(); // compiled; the next calls are recorded at once
    const resolvesBeforeNextTask = async (call: () => Promise<unknown>) => {
      let nextTask = false;
      setImmediate(() => (nextTask = true));
      const z = (await call()) as DeviceArray;
      return { before: !nextTask, z };
    };
    // No pressure: a recorded call resolves within the current task.
    const calm = await resolvesBeforeNextTask(() => axpy(2, x, 1));
    expect(calm.before).toBe(true);
    // Pool limit 64 KiB, `x` alone takes that much: a call that needs a new buffer yields.
    setBufferPoolLimit(64 * 1024);
    const yieldsBefore = bufferPoolStats(ctx).yields;
    const pressed = await resolvesBeforeNextTask(() => axpy(3, x, 1));
    expect(pressed.before).toBe(false);
    expect(bufferPoolStats(ctx).yields).toBe(yieldsBefore + 1);
    expect([...((await pressed.z.toHost()) as Float32Array).subarray(0, 4)]).toEqual([1, 4, 7, 10]);
    expect([...((await calm.z.toHost()) as Float32Array).subarray(0, 4)]).toEqual([1, 3, 5, 7]);
    // A chain that drops its outputs under pressure computes the same as one that destroys them.
    let y = x;
    for (let k = 0; k < 40; k++) y = (await axpy(1, y, 1)) as typeof y;
    expect([...((await y.toHost()) as Float32Array).subarray(0, 3)]).toEqual([40, 41, 42]);
    expect(bufferPoolStats(ctx).yields).toBeGreaterThan(yieldsBefore + 1);
    x.destroy();
  });
});
