/**
 * Kernel timings from the GPU's own clock (timestamp queries), for benchmarks: how long the
 * compute passes of the gpu calls made inside {@link timeKernels} took on the device, without the
 * host's submit and map latency. Internal: not exported from the package.
 */
import { recordHeldCalls } from './chain.js';
import type { GpuContext } from './device.js';

interface TimingSession {
  readonly readings: Promise<number>[];
  /** Back to back: dispatches per reading (one compute pass, one submission), else undefined (one dispatch a reading). */
  readonly span: number | undefined;
  /** Dispatches of the current span recorded so far, and its pass timing. */
  inSpan: number;
  current: PassTiming | undefined;
}

let session: TimingSession | undefined;

/**
 * Runs `work` and measures the GPU time of the gpu-target dispatches it makes (sessions do not
 * nest; run them one at a time). Two ways:
 * - isolated (no `span`): every dispatch gets a compute pass and a submission of its own, timed
 *   from its pass's beginning to its end: one kernel with the per-submission work of the driver
 *   around it;
 * - back to back (`span: n`): every n consecutive dispatches are recorded into ONE compute pass
 *   and one submission with nothing in between (as the calls of a chain are), timed from that
 *   pass's beginning (before the first dispatch) to its end (after the last), and the reading is
 *   that time ÷ n. Make the calls of a span one after another without waiting on anything, and a
 *   multiple of n of them.
 *
 * @param work the calls to time; it should await them
 * @param options `span`: dispatches per back-to-back reading
 * @returns its result, and per reading the kernel time in milliseconds (empty when the device has
 *   no `timestamp-query` feature)
 * @example
 * const { kernelMs } = await timeKernels(() => saxpy(2, dx, dy, { out: dz }));
 * const { kernelMs: perDispatch } = await timeKernels(async () => { for (let k = 0; k < 20; k++) await saxpy(2, dx, dy, { out: dz }); }, { span: 20 });
 */
export async function timeKernels<T>(work: () => Promise<T>, options: { span?: number } = {}): Promise<{ result: T; kernelMs: number[] }> {
  if (session) throw new Error('timeKernels: a timing session is already running');
  const span = options.span;
  if (span !== undefined && !(Number.isInteger(span) && span >= 1)) throw new Error(`timeKernels: span must be a positive integer, got ${span}`);
  const current: TimingSession = { readings: [], span, inSpan: 0, current: undefined };
  recordHeldCalls(); // calls held for fusion before the session are not part of it
  session = current;
  try {
    const result = await work();
    if (current.inSpan !== 0) throw new Error(`timeKernels: the work made ${current.inSpan} dispatches after its last whole span of ${span}`);
    const kernelMs = await Promise.all(current.readings);
    return { result, kernelMs };
  } finally {
    session = undefined;
  }
}

/** Whether a timing session is running (calls are then recorded as they are made, never held for fusion). */
export function isTiming(): boolean {
  return session !== undefined;
}

/** What a dispatch needs to record its time: a pass descriptor addition and a post-pass step. */
export interface PassTiming {
  /** Whether this dispatch begins the timed pass (with `timestampWrites`); else it continues the open one. */
  readonly begins: boolean;
  /** Whether this dispatch ends the timed pass: then end it, `resolve`, submit, `collect`. */
  readonly ends: boolean;
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
  if (current.span === undefined) return newTiming(ctx, current, 1, true, true);
  const k = current.inSpan;
  current.inSpan = (k + 1) % current.span;
  const ends = k === current.span - 1;
  if (k === 0) current.current = newTiming(ctx, current, current.span, true, ends);
  else current.current = { ...current.current!, begins: false, ends };
  return current.current;
}

function newTiming(ctx: GpuContext, current: TimingSession, dispatches: number, begins: boolean, ends: boolean): PassTiming {
  const { device } = ctx;
  const querySet = device.createQuerySet({ type: 'timestamp', count: 2 });
  const resolved = device.createBuffer({ size: 16, usage: GPUBufferUsage.QUERY_RESOLVE | GPUBufferUsage.COPY_SRC });
  const readable = device.createBuffer({ size: 16, usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST });
  return {
    begins,
    ends,
    timestampWrites: { querySet, beginningOfPassWriteIndex: 0, endOfPassWriteIndex: 1 },
    resolve(encoder) {
      encoder.resolveQuerySet(querySet, 0, 2, resolved, 0);
      encoder.copyBufferToBuffer(resolved, 0, readable, 0, 16);
    },
    collect() {
      const reading = readable.mapAsync(GPUMapMode.READ).then(() => {
        const [start, end] = new BigUint64Array(readable.getMappedRange());
        const ms = Number(end! - start!) / 1e6 / dispatches;
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
