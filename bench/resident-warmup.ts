/**
 * Device-resident SAXPY on one and two devices, timed the way bench/multigpu.ts times it (BACK_TO_BACK
 * calls into a sharded `out`, then `synchronize()`, ÷ BACK_TO_BACK; median of REPS after one
 * untimed chain) — first from an idle GPU ("cold", as multigpu.ts did), then after WARMUP_MS of the
 * same calls ("warm") — with the kernels' own GPU time (timestamp queries, back to back in one
 * pass) beside them. It tells whether a chain's wall time is the kernels' or the clock's: an idle
 * GPU's driver lowers its clock, and a chain of 20 SAXPY 2^28 calls lasts ~30 ms, less than the
 * clock takes to come up.
 *
 *   npx tsx bench/resident-warmup.ts --quick                   # lavapipe, small sizes
 *   bash .gpu/run.sh node --import tsx bench/resident-warmup.ts  # GPU host: 2^26, 2^28, 2^30
 *   … bench/resident-warmup.ts --devices 1                     # one GPU only
 *
 * Prints a line per measurement as it goes, then a table.
 */
import { spawnSync } from 'node:child_process';
import { setGpuOptions, type ShardedArray, synchronize, toDevice, vectorize } from '../src/index.js';
import { describeAdapter, setIdleReleaseMs, shutdownDevice } from '../src/targets/gpu/runtime/device.js';
import { timeKernels } from '../src/targets/gpu/runtime/kernel-timing.js';
import { markdownTable } from './lib/markdown.js';
import { median } from './lib/timing.js';

const quick = process.argv.includes('--quick');
const LOG2_SIZES = quick ? [16, 18] : [26, 28, 30];
const REPS = 3;
const BACK_TO_BACK = 20;
const WARMUP_MS = quick ? 200 : 1000;
/** Idle time before each cold measurement, so that the clock has come down again. */
const IDLE_MS = quick ? 100 : 3000;
/** `--devices 1`: one device only (a one-GPU host); else 1 and 2. */
const devicesAt = process.argv.indexOf('--devices');
const DEVICE_COUNTS = devicesAt >= 0 && process.argv[devicesAt + 1] === '1' ? [1] : [1, 2];

const started = performance.now();
const step = (what: string) => console.error(`[${((performance.now() - started) / 1e3).toFixed(1)} s] ${what}`);
setIdleReleaseMs(Infinity);
setGpuOptions({ devices: DEVICE_COUNTS.at(-1)!, memoryLimit: 2 ** 50 });
console.log(`gpu: ${await describeAdapter()}${quick ? ' (--quick sizes)' : ''}`);
const saxpy = vectorize(['float32(float32, float32, float32)'], { target: 'gpu' })((a: number, x: number, y: number) => a * x + y);

/** Milliseconds per call of a chain, median of REPS after one untimed chain (multigpu.ts's residentMs). */
async function chainMs(call: () => Promise<unknown>): Promise<number> {
  const chain = async () => {
    for (let k = 0; k < BACK_TO_BACK; k++) await call();
    await synchronize();
  };
  await chain();
  const times: number[] = [];
  for (let r = 0; r < REPS; r++) {
    const t0 = performance.now();
    await chain();
    times.push((performance.now() - t0) / BACK_TO_BACK);
  }
  return median(times);
}

/** The SM and memory clocks nvidia-smi reports now, or why it could not. */
function clocks(): string {
  const smi = spawnSync('nvidia-smi', ['--query-gpu=index,clocks.sm,clocks.mem', '--format=csv,noheader'], { encoding: 'utf8', timeout: 10_000 });
  return smi.status === 0 ? smi.stdout.trim().split('\n').join('; ') : 'no nvidia-smi';
}

const rows: string[][] = [];
for (const log2 of LOG2_SIZES) {
  const n = 2 ** log2;
  const xs = new Float32Array(n).fill(1.5);
  const ys = new Float32Array(n).fill(-0.25);
  for (const devices of DEVICE_COUNTS) {
    setGpuOptions({ devices });
    const dx = await toDevice(xs, { shard: true });
    const dy = await toDevice(ys, { shard: true });
    const dz = (await saxpy(2, dx, dy)) as ShardedArray;
    const call = () => saxpy(2, dx, dy, { out: dz });
    await synchronize();
    await new Promise((r) => setTimeout(r, IDLE_MS));
    const cold = await chainMs(call);
    const clocksCold = clocks();
    step(`2^${log2} on ${devices}: cold ${cold.toFixed(3)} ms/call (clocks after: ${clocksCold})`);
    const warmEnd = performance.now() + WARMUP_MS;
    while (performance.now() < warmEnd) {
      for (let k = 0; k < 8; k++) await call();
      await synchronize();
    }
    const warm = await chainMs(call);
    const clocksWarm = clocks();
    step(`2^${log2} on ${devices}: warm ${warm.toFixed(3)} ms/call (clocks after: ${clocksWarm})`);
    // Kernel time on device 0's clock: the shard there, back to back in one pass.
    let kernel = '–';
    if (devices === 1) {
      const { kernelMs } = await timeKernels(
        async () => {
          for (let r = 0; r < REPS; r++) {
            for (let k = 0; k < BACK_TO_BACK; k++) await call();
            await synchronize();
          }
        },
        { span: BACK_TO_BACK },
      );
      if (kernelMs.length) kernel = median(kernelMs).toFixed(3);
      step(`2^${log2} on 1: kernel ${kernel} ms (back to back, timestamps)`);
    }
    const bytes = 12 * n;
    rows.push([`2^${log2}`, String(devices), cold.toFixed(3), warm.toFixed(3), kernel, ((bytes / warm) * 1e-9).toFixed(2)]);
    for (const a of [dx, dy, dz]) a.destroy();
  }
}
console.log(
  markdownTable(
    ['SAXPY', 'devices', 'cold (ms/call)', 'warm (ms/call)', 'kernel (ms)', 'warm TB/s'].map((h, i) => ({ header: h, align: i < 2 ? 'left' : 'right' })),
    rows,
  ),
);
shutdownDevice();
