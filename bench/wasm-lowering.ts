/**
 * The Wasm engine's cost per element (CPU time of the calling thread's process, so that a shared
 * machine's time slicing does not count), on kernels whose time is code generation (not copies): every
 * array in Wasm memory (`sharedArray` inputs, a given `sharedArray` `out`), the engine forced with
 * `setEngineMode('wasm')`, beside the JS engine (`'js'`) on the same arrays.
 *
 *   npx tsx bench/wasm-lowering.ts [--quick] [--kernels a,b,…] [--baseline DIR] [--out FILE.md]
 *
 * Kernels: the corpus kernels where Wasm was furthest behind Numba (bench/corpus/kernels.ts), and
 * kernels outside the corpus of the same shapes (clamps, rounding, narrow integers, a function of
 * one byte), so that a change measured here is a rule, not a tuning to the corpus.
 *
 * `--baseline DIR`: a checkout of the library to compare against in the same run (e.g. main before
 * a change: `git worktree add /tmp/base main`, node_modules linked), loaded beside this one. Each
 * kernel's figures (this checkout's Wasm, the baseline's Wasm, this checkout's JS engine) are timed
 * in turns, sample by sample, so that their ratios compare like with like on a loaded machine.
 */
import { writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import * as current from '../src/index.js';
import * as currentEngine from '../src/targets/cpu/wasm/index.js';
import { CORPUS } from './corpus/kernels.js';
import { formatCount, formatRatio } from './lib/format.js';
import { describeMachine, machineMarkdown } from './lib/machine.js';
import { markdownTable } from './lib/markdown.js';
import { median } from './lib/timing.js';
import { mulberry32 } from '../tests/random.js';

const args = process.argv.slice(2);
const quick = args.includes('--quick');
const flag = (name: string) => (args.includes(name) ? args[args.indexOf(name) + 1] : undefined);
const only = flag('--kernels')?.split(',');
const baselineDir = flag('--baseline');
const outFile = flag('--out');
const SAMPLES = quick ? 5 : 9;

type Dtype = 'float32' | 'float64' | 'int32' | 'int16' | 'uint16' | 'uint8';
type Input = { readonly dtype: Dtype; readonly rows?: number; readonly low: number; readonly high: number } | { readonly scalar: number };
type Lib = typeof current;
type Ufunc = ReturnType<ReturnType<Lib['vectorize']>>;

interface Kernel {
  readonly name: string;
  readonly declaration: string;
  /** Elements of a full-size call (per-row kernels: rows × row length). */
  readonly elements: number;
  readonly inputs: readonly Input[];
  make(lib: Lib, corpus: typeof CORPUS): Ufunc;
}

const fromCorpus = (name: string, elements: number, inputs: readonly Input[]): Kernel => {
  const k = CORPUS.find((c) => c.name === name);
  if (!k) throw new Error(`No corpus kernel ${name}`);
  return { name, declaration: k.declaration, elements, inputs, make: (_lib, corpus) => corpus.find((c) => c.name === name)!.makeUfunc('cpu') as Ufunc };
};

const M = 1 << 20;
const KERNELS: readonly Kernel[] = [
  fromCorpus('brightness-contrast-u8', 4 * M, [{ dtype: 'uint8', low: 0, high: 255 }]),
  fromCorpus('gamma-u8', M, [{ dtype: 'uint8', low: 0, high: 255 }]),
  fromCorpus('saturating-add-i16', 4 * M, [{ dtype: 'int16', low: -32768, high: 32767 }, { dtype: 'int16', low: -32768, high: 32767 }]),
  fromCorpus('rel-diff', 4 * M, [{ dtype: 'float64', low: 1, high: 2 }, { dtype: 'float64', low: 1, high: 2 }]),
  fromCorpus('poly5', 4 * M, [{ dtype: 'float64', low: -2, high: 2 }]),
  fromCorpus('normal-pdf', 4 * M, [{ dtype: 'float64', low: -4, high: 4 }, { scalar: 0.5 }, { scalar: 1.5 }]),
  fromCorpus('annuity-pv', M, [{ dtype: 'float64', low: 10, high: 1000 }, { dtype: 'float64', low: 0.001, high: 0.1 }, { dtype: 'float64', low: 1, high: 360 }]),
  fromCorpus('lennard-jones', M, [{ dtype: 'float64', low: 0.9, high: 3 }, { scalar: 1 }, { scalar: 1 }]),
  fromCorpus('srgb-to-linear', M, [{ dtype: 'float32', low: 0, high: 1 }]),
  fromCorpus('move-mean', 4 * M, [{ dtype: 'float64', rows: 256, low: 0, high: 10 }, { scalar: 8 }]),
  // Outside the corpus, the same shapes.
  {
    name: 'quantize-i16',
    declaration: "vectorize('int16(float32)')",
    elements: 4 * M,
    inputs: [{ dtype: 'float32', low: -1.2, high: 1.2 }],
    make: (lib) => lib.vectorize(['int16(float32)'])((x: number) => Math.max(-32768, Math.min(32767, Math.round(x * 32767)))),
  },
  {
    name: 'clamp01-f64',
    declaration: "vectorize('float64(float64)')",
    elements: 4 * M,
    inputs: [{ dtype: 'float64', low: -1, high: 2 }],
    make: (lib) => lib.vectorize(['float64(float64)'])((x: number) => Math.min(1, Math.max(0, (x - 0.1) * 1.25))),
  },
  {
    name: 'levels-u8',
    declaration: "vectorize('uint8(uint8, float64, float64)')",
    elements: 4 * M,
    inputs: [{ dtype: 'uint8', low: 0, high: 255 }, { scalar: 16 }, { scalar: 235 }],
    make: (lib) => lib.vectorize(['uint8(uint8, float64, float64)'])((p: number, lo: number, hi: number) => Math.min(255, Math.max(0, Math.floor(((p - lo) * 255) / (hi - lo))))),
  },
  {
    name: 'brightness-contrast-u16',
    declaration: "vectorize('uint16(uint16)')",
    elements: 4 * M,
    inputs: [{ dtype: 'uint16', low: 0, high: 65535 }],
    make: (lib) => lib.vectorize(['uint16(uint16)'])((p: number) => Math.min(65535, Math.max(0, Math.round(1.2 * p - 5000)))),
  },
  {
    name: 'u8-to-unit-f32',
    declaration: "vectorize('float32(uint8)')",
    elements: 4 * M,
    inputs: [{ dtype: 'uint8', low: 0, high: 255 }],
    make: (lib) => lib.vectorize(['float32(uint8)'])((p: number) => p / 255),
  },
];

interface Side {
  readonly label: string;
  readonly lib: Lib;
  readonly engine: typeof currentEngine;
  readonly corpus: typeof CORPUS;
}

async function loadBaseline(dir: string): Promise<Side> {
  const at = (p: string) => pathToFileURL(resolve(dir, p)).href;
  return {
    label: 'baseline',
    lib: (await import(at('src/index.ts'))) as Lib,
    engine: (await import(at('src/targets/cpu/wasm/index.ts'))) as typeof currentEngine,
    corpus: ((await import(at('bench/corpus/kernels.ts'))) as { CORPUS: typeof CORPUS }).CORPUS,
  };
}

const ARRAYS = { float32: Float32Array, float64: Float64Array, int32: Int32Array, int16: Int16Array, uint16: Uint16Array, uint8: Uint8Array } as const;
const DTYPE_OF = new Map<unknown, Dtype | 'uint8c'>([[Float32Array, 'float32'], [Float64Array, 'float64'], [Int32Array, 'int32'], [Int16Array, 'int16'], [Uint16Array, 'uint16'], [Uint8Array, 'uint8'], [Uint8ClampedArray, 'uint8c']]);

/** One side's call of a kernel, on arrays in its own Wasm memory, and the output it wrote. */
function prepare(side: Side, kernel: Kernel, elements: number, values: readonly (ArrayLike<number> | number)[]) {
  const f = kernel.make(side.lib, side.corpus);
  const operands = kernel.inputs.map((input, i) => {
    if ('scalar' in input) return input.scalar;
    const data = side.lib.sharedArray(elements, input.dtype) as unknown as { set(a: ArrayLike<number>): void };
    data.set(values[i] as ArrayLike<number>);
    return input.rows ? { data, shape: [elements / input.rows, input.rows] } : data;
  });
  const first = f.sync(...operands) as unknown;
  const firstData = (ArrayBuffer.isView(first) ? first : (first as { data: ArrayLike<number> }).data) as ArrayLike<number> & object;
  const outData = side.lib.sharedArray(firstData.length, DTYPE_OF.get(firstData.constructor)! as never);
  const out = ArrayBuffer.isView(first) ? outData : { data: outData, shape: (first as { shape: number[] }).shape };
  return { f, call: (mode: 'wasm' | 'js') => {
    side.engine.setEngineMode(mode);
    try {
      f.sync(...operands, { out });
    } finally {
      side.engine.setEngineMode('auto');
    }
  }, output: outData as unknown as ArrayLike<number>, explain: () => f.explain(...operands).split('\n')[0]! };
}

function sameBits(a: ArrayLike<number>, b: ArrayLike<number>): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (!Object.is(a[i], b[i])) return false;
  return true;
}

const sides: Side[] = [{ label: 'this checkout', lib: current, engine: currentEngine, corpus: CORPUS }];
if (baselineDir) sides.push(await loadBaseline(baselineDir));
const machine = describeMachine({ summary: 'not used by this benchmark' });
const started = new Date();
const rows: string[][] = [];
const random = mulberry32(20261126);

for (const kernel of KERNELS) {
  if (only && !only.includes(kernel.name)) continue;
  const elements = quick ? kernel.elements / 16 : kernel.elements;
  const values = kernel.inputs.map((input) => {
    if ('scalar' in input) return input.scalar;
    const data = new ARRAYS[input.dtype](elements);
    const integer = !input.dtype.startsWith('float');
    for (let i = 0; i < elements; i++) data[i] = integer ? input.low + Math.floor(random() * (input.high - input.low + 1)) : input.low + random() * (input.high - input.low);
    return data;
  });
  const calls = sides.map((side) => prepare(side, kernel, elements, values));
  // Timed in turns: this checkout's Wasm, the baseline's Wasm, this checkout's JS engine.
  const timed: { run: () => void; samples: number[] }[] = [
    { run: () => calls[0]!.call('wasm'), samples: [] },
    ...(calls[1] ? [{ run: () => calls[1]!.call('wasm'), samples: [] }] : []),
    { run: () => calls[0]!.call('js'), samples: [] },
  ];
  for (const t of timed) for (let w = 0; w < 2; w++) t.run();
  // Each sample repeats the call for at least 20 ms of this thread's CPU time.
  const cpuMs = () => {
    const u = process.cpuUsage();
    return (u.user + u.system) / 1000;
  };
  const once = cpuMs();
  timed[0]!.run();
  const repeats = Math.max(1, Math.ceil(20 / Math.max(cpuMs() - once, 0.05)));
  for (let s = 0; s < SAMPLES; s++) {
    for (const t of timed) {
      const start = cpuMs();
      for (let r = 0; r < repeats; r++) t.run();
      t.samples.push(((cpuMs() - start) * 1e6) / elements / repeats);
    }
  }
  const ns = timed.map((t) => median(t.samples));
  // The Wasm engine's output against the JS engine's, bit for bit (and the baseline's).
  calls[0]!.call('wasm');
  const wasmOut = Array.from(calls[0]!.output);
  calls[0]!.call('js');
  const same = sameBits(wasmOut, calls[0]!.output) && (!calls[1] || (calls[1].call('wasm'), sameBits(wasmOut, calls[1].output)));
  const fmt = (x: number) => x.toFixed(x < 1 ? 3 : 2);
  const row = [kernel.name, kernel.declaration, formatCount(elements), calls[0]!.explain().replace(/:.*$/, '').replace(/^WebAssembly /, ''), fmt(ns[0]!)];
  if (calls[1]) row.push(fmt(ns[1]!), formatRatio(ns[1]! / ns[0]!));
  row.push(fmt(ns[ns.length - 1]!), formatRatio(ns[ns.length - 1]! / ns[0]!), same ? 'bit-identical' : 'DIFFERS');
  rows.push(row);
  console.log(row.join(' | '));
}

const header = ['kernel', 'declaration', 'elements', 'Wasm code', 'Wasm ns/element'];
if (baselineDir) header.push('baseline Wasm ns/element', 'speed-up');
header.push('JS engine ns/element', 'JS ÷ Wasm', 'Wasm vs JS (and baseline) output');
const report = [
  '# The Wasm engine per element: code generation, arrays in Wasm memory',
  '',
  `\`npx tsx bench/wasm-lowering.ts${args.length ? ' ' + args.join(' ') : ''}\`, ${started.toISOString().slice(0, 16).replace('T', ' ')} UTC, ${((Date.now() - started.getTime()) / 1000).toFixed(0)} s`,
  '',
  machineMarkdown(machine),
  '',
  `Nanoseconds of CPU time per element (the process's user + system time, \`process.cpuUsage()\`, which a loaded machine's time slicing does not inflate as it does wall-clock time): medians of ${SAMPLES} samples of ≥ 20 ms after 2 warm-up calls; every array in Wasm memory (\`sharedArray\` inputs and \`out\`), the engine forced with \`setEngineMode\`. Each kernel's columns are timed in turns, sample by sample.${baselineDir ? ` Baseline: ${baselineDir}.` : ''}`,
  '',
  markdownTable(header.map((h, i) => ({ header: h, align: i < 4 ? 'left' : 'right' })) as never, rows),
  '',
].join('\n');
if (outFile) writeFileSync(outFile, report);
else console.log(report);
await current.shutdown();
