/**
 * An awaited call on the parallel target leaves the calling thread's event loop running: the
 * workers compute, the calling thread only waits (`Atomics.waitAsync`). A 5 ms interval timer counts
 * its ticks during a call of about a second and records the gaps between two ticks.
 *
 * The bounds asserted here are generous and relative to the same timer with nothing running (a
 * loaded CI machine with 2 cores runs two busy workers beside this thread, and the OS may deschedule
 * it for a while); bench/event-loop.ts measures the precise gap and the parallel speed-up.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import os from 'node:os';
import { ready, setParallelOptions, vectorize } from '../../../src/index.js';
import { __testing, DEFAULT_THRESHOLD } from '../../../src/targets/parallel/index.js';
import { callCounts } from '../../call-paths.js';

/** Compute-bound: a few hundred operations per element, little memory. */
const kernel = (x: number): number => {
  let s = 0;
  for (let i = 0; i < 400; i++) s += Math.sqrt(x + i) * 0.5;
  return s;
};
const onParallel = vectorize(['float64(float64)'], { target: 'parallel' })(kernel);

/** Runs `call` while a 5 ms interval ticks; returns the ticks seen and the 90th percentile of the gaps between them. */
async function ticksDuring(call: () => Promise<unknown>): Promise<{ ticks: number; gap90: number; ms: number }> {
  const gaps: number[] = [];
  let last = performance.now();
  const timer = setInterval(() => {
    const now = performance.now();
    gaps.push(now - last);
    last = now;
  }, 5);
  const t0 = performance.now();
  await call();
  const ms = performance.now() - t0;
  clearInterval(timer);
  gaps.push(performance.now() - last);
  gaps.sort((a, b) => a - b);
  return { ticks: gaps.length - 1, gap90: gaps[Math.floor(0.9 * (gaps.length - 1))]!, ms };
}

describe('an awaited parallel call', () => {
  beforeAll(async () => {
    setParallelOptions({ workers: Math.max(2, os.availableParallelism()) });
    await ready();
  }, 60_000);
  afterAll(async () => {
    setParallelOptions({ workers: os.availableParallelism(), threshold: DEFAULT_THRESHOLD });
    await __testing.resetPool();
  });

  it('keeps the event loop running while the workers compute', async () => {
    // Sized from a measurement on this machine, so that the call lasts about a second whatever its speed.
    const probe = new Float64Array(20_000).map((_, i) => i);
    const t0 = performance.now();
    onParallel.sync(probe);
    const perElement = (performance.now() - t0) / probe.length;
    const n = Math.min(20_000_000, Math.max(200_000, Math.round(1000 / perElement)));
    const xs = new Float64Array(n).map((_, i) => i * 0.25);
    // The same timer on this machine as it is now, with nothing running: what a free event loop gives
    // (other processes may delay any thread, this one included).
    const idle = await ticksDuring(() => new Promise((resolve) => setTimeout(resolve, 500)));
    callCounts(true);
    const { ticks, gap90, ms } = await ticksDuring(() => onParallel(xs));
    expect(callCounts(true).pool).toBe(1);
    // Timers fired throughout the call: at least a quarter of the rate of the free loop (a blocked
    // thread gives none until the call ends), and nine gaps in ten not much longer than the free
    // loop's (on a loaded machine the OS deschedules any thread now and then, for 100 ms and more).
    expect(ticks / ms).toBeGreaterThanOrEqual(idle.ticks / idle.ms / 4);
    expect(gap90).toBeLessThan(Math.max(50, 4 * idle.gap90));
  }, 60_000);

  it('gives the same results as the sync call, which also computes on the calling thread', async () => {
    const xs = new Float64Array(100_000).map((_, i) => i * 0.5);
    expect(await onParallel(xs)).toEqual(onParallel.sync(xs));
  }, 60_000);
});
