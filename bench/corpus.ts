/**
 * The corpus of kernels users write (bench/corpus/kernels.ts) on the cpu and parallel targets,
 * against Numba cpu/parallel and a hand-written JS loop, in one run:
 *
 *   npx tsx bench/corpus.ts [--quick] [--only a,b] [--skip-peers] [--out FILE.md]
 *
 * Every contender is called as its users call it: ordinary typed arrays in, the output allocated by
 * the call (`await f(x)`; the loop allocates its own; Numba's `f(x)`). Per kernel: the cpu target
 * with the engine it chooses and with each engine forced (`setEngineMode('js' | 'wasm')`, to check
 * the choice; the three timed in turns of warm bursts, as a loop of each calls it), with
 * `fastmath: true`, and the parallel target; medians after warm-up. Each row
 * names the engine chosen (`f.explain`) and gives cpu ÷ Numba cpu, parallel ÷ Numba parallel and
 * cpu ÷ JS loop. The ufunc's output is checked against the loop's.
 *
 * Goals (issue 20): cpu ≤ 1.0× Numba cpu, parallel ≤ 1.0× Numba parallel, never slower than the
 * loop; the chosen engine within 1.1× of the faster one; fastmath never slower than the default.
 *
 * Writes bench/results/corpus-<machine>.md (`-quick` with --quick, `-partial` with --only).
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { ready, setEngineMode, sharedArray, shutdown } from '../src/index.js';
import { engineLabel } from './lib/engine.js';
import { formatCount, formatRatio, formatSeconds } from './lib/format.js';
import { describeMachine, machineMarkdown, machineSlug } from './lib/machine.js';
import { markdownTable } from './lib/markdown.js';
import { findPython } from './lib/python.js';
import { median } from './lib/timing.js';
import { mulberry32 } from '../tests/random.js';
import { CORPUS, type CorpusKernel, type Data, type Operand } from './corpus/kernels.js';
import { callArgument, makeInput } from './corpus/inputs.js';

const args = process.argv.slice(2);
const quick = args.includes('--quick');
const flag = (name: string) => (args.includes(name) ? args[args.indexOf(name) + 1] : undefined);
const only = flag('--only')?.split(',');
const skipPeers = args.includes('--skip-peers');
const machine = describeMachine({ summary: 'not used by this benchmark' });
const suffix = quick ? '-quick' : only ? '-partial' : '';
const outFile = flag('--out') ?? fileURLToPath(new URL(`./results/corpus-${machineSlug(machine)}${suffix}.md`, import.meta.url));
const timing = { samples: 5 };
const reps = quick ? 5 : 7;

const kernels = CORPUS.filter((k) => !only || only.includes(k.name));
for (const name of only ?? []) if (!CORPUS.some((k) => k.name === name)) throw new Error(`No corpus kernel named ${name}; the kernels are ${CORPUS.map((k) => k.name).join(', ')}.`);
const sizeOf = (k: CorpusKernel) => Math.max(1, Math.round(quick ? k.fullSize / 16 : k.fullSize));

// ----------------------------------------------------------------------------------- inputs

const SHARED_DTYPES = new Map<unknown, 'float32' | 'float64' | 'int32' | 'int16' | 'uint8'>([[Float32Array, 'float32'], [Float64Array, 'float64'], [Int32Array, 'int32'], [Int16Array, 'int16'], [Uint8Array, 'uint8']]);
/** A copy in shared memory (the Wasm memory, where `sharedArray` puts it). */
function toShared(data: Data): Data {
  const copy = sharedArray(data.length, SHARED_DTYPES.get(data.constructor)!) as Data;
  copy.set(data as never);
  return copy;
}

const flat = (result: unknown): Data => (ArrayBuffer.isView(result) ? (result as Data) : (result as { data: Data }).data);

function largestDifference(got: Data, want: Data): number {
  if (got.length !== want.length) return Infinity;
  let worst = 0;
  for (let i = 0; i < got.length; i++) {
    const a = got[i]!;
    const b = want[i]!;
    if (Object.is(a, b) || (Number.isNaN(a) && Number.isNaN(b))) continue;
    // Relative to the value, or absolute below 1 (cancellation near zero, e.g. GELU's 1 + tanh at −6 in float32).
    worst = Math.max(worst, Math.abs(a - b) / Math.max(Math.abs(b), 1));
  }
  return worst;
}

// ------------------------------------------------------------------------------------- peers

interface NumbaRow {
  readonly name: string;
  readonly cpu_s: number;
  readonly parallel_s: number;
  readonly cpu_compile_s: number;
  readonly parallel_compile_s: number;
}
interface NumbaReport {
  readonly numba: string;
  readonly numpy: string;
  readonly threads: number;
  readonly threading_layer: string;
  readonly kernels: readonly NumbaRow[];
}

function runNumba(): { ok: true; report: NumbaReport } | { ok: false; reason: string } {
  if (skipPeers) return { ok: false, reason: '--skip-peers' };
  const python = findPython(['numpy', 'numba']);
  if (!python.ok) return { ok: false, reason: python.reason };
  const spec = kernels.map((k) => ({ name: k.name, inputs: k.inputs(sizeOf(k)) }));
  const dir = mkdtempSync(join(tmpdir(), 'ufunc-corpus-'));
  writeFileSync(join(dir, 'spec.json'), JSON.stringify(spec));
  const run = spawnSync(python.value, [fileURLToPath(new URL('./peers/corpus_numba.py', import.meta.url)), join(dir, 'spec.json'), String(reps)], {
    encoding: 'utf8',
    timeout: 900_000,
    maxBuffer: 16 * 1024 * 1024,
    env: { ...process.env, PYTHONDONTWRITEBYTECODE: '1' },
  });
  if (run.status !== 0) return { ok: false, reason: `corpus_numba.py failed (exit ${run.status}): ${run.stderr.trim().split('\n').slice(-3).join(' / ')}` };
  return { ok: true, report: JSON.parse(run.stdout.trim().split('\n').at(-1)!) as NumbaReport };
}

// ---------------------------------------------------------------------------------- ufuncs

interface Measured {
  readonly kernel: CorpusKernel;
  readonly size: number;
  readonly cpuEngine: string;
  readonly parallelEngine: string;
  readonly cpu: number;
  readonly cpuJs: number;
  readonly cpuWasm: number;
  readonly cpuFastmath: number;
  readonly parallel: number;
  readonly loop: number;
  /** The same calls with every array in shared (Wasm) memory: `sharedArray` inputs and `out`. */
  readonly cpuShared: number;
  readonly parallelShared: number;
  readonly difference: number;
}

/**
 * Timed calls per sample at least: a kernel with a fresh output of tens of MiB has V8 run a full
 * collection every two calls or so, and a sample of one call takes it or not by where the turn
 * falls. Four (even, after the one untimed call) take half of such collections, as a loop does.
 */
const MIN_TIMED_CALLS = 4;

/**
 * Median seconds per call of each of `calls`, timed in turns, each turn a warm burst of one call: one
 * call untimed (it meets the caches and the garbage the previous contender left), then as many calls
 * of it as last ≥ 5 ms (four at least), timed — what a user's loop of that call waits for per
 * call, the way the Numba peer is timed (a tight loop of the same call). A turn of single calls, each right after a different
 * contender, would time cold caches that no user's loop sees. The turns rotate, so that no contender
 * always follows the same one, and every contender sees the same load on a shared machine.
 */
async function interleaved(calls: readonly (() => Promise<unknown>)[]): Promise<number[]> {
  const once = async (call: () => Promise<unknown>) => {
    const start = performance.now();
    await call();
    return (performance.now() - start) / 1000;
  };
  const batches: number[] = [];
  for (const call of calls) batches.push(Math.max(MIN_TIMED_CALLS, Math.ceil(0.005 / Math.max(await once(call), 1e-7))));
  const samples = calls.map((): number[] => []);
  for (let s = 0; s < timing.samples; s++) {
    for (let turn = 0; turn < calls.length; turn++) {
      const k = (turn + s) % calls.length;
      const call = calls[k]!;
      await call();
      const start = performance.now();
      for (let i = 0; i < batches[k]!; i++) await call();
      samples[k]!.push((performance.now() - start) / 1000 / batches[k]!);
    }
  }
  return samples.map(median);
}

async function measure(kernel: CorpusKernel, seed: number): Promise<Measured> {
  const size = sizeOf(kernel);
  const next = mulberry32(seed); // every run draws the same inputs
  const operands = kernel.inputs(size).map((r) => makeInput(r, next));
  const callArgs = operands.map(callArgument);
  const cpuUfunc = kernel.makeUfunc('cpu');
  const parallelUfunc = kernel.makeUfunc('parallel');
  const cpuFastmath = kernel.makeUfunc('cpu', { fastmath: true });
  await ready();
  const expected = kernel.loop(operands);
  const difference = largestDifference(flat(await cpuUfunc(...callArgs)), expected);
  // The engine chosen and each engine forced, sample by sample in turn, so that all three see the
  // same load (on a shared machine it moves by several times within seconds).
  const inMode = (mode: 'auto' | 'js' | 'wasm') => async () => {
    const before = setEngineMode(mode);
    try {
      await cpuUfunc(...callArgs);
    } finally {
      setEngineMode(before);
    }
  };
  // What ordinary arrays cost (issue 20, item 4): the same calls on sharedArray inputs into a given sharedArray `out`.
  const sharedArgs = operands.map((a) => (typeof a === 'number' ? a : callArgument({ data: toShared(a.data), shape: a.shape })));
  const result = await cpuUfunc(...callArgs);
  const out = ArrayBuffer.isView(result) ? toShared(result as Data) : { data: toShared((result as { data: Data }).data), shape: (result as { shape: number[] }).shape };
  // Most of the calls that try both engines, for each call shape (engine-calibration.ts).
  for (let i = 0; i < 6; i++) {
    await cpuUfunc(...callArgs);
    await cpuFastmath(...callArgs);
    await cpuUfunc(...sharedArgs, { out });
    await parallelUfunc(...callArgs);
    await parallelUfunc(...sharedArgs, { out });
  }
  const [cpu, cpuJs, cpuWasm, fastmath, cpuShared, loop] = await interleaved([
    inMode('auto'), inMode('js'), inMode('wasm'), () => cpuFastmath(...callArgs), () => cpuUfunc(...sharedArgs, { out }), async () => kernel.loop(operands),
  ]);
  const [parallel, parallelShared] = await interleaved([() => parallelUfunc(...callArgs), () => parallelUfunc(...sharedArgs, { out })]);
  // After the calls: the engine measured for the call's shape, or the guess where none was.
  const cpuEngine = engineLabel(cpuUfunc.explain(...callArgs));
  const parallelEngine = engineLabel(parallelUfunc.explain(...callArgs));
  return { kernel, size, cpuEngine, parallelEngine, cpu, cpuJs, cpuWasm, cpuFastmath: fastmath, parallel, loop, difference, cpuShared, parallelShared };
}

const started = performance.now();
const measured: Measured[] = [];
for (const [i, kernel] of kernels.entries()) {
  process.stderr.write(`${kernel.name} (${i + 1}/${kernels.length})\n`);
  measured.push(await measure(kernel, 1000 + i));
}
const numba = runNumba();
const numbaOf = (name: string) => (numba.ok ? numba.report.kernels.find((k) => k.name === name) : undefined);

// ------------------------------------------------------------------------------------ report

const ratio = (a: number, b: number | undefined) => (b === undefined ? '—' : formatRatio(a / b));
const rows = measured.map((m) => {
  const peer = numbaOf(m.kernel.name);
  const best = Math.min(m.cpuJs, m.cpuWasm);
  return [
    m.kernel.name,
    `${formatCount(m.size)} ${m.kernel.items}`,
    m.cpuEngine,
    formatSeconds(m.cpu),
    formatSeconds(m.cpuJs),
    formatSeconds(m.cpuWasm),
    formatRatio(m.cpu / best),
    formatRatio(m.cpuFastmath / m.cpu),
    formatSeconds(m.parallel),
    formatSeconds(m.loop),
    peer ? formatSeconds(peer.cpu_s) : '—',
    peer ? formatSeconds(peer.parallel_s) : '—',
    ratio(m.cpu, peer?.cpu_s),
    ratio(m.parallel, peer?.parallel_s),
    formatRatio(m.cpu / m.loop),
    formatRatio(m.cpu / m.cpuShared),
    formatRatio(m.parallel / m.parallelShared),
    m.difference <= m.kernel.tolerance ? 'ok' : `differs (${m.difference.toExponential(1)})`,
  ];
});
const right = (header: string) => ({ header, align: 'right' as const });
const report = [
  `# The corpus: kernels users write, on cpu and parallel, against Numba and a JS loop (${quick ? 'quick run: sizes ÷ 16' : only ? 'partial run' : 'full run'})`,
  '',
  '`npx tsx bench/corpus.ts' + (quick ? ' --quick' : '') + (only ? ` --only ${only.join(',')}` : '') + '`, ' + new Date().toISOString().slice(0, 16).replace('T', ' ') + ` UTC, ${((performance.now() - started) / 1000).toFixed(0)} s`,
  '',
  machineMarkdown(machine),
  numba.ok
    ? `- Numba ${numba.report.numba} (NumPy ${numba.report.numpy}), ${numba.report.threads} threads, threading layer ${numba.report.threading_layer}`
    : `- Numba: not run (${numba.reason})`,
  '',
  'Ordinary typed arrays in, outputs allocated by the call, on every side; medians after warm-up. ' +
    '"cpu" is the engine the library chooses; "JS" and "Wasm" force one engine (`setEngineMode`), and "chosen ÷ best" is cpu ÷ the faster of the two. ' +
    'Each kernel\'s cpu figures (chosen, JS, Wasm, fastmath, shared, JS loop) are timed in turns, sample by sample, and so are its two parallel ones: their ratios compare like with like on a loaded machine. Each sample is a warm burst of one contender (an untimed call, then at least four calls lasting ≥ 5 ms, timed), as a user\'s loop of that call runs and as Numba is timed. ' +
    '"fastmath ÷ cpu" is the same kernel with `fastmath: true`. "ordinary ÷ shared": the call as users write it against the same call on `sharedArray` inputs into a given `sharedArray` `out` (what ordinary arrays cost: copies, and the fresh output). Ratios below 1 mean ufunc is faster.',
  '',
  markdownTable(
    [
      { header: 'kernel' }, right('size'), { header: 'cpu engine' }, right('cpu'), right('JS'), right('Wasm'), right('chosen ÷ best'), right('fastmath ÷ cpu'),
      right('parallel'), right('JS loop'), right('Numba cpu'), right('Numba parallel'), right('cpu ÷ Numba cpu'), right('parallel ÷ Numba parallel'), right('cpu ÷ JS loop'), right('cpu: ordinary ÷ shared'), right('parallel: ordinary ÷ shared'), { header: 'check' },
    ],
    rows,
  ),
  '',
  '## Where each kernel comes from, and the parallel engine',
  '',
  markdownTable(
    [{ header: 'kernel' }, { header: 'declaration' }, { header: 'origin' }, { header: 'parallel engine' }],
    measured.map((m) => [m.kernel.name, `\`${m.kernel.declaration}\``, m.kernel.origin, m.parallelEngine]),
  ),
  '',
].join('\n');
console.log(report);
writeFileSync(outFile, report);
await shutdown();
