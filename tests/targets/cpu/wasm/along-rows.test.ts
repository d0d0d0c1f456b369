/**
 * Per-row kernels whose loops run in SIMD lanes along the row (along-rows.ts) are bit-identical to
 * the JS engine: maps and stencils of every lane type, rows of 0 to 1,000 elements (the vector
 * loop's edges and its scalar rest), values with NaN, ±Inf and −0, int wraps, uint8c clamps,
 * float32 rounding, per-row and broadcast scalars, helpers, ragged and strided rows, in-place and
 * overlapping outputs, and reads out of bounds at either end of a row.
 */
import fc from 'fast-check';
import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type DType, DTYPES } from '../../../../src/dtypes.js';
import { engineMode, setEngineMode } from '../../../../src/targets/cpu/wasm/index.js';
import { guvectorize, setParallelOptions, sharedArray, shutdown } from '../../../../src/index.js';
import { DEFAULT_THRESHOLD } from '../../../../src/targets/parallel/index.js';
import { __testing as alongTesting } from '../../../../src/targets/cpu/wasm/along-rows.js';
import { expectSameArrays, same, wasmAndJs } from './same-values.js';

const initialMode = engineMode();
beforeEach(() => alongTesting.setAlongRows(true));
afterEach(() => {
  setEngineMode(initialMode);
  alongTesting.setAlongRows(undefined);
});
afterAll(async () => {
  setParallelOptions({ threshold: DEFAULT_THRESHOLD });
  await shutdown();
});

type V = { [i: number]: number; length: number };
type Ufunc = { sync: (...args: unknown[]) => unknown; explain: (...args: unknown[]) => string };

/** Row lengths around the vector loop's edges (lanes of 2 and 4, steps of 2 vectors) and a long row. */
const ROW_LENGTHS = [0, 1, 2, 3, 5, 7, 8, 9, 63, 64, 65, 1000];

function valuesOf(dtype: DType): fc.Arbitrary<number> {
  switch (dtype) {
    case 'float64':
      return fc.oneof(fc.double(), fc.double({ min: -4, max: 4, noNaN: true }), fc.constantFrom(0, -0, NaN, Infinity, -Infinity, 0.5, 2 ** 31, 1e300, 5e-324));
    case 'float32':
      return fc.oneof(fc.float(), fc.float({ min: -4, max: 4, noNaN: true }), fc.constantFrom(0, -0, NaN, Infinity, -Infinity, 0.5, 2 ** 31, 1e-45)).map(Math.fround);
    case 'int32':
      return fc.oneof(fc.integer(), fc.integer({ min: -9, max: 9 }), fc.constantFrom(-2147483648, 2147483647));
    case 'uint32':
      return fc.oneof(fc.nat({ max: 4294967295 }), fc.constantFrom(0, 4294967295, 2147483648));
    case 'int16':
      return fc.oneof(fc.integer({ min: -32768, max: 32767 }), fc.constantFrom(-32768, 32767, 0, -1));
    case 'uint16':
      return fc.oneof(fc.integer({ min: 0, max: 65535 }), fc.constantFrom(0, 65535, 32768));
    case 'int8':
      return fc.oneof(fc.integer({ min: -128, max: 127 }), fc.constantFrom(-128, 127, 0, -1));
    default:
      return fc.oneof(fc.integer({ min: 0, max: 255 }), fc.constantFrom(0, 255));
  }
}

/** Rows of `dtype`: `batch` rows of `n`, from `values` in turn. */
function rowsOf(dtype: DType, batch: number, n: number, values: readonly number[]): { data: V; shape: number[] } {
  const data = new DTYPES[dtype].arrayType(batch * n) as unknown as V;
  for (let i = 0; i < data.length; i++) data[i] = values[i % values.length]!;
  return { data, shape: [batch, n] };
}

function compare(w: unknown, j: unknown): void {
  if (typeof w === 'string' || typeof j === 'string') {
    expect(w).toEqual(j);
    return;
  }
  const results = (r: unknown) => (Array.isArray(r) ? r : [r]).map((x) => (x as { data?: ArrayLike<number> }).data ?? (x as ArrayLike<number>));
  const [a, b] = [results(w), results(j)];
  expect(a.length).toBe(b.length);
  a.forEach((x, i) => expectSameArrays(x, b[i]!));
}

interface Case {
  readonly name: string;
  readonly signature: string;
  readonly layout: string;
  readonly kernel: (...args: never[]) => void;
  readonly env?: Record<string, unknown>;
  /** The array input's type (every array input is a row of it), and the scalars' (one per row, or one for all). */
  readonly dtype: DType;
  readonly arrays: number;
  readonly scalars?: DType;
  /** Whether its loop must run along the row (else the case checks a loop that must not). */
  readonly along: boolean;
  /** What `explain` must also say (the lanes it runs in). */
  readonly explains?: string;
}

/** softmax of a row as the corpus writes it (bench/corpus/kernels.ts): a max, then exp and a sum, then a map. */
const softmaxOfTheCorpus = (x: V, out: V) => {
  let m = x[0]!;
  for (let i = 1; i < x.length; i++) m = Math.max(m, x[i]!);
  let sum = 0;
  for (let i = 0; i < x.length; i++) {
    out[i] = Math.exp(x[i]! - m);
    sum += out[i]!;
  }
  for (let i = 0; i < x.length; i++) out[i] = out[i]! / sum;
};

const sq = (v: number) => v * v;
const halfOrZero = (v: number) => {
  if (v > 0) return v / 2;
  return 0;
};

const CASES: Case[] = [
  {
    name: 'map: int32 plus a scalar per row (Numba\'s guvectorize example)', signature: 'void(int32[:], int32, int32[:])', layout: '(n),()->(n)', dtype: 'int32', arrays: 1, scalars: 'int32', along: true,
    kernel: (x: V, y: number, res: V) => {
      for (let i = 0; i < x.length; i++) res[i] = x[i]! + y;
    },
  },
  {
    name: 'stencil: float32 3-tap blur, edges apart', signature: 'void(float32[:], float32[:])', layout: '(n)->(n)', dtype: 'float32', arrays: 1, along: true,
    kernel: (x: V, out: V) => {
      const n = x.length;
      out[0] = (x[0]! + x[1]!) / 2;
      for (let i = 1; i < n - 1; i++) out[i] = (x[i - 1]! + x[i]! + x[i + 1]!) / 3;
      out[n - 1] = (x[n - 2]! + x[n - 1]!) / 2;
    },
  },
  {
    name: 'stencil: float64 log returns', signature: 'void(float64[:], float64[:])', layout: '(n)->(n)', dtype: 'float64', arrays: 1, along: true,
    kernel: (p: V, out: V) => {
      if (p.length > 0) out[0] = 0;
      for (let i = 1; i < p.length; i++) out[i] = Math.log(p[i]! / p[i - 1]!);
    },
  },
  {
    name: 'stencil: float64 5 taps (two vectors per step)', signature: 'void(float64[:], float64[:])', layout: '(n)->(n)', dtype: 'float64', arrays: 1, along: true,
    kernel: (x: V, out: V) => {
      for (let i = 0; i < x.length; i++) out[i] = x[i]!;
      for (let i = 2; i < x.length - 2; i++) out[i] = 0.1 * x[i - 2]! + 0.2 * x[i - 1]! + 0.4 * x[i]! + 0.2 * x[i + 1]! + 0.1 * x[i + 2]!;
    },
  },
  {
    name: 'int16 wrap: a gradient into int16', signature: 'void(int16[:], int16[:])', layout: '(n)->(n)', dtype: 'int16', arrays: 1, along: true,
    kernel: (x: V, out: V) => {
      for (let i = 0; i < x.length; i++) out[i] = 0;
      for (let i = 1; i < x.length - 1; i++) out[i] = x[i + 1]! - x[i - 1]!;
    },
  },
  {
    name: 'uint8c clamp: scaled bytes', signature: 'void(uint8[:], float32, uint8c[:])', layout: '(n),()->(n)', dtype: 'uint8', arrays: 1, scalars: 'float32', along: true,
    kernel: (x: V, k: number, out: V) => {
      for (let i = 0; i < x.length; i++) out[i] = x[i]! * k - 3;
    },
  },
  {
    name: 'int8 and uint16 rows: two inputs of narrow types', signature: 'void(int8[:], int8[:], uint16[:])', layout: '(n),(n)->(n)', dtype: 'int8', arrays: 2, along: true,
    kernel: (a: V, b: V, out: V) => {
      for (let i = 0; i < a.length; i++) out[i] = a[i]! * b[i]! + (a[i]! << 3);
    },
  },
  {
    name: '16-bit lanes: a gradient of int16 wrapping into int16', signature: 'void(int16[:], int16[:])', layout: '(n)->(n)', dtype: 'int16', arrays: 1, along: true, explains: '8 elements per vector in 16-bit lanes',
    kernel: (x: V, out: V) => {
      for (let i = 1; i < x.length - 1; i++) out[i] = x[i + 1]! - x[i - 1]! * 3;
    },
  },
  {
    name: '16-bit lanes: a clamp between per-row int16 bounds, saturating sum', signature: 'void(int16[:], int16, int16[:])', layout: '(n),()->(n)', dtype: 'int16', arrays: 1, scalars: 'int16', along: true, explains: 'in 16-bit lanes',
    kernel: (x: V, k: number, out: V) => {
      for (let i = 0; i < x.length; i++) {
        const s = Math.min(Math.max(x[i]! + k, -32768), 32767);
        out[i] = Math.max(s, k);
      }
    },
  },
  {
    name: '8-bit lanes: a threshold of bytes', signature: 'void(uint8[:], uint8, uint8[:])', layout: '(n),()->(n)', dtype: 'uint8', arrays: 1, scalars: 'uint8', along: true, explains: '16 elements per vector in 8-bit lanes',
    kernel: (x: V, t: number, out: V) => {
      for (let i = 0; i < x.length; i++) out[i] = x[i]! > t ? 255 : 0;
    },
  },
  {
    name: '8-bit lanes: a saturating sum of bytes into uint8c, a stencil', signature: 'void(uint8[:], uint8, uint8c[:])', layout: '(n),()->(n)', dtype: 'uint8', arrays: 1, scalars: 'uint8', along: true, explains: 'in 8-bit lanes',
    kernel: (x: V, t: number, out: V) => {
      for (let i = 0; i < x.length - 1; i++) out[i] = x[i + 1]! + t;
    },
  },
  {
    name: 'int8 rows: wraps in 16-bit lanes (a product) into int8', signature: 'void(int8[:], int8[:], int8[:])', layout: '(n),(n)->(n)', dtype: 'int8', arrays: 2, along: true, explains: 'in 16-bit lanes',
    kernel: (a: V, b: V, out: V) => {
      for (let i = 0; i < a.length; i++) out[i] = a[i]! * b[i]! - (a[i]! << 2);
    },
  },
  {
    name: 'uint32 rows: wrap and unsigned compare', signature: 'void(uint32[:], uint32, uint32[:])', layout: '(n),()->(n)', dtype: 'uint32', arrays: 1, scalars: 'uint32', along: true,
    kernel: (x: V, y: number, out: V) => {
      for (let i = 0; i < x.length; i++) out[i] = x[i]! > y ? x[i]! - y : (x[i]! ^ y) >>> 1;
    },
  },
  {
    name: 'float32 rounding: float32 rows through float64 (Math.sqrt, a float64 scalar)', signature: 'void(float32[:], float64, float32[:])', layout: '(n),()->(n)', dtype: 'float32', arrays: 1, scalars: 'float64', along: true,
    kernel: (x: V, k: number, out: V) => {
      for (let i = 0; i < x.length; i++) out[i] = Math.sqrt(x[i]! * x[i]! + k) / 3;
    },
  },
  {
    name: 'let and Math in lanes: float32 softplus-like map with min/max and a select', signature: 'void(float32[:], float32[:])', layout: '(n)->(n)', dtype: 'float32', arrays: 1, along: true,
    kernel: (x: V, out: V) => {
      for (let i = 0; i < x.length; i++) {
        const v = Math.min(Math.max(x[i]!, -20), 20);
        let w = v * 0.5;
        w = w > 1 ? Math.exp(-w) : w;
        out[i] = v + w;
      }
    },
  },
  {
    name: 'helpers inlined', signature: 'void(float64[:], float64, float64[:])', layout: '(n),()->(n)', dtype: 'float64', arrays: 1, scalars: 'float64', along: true, env: { sq, halfOrZero },
    kernel: (x: V, y: number, out: V) => {
      for (let i = 0; i < x.length; i++) out[i] = sq(x[i]!) + halfOrZero(x[i]! - y);
    },
  },
  {
    name: 'two outputs, one read back at [i]', signature: 'void(float32[:], float32[:], float32[:])', layout: '(n)->(n),(n)', dtype: 'float32', arrays: 1, along: true,
    kernel: (x: V, a: V, b: V) => {
      for (let i = 0; i < x.length; i++) {
        a[i] = x[i]! * 2;
        b[i] = a[i]! + x[i]!;
      }
    },
  },
  {
    name: 'softmax from -Infinity: the max of lanes, the sum lane by lane, the normalising map', signature: 'void(float32[:], float32[:])', layout: '(n)->(n)', dtype: 'float32', arrays: 1, along: true,
    explains: '2 elements per vector × 2 vectors per step (`m` a max of lanes); the loop at line 5 in SIMD along the row, 2 elements per vector × 2 vectors per step (`sum` in order from memory after the vector loop)',
    kernel: (x: V, out: V) => {
      let m = -Infinity;
      for (let i = 0; i < x.length; i++) m = Math.max(m, x[i]!);
      let sum = 0;
      for (let i = 0; i < x.length; i++) {
        out[i] = Math.exp(x[i]! - m);
        sum += out[i]!;
      }
      for (let i = 0; i < x.length; i++) out[i] = out[i]! / sum;
    },
  },
  {
    name: 'ifs: stores under lane masks, one branch storing nothing', signature: 'void(int16[:], int16, int16[:], float32[:])', layout: '(n),()->(n),(n)', dtype: 'int16', arrays: 1, scalars: 'int16', along: true,
    kernel: (x: V, t: number, a: V, b: V) => {
      for (let i = 0; i < x.length; i++) {
        let v = x[i]! * 3;
        if (x[i]! > t) {
          a[i] = v;
          v = v / 7;
        } else if (x[i]! < -t) b[i] = -v;
        else {
          a[i] = t;
          b[i] = v + 0.5;
        }
      }
    },
  },
  {
    name: 'the counter as a value (float64 lanes of consecutive counts)', signature: 'void(float32[:], float32[:])', layout: '(n)->(n)', dtype: 'float32', arrays: 1, along: true,
    kernel: (x: V, out: V) => {
      for (let i = 0; i < x.length; i++) out[i] = x[i]! * i + i / 3 - (x.length - i);
    },
  },
  {
    name: 'softmax of the corpus: the max from x[0], the loops from 1 and 0', signature: 'void(float32[:], float32[:])', layout: '(n)->(n)', dtype: 'float32', arrays: 1, along: true, explains: '`m` a max of lanes',
    kernel: softmaxOfTheCorpus,
  },
  {
    name: 'logsumexp of float64: a max of 2 lanes; its sum of exp, storing nothing, scalar', signature: 'void(float64[:], float64[:])', layout: '(n)->()', dtype: 'float64', arrays: 1, along: true,
    explains: 'the loop at line 3 in SIMD along the row, 2 elements per vector × 2 vectors per step (`m` a max of lanes); a loop whose output',
    kernel: (x: V, out: V) => {
      let m = -Infinity;
      for (let i = 0; i < x.length; i++) m = Math.max(m, x[i]!);
      let sum = 0;
      for (let i = 0; i < x.length; i++) sum += Math.exp(x[i]! - m);
      out[0] = m + Math.log(sum);
    },
  },
  {
    name: 'range of float32 rows (NaN, ±0) in float64: min and max in one loop, the variable second or first', signature: 'void(float32[:], float32[:], float32[:])', layout: '(n)->(),()', dtype: 'float32', arrays: 1, along: true, explains: '`a` a min of lanes, `b` a max of lanes',
    kernel: (x: V, lo: V, hi: V) => {
      let a = Infinity;
      let b = -Infinity;
      for (let i = 0; i < x.length; i++) {
        a = Math.min(x[i]!, a);
        b = Math.max(b, x[i]!);
      }
      lo[0] = a;
      hi[0] = b;
    },
  },
  {
    name: 'float64 sum, difference and product in one loop beside a map, with a per-row scalar', signature: 'void(float64[:], float64, float64[:], float64[:])', layout: '(n),()->(n),()', dtype: 'float64', arrays: 1, scalars: 'float64', along: true, explains: 'lane by lane in order',
    kernel: (x: V, k: number, y: V, out: V) => {
      let s = 0.1;
      let d = 0;
      let p = 1;
      for (let i = 0; i < x.length; i++) {
        const v = x[i]! * k;
        s += v;
        y[i] = v - 1;
        d = d - v * v;
        p = (1 + x[i]! / 64) * p;
      }
      out[0] = s + d * p;
    },
  },
  {
    name: 'float32 values promoted into a float64 sum beside a float32 map: 4 lanes, each promoted in order', signature: 'void(float32[:], float32[:], float32[:])', layout: '(n)->(n),()', dtype: 'float32', arrays: 1, along: true, explains: '4 elements per vector × 2 vectors per step (`s` lane by lane in order)',
    kernel: (x: V, y: V, out: V) => {
      let s = 0;
      for (let i = 0; i < x.length; i++) {
        y[i] = Math.abs(x[i]!);
        s += y[i]! - 1;
      }
      out[0] = s;
    },
  },
  {
    name: 'a sum of the output\'s elements before the loop stores them: lane by lane, not from memory', signature: 'void(float64[:], float64[:], float64[:])', layout: '(n)->(n),()', dtype: 'float64', arrays: 1, along: true, explains: '(`s` lane by lane in order)',
    kernel: (x: V, y: V, out: V) => {
      let s = 0;
      for (let i = 0; i < x.length; i++) {
        s += y[i]!;
        y[i] = x[i]! * 2;
      }
      out[0] = s;
    },
  },
  {
    name: 'float64 sums of an input read ahead and behind, beside a map: in order from memory', signature: 'void(float64[:], float64[:], float64[:])', layout: '(n)->(n),()', dtype: 'float64', arrays: 1, along: true,
    explains: '(`s` in order from memory after the vector loop, `t` in order from memory after the vector loop)',
    kernel: (x: V, y: V, out: V) => {
      let s = 0;
      let t = 1;
      for (let i = 1; i < x.length - 2; i++) {
        y[i] = x[i]! * 2;
        s += x[i + 2]!;
        t -= x[i - 1]!;
      }
      out[0] = s + 3 * t;
    },
  },
  {
    name: 'float32 sums of an input read ahead, promoted, beside a map: in order from memory', signature: 'void(float32[:], float32[:], float64[:])', layout: '(n)->(n),()', dtype: 'float32', arrays: 1, along: true,
    explains: '4 elements per vector × 2 vectors per step (`s` in order from memory after the vector loop)',
    kernel: (x: V, y: V, out: V) => {
      let s = 0;
      for (let i = 0; i < x.length - 3; i++) {
        y[i] = x[i]! + 1;
        s += x[i + 3]!;
      }
      out[0] = s;
    },
  },
  {
    name: 'a loop that only sums (a row dot): stays in rows in lanes', signature: 'void(float32[:], float32[:], float32[:])', layout: '(n),(n)->()', dtype: 'float32', arrays: 2, along: false,
    kernel: (a: V, b: V, out: V) => {
      let acc = 0;
      for (let i = 0; i < a.length - 1; i++) acc += a[i]! * b[i + 1]!;
      out[0] = acc;
    },
  },
  {
    name: 'a float32 max beside a float64 map: the max in lanes 0–1 of 4', signature: 'void(float32[:], float64, float32[:], float32[:])', layout: '(n),()->(n),()', dtype: 'float32', arrays: 1, scalars: 'float64', along: true, explains: '2 elements per vector × 2 vectors per step (`m` a max of lanes)',
    kernel: (x: V, k: number, out: V, top: V) => {
      let m = x.length > 0 ? x[0]! : 0;
      for (let i = 0; i < x.length; i++) {
        m = Math.max(m, x[i]!);
        out[i] = x[i]! * k + k;
      }
      top[0] = m;
    },
  },
  {
    name: 'a sum under an `if`: stays in rows in lanes', signature: 'void(float64[:], float64[:], float64[:])', layout: '(n)->(n),()', dtype: 'float64', arrays: 1, along: false,
    kernel: (x: V, y: V, out: V) => {
      let s = 0;
      for (let i = 0; i < x.length; i++) {
        y[i] = x[i]! * 3;
        if (x[i]! > 0) s += x[i]!;
      }
      out[0] = s;
    },
  },
  {
    name: 'a value subtracted from each element (`s = x[i] − s`): stays in rows in lanes', signature: 'void(float64[:], float64[:], float64[:])', layout: '(n)->(n),()', dtype: 'float64', arrays: 1, along: false,
    kernel: (x: V, y: V, out: V) => {
      let s = 0;
      for (let i = 0; i < x.length; i++) {
        s = x[i]! - s;
        y[i] = x[i]! + 1;
      }
      out[0] = s;
    },
  },
  {
    name: 'a sum whose term reads the sum: stays in rows in lanes', signature: 'void(float64[:], float64[:], float64[:])', layout: '(n)->(n),()', dtype: 'float64', arrays: 1, along: false,
    kernel: (x: V, y: V, out: V) => {
      let s = 1;
      for (let i = 0; i < x.length; i++) {
        y[i] = x[i]! / 2;
        s += x[i]! * s;
      }
      out[0] = s;
    },
  },
  {
    name: 'a max updated twice in the loop: stays in rows in lanes', signature: 'void(float32[:], float32[:])', layout: '(n)->()', dtype: 'float32', arrays: 1, along: false,
    kernel: (x: V, out: V) => {
      let m = -Infinity;
      for (let i = 0; i < x.length; i++) {
        m = Math.max(m, x[i]!);
        m = Math.max(m, -x[i]!);
      }
      out[0] = m;
    },
  },
  {
    name: 'a value carried along the row: stays in rows in lanes', signature: 'void(float32[:], float32[:])', layout: '(n)->(n)', dtype: 'float32', arrays: 1, along: false,
    kernel: (x: V, out: V) => {
      let s = 0;
      for (let i = 0; i < x.length; i++) {
        s += x[i]!;
        out[i] = s;
      }
    },
  },
  {
    name: 'the output read one behind: stays in rows in lanes', signature: 'void(float32[:], float32, float32[:])', layout: '(n),()->(n)', dtype: 'float32', arrays: 1, scalars: 'float32', along: false,
    kernel: (x: V, a: number, out: V) => {
      if (x.length > 0) out[0] = x[0]!;
      for (let i = 1; i < x.length; i++) out[i] = a * x[i]! + (1 - a) * out[i - 1]!;
    },
  },
];

/** Random batches, row lengths, values and scalars (per row or one for all); Wasm along the row ≡ JS. */
function checkCase(c: Case, numRuns: number): void {
  const f = guvectorize([c.signature], c.layout, c.env ? { env: c.env } : {})(c.kernel) as unknown as Ufunc;
  const scalarType = c.scalars;
  fc.assert(
    fc.property(
      fc.integer({ min: 0, max: 6 }), fc.constantFrom(...ROW_LENGTHS), fc.boolean(),
      fc.array(valuesOf(c.dtype), { minLength: 1, maxLength: 70 }), fc.array(valuesOf(scalarType ?? 'float64'), { minLength: 1, maxLength: 8 }),
      (batch, n, oneScalar, values, scalars) => {
        const args: unknown[] = Array.from({ length: c.arrays }, (_, k) => rowsOf(c.dtype, batch, n, k === 0 ? values : [...values].reverse()));
        if (scalarType) args.push(oneScalar ? scalars[0]! : { data: rowsOf(scalarType, batch, 1, scalars).data, shape: [batch] });
        const [w, j] = wasmAndJs(() => f.sync(...args));
        compare(w, j);
      },
    ),
    { numRuns },
  );
  // The form asked for is the one that ran.
  setEngineMode('wasm');
  const args: unknown[] = Array.from({ length: c.arrays }, () => rowsOf(c.dtype, 2, 64, [1, 2, 3]));
  if (scalarType) args.push(1);
  const explained = f.explain(...args);
  expect(explained.includes('SIMD along the row')).toBe(c.along);
  if (c.explains) expect(explained).toContain(c.explains);
}

describe('per-row loops in SIMD lanes along the row are bit-identical to the JS engine', () => {
  it.each(CASES.map((c) => [c.name, c] as const))('%s', (_, c) => checkCase(c, 60), 30_000);
});

describe('edges of the vector loop', () => {
  it('reads out of bounds at either end of a row throw as on the JS engine, after the same elements', () => {
    const before = guvectorize(['void(float32[:], float32[:])'], '(n)->(n)')((x: V, out: V) => {
      for (let i = 0; i < x.length; i++) out[i] = x[i - 1]! + x[i]!;
    }) as unknown as Ufunc;
    const after = guvectorize(['void(float32[:], float32[:])'], '(n)->(n)')((x: V, out: V) => {
      for (let i = 0; i < x.length; i++) out[i] = x[i]! + x[i + 2]!;
    }) as unknown as Ufunc;
    for (const f of [before, after]) {
      for (const n of [1, 5, 64]) {
        const x = rowsOf('float32', 3, n, [0.5, 1.5, -2]);
        const run = () => {
          const out = { data: new Float32Array(3 * n).fill(7), shape: [3, n] };
          try {
            f.sync(x, { out });
          } catch (e) {
            return [String(e), Array.from(out.data)];
          }
          return ['no error', Array.from(out.data)];
        };
        const [w, j] = wasmAndJs(run);
        expect((w as [string, number[]])[0]).toMatch(/out of bounds/);
        expect(w).toEqual(j);
      }
    }
  });

  it('in place, and outputs overlapping an input by an element, in Wasm memory: the JS engine\'s results', () => {
    const stencil = guvectorize(['void(float64[:], float64[:])'], '(n)->(n)')((x: V, out: V) => {
      for (let i = 1; i < x.length - 1; i++) out[i] = x[i - 1]! + 2 * x[i]! + x[i + 1]!;
    }) as unknown as Ufunc;
    const ahead = guvectorize(['void(float64[:], float64[:])'], '(n)->(n)')((x: V, out: V) => {
      for (let i = 0; i < x.length - 3; i++) out[i] = x[i]! * 0.5 + x[i + 3]!;
    }) as unknown as Ufunc;
    for (const f of [stencil, ahead]) {
      for (const shift of [0, 1, -1, 3]) {
        for (const n of [9, 64, 65]) {
          const run = () => {
            // In Wasm memory: operands elsewhere are copied in apart (block-staging.ts), so never overlap there.
            const data = sharedArray(2 * n + 8, 'float64') as Float64Array;
            data.set(Float64Array.from({ length: 2 * n + 8 }, (_, i) => Math.sin(i) * 10));
            // Views of the one array (the library copies an input that overlaps `out` as another array).
            const x = { data, shape: [2, n], strides: [n, 1], offset: 4 };
            const out = { data, shape: [2, n], strides: [n, 1], offset: 4 + shift };
            f.sync(x, { out });
            return data;
          };
          const [w, j] = wasmAndJs(run);
          expectSameArrays(w as Float64Array, j as Float64Array);
        }
      }
    }
  });

  it('reductions: float sums in the scalar loop\'s order, on values whose sum depends on it', () => {
    const sum64 = guvectorize(['void(float64[:], float64[:], float64[:])'], '(n)->(n),()')((x: V, y: V, out: V) => {
      let s = 0;
      for (let i = 0; i < x.length; i++) {
        s += x[i]!;
        y[i] = -x[i]!;
      }
      out[0] = s;
    }) as unknown as Ufunc;
    const sum32 = guvectorize(['void(float32[:], float32[:], float64[:])'], '(n)->(n),()')((x: V, y: V, out: V) => {
      let s = 0;
      let d = 0;
      for (let i = 0; i < x.length; i++) {
        y[i] = x[i]! * 2;
        s += x[i]!;
        d -= y[i]! * 0.75;
      }
      out[0] = s + d;
    }) as unknown as Ufunc;
    // Each rotation of the pattern puts a large term and its cancelling one in other lanes.
    const pattern = [2 ** 53, 1, -(2 ** 53), 1, 2 ** 24, 3, -(2 ** 24), 0.5, 1e16, -1e16, 7];
    for (const n of [8, 9, 64, 65, 1000]) {
      for (let r = 0; r < pattern.length; r++) {
        const values = [...pattern.slice(r), ...pattern.slice(0, r)];
        for (const [f, dtype] of [[sum64, 'float64'], [sum32, 'float32']] as const) {
          const x = rowsOf(dtype, 2, n, values);
          const [w, j] = wasmAndJs(() => (f.sync(x) as { data: Float64Array }[])[1]!.data);
          expectSameArrays(w as Float64Array, j as Float64Array);
        }
      }
    }
    setEngineMode('wasm');
    expect(sum32.explain(rowsOf('float32', 2, 64, [1]))).toContain('4 elements per vector × 2 vectors per step (`s` in order from memory after the vector loop, `d` lane by lane in order)');
  });

  it('reductions: max and min of rows of zeros of both signs, NaN and infinities, in every lane and order', () => {
    const range = (dtype: 'float32' | 'float64') =>
      guvectorize([`void(${dtype}[:], ${dtype}[:], ${dtype}[:])`], '(n)->(n),()')((x: V, y: V, out: V) => {
        let hi = x[0]!;
        let lo = x[0]!;
        for (let i = 0; i < x.length; i++) {
          hi = Math.max(hi, x[i]!);
          y[i] = x[i]! * 2;
          lo = Math.min(x[i]!, lo);
        }
        out[0] = hi + 1 / hi + 2 * (lo + 1 / lo); // 1/±0 tells the zeros apart
      }) as unknown as Ufunc;
    const patterns = [[-0, 0], [0, -0], [-0, -0, -0, 0], [0, 0, -0], [-1, -0, -2, 0, -3], [-Infinity, -0], [NaN, -1, 0], [-1, -2, NaN, -0], [Infinity, -Infinity], [-0]];
    for (const dtype of ['float32', 'float64'] as const) {
      const f = range(dtype);
      for (const pattern of patterns) {
        for (const n of [1, 3, 4, 5, 9, 64]) {
          for (let r = 0; r < pattern.length; r++) {
            const values = [...pattern.slice(r), ...pattern.slice(0, r)];
            // One value of the pattern at a time in a row of -5: each lane in turn meets it.
            for (const at of [0, 1, 2, 3, n - 1]) {
              if (at >= n) continue;
              const row = Array.from({ length: n }, (_, i) => values[i % values.length]!);
              const lone = Array.from({ length: n }, (_, i) => (i === at ? values[0]! : -5));
              const x = rowsOf(dtype, 2, n, [...row, ...lone]);
              const [w, j] = wasmAndJs(() => (f.sync(x) as { data: Float64Array }[])[1]!.data);
              expectSameArrays(w as Float64Array, j as Float64Array);
            }
          }
        }
      }
      setEngineMode('wasm');
      expect(f.explain(rowsOf(dtype, 2, 64, [1]))).toContain('(`hi` a max of lanes, `lo` a min of lanes)');
    }
  }, 30_000);

  it('reductions: softmax with fastmath (float32 exp) along the row: the JS engine\'s results', () => {
    const softmax = guvectorize(['void(float32[:], float32[:])'], '(n)->(n)', { fastmath: true })(softmaxOfTheCorpus) as unknown as Ufunc;
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 5 }), fc.constantFrom(...ROW_LENGTHS.filter((n) => n > 0)), fc.array(valuesOf('float32'), { minLength: 1, maxLength: 70 }), (batch, n, values) => {
        const x = rowsOf('float32', batch, n, values);
        const [w, j] = wasmAndJs(() => (softmax.sync(x) as { data: Float32Array }).data);
        expectSameArrays(w as Float32Array, j as Float32Array);
      }),
      { numRuns: 40 },
    );
    setEngineMode('wasm');
    expect(softmax.explain(rowsOf('float32', 2, 64, [1]))).toContain('(`sum` in order from memory after the vector loop)');
  }, 30_000);

  it('reductions: a read past either end of a row throws as on the JS engine, after the same stores', () => {
    const ahead = guvectorize(['void(float64[:], float64[:], float64[:])'], '(n)->(n),()')((x: V, out: V, total: V) => {
      let s = 0;
      let m = -Infinity;
      for (let i = 0; i < x.length; i++) {
        out[i] = x[i]! * 2;
        s += x[i + 1]!;
        m = Math.max(m, x[i]!);
      }
      total[0] = s + m;
    }) as unknown as Ufunc;
    const behind = guvectorize(['void(float32[:], float32[:])'], '(n)->()')((x: V, total: V) => {
      let m = -Infinity;
      for (let i = 0; i < x.length; i++) m = Math.max(m, x[i - 2]!);
      total[0] = m;
    }) as unknown as Ufunc;
    for (const n of [1, 5, 64, 1000]) {
      const x = rowsOf('float64', 3, n, [0.5, 1.5, -2, NaN]);
      const run = () => {
        const out = { data: new Float64Array(3 * n).fill(7), shape: [3, n] };
        const total = { data: new Float64Array(3).fill(7), shape: [3] };
        try {
          ahead.sync(x, { out: [out, total] });
        } catch (e) {
          return [String(e), Array.from(out.data), Array.from(total.data)];
        }
        return ['no error', Array.from(out.data)];
      };
      const [w, j] = wasmAndJs(run);
      expect((w as string[])[0]).toMatch(/out of bounds/);
      expect(w).toEqual(j);
      const [bw, bj] = wasmAndJs(() => {
        try {
          return behind.sync(rowsOf('float32', 2, n, [1, -0, 0]));
        } catch (e) {
          return String(e);
        }
      });
      expect(bw).toMatch(/out of bounds/);
      expect(bw).toEqual(bj);
    }
    setEngineMode('wasm');
    expect(ahead.explain(rowsOf('float64', 2, 64, [1]))).toContain('(`s` in order from memory after the vector loop, `m` a max of lanes)');
  });

  it('reductions: softmax in place and on rows overlapping by an element, in Wasm memory, strided and reversed', () => {
    const softmax = guvectorize(['void(float32[:], float32[:])'], '(n)->(n)')(softmaxOfTheCorpus) as unknown as Ufunc;
    for (const shift of [0, 1, -1, 5]) {
      for (const n of [9, 64, 65]) {
        const run = () => {
          const data = sharedArray(2 * n + 16, 'float32') as Float32Array;
          data.set(Float32Array.from({ length: 2 * n + 16 }, (_, i) => Math.sin(i) * 10));
          softmax.sync({ data, shape: [2, n], strides: [n, 1], offset: 8 }, { out: { data, shape: [2, n], strides: [n, 1], offset: 8 + shift } });
          return data;
        };
        const [w, j] = wasmAndJs(run);
        expectSameArrays(w as Float32Array, j as Float32Array);
      }
    }
    const data = Float32Array.from({ length: 200 }, (_, i) => (i % 7 === 3 ? -0 : Math.cos(i) * 30));
    for (const x of [{ data, shape: [4, 25], strides: [50, 2], offset: 0 }, { data, shape: [2, 64], strides: [64, -1], offset: 63 }]) {
      const [w, j] = wasmAndJs(() => (softmax.sync(x) as { data: Float32Array }).data);
      expectSameArrays(w as Float32Array, j as Float32Array);
    }
  });

  it('ragged rows: a second input shorter or longer than the output, read under a test of its length', () => {
    const f = guvectorize(['void(float64[:], float64[:], float64[:])'], '(n),(m)->(n)')((x: V, y: V, out: V) => {
      for (let i = 0; i < x.length; i++) out[i] = x[i]! * 2 + (i < y.length ? y[i]! : -1);
    }) as unknown as Ufunc;
    const strict = guvectorize(['void(float64[:], float64[:], float64[:])'], '(n),(m)->(n)')((x: V, y: V, out: V) => {
      for (let i = 0; i < x.length; i++) out[i] = x[i]! - y[i]!;
    }) as unknown as Ufunc;
    for (const [n, m] of [[64, 61], [65, 64], [9, 20], [3, 0], [1000, 999]] as const) {
      const x = rowsOf('float64', 3, n, [0.5, -1.25, 3, NaN, -0]);
      const y = rowsOf('float64', 3, m, [2, 7.5, Infinity]);
      for (const g of [f, strict]) {
        const [w, j] = wasmAndJs(() => g.sync(x, y));
        compare(w, j);
      }
    }
    setEngineMode('wasm');
    expect(f.explain(rowsOf('float64', 2, 64, [1]), rowsOf('float64', 2, 60, [1]))).toContain('SIMD along the row');
  });

  it('strided and reversed rows run the scalar loop, with the same results', () => {
    const f = guvectorize(['void(float32[:], float32, float32[:])'], '(n),()->(n)')((x: V, y: number, out: V) => {
      for (let i = 0; i < x.length; i++) out[i] = x[i]! * y;
    }) as unknown as Ufunc;
    const data = Float32Array.from({ length: 200 }, (_, i) => i - 100.25);
    for (const x of [{ data, shape: [4, 25], strides: [50, 2], offset: 0 }, { data, shape: [2, 64], strides: [64, -1], offset: 63 }]) {
      const [w, j] = wasmAndJs(() => (f.sync(x, 3) as { data: Float32Array }).data);
      expectSameArrays(w as Float32Array, j as Float32Array);
    }
  });

  it('a per-row scalar that is NaN, ±Inf or −0 meets every element as in JS', () => {
    const f = guvectorize(['void(float32[:], float32, float32[:])'], '(n),()->(n)')((x: V, y: number, out: V) => {
      for (let i = 0; i < x.length; i++) out[i] = x[i]! * y + y;
    }) as unknown as Ufunc;
    const scalars = Float32Array.from([NaN, Infinity, -Infinity, -0, 0, 1e-45]);
    const x = rowsOf('float32', 6, 65, [0, -0, 1, -1, NaN, Infinity, 3.5]);
    const [w, j] = wasmAndJs(() => (f.sync(x, { data: scalars, shape: [6] }) as { data: Float32Array }).data);
    expect(same(NaN, NaN)).toBe(true);
    expectSameArrays(w as Float32Array, j as Float32Array);
  });

  it('the parallel target\'s workers run loops along the row, bit-identical to the JS engine', async () => {
    setParallelOptions({ threshold: 0 });
    const make = (target: 'cpu' | 'parallel') =>
      guvectorize(['void(float32[:], float32, float32[:])'], '(n),()->(n)', { target })((x: V, k: number, out: V) => {
        for (let i = 1; i < x.length - 1; i++) out[i] = (x[i - 1]! + x[i]! * k + x[i + 1]!) / 3;
      });
    const cpu = make('cpu') as unknown as Ufunc;
    const parallel = make('parallel') as unknown as Ufunc & ((...args: unknown[]) => Promise<unknown>);
    for (const batch of [5, 257, 4099]) {
      const x = sharedArray(batch * 37, 'float32').map((_, i) => Math.sin(i) * 3);
      const table = { data: x, shape: [batch, 37] };
      setEngineMode('js');
      const expected = cpu.sync(table, 0.5) as { data: Float32Array };
      setEngineMode('wasm');
      expect(parallel.explain(table, 0.5)).toMatch(/running WebAssembly \(rows one after another, the loop at line 2 in SIMD along the row/);
      expectSameArrays((await parallel(table, 0.5) as { data: Float32Array }).data, expected.data);
    }
  });
});
