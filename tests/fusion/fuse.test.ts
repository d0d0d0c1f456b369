/**
 * `fuse`: a chain of vectorize calls runs as one kernel and gives the separate calls' results —
 * bit for bit on cpu and parallel, within the WGSL bounds on the gpu — with broadcasting, `out`,
 * `where`, `dtype`, `casting`, scalars, device arrays, and typed errors for what does not fuse.
 */
import { describe, expect, it } from 'vitest';
import {
  ArgumentError, type DeviceArray, FusionError, fuse, guvectorize, type NDArray, type TargetName, toDevice, vectorize,
} from '../../src/index.js';
import { TARGETS } from '../targets.js';

const f32 = (xs: number[]) => Float32Array.from(xs);

/** Equal bits on cpu/parallel; on the gpu within a few float32 ulps (exp, as the separate calls' WGSL). */
function expectSameResults(got: ArrayLike<number>, want: ArrayLike<number>, target: TargetName): void {
  expect(got.length).toBe(want.length);
  for (let i = 0; i < want.length; i++) {
    const g = got[i]!;
    const w = want[i]!;
    if (target === 'gpu') {
      if (!(Object.is(g, w) || Math.abs(g - w) <= 4 * 2 ** -23 * Math.max(Math.abs(w), 2 ** -126))) {
        expect.fail(`element ${i}: fused ${g}, separate calls ${w}`);
      }
    } else if (!Object.is(g, w)) {
      expect.fail(`element ${i}: fused ${g}, separate calls ${w} (bits must be equal on ${target})`);
    }
  }
}

function ufuncsOn(target: TargetName) {
  const saxpy = vectorize(['float32(float32, float32, float32)'], { target })(function axpy(a: number, x: number, y: number) {
    return a * x + y;
  });
  const gauss = vectorize(['float32(float32)'], { target })(function gaussian(x: number) {
    return Math.exp(-x * x);
  });
  const mul = vectorize(['float32(float32, float32)'], { target })(function times(a: number, b: number) {
    return a * b;
  });
  return { saxpy, gauss, mul };
}

const xs = f32(Array.from({ length: 1000 }, (_, i) => Math.sin(i) * 3));
const ys = f32(Array.from({ length: 1000 }, (_, i) => Math.cos(i * 0.37)));

describe.each(TARGETS)('fuse on %s', (target) => {
  const { saxpy, gauss, mul } = ufuncsOn(target);
  // The nested form `mul(gauss(saxpy(2, x, y)), x)` runs too (JavaScript); TypeScript's ufunc types want the awaits.
  const chain = fuse(async (x, y) => mul(await gauss(await saxpy(2, x, y)), x));
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  const separate = async (x: any, y: any): Promise<any> => mul(await gauss(await saxpy(2, x, y)), x);

  it('runs the chain as one kernel with the separate calls’ results', async () => {
    const got = await chain(xs, ys);
    expect(got).toBeInstanceOf(Float32Array);
    expectSameResults(got, await separate(xs, ys), target);
    expect(await chain.explain(xs, ys)).toMatch(/^Fused 3 calls into one kernel on the '\w+' target: `axpy\(…\)` \(call 1\) → `gaussian\(…\)` \(call 2\) → `times\(…\)` \(call 3\)\./);
  });

  it('takes an async function with awaited calls', async () => {
    const awaited = fuse(async (x, y) => {
      const t = await saxpy(2, x, y);
      return mul(await gauss(t), x);
    });
    expectSameResults(await awaited(xs, ys), await separate(xs, ys), target);
  });

  it('broadcasts, and reads strided and reversed views', async () => {
    const col = { data: f32([1, 2, 3]), shape: [3, 1] };
    const row = { data: f32([0.5, 0, -0.25, 9, 1, 7]), shape: [3], strides: [-2], offset: 4 };
    const got = (await chain(col, row)) as NDArray;
    const want = (await separate(col, row)) as NDArray;
    expect(got.shape).toEqual([3, 3]);
    expectSameResults(got.data as Float32Array, want.data as Float32Array, target);
  });

  it('writes `out`, masks with `where`, and casts to another `out` dtype', async () => {
    const out = new Float32Array(xs.length);
    expect(await chain(xs, ys, { out })).toBe(out);
    expectSameResults(out, await separate(xs, ys), target);

    const where = Uint8Array.from(xs, (_, i) => i % 3);
    const kept = new Float32Array(xs.length).fill(-7);
    await chain(xs, ys, { out: kept, where: { data: where, shape: [where.length], dtype: 'bool' } });
    const want = (await separate(xs, ys)) as Float32Array;
    expectSameResults(kept, want.map((v, i) => (where[i] ? v : -7)), target);

    const wide = new Float64Array(xs.length);
    await chain(xs, ys, { out: wide });
    expectSameResults(wide, want, target);
    await expect(chain(xs, ys, { out: new Int32Array(xs.length) })).rejects.toThrow(ArgumentError);
  });

  it('traces on every call: scalars and closed-over values are current', async () => {
    let a = 2;
    const scaled = fuse(async (x, y) => mul(await saxpy(a, x, y), y));
    const first = await scaled(xs, ys);
    a = -0.5;
    const second = await scaled(xs, ys);
    expectSameResults(first, await mul(await saxpy(2, xs, ys), ys), target);
    expectSameResults(second, await mul(await saxpy(-0.5, xs, ys), ys), target);
    // Scalars given to the fused function pass through to the calls.
    const withScalar = fuse(async (k: number, x, y) => saxpy(k * 2, await gauss(x), y));
    expectSameResults(await withScalar(1.5, xs, ys), await saxpy(3, await gauss(xs), ys), target);
  });

  it('uses one array twice and a result twice (a graph, not only a chain)', async () => {
    const twice = fuse(async (x) => {
      const g = await gauss(x);
      return mul(g, await saxpy(0.5, g, x));
    });
    const g = await gauss(xs);
    expectSameResults(await twice(xs), await mul(g, await saxpy(0.5, g, xs)), target);
  });

  it('folds a trailing reduce inside the fused kernel', async () => {
    const add = vectorize(['float32(float32, float32)'], { target, identity: 0 })((a: number, b: number) => a + b);
    const total = fuse(async (x, y) => add.reduce(await mul(x, y)));
    const got = await total(xs, ys);
    const want = await add.reduce(await mul(xs, ys));
    expect(typeof got).toBe('number');
    expectSameResults([got as number], [want as number], target);
    expect(await total.explain(xs, ys)).toContain('`kernel.reduce(…)` (call 2) folds inside the kernel, over axis 0 of shape [1000], in order');
  });
});

describe('fuse: dtypes and loops as the separate calls select them', () => {
  it('rounds each step to its declared dtype and converts between steps as copies did', async () => {
    const half = vectorize(['int16(float64)'])((x: number) => x / 2);
    const widen = vectorize(['float64(int32)', 'float64(float64)'])((x: number) => x * 1.5 + 0.1);
    const narrow = vectorize(['float32(float64)'])((x: number) => x / 3);
    const fused = fuse(async (x) => narrow(await widen(await half(x))));
    const x = Float64Array.from({ length: 200 }, (_, i) => (i - 100) * 777.77);
    const got = await fused(x);
    const want = await narrow(await widen(await half(x)));
    expect(got).toBeInstanceOf(Float32Array);
    expectSameResults(got, want, 'cpu');
    // int16 wraps at each step, as the int16 array stored it.
    expect(await fused.explain(x)).toContain('arg1: float64 (argument 1)');
  });

  it('honours `dtype` and `casting` on the last call’s loop', async () => {
    const scale = vectorize(['float32(float32)', 'float64(float64)'])((x: number) => x * 0.1);
    const neg = vectorize(['float32(float32)', 'float64(float64)'])((x: number) => -x);
    const fused = fuse(async (x) => neg(await scale(x)));
    const x = f32([1, 2, 3]);
    const got = (await fused(x, { dtype: 'float64' })) as unknown as Float64Array;
    expect(got).toBeInstanceOf(Float64Array);
    expectSameResults(got, (await neg(await scale(x), { dtype: 'float64' })) as unknown as Float64Array, 'cpu');
    await expect(fused(x, { dtype: 'float64', casting: 'no' })).rejects.toThrow(ArgumentError);
  });

  it('runs lazily typed ufuncs and kernels that branch, return early and call helpers', async () => {
    const clip = vectorize()(function clip(x: number) {
      if (x > 1) return 1;
      if (x < -1) {
        return -1;
      }
      const y = x * x;
      return y;
    });
    const sq = (v: number) => v * v;
    const poly = vectorize([], { env: { sq } })((x: number) => sq(x) + sq(x + 1));
    const firstBig = vectorize(['float64(float64)'])(function firstBig(x: number) {
      for (let k = 0; k < 10; k++) {
        if (k * k > x) return k;
      }
      return -1;
    });
    const fused = fuse(async (x) => firstBig(await poly(await clip(x))));
    const x = Float64Array.from({ length: 64 }, (_, i) => (i - 32) / 10);
    expectSameResults(await fused(x), (await firstBig(await poly(await clip(x)))) as unknown as Float64Array, 'cpu');
  });
});

describe('fuse: kernels cached by the shape of the trace', () => {
  it('selects loops anew when a scalar changes class, as the separate calls do', async () => {
    const add = vectorize(['int32(int32, int32)', 'float64(float64, float64)'])((a: number, b: number) => a + b);
    const twice = vectorize(['int32(int32)', 'float64(float64)'])((a: number) => a * 2);
    const fused = fuse(async (k: number, x) => twice(await add(x, k)));
    const x = Int32Array.of(1, 2, 3);
    for (const k of [2, 2.5, 7, 2 ** 40, -3]) {
      const got = await fused(k, x);
      const want = await twice(await add(x, k));
      expect(got.constructor).toBe(want.constructor);
      expect([...got]).toEqual([...want]);
    }
  });

  it('takes the arrays a function closes over on each call', async () => {
    const mul = vectorize(['float32(float32, float32)'])((a: number, b: number) => a * b);
    let w = f32([1, 2, 3]);
    const fused = fuse(async (x) => mul(await mul(x, w), w));
    expect([...(await fused(f32([1, 1, 1])))]).toEqual([1, 4, 9]);
    w = f32([3, 3, 3]);
    expect([...(await fused(f32([1, 1, 1])))]).toEqual([9, 9, 9]);
    const v = w;
    const two = fuse(async (x) => mul(await mul(x, v), w)); // the same array twice: one parameter
    expect([...(await two(f32([1, 2, 3])))]).toEqual([9, 18, 27]);
  });
});

describe('fuse: what does not fuse', () => {
  const { saxpy, gauss, mul } = ufuncsOn('cpu');
  const rowSum = guvectorize(['void(float32[:], float32[:])'], '(n)->()')(function sumRow(x: Float32Array, out: Float32Array) {
    let s = 0;
    for (let i = 0; i < x.length; i++) s += x[i]!;
    out[0] = s;
  });

  it('refuses with a FusionError that names the call and says why', async () => {
    const twoGu = fuse((x) => rowSum(rowSum(gauss(x) as never) as never)); // JavaScript's nested form
    await expect(twoGu(xs)).rejects.toThrowErrorMatchingInlineSnapshot(`[FusionError: These ufunc calls cannot run as one kernel: \`sumRow(…)\` (call 2) and \`sumRow(…)\` (call 3) are both guvectorize ufuncs; a fused kernel runs one gufunc's core loop, with element-wise steps before and after it (a second would need the first one's core results held between them). Pass \`{ unfusable: 'separate' }\` to \`fuse\` to run them as separate calls.]`);
    const accumulate = fuse(async (x) => mul.accumulate(await gauss(x)));
    await expect(accumulate(xs)).rejects.toThrowErrorMatchingInlineSnapshot(`[FusionError: These ufunc calls cannot run as one kernel: \`times.accumulate(…)\` (call 2) is a method other than a trailing \`reduce\`; only a \`reduce\` of the fused result can end a fused function. Pass \`{ unfusable: 'separate' }\` to \`fuse\` to run them as separate calls.]`);
    const arithmetic = fuse(async (x) => ((await gauss(x)) as unknown as number) * 2);
    await expect(arithmetic(xs)).rejects.toThrowErrorMatchingInlineSnapshot(`[FusionError: Inside a function given to \`fuse\`, the result of \`gaussian(…)\` (call 1) was used in JavaScript arithmetic or a comparison: traced arrays only go into ufunc calls. Write the arithmetic as a vectorize ufunc (e.g. \`vectorize(['float32(float32, float32)'])((a, b) => a * b)\`), which then fuses with the rest.]`);
    const gpuMul = vectorize(['float32(float32, float32)'], { target: 'parallel' })((a: number, b: number) => a * b);
    await expect(fuse(async (x) => gpuMul(await gauss(x), x))(xs)).rejects.toThrow(/runs on the 'cpu' target and `kernel\(…\)` \(call 2\) on 'parallel'/);
    await expect(fuse((x) => saxpy(2, x, x, { out: x }))(xs)).rejects.toThrow(/writes a given `out`/);
    expect(await twoGu.explain(xs)).toMatch(/^Not fused: `sumRow\(…\)` \(call 2\) and `sumRow\(…\)` \(call 3\) are both guvectorize ufuncs/);
  });

  it('runs the calls one by one with `unfusable: \'separate\'`', async () => {
    // Two gufuncs: the calls do not fuse.
    const withGu = fuse(async (x, c) => rowSum(await mul(await rowSum(x), c)), { unfusable: 'separate' });
    const rows = { data: xs, shape: [10, 10, 10] };
    const c = { data: xs.slice(0, 10), shape: [10, 1] };
    expect(await withGu.explain(rows, c)).toMatch(/^Not fused: `sumRow\(…\)` \(call 1\) and `sumRow\(…\)` \(call 3\) are both guvectorize ufuncs.* It runs as 3 separate calls/);
    const got = (await withGu(rows, c)) as NDArray;
    expect([...got.data]).toEqual([...((await rowSum(await mul(await rowSum(rows), c))) as NDArray).data]);
    const out = new Float32Array(10);
    expect(await withGu(rows, c, { out })).toBe(out);
    expect([...out]).toEqual([...got.data]);
  });

  it('reports errors of the calls as the separate calls would', async () => {
    await expect(chainOf(saxpy, gauss, mul)(xs, new Float32Array(7))).rejects.toThrow(/broadcast/i);
    const ints = vectorize(['int32(int32)'])((x: number) => x + 1);
    await expect(fuse(async (x) => ints(await gauss(x)))(xs)).rejects.toThrow(ArgumentError);
    expect(() => fuse((x) => x, { unfusible: 'separate' } as never)).toThrow(/did you mean `unfusable`/);
  });
});

function chainOf(saxpy: ReturnType<typeof ufuncsOn>['saxpy'], gauss: ReturnType<typeof ufuncsOn>['gauss'], mul: ReturnType<typeof ufuncsOn>['mul']) {
  return fuse(async (x, y) => mul(await gauss(await saxpy(2, x, y)), x));
}

describe.runIf(TARGETS.includes('gpu'))('fuse on device arrays', () => {
  const { saxpy, gauss, mul } = ufuncsOn('gpu');
  const chain = fuse(async (x, y) => mul(await gauss(await saxpy(2, x, y)), x));

  it('returns a DeviceArray for device inputs, with the separate calls’ results', async () => {
    const dx = await toDevice(xs);
    const dy = await toDevice(ys);
    const got = (await chain(dx, dy)) as DeviceArray;
    expect(got.shape).toEqual([xs.length]);
    const want = (await mul(await gauss(await saxpy(2, dx, dy)), dx)) as unknown as DeviceArray;
    expectSameResults((await got.toHost()) as Float32Array, (await want.toHost()) as Float32Array, 'gpu');
    const out = await toDevice(new Float32Array(xs.length));
    expect(await chain(dx, dy, { out })).toBe(out);
    expectSameResults((await out.toHost()) as Float32Array, (await want.toHost()) as Float32Array, 'gpu');
    for (const a of [dx, dy, got, want, out]) a.destroy();
  });
});
