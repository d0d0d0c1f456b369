/**
 * Awaited parallel calls of one corpus kernel as users make them (ordinary inputs, the output
 * allocated by the call), printing each call's wall time: run under `--trace-gc` to see the
 * workers' heap collections between calls (worker.ts collects once a worker has let go of
 * `COLLECT_AFTER_BYTES` of shared memory; V8 prints those as "testing"):
 *
 *   node --trace-gc --import tsx bench/worker-collections.ts [kernel] [calls] | grep -c testing
 *
 * 12 calls first (calibration, warm-up), then `calls` (default 20) printed.
 */
import { callArgument, makeInput } from './corpus/inputs.js';
import { CORPUS } from './corpus/kernels.js';
import { mulberry32 } from '../tests/random.js';
import { shutdown } from '../src/index.js';
import { __testing as parallelTesting } from '../src/targets/parallel/index.js';

const name = process.argv[2] ?? 'softmax';
const calls = Number(process.argv[3] ?? 20);
const k = CORPUS.find((c) => c.name === name);
if (!k) throw new Error(`No corpus kernel named ${name}; the kernels are ${CORPUS.map((c) => c.name).join(', ')}.`);
parallelTesting.measuredPlacement(false);
const next = mulberry32(7);
const args = k.inputs(k.fullSize).map((r) => makeInput(r, next)).map(callArgument);
const f = k.makeUfunc('parallel') as unknown as (...a: unknown[]) => Promise<unknown>;
for (let i = 0; i < 12; i++) await f(...args);
const times: number[] = [];
for (let i = 0; i < calls; i++) {
  const t = performance.now();
  await f(...args);
  times.push(performance.now() - t);
  console.log(`call ${i}: ${times[i]!.toFixed(1)} ms`);
}
console.log(`${name}: ${calls} calls, median ${[...times].sort((a, b) => a - b)[Math.floor(calls / 2)]!.toFixed(1)} ms`);
await shutdown();
