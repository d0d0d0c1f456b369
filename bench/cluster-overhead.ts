/**
 * Where the time of one chunk job goes on a cluster (issue "Beyond one machine": per-chunk overhead
 * ≤ 5 ms): a real redis-server, `ufunc worker` processes (target 'cpu'), and a memory-bound kernel
 * (2x+1, float32) so that the kernel is a small part — or bench/cluster.ts's compute-bound one —
 * over chunks of each size asked for.
 *
 *   npx tsx bench/cluster-overhead.ts [--chunks 4KiB,8MiB] [--count N] [--workers 1,2]
 *       [--concurrency 1,3] [--baseline DIR] [--per-job 1] [--reps 3] [--kernel memory|compute]
 *       [--dir DIR] [--out FILE.md]
 *
 * For each chunk size:
 * - **in this process**, per chunk, medians over the chunks of one call: reading the input chunk,
 *   the kernel, encoding and writing the output chunk (`runChunk`'s own split), and a whole local
 *   `mapChunks` call (1 chunk in flight) divided by the chunks;
 * - **on W workers**, for each `--concurrency` C (chunks a worker holds at once: `ufunc worker
 *   --concurrency`; the worker's default where not given) and, with `--baseline DIR`, for workers
 *   started from another checkout (DIR/src/cli.ts, its own default concurrency: an A/B against it in
 *   one run), `--per-job` chunks per job: the median of `reps` calls into a fresh output array each
 *   (so no call pays for replacing the last one's files), the variants' calls taking turns:
 *   the wall time per chunk times W (worker time per chunk), what the workers said each job spent
 *   (the `ufunc worker` log: the whole job, and its read, kernel and write), and from those
 *   - *overhead per chunk* = worker time per chunk − the kernel's time in this process (the issue's
 *     measure: queue + read + write beyond the kernel),
 *   - *outside jobs* = worker time per chunk − the job's own time per chunk (queue round trips,
 *     submission, completion events: the time a worker is not inside a job; negative when a worker
 *     runs several chunks at once);
 * - **a one-chunk call** on the workers: what a caller waits for one small job (connections,
 *   descriptor, submission, completion event).
 *
 * Each output array is removed after its call (outside the timing). Numbers are per chunk, in ms.
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { vectorize } from '../src/api.js';
import { chunkCoords } from '../src/zarr/chunk-grid.js';
import { allocateBox, writeBox } from '../src/zarr/arrays.js';
import { createZarr, mapChunks, type ZarrArray } from '../src/zarr/index.js';
import { type ChunkTimes, gridOf, runChunk } from '../src/zarr/run-chunk.js';
import { startRedis } from '../tests/cluster/redis-server.js';

const args = new Map<string, string>();
for (let i = 2; i < process.argv.length; i += 2) args.set(process.argv[i]!.replace(/^--/, ''), process.argv[i + 1]!);
const sizes = (args.get('chunks') ?? '4KiB,8MiB').split(',').map(parseSize);
const workerCounts = (args.get('workers') ?? '1,2').split(',').map(Number);
/** Chunks each worker holds at once; undefined: the worker's default. */
const concurrencies: (number | undefined)[] = args.has('concurrency') ? args.get('concurrency')!.split(',').map(Number) : [undefined];
const baseline = args.has('baseline') ? path.resolve(args.get('baseline')!) : undefined;
const perJob = Number(args.get('per-job') ?? 1);
const reps = Number(args.get('reps') ?? 3);
const dir = args.get('dir') ?? mkdtempSync(path.join(tmpdir(), 'ufunc-bench-overhead-'));
const repo = path.resolve(import.meta.dirname, '..');

function parseSize(text: string): number {
  const m = /^(\d+(?:\.\d+)?)\s*(B|KiB|MiB|GiB)?$/i.exec(text.trim());
  if (!m) throw new Error(`A size is a number with B, KiB, MiB or GiB (e.g. 8MiB); found '${text}'.`);
  const unit = { b: 1, kib: 2 ** 10, mib: 2 ** 20, gib: 2 ** 30 }[(m[2] ?? 'B').toLowerCase() as 'b'];
  return Math.round(Number(m[1]) * unit);
}

function formatSize(bytes: number): string {
  return bytes >= 2 ** 20 ? `${bytes / 2 ** 20} MiB` : bytes >= 2 ** 10 ? `${bytes / 2 ** 10} KiB` : `${bytes} B`;
}

function median(xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s.length === 0 ? NaN : s[Math.floor(s.length / 2)]!;
}

/** The kernels of bench/cluster.ts: memory-bound (the default, so that the kernel is a small part) and compute-bound. */
const KERNELS = {
  memory: vectorize(['float32(float32)'])((x) => 2 * x + 1),
  compute: vectorize(['float32(float32)'])((x) => {
    let s = x;
    for (let k = 0; k < 32; k++) s = s * 0.999 + 0.5 / (1 + s * s);
    return s;
  }),
};
const kernelName = (args.get('kernel') ?? 'memory') as keyof typeof KERNELS;
const kernel = KERNELS[kernelName];
if (!kernel) throw new Error(`--kernel is memory or compute; found '${kernelName}'.`);

/** A job line of the `ufunc worker` log, as src/cli.ts prints it. */
const JOB_LINE = /^job \S+: (\d+) chunks? in ([\d.]+) ms \(read ([\d.]+), kernel ([\d.]+), write ([\d.]+) ms\)/;

interface JobLog {
  readonly chunks: number;
  readonly ms: number;
  readonly times: ChunkTimes;
}

/** Workers of one kind: from a checkout, holding some number of chunks at once. */
interface Variant {
  readonly label: string;
  readonly checkout: string;
  readonly concurrency?: number;
}

const variants: Variant[] = [
  ...concurrencies.map((c) => ({ label: c === undefined ? 'default concurrency' : `${c} chunk${c === 1 ? '' : 's'} at once`, checkout: repo, ...(c !== undefined && { concurrency: c }) })),
  ...(baseline ? [{ label: `baseline ${path.basename(baseline)}`, checkout: baseline }] : []),
];

/** `ufunc worker` processes of `variant` on one queue, whose job lines are collected. */
async function startWorkers(variant: Variant, count: number, redisUrl: string, root: string, queue: string): Promise<{ jobs: JobLog[]; stop(): void }> {
  const jobs: JobLog[] = [];
  const children: ChildProcess[] = [];
  let ready = 0;
  const concurrency = variant.concurrency === undefined ? [] : ['--concurrency', String(variant.concurrency)];
  for (let i = 0; i < count; i++) {
    const child = spawn(process.execPath, ['--import', 'tsx', path.join(variant.checkout, 'src/cli.ts'), 'worker', '--redis', redisUrl, '--store', root, '--queue', queue, '--target', 'cpu', ...concurrency], { cwd: variant.checkout, stdio: ['ignore', 'pipe', 'inherit'] });
    createInterface({ input: child.stdout! }).on('line', (line) => {
      if (line.startsWith('ufunc worker')) ready++;
      const m = JOB_LINE.exec(line);
      if (m) jobs.push({ chunks: Number(m[1]), ms: Number(m[2]), times: { readMs: Number(m[3]), kernelMs: Number(m[4]), writeMs: Number(m[5]) } });
    });
    children.push(child);
  }
  while (ready < count) await new Promise((r) => setTimeout(r, 50));
  return { jobs, stop: () => children.forEach((c) => c.kill('SIGKILL')) };
}

let outputs = 0;
/** A fresh output array like `x` (a new name each time: no call replaces another's files). */
async function freshOutput(root: string, x: ZarrArray): Promise<ZarrArray> {
  return createZarr(root, `y${outputs++}`, { shape: x.shape, chunkShape: x.chunkShape, dtype: 'float32' });
}

function removeArray(a: ZarrArray): void {
  rmSync(path.join(a.root, a.path), { recursive: true, force: true });
}

interface Row {
  readonly chunkBytes: number;
  readonly where: string;
  readonly perChunk: Record<string, number>;
  /** Worker time per chunk of each call. */
  readonly runs?: readonly number[];
}

async function measureSize(chunkBytes: number, redisUrl: string): Promise<Row[]> {
  const chunk = chunkBytes / 4;
  const count = Number(args.get('count') ?? Math.min(256, Math.max(16, Math.round(2 ** 28 / chunkBytes))));
  const root = path.join(dir, `store-${chunkBytes}.zarr`);
  const x = await createZarr(root, 'x', { shape: [count * chunk], chunkShape: [chunk], dtype: 'float32' });
  const data = allocateBox('float32', [chunk]);
  (data.data as Float32Array).forEach((_, i, a) => (a[i] = (i % 10007) / 1000));
  for (let c = 0; c < count; c++) await writeBox(x, [[c * chunk, (c + 1) * chunk]], data);
  const one = await createZarr(root, 'one', { shape: [chunk], chunkShape: [chunk], dtype: 'float32' });
  await writeBox(one, [[0, chunk]], data);
  // The input's pages go to disk now, not while the first measurements write (the kernel throttles
  // a writer once too much is dirty).
  execFileSync('sync');
  const rows: Row[] = [];
  console.error(`bench/cluster-overhead: chunks of ${formatSize(chunkBytes)}, ${count} per call`);

  // In this process: runChunk's own split, per chunk, over one pass (after a warm-up pass).
  const split: ChunkTimes[] = [];
  for (let pass = 0; pass < 2; pass++) {
    const y = await freshOutput(root, x);
    const call = { ufunc: kernel, inputs: [x], outputs: [y] };
    const grid = gridOf(call);
    for (let i = 0; i < grid.count; i++) {
      const times: ChunkTimes = { readMs: 0, kernelMs: 0, writeMs: 0 };
      await runChunk(call, grid, chunkCoords(grid, i), { times });
      if (pass === 1) split.push(times);
    }
    removeArray(y);
  }
  const kernelMs = median(split.map((t) => t.kernelMs));
  const local: number[] = [];
  for (let r = 0; r < reps; r++) {
    const y = await freshOutput(root, x);
    const s = performance.now();
    await mapChunks(kernel, [x], y, { concurrency: 1 });
    local.push((performance.now() - s) / count);
    removeArray(y);
  }
  rows.push({
    chunkBytes,
    where: 'this process',
    perChunk: { read: median(split.map((t) => t.readMs)), kernel: kernelMs, write: median(split.map((t) => t.writeMs)), 'local call': median(local) },
  });
  console.error(JSON.stringify(rows.at(-1)));

  for (const w of workerCounts) {
    const started = await Promise.all(variants.map((v, i) => startWorkers(v, w, redisUrl, root, `overhead-${chunkBytes}-${w}-${i}`)));
    try {
      const runs = variants.map((_, i) => ({
        cluster: { url: redisUrl, queue: `overhead-${chunkBytes}-${w}-${i}`, chunksPerJob: perJob },
        walls: [] as number[],
        perRep: [] as { busy: number; read: number; kernel: number; write: number }[],
        latency: [] as number[],
      }));
      for (const { cluster } of runs) {
        const warm = await freshOutput(root, x);
        await mapChunks(kernel, [x], warm, { cluster });
        removeArray(warm);
      }
      // The variants take turns, each rep starting with the next one, so that the machine's load
      // (and the page cache's writeback of the call before) weighs on each alike.
      for (let r = 0; r < reps; r++) {
        for (let k = 0; k < runs.length; k++) {
          const i = (r + k) % runs.length;
          const run = runs[i]!;
          const workers = started[i]!;
          const y = await freshOutput(root, x);
          workers.jobs.length = 0;
          const s = performance.now();
          await mapChunks(kernel, [x], y, { cluster: run.cluster });
          const wall = performance.now() - s;
          // The last job lines may still be in the pipe from the workers.
          for (let t = 0; t < 40 && workers.jobs.reduce((a, j) => a + j.chunks, 0) < count; t++) await new Promise((res) => setTimeout(res, 25));
          const jobs = workers.jobs.slice();
          const chunks = jobs.reduce((a, j) => a + j.chunks, 0) || 1;
          run.walls.push((wall * w) / count);
          run.perRep.push({
            busy: jobs.reduce((a, j) => a + j.ms, 0) / chunks,
            read: jobs.reduce((a, j) => a + j.times.readMs, 0) / chunks,
            kernel: jobs.reduce((a, j) => a + j.times.kernelMs, 0) / chunks,
            write: jobs.reduce((a, j) => a + j.times.writeMs, 0) / chunks,
          });
          removeArray(y);
        }
      }
      for (let r = 0; r < Math.max(reps, 5); r++) {
        for (const run of runs) {
          const y = await freshOutput(root, one);
          const s = performance.now();
          await mapChunks(kernel, [one], y, { cluster: run.cluster });
          run.latency.push(performance.now() - s);
          removeArray(y);
        }
      }
      for (const [i, run] of runs.entries()) {
        const workerTime = median(run.walls);
        const busy = median(run.perRep.map((p) => p.busy));
        rows.push({
          chunkBytes,
          where: `${w} worker${w === 1 ? '' : 's'}, ${variants[i]!.label}, ${perJob} chunk${perJob === 1 ? '' : 's'} per job`,
          perChunk: {
            'worker time': workerTime,
            'in job': busy,
            'job read': median(run.perRep.map((p) => p.read)),
            'job kernel': median(run.perRep.map((p) => p.kernel)),
            'job write': median(run.perRep.map((p) => p.write)),
            'outside jobs': workerTime - busy,
            overhead: workerTime - kernelMs,
            'one-chunk call': median(run.latency),
          },
          runs: run.walls,
        });
        console.error(JSON.stringify(rows.at(-1)));
      }
    } finally {
      for (const workers of started) workers.stop();
    }
  }
  rmSync(root, { recursive: true, force: true });
  return rows;
}

async function main(): Promise<void> {
  const redis = await startRedis();
  const load = loadavg()[0]!.toFixed(2);
  const rows: Row[] = [];
  try {
    for (const size of sizes) rows.push(...(await measureSize(size, redis.url)));
  } finally {
    await redis.stop();
  }
  const columns = ['read', 'kernel', 'write', 'local call', 'worker time', 'in job', 'job read', 'job kernel', 'job write', 'outside jobs', 'overhead', 'one-chunk call'];
  const cell = (v: number | undefined): string => (v === undefined ? '' : v.toFixed(2));
  const table = [
    `${cpus().length} × ${cpus()[0]?.model}, load ${load} at the start; kernel ${kernelName === 'memory' ? '2x+1' : '32 steps of s·0.999 + 0.5/(1+s²)'} (float32); medians of ${reps} calls; ms per chunk.`,
    '',
    `| chunk | where | ${columns.join(' | ')} |`,
    `|---|---|${columns.map(() => '---:').join('|')}|`,
    ...rows.map((r) => `| ${formatSize(r.chunkBytes)} | ${r.where} | ${columns.map((c) => cell(r.perChunk[c])).join(' | ')} |`),
  ].join('\n');
  console.log(table);
  if (args.has('out')) writeFileSync(args.get('out')!, `${table}\n\n\`\`\`json\n${JSON.stringify(rows, null, 1)}\n\`\`\`\n`);
  if (!args.has('dir')) rmSync(dir, { recursive: true, force: true });
  process.exit(0);
}

void main();
