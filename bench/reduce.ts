/**
 * The reduce benchmark: `add.reduce` of 2^24 float32 (one sum) and row sums of a 4,096 × 4,096
 * float32 matrix (`reduce(x, { axis: 1 })`) on every target, against NumPy (`x.sum()`,
 * `x.sum(axis=1)`) measured in the same run, and CuPy where it is installed (the GPU machine).
 *
 * Run: `npx tsx bench/reduce.ts [--targets cpu,parallel,gpu] [--out FILE.json]` (or the built
 * `node dist/bench/reduce.js`). Times are medians of 7 samples after 2 warm-up calls, each the wall
 * time of the public call (`await add.reduce(...)`), host arrays in and out; on the gpu also device
 * arrays in and out (the result's one value or row read back, as a user would, inside the time).
 */
import { writeFileSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { availableTargets, synchronize, toDevice, vectorize, type TargetName } from '../src/index.js';
import { timeCalls } from './lib/timing.js';

// `--small`: a quick check that the script runs (2^16 and 256 × 256), not a measurement.
const SMALL = process.argv.includes('--small');
const SUM_N = SMALL ? 2 ** 16 : 2 ** 24;
const ROWS = SMALL ? 256 : 4096;

/** The data of bench/peers/reduce_peer.py: element i is float32((i % 1000) * 0.001). */
function data(n: number): Float32Array {
  const a = new Float32Array(n);
  for (let i = 0; i < n; i++) a[i] = (i % 1000) * 0.001;
  return a;
}

interface CaseResult {
  readonly median_s: number;
  readonly runs_s: readonly number[];
  readonly value: number;
}

function arg(name: string): string | undefined {
  const i = process.argv.indexOf(name);
  return i >= 0 ? process.argv[i + 1] : undefined;
}

function peer(lib: 'numpy' | 'cupy'): Record<string, unknown> | { error: string } {
  const script = fileURLToPath(new URL('./peers/reduce_peer.py', import.meta.url).href.replace('/dist/bench/', '/bench/'));
  for (const python of ['python3', '/usr/bin/python3']) {
    const r = spawnSync(python, [script, lib, '7'], { encoding: 'utf8', timeout: 600_000 });
    if (r.status === 0) return JSON.parse(r.stdout) as Record<string, unknown>;
    if (python === '/usr/bin/python3') return { error: (r.stderr || String(r.error)).trim().split('\n').slice(-1)[0]! };
  }
  return { error: 'no python' };
}

async function main(): Promise<void> {
  const available = await availableTargets();
  const targets = (arg('--targets')?.split(',') as TargetName[] | undefined) ?? available;
  const flat = data(SUM_N);
  const matrix = { data: data(ROWS * ROWS), shape: [ROWS, ROWS] };
  const results: Record<string, Record<string, CaseResult>> = {};
  for (const target of targets) {
    const add = vectorize(['float32(float32, float32)'], { target, identity: 0, associative: true })((a: number, b: number) => a + b);
    const sequential = vectorize(['float32(float32, float32)'], { target, identity: 0 })((a: number, b: number) => a + b);
    const row: Record<string, CaseResult> = {};
    const time = async (name: string, call: () => Promise<unknown>, value: (r: unknown) => Promise<number> | number, settle?: () => Promise<unknown>) => {
      let last: unknown;
      const t = await timeCalls(async () => (last = await call()), { warmup: 2, samples: 7, minSampleSeconds: 0, ...(settle ? { settle } : {}) });
      row[name] = { median_s: t.medianSeconds, runs_s: t.sampleSeconds, value: await value(last) };
      console.log(`${target.padEnd(8)} ${name.padEnd(22)} ${(t.medianSeconds * 1e3).toFixed(2).padStart(9)} ms  value ${row[name]!.value}`);
    };
    await time('sum', () => add.reduce(flat), (r) => r as number);
    await time('sum (sequential)', () => sequential.reduce(flat), (r) => r as number);
    await time('rows', () => add.reduce(matrix, { axis: 1 }), (r) => (r as { data: Float32Array }).data[0]!);
    // (gpu: host arrays are folded by the row kernels, one thread for one row; the tree takes device arrays)
    if (target !== 'gpu') await time('cumsum', () => add.accumulate(flat), (r) => (r as Float32Array)[SUM_N - 1]!);
    if (target === 'gpu') {
      const dFlat = await toDevice(flat);
      const dMatrix = await toDevice(matrix);
      type Device = { toHost(): Promise<Float32Array>; destroy(): void };
      const last = async (r: unknown) => {
        const h = await (r as Device).toHost();
        (r as Device).destroy();
        return h[h.length - 1]!;
      };
      // Read back (one value, or a row of 4,096), as a user who wants the number would.
      await time('sum, device arrays', async () => (await (await add.reduce(dFlat)) as Device).toHost(), (r) => (r as Float32Array)[0]!);
      await time('rows, device arrays', async () => (await (await add.reduce(dMatrix, { axis: 1 })) as Device).toHost(), (r) => (r as Float32Array)[0]!);
      // Result left on the device, timed to synchronize(): what CuPy's numbers measure.
      await time('sum, device, sync', () => add.reduce(dFlat), last, synchronize);
      await time('rows, device, sync', () => add.reduce(dMatrix, { axis: 1 }), last, synchronize);
      await time('cumsum, device, sync', () => add.accumulate(dFlat), last, synchronize);
    }
    results[target] = row;
  }
  const numpy = SMALL ? { skipped: '--small' } : peer('numpy');
  const cupy = SMALL ? { skipped: '--small' } : peer('cupy');
  console.log('numpy', JSON.stringify(numpy));
  console.log('cupy', JSON.stringify(cupy));
  const out = arg('--out');
  if (out) writeFileSync(out, JSON.stringify({ date: new Date().toISOString(), targets: results, numpy, cupy }, null, 2));
}

await main();
