/**
 * The fdlibm ports in Wasm (src/targets/cpu/wasm/fdlibm.ts) give V8's `Math.*` results bit for bit,
 * over millions of inputs: uniform over the interesting range, random bit patterns (every
 * exponent), and the edge values of the algorithm (thresholds, reduction boundaries, subnormal
 * results, |x| < 2⁻²⁸, ±0, ±∞, NaN) with their neighbours. Both the scalar loop and the SIMD
 * lanes are checked: exp's vector code (f64x2, and float32 through f64x2 halves) element-wise and
 * per row, with every edge value in every lane beside ordinary values (a vector whose one lane
 * takes the scalar fallback and the other the vector code). All 2^32 float32 inputs:
 * bench/exp-exhaustive.ts.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { EXP32_TEST } from '../../../../src/targets/cpu/wasm/fdlibm.js';
import { engineMode, setEngineMode } from '../../../../src/targets/cpu/wasm/index.js';
import { guvectorize, sharedArray, vectorize } from '../../../../src/index.js';
import { mulberry32 } from '../../../random.js';
import { edgeInputs, fromWords, same, ulpsFrom, ulpsFrom32 } from './math-inputs.js';

const initialMode = engineMode();
afterEach(() => {
  setEngineMode(initialMode);
});

/** x and its neighbours, a few ulps either side. */
function around(x: number): number[] {
  const v = new DataView(new ArrayBuffer(8));
  const out: number[] = [];
  for (let d = -3n; d <= 3n; d++) {
    v.setFloat64(0, x);
    v.setBigInt64(0, v.getBigInt64(0) + d);
    out.push(v.getFloat64(0));
  }
  return out;
}

function expInputs(count: number): Float64Array {
  const next = mulberry32(10);
  const edges = [
    0, -0, Infinity, -Infinity, NaN, 1, -1, 0.5, -0.5, 2 ** -28, -(2 ** -28), 2 ** -1074,
    fromWords(0x40862e42, 0xfefa39ef), fromWords(0xc0874910, 0xd52d3051), // overflow / underflow thresholds
    fromWords(0x40862e42, 0), fromWords(0x3fd62e42, 0xffffffff), fromWords(0x3fd62e43, 0), // |x| = 0.5 ln2
    fromWords(0x3ff0a2b2, 0), fromWords(0x3ff0a2b1, 0xffffffff), fromWords(0x3e300000, 0), // 1.5 ln2, 2^-28
    -708.3964185322641, -709.08956571282405, 709.08956571282405, 709.782712893384, -745.1332191019411, -744.4400719213812,
  ].flatMap(around);
  const xs = new Float64Array(count);
  xs.set(edges);
  const bits = new DataView(new ArrayBuffer(8));
  for (let i = edges.length; i < count; i++) {
    const kind = i % 5;
    if (kind === 4) xs[i] = (next() < 0.5 ? -1 : 1) * 2 ** (-31 + 5 * next()); // around 2^-28, where 1 + x and the reduction differ
    else if (kind === 0) xs[i] = (next() - 0.5) * 1500; // every reduction branch, overflow, underflow
    else if (kind === 1) xs[i] = (next() - 0.5) * 4; // the primary range
    else if (kind === 2) xs[i] = -708 - next() * 38; // subnormal results
    else {
      bits.setUint32(0, Math.floor(next() * 2 ** 32));
      bits.setUint32(4, Math.floor(next() * 2 ** 32));
      xs[i] = bits.getFloat64(0); // any exponent, NaN payloads
    }
  }
  return xs;
}

/**
 * Runs `Math.exp` over `xs` as a float64 kernel (2 SIMD lanes) or a float32 one (4 lanes) on arrays
 * in Wasm memory, and fails at the first result that is not `Math.exp(x)` (float32:
 * `Math.fround(Math.exp(x))`), naming the input and its lane.
 */
function expectExpInLanes(xs: readonly number[], dtype: 'float32' | 'float64'): void {
  const lanes = dtype === 'float32' ? 4 : 2;
  const input = sharedArray(xs.length, dtype);
  input.set(xs);
  const out = sharedArray(xs.length, dtype);
  const exp = vectorize([`${dtype}(${dtype})`])((x: number) => Math.exp(x));
  expect(exp.explain(input, { out })).toMatch(new RegExp(`^WebAssembly \\(SIMD, ${lanes} lanes\\)`));
  exp.sync(input, { out });
  for (let i = 0; i < xs.length; i++) {
    const expected = dtype === 'float32' ? Math.fround(Math.exp(input[i]!)) : Math.exp(input[i]!);
    if (!same(out[i]!, expected)) expect.fail(`exp(${input[i]}) = ${out[i]} in Wasm (lane ${i % lanes}), ${expected} in JS`);
  }
}

const LN2 = Math.LN2;
/**
 * Where exp's code changes course, in doubles: |x| = 2^-28 (1 + x below), the reduction's cases
 * (by the high word of |x|: 0x3fd62e43…, 0x3ff0a2b2…, and 0.5·ln 2, 1.5·ln 2 themselves), x = 1
 * (V8's E), |x| = 708 (the vector code's limit), k's truncation (k + ½)·ln 2 at both ends of the
 * exponent range and near 0, 2^k's special cases k = −1021/−1022 and k = 1024, the overflow and
 * underflow thresholds and the high word 0x40862e42, the smallest normal and subnormal inputs.
 */
const EXP_CENTRES = [
  2 ** -28, fromWords(0x3fd62e43, 0), fromWords(0x3fd62e42, 0xffffffff), 0.5 * LN2, fromWords(0x3ff0a2b2, 0), 1.5 * LN2, 1, 708,
  ...[-1023, -1022, -1021, -1020, -3, -2, -1, 0, 1, 2, 3, 1021, 1022, 1023, 1024].map((k) => (k + 0.5) * LN2),
  fromWords(0x40862e42, 0xfefa39ef), fromWords(0xc0874910, 0xd52d3051), fromWords(0x40862e42, 0), -708.3964185322641, -709.08956571282405,
  709.08956571282405, -745.1332191019411, -744.4400719213812, 2 ** -1022, 2 ** -1074, 0, Number.MAX_VALUE,
];

describe('fdlibm in Wasm equals V8 Math.*', () => {
  it('exp, float64, scalar and SIMD lanes, over 2,000,000 inputs', () => {
    setEngineMode('wasm');
    const xs = expInputs(2_000_000);
    const input = sharedArray(xs.length);
    input.set(xs);
    const out = sharedArray(xs.length);
    const exp = vectorize(['float64(float64)'])((x: number) => Math.exp(x));
    expect(exp.explain(input, { out })).toMatch(/^WebAssembly \(SIMD, 2 lanes\)/);
    exp.sync(input, { out });
    let mismatches = 0;
    let first = '';
    for (let i = 0; i < xs.length; i++) {
      const expected = Math.exp(xs[i]!);
      if (!same(out[i]!, expected)) {
        if (!first) first = `exp(${xs[i]}) = ${out[i]} in Wasm, ${expected} in JS`;
        mismatches++;
      }
    }
    expect(first).toBe('');
    expect(mismatches).toBe(0);
    // The scalar loop (a strided operand is not vectorised) on a sample.
    const strided = { data: input, shape: [500_000], strides: [4] };
    const scalarOut = exp.sync(strided).data as Float64Array;
    expect(exp.explain(strided)).toMatch(/^WebAssembly \(scalar: an operand is strided\)/);
    for (let i = 0; i < 500_000; i++) if (!same(scalarOut[i]!, Math.exp(xs[i * 4]!))) expect.fail(`exp(${xs[i * 4]}) differs`);
  });

  it('exp, float64, SIMD lanes: every double within 3,000 ulps of each edge, in every lane beside ordinary values', () => {
    setEngineMode('wasm');
    const xs = edgeInputs(3000, 2, (x) => x, ulpsFrom, EXP_CENTRES);
    expectExpInLanes(xs, 'float64');
  });

  it('exp, float32, 4 lanes: every float32 within 2,000 ulps of each edge, in every lane beside ordinary values', () => {
    setEngineMode('wasm');
    const xs = edgeInputs(2000, 4, Math.fround, ulpsFrom32, EXP_CENTRES);
    expectExpInLanes(xs, 'float32');
  });

  it('exp per row (guvectorize, SIMD rows): float64, float32, float32 beside float64 (2 lanes), in a helper', () => {
    setEngineMode('wasm');
    type Vector = { [i: number]: number; length: number };
    const next = mulberry32(12);
    const rows = 3001;
    const n = 7;
    const random = Array.from({ length: rows * n }, (_, i) => (i % 3 === 0 ? (next() - 0.5) * 1500 : (next() - 0.5) * 30));
    // Edge values in every row position and lane, among the random ones.
    const edges = edgeInputs(40, 4, (x) => x, ulpsFrom, EXP_CENTRES);
    const values = [...edges, ...random];
    const count = Math.floor(values.length / n);
    const f64 = sharedArray(count * n);
    f64.set(values.slice(0, count * n));
    const f32 = sharedArray(count * n, 'float32');
    f32.set(f64);
    const view = <T>(data: T) => ({ data, shape: [count, n] });

    const rows64 = guvectorize(['void(float64[:], float64[:])'], '(n)->(n)')((x: Vector, out: Vector) => {
      for (let i = 0; i < x.length; i++) out[i] = Math.exp(x[i]!);
    });
    const out64 = sharedArray(count * n);
    expect(rows64.explain(view(f64), { out: view(out64) })).toMatch(/^WebAssembly \(SIMD, 2 rows per vector/);
    rows64.sync(view(f64), { out: view(out64) });
    for (let i = 0; i < out64.length; i++) if (!same(out64[i]!, Math.exp(f64[i]!))) expect.fail(`float64 row exp(${f64[i]}) = ${out64[i]}, Math.exp: ${Math.exp(f64[i]!)}`);

    const twice = (x: number) => Math.exp(x) * 2;
    const rows32 = guvectorize(['void(float32[:], float32[:])'], '(n)->(n)', { env: { twice } })((x: Vector, out: Vector) => {
      for (let i = 0; i < x.length; i++) out[i] = i % 2 ? Math.exp(x[i]!) : twice(x[i]!);
    });
    const out32 = sharedArray(count * n, 'float32');
    expect(rows32.explain(view(f32), { out: view(out32) })).toMatch(/^WebAssembly \(SIMD, 4 rows per vector/);
    rows32.sync(view(f32), { out: view(out32) });
    for (let i = 0; i < out32.length; i++) {
      const x = f32[i]!;
      const expected = i % n % 2 ? Math.fround(Math.exp(x)) : Math.fround(Math.fround(Math.exp(x)) * 2);
      if (!same(out32[i]!, expected)) expect.fail(`float32 row ${i % n % 2 ? 'exp' : 'helper'}(${x}) = ${out32[i]}, expected ${expected}`);
    }

    // A float64 operand makes the rows 2 per vector; the float32 exp then runs in lanes 0 and 1.
    const mixed = guvectorize(['void(float32[:], float64[:], float32[:])'], '(n),(n)->(n)')((x: Vector, w: Vector, out: Vector) => {
      for (let i = 0; i < x.length; i++) out[i] = Math.exp(x[i]!) + w[i]!;
    });
    const zeros = sharedArray(count * n);
    const outMixed = sharedArray(count * n, 'float32');
    expect(mixed.explain(view(f32), view(zeros), { out: view(outMixed) })).toMatch(/^WebAssembly \(SIMD, 2 rows per vector/);
    mixed.sync(view(f32), view(zeros), { out: view(outMixed) });
    for (let i = 0; i < outMixed.length; i++) {
      const expected = Math.fround(Math.fround(Math.exp(f32[i]!)) + 0);
      if (!same(outMixed[i]!, expected)) expect.fail(`mixed row exp(${f32[i]}) = ${outMixed[i]}, expected ${expected}`);
    }
  });

  it('exp, float32, 4 lanes, rounded once as Math.fround(Math.exp(x))', () => {
    setEngineMode('wasm');
    const next = mulberry32(11);
    const n = 1_000_000;
    const input = sharedArray(n, 'float32');
    for (let i = 0; i < n; i++) input[i] = (next() - 0.5) * 220;
    input.set([0, -0, Infinity, -Infinity, NaN, 88.72283, 88.72284, -103.97208, -87.33655, 1, -1]);
    const exp = vectorize(['float32(float32)'])((x: number) => Math.exp(x));
    const out = sharedArray(n, 'float32');
    expect(exp.explain(input, { out })).toMatch(/^WebAssembly \(SIMD, 4 lanes\)/);
    exp.sync(input, { out });
    for (let i = 0; i < n; i++) {
      const expected = Math.fround(Math.exp(input[i]!));
      if (!same(out[i]!, expected)) expect.fail(`exp(${input[i]}) = ${out[i]} in Wasm, ${expected} in JS`);
    }
  });

  it('exp, float32, 4 lanes, rounding test: every float32 within 2,000 ulps of its range bounds and of 0, ±0.5·ln 2, in every lane', () => {
    setEngineMode('wasm');
    const centres = [EXP32_TEST.lo, EXP32_TEST.hi, -126 * LN2, 128 * LN2, -149 * LN2, 0, 0.5 * LN2, 2 ** -24, 2 ** -25];
    const xs = edgeInputs(2000, 4, Math.fround, ulpsFrom32, centres);
    expectExpInLanes(xs, 'float32');
  });

  it('exp, float32, rounding test: inputs whose Math.exp is within 8 ulps of a float32 midpoint, in every lane, element-wise and per row', () => {
    setEngineMode('wasm');
    // Found by bench/exp32-midpoints.ts over every float32 in the test's range: Math.exp(x) within
    // 8 double ulps of a float32 rounding midpoint, then one whose approximation sits at the test's
    // margin (2 ulps).
    const bits = [
      0x337fffff, 0x33800000, 0x343fffff, 0x34dffffd, 0x356ffff9, 0x35f7fff1, 0x367bffe1, 0x36fdffc1, 0x377eff81,
      0x383a3ef1, 0x38e69cc1, 0x39c6be5b, 0x39e5bb1d, 0x3d1a274e, 0x4001b249, 0x40315b33, 0x4288942b, 0xb3000000,
      0xbae0e25c, 0xbbf0edf1, 0xc16912cd, 0x3aae4c53,
    ];
    const hard = Array.from(new Float32Array(new Uint32Array(bits).buffer));
    const ordinary = [0.7, -3.25, 12.5, -0.3].map(Math.fround);
    const xs: number[] = [];
    for (const x of hard) {
      for (let lane = 0; lane < 4; lane++) for (let l = 0; l < 4; l++) xs.push(l === lane ? x : ordinary[l]!);
    }
    xs.push(...hard, ...hard.slice(0, 2)); // whole vectors of them
    const input = sharedArray(xs.length, 'float32');
    input.set(xs);
    const out = sharedArray(xs.length, 'float32');
    const exp = vectorize(['float32(float32)'])((x: number) => Math.exp(x));
    expect(exp.explain(input, { out })).toMatch(/^WebAssembly \(SIMD, 4 lanes\)/);
    exp.sync(input, { out });
    for (let i = 0; i < xs.length; i++) {
      const expected = Math.fround(Math.exp(input[i]!));
      if (!same(out[i]!, expected)) expect.fail(`exp(${input[i]}) = ${out[i]} in Wasm (lane ${i % 4}), ${expected} in JS`);
    }
    // Per row, 4 rows per vector: each hard input at every row position and in every lane.
    type Vector = { [i: number]: number; length: number };
    const n = 5;
    const count = Math.floor(xs.length / n);
    const rowsIn = sharedArray(count * n, 'float32');
    rowsIn.set(xs.slice(0, count * n));
    const rowsOut = sharedArray(count * n, 'float32');
    const view = <T>(data: T) => ({ data, shape: [count, n] });
    const rows = guvectorize(['void(float32[:], float32[:])'], '(n)->(n)')((x: Vector, o: Vector) => {
      for (let i = 0; i < x.length; i++) o[i] = Math.exp(x[i]!);
    });
    expect(rows.explain(view(rowsIn), { out: view(rowsOut) })).toMatch(/^WebAssembly \(SIMD, 4 rows per vector/);
    rows.sync(view(rowsIn), { out: view(rowsOut) });
    for (let i = 0; i < rowsOut.length; i++) {
      const expected = Math.fround(Math.exp(rowsIn[i]!));
      if (!same(rowsOut[i]!, expected)) expect.fail(`row exp(${rowsIn[i]}) = ${rowsOut[i]}, expected ${expected}`);
    }
  });
});
