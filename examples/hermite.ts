/**
 * Seed 001: a Hermite-style recurrence, one row of N values per input x — the kernel that Numba's
 * `@vectorize` cannot express and `@guvectorize` refuses as `()->(n)` ("undefined output symbols").
 * Both ways here: in place `(n)->(n)` (the answer the seed settled on) and `()->(n)` with `dims`.
 *
 *   npx tsx examples/hermite.ts [cpu|parallel|gpu]
 */
import { guvectorize, type NDArray, type TargetName, ready } from '../src/index.js';
import { isMain, formatTable } from './util.js';

/** out[0] = 1, out[1] = x, out[i] = x·out[i−1] − (i−1)·out[i−2], then out[i] /= √(i!). */
function recurrence(x: number, out: Float32Array): void {
  out[0] = 1;
  out[1] = x;
  for (let i = 2; i < out.length; i++) out[i] = x * out[i - 1]! - (i - 1) * out[i - 2]!;
  // A double, as in the seed (Numba's int64 `c`): an int32 would overflow at 13!.
  let c = 1.0;
  for (let i = 2; i < out.length; i++) {
    c *= i;
    out[i] /= Math.sqrt(c);
  }
}

export function hermiteUfuncs(target: TargetName) {
  /** `()->(n)`: the row length comes from `dims` (or from an `out` array). */
  const fromScalar = guvectorize(['void(float32, float32[:])', 'void(float64, float64[:])'], '()->(n)', {
    target,
    env: { recurrence },
  })((x: number, out: Float32Array) => {
    recurrence(x, out);
  });
  /** `(n)->(n)` in place: each row holds its x at index 1 and is overwritten with the result. */
  const inPlace = guvectorize(['void(float32[:], float32[:])', 'void(float64[:], float64[:])'], '(n)->(n)', {
    target,
    env: { recurrence },
  })((row: Float32Array, out: Float32Array) => {
    recurrence(row[1]!, out);
  });
  return { fromScalar, inPlace };
}

/** The seed's reference: rows [1, i, 1, 1] for i = 0..4, N = 4. */
export async function seedTable(target: TargetName): Promise<{ fromScalar: NDArray; inPlace: NDArray }> {
  const { fromScalar, inPlace } = hermiteUfuncs(target);
  const xs = Float32Array.from([0, 1, 2, 3, 4]);
  const table = (await fromScalar(xs, { dims: { n: 4 } })) as NDArray;
  const rows = { data: Float32Array.from([0, 1, 2, 3, 4].flatMap((i) => [1, i, 1, 1])), shape: [5, 4] };
  await inPlace(rows, { out: rows });
  return { fromScalar: table, inPlace: { ...rows, strides: [4, 1], offset: 0, dtype: 'float32', order: 'row-major' } };
}

export async function main(target: TargetName = 'cpu'): Promise<void> {
  const { fromScalar, inPlace } = await seedTable(target);
  console.log(`hermite on ${target}: ()->(n) with dims { n: 4 }`);
  console.log(formatTable(fromScalar));
  console.log(`hermite on ${target}: (n)->(n) in place`);
  console.log(formatTable(inPlace));

  const rows = 4_194_304;
  const { fromScalar: big } = hermiteUfuncs(target);
  const xs = new Float32Array(rows).map((_, i) => (i % 1000) / 250 - 2);
  await big(xs.subarray(0, 1024), { dims: { n: 16 } }); // compile and warm up
  await ready(); // the parallel target's workers have started (they start when the ufunc is defined)
  const t0 = performance.now();
  const result = (await big(xs, { dims: { n: 16 } })) as NDArray;
  const ms = performance.now() - t0;
  console.log(`hermite on ${target}: ${rows.toLocaleString('en')} rows × 16 in ${ms.toFixed(1)} ms; row 1001 = [${[...result.data.subarray(16 * 1001, 16 * 1001 + 4)].map((v) => Number(v).toFixed(4)).join(', ')}, …]`);
}

if (isMain(import.meta.url)) await main((process.argv[2] as TargetName | undefined) ?? 'cpu');
