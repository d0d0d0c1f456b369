/**
 * Device reductions and scans against one element-wise pass over the same data, on whatever GPU
 * runs it (issue 24's lavapipe goal: a device `reduce` ≤ 1.5× one element-wise pass). Cases:
 * `neg` (x → −x into `out`: reads and writes n floats), `sum` (add.reduce of n), `rows`
 * (row sums of R × n/R), `cols` (column sums of the same), `cumsum` (add.accumulate of n).
 * Rounds alternate the cases; medians of the rounds, kernel time from the GPU's timestamps.
 *
 *   npx tsx bench/fold-vs-pass.ts [n = 2^24] [rounds = 5] [R = 4096]
 */
import { deviceArray, synchronize, toDevice, vectorize, type DeviceArray } from '../src/index.js';
import { describeAdapter, setIdleReleaseMs } from '../src/targets/gpu/runtime/device.js';
import { timeKernels } from '../src/targets/gpu/runtime/kernel-timing.js';
import { median } from './lib/timing.js';

setIdleReleaseMs(Infinity);
const N = Number(process.argv[2] ?? 2 ** 24);
const ROUNDS = Number(process.argv[3] ?? 5);
const R = Number(process.argv[4] ?? 4096);
const neg = vectorize(['float32(float32)'], { target: 'gpu' })((x: number) => -x);
const add = vectorize(['float32(float32, float32)'], { target: 'gpu', identity: 0, associative: true })((a: number, b: number) => a + b);
const values = Float32Array.from({ length: N }, (_, i) => (i % 1000) * 0.001);
const x = await toDevice(values);
const m = await toDevice({ data: values, shape: [R, N / R] });
const out = await deviceArray([N], 'float32');
const settle = async (r: unknown) => {
  await synchronize();
  if (r && r !== out) (r as DeviceArray).destroy();
};
const kernelMs = async (fn: () => Promise<unknown>) => {
  const { kernelMs: ms } = await timeKernels(async () => settle(await fn()));
  return ms.reduce((a, b) => a + b, 0);
};
const wallMs = async (fn: () => Promise<unknown>) => {
  const t = performance.now();
  await settle(await fn());
  return performance.now() - t;
};
const cases: [string, () => Promise<unknown>][] = [
  ['neg', () => neg(x, { out })],
  ['sum', () => add.reduce(x)],
  ['rows', () => add.reduce(m, { axis: 1 })],
  ['cols', () => add.reduce(m, { axis: 0 })],
  ['cumsum', () => add.accumulate(x)],
];
for (const [, f] of cases) await settle(await f());
const kernels: Record<string, number[]> = {};
const walls: Record<string, number[]> = {};
for (let r = 0; r < ROUNDS; r++) {
  for (const [name, f] of cases) {
    (kernels[name] ??= []).push(await kernelMs(f));
    (walls[name] ??= []).push(await wallMs(f));
  }
}
console.log(`${await describeAdapter()}: n = ${N}, rows ${R} × ${N / R}, ${ROUNDS} rounds`);
const k0 = median(kernels.neg!);
const w0 = median(walls.neg!);
for (const [name] of cases) {
  const k = median(kernels[name]!);
  const w = median(walls[name]!);
  console.log(`${name.padEnd(7)} kernel ${k.toFixed(2).padStart(9)} ms (${(k / k0).toFixed(2)}× neg)   wall ${w.toFixed(2).padStart(9)} ms (${(w / w0).toFixed(2)}× neg)`);
}
process.exit(0);
