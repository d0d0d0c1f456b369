/**
 * The gpu target on one and on two devices (`setGpuOptions({ devices })`), in one run, against
 * CuPy on the same GPUs where it has a counterpart (bench/peers/cupy_multigpu.py):
 * - SAXPY over 2³⁰ float32 and the Hermite `()->(n)` table (2²⁴ rows × 16), device-resident
 *   (sharded with `toDevice(x, { shard: true })`, written into a sharded `out`): BACK_TO_BACK
 *   calls then `synchronize()`, wall time ÷ BACK_TO_BACK — what a chain of calls on resident data
 *   gets from a second GPU;
 * - the same calls from host arrays into a host `out` (uploads, kernels and read-backs; the memory
 *   limit raised so that nothing streams): what one call on ordinary typed arrays waits for;
 * - a streamed call: SAXPY over the same host arrays under a memory limit of STREAM_LIMIT per
 *   device (chunks in flight), against the host↔device copy rates measured in the same run
 *   (`set` and `toHost(into)` of COPY_BYTES into and out of an existing device array): the goal
 *   is ≥ 0.8× the copies alone.
 * Every figure is the median of REPS runs after a warm-up; "2 vs 1" is the ratio of the medians.
 *
 *   npx tsx bench/multigpu.ts            # full sizes (the GPU host: bash .gpu/run.sh npx tsx bench/multigpu.ts)
 *   npx tsx bench/multigpu.ts --quick    # small sizes; on lavapipe the two "devices" share the CPU
 *   npx tsx bench/multigpu.ts --saxpy-log2 28   # full sizes but SAXPY over 2²⁸ elements
 *   npx tsx bench/multigpu.ts --resident-only   # the device-resident rows alone (SAXPY 2³⁰'s host rows
 *                                               # take ~9 s a call: bench/multigpu-host.ts measures those)
 *
 * Prints one table and writes it to bench/results/multigpu-<adapter>.md. Without CuPy (no python3
 * that imports it, or fewer CUDA devices) the CuPy column says why.
 */
import { spawn, spawnSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { setGpuOptions, type ShardedArray, synchronize, toDevice, vectorize } from '../src/index.js';
import { describeAdapter, onDevice, setIdleReleaseMs, shutdownDevice } from '../src/targets/gpu/runtime/device.js';
import { hermiteUfuncs } from '../examples/hermite.js';
import { markdownTable } from './lib/markdown.js';
import { findPython } from './lib/python.js';
import { median } from './lib/timing.js';

const quick = process.argv.includes('--quick');
/** `--saxpy-log2 28`: a smaller SAXPY than the full 2³⁰ (e.g. to fit a host with less memory). */
const saxpyLog2At = process.argv.indexOf('--saxpy-log2');
const SAXPY_N = saxpyLog2At >= 0 ? 2 ** Number(process.argv[saxpyLog2At + 1]) : quick ? 1 << 20 : 2 ** 30;
/** Only the device-resident rows (and CuPy's), none from host arrays or streamed. */
const residentOnly = process.argv.includes('--resident-only');
const HERMITE_ROWS = quick ? 1 << 14 : 1 << 24;
const HERMITE_N = 16;
const REPS = 3;
const BACK_TO_BACK = quick ? 4 : 20;
/** Sustained calls before each device-resident row, so that the GPUs' clocks are up (as in bench/gpu.ts). */
const GPU_WARMUP_MS = quick ? 100 : 1000;
const COPY_BYTES = quick ? 16 * 2 ** 20 : 2 ** 30;
/** Per device, for the streamed row: well below the 3 × 4 GiB of SAXPY 2³⁰'s host arrays. */
const STREAM_LIMIT = quick ? 2 * 2 ** 20 : 2 * 2 ** 30;
/** Per device, for the other rows: nothing streams. */
const NO_STREAMING = 2 ** 50;
const DEVICE_COUNTS = [1, 2];

const started = performance.now();
/** A line on stderr per step, so that a run cut short shows how far it got. */
const step = (what: string) => console.error(`[${((performance.now() - started) / 1e3).toFixed(1)} s] ${what}`);
setIdleReleaseMs(Infinity); // the devices stay open for the whole run
// Opened as two devices from the start, so that device 0 is the same (the first GPU) in both halves.
setGpuOptions({ devices: 2 });
const adapter = await describeAdapter();
console.log(`gpu: ${adapter}${quick ? ' (--quick sizes)' : ''}`);

const saxpy = vectorize(['float32(float32, float32, float32)'], { target: 'gpu' })((a: number, x: number, y: number) => a * x + y);
const hermite = hermiteUfuncs('gpu').fromScalar;
const values = (n: number, seed: number) => {
  const v = new Float32Array(n);
  for (let i = 0; i < n; i++) v[i] = (((i + seed) * 7919) % 1000) / 100 - 5;
  return v;
};

/** Median wall milliseconds of `run`, after one untimed run. */
async function wallMs(run: () => Promise<unknown>): Promise<number> {
  await run();
  const times: number[] = [];
  for (let r = 0; r < REPS; r++) {
    const t0 = performance.now();
    await run();
    times.push(performance.now() - t0);
  }
  return median(times);
}

/**
 * Milliseconds per call of BACK_TO_BACK calls recorded one after another, then synchronize(),
 * after GPU_WARMUP_MS of the same calls: an idle GPU's driver lowers its clock, and a chain of 20
 * SAXPY 2^28 calls (~30 ms) is over before it comes back up (bench/resident-warmup.ts).
 */
async function residentMs(call: () => Promise<unknown>): Promise<number> {
  const chain = async () => {
    for (let k = 0; k < BACK_TO_BACK; k++) await call();
    await synchronize();
  };
  const warmEnd = performance.now() + GPU_WARMUP_MS;
  while (performance.now() < warmEnd) await chain();
  return (await wallMs(chain)) / BACK_TO_BACK;
}

interface Row {
  readonly work: string;
  readonly bytes: number;
  readonly ms: number[];
  cupyMs?: (number | undefined)[];
}

const xs = values(SAXPY_N, 1);
const ys = values(SAXPY_N, 2);
const zs = new Float32Array(SAXPY_N);
const hx = values(HERMITE_ROWS, 3);
const table = new Float32Array(HERMITE_ROWS * HERMITE_N);
const saxpyBytes = 12 * SAXPY_N;
const hermiteBytes = 4 * HERMITE_ROWS * (1 + HERMITE_N);
const rows: Row[] = [
  { work: `SAXPY ${fmtCount(SAXPY_N)}, device-resident (sharded)`, bytes: saxpyBytes, ms: [] },
  { work: `Hermite ()->(${HERMITE_N}), ${fmtCount(HERMITE_ROWS)} rows, device-resident (sharded)`, bytes: hermiteBytes, ms: [] },
  { work: `SAXPY ${fmtCount(SAXPY_N)} from host arrays`, bytes: saxpyBytes, ms: [] },
  { work: `Hermite ()->(${HERMITE_N}) from host arrays`, bytes: hermiteBytes, ms: [] },
  { work: `SAXPY ${fmtCount(SAXPY_N)} from host arrays, streamed (limit ${fmtBytes(STREAM_LIMIT)} per device)`, bytes: saxpyBytes, ms: [] },
];
let check = 'ok';
let expected: Float32Array | undefined;
let expectedTable: Float32Array | undefined;
const copyRates: { h2d: number; d2h: number }[] = [];
const gpuUse: string[] = [];

for (const devices of DEVICE_COUNTS) {
  setGpuOptions({ devices, memoryLimit: NO_STREAMING });
  console.log(`${devices} device(s)…`);
  const dx = await toDevice(xs, { shard: true });
  const dy = await toDevice(ys, { shard: true });
  const dz = await toDevice(zs, { shard: true });
  const dh = await toDevice(hx, { shard: true });
  const dt = (await hermite(dh, { dims: { n: HERMITE_N } })) as ShardedArray;
  // Which GPUs were busy: sampled by nvidia-smi while the resident SAXPY rows run (where it exists).
  const busy = sampleGpuUse();
  step(`${devices} device(s): arrays on the device(s)`);
  rows[0]!.ms.push(await residentMs(() => saxpy(2, dx, dy, { out: dz })));
  step(`${devices} device(s): resident SAXPY ${fmtMs(rows[0]!.ms.at(-1)!)} ms`);
  gpuUse.push(`${devices} device(s): ${await busy.stop()}`);
  rows[1]!.ms.push(await residentMs(() => hermite(dh, { out: dt })));
  // Same bits on every device count.
  const z = (await dz.toHost()) as Float32Array;
  const t = (await dt.toHost()) as Float32Array;
  expected ??= z;
  expectedTable ??= t;
  if (!sameBits(z, expected) || !sameBits(t, expectedTable)) check = `results on ${devices} devices differ from 1 device`;
  for (const a of [dx, dy, dz, dh, dt]) a.destroy();

  step(`${devices} device(s): resident Hermite ${fmtMs(rows[1]!.ms.at(-1)!)} ms`);
  if (residentOnly) continue;
  rows[2]!.ms.push(await wallMs(() => saxpy(2, xs, ys, { out: zs })));
  step(`${devices} device(s): host SAXPY ${fmtMs(rows[2]!.ms.at(-1)!)} ms`);
  rows[3]!.ms.push(await wallMs(() => hermite(hx, { out: { data: table, shape: [HERMITE_ROWS, HERMITE_N] } })));
  if (!sameBits(zs, expected) || !sameBits(table, expectedTable)) check = `host results on ${devices} devices differ from the device-resident ones`;

  step(`${devices} device(s): host Hermite ${fmtMs(rows[3]!.ms.at(-1)!)} ms`);
  setGpuOptions({ memoryLimit: STREAM_LIMIT });
  zs.fill(0);
  rows[4]!.ms.push(await wallMs(() => saxpy(2, xs, ys, { out: zs })));
  if (!sameBits(zs, expected)) check = `streamed results on ${devices} devices differ`;
  step(`${devices} device(s): streamed SAXPY ${fmtMs(rows[4]!.ms.at(-1)!)} ms`);
  copyRates.push(await copyRate());
  step(`${devices} device(s): copy rates measured`);
}

step('CuPy…');
const cupy = runCupy();
if (cupy.ok) {
  const c = cupy.value;
  rows[0]!.cupyMs = [c.saxpy_resident_ms[0], c.saxpy_resident_ms[1]];
  rows[1]!.cupyMs = [c.hermite_resident_ms[0], c.hermite_resident_ms[1]];
  rows[2]!.cupyMs = [c.saxpy_host_ms[0], c.saxpy_host_ms[1]];
  rows[3]!.cupyMs = [c.hermite_host_ms[0], c.hermite_host_ms[1]];
}

const header = ['work', ...DEVICE_COUNTS.map((d) => `${d} device${d > 1 ? 's' : ''} (ms)`), '2 vs 1', 'GB/s on 2', 'CuPy 1 / 2 (ms)'];
const shown = residentOnly ? rows.slice(0, 2) : rows;
const body = shown.map((r) => [
  r.work,
  ...r.ms.map(fmtMs),
  `${(r.ms[0]! / r.ms[1]!).toFixed(2)}×`,
  (r.bytes / r.ms[1]! / 1e6).toFixed(1),
  r.cupyMs ? r.cupyMs.map((m) => (m === undefined ? '–' : fmtMs(m))).join(' / ') : '–',
]);
// The streamed call against its copies alone: 8 bytes per element up, 4 down, at the rates measured here.
const streamGoal = residentOnly ? [] : DEVICE_COUNTS.map((d, k) => {
  const { h2d, d2h } = copyRates[k]!;
  const copiesMs = ((8 * SAXPY_N) / h2d + (4 * SAXPY_N) / d2h) * 1e3;
  return `${d} device(s): copies alone ${fmtMs(copiesMs)} ms (h2d ${(h2d / 1e9).toFixed(2)} GB/s, d2h ${(d2h / 1e9).toFixed(2)} GB/s per device, one at a time) → streamed call at ${(copiesMs / rows[4]!.ms[k]!).toFixed(2)}× the copy rate`;
});
const lines = [
  `# The gpu target on 1 and 2 devices${quick ? ' (--quick sizes)' : ''}`,
  '',
  `gpu: ${adapter}. ${new Date().toISOString().slice(0, 10)}. Medians of ${REPS} runs after a warm-up; device-resident rows: ${BACK_TO_BACK} calls then synchronize(), ÷ ${BACK_TO_BACK}, after ${GPU_WARMUP_MS} ms of the same calls. Results bit-identical across device counts: ${check}.`,
  '',
  markdownTable(header.map((h, i) => ({ header: h, align: i === 0 ? 'left' : 'right' })), body),
  '',
  ...streamGoal.map((s) => `- ${s}`),
  `- GPU use during the device-resident SAXPY row (nvidia-smi, highest utilization per GPU): ${gpuUse.join('; ')}`,
  `- CuPy: ${cupy.ok ? `${cupy.value.device}, ${cupy.value.devices} CUDA device(s); two devices = each half on its own device (cp.cuda.Device), timed together${cupy.value.check ? `; ${cupy.value.check}` : ''}` : cupy.reason}`,
  '',
  'Command: `npx tsx bench/multigpu.ts' + (quick ? ' --quick' : '') + (residentOnly ? ' --resident-only' : '') + '` (GPU host: `bash .gpu/run.sh npx tsx bench/multigpu.ts`).',
];
const report = lines.join('\n');
console.log(report);
const slug = adapter.split(':')[0]!.replace(/[^a-z0-9]+/gi, '-').toLowerCase();
const dir = fileURLToPath(new URL('./results/', import.meta.url));
mkdirSync(dir, { recursive: true });
writeFileSync(`${dir}multigpu-${slug}${quick ? '-quick' : ''}.md`, `${report}\n`);
shutdownDevice();

/** Host→device and device→host bytes per second on device 0: `set` and `toHost(into)` of an existing device array. */
async function copyRate(): Promise<{ h2d: number; d2h: number }> {
  const data = values(COPY_BYTES / 4, 5);
  const back = new Float32Array(data.length);
  let h2dMs = 0;
  const d2hMs = await onDevice(0, async () => {
    // Into and out of an existing device array: the copy alone, no device buffer made per copy.
    const d = await toDevice(data);
    try {
      h2dMs = await wallMs(async () => {
        await d.set(data);
        await synchronize();
      });
      return await wallMs(() => d.toHost(back));
    } finally {
      d.destroy();
    }
  });
  return { h2d: COPY_BYTES / (h2dMs / 1e3), d2h: COPY_BYTES / (d2hMs / 1e3) };
}

/** Starts nvidia-smi sampling every 100 ms; `stop()` says the highest utilization seen per GPU index. */
function sampleGpuUse(): { stop(): Promise<string> } {
  const peak = new Map<string, number>();
  let failure = '';
  const smi = spawn('nvidia-smi', ['--query-gpu=index,pci.bus_id,utilization.gpu', '--format=csv,noheader,nounits', '-lms', '100'], { stdio: ['ignore', 'pipe', 'ignore'] });
  smi.on('error', (e) => (failure = `nvidia-smi did not run (${e.message})`));
  smi.stdout.setEncoding('utf8').on('data', (chunk: string) => {
    for (const line of chunk.split('\n')) {
      const [index, bus, use] = line.split(',').map((f) => f.trim());
      if (index && bus && use && !Number.isNaN(Number(use))) peak.set(`GPU ${index} (${bus})`, Math.max(peak.get(`GPU ${index} (${bus})`) ?? 0, Number(use)));
    }
  });
  return {
    stop: () =>
      new Promise((resolve) => {
        const done = () => resolve(failure || [...peak].map(([gpu, use]) => `${gpu} ${use}%`).join(', ') || 'no samples');
        if (smi.exitCode !== null || failure) return done();
        smi.once('close', done);
        smi.kill();
      }),
  };
}

function sameBits(a: Float32Array, b: Float32Array): boolean {
  const x = new Uint32Array(a.buffer, a.byteOffset, a.length);
  const y = new Uint32Array(b.buffer, b.byteOffset, b.length);
  return x.length === y.length && x.every((v, i) => v === y[i]);
}

interface CupyReport {
  readonly device: string;
  readonly devices: number;
  readonly saxpy_resident_ms: (number | undefined)[];
  readonly hermite_resident_ms: (number | undefined)[];
  readonly saxpy_host_ms: (number | undefined)[];
  readonly hermite_host_ms: (number | undefined)[];
  /** Set when CuPy's SAXPY disagreed with NumPy's. */
  readonly check?: string;
}

function runCupy(): { ok: true; value: CupyReport } | { ok: false; reason: string } {
  const python = findPython(['cupy', 'numpy']);
  if (!python.ok) return python;
  const script = fileURLToPath(new URL('./peers/cupy_multigpu.py', import.meta.url));
  const run = spawnSync(python.value, [script, String(SAXPY_N), String(HERMITE_ROWS), String(REPS), String(BACK_TO_BACK), ...(residentOnly ? ['resident-only'] : [])], {
    encoding: 'utf8',
    timeout: 1_200_000,
    maxBuffer: 16 * 2 ** 20,
    env: { ...process.env, PYTHONDONTWRITEBYTECODE: '1' },
  });
  if (run.status !== 0) return { ok: false, reason: `cupy_multigpu.py failed (exit ${run.status}): ${(run.stderr || String(run.error)).trim().split('\n').slice(-2).join(' / ')}` };
  try {
    return { ok: true, value: JSON.parse(run.stdout.trim().split('\n').at(-1)!) as CupyReport };
  } catch {
    return { ok: false, reason: `cupy_multigpu.py printed no JSON: ${run.stdout.slice(-200)}` };
  }
}

function fmtMs(ms: number): string {
  return ms >= 100 ? ms.toFixed(0) : ms >= 1 ? ms.toFixed(2) : ms.toFixed(3);
}

function fmtCount(n: number): string {
  const log = Math.log2(n);
  return Number.isInteger(log) ? `2^${log}` : String(n);
}

function fmtBytes(n: number): string {
  return n >= 2 ** 30 ? `${n / 2 ** 30} GiB` : `${n / 2 ** 20} MiB`;
}
