/**
 * Does a float32 kernel calling a `Math` function ever cost more than the same kernel in float64?
 * (issue 20, Deliver 1: it must not.) For every `Math` function the Wasm engine computes (its ports
 * of V8's algorithms and the ones it computes in instructions: sqrt, abs, floor, …), the kernel
 * `Math.f(x)` (`Math.f(y, x)` for the functions of two arguments; `y ** x`; `Math.pow(x, 3)`; `x ** g` with g an argument of the call) on float32 and on float64 arrays
 * of the same length holding the same values (float32 values, widened for float64), on the cpu
 * target with ordinary typed arrays, under each engine:
 * - `chosen`: the engine choice as users get it (`explain` names the engine it settled on),
 * - `js`: the JS engine forced (`setEngineMode('js')`),
 * - `wasm`: the Wasm engine forced on contiguous arrays (SIMD lanes),
 * - `wasm-scalar`: the Wasm engine on strided operands (its scalar loop),
 * - `js-loop`: no library, a hand-written JS loop `o[i] = Math.f(x[i])` over the same arrays (what
 *   V8 itself costs per dtype: its float32 element loads and stores convert to and from double).
 *
 * Time is the process's CPU time (user + system) per call, not the wall clock: every contender runs
 * on the calling thread, and on a machine shared with other jobs the wall clock measures the
 * scheduler. The two dtypes of one function and engine are timed in turns (float64 call, float32
 * call, …) after warm-up, so that a change of load moves both; each figure is the median of the
 * samples, in ns per element. The last column is float32 ÷ float64 (goal: ≤ 1.0×, within noise).
 *
 *   npx tsx bench/math-dtype-cost.ts [--quick] [--functions sin,cos] [--engines chosen,js,wasm,wasm-scalar] [--size N] [--samples K]
 */
import { setEngineMode, vectorize } from '../src/index.js';
import { engineLabel } from './lib/engine.js';
import os from 'node:os';
import { markdownTable } from './lib/markdown.js';
import { PORTED_MATH_INPUTS, uniformInputs } from './lib/math-inputs.js';

const args = process.argv.slice(2);
const quick = args.includes('--quick');
const flag = (name: string) => (args.includes(name) ? args[args.indexOf(name) + 1] : undefined);
const size = Number(flag('--size') ?? (quick ? 1 << 16 : 1 << 20));
const samples = Number(flag('--samples') ?? (quick ? 5 : 9));
// Past the engine choice's trials (up to eight calls of a call shape, engine-calibration.ts), so
// that `chosen` is timed on the engine it settles on.
const warmup = 12;

/**
 * Each function with the range its inputs are drawn from (where users call it); `scalar`: a last
 * argument `g` passed as one number (an exponent of the call: call-exponent.ts).
 */
const FUNCTIONS: Record<string, { range: [number, number]; arity: 1 | 2; body?: string; scalar?: number }> = {
  exp: { range: [-10, 10], arity: 1 },
  ...PORTED_MATH_INPUTS,
  '**': { range: [0, 4], arity: 2, body: 'y ** x' },
  'pow (integer exponent)': { range: [-10, 10], arity: 1, body: 'Math.pow(x, 3)' },
  'pow (exponent an argument)': { range: [0, 255], arity: 1, body: '255 * (x / 255) ** g', scalar: 2.2 },
  'pow (integer exponent an argument)': { range: [-10, 10], arity: 1, body: 'x ** g', scalar: 3 },
  sqrt: { range: [0, 100], arity: 1 },
  abs: { range: [-10, 10], arity: 1 },
  floor: { range: [-10, 10], arity: 1 },
  ceil: { range: [-10, 10], arity: 1 },
  round: { range: [-10, 10], arity: 1 },
  trunc: { range: [-10, 10], arity: 1 },
  sign: { range: [-10, 10], arity: 1 },
  min: { range: [-10, 10], arity: 2 },
  max: { range: [-10, 10], arity: 2 },
};
const ENGINES = ['chosen', 'js', 'wasm', 'wasm-scalar', 'js-loop'] as const;
type EngineName = (typeof ENGINES)[number];
const chosenFunctions = flag('--functions')?.split(',') ?? Object.keys(FUNCTIONS);
const chosenEngines = (flag('--engines')?.split(',') ?? [...ENGINES]) as EngineName[];
for (const name of chosenEngines) if (!ENGINES.includes(name)) throw new Error(`unknown engine ${name}: choose from ${ENGINES.join(', ')}`);

/** CPU seconds (user + system) of one call. */
function cpuSeconds(call: () => unknown): number {
  const start = process.cpuUsage();
  call();
  const used = process.cpuUsage(start);
  return (used.user + used.system) / 1e6;
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[xs.length >> 1]!;

type Dtype = 'float32' | 'float64';

/** One call of the kernel on `dtype` arrays under `engine`, ready to repeat, and the engine `explain` names. */
function prepare(name: string, dtype: Dtype, engine: EngineName, values: Float32Array[]): { call: () => unknown; label: string } {
  const { arity, body, scalar } = FUNCTIONS[name]!;
  const signature = `${dtype}(${Array(arity + (scalar === undefined ? 0 : 1)).fill(dtype).join(', ')})`;
  const params = [...(arity === 1 ? ['x'] : ['y', 'x']), ...(scalar === undefined ? [] : ['g'])];
  const scalars = scalar === undefined ? [] : [scalar];
  const expression = body ?? `Math.${name}(${params.join(', ')})`;
  const Array_ = dtype === 'float32' ? Float32Array : Float64Array;
  if (engine === 'js-loop') return handWrittenLoop(params, expression, [...values.map((v) => Array_.from(v)), ...scalars], new Array_(size));
  const kernel = vectorize([signature])(new Function(...params, `return ${expression}`) as (...xs: number[]) => number);
  const strided = engine === 'wasm-scalar';
  const operand = (a: Float32Array) => {
    if (!strided) return Array_.from(a);
    const data = new Array_(2 * size);
    for (let i = 0; i < size; i++) data[2 * i] = a[i]!;
    return { data, shape: [size], strides: [2] };
  };
  const operands = [...values.map(operand), ...scalars];
  const out = strided ? { data: new Array_(2 * size), shape: [size], strides: [2] } : new Array_(size);
  const mode = engine === 'chosen' ? 'auto' : engine === 'js' ? 'js' : 'wasm';
  const call = () => {
    const before = setEngineMode(mode);
    try {
      return kernel.sync(...(operands as never[]), { out: out as never });
    } finally {
      setEngineMode(before);
    }
  };
  for (let i = 0; i < warmup; i++) call();
  setEngineMode(mode);
  const label = engineLabel(kernel.explain(...(operands as never[]), { out: out as never }));
  setEngineMode('auto');
  return { call, label };
}

/**
 * `o[i] = expression` over the arrays, in a loop of its own (one per dtype, as V8 specialises it);
 * an operand that is a number (a scalar argument) is read once.
 */
function handWrittenLoop(params: string[], expression: string, operands: (Float32Array | Float64Array | number)[], out: Float32Array | Float64Array) {
  const perElement = params.filter((_, i) => typeof operands[i] !== 'number');
  const loop = new Function('$in', '$o', `let ${params.join(", ")}; const [${params.map((p) => `$${p}`).join(', ')}] = $in;
    ${params.filter((p) => !perElement.includes(p)).map((p) => `${p} = $${p};`).join(' ')}
    for (let $i = 0; $i < $o.length; $i++) { ${perElement.map((p) => `${p} = $${p}[$i];`).join(' ')} $o[$i] = ${expression}; }`) as (i: unknown[], o: unknown) => void;
  const call = () => loop(operands, out);
  for (let i = 0; i < warmup; i++) call();
  return { call, label: 'JS loop (no library)' };
}

const rows: string[][] = [];
const over: string[] = [];
const started = Date.now();
for (const name of chosenFunctions) {
  const spec = FUNCTIONS[name];
  if (!spec) throw new Error(`unknown function ${name}: choose from ${Object.keys(FUNCTIONS).join(', ')}`);
  const values = Array.from({ length: spec.arity }, (_, i) => Float32Array.from(uniformInputs(size, spec.range, 7 + i)));
  for (const engine of chosenEngines) {
    const wide = prepare(name, 'float64', engine, values);
    const narrow = prepare(name, 'float32', engine, values);
    const times: Record<Dtype, number[]> = { float64: [], float32: [] };
    for (let s = 0; s < samples; s++) {
      // alternate which dtype goes first, so that neither always follows the other's cache state
      const order: Dtype[] = s % 2 === 0 ? ['float64', 'float32'] : ['float32', 'float64'];
      for (const dtype of order) times[dtype].push(cpuSeconds(dtype === 'float64' ? wide.call : narrow.call));
    }
    const ns64 = (median(times.float64) / size) * 1e9;
    const ns32 = (median(times.float32) / size) * 1e9;
    const ratio = ns32 / ns64;
    if (ratio >= 1.005) over.push(`${name} (${engine}) ${ratio.toFixed(2)}×`);
    rows.push([name, engine, wide.label, narrow.label, ns64.toFixed(2), ns32.toFixed(2), `${ratio.toFixed(2)}×`]);
    process.stderr.write(`${name} ${engine}: ${ns64.toFixed(2)} / ${ns32.toFixed(2)} ns → ${ratio.toFixed(2)}×\n`);
  }
}

const cpu = os.cpus()[0]?.model ?? 'unknown CPU';
console.log(`${cpu}, ${os.availableParallelism()} cores, Node ${process.version}; ${size.toLocaleString('en-US')} elements of ordinary typed arrays, cpu target; CPU time of the process per call, ` +
  `median of ${samples} samples per dtype (taken in turns) after ${warmup} warm-up calls; load average at the end ${os.loadavg().map((l) => l.toFixed(2)).join(' ')}; ` +
  `${((Date.now() - started) / 1000).toFixed(0)} s.\n`);
console.log(markdownTable(
  [
    { header: 'function' }, { header: 'engine' }, { header: 'ran (float64)' }, { header: 'ran (float32)' },
    { header: 'float64 ns/element', align: 'right' }, { header: 'float32 ns/element', align: 'right' }, { header: 'float32 ÷ float64', align: 'right' },
  ],
  rows,
));
console.log(`\nfloat32 above float64: ${over.length === 0 ? 'none' : over.join(', ')}`);
