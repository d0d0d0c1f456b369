/**
 * The Wasm engine is bit-identical to the JS engine (the reference): each kernel below runs on
 * both engines over random values (NaN, ±Infinity, −0, subnormals, integer extremes), random
 * strides and shapes, and the outputs must match bit for bit (any NaN equals any NaN: JS does not
 * keep NaN payloads either).
 */
import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import { type DType, DTYPES } from '../../../../src/dtypes.js';
import { engineMode, setEngineMode } from '../../../../src/targets/cpu/wasm/index.js';
import { guvectorize, sharedArray, vectorize } from '../../../../src/index.js';
import { __testing as blockTesting } from '../../../../src/targets/cpu/wasm/block-staging.js';
import { cycleBlockBytes, expectSameArrays } from './same-values.js';

const initialMode = engineMode();
afterEach(() => {
  setEngineMode(initialMode);
  blockTesting.setBlockBytes(undefined);
});

/** Values of a dtype including its edge cases. */
function valuesOf(dtype: DType): fc.Arbitrary<number> {
  switch (dtype) {
    case 'float64':
      return fc.oneof(fc.double(), fc.constantFrom(0.5, -0.5, 1.5, 2.5, -2.5, 2 ** 31, -(2 ** 31), 2 ** 32 + 3.5, 2 ** 63, 2 ** 84 + 2 ** 40, 1e300, 4294967295.7, -0));
    case 'float32':
      return fc.oneof(fc.float(), fc.constantFrom(0.5, -0.5, 2.5, 2 ** 31, 2 ** 40, -(2 ** 35), -0)).map(Math.fround);
    case 'int32':
      return fc.oneof(fc.integer(), fc.constantFrom(-2147483648, 2147483647, 0, -1, 1));
    case 'uint32':
      return fc.oneof(fc.nat({ max: 4294967295 }), fc.constantFrom(0, 4294967295, 2147483648));
    case 'int16':
      return fc.integer({ min: -32768, max: 32767 });
    case 'uint16':
      return fc.integer({ min: 0, max: 65535 });
    case 'int8':
      return fc.integer({ min: -128, max: 127 });
    case 'uint8':
    case 'bool':
      return fc.integer({ min: 0, max: dtype === 'bool' ? 1 : 255 });
    default:
      throw new Error(dtype);
  }
}

function fill(dtype: DType, values: number[]): ArrayLike<number> {
  const array = new DTYPES[dtype].arrayType(values.length) as unknown as { [i: number]: number; length: number };
  values.forEach((v, i) => (array[i] = v));
  return array;
}

/** Runs `f` on both engines and returns both results. */
function both<T>(f: () => T): [T, T] {
  setEngineMode('wasm');
  cycleBlockBytes();
  const w = f();
  setEngineMode('js');
  const j = f();
  return [w, j];
}

/** Element-wise kernels: [signature, kernel]. Each covers operators, conversions, control flow. */
const ELEMENTWISE: [string, (...xs: number[]) => number | boolean][] = [
  ['float32(float32, float32, float32)', (a, x, y) => a * x + y],
  ['float64(float64, float64)', (x, y) => (x - y) / (x * y + 1) % 3],
  ['float32(float32, float32)', (x, y) => x % y + Math.sqrt(x) - y / x],
  ['float64(float64)', (x) => Math.round(x) + Math.sign(x) * Math.floor(x) - Math.ceil(x) * Math.trunc(x)],
  ['float32(float32)', (x) => Math.round(x) + Math.sign(x) - Math.abs(x)],
  ['float64(float64, float64)', (x, y) => Math.min(x, y, 1) + Math.max(x, -y)],
  ['float64(float64)', (x) => Math.exp(x) + Math.log(x) + Math.sin(x) + Math.atan2(x, 2) + Math.pow(x, 1.5) + Math.hypot(x, 3, 4)],
  ['float32(float32)', (x) => Math.exp(x) * Math.cos(x) + Math.cbrt(x) + Math.fround(x * 1.1)],
  ['int32(float64)', (x) => x | 0],
  ['uint32(float64)', (x) => x >>> 0],
  ['int16(float64)', (x) => x],
  ['uint8(float64)', (x) => x],
  ['int8(float32)', (x) => x],
  ['uint16(float32)', (x) => x],
  ['bool(float64)', (x) => x],
  ['int32(int32, int32)', (a, b) => Math.imul(a, b) + (a % b) - (a ^ b) + (a << (b & 7)) + (a >> 3) + Math.clz32(a)],
  ['uint32(uint32, uint32)', (a, b) => a * b + (a % b) - b],
  ['int32(int32, int32)', (a, b) => Math.abs(a) + Math.sign(b) + Math.min(a, b) - Math.max(a, b, 7)],
  ['uint32(uint32, uint32)', (a, b) => Math.min(a, b) + Math.max(a, b) + Math.sign(a)],
  ['float64(int32, uint32)', (a, b) => a / 3 + b / 7],
  ['float32(int16, uint8)', (a, b) => a * 0.5 + b],
  ['int32(int8, uint16)', (a, b) => a * b - ~a],
  ['float64(float64, float64)', (x, y) => (x < y ? x : y > 0 && x !== y ? y * 2 : -x)],
  ['bool(float64, float64)', (x, y) => x <= y || (x >= 0 && !(y === 0))],
  [
    'float64(uint8, float64)',
    (b, x) => {
      const c = b > 100;
      return c ? x : c === x > 0 ? 1 : -x;
    },
  ],
  [
    'float64(float64, int32)',
    (x, n) => {
      let s = 0;
      for (let i = 0; i < (n & 15); i++) {
        if (i % 3 === 1) continue;
        if (s > 1e9) break;
        s += x * i;
      }
      let j = 0;
      do {
        j++;
        s -= 0.25;
      } while (j < 3);
      while (s > 100 && j < 60) {
        s /= 2;
        j++;
      }
      if (x > 0) return s;
      return -s;
    },
  ],
  [
    'float32(float32)',
    (x) => {
      const t = new Float32Array(4);
      for (let i = 0; i < t.length; i++) t[i] = x * i;
      return t[0]! + t[1]! + t[2]! * t[3]!;
    },
  ],
  [
    // Loop counters kept in i32 (loop-counters.ts), in indices with offsets and in arithmetic.
    'float64(float64, int32)',
    (x, n) => {
      const t = new Float64Array(8);
      for (let i = 0; i < (n & 7); i++) t[i] = x + i;
      let s = 0;
      for (let i = 1; i < 8; i++) s += t[i - 1]! * t[i]! - i / 3;
      for (let i = -5; i < n % 4; i++) s += i * 0.5;
      return s;
    },
  ],
];

describe('the Wasm engine is bit-identical to the JS engine', () => {
  it.each(ELEMENTWISE.map(([s, k], i) => [i, s, k] as const))('vectorize kernel %i: %s', (_, signature, kernel) => {
    const f = vectorize([signature])(kernel);
    const types = signature.slice(signature.indexOf('(') + 1, -1).split(',').map((t) => t.trim() as DType);
    fc.assert(
      fc.property(fc.array(fc.tuple(...types.map(valuesOf)), { minLength: 0, maxLength: 200 }), (rows) => {
        const inputs = types.map((t, k) => fill(t, rows.map((r) => r[k]!)));
        const [w, j] = both(() => f.sync(...inputs));
        expectSameArrays(w, j);
      }),
      { numRuns: 40 },
    );
  });

  it('element-wise kernels with helpers run in lanes (helpers inlined, returns under masks)', () => {
    const clampUnit = (v: number) => {
      if (v > 1) return 1;
      if (v < -1) return -1;
      return v;
    };
    const square = (v: number) => v * v;
    const positive = (v: number) => {
      if (v > 0) return v;
    };
    const cases = [
      ['float64(float64, float64)', (x: number, y: number) => clampUnit(x) * square(y) + clampUnit(y - x)],
      ['float32(float32, float32)', (x: number, y: number) => (x > y ? square(x) : square(square(y)) - clampUnit(x))],
      ['float64(float64, float64)', (x: number, y: number) => positive(x)! + positive(y - 1)!],
    ] as const;
    for (const [signature, kernel] of cases) {
      const f = vectorize([signature], { env: { clampUnit, square, positive } })(kernel);
      const dtype = signature.startsWith('float32') ? 'float32' : 'float64';
      setEngineMode('wasm');
      const probe = fill(dtype, [0, 0, 0, 0]) as Float64Array;
      expect(f.explain(probe, probe)).toMatch(/^WebAssembly \(SIMD/);
      fc.assert(
        fc.property(fc.array(fc.tuple(valuesOf(dtype), valuesOf(dtype)), { minLength: 0, maxLength: 100 }), (rows) => {
          const x = fill(dtype, rows.map((r) => r[0]!)) as Float64Array;
          const y = fill(dtype, rows.map((r) => r[1]!)) as Float64Array;
          const [w, j] = both(() => f.sync(x, y));
          expectSameArrays(w, j);
        }),
        { numRuns: 40 },
      );
    }
  });

  it('strided, reversed and broadcast operands of several loop dimensions', () => {
    const f = vectorize(['float64(float64, float64)'])((x: number, y: number) => x * 2 - y);
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 7 }), fc.integer({ min: 1, max: 9 }), fc.constantFrom(1, 2, -1, -3), (m, n, step) => {
        const data = Float64Array.from({ length: m * n * 3 + 4 }, (_, i) => i * 1.25 - 7);
        const first = step > 0 ? 0 : (n - 1) * -step;
        const x = { data, shape: [m, n], strides: [n * 3, step], offset: first };
        const y = Float64Array.from({ length: n }, (_, i) => i / 3);
        const [w, j] = both(() => f.sync(x, y));
        expectSameArrays(w.data, j.data);
        expect(w.shape).toEqual([m, n]);
      }),
      { numRuns: 50 },
    );
  });

  it('per-row kernels with helpers, 2-D core slices and local arrays', () => {
    function dot(a: { [i: number]: number; length: number }, b: { [i: number]: number; length: number }): number {
      let s = 0;
      for (let i = 0; i < a.length; i++) s += a[i]! * b[i]!;
      return s;
    }
    const matvec = guvectorize(['void(float64[:,:], float64[:], float64[:])'], '(m,n),(n)->(m)', { env: { dot } })(
      (a: { [i: number]: { [j: number]: number }; shape: number[] }, x: { [i: number]: number; length: number }, out: { [i: number]: number; length: number }) => {
        const row = new Float64Array(3);
        for (let i = 0; i < out.length; i++) {
          let s = 0;
          for (let j = 0; j < x.length; j++) s += a[i]![j]! * x[j]!;
          row[i % 3] = s;
          out[i] = s + dot(x, x) - row[i % 3]! * 0.5;
        }
      },
    );
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 5 }), fc.integer({ min: 1, max: 6 }), fc.integer({ min: 1, max: 4 }), fc.array(fc.double(), { minLength: 200, maxLength: 200 }), (batch, m, n, values) => {
        const a = { data: Float64Array.from({ length: batch * m * n }, (_, i) => values[i % 200]!), shape: [batch, m, n] };
        const x = Float64Array.from({ length: n }, (_, i) => values[(i * 7) % 200]!);
        const [w, j] = both(() => matvec.sync(a, x));
        expectSameArrays(w.data, j.data);
      }),
      { numRuns: 40 },
    );
  });

  it('indices `(i + k) % n` (computed in i64) as in JS, in and out of bounds', () => {
    const f = guvectorize(['void(float64[:], int32, float64[:])'], '(n),()->(n)')(
      (x: { [i: number]: number; length: number }, k: number, out: { [i: number]: number; length: number }) => {
        const n = x.length;
        for (let i = 0; i < n; i++) out[i] = x[(i + n - 2) % n]! * x[(i + 1) % n]! - x[(i + k) % n]!;
      },
    );
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 9 }), fc.integer({ min: -12, max: 12 }), (n, k) => {
        const x = Float64Array.from({ length: n }, (_, i) => i * 1.5 - 2);
        const [w, j] = both(() => {
          try {
            return f.sync(x, k) as Float64Array;
          } catch (e) {
            return (e as Error).message;
          }
        });
        if (typeof j === 'string') expect(w).toBe(j);
        else expectSameArrays(w as Float64Array, j);
      }),
      { numRuns: 60 },
    );
  });

  it('reports an index out of bounds with the same error as JS', () => {
    const f = guvectorize(['void(float32[:], float32[:])'], '(n)->(n)')((x: { [i: number]: number; length: number }, out: { [i: number]: number; length: number }) => {
      for (let i = 0; i <= x.length; i++) out[i] = x[i]! * 2;
    });
    const x = new Float32Array(8);
    const [w, j] = both(() => {
      try {
        f.sync(x);
        return undefined;
      } catch (e) {
        return e as Error;
      }
    });
    expect(w?.constructor.name).toBe('KernelRuntimeError');
    expect(w?.message).toBe(j?.message);
    expect(w?.message).toContain('out of bounds');
  });

  it('reads and writes arrays in Wasm memory in place, also in place of an input', () => {
    const f = vectorize(['float32(float32, float32)'])((x: number, y: number) => x * y + 1);
    const x = sharedArray(1000, 'float32').map((_, i) => i / 7);
    const y = sharedArray(1000, 'float32').map((_, i) => 3 - i / 11);
    const out = sharedArray(1000, 'float32');
    setEngineMode('auto');
    f.sync(x, y, { out });
    const expected = vectorize(['float32(float32, float32)'])((a: number, b: number) => a * b + 1);
    setEngineMode('js');
    const reference = expected.sync(x, y);
    expectSameArrays(out, reference);
    setEngineMode('auto');
    f.sync(x, y, { out: x });
    expectSameArrays(x, reference);
  });
});
