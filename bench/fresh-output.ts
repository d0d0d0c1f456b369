/**
 * What a fresh output costs, on the cpu target and in NumPy (issue 20: memory-bound kernels on
 * ordinary arrays, where Numba does a 4M-element pass in 1–2 ms). CPU ms of the process per call
 * (the machine may be shared), median after warm-up, float64 saxpy `a * x + y` on 4,194,304
 * elements of ordinary typed arrays: the library's call into a given `out` and into the output it
 * allocates, a `new Float64Array(n)` written once, and NumPy's `np.empty(n)` written once and saxpy
 * fresh and into `out`, with and without NumPy's huge-page advice. Also prints the host's
 * transparent huge page setting: with `[madvise]`, only memory a program advises gets 2 MiB pages
 * (NumPy advises its large arrays; V8 does not advise ArrayBuffers), so each 4 KiB page of a fresh
 * JS output is one page fault.
 *
 *   npx tsx bench/fresh-output.ts [--size N] [--samples K]
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import os from 'node:os';
import { vectorize } from '../src/index.js';
import { findPython } from './lib/python.js';

const args = process.argv.slice(2);
const flag = (name: string) => (args.includes(name) ? args[args.indexOf(name) + 1] : undefined);
const n = Number(flag('--size') ?? 1 << 22);
const samples = Number(flag('--samples') ?? 15);

function cpuMs(call: () => unknown): number {
  for (let i = 0; i < 5; i++) call();
  const times: number[] = [];
  for (let i = 0; i < samples; i++) {
    const start = process.cpuUsage();
    call();
    const used = process.cpuUsage(start);
    times.push((used.user + used.system) / 1e3);
  }
  return times.sort((a, b) => a - b)[samples >> 1]!;
}

const thp = (() => {
  try {
    return readFileSync('/sys/kernel/mm/transparent_hugepage/enabled', 'utf8').trim();
  } catch {
    return 'unknown';
  }
})();
const saxpy = vectorize(['float64(float64, float64, float64)'])((a: number, x: number, y: number) => a * x + y);
const x = Float64Array.from({ length: n }, (_, i) => Math.sin(i));
const y = Float64Array.from({ length: n }, (_, i) => Math.cos(i));
const out = new Float64Array(n);
const rows: [string, number][] = [
  ['ufunc cpu saxpy into a given `out`', cpuMs(() => saxpy.sync(2, x, y, { out }))],
  ['ufunc cpu saxpy, output allocated by the call', cpuMs(() => saxpy.sync(2, x, y))],
  ['`new Float64Array(n).fill(1)`', cpuMs(() => new Float64Array(n).fill(1))],
];
const python = findPython(['numpy']);
let numpyNote = '';
if (python.ok) {
  const report = JSON.parse(execFileSync(python.value, [fileURLToPath(new URL('./peers/fresh_output.py', import.meta.url)), String(n), String(samples)], { encoding: 'utf8' }).trim().split('\n').at(-1)!);
  numpyNote = `NumPy ${report.numpy}`;
  rows.push(
    ['NumPy saxpy into a given `out`', report.saxpy_given_out_ms],
    ['NumPy saxpy, fresh output (huge-page advice on: its default)', report.hugepage.saxpy_fresh_ms],
    ['NumPy saxpy, fresh output (advice off)', report.no_hugepage.saxpy_fresh_ms],
    ['NumPy `np.empty(n).fill(1)` (advice on)', report.hugepage.fresh_fill_ms],
    ['NumPy `np.empty(n).fill(1)` (advice off)', report.no_hugepage.fresh_fill_ms],
  );
} else numpyNote = `NumPy not run: ${python.reason}`;
console.log(`${os.cpus()[0]?.model ?? 'unknown CPU'}, ${os.availableParallelism()} cores, Node ${process.version}; ${numpyNote}; transparent huge pages: ${thp}; ` +
  `${n.toLocaleString('en-US')} float64 elements; CPU ms of the process per call, median of ${samples} after warm-up; load average ${os.loadavg()[0]!.toFixed(1)} at the end.\n`);
console.log('| call | CPU ms |\n|---|---:|');
for (const [what, ms] of rows) console.log(`| ${what} | ${ms.toFixed(2)} |`);
