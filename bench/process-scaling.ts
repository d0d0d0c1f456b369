/**
 * How far N processes can scale on this machine for bench/cluster.ts's compute kernel, with no
 * cluster at all: N plain Node processes each run the kernel (cpu target, into a given `out`) on
 * one 8 MiB chunk of float32, over and over, all at once; each reports its median time per chunk.
 * The ratio of N processes' throughput to one process's is the ceiling that `ufunc worker`
 * processes can reach on this host (issue "Beyond one machine": 8 workers ≥ 6× one) — if one
 * process's chunk takes longer when N run at once, the host (clock under all-core load, shared
 * cores and caches), not the queue, is what scaling loses.
 *
 *   npx tsx bench/process-scaling.ts [--processes 1,2,4,8,16] [--steps 33] [--seconds 8]
 *
 * Each process: 8 warm-up chunks (past the engine's calibration), then chunks for `--seconds`;
 * the processes of one N start together and are timed only in the window in which all of them run.
 */
import { spawn } from 'node:child_process';
import { cpus, loadavg } from 'node:os';
import { fileURLToPath } from 'node:url';
import { computeKernel } from './lib/cluster-kernels.js';

const argv = process.argv.slice(2);
const flag = (name: string, fallback: string): string => (argv.includes(`--${name}`) ? argv[argv.indexOf(`--${name}`) + 1]! : fallback);
const steps = Number(flag('steps', '33'));
const seconds = Number(flag('seconds', '8'));
const CHUNK = 2 ** 21; // 8 MiB of float32, bench/cluster.ts's chunk

if (argv.includes('--child')) {
  const f = computeKernel(steps);
  const x = new Float32Array(CHUNK).map((_, i) => (i % 10007) / 1000);
  const out = new Float32Array(CHUNK);
  for (let i = 0; i < 8; i++) f(x, { out });
  // Every process times chunks from `start` to `end` (epoch ms, the same for all): the window in
  // which all of them are computing.
  const start = Number(flag('start', '0'));
  const end = start + seconds * 1000;
  while (Date.now() < start) f(x, { out });
  const times: number[] = [];
  while (Date.now() < end) {
    const s = performance.now();
    f(x, { out });
    times.push(performance.now() - s);
  }
  times.sort((a, b) => a - b);
  process.stdout.write(JSON.stringify({ median: times[times.length >> 1], chunks: times.length }));
  process.exit(0);
}

async function run(n: number): Promise<{ median: number; chunks: number }[]> {
  // Warm-up (tsx, compile, calibration) takes a few seconds per process: the window starts after it.
  const start = Date.now() + 6000 + 200 * n;
  const children = Array.from({ length: n }, () => new Promise<{ median: number; chunks: number }>((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', fileURLToPath(import.meta.url), '--child', '--steps', String(steps), '--seconds', String(seconds), '--start', String(start)], { stdio: ['ignore', 'pipe', 'inherit'] });
    let text = '';
    child.stdout.on('data', (d: Buffer) => (text += d.toString()));
    child.on('exit', (code) => (code === 0 ? resolve(JSON.parse(text)) : reject(new Error(`a child exited with ${code}`))));
  }));
  return Promise.all(children);
}

const counts = flag('processes', '1,2,4,8,16').split(',').map(Number);
console.log(`bench/process-scaling: ${cpus().length} × ${cpus()[0]?.model}, load ${loadavg()[0]!.toFixed(2)}; kernel ${steps} steps of s·0.999 + 0.5/(1+s²) on 8 MiB float32 chunks, cpu target; ${seconds} s window per N`);
console.log('| processes | median ms per chunk (each process) | chunks/s, all | × one process |');
console.log('|---:|---|---:|---:|');
let one = 0;
for (const n of counts) {
  const r = await run(n);
  const rate = r.reduce((sum, p) => sum + 1000 / p.median, 0);
  if (one === 0) one = n === 1 ? rate : rate / n;
  console.log(`| ${n} | ${r.map((p) => p.median.toFixed(1)).join(', ')} | ${rate.toFixed(1)} | ${(rate / one).toFixed(2)}× |`);
}
