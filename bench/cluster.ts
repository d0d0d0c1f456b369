/**
 * Chunked calls on a cluster (issue "Beyond one machine"): a compute-bound and a memory-bound ufunc
 * over a float32 Zarr array, on 1, 2, 4, … `ufunc worker` processes over a real redis-server, against
 * Dask with Numba over the same store's chunks (bench/peers/dask_zarr.py, with Debian's python3).
 *
 *   npx tsx bench/cluster.ts [--gib 0.25] [--chunk-mib 8] [--workers 1,2] [--reps 3] [--dir DIR]
 *                            [--kinds compute,memory] [--local 1] [--peer 1] [--python /usr/bin/python3]
 *                            [--out FILE.md]
 *
 * Each figure is the median wall time of `reps` calls of `mapChunks(f, [x], y, { cluster })`, the
 * workers started beforehand (one target 'cpu' worker = one core) and warmed up by a call over a
 * small array of the same kernel (each worker compiles the descriptor once). The per-chunk overhead
 * is one worker's time per chunk minus the kernel's own time on one chunk in this process (the
 * read, the queue and the write around it). `--local 0` leaves out the run in this process and
 * `--peer 0` the Dask peer (for sizes where they would take too long).
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import path from 'node:path';
import * as zarr from 'zarrita';
import { vectorize } from '../src/api.js';
import { createZarr, mapChunks } from '../src/zarr/index.js';
import { startRedis } from '../tests/cluster/redis-server.js';

const args = new Map<string, string>();
for (let i = 2; i < process.argv.length; i += 2) args.set(process.argv[i]!.replace(/^--/, ''), process.argv[i + 1]!);
const gib = Number(args.get('gib') ?? 0.25);
const chunkMiB = Number(args.get('chunk-mib') ?? 8);
const workerCounts = (args.get('workers') ?? '1,2').split(',').map(Number);
const reps = Number(args.get('reps') ?? 3);
const python = args.get('python') ?? '/usr/bin/python3';
const kinds = (args.get('kinds') ?? 'compute,memory').split(',');
const withLocal = args.get('local') !== '0';
const withPeer = args.get('peer') !== '0';
const dir = args.get('dir') ?? mkdtempSync(path.join(tmpdir(), 'ufunc-bench-cluster-'));
const repo = path.resolve(import.meta.dirname, '..');

const n = Math.round((gib * 2 ** 30) / 4);
const chunk = Math.round((chunkMiB * 2 ** 20) / 4);

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

async function main(): Promise<void> {
  const redis = await startRedis();
  const root = path.join(dir, 'store.zarr');
  console.error(`bench/cluster: ${n} float32 (${gib} GiB) in chunks of ${chunk} (${chunkMiB} MiB) at ${root}; ${cpus().length} cores`);
  const x = await createZarr(root, 'x', { shape: [n], chunkShape: [chunk], dtype: 'float32' });
  for (let c = 0; c * chunk < n; c++) {
    const len = Math.min(chunk, n - c * chunk);
    const data = new Float32Array(len).map((_, i) => ((c * chunk + i) % 10007) / 1000);
    await zarr.set(x.array as never, [zarr.slice(c * chunk, c * chunk + len)], { data, shape: [len], stride: [1] } as never);
  }
  const y = await createZarr(root, 'y', { shape: [n], chunkShape: [chunk], dtype: 'float32' });
  const warm = await createZarr(root, 'warm', { shape: [4 * chunk], chunkShape: [chunk], dtype: 'float32' });
  const warmOut = await createZarr(root, 'warm-out', { shape: [4 * chunk], chunkShape: [chunk], dtype: 'float32' });
  const chunks = Math.ceil(n / chunk);
  const rows: string[] = [];
  const report: Record<string, unknown> = { n, chunk, chunks, cores: cpus().length, cpu: cpus()[0]?.model, results: [] };
  for (const [kind, f] of Object.entries(KERNELS).filter(([k]) => kinds.includes(k))) {
    // The kernel alone on one chunk, in this process.
    const one = new Float32Array(chunk).map((_, i) => (i % 10007) / 1000);
    await f(one);
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
        const s = performance.now();
        await mapChunks(f, [x], y, { concurrency: 2 });
        local.push(performance.now() - s);
      }
      rows.push(`| ${kind} | this process (cpu target, 2 chunks in flight) | ${(median(local) / 1000).toFixed(2)} | | |`);
    }
    rows.push(`| ${kind} | the kernel alone on one chunk, this process | ${(kernelMs / 1000).toFixed(4)} | | |`);
    let oneWorker = 0;
    for (const w of workerCounts) {
      const queue = `bench${w}${kind}`;
      const workers: ChildProcess[] = [];
      let ready = 0;
      for (let i = 0; i < w; i++) {
        const child = spawn(process.execPath, ['--import', 'tsx', path.join(repo, 'src/cli.ts'), 'worker', '--redis', redis.url, '--store', root, '--queue', queue, '--target', 'cpu'], { cwd: repo, stdio: ['ignore', 'pipe', 'inherit'] });
        child.stdout!.on('data', (d: Buffer) => {
          if (d.toString().includes('ufunc worker')) ready++;
        });
        workers.push(child);
      }
      while (ready < w) await new Promise((r) => setTimeout(r, 100));
      const cluster = { url: redis.url, queue };
      await mapChunks(f, [warm], warmOut, { cluster });
      const times: number[] = [];
      for (let r = 0; r < reps; r++) {
        const s = performance.now();
        await mapChunks(f, [x], y, { cluster });
        times.push(performance.now() - s);
      }
      for (const c of workers) c.kill('SIGKILL');
      const t = median(times);
      if (w === workerCounts[0]) oneWorker = t * workerCounts[0]!;
      const overhead = w === 1 ? ` ${(t / chunks - kernelMs).toFixed(2)} ms |` : ' |';
      rows.push(`| ${kind} | ${w} worker${w === 1 ? '' : 's'} | ${(t / 1000).toFixed(2)} | ${(oneWorker / t).toFixed(2)}× |${overhead}`);
      (report.results as unknown[]).push({ kind, workers: w, medianMs: t, runs: times, kernelMsPerChunk: kernelMs });
      console.error(rows.at(-1));
    }
    for (const w of withPeer ? workerCounts : []) {
      try {
        const out = execFileSync(python, [path.join(repo, 'bench/peers/dask_zarr.py'), root, kind, String(w), String(reps)], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] });
        const peer = JSON.parse(out) as { medianMs?: number; skipped?: string };
        rows.push(peer.medianMs !== undefined ? `| ${kind} | Dask + Numba, ${w} process${w === 1 ? '' : 'es'} | ${(peer.medianMs / 1000).toFixed(2)} | | |` : `| ${kind} | Dask + Numba | skipped: ${peer.skipped} | | |`);
        (report.results as unknown[]).push({ kind, peer: 'dask+numba', workers: w, ...peer });
      } catch (e) {
        rows.push(`| ${kind} | Dask + Numba, ${w} process${w === 1 ? '' : 'es'} | failed: ${(e as Error).message.split('\n')[0]} | | |`);
      }
      console.error(rows.at(-1));
    }
  }
  await redis.stop();
  const table = [
    `${n.toLocaleString('en')} float32 (${gib} GiB), ${chunks} chunks of ${chunkMiB} MiB; ${cpus().length} × ${cpus()[0]?.model}; medians of ${reps} calls after one warm-up.`,
    '',
    '| kernel | where | wall s | × 1 worker | overhead per chunk (1 worker) |',
    '|---|---|---:|---:|---:|',
    ...rows,
  ].join('\n');
  console.log(table);
  if (args.has('out')) writeFileSync(args.get('out')!, `${table}\n\n\`\`\`json\n${JSON.stringify(report, null, 1)}\n\`\`\`\n`);
  if (!args.has('dir')) rmSync(dir, { recursive: true, force: true });
  process.exit(0);
}

void main();
