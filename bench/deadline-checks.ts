/**
 * What a `timeout` costs a cpu call: the JS runner with deadline checks (a decrement and a compare
 * per loop iteration, the clock every 4,096) against the same runner without them, on a kernel
 * that is all loop (a 64-step recurrence per element) and on SAXPY (the element loop only). Calls
 * without a `timeout` run the unchecked code, so they pay nothing; this measures the checked one.
 *
 *   npx tsx bench/deadline-checks.ts [--quick]
 */
import { setEngineMode, vectorize } from '../src/index.js';
import { formatRatio, formatSeconds } from './lib/format.js';
import { timeCalls } from './lib/timing.js';

const quick = process.argv.includes('--quick');
const n = quick ? 100_000 : 2_000_000;
const timing = { warmup: 2, samples: quick ? 5 : 9 };
setEngineMode('js'); // the engine a call with a timeout runs, with and without the checks

const loopy = vectorize(['float64(float64)'])((x: number) => {
  let s = x;
  for (let i = 0; i < 64; i++) s = s * 0.999 + i;
  return s;
});
const loopyWhile = vectorize(['float64(float64)'])((x: number) => {
  let s = x;
  let i = 0;
  while (s < 1e300 && i < 64) {
    s = s * 0.999 + i;
    i++;
  }
  return s;
});
const saxpy = vectorize(['float32(float32, float32, float32)'])((a: number, x: number, y: number) => a * x + y);
const x = Float64Array.from({ length: n }, (_, i) => i / n);
const xs = Float32Array.from({ length: n * 4 }, (_, i) => i / n);
const ys = new Float32Array(n * 4);

for (const [name, call] of [
  ['64-step loop per element', (limits: { timeout?: number }) => loopy(x, limits)],
  ['a while loop of 64 steps per element', (limits: { timeout?: number }) => loopyWhile(x, limits)],
  ['SAXPY (4n elements)', (limits: { timeout?: number }) => saxpy(2, xs, ys, limits)],
] as const) {
  const plain = await timeCalls(() => call({}), timing);
  const checked = await timeCalls(() => call({ timeout: 60_000 }), timing);
  console.log(`${name}: ${formatSeconds(plain.medianSeconds)} without a timeout, ${formatSeconds(checked.medianSeconds)} with one: ${formatRatio(checked.medianSeconds / plain.medianSeconds)}`);
}
