/**
 * Seed 004: SAXPY, z = a·x + y, over 16,777,216 float32 (NVIDIA's 512 threads × 32768 blocks),
 * checked as the seed checks it: `allclose(z, a*x + y)`.
 *
 *   npx tsx examples/saxpy.ts [cpu|parallel|gpu]
 */
import { vectorize, type TargetName, ready } from '../src/index.js';
import { isMain } from './util.js';

export const N = 16_777_216;

export function saxpyUfunc(target: TargetName) {
  return vectorize(['float32(float32, float32, float32)', 'float64(float64, float64, float64)'], { target })(
    (a: number, x: number, y: number) => a * x + y,
  );
}

/** Runs SAXPY with a = 2 on n elements; returns the largest error against a plain JS loop. */
export async function runSaxpy(target: TargetName, n = N): Promise<{ maxError: number; ms: number; z: Float32Array }> {
  const saxpy = saxpyUfunc(target);
  const x = new Float32Array(n).map((_, i) => Math.sin(i) * 100);
  const y = new Float32Array(n).map((_, i) => Math.cos(i) * 100);
  await saxpy(2, x.subarray(0, 1024), y.subarray(0, 1024)); // compile and warm up
  await ready(); // the parallel target's workers have started (they start when the ufunc is defined)
  const t0 = performance.now();
  const z = (await saxpy(2, x, y)) as Float32Array;
  const ms = performance.now() - t0;
  let maxError = 0;
  for (let i = 0; i < n; i++) maxError = Math.max(maxError, Math.abs(z[i]! - Math.fround(2 * x[i]! + y[i]!)));
  return { maxError, ms, z };
}

export async function main(target: TargetName = 'cpu'): Promise<void> {
  const { maxError, ms, z } = await runSaxpy(target);
  const allclose = maxError <= 1e-5 * 300;
  console.log(`saxpy on ${target}: ${N.toLocaleString('en')} float32 in ${ms.toFixed(1)} ms; z[0..3] = [${[...z.subarray(0, 3)].map((v) => v.toFixed(4)).join(', ')}]; max |z − (a·x + y)| = ${maxError}; allclose: ${allclose}`);
}

if (isMain(import.meta.url)) await main((process.argv[2] as TargetName | undefined) ?? 'cpu');
