/**
 * Kernels whose only per-element operand is one byte look their results up in a table of 256
 * (byte-table.ts) in calls of at least BYTE_TABLE_MIN_ELEMENTS elements: bit-identical to the JS
 * engine for every byte, with scalar and broadcast operands of any value (NaN, ±0, ±∞ included),
 * every output type, arrays in Wasm memory or not, on the calling thread and on workers; and only
 * kernels of that shape take it.
 */
import fc from 'fast-check';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { type DType, DTYPES } from '../../../../src/dtypes.js';
import { engineMode, setEngineMode } from '../../../../src/targets/cpu/wasm/index.js';
import { BYTE_TABLE_MIN_ELEMENTS } from '../../../../src/targets/cpu/wasm/byte-table.js';
import { sharedArray, shutdown, vectorize } from '../../../../src/index.js';
import { expectSameArrays } from './same-values.js';

const initialMode = engineMode();
afterEach(() => setEngineMode(initialMode));
afterAll(() => shutdown());

const TABLE = "computes the kernel's 256 results";
const SCALAR_EDGES = [0, -0, 0.5, -0.5, 1, 2.5, 255, 1e-300, 1e300, NaN, Infinity, -Infinity];

/** [signature, kernel]: the first parameter is the byte; the others are passed as scalars. */
const KERNELS: [string, (...xs: number[]) => number][] = [
  ['uint8(uint8)', (p) => Math.min(255, Math.max(0, Math.round(1.2 * p - 20)))],
  ['uint8(uint8, float64)', (p, g) => Math.min(255, Math.floor(255 * (p / 255) ** g))],
  ['uint8(uint8, float64, float64)', (p, lo, hi) => Math.min(255, Math.max(0, Math.floor(((p - lo) * 255) / (hi - lo))))],
  ['int8(int8, float64)', (p, s) => Math.round(p * s)],
  ['uint8c(int8, float64)', (p, s) => p * s - 3.5],
  ['int16(uint8c, float32)', (p, s) => Math.sqrt(p) * s],
  ['int32(uint8, float64)', (p, s) => Math.floor(p * s) | 0],
  ['uint32(int8, float64)', (p, s) => p * s],
  ['float32(uint8, float32)', (p, s) => Math.exp(p / 64) * s],
  ['float64(int8, float64)', (p, s) => (p < 0 ? Math.log(-p) * s : p / s)],
  ['float64(uint8)', (p) => p / 255],
];

const byteArray = (dtype: DType, values: ArrayLike<number>, shared: boolean) => {
  const a = (shared ? sharedArray(values.length, dtype as never) : new DTYPES[dtype].arrayType(values.length)) as unknown as { [i: number]: number };
  for (let i = 0; i < values.length; i++) a[i] = values[i]!;
  return a as unknown as ArrayLike<number>;
};

describe('a function of one byte, looked up in a table of its 256 results', () => {
  it.each(KERNELS.map(([s, k], i) => [i, s, k] as const))('kernel %i: %s', (_, signature, kernel) => {
    const f = vectorize([signature])(kernel);
    const types = signature.slice(signature.indexOf('(') + 1, -1).split(',').map((t) => t.trim() as DType);
    const scalars = types.slice(1).map((t) => (t === 'float32' ? fc.oneof(fc.float(), fc.constantFrom(...SCALAR_EDGES).map(Math.fround)) : fc.oneof(fc.double(), fc.constantFrom(...SCALAR_EDGES))));
    setEngineMode('wasm');
    const probe = byteArray(types[0]!, new Array(BYTE_TABLE_MIN_ELEMENTS).fill(1), true);
    expect(f.explain(probe, ...types.slice(1).map(() => 1))).toContain(TABLE);
    fc.assert(
      fc.property(
        fc.integer({ min: BYTE_TABLE_MIN_ELEMENTS - 3, max: BYTE_TABLE_MIN_ELEMENTS + 700 }),
        fc.integer({ min: 0, max: 2 ** 31 - 1 }),
        fc.tuple(...scalars),
        fc.boolean(),
        fc.boolean(),
        (length, seed, values, shared, broadcast) => {
          // every byte at least once where the call is long enough, then bytes of a seeded generator
          let s = seed;
          const bytes = Array.from({ length }, (_, i) => (i < 256 ? i : ((s = (s * 1103515245 + 12345) >>> 0) >>> 24)));
          const args = [byteArray(types[0]!, bytes, shared), ...values.map((v, k) => (broadcast && k === 0 ? byteArray(types[k + 1]!, [v], shared) : v))];
          setEngineMode('wasm');
          const w = f.sync(...args) as ArrayLike<number>;
          setEngineMode('js');
          expectSameArrays(w, f.sync(...args) as ArrayLike<number>);
        },
      ),
      { numRuns: 12 },
    );
  });

  it('writes into a given out and a slice of an array in Wasm memory as the JS engine', () => {
    const f = vectorize(['float32(uint8, float64)'])((p: number, g: number) => (p / 255) ** g);
    const data = sharedArray(3 * BYTE_TABLE_MIN_ELEMENTS + 5, 'uint8');
    for (let i = 0; i < data.length; i++) data[i] = (i * 37) & 255;
    const slice = data.subarray(3, 3 + 2 * BYTE_TABLE_MIN_ELEMENTS);
    const w = sharedArray(slice.length, 'float32');
    const j = new Float32Array(slice.length);
    setEngineMode('wasm');
    f.sync(slice, 2.2, { out: w });
    setEngineMode('js');
    f.sync(slice, 2.2, { out: j });
    expectSameArrays(w, j);
  });

  it('gives the same results on the parallel target', async () => {
    const kernel = (p: number, g: number) => Math.min(255, Math.floor(255 * (p / 255) ** g));
    const f = vectorize(['uint8(uint8, float64)'], { target: 'parallel' })(kernel);
    const bytes = Uint8Array.from({ length: 16 * BYTE_TABLE_MIN_ELEMENTS }, (_, i) => (i * 7919) & 255);
    setEngineMode('wasm');
    const w = (await f(bytes, 0.4545)) as Uint8Array;
    setEngineMode('js');
    expectSameArrays(w, vectorize(['uint8(uint8, float64)'])(kernel).sync(bytes, 0.4545) as Uint8Array);
  });

  it('is not taken where another operand varies, where lanes compute faster, or where the kernel loops', () => {
    const n = BYTE_TABLE_MIN_ELEMENTS;
    setEngineMode('wasm');
    const two = vectorize(['uint8(uint8, uint8)'])((a: number, b: number) => Math.round((a + b) * 0.75));
    expect(two.explain(new Uint8Array(n), new Uint8Array(n))).not.toContain(TABLE);
    const lanes = vectorize(['uint8(uint8, uint8)'])((a: number, b: number) => Math.min(a + b, 255));
    expect(lanes.explain(new Uint8Array(n), 3)).toContain('16 lanes');
    expect(lanes.explain(new Uint8Array(n), 3)).not.toContain(TABLE);
    const looping = vectorize(['uint8(uint8)'])((p: number) => {
      let steps = 0;
      while (p > 1) {
        p = p % 2 ? 3 * p + 1 : p / 2;
        steps++;
      }
      return steps;
    });
    expect(looping.explain(new Uint8Array(n))).not.toContain(TABLE);
    const wide = vectorize(['float64(int16, float64)'])((a: number, s: number) => Math.round(a * s));
    expect(wide.explain(new Int16Array(n), 0.5)).not.toContain(TABLE);
  });
});
