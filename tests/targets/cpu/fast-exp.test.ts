/**
 * The `fastmath` option (targets/cpu/fast-exp.ts): float32 `Math.exp` computed in float32.
 * - the error bound: within 1 ulp of float32 of `Math.fround(Math.exp(x))` (which is the
 *   correctly rounded e^x except in rare double-rounding cases, where it is 1 ulp off itself),
 *   over millions of inputs, every float32 near the overflow/underflow/subnormal edges and the
 *   special values;
 * - the engines agree bit for bit: JS engine, Wasm SIMD lanes, the Wasm scalar loop (tails and
 *   strided operands), per-row SIMD, the cpu and parallel targets, under masks;
 * - without the option nothing changes; the option is validated; `explain` states it.
 */
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { fastExpF32 } from '../../../src/targets/cpu/fast-exp.js';
import { engineMode, setEngineMode } from '../../../src/targets/cpu/wasm/index.js';
import { guvectorize, setParallelOptions, sharedArray, sharedNDArray, shutdown, vectorize } from '../../../src/index.js';
import { DEFAULT_THRESHOLD } from '../../../src/targets/parallel/index.js';
import { mulberry32 } from '../../random.js';

const initialMode = engineMode();
afterEach(() => setEngineMode(initialMode));
afterAll(async () => {
  setParallelOptions({ threshold: DEFAULT_THRESHOLD });
  await shutdown();
});

const bits = new Float32Array(1);
const word = new Int32Array(bits.buffer);
/** A float32's position on the number line, in ulps (adjacent floats differ by 1; ±0 are both 0). */
function ordinal(v: number): number {
  bits[0] = v;
  const i = word[0]!;
  return i < 0 ? -(i & 0x7fffffff) : i;
}
function fromBits(i: number): number {
  word[0] = i;
  return bits[0]!;
}

/** float32 inputs: uniform over the finite range of results, random bit patterns, and every float near the edges. */
function inputs(count: number): Float32Array {
  const next = mulberry32(42);
  const edges: number[] = [0, -0, Infinity, -Infinity, NaN, 1, -1, 2 ** -149, -(2 ** -149), 3.4028234663852886e38, -3.4028234663852886e38];
  // Every float32 within 2,000 ulps of: the overflow threshold (88.72284), the smallest normal
  // result (−87.33655), the smallest subnormal result and the rounding to 0 (−103.27893, −103.97208),
  // the clamps (89, −104), 0, and the reduction's switch points (k·ln2 ± ln2/2).
  const centres = [88.72284, -87.33655, -103.27893, -103.97208, 89, -104, 1e-7, -1e-7, 0.34657359, -0.34657359, 1.03972077, 10.7430115];
  for (const c of centres) {
    const mid = ordinal(Math.fround(c));
    for (let d = -2000; d <= 2000; d++) {
      const o = mid + d;
      edges.push(fromBits(o < 0 ? (-o | 0x80000000) : o));
    }
  }
  const xs = new Float32Array(count);
  xs.set(edges);
  for (let i = edges.length; i < count; i++) {
    const kind = i % 3;
    if (kind === 0) xs[i] = -104 + next() * 193;
    else if (kind === 1) xs[i] = (next() - 0.5) * 2;
    else xs[i] = fromBits(Math.floor(next() * 2 ** 32) | 0); // any exponent, NaN payloads
  }
  return xs;
}

/** The helper `e` of a kernel's env (the kernel names it as a global). */
declare const e: (v: number) => number;

const same = (a: number, b: number) => Object.is(a, b) || (Number.isNaN(a) && Number.isNaN(b));

describe('fastmath exp (float32)', () => {
  const xs = inputs(3_000_000);

  it('is within 1 ulp of Math.fround(Math.exp(x)), with the special values exact', () => {
    const hist = [0, 0];
    for (let i = 0; i < xs.length; i++) {
      const x = xs[i]!;
      const got = fastExpF32(x);
      const want = Math.fround(Math.exp(x));
      if (Number.isNaN(want)) {
        if (!Number.isNaN(got)) expect.fail(`fastExpF32(NaN) = ${got}`);
        continue;
      }
      const ulps = Math.abs(ordinal(got) - ordinal(want));
      if (ulps > 1) expect.fail(`fastExpF32(${x}) = ${got}, Math.fround(Math.exp(x)) = ${want}: ${ulps} ulps apart`);
      hist[ulps]!++;
    }
    // The bound is reached (the test would notice an algorithm that is silently exact or broken).
    expect(hist[1]).toBeGreaterThan(0);
    expect(hist[0]).toBeGreaterThan(hist[1]! * 4);
    expect(fastExpF32(Infinity)).toBe(Infinity);
    expect(fastExpF32(-Infinity)).toBe(0);
    expect(fastExpF32(1e30)).toBe(Infinity);
    expect(fastExpF32(-1e30)).toBe(0);
    expect(fastExpF32(88.72284)).toBe(Infinity);
    expect(fastExpF32(0)).toBe(1);
    expect(fastExpF32(-0)).toBe(1);
    expect(fastExpF32(Math.fround(-103.27893))).toBeGreaterThan(0); // a subnormal result, not flushed
    expect(fastExpF32(Math.fround(-103.27893))).toBeLessThan(2 ** -126);
    expect(Number.isNaN(fastExpF32(NaN))).toBe(true);
  });

  it('gives the same bits on the JS engine, Wasm SIMD lanes, the Wasm scalar loop, cpu and parallel', async () => {
    const n = xs.length - 3; // not a multiple of 4: a scalar tail
    const input = sharedArray(n, 'float32');
    input.set(xs.subarray(0, n));
    const expected = new Float32Array(n);
    for (let i = 0; i < n; i++) expected[i] = fastExpF32(input[i]!);
    const check = (out: ArrayLike<number>, where: string, stride = 1) => {
      for (let i = 0; i < out.length; i++) {
        if (!same(out[i]!, expected[i * stride]!)) expect.fail(`${where}: exp(${input[i * stride]}) = ${out[i]}, fastExpF32 gives ${expected[i * stride]}`);
      }
    };
    for (const target of ['cpu', 'parallel'] as const) {
      setParallelOptions({ threshold: 0 });
      const exp = vectorize(['float32(float32)'], { target, fastmath: true })((x: number) => Math.exp(x));
      setEngineMode('wasm');
      const out = sharedArray(n, 'float32');
      expect(exp.explain(input, { out })).toMatch(/WebAssembly \(SIMD, 4 lanes\).*fastmath is on: Math\.exp of float32/);
      await exp(input, { out });
      check(out, `${target}, Wasm SIMD`);
      const strided = { data: input, shape: [Math.floor(n / 3)], strides: [3] };
      expect(exp.explain(strided)).toMatch(/WebAssembly \(scalar: an operand is strided\)/);
      check((await exp(strided)).data as Float32Array, `${target}, Wasm scalar`, 3);
      setEngineMode('js');
      expect(exp.explain(input)).toMatch(/JavaScript: .*fastmath is on/);
      check((await exp(input)) as Float32Array, `${target}, JS`);
    }
    // The first parallel call waits for the pool's workers to start: seconds from source on a loaded machine.
  }, 30_000);

  it('is used under masks, in helpers, in per-row kernels and on foreign arrays in auto mode', () => {
    const next = mulberry32(7);
    const n = 10_001;
    const x = new Float32Array(n);
    for (let i = 0; i < n; i++) x[i] = (next() - 0.5) * 60;
    const expected = Float32Array.from(x, (v) => (v > 0 ? fastExpF32(v) : Math.fround(v * 2)));
    const branchy = vectorize(['float32(float32)'], { fastmath: true })((v: number) => {
      if (v > 0) return Math.exp(v);
      return v * 2;
    });
    const viaHelper = vectorize(['float32(float32)'], { fastmath: true, env: { e: (v: number) => Math.exp(v) } })((v: number) => (v > 0 ? e(v) : v * 2));
    // auto mode: a fastmath exp is inline Wasm, no longer a reason to keep the JS engine.
    expect(branchy.explain(x)).toMatch(/^WebAssembly \(SIMD, 4 lanes\).*fastmath is on/);
    expect(viaHelper.explain(x)).toMatch(/^WebAssembly \(SIMD, 4 lanes\).*fastmath is on/);
    for (const [name, f] of [['branch', branchy], ['helper', viaHelper]] as const) {
      const out = f.sync(x) as Float32Array;
      for (let i = 0; i < n; i++) if (!same(out[i]!, expected[i]!)) expect.fail(`${name}: f(${x[i]}) = ${out[i]}, want ${expected[i]}`);
    }

    const softmaxNumerators = guvectorize(['void(float32[:], float32[:])'], '(n)->(n)', { fastmath: true })((a: Float32Array, o: Float32Array) => {
      for (let i = 0; i < a.length; i++) o[i] = Math.exp(a[i]!);
    });
    setEngineMode('wasm');
    const rows = sharedNDArray([2500, 4], 'float32');
    rows.data.set(x.subarray(0, 2500 * 4));
    expect(softmaxNumerators.explain(rows)).toMatch(/WebAssembly \(SIMD, 4 rows per vector.*fastmath is on/);
    const rowOut = softmaxNumerators.sync(rows).data as Float32Array;
    for (let i = 0; i < rowOut.length; i++) if (!same(rowOut[i]!, fastExpF32(x[i]!))) expect.fail(`rows: exp(${x[i]}) = ${rowOut[i]}`);
  });

  it('changes nothing without the option, and is validated', () => {
    setEngineMode('wasm');
    const xsShared = sharedArray(100_000, 'float32');
    xsShared.set(xs.subarray(0, 100_000));
    const exact = vectorize(['float32(float32)'])((v: number) => Math.exp(v));
    expect(exact.explain(xsShared)).not.toMatch(/fastmath/);
    const out = exact.sync(xsShared) as Float32Array;
    let differs = 0;
    for (let i = 0; i < out.length; i++) {
      if (!same(out[i]!, Math.fround(Math.exp(xsShared[i]!)))) expect.fail(`default exp(${xsShared[i]}) = ${out[i]}`);
      if (!same(out[i]!, fastExpF32(xsShared[i]!))) differs++;
    }
    expect(differs).toBeGreaterThan(0); // the two functions do differ: the option is what chooses
    // float64 kernels are not changed by it.
    const exp64 = vectorize(['float64(float64)'], { fastmath: true })((v: number) => Math.exp(v));
    expect(exp64.explain(sharedArray(1000))).toMatch(/fastmath is on but changes nothing here/);
    const d = sharedArray(1000);
    d.set(Array.from(xs.subarray(0, 1000)));
    const r = exp64.sync(d) as Float64Array;
    for (let i = 0; i < 1000; i++) if (!same(r[i]!, Math.exp(d[i]!))) expect.fail(`float64 exp(${d[i]}) = ${r[i]}`);
    expect(() => vectorize([], { fastmath: 'yes' } as never)).toThrowErrorMatchingInlineSnapshot(`[ArgumentError: \`fastmath\` must be a boolean (true or false), found the string "yes".]`);
    expect(() => guvectorize([], '()->()', { fastmath: 1 } as never)).toThrowErrorMatchingInlineSnapshot(`[ArgumentError: \`fastmath\` must be a boolean (true or false), found 1.]`);
  });
});
