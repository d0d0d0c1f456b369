/**
 * Cases ported from NumPy's numpy/_core/tests/test_ufunc.py (TestUfunc: reductions with and without
 * identity, `where`, `initial`, zero-size axes, accumulate and reduceat in place, `at`, `where=` in
 * calls, safe casting), rewritten for this library: NumPy's ufuncs (`np.add`, `np.minimum`, …) are
 * vectorize kernels here, made with NumPy's identity (or Numba's `'reorderable'` where NumPy's
 * ufunc has none but is reorderable, as `minimum`). Each test names NumPy's; expected values are
 * NumPy's (checked with NumPy 1.24). Where the library departs, the test says so.
 */
import { describe, expect, it } from 'vitest';
import { ArgumentError, vectorize, type NDArray } from '../../src/index.js';
import { TARGETS } from '../targets.js';

const data = (r: unknown) => [...(ArrayBuffer.isView(r) ? (r as Float32Array) : (r as NDArray).data)];
type Nd = { data: Float32Array; shape: number[]; strides?: number[]; offset?: number };
const nd = (shape: number[], fill: (i: number) => number = (i) => i): Nd => ({ data: Float32Array.from({ length: shape.reduce((a, b) => a * b, 1) }, (_, i) => fill(i)), shape });

describe.each(TARGETS)('NumPy test_ufunc.py on %s', { timeout: 120_000 }, (target) => {
  const add = vectorize(['float32(float32, float32)', 'int32(int32, int32)'], { target, identity: 0 })((a: number, b: number) => a + b);
  const minimum = vectorize(['float32(float32, float32)'], { target, identity: 'reorderable' })((a: number, b: number) => (a < b || a !== a ? a : b));
  const maximum = vectorize(['float32(float32, float32)'], { target, identity: 'reorderable' })((a: number, b: number) => (a > b || a !== a ? a : b));
  const divide = vectorize(['float32(float32, float32)'], { target })((a: number, b: number) => a / b);
  const power = vectorize(['int32(int32, int32)'], { target })((a: number, b: number) => (a ** b) | 0);
  const subtract = vectorize(['int32(int32, int32)'], { target })((a: number, b: number) => a - b);
  const negative = vectorize(['int32(int32)', 'float32(float32)'], { target })((a: number) => -a);

  it('test_identityless_reduction: minimum over every axis set and memory layout, with and without out', async () => {
    // C order, F order, mixed order (a swapped view), reversed, non-contiguous
    const layouts: Nd[] = [
      { ...nd([2, 3, 4]) },
      { ...nd([2, 3, 4]), strides: [1, 2, 6] },
      { ...nd([2, 3, 4]), strides: [12, 1, 3] },
      { ...nd([2, 3, 4]), strides: [-12, -4, -1], offset: 23 },
      { data: new Float32Array(3 * 5 * 4), shape: [2, 3, 4], strides: [20, 1, 4], offset: 25 },
    ];
    for (const base of layouts) {
      for (const pos of [[1, 0, 0], [0, 1, 0], [0, 0, 1]]) {
        const a = { ...base, data: new Float32Array(base.data.length) };
        const strides = a.strides ?? [12, 4, 1];
        const offset = a.offset ?? 0;
        for (let i = 0; i < 2; i++) for (let j = 0; j < 3; j++) for (let k = 0; k < 4; k++) a.data[offset + i * strides[0]! + j * strides[1]! + k * strides[2]!] = 1;
        a.data[offset + pos[0]! * strides[0]! + pos[1]! * strides[1]! + pos[2]! * strides[2]!] = 0;
        for (const axis of [null, [0, 1], [0, 2], [1, 2], 0, 1, 2, []] as const) {
          const reduced = axis === null ? [0, 1, 2] : typeof axis === 'number' ? [axis] : [...axis];
          const kept = [0, 1, 2].filter((d) => !reduced.includes(d));
          const shape = kept.map((d) => a.shape[d]!);
          const expected = new Array(shape.reduce((x, y) => x * y, 1)).fill(1);
          const at = kept.reduce((acc, d, q) => acc * shape[q]! + pos[d]!, 0);
          expected[at] = 0;
          const r = await minimum.reduce(a, { axis: axis as number[] | number | null });
          expect(typeof r === 'number' ? [r] : data(r), `axis ${JSON.stringify(axis)}`).toEqual(expected);
          if (shape.length > 0) {
            const out = { data: new Float32Array(expected.length).fill(NaN), shape };
            await minimum.reduce(a, { axis: axis as number[] | number | null, out });
            expect([...out.data]).toEqual(expected);
          }
        }
      }
    }
  });

  it('test_initial_reduction: maximum and minimum from an initial value', async () => {
    expect(await maximum.reduce(new Float32Array(0), { initial: 0 })).toBe(0);
    expect(await minimum.reduce(new Float32Array(0), { initial: Infinity })).toBe(Infinity);
    expect(await maximum.reduce(new Float32Array(0), { initial: -Infinity })).toBe(-Infinity);
    expect(await minimum.reduce(Float32Array.of(5), { initial: 4 })).toBe(4);
    expect(await maximum.reduce(Float32Array.of(4), { initial: 5 })).toBe(5);
    expect(await maximum.reduce(Float32Array.of(5), { initial: 4 })).toBe(5);
    expect(await minimum.reduce(Float32Array.of(4), { initial: 5 })).toBe(4);
    await expect(minimum.reduce(new Float32Array(0))).rejects.toThrowError(ArgumentError);
  });

  it('test_empty_reduction_and_identity: true_divide over empty and non-empty axes', async () => {
    expect(((await divide.reduce(nd([0, 5]), { axis: 1 })) as NDArray).shape).toEqual([0]);
    await expect(divide.reduce(nd([0, 5]), { axis: 0 })).rejects.toThrowError(ArgumentError);
    await expect(divide.reduce(nd([0, 0, 5]), { axis: 1 })).rejects.toThrowError(ArgumentError);
    const r = (await divide.reduce(nd([0, 0, 5]), { axis: 1, initial: 1 })) as NDArray;
    expect(r.shape).toEqual([0, 5]);
  });

  it('test_reduction_with_where: add over axis 0, 1 and all, three masks; the input is left alone', async () => {
    const masks = [
      { data: Uint8Array.of(0, 1, 1), shape: [3], dtype: 'bool' as const },
      { data: Uint8Array.of(1, 0, 1), shape: [3, 1], dtype: 'bool' as const },
      { data: Uint8Array.of(1, 0, 0, 0, 1, 0, 0, 1, 1), shape: [3, 3], dtype: 'bool' as const },
    ];
    const expected: Record<string, (number[] | number)[]> = {
      0: [[0, 12, 15], [6, 8, 10], [0, 11, 8]],
      1: [[3, 9, 15], [3, 0, 21], [0, 4, 15]],
      null: [27, 24, 19],
    };
    for (const axis of [0, 1, null] as const) {
      for (const [m, where] of masks.entries()) {
        const a = nd([3, 3]);
        const r = await add.reduce(a, { axis, where });
        expect(typeof r === 'number' ? r : data(r), `axis ${axis}, mask ${m}`).toEqual(expected[String(axis)]![m]);
        expect([...a.data]).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8]);
      }
    }
  });

  it('test_reduction_with_where_and_initial, test_reduction_where_initial_needed: maximum', async () => {
    const a = nd([3, 3]);
    const cases: [number | null, unknown, number, number[] | number][] = [
      [0, { data: Uint8Array.of(1, 0, 1), shape: [3], dtype: 'bool' }, -Infinity, [6, -Infinity, 8]],
      [0, { data: Uint8Array.of(1, 0, 1), shape: [3], dtype: 'bool' }, 5, [6, 5, 8]],
      [1, { data: Uint8Array.of(1, 1, 0), shape: [3], dtype: 'bool' }, -Infinity, [1, 4, 7]],
      [1, { data: Uint8Array.of(1, 1, 0), shape: [3], dtype: 'bool' }, 5, [5, 5, 7]],
      [null, true, -Infinity, 8],
      [null, true, 5, 8],
    ];
    for (const [axis, where, initial, want] of cases) {
      const r = await maximum.reduce(a, { axis, where, initial });
      expect(typeof r === 'number' ? r : data(r)).toEqual(want);
    }
    await expect(maximum.reduce(a, { where: { data: Uint8Array.of(0, 1, 0), shape: [3], dtype: 'bool' } })).rejects.toThrowError(/initial/);
  });

  it('test_identityless_reduction_nonreorderable: divide over one axis, none, and not two', async () => {
    const a = { data: Float32Array.of(8, 2, 2, 1, 0.5, 0.25), shape: [2, 3] };
    expect(data(await divide.reduce(a, { axis: 0 }))).toEqual([8, 4, 8]);
    expect(data(await divide.reduce(a, { axis: 1 }))).toEqual([2, 8]);
    expect(data(await divide.reduce(a, { axis: [] }))).toEqual([8, 2, 2, 1, 0.5, 0.25]);
    await expect(divide.reduce(a, { axis: [0, 1] })).rejects.toThrowError(/not reorderable/);
  });

  it('test_reduce_zero_axis: where a fold without identity is refused, and accumulate never is', async () => {
    const cases = (n: number, m: number): [number[], number | number[]][] => [
      [[n, m], 1], [[m, n], 0], [[n >> 1, n >> 1, m], 2], [[n >> 1, m, n >> 1], 1], [[n, m >> 1, m >> 1], [1, 2]], [[m >> 1, n, m >> 1], [0, 2]],
      [[Math.floor(m / 3), Math.floor(m / 3), Math.floor(m / 3), n >> 1, n >> 1], [0, 1, 2]],
      [[10, m, n], [0, 1]], [[10, n, m], [0, 2]], [[m, 10, n], 0], [[10, m, n], 1], [[10, n, m], 2],
    ];
    const reorderableMax = vectorize(['float32(float32, float32)'], { target, identity: 'reorderable' })((a: number, b: number) => (a > b ? a : b));
    for (const [n, m, ok] of [[30, 30, true], [0, 30, true], [30, 0, false], [0, 0, false]] as const) {
      for (const [shape, axis] of cases(n, m)) {
        const x = nd(shape, () => 0);
        if (ok) await reorderableMax.reduce(x, { axis });
        else await expect(reorderableMax.reduce(x, { axis }), `${shape} over ${axis}`).rejects.toThrowError(ArgumentError);
        await add.reduce(x, { axis }); // with an identity every one is fine
      }
    }
    await expect(reorderableMax.reduce(new Float32Array(0))).rejects.toThrowError(ArgumentError);
    await reorderableMax.reduce(nd([0, 0]), { axis: [] });
    for (const shape of [[30, 0], [0, 30], [30, 30], [0, 0]]) {
      await reorderableMax.accumulate(nd(shape, () => 0), { axis: 0 });
      await add.accumulate(nd(shape, () => 0), { axis: 0 });
    }
  });

  it('test_scalar_reduction: a scalar reduces to itself', async () => {
    const pow = vectorize(['float32(float32, float32)'], { target })((a: number, b: number) => a ** b);
    expect(await pow.reduce(3 as never)).toBe(3);
    // np.sum(3, axis=0) is 3; so is axis=-1 on a 0-d array (a tuple (0,) is an AxisError)
    expect(await add.reduce(3 as never, { axis: 0 })).toBe(3);
    expect(await add.reduce({ data: Float32Array.of(2.5), shape: [] }, { axis: -1 })).toBe(2.5);
    await expect(add.reduce({ data: Float32Array.of(2.5), shape: [] }, { axis: [0] })).rejects.toThrowError(ArgumentError);
  });

  it('test_object_array_accumulate_inplace and _reduceat_inplace, on numbers', async () => {
    const arr = new Float32Array(4).fill(1);
    await add.accumulate(arr, { out: arr });
    await add.accumulate(arr, { out: arr });
    expect([...arr]).toEqual([1, 3, 6, 10]);
    const m = { data: Float32Array.of(2, 2, 2, 2, 1, 1, 1, 1), shape: [2, 4] };
    await add.accumulate(m, { out: m, axis: -1 });
    await add.accumulate(m, { out: m, axis: -1 });
    expect([...m.data]).toEqual([2, 6, 12, 20, 1, 3, 6, 10]);
    const r = Float32Array.of(1, 2, 3, 4);
    await add.reduceat(r, Int32Array.of(0, 1, 2, 3), { out: r });
    await add.reduceat(r, Int32Array.of(0, 1, 2, 3), { out: r });
    expect([...r]).toEqual([1, 2, 3, 4]);
  });

  it('test_ufunc_at_basic, test_ufunc_at_large', async () => {
    const a = Int32Array.from({ length: 10 }, (_, i) => i);
    await add.at(a, [2, 5, 2], 1);
    expect([...a]).toEqual([0, 1, 4, 3, 4, 6, 6, 7, 8, 9]);
    await expect(add.at(a, [2, 5, 3])).rejects.toThrowError(ArgumentError); // missing second operand
    const b = Int32Array.from({ length: 10 }, (_, i) => i);
    await negative.at(b, [2, 5, 3]);
    expect([...b]).toEqual([0, 1, -2, -3, 4, -5, 6, 7, 8, 9]);
    const c = Int32Array.from({ length: 10 }, (_, i) => i);
    await add.at(c, [2, 5, 2], Int32Array.of(100, 100, 100));
    expect([...c]).toEqual([0, 1, 202, 3, 4, 105, 6, 7, 8, 9]);
    await expect(negative.at(c, [2, 5, 3], Int32Array.of(1, 2, 3))).rejects.toThrowError(ArgumentError); // extraneous operand
    // gh-23457: 8,195 updates of one element
    const big = new Float32Array(8195);
    big[0] = 10;
    big[1] = 5;
    big.fill(100, 8192);
    const one = new Float32Array(1);
    await add.at(one, new Int32Array(8195), big);
    expect(one[0]).toBe(315);
  });

  it('test_ufunc_at_inner_loops: at against the loop it stands for (add, subtract, maximum, minimum)', async () => {
    let seed = 7;
    const random = (n: number) => ((seed = (seed * 1103515245 + 12345) >>> 0) % n);
    const indices = Array.from({ length: 3000 }, () => random(1000));
    const values = Float32Array.from({ length: 3000 }, (_, i) => i);
    const sub = vectorize(['float32(float32, float32)'], { target })((p: number, q: number) => p - q);
    for (const [name, f, step] of [['add', add, (p: number, q: number) => p + q], ['subtract', sub, (p: number, q: number) => p - q], ['maximum', maximum, (p: number, q: number) => (p > q ? p : q)], ['minimum', minimum, (p: number, q: number) => (p < q ? p : q)]] as const) {
      const a = new Float32Array(1000).fill(1);
      await (f as typeof add).at(a, indices, values);
      const loop = new Float32Array(1000).fill(1);
      indices.forEach((i, k) => (loop[i] = Math.fround(step(loop[i]!, values[k]!))));
      expect([...a], name).toEqual([...loop]);
    }
  });

  it('test_where_param: outputs written only where the mask is true, in place, broadcast', async () => {
    const a = Int32Array.from({ length: 7 }, (_, i) => i);
    const c = new Int32Array(7);
    await add(a, new Int32Array(7).fill(1), { out: c, where: { data: Uint8Array.from(a, (v) => v % 2), dtype: 'bool', shape: [7] } });
    expect([...c]).toEqual([0, 2, 0, 4, 0, 6, 0]);
    const m = { data: Int32Array.of(2, 3, 4, 5), shape: [2, 2] };
    await power(m, Int32Array.of(2, 3), { out: m, where: { data: Uint8Array.of(0, 1, 1, 0), shape: [2, 2], dtype: 'bool' } });
    expect([...m.data]).toEqual([2, 27, 16, 5]);
    await subtract(m, 2, { out: m, where: { data: Uint8Array.of(1, 0), shape: [2], dtype: 'bool' } });
    expect([...m.data]).toEqual([0, 27, 14, 5]);
  });

  it('test_safe_casting: a float result into an int out is refused under same_kind, allowed unsafe', async () => {
    // np.add(int array, 1.1) picks the float64 loop (int32 casts to float64 safely)
    const addf = vectorize(['float64(float64, float64)'], { target, float64: 'float32' })((p: number, q: number) => p + q);
    const a = Int32Array.of(1, 2, 3);
    expect([...((await addf(a, 1.5)) as Float64Array)]).toEqual([2.5, 3.5, 4.5]);
    await expect(addf(a, 1.5, { out: a })).rejects.toThrowError(/same_kind/);
    await addf(a, 1.5, { out: a, casting: 'unsafe' });
    expect([...a]).toEqual([2, 3, 4]);
  });
});
