/**
 * Per-row (guvectorize) kernels vectorised over rows (emit-rows.ts) are bit-identical to the JS
 * engine: random batch and core sizes (0 included, batches that are not a multiple of the lanes),
 * random strides (reversed, spaced, broadcast rows), float32/float64/int32/uint32 values with
 * their edge cases, divergent conditions, helpers, local arrays, in-place and overlapping
 * outputs, and indices out of bounds in the middle of a block of rows.
 */
import fc from 'fast-check';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { type DType, DTYPES } from '../../../../src/dtypes.js';
import { engineMode, setEngineMode } from '../../../../src/targets/cpu/wasm/index.js';
import { guvectorize, setParallelOptions, sharedArray, shutdown } from '../../../../src/index.js';
import { DEFAULT_THRESHOLD } from '../../../../src/targets/parallel/index.js';
import { __testing as blockTesting } from '../../../../src/targets/cpu/wasm/block-staging.js';
import { __testing as rowTesting } from '../../../../src/targets/cpu/wasm/emit-rows.js';
import { expectSameArrays, wasmAndJs } from './same-values.js';
import { hermiteRow } from '../../../kernels.js';

const initialMode = engineMode();
afterEach(() => {
  setEngineMode(initialMode);
  blockTesting.setBlockBytes(undefined);
  rowTesting.setRowGroups(undefined);
  rowTesting.setNarrowDoubles(true);
  rowTesting.setFloatPairs(undefined);
});
afterAll(async () => {
  setParallelOptions({ threshold: DEFAULT_THRESHOLD });
  await shutdown();
});

type Vector = { [i: number]: number; length: number };
type Matrix = { [i: number]: Vector; shape: number[] };
interface View {
  data: ArrayLike<number>;
  shape: number[];
  strides: number[];
  offset: number;
}

function valuesOf(dtype: DType): fc.Arbitrary<number> {
  switch (dtype) {
    case 'float64':
      return fc.oneof(fc.double(), fc.double({ min: -4, max: 4, noNaN: true }), fc.constantFrom(0.5, -0.5, 2.5, 2 ** 31, 1e300, -0, 5e-324));
    case 'float32':
      return fc.oneof(fc.float(), fc.float({ min: -4, max: 4, noNaN: true }), fc.constantFrom(0.5, -0.5, 2.5, 2 ** 31, -0, 1e-45)).map(Math.fround);
    case 'int32':
      return fc.oneof(fc.integer(), fc.integer({ min: -9, max: 9 }), fc.constantFrom(-2147483648, 2147483647));
    case 'uint32':
      return fc.oneof(fc.nat({ max: 4294967295 }), fc.constantFrom(0, 4294967295, 2147483648));
    case 'int16':
      return fc.oneof(fc.integer({ min: -32768, max: 32767 }), fc.constantFrom(-32768, 32767, 0, -1));
    case 'uint8':
    case 'uint8c':
      return fc.oneof(fc.integer({ min: 0, max: 255 }), fc.constantFrom(0, 255));
    case 'int8':
      return fc.oneof(fc.integer({ min: -128, max: 127 }), fc.constantFrom(-128, 127, 0, -1));
    case 'uint16':
      return fc.oneof(fc.integer({ min: 0, max: 65535 }), fc.constantFrom(0, 65535, 32768));
    default:
      throw new Error(dtype);
  }
}

/** A random strided view (reversed or spaced axes, an offset) of `shape`, filled from `values`. */
function viewOf(dtype: DType, shape: number[], values: number[], layout: number[]): View {
  // layout[a]: 1 contiguous-ish, 2 spaced, -1 reversed; the last entry picks the offset.
  const steps = shape.map((_, a) => layout[a % layout.length]!);
  const strides = new Array<number>(shape.length);
  let span = 1;
  for (let a = shape.length - 1; a >= 0; a--) {
    strides[a] = span * steps[a]!;
    span *= Math.max(shape[a]!, 1) * Math.abs(steps[a]!);
  }
  const pad = 3;
  const data = new DTYPES[dtype].arrayType(span + 2 * pad) as unknown as { [i: number]: number; length: number };
  for (let i = 0; i < data.length; i++) data[i] = values[i % values.length]!;
  let offset = pad;
  shape.forEach((n, a) => {
    if (strides[a]! < 0 && n > 0) offset += (n - 1) * -strides[a]!;
  });
  return { data, shape, strides, offset };
}

function tendency(x: Vector, forcing: number, dxdt: Vector): void {
  const n = x.length;
  for (let i = 0; i < n; i++) dxdt[i] = (x[(i + 1) % n]! - x[(i + n - 2) % n]!) * x[(i + n - 1) % n]! - x[i]! + forcing;
}

function sumOf(x: Vector): number {
  let s = 0;
  for (let i = 0; i < x.length; i++) {
    if (i > 40) return s;
    s += x[i]!;
  }
  return s;
}

/** A difference of integers in a float64 local that holds only int32 values. */
function spread(a: number, b: number): number {
  let d = 0;
  d = (a - b) | 0;
  return d | 0;
}

/** A helper giving a double, from a per-row select. */
function blend(a: number, b: number): number {
  const w = a > b ? 0.25 : 0.75;
  return a * w + b * (1 - w);
}

/** A helper taking a double and giving a float32, with a float64 local of its own. */
function toFloat32(v: number, x: number): number {
  let w = v * 0.75;
  if (x > 100) w = -w;
  return Math.fround(w + x);
}

interface Case {
  readonly name: string;
  readonly signature: string;
  readonly layout: string;
  readonly kernel: (...args: never[]) => void;
  readonly env?: Record<string, unknown>;
  /** Per input: its dtype and core rank ('scalar' for `()` inputs), and whether it is per row or broadcast. */
  readonly inputs: readonly { dtype: DType; core: number }[];
  /** The lanes it must run in (`explain`), or undefined where it is expected to run scalar. */
  readonly lanes: 16 | 8 | 4 | 2 | undefined;
  /** 4 rows per vector with its float64 values in pairs of vectors (row-pairs.ts); else 2 rows without them. */
  readonly pairs?: true;
}

const CASES: Case[] = [
  {
    name: 'uint8 rows stretched to their maximum (a float64 scale in pairs of vectors, float → uint8 per row)',
    signature: 'void(uint8[:], uint8, uint8[:])',
    layout: '(n),()->(n)',
    kernel: ((x: Vector, lo: number, out: Vector) => {
      let m = 0;
      for (let i = 0; i < x.length; i++) m = Math.max(m, x[i]!);
      for (let i = 0; i < x.length; i++) out[i] = m > lo ? ((x[i]! - lo) * 255) / (m - lo) : x[i]! + lo;
    }) as never,
    inputs: [{ dtype: 'uint8', core: 1 }, { dtype: 'uint8', core: 0 }],
    lanes: 4,
    pairs: true,
  },
  {
    name: 'int16 rows: a saturating add of a per-row offset, and wrapping sums',
    signature: 'void(int16[:], int16, int16[:])',
    layout: '(n),()->(n)',
    kernel: ((x: Vector, k: number, out: Vector) => {
      for (let i = 0; i < x.length; i++) out[i] = Math.min(Math.max(x[i]! + k, -32768), 32767);
      for (let i = 1; i < x.length; i++) out[i] = out[i]! + out[i - 1]! * 3;
    }) as never,
    inputs: [{ dtype: 'int16', core: 1 }, { dtype: 'int16', core: 0 }],
    lanes: 8, // row-int-lanes.ts: a saturating add, then sums that only wrap
  },
  {
    name: 'a loop bound per row (masked), `continue` and `break` under per-row conditions',
    signature: 'void(float32[:], int32, float32[:])',
    layout: '(n),()->(n)',
    kernel: ((x: Vector, k: number, out: Vector) => {
      for (let i = 0; i < x.length; i++) out[i] = -1;
      let w = 1;
      // The update runs for lanes that took `continue`, as in JS.
      for (let i = 0; i < k && i < x.length; i++, w = w * 2) {
        if (x[i]! < 0) continue;
        if (x[i]! > 3) break;
        out[i] = x[i]! * 2;
      }
      // A uniform loop with a per-row `continue` runs masked too.
      for (let i = 0; i < x.length; i++) {
        if (x[i]! > 1) continue;
        out[i] = out[i]! - 0.5;
      }
      if (x.length > 0) out[0] = out[0]! + w;
      // Past the row's end where k > n: out of bounds, as in JS.
      for (let i = x.length - 2; i < k; i++) out[i] = out[i]! + 1;
    }) as never,
    inputs: [{ dtype: 'float32', core: 1 }, { dtype: 'int32', core: 0 }],
    lanes: 4,
    pairs: true,
  },
  {
    name: 'a while loop until convergence per row, a do-while per row, nested in a uniform loop',
    signature: 'void(float64[:], float64, float64[:])',
    layout: '(n),()->(n)',
    kernel: ((x: Vector, a: number, out: Vector) => {
      for (let i = 0; i < x.length; i++) {
        let y = x[i]!;
        let it = 0;
        while (Math.abs(y * y - a) > 1e-9 && it < 30) {
          y = 0.5 * (y + a / y);
          it++;
        }
        let z = 0;
        do {
          z += 2;
          if (z > 7 && y > 1) break;
        } while (z < it);
        out[i] = y + z * 1000;
      }
    }) as never,
    inputs: [{ dtype: 'float64', core: 1 }, { dtype: 'float64', core: 0 }],
    lanes: 2,
  },
  {
    name: 'the first index above a threshold (a `break` per row: a search, run scalar), (n),()->()',
    signature: 'void(float32[:], float32, float32[:])',
    layout: '(n),()->()',
    kernel: ((x: Vector, t: number, out: Vector) => {
      let idx = -1;
      for (let i = 0; i < x.length; i++) {
        if (x[i]! > t) {
          idx = i;
          break;
        }
      }
      out[0] = idx;
    }) as never,
    inputs: [{ dtype: 'float32', core: 1 }, { dtype: 'float32', core: 0 }],
    lanes: undefined,
  },
  {
    name: 'float32 iterations per element until a per-row test fails (4 lanes)',
    signature: 'void(float32[:], float32, float32[:])',
    layout: '(n),()->(n)',
    kernel: ((x: Vector, t: number, out: Vector) => {
      for (let i = 0; i < x.length; i++) {
        let v = x[i]!;
        let c = v * 0;
        while (v > t && c < 40) {
          v = v * 0.5 - 0.25;
          c += 1;
        }
        out[i] = v + c;
      }
    }) as never,
    inputs: [{ dtype: 'float32', core: 1 }, { dtype: 'float32', core: 0 }],
    lanes: 4,
  },
  {
    name: 'Hermite ()->(n), float32 (float64 inside, in pairs of vectors)',
    signature: 'void(float32, float32[:])',
    layout: '()->(n)',
    kernel: ((x: number, out: Vector) => {
      hermiteRow(x, out);
    }) as never,
    env: { hermiteRow },
    inputs: [{ dtype: 'float32', core: 0 }],
    lanes: 4,
    pairs: true,
  },
  {
    name: 'matmul (m,n),(n,p)->(m,p), float32 accumulating in float64',
    signature: 'void(float32[:,:], float32[:,:], float32[:,:])',
    layout: '(m,n),(n,p)->(m,p)',
    kernel: ((a: Matrix, b: Matrix, c: Matrix) => {
      for (let i = 0; i < a.shape[0]!; i++) {
        for (let j = 0; j < b.shape[1]!; j++) {
          let sum = 0;
          for (let k = 0; k < a.shape[1]!; k++) sum += a[i]![k]! * b[k]![j]!;
          c[i]![j] = sum;
        }
      }
    }) as never,
    inputs: [{ dtype: 'float32', core: 2 }, { dtype: 'float32', core: 2 }],
    lanes: 4,
    pairs: true,
  },
  {
    name: 'matmul, float32 accumulating in float32 (4 lanes)',
    signature: 'void(float32[:,:], float32[:,:], float32[:,:])',
    layout: '(m,n),(n,p)->(m,p)',
    kernel: ((a: Matrix, b: Matrix, c: Matrix) => {
      for (let i = 0; i < a.shape[0]!; i++) {
        for (let j = 0; j < b.shape[1]!; j++) {
          c[i]![j] = 0;
          for (let k = 0; k < a.shape[1]!; k++) c[i]![j] += a[i]![k]! * b[k]![j]!;
        }
      }
    }) as never,
    inputs: [{ dtype: 'float32', core: 2 }, { dtype: 'float32', core: 2 }],
    lanes: 4,
  },
  {
    name: 'Lorenz-96 RK2 with helpers and local arrays, float64',
    signature: 'void(float64[:], float64, float64[:])',
    layout: '(n),()->(n)',
    kernel: ((x: Vector, dt: number, out: Vector) => {
      const k = new Float64Array(x.length);
      const stage = new Float64Array(x.length);
      tendency(x, 8, k);
      for (let i = 0; i < x.length; i++) stage[i] = x[i]! + (dt / 2) * k[i]!;
      tendency(stage, 8, k);
      for (let i = 0; i < x.length; i++) out[i] = x[i]! + dt * k[i]!;
    }) as never,
    env: { tendency },
    inputs: [{ dtype: 'float64', core: 1 }, { dtype: 'float64', core: 0 }],
    lanes: 2,
  },
  {
    name: 'divergent conditions per row (masks), a value helper, a uniform break',
    signature: 'void(float32[:], float32, float32[:])',
    layout: '(n),()->(n)',
    kernel: ((x: Vector, t: number, out: Vector) => {
      for (let i = 0; i < x.length; i++) {
        if (i > 9) break;
        const v = x[i]!;
        if (v > t) out[i] = v * 2;
        else if (v < -t) {
          let s = 0;
          for (let j = 0; j < x.length; j++) s += x[j]! * j;
          out[i] = s;
        } else out[i] = v > 0 && t < 1 ? t : -v;
      }
      if (x.length > 2) out[0] = out[0]! + sumOf(x);
    }) as never,
    env: { sumOf },
    inputs: [{ dtype: 'float32', core: 1 }, { dtype: 'float32', core: 0 }],
    lanes: 4,
    pairs: true,
  },
  {
    name: 'Hermite as the kernel itself: a uniform value carried through a loop that carries no per-row value',
    signature: 'void(float32, float32[:])',
    layout: '()->(n)',
    kernel: hermiteRow as never,
    inputs: [{ dtype: 'float32', core: 0 }],
    lanes: 4,
    pairs: true,
  },
  {
    name: 'a counter declared outside its while loop (a uniform value carried), float32 times a double',
    signature: 'void(float32[:], float32[:])',
    layout: '(n)->(n)',
    kernel: ((x: Vector, out: Vector) => {
      let j = 0;
      while (j < x.length) {
        out[j] = x[j]! * j;
        j += 2;
      }
    }) as never,
    inputs: [{ dtype: 'float32', core: 1 }],
    lanes: 4,
    pairs: true,
  },
  {
    name: 'int32 arithmetic per row, a per-row scalar',
    signature: 'void(int32[:], int32, int32[:])',
    layout: '(n),()->(n)',
    kernel: ((x: Vector, k: number, out: Vector) => {
      for (let i = 0; i < x.length; i++) out[i] = Math.imul(x[i]!, k) + (x[i]! >> 2) - Math.min(x[i]!, k) + (x[i]! & 255) - (x[i]! < k ? x[i]! : k);
    }) as never,
    inputs: [{ dtype: 'int32', core: 1 }, { dtype: 'int32', core: 0 }],
    lanes: 4,
  },
  {
    name: 'uint32 and float32 mixed into float64, Math.fround, a partly written output',
    signature: 'void(float32[:], uint32, float32[:])',
    layout: '(n),()->(n)',
    kernel: ((x: Vector, u: number, out: Vector) => {
      for (let i = 1; i < x.length; i += 2) out[i] = x[i]! / (u + 0.5) + Math.fround(x[i]! * u * 0.1) + Math.max(x[i]!, u);
    }) as never,
    inputs: [{ dtype: 'float32', core: 1 }, { dtype: 'uint32', core: 0 }],
    lanes: 4,
    pairs: true,
  },
  // float64 locals that hold only int32 or float32 values (exact-doubles.ts): 4 rows per vector.
  {
    name: 'an int32 sum of int16 rows in a float64 local (`s = (s + x[i]) | 0`), minus a per-row offset',
    signature: 'void(int16[:], int16, int32[:])',
    layout: '(n),()->()',
    kernel: ((x: Vector, k: number, out: Vector) => {
      let s = 0;
      for (let i = 0; i < x.length; i++) s = (s + x[i]! * 3 - k) | 0;
      out[0] = s - k;
    }) as never,
    inputs: [{ dtype: 'int16', core: 1 }, { dtype: 'int16', core: 0 }],
    lanes: 4,
  },
  {
    name: 'float32 rows: a running maximum from -Infinity, its index (a loop counter), a threshold',
    signature: 'void(float32[:], float32, float32[:])',
    layout: '(n),()->(n)',
    kernel: ((x: Vector, t: number, out: Vector) => {
      let m = -Infinity;
      let at = -1;
      let above = 0;
      for (let i = 0; i < x.length; i++) {
        if (x[i]! > m) {
          m = x[i]!;
          at = i;
        }
        if (x[i]! >= t) above = Math.max(above, i);
      }
      for (let i = 0; i < x.length; i++) out[i] = i === 0 ? at : i === 1 ? above : x[i]! - m;
    }) as never,
    inputs: [{ dtype: 'float32', core: 1 }, { dtype: 'float32', core: 0 }],
    lanes: 4,
  },
  {
    name: 'float32 rows: extremes from ±Infinity, -0 and selects, rounded, in float32 arithmetic',
    signature: 'void(float32[:], float32[:])',
    layout: '(n)->(n)',
    kernel: ((x: Vector, out: Vector) => {
      let lo = Infinity;
      let hi = -0;
      for (let i = 0; i < x.length; i++) {
        lo = Math.min(lo, Math.floor(x[i]!));
        hi = x[i]! < 0 ? hi : Math.max(hi, -Math.abs(Math.round(x[i]!)));
      }
      for (let i = 0; i < x.length; i++) out[i] = i === 0 ? lo : i === 1 ? hi : (hi > lo ? lo : hi) - x[i]!;
    }) as never,
    inputs: [{ dtype: 'float32', core: 1 }],
    lanes: 4,
  },
  {
    name: 'uint8 rows: their range from literals 255 and 0, stored wrapped, and a sum in a helper',
    signature: 'void(uint8[:], uint8, uint8[:])',
    layout: '(n),()->(n)',
    env: { spread },
    kernel: ((x: Vector, k: number, out: Vector) => {
      let lo = 255;
      let hi = 0;
      for (let i = 0; i < x.length; i++) {
        lo = Math.min(lo, x[i]!);
        hi = Math.max(hi, x[i]!);
      }
      for (let i = 0; i < x.length; i++) out[i] = x[i]! - lo + k + spread(hi | 0, lo | 0);
    }) as never,
    inputs: [{ dtype: 'uint8', core: 1 }, { dtype: 'uint8', core: 0 }],
    lanes: 16, // row-int-lanes.ts: every value fits 8 bits or wraps into the uint8 store
  },
  {
    name: 'int16 rows: `s += x[i]` and `c++` under a per-row condition, stepped within int32 by a loop along the row',
    signature: 'void(int16[:], int16, int32[:])',
    layout: '(n),()->(n)',
    kernel: ((x: Vector, k: number, out: Vector) => {
      let s = 0;
      let c = 0;
      for (let i = 0; i < x.length; i++) {
        s += x[i]!;
        if (x[i]! > k) c++;
        else s -= k;
      }
      for (let i = 0; i < x.length; i++) out[i] = i === 0 ? s : c - i;
    }) as never,
    inputs: [{ dtype: 'int16', core: 1 }, { dtype: 'int16', core: 0 }],
    lanes: 4,
  },
  {
    name: 'int8 rows: a sum and a maximum held as int32, stored clamped into uint8c, a uint16 scalar',
    signature: 'void(int8[:], uint16, uint8c[:])',
    layout: '(n),()->(n)',
    kernel: ((x: Vector, k: number, out: Vector) => {
      let s = 0;
      let hi = -1000;
      for (let i = 0; i < x.length; i++) {
        s += x[i]!;
        hi = Math.max(hi, x[i]!);
      }
      for (let i = 0; i < x.length; i++) out[i] = i === 0 ? s : i === 1 ? hi : x[i]! + k;
    }) as never,
    inputs: [{ dtype: 'int8', core: 1 }, { dtype: 'uint16', core: 0 }],
    lanes: 4,
  },
  {
    name: 'int16 rows: a maximum from -Infinity held as float32, rows divided by it in float32',
    signature: 'void(int16[:], float32[:])',
    layout: '(n)->(n)',
    kernel: ((x: Vector, out: Vector) => {
      let m = -Infinity;
      for (let i = 0; i < x.length; i++) m = Math.max(m, x[i]!);
      for (let i = 0; i < x.length; i++) out[i] = x[i]! / m;
    }) as never,
    inputs: [{ dtype: 'int16', core: 1 }],
    lanes: 4,
  },
  {
    name: 'uint16 rows: a running sum stored wrapped into int8',
    signature: 'void(uint16[:], int8[:])',
    layout: '(n)->(n)',
    kernel: ((x: Vector, out: Vector) => {
      let s = 0;
      for (let i = 0; i < x.length; i++) {
        s += x[i]!;
        out[i] = s - x[i]! * 3;
      }
    }) as never,
    inputs: [{ dtype: 'uint16', core: 1 }],
    lanes: 8, // row-int-lanes.ts: the sum is only stored wrapped
  },
  {
    name: 'float32 accumulation written with Math.fround (`acc = Math.fround(acc + a[i] * b[i])`): float32 operations in 4 lanes',
    signature: 'void(float32[:], float32[:], float32[:])',
    layout: '(n),(n)->(n)',
    kernel: ((a: Vector, b: Vector, out: Vector) => {
      let acc = 0;
      let run = Math.fround(0.1);
      for (let i = 0; i < a.length; i++) {
        acc = Math.fround(acc + a[i]! * b[i]!);
        run = Math.fround(run / (b[i]! - 0.5));
        out[i] = acc - run;
      }
    }) as never,
    inputs: [{ dtype: 'float32', core: 1 }, { dtype: 'float32', core: 1 }],
    lanes: 4,
  },
  {
    name: 'sums whose steps run an unbounded number of times per row (a loop to a scalar count): kept in float64',
    signature: 'void(int16[:], uint8, int32[:])',
    layout: '(n),()->()',
    kernel: ((x: Vector, k: number, out: Vector) => {
      let s = 0;
      for (let i = 0; i < k; i++) s += x.length > 0 ? x[0]! : 1;
      out[0] = s;
    }) as never,
    inputs: [{ dtype: 'int16', core: 1 }, { dtype: 'uint8', core: 0 }],
    lanes: 4,
    pairs: true,
  },
  {
    name: 'sums over nested loops along the row (2^13 · 2^13 steps of 2^15 could pass 2^31): kept in float64',
    signature: 'void(int16[:], int32[:])',
    layout: '(n)->()',
    kernel: ((x: Vector, out: Vector) => {
      let s = 0;
      for (let i = 0; i < x.length; i++) for (let j = 0; j < x.length; j++) s += x[j]!;
      out[0] = s;
    }) as never,
    inputs: [{ dtype: 'int16', core: 1 }],
    lanes: 4,
    pairs: true,
  },
  {
    name: 'float64 locals that are no int32 (a NaN literal, a product of counters): kept in float64',
    signature: 'void(int16[:], int32[:])',
    layout: '(n)->(n)',
    kernel: ((x: Vector, out: Vector) => {
      let first = NaN;
      let s = 0;
      let p = 1;
      for (let i = 0; i < x.length; i++) {
        if (first !== first && x[i]! > 0) first = x[i]!;
        s += x[i]!;
        p = (p * (i + 1)) % 1000;
        out[i] = s + p + first;
      }
    }) as never,
    inputs: [{ dtype: 'int16', core: 1 }],
    lanes: 4,
    pairs: true,
  },
  // True doubles of 32-bit rows in pairs of f64x2 vectors, 4 rows per vector (row-pairs.ts).
  {
    name: 'float32 rows with float64 accumulators: a dot product, a running sum, stored per element (pairs)',
    signature: 'void(float32[:], float32[:], float32[:])',
    layout: '(n),(n)->(n)',
    kernel: ((a: Vector, b: Vector, out: Vector) => {
      let acc = 0;
      let s = -0;
      for (let i = 0; i < a.length; i++) {
        acc += a[i]! * b[i]!;
        s += a[i]!;
        out[i] = acc - s * 0.5;
      }
    }) as never,
    inputs: [{ dtype: 'float32', core: 1 }, { dtype: 'float32', core: 1 }],
    lanes: 4,
    pairs: true,
  },
  {
    name: 'float64 Math per row on float32 rows: exp, log, sin, atan2, fmod, round, sign, min/max against constants (pairs)',
    signature: 'void(float32[:], float32, float32[:])',
    layout: '(n),()->(n)',
    kernel: ((x: Vector, t: number, out: Vector) => {
      let m = -Infinity;
      for (let i = 0; i < x.length; i++) m = Math.max(m, x[i]!);
      let sum = 0;
      for (let i = 0; i < x.length; i++) {
        const d = x[i]! - m * 0.5;
        sum += Math.exp(d) + Math.log(Math.abs(d) + t) - Math.sin(d * 3);
        out[i] = Math.atan2(d, sum) + (d % 0.75) + Math.round(d * 2.5) * Math.sign(sum) + Math.min(d, 0) + Math.max(d, 0.5) + Math.sqrt(Math.abs(sum));
      }
    }) as never,
    inputs: [{ dtype: 'float32', core: 1 }, { dtype: 'float32', core: 0 }],
    lanes: 4,
    pairs: true,
  },
  {
    name: 'per-row conditions on float64 values: selects, an if assigning under masks, a masked while loop (pairs)',
    signature: 'void(float32[:], float32, float32[:])',
    layout: '(n),()->(n)',
    kernel: ((x: Vector, t: number, out: Vector) => {
      let acc = 0;
      for (let i = 0; i < x.length; i++) {
        acc += x[i]! * 0.1;
        let v = acc > t ? acc * 0.5 : acc - 1;
        if (v < -t && x[i]! !== 0) v = v / x[i]!;
        else if (v === v) acc = acc + 0.25;
        let c = 0;
        while (Math.abs(v) > 0.01 && c < 12) {
          v = v * 0.3;
          c++;
        }
        out[i] = v + c + (acc >= 0 ? 1 : 0);
      }
    }) as never,
    inputs: [{ dtype: 'float32', core: 1 }, { dtype: 'float32', core: 0 }],
    lanes: 4,
    pairs: true,
  },
  {
    name: 'float64 values of int16 rows stored wrapped into int16, clamped into uint8c and converted to int32 and uint32 (pairs)',
    signature: 'void(int16[:], float32, int16[:], uint8c[:], int32[:], uint32[:])',
    layout: '(n),()->(n),(n),(n),(n)',
    kernel: ((x: Vector, k: number, a: Vector, b: Vector, c: Vector, d: Vector) => {
      for (let i = 0; i < x.length; i++) {
        const v = x[i]! * 1000.5 + k;
        a[i] = v;
        b[i] = v / 77.25;
        c[i] = v * v * v;
        d[i] = -v * 3.5;
      }
    }) as never,
    inputs: [{ dtype: 'int16', core: 1 }, { dtype: 'float32', core: 0 }],
    lanes: 4,
    pairs: true,
  },
  {
    name: 'a float32 scalar turned float64 per row, a uint32 per-row scalar, a helper taking a double and giving a float32 (pairs)',
    signature: 'void(uint8[:], uint32, float32[:])',
    layout: '(n),()->(n)',
    env: { toFloat32 },
    kernel: ((x: Vector, u: number, out: Vector) => {
      let scale = u * 0.5;
      for (let i = 0; i < x.length; i++) {
        scale = scale + x[i]! / 3;
        out[i] = toFloat32(scale, x[i]!) + u;
      }
    }) as never,
    inputs: [{ dtype: 'uint8', core: 1 }, { dtype: 'uint32', core: 0 }],
    lanes: 4,
    pairs: true,
  },
  {
    name: 'helpers returning float64 (pairs): called twice in one expression, under a per-row condition, one with a uniform early return for its effect',
    signature: 'void(float32[:], float32, float32[:])',
    layout: '(n),()->(n)',
    env: { blend, sumOf },
    kernel: ((x: Vector, t: number, out: Vector) => {
      for (let i = 0; i < x.length; i++) {
        out[i] = blend(x[i]!, t) - blend(t, x[i]!) * 0.5;
        if (x[i]! > t) out[i] = out[i]! + blend(out[i]!, x[i]!);
      }
      sumOf(x);
    }) as never,
    inputs: [{ dtype: 'float32', core: 1 }, { dtype: 'float32', core: 0 }],
    lanes: 4,
    pairs: true,
  },
  {
    name: 'a float64 scalar per row: 2 rows per vector (not in pairs)',
    signature: 'void(float32[:], float64, float32[:])',
    layout: '(n),()->(n)',
    kernel: ((x: Vector, w: number, out: Vector) => {
      for (let i = 0; i < x.length; i++) out[i] = x[i]! * w;
    }) as never,
    inputs: [{ dtype: 'float32', core: 1 }, { dtype: 'float64', core: 0 }],
    lanes: 2,
  },
];

function compare(w: unknown, j: unknown): void {
  if (typeof j === 'string' || typeof w === 'string') {
    expect(w).toBe(j);
    return;
  }
  // Several outputs: one result each.
  if (Array.isArray(j) && Array.isArray(w)) {
    expect(w.length).toBe(j.length);
    j.forEach((x, i) => compare(w[i], x));
    return;
  }
  const data = (x: unknown) => ((x as { data?: ArrayLike<number> }).data ?? (x as ArrayLike<number>));
  expectSameArrays(data(w), data(j));
}

/** The property of the cases below: random batches, core sizes, strides, values; Wasm ≡ JS. */
function checkCase(c: Case, numRuns: number, maxBatch: number): void {
  const f = guvectorize([c.signature], c.layout, c.env ? { env: c.env } : {})(c.kernel);
  const dims = fc.record({ batch: fc.integer({ min: 0, max: maxBatch }), m: fc.integer({ min: 0, max: 5 }), n: fc.integer({ min: 0, max: 6 }), p: fc.integer({ min: 1, max: 4 }) });
  const layoutArb = fc.array(fc.constantFrom(1, 1, 2, -1), { minLength: 3, maxLength: 3 });
  fc.assert(
    fc.property(dims, layoutArb, fc.boolean(), fc.array(valuesOf(c.inputs[0]!.dtype), { minLength: 1, maxLength: 60 }), fc.array(valuesOf(c.inputs[c.inputs.length - 1]!.dtype), { minLength: 1, maxLength: 20 }), (d, layout, broadcastLast, values, scalars) => {
      const shapes: number[][] = c.layout === '(m,n),(n,p)->(m,p)' ? [[d.batch, d.m, d.n], [d.batch, d.n, d.p]] : c.inputs.map((x) => (x.core === 1 ? [d.batch, d.n] : [d.batch]));
      const args = c.inputs.map((x, i) => {
        // The last `()` input is sometimes one value broadcast over the batch.
        if (x.core === 0 && i === c.inputs.length - 1 && broadcastLast && i > 0) return scalars[0]!;
        return viewOf(x.dtype, shapes[i]!, x.core === 0 ? scalars : values, layout);
      });
      if (c.layout === '()->(n)') {
        // The output's core size comes from `out`.
        const out = () => ({ out: viewOf('float32', [d.batch, d.n], [7.5], [1]) });
        const [w, j] = wasmAndJs(() => f.sync(...args, out()) as { data: ArrayLike<number> } | ArrayLike<number>);
        compare(w, j);
      } else {
        const [w, j] = wasmAndJs(() => f.sync(...args) as { data: ArrayLike<number> } | ArrayLike<number>);
        compare(w, j);
      }
    }),
    { numRuns },
  );
}

describe('per-row kernels vectorised over rows are bit-identical to the JS engine', () => {
  // Cases with true doubles run in pairs of vectors (the variant calibration times, forced here).
  it.each(CASES.map((c) => [c.name, c] as const))('%s', (_, c) => {
    if (c.pairs) rowTesting.setFloatPairs(true);
    checkCase(c, 60, 11);
    const f = guvectorize([c.signature], c.layout, c.env ? { env: c.env } : {})(c.kernel);
    // The kernel really runs vectorised where the layout allows it.
    const batch = 300;
    const n = 6;
    const shapes = c.layout === '(m,n),(n,p)->(m,p)' ? [[batch, 4, 4], [batch, 4, 4]] : c.inputs.map((x) => (x.core === 1 ? [batch, n] : [batch]));
    const args = c.inputs.map((x, i) => viewOf(x.dtype, shapes[i]!, [1.5], [1]));
    setEngineMode('wasm');
    const outArg = c.layout === '()->(n)' ? [{ out: viewOf('float32', [batch, n], [0], [1]) }] : [];
    const text = f.explain(...args, ...outArg);
    if (c.lanes) expect(text).toContain(`SIMD, ${c.lanes} rows per vector`);
    if (c.lanes) expect(text.includes('float64 values in pairs')).toBe(c.pairs === true);
  });

  // The same kernels without pairs (the default layout's plan): 2 rows per vector, the same results.
  it.each(CASES.filter((c) => c.pairs).map((c) => [c.name, c] as const))('float64 pairs off, 2 rows per vector: %s', (_, c) => {
    checkCase(c, 30, 11);
    const f = guvectorize([c.signature], c.layout, c.env ? { env: c.env } : {})(c.kernel);
    const shapes = c.layout === '(m,n),(n,p)->(m,p)' ? [[300, 4, 4], [300, 4, 4]] : c.inputs.map((x) => (x.core === 1 ? [300, 6] : [300]));
    setEngineMode('wasm');
    const outArg = c.layout === '()->(n)' ? [{ out: viewOf('float32', [300, 6], [0], [1]) }] : [];
    expect(f.explain(...c.inputs.map((x, i) => viewOf(x.dtype, shapes[i]!, [1.5], [1])), ...outArg)).toContain('SIMD, 2 rows per vector');
  });

  // Blocks of rows run in groups side by side (emit-rows.ts rowGroups): every case with one group
  // per step, and with three (the rule picks one or two; three shows nothing assumes two), on
  // batches spanning several steps, their tail and the one-group loop after.
  it.each([1, 3].flatMap((groups) => CASES.map((c) => [groups, c.name, c] as const)))('%i groups of rows per step: %s', (groups, _, c) => {
    rowTesting.setRowGroups(groups);
    if (c.pairs) rowTesting.setFloatPairs(true);
    checkCase(c, 20, 30);
  }, 30_000);

  it('explain names the float64 locals held as int32 or float32, which fill 4 lanes instead of 2; without them the same results in 2', () => {
    const define = () =>
      guvectorize(['void(int16[:], float32[:], int32[:])'], '(n),(n)->()')((x: Vector, y: Vector, out: Vector) => {
        let s = 0;
        let m = -Infinity;
        for (let i = 0; i < x.length; i++) {
          s = (s + x[i]!) | 0;
          m = Math.max(m, y[i]!);
        }
        out[0] = m > 0 ? s : -s;
      });
    const x = { data: Int16Array.from({ length: 64 * 9 }, (_, i) => (i * 7919) % 65536 - 32768), shape: [64, 9] };
    const y = { data: Float32Array.from({ length: 64 * 9 }, (_, i) => Math.sin(i) - 0.5), shape: [64, 9] };
    const narrowed = define();
    setEngineMode('wasm');
    expect(narrowed.explain(x, y)).toMatch(/^WebAssembly \(SIMD, 4 rows per vector \(float64 locals that only ever hold 32-bit values held so: `s` as int32, `m` as float32\) × 2 vectors/);
    const [narrow, js] = wasmAndJs(() => narrowed.sync(x, y));
    rowTesting.setNarrowDoubles(false);
    const doubles = define();
    setEngineMode('wasm');
    expect(doubles.explain(x, y)).toMatch(/^WebAssembly \(SIMD, 2 rows per vector × 2 vectors/);
    const [wide] = wasmAndJs(() => doubles.sync(x, y));
    compare(narrow, js);
    compare(wide, js);
  });

  it('explain tells how many groups of rows run side by side: two where a loop carries a per-row value, one where a loop is masked', () => {
    const dot = guvectorize(['void(float32[:], float32[:], float32[:])'], '(n),(n)->()')((a: Vector, b: Vector, out: Vector) => {
      let acc = 0;
      for (let i = 0; i < a.length; i++) acc += a[i]! * b[i]!;
      out[0] = acc;
    });
    const rows = { data: new Float32Array(64 * 16), shape: [64, 16] };
    setEngineMode('wasm');
    expect(dot.explain(rows, rows)).toMatch(/^WebAssembly \(SIMD, 2 rows per vector × 2 vectors of rows side by side per step, the last rows 2 at a time; /);
    // Its float64 accumulator in pairs of vectors (the variant calibration times): 4 rows per
    // vector, one group (the pair's halves are two chains already); without loops, two groups.
    rowTesting.setFloatPairs(true);
    const pairedDot = guvectorize(['void(float32[:], float32[:], float32[:])'], '(n),(n)->()')((a: Vector, b: Vector, out: Vector) => {
      let acc = 0;
      for (let i = 0; i < a.length; i++) acc += a[i]! * b[i]!;
      out[0] = acc;
    });
    expect(pairedDot.explain(rows, rows)).toMatch(/^WebAssembly \(SIMD, 4 rows per vector \(float64 values in pairs of 2-lane vectors\); /);
    const gray = guvectorize(['void(uint8[:], uint8[:])'], '(c)->()')((rgb: Vector, out: Vector) => {
      out[0] = 0.299 * rgb[0]! + 0.587 * rgb[1]! + 0.114 * rgb[2]!;
    });
    const pixels = { data: new Uint8Array(64 * 3), shape: [64, 3] };
    expect(gray.explain(pixels)).toMatch(/^WebAssembly \(SIMD, 4 rows per vector \(float64 values in pairs of 2-lane vectors\) × 2 vectors of rows side by side per step, the last rows 4 at a time; /);
    rowTesting.setFloatPairs(undefined);
    const untilSmall = guvectorize(['void(float32[:], float32[:])'], '(n)->()')((x: Vector, out: Vector) => {
      let v = x[0]!;
      while (v > 1) v = v / 2;
      out[0] = v;
    });
    expect(untilSmall.explain(rows)).toMatch(/^WebAssembly \(SIMD, 4 rows per vector; /);
  });



  it('in place (out is the input), outputs overlapping an input otherwise, and output rows overlapping each other, as in JS', () => {
    const f = guvectorize(['void(float32[:], float32[:])'], '(n)->(n)', { env: { hermiteRow } })((row: Vector, out: Vector) => {
      hermiteRow(row[1]!, out);
    });
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 13 }), fc.integer({ min: 2, max: 9 }), fc.integer({ min: -3, max: 3 }), fc.array(valuesOf('float32'), { minLength: 1, maxLength: 40 }), (batch, n, shift, values) => {
        const run = (variant: 'in place' | 'shifted' | 'rows overlap') => {
          const data = Float32Array.from({ length: batch * n + 8 }, (_, i) => values[i % values.length]!);
          const table = { data, shape: [batch, n], strides: [n, 1], offset: 4 };
          // Shifted: the output view starts `shift` elements away, so rows of input and output
          // overlap. Rows overlap: the output's rows overlap one another (row stride 0 or 1).
          const out =
            variant === 'in place' ? table
              : variant === 'shifted' ? { data, shape: [batch, n], strides: [n, 1], offset: 4 + shift }
                : { data: new Float32Array(batch + n + 2), shape: [batch, n], strides: [Math.abs(shift) % 2, 1], offset: 1 };
          f.sync(table, { out });
          return variant === 'rows overlap' ? out.data : data;
        };
        for (const variant of ['in place', 'shifted', 'rows overlap'] as const) {
          const [w, j] = wasmAndJs(() => run(variant));
          expectSameArrays(w as Float32Array, j as Float32Array);
        }
      }),
      { numRuns: 60 },
    );
  });

  it('an output whose elements within a row alias (a stride-0 core axis, overlapping 2-D core strides) as in JS', () => {
    const hermite = guvectorize(['void(float32, float32[:])'], '()->(n)', { env: { hermiteRow } })((x: number, out: Vector) => {
      hermiteRow(x, out);
    });
    const outer = guvectorize(['void(float32[:], float32[:], float32[:,:])'], '(m),(n)->(m,n)')((a: Vector, b: Vector, out: Matrix) => {
      for (let i = 0; i < a.length; i++) for (let j = 0; j < b.length; j++) out[i]![j] = out[i]![j]! * 0.5 + a[i]! * b[j]!;
    });
    fc.assert(
      fc.property(fc.integer({ min: 4, max: 13 }), fc.integer({ min: 2, max: 6 }), fc.integer({ min: 0, max: 3 }), fc.integer({ min: 0, max: 3 }), (batch, n, s0, s1) => {
        // 1-D: core stride 0 (every element of a row is one address), rows apart.
        const [w1, j1] = wasmAndJs(() => {
          const out = { data: new Float32Array(batch * 2 + 1), shape: [batch, n], strides: [2, 0], offset: 0 };
          hermite.sync(Float32Array.from({ length: batch }, (_, i) => 0.25 + i), { out });
          return out.data;
        });
        expectSameArrays(w1 as Float32Array, j1 as Float32Array);
        // 2-D: core strides s0, s1 in 0…3 (many overlap: [1, 1], [0, 2], [2, 1] for n = 3 …); rows far apart.
        const [w2, j2] = wasmAndJs(() => {
          const step = 3 * (n - 1) * 2 + 1;
          const out = { data: Float32Array.from({ length: batch * step }, (_, i) => i % 7), shape: [batch, n, n], strides: [step, s0, s1], offset: 0 };
          const a = Float32Array.from({ length: batch * n }, (_, i) => 1 + (i % 5));
          outer.sync({ data: a, shape: [batch, n] }, { data: a, shape: [batch, n] }, { out });
          return out.data;
        });
        expectSameArrays(w2 as Float32Array, j2 as Float32Array);
      }),
      { numRuns: 60 },
    );
  });

  it('a 2-D running sum into outputs whose core elements alias each other (zero or overlapping core strides), as in JS', () => {
    const hermite = guvectorize(['void(float32, float32[:])'], '()->(n)', { env: { hermiteRow } })((x: number, out: Vector) => {
      hermiteRow(x, out);
    });
    // A 2-D running sum: each element reads ones written before it, which aliasing changes.
    const scan = guvectorize(['void(float32[:,:], float32[:,:])'], '(m,n)->(m,n)')((a: Matrix, c: Matrix) => {
      for (let i = 0; i < a.shape[0]!; i++) {
        for (let j = 0; j < a.shape[1]!; j++) {
          let s = a[i]![j]!;
          if (j > 0) s += c[i]![j - 1]!;
          if (i > 0) s += c[i - 1]![j]!;
          c[i]![j] = s;
        }
      }
    });
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 11 }), fc.integer({ min: 1, max: 5 }), fc.constantFrom(0, 1, 2), (batch, n, coreStride) => {
        const x = Float32Array.from({ length: batch }, (_, i) => i / 3 - 1);
        const [w, j] = wasmAndJs(() => {
          const out = { data: new Float32Array(batch * n * 2), shape: [batch, n], strides: [n * 2, coreStride], offset: 0 };
          hermite.sync(x, { out });
          return out.data;
        });
        expectSameArrays(w as Float32Array, j as Float32Array);
        const a = { data: Float32Array.from({ length: batch * n * n }, (_, i) => (i % 7) - 3), shape: [batch, n, n] };
        const [w2, j2] = wasmAndJs(() => {
          // Row stride coreStride·n + 1 elements per matrix row: smaller than a row when coreStride < 1.
          const c = { data: new Float32Array(batch * n * n * 3 + 4), shape: [batch, n, n], strides: [n * n * 3, coreStride, 1], offset: 0 };
          scan.sync(a, { out: c });
          return c.data;
        });
        expectSameArrays(w2 as Float32Array, j2 as Float32Array);
      }),
      { numRuns: 60 },
    );
  });

  it('an output written whole is not read from memory, unless another operand shares it', () => {
    const f = guvectorize(['void(float32[:], float32[:], float32[:])'], '(n)->(n),(n)')((x: Vector, a: Vector, b: Vector) => {
      const first = b[0]!;
      for (let i = 0; i < a.length; i++) a[i] = x[i]! * 2 + first;
    });
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 13 }), fc.integer({ min: 1, max: 7 }), fc.boolean(), (batch, n, shared) => {
        const run = () => {
          const x = { data: Float32Array.from({ length: batch * n }, (_, i) => i / 4), shape: [batch, n] };
          const a = { data: Float32Array.from({ length: batch * n }, (_, i) => 100 + i), shape: [batch, n] };
          const b = shared ? a : { data: Float32Array.from({ length: batch * n }, (_, i) => -i), shape: [batch, n] };
          f.sync(x, { out: [a, b] });
          return [...a.data, ...b.data];
        };
        const [w, j] = wasmAndJs(run);
        expectSameArrays(w as number[], j as number[]);
      }),
      { numRuns: 40 },
    );
  });

  it('an index out of bounds in the middle of a block throws as JS does, having written what JS writes', () => {
    const f = guvectorize(['void(float32[:], int32, float32[:])'], '(n),()->(n)')((x: Vector, limit: number, out: Vector) => {
      for (let i = 0; i < x.length; i++) out[i] = x[i]! * 3;
      // Row `limit` (a per-row value, so a divergent branch) reads past its end.
      if (limit === 1) out[0] = x[x.length]!;
    });
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 11 }), fc.integer({ min: 0, max: 10 }), (batch, bad) => {
        const run = () => {
          const x = { data: Float32Array.from({ length: batch * 4 }, (_, i) => i), shape: [batch, 4] };
          const limits = Int32Array.from({ length: batch }, (_, i) => (i === bad ? 1 : 0));
          const out = new Float32Array(batch * 4).fill(-1);
          let error = '';
          try {
            f.sync(x, limits, { out: { data: out, shape: [batch, 4] } });
          } catch (e) {
            error = (e as Error).message;
          }
          return { error, out };
        };
        const [w, j] = wasmAndJs(run);
        const a = w as { error: string; out: Float32Array };
        const b = j as { error: string; out: Float32Array };
        expect(a.error).toBe(b.error);
        if (bad < batch) expect(b.error).toContain('out of bounds');
        expectSameArrays(a.out, b.out);
      }),
      { numRuns: 40 },
    );
  });

  it('indices by a counter running to an array\'s size skip their check only on that array and axis', () => {
    // x[i], x[i − 2] are in bounds by the loop; out[i − 2] and y[i − 3] are not (other array, c > start).
    const f = guvectorize(['void(float64[:], float64[:], float64[:])'], '(n),(m)->(m)')((x: Vector, y: Vector, out: Vector) => {
      for (let i = 2; i < x.length; i++) out[i - 2] = x[i]! + x[i - 2]! * y[i - 3 + (y.length > 5 ? 1 : 0)]!;
    });
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 9 }), fc.integer({ min: 0, max: 7 }), fc.integer({ min: 0, max: 7 }), (batch, n, m) => {
        const run = () => {
          const x = { data: Float64Array.from({ length: batch * n }, (_, i) => i + 0.5), shape: [batch, n] };
          const y = { data: Float64Array.from({ length: batch * m }, (_, i) => -i), shape: [batch, m] };
          const out = { data: new Float64Array(batch * m).fill(9), shape: [batch, m] };
          try {
            f.sync(x, y, { out });
            return [...out.data];
          } catch (e) {
            return `${(e as Error).message} ${[...out.data]}`;
          }
        };
        const [w, j] = wasmAndJs(run);
        expect(w).toEqual(j);
      }),
      { numRuns: 80 },
    );
  });

  it('indices bounded by a core size drop their check on every axis the layout names alike, and only there', () => {
    // matmul: k runs to a.shape[1] (n), so b[k] (axis `n` of b) is in bounds; i, j reach c's axes m, p.
    const matmul = <L extends string>(layout: L) =>
      guvectorize(['void(float32[:,:], float32[:,:], float32[:,:])'], layout)((a: Matrix, b: Matrix, c: Matrix) => {
        for (let i = 0; i < a.shape[0]; i++) {
          for (let j = 0; j < b.shape[1]; j++) {
            let sum = 0;
            for (let k = 0; k < a.shape[1]; k++) sum += a[i]![k]! * b[k]![j]!;
            c[i]![j] = sum;
          }
        }
      });
    const tied = matmul('(m,n),(n,p)->(m,p)');
    const untied = matmul('(m,n),(q,p)->(r,s)');
    setEngineMode('wasm');
    const m = (rows: number, cols: number) => ({ data: new Float32Array(64 * rows * cols), shape: [64, rows, cols] });
    expect(tied.explain(m(4, 4), m(4, 4), { out: m(4, 4) })).toContain('Bounds checks: 0 of 6 array index axes');
    expect(untied.explain(m(4, 4), m(4, 4), { out: m(4, 4) })).toContain('Bounds checks: 3 of 6 array index axes');
    // Out of bounds on an axis that is not tied (q < n, or r/s smaller than m/p): the JS engine's error and writes.
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 9 }), fc.array(fc.integer({ min: 0, max: 4 }), { minLength: 7, maxLength: 7 }), (batch, [mm, n, q, p, r, s, which]) => {
        const isTied = which! % 2 === 1;
        const [qq, rr, ss] = isTied ? [n!, mm!, p!] : [q!, r!, s!];
        const run = () => {
          const a = { data: Float32Array.from({ length: batch * mm! * n! }, (_, i) => i - 3.5), shape: [batch, mm!, n!] };
          const b = { data: Float32Array.from({ length: batch * qq * p! }, (_, i) => 0.25 * i), shape: [batch, qq, p!] };
          const out = { data: new Float32Array(batch * rr * ss).fill(9), shape: [batch, rr, ss] };
          try {
            if (isTied) tied.sync(a, b, { out });
            else untied.sync(a, b, { out });
            return [...out.data];
          } catch (e) {
            return `${(e as Error).message} ${[...out.data]}`;
          }
        };
        const [w, j] = wasmAndJs(run);
        expect(w).toEqual(j);
      }),
      { numRuns: 150 },
    );
    // A counter bounded by one name stays checked on an axis of another name: k (n) indexes c's axis m.
    const crossed = guvectorize(['void(float32[:,:], float32[:,:])'], '(m,n)->(m,n)')((a: Matrix, c: Matrix) => {
      for (let k = 0; k < a.shape[1]; k++) c[k]![0] = a[0]![k]!;
    });
    setEngineMode('wasm');
    expect(crossed.explain(m(2, 3), { out: m(2, 3) })).toContain('Bounds checks: 3 of 4 array index axes');
    const [w, j] = wasmAndJs(() => {
      const out = { data: new Float32Array(64 * 6), shape: [64, 2, 3] };
      try {
        crossed.sync({ data: Float32Array.from({ length: 64 * 6 }, (_, i) => i), shape: [64, 2, 3] }, { out });
        return 'no error';
      } catch (e) {
        return `${(e as Error).message} ${[...out.data]}`;
      }
    });
    expect(w).toContain('out of bounds');
    expect(w).toEqual(j);
  });

  it('loops whose trip count differs per row run masked, on contiguous batches of every size', () => {
    const fillArray = (dtype: DType, length: number, value: (i: number) => number) => {
      const a = new DTYPES[dtype].arrayType(length) as unknown as number[];
      for (let i = 0; i < length; i++) a[i] = value(i);
      return a as unknown as Float64Array;
    };
    const masked = CASES.filter((c) => c.name.includes('per row') && c.inputs.length === 2 && c.inputs[1]!.core === 0 && c.layout === '(n),()->(n)');
    expect(masked.length).toBeGreaterThanOrEqual(3);
    for (const c of masked) {
      const f = guvectorize([c.signature], c.layout, c.env ? { env: c.env } : {})(c.kernel);
      for (const [batch, n] of [[1, 3], [2, 5], [7, 6], [37, 9], [64, 1]] as const) {
        const x = { data: fillArray(c.inputs[0]!.dtype, batch * n, (i) => Math.sin(i * 7) * 4), shape: [batch, n] };
        const k = fillArray(c.inputs[1]!.dtype, batch, (i) => (i % 11) - 2 + (i % 3) * 0.25);
        const [w, j] = wasmAndJs(() => (f.sync(x, k) as { data: ArrayLike<number> }).data);
        if (typeof j === 'string' || typeof w === 'string') expect(w).toBe(j);
        else expectSameArrays(w, j);
      }
      setEngineMode('wasm');
      expect(f.explain({ data: new DTYPES[c.inputs[0]!.dtype].arrayType(40), shape: [8, 5] }, new DTYPES[c.inputs[1]!.dtype].arrayType(8))).toContain('rows per vector');
    }
  });

  it('explain says why a per-row kernel runs scalar Wasm', () => {
    setEngineMode('wasm');
    const x = { data: new Float64Array(64 * 5), shape: [64, 5] };
    const whileVarying = guvectorize(['void(float64[:], float64[:])'], '(n)->(n)')((v: Vector, out: Vector) => {
      let i = 0;
      while (v[i]! > 0 && i < v.length - 1) i++;
      out[0] = i;
    });
    const search = guvectorize(['void(float64[:], float64[:])'], '(n)->()')((v: Vector, out: Vector) => {
      let at = -1;
      for (let i = 0; i < v.length; i++) {
        if (v[i]! > 0) {
          at = i;
          break;
        }
      }
      out[0] = at;
    });
    expect(search.explain(x)).toMatch(/WebAssembly \(scalar: `break` at kernel line \d+:\d+ leaves a loop early per row \(a search/);
    // The loop itself runs masked; its counter, assigned in it, differs per row, and so does `v[i]`.
    expect(whileVarying.explain(x)).toMatch(/WebAssembly \(scalar: an index of `v` at kernel line \d+:\d+ varies per row\)/);
    const gather = guvectorize(['void(float64[:], int32[:], float64[:])'], '(n),(n)->(n)')((v: Vector, idx: Vector, out: Vector) => {
      for (let i = 0; i < v.length; i++) out[i] = v[idx[i]!]!;
    });
    expect(gather.explain(x, { data: new Int32Array(64 * 5), shape: [64, 5] })).toMatch(/WebAssembly \(scalar: an index of `v` at kernel line \d+:\d+ varies per row\)/);
    const cube = guvectorize(['void(float64[:,:,:], float64[:])'], '(a,b,c)->(a)')((v: { [i: number]: Matrix; shape: number[] }, out: Vector) => {
      for (let i = 0; i < out.length; i++) out[i] = v[i]![0]![0]!;
    });
    expect(cube.explain({ data: new Float64Array(64 * 8), shape: [64, 2, 2, 2] })).toContain('scalar: `v` has 3 core dimensions');
  });

  it('the parallel target runs the row-vector loop on every thread, bit-identical to the cpu target', async () => {
    setParallelOptions({ threshold: 0 });
    const make = (target: 'cpu' | 'parallel') =>
      guvectorize(['void(float64[:], float64, float64[:])'], '(n),()->(n)', { target, env: { tendency } })((x: Vector, dt: number, out: Vector) => {
        const k = new Float64Array(x.length);
        tendency(x, 8, k);
        for (let i = 0; i < x.length; i++) out[i] = x[i]! + dt * k[i]!;
      });
    const cpu = make('cpu');
    const parallel = make('parallel');
    for (const batch of [5, 257, 4099]) {
      const x = sharedArray(batch * 40, 'float64').map((_, i) => Math.sin(i) * 3 + 8);
      const table = { data: x, shape: [batch, 40] };
      setEngineMode('js');
      const expected = cpu.sync(table, 0.01) as { data: Float64Array };
      setEngineMode('wasm');
      expect(parallel.explain(table, 0.01)).toMatch(/running WebAssembly \(SIMD, 2 rows per vector/);
      expectSameArrays((await parallel(table, 0.01) as { data: Float64Array }).data, expected.data);
      expectSameArrays((cpu.sync(table, 0.01) as { data: Float64Array }).data, expected.data);
    }
  });
  it('a float64 row the kernel never reads still takes 2 lanes: float64 in, float32 out (was an invalid lane index)', () => {
    setEngineMode('wasm');
    const ones = guvectorize(['void(float64[:], float32[:])'], '(n)->(n)')((_x: Vector, out: Vector) => {
      for (let i = 0; i < out.length; i++) out[i] = 1;
    });
    const x = { data: new Float64Array(100_000 * 4), shape: [100_000, 4] };
    expect(ones.explain(x)).toMatch(/2 rows per vector/);
    const r = ones.sync(x) as { data: Float32Array };
    expect(r.data.every((v) => v === 1)).toBe(true);
    const fill = guvectorize(['void(float64[:], float32[:])'], '(n)->(n)')((x: Vector, out: Vector) => {
      const t = new Float64Array(4);
      for (let i = 0; i < 4; i++) t[i] = i / 3;
      for (let i = 0; i < out.length; i++) out[i] = t[i % 4]! + x[i]!;
    });
    const [w, j] = wasmAndJs(() => [...(fill.sync({ data: Float64Array.from({ length: 4000 }, (_, i) => i * 0.25), shape: [1000, 4] }) as { data: Float32Array }).data]);
    expect(w).toEqual(j);
  });

  // emit-rows.ts touchNextBlock: while a block computes, one byte of each line of the next block's
  // rows is loaded (rows spanning 64 bytes or more, of kernels that loop). Rows long enough for it,
  // batches spanning several blocks and ending mid-block, spaced and broadcast rows, outputs read
  // before written (touched too), 2-D cores, 8- and 16-bit rows in lanes of their width.
  it('rows touched ahead of their block (long rows, loops): bit-identical to JS on every batch and view', () => {
    rowTesting.setTouchAhead(true); // off by default (emit-rows.ts); ufuncs made below emit their plans with it
    const cases: { signature: string; layout: string; kernel: (...args: never[]) => void; dtypes: DType[]; core: number[]; out?: DType }[] = [
      {
        signature: 'void(float32[:], float32[:], float32[:])', layout: '(n),(n)->()', dtypes: ['float32', 'float32'], core: [1, 1],
        kernel: ((a: Vector, b: Vector, out: Vector) => {
          let acc = 0;
          for (let i = 0; i < a.length; i++) acc += a[i]! * b[i]!;
          out[0] = acc;
        }) as never,
      },
      {
        signature: 'void(float64[:], float64[:])', layout: '(n)->(n)', dtypes: ['float64'], core: [1], out: 'float64',
        kernel: ((x: Vector, out: Vector) => {
          let s = 0;
          for (let i = 0; i < x.length; i++) {
            s += x[i]!;
            out[i] = out[i]! * 0.5 + s;
          }
        }) as never,
      },
      {
        signature: 'void(int16[:], int16[:])', layout: '(n)->()', dtypes: ['int16'], core: [1],
        kernel: ((x: Vector, out: Vector) => {
          let s = 0;
          for (let i = 0; i < x.length; i++) s += x[i]!;
          out[0] = s;
        }) as never,
      },
      {
        signature: 'void(float64[:,:], float64[:], float64[:])', layout: '(m,n),(n)->(m)', dtypes: ['float64', 'float64'], core: [2, 1],
        kernel: ((a: Matrix, v: Vector, out: Vector) => {
          for (let i = 0; i < a.shape[0]!; i++) {
            let acc = 0;
            for (let j = 0; j < v.length; j++) acc += a[i]![j]! * v[j]!;
            out[i] = acc;
          }
        }) as never,
      },
    ];
    for (const c of cases) {
      const f = guvectorize([c.signature], c.layout)(c.kernel);
      fc.assert(
        fc.property(
          fc.integer({ min: 0, max: 40 }), fc.integer({ min: 0, max: 150 }), fc.integer({ min: 1, max: 5 }), fc.constantFrom(1, 1, 2, -1), fc.boolean(),
          fc.array(valuesOf(c.dtypes[0]!), { minLength: 1, maxLength: 50 }),
          (batch, n, m, spacing, broadcastLast, values) => {
            const shapeOf = (i: number) => {
              const core = c.core[i] === 2 ? [m, n] : [n];
              return broadcastLast && i === c.dtypes.length - 1 && i > 0 ? core : [batch, ...core];
            };
            const args = c.dtypes.map((dtype, i) => viewOf(dtype, shapeOf(i), values, [1, spacing]));
            const outShape = c.layout === '(n)->(n)' ? [batch, n] : c.layout === '(m,n),(n)->(m)' ? [batch, m] : [batch];
            const out = () => (c.out ? [{ out: viewOf(c.out, outShape, [0.75, -2], [1, spacing]) }] : []);
            const [w, j] = wasmAndJs(() => f.sync(...args, ...out()) as { data: ArrayLike<number> } | ArrayLike<number>);
            compare(w, j);
          },
        ),
        { numRuns: 60 },
      );
      setEngineMode('wasm');
      const long = c.dtypes.map((dtype, i) => viewOf(dtype, c.core[i] === 2 ? [40, 3, 100] : [40, 100], [1.5], [1]));
      const outArg = c.out ? [{ out: viewOf(c.out, [40, 100], [0], [1]) }] : [];
      expect(f.explain(...long, ...outArg)).toContain('rows per vector');
    }
    rowTesting.setTouchAhead(false);
  }, 60_000);

  // emit-rows.ts directInputs: a kernel without a loop reads its inputs of 8-bit elements straight
  // from their rows (lane loads at each index, once per element and group however often the body
  // reads it) instead of copying them into slots first; a call where such an input is an output's
  // very view (in place) runs the staged loop. Indices past a row's end (the scalar loop redoes
  // the block and throws), reads first made under a uniform `if` that does not run, reads under
  // per-row conditions, signed and unsigned bytes beside 16-bit rows (staged), 2-D cores, uniform
  // scalar indices, broadcast and spaced rows, in 2 rows per vector and in pairs (4).
  it('kernels without a loop read their inputs from the rows: bit-identical to JS on every batch, view and core size', () => {
    const pick = (x: Vector, k: number) => x[k]! * 2;
    const cases: { signature: string; layout: string; kernel: (...args: never[]) => void; dtypes: (DType | 'scalar')[]; core: number[]; env?: Record<string, unknown> }[] = [
      {
        signature: 'void(uint8[:], uint8[:])', layout: '(c)->()', dtypes: ['uint8'], core: [1],
        kernel: ((rgb: Vector, out: Vector) => {
          out[0] = 0.299 * rgb[0]! + 0.587 * rgb[1]! + 0.114 * rgb[2]!;
        }) as never,
      },
      {
        signature: 'void(uint8[:], int8[:], float32[:])', layout: '(c),(c)->()', dtypes: ['uint8', 'int8'], core: [1, 1],
        kernel: ((a: Vector, b: Vector, out: Vector) => {
          let t = 0.5;
          if (a.length > 3) t = a[1]! * b[0]!;
          let v = a[1]! - t;
          if (a[0]! > b[0]!) v = v + a[0]! * b[1]!;
          out[0] = v + a[0]! - a[1]! * b[1]!;
        }) as never,
      },
      {
        signature: 'void(int8[:], int16[:], int32[:])', layout: '(c),(c)->()', dtypes: ['int8', 'int16'], core: [1, 1],
        kernel: ((x: Vector, y: Vector, out: Vector) => {
          out[0] = x[0]! * 3 - y[1]! + x[1]! * y[0]!;
        }) as never,
      },
      {
        signature: 'void(uint8c[:,:], float64[:])', layout: '(m,c)->()', dtypes: ['uint8c'], core: [2],
        kernel: ((x: Matrix, out: Vector) => {
          out[0] = x[0]![1]! * x[1]![0]! - x[1]![1]! + x[0]![1]!;
        }) as never,
      },
      {
        signature: 'void(int8[:], int32, float64[:])', layout: '(c),()->()', dtypes: ['int8', 'scalar'], core: [1, 0], env: { pick },
        kernel: ((x: Vector, k: number, out: Vector) => {
          out[0] = x[k]! + pick(x, k) - x[0]!;
        }) as never,
      },
    ];
    // Each kernel as the engine's plan has it, and with its true doubles in pairs of vectors (4 rows a vector) where it has any.
    for (const [c, pairs] of cases.flatMap((c) => [[c, undefined], [c, true]] as const)) {
      rowTesting.setFloatPairs(pairs);
      const f = guvectorize([c.signature], c.layout, c.env ? { env: c.env } : {})(c.kernel);
      fc.assert(
        fc.property(
          fc.integer({ min: 0, max: 40 }), fc.integer({ min: 0, max: 5 }), fc.constantFrom(1, 1, 2, -1), fc.boolean(), fc.integer({ min: -1, max: 4 }),
          fc.array(valuesOf(c.dtypes[0] as DType), { minLength: 1, maxLength: 50 }),
          (batch, n, spacing, broadcastLast, k, values) => {
            const args = c.dtypes.map((dtype, i) => {
              if (dtype === 'scalar') return k;
              const core = c.core[i] === 2 ? [2, n] : [n];
              const shape = broadcastLast && i === c.dtypes.length - 1 && i > 0 ? core : [batch, ...core];
              return viewOf(dtype, shape, values, [1, spacing]);
            });
            const [w, j] = wasmAndJs(() => f.sync(...args) as { data: ArrayLike<number> } | ArrayLike<number>);
            compare(w, j);
          },
        ),
        { numRuns: 60 },
      );
      setEngineMode('wasm');
      const shaped = c.dtypes.map((dtype, i) => (dtype === 'scalar' ? 1 : viewOf(dtype, c.core[i] === 2 ? [40, 2, 3] : [40, 3], [1.5], [1])));
      const text = f.explain(...shaped);
      expect(text).toContain('rows per vector');
      if (c === cases[0]) expect(text.includes('float64 values in pairs')).toBe(pairs === true);
    }
  }, 60_000);

  it('a kernel without a loop called in place (out is an input) runs its rows staged, as in JS', () => {
    const f = guvectorize(['void(int8[:], int8[:], int8[:])'], '(c),(c)->(c)')((a: Vector, b: Vector, out: Vector) => {
      out[0] = a[1]! * b[0]!;
      out[1] = a[0]! + out[0]! * a[1]!;
      out[2] = a[2]! - b[2]! + a[0]!;
    });
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 40 }), fc.constantFrom(3, 4), fc.constantFrom('a', 'b', 'neither'), fc.array(valuesOf('int8'), { minLength: 1, maxLength: 40 }), (batch, n, into, values) => {
        const [w, j] = wasmAndJs(() => {
          const a = viewOf('int8', [batch, n], values, [1]);
          const b = viewOf('int8', [batch, n], values.map((v) => v >> 1), [1]);
          const out = into === 'a' ? a : into === 'b' ? b : viewOf('int8', [batch, n], [0], [1]);
          (f.sync as (...args: unknown[]) => unknown)(a, b, { out });
          return [...(out.data as Int8Array), ...(a.data as Int8Array)];
        });
        expect(w).toEqual(j);
      }),
      { numRuns: 60 },
    );
  });
});
