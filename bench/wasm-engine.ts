/**
 * The cpu and parallel targets' two engines against Numba, per workload, in one run:
 *
 *   npx tsx bench/wasm-engine.ts [--quick] [--workloads saxpy,exp,…] [--out FILE.md]
 *
 * Rows per workload: the JS engine (the reference, `setEngineMode('js')`) on ordinary arrays; the
 * default engine choice on arrays the library allocated in Wasm memory (`sharedArray`); the
 * default choice on ordinary ("foreign") arrays, which Wasm must copy in and out; the parallel
 * target on arrays in Wasm memory with each engine; Numba's `@vectorize`/`@guvectorize` with
 * target 'cpu' and 'parallel' (bench/peers/numpy_numba.py, same sizes and data). Each row says
 * which engine ran (`f.explain(…)`) and its time ÷ Numba's (cpu rows ÷ Numba cpu, parallel rows
 * ÷ Numba parallel). Also: the compile time of each kernel (`explain` before the first call:
 * parse, type, Wasm codegen + compile + instantiate, no run) and the first call.
 *
 * Goals (issue 10): cpu ≤ 1.0× Numba cpu on allocated arrays, ≤ 1.5× on foreign arrays; parallel
 * ≤ 1.0× Numba parallel; compile < 50 ms.
 */
import { writeFileSync } from 'node:fs';
import { availableParallelism, cpus } from 'node:os';
import { engineMode, setEngineMode } from '../src/targets/cpu/wasm/index.js';
import { getParallelOptions, sharedArray, vectorize } from '../src/index.js';
import { shutdown } from '../src/index.js';
import { __testing as parallelInternals } from '../src/targets/parallel/index.js';
import { engineLabel } from './lib/engine.js';
import { formatCount, formatRatio, formatSeconds } from './lib/format.js';
import { markdownTable } from './lib/markdown.js';
import { findPython, runPythonPeer } from './lib/python.js';
import { timeCalls } from './lib/timing.js';
import { type Allocate, allocateLocal, callArguments, WORKLOADS, type WorkloadName } from './workloads.js';

const args = process.argv.slice(2);
const quick = args.includes('--quick');
const flag = (name: string) => (args.includes(name) ? args[args.indexOf(name) + 1] : undefined);
const chosen = flag('--workloads')?.split(',') as WorkloadName[] | undefined;
const outFile = flag('--out');
const timing = quick ? { warmup: 1, samples: 5 } : { warmup: 2, samples: 7 };
const inWasmMemory: Allocate = (length, dtype) => sharedArray(length, dtype);
const python = findPython(['numpy', 'numba']);

const rows: string[][] = [];
const compileRows: string[][] = [];
const initialMode = engineMode();

for (const workload of WORKLOADS) {
  if (chosen && !chosen.includes(workload.name)) continue;
  const size = quick ? Math.ceil(workload.fullSize / 16) : workload.fullSize;
  const label = `${workload.name}, ${formatCount(size)} ${workload.items}`;
  const measured: { contender: string; engine: string; seconds: number; peer: 'cpu' | 'parallel'; fastmath: boolean }[] = [];

  // exp also runs with `fastmath: true` (Math.exp of float32 in float32 lanes), against Numba with and without fastmath.
  const fastmathExp = (target: 'cpu' | 'parallel') => vectorize(['float32(float32)'], { target, fastmath: true })((x: number) => Math.exp(x));
  const measure = async (target: 'cpu' | 'parallel', contender: string, mode: 'js' | 'auto', allocate: Allocate, fastmath = false) => {
    setEngineMode(mode);
    const dtype = workload.dtypeOn(target);
    const problem = workload.makeProblem(size, dtype, allocate);
    const ufunc = fastmath ? fastmathExp(target) : workload.makeUfunc(target, dtype);
    const callArgs = callArguments(problem);
    const compileStart = performance.now();
    const engine = engineLabel(ufunc.explain(...callArgs));
    const compileMs = performance.now() - compileStart;
    const first = performance.now();
    await ufunc(...callArgs);
    const firstMs = performance.now() - first;
    const t = await timeCalls(() => ufunc(...callArgs), timing);
    measured.push({ contender, engine, seconds: t.medianSeconds, peer: target, fastmath });
    if (mode === 'auto' && allocate === inWasmMemory) {
      compileRows.push([workload.name, target, engine, `${compileMs.toFixed(1)} ms`, `${firstMs.toFixed(1)} ms`, formatSeconds(t.medianSeconds)]);
    }
  };
  await measure('cpu', 'cpu, JS engine, ordinary arrays', 'js', allocateLocal);
  await measure('cpu', 'cpu, default engine, arrays in Wasm memory', 'auto', inWasmMemory);
  await measure('cpu', 'cpu, default engine, ordinary arrays', 'auto', allocateLocal);
  // The pool starts its workers in the background at the first parallel call (~450 ms under tsx on
  // 2 cores, both cores busy loading them): a steady-state figure waits for it, as Numba's warm-up
  // call starts its threads before its timing.
  await parallelInternals.readyPool();
  await measure('parallel', 'parallel, JS engine, shared arrays', 'js', inWasmMemory);
  await measure('parallel', 'parallel, default engine, arrays in Wasm memory', 'auto', inWasmMemory);
  if (workload.name === 'exp') {
    await measure('cpu', 'cpu, fastmath, arrays in Wasm memory', 'auto', inWasmMemory, true);
    await measure('cpu', 'cpu, fastmath, ordinary arrays', 'auto', allocateLocal, true);
    await measure('parallel', 'parallel, fastmath, arrays in Wasm memory', 'auto', inWasmMemory, true);
  }
  setEngineMode(initialMode);

  const numba: { cpu?: number; parallel?: number; 'cpu-fastmath'?: number; 'parallel-fastmath'?: number } = {};
  let numbaNote = '';
  if (python.ok) {
    const report = runPythonPeer(python.value, 'numpy_numba.py', workload.name, size, timing.samples, 900);
    if (report.ok) {
      numba.cpu = report.value.results.find((x) => x.peer === 'numba-cpu')?.median_s;
      numba.parallel = report.value.results.find((x) => x.peer === 'numba-parallel')?.median_s;
      numba['cpu-fastmath'] = report.value.results.find((x) => x.peer === 'numba-cpu-fastmath')?.median_s;
      numba['parallel-fastmath'] = report.value.results.find((x) => x.peer === 'numba-parallel-fastmath')?.median_s;
      if (numba.cpu === undefined) numbaNote = `no Numba result (${report.value.skipped.map((s) => s.reason).join('; ')})`;
    } else numbaNote = report.reason;
  } else numbaNote = python.reason;
  for (const m of measured) {
    const peer = numba[m.peer];
    const fast = m.fastmath ? numba[`${m.peer}-fastmath`] : undefined;
    const ratios = [peer ? `${formatRatio(m.seconds / peer)} (Numba ${m.peer})` : '', fast ? `${formatRatio(m.seconds / fast)} (Numba ${m.peer} fastmath)` : ''].filter((r) => r);
    rows.push([label, m.contender, m.engine, formatSeconds(m.seconds), ratios.length ? ratios.join('; ') : '—']);
  }
  for (const peer of ['cpu', 'parallel'] as const) {
    const t = numba[peer];
    rows.push([label, `Numba @vectorize/@guvectorize, target='${peer}'`, 'LLVM', t ? formatSeconds(t) : `— (${numbaNote})`, t ? '1.00×' : '—']);
    const f = numba[`${peer}-fastmath`];
    if (f) rows.push([label, `Numba @vectorize, target='${peer}', fastmath=True`, 'LLVM', formatSeconds(f), peer && t ? `${formatRatio(f / t)} (Numba ${peer})` : '—']);
  }
}
await shutdown();

const machine = `${cpus()[0]?.model.trim() ?? 'unknown CPU'}, ${availableParallelism()} logical cores; parallel target with ${getParallelOptions().workers} workers; Node ${process.version}`;
const report = [
  `## cpu and parallel engines vs Numba (median of ${timing.samples} samples after ${timing.warmup} warm-up${quick ? ', sizes ÷ 16' : ''})`,
  '',
  `Machine: ${machine}. Date: ${new Date().toISOString()}. Command: \`${process.argv[1]?.endsWith(".js") ? "node dist/bench/wasm-engine.js" : "npx tsx bench/wasm-engine.ts"} ${args.join(" ")}\`.`,
  '',
  markdownTable(
    [{ header: 'workload' }, { header: 'contender' }, { header: 'engine' }, { header: 'time', align: 'right' }, { header: '÷ Numba', align: 'right' }],
    rows,
  ),
  '',
  '## compile time (explain before the first call: parse, type, Wasm codegen, compile, instantiate) and first call',
  '',
  markdownTable(
    [{ header: 'workload' }, { header: 'target' }, { header: 'engine' }, { header: 'compile', align: 'right' }, { header: 'first call', align: 'right' }, { header: 'steady call', align: 'right' }],
    compileRows,
  ),
  '',
].join('\n');
console.log(report);
if (outFile) writeFileSync(outFile, report);
