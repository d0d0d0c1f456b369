/**
 * Kernel timings for the benchmarks (kernel-timing.ts): isolated dispatches and back-to-back spans,
 * on a real WebGPU device (lavapipe here, which has timestamp queries).
 */
import { expect, it } from 'vitest';
import { deviceArray, synchronize, toDevice, vectorize } from '../../../src/index.js';
import { acquireDevice } from '../../../src/targets/gpu/runtime/device.js';
import { timeKernels } from '../../../src/targets/gpu/runtime/kernel-timing.js';
import { describeGpu } from '../../gpu-available.js';
import { differences } from './compare-targets.js';

const iota = (n: number) => Float32Array.from({ length: n }, (_, i) => i);

/** Counts `queue.submit` calls and the compute passes begun with timestamp writes while `work` runs. */
async function countSubmits(work: () => Promise<void>): Promise<{ submits: number; timedPasses: number }> {
  const submit = GPUQueue.prototype.submit;
  const beginComputePass = GPUCommandEncoder.prototype.beginComputePass;
  let submits = 0;
  let timedPasses = 0;
  GPUQueue.prototype.submit = function (this: GPUQueue, ...args: Parameters<GPUQueue['submit']>) {
    submits++;
    return submit.apply(this, args);
  };
  GPUCommandEncoder.prototype.beginComputePass = function (this: GPUCommandEncoder, descriptor?: GPUComputePassDescriptor) {
    if (descriptor?.timestampWrites) timedPasses++;
    return beginComputePass.call(this, descriptor);
  };
  try {
    await work();
  } finally {
    GPUQueue.prototype.submit = submit;
    GPUCommandEncoder.prototype.beginComputePass = beginComputePass;
  }
  return { submits, timedPasses };
}

describeGpu('kernel timings', { timeout: 60_000 }, () => {
  const axpy = vectorize(['float32(float32, float32, float32)'], { target: 'gpu' })((a: number, x: number, y: number) => a * x + y);

  it('back to back: each span of n dispatches is one timed pass and one submission, one reading per span; isolated: one per dispatch', async () => {
    const { hasTimestamps } = await acquireDevice();
    const n = 4096;
    const x = await toDevice(iota(n));
    const y = await deviceArray([n], 'float32');
    await axpy(1, x, x, { out: y }); // compile
    await synchronize();
    let readings: number[] = [];
    const spans = await countSubmits(async () => {
      ({ kernelMs: readings } = await timeKernels(
        async () => {
          for (let r = 0; r < 2; r++) {
            for (let k = 0; k < 5; k++) await axpy(1, x, y, { out: y });
            await synchronize();
          }
        },
        { span: 5 },
      ));
    });
    expect(spans).toEqual(hasTimestamps ? { submits: 2, timedPasses: 2 } : { submits: 2, timedPasses: 0 });
    expect(readings.length).toBe(hasTimestamps ? 2 : 0);
    for (const ms of readings) expect(ms).toBeGreaterThan(0);
    const expected = iota(n).map((v) => Math.fround(2 * v));
    for (let k = 0; k < 10; k++) for (let i = 0; i < n; i++) expected[i] = Math.fround(i + expected[i]!);
    expect(differences((await y.toHost()) as Float32Array, expected)).toEqual([]);

    const isolated = await countSubmits(async () => {
      ({ kernelMs: readings } = await timeKernels(async () => {
        for (let k = 0; k < 3; k++) await axpy(1, x, y, { out: y });
      }));
      await synchronize();
    });
    expect(isolated.timedPasses).toBe(hasTimestamps ? 3 : 0);
    expect(readings.length).toBe(hasTimestamps ? 3 : 0);
  });

  it('a span interrupted by its batch being submitted, or left unfinished, is an error rather than a wrong reading', async () => {
    const { hasTimestamps } = await acquireDevice();
    if (!hasTimestamps) return;
    const x = await toDevice(iota(64));
    await expect(
      timeKernels(
        async () => {
          await axpy(1, x, x, { out: x });
          await synchronize(); // submits the span's batch after its first dispatch
          await axpy(1, x, x, { out: x });
        },
        { span: 2 },
      ),
    ).rejects.toThrow(/span was interrupted/);
    await synchronize();
    await expect(timeKernels(() => axpy(1, x, x, { out: x }), { span: 2 })).rejects.toThrow(/1 dispatches after its last whole span of 2/);
    await synchronize();
  });
});
