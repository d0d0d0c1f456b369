/**
 * Where the library used to depart from NumPy's (and Numba's) rules for ufunc methods and calls
 * (issue 26), on every target. Literals are NumPy 1.24's / Numba 0.56's results (the Python
 * expression is in the comment above each).
 */
import { describe, expect, it } from 'vitest';
import { ArgumentError, guvectorize, LayoutError, vectorize, type NDArray } from '../src/index.js';
import { TARGETS, FLOAT64_TARGETS } from './targets.js';

const data = (r: unknown) => [...(r as NDArray).data];

describe.each(TARGETS)('NumPy rules on %s', { timeout: 60_000 }, (target) => {
  it('reduce and accumulate fold in the loop type at every step (a bare literal is a double)', async () => {
    const div32 = vectorize(['int32(int32, int32)'], { target })((n: number, d: number) => {
      if (d === 0) return 0;
      return n / d;
    });
    // np.int32 loop: 2147483647 // 1 stays 2147483647 (the gpu computed it in f32 and wrapped)
    expect(await div32.reduce(Int32Array.of(2 ** 31 - 1, 1))).toBe(2 ** 31 - 1);
    expect([...((await div32.accumulate(Int32Array.of(2 ** 31 - 1, 1, 7))) as Int32Array)]).toEqual([2 ** 31 - 1, 2 ** 31 - 1, 306783378]);
    // (7 / 2 → 3 in int32, then 3 / 2 → 1), not 7 / 2 / 2 = 1.75 → 1 … and 9 / 2 → 4, 4 / 4 → 1 (not 1.125)
    expect(await div32.reduce(Int32Array.of(9, 2, 4))).toBe(1);
  });

  it('reduce folds in the dtype of a given out; an out of another shape is refused', async () => {
    const add = vectorize(['uint8(uint8, uint8)', 'uint16(uint16, uint16)', 'float64(float64, float64)'], { target, identity: 0 })((a: number, b: number) => a + b);
    // np.add.reduce(np.ones(1000, np.uint8), out=np.zeros((), np.uint16)) -> 1000
    const out = new Uint16Array(1);
    await add.reduce(new Uint8Array(1000).fill(1), { out });
    expect(out[0]).toBe(1000);
    // np.add.accumulate(np.ones(300, np.uint8), out=np.zeros(300, np.uint16))[-1] -> 300
    const acc = new Uint16Array(300);
    await add.accumulate(new Uint8Array(300).fill(1), { out: acc });
    expect(acc[299]).toBe(300);
    // np.add.reduceat(np.ones(300, np.uint8), [0, 10], out=np.zeros(2, np.uint16)) -> [10, 290]
    const at = new Uint16Array(2);
    await add.reduceat(new Uint8Array(300).fill(1), Int32Array.of(0, 10), { out: at });
    expect([...at]).toEqual([10, 290]);
    // np.add.reduce(np.ones((2, 3)), axis=0, out=np.zeros((2, 3))): "wrong number of dimensions"
    const ones = { data: new Float64Array(6).fill(1), shape: [2, 3] };
    if (target !== 'gpu') {
      await expect(add.reduce(ones, { axis: 0, out: { data: new Float64Array(6), shape: [2, 3] } })).rejects.toThrowError(/must have the result's shape \[3\].*found shape \[2, 3\]/);
      await expect(add.reduce(ones, { axis: 0, out: { data: new Float64Array(3), shape: [3, 1] } })).rejects.toThrowError(ArgumentError);
      // keepdims: (1, 3)
      const kept = { data: new Float64Array(3), shape: [1, 3] };
      await add.reduce(ones, { axis: 0, keepdims: true, out: kept });
      expect([...kept.data]).toEqual([2, 2, 2]);
      // np.add.accumulate(np.arange(4.), out=np.zeros(3)): "provided out is the wrong size"
      await expect(add.accumulate(Float64Array.of(0, 1, 2, 3), { out: new Float64Array(3) })).rejects.toThrowError(/`out` of `accumulate` must have the result's shape \[4\]/);
      await expect(add.reduceat(Float64Array.of(0, 1, 2, 3), Int32Array.of(0, 2), { out: new Float64Array(3) })).rejects.toThrowError(/`out` of `reduceat` must have the result's shape \[2\]/);
    }
  });

  it('a (),()->() gufunc has the methods, with scalar or one-element-array inputs', async () => {
    const scalars = guvectorize(['void(float32, float32, float32[:])'], '(),()->()', { target })((a: number, b: number, o: Float32Array) => {
      o[0] = a - b;
    });
    // np.subtract.reduce([10, 1, 2]) -> 7; accumulate -> [10, 9, 7]
    expect(await scalars.reduce!(Float32Array.of(10, 1, 2))).toBe(7);
    expect([...((await scalars.accumulate!(Float32Array.of(10, 1, 2))) as Float32Array)]).toEqual([10, 9, 7]);
    expect([...((await scalars.reduceat!(Float32Array.of(10, 1, 2, 5), Int32Array.of(0, 2))) as Float32Array)]).toEqual([9, -3]);
    const arrays = guvectorize(['void(float32[:], float32[:], float32[:])'], '(),()->()', { target })((a: Float32Array, b: Float32Array, o: Float32Array) => {
      o[0] = a[0]! - b[0]!;
    });
    expect(await arrays.reduce!(Float32Array.of(10, 1, 2))).toBe(7);
  });

  it('reduceat copies an input that shares memory with out, even as the same view', async () => {
    const add = vectorize(['float32(float32, float32)'], { target, identity: 0 })((a: number, b: number) => a + b);
    // a = np.arange(1., 7.); np.add.reduceat(a[:3], [2, 0, 1], out=a[:3]); a -> [3, 1, 5, 4, 5, 6]
    const a = Float32Array.of(1, 2, 3, 4, 5, 6);
    await add.reduceat(a.subarray(0, 3), Int32Array.of(2, 0, 1), { out: a.subarray(0, 3) });
    expect([...a]).toEqual([3, 1, 5, 4, 5, 6]);
    const b = Float32Array.of(1, 2, 3, 4, 5, 6);
    await add.reduceat(b, Int32Array.of(0, 2, 4), { out: b.subarray(0, 3) });
    expect([...b]).toEqual([3, 7, 11, 4, 5, 6]);
  });

  it('what NumPy and Numba accept: scalars and 0-d arrays, at on 0-d, index ndarrays, identity -1 unsigned, reorderable', async () => {
    const add = vectorize(['float32(float32, float32)'], { target, identity: 0 })((a: number, b: number) => a + b);
    // np.add.reduce(5) -> 5; np.add.reduce(np.array(5.)) -> 5.0
    expect(await add.reduce(5 as never)).toBe(5);
    expect(await add.reduce({ data: Float32Array.of(5), shape: [] })).toBe(5);
    // a = np.array(5.); np.add.at(a, (), 1) -> 6
    const zeroD = { data: Float32Array.of(5), shape: [] };
    await add.at(zeroD, [], 1);
    expect([...zeroD.data]).toEqual([6]);
    // np.add.reduceat(np.arange(4.), np.array([0, 2])) -> [1, 5]
    expect([...((await add.reduceat(Float32Array.of(0, 1, 2, 3), { data: Int32Array.of(0, 2), shape: [2] } as never)) as Float32Array)]).toEqual([1, 5]);
    // np.bitwise_and.reduce(np.array([], np.uint32)) -> 4294967295 (identity -1, cast to uint32)
    const and = vectorize(['uint32(uint32, uint32)'], { target, identity: -1 })((a: number, b: number) => (a & b) >>> 0);
    expect(await and.reduce(new Uint32Array(0))).toBe(4294967295);
    expect(await and.reduce(Uint32Array.of(7, 13))).toBe(5);
    // Numba: @vectorize(identity='reorderable') reduces over several axes
    const re = vectorize(['float32(float32, float32)'], { target, identity: 'reorderable' })((a: number, b: number) => a + b);
    expect(await re.reduce({ data: new Float32Array(6).fill(1), shape: [2, 3] }, { axis: null })).toBe(6);
    await expect(re.reduce(new Float32Array(0))).rejects.toThrowError(/without a starting value/);
    // np.logical_or.reduce(np.array([False, True])) -> True
    const or = vectorize(['bool(bool, bool)'], { target })((a: boolean, b: boolean) => a || b);
    expect(await or.reduce({ data: Uint8Array.of(0, 1), shape: [2], dtype: 'bool' })).toBe(true);
  });

  it('a vectorize signature without a return type takes the kernel\'s (Numba\'s `(float32, float32)`)', async () => {
    const add = vectorize(['(float32, float32)', '(int32, int32)'], { target })((a: number, b: number) => a + b);
    expect(add.signatures).toEqual(['float32(float32, float32)', 'int32(int32, int32)']);
    expect([...((await add(Float32Array.of(1.5), Float32Array.of(2))) as Float32Array)]).toEqual([3.5]);
  });
});

describe.each(FLOAT64_TARGETS)('NumPy rules with 64-bit types on %s', { timeout: 60_000 }, (target) => {
  it('an int64 fold whose kernel returns a bare literal stays in int64', async () => {
    const div = vectorize(['int64(int64, int64)'], { target })((n: bigint, d: bigint) => {
      if (d === 0n) return 0;
      return n / d;
    });
    // np.int64 loop: reduce([2**63 - 1, 1]) -> 9223372036854775807 (not -2**63 through a double)
    expect(await div.reduce(BigInt64Array.of(2n ** 63n - 1n, 1n))).toBe(2n ** 63n - 1n);
  });
});

describe('NumPy rules for calls', () => {
  it('a forced result dtype is cast under `casting`: a float kernel into int8 is refused under same_kind', async () => {
    const half = vectorize()((a: number) => a * 0.5);
    // np.multiply(np.int8(1), 0.5, dtype=np.int8): UFuncTypeError (same_kind)
    await expect(half(Int8Array.of(1, 3), { dtype: 'int8' })).rejects.toThrowError(/cannot be cast to the forced int8 with casting 'same_kind'/);
    expect([...((await half(Int8Array.of(1, 3), { dtype: 'int8', casting: 'unsafe' })) as Int8Array)]).toEqual([0, 1]);
    expect([...((await half(Int8Array.of(1, 3), { dtype: 'float32' })) as Float32Array)]).toEqual([0.5, 1.5]);
    const inc = vectorize()((a: number) => a + 1);
    expect([...((await inc(Int8Array.of(1, 3), { dtype: 'int8' })) as Int8Array)]).toEqual([2, 4]);
  });

  it('keepdims with input-only axes keeps the reduced axis last (Numba: shape (3, 3, 1))', async () => {
    const sum = guvectorize(['void(float64[:], float64[:])'], '(n)->()')((x: Float64Array, o: Float64Array) => {
      let a = 0;
      for (let i = 0; i < x.length; i++) a += x[i]!;
      o[0] = a;
    });
    const x = { data: Float64Array.from({ length: 27 }, (_, i) => i), shape: [3, 3, 3] };
    // s(x, axes=[(0,)], keepdims=True).shape -> (3, 3, 1), ravel()[:4] -> [27, 30, 33, 36]
    const r0 = (await sum(x, { axes: [[0]], keepdims: true })) as NDArray;
    expect(r0.shape).toEqual([3, 3, 1]);
    expect(data(r0).slice(0, 4)).toEqual([27, 30, 33, 36]);
    // axes=[(1,), (1,)] -> (3, 1, 3); axis=1 -> (3, 1, 3)
    expect(((await sum(x, { axes: [[1], [1]], keepdims: true })) as NDArray).shape).toEqual([3, 1, 3]);
    expect(((await sum(x, { axis: 1, keepdims: true })) as NDArray).shape).toEqual([3, 1, 3]);
  });

  it('a gufunc without signatures says it is not supported, and what to write', () => {
    expect(() => (guvectorize as (a: string) => unknown)('(n)->()')).toThrowError(LayoutError);
    expect(() => (guvectorize as (a: string) => unknown)('(n)->()')).toThrowError(/no signatures: a gufunc without signatures \(Numba's dynamic gufunc\) is not supported/);
  });
});
