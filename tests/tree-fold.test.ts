/**
 * `reduce` and `accumulate` of associative ufuncs on every target; on the gpu over device arrays,
 * where they run as a tree in workgroup memory (src/targets/gpu/runtime/tree-fold.ts) and the results stay
 * on the device. Expected values are computed here by plain loops over the same data (exact
 * integer arithmetic, so the order of an associative fold cannot change them), or are literals
 * NumPy gives (the expression is in the comment); the order of the tree is checked with kernels
 * that are associative but not commutative (`first`, `last`).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { setFoldSubgroups } from '../src/targets/gpu/runtime/tree-fold.js';
import { DeviceArray, deviceArray, toDevice, vectorize, type NDArray, type TargetName, type TypedArray } from '../src/index.js';
import { TARGETS } from './targets.js';
import { treeOrderSum } from './tree-order.js';

/** An array as the target takes it: on the gpu a DeviceArray, elsewhere the host view. */
const place = async (target: string, data: TypedArray, shape?: number[]) =>
  target === 'gpu' ? toDevice(shape ? { data, shape } : data) : shape ? { data, shape } : data;

/** A result's elements in C order, wherever it lives; a scalar as a one-element list. */
const elements = async (r: unknown): Promise<number[]> => {
  if (r instanceof DeviceArray) return [...(await r.toHost())].map(Number);
  if (typeof r === 'number') return [r];
  if (ArrayBuffer.isView(r)) return [...(r as TypedArray)].map(Number);
  return [...(r as NDArray).data].map(Number);
};

// The gpu twice: with subgroup operations (lavapipe has them) and with workgroup memory only.
const RUNS: [string, TargetName][] = [...TARGETS.map((t): [string, TargetName] => [t, t]), ...(TARGETS.includes('gpu') ? [['gpu, workgroup memory only', 'gpu'] as [string, TargetName]] : [])];

describe.each(RUNS)('associative reduce and accumulate on %s', { timeout: 120_000 }, (label, target) => {
  if (label !== target) {
    beforeAll(() => setFoldSubgroups(false));
    afterAll(() => setFoldSubgroups(true));
  }
  const sum = vectorize(['int32(int32, int32)', 'float32(float32, float32)', 'uint32(uint32, uint32)'], { target, associative: true })((a: number, b: number) => a + b);
  // Associative, not commutative: any reordering of the fold changes these.
  const first = vectorize(['int32(int32, int32)'], { target, associative: true })((a: number, _b: number) => a);
  const last = vectorize(['int32(int32, int32)'], { target, associative: true })((_a: number, b: number) => b);
  const max = vectorize(['float32(float32, float32)'], { target, associative: true })((a: number, b: number) => Math.max(a, b));

  // Sizes around the tile (2,048) and the point where a row is split over workgroups.
  const sizes = [1, 7, 2047, 2048, 2049, 6 * 2048 + 11, 100_003];

  it('reduce of one row: int32 sums with wrapping, first, last', async () => {
    for (const n of sizes) {
      const data = Int32Array.from({ length: n }, (_, i) => (i * 2_654_435_761) | 0); // large values: the sum wraps
      let expected = 0;
      for (const v of data) expected = (expected + v) | 0;
      const x = await place(target, data);
      const r = await sum.reduce(x);
      if (target === 'gpu') expect(r).toBeInstanceOf(DeviceArray);
      expect(await elements(r), `n = ${n}`).toEqual([expected]);
      expect(await elements(await first.reduce(x)), `n = ${n}`).toEqual([data[0]]);
      expect(await elements(await last.reduce(x)), `n = ${n}`).toEqual([data[n - 1]]);
    }
  });

  it('reduce over rows, columns and several axes of a strided array; initial; keepdims', async () => {
    const rows = 37;
    const cols = 5003;
    const data = Float32Array.from({ length: rows * cols }, (_, i) => (i % 17) - 8);
    const x = await place(target, data, [rows, cols]);
    const rowSums = Array.from({ length: rows }, (_, r) => data.subarray(r * cols, (r + 1) * cols).reduce((a, b) => a + b, 0));
    const colSums = Array.from({ length: cols }, (_, c) => {
      let s = 0;
      for (let r = 0; r < rows; r++) s += data[r * cols + c]!;
      return s;
    });
    expect(await elements(await sum.reduce(x, { axis: 1 }))).toEqual(rowSums);
    expect(await elements(await sum.reduce(x, { axis: 0 }))).toEqual(colSums);
    expect(await elements(await sum.reduce(x, { axis: null }))).toEqual([rowSums.reduce((a, b) => a + b)]);
    const kept = await sum.reduce(x, { axis: 1, initial: 100, keepdims: true });
    expect((kept as { shape: readonly number[] }).shape).toEqual([rows, 1]);
    expect(await elements(kept)).toEqual(rowSums.map((s) => s + 100));
    // np.maximum.reduce(np.array([[1, 5], [7, 2], [3, 9]], np.float32), axis=0) -> [7, 9]
    expect(await elements(await max.reduce(await place(target, Float32Array.of(1, 5, 7, 2, 3, 9), [3, 2]), { axis: 0 }))).toEqual([7, 9]);
  });

  it('float32 sums of random data are within the documented rounding bound of the exact sum', async () => {
    const n = 300_001;
    let seed = 12345;
    const data = Float32Array.from({ length: n }, () => ((seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31) / 2 ** 31) * 2 - 1);
    let exact = 0;
    let magnitude = 0;
    for (const v of data) {
      exact += v;
      magnitude += Math.abs(v);
    }
    const [got] = await elements(await sum.reduce(await place(target, data)));
    // docs/methods.md: a tree fold's error is at most about d·u·Σ|x| with d = 30 here (two passes of 15);
    // 600·u·Σ|x| leaves room, and is far below the sequential fold's (n − 1)·u·Σ|x|.
    expect(Math.abs(got! - exact)).toBeLessThan(2 ** -24 * 600 * magnitude);
    // The gpu's grouping, as docs/methods.md describes it, computed here in float32 by plain loops.
    if (target === 'gpu') expect(got).toBe(treeOrderSum(data));
  });

  it('float32 running sums of random data are within the documented rounding bound at every element', async () => {
    const n = 200_003;
    let seed = 777;
    const data = Float32Array.from({ length: n }, () => ((seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31) / 2 ** 31) * 2 - 1);
    const got = await elements(await sum.accumulate(await place(target, data)));
    let exact = 0;
    let magnitude = 0;
    let worst = 0;
    for (let i = 0; i < n; i++) {
      exact += data[i]!;
      magnitude += Math.abs(data[i]!);
      worst = Math.max(worst, Math.abs(got[i]! - exact) / (2 ** -24 * magnitude));
    }
    // docs/methods.md: d ≤ 80 for the gpu's scan here; the cpu's sequential scan's is up to n − 1.
    expect(worst).toBeLessThan(target === 'gpu' ? 80 : n);
  });

  it('accumulate along either axis, and the order of the scan (first, last)', async () => {
    for (const n of sizes) {
      const data = Int32Array.from({ length: n }, (_, i) => ((i * 40_503) % 1001) - 500);
      const x = await place(target, data);
      const expected: number[] = [];
      let s = 0;
      for (const v of data) expected.push((s = (s + v) | 0));
      const r = await sum.accumulate(x);
      if (target === 'gpu') expect(r).toBeInstanceOf(DeviceArray);
      expect(await elements(r), `n = ${n}`).toEqual(expected);
      expect(await elements(await last.accumulate(x)), `n = ${n}`).toEqual([...data]);
      expect(await elements(await first.accumulate(x)), `n = ${n}`).toEqual(new Array(n).fill(data[0]));
    }
    // np.add.accumulate(np.arange(6, dtype=np.int32).reshape(2, 3), axis=0).ravel() -> [0, 1, 2, 3, 5, 7]
    const m = await place(target, Int32Array.of(0, 1, 2, 3, 4, 5), [2, 3]);
    expect(await elements(await sum.accumulate(m, { axis: 0 }))).toEqual([0, 1, 2, 3, 5, 7]);
    // ... axis=1 -> [0, 1, 3, 3, 7, 12]
    expect(await elements(await sum.accumulate(m, { axis: 1 }))).toEqual([0, 1, 3, 3, 7, 12]);
    const rows = 3;
    const cols = 4500;
    const big = Int32Array.from({ length: rows * cols }, (_, i) => i % 11);
    const colScan = await elements(await sum.accumulate(await place(target, big, [rows, cols]), { axis: 0 }));
    for (let c = 0; c < cols; c += 499) {
      expect(colScan[2 * cols + c]).toBe(big[c]! + big[cols + c]! + big[2 * cols + c]!);
    }
  });

  if (target === 'gpu') {
    it('a scan long enough to recurse twice (more than 2,048 tiles) stays exact and in order', async () => {
      const n = 2048 * 2048 + 5;
      const data = Int32Array.from({ length: n }, (_, i) => (i % 5) - 2);
      const x = await toDevice(data);
      const scanned = (await ((await sum.accumulate(x)) as DeviceArray).toHost()) as Int32Array;
      let s = 0;
      let firstWrong = -1;
      for (let i = 0; i < n && firstWrong < 0; i++) {
        s = (s + data[i]!) | 0;
        if (scanned[i] !== s) firstWrong = i;
      }
      expect(firstWrong).toBe(-1);
      expect(await elements(await last.reduce(x))).toEqual([data[n - 1]]);
      x.destroy();
    });

    it('folds recorded back to back into one batch — equal folds sharing the pass\'s pipeline and bindings, others and element-wise calls between them — give the answers of one at a time', async () => {
      const data = Int32Array.from({ length: 6 * 2048 + 11 }, (_, i) => (i * 2_654_435_761) | 0);
      const small = Int32Array.from({ length: 7 }, (_, i) => i * 3 - 5);
      const total = (d: Int32Array, from = 0) => d.reduce((a, v) => (a + v) | 0, from);
      const [x, y, rows, out] = await Promise.all([toDevice(data), toDevice(small), toDevice({ data: small, shape: [1, 7] }), deviceArray([1], 'int32')]);
      // One at a time (each awaited and read back), which also compiles every fold.
      const oneByOne = [
        await elements(await sum.reduce(x)), await elements(await sum.reduce(x, { initial: 5 })), await elements(await last.reduce(x)),
        await elements(await sum.accumulate(y)), await elements(await sum(x, x)),
      ];
      expect(oneByOne[0]).toEqual([total(data)]);
      expect(oneByOne[1]).toEqual([total(data, 5)]);
      expect(oneByOne[2]).toEqual([data[data.length - 1]]);
      // Back to back: recorded in this turn of the event loop, into one batch and one compute pass.
      const calls = [
        sum.reduce(x), sum.reduce(x), sum.reduce(x, { initial: 5 }), sum.reduce(x), last.reduce(x), sum.reduce(x),
        sum.accumulate(y), sum.accumulate(y), sum(x, x), sum.reduce(x), last.reduce(x),
      ];
      const got = await Promise.all(calls.map(async (c) => elements(await c)));
      const [s, s5, l, scan, twice] = oneByOne;
      expect(got).toEqual([s, s, s5, s, l, s, scan, scan, twice, s, l]);
      // Two folds binding the same buffers (one pass each, the same `out`) with other params: the
      // second must not run with the first's.
      await Promise.all([sum.reduce(rows, { axis: 1, out }), sum.reduce(rows, { axis: 1, out, initial: 5 })]);
      expect(await elements(out)).toEqual([total(small, 5)]);
      for (const a of [x, y, rows, out]) a.destroy();
    });

  }
});
