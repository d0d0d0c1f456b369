/**
 * Wall-clock timing of a call: warm-up calls first, then samples, each repeating the call until it
 * has lasted long enough to read on the clock; the median over samples is the result. A median,
 * not a mean, so that one garbage collection or one scheduler hiccup does not move the number.
 */
import { showDetail } from './progress.js';

export interface TimingOptions {
  /**
   * Calls before timing starts. They pay for JIT tiers, kernel compilation, worker start-up and
   * the page faults of freshly allocated memory, none of which a steady-state number should hold.
   * @default 2
   */
  readonly warmup?: number;
  /** Timed samples; at least 5. @default 7 */
  readonly samples?: number;
  /**
   * A sample repeats the call until it has lasted this long (seconds), so that a call of a few
   * hundred nanoseconds is timed over many calls instead of against the clock's own cost.
   * @default 0.005
   */
  readonly minSampleSeconds?: number;
  /**
   * Awaited after each warm-up call and at the end of each sample, inside the timing: for work
   * that is only queued when a call returns, such as GPU submissions. Once per sample, not per
   * call, so that its own cost is spread over the sample's calls.
   */
  readonly settle?: () => Promise<unknown>;
}

export interface Timing {
  /** Median seconds per call over the samples. */
  readonly medianSeconds: number;
  /** Seconds per call in each sample, in the order taken. */
  readonly sampleSeconds: readonly number[];
  /** How many calls each sample made. */
  readonly callsPerSample: number;
}

const MIN_SAMPLES = 5;

export function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = sorted.length >> 1;
  return sorted.length % 2 === 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2;
}

function isThenable(value: unknown): value is PromiseLike<unknown> {
  return typeof (value as PromiseLike<unknown> | null)?.then === 'function';
}

/**
 * Times `call`, which may return a promise (awaited) or not (then no `await` is added to the loop:
 * it would cost more than a 1-element synchronous call itself).
 *
 * @param call the work to time; called `warmup + samples × callsPerSample` times and more
 * @param options warm-up calls, samples and the shortest sample; see {@link TimingOptions}
 * @returns the median seconds per call and every sample
 * @example
 * const { medianSeconds } = await timeCalls(() => saxpy(2, xs, ys, { out: zs }), { samples: 9 });
 */
export async function timeCalls(call: () => unknown, options: TimingOptions = {}): Promise<Timing> {
  const warmup = Math.max(1, options.warmup ?? 2);
  const samples = Math.max(MIN_SAMPLES, options.samples ?? 7);
  const minSampleSeconds = options.minSampleSeconds ?? 0.005;

  let isAsync = false;
  for (let i = 0; i < warmup; i++) {
    showDetail(`warm-up ${i + 1}/${warmup}`);
    const result = call();
    if (isThenable(result)) {
      isAsync = true;
      await result;
    }
    await options.settle?.();
  }

  const timeBatch = async (calls: number): Promise<number> => {
    const start = process.hrtime.bigint();
    if (isAsync) for (let i = 0; i < calls; i++) await call();
    else for (let i = 0; i < calls; i++) call();
    if (options.settle) await options.settle();
    return Number(process.hrtime.bigint() - start) / 1e9;
  };

  // Grow the batch until one lasts minSampleSeconds; that first long-enough batch is sample 1.
  let callsPerSample = 1;
  let seconds = await timeBatch(callsPerSample);
  while (seconds < minSampleSeconds) {
    showDetail(`calibrating (${callsPerSample} calls per sample)`);
    const scale = seconds > 0 ? (1.2 * minSampleSeconds) / seconds : 10;
    callsPerSample = Math.ceil(callsPerSample * Math.min(10, Math.max(2, scale)));
    seconds = await timeBatch(callsPerSample);
  }
  const sampleSeconds = [seconds / callsPerSample];
  while (sampleSeconds.length < samples) {
    showDetail(`sample ${sampleSeconds.length + 1}/${samples}`);
    sampleSeconds.push((await timeBatch(callsPerSample)) / callsPerSample);
  }
  return { medianSeconds: median(sampleSeconds), sampleSeconds, callsPerSample };
}
