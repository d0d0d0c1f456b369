/**
 * The benchmark: every workload of bench/workloads.ts on every available target, against its
 * peers (a hand-written JS loop, NumPy, Numba's cpu and parallel targets and, on a CUDA machine,
 * CuPy), all on the same data sizes; then a sweep of SAXPY and Hermite over sizes 2^10…2^24 to
 * find where `parallel` and `gpu` start to beat `cpu`. Writes bench/results/<machine>.md, .json,
 * .svg and -scaling.svg, and bench/results/latest.md; prints the report on stdout.
 *
 *   npm run bench                       full sizes, 2 warm-up calls and 7 samples per contender
 *   npm run bench -- --quick            sizes ÷ 16, 1 warm-up and 5 samples, a coarser sweep
 *   npm run bench -- --workloads saxpy,exp --targets cpu,parallel --skip-peers --skip-scaling
 */
import { parseArgs } from 'node:util';

import { availableTargets, deviceArray, describeAdapter, sharedArray, toDevice } from '../src/index.js';
import type { DeviceArray, Ufunc } from '../src/index.js';
// Internal: the adapter's own description (for the GPU's name), and the GPU's own clock, made
// for benchmarks, comparable to CuPy's CUDA events.
import { acquireDevice } from '../src/targets/gpu/runtime/device.js';
import { timeKernels } from '../src/targets/gpu/runtime/kernel-timing.js';
// Internal: waits until the parallel pool's workers have started (they start in the background).
import { __testing as parallelInternals } from '../src/targets/parallel/index.js';
import { compareOutputs, toleranceFor } from './lib/check.js';
import { engineLabel } from './lib/engine.js';
import { describeMachine } from './lib/machine.js';
import { beginStep, clearProgress, note, setTotalSteps } from './lib/progress.js';
import { findPython, runPythonPeer, type Found, type PythonPeerReport } from './lib/python.js';
import { median, timeCalls, type TimingOptions } from './lib/timing.js';
import { writeReport } from './report.js';
import type { BenchRun, ContenderName, Measurement, ScalingSeries, Transfer } from './results-model.js';
import {
  type Allocate, allocateLocal, type FloatArray, type Problem, type Target, type Workload, WORKLOADS,
  bytesMoved, callArguments, workloadNamed,
} from './workloads.js';

const { values: flags } = parseArgs({
  options: {
    quick: { type: 'boolean', default: false },
    workloads: { type: 'string' },
    targets: { type: 'string' },
    'skip-peers': { type: 'boolean', default: false },
    'skip-scaling': { type: 'boolean', default: false },
  },
});

const quick = flags.quick!;
const timing: Required<Pick<TimingOptions, 'warmup' | 'samples'>> = quick ? { warmup: 1, samples: 5 } : { warmup: 2, samples: 7 };
/** Quick mode divides every size by this. */
const QUICK_DIVISOR = 16;
/** Sizes of the scaling sweep, in output elements: every power of two, every other one when quick. */
const SWEEP_SIZES = Array.from({ length: quick ? 6 : 15 }, (_, i) => 2 ** (10 + (quick ? 2 : 1) * i));
const PYTHON_TIMEOUT_SECONDS = quick ? 120 : 900;

const selectedWorkloads = flags.workloads
  ? flags.workloads.split(',').map((name) => {
      const workload = WORKLOADS.find((w) => w.name === name);
      if (!workload) throw new Error(`Unknown workload \`${name}\`; the workloads are ${WORKLOADS.map((w) => w.name).join(', ')}.`);
      return workload;
    })
  : WORKLOADS;
const available = await availableTargets();
const targets: Target[] = flags.targets ? available.filter((t) => flags.targets!.split(',').includes(t)) : available;
const sizeOf = (workload: Workload): number => (quick ? workload.fullSize / QUICK_DIVISOR : workload.fullSize);

/**
 * Each contender's arrays live where its users would put them: in shared memory for the parallel
 * target, which then reads them where they are instead of copying them per call; in ordinary
 * memory for everyone else. The data are the same: every problem is filled from the same seeds.
 */
const allocateShared: Allocate = (length, dtype) => sharedArray(length, dtype) as FloatArray;
const allocatorFor = (contender: Target | 'js'): Allocate => (contender === 'parallel' ? allocateShared : allocateLocal);

/** The GPU's name when the adapter is real hardware, not a CPU rasteriser such as lavapipe. */
async function hardwareGpuName(): Promise<string | undefined> {
  const { vendor, architecture, device, description } = (await acquireDevice()).adapterInfo;
  if (architecture === 'software' || /llvmpipe|lavapipe|swiftshader/i.test(`${device} ${description}`)) return undefined;
  return device || description || vendor;
}

const gpu = available.includes('gpu')
  ? { summary: await describeAdapter(), hardwareName: await hardwareGpuName() }
  : { summary: 'none (no WebGPU adapter found)' };
const args = process.argv.slice(2);
const run: BenchRun = {
  date: new Date().toISOString(),
  quick,
  partial: Boolean(flags.workloads || flags.targets || flags['skip-peers'] || flags['skip-scaling']),
  command: `npm run bench${args.length > 0 ? ` -- ${args.join(' ')}` : ''}`,
  machine: describeMachine(gpu),
  targets,
  ...timing,
  measurements: [],
  transfers: [],
  scaling: [],
  python: {},
  notes: [],
};

function addNote(text: string): void {
  if (!run.notes.includes(text)) {
    run.notes.push(text);
    note(text);
  }
}

function secondsSince(start: bigint): number {
  return Number(process.hrtime.bigint() - start) / 1e9;
}

/**
 * Makes the output unusable before a contender runs, so that one that writes nothing fails its
 * check instead of inheriting the previous contender's answer. An in-place output gets its
 * initial contents back instead, since it is also the input.
 */
function resetOutput(problem: Problem, initialOut: FloatArray): void {
  if (problem.inputs.includes(problem.out)) problem.out.data.set(initialOut);
  else problem.out.data.fill(Number.NaN);
}

/** Host arrays of the call, on the device; the output freshly allocated there (or the input itself, in place). */
async function toDeviceCall(problem: Problem): Promise<{ args: unknown[]; out: DeviceArray; release: () => void }> {
  const inputs = await Promise.all(problem.inputs.map((input) => (typeof input === 'number' ? input : toDevice(input))));
  const inPlaceIndex = problem.inputs.indexOf(problem.out);
  const out: DeviceArray = inPlaceIndex >= 0 ? (inputs[inPlaceIndex] as DeviceArray) : await deviceArray(problem.out.shape, problem.dtype);
  const owned = [...inputs.filter((input): input is Exclude<typeof input, number> => typeof input !== 'number'), ...(inPlaceIndex >= 0 ? [] : [out])];
  return { args: [...inputs, { out }], out, release: () => owned.forEach((array) => array.destroy()) };
}

/**
 * Runs `work` with a `settle` that waits for everything queued on the GPU: downloading a
 * 1-element array queues behind it. The array is destroyed afterwards, since a live device array
 * keeps the device, and with it the process, alive.
 */
async function withGpuFence<T>(work: (settle: () => Promise<unknown>) => Promise<T>): Promise<T> {
  const fence = await deviceArray([1], 'float32');
  try {
    return await work(() => fence.toHost());
  } finally {
    fence.destroy();
  }
}

type Result = Pick<Measurement, 'medianSeconds' | 'sampleSeconds' | 'firstCallSeconds' | 'check' | 'engine' | 'compileSeconds'>;

/**
 * Times a ufunc on host arrays; the first call (which compiles) is timed on its own. On the cpu
 * and parallel targets, `explain` before the first call names the engine and, timed, gives the
 * compile time apart from the first run.
 */
async function measureOnHost(ufunc: Ufunc, problem: Problem, reference: FloatArray, initialOut: FloatArray, target?: Target): Promise<Result> {
  resetOutput(problem, initialOut);
  const args = callArguments(problem);
  let engine: Pick<Result, 'engine' | 'compileSeconds'> = {};
  if (target === 'cpu' || target === 'parallel') {
    const compileStart = process.hrtime.bigint();
    const explained = ufunc.explain(...args);
    engine = { compileSeconds: secondsSince(compileStart), engine: engineLabel(explained) };
  }
  const start = process.hrtime.bigint();
  await ufunc(...args);
  const firstCallSeconds = secondsSince(start);
  // The pool starts its workers in the background at the first parallel call (~450 ms under tsx on
  // 2 cores, both cores busy loading them): the steady-state figure waits for it.
  if (target === 'parallel') await parallelInternals.readyPool();
  const { medianSeconds, sampleSeconds } = await timeCalls(() => ufunc(...args), timing);
  return { medianSeconds, sampleSeconds, firstCallSeconds, ...engine, check: compareOutputs(problem.out.data, reference, toleranceFor(problem.dtype)) };
}

/**
 * Dawn clears the low 16 bits of every GPU timestamp in nanoseconds unless its
 * `timestamp_quantization` toggle is off, so kernel times then come in steps of 65.5 µs.
 */
const DAWN_TIMESTAMP_QUANTUM_SECONDS = 65_536e-9;
const isQuantized = (seconds: readonly number[]): boolean =>
  seconds.every((s) => Math.abs(s / DAWN_TIMESTAMP_QUANTUM_SECONDS - Math.round(s / DAWN_TIMESTAMP_QUANTUM_SECONDS)) < 1e-6);

/**
 * Times a gpu ufunc whose inputs and output already live on the device: wall-clock per call
 * (submission included), and the kernels alone on the GPU's clock when the device has timestamp
 * queries (one call per sample; its dispatches summed). Quantized timestamps are noted; a kernel
 * too short for them (a median of 0) gets no kernel time.
 */
async function measureOnDevice(ufunc: Ufunc, problem: Problem, reference: FloatArray): Promise<{ wall: Result; kernel?: Result }> {
  const call = await toDeviceCall(problem);
  const { medianSeconds, sampleSeconds } = await withGpuFence((settle) => timeCalls(() => ufunc(...call.args), { ...timing, settle }));
  // every workload's output is float32 or float64, so its host copy is a FloatArray
  const check = compareOutputs((await call.out.toHost()) as FloatArray, reference, toleranceFor(problem.dtype));
  const kernelSeconds: number[] = [];
  for (let i = 0; i < timing.samples; i++) {
    const { kernelMs } = await timeKernels(() => ufunc(...call.args));
    if (kernelMs.length > 0) kernelSeconds.push(kernelMs.reduce((sum, ms) => sum + ms, 0) / 1e3);
  }
  call.release();
  const wall = { medianSeconds, sampleSeconds, check };
  if (kernelSeconds.length === 0) return { wall };
  if (isQuantized(kernelSeconds)) {
    addNote('`gpu kernel` times come in steps of 65.5 µs: Dawn quantizes GPU timestamps (its `timestamp_quantization` toggle is on), so each is ±65.5 µs, and kernels shorter than a step are left out.');
  }
  if (median(kernelSeconds) === 0) return { wall };
  return { wall, kernel: { medianSeconds: median(kernelSeconds), sampleSeconds: kernelSeconds, check } };
}

/** Host→device copies of the inputs (summed) and the device→host copy of the output. */
async function measureTransfers(workload: Workload, problem: Problem): Promise<Transfer[]> {
  const arrays = problem.inputs.filter((input) => typeof input !== 'number');
  let uploadSeconds = 0;
  for (const input of arrays) {
    const upload = await withGpuFence((settle) =>
      timeCalls(async () => {
        const array = await toDevice(input);
        await settle();
        array.destroy();
      }, timing),
    );
    uploadSeconds += upload.medianSeconds;
  }
  const call = await toDeviceCall(problem);
  const download = await timeCalls(() => call.out.toHost(), timing);
  call.release();
  return [
    { workload: workload.name, contender: 'gpu', direction: 'host→device', bytes: arrays.reduce((sum, a) => sum + a.data.byteLength, 0), seconds: uploadSeconds },
    { workload: workload.name, contender: 'gpu', direction: 'device→host', bytes: problem.out.data.byteLength, seconds: download.medianSeconds },
  ];
}

/**
 * The Python scripts' peers, as this report names them; null for those it leaves out: Numba with
 * `fastmath=True` (numpy_numba.py measures it for exp), which bench/wasm-engine.ts shows beside
 * the ufunc's own `fastmath: true`.
 */
const PYTHON_PEERS: Readonly<Record<string, ContenderName | null>> = {
  numpy: 'NumPy',
  'numba-cpu': 'Numba cpu',
  'numba-parallel': 'Numba parallel',
  'numba-cpu-fastmath': null,
  'numba-parallel-fastmath': null,
  cupy: 'CuPy',
};

function recordPythonPeers(workload: Workload, size: number, report: Found<PythonPeerReport>, script: string): void {
  if (!report.ok) {
    addNote(`${script} on ${workload.name}: ${report.reason}`);
    return;
  }
  for (const skipped of report.value.skipped) addNote(`${skipped.peer} skipped: ${skipped.reason}`);
  for (const result of report.value.results) {
    const contender = PYTHON_PEERS[result.peer];
    if (contender === null) continue;
    if (contender === undefined) {
      addNote(`${script} on ${workload.name}: a peer this report does not know, "${result.peer}", left out`);
      continue;
    }
    run.measurements.push({
      workload: workload.name,
      contender,
      dtype: result.dtype,
      size,
      medianSeconds: result.median_s,
      sampleSeconds: result.runs_s,
      ...(result.compile_s === undefined ? {} : { firstCallSeconds: result.compile_s }),
      check: result.check,
    });
    if (result.h2d_s !== undefined && result.d2h_s !== undefined) {
      // CuPy's kernel with its copies in and out, as `gpu + transfers` takes host arrays
      run.measurements.push({
        workload: workload.name,
        contender: 'CuPy + transfers',
        dtype: result.dtype,
        size,
        medianSeconds: result.h2d_s + result.median_s + result.d2h_s,
        sampleSeconds: [],
        check: result.check,
      });
      run.transfers.push(
        { workload: workload.name, contender: 'CuPy', direction: 'host→device', bytes: result.h2d_bytes!, seconds: result.h2d_s },
        { workload: workload.name, contender: 'CuPy', direction: 'device→host', bytes: result.d2h_bytes!, seconds: result.d2h_s },
      );
    }
  }
}

const numbaPython = flags['skip-peers'] ? undefined : findPython(['numpy', 'numba'], ['numpy']);
const cupyPython = flags['skip-peers'] ? undefined : findPython(['numpy', 'cupy']);
if (numbaPython && !numbaPython.ok) addNote(`NumPy and Numba peers skipped: ${numbaPython.reason}.`);
if (cupyPython && !cupyPython.ok) addNote(`CuPy peer skipped: ${cupyPython.reason}.`);

function pythonInfo(interpreter: string, report: PythonPeerReport): NonNullable<BenchRun['python']['numba']> {
  return {
    interpreter,
    python: report.python,
    numpy: report.numpy,
    ...(report.numba ? { numba: report.numba, threads: report.threads!, threadingLayer: report.threading_layer! } : {}),
    ...(report.cupy ? { cupy: report.cupy, device: report.device! } : {}),
  };
}

async function benchWorkload(workload: Workload): Promise<void> {
  const size = sizeOf(workload);
  const problems = new Map<string, { problem: Problem; initialOut: FloatArray }>();
  const problemFor = (contender: Target | 'js') => {
    const dtype = workload.dtypeOn(contender);
    const key = `${dtype} ${contender === 'parallel' ? 'shared' : 'local'}`;
    if (!problems.has(key)) {
      const problem = workload.makeProblem(size, dtype, allocatorFor(contender));
      problems.set(key, { problem, initialOut: problem.out.data.slice() });
    }
    return problems.get(key)!;
  };
  const record = (contender: ContenderName, dtype: string, result: Result) =>
    run.measurements.push({ workload: workload.name, contender, dtype, size, ...result });

  beginStep(`${workload.name} · JS loop`);
  const js = problemFor('js');
  const loop = await timeCalls(() => workload.runLoop(js.problem), timing);
  const reference = js.problem.out.data.slice();
  record('JS loop', js.problem.dtype, { medianSeconds: loop.medianSeconds, sampleSeconds: loop.sampleSeconds, check: 'reference' });

  for (const target of targets) {
    beginStep(`${workload.name} · ${target}`);
    const { problem, initialOut } = problemFor(target);
    try {
      const ufunc = workload.makeUfunc(target, problem.dtype);
      const onHost = await measureOnHost(ufunc, problem, reference, initialOut, target);
      record(target === 'gpu' ? 'gpu + transfers' : target, problem.dtype, onHost);
      if (target === 'gpu') {
        beginStep(`${workload.name} · gpu, device arrays`);
        const onDevice = await measureOnDevice(ufunc, problem, reference);
        record('gpu', problem.dtype, onDevice.wall);
        if (onDevice.kernel) record('gpu kernel', problem.dtype, onDevice.kernel);
        run.transfers.push(...(await measureTransfers(workload, problem)));
      }
    } catch (error) {
      addNote(`${workload.name} on ${target} failed: ${(error as Error).message}`);
    }
  }
  problems.clear(); // the Python peers below make their own data; free this first

  for (const [python, script] of [[numbaPython, 'numpy_numba.py'], [cupyPython, 'cupy_peer.py']] as const) {
    if (!python?.ok) continue;
    beginStep(`${workload.name} · ${script}`);
    const report = runPythonPeer(python.value, script, workload.name, size, timing.samples, PYTHON_TIMEOUT_SECONDS);
    recordPythonPeers(workload, size, report, script);
    if (report.ok) run.python[script === 'cupy_peer.py' ? 'cupy' : 'numba'] ??= pythonInfo(python.value, report.value);
  }
}

async function sweep(name: 'saxpy' | 'hermite'): Promise<void> {
  const workload = workloadNamed(name);
  const ufuncs = new Map(targets.map((target) => [target, workload.makeUfunc(target, 'float32')]));
  for (const elements of SWEEP_SIZES) {
    beginStep(`scaling · ${name} · 2^${Math.log2(elements)} elements`);
    const size = elements / workload.valuesPerItem;
    const reference = workload.makeProblem(size, 'float32', allocateLocal);
    workload.runLoop(reference);
    const bytes = bytesMoved(workload, size, 'float32');
    const point = (series: ScalingSeries, { medianSeconds, check }: Result) =>
      run.scaling.push({ workload: name, series, elements, bytes, medianSeconds, check });
    for (const [target, ufunc] of ufuncs) {
      const problem = workload.makeProblem(size, 'float32', allocatorFor(target));
      const initialOut = problem.out.data.slice();
      try {
        point(target === 'gpu' ? 'gpu + transfers' : target, await measureOnHost(ufunc, problem, reference.out.data, initialOut));
        if (target === 'gpu') point('gpu', (await measureOnDevice(ufunc, problem, reference.out.data)).wall);
      } catch (error) {
        addNote(`scaling ${name} at ${elements} elements on ${target} failed: ${(error as Error).message}`);
      }
    }
  }
}

const pythonSteps = [numbaPython, cupyPython].filter((p) => p?.ok).length;
const stepsPerWorkload = 1 + targets.length + (targets.includes('gpu') ? 1 : 0) + pythonSteps;
setTotalSteps(selectedWorkloads.length * stepsPerWorkload + (flags['skip-scaling'] ? 0 : 2 * SWEEP_SIZES.length));

for (const workload of selectedWorkloads) await benchWorkload(workload);
if (!flags['skip-scaling']) {
  await sweep('saxpy');
  await sweep('hermite');
}
clearProgress();
const written = writeReport(run);
process.stdout.write(`${written.markdown}\nwrote ${written.files.join(', ')}\n`);
