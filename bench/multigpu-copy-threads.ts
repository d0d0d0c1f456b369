/**
 * Host↔device copy rates through mapped staging buffers, by who does the host's copies: the main
 * thread for 1 and 2 devices (the gpu target's path for calls on host arrays today), or one worker
 * thread per device, each with a WebGPU device of its own, copying from a SharedArrayBuffer into
 * its own device's staging memory. This decides whether host-array calls on several GPUs should
 * copy on one thread per GPU: on the H200 host the main thread copied at 4.4–5.7 GB/s whichever
 * device it fed, so two GPUs were barely faster than one (bench/results/multigpu-host-*.md).
 *
 * Rows (each copies GIB GiB of float32 up, then back, through `inFlight` staging buffers of
 * `chunk` MiB per direction and device; bench/lib/staging-copier.ts):
 * - main thread, 1 device / 2 devices (each device half, the thread interleaving them);
 * - 1 worker / 2 workers, one device each, from and into SharedArrayBuffers;
 * - ordinary arrays through 2 workers: a worker cannot read an ordinary ArrayBuffer, so the main
 *   thread first copies it into a SharedArrayBuffer (and back out after the download), timed in;
 * - host memory alone, no GPU: `Uint8Array.set` on the main thread, and on 2 workers over halves
 *   of SharedArrayBuffers (the ceiling any staging copy can reach on 1 and 2 threads).
 * Every rep runs every row once (A/B in one run), after a warm-up rep; the table gives medians.
 * Each download is checked word by word at a stride against what was uploaded.
 *
 *   npx tsx bench/multigpu-copy-threads.ts --quick          # lavapipe: 64 MiB, 4 MiB chunks
 *   bash .gpu/run.sh node --import tsx bench/multigpu-copy-threads.ts --gib 4   # GPU host
 *
 * Options: --gib N (default 4; --quick 1/16), --chunk-mib N (64; --quick 4), --in-flight N (3),
 * --reps N (5; --quick 3). Prints the table and writes bench/results/multigpu-copy-threads-<adapter>.md.
 * Devices 0 and 1 are two GPUs where the host has them (pinned by DRI_PRIME, as the library
 * does: src/platform/node.ts), else two devices on the one adapter (lavapipe).
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import { setGpuOptions } from '../src/index.js';
import { gpuSelector } from '../src/platform/node.js';
import { acquireDevice, describeAdapter, onDevice, setIdleReleaseMs, shutdownDevice } from '../src/targets/gpu/runtime/device.js';
import type { CopyReply, CopyRequest } from './lib/copy-worker.js';
import { markdownTable } from './lib/markdown.js';
import { StagingCopier } from './lib/staging-copier.js';
import { median } from './lib/timing.js';

const args = process.argv.slice(2);
const option = (name: string) => (args.includes(name) ? args[args.indexOf(name) + 1] : undefined);
const quick = args.includes('--quick');
const CHUNK = Number(option('--chunk-mib') ?? (quick ? 4 : 64)) * 2 ** 20;
const IN_FLIGHT = Number(option('--in-flight') ?? 3);
const REPS = Number(option('--reps') ?? (quick ? 3 : 5));
/** Bytes copied each way, whole chunks on each of two devices. */
const TOTAL = Math.max(2, Math.round((Number(option('--gib') ?? (quick ? 1 / 16 : 4)) * 2 ** 30) / (2 * CHUNK))) * 2 * CHUNK;
const HALF = TOTAL / 2;

const started = performance.now();
const step = (what: string) => console.error(`[${((performance.now() - started) / 1e3).toFixed(1)} s] ${what}`);

/** A worker thread with a device of its own (bench/lib/copy-worker.ts), one request at a time. */
class CopyThread {
  // A worker does not inherit the `--import tsx` of this thread: it registers tsx, then loads the .ts.
  private readonly worker = new Worker(
    `import(${JSON.stringify(import.meta.resolve('tsx/esm/api'))}).then((tsx) => tsx.register()).then(() => import(${JSON.stringify(new URL('./lib/copy-worker.ts', import.meta.url).href)}))`,
    { eval: true },
  );
  private pending: { resolve: (reply: CopyReply) => void; reject: (e: Error) => void } | undefined;
  adapter = '';

  constructor(readonly name: string) {
    this.worker.on('message', (reply: CopyReply) => {
      const pending = this.pending;
      this.pending = undefined;
      if (reply.ok) pending?.resolve(reply);
      else pending?.reject(new Error(`${name}: ${reply.error}`));
    });
    this.worker.on('error', (e) => this.pending?.reject(new Error(`${name} failed: ${e.message}`)));
    this.worker.on('exit', (code) => this.pending?.reject(new Error(`${name} exited (code ${code}) during a request`)));
  }

  /** Sends one request and resolves with its reply's milliseconds (measured in the worker). */
  async call(request: CopyRequest): Promise<number> {
    const reply = new Promise<CopyReply>((resolve, reject) => (this.pending = { resolve, reject }));
    this.worker.postMessage(request);
    const answer = await reply;
    if (answer.ok && answer.adapter) this.adapter = answer.adapter;
    return answer.ok ? answer.ms : NaN;
  }

  /**
   * Opens the worker's device on GPU `slot`: its Dawn instance lists the adapters at its first
   * request, while the main thread's environment (the one native code reads) names that GPU.
   */
  async open(slot: number, capacity: number): Promise<void> {
    const before = process.env.DRI_PRIME;
    const selector = gpuSelector(slot);
    if (selector !== undefined) process.env.DRI_PRIME = selector;
    try {
      await this.call({ op: 'open', capacity, chunkBytes: CHUNK, inFlight: IN_FLIGHT });
    } finally {
      if (before === undefined) delete process.env.DRI_PRIME;
      else process.env.DRI_PRIME = before;
    }
  }
}

setIdleReleaseMs(Infinity);
setGpuOptions({ devices: 2 });
const adapter = await describeAdapter();
console.error(`gpu: ${adapter}`);
const [main0, main1] = await Promise.all([0, 1].map((k) => onDevice(k, acquireDevice)));
const mainCopiers = [new StagingCopier(main0!.device, TOTAL, CHUNK, IN_FLIGHT), new StagingCopier(main1!.device, HALF, CHUNK, IN_FLIGHT)];
const threads = [new CopyThread('worker 0'), new CopyThread('worker 1')];
await threads[0]!.open(0, TOTAL);
await threads[1]!.open(1, HALF);
step(`devices open: main thread ${main0!.adapterInfo.description} and ${main1!.adapterInfo.description}; ${threads.map((t) => `${t.name} ${t.adapter}`).join(', ')}`);

const plainSource = new Uint8Array(TOTAL);
const plainDest = new Uint8Array(TOTAL);
const sharedSource = new SharedArrayBuffer(TOTAL);
const sharedDest = new SharedArrayBuffer(TOTAL);
{
  const words = new Float32Array(plainSource.buffer);
  for (let i = 0; i < words.length; i++) words[i] = (((i * 7919) % 100003) - 50000) / 128;
  new Uint8Array(sharedSource).set(plainSource);
}
step(`${fmtBytes(TOTAL)} of float32 made, ordinary and shared`);

/** Word stride of the checks: prime, so every chunk and both halves are sampled. */
const STRIDE = 4099;
let check = 'ok';
/** Clears the sampled words of `dest`, so a download that skipped them cannot pass the check. */
function clearSamples(dest: Uint8Array): void {
  const words = new Uint32Array(dest.buffer, dest.byteOffset, dest.byteLength / 4);
  for (let i = 0; i < words.length; i += STRIDE) words[i] = 0xffffffff;
  words[words.length - 1] = 0xffffffff;
}
function checkSamples(row: string, dest: Uint8Array): void {
  const got = new Uint32Array(dest.buffer, dest.byteOffset, dest.byteLength / 4);
  const want = new Uint32Array(plainSource.buffer);
  for (let i = 0; i < want.length; i += STRIDE) if (got[i] !== want[i]) check = `${row}: word ${i} differs`;
  if (got[want.length - 1] !== want[want.length - 1]) check = `${row}: the last word differs`;
}

/** One row: how to upload everything, how to download it, and where the download lands. */
interface Row {
  readonly name: string;
  readonly threads: string;
  readonly up: () => Promise<unknown>;
  readonly down: () => Promise<unknown>;
  readonly dest?: Uint8Array;
  readonly upMs: number[];
  readonly downMs: number[];
}
const halves = (memory: SharedArrayBuffer) => [0, 1].map((k) => ({ memory, byteOffset: k * HALF, byteLength: HALF }));
const byWorkers = (op: 'upload' | 'download', memory: SharedArrayBuffer) => Promise.all(halves(memory).map((part, k) => threads[k]!.call({ op, ...part })));
const hostCopy = (from: Uint8Array, to: Uint8Array) => {
  for (let at = 0; at < from.byteLength; at += CHUNK) to.set(from.subarray(at, at + CHUNK), at);
};
const row = (name: string, threadsUsed: string, up: Row['up'], down: Row['down'], dest?: Uint8Array): Row => ({ name, threads: threadsUsed, up, down, dest, upMs: [], downMs: [] });
const rows: Row[] = [
  row('main thread, 1 device', '1 (main)', () => mainCopiers[0]!.upload(plainSource), () => mainCopiers[0]!.download(plainDest), plainDest),
  row(
    'main thread, 2 devices',
    '1 (main)',
    () => Promise.all(mainCopiers.map((c, k) => c.upload(plainSource.subarray(k * HALF, (k + 1) * HALF)))),
    () => Promise.all(mainCopiers.map((c, k) => c.download(plainDest.subarray(k * HALF, (k + 1) * HALF)))),
    plainDest,
  ),
  row(
    'worker thread, 1 device, SharedArrayBuffer',
    '1 (worker)',
    () => threads[0]!.call({ op: 'upload', memory: sharedSource, byteOffset: 0, byteLength: TOTAL }),
    () => threads[0]!.call({ op: 'download', memory: sharedDest, byteOffset: 0, byteLength: TOTAL }),
    new Uint8Array(sharedDest),
  ),
  row('worker threads, 2 devices, SharedArrayBuffer', '2 (workers)', () => byWorkers('upload', sharedSource), () => byWorkers('download', sharedDest), new Uint8Array(sharedDest)),
  row(
    'worker threads, 2 devices, ordinary arrays (main copies them to/from a SharedArrayBuffer)',
    '1 (main), then 2',
    async () => {
      new Uint8Array(sharedSource).set(plainSource);
      await byWorkers('upload', sharedSource);
    },
    async () => {
      await byWorkers('download', sharedDest);
      plainDest.set(new Uint8Array(sharedDest));
    },
    plainDest,
  ),
  row('host memory only (no GPU): Uint8Array.set', '1 (main)', async () => hostCopy(plainSource, plainDest), async () => hostCopy(plainDest, plainSource)),
  row(
    'host memory only (no GPU): Uint8Array.set on SharedArrayBuffer halves',
    '2 (workers)',
    () => Promise.all(halves(sharedSource).map((part, k) => threads[k]!.call({ op: 'memcpy', from: part.memory, to: sharedDest, byteOffset: part.byteOffset, byteLength: part.byteLength, chunkBytes: CHUNK }))),
    () => Promise.all(halves(sharedDest).map((part, k) => threads[k]!.call({ op: 'memcpy', from: part.memory, to: sharedSource, byteOffset: part.byteOffset, byteLength: part.byteLength, chunkBytes: CHUNK }))),
  ),
];

for (let rep = 0; rep <= REPS; rep++) {
  for (const r of rows) {
    if (r.dest) clearSamples(r.dest);
    const t0 = performance.now();
    await r.up();
    const t1 = performance.now();
    await r.down();
    const t2 = performance.now();
    if (r.dest) checkSamples(`${r.name}, rep ${rep}`, r.dest);
    if (rep > 0) {
      r.upMs.push(t1 - t0);
      r.downMs.push(t2 - t1);
    }
  }
  step(rep === 0 ? 'warm-up rep done' : `rep ${rep}: ${rows.map((r) => `${rate(r.upMs.at(-1)!)}/${rate(r.downMs.at(-1)!)}`).join(', ')} GB/s up/down`);
}

await Promise.all(threads.map((t) => t.call({ op: 'close' })));
await Promise.all(mainCopiers.map((c) => c.destroy()));

const base = rows[0]!;
const body = rows.map((r) => [
  r.name,
  r.threads,
  `${rate(median(r.upMs))} (${spread(r.upMs)})`,
  `${rate(median(r.downMs))} (${spread(r.downMs)})`,
  `${(median(base.upMs) / median(r.upMs)).toFixed(2)}× / ${(median(base.downMs) / median(r.downMs)).toFixed(2)}×`,
]);
const report = [
  `# Host↔device copies through mapped staging buffers: main thread against one worker thread per device`,
  '',
  `gpu: ${adapter}. ${new Date().toISOString().slice(0, 10)}. ${fmtBytes(TOTAL)} each way (float32), ${IN_FLIGHT} staging buffers of ${fmtBytes(CHUNK)} per direction and device; ` +
    `GB/s = 10^9 bytes/s, medians of ${REPS} reps after a warm-up (range in brackets), every row in every rep. Downloads checked against the uploaded words: ${check}.`,
  `Devices: main thread ${main0!.adapterInfo.description} / ${main1!.adapterInfo.description}; workers ${threads.map((t) => t.adapter).join(' / ')}${gpuSelector(1) ? ' (device k on GPU k: DRI_PRIME)' : ' (both on the one adapter)'}.`,
  '',
  markdownTable(
    [
      { header: 'copies', align: 'left' },
      { header: 'threads copying', align: 'left' },
      { header: 'host→device GB/s', align: 'right' },
      { header: 'device→host GB/s', align: 'right' },
      { header: 'vs main thread, 1 device (up / down)', align: 'right' },
    ],
    body,
  ),
  '',
  `Command: \`npx tsx bench/multigpu-copy-threads.ts ${args.join(' ')}\` (GPU host: \`bash .gpu/run.sh node --import tsx bench/multigpu-copy-threads.ts …\`).`,
].join('\n');
console.log(report);
const dir = fileURLToPath(new URL('./results/', import.meta.url));
mkdirSync(dir, { recursive: true });
const slug = adapter.split(':')[0]!.replace(/[^a-z0-9]+/gi, '-').toLowerCase();
writeFileSync(`${dir}multigpu-copy-threads-${slug}${quick ? '-quick' : ''}.md`, `${report}\n`);
shutdownDevice();

function rate(ms: number): string {
  return (TOTAL / ms / 1e6).toFixed(2);
}

function spread(ms: readonly number[]): string {
  return `${rate(Math.max(...ms))}–${rate(Math.min(...ms))}`;
}

function fmtBytes(n: number): string {
  return n >= 2 ** 30 ? `${(n / 2 ** 30).toFixed(2)} GiB` : `${(n / 2 ** 20).toFixed(0)} MiB`;
}
