/**
 * A/B of the Wasm engine's per-row (guvectorize) code between this checkout and a base, in one
 * process: per-row kernels of the corpus (bench/corpus/kernels.ts, written again here against
 * each library) and per-row kernels outside it, each built by each library and called with
 * ordinary typed arrays (outputs allocated by the call, as users write it), on the Wasm engine
 * (forced: the engine whose code changed) and on the engine each library chooses. Sides are timed
 * in turns, sample by sample, so that the machine's noise falls on all of them alike; a sample is
 * the process's CPU time per call over calls lasting ≥ 20 ms (on a loaded machine CPU time moves
 * less than wall time), and the figures per side are the median and the least over samples (other
 * work on the machine only adds time, so the least is the steadiest figure on a loaded machine). `new-g1` is this
 * checkout with one block of rows per step (emit-rows.ts `__testing.setRowGroups(1)`): what the
 * groups of rows side by side are worth, apart from anything else that differs from the base;
 * `new-f64` is this checkout keeping every float64 local in float64 (emit-rows.ts
 * `__testing.setNarrowDoubles(false)`): what holding int32- and float32-valued doubles in 32-bit
 * lanes (exact-doubles.ts, 4 rows per vector instead of 2) is worth; `new-pairs` is this checkout
 * holding true doubles in pairs of f64x2 vectors, 4 rows per vector (row-pairs.ts; emit-rows.ts
 * `__testing.setFloatPairs(true)`), the variant that calibration times beside the 2-row form (on
 * the Wasm engine forced, the other sides run the 2-row form); `new-pairs-g1` the same with one
 * group of rows per step. `--sides` keeps only the named extra sides (e.g. `--sides new-pairs`). `new-i32` is this checkout keeping rows of 8- and 16-bit integers
 * in 32-bit lanes (emit-rows.ts `__testing.setIntRows(false)`): what 8 rows per vector in 16-bit
 * lanes, 16 in 8-bit lanes (row-int-lanes.ts) are worth. `new-touch` is this checkout loading
 * the next block's rows ahead while a block computes (emit-rows.ts touchNextBlock, off by default,
 * `__testing.setTouchAhead(true)`): what overlapping the rows' cache misses with the body is worth.
 * `new-along` is this checkout running rows one after another with their loops whose iterations
 * are independent in lanes along the row (along-rows.ts; `__testing.setAlongRows(true)`), the
 * variant that calibration times beside rows in lanes; kernels with no such loop run as on the
 * other sides.
 * `base-along` is the base with the same setting (with --base): new-along ÷ base-along is what a
 * change to the along-the-row code is worth.
 * `new-staged` is this checkout copying every row into slots, also where a kernel without a loop
 * could read its inputs from their rows (emit-rows.ts, `__testing.setDirectReads(false)`).
 *
 *   git archive main src package.json tsconfig.json | (mkdir -p /tmp/base && tar -x -C /tmp/base)
 *   ln -s $PWD/node_modules /tmp/base/node_modules
 *   npx tsx bench/rows-ab.ts --base /tmp/base [--rounds 15] [--only a,b] [--quick] [--engines wasm,chosen] [--shared] [--sides new-g1,new-f64,new-pairs,new-pairs-g1,new-i32,new-touch,new-along,base-along,new-staged]
 *   npx tsx bench/rows-ab.ts --shared     # no base: this checkout with its rule against one group per step
 *
 * Checks every side's result against the first side's, bit for bit. Prints each row as it is
 * measured, then the table.
 */
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { formatSeconds } from './lib/format.js';
import { markdownTable } from './lib/markdown.js';
import { median } from './lib/timing.js';

const argv = process.argv.slice(2);
const flag = (name: string): string | undefined => (argv.includes(name) ? argv[argv.indexOf(name) + 1] : undefined);
const quick = argv.includes('--quick');
const rounds = Number(flag('--rounds') ?? (quick ? 3 : 15));
/** Operands in each library's Wasm memory (`sharedArray`, output into a given `out`): the kernel's own time, without the copies of ordinary arrays. */
const shared = argv.includes('--shared');
const only = flag('--only')?.split(',');
const engines = (flag('--engines') ?? 'wasm').split(',') as ('wasm' | 'chosen')[];
const baseDir = flag('--base');

type Guvectorize = (signatures: string[], layout: string, options?: object) => (kernel: (...args: never[]) => void) => (...args: unknown[]) => unknown;
interface Library {
  readonly guvectorize: Guvectorize;
  readonly sharedArray: (length: number, dtype: string) => ArrayBufferView & ArrayLike<number>;
  readonly setEngineMode: (mode: 'auto' | 'wasm' | 'js') => void;
  readonly setRowGroups?: (groups: number | undefined) => void;
  readonly setNarrowDoubles?: (on: boolean) => void;
  readonly setFloatPairs?: (on: boolean | undefined) => void;
  readonly setIntRows?: (on: boolean) => void;
  readonly setTouchAhead?: (on: boolean) => void;
  readonly setAlongRows?: (on: boolean | undefined) => void;
  readonly setDirectReads?: (on: boolean) => void;
}

async function load(dir: string): Promise<Library> {
  const at = (path: string) => import(pathToFileURL(resolve(dir, path)).href);
  const index = await at('src/index.ts');
  const engine = await at('src/targets/cpu/wasm/index.ts');
  const rows = await at('src/targets/cpu/wasm/emit-rows.ts');
  const along = await at('src/targets/cpu/wasm/along-rows.ts').catch(() => undefined);
  return { setAlongRows: along?.__testing?.setAlongRows, guvectorize: index.guvectorize, sharedArray: index.sharedArray, setEngineMode: engine.setEngineMode, setRowGroups: rows.__testing?.setRowGroups, setNarrowDoubles: rows.__testing?.setNarrowDoubles, setFloatPairs: rows.__testing?.setFloatPairs, setIntRows: rows.__testing?.setIntRows, setTouchAhead: rows.__testing?.setTouchAhead, setDirectReads: rows.__testing?.setDirectReads };
}

type Dtype = 'float32' | 'float64' | 'int32' | 'int16' | 'uint8';
type Input = { readonly dtype: Dtype; readonly shape: readonly number[]; readonly low: number; readonly high: number } | { readonly scalar: number };
interface RowKernel {
  readonly name: string;
  /** In the corpus (bench/corpus/kernels.ts), or written for this benchmark. */
  readonly corpus: boolean;
  readonly signature: string;
  readonly layout: string;
  readonly kernel: (...args: never[]) => void;
  inputs(scale: number): readonly Input[];
}

type V = { [i: number]: number; length: number };
type M = { [i: number]: V; length: number; shape: number[] };
const ROW = 64;
const ROWS = 1 << 16;

/** The range (max − min) of a row of uint8. */
const rangeOfRow = (x: V, out: V) => {
  let lo = 255;
  let hi = 0;
  for (let i = 0; i < x.length; i++) {
    lo = Math.min(lo, x[i]!);
    hi = Math.max(hi, x[i]!);
  }
  out[0] = hi - lo;
};

const KERNELS: RowKernel[] = [
  {
    name: 'softmax', corpus: true, signature: 'void(float32[:], float32[:])', layout: '(n)->(n)',
    kernel: (x: V, out: V) => {
      let m = x[0]!;
      for (let i = 1; i < x.length; i++) m = Math.max(m, x[i]!);
      let sum = 0;
      for (let i = 0; i < x.length; i++) {
        out[i] = Math.exp(x[i]! - m);
        sum += out[i]!;
      }
      for (let i = 0; i < x.length; i++) out[i] = out[i]! / sum;
    },
    inputs: (s) => [{ dtype: 'float32', shape: [ROWS * s, ROW], low: -4, high: 4 }],
  },
  {
    name: 'row-dot', corpus: true, signature: 'void(float32[:], float32[:], float32[:])', layout: '(n),(n)->()',
    kernel: (a: V, b: V, out: V) => {
      let acc = 0;
      for (let i = 0; i < a.length; i++) acc += a[i]! * b[i]!;
      out[0] = acc;
    },
    inputs: (s) => [{ dtype: 'float32', shape: [ROWS * s, ROW], low: -1, high: 1 }, { dtype: 'float32', shape: [ROWS * s, ROW], low: -1, high: 1 }],
  },
  {
    name: 'logsumexp', corpus: true, signature: 'void(float64[:], float64[:])', layout: '(n)->()',
    kernel: (x: V, out: V) => {
      let m = x[0]!;
      for (let i = 1; i < x.length; i++) m = Math.max(m, x[i]!);
      let sum = 0;
      for (let i = 0; i < x.length; i++) sum += Math.exp(x[i]! - m);
      out[0] = m + Math.log(sum);
    },
    inputs: (s) => [{ dtype: 'float64', shape: [(ROWS / 2) * s, ROW], low: -10, high: 10 }],
  },
  {
    name: 'add-scalar-rows', corpus: true, signature: 'void(int32[:], int32, int32[:])', layout: '(n),()->(n)',
    kernel: (x: V, y: number, res: V) => {
      for (let i = 0; i < x.length; i++) res[i] = x[i]! + y;
    },
    inputs: (s) => [{ dtype: 'int32', shape: [ROWS * s, ROW], low: -1000, high: 1000 }, { scalar: 7 }],
  },
  {
    name: 'move-mean', corpus: true, signature: 'void(float64[:], int32, float64[:])', layout: '(n),()->(n)',
    kernel: (a: V, w: number, out: V) => {
      let asum = 0;
      let count = 0;
      for (let i = 0; i < w; i++) {
        asum += a[i]!;
        count += 1;
        out[i] = asum / count;
      }
      for (let i = w; i < a.length; i++) {
        asum += a[i]! - a[i - w]!;
        out[i] = asum / count;
      }
    },
    inputs: (s) => [{ dtype: 'float64', shape: [(ROWS / 4) * s, ROW * 4], low: 0, high: 10 }, { scalar: 8 }],
  },
  {
    name: 'rgb-to-gray', corpus: true, signature: 'void(uint8[:], uint8[:])', layout: '(c)->()',
    kernel: (rgb: V, out: V) => {
      out[0] = 0.299 * rgb[0]! + 0.587 * rgb[1]! + 0.114 * rgb[2]!;
    },
    inputs: (s) => [{ dtype: 'uint8', shape: [ROWS * ROW * s, 3], low: 0, high: 255 }],
  },
  {
    name: 'box-blur-rows', corpus: true, signature: 'void(float32[:], float32[:])', layout: '(n)->(n)',
    kernel: (x: V, out: V) => {
      const n = x.length;
      out[0] = (x[0]! + x[1]!) / 2;
      for (let i = 1; i < n - 1; i++) out[i] = (x[i - 1]! + x[i]! + x[i + 1]!) / 3;
      out[n - 1] = (x[n - 2]! + x[n - 1]!) / 2;
    },
    inputs: (s) => [{ dtype: 'float32', shape: [(ROWS / 4) * s, ROW * 4], low: 0, high: 1 }],
  },
  {
    name: 'log-returns', corpus: true, signature: 'void(float64[:], float64[:])', layout: '(n)->(n)',
    kernel: (p: V, out: V) => {
      out[0] = 0;
      for (let i = 1; i < p.length; i++) out[i] = Math.log(p[i]! / p[i - 1]!);
    },
    inputs: (s) => [{ dtype: 'float64', shape: [(ROWS / 4) * s, ROW * 4], low: 50, high: 150 }],
  },
  {
    name: 'pairwise-distance', corpus: true, signature: 'void(float64[:,:], float64[:,:], float64[:,:])', layout: '(n,d),(m,d)->(n,m)',
    kernel: (x: M, y: M, out: M) => {
      for (let i = 0; i < x.length; i++) {
        for (let j = 0; j < y.length; j++) {
          let acc = 0;
          for (let k = 0; k < x.shape[1]!; k++) {
            const t = x[i]![k]! - y[j]![k]!;
            acc += t * t;
          }
          out[i]![j] = Math.sqrt(acc);
        }
      }
    },
    inputs: (s) => [{ dtype: 'float64', shape: [1024 * s, 16], low: -1, high: 1 }, { dtype: 'float64', shape: [512, 16], low: -1, high: 1 }],
  },
  // Outside the corpus: reductions, scans and recurrences along rows, of several widths.
  {
    name: 'row-sum-f64', corpus: false, signature: 'void(float64[:], float64[:])', layout: '(n)->()',
    kernel: (x: V, out: V) => {
      let s = 0;
      for (let i = 0; i < x.length; i++) s += x[i]!;
      out[0] = s;
    },
    inputs: (s) => [{ dtype: 'float64', shape: [ROWS * 2 * s, 32], low: -1, high: 1 }],
  },
  {
    name: 'row-max-f32', corpus: false, signature: 'void(float32[:], float32[:])', layout: '(n)->()',
    kernel: (x: V, out: V) => {
      let m = x[0]!;
      for (let i = 1; i < x.length; i++) m = Math.max(m, x[i]!);
      out[0] = m;
    },
    inputs: (s) => [{ dtype: 'float32', shape: [(ROWS / 2) * s, 128], low: -100, high: 100 }],
  },
  {
    name: 'unit-rows-f32', corpus: false, signature: 'void(float32[:], float32[:])', layout: '(n)->(n)',
    kernel: (x: V, out: V) => {
      let s = 0;
      for (let i = 0; i < x.length; i++) s += x[i]! * x[i]!;
      const r = 1 / Math.sqrt(s);
      for (let i = 0; i < x.length; i++) out[i] = x[i]! * r;
    },
    inputs: (s) => [{ dtype: 'float32', shape: [ROWS * s, ROW], low: -1, high: 1 }],
  },
  {
    name: 'minmax-scale-f32', corpus: false, signature: 'void(float32[:], float32[:])', layout: '(n)->(n)',
    kernel: (x: V, out: V) => {
      let lo = x[0]!;
      let hi = x[0]!;
      for (let i = 1; i < x.length; i++) {
        lo = Math.min(lo, x[i]!);
        hi = Math.max(hi, x[i]!);
      }
      const scale = 1 / (hi - lo);
      for (let i = 0; i < x.length; i++) out[i] = (x[i]! - lo) * scale;
    },
    inputs: (s) => [{ dtype: 'float32', shape: [ROWS * s, ROW], low: -50, high: 50 }],
  },
  {
    name: 'softmax-f64', corpus: false, signature: 'void(float64[:], float64[:])', layout: '(n)->(n)',
    kernel: (x: V, out: V) => {
      let m = -Infinity;
      for (let i = 0; i < x.length; i++) m = Math.max(m, x[i]!);
      let sum = 0;
      for (let i = 0; i < x.length; i++) {
        out[i] = Math.exp(x[i]! - m);
        sum += out[i]!;
      }
      for (let i = 0; i < x.length; i++) out[i] /= sum;
    },
    inputs: (s) => [{ dtype: 'float64', shape: [(ROWS / 2) * s, ROW], low: -10, high: 10 }],
  },
  {
    name: 'l1-normalize-f32', corpus: false, signature: 'void(float32[:], float32[:])', layout: '(n)->(n)',
    kernel: (x: V, out: V) => {
      let s = 0;
      for (let i = 0; i < x.length; i++) {
        out[i] = Math.abs(x[i]!);
        s += out[i]!;
      }
      for (let i = 0; i < x.length; i++) out[i] = x[i]! / s;
    },
    inputs: (s) => [{ dtype: 'float32', shape: [ROWS * s, ROW * 2], low: -1, high: 1 }],
  },
  {
    name: 'cumsum-f32', corpus: false, signature: 'void(float32[:], float32[:])', layout: '(n)->(n)',
    kernel: (x: V, out: V) => {
      let s = 0;
      for (let i = 0; i < x.length; i++) {
        s += x[i]!;
        out[i] = s;
      }
    },
    inputs: (s) => [{ dtype: 'float32', shape: [ROWS * s, ROW], low: -1, high: 1 }],
  },
  {
    name: 'ewma-f32', corpus: false, signature: 'void(float32[:], float32, float32[:])', layout: '(n),()->(n)',
    kernel: (x: V, alpha: number, out: V) => {
      out[0] = x[0]!;
      for (let i = 1; i < x.length; i++) out[i] = alpha * x[i]! + (1 - alpha) * out[i - 1]!;
    },
    inputs: (s) => [{ dtype: 'float32', shape: [ROWS * s, ROW], low: 0, high: 100 }, { scalar: 0.25 }],
  },
  {
    name: 'matvec-f64', corpus: false, signature: 'void(float64[:,:], float64[:], float64[:])', layout: '(m,n),(n)->(m)',
    kernel: (a: M, v: V, out: V) => {
      for (let i = 0; i < a.length; i++) {
        let acc = 0;
        for (let j = 0; j < v.length; j++) acc += a[i]![j]! * v[j]!;
        out[i] = acc;
      }
    },
    inputs: (s) => [{ dtype: 'float64', shape: [(ROWS / 4) * s, 8, 8], low: -1, high: 1 }, { dtype: 'float64', shape: [(ROWS / 4) * s, 8], low: -1, high: 1 }],
  },
  {
    name: 'variance-f64', corpus: false, signature: 'void(float64[:], float64[:])', layout: '(n)->()',
    kernel: (x: V, out: V) => {
      let mean = 0;
      for (let i = 0; i < x.length; i++) mean += x[i]!;
      mean /= x.length;
      let ss = 0;
      for (let i = 0; i < x.length; i++) ss += (x[i]! - mean) * (x[i]! - mean);
      out[0] = ss / x.length;
    },
    inputs: (s) => [{ dtype: 'float64', shape: [(ROWS / 2) * s, ROW], low: 0, high: 10 }],
  },
  {
    name: 'row-sum-i16', corpus: false, signature: 'void(int16[:], int32[:])', layout: '(n)->()',
    kernel: (x: V, out: V) => {
      let s = 0;
      for (let i = 0; i < x.length; i++) s = (s + x[i]!) | 0;
      out[0] = s;
    },
    inputs: (s) => [{ dtype: 'int16', shape: [ROWS * s, ROW], low: -32768, high: 32767 }],
  },
  {
    name: 'argmax-f32', corpus: false, signature: 'void(float32[:], int32[:])', layout: '(n)->()',
    kernel: (x: V, out: V) => {
      let m = -Infinity;
      let at = -1;
      for (let i = 0; i < x.length; i++) {
        if (x[i]! > m) {
          m = x[i]!;
          at = i;
        }
      }
      out[0] = at;
    },
    inputs: (s) => [{ dtype: 'float32', shape: [ROWS * s, ROW], low: -100, high: 100 }],
  },
  {
    name: 'range-u8', corpus: false, signature: 'void(uint8[:], uint8[:])', layout: '(n)->()',
    kernel: rangeOfRow,
    inputs: (s) => [{ dtype: 'uint8', shape: [ROWS * s, ROW], low: 0, high: 255 }],
  },
  {
    name: 'row-dot-fround', corpus: false, signature: 'void(float32[:], float32[:], float32[:])', layout: '(n),(n)->()',
    kernel: (a: V, b: V, out: V) => {
      let acc = 0;
      for (let i = 0; i < a.length; i++) acc = Math.fround(acc + a[i]! * b[i]!);
      out[0] = acc;
    },
    inputs: (s) => [{ dtype: 'float32', shape: [ROWS * s, ROW], low: -1, high: 1 }, { dtype: 'float32', shape: [ROWS * s, ROW], low: -1, high: 1 }],
  },
  {
    name: 'row-sum-u8', corpus: false, signature: 'void(uint8[:], int32[:])', layout: '(n)->()',
    kernel: (x: V, out: V) => {
      let s = 0;
      for (let i = 0; i < x.length; i++) s += x[i]!;
      out[0] = s;
    },
    inputs: (s) => [{ dtype: 'uint8', shape: [ROWS * s, ROW], low: 0, high: 255 }],
  },
  {
    name: 'count-above-f32', corpus: false, signature: 'void(float32[:], float32, int32[:])', layout: '(n),()->()',
    kernel: (x: V, t: number, out: V) => {
      let c = 0;
      for (let i = 0; i < x.length; i++) if (x[i]! > t) c++;
      out[0] = c;
    },
    inputs: (s) => [{ dtype: 'float32', shape: [ROWS * s, ROW], low: -1, high: 1 }, { scalar: 0.25 }],
  },
  // Without a loop: a few elements of each row at fixed indices.
  {
    name: 'cross-f32', corpus: false, signature: 'void(float32[:], float32[:], float32[:])', layout: '(c),(c)->(c)',
    kernel: (a: V, b: V, out: V) => {
      out[0] = a[1]! * b[2]! - a[2]! * b[1]!;
      out[1] = a[2]! * b[0]! - a[0]! * b[2]!;
      out[2] = a[0]! * b[1]! - a[1]! * b[0]!;
    },
    inputs: (s) => [{ dtype: 'float32', shape: [ROWS * 16 * s, 3], low: -1, high: 1 }, { dtype: 'float32', shape: [ROWS * 16 * s, 3], low: -1, high: 1 }],
  },
  {
    name: 'saturation-f64', corpus: false, signature: 'void(float64[:], float64[:])', layout: '(c)->()',
    kernel: (p: V, out: V) => {
      const hi = Math.max(p[0]!, Math.max(p[1]!, p[2]!));
      const lo = Math.min(p[0]!, Math.min(p[1]!, p[2]!));
      out[0] = hi > 0 ? (hi - lo) / hi : 0;
    },
    inputs: (s) => [{ dtype: 'float64', shape: [ROWS * 16 * s, 3], low: 0, high: 1 }],
  },
  {
    name: 'quat-norm-i16', corpus: false, signature: 'void(int16[:], float32[:])', layout: '(c)->()',
    kernel: (q: V, out: V) => {
      out[0] = Math.sqrt(q[0]! * q[0]! + q[1]! * q[1]! + q[2]! * q[2]! + q[3]! * q[3]!);
    },
    inputs: (s) => [{ dtype: 'int16', shape: [ROWS * 16 * s, 4], low: -32768, high: 32767 }],
  },
  {
    name: 'quat-norm-u8', corpus: false, signature: 'void(uint8[:], float32[:])', layout: '(c)->()',
    kernel: (q: V, out: V) => {
      out[0] = Math.sqrt(q[0]! * q[0]! + q[1]! * q[1]! + q[2]! * q[2]! + q[3]! * q[3]!);
    },
    inputs: (s) => [{ dtype: 'uint8', shape: [ROWS * 16 * s, 4], low: 0, high: 255 }],
  },
  {
    name: 'gray-i16', corpus: false, signature: 'void(int16[:], int16[:])', layout: '(c)->()',
    kernel: (rgb: V, out: V) => {
      out[0] = 0.299 * rgb[0]! + 0.587 * rgb[1]! + 0.114 * rgb[2]!;
    },
    inputs: (s) => [{ dtype: 'int16', shape: [ROWS * 16 * s, 3], low: 0, high: 4095 }],
  },
  // 8- and 16-bit rows in lanes of their width (row-int-lanes.ts): 8 rows per vector in 16-bit lanes, 16 in 8-bit lanes.
  {
    name: 'row-sum-i16-wrap', corpus: false, signature: 'void(int16[:], int16[:])', layout: '(n)->()',
    kernel: (x: V, out: V) => {
      let s = 0;
      for (let i = 0; i < x.length; i++) s += x[i]!;
      out[0] = s;
    },
    inputs: (s) => [{ dtype: 'int16', shape: [ROWS * s, ROW], low: -32768, high: 32767 }],
  },
  {
    name: 'range-u8-i16', corpus: false, signature: 'void(uint8[:], int16[:])', layout: '(n)->()',
    kernel: rangeOfRow,
    inputs: (s) => [{ dtype: 'uint8', shape: [ROWS * s, ROW], low: 0, high: 255 }],
  },
  {
    name: 'count-above-u8', corpus: false, signature: 'void(uint8[:], uint8, int16[:])', layout: '(n),()->()',
    kernel: (x: V, t: number, out: V) => {
      let c = 0;
      for (let i = 0; i < x.length; i++) if (x[i]! > t) c++;
      out[0] = c;
    },
    inputs: (s) => [{ dtype: 'uint8', shape: [ROWS * s, ROW], low: 0, high: 255 }, { scalar: 100 }],
  },
  {
    name: 'threshold-u8', corpus: false, signature: 'void(uint8[:], uint8, uint8[:])', layout: '(n),()->(n)',
    kernel: (x: V, t: number, out: V) => {
      for (let i = 0; i < x.length; i++) out[i] = x[i]! > t ? 255 : 0;
    },
    inputs: (s) => [{ dtype: 'uint8', shape: [ROWS * s, ROW], low: 0, high: 255 }, { scalar: 100 }],
  },
  {
    name: 'clamp-i16', corpus: false, signature: 'void(int16[:], int16, int16, int16[:])', layout: '(n),(),()->(n)',
    kernel: (x: V, lo: number, hi: number, out: V) => {
      for (let i = 0; i < x.length; i++) out[i] = Math.min(Math.max(x[i]!, lo), hi);
    },
    inputs: (s) => [{ dtype: 'int16', shape: [ROWS * s, ROW], low: -32768, high: 32767 }, { scalar: -1000 }, { scalar: 1000 }],
  },
  {
    name: 'sat-add-i16', corpus: false, signature: 'void(int16[:], int16, int16[:])', layout: '(n),()->(n)',
    kernel: (x: V, k: number, out: V) => {
      for (let i = 0; i < x.length; i++) out[i] = Math.min(Math.max(x[i]! + k, -32768), 32767);
    },
    inputs: (s) => [{ dtype: 'int16', shape: [ROWS * s, ROW], low: -32768, high: 32767 }, { scalar: 12345 }],
  },
  // Loops along the row whose iterations are independent (along-rows.ts): maps and stencils.
  {
    name: 'scale-clip-f32', corpus: false, signature: 'void(float32[:], float32, float32[:])', layout: '(n),()->(n)',
    kernel: (x: V, k: number, out: V) => {
      for (let i = 0; i < x.length; i++) out[i] = Math.min(Math.max(x[i]! * k, -1), 1);
    },
    inputs: (s) => [{ dtype: 'float32', shape: [ROWS * s, ROW], low: -2, high: 2 }, { scalar: 0.75 }],
  },
  {
    name: 'stencil5-f64', corpus: false, signature: 'void(float64[:], float64[:])', layout: '(n)->(n)',
    kernel: (x: V, out: V) => {
      const n = x.length;
      out[0] = x[0]!;
      out[1] = x[1]!;
      for (let i = 2; i < n - 2; i++) out[i] = 0.1 * x[i - 2]! + 0.2 * x[i - 1]! + 0.4 * x[i]! + 0.2 * x[i + 1]! + 0.1 * x[i + 2]!;
      out[n - 2] = x[n - 2]!;
      out[n - 1] = x[n - 1]!;
    },
    inputs: (s) => [{ dtype: 'float64', shape: [(ROWS / 4) * s, ROW * 4], low: -1, high: 1 }],
  },
  {
    name: 'gradient-i16', corpus: false, signature: 'void(int16[:], int16[:])', layout: '(n)->(n)',
    kernel: (x: V, out: V) => {
      const n = x.length;
      out[0] = 0;
      for (let i = 1; i < n - 1; i++) out[i] = x[i + 1]! - x[i - 1]!;
      out[n - 1] = 0;
    },
    inputs: (s) => [{ dtype: 'int16', shape: [(ROWS / 2) * s, ROW * 2], low: -32768, high: 32767 }],
  },
];

const ARRAYS = { float32: Float32Array, float64: Float64Array, int32: Int32Array, int16: Int16Array, uint8: Uint8Array };
const DTYPE_OF = new Map<unknown, string>(Object.entries(ARRAYS).map(([d, t]) => [t, d]));

/** Deterministic inputs (a linear congruential sequence), the same for every side. */
function makeInputs(recipes: readonly Input[]): unknown[] {
  let seed = 12345;
  const next = () => ((seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) / 2 ** 32);
  return recipes.map((r) => {
    if ('scalar' in r) return r.scalar;
    const n = r.shape.reduce((a, b) => a * b, 1);
    const data = new ARRAYS[r.dtype](n);
    const integer = r.dtype !== 'float32' && r.dtype !== 'float64';
    for (let i = 0; i < n; i++) data[i] = integer ? Math.floor(r.low + next() * (r.high - r.low + 1)) : r.low + next() * (r.high - r.low);
    return { data, shape: [...r.shape] };
  });
}

function bytesOf(result: unknown): Uint8Array {
  const data = (result as { data?: ArrayBufferView }).data ?? (result as ArrayBufferView);
  return new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
}

interface Side {
  readonly name: string;
  readonly lib: Library;
  readonly groups?: number;
  /** false: float64 locals stay float64 even where they hold only int32 or float32 values (exact-doubles.ts). */
  readonly narrow?: boolean;
  /** true: true doubles in pairs of vectors, 4 rows per vector (row-pairs.ts), whatever calibration would choose. */
  readonly pairs?: true;
  /** false: rows of 8- and 16-bit integers keep 32-bit lanes (row-int-lanes.ts). */
  readonly intRows?: boolean;
  /** false: the next block's rows are not touched while a block computes (emit-rows.ts touchNextBlock). */
  readonly touch?: boolean;
  /** true: rows one after another, loops whose iterations are independent in lanes along the row (along-rows.ts), whatever calibration would choose. */
  readonly along?: true;
  /** false: kernels without a loop copy their inputs' rows into slots too (emit-rows.ts direct reads). */
  readonly direct?: boolean;
}

const fresh = await load(resolve(new URL('..', import.meta.url).pathname));
// Without a base, the reference side is this checkout with one group of rows per step.
const sides: Side[] = baseDir ? [{ name: 'base', lib: await load(baseDir) }, { name: 'new', lib: fresh }] : [{ name: 'new-g1', lib: fresh, groups: 1 }, { name: 'new', lib: fresh }];
const extra = flag('--sides')?.split(',');
const wanted = (name: string) => !extra || extra.includes(name);
if (baseDir && fresh.setRowGroups && wanted('new-g1')) sides.push({ name: 'new-g1', lib: fresh, groups: 1 });
if (fresh.setNarrowDoubles && wanted('new-f64')) sides.push({ name: 'new-f64', lib: fresh, narrow: false });
if (fresh.setFloatPairs && wanted('new-pairs')) sides.push({ name: 'new-pairs', lib: fresh, pairs: true });
if (fresh.setFloatPairs && wanted('new-pairs-g1')) sides.push({ name: 'new-pairs-g1', lib: fresh, pairs: true, groups: 1 });
if (fresh.setIntRows && wanted('new-i32')) sides.push({ name: 'new-i32', lib: fresh, intRows: false });
if (fresh.setTouchAhead && wanted('new-touch')) sides.push({ name: 'new-touch', lib: fresh, touch: true });
if (fresh.setAlongRows && wanted('new-along')) sides.push({ name: 'new-along', lib: fresh, along: true });
if (baseDir && sides[0]!.lib.setAlongRows && wanted('base-along')) sides.push({ name: 'base-along', lib: sides[0]!.lib, along: true });
if (fresh.setDirectReads && wanted('new-staged')) sides.push({ name: 'new-staged', lib: fresh, direct: false });

const rows: string[][] = [];
for (const k of KERNELS) {
  if (only && !only.includes(k.name)) continue;
  const inputs = makeInputs(k.inputs(quick ? 1 / 16 : 1));
  for (const engine of engines) {
    // Each side's ufunc is built with its library set as it will be timed (the row plan is fixed at compile).
    const calls = sides.map((side) => {
      side.lib.setRowGroups?.(side.groups);
      side.lib.setNarrowDoubles?.(side.narrow ?? true);
      side.lib.setFloatPairs?.(side.pairs);
      side.lib.setIntRows?.(side.intRows ?? true);
      side.lib.setTouchAhead?.(side.touch ?? false);
      side.lib.setAlongRows?.(side.along);
      side.lib.setDirectReads?.(side.direct ?? true);
      side.lib.setEngineMode(engine === 'wasm' ? 'wasm' : 'auto');
      const f = side.lib.guvectorize([k.signature], k.layout)(k.kernel) as unknown as { sync: (...a: unknown[]) => unknown; explain: (...a: unknown[]) => string };
      let args = inputs;
      if (shared) {
        const toShared = (a: unknown) => {
          if (typeof a === 'number') return a;
          const { data, shape } = a as { data: ArrayLike<number>; shape: number[] };
          // At a 64-byte boundary on every side: where each side's arrays start within a cache
          // line otherwise moved its figures by up to 1.3× (the same code on two sides).
          const bytes = (data as unknown as ArrayBufferView & { BYTES_PER_ELEMENT: number }).BYTES_PER_ELEMENT;
          const whole = side.lib.sharedArray(data.length + 64 / bytes, DTYPE_OF.get(data.constructor)!) as unknown as ArrayBufferView & { subarray: (a: number, b: number) => { set: (x: ArrayLike<number>) => void } };
          const skip = ((64 - (whole.byteOffset % 64)) % 64) / bytes;
          const copy = whole.subarray(skip, skip + data.length);
          copy.set(data);
          return { data: copy, shape };
        };
        const first = f.sync(...inputs) as { data: ArrayLike<number>; shape: number[] };
        args = [...inputs.map(toShared), { out: toShared(first) }];
      }
      const run = () => {
        side.lib.setEngineMode(engine === 'wasm' ? 'wasm' : 'auto');
        side.lib.setRowGroups?.(side.groups);
        side.lib.setNarrowDoubles?.(side.narrow ?? true);
        side.lib.setFloatPairs?.(side.pairs);
        side.lib.setIntRows?.(side.intRows ?? true);
        side.lib.setTouchAhead?.(side.touch ?? false);
        side.lib.setAlongRows?.(side.along);
        side.lib.setDirectReads?.(side.direct ?? true);
        return f.sync(...args);
      };
      return { side, run, f, args };
    });
    const reference = bytesOf(calls[0]!.run());
    const same = calls.map((c) => {
      const got = bytesOf(c.run());
      return got.length === reference.length && got.every((b, i) => b === reference[i]);
    });
    const perSample: number[][] = sides.map(() => []);
    const repeats = calls.map((c) => {
      for (let w = 0; w < 3; w++) c.run();
      const t0 = performance.now();
      c.run();
      return Math.max(1, Math.ceil(20 / Math.max(performance.now() - t0, 0.01)));
    });
    for (let r = 0; r < rounds; r++) {
      for (const [i, c] of calls.entries()) {
        const before = process.cpuUsage();
        for (let j = 0; j < repeats[i]!; j++) c.run();
        const used = process.cpuUsage(before);
        perSample[i]!.push((used.user + used.system) / 1e6 / repeats[i]!);
      }
    }
    const medians = perSample.map(median);
    // Other work on the machine only adds time: the least sample is the steadiest on a loaded one.
    const least = perSample.map((x) => Math.min(...x));
    const explained = (() => {
      const c = calls[1]!;
      c.side.lib.setEngineMode(engine === 'wasm' ? 'wasm' : 'auto');
      return String(c.f.explain(...c.args)).slice(0, 90);
    })();
    rows.push([
      k.name + (k.corpus ? '' : ' *'), engine, ...medians.map(formatSeconds),
      ...medians.slice(1).map((m) => `${(m / medians[0]!).toFixed(2)}×`), ...least.slice(1).map((m) => `${(m / least[0]!).toFixed(2)}×`), same.every(Boolean) ? 'ok' : `differs: ${sides.filter((_, i) => !same[i]).map((s) => s.name).join(', ')}`, explained,
    ]);
    console.log(rows[rows.length - 1]!.join(' | '));
  }
}
for (const s of sides) {
  s.lib.setEngineMode('auto');
  s.lib.setRowGroups?.(undefined);
  s.lib.setNarrowDoubles?.(true);
  s.lib.setFloatPairs?.(undefined);
  s.lib.setTouchAhead?.(false);
  s.lib.setAlongRows?.(undefined);
  s.lib.setDirectReads?.(true);
}
console.log(`\n${rounds} samples per side, in turns; CPU time per call; * = outside the corpus. ${shared ? 'Operands in Wasm memory (sharedArray, into a given out).' : 'Ordinary typed arrays, outputs allocated by the call.'}\n`);
const right = (header: string) => ({ header, align: 'right' as const });
console.log(markdownTable([{ header: 'kernel' }, { header: 'engine' }, ...sides.map((s) => right(s.name)), ...sides.slice(1).map((s) => right(`${s.name} ÷ ${sides[0]!.name}`)), ...sides.slice(1).map((s) => right(`least: ${s.name} ÷ ${sides[0]!.name}`)), { header: 'bits' }, { header: 'new: explain' }], rows));
process.exit(0);
