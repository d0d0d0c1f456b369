/**
 * Debugging a kernel as plain JS (`disableJit`, or `UFUNC_DISABLE_JIT=1` for every ufunc): a row
 * mean with an off-by-one loop, run with `console.log` in it, on any target. The kernel runs as the
 * function it is, so the log prints and the out-of-bounds read is reported with the array and row.
 *
 *   npx tsx examples/debug.ts [cpu|parallel|gpu]
 */
import { guvectorize, KernelRuntimeError, type NDArray, type TargetName } from '../src/index.js';
import { isMain } from './util.js';

/** The buggy and the fixed row mean on `target`, with what each printed. */
export async function runDebugExample(target: TargetName): Promise<{ lines: string[]; means: number[] }> {
  const lines: string[] = [];
  // A plain-JS kernel may use what the compiler refuses: here a closure (`fixed`) and `lines`.
  const rowMean = (fixed: boolean) =>
    guvectorize(['void(float32[:], float32[:])'], '(n)->()', { target, disableJit: true })(
      (x: Float32Array, out: Float32Array) => {
        let s = 0;
        for (let i = 0; fixed ? i < x.length : i <= x.length; i++) s += x[i]!;
        lines.push(`row [${[...x].join(', ')}] sum ${s}`); // console.log(…) works the same
        out[0] = s / x.length;
      },
    );
  const rows = { data: Float32Array.of(1, 2, 3, 4), shape: [2, 2] };
  try {
    await rowMean(false)(rows); // off by one: i reaches x.length
  } catch (e) {
    if (!(e instanceof KernelRuntimeError)) throw e;
    lines.push(`${e.name}: ${e.message}`);
  }
  const means = (await rowMean(true)(rows)) as NDArray;
  return { lines, means: [...means.data].map(Number) };
}

export async function main(target: TargetName = 'cpu'): Promise<void> {
  const { lines, means } = await runDebugExample(target);
  for (const line of lines) console.log(line);
  console.log(`row means: [${means.join(', ')}]`);
}

if (isMain(import.meta.url)) await main((process.argv[2] as TargetName | undefined) ?? 'cpu');
