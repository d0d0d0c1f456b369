/**
 * Element-wise kernels with a loop statement on the Wasm engine: SIMD lanes with uniform loop
 * counters kept scalar (element-loops.ts) against the scalar Wasm loop that ran such kernels
 * before (`__testing.setLanesTakeLoops(false)`, the same build), A/B in one run, plus the JS
 * engine and a hand-written JS loop for reference. Ordinary typed arrays (what users pass), ns per
 * element, median of samples; the variants are timed in turns, `--rounds` times, and each row gives
 * the median over rounds.
 *
 *   npx tsx bench/element-loops.ts [--quick] [--size N] [--rounds R] [--kernels cluster,horner,…]
 *
 * On the GPU host: bash .gpu/run.sh node --import tsx bench/element-loops.ts
 */
import { vectorize } from '../src/index.js';
import { setEngineMode } from '../src/targets/cpu/wasm/index.js';
import { __testing } from '../src/targets/cpu/wasm/element-loops.js';
import { markdownTable } from './lib/markdown.js';
import { median, timeCalls } from './lib/timing.js';

const args = process.argv.slice(2);
const quick = args.includes('--quick');
const flag = (name: string) => (args.includes(name) ? args[args.indexOf(name) + 1] : undefined);
const N = Number(flag('--size') ?? (quick ? 1 << 16 : 1 << 20));
const ROUNDS = Number(flag('--rounds') ?? (quick ? 2 : 3));
const chosen = flag('--kernels')?.split(',');

type Ufunc = { sync: (...a: unknown[]) => unknown; explain: (...a: unknown[]) => string };
interface LoopKernel {
  readonly name: string;
  readonly what: string;
  readonly make: () => Ufunc;
  readonly inputs: (n: number) => (Float32Array | Float64Array)[];
  /** The same work as a plain JS loop (inputs, then a fresh output). */
  readonly loop: (xs: readonly (Float32Array | Float64Array)[]) => ArrayLike<number>;
}

const steps = 6;
const degree = 8;
const spread = (n: number, lo: number, hi: number, Type: typeof Float32Array | typeof Float64Array) => {
  const a = new Type(n);
  for (let i = 0; i < n; i++) a[i] = lo + ((i * 7919) % n) * ((hi - lo) / n);
  return a;
};

const KERNELS: LoopKernel[] = [
  {
    name: 'cluster',
    what: 'bench/cluster.ts compute kernel: 6 fixed-point steps, float32',
    make: () => vectorize(['float32(float32)'], { env: { steps } })((x: number) => {
      let s = x;
      for (let k = 0; k < steps; k++) s = s * 0.999 + 0.5 / (1 + s * s);
      return s;
    }) as Ufunc,
    inputs: (n) => [spread(n, -4, 4, Float32Array)],
    loop: ([x]) => {
      const out = new Float32Array(x!.length);
      for (let i = 0; i < x!.length; i++) {
        let s = x![i]!;
        for (let k = 0; k < steps; k++) s = Math.fround(Math.fround(s * 0.999) + Math.fround(0.5 / Math.fround(1 + Math.fround(s * s))));
        out[i] = s;
      }
      return out;
    },
  },
  {
    name: 'horner',
    what: 'degree-8 Horner loop over computed coefficients, float64',
    make: () => vectorize(['float64(float64)'], { env: { degree } })((x: number) => {
      let p = 0;
      for (let k = degree; k >= 0; k--) p = p * x + 1 / (k + 1);
      return p;
    }) as Ufunc,
    inputs: (n) => [spread(n, -1, 1, Float64Array)],
    loop: ([x]) => {
      const out = new Float64Array(x!.length);
      for (let i = 0; i < x!.length; i++) {
        let p = 0;
        for (let k = degree; k >= 0; k--) p = p * x![i]! + 1 / (k + 1);
        out[i] = p;
      }
      return out;
    },
  },
  {
    name: 'newton-sqrt',
    what: '6 Newton steps for sqrt, float64',
    make: () => vectorize(['float64(float64)'])((x: number) => {
      let y = 0.5 * x + 0.5;
      for (let i = 0; i < 6; i++) y = 0.5 * (y + x / y);
      return y;
    }) as Ufunc,
    inputs: (n) => [spread(n, 0.01, 100, Float64Array)],
    loop: ([x]) => {
      const out = new Float64Array(x!.length);
      for (let i = 0; i < x!.length; i++) {
        let y = 0.5 * x![i]! + 0.5;
        for (let k = 0; k < 6; k++) y = 0.5 * (y + x![i]! / y);
        out[i] = y;
      }
      return out;
    },
  },
  {
    name: 'series-exp',
    what: 'exp as a 12-term series sum, float32',
    make: () => vectorize(['float32(float32)'])((x: number) => {
      let s = 1;
      let t = 1;
      for (let k = 1; k <= 12; k++) {
        t = (t * x) / k;
        s += t;
      }
      return s;
    }) as Ufunc,
    inputs: (n) => [spread(n, -2, 2, Float32Array)],
    loop: ([x]) => {
      const out = new Float32Array(x!.length);
      for (let i = 0; i < x!.length; i++) {
        let s = 1;
        let t = 1;
        for (let k = 1; k <= 12; k++) {
          t = (t * x![i]!) / k;
          s += t;
        }
        out[i] = s;
      }
      return out;
    },
  },
  {
    name: 'escape-count',
    what: 'escape-time while loop (condition varies per element: masked), float32 in, int32 out',
    make: () => vectorize(['int32(float32)'])((c: number) => {
      let z = 0;
      let n = 0;
      while (n < 64 && z * z < 4) {
        z = z * z + c;
        n++;
      }
      return n;
    }) as Ufunc,
    inputs: (n) => [spread(n, -2.2, 0.4, Float32Array)],
    loop: ([c]) => {
      const out = new Int32Array(c!.length);
      for (let i = 0; i < c!.length; i++) {
        let z = 0;
        let n = 0;
        while (n < 64 && z * z < 4) {
          z = z * z + c![i]!;
          n++;
        }
        out[i] = n;
      }
      return out;
    },
  },
  {
    name: 'break-growth',
    what: 'a uniform loop of 64 that elements leave by a `break` (masked), float64',
    make: () => vectorize(['float64(float64)'])((x: number) => {
      let s = x;
      for (let i = 0; i < 64; i++) {
        s = s * 1.1 + 0.25;
        if (s > 100) break;
      }
      return s;
    }) as Ufunc,
    inputs: (n) => [spread(n, -3, 90, Float64Array)],
    loop: ([x]) => {
      const out = new Float64Array(x!.length);
      for (let k = 0; k < x!.length; k++) {
        let s = x![k]!;
        for (let i = 0; i < 64; i++) {
          s = s * 1.1 + 0.25;
          if (s > 100) break;
        }
        out[k] = s;
      }
      return out;
    },
  },
  {
    name: 'mandelbrot',
    what: "the corpus's Mandelbrot (uniform loop of 100, a per-element `return`), float32 in, int32 out",
    make: () => vectorize(['int32(float32, float32)'])((cr: number, ci: number) => {
      let zr = 0;
      let zi = 0;
      for (let i = 0; i < 100; i++) {
        const t = zr * zr - zi * zi + cr;
        zi = 2 * zr * zi + ci;
        zr = t;
        if (zr * zr + zi * zi >= 4) return i;
      }
      return 100;
    }) as Ufunc,
    inputs: (n) => [spread(n, -2, 0.5, Float32Array), spread(n, -1.25, 1.25, Float32Array).reverse()],
    loop: ([a, b]) => {
      const out = new Int32Array(a!.length);
      for (let k = 0; k < a!.length; k++) {
        let zr = 0;
        let zi = 0;
        let n = 100;
        for (let i = 0; i < 100; i++) {
          const t = zr * zr - zi * zi + a![k]!;
          zi = 2 * zr * zi + b![k]!;
          zr = t;
          if (zr * zr + zi * zi >= 4) {
            n = i;
            break;
          }
        }
        out[k] = n;
      }
      return out;
    },
  },
];

const same = (a: ArrayLike<number>, b: ArrayLike<number>) => {
  for (let i = 0; i < a.length; i++) if (!Object.is(a[i], b[i]) && !(Number.isNaN(a[i]) && Number.isNaN(b[i]))) return false;
  return a.length === b.length;
};

const rows: string[][] = [];
console.log(`# Element-wise kernels with loops, ${N.toLocaleString('en-US')} elements, ordinary typed arrays, ${ROUNDS} rounds\n`);
for (const k of KERNELS.filter((x) => !chosen || chosen.includes(x.name))) {
  const xs = k.inputs(N);
  // Each variant compiles on its first call, under the setting it is made with.
  setEngineMode('wasm');
  __testing.setLanesTake('none');
  const scalar = k.make();
  const reference = scalar.sync(...xs) as ArrayLike<number>;
  __testing.setLanesTake('all');
  const lanes = k.make();
  const got = lanes.sync(...xs) as ArrayLike<number>;
  __testing.setLanesTake('uniform');
  const chosenWasm = k.make();
  const explain = chosenWasm.explain(...xs);
  chosenWasm.sync(...xs);
  if (!same(got, reference)) throw new Error(`${k.name}: lanes differ from the scalar loop`);
  const variants: [string, () => unknown][] = [
    ['scalar Wasm (before)', () => { setEngineMode('wasm'); return scalar.sync(...xs); }],
    ['Wasm lanes', () => { setEngineMode('wasm'); return lanes.sync(...xs); }],
    ['chosen Wasm', () => { setEngineMode('wasm'); return chosenWasm.sync(...xs); }],
    ['JS engine', () => { setEngineMode('js'); return lanes.sync(...xs); }],
    ['JS loop', () => k.loop(xs)],
  ];
  const perRound = new Map<string, number[]>(variants.map(([v]) => [v, []]));
  for (let r = 0; r < ROUNDS; r++) {
    for (const [v, call] of variants) {
      const t = await timeCalls(call, { warmup: 2, samples: quick ? 5 : 7 });
      perRound.get(v)!.push((t.medianSeconds / N) * 1e9);
    }
  }
  setEngineMode('auto');
  const ns = variants.map(([v]) => median(perRound.get(v)!));
  const row = [k.name, ...ns.map((x) => x.toFixed(2)), (ns[0]! / ns[2]!).toFixed(2) + '×', explain.slice(0, explain.indexOf('):') + 1)];
  rows.push(row);
  console.log(`${k.name} (${k.what}): ${variants.map(([v], i) => `${v} ${ns[i]!.toFixed(2)}`).join(', ')} ns/element; rounds ${variants.map(([v]) => perRound.get(v)!.map((x) => x.toFixed(2)).join('/')).join(' | ')}`);
}
console.log('\n' + markdownTable(['kernel', 'scalar Wasm (before)', 'Wasm lanes, masked loops too', 'chosen Wasm (lanes or scalar)', 'JS engine', 'JS loop', 'before ÷ chosen', 'explain'].map((header, i) => ({ header, align: i && i < 6 ? 'right' as const : 'left' as const })), rows));
