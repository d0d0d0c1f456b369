/**
 * NumPy's call options on every target. Expected values are NumPy's (2.x), computed with NumPy and
 * embedded as literals; the comment above each names the NumPy expression.
 */
import { describe, expect, it } from 'vitest';
import { ArgumentError, BroadcastError, DeviceArray, guvectorize, TargetUnavailableError, toDevice, vectorize, type NDArray, type TypedArray } from '../src/index.js';
import { TARGETS } from './targets.js';

const f32 = (xs: number[]) => Float32Array.from(xs);
const bool = (xs: boolean[]) => ({ data: Uint8Array.from(xs.map(Number)), shape: [xs.length], dtype: 'bool' as const });

describe.each(TARGETS)('call options on %s', (target) => {
  const add = vectorize(['float32(float32, float32)'], { target })((a: number, b: number) => a + b);
  const addInt = vectorize(['int32(int32, int32)', 'float32(float32, float32)'], { target })((a: number, b: number) => a + b);

  it('broadcasts the inputs to a given out (NumPy gh-16484)', async () => {
    // np.add(np.array([[1,2,3]], np.float32), 1, out=np.zeros((4,3), np.float32))
    const out = { data: new Float32Array(12), shape: [4, 3] };
    expect(await add({ data: f32([1, 2, 3]), shape: [1, 3] }, 1, { out })).toBe(out);
    expect([...out.data]).toEqual([2, 3, 4, 2, 3, 4, 2, 3, 4, 2, 3, 4]);
    // an output itself is never broadcast
    await expect(add(f32([1, 2, 3]), { data: f32([1, 2, 3, 4, 5, 6]), shape: [2, 3] }, { out: { data: new Float32Array(3), shape: [1, 3] } })).rejects.toThrowError(BroadcastError);
  });

  it('takes outputs positionally after the inputs', async () => {
    const copy = vectorize(['float32(float32)'], { target })((a: number) => a);
    const a = f32([1, 2, 3]);
    const b = new Float32Array(3);
    expect(await copy(a, b)).toBe(b);
    expect([...b]).toEqual([1, 2, 3]);
    const rowCopy = guvectorize(['void(float32[:], float32[:])'], '(n)->(n)', { target })((x: Float32Array, y: Float32Array) => {
      for (let i = 0; i < x.length; i++) y[i] = 2 * x[i]!;
    });
    const c = new Float32Array(3);
    await rowCopy(a, c);
    expect([...c]).toEqual([2, 4, 6]);
    // @ts-expect-error: `out` both positionally and as an option is refused by the types too
    await expect(copy(a, b, { out: b })).rejects.toThrowError(/both positionally/);
  });

  it('casts outputs same_kind by default: an Int16Array out for an int32 loop wraps as NumPy does', async () => {
    // np.add(np.array([40000, -5, 7], np.int32), 0, out=np.zeros(3, np.int16)) -> [-25536, -5, 7]
    const out = new Int16Array(3);
    await addInt(Int32Array.from([40000, -5, 7]), 0, { out });
    expect([...out]).toEqual([-25536, -5, 7]);
    // float32 → int32 is not same_kind; 'unsafe' allows it, 'no' refuses even int32 → int16
    await expect(add(f32([1.5]), f32([1]), { out: new Int32Array(1) })).rejects.toThrowError(/casting 'same_kind'/);
    const unsafe = new Int32Array(1);
    await add(f32([1.5]), f32([1]), { out: unsafe, casting: 'unsafe' });
    expect([...unsafe]).toEqual([2]);
    await expect(addInt(Int32Array.from([1]), 0, { out: new Int16Array(1), casting: 'no' })).rejects.toThrowError(ArgumentError);
    await expect(add(f32([1]), f32([1]), { casting: 'sometimes' as never })).rejects.toThrowErrorMatchingSnapshot();
  });

  it('picks a loop with dtype and signature', async () => {
    const a = Int32Array.from([2147483647, 3]);
    const b = Int32Array.from([1, 4]);
    // np.add(a, b) -> [-2147483648, 7]; np.add(a, b, dtype=np.float32) -> [2147483648.0, 7.0]
    expect([...(await addInt(a, b))]).toEqual([-2147483648, 7]);
    const viaDtype = await addInt(a, b, { dtype: 'float32' });
    expect(viaDtype).toBeInstanceOf(Float32Array);
    expect([...viaDtype]).toEqual([2147483648, 7]);
    expect([...(await addInt(a, b, { signature: 'float32(float32, float32)' }))]).toEqual([2147483648, 7]);
    expect([...(await addInt(a, b, { signature: ['float32', null, null] }))]).toEqual([2147483648, 7]);
    // 'safe' refuses int32 → float32 for a forced loop
    await expect(addInt(a, b, { dtype: 'float32', casting: 'safe' })).rejects.toThrowError(ArgumentError);
    await expect(addInt(a, b, { dtype: 'float32', signature: 'f4(f4,f4)' })).rejects.toThrowError(/not both/);
  });

  it('writes only where the mask is true', async () => {
    const a = f32([1, 2, 3, 4]);
    const b = f32([10, 20, 30, 40]);
    // np.add(a, b, where=[T,F,T,F], out=np.full(4, -1, np.float32)) -> [11, -1, 33, -1]
    const out = new Float32Array(4).fill(-1);
    await add(a, b, { out, where: bool([true, false, true, false]) });
    expect([...out]).toEqual([11, -1, 33, -1]);
    // the mask broadcasts like an operand: where=[[T],[F]], out shape (2, 4)
    const out2 = { data: new Float32Array(8).fill(-1), shape: [2, 4] };
    await add(a, b, { out: out2, where: { data: Uint8Array.from([1, 0]), shape: [2, 1], dtype: 'bool' } });
    expect([...out2.data]).toEqual([11, 22, 33, 44, -1, -1, -1, -1]);
    // allocated outputs hold zeros where the mask is false
    expect([...(await add(a, b, { where: bool([false, true, true, false]) }))]).toEqual([0, 22, 33, 0]);
    const untouched = f32([5, 5]);
    await add(f32([1, 2]), 1, { out: untouched, where: false });
    expect([...untouched]).toEqual([5, 5]);
    await expect(add(a, b, { where: f32([1, 0, 1, 0]) })).rejects.toThrowError(/boolean mask/);
  });

  it('stores into a Uint8ClampedArray by clamping and rounding half to even', async () => {
    const scale = vectorize(['float64(float64)', 'float32(float32)'], { target })((x: number) => x * 1.5);
    const pixels = Float64Array.from([200, 100, -3, 1 / 3, 1, 5 / 3, 171]);
    // np.clip(np.round(p * 1.5), 0, 255) -> [255, 150, 0, 0, 2, 2, 255]
    const out = new Uint8ClampedArray(7);
    const input = target === 'gpu' ? Float32Array.from(pixels) : pixels;
    await scale(input, { out });
    const expected = target === 'gpu' ? [255, 150, 0, 0, 2, 2, 255] : [255, 150, 0, 0, 2, 2, 255];
    expect([...out]).toEqual(expected);
    // scijs's and stdlib's names for a Uint8ClampedArray
    const scijs = { data: new Uint8ClampedArray(2), shape: [2], stride: [1], offset: 0, dtype: 'uint8_clamped' as const };
    const stdlib = { data: new Uint8ClampedArray(2), shape: [2], strides: [1], offset: 0, dtype: 'uint8c' as const, order: 'row-major' };
    await scale(f32([300, 10]), { out: scijs });
    await scale(f32([-1, 10.5]), { out: stdlib });
    expect([...scijs.data]).toEqual([255, 15]);
    // np.round(10.5 * 1.5) = np.round(15.75) = 16
    expect([...stdlib.data]).toEqual([0, 16]);
    // a clamped input reads as uint8
    const inc = vectorize(['int32(int32)'], { target })((x: number) => x + 1);
    expect([...(await inc(Uint8ClampedArray.from([255, 0])))]).toEqual([256, 1]);
  });

  it('returns NDArrays with stdlib\'s order', async () => {
    const r = (await add({ data: f32([1, 2, 3, 4]), shape: [2, 2] }, 1)) as NDArray;
    expect(r.order).toBe('row-major');
    expect(r.strides).toEqual([2, 1]);
  });

  it('accepts bare tuple signatures as void(...)', async () => {
    const addRows = guvectorize('int32[:], int32[:], int32[:]', '(n),(n)->(n)', { target })((a: Int32Array, b: Int32Array, c: Int32Array) => {
      for (let i = 0; i < a.length; i++) c[i] = a[i]! + b[i]!;
    });
    expect([...(await addRows(Int32Array.from([1, 2]), Int32Array.from([10, 20])))]).toEqual([11, 22]);
  });

  describe('guvectorize axes, axis and keepdims', () => {
    const sum = guvectorize(['void(float32[:], float32[:])'], '(n)->()', { target })((x: Float32Array, out: Float32Array) => {
      let s = 0;
      for (let i = 0; i < x.length; i++) s += x[i]!;
      out[0] = s;
    });
    const cumsum = guvectorize(['void(float32[:], float32[:])'], '(n)->(n)', { target })((x: Float32Array, out: Float32Array) => {
      let s = 0;
      for (let i = 0; i < x.length; i++) {
        s += x[i]!;
        out[i] = s;
      }
    });
    // x = np.arange(12, dtype=np.float32).reshape(3, 4) * 1.5
    const x = { data: f32([0, 1.5, 3, 4.5, 6, 7.5, 9, 10.5, 12, 13.5, 15, 16.5]), shape: [3, 4] };

    it('axis picks the core axis', async () => {
      // x.sum(axis=0) -> [18, 22.5, 27, 31.5]
      const s0 = (await sum(x, { axis: 0 })) as NDArray;
      expect(s0.shape).toEqual([4]);
      expect([...s0.data]).toEqual([18, 22.5, 27, 31.5]);
      const viaAxes = (await sum(x, { axes: [[0]] })) as NDArray;
      expect([...viaAxes.data]).toEqual([18, 22.5, 27, 31.5]);
      // np.cumsum(x, axis=0)
      const c = (await cumsum(x, { axis: 0 })) as NDArray;
      expect(c.shape).toEqual([3, 4]);
      expect([...c.data]).toEqual([0, 1.5, 3, 4.5, 6, 9, 12, 15, 18, 22.5, 27, 31.5]);
      // an out in the caller's layout
      const out = { data: new Float32Array(12), shape: [3, 4] };
      await cumsum(x, { axes: [[0], [0]], out });
      expect([...out.data]).toEqual([0, 1.5, 3, 4.5, 6, 9, 12, 15, 18, 22.5, 27, 31.5]);
    });

    it('keepdims keeps the reduced axis with size 1', async () => {
      // x.sum(axis=1, keepdims=True) -> shape (3, 1): [9, 33, 57]
      const k = (await sum(x, { keepdims: true })) as NDArray;
      expect(k.shape).toEqual([3, 1]);
      expect([...k.data]).toEqual([9, 33, 57]);
      const k0 = (await sum(x, { axis: 0, keepdims: true })) as NDArray;
      expect(k0.shape).toEqual([1, 4]);
      expect([...k0.data]).toEqual([18, 22.5, 27, 31.5]);
    });

    it('refuses bad axes with NumPy-like messages', async () => {
      await expect(sum(x, { axis: 2 })).rejects.toThrowErrorMatchingSnapshot();
      await expect(sum(x, { axes: [[0, 1]] })).rejects.toThrowErrorMatchingSnapshot();
      await expect(sum(x, { axis: 0, axes: [[0]] })).rejects.toThrowError(/not both/);
      await expect(add(f32([1]), f32([2]), { axis: 0 })).rejects.toThrowErrorMatchingSnapshot();
    });
  });
});

describe.each(TARGETS)('signature dispatch and the float64 policy on %s', (target) => {
  const kernel = (a: number, b: number) => a * b + 1;

  it('takes the first loop the target can run', async () => {
    const mul = vectorize(['float64(float64, float64)', 'float32(float32, float32)'], { target })(kernel);
    const r = await mul(f32([1.5, 2]), f32([3, 0.1]));
    // the gpu skips the float64 loop; cpu and parallel take it (float32 casts to float64 safely)
    expect(r).toBeInstanceOf(target === 'gpu' ? Float32Array : Float64Array);
    const expected = target === 'gpu' ? [Math.fround(4.5 + 1), Math.fround(Math.fround(2 * Math.fround(0.1)) + 1)] : [5.5, 2 * Math.fround(0.1) + 1];
    expect([...r]).toEqual(expected);
  });

  it("runs float64 signatures in float32 with float64: 'float32', refuses them by default", async () => {
    const only64 = vectorize(['float64(float64, float64)'], { target })(kernel);
    const demoted = vectorize(['float64(float64, float64)'], { target, float64: 'float32' })(kernel);
    const a = Float64Array.from([0.1, 1e10]);
    const b = Float64Array.from([3, 3]);
    const r = await demoted(a, b);
    expect(r).toBeInstanceOf(Float64Array);
    if (target === 'gpu') {
      await expect(only64(a, b)).rejects.toThrowError(TargetUnavailableError);
      await expect(only64(a, b)).rejects.toThrowErrorMatchingSnapshot();
      // float32 arithmetic: fround at each step
      expect([...r]).toEqual([...a].map((x, i) => Math.fround(Math.fround(Math.fround(x) * b[i]!) + 1)));
    } else {
      expect([...r]).toEqual([0.1 * 3 + 1, 1e10 * 3 + 1]);
    }
  });
});

describe.each(TARGETS)('where and output casting, with device arrays on the gpu, on %s', (target) => {
  // On the gpu every array here is a DeviceArray: the masked, cast store runs on the device.
  const place = async <T extends TypedArray>(data: T, shape?: number[]) =>
    target === 'gpu' ? toDevice(shape ? { data, shape } : data) : shape ? { data, shape } : data;
  const read = async (x: unknown): Promise<number[]> =>
    x instanceof DeviceArray ? [...(await x.toHost())].map(Number) : ArrayBuffer.isView(x) ? [...(x as TypedArray)].map(Number) : [...(x as NDArray).data].map(Number);
  const add = vectorize(['int32(int32, int32)', 'float32(float32, float32)'], { target })((a: number, b: number) => a + b);

  it('casts outputs same_kind by default, refuses what same_kind refuses, casts unsafe on request', async () => {
    const x = await place(Int32Array.of(1, 2, 3, 40000));
    const y = await place(Int32Array.of(10, 20, 30, 40000));
    // np.add(np.int32([1, 2, 3, 40000]), np.int32([10, 20, 30, 40000]), out=np.zeros(4, np.int16)) -> [11, 22, 33, 14464]
    const o16 = await place(new Int16Array(4));
    expect(await add(x, y, { out: o16 })).toBe(o16);
    expect(await read(o16)).toEqual([11, 22, 33, 14464]);
    // ... out=np.zeros(4, np.float32) -> [11, 22, 33, 80000]
    const of = await place(new Float32Array(4));
    await add(x, y, { out: of });
    expect(await read(of)).toEqual([11, 22, 33, 80000]);
    // np.add(np.float32([1.5, -3.5]), np.float32([1.5, -3.5]), out=np.zeros(2, np.int32)): UFuncTypeError (same_kind)
    const fx = await place(Float32Array.of(1.5, -3.5));
    const oi = await place(new Int32Array(2));
    await expect(add(fx, fx, { out: oi })).rejects.toThrowError(/Cannot cast output 1 .* from float32 to int32 with casting 'same_kind'/);
    // ... casting='unsafe' -> [3, -7]
    await add(fx, fx, { out: oi, casting: 'unsafe' });
    expect(await read(oi)).toEqual([3, -7]);
  });

  it('where: a given out keeps its elements where the mask is false; an allocated one gets zeros', async () => {
    const x = await place(Int32Array.of(1, 2, 3, 4));
    const y = await place(Int32Array.of(10, 20, 30, 40));
    // o = np.full(4, -1, np.int32); np.add(x, y, out=o, where=[True, False, True, False]) -> [11, -1, 33, -1]
    const o = await place(Int32Array.of(-1, -1, -1, -1));
    await add(x, y, { out: o, where: Uint8Array.of(1, 0, 1, 0) });
    expect(await read(o)).toEqual([11, -1, 33, -1]);
    // where=False leaves out as it was
    await add(x, y, { out: o, where: false });
    expect(await read(o)).toEqual([11, -1, 33, -1]);
    // without out NumPy leaves masked-out elements uninitialised; here they are zeros (docs/call-options.md)
    const r = await add(x, y, { where: Uint8Array.of(0, 1, 0, 1) });
    if (target === 'gpu') expect(r).toBeInstanceOf(DeviceArray);
    expect(await read(r)).toEqual([0, 22, 0, 44]);
    // a mask broadcast over rows, with a cast: o = np.full((2, 3), -1, np.int16);
    // np.add(np.int32([[1, 2, 3], [4, 5, 6]]), 1, out=o, where=[True, False, True]) -> [[2, -1, 4], [5, -1, 7]]
    const m = await place(Int32Array.of(1, 2, 3, 4, 5, 6), [2, 3]);
    const om = await place(new Int16Array(6).fill(-1), [2, 3]);
    await add(m, 1, { out: om, where: Uint8Array.of(1, 0, 1) });
    expect(await read(om)).toEqual([2, -1, 4, 5, -1, 7]);
  });

  it('where and a cast for a guvectorize output: the mask covers loop dimensions, whole rows are written or kept', async () => {
    const cumsum = guvectorize(['void(int32[:], int32[:])'], '(n)->(n)', { target })((x: Int32Array, o: Int32Array) => {
      let s = 0;
      for (let i = 0; i < x.length; i++) {
        s += x[i]!;
        o[i] = s;
      }
    });
    const x = await place(Int32Array.of(1, 2, 3, 4, 5, 6), [2, 3]);
    // o = np.full((2, 3), -1, np.int16); row 1 only: np.cumsum(x[1]) -> [4, 9, 15]
    const o = await place(new Int16Array(6).fill(-1), [2, 3]);
    await cumsum(x, { out: o, where: Uint8Array.of(0, 1) });
    expect(await read(o)).toEqual([-1, -1, -1, 4, 9, 15]);
    expect(await read(await cumsum(x, { where: Uint8Array.of(1, 0) }))).toEqual([1, 3, 6, 0, 0, 0]);
  });

  it('where and a cast together with axis and keepdims (a guvectorize reduction)', async () => {
    const total = guvectorize(['void(int32[:], int32[:])'], '(n)->()', { target })((x: Int32Array, o: Int32Array) => {
      let s = 0;
      for (let i = 0; i < x.length; i++) s += x[i]!;
      o[0] = s;
    });
    const x = await place(Int32Array.of(1, 2, 3, 4, 5, 6), [2, 3]);
    // o = np.full(3, -1, np.int16); np.add.reduce(x, axis=0, out=o, where=[True, False, True]) -> [5, -1, 9]
    const o = await place(new Int16Array(3).fill(-1));
    await total(x, { axis: 0, out: o, where: Uint8Array.of(1, 0, 1) });
    expect(await read(o)).toEqual([5, -1, 9]);
    // allocated with keepdims: shape (1, 3), zeros where masked out (NumPy: uninitialised)
    const r = await total(x, { axis: 0, keepdims: true, where: Uint8Array.of(0, 1, 1) });
    expect([...(r as { readonly shape: readonly number[] }).shape]).toEqual([1, 3]);
    expect(await read(r)).toEqual([0, 7, 9]);
    // axis 1 into an int16 out of shape (2, 1): o2 = np.full((2, 1), -1, np.int16); ... where=[False, True] -> [[-1], [15]]
    const o2 = await place(new Int16Array(2).fill(-1), [2, 1]);
    await total(x, { axis: 1, keepdims: true, out: o2, where: Uint8Array.of(0, 1) });
    expect(await read(o2)).toEqual([-1, 15]);
  });

  if (target === 'gpu') {
    it('a call on device arrays refuses a host `out` that would need a store on the host', async () => {
      const x = await toDevice(Int32Array.of(1, 2));
      await expect(add(x, x, { out: new Int16Array(2) })).rejects.toThrowError(/must be a DeviceArray/);
    });
  }
});
