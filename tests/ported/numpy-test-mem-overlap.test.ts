/**
 * Cases in the spirit of NumPy's numpy/_core/tests/test_mem_overlap.py: a ufunc or a method whose
 * output overlaps an input (shifted views, strided interleaving, a reversed `b` of `at`) gives the
 * result NumPy gives — as if the overlapping input had been copied first — on every target.
 * Expected values are NumPy 1.24's for the same calls (the Python expression above each).
 */
import { describe, expect, it } from 'vitest';
import { vectorize } from '../../src/index.js';
import { TARGETS } from '../targets.js';

const arange = () => Float32Array.from({ length: 10 }, (_, i) => i);

describe.each(TARGETS)('NumPy test_mem_overlap.py cases on %s', { timeout: 60_000 }, (target) => {
  const add = vectorize(['float32(float32, float32)'], { target, identity: 0 })((a: number, b: number) => a + b);
  const negative = vectorize(['float32(float32)'], { target })((a: number) => -a);

  it('binary and unary ufuncs into shifted and interleaved views of their inputs', async () => {
    // a = np.arange(10.); np.add(a[:-1], a[1:], out=a[1:])
    let a = arange();
    await add(a.subarray(0, 9), a.subarray(1), { out: a.subarray(1) });
    expect([...a]).toEqual([0, 1, 3, 5, 7, 9, 11, 13, 15, 17]);
    // np.negative(a[::2], out=a[1::2])
    a = arange();
    await negative({ data: a, shape: [5], strides: [2] }, { out: { data: a, shape: [5], strides: [2], offset: 1 } });
    expect([...a]).toEqual([0, -0, 2, -2, 4, -4, 6, -6, 8, -8]);
    // np.negative(a[1:], out=a[:-1]) and np.negative(a[:-1], out=a[1:])
    a = arange();
    await negative(a.subarray(1), { out: a.subarray(0, 9) });
    expect([...a]).toEqual([-1, -2, -3, -4, -5, -6, -7, -8, -9, 9]);
    a = arange();
    await negative(a.subarray(0, 9), { out: a.subarray(1) });
    expect([...a]).toEqual([0, -0, -1, -2, -3, -4, -5, -6, -7, -8]);
  });

  it('accumulate, reduce and outer into views that overlap the input', async () => {
    // np.add.accumulate(a[:-1], out=a[1:])
    let a = arange();
    await add.accumulate(a.subarray(0, 9), { out: a.subarray(1) });
    expect([...a]).toEqual([0, 0, 1, 3, 6, 10, 15, 21, 28, 36]);
    // np.add.accumulate(a[1:], out=a[:-1])
    a = arange();
    await add.accumulate(a.subarray(1), { out: a.subarray(0, 9) });
    expect([...a]).toEqual([1, 3, 6, 10, 15, 21, 28, 36, 45, 9]);
    // np.add.reduce(a.reshape(2, 5), axis=0, out=a[3:8])
    a = arange();
    await add.reduce({ data: a, shape: [2, 5] }, { axis: 0, out: a.subarray(3, 8) });
    expect([...a]).toEqual([0, 1, 2, 5, 7, 9, 11, 13, 8, 9]);
    // np.add.outer(a[:3], a[:3], out=a[:9].reshape(3, 3))
    a = arange();
    await add.outer(a.subarray(0, 3), a.subarray(0, 3), { out: { data: a, shape: [3, 3] } });
    expect([...a]).toEqual([0, 1, 2, 1, 2, 3, 2, 3, 4, 9]);
  });

  it('at with b a reversed view of a, and reduceat into its own input', async () => {
    // a = np.arange(10.); np.add.at(a, [3, 2, 1, 0], a[4:0:-1])
    let a = arange();
    await add.at(a, [3, 2, 1, 0], { data: a, shape: [4], strides: [-1], offset: 4 });
    expect([...a]).toEqual([1, 3, 5, 7, 4, 5, 6, 7, 8, 9]);
    // np.add.reduceat(a, [8, 0, 5], out=a[:3]) with a = np.arange(10.)
    a = arange();
    await add.reduceat(a, Int32Array.of(8, 0, 5), { out: a.subarray(0, 3) });
    expect([...a]).toEqual([8, 10, 35, 3, 4, 5, 6, 7, 8, 9]);
  });
});
