/**
 * What a fresh output costs, on the cpu target and in NumPy (issue 20: memory-bound kernels on
 * ordinary arrays, where Numba does a 4M-element pass in 1–2 ms). CPU ms of the process per call
 * (the machine may be shared), median after warm-up, on ordinary typed arrays of `--size`
 * elements: float64 saxpy `a * x + y` and float32 relu, each into a given `out` and into the output
 * the call allocates, and a typed array of the output's size made and written once; with the
 * milliseconds of garbage collection per call (V8's `gc` performance entries) beside each. NumPy's
 * `np.empty(n)` written once and saxpy fresh and into `out`, with and without its huge-page advice.
 *
 * The JS side runs twice, each in a child process: as Node starts by default, and started with
 * `GLIBC_TUNABLES=glibc.malloc.hugetlb=1`, which makes glibc's `malloc` (where V8's ArrayBuffers
 * come from) advise transparent huge pages. With the host's setting `[madvise]` (printed), only
 * advised memory gets 2 MiB pages: NumPy advises its large arrays itself, V8 never does, so by
 * default each 4 KiB page of a fresh JS output is one page fault.
 *
 *   npx tsx bench/fresh-output.ts [--size N] [--samples K]
 */
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import os from 'node:os';
import { PerformanceObserver } from 'node:perf_hooks';
import { vectorize } from '../src/index.js';
import { transparentHugePages } from './lib/huge-pages.js';
import { findPython } from './lib/python.js';

const args = process.argv.slice(2);
const flag = (name: string) => (args.includes(name) ? args[args.indexOf(name) + 1] : undefined);
const n = Number(flag('--size') ?? 1 << 22);
const samples = Number(flag('--samples') ?? 15);

/** CPU ms per call (median) and GC ms per call (mean over the same calls). */
type Cost = { cpuMs: number; gcMs: number };

/** The JS side, in a child process (so that each run starts with its own `GLIBC_TUNABLES`): prints one JSON line. */
async function child(): Promise<void> {
  const gcSpans: { start: number; end: number }[] = [];
  const observer = new PerformanceObserver((list) => {
    for (const e of list.getEntries()) gcSpans.push({ start: e.startTime, end: e.startTime + e.duration });
  });
  observer.observe({ entryTypes: ['gc'] });
  const turn = () => new Promise((resolve) => setTimeout(resolve, 20)); // gc entries arrive on a later turn
  let keep: unknown;
  async function cost(call: () => unknown): Promise<Cost> {
    for (let i = 0; i < 5; i++) keep = call();
    await turn();
    const from = performance.now();
    const times: number[] = [];
    for (let i = 0; i < samples; i++) {
      const start = process.cpuUsage();
      keep = call();
      const used = process.cpuUsage(start);
      times.push((used.user + used.system) / 1e3);
    }
    const to = performance.now();
    await turn();
    const gc = gcSpans.filter((s) => s.start >= from && s.end <= to).reduce((sum, s) => sum + s.end - s.start, 0);
    return { cpuMs: times.sort((a, b) => a - b)[samples >> 1]!, gcMs: gc / samples };
  }
  const saxpy = vectorize(['float64(float64, float64, float64)'])((a: number, x: number, y: number) => a * x + y);
  const relu = vectorize(['float32(float32)'])((x: number) => (x > 0 ? x : 0));
  const x = Float64Array.from({ length: n }, (_, i) => Math.sin(i));
  const y = Float64Array.from({ length: n }, (_, i) => Math.cos(i));
  const x32 = Float32Array.from(x);
  const out = new Float64Array(n);
  const out32 = new Float32Array(n);
  const report: Record<string, Cost> = {
    saxpyGiven: await cost(() => saxpy.sync(2, x, y, { out })),
    saxpyFresh: await cost(() => saxpy.sync(2, x, y)),
    fill64: await cost(() => new Float64Array(n).fill(1)),
    reluGiven: await cost(() => relu.sync(x32, { out: out32 })),
    reluFresh: await cost(() => relu.sync(x32)),
    fill32: await cost(() => new Float32Array(n).fill(1)),
  };
  observer.disconnect();
  void keep;
  console.log(JSON.stringify(report));
}

if (args.includes('--child')) {
  await child();
} else {
  const self = fileURLToPath(import.meta.url);
  const runChild = (env: NodeJS.ProcessEnv): Record<string, Cost> =>
    JSON.parse(execFileSync(process.execPath, [...process.execArgv, self, '--child', '--size', String(n), '--samples', String(samples)], { encoding: 'utf8', env: { ...process.env, ...env } }).trim().split('\n').at(-1)!);
  const { GLIBC_TUNABLES: _, ...withoutTunables } = process.env;
  const plain = runChild({ ...withoutTunables, GLIBC_TUNABLES: '' });
  const advised = runChild({ GLIBC_TUNABLES: 'glibc.malloc.hugetlb=1' });
  const cell = (c: Cost) => `${c.cpuMs.toFixed(2)} (GC ${c.gcMs.toFixed(2)})`;
  const rows: [string, string, string][] = [
    [`ufunc cpu saxpy float64 into a given \`out\``, cell(plain.saxpyGiven!), cell(advised.saxpyGiven!)],
    [`ufunc cpu saxpy float64, output allocated by the call`, cell(plain.saxpyFresh!), cell(advised.saxpyFresh!)],
    ['`new Float64Array(n).fill(1)`', cell(plain.fill64!), cell(advised.fill64!)],
    [`ufunc cpu relu float32 into a given \`out\``, cell(plain.reluGiven!), cell(advised.reluGiven!)],
    [`ufunc cpu relu float32, output allocated by the call`, cell(plain.reluFresh!), cell(advised.reluFresh!)],
    ['`new Float32Array(n).fill(1)`', cell(plain.fill32!), cell(advised.fill32!)],
  ];
  const python = findPython(['numpy']);
  let numpyNote = '';
  if (python.ok) {
    const report = JSON.parse(execFileSync(python.value, [fileURLToPath(new URL('./peers/fresh_output.py', import.meta.url)), String(n), String(samples)], { encoding: 'utf8' }).trim().split('\n').at(-1)!);
    numpyNote = `NumPy ${report.numpy}`;
    const ms = (v: number) => v.toFixed(2);
    rows.push(
      ['NumPy saxpy float64 into a given `out`', ms(report.saxpy_given_out_ms), '—'],
      ['NumPy saxpy float64, fresh output', ms(report.no_hugepage.saxpy_fresh_ms), ms(report.hugepage.saxpy_fresh_ms)],
      ['NumPy `np.empty(n).fill(1)`', ms(report.no_hugepage.fresh_fill_ms), ms(report.hugepage.fresh_fill_ms)],
    );
  } else numpyNote = `NumPy not run: ${python.reason}`;
  console.log(`${os.cpus()[0]?.model ?? 'unknown CPU'}, ${os.availableParallelism()} cores, Node ${process.version}; ${numpyNote}; transparent huge pages: ${transparentHugePages() ?? 'not reported'}; ` +
    `${n.toLocaleString('en-US')} elements; CPU ms of the process per call, median of ${samples} after warm-up, and in brackets the mean ms of garbage collection per call; load average ${os.loadavg()[0]!.toFixed(1)} at the end.\n`);
  console.log('| call | 4 KiB pages: Node as it starts by default; NumPy with its advice off | huge pages advised: Node started with `GLIBC_TUNABLES=glibc.malloc.hugetlb=1`; NumPy by default |\n|---|---:|---:|');
  for (const [what, a, b] of rows) console.log(`| ${what} | ${a} | ${b} |`);
}
