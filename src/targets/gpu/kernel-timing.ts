/**
 * Kernel timings from the GPU's own clock (timestamp queries), for benchmarks: how long the
 * compute passes of the gpu calls made inside {@link timeKernels} took on the device, without the
 * host's submit and map latency. Internal: not exported from the package.
 */
import type { GpuContext } from './device.js';

interface TimingSession {
  readonly readings: Promise<number>[];
}

let session: TimingSession | undefined;

/**
 * Runs `work` and measures the GPU time of every gpu-target dispatch it makes (sessions do not
 * nest; run them one at a time).
 *
 * @param work the calls to time; it should await them
 * @returns its result, and per dispatch the kernel time in milliseconds (empty when the device has
 *   no `timestamp-query` feature)
 * @example
 * const { kernelMs } = await timeKernels(() => saxpy(2, dx, dy, { out: dz }));
 */
export async function timeKernels<T>(work: () => Promise<T>): Promise<{ result: T; kernelMs: number[] }> {
  if (session) throw new Error('timeKernels: a timing session is already running');
  const current: TimingSession = { readings: [] };
  session = current;
  try {
    const result = await work();
    const kernelMs = await Promise.all(current.readings);
    return { result, kernelMs };
  } finally {
    session = undefined;
  }
}

/** What a dispatch needs to record its time: a pass descriptor addition and a post-pass step. */
export interface PassTiming {
  readonly timestampWrites: GPUComputePassTimestampWrites;
  /** Encodes the resolve and the copy to a readable buffer; call after the pass ends. */
  resolve(encoder: GPUCommandEncoder): void;
  /** Call after submitting: starts the read-back. */
  collect(): void;
}

/**
 * Timing for one compute pass when a session is running and the device can time passes.
 *
 * @param ctx the device
 * @returns what the dispatch should add, or undefined when nothing is being timed
 */
export function passTiming(ctx: GpuContext): PassTiming | undefined {
  if (!session || !ctx.hasTimestamps) return undefined;
  const current = session;
  const { device } = ctx;
  const querySet = device.createQuerySet({ type: 'timestamp', count: 2 });
  const resolved = device.createBuffer({ size: 16, usage: GPUBufferUsage.QUERY_RESOLVE | GPUBufferUsage.COPY_SRC });
  const readable = device.createBuffer({ size: 16, usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST });
  return {
    timestampWrites: { querySet, beginningOfPassWriteIndex: 0, endOfPassWriteIndex: 1 },
    resolve(encoder) {
      encoder.resolveQuerySet(querySet, 0, 2, resolved, 0);
      encoder.copyBufferToBuffer(resolved, 0, readable, 0, 16);
    },
    collect() {
      const reading = readable.mapAsync(GPUMapMode.READ).then(() => {
        const [start, end] = new BigUint64Array(readable.getMappedRange());
        const ms = Number(end! - start!) / 1e6;
        readable.unmap();
        readable.destroy();
        resolved.destroy();
        querySet.destroy();
        return ms;
      });
      current.readings.push(reading);
    },
  };
}
