/**
 * The parallel target against the cpu target, and what sending a call to the worker pool costs.
 *
 *   npx tsx bench/parallel.ts
 *
 * Goals: exp (10,000,000 float32) and Hermite (4,194,304 rows × 16) at least 1.7× faster than cpu
 * on 2 cores. Inputs and outputs live in shared memory (`sharedArray`), as the parallel target
 * wants them: nothing is copied per call.
 */
import os from 'node:os';

import { getParallelOptions, setParallelOptions, sharedArray, vectorize } from '../src/index.js';
import { formatCount, formatRatio, formatSeconds } from './lib/format.js';
import { markdownTable } from './lib/markdown.js';
import { beginStep, clearProgress, setTotalSteps } from './lib/progress.js';
import { timeCalls } from './lib/timing.js';
import { type Allocate, type FloatArray, callArguments, workloadNamed } from './workloads.js';

const SPEEDUP_GOAL = 1.7;
const timing = { warmup: 2, samples: 7 };
const cores = os.availableParallelism();
const allocateShared: Allocate = (length, dtype) => sharedArray(length, dtype) as FloatArray;

setTotalSteps(5);
const speedupRows: string[][] = [];
for (const workload of [workloadNamed('exp'), workloadNamed('hermite')]) {
  const problem = workload.makeProblem(workload.fullSize, 'float32', allocateShared);
  const args = callArguments(problem);
  const medians: number[] = [];
  for (const target of ['cpu', 'parallel'] as const) {
    beginStep(`${workload.name} · ${target}`);
    const ufunc = workload.makeUfunc(target, 'float32');
    medians.push((await timeCalls(() => ufunc(...args), timing)).medianSeconds);
  }
  const [cpu, parallel] = medians as [number, number];
  const speedup = cpu / parallel;
  speedupRows.push([
    `${workload.name}, ${formatCount(workload.fullSize)} ${workload.items}`,
    formatSeconds(cpu),
    formatSeconds(parallel),
    formatRatio(speedup),
    speedup >= SPEEDUP_GOAL ? `yes (≥ ${SPEEDUP_GOAL}×)` : `NO (goal ≥ ${SPEEDUP_GOAL}×)`,
  ]);
}

// One element per worker: each worker receives a chunk and does next to nothing with it, so the
// time is the round trip of posting work to the pool and collecting the answers. A call with less
// work than the pool's threshold runs on the calling thread instead, so the threshold is lowered
// to 0 for the measurement; the same call with the default threshold shows what small calls cost.
const identity = vectorize(['float32(float32)'], { target: 'parallel' })((x: number) => x);
const x = sharedArray(cores, 'float32');
const out = sharedArray(cores, 'float32');
const noWork = { warmup: 100, samples: 9, minSampleSeconds: 0.05 };
beginStep('dispatch overhead');
const { threshold } = getParallelOptions();
setParallelOptions({ threshold: 0 });
const dispatch = await timeCalls(() => identity(x, { out }), noWork);
setParallelOptions({ threshold });
const inline = await timeCalls(() => identity(x, { out }), noWork);
clearProgress();

console.log(`## parallel vs cpu target, ${cores} logical cores (median of ${timing.samples} samples)\n`);
console.log(
  markdownTable(
    [{ header: 'workload' }, { header: 'cpu', align: 'right' }, { header: 'parallel', align: 'right' }, { header: 'cpu ÷ parallel', align: 'right' }, { header: 'goal met' }],
    speedupRows,
  ),
);
console.log(`\n## dispatch overhead\n`);
console.log(
  markdownTable(
    [{ header: 'call' }, { header: 'time per call', align: 'right' }],
    [
      [`\`await identity(x, { out })\`, ${cores} elements, one per worker (threshold 0)`, formatSeconds(dispatch.medianSeconds)],
      [`the same call below the default threshold (${formatCount(threshold)}): runs on the calling thread`, formatSeconds(inline.medianSeconds)],
    ],
  ),
);
