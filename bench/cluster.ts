/**
 * Chunked calls on a cluster (issue "Beyond one machine"): a compute-bound and a memory-bound ufunc
 * over a float32 Zarr array, on 1, 2, 4, … `ufunc worker` processes over a real redis-server, against
 * Dask with Numba over the same store (bench/peers/dask_zarr.py).
 *
 *   npx tsx bench/cluster.ts [--size 0.25GiB] [--chunk 8MiB] [--workers 1,2] [--reps 3] [--dir DIR]
 *       [--kinds compute,memory] [--steps 32|auto] [--kernel-seconds 75] [--part P/Q]
 *       [--worker-concurrency N] [--local 1]
 *       [--peer 1] [--peer-workers 1,2] [--python python3] [--wheels DIR] [--out FILE.md]
 *
 * Each figure is the median wall time of `reps` calls of `mapChunks(f, [x], y, { cluster })` into a
 * fresh output array (removed after the call, outside the timing), the workers started beforehand
 * (target 'cpu': one worker = one core for kernels, each holding `--worker-concurrency` chunks at
 * once, the worker's default where not given) and warmed
 * up by a call over a small array of the same kernel (each worker compiles the descriptor once). The
 * per-chunk overhead is one worker's time per chunk minus the kernel's own time on one chunk in this
 * process (the read, the queue and the write around it).
 *
 * Large sizes in several invocations: with `--dir DIR` the generated input stays in DIR (with a
 * note of its size and chunking) and a later invocation with the same `--size` and `--chunk` reuses
 * it. `--part P/Q` runs the calls over the P-th of Q equal runs of the input's chunks (an array of
 * its own whose chunk files are hard links to the input's: no copy), so that one worker's pass over
 * a large array can be timed as Q invocations whose times add up. `--local 0` leaves out the run
 * in this process and `--peer 0` the Dask peer; `--workers 0` leaves out our workers (a run of the
 * peer alone), and `--peer-workers` gives the peer's thread counts where they differ from ours.
 *
 * `--steps N`: the compute-bound kernel's iterations per element (32 by default): its cost per
 * chunk is about N times that of the memory-bound one's arithmetic, so N sets how long one worker
 * takes over a large array while the kernel still outweighs reading and writing its chunk. With
 * `--steps auto`, N is chosen on this machine before anything else runs: the kernel alone on one
 * chunk is timed at 2 and at 10 steps in this process, and N is where the line through the two
 * gives `--kernel-seconds` (75 by default) for all the chunks — so one worker's pass takes about as
 * long on a slower or faster host, or after the kernel compiler changes. Both sides run the N
 * chosen (the table says which).
 *
 * The peer runs under `--python` (python3 by default). On a machine without Dask or zarr-python and
 * no network (the GPU host), `--wheels DIR` installs the wheels in DIR (bench/peers/
 * dask-wheelhouse.sh builds them) into a folder of their own, put first on the peer's PYTHONPATH:
 * the interpreter's own packages (NumPy, Numba) stay visible, as they would not from a venv made
 * by an interpreter that is itself a venv's.
 *
 * Rows are printed as they are measured and, with `--out`, the file is rewritten after each one, so
 * a run cut short keeps what it measured; the ratios to one worker are filled in once it has run.
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { existsSync, linkSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, freemem, loadavg, tmpdir } from 'node:os';
import path from 'node:path';
import { computeKernel, memoryKernel } from './lib/cluster-kernels.js';
import { allocateBox, writeBox } from '../src/zarr/arrays.js';
import { createZarr, mapChunks, openZarr, type ZarrArray } from '../src/zarr/index.js';
import { startRedis } from '../tests/cluster/redis-server.js';

const args = new Map<string, string>();
for (let i = 2; i < process.argv.length; i += 2) args.set(process.argv[i]!.replace(/^--/, ''), process.argv[i + 1]!);
const sizeBytes = args.has('gib') ? Number(args.get('gib')) * 2 ** 30 : parseSize(args.get('size') ?? '0.25GiB');
const chunkBytes = args.has('chunk-mib') ? Number(args.get('chunk-mib')) * 2 ** 20 : parseSize(args.get('chunk') ?? '8MiB');
const workerCounts = (args.get('workers') ?? '1,2').split(',').map(Number).filter((w) => w > 0);
const peerCounts = (args.get('peer-workers') ?? args.get('workers') ?? '1,2').split(',').map(Number).filter((w) => w > 0);
const stepsArg = args.get('steps') ?? '32';
if (stepsArg !== 'auto' && !(Number.isInteger(Number(stepsArg)) && Number(stepsArg) >= 1)) throw new Error(`--steps is a positive integer or auto; found '${stepsArg}'.`);
const kernelSeconds = Number(args.get('kernel-seconds') ?? 75);
const reps = Number(args.get('reps') ?? 3);
/** Chunks each worker holds at once (`ufunc worker --concurrency`); undefined: the worker's default. */
const workerConcurrency = args.has('worker-concurrency') ? Number(args.get('worker-concurrency')) : undefined;
const python = args.get('python') ?? 'python3';
const wheels = args.has('wheels') ? path.resolve(args.get('wheels')!) : undefined;
const kinds = (args.get('kinds') ?? 'compute,memory').split(',');
const withLocal = args.get('local') !== '0';
const withPeer = args.get('peer') !== '0';
const part = parsePart(args.get('part') ?? '1/1');
const dir = args.get('dir') ?? mkdtempSync(path.join(tmpdir(), 'ufunc-bench-cluster-'));
const repo = path.resolve(import.meta.dirname, '..');

const n = Math.round(sizeBytes / 4);
const chunk = Math.round(chunkBytes / 4);

function parseSize(text: string): number {
  const m = /^(\d+(?:\.\d+)?)\s*(B|KiB|MiB|GiB)?$/i.exec(text.trim());
  if (!m) throw new Error(`A size is a number with B, KiB, MiB or GiB (e.g. 16GiB); found '${text}'.`);
  return Math.round(Number(m[1]) * { b: 1, kib: 2 ** 10, mib: 2 ** 20, gib: 2 ** 30 }[(m[2] ?? 'B').toLowerCase() as 'b']);
}

function parsePart(text: string): { index: number; of: number } {
  const m = /^(\d+)\/(\d+)$/.exec(text);
  if (!m || Number(m[1]) < 1 || Number(m[1]) > Number(m[2])) throw new Error(`--part is P/Q with 1 ≤ P ≤ Q (e.g. 1/2); found '${text}'.`);
  return { index: Number(m[1]), of: Number(m[2]) };
}

function formatSize(bytes: number): string {
  return bytes >= 2 ** 30 ? `${+(bytes / 2 ** 30).toFixed(3)} GiB` : `${+(bytes / 2 ** 20).toFixed(3)} MiB`;
}

const KINDS = ['compute', 'memory'];

/** The median time of `f` on one chunk of the input's values in this process, in ms, and the runs. */
async function kernelAlone(f: (x: Float32Array) => Promise<unknown>): Promise<{ ms: number; runs: number[] }> {
  const one = new Float32Array(chunk).map((_, i) => (i % 10007) / 1000);
  // Past the engine's calibration: its first calls of a shape time both engines, JavaScript's
  // several times slower (src/targets/cpu/engine-calibration.ts).
  for (let r = 0; r < 12; r++) await f(one);
  const runs: number[] = [];
  for (let r = 0; r < 5; r++) {
    const s = performance.now();
    await f(one);
    runs.push(performance.now() - s);
  }
  return { ms: median(runs), runs };
}

/** `--steps`, or with `auto` the steps that make the compute kernel alone take `--kernel-seconds` over `chunks` chunks here. */
async function chooseSteps(chunks: number): Promise<number> {
  if (stepsArg !== 'auto') return Number(stepsArg);
  const [lo, hi] = [2, 10];
  const a = (await kernelAlone(computeKernel(lo))).ms;
  const b = (await kernelAlone(computeKernel(hi))).ms;
  const perStep = Math.max((b - a) / (hi - lo), 1e-3);
  const chosen = Math.max(1, Math.min(1024, Math.round(((kernelSeconds * 1000) / chunks - (a - perStep * lo)) / perStep)));
  console.error(`bench/cluster: the compute kernel alone on one chunk: ${a.toFixed(2)} ms at ${lo} steps, ${b.toFixed(2)} ms at ${hi}: ${chosen} steps for ${kernelSeconds} s over ${chunks} chunks`);
  return chosen;
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
}

const unknownKind = kinds.find((k) => !KINDS.includes(k));
if (unknownKind !== undefined) throw new Error(`--kinds lists compute and memory (in the order to run them); found '${unknownKind}'.`);

/** The input array `x` of the store: generated once per size and chunking, then reused (`--dir`). */
async function inputArray(root: string): Promise<ZarrArray> {
  const note = path.join(dir, 'x.json');
  const wanted = JSON.stringify({ n, chunk });
  if (existsSync(note) && readFileSync(note, 'utf8') === wanted) {
    console.error(`bench/cluster: reusing the input at ${root}/x`);
    return openZarr(root, 'x');
  }
  rmSync(note, { force: true });
  rmSync(path.join(root, 'x'), { recursive: true, force: true });
  const x = await createZarr(root, 'x', { shape: [n], chunkShape: [chunk], dtype: 'float32' });
  const started = performance.now();
  let next = 0;
  const writer = async (): Promise<void> => {
    for (let c = next++; c * chunk < n; c = next++) {
      const len = Math.min(chunk, n - c * chunk);
      const box = allocateBox('float32', [len]);
      const data = box.data as Float32Array;
      for (let i = 0; i < len; i++) data[i] = ((c * chunk + i) % 10007) / 1000;
      await writeBox(x, [[c * chunk, c * chunk + len]], box);
    }
  };
  await Promise.all(Array.from({ length: 4 }, writer));
  // The input's pages go to disk now, not while the first calls write (the kernel throttles a
  // writer once too much is dirty).
  execFileSync('sync');
  writeFileSync(note, wanted);
  console.error(`bench/cluster: wrote ${formatSize(n * 4)} of input in ${((performance.now() - started) / 1000).toFixed(1)} s`);
  return x;
}

/**
 * The `part.index`-th of `part.of` runs of x's chunks as an array of its own, its chunk files hard
 * links to x's (the same bytes on disk, nothing copied).
 */
async function partOf(root: string, x: ZarrArray): Promise<ZarrArray> {
  if (part.of === 1) return x;
  const chunks = Math.ceil(n / chunk);
  const first = Math.floor(((part.index - 1) * chunks) / part.of);
  const end = Math.floor((part.index * chunks) / part.of);
  const name = `x-part-${part.index}-of-${part.of}`;
  const length = Math.min(end * chunk, n) - first * chunk;
  const p = await createZarr(root, name, { shape: [length], chunkShape: [chunk], dtype: 'float32' });
  mkdirSync(path.join(root, name, 'c'), { recursive: true });
  for (let c = first; c < end; c++) {
    const link = path.join(root, name, 'c', String(c - first));
    if (!existsSync(link)) linkSync(path.join(root, 'x', 'c', String(c)), link);
  }
  console.error(`bench/cluster: part ${part.index}/${part.of} = chunks ${first}…${end - 1} of x (${formatSize(length * 4)})`);
  return p;
}

let outputs = 0;
/** A fresh output array like `x`, so that no call pays for replacing an earlier call's files. */
function freshOutput(root: string, x: ZarrArray): Promise<ZarrArray> {
  return createZarr(root, `y-${process.pid}-${outputs++}`, { shape: x.shape, chunkShape: x.chunkShape, dtype: 'float32' });
}

function removeArray(a: ZarrArray): void {
  rmSync(path.join(a.root, a.path), { recursive: true, force: true });
}

async function startWorkers(count: number, url: string, root: string, queue: string): Promise<ChildProcess[]> {
  const workers: ChildProcess[] = [];
  let ready = 0;
  for (let i = 0; i < count; i++) {
    const child = spawn(process.execPath, ['--import', 'tsx', path.join(repo, 'src/cli.ts'), 'worker', '--redis', url, '--store', root, '--queue', queue, '--target', 'cpu', ...(workerConcurrency === undefined ? [] : ['--concurrency', String(workerConcurrency)])], { cwd: repo, stdio: ['ignore', 'pipe', 'inherit'] });
    child.stdout!.on('data', (d: Buffer) => {
      if (d.toString().includes('ufunc worker')) ready++;
    });
    workers.push(child);
  }
  while (ready < count) await new Promise((r) => setTimeout(r, 100));
  return workers;
}

/**
 * The Python that runs the peer: `--python`, with the wheels of `--wheels` installed first (into a
 * folder of their own, put first on its PYTHONPATH), or undefined with why it cannot.
 */
function peerPython(): { python: string; env: NodeJS.ProcessEnv } {
  if (!wheels) return { python, env: process.env };
  const site = path.join(dir, 'peer-site');
  if (!existsSync(path.join(site, '.installed'))) {
    rmSync(site, { recursive: true, force: true });
    const files = readdirSync(wheels).filter((f) => f.endsWith('.whl')).map((f) => path.join(wheels, f));
    if (files.length === 0) throw new Error(`--wheels ${wheels} holds no .whl files`);
    try {
      execFileSync(python, ['-m', 'pip', 'install', '-q', '--no-index', '--no-deps', '--no-compile', '--disable-pip-version-check', '--target', site, ...files], { stdio: ['ignore', 'inherit', 'inherit'] });
    } catch {
      // No pip: a wheel is a zip of its files as they lie in site-packages (these have no scripts
      // or data a run needs).
      console.error(`bench/cluster: pip did not install the wheels; unpacking them into ${site}`);
      execFileSync(python, ['-c', 'import sys, zipfile\nfor w in sys.argv[2:]: zipfile.ZipFile(w).extractall(sys.argv[1])', site, ...files], { stdio: ['ignore', 'inherit', 'inherit'] });
    }
    writeFileSync(path.join(site, '.installed'), files.map((f) => path.basename(f)).join('\n'));
    console.error(`bench/cluster: ${files.length} wheels from ${wheels} installed for ${python} into ${site}`);
  }
  return { python, env: { ...process.env, PYTHONPATH: [site, process.env.PYTHONPATH].filter(Boolean).join(path.delimiter) } };
}

interface Result {
  readonly kind: string;
  /** 'ours' or the peer's name. */
  readonly who: string;
  readonly label: string;
  readonly workers?: number;
  readonly medianMs?: number;
  readonly note?: string;
  /** Its overhead per chunk, ms (one worker or thread). */
  readonly overheadMs?: number;
}

async function main(): Promise<void> {
  const started = new Date();
  const load = loadavg().map((l) => l.toFixed(2)).join(', ');
  const redis = await startRedis();
  const root = path.join(dir, 'store.zarr');
  console.error(`bench/cluster: ${n} float32 (${formatSize(n * 4)}) in chunks of ${chunk} (${formatSize(chunk * 4)}) at ${root}; ${cpus().length} cores`);
  const x = await partOf(root, await inputArray(root));
  const warm = await createZarr(root, 'warm', { shape: [4 * chunk], chunkShape: [chunk], dtype: 'float32' });
  const chunks = Math.ceil(x.shape[0]! / chunk);
  const steps = kinds.includes('compute') ? await chooseSteps(chunks) : Number(stepsArg === 'auto' ? 32 : stepsArg);
  const kernels: Record<string, ReturnType<typeof memoryKernel>> = { compute: computeKernel(steps), memory: memoryKernel() };
  const results: Result[] = [];
  const report = { n: x.shape[0], chunk, chunks, steps, part: `${part.index}/${part.of}`, workerConcurrency: workerConcurrency ?? 'default', cores: cpus().length, cpu: cpus()[0]?.model, results: [] as unknown[] };
  const partNote = part.of === 1 ? '' : `, part ${part.index}/${part.of} of a ${formatSize(n * 4)} array`;
  const table = (): string => {
    const rows = results.map((r) => {
      // The ratio only against one worker (or thread) of the same side measured in this invocation (never a guessed one).
      const one = results.find((o) => o.kind === r.kind && o.who === r.who && o.workers === 1)?.medianMs;
      const ratio = one !== undefined && r.medianMs !== undefined && r.workers !== undefined ? `${(one / r.medianMs).toFixed(2)}×` : '';
      const wall = r.medianMs !== undefined ? (r.medianMs / 1000).toFixed(r.workers === undefined ? 4 : 2) : (r.note ?? '');
      return `| ${r.kind} | ${r.label} | ${wall} | ${ratio} | ${r.overheadMs !== undefined ? `${r.overheadMs.toFixed(2)} ms` : ''} |`;
    });
    return [
      `${started.toISOString().slice(0, 16).replace('T', ' ')} UTC; \`${['npx tsx bench/cluster.ts', ...process.argv.slice(2)].join(' ')}\`; ${cpus().length} × ${cpus()[0]?.model}, ${formatSize(freemem())} free, load ${load} at the start.`,
      '',
      `${x.shape[0]!.toLocaleString('en')} float32 (${formatSize(x.shape[0]! * 4)}${partNote}), ${chunks} chunks of ${formatSize(chunk * 4)}; compute kernel: ${steps} steps of s·0.999 + 0.5/(1+s²) per element; memory kernel: 2x+1; workers hold ${workerConcurrency === undefined ? 'their default number of' : workerConcurrency} chunk${workerConcurrency === 1 ? '' : 's'} at once; medians of ${reps} call${reps === 1 ? '' : 's'} after one warm-up.`,
      '',
      '| kernel | where | wall s | × 1 worker (same side) | overhead per chunk (1 worker or thread) |',
      '|---|---|---:|---:|---:|',
      ...rows,
    ].join('\n');
  };
  const record = (r: Result, detail: Record<string, unknown>): void => {
    results.push(r);
    report.results.push({ kind: r.kind, who: r.who, workers: r.workers, ...detail });
    const wall = r.medianMs !== undefined ? `${(r.medianMs / 1000).toFixed(r.workers === undefined ? 4 : 2)} s` : r.note;
    console.error(`bench/cluster: ${r.kind} | ${r.label} | ${wall}${r.overheadMs !== undefined ? ` | overhead ${r.overheadMs.toFixed(2)} ms per chunk` : ''} (${new Date().toISOString().slice(11, 19)} UTC)`);
    if (args.has('out')) writeFileSync(args.get('out')!, `${table()}\n\n\`\`\`json\n${JSON.stringify(report, null, 1)}\n\`\`\`\n`);
  };
  const peer = withPeer && peerCounts.length > 0 ? peerPython() : undefined;
  for (const [kind, f] of kinds.map((k) => [k, kernels[k]!] as const)) {
    let kernelMs: number | undefined;
    if (workerCounts.length > 0 || withLocal) {
      const alone = await kernelAlone(f);
      kernelMs = alone.ms;
      record({ kind, who: 'ours', label: 'the kernel alone on one chunk, this process', medianMs: kernelMs }, { kernelMsPerChunk: kernelMs, runs: alone.runs });
    }
    if (withLocal) {
      const local: number[] = [];
      for (let r = 0; r < reps; r++) {
        const y = await freshOutput(root, x);
        const s = performance.now();
        await mapChunks(f, [x], y, { concurrency: 2 });
        local.push(performance.now() - s);
        removeArray(y);
      }
      record({ kind, who: 'local', label: 'this process (cpu target, 2 chunks in flight)', medianMs: median(local), workers: 0 }, { medianMs: median(local), runs: local });
    }
    for (const w of workerCounts) {
      const queue = `bench${w}${kind}`;
      const workers = await startWorkers(w, redis.url, root, queue);
      const cluster = { url: redis.url, queue };
      const warmOut = await freshOutput(root, warm);
      await mapChunks(f, [warm], warmOut, { cluster });
      removeArray(warmOut);
      const times: number[] = [];
      for (let r = 0; r < reps; r++) {
        const y = await freshOutput(root, x);
        const s = performance.now();
        await mapChunks(f, [x], y, { cluster });
        times.push(performance.now() - s);
        removeArray(y);
      }
      for (const c of workers) c.kill('SIGKILL');
      const t = median(times);
      record({ kind, who: 'ours', label: `${w} worker${w === 1 ? '' : 's'}`, workers: w, medianMs: t, ...(w === 1 && kernelMs !== undefined && { overheadMs: t / chunks - kernelMs }) }, { medianMs: t, runs: times, kernelMsPerChunk: kernelMs });
    }
    for (const w of peer ? peerCounts : []) {
      const label = `Dask + Numba, ${w} thread${w === 1 ? '' : 's'}`;
      try {
        const out = execFileSync(peer!.python, [path.join(repo, 'bench/peers/dask_zarr.py'), root, x.path, kind, String(w), String(reps), String(steps)], { encoding: 'utf8', env: peer!.env, stdio: ['ignore', 'pipe', 'inherit'] });
        const p = JSON.parse(out) as { medianMs?: number; kernelMsPerChunk?: number; skipped?: string };
        if (p.kernelMsPerChunk !== undefined && w === peerCounts[0]) record({ kind, who: 'peer-kernel', label: 'the Numba ufunc alone on one chunk', medianMs: p.kernelMsPerChunk }, { kernelMsPerChunk: p.kernelMsPerChunk });
        // Its overhead as ours: one thread's time per chunk beyond the kernel alone.
        const overheadMs = w === 1 && p.medianMs !== undefined && p.kernelMsPerChunk !== undefined ? p.medianMs / chunks - p.kernelMsPerChunk : undefined;
        record(p.medianMs !== undefined ? { kind, who: 'dask', label, workers: w, medianMs: p.medianMs, ...(overheadMs !== undefined && { overheadMs }) } : { kind, who: 'dask', label: 'Dask + Numba', note: `skipped: ${p.skipped}` }, { peer: 'dask+numba', ...p });
      } catch (e) {
        record({ kind, who: 'dask', label, note: `failed: ${(e as Error).message.split('\n')[0]}` }, { peer: 'dask+numba', error: (e as Error).message });
      }
    }
  }
  await redis.stop();
  console.log(table());
  if (!args.has('dir')) rmSync(dir, { recursive: true, force: true });
  process.exit(0);
}

void main();
