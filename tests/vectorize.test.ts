import { describe, expect, it } from 'vitest';
import {
  ArgumentError, BroadcastError, KernelCompileError, SignatureError, TargetUnavailableError, vectorize, type NDArray,
} from '../src/index.js';
import { FLOAT64_TARGETS, TARGETS } from './targets.js';

const f32 = (xs: number[]) => Float32Array.from(xs);
const f64 = (xs: number[]) => Float64Array.from(xs);

describe.each(TARGETS)('vectorize on %s', (target) => {
  const saxpy = vectorize(['float32(float32, float32, float32)'], { target })((a: number, x: number, y: number) => a * x + y);

  it('computes element-wise with float32 rounding at each operation, scalars broadcast', async () => {
    const x = f32([1, 2.5, -3, 1e-3]);
    const y = f32([0.1, 0.2, 0.3, 1e7]);
    const z = await saxpy(1.1, x, y);
    expect(z).toBeInstanceOf(Float32Array);
    const a = Math.fround(1.1);
    expect([...z]).toEqual([...x].map((xi, i) => Math.fround(Math.fround(a * xi) + y[i]!)));
  });

  it('broadcasts loop dimensions NumPy-style and returns an NDArray for 2-D results', async () => {
    const col = { data: f32([1, 2, 3]), shape: [3, 1] };
    const row = f32([10, 20]);
    const z = (await saxpy(2, col, row)) as NDArray;
    expect(z.shape).toEqual([3, 2]);
    expect([...z.data]).toEqual([12, 22, 14, 24, 16, 26]);
  });

  it('reads strided, offset and negative-stride views', async () => {
    const data = f32([0, 1, 2, 3, 4, 5, 6, 7]);
    const reversed = { data, shape: [4], strides: [-2], offset: 7 }; // 7, 5, 3, 1
    const scijs = { data, shape: [4], stride: [2], offset: 0 }; // 0, 2, 4, 6
    const z = (await saxpy(1, reversed, scijs)) as NDArray;
    expect([...z.data]).toEqual([7, 7, 7, 7]);
  });

  it('writes into out, and into an input in place', async () => {
    const x = f32([1, 2, 3]);
    const out = new Float32Array(3);
    expect(await saxpy(2, x, x, { out })).toBe(out);
    expect([...out]).toEqual([3, 6, 9]);
    await saxpy(2, x, x, { out: x });
    expect([...x]).toEqual([3, 6, 9]);
  });

  it('copies an input that overlaps out in a different place, as NumPy does', async () => {
    const buf = f32([1, 2, 3, 4, 5]);
    const shifted = buf.subarray(1); // 2, 3, 4, 5
    await saxpy(1, buf.subarray(0, 4), shifted, { out: buf.subarray(0, 4) });
    expect([...buf]).toEqual([3, 5, 7, 9, 5]);
  });

  it('handles empty inputs', async () => {
    expect((await saxpy(1, new Float32Array(0), new Float32Array(0))).length).toBe(0);
  });

  it('dispatches to the first signature the inputs cast to safely', async () => {
    const add = vectorize(['int32(int32, int32)', 'float32(float32, float32)'], { target })((a: number, b: number) => a + b);
    expect(await add(Int32Array.from([1, 2]), Int32Array.from([3, 4]))).toBeInstanceOf(Int32Array);
    expect(await add(Int16Array.from([1, 2]), Int8Array.from([3, 4]))).toBeInstanceOf(Int32Array);
    const z = await add(f32([0.5]), Int16Array.from([2]));
    expect(z).toBeInstanceOf(Float32Array);
    expect([...z]).toEqual([2.5]);
    await expect(add(Uint32Array.from([1]), Uint32Array.from([1]))).rejects.toThrowError(ArgumentError);
    await expect(add(Uint32Array.from([1]), Uint32Array.from([1]))).rejects.toThrowErrorMatchingSnapshot();
  });

  it('wraps int32 arithmetic and divides as JS does', async () => {
    const f = vectorize(['int32(int32, int32)'], { target })((a: number, b: number) => a * b + ((a / b) | 0) + (a % b));
    const a = Int32Array.from([2147483647, -7, 7, 5, -2147483648]);
    const b = Int32Array.from([2, 2, -2, 0, -1]);
    const expected = [...a].map((x, i) => (Math.imul(x, b[i]!) + ((x / b[i]!) | 0) + ((x % b[i]!) | 0)) | 0);
    expect([...(await f(a, b))]).toEqual(expected);
  });

  it('refuses a call with no matching signature, listing the signatures', async () => {
    await expect(saxpy(1, f64([1]), f64([1]))).rejects.toThrowErrorMatchingSnapshot();
  });

  it('refuses wrong arguments with typed errors that say where', async () => {
    // Wrong calls are type errors too; these check what plain JS callers get.
    // @ts-expect-error: one input missing
    await expect(saxpy(1, f32([1]))).rejects.toThrowError(ArgumentError);
    // @ts-expect-error: a plain JS array is not an input
    await expect(saxpy(1, [1, 2], f32([1, 2]))).rejects.toThrowErrorMatchingSnapshot();
    await expect(saxpy(1, f32([1, 2]), f32([1, 2, 3]))).rejects.toThrowError(BroadcastError);
    // @ts-expect-error: a misspelt option
    await expect(saxpy(1, f32([1]), f32([1]), { outt: 1 })).rejects.toThrowErrorMatchingSnapshot();
    await expect(saxpy(1, { data: f32([1, 2]), shape: [3] }, f32([1, 2, 3]))).rejects.toThrowErrorMatchingSnapshot();
    await expect(saxpy(1, f32([1]), f32([1]), { out: new Int32Array(1) })).rejects.toThrowError(ArgumentError);
    await expect(saxpy(1, f32([1, 2]), f32([1, 2]), { out: new Float32Array(3) })).rejects.toThrowError(BroadcastError);
  });

  it('leaves out untouched when a call is refused', async () => {
    const out = f32([7, 7]);
    await expect(saxpy(1, f32([1, 2]), f32([1, 2, 3]), { out })).rejects.toThrowError(BroadcastError);
    expect([...out]).toEqual([7, 7]);
  });

  it('implements outer through broadcasting', async () => {
    const mul = vectorize(['float32(float32, float32)'], { target })((a: number, b: number) => a * b);
    const o = (await mul.outer(f32([1, 2]), f32([1, 10, 100]))) as NDArray;
    expect(o.shape).toEqual([2, 3]);
    expect([...o.data]).toEqual([1, 10, 100, 2, 20, 200]);
  });
});

describe.each(FLOAT64_TARGETS)('vectorize with float64 and lazy signatures on %s', (target) => {
  it('compiles lazily per input dtypes, inferring the return type', async () => {
    const hyp = vectorize([], { target })((a: number, b: number) => Math.sqrt(a * a + b * b));
    expect([...(await hyp(f64([3, 5]), f64([4, 12])))]).toEqual([5, 13]);
    expect(await hyp(f32([3]), f32([4]))).toBeInstanceOf(Float32Array);
    expect(hyp.signatures).toEqual(['float64(float64, float64)', 'float32(float32, float32)']);
  });

  it('returns a scalar for scalar inputs', async () => {
    const add = vectorize(['float64(float64, float64)'], { target })((a: number, b: number) => a + b);
    expect(await add(1.5, 2)).toBe(3.5);
  });
});

describe('vectorize on the cpu target', () => {
  const add = vectorize(['float32(float32, float32)', 'float64(float64, float64)', 'int32(int32, int32)'])((a: number, b: number) => a + b);

  it('offers a synchronous call', () => {
    expect([...add.sync(f32([1]), f32([2]))]).toEqual([3]);
  });

  it('reduces and accumulates along an axis', async () => {
    expect(await add.reduce(f64([1, 2, 3, 4]))).toBe(10);
    const m = { data: f64([1, 2, 3, 4, 5, 6]), shape: [2, 3] };
    expect([...((await add.reduce(m, { axis: 0 })) as NDArray).data]).toEqual([5, 7, 9]);
    expect([...((await add.reduce(m, { axis: 1 })) as NDArray).data]).toEqual([6, 15]);
    // This add has no identity, so, as Numba's @vectorize without one in NumPy, it is not
    // reorderable: np: "reduction operation is not reorderable, so at most one axis may be specified".
    await expect(add.reduce(m, { axis: null })).rejects.toThrowError(/reorderable/);
    expect(await add.reduce(f64([1, 2, 3, 4, 5, 6]), { axis: null })).toBe(21);
    expect([...(await add.accumulate(Int32Array.from([1, 2, 3, 4])))]).toEqual([1, 3, 6, 10]);
    expect([...((await add.accumulate(m, { axis: 1 })) as NDArray).data]).toEqual([1, 3, 6, 4, 9, 15]);
    expect(await add.reduce(new Float64Array(0), { identity: 0 })).toBe(0);
    await expect(add.reduce(new Float64Array(0))).rejects.toThrowError(ArgumentError);
  });

  it('refuses bad definitions when the ufunc is made', () => {
    expect(() => vectorize(['float32(float32, float32'])((a: number, b: number) => a + b)).toThrowError(SignatureError);
    expect(() => vectorize(['float32(float32)'])((a: number, b: number) => a + b)).toThrowErrorMatchingSnapshot();
    expect(() => vectorize(['float32(float32[:])'])((a: number) => a)).toThrowErrorMatchingSnapshot();
    expect(() => vectorize(['float32(float32)'])((a: number) => a.toString().length)).toThrowError(KernelCompileError);
    expect(() => vectorize(['float32(float32)'], { target: 'tpu' as never })((a: number) => a)).toThrowErrorMatchingSnapshot();
  });
});

describe('targets without a synchronous call', () => {
  it('say so (a ufunc typed for the gpu has no `sync` in its type; one reached anyway throws)', () => {
    const f = vectorize(['float32(float32)'], { target: 'gpu' })((a: number) => a);
    // @ts-expect-error no sync on the gpu
    expect(() => f.sync(f32([1]))).toThrowError(TargetUnavailableError);
  });
});

describe('repeated calls (the fast path) dispatch and alias exactly as a first call does', () => {
  it('picks the signature by each call scalar value, not by the previous call', async () => {
    const add = vectorize(['uint8(uint8, uint8)', 'int8(int8, int8)', 'float32(float32, float32)'])((a: number, b: number) => a + b);
    for (let round = 0; round < 3; round++) {
      expect(add.sync(Uint8Array.of(1), 3)).toBeInstanceOf(Uint8Array);
      expect(add.sync(Int8Array.of(1), -3)).toBeInstanceOf(Int8Array);
      expect(add.sync(Float32Array.of(1), 3)).toBeInstanceOf(Float32Array);
      expect([...add.sync(Float32Array.of(1), 0.5)]).toEqual([1.5]);
      expect(add.sync(2, 3)).toBe(5);
      // 300 fits neither uint8 nor int8: the float32 signature takes it.
      expect([...(await add(Uint8Array.of(1), 300))]).toEqual([301]);
    }
  });

  it('picks the signature by each call\'s number as a first call would, on either side of int64\'s bounds', () => {
    const make = () => vectorize(['int64(int64)', 'float64(float64)'])((a: number) => a + 1);
    const inc = make();
    // Integers beyond 2^32 that int64 holds and ones it does not, each after the other.
    for (const v of [-1e19, -5e9, 5e9, 1e19, 5e9, -5e9, 1e20, 2 ** 63, -(2 ** 63)]) {
      const expected = make().sync(v);
      const got = inc.sync(v);
      expect({ v, type: typeof got, got }).toEqual({ v, type: typeof expected, got: expected });
    }
  });

  it('copies an input that overlaps out in another place, on every call', () => {
    const add = vectorize(['float32(float32, float32)'])((a: number, b: number) => a + b);
    for (let round = 0; round < 3; round++) {
      const buf = Float32Array.of(1, 2, 3, 4);
      add.sync(buf.subarray(1), 0, { out: buf.subarray(0, 3) });
      expect([...buf]).toEqual([2, 3, 4, 4]);
    }
  });
});
