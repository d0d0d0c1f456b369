/**
 * The corpus: kernels users write, each as a ufunc kernel, a hand-written JS loop and a recipe for
 * its inputs. bench/peers/corpus_numba.py writes the same kernels for Numba (`@vectorize` and
 * `@guvectorize`, the way Numba users write them) and draws its inputs from the same recipes, which
 * bench/corpus.ts hands it as JSON.
 *
 * Where each comes from: Numba's and NumPy's documentation and examples, image processing,
 * finance, physics and ML activations; float32, float64 and small integers; element-wise and
 * per-row; some with helpers. The eleven kernels of issue 20's table come first.
 */
import { guvectorize, type Slice2, type Ufunc, vectorize } from '../../src/index.js';

export type Dtype = 'float32' | 'float64' | 'int32' | 'int16' | 'uint8';
export type Target = 'cpu' | 'parallel';
export type Data = Float32Array | Float64Array | Int32Array | Int16Array | Uint8Array;

/**
 * An input: an array of `shape` drawn uniformly from [low, high) (integers: [low, high]), or a
 * scalar (its dtype is the parameter's: the Numba peer passes it as that NumPy type, as its casting
 * rule requires).
 */
export type InputRecipe =
  | { readonly dtype: Dtype; readonly shape: readonly number[]; readonly low: number; readonly high: number }
  | { readonly scalar: number; readonly dtype: Dtype };

/** An array argument as a ufunc takes it. */
export interface Operand {
  readonly data: Data;
  readonly shape: readonly number[];
}

export interface CorpusKernel {
  readonly name: string;
  /** Where users write it (documentation, field). */
  readonly origin: string;
  /** The declaration, as the report shows it. */
  readonly declaration: string;
  /** What one item is (element, row of 64, …) and how many a full-size call has. */
  readonly items: string;
  readonly fullSize: number;
  /** Inputs of a call with `size` items. */
  inputs(size: number): readonly InputRecipe[];
  makeUfunc(target: Target, options?: { fastmath?: boolean }): Ufunc;
  /** The same work by hand, allocating its output as a user would. */
  loop(args: readonly (Operand | number)[]): Data;
  /** Largest relative difference tolerated between the ufunc and the loop (float32 loops round once per store). */
  readonly tolerance: number;
}

const arr = (dtype: Dtype, shape: readonly number[], low: number, high: number): InputRecipe => ({ dtype, shape, low, high });
const f32 = (n: number) => new Float32Array(n);
const f64 = (n: number) => new Float64Array(n);
/** The flat data of an array argument. */
const d = <T extends Data>(a: Operand | number): T => (a as Operand).data as T;
const s = (a: Operand | number): number => a as number;

// ---------------------------------------------------------------------------------------- helpers

/** Black–Scholes' cumulative normal distribution (the polynomial of Numba's example). */
function cnd(x: number): number {
  const a1 = 0.31938153;
  const a2 = -0.356563782;
  const a3 = 1.781477937;
  const a4 = -1.821255978;
  const a5 = 1.330274429;
  const k = 1 / (1 + 0.2316419 * Math.abs(x));
  const w = 1 - (0.3989422804014327 * Math.exp(-0.5 * x * x)) * (k * (a1 + k * (a2 + k * (a3 + k * (a4 + k * a5)))));
  return x < 0 ? 1 - w : w;
}

/** Lennard-Jones potential at distance r. */
function lennardJones(r: number, epsilon: number, sigma: number): number {
  const sr6 = (sigma / r) ** 6;
  return 4 * epsilon * (sr6 * sr6 - sr6);
}

/** sRGB component to linear light. */
function srgbToLinear(c: number): number {
  return c <= 0.04045 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4;
}

const ROW = 64;
const E = 1 << 22; // element-wise calls: 4,194,304 elements
const T = 1 << 20; // kernels of several transcendental functions per element: 1,048,576 (a full run stays within minutes)


export const CORPUS: readonly CorpusKernel[] = [
  // ------------------------------------------------------------- issue 20's table, in its order
  {
    name: 'sigmoid',
    origin: 'ML activation',
    declaration: "vectorize('float32(float32)')",
    items: 'elements',
    fullSize: E,
    inputs: (n) => [arr('float32', [n], -8, 8)],
    makeUfunc: (target, o) => vectorize(['float32(float32)'], { target, ...o })((x: number) => 1 / (1 + Math.exp(-x))),
    loop: ([x]) => {
      const a = d<Float32Array>(x!);
      const out = f32(a.length);
      for (let i = 0; i < a.length; i++) out[i] = 1 / (1 + Math.exp(-a[i]!));
      return out;
    },
    tolerance: 1e-6,
  },
  {
    name: 'softmax',
    origin: 'ML, per row',
    declaration: "guvectorize('void(float32[:], float32[:])', '(n)->(n)')",
    items: `rows of ${ROW}`,
    fullSize: E / ROW,
    inputs: (n) => [arr('float32', [n, ROW], -4, 4)],
    makeUfunc: (target, o) =>
      guvectorize(['void(float32[:], float32[:])'], '(n)->(n)', { target, ...o })((x: Float32Array, out: Float32Array) => {
        let m = x[0]!;
        for (let i = 1; i < x.length; i++) m = Math.max(m, x[i]!);
        let sum = 0;
        for (let i = 0; i < x.length; i++) {
          out[i] = Math.exp(x[i]! - m);
          sum += out[i]!;
        }
        for (let i = 0; i < x.length; i++) out[i] = out[i]! / sum;
      }),
    loop: ([x]) => {
      const a = d<Float32Array>(x!);
      const out = f32(a.length);
      for (let r = 0; r < a.length; r += ROW) {
        let m = a[r]!;
        for (let i = 1; i < ROW; i++) m = Math.max(m, a[r + i]!);
        let sum = 0;
        for (let i = 0; i < ROW; i++) {
          out[r + i] = Math.exp(a[r + i]! - m);
          sum += out[r + i]!;
        }
        for (let i = 0; i < ROW; i++) out[r + i] = out[r + i]! / sum;
      }
      return out;
    },
    tolerance: 1e-5,
  },
  {
    name: 'row-dot',
    origin: 'ML / linear algebra, per row',
    declaration: "guvectorize('void(float32[:], float32[:], float32[:])', '(n),(n)->()')",
    items: `row pairs of ${ROW}`,
    fullSize: E / ROW,
    inputs: (n) => [arr('float32', [n, ROW], -1, 1), arr('float32', [n, ROW], -1, 1)],
    makeUfunc: (target, o) =>
      guvectorize(['void(float32[:], float32[:], float32[:])'], '(n),(n)->()', { target, ...o })((a: Float32Array, b: Float32Array, out: Float32Array) => {
        let acc = 0;
        for (let i = 0; i < a.length; i++) acc += a[i]! * b[i]!;
        out[0] = acc;
      }),
    loop: ([x, y]) => {
      const a = d<Float32Array>(x!);
      const b = d<Float32Array>(y!);
      const out = f32(a.length / ROW);
      for (let r = 0; r < out.length; r++) {
        let acc = 0;
        for (let i = 0; i < ROW; i++) acc += a[r * ROW + i]! * b[r * ROW + i]!;
        out[r] = acc;
      }
      return out;
    },
    tolerance: 1e-4,
  },
  {
    name: 'poly5',
    origin: 'NumPy polyval / Horner, float64',
    declaration: "vectorize('float64(float64)')",
    items: 'elements',
    fullSize: E,
    inputs: (n) => [arr('float64', [n], -2, 2)],
    makeUfunc: (target, o) =>
      vectorize(['float64(float64)'], { target, ...o })((x: number) => ((((0.5 * x - 1.25) * x + 2.0) * x - 0.75) * x + 3.5) * x - 1.0),
    loop: ([x]) => {
      const a = d<Float64Array>(x!);
      const out = f64(a.length);
      for (let i = 0; i < a.length; i++) {
        const v = a[i]!;
        out[i] = ((((0.5 * v - 1.25) * v + 2.0) * v - 0.75) * v + 3.5) * v - 1.0;
      }
      return out;
    },
    tolerance: 0,
  },
  {
    name: 'gamma-u8',
    origin: 'image processing: gamma curve on 8-bit pixels',
    declaration: "vectorize('uint8(uint8)')",
    items: 'pixels',
    fullSize: T,
    inputs: (n) => [arr('uint8', [n], 0, 255)],
    makeUfunc: (target, o) => vectorize(['uint8(uint8)'], { target, ...o })((p: number) => Math.min(255, Math.floor(255 * (p / 255) ** 0.4545))),
    loop: ([x]) => {
      const a = d<Uint8Array>(x!);
      const out = new Uint8Array(a.length);
      for (let i = 0; i < a.length; i++) out[i] = Math.min(255, Math.floor(255 * (a[i]! / 255) ** 0.4545));
      return out;
    },
    tolerance: 0,
  },
  {
    name: 'black-scholes',
    origin: "finance: Numba's Black–Scholes example (call price), a helper",
    declaration: "vectorize('float64(float64, float64, float64, float64, float64)'), env { cnd }",
    items: 'options',
    fullSize: T,
    inputs: (n) => [arr('float64', [n], 5, 30), arr('float64', [n], 1, 100), arr('float64', [n], 0.25, 10), { scalar: 0.02, dtype: 'float64' }, { scalar: 0.3, dtype: 'float64' }],
    makeUfunc: (target, o) =>
      vectorize(['float64(float64, float64, float64, float64, float64)'], { target, env: { cnd }, ...o })((S: number, X: number, T: number, R: number, V: number) => {
        const sqrtT = Math.sqrt(T);
        const d1 = (Math.log(S / X) + (R + 0.5 * V * V) * T) / (V * sqrtT);
        const d2 = d1 - V * sqrtT;
        return S * cnd(d1) - X * Math.exp(-R * T) * cnd(d2);
      }),
    loop: ([s0, x0, t0, r0, v0]) => {
      const S = d<Float64Array>(s0!);
      const X = d<Float64Array>(x0!);
      const T = d<Float64Array>(t0!);
      const R = s(r0!);
      const V = s(v0!);
      const out = f64(S.length);
      for (let i = 0; i < S.length; i++) {
        const sqrtT = Math.sqrt(T[i]!);
        const d1 = (Math.log(S[i]! / X[i]!) + (R + 0.5 * V * V) * T[i]!) / (V * sqrtT);
        const d2 = d1 - V * sqrtT;
        out[i] = S[i]! * cnd(d1) - X[i]! * Math.exp(-R * T[i]!) * cnd(d2);
      }
      return out;
    },
    tolerance: 0,
  },
  {
    name: 'haversine',
    origin: 'geodesy: great-circle distance (sin, cos, asin, sqrt), float32',
    declaration: "vectorize('float32(float32, float32, float32, float32)')",
    items: 'point pairs',
    fullSize: T,
    inputs: (n) => [arr('float32', [n], -1.5, 1.5), arr('float32', [n], -3, 3), arr('float32', [n], -1.5, 1.5), arr('float32', [n], -3, 3)],
    makeUfunc: (target, o) =>
      vectorize(['float32(float32, float32, float32, float32)'], { target, ...o })((lat1: number, lon1: number, lat2: number, lon2: number) => {
        const dlat = Math.sin((lat2 - lat1) / 2);
        const dlon = Math.sin((lon2 - lon1) / 2);
        const a = dlat * dlat + Math.cos(lat1) * Math.cos(lat2) * dlon * dlon;
        return 2 * 6371 * Math.asin(Math.sqrt(a));
      }),
    loop: ([a1, b1, a2, b2]) => {
      const lat1 = d<Float32Array>(a1!);
      const lon1 = d<Float32Array>(b1!);
      const lat2 = d<Float32Array>(a2!);
      const lon2 = d<Float32Array>(b2!);
      const out = f32(lat1.length);
      for (let i = 0; i < out.length; i++) {
        const dlat = Math.sin((lat2[i]! - lat1[i]!) / 2);
        const dlon = Math.sin((lon2[i]! - lon1[i]!) / 2);
        const a = dlat * dlat + Math.cos(lat1[i]!) * Math.cos(lat2[i]!) * dlon * dlon;
        out[i] = 2 * 6371 * Math.asin(Math.sqrt(a));
      }
      return out;
    },
    tolerance: 1e-4,
  },
  {
    name: 'logsumexp',
    origin: 'ML / statistics, per row, float64',
    declaration: "guvectorize('void(float64[:], float64[:])', '(n)->()')",
    items: `rows of ${ROW}`,
    fullSize: E / ROW / 2,
    inputs: (n) => [arr('float64', [n, ROW], -10, 10)],
    makeUfunc: (target, o) =>
      guvectorize(['void(float64[:], float64[:])'], '(n)->()', { target, ...o })((x: Float64Array, out: Float64Array) => {
        let m = x[0]!;
        for (let i = 1; i < x.length; i++) m = Math.max(m, x[i]!);
        let sum = 0;
        for (let i = 0; i < x.length; i++) sum += Math.exp(x[i]! - m);
        out[0] = m + Math.log(sum);
      }),
    loop: ([x]) => {
      const a = d<Float64Array>(x!);
      const out = f64(a.length / ROW);
      for (let r = 0; r < out.length; r++) {
        let m = a[r * ROW]!;
        for (let i = 1; i < ROW; i++) m = Math.max(m, a[r * ROW + i]!);
        let sum = 0;
        for (let i = 0; i < ROW; i++) sum += Math.exp(a[r * ROW + i]! - m);
        out[r] = m + Math.log(sum);
      }
      return out;
    },
    tolerance: 0,
  },
  {
    name: 'mandelbrot',
    origin: "Numba's Mandelbrot example: an escape-time loop, float32 in, int32 out",
    declaration: "vectorize('int32(float32, float32)')",
    items: 'points',
    fullSize: 1 << 20,
    inputs: (n) => [arr('float32', [n], -2, 0.5), arr('float32', [n], -1.25, 1.25)],
    makeUfunc: (target, o) =>
      vectorize(['int32(float32, float32)'], { target, ...o })((cr: number, ci: number) => {
        let zr = 0;
        let zi = 0;
        for (let i = 0; i < 100; i++) {
          const t = zr * zr - zi * zi + cr;
          zi = 2 * zr * zi + ci;
          zr = t;
          if (zr * zr + zi * zi >= 4) return i;
        }
        return 100;
      }),
    loop: ([a, b]) => {
      const cr = d<Float32Array>(a!);
      const ci = d<Float32Array>(b!);
      const out = new Int32Array(cr.length);
      for (let k = 0; k < cr.length; k++) {
        let zr = 0;
        let zi = 0;
        let n = 100;
        for (let i = 0; i < 100; i++) {
          const t = zr * zr - zi * zi + cr[k]!;
          zi = 2 * zr * zi + ci[k]!;
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
    // The loop iterates in float64, the kernel in float32 (as Numba's does): points near the boundary differ.
    tolerance: Infinity,
  },
  {
    name: 'saturating-add-i16',
    origin: 'DSP / audio: saturating int16 add',
    declaration: "vectorize('int16(int16, int16)')",
    items: 'samples',
    fullSize: E,
    inputs: (n) => [arr('int16', [n], -32768, 32767), arr('int16', [n], -32768, 32767)],
    makeUfunc: (target, o) => vectorize(['int16(int16, int16)'], { target, ...o })((a: number, b: number) => Math.max(-32768, Math.min(32767, a + b))),
    loop: ([x, y]) => {
      const a = d<Int16Array>(x!);
      const b = d<Int16Array>(y!);
      const out = new Int16Array(a.length);
      for (let i = 0; i < a.length; i++) out[i] = Math.max(-32768, Math.min(32767, a[i]! + b[i]!));
      return out;
    },
    tolerance: 0,
  },
  {
    name: 'gelu-tanh',
    origin: 'ML activation: GELU, tanh approximation, float32',
    declaration: "vectorize('float32(float32)')",
    items: 'elements',
    fullSize: T,
    inputs: (n) => [arr('float32', [n], -6, 6)],
    makeUfunc: (target, o) =>
      vectorize(['float32(float32)'], { target, ...o })((x: number) => 0.5 * x * (1 + Math.tanh(0.7978845608 * (x + 0.044715 * x * x * x)))),
    loop: ([x]) => {
      const a = d<Float32Array>(x!);
      const out = f32(a.length);
      for (let i = 0; i < a.length; i++) {
        const v = a[i]!;
        out[i] = 0.5 * v * (1 + Math.tanh(0.7978845608 * (v + 0.044715 * v * v * v)));
      }
      return out;
    },
    tolerance: 1e-5,
  },
  // ----------------------------------------------------------------------------- and beyond
  {
    name: 'rel-diff',
    origin: "Numba's @vectorize documentation (rel_diff)",
    declaration: "vectorize('float64(float64, float64)')",
    items: 'elements',
    fullSize: E,
    inputs: (n) => [arr('float64', [n], 1, 2), arr('float64', [n], 1, 2)],
    makeUfunc: (target, o) => vectorize(['float64(float64, float64)'], { target, ...o })((x: number, y: number) => (2 * (x - y)) / (x + y)),
    loop: ([a, b]) => {
      const x = d<Float64Array>(a!);
      const y = d<Float64Array>(b!);
      const out = f64(x.length);
      for (let i = 0; i < x.length; i++) out[i] = (2 * (x[i]! - y[i]!)) / (x[i]! + y[i]!);
      return out;
    },
    tolerance: 0,
  },
  {
    name: 'add-scalar-rows',
    origin: "Numba's @guvectorize documentation (g: res[i] = x[i] + y), int32",
    declaration: "guvectorize('void(int32[:], int32, int32[:])', '(n),()->(n)')",
    items: `rows of ${ROW}`,
    fullSize: E / ROW,
    inputs: (n) => [arr('int32', [n, ROW], -1000, 1000), { scalar: 7, dtype: 'int32' }],
    makeUfunc: (target, o) =>
      guvectorize(['void(int32[:], int32, int32[:])'], '(n),()->(n)', { target, ...o })((x: Int32Array, y: number, res: Int32Array) => {
        for (let i = 0; i < x.length; i++) res[i] = x[i]! + y;
      }),
    loop: ([a, b]) => {
      const x = d<Int32Array>(a!);
      const y = s(b!);
      const out = new Int32Array(x.length);
      for (let i = 0; i < x.length; i++) out[i] = x[i]! + y;
      return out;
    },
    tolerance: 0,
  },
  {
    name: 'move-mean',
    origin: "Numba's @guvectorize documentation (move_mean: a moving average), float64",
    declaration: "guvectorize('void(float64[:], int32, float64[:])', '(n),()->(n)')",
    items: `rows of ${ROW * 4}`,
    fullSize: E / ROW / 4,
    inputs: (n) => [arr('float64', [n, ROW * 4], 0, 10), { scalar: 8, dtype: 'int32' }],
    makeUfunc: (target, o) =>
      guvectorize(['void(float64[:], int32, float64[:])'], '(n),()->(n)', { target, ...o })((a: Float64Array, w: number, out: Float64Array) => {
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
      }),
    loop: ([x, win]) => {
      const a = d<Float64Array>(x!);
      const w = s(win!);
      const n = ROW * 4;
      const out = f64(a.length);
      for (let r = 0; r < a.length; r += n) {
        let asum = 0;
        let count = 0;
        for (let i = 0; i < w; i++) {
          asum += a[r + i]!;
          count += 1;
          out[r + i] = asum / count;
        }
        for (let i = w; i < n; i++) {
          asum += a[r + i]! - a[r + i - w]!;
          out[r + i] = asum / count;
        }
      }
      return out;
    },
    tolerance: 0,
  },
  {
    name: 'np-vectorize-myfunc',
    origin: "NumPy's np.vectorize documentation (myfunc: a - b if a > b else a + b)",
    declaration: "vectorize('float64(float64, float64)')",
    items: 'elements',
    fullSize: E,
    inputs: (n) => [arr('float64', [n], -5, 5), { scalar: 2, dtype: 'float64' }],
    makeUfunc: (target, o) => vectorize(['float64(float64, float64)'], { target, ...o })((a: number, b: number) => (a > b ? a - b : a + b)),
    loop: ([x, y]) => {
      const a = d<Float64Array>(x!);
      const b = s(y!);
      const out = f64(a.length);
      for (let i = 0; i < a.length; i++) out[i] = a[i]! > b ? a[i]! - b : a[i]! + b;
      return out;
    },
    tolerance: 0,
  },
  {
    name: 'relu',
    origin: 'ML activation: ReLU, float32',
    declaration: "vectorize('float32(float32)')",
    items: 'elements',
    fullSize: E,
    inputs: (n) => [arr('float32', [n], -1, 1)],
    makeUfunc: (target, o) => vectorize(['float32(float32)'], { target, ...o })((x: number) => (x > 0 ? x : 0)),
    loop: ([x]) => {
      const a = d<Float32Array>(x!);
      const out = f32(a.length);
      for (let i = 0; i < a.length; i++) out[i] = a[i]! > 0 ? a[i]! : 0;
      return out;
    },
    tolerance: 0,
  },
  {
    name: 'elu',
    origin: 'ML activation: ELU (exp on the negative side), float32',
    declaration: "vectorize('float32(float32)')",
    items: 'elements',
    fullSize: E,
    inputs: (n) => [arr('float32', [n], -4, 4)],
    makeUfunc: (target, o) => vectorize(['float32(float32)'], { target, ...o })((x: number) => (x > 0 ? x : Math.exp(x) - 1)),
    loop: ([x]) => {
      const a = d<Float32Array>(x!);
      const out = f32(a.length);
      for (let i = 0; i < a.length; i++) out[i] = a[i]! > 0 ? a[i]! : Math.exp(a[i]!) - 1;
      return out;
    },
    tolerance: 1e-6,
  },
  {
    name: 'softplus',
    origin: 'ML activation: softplus, stable form (log1p, exp), float64',
    declaration: "vectorize('float64(float64)')",
    items: 'elements',
    fullSize: T,
    inputs: (n) => [arr('float64', [n], -20, 20)],
    makeUfunc: (target, o) => vectorize(['float64(float64)'], { target, ...o })((x: number) => Math.log1p(Math.exp(-Math.abs(x))) + Math.max(x, 0)),
    loop: ([x]) => {
      const a = d<Float64Array>(x!);
      const out = f64(a.length);
      for (let i = 0; i < a.length; i++) out[i] = Math.log1p(Math.exp(-Math.abs(a[i]!))) + Math.max(a[i]!, 0);
      return out;
    },
    tolerance: 0,
  },
  {
    name: 'rgb-to-gray',
    origin: 'image processing: luma of RGB pixels, per pixel row of 3, uint8',
    declaration: "guvectorize('void(uint8[:], uint8[:])', '(c)->()')",
    items: 'pixels',
    fullSize: E,
    inputs: (n) => [arr('uint8', [n, 3], 0, 255)],
    makeUfunc: (target, o) =>
      guvectorize(['void(uint8[:], uint8[:])'], '(c)->()', { target, ...o })((rgb: Uint8Array, out: Uint8Array) => {
        out[0] = 0.299 * rgb[0]! + 0.587 * rgb[1]! + 0.114 * rgb[2]!;
      }),
    loop: ([x]) => {
      const a = d<Uint8Array>(x!);
      const out = new Uint8Array(a.length / 3);
      for (let i = 0; i < out.length; i++) out[i] = 0.299 * a[3 * i]! + 0.587 * a[3 * i + 1]! + 0.114 * a[3 * i + 2]!;
      return out;
    },
    tolerance: 0,
  },
  {
    name: 'brightness-contrast-u8',
    origin: 'image processing: brightness and contrast with clamping, uint8',
    declaration: "vectorize('uint8(uint8)')",
    items: 'pixels',
    fullSize: E,
    inputs: (n) => [arr('uint8', [n], 0, 255)],
    makeUfunc: (target, o) => vectorize(['uint8(uint8)'], { target, ...o })((p: number) => Math.min(255, Math.max(0, Math.round(1.2 * p - 20)))),
    loop: ([x]) => {
      const a = d<Uint8Array>(x!);
      const out = new Uint8Array(a.length);
      for (let i = 0; i < a.length; i++) out[i] = Math.min(255, Math.max(0, Math.round(1.2 * a[i]! - 20)));
      return out;
    },
    tolerance: 0,
  },
  {
    name: 'threshold-u8',
    origin: 'image processing: binary threshold, uint8',
    declaration: "vectorize('uint8(uint8, uint8)')",
    items: 'pixels',
    fullSize: E,
    inputs: (n) => [arr('uint8', [n], 0, 255), { scalar: 128, dtype: 'uint8' }],
    makeUfunc: (target, o) => vectorize(['uint8(uint8, uint8)'], { target, ...o })((p: number, t: number) => (p > t ? 255 : 0)),
    loop: ([x, t]) => {
      const a = d<Uint8Array>(x!);
      const th = s(t!);
      const out = new Uint8Array(a.length);
      for (let i = 0; i < a.length; i++) out[i] = a[i]! > th ? 255 : 0;
      return out;
    },
    tolerance: 0,
  },
  {
    name: 'alpha-blend-u8',
    origin: 'image processing: blend two 8-bit images',
    declaration: "vectorize('uint8(uint8, uint8, float32)')",
    items: 'pixels',
    fullSize: E,
    inputs: (n) => [arr('uint8', [n], 0, 255), arr('uint8', [n], 0, 255), { scalar: 0.25, dtype: 'float32' }],
    makeUfunc: (target, o) => vectorize(['uint8(uint8, uint8, float32)'], { target, ...o })((a: number, b: number, alpha: number) => a * alpha + b * (1 - alpha)),
    loop: ([x, y, al]) => {
      const a = d<Uint8Array>(x!);
      const b = d<Uint8Array>(y!);
      const alpha = s(al!);
      const out = new Uint8Array(a.length);
      for (let i = 0; i < a.length; i++) out[i] = a[i]! * alpha + b[i]! * (1 - alpha);
      return out;
    },
    tolerance: 0,
  },
  {
    name: 'srgb-to-linear',
    origin: 'image processing: sRGB decoding (a branch and a power, a helper), float32',
    declaration: "vectorize('float32(float32)'), env { srgbToLinear }",
    items: 'components',
    fullSize: T,
    inputs: (n) => [arr('float32', [n], 0, 1)],
    makeUfunc: (target, o) => vectorize(['float32(float32)'], { target, env: { srgbToLinear }, ...o })((c: number) => srgbToLinear(c)),
    loop: ([x]) => {
      const a = d<Float32Array>(x!);
      const out = f32(a.length);
      for (let i = 0; i < a.length; i++) out[i] = srgbToLinear(a[i]!);
      return out;
    },
    tolerance: 1e-5,
  },
  {
    name: 'box-blur-rows',
    origin: 'image / signal processing: 3-tap blur along each row, float32',
    declaration: "guvectorize('void(float32[:], float32[:])', '(n)->(n)')",
    items: `rows of ${ROW * 4}`,
    fullSize: E / ROW / 4,
    inputs: (n) => [arr('float32', [n, ROW * 4], 0, 1)],
    makeUfunc: (target, o) =>
      guvectorize(['void(float32[:], float32[:])'], '(n)->(n)', { target, ...o })((x: Float32Array, out: Float32Array) => {
        const n = x.length;
        out[0] = (x[0]! + x[1]!) / 2;
        for (let i = 1; i < n - 1; i++) out[i] = (x[i - 1]! + x[i]! + x[i + 1]!) / 3;
        out[n - 1] = (x[n - 2]! + x[n - 1]!) / 2;
      }),
    loop: ([x]) => {
      const a = d<Float32Array>(x!);
      const n = ROW * 4;
      const out = f32(a.length);
      for (let r = 0; r < a.length; r += n) {
        out[r] = (a[r]! + a[r + 1]!) / 2;
        for (let i = 1; i < n - 1; i++) out[r + i] = (a[r + i - 1]! + a[r + i]! + a[r + i + 1]!) / 3;
        out[r + n - 1] = (a[r + n - 2]! + a[r + n - 1]!) / 2;
      }
      return out;
    },
    tolerance: 1e-6,
  },
  {
    name: 'annuity-pv',
    origin: 'finance: present value of an annuity (pow with a fractional base), float64',
    declaration: "vectorize('float64(float64, float64, float64)')",
    items: 'annuities',
    fullSize: T,
    inputs: (n) => [arr('float64', [n], 10, 1000), arr('float64', [n], 0.001, 0.1), arr('float64', [n], 1, 360)],
    makeUfunc: (target, o) =>
      vectorize(['float64(float64, float64, float64)'], { target, ...o })((payment: number, rate: number, periods: number) => (payment * (1 - (1 + rate) ** -periods)) / rate),
    loop: ([p0, r0, n0]) => {
      const p = d<Float64Array>(p0!);
      const r = d<Float64Array>(r0!);
      const n = d<Float64Array>(n0!);
      const out = f64(p.length);
      for (let i = 0; i < p.length; i++) out[i] = (p[i]! * (1 - (1 + r[i]!) ** -n[i]!)) / r[i]!;
      return out;
    },
    tolerance: 0,
  },
  {
    name: 'log-returns',
    origin: 'finance: log returns of each price series, per row, float64',
    declaration: "guvectorize('void(float64[:], float64[:])', '(n)->(n)')",
    items: `series of ${ROW * 4}`,
    fullSize: E / ROW / 4,
    inputs: (n) => [arr('float64', [n, ROW * 4], 50, 150)],
    makeUfunc: (target, o) =>
      guvectorize(['void(float64[:], float64[:])'], '(n)->(n)', { target, ...o })((p: Float64Array, out: Float64Array) => {
        out[0] = 0;
        for (let i = 1; i < p.length; i++) out[i] = Math.log(p[i]! / p[i - 1]!);
      }),
    loop: ([x]) => {
      const p = d<Float64Array>(x!);
      const n = ROW * 4;
      const out = f64(p.length);
      for (let r = 0; r < p.length; r += n) {
        out[r] = 0;
        for (let i = 1; i < n; i++) out[r + i] = Math.log(p[r + i]! / p[r + i - 1]!);
      }
      return out;
    },
    tolerance: 0,
  },
  {
    name: 'lennard-jones',
    origin: 'physics: Lennard-Jones potential (a helper, integer power), float64',
    declaration: "vectorize('float64(float64, float64, float64)'), env { lennardJones }",
    items: 'distances',
    fullSize: T,
    inputs: (n) => [arr('float64', [n], 0.9, 3), { scalar: 1, dtype: 'float64' }, { scalar: 1, dtype: 'float64' }],
    makeUfunc: (target, o) =>
      vectorize(['float64(float64, float64, float64)'], { target, env: { lennardJones }, ...o })((r: number, epsilon: number, sigma: number) => lennardJones(r, epsilon, sigma)),
    loop: ([r0, e0, s0]) => {
      const r = d<Float64Array>(r0!);
      const e = s(e0!);
      const sg = s(s0!);
      const out = f64(r.length);
      for (let i = 0; i < r.length; i++) out[i] = lennardJones(r[i]!, e, sg);
      return out;
    },
    tolerance: 0,
  },
  {
    name: 'pairwise-distance',
    origin: "Numba's @guvectorize examples: pairwise Euclidean distances, one call on whole matrices, float64",
    declaration: "guvectorize('void(float64[:,:], float64[:,:], float64[:,:])', '(n,d),(m,d)->(n,m)')",
    items: 'rows of X against 512 rows of Y, d = 16',
    fullSize: 1024,
    inputs: (n) => [arr('float64', [n, 16], -1, 1), arr('float64', [512, 16], -1, 1)],
    makeUfunc: (target, o) =>
      guvectorize(['void(float64[:,:], float64[:,:], float64[:,:])'], '(n,d),(m,d)->(n,m)', { target, ...o })((x: Slice2, y: Slice2, out: Slice2) => {
        for (let i = 0; i < x.length; i++) {
          for (let j = 0; j < y.length; j++) {
            let acc = 0;
            for (let k = 0; k < x.shape[1]; k++) {
              const t = x[i]![k]! - y[j]![k]!;
              acc += t * t;
            }
            out[i]![j] = Math.sqrt(acc);
          }
        }
      }),
    loop: ([a, b]) => {
      const x = d<Float64Array>(a!);
      const y = d<Float64Array>(b!);
      const n = x.length / 16;
      const m = y.length / 16;
      const out = f64(n * m);
      for (let i = 0; i < n; i++) {
        for (let j = 0; j < m; j++) {
          let acc = 0;
          for (let k = 0; k < 16; k++) {
            const t = x[i * 16 + k]! - y[j * 16 + k]!;
            acc += t * t;
          }
          out[i * m + j] = Math.sqrt(acc);
        }
      }
      return out;
    },
    tolerance: 0,
  },
  {
    name: 'normal-pdf',
    origin: 'statistics: the normal density (exp, sqrt of a constant), float64',
    declaration: "vectorize('float64(float64, float64, float64)')",
    items: 'elements',
    fullSize: E,
    inputs: (n) => [arr('float64', [n], -5, 5), { scalar: 0.5, dtype: 'float64' }, { scalar: 1.5, dtype: 'float64' }],
    makeUfunc: (target, o) =>
      vectorize(['float64(float64, float64, float64)'], { target, ...o })((x: number, mu: number, sigma: number) => {
        const z = (x - mu) / sigma;
        return Math.exp(-0.5 * z * z) / (sigma * Math.sqrt(2 * Math.PI));
      }),
    loop: ([x0, m0, s0]) => {
      const x = d<Float64Array>(x0!);
      const mu = s(m0!);
      const sigma = s(s0!);
      const out = f64(x.length);
      for (let i = 0; i < x.length; i++) {
        const z = (x[i]! - mu) / sigma;
        out[i] = Math.exp(-0.5 * z * z) / (sigma * Math.sqrt(2 * Math.PI));
      }
      return out;
    },
    tolerance: 0,
  },
  {
    name: 'polar-angle',
    origin: 'geometry / physics: polar coordinates (atan2, hypot), float32',
    declaration: "vectorize('float32(float32, float32)')",
    items: 'points',
    fullSize: T,
    inputs: (n) => [arr('float32', [n], -1, 1), arr('float32', [n], -1, 1)],
    makeUfunc: (target, o) => vectorize(['float32(float32, float32)'], { target, ...o })((x: number, y: number) => Math.atan2(y, x) * Math.hypot(x, y)),
    loop: ([a, b]) => {
      const x = d<Float32Array>(a!);
      const y = d<Float32Array>(b!);
      const out = f32(x.length);
      for (let i = 0; i < x.length; i++) out[i] = Math.atan2(y[i]!, x[i]!) * Math.hypot(x[i]!, y[i]!);
      return out;
    },
    tolerance: 1e-5,
  },
  {
    name: 'saxpy-f64',
    origin: 'BLAS axpy as users write it, float64 (memory-bound)',
    declaration: "vectorize('float64(float64, float64, float64)')",
    items: 'elements',
    fullSize: E,
    inputs: (n) => [{ scalar: 2, dtype: 'float64' }, arr('float64', [n], -1, 1), arr('float64', [n], -1, 1)],
    makeUfunc: (target, o) => vectorize(['float64(float64, float64, float64)'], { target, ...o })((a: number, x: number, y: number) => a * x + y),
    loop: ([a0, x0, y0]) => {
      const a = s(a0!);
      const x = d<Float64Array>(x0!);
      const y = d<Float64Array>(y0!);
      const out = f64(x.length);
      for (let i = 0; i < x.length; i++) out[i] = a * x[i]! + y[i]!;
      return out;
    },
    tolerance: 0,
  },
];
