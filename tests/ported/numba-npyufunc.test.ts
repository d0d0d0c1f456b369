/**
 * Cases from Numba's numba/tests/npyufunc tests (test_gufunc.py's matrix multiply and
 * attributes2, test_ufunc.py's dispatch across signatures, the `identity` of vectorize: 0,
 * 'reorderable' and none), written for this library. Expected values are Numba 0.56's for the same
 * kernels (the Python call above each).
 */
import { describe, expect, it } from 'vitest';
import { ArgumentError, guvectorize, vectorize, type NDArray } from '../../src/index.js';
import { FLOAT64_TARGETS, TARGETS } from '../targets.js';

type Matrix = { [i: number]: { [j: number]: number }; shape: number[] };
type Row = { [i: number]: number; length: number };

describe.each(TARGETS)('Numba npyufunc cases on %s', { timeout: 60_000 }, (target) => {
  it('test_gufunc: matrix multiply (m,n),(n,p)->(m,p) over a stack of two', async () => {
    const matmul = guvectorize(['void(float32[:,:], float32[:,:], float32[:,:])'], '(m,n),(n,p)->(m,p)', { target })((A: Matrix, B: Matrix, C: Matrix) => {
      const m = A.shape[0]!;
      const n = A.shape[1]!;
      const p = B.shape[1]!;
      for (let i = 0; i < m; i++) {
        for (let j = 0; j < p; j++) {
          C[i]![j] = 0;
          for (let k = 0; k < n; k++) C[i]![j] += A[i]![k]! * B[k]![j]!;
        }
      }
    });
    const A = { data: Float32Array.from({ length: 16 }, (_, i) => i), shape: [2, 2, 4] };
    const B = { data: Float32Array.from({ length: 40 }, (_, i) => i), shape: [2, 4, 5] };
    // matmul(np.arange(16, dtype=np.float32).reshape(2, 2, 4), np.arange(40, dtype=np.float32).reshape(2, 4, 5)).ravel()
    const C = (await matmul(A, B)) as NDArray;
    expect(C.shape).toEqual([2, 2, 5]);
    expect([...C.data]).toEqual([70, 76, 82, 88, 94, 190, 212, 234, 256, 278, 1070, 1108, 1146, 1184, 1222, 1510, 1564, 1618, 1672, 1726]);
  });

  it('test_vectorize_identity: 0 reduces empties and every axis; reorderable every axis, not empties; none neither', async () => {
    const x = { data: Float32Array.from({ length: 12 }, (_, i) => i), shape: [3, 4] };
    const withZero = vectorize(['float32(float32, float32)'], { target, identity: 0 })((a: number, b: number) => a + b);
    expect(await withZero.reduce(x, { axis: null })).toBe(66);
    expect(await withZero.reduce(new Float32Array(0))).toBe(0);
    const reorderable = vectorize(['float32(float32, float32)'], { target, identity: 'reorderable' })((a: number, b: number) => a + b);
    expect(await reorderable.reduce(x, { axis: null })).toBe(66);
    await expect(reorderable.reduce(new Float32Array(0))).rejects.toThrowError(ArgumentError);
    const none = vectorize(['float32(float32, float32)'], { target })((a: number, b: number) => a + b);
    await expect(none.reduce(x, { axis: null })).rejects.toThrowError(ArgumentError);
  });

  it('test_gufunc_attributes2: a (),()->() gufunc reduces, accumulates and takes outer products', async () => {
    const gadd = guvectorize(['void(float32, float32, float32[:])'], '(),()->()', { target })((a: number, b: number, o: Row) => {
      o[0] = a + b;
    });
    const xs = Float32Array.of(0, 1, 2, 3, 4);
    expect(await gadd.reduce!(xs)).toBe(10);
    expect([...((await gadd.accumulate!(xs)) as Float32Array)]).toEqual([0, 1, 3, 6, 10]);
    const outer = (await gadd.outer!(Float32Array.of(0, 1), Float32Array.of(0, 1, 2))) as NDArray;
    expect(outer.shape).toEqual([2, 3]);
    expect([...outer.data]).toEqual([0, 1, 2, 1, 2, 3]);
  });

  it('a (n)->() gufunc over the last axis, and over axis 0', async () => {
    const gsum = guvectorize(['void(float32[:], float32[:])'], '(n)->()', { target })((x: Row, out: Row) => {
      let s = 0;
      for (let i = 0; i < x.length; i++) s += x[i]!;
      out[0] = s;
    });
    const x = { data: Float32Array.from({ length: 12 }, (_, i) => i), shape: [3, 4] };
    expect([...((await gsum(x)) as NDArray).data]).toEqual([6, 22, 38]);
    expect([...((await gsum(x, { axis: 0 })) as NDArray).data]).toEqual([12, 15, 18, 21]);
  });
});

describe.each(FLOAT64_TARGETS)('Numba dispatch on %s', { timeout: 60_000 }, (target) => {
  it('test_ufunc: the first loop the inputs cast to safely, int16 taking the int32 loop', async () => {
    const mul = vectorize(['int32(int32, int32)', 'float64(float64, float64)'], { target })((a: number, b: number) => a * b);
    const i32 = (await mul(Int32Array.of(0, 1, 2), Int32Array.of(0, 1, 2))) as Int32Array;
    expect(i32).toBeInstanceOf(Int32Array);
    expect([...i32]).toEqual([0, 1, 4]);
    expect(await mul(Int16Array.of(0, 1, 2), Int16Array.of(0, 1, 2))).toBeInstanceOf(Int32Array);
    expect(await mul(Float32Array.of(0, 1, 2), Float32Array.of(0, 1, 2))).toBeInstanceOf(Float64Array);
  });
});
