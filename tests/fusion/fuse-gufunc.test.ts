/**
 * `fuse` around a guvectorize call: element-wise calls before a gufunc (computed where it reads
 * its core slices) and after it (computed where it writes each element) run as one guvectorize
 * kernel with the separate calls' results — bits on cpu and parallel, WGSL bounds on the gpu —
 * with broadcasting over loop dimensions, `out`, `where`, `dtype`, device arrays; and a typed
 * FusionError (or separate calls) where the core dimensions do not line up.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { type DeviceArray, FusionError, fuse, guvectorize, type NDArray, type TargetName, toDevice, vectorize } from '../../src/index.js';
import { TARGETS } from '../targets.js';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Any = any;

/** Same value: bits on cpu/parallel; on the gpu NaN alike and within 4 float32 ulps. */
function sameValue(got: number, want: number, target: TargetName): boolean {
  if (Object.is(got, want)) return true;
  if (target !== 'gpu') return false;
  if (Number.isNaN(got) && Number.isNaN(want)) return true;
  if (got === want) return true;
  return Math.abs(got - want) <= 4 * 2 ** -23 * Math.max(Math.abs(want), 2 ** -126);
}

/** The same values (and shape, where both have one) as the separate calls gave. */
function expectSame(got: unknown, want: unknown, target: TargetName): void {
  const flat = (r: unknown) => (ArrayBuffer.isView(r) ? (r as Float32Array) : (r as NDArray).data);
  if (!ArrayBuffer.isView(got) && !ArrayBuffer.isView(want)) expect((got as NDArray).shape).toEqual((want as NDArray).shape);
  const g = flat(got);
  const w = flat(want);
  expect(g.constructor).toBe(w.constructor);
  expect(g.length).toBe(w.length);
  for (let i = 0; i < w.length; i++) {
    if (!sameValue(Number(g[i]), Number(w[i]), target)) expect.fail(`element ${i}: fused ${g[i]}, separate calls ${w[i]} (on ${target})`);
  }
}

/** The gufuncs and element-wise ufuncs of the tests, on a target (float64 loops where it has them). */
function ufuncsOn(target: TargetName) {
  const gpu = target === 'gpu';
  const floats = (sig: (t: string) => string) => (gpu ? ['float32'] : ['float32', 'float64']).map(sig);
  const normalize = guvectorize(floats((t) => `void(${t}[:], ${t}[:])`), '(n)->(n)', { target })(function unitRow(x: Float32Array, out: Float32Array) {
    let s = 0;
    for (let i = 0; i < x.length; i++) s += x[i]! * x[i]!;
    const r = Math.sqrt(s);
    for (let i = 0; i < x.length; i++) out[i] = x[i]! / r;
  });
  const rowSum = guvectorize(floats((t) => `void(${t}[:], ${t}[:])`), '(n)->()', { target })(function sumRow(x: Float32Array, out: Float32Array) {
    let s = x[0]!;
    for (let i = 1; i < x.length; i++) s += x[i]!;
    out[0] = s;
  });
  const dot = guvectorize(floats((t) => `void(${t}[:], ${t}[:], ${t}[:])`), '(n),(n)->()', { target })(function dotRows(a: Float32Array, b: Float32Array, out: Float32Array) {
    let s = 0;
    for (let i = 0; i < a.length; i++) s += a[i]! * b[i]!;
    out[0] = s;
  });
  const scale = guvectorize(floats((t) => `void(${t}[:], ${t}, ${t}[:])`), '(n),()->(n)', { target })(function scaleRow(x: Float32Array, c: number, out: Float32Array) {
    for (let i = 0; i < x.length; i++) out[i] = x[i]! * c;
  });
  const v = (sigs: string[], fn: (...xs: number[]) => number) => vectorize(sigs, { target })(fn as never) as Any;
  const square = v(floats((t) => `${t}(${t})`), (x) => x * x);
  const mul = v(floats((t) => `${t}(${t}, ${t})`), (a, b) => a * b);
  const shift = v(floats((t) => `${t}(${t})`), (x) => (x > 0.5 ? x - 1 : x + 0.25));
  const halve = v([gpu ? 'float32(float32)' : 'float32(float64)'], (x) => x / 2);
  return { normalize: normalize as Any, rowSum: rowSum as Any, dot: dot as Any, scale: scale as Any, square, mul, shift, halve };
}

const f32 = (n: number, seed: number) => Float32Array.from({ length: n }, (_, i) => Math.sin(seed * 31 + i * 1.7) * 3);
const matrix = (m: number, n: number, seed: number) => ({ data: f32(m * n, seed), shape: [m, n] });

describe.each(TARGETS)('fuse around a guvectorize call on %s', (target) => {
  const u = ufuncsOn(target);
  const x = matrix(5, 7, 1);
  const w = f32(7, 2);

  it('`(n)->(n)` then an element-wise call over its rows: one kernel, the separate calls’ results', async () => {
    const separate = async (x: Any, w: Any) => u.mul(await u.normalize(x), w);
    const fused = fuse(separate);
    expectSame(await fused(x, w), await separate(x, w), target);
    expect(await fused.explain(x, w)).toMatch(/^Fused 2 calls into one kernel on the '\w+' target: `unitRow\(…\)` \(call 1\) → `kernel\(…\)` \(call 2\)\.\nIts parameters: arg1: float32 \(n\) \(argument 1\), arg2: float32 \(n\) \(argument 2\)\.\nAround the guvectorize call `unitRow\(…\)` \(call 1\), as one guvectorize kernel of layout `\(n\),\(n\)->\(n\)`/);
  }, 60_000);

  it('element-wise calls feeding a `(n)->()` reduction, and a call after it', async () => {
    const separate = async (x: Any, w: Any) => u.shift(await u.rowSum(await u.mul(await u.square(x), w)));
    const fused = fuse(separate);
    expectSame(await fused(x, w), await separate(x, w), target);
    const two = async (x: Any, w: Any) => u.dot(await u.square(x), await u.shift(w)); // both inputs computed
    expectSame(await fuse(two)(x, w), await two(x, w), target);
    const scaled = async (x: Any, c: Any) => u.scale(await u.shift(x), await u.rowSum(c)); // a `()` input: a gufunc's output is not an element-wise input
    await expect(fuse(scaled)(x, x)).rejects.toThrow(/are both guvectorize ufuncs/);
  }, 60_000);

  it('a `()` input computed element-wise, scalars, captured arrays, loop broadcasting', async () => {
    const c = f32(5, 3);
    const separate = async (x: Any, c: Any) => u.mul(await u.scale(await u.shift(x), await u.square(c)), 2);
    const fused = fuse(separate);
    expectSame(await fused(x, c), await separate(x, c), target);
    // x of shape [2, 1, 7] against w of shape [3, 7]: loop dimensions [2, 3], rows of 7.
    const x3 = { data: f32(14, 4), shape: [2, 1, 7] };
    const w3 = matrix(3, 7, 5);
    const mulNorm = async (x: Any, w: Any) => u.mul(await u.normalize(await u.square(x)), w);
    const got = (await fuse(mulNorm)(x3, w3)) as NDArray;
    expect(got.shape).toEqual([2, 3, 7]);
    expectSame(got, await mulNorm(x3, w3), target);
  }, 60_000);

  it('takes `out`, `where` (over loop dimensions, for a `()` result) and `dtype`', async () => {
    const separate = async (x: Any, w: Any) => u.shift(await u.rowSum(await u.mul(x, w)));
    const fused = fuse(separate);
    const out = new Float32Array(5).fill(-7);
    expect(await fused(x, w, { out })).toBe(out);
    expectSame(out, await separate(x, w), target);
    const where = Uint8Array.from([1, 0, 1, 1, 0]);
    const masked = new Float32Array(5).fill(-7);
    const want = new Float32Array(5).fill(-7);
    await fused(x, w, { out: masked, where });
    await u.shift(await u.rowSum(await u.mul(x, w)), { out: want, where });
    expectSame(masked, want, target);
    if (target !== 'gpu') {
      const wide = new Float64Array(5);
      await fused(x, w, { out: wide });
      expectSame(wide, await u.shift(await u.rowSum(await u.mul(x, w)), { out: new Float64Array(5) }), target);
      const f64 = async (x: Any) => u.halve(await u.rowSum(await u.square(x, { dtype: 'float64' })));
      expectSame(await fuse(f64)(x), await f64(x), target);
    }
  }, 60_000);

  it('refuses `where` on a core result (it would mask rows, the separate call elements) and runs separately when asked', async () => {
    const separate = async (x: Any, w: Any) => u.mul(await u.normalize(x), w);
    const where = { data: Uint8Array.from({ length: 35 }, (_, i) => i % 3), shape: [5, 7], dtype: 'bool' as const };
    await expect(fuse(separate)(x, w, { where, out: { data: new Float32Array(35), shape: [5, 7] } })).rejects.toThrow(/passes `where`, which masks whole core slices/);
    const out = { data: new Float32Array(35), shape: [5, 7] };
    const want = { data: new Float32Array(35), shape: [5, 7] };
    await fuse(separate, { unfusable: 'separate' })(x, w, { where, out });
    await u.mul(await u.normalize(x), w, { where, out: want });
    expectSame(out, want, target);
  }, 60_000);

  if (target === 'gpu') {
    it('takes and returns DeviceArrays', async () => {
      const dxs = await toDevice(x);
      const dw = await toDevice(w);
      const separate = async (x: Any, w: Any) => u.mul(await u.normalize(x), w);
      const got = (await fuse(separate)(dxs, dw)) as DeviceArray;
      expect(got.kind).toBe('device');
      const want = (await separate(dxs, dw)) as DeviceArray;
      expectSame(await got.toHost(), await want.toHost(), target);
    });
  }
});

describe('fuse around a guvectorize call: what does not fuse, and why', () => {
  const u = ufuncsOn('cpu');
  const x = matrix(4, 6, 1);

  it('an array of size 1 along the core dimensions is read once per row; one that broadcasts along some of them is refused', async () => {
    const separate = async (x: Any, w: Any) => u.mul(await u.normalize(x), w);
    const column = { data: f32(4, 9), shape: [4, 1] };
    expectSame(await fuse(separate)(x, column), await separate(x, column), 'cpu');
    expect(await fuse(separate).explain(x, column)).toMatch(/arg2: float32 \(argument 2\)/); // a `()` parameter
    const scalar = { data: f32(1, 9), shape: [] };
    expectSame(await fuse(separate)(x, scalar), await separate(x, scalar), 'cpu');
    const matSum = guvectorize(['void(float32[:,:], float32[:])'], '(m,n)->()')(function matSum(a: Any, out: Float32Array) {
      let s = 0;
      for (let i = 0; i < a.shape[0]; i++) for (let j = 0; j < a.shape[1]; j++) s += a[i][j];
      out[0] = s;
    }) as Any;
    const cube = { data: f32(2 * 4 * 6, 3), shape: [2, 4, 6] };
    const row = { data: f32(6, 4), shape: [1, 6] };
    const summed = async (x: Any, w: Any) => matSum(await u.mul(x, w));
    await expect(fuse(summed)(cube, row)).rejects.toThrowErrorMatchingInlineSnapshot(`[FusionError: These ufunc calls cannot run as one kernel: argument 2 (shape [1, 6]) has size 1 along the core dimension (m) of (m,n) around \`matSum2(…)\` (call 2), whose size is 4: the separate calls broadcast it along that dimension, the fused kernel reads it per core slice. Pass \`{ unfusable: 'separate' }\` to \`fuse\` to run them as separate calls.]`);
    expectSame(await fuse(summed, { unfusable: 'separate' })(cube, row), await summed(cube, row), 'cpu');
    expectSame(await fuse(summed)(cube, { data: f32(24, 5), shape: [4, 6] }), await summed(cube, { data: f32(24, 5), shape: [4, 6] }), 'cpu');
  }, 60_000);

  it('an array read both per row and per element, two gufuncs, a gufunc that reads back its output', async () => {
    const both = async (x: Any) => u.mul(await u.rowSum(x), x);
    await expect(fuse(both)(x)).rejects.toThrow(FusionError);
    expect(await fuse(both).explain(x)).toMatch(/argument 1 is read over the core dimensions \(n\) and \(\) by different calls/);
    const two = async (x: Any) => u.rowSum(await u.normalize(x));
    expect(await fuse(two).explain(x)).toMatch(/`unitRow\(…\)` \(call 1\) and `sumRow\(…\)` \(call 2\) are both guvectorize ufuncs/);
    expectSame(await fuse(two, { unfusable: 'separate' })(x), await two(x), 'cpu');
    const cumulative = guvectorize(['void(float32[:], float32[:])'], '(n)->(n)')(function cumsum(x: Float32Array, out: Float32Array) {
      out[0] = x[0]!;
      for (let i = 1; i < x.length; i++) out[i] = out[i - 1]! + x[i]!;
    }) as Any;
    const after = async (x: Any) => u.square(await cumulative(x));
    expect(await fuse(after).explain(x)).toMatch(/`cumsum\(…\)` \(call 1\) reads back its own output/);
    const before = async (x: Any) => cumulative(await u.square(x)); // nothing after it: fuses
    expectSame(await fuse(before)(x), await before(x), 'cpu');
    const twoOut = guvectorize(['void(float32[:], float32[:], float32[:])'], '(n)->(),()')((x: Float32Array, a: Float32Array, b: Float32Array) => {
      a[0] = x[0]!;
      b[0] = x[1]!;
    }) as Any;
    expect(await fuse(async (x: Any) => twoOut(await u.square(x))).explain(x)).toMatch(/has 2 outputs/);
  }, 60_000);

  it('shows the fused kernel’s IR: reads computed where the gufunc reads, the calls after it at its stores', async () => {
    const fused = fuse(async (x: Any, w: Any) => u.shift(await u.rowSum(await u.mul(x, w))));
    expect(await fused.explainIr(x, f32(6, 2))).toMatchInlineSnapshot(`
      "helper kernel(a: float32, b: float32) -> float32
        return (a:float32 * b:float32):float32
      kernel kernel > sumRow > kernel(arg1: float32[:], arg2: float32[:], out: float32[:]) -> void
        let sumRow_s: float32 = kernel(arg1[0:int32]:float32, arg2[0:int32]:float32):float32
        loop (let sumRow_i: float64 = 1:float64; (sumRow_i:float64 < float64(arg1.shape[0]:int32)):bool; sumRow_i = (sumRow_i:float64 + 1:float64):float64) {
          sumRow_s = (sumRow_s:float32 + kernel(arg1[sumRow_i:float64]:float32, arg2[sumRow_i:float64]:float32):float32):float32
        }
        let sumRow_stored: float32 = sumRow_s:float32
        let kernel2_x: float32 = sumRow_stored:float32
        let kernel2_result: float32 = ((kernel2_x:float32 > 0.5:float32):bool ? (kernel2_x:float32 - 1:float32):float32 : (kernel2_x:float32 + 0.25:float32):float32):float32
        out[0:int32] = kernel2_result:float32
      "
    `);
  }, 60_000);
});

describe.each(TARGETS)('fused ≡ separate calls around a gufunc on %s (property)', (target) => {
  const u = ufuncsOn(target);
  const gufuncs = [
    { f: u.normalize, inputs: 1, coreOut: true },
    { f: u.rowSum, inputs: 1, coreOut: false },
    { f: u.dot, inputs: 2, coreOut: false },
  ];
  const elementwise = [u.square, u.shift, u.halve];
  const leafForm = fc.constantFrom('full', 'row', 'reversed-row', 'strided-full', 'column');
  it('over element-wise calls before and after random gufuncs, dtypes and layouts', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.nat(2), fc.array(fc.nat(2), { maxLength: 2 }), fc.array(fc.nat(2), { maxLength: 2 }), fc.tuple(leafForm, leafForm), fc.constantFrom('float32', 'float64'),
        fc.integer({ min: 1, max: 4 }), fc.integer({ min: 1, max: 20 }), fc.nat(1000), fc.boolean(),
        async (gi, pre, post, forms, dtype, m, n, seed, multiplyAfter) => {
          const g = gufuncs[gi]!;
          const run = async (a: Any, b: Any) => {
            let v = a;
            for (const k of pre) v = await elementwise[k]!(v);
            const second = g.inputs === 2 ? await u.mul(b, b) : undefined;
            let r = g.inputs === 2 ? await g.f(v, second) : await g.f(v);
            for (const k of post) r = await elementwise[k]!(r);
            return multiplyAfter && g.coreOut ? u.mul(r, b) : r;
          };
          const leaf = (form: string, s: number) => {
            const Kind = dtype === 'float64' && target !== 'gpu' ? Float64Array : Float32Array;
            const data = new Kind(2 * m * n + 4).map((_, i) => Math.sin(s * 31 + i * 1.7) * 3);
            switch (form) {
              case 'row': return { data, shape: [n] };
              case 'reversed-row': return { data, shape: [n], strides: [-2], offset: 2 * (n - 1) + 1 };
              case 'strided-full': return { data, shape: [m, n], strides: [2 * n, 2], offset: 0 };
              case 'column': return { data, shape: [m, 1] };
              default: return { data, shape: [m, n] };
            }
          };
          const a = leaf(forms[0], seed);
          const b = leaf(forms[1], seed + 1);
          let want: unknown;
          let wantError: unknown;
          try {
            want = await run(a, b);
          } catch (e) {
            wantError = e;
          }
          const separately = fuse(run, { unfusable: 'separate' });
          if (wantError) {
            await expect(separately(a, b)).rejects.toThrow((wantError as Error).constructor as new () => Error);
            return;
          }
          expectSame(await separately(a, b), want, target);
          const explained = await fuse(run).explain(a, b);
          // A column read by the gufunc itself, whose output the separate calls then broadcast along n: not one kernel.
          const gufuncBroadcast = forms.includes('column') && n > 1;
          if (!gufuncBroadcast || explained.startsWith('Fused')) {
            expect(explained).toMatch(/^Fused/);
            expectSame(await fuse(run)(a, b), want, target);
          } else {
            expect(explained).toMatch(/has size 1 along the core dimension \(n\)|the separate calls broadcast the gufunc's result along it/);
            await expect(fuse(run)(a, b)).rejects.toThrow(FusionError);
          }
        },
      ),
      { numRuns: target === 'gpu' ? 6 : 60 },
    );
  }, 120_000);
});
