/**
 * The ufunc methods on every target, against NumPy. Literals are NumPy 2.x's results (the NumPy
 * expression is in the comment above each); larger cases are checked against plain loops.
 */
import { describe, expect, it } from 'vitest';
import { ArgumentError, DeviceArray, guvectorize, toDevice, vectorize, type NDArray } from '../src/index.js';
import { TARGETS } from './targets.js';
import { treeOrderSum } from './tree-order.js';

const f32 = (xs: number[]) => Float32Array.from(xs);
// x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
const x3 = () => ({ data: Float32Array.from({ length: 24 }, (_, i) => i), shape: [2, 3, 4] });

describe.each(TARGETS)('ufunc methods on %s', { timeout: 60_000 }, (target) => {
  const add = vectorize(['float32(float32, float32)', 'int32(int32, int32)'], { target, identity: 0 })((a: number, b: number) => a + b);
  const sub = vectorize(['float32(float32, float32)'], { target })((a: number, b: number) => a - b);

  it('reduce: one axis, tuple axes, every axis, keepdims, negative axes', async () => {
    expect(await add.reduce(f32([1, 2, 3]))).toBe(6);
    // x.sum(axis=(0, 2)) -> [60, 92, 124]
    expect([...((await add.reduce(x3(), { axis: [0, 2] })) as NDArray).data]).toEqual([60, 92, 124]);
    // x.sum(axis=(0, 2), keepdims=True).shape -> (1, 3, 1)
    const kept = (await add.reduce(x3(), { axis: [0, 2], keepdims: true })) as NDArray;
    expect(kept.shape).toEqual([1, 3, 1]);
    expect([...kept.data]).toEqual([60, 92, 124]);
    expect(await add.reduce(x3(), { axis: null })).toBe(276);
    // x.sum(axis=-1) -> [[6, 22, 38], [54, 70, 86]]
    const last = (await add.reduce(x3(), { axis: -1 })) as NDArray;
    expect(last.shape).toEqual([2, 3]);
    expect([...last.data]).toEqual([6, 22, 38, 54, 70, 86]);
    // np.subtract.reduce([10, 1, 2, 3]) -> 4: the fold keeps NumPy's order
    expect(await sub.reduce(f32([10, 1, 2, 3]))).toBe(4);
    // axes that do not merge (a transposed view) are gathered first: np.add.reduce(x.T, axis=(0, 2)) -> [60, 92, 124]
    const t = { data: x3().data, shape: [4, 3, 2], strides: [1, 4, 12] };
    expect([...((await add.reduce(t, { axis: [0, 2] })) as NDArray).data]).toEqual([60, 92, 124]);
  });

  it('reduce: initial, where, out', async () => {
    // np.add.reduce(x, axis=1, initial=100).ravel()
    const init = (await add.reduce(x3(), { axis: 1, initial: 100 })) as NDArray;
    expect([...init.data]).toEqual([112, 115, 118, 121, 148, 151, 154, 157]);
    // np.add.reduce(x, axis=2, where=[T, F, T, F]).ravel() -> [2, 10, 18, 26, 34, 42]
    const masked = (await add.reduce(x3(), { axis: 2, where: { data: Uint8Array.of(1, 0, 1, 0), shape: [4], dtype: 'bool' } })) as NDArray;
    expect([...masked.data]).toEqual([2, 10, 18, 26, 34, 42]);
    const out = new Float32Array(3);
    expect(await add.reduce({ data: f32([1, 2, 3, 4, 5, 6]), shape: [2, 3] }, { axis: 0, out })).toBe(out);
    expect([...out]).toEqual([5, 7, 9]);
    await expect(sub.reduce(x3(), { axis: 2, where: Uint8Array.of(1, 0, 1, 0) })).rejects.toThrowError(/initial/);
  });

  it('reduce: an empty fold without a starting value is refused whether or not the result is empty (NumPy)', async () => {
    // np.subtract.reduce(np.zeros((0, 3)), axis=0) and np.zeros((0, 0)): ValueError; (3, 0) over axis 0 is fine
    await expect(sub.reduce({ data: new Float32Array(0), shape: [0, 3] }, { axis: 0 })).rejects.toThrowErrorMatchingSnapshot();
    await expect(sub.reduce({ data: new Float32Array(0), shape: [0, 0] }, { axis: 0 })).rejects.toThrowError(ArgumentError);
    expect(((await sub.reduce({ data: new Float32Array(0), shape: [3, 0] }, { axis: 0 })) as NDArray).shape).toEqual([0]);
    // np.add.reduce(np.zeros((0, 3), np.float32), axis=0) -> [0, 0, 0] (add's identity)
    expect([...((await add.reduce({ data: new Float32Array(0), shape: [0, 3] }, { axis: 0 })) as NDArray).data]).toEqual([0, 0, 0]);
    expect(await sub.reduce(new Float32Array(0), { initial: 7 })).toBe(7);
    await expect(add.reduce(x3(), { axis: [0, 0] })).rejects.toThrowError(/twice/);
    // np.subtract.reduce(x, axis=(0, 1)) and axis=None: ValueError, subtract is not reorderable (one axis is fine)
    await expect(sub.reduce(x3(), { axis: [0, 1] })).rejects.toThrowErrorMatchingSnapshot();
    await expect(sub.reduce(x3(), { axis: null })).rejects.toThrowError(/reorderable/);
    expect(await sub.reduce(f32([10, 1, 2]), { axis: null })).toBe(7);
    await expect(add.reduce(x3(), { axis: 3 })).rejects.toThrowError(/out of bounds/);
  });

  it('accumulate, reduceat, outer', async () => {
    // np.add.accumulate(x, axis=2).ravel()[:8]
    const acc = (await add.accumulate(x3(), { axis: 2 })) as NDArray;
    expect([...acc.data.slice(0, 8)]).toEqual([0, 1, 3, 6, 4, 9, 15, 22]);
    // np.subtract.accumulate([10, 1, 2, 3]) -> [10, 9, 7, 4]
    expect([...((await sub.accumulate(f32([10, 1, 2, 3]))) as Float32Array)]).toEqual([10, 9, 7, 4]);
    // np.add.reduceat([1, 2, 3, 4, 5], [0, 2, 1, 4]) -> [3, 3, 9, 5]
    expect([...((await add.reduceat(f32([1, 2, 3, 4, 5]), [0, 2, 1, 4])) as Float32Array)]).toEqual([3, 3, 9, 5]);
    // np.add.reduceat(x, [0, 2], axis=1)[0] -> [[4, 6, 8, 10], [8, 9, 10, 11]]
    const ra = (await add.reduceat(x3(), [0, 2], { axis: 1 })) as NDArray;
    expect(ra.shape).toEqual([2, 2, 4]);
    expect([...ra.data.slice(0, 8)]).toEqual([4, 6, 8, 10, 8, 9, 10, 11]);
    await expect(add.reduceat(f32([1, 2]), [0, 2])).rejects.toThrowError(/out of bounds/);
    // np.subtract.outer([1, 2], [10, 20, 30])
    const o = (await sub.outer(f32([1, 2]), f32([10, 20, 30]))) as NDArray;
    expect(o.shape).toEqual([2, 3]);
    expect([...o.data]).toEqual([-9, -19, -29, -8, -18, -28]);
  });

  it('at on n-D arrays: a tuple of index lists, repeats applied each time, strided views, device arrays', async () => {
    // m = np.zeros((3, 4), np.float32); np.add.at(m, ([0, 0, 2, -1], [1, 1, 3, 0]), [1, 2, 3, 4]); m.ravel()
    // -> [0, 3, 0, 0, 0, 0, 0, 0, 4, 0, 0, 3]
    const m = new Float32Array(12);
    const nd = { data: m, shape: [3, 4] };
    await add.at(nd, [[0, 0, 2, -1], [1, 1, 3, 0]], f32([1, 2, 3, 4]));
    expect([...m]).toEqual([0, 3, 0, 0, 0, 0, 0, 0, 4, 0, 0, 3]);
    // a column view (strides [4]) of a 3 × 4 matrix, and a scalar index broadcast against a list:
    // np.add.at(m, (1, [0, 2, 2]), 10) on m = np.arange(12).reshape(3, 4) -> row 1 = [14, 5, 26, 7]
    const r = Float32Array.from({ length: 12 }, (_, i) => i);
    await add.at({ data: r, shape: [3, 4] }, [1, [0, 2, 2]], 10);
    expect([...r.subarray(4, 8)]).toEqual([14, 5, 26, 7]);
    // np.add.at(m.T, ([3], [2]), 100) writes m[2, 3] (element 11)
    await add.at({ data: r, shape: [4, 3], strides: [1, 4] }, [[3], [2]], 100);
    expect(r[11]).toBe(111);
    await expect(add.at({ data: r, shape: [3, 4] }, [[0], [4]], 1)).rejects.toThrowError(/`indices\[1\]\[0\]` is 4, out of bounds for axis 1 of length 4/);
    await expect(add.at({ data: r, shape: [3, 4] }, [0, 1, 2], 1)).rejects.toThrowError(/tuple of 2 index lists/);
    if (target === 'gpu') {
      const d = await toDevice({ data: new Float32Array(6), shape: [2, 3] });
      await add.at(d, [[1, 1, 0], [2, 2, 0]], f32([1, 2, 3]));
      expect([...(await d.toHost())]).toEqual([3, 0, 0, 0, 0, 3]);
    }
  });

  it('reduce, accumulate and reduceat in a `dtype` (NumPy casts the input unsafely)', async () => {
    const add8 = vectorize(['int8(int8, int8)', 'int32(int32, int32)', 'float32(float32, float32)'], { target })((a: number, b: number) => a + b);
    const x = Int8Array.of(100, 100, 100);
    // np.add.reduce(np.array([100, 100, 100], np.int8)) -> 44 (wraps); with dtype=np.int32 -> 300
    expect(await add8.reduce(x)).toBe(44);
    expect(await add8.reduce(x, { dtype: 'int32' })).toBe(300);
    // np.add.accumulate(x, dtype=np.int32) -> [100, 200, 300]
    expect([...((await add8.accumulate(x, { dtype: 'int32' })) as Int32Array)]).toEqual([100, 200, 300]);
    // np.add.reduceat(x, [0, 2], dtype=np.int32) -> [200, 100]
    expect([...((await add8.reduceat(x, [0, 2], { dtype: 'int32' })) as Int32Array)]).toEqual([200, 100]);
    // np.add.reduce(np.array([1.5, 2.5, 3.7], np.float32), dtype=np.int32) -> 6 (each input truncated)
    expect(await add8.reduce(f32([1.5, 2.5, 3.7]), { dtype: 'int32' })).toBe(6);
    // ... over axis 0 of a 2-D array: np.add.reduce(np.float32([[1.5, 2], [3.5, 4]]), axis=0, dtype=np.int32) -> [4, 6]
    expect([...((await add8.reduce({ data: f32([1.5, 2, 3.5, 4]), shape: [2, 2] }, { dtype: 'int32' })) as NDArray).data]).toEqual([4, 6]);
    await expect(add8.reduce(x, { dtype: 'complex' })).rejects.toThrowError(/dtype name/);
    if (target === 'gpu') {
      const d = await toDevice(f32([1, 2]));
      await expect(add8.reduce(d, { dtype: 'int32' })).rejects.toThrowError(/device arrays are not converted/);
    }
  });

  it('at: unbuffered, a repeated index applied each time', async () => {
    // c = np.zeros(5); np.add.at(c, [1, 1, 3, -1], 1) -> [0, 2, 0, 1, 1]
    const c = new Float32Array(5);
    await add.at(c, [1, 1, 3, -1], 1);
    expect([...c]).toEqual([0, 2, 0, 1, 1]);
    // a = [10, 10]; np.subtract.at(a, [0, 0, 1], [1, 2, 3]) -> [7, 7]
    const a = f32([10, 10]);
    await sub.at(a, [0, 0, 1], f32([1, 2, 3]));
    expect([...a]).toEqual([7, 7]);
    const neg = vectorize(['float32(float32)'], { target })((v: number) => -v);
    const b = f32([1, 2, 3]);
    await neg.at(b, [0, 2, 2]);
    expect([...b]).toEqual([-1, 2, 3]);
    await expect(add.at(c, [5], 1)).rejects.toThrowError(/out of bounds/);
  });

  it('guvectorize with layout (),()->() has the methods too', async () => {
    const gadd = guvectorize(['void(float32[:], float32[:], float32[:])'], '(),()->()', { target })((p: Float32Array, q: Float32Array, r: Float32Array) => {
      r[0] = p[0]! + q[0]!;
    });
    expect(await gadd.reduce!(f32([1, 2, 3, 4]))).toBe(10);
    expect([...((await gadd.accumulate!(f32([1, 2, 3, 4]))) as Float32Array)]).toEqual([1, 3, 6, 10]);
    expect([...((await gadd.outer!(f32([1, 2]), f32([10, 20]))) as NDArray).data]).toEqual([11, 21, 12, 22]);
    const counts = new Float32Array(3);
    await gadd.at!(counts, [2, 2], 5);
    expect([...counts]).toEqual([0, 0, 10]);
    const rows = guvectorize(['void(float32[:], float32[:])'], '(n)->(n)', { target })((p: Float32Array, q: Float32Array) => {
      q[0] = p[0]!;
    });
    expect((rows as { reduce?: unknown }).reduce).toBeUndefined();
  });

  it('reduces row sums of a larger matrix in the sequential order on every target', async () => {
    const rows = 300;
    const cols = 1000;
    const data = Float32Array.from({ length: rows * cols }, (_, i) => Math.fround(Math.sin(i) * 100));
    const sums = (await add.reduce({ data, shape: [rows, cols] }, { axis: 1 })) as NDArray;
    const expected = new Float32Array(rows);
    for (let r = 0; r < rows; r++) {
      let s = data[r * cols]!;
      for (let c = 1; c < cols; c++) s = Math.fround(s + data[r * cols + c]!);
      expected[r] = s;
    }
    expect([...sums.data]).toEqual([...expected]);
  });

  it('an associative reduce folds chunks of 4,096 in a fixed order (the same for any worker count)', async () => {
    const sum = vectorize(['float32(float32, float32)'], { target, associative: true })((a: number, b: number) => a + b);
    const n = 3 * 4096 * 5 + 1234;
    const data = Float32Array.from({ length: 2 * n }, (_, i) => Math.fround(Math.cos(i) * 10));
    const c = Math.floor(n / 4096);
    // The order documented in docs/methods.md, computed here by plain loops: chunk j is elements
    // j·4096 … j·4096 + 4095 on every target; partials in order; then the tail.
    const expectedRow = (row: number) => {
      const x = (i: number) => data[row * n + i]!;
      const partials: number[] = [];
      for (let j = 0; j < c; j++) {
        let p = x(j * 4096);
        for (let i = 1; i < 4096; i++) p = Math.fround(p + x(j * 4096 + i));
        partials.push(p);
      }
      let s = partials[0]!;
      for (let j = 1; j < c; j++) s = Math.fround(s + partials[j]!);
      for (let i = c * 4096; i < n; i++) s = Math.fround(s + x(i));
      return s;
    };
    const rows = (await sum.reduce({ data, shape: [2, n] }, { axis: 1 })) as NDArray;
    // The gpu folds host arrays as it folds device arrays: by its tree (docs/methods.md).
    const expected = (row: number) => (target === 'gpu' ? treeOrderSum(data.subarray(row * n, (row + 1) * n), 2) : expectedRow(row));
    expect([...rows.data]).toEqual([expected(0), expected(1)]);
    expect(await sum.reduce(data.subarray(0, n))).toBe(expected(0));
    // close to the float64 sum, as a sanity check of the oracle itself
    let exact = 0;
    for (let i = 0; i < n; i++) exact += data[i]!;
    expect(Math.abs(expectedRow(0) - exact)).toBeLessThan(1e-2);
  });

  if (target === 'gpu') {
    it('reduces and accumulates device arrays, leaving results on the device', async () => {
      const x = await toDevice({ data: x3().data, shape: [2, 3, 4] });
      const r = await add.reduce(x, { axis: 2 });
      expect(r).toBeInstanceOf(DeviceArray);
      expect([...(await (r as DeviceArray).toHost())]).toEqual([6, 22, 38, 54, 70, 86]);
      const a = await add.accumulate(x, { axis: 0 });
      expect(a).toBeInstanceOf(DeviceArray);
      expect([...(await (a as DeviceArray).toHost()).slice(12, 16)]).toEqual([12, 14, 16, 18]);
      const k = await add.reduce(x, { axis: [0, 1], keepdims: true });
      expect((k as DeviceArray).shape).toEqual([1, 1, 4]);
      // x.sum(axis=(0, 1)) -> [60, 66, 72, 78]
      expect([...(await (k as DeviceArray).toHost())]).toEqual([60, 66, 72, 78]);
      // an associative reduce of a long device array: chunks and tail stay on the device
      const sum = vectorize(['float32(float32, float32)'], { target, associative: true })((p: number, q: number) => p + q);
      const long = await toDevice(new Float32Array(3 * 4096 + 5).fill(0.5));
      const total = await sum.reduce(long);
      expect(total).toBeInstanceOf(DeviceArray);
      expect([...(await (total as DeviceArray).toHost())]).toEqual([(3 * 4096 + 5) / 2]);
    });
  }
});
