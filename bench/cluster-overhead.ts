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
 *   descriptor, submission, completion event);
 * - **Redis's share**, per chunk over each call: the commands Redis ran for every client (the
 *   workers' job moves, lock renewals and polls, the caller's submission and event reads: `INFO
 *   commandstats`) and the CPU time redis-server spent (`INFO cpu`); and a round trip (`PING`) from
 *   this process, idle, once per run;
 * - **raw I/O, W processes** (bench/lib/raw-chunk-io.mjs): W plain Node processes doing only what
 *   the W workers' reads and writes do to the same chunk files (the whole file in one read; a
 *   temporary file in one write, renamed), holding as many chunks at once — no queue, no kernel, no
 *   library. Its worker time per chunk is what the disk and page cache cost W processes sharing
 *   them; the workers' worker time beyond it and the kernel is the library's (queue, checks, copies
 *   between threads, event-loop turns);
 * - **CPU per chunk** (`worker cpu`): the CPU time (user + system, every thread) the W workers — or
 *   the W raw I/O processes — spent over the call, per chunk (from /proc/PID/stat; the system time
 *   holds the copies between the page cache and the process). Beside the worker time it says whether
 *   the processes were computing and copying or waiting (for the disk, Redis, each other).
 *
 * Each output array is removed after its call (outside the timing). Numbers are per chunk, in ms.
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { Redis } from 'ioredis';
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

/** Redis's work so far: commands run (all clients) and CPU seconds used. */
async function redisWork(redis: Redis): Promise<{ commands: number; cpuMs: number }> {
  const stats = await redis.info('commandstats');
  let commands = 0;
  for (const m of stats.matchAll(/^cmdstat_[^:]+:calls=(\d+)/gm)) commands += Number(m[1]);
  const cpu = await redis.info('cpu');
  const field = (name: string): number => Number(new RegExp(`^${name}:([\\d.]+)`, 'm').exec(cpu)?.[1] ?? NaN);
  return { commands, cpuMs: (field('used_cpu_sys') + field('used_cpu_user')) * 1000 };
}

/** The median round trip of a PING from this process, in ms. */
async function pingMs(redis: Redis): Promise<number> {
  const times: number[] = [];
  for (let i = 0; i < 200; i++) {
    const s = performance.now();
    await redis.ping();
    times.push(performance.now() - s);
  }
  return median(times);
}

/** CPU time (user + system, all threads) of the processes `pids` so far, in ms (Linux's /proc; NaN elsewhere). */
function cpuMsOf(pids: readonly number[]): number {
  let ticks = 0;
  for (const pid of pids) {
    try {
      // Fields after the command's closing parenthesis: state is the 3rd field, utime the 14th, stime the 15th.
      const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
      ticks += Number(fields[11]) + Number(fields[12]);
    } catch {
      return NaN;
    }
  }
  return ticks * 10; // USER_HZ: 100 ticks a second
}

/**
 * W plain processes copying `count` chunk files of `root`/x/c to a fresh folder, `held` at once
 * each (bench/lib/raw-chunk-io.mjs): the wall time from their start signal to the last one's end.
 */
async function rawIo(root: string, count: number, w: number, held: number): Promise<{ wall: number; cpuMs: number }> {
  const out = path.join(root, `raw-${outputs++}`);
  mkdirSync(out, { recursive: true });
  const children = Array.from({ length: w }, (_, i) =>
    spawn(process.execPath, [path.join(repo, 'bench/lib/raw-chunk-io.mjs'), path.join(root, 'x', 'c'), out, String(count), String(i), String(w), String(held)], { stdio: ['pipe', 'pipe', 'inherit'] }),
  );
  const said = (child: ChildProcess, word: string): Promise<string> =>
    new Promise((resolve, reject) => {
      const lines = createInterface({ input: child.stdout! });
      lines.on('line', (line) => line.split(' ')[0] === word && (lines.close(), resolve(line)));
      child.on('exit', (code) => reject(new Error(`raw-chunk-io exited with ${code} before '${word}'`)));
    });
  await Promise.all(children.map((c) => said(c, 'ready')));
  const done = Promise.all(children.map((c) => said(c, 'done')));
  const s = performance.now();
  for (const c of children) c.stdin!.write('go\n');
  const lines = await done;
  const wall = performance.now() - s;
  for (const c of children) c.stdin!.end();
  rmSync(out, { recursive: true, force: true });
  return { wall, cpuMs: lines.reduce((a, line) => a + Number(line.split(' ')[1]), 0) };
}

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
async function startWorkers(variant: Variant, count: number, redisUrl: string, root: string, queue: string): Promise<{ jobs: JobLog[]; pids: number[]; stop(): void }> {
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
  return { jobs, pids: children.map((c) => c.pid!), stop: () => children.forEach((c) => c.kill('SIGKILL')) };
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

async function measureSize(chunkBytes: number, redisUrl: string, stats: Redis): Promise<Row[]> {
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
        perRep: [] as { busy: number; read: number; kernel: number; write: number; commands: number; redisCpu: number; cpu: number }[],
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
          const before = await redisWork(stats);
          const cpuBefore = cpuMsOf(workers.pids);
          const s = performance.now();
          await mapChunks(kernel, [x], y, { cluster: run.cluster });
          const wall = performance.now() - s;
          const after = await redisWork(stats);
          const cpuAfter = cpuMsOf(workers.pids);
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
            // Less the two INFO commands of this count.
            commands: (after.commands - before.commands - 2) / count,
            redisCpu: (after.cpuMs - before.cpuMs) / count,
            cpu: (cpuAfter - cpuBefore) / count,
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
            'redis cmds': median(run.perRep.map((p) => p.commands)),
            'redis cpu': median(run.perRep.map((p) => p.redisCpu)),
            'worker cpu': median(run.perRep.map((p) => p.cpu)),
          },
          runs: run.walls,
        });
        console.error(JSON.stringify(rows.at(-1)));
      }
      // The same reads and writes by W plain processes, holding as many chunks at once as each variant.
      for (const held of new Set(variants.map((v) => v.concurrency ?? 3))) {
        const walls: number[] = [];
        const cpu: number[] = [];
        for (let r = 0; r < reps; r++) {
          const io = await rawIo(root, count, w, held);
          walls.push((io.wall * w) / count);
          cpu.push(io.cpuMs / count);
        }
        rows.push({ chunkBytes, where: `${w} process${w === 1 ? '' : 'es'}, raw I/O, ${held} chunk${held === 1 ? '' : 's'} at once`, perChunk: { 'worker time': median(walls), 'worker cpu': median(cpu) }, runs: walls });
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
  const stats = new Redis(redis.url);
  const load = loadavg()[0]!.toFixed(2);
  const rows: Row[] = [];
  let ping = NaN;
  try {
    ping = await pingMs(stats);
    console.error(`bench/cluster-overhead: Redis PING round trip ${ping.toFixed(3)} ms (median of 200, idle)`);
    for (const size of sizes) rows.push(...(await measureSize(size, redis.url, stats)));
  } finally {
    stats.disconnect();
    await redis.stop();
  }
  const columns = ['read', 'kernel', 'write', 'local call', 'worker time', 'in job', 'job read', 'job kernel', 'job write', 'outside jobs', 'overhead', 'one-chunk call', 'redis cmds', 'redis cpu', 'worker cpu'];
  const cell = (v: number | undefined): string => (v === undefined ? '' : v.toFixed(2));
  const table = [
    `${cpus().length} × ${cpus()[0]?.model}, load ${load} at the start; kernel ${kernelName === 'memory' ? '2x+1' : '32 steps of s·0.999 + 0.5/(1+s²)'} (float32); medians of ${reps} calls; ms per chunk (redis cmds: commands per chunk); Redis PING round trip ${ping.toFixed(3)} ms idle.`,
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
