/**
 * A/B of the parallel target's placement by measurement (src/targets/parallel/placement.ts): a call
 * large enough for the pool runs on the calling thread where that measured faster for its kernel
 * (and, awaited, only where that takes ≤ 3 ms). Per corpus kernel (bench/corpus/kernels.ts, or any
 * subset), in one process and timed in turns sample by sample: the cpu target, and the parallel
 * target awaited and in `f.sync`, each with placement on (as shipped) and off (every such call on
 * the pool, as before). Ordinary typed arrays in, outputs allocated by the call, as users call it.
 * Warm-up calls first, enough for the engine choice's and the placement's trials to end, so the
 * figures are the steady state; "where" says where the last calls with placement on ran.
 *
 *   npx tsx bench/placement-ab.ts [--only a,b] [--scale 1/16] [--samples 7] [--warmup 24]
 */
import { ready, shutdown } from '../src/index.js';
import { __testing as parallelTesting } from '../src/targets/parallel/index.js';
import { probes } from '../src/probes.js';
import { median } from './lib/timing.js';
import { markdownTable } from './lib/markdown.js';
import { formatRatio, formatSeconds } from './lib/format.js';
import { mulberry32 } from '../tests/random.js';
import { CORPUS } from './corpus/kernels.js';
import { callArgument, makeInput } from './corpus/inputs.js';
import os from 'node:os';

const args = process.argv.slice(2);
const flag = (name: string) => (args.includes(name) ? args[args.indexOf(name) + 1] : undefined);
const only = flag('--only')?.split(',');
const scaleText = flag('--scale') ?? '1';
const scale = scaleText.includes('/') ? Number(scaleText.split('/')[0]) / Number(scaleText.split('/')[1]) : Number(scaleText);
const samples = Number(flag('--samples') ?? 7);
const warmup = Number(flag('--warmup') ?? 24);
for (const name of only ?? []) if (!CORPUS.some((k) => k.name === name)) throw new Error(`No corpus kernel named ${name}; the kernels are ${CORPUS.map((k) => k.name).join(', ')}.`);

const where = { pool: 0, thread: 0 };
probes.poolCall = () => void where.pool++;
probes.callingThreadCall = () => void where.thread++;

/** `call` with placement on or off. */
const withPlacement = (on: boolean, call: () => unknown) => async () => {
  const was = parallelTesting.measuredPlacement(on);
  try {
    await call();
  } finally {
    parallelTesting.measuredPlacement(was);
  }
};

/** Median seconds per call of each, timed in turns: per sample a batch of each lasting ≥ 5 ms. */
async function interleaved(calls: readonly (() => Promise<unknown>)[]): Promise<number[]> {
  let slowest = 0;
  for (const call of calls) {
    const start = performance.now();
    await call();
    slowest = Math.max(slowest, (performance.now() - start) / 1000);
  }
  const batch = Math.max(1, Math.ceil(0.005 / Math.max(slowest, 1e-7)));
  const times = calls.map((): number[] => []);
  for (let s = 0; s < samples; s++) {
    for (const [k, call] of calls.entries()) {
      const start = performance.now();
      for (let i = 0; i < batch; i++) await call();
      times[k]!.push((performance.now() - start) / 1000 / batch);
    }
  }
  return times.map(median);
}

/** Where the calls of `call` ran, over a few calls. */
async function placeOf(call: () => Promise<unknown>): Promise<string> {
  where.pool = where.thread = 0;
  for (let i = 0; i < 3; i++) await call();
  return where.thread && where.pool ? 'both' : where.thread ? 'thread' : 'workers';
}

await ready();
const started = performance.now();
const load = os.loadavg()[0]!;
const rows: string[][] = [];
for (const [i, kernel] of CORPUS.filter((k) => !only || only.includes(k.name)).entries()) {
  const size = Math.max(1, Math.round(kernel.fullSize * scale));
  const next = mulberry32(1000 + i);
  const callArgs = kernel.inputs(size).map((r) => callArgument(makeInput(r, next)));
  const cpu = kernel.makeUfunc('cpu');
  const parallel = kernel.makeUfunc('parallel');
  const contenders = [
    async () => cpu(...callArgs),
    withPlacement(false, () => parallel(...callArgs)),
    withPlacement(true, () => parallel(...callArgs)),
    withPlacement(false, () => parallel.sync(...callArgs)),
    withPlacement(true, () => parallel.sync(...callArgs)),
  ];
  for (let w = 0; w < warmup; w++) for (const c of contenders) await c();
  const [tCpu, awaitedOff, awaitedOn, syncOff, syncOn] = await interleaved(contenders);
  const awaitedWhere = await placeOf(contenders[2]!);
  const syncWhere = await placeOf(contenders[4]!);
  process.stderr.write(`${kernel.name}: awaited ${formatRatio(awaitedOn! / awaitedOff!)} (${awaitedWhere}), sync ${formatRatio(syncOn! / syncOff!)} (${syncWhere})\n`);
  rows.push([
    kernel.name, size.toLocaleString('en-US'), formatSeconds(tCpu!),
    formatSeconds(awaitedOff!), formatSeconds(awaitedOn!), formatRatio(awaitedOn! / awaitedOff!), awaitedWhere,
    formatSeconds(syncOff!), formatSeconds(syncOn!), formatRatio(syncOn! / syncOff!), syncWhere,
  ]);
}
await shutdown();
console.log(`\`npx tsx bench/placement-ab.ts ${args.join(' ')}\`: ${os.cpus()[0]?.model ?? 'unknown CPU'}, ${os.availableParallelism()} cores, Node ${process.version}; ` +
  `load average ${load.toFixed(1)} at the start, ${os.loadavg()[0]!.toFixed(1)} at the end; ${warmup} warm-up rounds, median of ${samples} samples in turns; ${((performance.now() - started) / 1000).toFixed(0)} s.\n`);
console.log(markdownTable(
  [
    { header: 'kernel' }, { header: 'size', align: 'right' }, { header: 'cpu', align: 'right' },
    { header: 'awaited, placement off', align: 'right' }, { header: 'awaited, on', align: 'right' }, { header: 'on ÷ off', align: 'right' }, { header: 'awaited runs on' },
    { header: 'sync, off', align: 'right' }, { header: 'sync, on', align: 'right' }, { header: 'on ÷ off', align: 'right' }, { header: 'sync runs on' },
  ],
  rows,
));
