/**
 * The gpu target against CuPy on the same GPU, in one run:
 * - SAXPY over 67,108,864 float32 and the Hermite recurrence over 4,194,304 rows × 16, with the
 *   data resident on the device, timed on the GPU's clock two ways, the same on both sides:
 *   back to back (BACK_TO_BACK dispatches recorded one after another into one compute pass and
 *   submission, timestamp queries at the pass's beginning and end, ÷ BACK_TO_BACK; CuPy: as many
 *   launches between two CUDA events) — the kernels of a chain run so, and the goals are judged
 *   by it — and isolated (one dispatch per submission, timestamp queries around its pass; CuPy:
 *   one launch between two events), which adds the per-submission work outside the shader;
 * - the Hermite kernels with row-major outputs against the same kernels writing a column-major
 *   view (`out` with strides [1, rows]): what coalescing recovers;
 * - host→device and device→host copies of 256 MiB (CuPy: from and into pageable NumPy arrays).
 *
 *   npx tsx bench/gpu.ts            # full sizes (the GPU machine: bash .gpu/run.sh npx tsx bench/gpu.ts)
 *   npx tsx bench/gpu.ts --quick    # small sizes, for lavapipe
 *
 * Prints one table and writes it to bench/results/gpu-<adapter>.md. Without CuPy (no python3 that
 * imports it, or no CUDA device) the CuPy column says why.
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { type DeviceArray, deviceArray, guvectorize, synchronize, toDevice, vectorize } from '../src/index.js';
import { acquireDevice, describeAdapter, setIdleReleaseMs, shutdownDevice } from '../src/targets/gpu/runtime/device.js';
import { timeKernels } from '../src/targets/gpu/runtime/kernel-timing.js';
import { markdownTable } from './lib/markdown.js';
import { findPython, type PythonPeerReport, runPythonPeer } from './lib/python.js';
import { median } from './lib/timing.js';
import { hermiteRow } from './workloads.js';

const quick = process.argv.includes('--quick');
const SAXPY_N = quick ? 1 << 20 : 67_108_864;
const HERMITE_ROWS = quick ? 1 << 16 : 4_194_304;
const HERMITE_N = 16;
const COPY_BYTES = quick ? 16 * 2 ** 20 : 256 * 2 ** 20;
const REPS = quick ? 5 : 20;
/** Dispatches per back-to-back reading; cupy_peer.py BACK_TO_BACK launches the same number. */
const BACK_TO_BACK = 20;
/** Sustained work before each kernel measurement (ms), so the GPU's clock is up; cupy_peer.py does the same. */
const GPU_WARMUP_MS = quick ? 0 : 1000;

setIdleReleaseMs(Infinity); // one device for the whole run
const ctx = await acquireDevice();
const adapter = await describeAdapter();
console.log(`gpu: ${adapter}${quick ? ' (--quick sizes)' : ''}`);

/** A kernel's milliseconds per dispatch, back to back (the goal's measure) and isolated. */
interface KernelTime {
  readonly ms: number;
  readonly isolatedMs: number;
  readonly clock: string;
}

/**
 * Kernel milliseconds of `call`, median of REPS readings: back to back (BACK_TO_BACK dispatches in
 * one compute pass, GPU time from the pass's beginning to its end ÷ BACK_TO_BACK, a synchronize()
 * between readings) and isolated (one dispatch per submission, its pass's GPU time), both from
 * timestamp queries; on a device without them, wall time to completion.
 */
async function kernelMs(call: () => Promise<unknown>): Promise<KernelTime> {
  await call(); // compile and warm up
  await call();
  // Sustained work first: an idle GPU's driver lowers its clock (see chain.ts, GPU_WARMUP_MS).
  const warmEnd = performance.now() + GPU_WARMUP_MS;
  while (performance.now() < warmEnd) {
    for (let k = 0; k < 8; k++) await call();
    await synchronize();
  }
  if (ctx.hasTimestamps) {
    const { kernelMs: backToBack } = await timeKernels(
      async () => {
        for (let r = 0; r < REPS; r++) {
          for (let k = 0; k < BACK_TO_BACK; k++) await call();
          await synchronize();
        }
      },
      { span: BACK_TO_BACK },
    );
    const { kernelMs: runs } = await timeKernels(async () => {
      for (let r = 0; r < REPS; r++) await call();
    });
    return { ms: median(backToBack), isolatedMs: median(runs), clock: 'timestamp queries' };
  }
  const backToBack: number[] = [];
  const runs: number[] = [];
  for (let r = 0; r < REPS; r++) {
    let t0 = performance.now();
    for (let k = 0; k < BACK_TO_BACK; k++) await call();
    await synchronize();
    backToBack.push((performance.now() - t0) / BACK_TO_BACK);
    t0 = performance.now();
    await call();
    await ctx.device.queue.onSubmittedWorkDone();
    runs.push(performance.now() - t0);
  }
  return { ms: median(backToBack), isolatedMs: median(runs), clock: 'wall clock (no timestamp queries)' };
}

function uniform(n: number, low: number, high: number, seed: number): Float32Array {
  const out = new Float32Array(n);
  let state = seed >>> 0;
  for (let i = 0; i < n; i++) {
    state = (Math.imul(state, 1664525) + 1013904223) >>> 0;
    out[i] = low + ((high - low) * state) / 2 ** 32;
  }
  return out;
}

// ---------------------------------------------------------------- the kernels

const saxpy = vectorize(['float32(float32, float32, float32)'], { target: 'gpu' })((a: number, x: number, y: number) => a * x + y);

const hermite = guvectorize(['void(float32, float32[:])'], '()->(n)', { target: 'gpu', env: { hermiteRow } })((x: number, out: Float32Array) => {
  hermiteRow(x, out);
});
const hermiteInPlace = guvectorize(['void(float32[:], float32[:])'], '(n)->(n)', { target: 'gpu', env: { hermiteRow } })((row: Float32Array, out: Float32Array) => {
  hermiteRow(row[1]!, out);
});

// ---------------------------------------------------------------- measurements

interface Row {
  readonly work: string;
  readonly ours: string;
  readonly peer: string;
  readonly ratio: number | undefined;
  /** Kernels: the isolated measure (one dispatch per submission; CuPy one launch), as "ours / CuPy (ratio)". */
  readonly isolated?: string;
  readonly goal: number;
  readonly goalText: string;
}
const rows: Row[] = [];
const notes: string[] = [];

const python = findPython(['cupy', 'numpy'], ['cupy', 'numpy']);
function cupy(workload: string, size: number): PythonPeerReport | string {
  if (!python.ok) return `CuPy skipped: ${python.reason}`;
  const run = runPythonPeer(python.value, 'cupy_peer.py', workload, size, REPS, 900);
  if (!run.ok) return `CuPy skipped: ${run.reason}`;
  if (run.value.results.length === 0) return `CuPy skipped: ${run.value.skipped.map((s) => s.reason).join('; ') || 'no result'}`;
  return run.value;
}
/** CuPy's kernel ms per launch: back to back (the goal's measure) and one launch alone. */
const cupyKernelMs = (report: PythonPeerReport | string) => {
  if (typeof report === 'string') return { ms: undefined, isolatedMs: undefined };
  const result = report.results[0]!;
  if (result.back_to_back_launches !== undefined && result.back_to_back_launches !== BACK_TO_BACK) {
    throw new Error(`cupy_peer.py times ${result.back_to_back_launches} launches back to back, bench/gpu.ts ${BACK_TO_BACK}: make them the same`);
  }
  return { ms: result.back_to_back_s === undefined ? undefined : result.back_to_back_s * 1e3, isolatedMs: result.median_s * 1e3 };
};
/** The isolated column: ours / CuPy (CuPy ÷ ours). */
const isolatedText = (ours: number, peer: number | undefined) => `${ours.toFixed(4)} / ${peer === undefined ? '—' : `${peer.toFixed(4)} ms (${(peer / ours).toFixed(2)}×)`}`;

/** CuPy's copy bandwidths (bytes/s), from its SAXPY run (pageable NumPy arrays). */
const cupyCopies: { h2d?: number; d2h?: number; d2hFresh?: number } = {};

const fmtMs = (ms: number, bytes: number) => `${ms.toFixed(3)} ms (${(bytes / (ms / 1e3) / 1e9).toPrecision(3)} GB/s)`;

// SAXPY
{
  const [dx, dy] = await Promise.all([toDevice(uniform(SAXPY_N, -1, 1, 1)), toDevice(uniform(SAXPY_N, -1, 1, 2))]);
  const dz = await deviceArray([SAXPY_N], 'float32');
  const { ms, isolatedMs, clock } = await kernelMs(() => saxpy(2, dx, dy, { out: dz }));
  notes.push(
    `Kernel times: ${clock}, median of ${REPS} readings, per dispatch. **Back to back** (the goal's measure): ${BACK_TO_BACK} dispatches recorded one after another ` +
      `into one compute pass and submission, from the pass's beginning to its end ÷ ${BACK_TO_BACK} (CuPy: ${BACK_TO_BACK} launches between two CUDA events ÷ ${BACK_TO_BACK}), ` +
      'a synchronize between readings on both sides: the kernels of a chain run so. **Isolated**: one dispatch per submission, its pass timed ' +
      '(CuPy: one launch between two events, synchronized between launches): it adds per-submission work outside the shader (Dawn/Vulkan on our side).',
  );
  const z = (await dz.toHost()) as Float32Array;
  const x = (await dx.toHost()) as Float32Array;
  const y = (await dy.toHost()) as Float32Array;
  for (let i = 0; i < SAXPY_N; i += 9973) {
    if (Math.abs(z[i]! - Math.fround(2 * x[i]! + y[i]!)) > 1e-6) throw new Error(`saxpy: wrong result at ${i}: ${z[i]}`);
  }
  const peer = cupy('saxpy', SAXPY_N);
  const peerMs = cupyKernelMs(peer);
  if (typeof peer === 'string') notes.push(peer);
  rows.push({
    work: `SAXPY, ${SAXPY_N.toLocaleString('en')} float32 (device-resident)`,
    ours: fmtMs(ms, SAXPY_N * 12),
    peer: peerMs.ms === undefined ? '—' : fmtMs(peerMs.ms, SAXPY_N * 12),
    ratio: peerMs.ms === undefined ? undefined : peerMs.ms / ms,
    isolated: isolatedText(isolatedMs, peerMs.isolatedMs),
    goal: 0.9,
    goalText: '≥ 0.9× CuPy',
  });
  dx.destroy();
  dy.destroy();
  dz.destroy();
  if (typeof peer !== 'string' && peer.results[0]!.h2d_s !== undefined) {
    notes.push(`CuPy ${peer.cupy} on ${peer.device}.`);
    cupyCopies.h2d = peer.results[0]!.h2d_bytes! / peer.results[0]!.h2d_s!;
    cupyCopies.d2h = peer.results[0]!.d2h_bytes! / peer.results[0]!.d2h_s!;
    if (peer.results[0]!.d2h_fresh_s !== undefined) cupyCopies.d2hFresh = peer.results[0]!.d2h_bytes! / peer.results[0]!.d2h_fresh_s;
  }
}

// Hermite, row-major (staged through workgroup memory) and column-major (coalesced as it is)

/** The two Hermite rows of the table: against CuPy, and row-major against column-major. */
function pushHermiteRows(layout: string, variant: string, row: KernelTime, column: KernelTime, peerMs: { ms?: number; isolatedMs?: number }, bytes: number): void {
  rows.push({
    work: `Hermite ${layout}${variant}, ${HERMITE_ROWS.toLocaleString('en')} rows × ${HERMITE_N}, row-major`,
    ours: fmtMs(row.ms, bytes),
    peer: peerMs.ms === undefined ? '—' : fmtMs(peerMs.ms, bytes),
    ratio: peerMs.ms === undefined ? undefined : peerMs.ms / row.ms,
    isolated: isolatedText(row.isolatedMs, peerMs.isolatedMs),
    goal: 0.9,
    goalText: '≥ 0.9× CuPy',
  });
  rows.push({
    work: `Hermite ${layout}${variant}, row-major vs column-major${variant ? '' : ' output'}`,
    ours: `${row.ms.toFixed(3)} ms row-major`,
    peer: `${column.ms.toFixed(3)} ms column-major (ufunc)`,
    ratio: column.ms / row.ms,
    isolated: `${row.isolatedMs.toFixed(4)} / ${column.isolatedMs.toFixed(4)} ms column-major (${(column.isolatedMs / row.isolatedMs).toFixed(2)}×)`,
    goal: 0.8,
    goalText: 'row-major ≥ 0.8× column-major',
  });
}

{
  const bytes = HERMITE_ROWS * HERMITE_N * 4;
  const xs = uniform(HERMITE_ROWS, -2, 2, 3);
  const dx = await toDevice(xs);
  const rowMajor = await deviceArray([HERMITE_ROWS, HERMITE_N], 'float32');
  const columnStorage = await deviceArray([HERMITE_N, HERMITE_ROWS], 'float32');
  const columnMajor = columnStorage.view([HERMITE_ROWS, HERMITE_N], [1, HERMITE_ROWS]);
  const row = await kernelMs(() => hermite(dx, { out: rowMajor }));
  const column = await kernelMs(() => hermite(dx, { out: columnMajor }));
  await checkHermite(xs, rowMajor, 'row-major');
  await checkHermite(xs, columnMajor, 'column-major');
  const peerMs = cupyKernelMs(cupy('hermite', HERMITE_ROWS));
  pushHermiteRows('`()->(n)`', '', row, column, peerMs, bytes + HERMITE_ROWS * 4);

  // In place: each row holds its x at index 1.
  const rowsData = new Float32Array(HERMITE_ROWS * HERMITE_N).fill(1);
  for (let r = 0; r < HERMITE_ROWS; r++) rowsData[r * HERMITE_N + 1] = xs[r]!;
  const inPlaceRows = await toDevice({ data: rowsData, shape: [HERMITE_ROWS, HERMITE_N] });
  const columnRows = await toDevice({ data: transpose(rowsData), shape: [HERMITE_N, HERMITE_ROWS] });
  const columnView = columnRows.view([HERMITE_ROWS, HERMITE_N], [1, HERMITE_ROWS]);
  const inPlace = await kernelMs(() => hermiteInPlace(inPlaceRows, { out: inPlaceRows }));
  const inPlaceColumn = await kernelMs(() => hermiteInPlace(columnView, { out: columnView }));
  await checkHermite(xs, inPlaceRows, 'in place, row-major');
  await checkHermite(xs, columnView, 'in place, column-major');
  const inPlacePeer = cupyKernelMs(cupy('hermite-inplace', HERMITE_ROWS));
  pushHermiteRows('`(n)->(n)`', ' in place', inPlace, inPlaceColumn, inPlacePeer, bytes + HERMITE_ROWS * 4);
  for (const d of [dx, rowMajor, columnStorage, inPlaceRows, columnRows]) d.destroy();
}

// Copies of 256 MiB: into and out of arrays that exist (as CuPy's `set` and `get(out=…)` are
// timed), and into a new array (`toHost()`, as CuPy's `cp.asnumpy`). The first round of each is
// reported apart: a large transfer that repeats goes through a staging buffer of its own size,
// which the second one creates (buffers.ts, chunkBytesFor).
{
  const host = uniform(COPY_BYTES / 4, -1, 1, 4);
  const back = new Float32Array(host.length);
  const onDevice = await deviceArray([host.length], 'float32');
  const up: number[] = [];
  const down: number[] = [];
  const fresh: number[] = [];
  const rounds = Math.max(3, Math.min(REPS, 7)) + 2;
  for (let r = 0; r < rounds; r++) {
    const t0 = performance.now();
    await onDevice.set(host);
    await ctx.device.queue.onSubmittedWorkDone();
    const t1 = performance.now();
    await onDevice.toHost(back);
    const t2 = performance.now();
    const made = (await onDevice.toHost()) as Float32Array;
    const t3 = performance.now();
    if (back[back.length - 1] !== host[host.length - 1] || back[12_345] !== host[12_345] || made[made.length - 1] !== host[host.length - 1]) {
      throw new Error('copy: wrong data back');
    }
    const gbPerS = (ms: number) => (COPY_BYTES / (ms / 1e3) / 1e9).toFixed(2);
    if (r === 0) notes.push(`First copies of the run (16 MiB chunks): up ${gbPerS(t1 - t0)} GB/s, down into an array ${gbPerS(t2 - t1)} GB/s, into a new one ${gbPerS(t3 - t2)} GB/s.`);
    if (r < 2) continue; // the second round creates the staging buffers the next ones reuse
    up.push((t1 - t0) / 1e3);
    down.push((t2 - t1) / 1e3);
    fresh.push((t3 - t2) / 1e3);
  }
  onDevice.destroy();
  const mib = COPY_BYTES / 2 ** 20;
  const rate = (bytesPerS: number | undefined) => (bytesPerS === undefined ? '—' : `${(bytesPerS / 1e9).toFixed(2)} GB/s`);
  for (const [work, seconds, peer, peerText] of [
    [`host → device, ${mib} MiB (\`DeviceArray.set\`)`, median(up), cupyCopies.h2d, 'pageable, `set`'],
    [`device → host, ${mib} MiB (\`DeviceArray.toHost(into)\`)`, median(down), cupyCopies.d2h, 'pageable, `get(out=)`'],
    [`device → host, ${mib} MiB into a new array (\`toHost()\`)`, median(fresh), cupyCopies.d2hFresh, '`cp.asnumpy`'],
  ] as const) {
    const ours = COPY_BYTES / seconds;
    rows.push({ work, ours: rate(ours), peer: peer === undefined ? '—' : `${rate(peer)} (${peerText})`, ratio: peer === undefined ? undefined : ours / peer, goal: 0.8, goalText: '≥ 0.8× CuPy pageable' });
  }
}

// ---------------------------------------------------------------- report

const table = markdownTable(
  [
    { header: 'work' },
    { header: 'ufunc gpu (kernels: back to back)', align: 'right' },
    { header: 'CuPy (kernels: back to back)', align: 'right' },
    { header: 'ratio', align: 'right' },
    { header: 'goal' },
    { header: 'met' },
    { header: 'kernels isolated: ufunc / CuPy (ratio)', align: 'right' },
  ],
  rows.map((r) => [
    r.work,
    r.ours,
    r.peer,
    r.ratio === undefined ? '—' : `${r.ratio.toFixed(2)}×`,
    r.goalText,
    r.ratio === undefined ? '—' : r.ratio >= r.goal ? 'yes' : 'no',
    r.isolated ?? '—',
  ]),
);
const report = [
  `# gpu target benchmark${quick ? ' (--quick sizes)' : ''}`,
  '',
  `- adapter: ${adapter}${gpuNameFromSmi() ? ` (${gpuNameFromSmi()})` : ''}`,
  `- node ${process.version}, ${new Date().toISOString().slice(0, 10)}`,
  '- ratio: CuPy time ÷ ufunc time (throughput ratio; > 1 is faster than CuPy), or column-major time ÷ row-major time',
  ...notes.map((n) => `- ${n}`),
  '',
  table,
  '',
].join('\n');
console.log(`\n${table}\n`);
notes.forEach((n) => console.log(n));
const slug = adapterSlug();
const dir = fileURLToPath(new URL('./results/', import.meta.url));
mkdirSync(dir, { recursive: true });
const file = `${dir}gpu-${slug}${quick ? '-quick' : ''}.md`;
writeFileSync(file, report);
console.log(`written to ${file}`);
shutdownDevice();

// ---------------------------------------------------------------- helpers

/** `nvidia-h200`, `llvmpipe`: the device's name as the GPU machine's tools print it, else the adapter's. */
function adapterSlug(): string {
  const fromSmi = process.env.GPU_NAME ?? gpuNameFromSmi();
  const name = fromSmi || ctx.adapterInfo.description.split(/[:(]/)[0]!.trim() || `${ctx.adapterInfo.vendor} ${ctx.adapterInfo.architecture}`;
  return name.toLowerCase().replace(/[^a-z0-9]+/g, '-').replace(/^-|-$/g, '').slice(0, 40) || 'unknown';
}

function gpuNameFromSmi(): string {
  const smi = spawnSync('nvidia-smi', ['--query-gpu=name', '--format=csv,noheader'], { encoding: 'utf8' });
  return smi.status === 0 ? smi.stdout.split('\n')[0]!.trim() : '';
}

function transpose(rowMajor: Float32Array): Float32Array {
  const out = new Float32Array(rowMajor.length);
  for (let r = 0; r < HERMITE_ROWS; r++) for (let c = 0; c < HERMITE_N; c++) out[c * HERMITE_ROWS + r] = rowMajor[r * HERMITE_N + c]!;
  return out;
}

/** Spot-checks a Hermite table against the recurrence computed on the host in float32. */
async function checkHermite(xs: Float32Array, table: DeviceArray, what: string): Promise<void> {
  const data = (await table.toHost()) as Float32Array; // C order, whatever the layout on the device
  const row = new Float32Array(HERMITE_N);
  for (let r = 0; r < HERMITE_ROWS; r += 4099) {
    hermiteRow(xs[r]!, row);
    for (let c = 0; c < HERMITE_N; c++) {
      const got = data[r * HERMITE_N + c]!;
      if (Math.abs(got - row[c]!) > 1e-4 * Math.max(1, Math.abs(row[c]!))) throw new Error(`hermite ${what}: row ${r} column ${c} is ${got}, expected ${row[c]}`);
    }
  }
}
