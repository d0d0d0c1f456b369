/**
 * pow with an exponent the same for the whole call but not a literal (call-exponent.ts: a scalar
 * argument, or a value computed from scalars and literals, its case decided once per call before
 * loops of its own) gives V8's `Math.pow` bit for bit: every case of the exponent (odd, even, not
 * an integer; 0, ±1, 2, 0.5, NaN, ±∞, |y| above 2^31, subnormal, huge) over pow's edge and random
 * bases, float64 and float32, through the public API; exponents computed from scalars; exponents
 * that are not the call's (a loop counter, a reassigned variable, an array) left to the general
 * lanes; per-row forms (rows in lanes, float64 pairs, along the row) against the JS engine. The
 * proof over 10^8 doubles and float32 patterns per case: bench/math-exhaustive.ts `pow^@K`.
 */
import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import { engineMode, setEngineMode } from '../../../../src/targets/cpu/wasm/index.js';
import { __testing as alongTesting } from '../../../../src/targets/cpu/wasm/along-rows.js';
import { __testing as rowsTesting } from '../../../../src/targets/cpu/wasm/emit-rows.js';
import { guvectorize, sharedArray, vectorize } from '../../../../src/index.js';
import { binaryEdges, fillBinary } from '../../../../bench/lib/math-inputs.js';
import { same, wasmAndJs } from './same-values.js';

const initialMode = engineMode();
afterEach(() => {
  setEngineMode(initialMode);
  alongTesting.setAlongRows(undefined);
  rowsTesting.setFloatPairs(undefined);
});

type Dtype = 'float32' | 'float64';
type V = { [i: number]: number; length: number };
type Ufunc = { sync: (...args: unknown[]) => unknown; explain: (...args: unknown[]) => string };

/** Every case of an exponent (pow.ts exponentCase), with neighbours of the edges of e_pow.c's tests on y. */
const EXPONENTS = [
  0, -0, 1, -1, 2, -2, 0.5, -0.5, 3, -3, 6, 7, -7, 2.4, 1 / 2.4, 1 / 2.2, -1.5, 1.25, 1 / 3, 12, 100, 1024, -1074, -1075, 1e10, 1e-300,
  5e-324, -5e-324, 2 ** -1022, 2 ** 31, 2 ** 31 + 1, -(2 ** 31), 2 ** 31 + 2 ** 11, 2 ** 53, 2 ** 53 + 2, 2 ** 64, -(2 ** 64), 1e300, 1 + 2 ** -52,
  1 - 2 ** -53, NaN, -NaN, Infinity, -Infinity,
];
const OF_CALL = 'exponent the same for the whole call';

/** pow's edge bases (subnormal, ±0, ±1, ±∞, NaN, near 1 and the interval bounds of e_pow.c) and random ones. */
function bases(n: number): Float64Array {
  const edges = [...new Set(binaryEdges('pow').map(([x]) => x))];
  const xs = new Float64Array(edges.length + n);
  xs.set(edges);
  fillBinary('pow', xs, new Float64Array(xs.length), 41, edges.length);
  return xs;
}

/** Fails at the first element of `out` that is not `want(i)`'s bits (NaN matching NaN). */
function expectBits(out: ArrayLike<number>, want: (i: number) => number, what: (i: number) => string): void {
  for (let i = 0; i < out.length; i++) {
    const w = want(i);
    if (!same(out[i], w)) expect.fail(`${what(i)}: ${out[i]} in Wasm, V8 gives ${w}`);
  }
}

describe('pow with an exponent of the call, element-wise: V8\'s bits', () => {
  const xs = bases(20_000);

  for (const dtype of ['float64', 'float32'] as const) {
    it(`${dtype}: every case of the exponent, as a scalar argument, over pow's edge and random bases`, () => {
      setEngineMode('wasm');
      const round = dtype === 'float32' ? Math.fround : (v: number) => v;
      const f = vectorize([`${dtype}(${dtype}, ${dtype})`])((x: number, y: number) => x ** y) as unknown as Ufunc;
      const x = sharedArray(xs.length, dtype);
      x.set(xs);
      const out = sharedArray(xs.length, dtype);
      expect(f.explain(x, 2.5, { out })).toMatch(new RegExp(`^WebAssembly \\(SIMD, ${dtype === 'float32' ? 4 : 2} lanes; .*${OF_CALL}`));
      for (const y of EXPONENTS) {
        f.sync(x, y, { out });
        const yy = round(y);
        expectBits(out, (i) => round(x[i]! ** yy), (i) => `${dtype} ${x[i]} ** ${yy}`);
      }
    }, 60_000);
  }

  it('random exponents and bases (fast-check), float64 and float32, and a call after another exponent', () => {
    setEngineMode('wasm');
    const kernels = (['float64', 'float32'] as const).map((dtype) => [dtype, vectorize([`${dtype}(${dtype}, ${dtype})`])((x: number, y: number) => Math.pow(x, y)) as unknown as Ufunc] as const);
    const exponent = fc.oneof(fc.double(), fc.double({ min: -40, max: 40, noNaN: true }), fc.integer({ min: -300, max: 300 }), fc.integer({ min: -80, max: 80 }).map((k) => k / 2), fc.constantFrom(...EXPONENTS));
    const base = fc.oneof(fc.double(), fc.double({ min: -10, max: 10 }), fc.constantFrom(0, -0, 1, -1, NaN, Infinity, -Infinity, 5e-324, -5e-324, 2 ** -1030));
    fc.assert(fc.property(fc.constantFrom(...kernels), fc.array(base, { minLength: 1, maxLength: 70 }), exponent, ([dtype, f], values, y) => {
      const round = dtype === 'float32' ? Math.fround : (v: number) => v;
      const x = sharedArray(values.length, dtype);
      x.set(values);
      const out = sharedArray(values.length, dtype);
      f.sync(x, 3, { out }); // an odd exponent's loops first, then y's
      f.sync(x, y, { out });
      expectBits(out, (i) => round(x[i]! ** round(y)), (i) => `${dtype} ${x[i]} ** ${round(y)}`);
    }), { numRuns: 300 });
  }, 60_000);

  it('exponents computed from scalars and literals: a gamma curve, 1 / gamma through a const, a broadcast exponent', () => {
    setEngineMode('wasm');
    const n = 4099;
    const curve = vectorize(['float32(float32, float32)'])((p: number, gamma: number) => 255 * (p / 255) ** gamma) as unknown as Ufunc;
    const inverse = vectorize(['float64(float64, float64, float64)'])((p: number, gamma: number, scale: number) => {
      const g = 1 / gamma;
      return scale * (p / 255) ** g + p ** (g * 2 - 1);
    }) as unknown as Ufunc;
    const p32 = sharedArray(n, 'float32');
    const p64 = sharedArray(n);
    for (let i = 0; i < n; i++) p32[i] = p64[i] = i % 257 === 0 ? [NaN, -0, -3, Infinity][i % 4]! : (i * 255) / n;
    const out32 = sharedArray(n, 'float32');
    const out64 = sharedArray(n);
    expect(inverse.explain(p64, 2.2, 1, { out: out64 })).toContain(OF_CALL);
    for (const gamma of [2.2, 1 / 2.2, 1, 0.5, 2, -1, 0, 3, NaN, Infinity, 1e-310]) {
      curve.sync(p32, gamma, { out: out32 });
      const g32 = Math.fround(gamma);
      expectBits(out32, (i) => Math.fround(255 * Math.fround(Math.fround(p32[i]! / 255) ** g32)), (i) => `gamma ${gamma}, p = ${p32[i]}`);
      inverse.sync(p64, gamma, 0.5, { out: out64 });
      const g = 1 / gamma;
      expectBits(out64, (i) => 0.5 * (p64[i]! / 255) ** g + p64[i]! ** (g * 2 - 1), (i) => `1 / ${gamma}, p = ${p64[i]}`);
      // the exponent a broadcast one-element array
      curve.sync(p32, Float32Array.of(gamma), { out: out32 });
      expectBits(out32, (i) => Math.fround(255 * Math.fround(Math.fround(p32[i]! / 255) ** g32)), (i) => `broadcast gamma ${gamma}, p = ${p32[i]}`);
    }
    // no elements: y is not computed (an empty broadcast operand has none to read)
    expect(Array.from(curve.sync(sharedArray(0, 'float32'), new Float32Array(0)) as Float32Array)).toEqual([]);
  }, 60_000);

  it('exponents that are not the call\'s stay right: a loop counter, a reassigned variable, per-element, two different exponents', () => {
    setEngineMode('wasm');
    const n = 1001;
    const x = sharedArray(n);
    const y = sharedArray(n);
    for (let i = 0; i < n; i++) [x[i], y[i]] = [(i % 13) - 4.5 + i / n, (i % 7) - 3];
    const kernels: [string, Ufunc, number[], (i: number, k: number) => number][] = [
      ['a loop counter', vectorize(['float64(float64, float64)'])((a: number, k: number) => {
        let s = 0;
        for (let j = 0; j < 4; j++) s += a ** (j + k);
        return s;
      }) as unknown as Ufunc, [], (i, k) => x[i]! ** k + x[i]! ** (1 + k) + x[i]! ** (2 + k) + x[i]! ** (3 + k)],
      ['a reassigned variable', vectorize(['float64(float64, float64)'])((a: number, k: number) => {
        let g = k;
        if (a > 0) g = k + 0.5;
        return a ** g;
      }) as unknown as Ufunc, [], (i, k) => x[i]! ** (x[i]! > 0 ? k + 0.5 : k)],
      ['per element', vectorize(['float64(float64, float64, float64)'])((a: number, b: number, k: number) => a ** (b + k)) as unknown as Ufunc, [], (i, k) => x[i]! ** (y[i]! + k)],
      ['two exponents', vectorize(['float64(float64, float64, float64)'])((a: number, k: number, m: number) => a ** k - a ** m + a ** k) as unknown as Ufunc, [], (i, k) => x[i]! ** k - x[i]! ** (k + 0.5) + x[i]! ** k],
    ];
    for (const [name, f, , want] of kernels) {
      for (const k of [3, 2, 2.5, -1, NaN]) {
        const out = sharedArray(n);
        if (name === 'per element') f.sync(x, y, k, { out });
        else if (name === 'two exponents') f.sync(x, k, k + 0.5, { out });
        else f.sync(x, k, { out });
        expectBits(out, (i) => want(i, k), (i) => `${name}, k = ${k}, x = ${x[i]}`);
      }
    }
  });
});

describe('pow with an exponent of the call in per-row forms: the JS engine\'s bits', () => {
  const sum = (x: V, g: number, out: V) => {
    let s = 0;
    for (let i = 0; i < x.length; i++) s += x[i]! ** g;
    out[0] = s;
    for (let i = 1; i < out.length; i++) out[i] = x[i]! ** (g * 2);
  };
  const map = (x: V, g: number, out: V) => {
    for (let i = 0; i < x.length; i++) out[i] = x[i]! ** g;
  };
  const forms: [string, (x: V, g: number, out: V) => void, Dtype, () => void, RegExp][] = [
    ['rows in lanes, float64', sum, 'float64', () => undefined, /^WebAssembly \(SIMD, 2 rows per vector/],
    ['rows in lanes, float32', map, 'float32', () => undefined, /^WebAssembly \(SIMD, 4 rows per vector/],
    ['float64 in pairs (float32 rows)', sum, 'float32', () => rowsTesting.setFloatPairs(true), /^WebAssembly \(SIMD, 4 rows per vector \(float64 values in pairs/],
    ['along the row, float64', map, 'float64', () => alongTesting.setAlongRows(true), /^WebAssembly \(rows one after another/],
    ['along the row, float32', map, 'float32', () => alongTesting.setAlongRows(true), /^WebAssembly \(rows one after another/],
  ];
  for (const [name, kernel, dtype, force, form] of forms) {
    it(name, () => {
      force();
      const f = guvectorize([`void(${dtype}[:], ${dtype}, ${dtype}[:])`], '(n),()->(n)')(kernel) as unknown as Ufunc;
      const [rows, n] = [37, 11];
      const x = sharedArray(rows * n, dtype);
      const xs = bases(rows * n);
      for (let i = 0; i < rows * n; i++) x[i] = xs[(i * 7919) % xs.length]!;
      const call = (g: number) => {
        const out = sharedArray(rows * n, dtype);
        f.sync({ data: x, shape: [rows, n] }, g, { out: { data: out, shape: [rows, n] } });
        return out;
      };
      setEngineMode('wasm');
      const explained = f.explain({ data: x, shape: [rows, n] }, 2.5, { out: { data: sharedArray(rows * n, dtype), shape: [rows, n] } });
      expect(explained).toMatch(form);
      expect(explained).toContain(OF_CALL);
      for (const g of EXPONENTS) {
        const [w, j] = wasmAndJs(() => call(g));
        expect(typeof w).not.toBe('string');
        expectBits(w as ArrayLike<number>, (i) => (j as ArrayLike<number>)[i]!, (i) => `${name}, g = ${g}, element ${i} (x = ${x[i]})`);
      }
    }, 60_000);
  }
});

describe('explain', () => {
  it('names the exponent of the call, and not a literal one', () => {
    setEngineMode('wasm');
    const x = sharedArray(4096);
    const out = sharedArray(4096);
    const gamma = vectorize(['float64(float64, float64)'])((p: number, gamma: number) => 255 * (p / 255) ** (1 / gamma)) as unknown as Ufunc;
    const literal = vectorize(['float64(float64)'])((p: number) => 255 * (p / 255) ** (1 / 2.2)) as unknown as Ufunc;
    expect(gamma.explain(x, 2.2, { out })).toMatchSnapshot();
    expect(literal.explain(x, { out })).not.toContain(OF_CALL);
  });
});
