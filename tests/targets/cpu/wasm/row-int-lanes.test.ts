/**
 * Per-row kernels over 8- and 16-bit integers in lanes of their width (row-int-lanes.ts,
 * emit-row-int-lanes.ts): 8 rows per vector in 16-bit lanes, 16 in 8-bit lanes, bit-identical to
 * the JS engine — random batches (not multiples of the lanes, tails, groups of rows), core sizes
 * (0 and short rows included), strides (reversed, spaced), per-row and broadcast scalars, helpers,
 * masked loops, and values at the types' edges (sums and products that wrap, ±2¹⁵, −128, 255,
 * 65535) — and the kernels that must keep 32-bit lanes (a comparison of a wrapped sum, a
 * division, a store into int32).
 */
import fc from 'fast-check';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { type DType, DTYPES } from '../../../../src/dtypes.js';
import { engineMode, setEngineMode } from '../../../../src/targets/cpu/wasm/index.js';
import { guvectorize, shutdown } from '../../../../src/index.js';
import { __testing as rowTesting } from '../../../../src/targets/cpu/wasm/emit-rows.js';
import { expectSameArrays, wasmAndJs } from './same-values.js';

const initialMode = engineMode();
afterEach(() => {
  setEngineMode(initialMode);
  rowTesting.setRowGroups(undefined);
  rowTesting.setIntRows(true);
});
afterAll(async () => {
  await shutdown();
});

type Vector = { [i: number]: number; length: number };
interface View {
  data: ArrayLike<number>;
  shape: number[];
  strides: number[];
  offset: number;
}

const EDGES: Partial<Record<DType, number[]>> = {
  int8: [-128, 127, -1, 0, 1],
  uint8: [0, 255, 128, 1],
  uint8c: [0, 255, 128, 1],
  int16: [-32768, 32767, -1, 0, 16384, -16385],
  uint16: [0, 65535, 32768, 32767, 1],
};

function valuesOf(dtype: DType): fc.Arbitrary<number> {
  const [lo, hi] = { int8: [-128, 127], uint8: [0, 255], uint8c: [0, 255], int16: [-32768, 32767], uint16: [0, 65535] }[dtype as 'int8']!;
  return fc.oneof(fc.integer({ min: lo!, max: hi! }), fc.integer({ min: -3, max: 3 }).map((v) => Math.min(Math.max(v, lo!), hi!)), fc.constantFrom(...EDGES[dtype]!));
}

/** A strided view (`step` 1 contiguous, 2 spaced, −1 reversed, on the batch axis) of `shape`, filled cyclically from `values`. */
function viewOf(dtype: DType, shape: number[], values: number[], step: number): View {
  const inner = shape.slice(1).reduce((a, b) => a * Math.max(b, 1), 1);
  const strides = shape.map((_, a) => (a === 0 ? inner * step : shape.slice(a + 1).reduce((x, y) => x * y, 1)));
  const span = Math.max(shape[0]!, 1) * inner * Math.abs(step);
  const data = new DTYPES[dtype].arrayType(span + 4) as unknown as { [i: number]: number; length: number };
  for (let i = 0; i < data.length; i++) data[i] = values[i % values.length]!;
  const offset = 2 + (step < 0 && shape[0]! > 0 ? (shape[0]! - 1) * inner : 0);
  return { data, shape, strides, offset };
}

interface Case {
  readonly name: string;
  readonly signature: string;
  readonly layout: string;
  readonly kernel: (...args: never[]) => void;
  readonly env?: Record<string, unknown>;
  /** Per input: its dtype and core rank (0: a `()` scalar per row, or broadcast). */
  readonly inputs: readonly { dtype: DType; core: number }[];
  /** The rows per vector `explain` must name. */
  readonly lanes: 16 | 8 | 4 | 2;
}

function mean2(a: number, b: number): number {
  return (a + b) >> 1;
}

/** The range (max − min) of a row of uint8: from literals 255 and 0, unsigned min/max. */
function rangeOfRow(x: Vector, out: Vector): void {
  let lo = 255;
  let hi = 0;
  for (let i = 0; i < x.length; i++) {
    lo = Math.min(lo, x[i]!);
    hi = Math.max(hi, x[i]!);
  }
  out[0] = hi - lo;
}

const CASES: Case[] = [
  {
    name: 'int16 row sum into int16 (wraps as the store does)',
    signature: 'void(int16[:], int16[:])',
    layout: '(n)->()',
    kernel: ((x: Vector, out: Vector) => {
      let s = 0;
      for (let i = 0; i < x.length; i++) s += x[i]!;
      out[0] = s;
    }) as never,
    inputs: [{ dtype: 'int16', core: 1 }],
    lanes: 8,
  },
  {
    name: 'uint8 range (max − min) into uint8: 8-bit lanes, unsigned min/max',
    signature: 'void(uint8[:], uint8[:])',
    layout: '(n)->()',
    kernel: rangeOfRow as never,
    inputs: [{ dtype: 'uint8', core: 1 }],
    lanes: 16,
  },
  {
    name: 'uint8 range into int16: uint8 widened into 16-bit lanes',
    signature: 'void(uint8[:], int16[:])',
    layout: '(n)->()',
    kernel: rangeOfRow as never,
    inputs: [{ dtype: 'uint8', core: 1 }],
    lanes: 8,
  },
  {
    name: 'count of uint8 elements above a per-row or broadcast uint8 threshold, into uint8 (the count wraps past 255)',
    signature: 'void(uint8[:], uint8, uint8[:])',
    layout: '(n),()->()',
    kernel: ((x: Vector, t: number, out: Vector) => {
      let c = 0;
      for (let i = 0; i < x.length; i++) if (x[i]! > t) c++;
      out[0] = c;
    }) as never,
    inputs: [{ dtype: 'uint8', core: 1 }, { dtype: 'uint8', core: 0 }],
    lanes: 16,
  },
  {
    name: 'count above a threshold into int16, compared with the threshold (the count is bounded by the row: exact in 16 bits, not 8)',
    signature: 'void(uint8[:], uint8, int16[:])',
    layout: '(n),()->()',
    kernel: ((x: Vector, t: number, out: Vector) => {
      let c = 0;
      for (let i = 0; i < x.length; i++) if (x[i]! > t) c++;
      out[0] = c > t ? c - t : t - c - 300;
    }) as never,
    inputs: [{ dtype: 'uint8', core: 1 }, { dtype: 'uint8', core: 0 }],
    lanes: 8,
  },
  {
    name: 'uint8 threshold rows (a select of literals) and uint8c brightening (a clamp of a sum read unsigned)',
    signature: 'void(uint8[:], uint8, uint8c[:])',
    layout: '(n),()->(n)',
    kernel: ((x: Vector, t: number, out: Vector) => {
      for (let i = 0; i < x.length; i++) out[i] = x[i]! > t ? 255 : 0;
      for (let i = 0; i < x.length; i++) out[i] = out[i]! === 0 ? x[i]! + t : out[i]! - (x[i]! & 15);
    }) as never,
    inputs: [{ dtype: 'uint8', core: 1 }, { dtype: 'uint8', core: 0 }],
    lanes: 8,
  },
  {
    name: 'int16 clamp between per-row bounds, products that wrap, negation of -32768',
    signature: 'void(int16[:], int16, int16[:])',
    layout: '(n),()->(n)',
    kernel: ((x: Vector, k: number, out: Vector) => {
      for (let i = 0; i < x.length; i++) out[i] = Math.min(Math.max(x[i]!, -(k >> 1)), k);
      for (let i = 0; i < x.length; i++) out[i] = out[i]! * 3 + x[i]! * x[i]! - -x[i]! + (x[i]! << 3);
    }) as never,
    inputs: [{ dtype: 'int16', core: 1 }, { dtype: 'int16', core: 0 }],
    lanes: 8,
  },
  {
    name: 'uint16 rows: an unsigned running maximum, |x − 32768| into uint16, a right shift read unsigned',
    signature: 'void(uint16[:], uint16[:])',
    layout: '(n)->(n)',
    kernel: ((x: Vector, out: Vector) => {
      let m = 0;
      for (let i = 0; i < x.length; i++) {
        m = Math.max(m, x[i]!);
        out[i] = i % 2 === 0 ? m >> 3 : Math.abs(x[i]! - 32768);
      }
    }) as never,
    inputs: [{ dtype: 'uint16', core: 1 }],
    lanes: 8,
  },
  {
    name: 'int8 rows doubled into uint8c (no 8-bit multiply: 16-bit lanes, int8 sign-extended, clamped read signed)',
    signature: 'void(int8[:], int8, uint8c[:])',
    layout: '(n),()->(n)',
    kernel: ((x: Vector, k: number, out: Vector) => {
      for (let i = 0; i < x.length; i++) out[i] = x[i]! * 2 - k;
    }) as never,
    inputs: [{ dtype: 'int8', core: 1 }, { dtype: 'int8', core: 0 }],
    lanes: 8,
  },
  {
    name: 'int8 rows: 8-bit lanes with signed comparisons and a wrapped difference into int8',
    signature: 'void(int8[:], int8, int8[:])',
    layout: '(n),()->(n)',
    kernel: ((x: Vector, k: number, out: Vector) => {
      for (let i = 0; i < x.length; i++) out[i] = x[i]! < k ? x[i]! - k : -x[i]!;
    }) as never,
    inputs: [{ dtype: 'int8', core: 1 }, { dtype: 'int8', core: 0 }],
    lanes: 16,
  },
  {
    name: 'a helper averaging neighbours (`>>` of a sum that fits 16 bits, not 8)',
    signature: 'void(uint8[:], uint8[:])',
    layout: '(n)->(n)',
    env: { mean2 },
    kernel: ((x: Vector, out: Vector) => {
      for (let i = 0; i < x.length; i++) out[i] = mean2(x[i]!, i + 1 < x.length ? x[i + 1]! : x[i]!);
    }) as never,
    inputs: [{ dtype: 'uint8', core: 1 }],
    lanes: 8,
  },
  {
    name: 'right shifts by counts of the lane width or more (`>>>` of values read signed fills with 0)',
    signature: 'void(uint8[:], int16[:])',
    layout: '(n)->(n)',
    kernel: ((x: Vector, out: Vector) => {
      for (let i = 0; i < x.length; i++) out[i] = (x[i]! >>> 20) + (x[i]! >> 17) + (x[i]! >>> 3) + ((x[i]! - 200) >> 15) + ((x[i]! - 200) >> 31);
    }) as never,
    inputs: [{ dtype: 'uint8', core: 1 }],
    lanes: 8,
  },
  {
    name: 'a loop masked per row (a `continue` under a per-row condition): a sum of the elements up to a per-row bound',
    signature: 'void(int16[:], int16, int16[:])',
    layout: '(n),()->()',
    kernel: ((x: Vector, k: number, out: Vector) => {
      let s = 0;
      for (let i = 0; i < x.length; i++) {
        if (x[i]! > k) continue;
        s += x[i]!;
      }
      out[0] = s;
    }) as never,
    inputs: [{ dtype: 'int16', core: 1 }, { dtype: 'int16', core: 0 }],
    lanes: 8,
  },
  {
    name: 'saturating int16 add of a per-row offset (i16x8.add_sat_s), and a clamp the saturation would change (a wrapped sum)',
    signature: 'void(int16[:], int16, int16[:])',
    layout: '(n),()->(n)',
    kernel: ((x: Vector, k: number, out: Vector) => {
      for (let i = 0; i < x.length; i++) out[i] = Math.min(Math.max(x[i]! + k, -32768), 32767) - Math.max(x[i]! - k, -5);
    }) as never,
    inputs: [{ dtype: 'int16', core: 1 }, { dtype: 'int16', core: 0 }],
    lanes: 4,
  },
  {
    name: 'saturating int16 add and difference, clamped to constants inside the lanes',
    signature: 'void(int16[:], int16, int16[:])',
    layout: '(n),()->(n)',
    kernel: ((x: Vector, k: number, out: Vector) => {
      for (let i = 0; i < x.length; i++) out[i] = i % 2 ? Math.min(Math.max(x[i]! + k, -32768), 32767) : Math.max(-30000, Math.min(x[i]! - k, 30000));
    }) as never,
    inputs: [{ dtype: 'int16', core: 1 }, { dtype: 'int16', core: 0 }],
    lanes: 8,
  },
  {
    name: 'uint8 rows brightened and darkened into uint8c (i8x16.add_sat_u, sub_sat_u: 16 rows)',
    signature: 'void(uint8[:], uint8, uint8c[:])',
    layout: '(n),()->(n)',
    kernel: ((x: Vector, k: number, out: Vector) => {
      for (let i = 0; i < x.length; i++) {
        if (x[i]! > 127) out[i] = x[i]! + k;
        else out[i] = x[i]! - k;
      }
    }) as never,
    inputs: [{ dtype: 'uint8', core: 1 }, { dtype: 'uint8', core: 0 }],
    lanes: 16,
  },
  {
    name: 'uint8c rows: a sum clamped into uint8c (exact in 16-bit lanes, clamped read signed)',
    signature: 'void(uint8c[:], uint8c[:])',
    layout: '(n)->(n)',
    kernel: ((x: Vector, out: Vector) => {
      for (let i = 0; i < x.length; i++) out[i] = x[i]! + (x[i]! >> 1) - 20;
    }) as never,
    inputs: [{ dtype: 'uint8c', core: 1 }],
    lanes: 8,
  },
  {
    name: 'stays at 4 rows: a comparison of a wrapped sum',
    signature: 'void(int16[:], int16[:])',
    layout: '(n)->()',
    kernel: ((x: Vector, out: Vector) => {
      let s = 0;
      for (let i = 0; i < x.length; i++) s += x[i]!;
      out[0] = s > 0 ? 1 : -1;
    }) as never,
    inputs: [{ dtype: 'int16', core: 1 }],
    lanes: 4,
  },
  {
    name: 'stays at 4 rows: an int16 compared with a uint16 (no common reading in 16-bit lanes)',
    signature: 'void(int16[:], uint16, int16[:])',
    layout: '(n),()->(n)',
    kernel: ((x: Vector, k: number, out: Vector) => {
      for (let i = 0; i < x.length; i++) out[i] = x[i]! < k ? x[i]! : k;
    }) as never,
    inputs: [{ dtype: 'int16', core: 1 }, { dtype: 'uint16', core: 0 }],
    lanes: 4,
  },
  {
    name: 'stays out of narrow lanes: a division (a float64 quotient: 2 rows)',
    signature: 'void(int16[:], int16, int16[:])',
    layout: '(n),()->(n)',
    kernel: ((x: Vector, k: number, out: Vector) => {
      for (let i = 0; i < x.length; i++) out[i] = x[i]! / (k | 1);
    }) as never,
    inputs: [{ dtype: 'int16', core: 1 }, { dtype: 'int16', core: 0 }],
    lanes: 2,
  },
  {
    name: 'stays at 4 rows: a sum of uint8 stored into int32',
    signature: 'void(uint8[:], int32[:])',
    layout: '(n)->()',
    kernel: ((x: Vector, out: Vector) => {
      let s = 0;
      for (let i = 0; i < x.length; i++) s += x[i]!;
      out[0] = s;
    }) as never,
    inputs: [{ dtype: 'uint8', core: 1 }],
    lanes: 4,
  },
  {
    name: 'stays at 4 rows: a wrapped uint8 difference shifted right (needs the exact value)',
    signature: 'void(uint8[:], uint8[:])',
    layout: '(n)->(n)',
    kernel: ((x: Vector, out: Vector) => {
      for (let i = 0; i < x.length; i++) out[i] = ((x[i]! * 300 + 7) | 0) >> 2;
    }) as never,
    inputs: [{ dtype: 'uint8', core: 1 }],
    lanes: 4,
  },
];

function compare(w: unknown, j: unknown): void {
  if (typeof j === 'string' || typeof w === 'string') {
    expect(w).toBe(j);
    return;
  }
  const data = (x: unknown) => ((x as { data?: ArrayLike<number> }).data ?? (x as ArrayLike<number>));
  expectSameArrays(data(w), data(j));
}

/** Random batches, core sizes, strides and values: the Wasm engine gives what the JS engine gives. */
function checkCase(c: Case, numRuns: number, maxBatch: number): void {
  const f = guvectorize([c.signature], c.layout, c.env ? { env: c.env } : {})(c.kernel);
  const last = c.inputs[c.inputs.length - 1]!;
  fc.assert(
    fc.property(
      fc.integer({ min: 0, max: maxBatch }), fc.integer({ min: 0, max: 20 }), fc.constantFrom(1, 1, 2, -1), fc.boolean(),
      fc.array(valuesOf(c.inputs[0]!.dtype), { minLength: 1, maxLength: 70 }), fc.array(valuesOf(last.dtype), { minLength: 1, maxLength: 20 }),
      (batch, n, step, broadcast, values, scalars) => {
        const args = c.inputs.map((x, i) => {
          if (x.core === 0 && broadcast) return scalars[0]!;
          return viewOf(x.dtype, x.core === 1 ? [batch, n] : [batch], x.core === 0 ? scalars : values, step);
        });
        const [w, j] = wasmAndJs(() => f.sync(...args) as { data: ArrayLike<number> } | ArrayLike<number>);
        compare(w, j);
      },
    ),
    { numRuns },
  );
}

describe('per-row kernels over 8- and 16-bit integers in lanes of their width are bit-identical to the JS engine', () => {
  it.each(CASES.map((c) => [c.name, c] as const))('%s', (_, c) => {
    checkCase(c, 80, 40);
    const f = guvectorize([c.signature], c.layout, c.env ? { env: c.env } : {})(c.kernel);
    const args = c.inputs.map((x) => viewOf(x.dtype, x.core === 1 ? [300, 6] : [300], [1], 1));
    setEngineMode('wasm');
    expect(f.explain(...args)).toContain(`SIMD, ${c.lanes} rows per vector`);
  }, 30_000);

  // Groups of rows side by side (emit-rows.ts rowGroups): one and three per step, over batches
  // spanning several steps, their tail and the one-group loop after.
  it.each([1, 3].flatMap((groups) => CASES.map((c) => [groups, c.name, c] as const)))('%i groups of rows per step: %s', (groups, _, c) => {
    rowTesting.setRowGroups(groups);
    checkCase(c, 25, 100);
  }, 30_000);

  it('explain says why rows run 8 or 16 per vector; turned off, the same kernel runs 4 rows with the same results', () => {
    const define = () =>
      guvectorize(['void(int16[:], int16[:])'], '(n)->()')((x: Vector, out: Vector) => {
        let s = 0;
        for (let i = 0; i < x.length; i++) s += x[i]!;
        out[0] = s;
      });
    const x = { data: Int16Array.from({ length: 70 * 33 }, (_, i) => ((i * 7919) % 65536) - 32768), shape: [70, 33] };
    const narrow = define();
    setEngineMode('wasm');
    expect(narrow.explain(x)).toContain('SIMD, 8 rows per vector in 16-bit lanes (per-row values fit 16 bits; values that may leave them (`s`) are only added, multiplied, or stored into 8- or 16-bit arrays, which keep their low bits) (float64 locals');
    const [w, j] = wasmAndJs(() => narrow.sync(x));
    rowTesting.setIntRows(false);
    const wide = define();
    setEngineMode('wasm');
    expect(wide.explain(x)).toMatch(/SIMD, 4 rows per vector/);
    const [w4] = wasmAndJs(() => wide.sync(x));
    compare(w, j);
    compare(w4, j);
  });

  it('explain tells exact rows, wrapped values and saturating sums apart', () => {
    const range = guvectorize(['void(uint8[:], uint8[:])'], '(n)->()')(rangeOfRow as never);
    const bright = guvectorize(['void(uint8[:], uint8, uint8c[:])'], '(n),()->(n)')((x: Vector, k: number, out: Vector) => {
      for (let i = 0; i < x.length; i++) out[i] = x[i]! + k;
    });
    const x = { data: new Uint8Array(64 * 20), shape: [64, 20] };
    setEngineMode('wasm');
    // hi − lo may be negative: held modulo 2^8, only stored (into uint8, which wraps as the lanes do).
    expect(range.explain(x)).toContain('SIMD, 16 rows per vector in 8-bit lanes (per-row values fit 8 bits; values that may leave them are only added, multiplied, or stored into 8-bit arrays, which keep their low bits) (float64 locals');
    const max = guvectorize(['void(uint8[:], uint8[:])'], '(n)->()')((x: Vector, out: Vector) => {
      let m = 0;
      for (let i = 0; i < x.length; i++) m = Math.max(m, x[i]!);
      out[0] = m;
    });
    expect(max.explain(x)).toContain('SIMD, 16 rows per vector in 8-bit lanes (per-row values fit 8 bits) (float64 locals');
    expect(bright.explain(x, 9)).toContain('SIMD, 16 rows per vector in 8-bit lanes (per-row values fit 8 bits; sums only clamped add with saturation); ');
  });
});
