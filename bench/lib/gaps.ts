/**
 * The event loop's gaps while work runs: an interval timer ticks throughout, and the gaps between
 * its ticks say how long the loop was held (bench/event-loop.ts, bench/placement-gaps.ts).
 */
export interface Gaps {
  readonly ms: number;
  readonly ticks: number;
  readonly longest: number;
  /** The median and the 99th percentile of the gaps. */
  readonly p50: number;
  readonly p99: number;
}

/** Runs `work` while an interval of `intervalMs` ticks; the gaps between its ticks. */
export async function gapsDuring(work: () => Promise<unknown>, intervalMs = 5): Promise<Gaps> {
  const gaps: number[] = [];
  let last = performance.now();
  const timer = setInterval(() => {
    const now = performance.now();
    gaps.push(now - last);
    last = now;
  }, intervalMs);
  const t0 = performance.now();
  await work();
  const ms = performance.now() - t0;
  clearInterval(timer);
  gaps.push(performance.now() - last);
  const sorted = [...gaps].sort((a, b) => a - b);
  const at = (q: number) => sorted[Math.floor(q * (sorted.length - 1))]!;
  return { ms, ticks: gaps.length - 1, longest: sorted[sorted.length - 1]!, p50: at(0.5), p99: at(0.99) };
}
