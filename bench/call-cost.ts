/**
 * What one gpu call costs its caller, per call, at sizes where the call's own work is small:
 * - SAXPY (`float32(float32, float32, float32)`) on 1 and 4,096 elements on device arrays into a
 *   device `out`, awaited one by one (`for (…) await f(2, dx, dy, { out })`) and not awaited
 *   (`for (…) f(…); await synchronize()`): not awaiting must never be slower;
 * - the same on host arrays into a host `out` (each call waits for the GPU and copies back), with
 *   the output copied out in the call's own submission (the default) and after it
 *   (`-readback-after`, the earlier path: a second submission once the call's work is done);
 * - three awaited element-wise calls on 2^16 elements (SAXPY, exp, multiply; per three calls), and
 *   bench/fuse.ts's chain of three as one `fuse`d call (per call);
 * - `reduce` and `accumulate` of an associative add, awaited, their results destroyed: a sum of
 *   64 and of 4,096, row sums of 64 × 64, a cumsum of 64 and of 4,096 on the device, and a sum of
 *   a 4,096-element host array; and (without `--quick`) bench/pace.ts's sizes: a sum and a cumsum of 2^24, row sums of
 *   4,096², awaited and (`-synced`) each followed by `synchronize()`, as pace.ts and CuPy time them.
 * The first chain of the process is reported apart (compilation, V8's tiers, first submissions),
 * then medians of REPS chains in steady state. CPU time per call is reported too, of the process
 * and (Linux) of its main thread alone — JS and Dawn's encoding, without the driver's threads
 * (on lavapipe, the GPU's work): the figure that moves with the library's per-call work, and one
 * that other load on the machine does not change.
 *
 *   npx tsx bench/call-cost.ts             # 1,000 calls a chain
 *   npx tsx bench/call-cost.ts --quick     # 200 calls a chain, for lavapipe
 *   npx tsx bench/call-cost.ts --gpu-warm-ms 0   # the large folds without the GPU-bound warm-up before them
 *   npx tsx bench/call-cost.ts --lib DIR   # the library of another checkout (bench/call-cost-ab.ts)
 *   node --cpu-prof --cpu-prof-dir=/tmp/prof --import tsx bench/call-cost.ts --quick --only device-4096-awaited
 *
 * `--json` ends the output with one line `JSON {rows}` (what bench/call-cost-ab.ts reads).
 * CuPy's side of the SAXPY loops, where CuPy is installed: bench/peers/cupy_call_cost.py.
 */
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { keepGpuBusy } from './lib/gpu-warm.js';
import { median } from './lib/timing.js';

const argv = process.argv.slice(2);
const flag = (name: string): string | undefined => (argv.includes(name) ? argv[argv.indexOf(name) + 1] : undefined);
const quick = argv.includes('--quick');
const only = flag('--only')?.split(',');
const CALLS = quick ? 200 : 1000;
/** Calls a chain of the large (pace-sized) cases. */
const LARGE_CALLS = 50;
const REPS = Number(flag('--reps') ?? (quick ? 5 : 9));
/**
 * `--sample-ms T`: each steady-state sample repeats the chain until it has run about T ms (the
 * main thread's CPU clock advances at context switches and ticks, so samples must be long).
 */
const SAMPLE_MS = Number(flag('--sample-ms') ?? 0);
/**
 * `--gpu-warm-ms T` (default 1,000, 0 with `--quick`): before the samples of a GPU-bound case (the
 * large folds), T ms of back-to-back 2^24-element SAXPY passes. A GPU's clocks follow its recent
 * load: on an H100 the same sum of 2^24 took 160 µs of kernel time (timestamps) after small calls
 * and 53–56 µs after bench/pace.ts's element-wise pass of 2^24 (bench/results/sync-probe-nvidia-h100.md),
 * and CuPy's figures are taken at its own loops' load. Each side of an A/B gets the same warm-up.
 */
const GPU_WARM_MS = Number(flag('--gpu-warm-ms') ?? (quick ? 0 : 1000));

// The library under test: this checkout's, or another's (`--lib DIR`), loosely typed so that
// the two checkouts' types need not agree.
const libDir = resolve(flag('--lib') ?? fileURLToPath(new URL('..', import.meta.url)));
const load = async (path: string) => (await import(pathToFileURL(resolve(libDir, path)).href)) as Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any
const { deviceArray, fuse, synchronize, toDevice, vectorize } = await load('src/index.ts');
const { acquireDevice, describeAdapter, setIdleReleaseMs } = await load('src/targets/gpu/runtime/device.ts');
const { setHostOutputReadback } = await load('src/targets/gpu/runtime/dispatch.ts');

setIdleReleaseMs(Infinity);
const saxpy = vectorize(['float32(float32, float32, float32)'], { target: 'gpu' })((a: number, x: number, y: number) => a * x + y);
const expf = vectorize(['float32(float32)'], { target: 'gpu' })((x: number) => Math.exp(x));
const mul = vectorize(['float32(float32, float32)'], { target: 'gpu' })((x: number, y: number) => x * y);
const add = vectorize(['float32(float32, float32)'], { target: 'gpu', identity: 0, associative: true })((a: number, b: number) => a + b);
await acquireDevice();
console.log(`gpu: ${await describeAdapter()}; ${CALLS} calls a chain (${LARGE_CALLS} for the large cases), ${REPS} chains; library ${libDir}`);

/** The main thread's CPU time so far in ns (Linux: /proc schedstat), or NaN where unknown. */
function mainThreadNs(): number {
  try {
    return Number(readFileSync(`/proc/${process.pid}/task/${process.pid}/schedstat`, 'utf8').split(' ')[0]);
  } catch {
    return Number.NaN;
  }
}

type Chain = () => Promise<void>;
interface Case {
  readonly name: string;
  readonly calls: number;
  readonly make: () => Promise<Chain>;
  /** A case whose calls are mostly GPU time: its samples start after {@link GPU_WARM_MS} of GPU-bound work. */
  readonly gpuBound?: boolean;
}
const fill = (n: number, k: number) => Float32Array.from({ length: n }, (_, i) => ((i * k) % 17) / 8);

function deviceCase(n: number, awaited: boolean): Case {
  return {
    name: `device-${n}-${awaited ? 'awaited' : 'not-awaited'}`,
    calls: CALLS,
    make: async () => {
      const [dx, dy] = await Promise.all([toDevice(fill(n, 3)), toDevice(fill(n, 5))]);
      const out = await deviceArray([n], 'float32');
      return awaited
        ? async () => {
            for (let k = 0; k < CALLS; k++) await saxpy(2, dx, dy, { out });
            await synchronize();
          }
        : async () => {
            for (let k = 0; k < CALLS; k++) void saxpy(2, dx, dy, { out });
            await synchronize();
          };
    },
  };
}

/** `readback`: the output copied out in the call's own submission (the default) or after it (the earlier path). */
function hostCase(n: number, readback: 'in-call' | 'after'): Case {
  return {
    name: `host-${n}-awaited${readback === 'after' ? '-readback-after' : ''}`,
    calls: CALLS,
    make: async () => {
      const [x, y, out] = [fill(n, 3), fill(n, 5), new Float32Array(n)];
      return async () => {
        const previous = setHostOutputReadback(readback);
        for (let k = 0; k < CALLS; k++) await saxpy(2, x, y, { out });
        setHostOutputReadback(previous);
      };
    },
  };
}

/** Three awaited element-wise calls on device arrays, per three (bench/pace.ts's "three calls"). */
function threeCase(n: number): Case {
  return {
    name: `three-${n}-awaited`,
    calls: CALLS,
    make: async () => {
      const a = await toDevice(fill(n, 3));
      const [t1, t2, t3] = await Promise.all([0, 1, 2].map(() => deviceArray([n], 'float32')));
      return async () => {
        for (let k = 0; k < CALLS; k++) {
          await saxpy(2, a, a, { out: t1 });
          await expf(t1, { out: t2 });
          await mul(t2, a, { out: t3 });
        }
        await synchronize();
      };
    },
  };
}

/** bench/fuse.ts's chain `mul(gauss(saxpy(2, x, y)), x)` as one `fuse`d call into a device `out`, awaited (issue 22 at 2^16). */
function fusedCase(n: number): Case {
  return {
    name: `fuse-${n}-awaited`,
    calls: CALLS,
    make: async () => {
      const gauss = vectorize(['float32(float32)'], { target: 'gpu' })((t: number) => Math.exp(-t * t));
      const fused = fuse(async (x: unknown, y: unknown) => mul(await gauss(await saxpy(2, x, y)), x));
      const [x, y] = await Promise.all([toDevice(fill(n, 3)), toDevice(fill(n, 5))]);
      const out = await deviceArray([n], 'float32');
      return async () => {
        for (let k = 0; k < CALLS; k++) await fused(x, y, { out });
        await synchronize();
      };
    },
  };
}

/**
 * An awaited fold per call (`fold(array)`: its result destroyed), the chain ended by
 * `synchronize()`; `synced`: each call followed by `synchronize()` (bench/pace.ts's measure, and
 * CuPy's there: `x.sum()` then `stream.synchronize()`).
 */
function foldCase(name: string, calls: number, array: () => Promise<unknown>, fold: (x: unknown) => Promise<unknown>, synced = false): Case {
  return {
    name: synced ? name.replace(/-awaited$/, '-synced') : name,
    calls,
    gpuBound: calls === LARGE_CALLS,
    make: async () => {
      const x = await array();
      return async () => {
        for (let k = 0; k < calls; k++) {
          const r = (await fold(x)) as { destroy?: () => void };
          r.destroy?.();
          if (synced) await synchronize();
        }
        await synchronize();
      };
    },
  };
}
const onDevice = (n: number, shape?: number[]) => () => toDevice(shape ? { data: fill(n, 3), shape } : fill(n, 3));
const sum = (x: unknown) => add.reduce(x);
const rowSums = (x: unknown) => add.reduce(x, { axis: 1 });
const cumsum = (x: unknown) => add.accumulate(x);

const CASES: Case[] = [
  deviceCase(4096, true), deviceCase(4096, false), deviceCase(1, true), deviceCase(1, false),
  hostCase(1, 'in-call'), hostCase(1, 'after'), hostCase(4096, 'in-call'), hostCase(4096, 'after'), hostCase(1, 'in-call'), hostCase(1, 'after'),
  threeCase(1 << 16),
  fusedCase(1 << 16),
  // Folds of 64 elements: the call's own cost where the GPU's work is nothing (also on lavapipe).
  foldCase('sum-64-awaited', CALLS, onDevice(64), sum),
  foldCase('cumsum-64-awaited', CALLS, onDevice(64), cumsum),
  // Each followed by synchronize(): a submission and its completion per call (pace.ts's nearest CuPy
  // figure, a 4,096-element call then `stream.synchronize()`, is 13–15 µs on an H100).
  foldCase('sum-64-awaited', CALLS, onDevice(64), sum, true),
  foldCase('sum-4096-awaited', CALLS, onDevice(4096), sum),
  foldCase('rowsums-64x64-awaited', CALLS, onDevice(4096, [64, 64]), rowSums),
  foldCase('cumsum-4096-awaited', CALLS, onDevice(4096), cumsum),
  foldCase('host-sum-4096-awaited', CALLS, async () => fill(4096, 3), sum),
  ...(quick
    ? []
    : [
        foldCase(`sum-${1 << 24}-awaited`, LARGE_CALLS, onDevice(1 << 24), sum),
        foldCase('rowsums-4096x4096-awaited', LARGE_CALLS, onDevice(1 << 24, [4096, 4096]), rowSums),
        foldCase(`cumsum-${1 << 24}-awaited`, LARGE_CALLS, onDevice(1 << 24), cumsum),
        foldCase(`sum-${1 << 24}-awaited`, LARGE_CALLS, onDevice(1 << 24), sum, true),
        foldCase('rowsums-4096x4096-awaited', LARGE_CALLS, onDevice(1 << 24, [4096, 4096]), rowSums, true),
        foldCase(`cumsum-${1 << 24}-awaited`, LARGE_CALLS, onDevice(1 << 24), cumsum, true),
      ].map((c): Case => ({ ...c, gpuBound: true }))),
];


interface Row {
  readonly name: string;
  readonly firstUs: number;
  readonly steadyUs: number;
  readonly cpuUs: number;
  readonly mainUs: number;
  /** The least main-thread CPU of a chain, per call: other load on the machine only ever adds to it. */
  readonly mainMinUs: number;
}
const rows: Row[] = [];
for (const c of CASES) {
  if ((only && !only.includes(c.name)) || rows.some((r) => r.name === c.name)) continue;
  const chain = await c.make();
  const t0 = performance.now();
  await chain();
  const firstMs = performance.now() - t0;
  const firstUs = (firstMs / c.calls) * 1e3;
  for (let w = 0; w < 2; w++) await chain();
  if (c.gpuBound && GPU_WARM_MS > 0) await keepGpuBusy(GPU_WARM_MS, { saxpy, toDevice, deviceArray, synchronize });
  const repeats = Math.max(1, Math.ceil(SAMPLE_MS / firstMs));
  const calls = repeats * c.calls;
  const walls: number[] = [];
  const cpus: number[] = [];
  const mains: number[] = [];
  for (let r = 0; r < REPS; r++) {
    const cpu0 = process.cpuUsage();
    const main0 = mainThreadNs();
    const start = performance.now();
    for (let k = 0; k < repeats; k++) await chain();
    walls.push(((performance.now() - start) / calls) * 1e3);
    mains.push((mainThreadNs() - main0) / 1e3 / calls);
    const cpu = process.cpuUsage(cpu0);
    cpus.push((cpu.user + cpu.system) / calls);
  }
  const row = { name: c.name, firstUs, steadyUs: median(walls), cpuUs: median(cpus), mainUs: median(mains), mainMinUs: Math.min(...mains) };
  rows.push(row);
  console.log(
    `${row.name.padEnd(26)} first chain ${row.firstUs.toFixed(1).padStart(8)} µs/call   steady ${row.steadyUs.toFixed(1).padStart(8)} µs/call   process CPU ${row.cpuUs.toFixed(1).padStart(8)} µs/call   main thread ${row.mainUs.toFixed(1).padStart(8)} µs/call`,
  );
}

const pair = (n: number) => [rows.find((r) => r.name === `device-${n}-awaited`), rows.find((r) => r.name === `device-${n}-not-awaited`)] as const;
for (const n of [4096, 1]) {
  const [a, b] = pair(n);
  if (a && b) console.log(`not awaiting ÷ awaiting, ${n} elements: ${(b.steadyUs / a.steadyUs).toFixed(2)}× (must be ≤ 1)`);
}

if (!argv.includes('--skip-peers') && !quick) {
  const peers = fileURLToPath(new URL('./peers/', import.meta.url));
  const result = spawnSync('python3', [`${peers}cupy_call_cost.py`, String(CALLS), String(REPS)], { cwd: peers, encoding: 'utf8', timeout: 300_000 });
  console.log(result.status === 0 ? `CuPy: ${result.stdout.trim()}` : `CuPy: not run (${(result.error?.message ?? result.stderr ?? '').trim().split('\n').slice(-1)[0]})`);
}
if (argv.includes('--json')) console.log(`JSON ${JSON.stringify({ adapter: await describeAdapter(), rows })}`);
process.exit(0);
