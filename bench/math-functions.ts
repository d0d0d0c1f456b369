/**
 * A/B of the `Math` functions ported to Wasm (src/targets/cpu/wasm/math-ports.ts) against the JS
 * engine, float32 and float64, in one run: a kernel `Math.f(x)` (atan2, pow, hypot: `Math.f(y, x)`) per
 * function over N elements of ordinary typed arrays, with
 * - the JS engine (`setEngineMode('js')`: V8's own `Math.f` per element),
 * - the default engine choice (which must be Wasm SIMD lanes for these kernels),
 * - the default choice on arrays in Wasm memory (`sharedArray`), no copies,
 * - the scalar Wasm port (a strided operand, `setEngineMode('wasm')`), for reference.
 * Each row names the engine that ran (`explain`); ratios are against the JS engine of the same
 * dtype, and float32 against float64 of the same contender (the goal: ≤ 1).
 *
 * `--cpu-time` times each call by the process's CPU time (user + system) instead of the wall clock:
 * every contender here runs on the calling thread, and on a machine shared with other jobs (load
 * above the core count) the wall clock measures the scheduler more than the code.
 *
 *   npx tsx bench/math-functions.ts [--quick] [--functions sin,cos] [--size N] [--cpu-time]
 */
import { setEngineMode } from '../src/targets/cpu/wasm/index.js';
import { sharedArray, vectorize } from '../src/index.js';
import { engineLabel } from './lib/engine.js';
import { formatRatio, formatSeconds } from './lib/format.js';
import { markdownTable } from './lib/markdown.js';
import { timeCalls } from './lib/timing.js';
import { PORTED_MATH_INPUTS, uniformInputs } from './lib/math-inputs.js';

const args = process.argv.slice(2);
const quick = args.includes('--quick');
const flag = (name: string) => (args.includes(name) ? args[args.indexOf(name) + 1] : undefined);
const size = Number(flag('--size') ?? (quick ? 1 << 18 : 1 << 22));
// Warm-up past the engine choice's trials (up to four calls per engine, engine-calibration.ts), so
// that the default contenders are timed on the engine they settle on.
const timing = quick ? { warmup: 9, samples: 5 } : { warmup: 10, samples: 7 };

/** Each function with the range its inputs are drawn from (where users call it). */
const FUNCTIONS = PORTED_MATH_INPUTS;
const chosen = flag('--functions')?.split(',') ?? Object.keys(FUNCTIONS);

type Dtype = 'float32' | 'float64';
const rows: string[][] = [];
for (const name of chosen) {
  const spec = FUNCTIONS[name];
  if (!spec) throw new Error(`unknown function ${name}: choose from ${Object.keys(FUNCTIONS).join(', ')}`);
  const seconds: Record<string, number> = {};
  for (const dtype of ['float64', 'float32'] as Dtype[]) {
    const signature = `${dtype}(${Array(spec.arity).fill(dtype).join(', ')})`;
    const body = spec.arity === 1 ? `return Math.${name}(x)` : `return Math.${name}(y, x)`;
    const params = spec.arity === 1 ? ['x'] : ['y', 'x'];
    const kernel = vectorize([signature])(new Function(...params, body) as (...xs: number[]) => number);
    const Array_ = dtype === 'float32' ? Float32Array : Float64Array;
    const ordinary = Array.from({ length: spec.arity }, (_, i) => Array_.from(uniformInputs(size, spec.range, 7 + i)));
    const shared = ordinary.map((a) => {
      const s = sharedArray(size, dtype);
      s.set(a);
      return s;
    });
    const out = new Array_(size);
    const sharedOut = sharedArray(size, dtype);
    const strided = ordinary.map((a) => {
      const data = new Array_(2 * size);
      for (let i = 0; i < size; i++) data[2 * i] = a[i]!;
      return { data, shape: [size], strides: [2] };
    });
    const contenders: [string, 'js' | 'auto' | 'wasm', unknown[], unknown][] = [
      ['JS engine', 'js', ordinary, out],
      ['default, ordinary arrays', 'auto', ordinary, out],
      ['default, sharedArray', 'auto', shared, sharedOut],
      ['Wasm scalar (strided)', 'wasm', strided, { data: new Array_(2 * size), shape: [size], strides: [2] }],
    ];
    for (const [contender, mode, operands, output] of contenders) {
      setEngineMode(mode);
      const call = () => kernel.sync(...(operands as never[]), { out: output as never });
      const engine = engineLabel(kernel.explain(...(operands as never[]), { out: output as never }));
      const { medianSeconds } = args.includes('--cpu-time') ? cpuTimeCalls(call, timing) : await timeCalls(call, timing);
      seconds[`${contender}/${dtype}`] = medianSeconds;
      const js = seconds[`JS engine/${dtype}`]!;
      const wide = seconds[`${contender}/float64`];
      rows.push([
        name, dtype, contender, engine, formatSeconds(medianSeconds), formatRatio(medianSeconds / js),
        dtype === 'float32' && wide ? formatRatio(medianSeconds / wide) : '',
      ]);
    }
  }
}
setEngineMode('auto');
console.log(`${size.toLocaleString('en-US')} elements, median of ${timing.samples} samples after ${timing.warmup} warm-up calls${args.includes('--cpu-time') ? ', CPU time of the process' : ''}\n`);
console.log(markdownTable(
  [{ header: 'function' }, { header: 'dtype' }, { header: 'contender' }, { header: 'engine' }, { header: 'time', align: 'right' }, { header: '÷ JS engine', align: 'right' }, { header: 'float32 ÷ float64', align: 'right' }],
  rows,
));

/** Median CPU seconds (user + system) per call over `samples` calls after `warmup` (the calls run on this thread). */
function cpuTimeCalls(call: () => unknown, { warmup, samples }: { warmup: number; samples: number }): { medianSeconds: number } {
  for (let i = 0; i < warmup; i++) call();
  const times: number[] = [];
  for (let i = 0; i < samples; i++) {
    const start = process.cpuUsage();
    call();
    const used = process.cpuUsage(start);
    times.push((used.user + used.system) / 1e6);
  }
  times.sort((a, b) => a - b);
  return { medianSeconds: times[Math.floor(times.length / 2)]! };
}
