/**
 * The cpu target's two engines against Numba, per workload, in one run:
 *
 *   npx tsx bench/wasm-engine.ts [--quick] [--workloads saxpy,exp,…]
 *
 * Rows per workload: the JS engine (the reference, `setEngineMode('js')`) on ordinary arrays; the
 * default engine choice on arrays the library allocated in Wasm memory (`sharedArray`); the
 * default choice on ordinary ("foreign") arrays, which Wasm must copy in and out; Numba's
 * `@vectorize`/`@guvectorize` with target 'cpu' (bench/peers/numpy_numba.py, same sizes and
 * data). Each row says which engine ran (`f.explain(…)`) and its time ÷ Numba's. Also: the
 * first-call compile time of each Wasm kernel.
 *
 * Goals (issue 10): ≤ 1.0× Numba on allocated arrays, ≤ 1.5× on foreign arrays; compile < 50 ms.
 */
import { engineMode, setEngineMode } from '../src/engines/wasm/index.js';
import { sharedArray } from '../src/index.js';
import { formatCount, formatRatio, formatSeconds } from './lib/format.js';
import { markdownTable } from './lib/markdown.js';
import { findPython, runPythonPeer } from './lib/python.js';
import { timeCalls } from './lib/timing.js';
import { type Allocate, allocateLocal, callArguments, WORKLOADS, type WorkloadName } from './workloads.js';

const args = process.argv.slice(2);
const quick = args.includes('--quick');
const chosen = args.includes('--workloads') ? (args[args.indexOf('--workloads') + 1]!.split(',') as WorkloadName[]) : undefined;
const timing = quick ? { warmup: 1, samples: 5 } : { warmup: 2, samples: 7 };
const inWasmMemory: Allocate = (length, dtype) => sharedArray(length, dtype);
const python = findPython(['numpy', 'numba']);

/** "WebAssembly (SIMD, 4 lanes)", "WebAssembly (scalar)" or "JavaScript", from `explain`. */
const engineName = (explained: string) => /^(JavaScript|WebAssembly \((SIMD, \d lanes|scalar))/.exec(explained)![0] + (explained.startsWith('WebAssembly (scalar') ? ')' : explained.startsWith('WebAssembly') ? ')' : '');

const rows: string[][] = [];
const compileRows: string[][] = [];
const initialMode = engineMode();

for (const workload of WORKLOADS) {
  if (chosen && !chosen.includes(workload.name)) continue;
  const size = quick ? Math.ceil(workload.fullSize / 16) : workload.fullSize;
  const dtype = workload.dtypeOn('cpu');
  const label = `${workload.name}, ${formatCount(size)} ${workload.items}`;
  const measured: { contender: string; engine: string; seconds: number }[] = [];

  const measure = async (contender: string, mode: 'js' | 'auto', allocate: Allocate) => {
    setEngineMode(mode);
    const problem = workload.makeProblem(size, dtype, allocate);
    const ufunc = workload.makeUfunc('cpu', dtype);
    const callArgs = callArguments(problem);
    const engine = ufunc.explain(...callArgs);
    const first = performance.now();
    ufunc.sync(...callArgs);
    const firstMs = performance.now() - first;
    const t = await timeCalls(() => ufunc.sync(...callArgs), timing);
    measured.push({ contender, engine: engineName(engine), seconds: t.medianSeconds });
    if (mode === 'auto' && allocate === inWasmMemory) compileRows.push([workload.name, engineName(engine), `${firstMs.toFixed(1)} ms (first call, compile + run)`, formatSeconds(t.medianSeconds)]);
  };
  await measure('cpu, JS engine, ordinary arrays', 'js', allocateLocal);
  await measure('cpu, default engine, arrays in Wasm memory', 'auto', inWasmMemory);
  await measure('cpu, default engine, ordinary arrays', 'auto', allocateLocal);
  setEngineMode(initialMode);

  let numba: number | undefined;
  let numbaNote = '';
  if (python.ok) {
    const report = runPythonPeer(python.value, 'numpy_numba.py', workload.name, size, timing.samples, 600);
    if (report.ok) {
      const r = report.value.results.find((x) => x.peer === 'numba-cpu');
      numba = r?.median_s;
      if (!r) numbaNote = `no Numba cpu result (${report.value.skipped.map((s) => s.reason).join('; ')})`;
    } else numbaNote = report.reason;
  } else numbaNote = python.reason;
  for (const m of measured) {
    rows.push([label, m.contender, m.engine, formatSeconds(m.seconds), numba ? formatRatio(m.seconds / numba) : '—']);
  }
  rows.push([label, 'Numba @vectorize/@guvectorize, cpu', 'LLVM', numba ? formatSeconds(numba) : `— (${numbaNote})`, numba ? '1.00×' : '—']);
}

console.log(`## cpu target engines vs Numba cpu (median of ${timing.samples} samples${quick ? ', sizes ÷ 16' : ''})\n`);
console.log(
  markdownTable(
    [{ header: 'workload' }, { header: 'contender' }, { header: 'engine' }, { header: 'time', align: 'right' }, { header: '÷ Numba cpu', align: 'right' }],
    rows,
  ),
);
console.log('\n## first call of the Wasm kernels\n');
console.log(markdownTable([{ header: 'workload' }, { header: 'engine' }, { header: 'first call' }, { header: 'steady call', align: 'right' }], compileRows));
