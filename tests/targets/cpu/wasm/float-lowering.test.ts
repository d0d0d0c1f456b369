/**
 * Float lowerings in SIMD lanes that rest on what is known of a value (float-ranges.ts) or on a
 * constant operand (emit-simd.ts): `Math.min`/`Math.max` against a constant as pseudo-min/max,
 * `Math.round`, float → integer conversions whose value is known to fit (no huge-value path, no
 * wrap). Each bit-identical to the JS engine over random values and every edge value (NaN, ±0,
 * ±∞, .5 ties, 0.49999999999999994, 2⁵²…, the integer types' bounds ± ½), at lengths that leave
 * tails, with arrays in Wasm memory and not.
 */
import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import { type DType, DTYPES } from '../../../../src/dtypes.js';
import { engineMode, setEngineMode } from '../../../../src/targets/cpu/wasm/index.js';
import { sharedArray, vectorize } from '../../../../src/index.js';
import { cycleBlockBytes, expectSameArrays } from './same-values.js';

const initialMode = engineMode();
afterEach(() => setEngineMode(initialMode));

const EDGES = [
  0, -0, 0.5, -0.5, 1.5, -1.5, 2.5, -2.5, 0.49999999999999994, -0.49999999999999994, 1, -1, 3.5, -3.5,
  127.5, -128.5, 254.5, 255.5, 256, 32766.5, 32767.5, -32768.5, -32769, 65535.5, 2 ** 31 - 0.5, -(2 ** 31) - 0.5,
  2 ** 52, 2 ** 52 + 1, 2 ** 53, -(2 ** 52) - 1, 4503599627370495.5, 1e15, 1e300, -1e300, 5e-324, -5e-324,
  NaN, Infinity, -Infinity,
];

function values(dtype: DType): fc.Arbitrary<number> {
  const edges = fc.constantFrom(...EDGES);
  if (dtype === 'float64') return fc.oneof(fc.double(), edges, fc.double({ min: -300, max: 300 }), fc.integer({ min: -70000, max: 70000 }).map((i) => i / 2));
  if (dtype === 'float32') return fc.oneof(fc.float(), edges, fc.float({ min: -300, max: 300 }), fc.integer({ min: -70000, max: 70000 }).map((i) => i / 2)).map(Math.fround);
  return fc.integer({ min: dtype === 'uint8' ? 0 : -128, max: dtype === 'uint8' ? 255 : 127 });
}

/** [signature, kernel, lanes expected in `explain`]. */
const KERNELS: [string, (...xs: number[]) => number, string][] = [
  // min/max against constants, every zero and infinity among them
  ['float64(float64)', (x) => Math.min(x, 3.5), 'SIMD, 2 lanes'],
  ['float64(float64)', (x) => Math.max(x, 0), 'SIMD, 2 lanes'],
  ['float64(float64)', (x) => Math.max(0, x), 'SIMD, 2 lanes'],
  ['float64(float64)', (x) => Math.max(-0, x), 'SIMD, 2 lanes'],
  ['float64(float64)', (x) => Math.min(x, 0), 'SIMD, 2 lanes'],
  ['float64(float64)', (x) => Math.min(-0, x), 'SIMD, 2 lanes'],
  ['float64(float64)', (x) => Math.min(x, Infinity) + Math.max(x, -Infinity), 'SIMD, 2 lanes'],
  ['float64(float64, float64)', (x, y) => Math.min(2, x, -1, y), 'SIMD, 2 lanes'],
  ['float64(float64, float64)', (x, y) => Math.max(x, 0, y), 'SIMD, 2 lanes'],
  ['float32(float32)', (x) => Math.min(1, Math.max(0, x * 1.5 - 0.2)), 'SIMD, 4 lanes'],
  ['float32(float32)', (x) => Math.max(x, 0) - Math.min(x, -0), 'SIMD, 4 lanes'],
  ['float32(float32, float32)', (x, y) => Math.max(-2.5, x, y), 'SIMD, 4 lanes'],
  // Math.round
  ['float64(float64)', (x) => Math.round(x), 'SIMD, 2 lanes'],
  ['float32(float32)', (x) => Math.round(x * 0.5), 'SIMD, 4 lanes'],
  // float → integer where the value is known to fit
  ['int16(float32)', (x) => Math.max(-32768, Math.min(32767, Math.round(x * 32767))), 'SIMD, 4 lanes'],
  ['int16(float64)', (x) => Math.max(-32768, Math.min(32767, Math.round(x))), 'SIMD, 2 lanes'],
  ['uint8(float64)', (x) => Math.min(255, Math.max(0, x * 300)), 'SIMD, 2 lanes'],
  ['int8(float64)', (x) => Math.round(Math.min(Math.max(x, -100), 100)), 'SIMD, 2 lanes'],
  ['int32(float64)', (x) => Math.floor(Math.min(x, 1e9)), 'SIMD, 2 lanes'],
  ['int32(float64)', (x) => Math.min(Math.max(x, -1e9), 1e9), 'SIMD, 2 lanes'],
  ['uint16(float64)', (x) => Math.max(0, Math.min(65535, x * 0.5)), 'SIMD, 2 lanes'],
  ['int32(float32)', (x) => Math.max(-1e9, Math.min(x, 2e9)), 'SIMD, 4 lanes'],
  ['uint8(int8, float64)', (p, s) => Math.min(255, Math.max(0, Math.round(1.2 * p * s - 20))), 'SIMD, 2 lanes'],
  // never NaN, below 2⁵¹, not integers: truncated, then the exact add
  ['int16(int8)', (p) => p * 1.7 + 0.3, 'SIMD, 2 lanes'],
  ['uint8(uint8, int8)', (p, q) => (p - q) * 0.6, 'SIMD, 2 lanes'],
  // … and where it is not: the huge-value path and the wrap stay
  ['int32(float64)', (x) => Math.round(Math.max(-1e15, Math.min(1e15, x))), 'SIMD, 2 lanes'],
  ['int16(float64)', (x) => Math.min(Math.max(x, -40000), 40000), 'SIMD, 2 lanes'],
  ['uint8(float32)', (x) => Math.min(300, Math.max(-5, x)), 'SIMD, 4 lanes'],
];

function fill(dtype: DType, data: readonly number[], shared: boolean): ArrayLike<number> {
  const a = (shared ? sharedArray(data.length, dtype as never) : new DTYPES[dtype].arrayType(data.length)) as unknown as { [i: number]: number };
  data.forEach((v, i) => (a[i] = v));
  return a as unknown as ArrayLike<number>;
}

describe('float lowerings that rest on ranges and constants, in SIMD lanes', () => {
  it.each(KERNELS.map(([s, k, lanes], i) => [i, s, k, lanes] as const))('kernel %i: %s', (_, signature, kernel, lanes) => {
    const f = vectorize([signature])(kernel);
    const types = signature.slice(signature.indexOf('(') + 1, -1).split(',').map((t) => t.trim() as DType);
    setEngineMode('wasm');
    expect(f.explain(...types.map((t) => fill(t, new Array(64).fill(1), true)))).toContain(lanes);
    fc.assert(
      fc.property(fc.array(fc.tuple(...types.map(values)), { maxLength: 150 }), fc.boolean(), (rows, shared) => {
        const inputs = types.map((t, k) => fill(t, rows.map((r) => r[k]!), shared));
        setEngineMode('wasm');
        cycleBlockBytes();
        const w = f.sync(...inputs) as ArrayLike<number>;
        setEngineMode('js');
        expectSameArrays(w, f.sync(...inputs) as ArrayLike<number>);
      }),
      { numRuns: 60 },
    );
    // every edge value against every other (the first operand runs through all of them)
    const edgeRows = EDGES.flatMap((x) => EDGES.map((y) => [x, y]));
    const inputs = types.map((t, k) => fill(t, edgeRows.map((r) => (t.startsWith('float') ? r[k]! : Math.max(-128, Math.min(127, Math.trunc(r[k]!) || 0)))), true));
    setEngineMode('wasm');
    const w = f.sync(...inputs) as ArrayLike<number>;
    setEngineMode('js');
    expectSameArrays(w, f.sync(...inputs) as ArrayLike<number>);
  });
});
