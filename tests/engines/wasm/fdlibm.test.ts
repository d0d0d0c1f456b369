/**
 * The fdlibm ports in Wasm (src/engines/wasm/fdlibm.ts) give V8's `Math.*` results bit for bit,
 * over millions of inputs: uniform over the interesting range, random bit patterns (every
 * exponent), and the edge values of the algorithm (thresholds, reduction boundaries, subnormal
 * results, |x| < 2⁻²⁸, ±0, ±∞, NaN) with their neighbours. Both the scalar loop and the SIMD
 * lanes are checked.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { engineMode, setEngineMode } from '../../../src/engines/wasm/index.js';
import { sharedArray, vectorize } from '../../../src/index.js';
import { mulberry32 } from '../../random.js';

const initialMode = engineMode();
afterEach(() => {
  setEngineMode(initialMode);
});

function fromWords(hi: number, lo: number): number {
  const v = new DataView(new ArrayBuffer(8));
  v.setUint32(0, hi >>> 0);
  v.setUint32(4, lo >>> 0);
  return v.getFloat64(0);
}

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
    const kind = i % 4;
    if (kind === 0) xs[i] = (next() - 0.5) * 1500; // every reduction branch, overflow, underflow
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

const same = (a: number, b: number) => Object.is(a, b) || (Number.isNaN(a) && Number.isNaN(b));

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
});
