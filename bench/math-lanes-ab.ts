/**
 * A/B of the Wasm engine's `Math` ports in lanes (src/targets/cpu/wasm/math/) between this checkout
 * and a base, in one process: element-wise kernels calling pow/`**`, exp, log, log1p — those of
 * the corpus (bench/corpus/kernels.ts, written again here) and others of the same functions with
 * other dtypes and exponents — each built by each library on the cpu target with the Wasm engine
 * forced, called on `sharedArray` operands with a given `out` (the kernel's own code, no copies).
 * Sides are timed in turns, burst by burst (the same call back-to-back, warm), so that the
 * machine's noise falls on both alike; a sample is the process's CPU time per call over a burst
 * lasting ≥ 20 ms (on a loaded machine CPU time moves less than wall time); per side the median
 * and the least over samples. `js` is this checkout's JS engine forced (V8's own `Math.*`), as a
 * reference. Every side's result is checked bit for bit against the base's.
 *
 *   git archive main src package.json tsconfig.json | (mkdir -p /tmp/base && tar -x -C /tmp/base)
 *   ln -s $PWD/node_modules /tmp/base/node_modules
 *   npx tsx bench/math-lanes-ab.ts --base /tmp/base [--rounds 15] [--only a,b] [--quick] [--js]
 *   npx tsx bench/math-lanes-ab.ts --base-commit dd64e21 …   # the same, the base made from a commit of this repository
 */
import { execSync } from 'node:child_process';
import { mkdtempSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { cpuUsage } from 'node:process';
import { markdownTable } from './lib/markdown.js';
import { median } from './lib/timing.js';

const argv = process.argv.slice(2);
const flag = (name: string): string | undefined => (argv.includes(name) ? argv[argv.indexOf(name) + 1] : undefined);
const quick = argv.includes('--quick');
const rounds = Number(flag('--rounds') ?? (quick ? 3 : 15));
const only = flag('--only')?.split(',');
const withJs = argv.includes('--js');
const baseCommit = flag('--base-commit');
const baseDir = flag('--base') ?? (baseCommit ? checkoutOf(baseCommit) : undefined);

/** A directory holding `src/` of a commit of this repository, with this checkout's node_modules. */
function checkoutOf(commit: string): string {
  const dir = mkdtempSync(join(tmpdir(), 'math-lanes-base-'));
  execSync(`git archive ${commit} src package.json tsconfig.json | tar -x -C ${dir}`, { stdio: ['ignore', 'ignore', 'inherit'] });
  symlinkSync(resolve('node_modules'), join(dir, 'node_modules'));
  return dir;
}

type Vectorize = (signatures: string[], options?: object) => (kernel: (...args: never[]) => number) => (...args: unknown[]) => unknown;
interface Library {
  readonly vectorize: Vectorize;
  readonly sharedArray: (length: number, dtype: string) => ArrayBufferView & ArrayLike<number> & { [i: number]: number };
  readonly setEngineMode: (mode: 'auto' | 'wasm' | 'js') => void;
}

async function load(dir: string): Promise<Library> {
  const at = (path: string) => import(pathToFileURL(resolve(dir, path)).href);
  const index = await at('src/index.ts');
  const engine = await at('src/targets/cpu/wasm/index.ts');
  return { vectorize: index.vectorize, sharedArray: index.sharedArray, setEngineMode: engine.setEngineMode };
}

type Dtype = 'float32' | 'float64' | 'uint8';
type Input = { readonly dtype: Dtype; readonly low: number; readonly high: number } | { readonly scalar: number };
interface MathKernel {
  readonly name: string;
  /** In the corpus (bench/corpus/kernels.ts), or written for this benchmark. */
  readonly corpus: boolean;
  readonly signature: string;
  readonly env?: Record<string, unknown>;
  readonly kernel: (...args: never[]) => number;
  readonly inputs: readonly Input[];
  readonly out: Dtype;
}

function lennardJones(r: number, epsilon: number, sigma: number): number {
  const sr6 = (sigma / r) ** 6;
  return 4 * epsilon * (sr6 * sr6 - sr6);
}
function srgbToLinear(c: number): number {
  return c <= 0.04045 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4;
}

const f64 = (low: number, high: number): Input => ({ dtype: 'float64', low, high });
const f32 = (low: number, high: number): Input => ({ dtype: 'float32', low, high });

const KERNELS: MathKernel[] = [
  { name: 'lennard-jones', corpus: true, signature: 'float64(float64, float64, float64)', env: { lennardJones }, kernel: (r: number, e: number, s: number) => lennardJones(r, e, s), inputs: [f64(0.9, 3), { scalar: 1 }, { scalar: 1 }], out: 'float64' },
  { name: 'srgb-to-linear', corpus: true, signature: 'float32(float32)', env: { srgbToLinear }, kernel: (c: number) => srgbToLinear(c), inputs: [f32(0, 1)], out: 'float32' },
  { name: 'annuity-pv', corpus: true, signature: 'float64(float64, float64, float64)', kernel: (p: number, r: number, n: number) => (p * (1 - (1 + r) ** -n)) / r, inputs: [f64(10, 1000), f64(0.001, 0.1), f64(1, 360)], out: 'float64' },
  { name: 'softplus', corpus: true, signature: 'float64(float64)', kernel: (x: number) => Math.log1p(Math.exp(-Math.abs(x))) + Math.max(x, 0), inputs: [f64(-20, 20)], out: 'float64' },
  {
    name: 'normal-pdf', corpus: true, signature: 'float64(float64, float64, float64)',
    kernel: (x: number, mu: number, sigma: number) => {
      const z = (x - mu) / sigma;
      return Math.exp(-0.5 * z * z) / (sigma * Math.sqrt(2 * Math.PI));
    },
    inputs: [f64(-5, 5), { scalar: 0.5 }, { scalar: 1.5 }], out: 'float64',
  },
  { name: 'log-ratio', corpus: false, signature: 'float64(float64, float64)', kernel: (a: number, b: number) => Math.log(a / b), inputs: [f64(50, 150), f64(50, 150)], out: 'float64' },
  { name: 'gamma-u8', corpus: true, signature: 'uint8(uint8)', kernel: (v: number) => Math.min(255, Math.floor(255 * (v / 255) ** (1 / 2.2) + 0.5)), inputs: [{ dtype: 'uint8', low: 0, high: 255 }], out: 'uint8' },
  // outside the corpus
  { name: 'cube-f64', corpus: false, signature: 'float64(float64)', kernel: (x: number) => x ** 3, inputs: [f64(-10, 10)], out: 'float64' },
  { name: 'pow-scalar-y-f64', corpus: false, signature: 'float64(float64, float64)', kernel: (x: number, y: number) => x ** y, inputs: [f64(0, 10), { scalar: 1.7 }], out: 'float64' },
  // an exponent the same for the whole call but not a literal (pow.ts powLanesOfUniformY), and the literal beside it
  { name: 'pow-scalar-y-f32', corpus: false, signature: 'float32(float32, float32)', kernel: (x: number, y: number) => x ** y, inputs: [f32(0, 10), { scalar: 1.7 }], out: 'float32' },
  { name: 'pow-literal-y-f64', corpus: false, signature: 'float64(float64)', kernel: (x: number) => x ** 1.7, inputs: [f64(0, 10)], out: 'float64' },
  { name: 'pow-literal-y-f32', corpus: false, signature: 'float32(float32)', kernel: (x: number) => x ** 1.7, inputs: [f32(0, 10)], out: 'float32' },
  { name: 'pow-scalar-k-f64', corpus: false, signature: 'float64(float64, float64)', kernel: (x: number, k: number) => x ** k, inputs: [f64(-10, 10), { scalar: 5 }], out: 'float64' },
  { name: 'pow-scalar-k-f32', corpus: false, signature: 'float32(float32, float32)', kernel: (x: number, k: number) => x ** k, inputs: [f32(-10, 10), { scalar: 5 }], out: 'float32' },
  { name: 'gamma-arg-f64', corpus: false, signature: 'float64(float64, float64)', kernel: (p: number, gamma: number) => 255 * (p / 255) ** gamma, inputs: [f64(0, 255), { scalar: 2.2 }], out: 'float64' },
  { name: 'gamma-arg-f32', corpus: false, signature: 'float32(float32, float32)', kernel: (p: number, gamma: number) => 255 * (p / 255) ** gamma, inputs: [f32(0, 255), { scalar: 2.2 }], out: 'float32' },
  { name: 'inverse-gamma-arg-f32', corpus: false, signature: 'float32(float32, float32)', kernel: (p: number, gamma: number) => 255 * (p / 255) ** (1 / gamma), inputs: [f32(0, 255), { scalar: 2.2 }], out: 'float32' },
  { name: 'pow-xy-f64', corpus: false, signature: 'float64(float64, float64)', kernel: (x: number, y: number) => Math.pow(x, y), inputs: [f64(0, 10), f64(-4, 4)], out: 'float64' },
  { name: 'rsqrt3-f32', corpus: false, signature: 'float32(float32)', kernel: (x: number) => x ** -1.5, inputs: [f32(0.01, 100)], out: 'float32' },
  { name: 'db-to-gain-f64', corpus: false, signature: 'float64(float64)', kernel: (db: number) => 10 ** (db / 20), inputs: [f64(-60, 20)], out: 'float64' },
  { name: 'discount-f64', corpus: false, signature: 'float64(float64)', kernel: (n: number) => 1.05 ** -n, inputs: [f64(1, 360)], out: 'float64' },
  { name: 'exp2-f32', corpus: false, signature: 'float32(float32)', kernel: (x: number) => 2 ** x, inputs: [f32(-20, 20)], out: 'float32' },
  { name: 'exp-f32', corpus: false, signature: 'float32(float32)', kernel: (x: number) => Math.exp(x), inputs: [f32(-20, 20)], out: 'float32' },
  { name: 'log-f32', corpus: false, signature: 'float32(float32)', kernel: (x: number) => Math.log(x), inputs: [f32(0.001, 1000)], out: 'float32' },
  { name: 'log1p-f64', corpus: false, signature: 'float64(float64)', kernel: (x: number) => Math.log1p(x), inputs: [f64(-0.9, 10)], out: 'float64' },
];

const N = quick ? 1 << 16 : 1 << 20;

interface Side {
  readonly name: string;
  readonly lib: Library;
  readonly mode: 'wasm' | 'js';
}

function cpuNow(): number {
  const u = cpuUsage();
  return (u.user + u.system) / 1e6;
}

async function main(): Promise<void> {
  const here = await load('.');
  const base = baseDir ? await load(baseDir) : undefined;
  const sides: Side[] = [...(base ? [{ name: 'base', lib: base, mode: 'wasm' as const }] : []), { name: 'new', lib: here, mode: 'wasm' }];
  if (withJs) sides.push({ name: 'js', lib: here, mode: 'js' });
  const rows: string[][] = [];
  for (const k of KERNELS) {
    if (only && !only.includes(k.name)) continue;
    let seed = 1234567;
    const next = () => ((seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) / 2 ** 32);
    const values = k.inputs.map((i) => ('scalar' in i ? undefined : Array.from({ length: N }, () => i.low + (i.high - i.low) * next())));
    const calls = sides.map((side) => {
      side.lib.setEngineMode(side.mode);
      const f = side.lib.vectorize([k.signature], { target: 'cpu', ...(k.env ? { env: k.env } : {}) })(k.kernel);
      const args = k.inputs.map((i, a) => {
        if ('scalar' in i) return i.scalar;
        const arr = side.lib.sharedArray(N, i.dtype);
        values[a]!.forEach((v, j) => (arr[j] = i.dtype === 'uint8' ? Math.round(v) : v));
        return arr;
      });
      const out = side.lib.sharedArray(N, k.out);
      const call = () => {
        side.lib.setEngineMode(side.mode);
        f(...args, { out });
      };
      call();
      return { call, out };
    });
    // bit for bit against the first side
    const bits = (a: ArrayLike<number>) => Array.from(a, (v) => (Number.isNaN(v) ? 'NaN' : Object.is(v, -0) ? '-0' : String(v)));
    const first = bits(calls[0]!.out);
    calls.forEach((c, s) => {
      const b = bits(c.out);
      const bad = b.findIndex((v, i) => v !== first[i]);
      if (bad >= 0) throw new Error(`${k.name}: side ${sides[s]!.name} differs at ${bad}: ${b[bad]} vs ${first[bad]}`);
    });
    const samples = sides.map(() => [] as number[]);
    for (let r = 0; r < rounds + 2; r++) {
      calls.forEach((c, s) => {
        const t0 = cpuNow();
        let n = 0;
        let t = t0;
        do {
          c.call();
          n++;
          t = cpuNow();
        } while (t - t0 < 0.02);
        if (r >= 2) samples[s]!.push((t - t0) / n);
      });
    }
    const ms = (v: number) => (v * 1e3).toFixed(2);
    const row = [k.name, k.corpus ? 'yes' : '', k.signature, ...samples.flatMap((s) => [ms(median(s)), ms(Math.min(...s))])];
    if (base) row.push((median(samples[1]!) / median(samples[0]!)).toFixed(2), (Math.min(...samples[1]!) / Math.min(...samples[0]!)).toFixed(2));
    console.log(row.join('  '));
    rows.push(row);
  }
  const header = ['kernel', 'corpus', 'signature', ...sides.flatMap((s) => [`${s.name} median ms`, `${s.name} least ms`])];
  if (base) header.push('new ÷ base (median)', 'new ÷ base (least)');
  console.log(`\n${N} elements per call, ${rounds} samples per side, CPU time per call\n`);
  console.log(markdownTable(header.map((h, i) => ({ header: h, align: i < 3 ? 'left' as const : 'right' as const })), rows));
}

await main();
