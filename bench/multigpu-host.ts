/**
 * Calls on host arrays on 1 and 2 devices, and where their time goes: SAXPY over host
 * Float32Arrays into a host `out` (nothing streamed: the memory limit raised), and the same call
 * streamed under a per-device memory limit, for each chunk size asked for (`--chunk-mib`: MiB of
 * host operands a chunk, its arrays together, `setChunkBytes`; `auto`, the library's own choice:
 * pieces above the host's memcpy threshold, runtime/host-copy.ts, and staging pools as large as
 * the chunks in flight need; `whole` is the path before calls were chunked for throughput: one
 * piece per device when it fits, chunks of a third of the limit when streamed).
 * Each row is the median of REPS calls after a warm-up; then one call per row is traced
 * (runtime/transfer-trace.ts): per device, its chunks, the host's copies into and out of staging
 * memory (the one JS thread does them for every device), and the staging buffers created.
 *
 *   npx tsx bench/multigpu-host.ts --quick                    # lavapipe: small sizes
 *   npx tsx bench/multigpu-host.ts --saxpy-log2 28 --chunk-mib auto,192,576,whole --limit-gib 2 --events
 *   npx tsx bench/multigpu-host.ts --quick --shared             # arrays in SharedArrayBuffers
 *   npx tsx bench/multigpu-host.ts --quick --hermite            # also the Hermite ()->(16) table
 *   npx tsx bench/multigpu-host.ts --quick --readbacks in-call,after   # A/B of how outputs come back
 *
 * `--hermite` adds the Hermite `()->(16)` table of HERMITE_ROWS rows from a host array into a host
 * `out` (bench/multigpu.ts's row), for each chunk size, whole and traced like SAXPY.
 *
 * `--events` writes every traced event of every call, as it happens (synchronously: a process
 * that dies leaves what it did last), to bench/results/multigpu-host-events.log. Prints the table
 * and writes it to bench/results/multigpu-host-<adapter>.md.
 */
import { closeSync, mkdirSync, openSync, writeFileSync, writeSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { setGpuOptions, sharedArray, synchronize, toDevice, vectorize } from '../src/index.js';
import { describeAdapter, setIdleReleaseMs, shutdownDevice } from '../src/targets/gpu/runtime/device.js';
import { setStagingPoolLimit } from '../src/targets/gpu/runtime/buffers.js';
import { setHostOutputReadback } from '../src/targets/gpu/runtime/dispatch.js';
import { pieceTarget } from '../src/targets/gpu/runtime/host-copy.js';
import { IN_FLIGHT, setChunkBytes } from '../src/targets/gpu/runtime/streaming.js';
import { setTransferTrace, type TransferEvent } from '../src/targets/gpu/runtime/transfer-trace.js';
import { hermiteUfuncs } from '../examples/hermite.js';
import { markdownTable } from './lib/markdown.js';
import { median } from './lib/timing.js';

const args = process.argv.slice(2);
const option = (name: string) => (args.includes(name) ? args[args.indexOf(name) + 1] : undefined);
const quick = args.includes('--quick');
const SAXPY_N = 2 ** Number(option('--saxpy-log2') ?? (quick ? 22 : 30));
const CHUNKS = (option('--chunk-mib') ?? (quick ? 'auto,6,whole' : 'auto,192')).split(',');
const LIMIT = Number(option('--limit-gib') ?? (quick ? 1 / 256 : 2)) * 2 ** 30;
const DEVICE_COUNTS = (option('--devices') ?? '1,2').split(',').map(Number);
const REPS = Number(option('--reps') ?? 3);
const NO_STREAMING = 2 ** 50;
/** Bytes of the copies that measure the copy rate alone (`toDevice`, `toHost`), as bench/multigpu.ts. */
const COPY_BYTES = quick ? 16 * 2 ** 20 : 2 ** 30;
const HERMITE = args.includes('--hermite');
/**
 * `--readbacks in-call,after`: also each cell with large host outputs read back after the call's
 * work is seen done (the path before they were copied out in the call's own submission; the
 * calling thread's setting: on the gpu worker threads of `--shared` it has no effect).
 */
const READBACKS = (option('--readbacks') ?? 'in-call').split(',').map((r) => {
  if (r !== 'in-call' && r !== 'after') throw new Error(`--readbacks: expected in-call and/or after, got ${r}`);
  return r;
});
const HERMITE_ROWS = quick ? 1 << 16 : 1 << 24;
const HERMITE_N = 16;

const started = performance.now();
const step = (what: string) => console.error(`[${((performance.now() - started) / 1e3).toFixed(1)} s] ${what}`);
const dir = fileURLToPath(new URL('./results/', import.meta.url));
mkdirSync(dir, { recursive: true });
const eventLog = args.includes('--events') ? openSync(`${dir}multigpu-host-events.log`, 'w') : undefined;

setIdleReleaseMs(Infinity);
setGpuOptions({ devices: Math.max(...DEVICE_COUNTS) }); // device 0 is the same GPU in every row
const adapter = await describeAdapter();
console.error(`gpu: ${adapter}`);
const saxpy = vectorize(['float32(float32, float32, float32)'], { target: 'gpu' })((a: number, x: number, y: number) => a * x + y);
// `--shared`: the arrays in SharedArrayBuffers, so that on several devices each device's block is
// copied by a worker thread of its own (runtime/device-workers.ts; not traced: the trace is this thread's).
const SHARED = args.includes('--shared');
const values = (n: number, seed: number) => {
  const v = SHARED ? sharedArray(n, 'float32') : new Float32Array(n);
  for (let i = 0; i < n; i++) v[i] = (((i + seed) * 7919) % 1000) / 100 - 5;
  return v;
};const xs = values(SAXPY_N, 1);
const ys = values(SAXPY_N, 2);
const zs = SHARED ? sharedArray(SAXPY_N, 'float32') : new Float32Array(SAXPY_N);
step(`arrays of 2^${Math.log2(SAXPY_N)} float32 made`);

/** One kind of call: what it is, the bytes it moves, how to make it, and its output (checked against its first call's bits). */
interface Work {
  readonly name: string;
  readonly bytes: number;
  /** Bytes copied to the device and back (inputs, outputs). */
  readonly up: number;
  readonly down: number;
  readonly call: () => Promise<unknown>;
  readonly output: Float32Array;
  expected?: Float32Array;
}
const works: Work[] = [{ name: `SAXPY 2^${Math.log2(SAXPY_N)}`, bytes: 12 * SAXPY_N, up: 8 * SAXPY_N, down: 4 * SAXPY_N, call: () => saxpy(2, xs, ys, { out: zs }), output: zs }];
if (HERMITE) {
  const hermite = hermiteUfuncs('gpu').fromScalar;
  const hx = values(HERMITE_ROWS, 3);
  const table = SHARED ? sharedArray(HERMITE_ROWS * HERMITE_N, 'float32') : new Float32Array(HERMITE_ROWS * HERMITE_N);
  works.push({
    name: `Hermite ()->(${HERMITE_N}), 2^${Math.log2(HERMITE_ROWS)} rows`,
    bytes: 4 * HERMITE_ROWS * (1 + HERMITE_N),
    up: 4 * HERMITE_ROWS,
    down: 4 * HERMITE_ROWS * HERMITE_N,
    call: () => hermite(hx, { out: { data: table, shape: [HERMITE_ROWS, HERMITE_N] } }),
    output: table,
  });
}

/** The events of the call being traced, and every event to the log file when asked. */
let collected: TransferEvent[] | undefined;
let label = '';
setTransferTrace((e) => {
  collected?.push(e);
  if (eventLog !== undefined) writeSync(eventLog, `${label} ${JSON.stringify({ ...e, t: Math.round(e.t * 1000) / 1000 })}\n`);
});

interface Row {
  readonly work: string;
  readonly bytes: number;
  /** The copies alone of its bytes on one device, at the rates measured in this run (ms). */
  copiesMs?: number;
  readonly up: number;
  readonly down: number;
  readonly ms: number[];
  readonly traces: string[];
}
const rows: Row[] = [];
let check = 'ok';

for (const work of works) for (const chunk of CHUNKS) {
  setChunkBytes(chunk === 'auto' ? undefined : chunk === 'whole' ? 2 ** 50 : Number(chunk) * 2 ** 20);
  // The staging pools hold the pieces of the chunks in flight (rounded up to powers of two), so
  // that every chunk size reuses its staging buffers (`auto`: as the library sizes them itself).
  setStagingPoolLimit(chunk === 'whole' || chunk === 'auto' ? undefined : Math.max(2 ** 30, 2 * IN_FLIGHT * Number(chunk) * 2 ** 20));
  for (const [mode, limit] of [['host', NO_STREAMING], ['streamed', LIMIT]] as const) for (const readback of READBACKS) {
    setHostOutputReadback(readback);
    const how = READBACKS.length > 1 ? (readback === 'in-call' ? ', read back in the call' : ', read back after it (earlier path)') : '';
    const row: Row = { bytes: work.bytes, up: work.up, down: work.down, work: `${work.name}, ${mode === 'host' ? `from ${SHARED ? 'shared ' : ''}host arrays` : `${SHARED ? 'shared, ' : ''}streamed under ${fmtBytes(LIMIT)} per device`}, chunks of ${chunk === 'whole' ? 'the whole part' : chunk === 'auto' ? `the library's choice (pieces ≥ ${fmtBytes(pieceTarget())})` : `≤ ${chunk} MiB of operands`}${how}`, ms: [], traces: [] };
    rows.push(row);
    for (const devices of DEVICE_COUNTS) {
      setGpuOptions({ devices, memoryLimit: limit });
      label = `[${work.name} ${chunk} ${mode}${how} ${devices}dev]`;
      const times: number[] = [];
      for (let r = 0; r <= REPS; r++) {
        work.output.fill(0);
        const t0 = performance.now();
        await work.call();
        if (r > 0) times.push(performance.now() - t0);
        // The warm-up call's bits, and the traced call's below (a check takes seconds at 2^30).
        work.expected ??= work.output.slice();
        if (r === 0 && !sameBits(work.output, work.expected)) check = `${label} differs from the first call`;
      }
      row.ms.push(median(times));
      // One more call, traced: where its time went.
      collected = [];
      work.output.fill(0);
      const t0 = performance.now();
      await work.call();
      const t1 = performance.now();
      if (!sameBits(work.output, work.expected!)) check = `${label} (traced) differs from the first call`;
      row.traces.push(`${devices} device(s): ${summarize(collected, t0, t1)}`);
      collected = undefined;
      step(`${label} ${fmtMs(row.ms.at(-1)!)} ms`);
    }
  }
}
if (eventLog !== undefined) closeSync(eventLog);

setGpuOptions({ devices: 1, memoryLimit: NO_STREAMING });
setStagingPoolLimit(undefined);
setHostOutputReadback('in-call');
const copies = await copyRate();
step(`copies alone on one device: h2d ${(copies.h2d / 1e9).toFixed(2)} GB/s, d2h ${(copies.d2h / 1e9).toFixed(2)} GB/s`);
const copiesMs = (r: Row) => (r.up / copies.h2d + r.down / copies.d2h) * 1e3;

const header = [
  'work',
  ...DEVICE_COUNTS.map((d) => `${d} device${d > 1 ? 's' : ''} (ms)`),
  ...(DEVICE_COUNTS.length === 2 ? ['2 vs 1'] : []),
  `GB/s on ${DEVICE_COUNTS.at(-1)}`,
  'copies alone ÷ 1 device',
];
const body = rows.map((r) => [
  r.work,
  ...r.ms.map(fmtMs),
  ...(DEVICE_COUNTS.length === 2 ? [`${(r.ms[0]! / r.ms[1]!).toFixed(2)}×`] : []),
  (r.bytes / r.ms.at(-1)! / 1e6).toFixed(2),
  `${(copiesMs(r) / r.ms[0]!).toFixed(2)}×`,
]);
const report = [
  `# Calls on host arrays on ${DEVICE_COUNTS.join(' and ')} device(s), and where their time goes`,
  '',
  `gpu: ${adapter}. ${new Date().toISOString().slice(0, 10)}. Medians of ${REPS} calls after a warm-up. Bytes moved: SAXPY 12 per element (x, y up; z down), Hermite 4 up and 64 down per row. Results bit-identical across rows and device counts: ${check}.`,
  '',
  markdownTable(header.map((h, i) => ({ header: h, align: i === 0 ? 'left' : 'right' })), body),
  '',
  `"copies alone ÷ 1 device": the time its bytes take to copy alone on one device (\`set\` and \`toHost(into)\` of an existing device array of ${fmtBytes(COPY_BYTES)}, medians of ${REPS} after a warm-up: h2d ${(copies.h2d / 1e9).toFixed(2)} GB/s, d2h ${(copies.d2h / 1e9).toFixed(2)} GB/s) ÷ the call's time on one device (issue 27's streaming goal: ≥ 0.8×).`,
  '',
  'One traced call per cell (host copies: the JS thread copying into and out of mapped staging memory, summed over the call; staging created: new staging buffers, pinned host memory):',
  '',
  ...rows.flatMap((r) => [`- ${r.work}:`, ...r.traces.map((t) => `  - ${t}`)]),
  '',
  `Command: \`npx tsx bench/multigpu-host.ts ${args.join(' ')}\` (GPU host: \`bash .gpu/run.sh node --import tsx bench/multigpu-host.ts …\`).`,
].join('\n');
console.log(report);
const slug = adapter.split(':')[0]!.replace(/[^a-z0-9]+/gi, '-').toLowerCase();
writeFileSync(`${dir}multigpu-host-${slug}${SHARED ? '-shared' : ''}${quick ? '-quick' : ''}.md`, `${report}\n`);
shutdownDevice();

/** Host→device and device→host bytes per second on device 0: `set` and `toHost(into)` of an existing device array, as bench/multigpu.ts measures them. */
async function copyRate(): Promise<{ h2d: number; d2h: number }> {
  const data = new Float32Array(COPY_BYTES / 4).fill(1.25);
  const back = new Float32Array(data.length);
  const timed = async (run: () => Promise<unknown>) => {
    await run();
    const times: number[] = [];
    for (let r = 0; r < REPS; r++) {
      const t0 = performance.now();
      await run();
      times.push(performance.now() - t0);
    }
    return median(times);
  };
  // Into and out of an existing device array: the copy alone, no device buffer made per copy.
  const d = await toDevice(data);
  try {
    const h2dMs = await timed(async () => {
      await d.set(data);
      await synchronize();
    });
    const d2hMs = await timed(() => d.toHost(back));
    return { h2d: COPY_BYTES / (h2dMs / 1e3), d2h: COPY_BYTES / (d2hMs / 1e3) };
  } finally {
    d.destroy();
  }
}

/** One traced call in a line: per device, its chunks and the host copies it waited for. */
function summarize(events: readonly TransferEvent[], t0: number, t1: number): string {
  const devices = [...new Set(events.map((e) => e.device))].sort();
  let copyMs = 0;
  const perDevice = devices.map((d) => {
    const of = (kind: TransferEvent['kind']) => events.filter((e) => e.kind === kind && e.device === d);
    const sum = (list: readonly TransferEvent[], key: 'bytes' | 'ms') => list.reduce((s, e) => s + (key === 'ms' ? ('ms' in e ? e.ms : 0) : e.bytes), 0);
    const up = of('host-to-staging');
    const down = of('staging-to-host');
    const created = of('staging-created');
    copyMs += sum(up, 'ms') + sum(down, 'ms');
    const chunks = of('chunk-issued');
    const done = of('chunk-done');
    const span = chunks.length > 0 && done.length > 0 ? ` from ${fmtMs(chunks[0]!.t - t0)} to ${fmtMs(done.at(-1)!.t - t0)} ms` : '';
    return (
      `device ${d}: ${chunks.length} chunk(s)${span}; host copies up ${fmtBytes(sum(up, 'bytes'))} in ${fmtMs(sum(up, 'ms'))} ms (${rate(sum(up, 'bytes'), sum(up, 'ms'))}), ` +
      `down ${fmtBytes(sum(down, 'bytes'))} in ${fmtMs(sum(down, 'ms'))} ms (${rate(sum(down, 'bytes'), sum(down, 'ms'))}); staging created ${created.length} (${fmtBytes(sum(created, 'bytes'))})`
    );
  });
  const order = events.filter((e) => e.kind === 'chunk-issued').slice(0, 8).map((e) => e.device).join('');
  return `call ${fmtMs(t1 - t0)} ms, host copies ${fmtMs(copyMs)} ms of it (${((100 * copyMs) / (t1 - t0)).toFixed(0)}%); first chunks issued on devices ${order || '–'}; ${perDevice.join('; ')}`;
}

function rate(bytes: number, ms: number): string {
  return ms > 0 ? `${(bytes / ms / 1e6).toFixed(2)} GB/s` : '–';
}

function sameBits(a: Float32Array, b: Float32Array): boolean {
  const x = new Uint32Array(a.buffer, a.byteOffset, a.length);
  const y = new Uint32Array(b.buffer, b.byteOffset, b.length);
  for (let i = 0; i < x.length; i++) if (x[i] !== y[i]) return false;
  return x.length === y.length;
}

function fmtMs(ms: number): string {
  return ms >= 100 ? ms.toFixed(0) : ms >= 1 ? ms.toFixed(2) : ms.toFixed(3);
}

function fmtBytes(n: number): string {
  return n >= 2 ** 30 ? `${(n / 2 ** 30).toFixed(2)} GiB` : `${(n / 2 ** 20).toFixed(1)} MiB`;
}
