/**
 * Monte Carlo π with `Math.random()` in a kernel: each loop iteration throws `points` uniform
 * points at the unit square and counts those inside the quarter circle; π ≈ 4 · inside / thrown.
 * With a `seed` the count is the same on every target, bit for bit (docs/random.md).
 *
 *   npx tsx examples/monte-carlo-pi.ts [cpu|parallel|gpu]
 */
import { vectorize, type TargetName } from '../src/index.js';
import { isMain } from './util.js';

export function quarterCircleHits(target: TargetName) {
  return vectorize(['int32(int32)'], { target })((points: number) => {
    let inside = 0;
    for (let k = 0; k < points; k++) {
      const x = Math.fround(Math.random());
      const y = Math.fround(Math.random());
      if (x * x + y * y < 1) inside++;
    }
    return inside;
  });
}

/** π from `batches` × `points` random points, and how many fell inside. */
export async function estimatePi(target: TargetName, batches = 4096, points = 1024, seed = 2026): Promise<{ pi: number; inside: number; thrown: number }> {
  const hits = quarterCircleHits(target);
  const counts = (await hits(new Int32Array(batches).fill(points), { seed })) as Int32Array;
  const inside = counts.reduce((sum, c) => sum + c, 0);
  const thrown = batches * points;
  return { pi: (4 * inside) / thrown, inside, thrown };
}

export async function main(target: TargetName = 'cpu'): Promise<void> {
  const { pi, inside, thrown } = await estimatePi(target);
  console.log(`π on ${target}: ${inside.toLocaleString('en')} of ${thrown.toLocaleString('en')} points inside the quarter circle: π ≈ ${pi.toFixed(5)} (error ${(pi - Math.PI).toExponential(2)})`);
}

if (isMain(import.meta.url)) await main((process.argv[2] as TargetName | undefined) ?? 'cpu');
