/**
 * The cpu target against the hand-written loop, and the cost of calling a ufunc at all.
 *
 *   npx tsx bench/cpu.ts
 *
 * Goals: SAXPY (16,777,216 float32) and Math.exp (10,000,000 float32) within 1.2× of the loop's
 * time; a 1-element call under 2 µs, awaited or synchronous.
 */
import { vectorize } from '../src/index.js';
import { formatCount, formatRatio, formatSeconds } from './lib/format.js';
import { markdownTable } from './lib/markdown.js';
import { beginStep, clearProgress, setTotalSteps } from './lib/progress.js';
import { timeCalls } from './lib/timing.js';
import { allocateLocal, callArguments, workloadNamed } from './workloads.js';

const RATIO_GOAL = 1.2;
const OVERHEAD_GOAL_SECONDS = 2e-6;
const timing = { warmup: 2, samples: 9 };

setTotalSteps(6);
const throughputRows: string[][] = [];
for (const workload of [workloadNamed('saxpy'), workloadNamed('exp')]) {
  const problem = workload.makeProblem(workload.fullSize, 'float32', allocateLocal);
  beginStep(`${workload.name} · JS loop`);
  const loop = await timeCalls(() => workload.runLoop(problem), timing);
  beginStep(`${workload.name} · cpu`);
  const ufunc = workload.makeUfunc('cpu', 'float32');
  const args = callArguments(problem);
  const cpu = await timeCalls(() => ufunc.sync(...args), timing);
  const ratio = cpu.medianSeconds / loop.medianSeconds;
  throughputRows.push([
    `${workload.name}, ${formatCount(workload.fullSize)} float32`,
    formatSeconds(loop.medianSeconds),
    formatSeconds(cpu.medianSeconds),
    formatRatio(ratio),
    ratio <= RATIO_GOAL ? `yes (≤ ${RATIO_GOAL}×)` : `NO (goal ≤ ${RATIO_GOAL}×)`,
  ]);
}

// One element, output preallocated: what remains is the call itself (argument checks, signature
// dispatch, plan, the generated loop's entry), the cost every small call pays.
const saxpy = vectorize(['float32(float32, float32, float32)'], { target: 'cpu' })((a: number, x: number, y: number) => a * x + y);
const [x, y, z] = [Float32Array.of(1), Float32Array.of(2), new Float32Array(1)];
const overheadRows: string[][] = [];
for (const [label, call] of [
  ['`await saxpy(2, x, y, { out })`', () => saxpy(2, x, y, { out: z })],
  ['`saxpy.sync(2, x, y, { out })`', () => saxpy.sync(2, x, y, { out: z })],
] as const) {
  beginStep(`1-element call · ${label}`);
  const overhead = await timeCalls(call, { warmup: 1000, samples: 9, minSampleSeconds: 0.02 });
  overheadRows.push([
    label,
    formatSeconds(overhead.medianSeconds),
    overhead.medianSeconds < OVERHEAD_GOAL_SECONDS ? 'yes (< 2 µs)' : 'NO (goal < 2 µs)',
  ]);
}
clearProgress();

console.log('## cpu target vs hand-written loop (median of 9 samples)\n');
console.log(
  markdownTable(
    [{ header: 'workload' }, { header: 'JS loop', align: 'right' }, { header: 'cpu target', align: 'right' }, { header: 'cpu ÷ loop', align: 'right' }, { header: 'goal met' }],
    throughputRows,
  ),
);
console.log('\n## call overhead, 1 element\n');
console.log(markdownTable([{ header: 'call' }, { header: 'time per call', align: 'right' }, { header: 'goal met' }], overheadRows));
