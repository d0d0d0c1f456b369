/**
 * Chunked calls on a cluster (issue "Beyond one machine"): a compute-bound and a memory-bound ufunc
 * over a float32 Zarr array, on 1, 2, 4, … `ufunc worker` processes over a real redis-server, against
 * Dask with Numba over the same store (bench/peers/dask_zarr.py).
 *
 *   npx tsx bench/cluster.ts [--size 0.25GiB] [--chunk 8MiB] [--workers 1,2] [--reps 3] [--dir DIR]
 *       [--kinds compute,memory] [--part P/Q] [--worker-concurrency N] [--local 1] [--peer 1]
 *       [--python /usr/bin/python3] [--out FILE.md]
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
 * in this process and `--peer 0` the Dask peer.
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { existsSync, linkSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, freemem, loadavg, tmpdir } from 'node:os';
import path from 'node:path';
import { vectorize } from '../src/api.js';
import { allocateBox, writeBox } from '../src/zarr/arrays.js';
import { createZarr, mapChunks, openZarr, type ZarrArray } from '../src/zarr/index.js';
import { startRedis } from '../tests/cluster/redis-server.js';

const args = new Map<string, string>();
for (let i = 2; i < process.argv.length; i += 2) args.set(process.argv[i]!.replace(/^--/, ''), process.argv[i + 1]!);
const sizeBytes = args.has('gib') ? Number(args.get('gib')) * 2 ** 30 : parseSize(args.get('size') ?? '0.25GiB');
const chunkBytes = args.has('chunk-mib') ? Number(args.get('chunk-mib')) * 2 ** 20 : parseSize(args.get('chunk') ?? '8MiB');
const workerCounts = (args.get('workers') ?? '1,2').split(',').map(Number);
const reps = Number(args.get('reps') ?? 3);
/** Chunks each worker holds at once (`ufunc worker --concurrency`); undefined: the worker's default. */
const workerConcurrency = args.has('worker-concurrency') ? Number(args.get('worker-concurrency')) : undefined;
const python = args.get('python') ?? '/usr/bin/python3';
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

/** The kernels, in the language's JS and (for the peer) as their Numba twins in dask_zarr.py. */
const KERNELS = {
  compute: vectorize(['float32(float32)'])((x) => {
    let s = x;
    for (let k = 0; k < 32; k++) s = s * 0.999 + 0.5 / (1 + s * s);
    return s;
  }),
  memory: vectorize(['float32(float32)'])((x) => 2 * x + 1),
};

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
}

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

async function main(): Promise<void> {
  const started = new Date();
  const load = loadavg().map((l) => l.toFixed(2)).join(', ');
  const redis = await startRedis();
  const root = path.join(dir, 'store.zarr');
  console.error(`bench/cluster: ${n} float32 (${formatSize(n * 4)}) in chunks of ${chunk} (${formatSize(chunk * 4)}) at ${root}; ${cpus().length} cores`);
  const x = await partOf(root, await inputArray(root));
  const warm = await createZarr(root, 'warm', { shape: [4 * chunk], chunkShape: [chunk], dtype: 'float32' });
  const chunks = Math.ceil(x.shape[0]! / chunk);
  const rows: string[] = [];
  const report: Record<string, unknown> = { n: x.shape[0], chunk, chunks, part: `${part.index}/${part.of}`, workerConcurrency: workerConcurrency ?? 'default', cores: cpus().length, cpu: cpus()[0]?.model, results: [] };
  for (const [kind, f] of Object.entries(KERNELS).filter(([k]) => kinds.includes(k))) {
    // The kernel alone on one chunk, in this process.
    const one = new Float32Array(chunk).map((_, i) => (i % 10007) / 1000);
    // Past the engine's calibration: its first calls of a shape time both engines, JavaScript's
    // several times slower (src/targets/cpu/engine-calibration.ts).
    for (let r = 0; r < 12; r++) await f(one);
    const kernelTimes: number[] = [];
    for (let r = 0; r < 5; r++) {
      const s = performance.now();
      await f(one);
      kernelTimes.push(performance.now() - s);
    }
    const kernelMs = median(kernelTimes);
    if (withLocal) {
      const local: number[] = [];
      for (let r = 0; r < reps; r++) {
        const y = await freshOutput(root, x);
        const s = performance.now();
        await mapChunks(f, [x], y, { concurrency: 2 });
        local.push(performance.now() - s);
        removeArray(y);
      }
      rows.push(`| ${kind} | this process (cpu target, 2 chunks in flight) | ${(median(local) / 1000).toFixed(2)} | | |`);
    }
    rows.push(`| ${kind} | the kernel alone on one chunk, this process | ${(kernelMs / 1000).toFixed(4)} | | |`);
    let oneWorker = 0;
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
      if (w === 1) oneWorker = t;
      // The ratio only against one worker measured in this invocation (never a guessed one).
      const ratio = oneWorker > 0 ? ` ${(oneWorker / t).toFixed(2)}× |` : ' |';
      const overhead = w === 1 ? ` ${(t / chunks - kernelMs).toFixed(2)} ms |` : ' |';
      rows.push(`| ${kind} | ${w} worker${w === 1 ? '' : 's'} | ${(t / 1000).toFixed(2)} |${ratio}${overhead}`);
      (report.results as unknown[]).push({ kind, workers: w, medianMs: t, runs: times, kernelMsPerChunk: kernelMs });
      console.error(rows.at(-1));
    }
    for (const w of withPeer ? workerCounts : []) {
      try {
        const out = execFileSync(python, [path.join(repo, 'bench/peers/dask_zarr.py'), root, x.path, kind, String(w), String(reps)], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] });
        const peer = JSON.parse(out) as { medianMs?: number; kernelMsPerChunk?: number; skipped?: string };
        if (peer.kernelMsPerChunk !== undefined && w === workerCounts[0]) rows.push(`| ${kind} | the Numba ufunc alone on one chunk | ${(peer.kernelMsPerChunk / 1000).toFixed(4)} | | |`);
        // Its overhead as ours: one thread's time per chunk beyond the kernel alone.
        const overhead = w === 1 && peer.medianMs !== undefined && peer.kernelMsPerChunk !== undefined ? ` ${(peer.medianMs / chunks - peer.kernelMsPerChunk).toFixed(2)} ms |` : ' |';
        rows.push(peer.medianMs !== undefined ? `| ${kind} | Dask + Numba, ${w} thread${w === 1 ? '' : 's'} | ${(peer.medianMs / 1000).toFixed(2)} | |${overhead}` : `| ${kind} | Dask + Numba | skipped: ${peer.skipped} | | |`);
        (report.results as unknown[]).push({ kind, peer: 'dask+numba', workers: w, ...peer });
      } catch (e) {
        rows.push(`| ${kind} | Dask + Numba, ${w} thread${w === 1 ? '' : 's'} | failed: ${(e as Error).message.split('\n')[0]} | | |`);
      }
      console.error(rows.at(-1));
    }
  }
  await redis.stop();
  const partNote = part.of === 1 ? '' : `, part ${part.index}/${part.of} of a ${formatSize(n * 4)} array`;
  const table = [
    `${started.toISOString().slice(0, 16).replace('T', ' ')} UTC; \`${['npx tsx bench/cluster.ts', ...process.argv.slice(2)].join(' ')}\`; ${cpus().length} × ${cpus()[0]?.model}, ${formatSize(freemem())} free, load ${load} at the start.`,
    '',
    `${x.shape[0]!.toLocaleString('en')} float32 (${formatSize(x.shape[0]! * 4)}${partNote}), ${chunks} chunks of ${formatSize(chunk * 4)}; workers hold ${workerConcurrency === undefined ? 'their default number of' : workerConcurrency} chunk${workerConcurrency === 1 ? '' : 's'} at once; medians of ${reps} calls after one warm-up.`,
    '',
    '| kernel | where | wall s | × 1 worker | overhead per chunk (1 worker or thread) |',
    '|---|---|---:|---:|---:|',
    ...rows,
  ].join('\n');
  console.log(table);
  if (args.has('out')) writeFileSync(args.get('out')!, `${table}\n\n\`\`\`json\n${JSON.stringify(report, null, 1)}\n\`\`\`\n`);
  if (!args.has('dir')) rmSync(dir, { recursive: true, force: true });
  process.exit(0);
}

void main();
