/**
 * Element-wise kernels on 8- and 16-bit integers, float ↔ integer conversions and float32 beside
 * float64 run in SIMD lanes (emit-simd.ts: narrow integers as exact int32 lanes, several vectors
 * per step), bit-identical to the JS engine: random values and every edge value of each type,
 * lengths that leave tails, scalar and broadcast operands, foreign arrays staged in blocks.
 */
import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import { type DType, DTYPES } from '../../../../src/dtypes.js';
import { engineMode, setEngineMode } from '../../../../src/targets/cpu/wasm/index.js';
import { sharedArray, vectorize } from '../../../../src/index.js';
import { __testing as blockTesting } from '../../../../src/targets/cpu/wasm/block-staging.js';
import { cycleBlockBytes, expectSameArrays } from './same-values.js';

const initialMode = engineMode();
afterEach(() => {
  setEngineMode(initialMode);
  blockTesting.setBlockBytes(undefined);
});

const INT_RANGE: Partial<Record<DType, [number, number]>> = {
  int8: [-128, 127], uint8: [0, 255], uint8c: [0, 255], int16: [-32768, 32767], uint16: [0, 65535],
  int32: [-(2 ** 31), 2 ** 31 - 1], uint32: [0, 2 ** 32 - 1],
};

/** Floats around every boundary a conversion to an integer type has. */
const FLOAT_EDGES = [
  0, -0, 0.5, -0.5, 1.5, 2.5, -2.5, 127.5, 128, -128.5, 254.5, 255.5, 256, -1, 32767.5, 32768, -32769, 65535.5, 65536,
  2 ** 31 - 0.5, 2 ** 31, -(2 ** 31), -(2 ** 31) - 1, 2 ** 32, 2 ** 32 + 3, -(2 ** 32) - 5, 2 ** 40 + 2 ** 17, -(2 ** 52) - 3,
  2 ** 63, 1e20, -1e30, 3.4e38, NaN, Infinity, -Infinity, 5e-324, -1e-310,
];

function valuesOf(dtype: DType): fc.Arbitrary<number> {
  const range = INT_RANGE[dtype];
  if (range) return fc.oneof(fc.integer({ min: range[0], max: range[1] }), fc.constantFrom(range[0], range[1], range[0] + 1, range[1] - 1, 0));
  const edges = fc.constantFrom(...FLOAT_EDGES);
  if (dtype === 'float64') return fc.oneof(fc.double(), edges, fc.double({ min: -70000, max: 70000 }));
  return fc.oneof(fc.float(), edges, fc.float({ min: -70000, max: 70000 })).map(Math.fround);
}

function fill(dtype: DType, values: number[], shared: boolean): ArrayLike<number> {
  const array = (shared ? sharedArray(values.length, dtype as never) : new DTYPES[dtype].arrayType(values.length)) as unknown as { [i: number]: number };
  values.forEach((v, i) => (array[i] = v));
  return array as unknown as ArrayLike<number>;
}

/** [signature, kernel, elements per step expected in `explain`]. */
const KERNELS: [string, (...xs: number[]) => number, string][] = [
  // 16-bit lanes (int-lanes.ts): every value fits 16 bits, or a sum saturates under a clamp, or
  // ring operations wrap to the result's bits.
  ['int16(int16, int16)', (a, b) => Math.min(Math.max(a + b, -32768), 32767), '8 lanes)'],
  ['int16(int16, int16)', (a, b) => a + b, '8 lanes)'],
  ['int16(int16, int16)', (a, b) => Math.max(Math.min(a - b, 1000), -1000), '8 lanes)'],
  ['int16(int16, int16)', (a, b) => a * b + 7, '8 lanes)'],
  ['int16(int16, int16)', (a, b) => (a >> 17) + (b >> 3) - (a > b ? b : a), '8 lanes)'],
  ['int16(int16, uint8)', (a, b) => (a > b ? Math.abs(a >> 1) : -b), '8 lanes × 2 vectors'],
  ['uint8c(int16, int16)', (a, b) => a + b, '8 lanes × 2 vectors'],
  // 8-bit lanes (int-lanes.ts): uint8 kernels in [0, 255] with unsigned saturation, int8 in [−128, 127].
  ['uint8(uint8, uint8)', (a, b) => Math.min(a + b, 255), '16 lanes)'],
  ['uint8(uint8, uint8)', (a, b) => Math.max(a - b, 0), '16 lanes)'],
  ['uint8(uint8, uint8)', (a, b) => ((a ^ b) & 0xf0) | (a >> 4) | (a > b ? b & 1 : a & 2), '16 lanes)'],
  ['uint8c(uint8, uint8)', (a, b) => a + b, '16 lanes)'],
  ['uint8c(uint8, uint8)', (a, b) => a - b, '16 lanes)'],
  ['int8(int8, int8)', (a, b) => Math.min(Math.max(a + b, -128), 127), '16 lanes)'],
  ['int8(int8, int8)', (a, b) => a - b + (b << 2), '16 lanes)'],
  // Selects of integer literals (doubles by the language's rule 1) stored to an integer type: int lanes.
  ['uint8(uint8, uint8)', (a, b) => (a > b ? 255 : 0), '16 lanes)'],
  ['int16(int16, int16)', (a, b) => (a > b ? -7 : a < -b ? 70000 : 3), '4 lanes × 2 vectors'],
  ['int32(float32, float32)', (a, b) => (a > b ? 1 : -1), '4 lanes)'],
  ['uint8(uint8, uint8)', (a, b) => (a > b ? 255.5 : 0), '2 lanes × 8 vectors'],
  ['uint8(uint8, uint8)', (a, b) => (a + b) >> 1, '8 lanes × 2 vectors'],
  ['uint8(uint8, uint8)', (a, b) => (a > b ? a - b : b - a), '8 lanes × 2 vectors'],
  ['int8(int8, int8)', (a, b) => (a > b ? a - b : b * 3), '8 lanes × 2 vectors'],
  ['int8(int8, int8)', (a, b) => (a * b) ^ (a << 3), '8 lanes × 2 vectors'],
  // 32-bit lanes: a value may leave 16 bits, or an operand does not fit a signed 16-bit lane.
  ['int16(int16, int16)', (a, b) => Math.min(a + b, 40000), '4 lanes × 2 vectors'],
  ['int16(int16, int16)', (a, b) => Math.max(a + b, -5), '4 lanes × 2 vectors'],
  ['int16(int16, int16)', (a, b) => Math.min(Math.max(a * b, -32768), 32767), '4 lanes × 2 vectors'],
  // (the uint8c clamp after `Math.min` is not part of the saturation check: 32-bit lanes)
  ['uint8c(int16, int16)', (a, b) => Math.min(a - b, 300), '4 lanes × 4 vectors'],
  ['uint16(uint16, int16)', (a, b) => a * b - (a >> 3) + (b & 0xff0), '4 lanes × 2 vectors'],
  ['uint8c(int16, uint8)', (a, b) => a * 3 - b, '4 lanes × 4 vectors'],
  ['uint8(uint8, float64)', (x, g) => Math.min(Math.floor(255 * (x / 255) ** g), 255), '2 lanes × 8 vectors'],
  ['uint8(uint8, float32)', (x, g) => Math.min(Math.floor(255 * Math.sqrt(x / 255) * g), 255), '2 lanes × 8 vectors'],
  ['uint8c(float32)', (x) => x, '4 lanes × 4 vectors'],
  ['uint8c(float64)', (x) => x * 1.5, '2 lanes × 8 vectors'],
  ['uint8c(uint32)', (x) => x, '4 lanes × 4 vectors'],
  ['uint8c(int32)', (x) => x, '4 lanes × 4 vectors'],
  ['int8(float64)', (x) => x, '2 lanes × 8 vectors'],
  ['uint8(float32)', (x) => x, '4 lanes × 4 vectors'],
  ['int16(float32)', (x) => x, '4 lanes × 2 vectors'],
  ['uint16(float64)', (x) => x, '2 lanes × 4 vectors'],
  ['int32(float32)', (x) => x, '4 lanes'],
  ['uint32(float32)', (x) => x, '4 lanes'],
  ['int32(float64)', (x) => x, '2 lanes × 2 vectors'],
  ['uint32(float64)', (x) => Math.floor(x * 3), '2 lanes × 2 vectors'],
  ['float32(int8, uint16)', (a, b) => a * 0.5 + b, '2 lanes × 8 vectors'],
  ['float64(uint8c, int16)', (a, b) => a / (b + 0.5), '2 lanes × 8 vectors'],
  ['float32(float32, float64)', (x, y) => (x > y ? x * y : x - 1), '2 lanes × 2 vectors'],
  ['int16(int16)', (a) => { const b = a * a; return b > 1000 ? b : -a; }, '4 lanes × 2 vectors'],
];

describe('narrow integers, conversions and mixed widths in SIMD lanes', () => {
  it.each(KERNELS.map(([s, k, step], i) => [i, s, k, step] as const))('kernel %i: %s', (_, signature, kernel, step) => {
    const f = vectorize([signature])(kernel);
    const types = signature.slice(signature.indexOf('(') + 1, -1).split(',').map((t) => t.trim() as DType);
    const ret = signature.slice(0, signature.indexOf('(')) as DType;
    const probe = types.map((t) => fill(t, new Array(64).fill(0), true));
    setEngineMode('wasm');
    expect(f.explain(...probe, { out: sharedArray(64, ret as never) })).toContain(`WebAssembly (SIMD, ${step}`);
    fc.assert(
      fc.property(
        fc.array(fc.tuple(...types.map(valuesOf)), { minLength: 0, maxLength: 150 }),
        fc.boolean(),
        fc.integer({ min: -1, max: types.length - 1 }),
        (rows, shared, broadcast) => {
          // One operand may be a single broadcast value instead of an array.
          const inputs = types.map((t, k) => (k === broadcast && rows.length ? fill(t, [rows[0]![k]!], shared) : fill(t, rows.map((r) => r[k]!), shared)));
          setEngineMode('wasm');
          cycleBlockBytes();
          const w = f.sync(...inputs) as ArrayLike<number>;
          setEngineMode('js');
          const j = f.sync(...inputs) as ArrayLike<number>;
          expectSameArrays(w, j);
        },
      ),
      { numRuns: 60 },
    );
  });

  it('wraps and clamps every value of a 16-bit type exactly as the JS engine', () => {
    const all = Int16Array.from({ length: 65536 }, (_, i) => i - 32768);
    const rev = Int16Array.from(all).reverse();
    for (const [signature, kernel] of [
      ['int16(int16, int16)', (a: number, b: number) => a + b],
      ['int16(int16, int16)', (a: number, b: number) => Math.min(Math.max(a - b, -32768), 32767)],
      ['uint8c(int16, int16)', (a: number, b: number) => a - b],
      ['int8(int16, int16)', (a: number, b: number) => a * b],
      ['uint16(int16, int16)', (a: number, b: number) => a * 7 + b],
    ] as const) {
      const f = vectorize([signature])(kernel);
      setEngineMode('wasm');
      const w = f.sync(all, rev) as ArrayLike<number>;
      setEngineMode('js');
      expectSameArrays(w, f.sync(all, rev) as ArrayLike<number>);
    }
  });

  it('computes every pair of 8-bit values in 8-bit lanes exactly as the JS engine', () => {
    const pairs = (signed: boolean) => {
      const a = new (signed ? Int8Array : Uint8Array)(65536);
      const b = new (signed ? Int8Array : Uint8Array)(65536);
      for (let i = 0; i < 65536; i++) {
        a[i] = i & 255;
        b[i] = i >> 8;
      }
      return [a, b] as const;
    };
    for (const [signature, kernel] of [
      ['uint8(uint8, uint8)', (a: number, b: number) => Math.min(a + b, 255)],
      ['uint8(uint8, uint8)', (a: number, b: number) => Math.max(a - b, 0)],
      ['uint8c(uint8, uint8)', (a: number, b: number) => a - b],
      ['uint8(uint8, uint8)', (a: number, b: number) => (a > b ? a : b) - (a <= b ? a : b) + (a >> 3)],
      ['int8(int8, int8)', (a: number, b: number) => Math.min(Math.max(a + b, -128), 127)],
      ['int8(int8, int8)', (a: number, b: number) => Math.max(Math.min(a - b, 100), -100)],
      ['int8(int8, int8)', (a: number, b: number) => a + b - (b << 3)],
    ] as const) {
      const f = vectorize([signature])(kernel);
      const [a, b] = pairs(signature.startsWith('int8'));
      setEngineMode('wasm');
      expect(f.explain(a, b)).toContain('SIMD, 16 lanes');
      const w = f.sync(a, b) as ArrayLike<number>;
      setEngineMode('js');
      expectSameArrays(w, f.sync(a, b) as ArrayLike<number>);
    }
  });

  it('converts every float edge value to every integer type as a typed-array store does', () => {
    const edges = [...FLOAT_EDGES, ...FLOAT_EDGES.map((x) => -x)];
    for (const from of ['float32', 'float64'] as const) {
      const xs = fill(from, edges, true);
      for (const to of ['int8', 'uint8', 'uint8c', 'int16', 'uint16', 'int32', 'uint32'] as const) {
        const f = vectorize([`${to}(${from})`])((x: number) => x);
        setEngineMode('wasm');
        const w = f.sync(xs as Float64Array) as ArrayLike<number>;
        const expected = new DTYPES[to].arrayType(edges.length) as unknown as number[];
        for (let i = 0; i < edges.length; i++) expected[i] = xs[i]!;
        expectSameArrays(w, expected as unknown as ArrayLike<number>);
      }
    }
  });
});
