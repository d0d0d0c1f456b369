/**
 * The parallel target and the calling thread's event loop, in one run:
 *
 *   npx tsx bench/event-loop.ts [--quick] [--out FILE.md]
 *
 * 1. Gaps: a 5 ms `setInterval` counts its ticks while an awaited parallel call of about a second
 *    runs (a compute-bound kernel on ordinary arrays); reports the longest gap between two ticks and
 *    the ticks seen against the ticks a free event loop gives. Goal (issue 20): gaps ≤ 5 ms.
 *    A control row: as many plain worker threads as the pool has, spinning for as long as the call
 *    lasted (no ufunc) — what the OS's scheduling alone gives the calling thread while the cores are busy.
 * 2. Speed-up: the same kernel, awaited, on cpu and on parallel with ordinary `Float64Array`s, calls
 *    of about 0.3 s on one core (medians after warm-up, one run). Goal: parallel ≥ 1.7× cpu on 2 cores.
 *
 * Writes bench/results/event-loop-<machine>.md (`-quick` for --quick).
 */
import { writeFileSync } from 'node:fs';
import { Worker } from 'node:worker_threads';
import { describeMachine, machineMarkdown, machineSlug } from './lib/machine.js';
import { formatRatio, formatSeconds } from './lib/format.js';
import { markdownTable } from './lib/markdown.js';
import { timeCalls } from './lib/timing.js';
import { getParallelOptions, ready, shutdown, vectorize } from '../src/index.js';
import { gapsDuring } from './lib/gaps.js';

const args = process.argv.slice(2);
const quick = args.includes('--quick');
const outFlag = args.indexOf('--out');
const machine = describeMachine({ summary: 'not used by this benchmark' });
const outFile = outFlag >= 0 ? args[outFlag + 1]! : `bench/results/event-loop-${machineSlug(machine)}${quick ? '-quick' : ''}.md`;

/** Compute-bound: a few hundred operations per element on 8 bytes in and out. */
const kernel = (x: number): number => {
  let s = 0;
  for (let i = 0; i < 400; i++) s += Math.sqrt(x + i) * 0.5;
  return s;
};
const onCpu = vectorize(['float64(float64)'], { target: 'cpu' })(kernel);
const onParallel = vectorize(['float64(float64)'], { target: 'parallel' })(kernel);
await ready();

const probe = new Float64Array(20_000).map((_, i) => i);
await onCpu(probe);
const t0 = performance.now();
await onCpu(probe);
const perElementMs = (performance.now() - t0) / probe.length;
// The gaps: a parallel call of about a second (the same work on one core: a second per worker).
const n = Math.round((quick ? 300 : 1000) * getParallelOptions().workers / perElementMs);
const xs = new Float64Array(n).map((_, i) => i * 0.25);
// The speed-up: calls of about 0.3 s on one core, so that a 16-core run stays short.
const m = Math.round((quick ? 100 : 300) / perElementMs);
const ys = xs.subarray(0, Math.min(m, n));

const idle = await gapsDuring(() => new Promise((resolve) => setTimeout(resolve, quick ? 300 : 1000)));
await onParallel(xs);
const busy = await gapsDuring(() => onParallel(xs));
const spinners = await startSpinners(getParallelOptions().workers);
const spinning = await gapsDuring(() => spinners.spin(busy.ms));
await spinners.stop();

const timing = quick ? { warmup: 1, samples: 5 } : { warmup: 2, samples: 7 };
const cpu = await timeCalls(() => onCpu(ys), timing);
const parallel = await timeCalls(() => onParallel(ys), timing);

const report = [
  `# The parallel target and the event loop (${quick ? 'quick run' : 'full run'})`,
  '',
  '`npx tsx bench/event-loop.ts' + (quick ? ' --quick' : '') + '`, ' + new Date().toISOString().slice(0, 16).replace('T', ' ') + ' UTC',
  '',
  machineMarkdown(machine),
  `- parallel workers: ${getParallelOptions().workers}`,
  '',
  `Kernel: \`float64(float64)\`, 400 × (\`Math.sqrt\`, \`*\`, \`+\`) per element, in ordinary \`Float64Array\`s: ${n.toLocaleString('en')} elements for the gaps, ${ys.length.toLocaleString('en')} for the speed-up.`,
  '',
  '## A 5 ms interval timer during an awaited parallel call',
  '',
  markdownTable(
    [{ header: 'while' }, ...['lasted', 'ticks', 'ticks a free loop gives', 'longest gap', '99th percentile gap'].map((header) => ({ header, align: 'right' as const }))],
    [
      ['an idle `setTimeout`', `${idle.ms.toFixed(0)} ms`, String(idle.ticks), String(Math.floor(idle.ms / 5)), `${idle.longest.toFixed(1)} ms`, `${idle.p99.toFixed(1)} ms`],
      ['`await f(xs)` on parallel', `${busy.ms.toFixed(0)} ms`, String(busy.ticks), String(Math.floor(busy.ms / 5)), `${busy.longest.toFixed(1)} ms`, `${busy.p99.toFixed(1)} ms`],
      [`control: ${getParallelOptions().workers} plain workers spinning (no ufunc)`, `${spinning.ms.toFixed(0)} ms`, String(spinning.ticks), String(Math.floor(spinning.ms / 5)), `${spinning.longest.toFixed(1)} ms`, `${spinning.p99.toFixed(1)} ms`],
    ],
  ),
  '',
  '## Speed-up on ordinary arrays (awaited calls, medians after warm-up)',
  '',
  markdownTable(
    [{ header: 'target' }, { header: 'time', align: 'right' }, { header: 'cpu ÷ this', align: 'right' }],
    [
      ['cpu', formatSeconds(cpu.medianSeconds), '1.00×'],
      ['parallel', formatSeconds(parallel.medianSeconds), formatRatio(cpu.medianSeconds / parallel.medianSeconds)],
    ],
  ),
  '',
].join('\n');
console.log(report);
writeFileSync(outFile, report);
await shutdown();

/** `count` plain worker threads, started and online, that spin on request for `ms` each. */
async function startSpinners(count: number): Promise<{ spin(ms: number): Promise<unknown>; stop(): Promise<unknown> }> {
  const source = `const { parentPort } = require('node:worker_threads');
parentPort.on('message', (ms) => { const end = performance.now() + ms; let x = 0; while (performance.now() < end) x += Math.sqrt(x); parentPort.postMessage(x); });`;
  const workers = Array.from({ length: count }, () => new Worker(source, { eval: true }));
  await Promise.all(workers.map((w) => new Promise((resolve) => w.once('online', resolve))));
  return {
    spin: (ms) => Promise.all(workers.map((w) => new Promise((resolve) => (w.once('message', resolve), w.postMessage(ms))))),
    stop: () => Promise.all(workers.map((w) => w.terminate())),
  };
}
