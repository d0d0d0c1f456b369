/**
 * The event loop during a loop of awaited calls of a very cheap kernel on the parallel target, with
 * the placement by measurement on (calls run on the calling thread, each ≤ 3 ms, each followed by a
 * turn of the event loop: src/targets/parallel/placement.ts) and off (every call on the workers),
 * in alternating rounds of one second: calls made, and the gaps between the ticks of a 1 ms
 * interval timer (p50, p99, the longest). gamma-u8 of the corpus (a byte-table lookup) on
 * 1,048,576 ordinary uint8 elements, output allocated by the call.
 *
 *   npx tsx bench/placement-gaps.ts [--rounds 4] [--size N]
 */
import { ready, shutdown, vectorize } from '../src/index.js';
import { __testing as parallelTesting } from '../src/targets/parallel/index.js';
import { probes } from '../src/probes.js';
import { gapsDuring } from './lib/gaps.js';
import os from 'node:os';

const args = process.argv.slice(2);
const flag = (name: string) => (args.includes(name) ? args[args.indexOf(name) + 1] : undefined);
const rounds = Number(flag('--rounds') ?? 4);
const n = Number(flag('--size') ?? 1 << 20);
const where = { pool: 0, thread: 0 };
probes.poolCall = () => void where.pool++;
probes.callingThreadCall = () => void where.thread++;

const gamma = vectorize(['uint8(uint8)'], { target: 'parallel' })((p: number) => Math.min(255, Math.floor(255 * (p / 255) ** 0.4545)));
const pixels = new Uint8Array(n).map((_, i) => (i * 7) & 255);
await ready();
for (let i = 0; i < 40; i++) await gamma(pixels); // the engine choice's and the placement's trials
const load = os.loadavg()[0]!;
console.log(`${os.cpus()[0]?.model ?? 'unknown CPU'}, ${os.availableParallelism()} cores, Node ${process.version}; load average ${load.toFixed(1)} at the start\n`);
console.log('| round | placement | calls in 1 s | where | gap p50 | gap p99 | longest gap |\n|---:|---|---:|---|---:|---:|---:|');
for (let r = 0; r < rounds; r++) {
  const on = r % 2 === 0;
  const was = parallelTesting.measuredPlacement(on);
  where.pool = where.thread = 0;
  let calls = 0;
  const gaps = await gapsDuring(async () => {
    const start = performance.now();
    while (performance.now() - start < 1000) {
      await gamma(pixels);
      calls++;
    }
  }, 1);
  parallelTesting.measuredPlacement(was);
  console.log(`| ${r + 1} | ${on ? 'on' : 'off'} | ${calls} | ${where.thread} calling thread, ${where.pool} workers | ${gaps.p50.toFixed(1)} ms | ${gaps.p99.toFixed(1)} ms | ${gaps.longest.toFixed(1)} ms |`);
}
await shutdown();
