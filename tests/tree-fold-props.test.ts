/**
 * Properties of the gpu's tree folds (src/targets/gpu/runtime/tree-fold.ts) over every dtype the gpu
 * runs, every axis, `keepdims`, `initial`, `where` masks, device `out` arrays and host arrays: the
 * results equal the cpu target's for integer and boolean folds that are associative exactly
 * (wrapping sums, saturating uint8c sums, `||`), whatever the grouping. Both the subgroup path and
 * the workgroup-memory path run.
 */
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DeviceArray, deviceArray, guvectorize, toDevice, vectorize, type NDArray, type TypedArray } from '../src/index.js';
import { DTYPES, type DType } from '../src/dtypes.js';
import { setFoldSubgroups } from '../src/targets/gpu/runtime/tree-fold.js';
import { TARGETS } from './targets.js';

const GPU = TARGETS.includes('gpu');
const INT_DTYPES: DType[] = ['int8', 'uint8', 'uint8c', 'int16', 'uint16', 'int32', 'uint32'];

/** The sum ufunc of a dtype (bool: `||`) on a target. */
function sumOf(dtype: DType, target: 'cpu' | 'gpu') {
  const kernel = dtype === 'bool' ? (a: boolean, b: boolean) => a || b : (a: number, b: number) => a + b;
  return vectorize([`${dtype}(${dtype}, ${dtype})`], { target, associative: true })(kernel);
}

/** Elements of a result in C order, wherever it lives. */
async function valuesOf(r: unknown): Promise<number[]> {
  if (r instanceof DeviceArray) return [...(await r.toHost())].map(Number);
  if (typeof r === 'number' || typeof r === 'boolean') return [Number(r)];
  if (ArrayBuffer.isView(r)) return [...(r as TypedArray)].map(Number);
  return [...(r as NDArray).data].map(Number);
}

function dataOf(dtype: DType, n: number, seed: number): TypedArray {
  const a = new DTYPES[dtype].arrayType(n) as TypedArray;
  let s = seed >>> 0;
  for (let i = 0; i < n; i++) {
    s = (Math.imul(s, 1_103_515_245) + 12_345) >>> 0;
    // Small values for uint8c, so that saturation is reached only sometimes; else the full range.
    (a as unknown as number[])[i] = dtype === 'bool' ? s >>> 31 : dtype === 'uint8c' ? (s >>> 24) % 40 : s >>> 0;
  }
  return a;
}

// Rows shorter and longer than a block (1,024) and than a run (4 blocks), a few rows or many.
const shapes = fc.oneof(
  fc.tuple(fc.integer({ min: 1, max: 9000 })).map((s) => [...s]),
  fc.tuple(fc.integer({ min: 1, max: 20 }), fc.integer({ min: 1, max: 1100 })).map((s) => [...s]),
  fc.tuple(fc.integer({ min: 1, max: 4 }), fc.integer({ min: 1, max: 5 }), fc.integer({ min: 1, max: 200 })).map((s) => [...s]),
);

// The workgroup-memory path runs a few dtypes (its code is the same for all of them but the loads).
describe.skipIf(!GPU).each([
  ['subgroups where the device has them', true, [...INT_DTYPES, 'bool']],
  ['workgroup memory only', false, ['int8', 'int32', 'bool']],
] as [string, boolean, DType[]][])('gpu tree folds (%s)', { timeout: 300_000 }, (_label, subgroups, dtypes) => {
  beforeAll(() => setFoldSubgroups(subgroups));
  afterAll(() => setFoldSubgroups(true));

  it('reduce equals the cpu for every integer dtype and bool, any axis, keepdims, initial, where, out, host or device', async () => {
    for (const dtype of dtypes) {
      const gpu = sumOf(dtype, 'gpu');
      const cpu = sumOf(dtype, 'cpu');
      await fc.assert(
        fc.asyncProperty(shapes, fc.integer(), fc.nat(), fc.boolean(), fc.boolean(), fc.boolean(), fc.boolean(), async (shape, seed, axisPick, keepdims, useInitial, useWhere, onDevice) => {
          const n = shape.reduce((a, b) => a * b, 1);
          const data = dataOf(dtype, n, seed);
          const rank = shape.length;
          const axisChoices: (number | number[] | null)[] = [...shape.keys(), null, ...(rank > 1 ? [[0, rank - 1]] : [])];
          const axis = axisChoices[axisPick % axisChoices.length]!;
          const options: Record<string, unknown> = { axis, keepdims };
          if (useInitial || useWhere) options.initial = dtype === 'bool' ? false : 3;
          if (useWhere) options.where = { data: dataOf('bool', n, seed ^ 0x5bd1e995), shape, dtype: 'bool' };
          const host = { data, shape, dtype };
          const expected = await valuesOf(await cpu.reduce(host, options));
          const x = onDevice ? await toDevice(host) : host;
          const got = await valuesOf(await gpu.reduce(x, options));
          expect(got, `${dtype} shape [${shape}] axis ${JSON.stringify(axis)}`).toEqual(expected);
          if (x instanceof DeviceArray) x.destroy();
        }),
        { numRuns: 4, seed: 24 },
      );
    }
  });

  // (the fold function differs, not the tree: the subgroup path is enough)
  it.skipIf(!subgroups)('a guvectorize kernel of layout (),()->() folds by the same tree: reduce and accumulate equal the cpu', async () => {
    const make = (target: 'cpu' | 'gpu') =>
      guvectorize(['void(uint8[:], uint8[:], uint8[:])', 'void(int32[:], int32[:], int32[:])'], '(),()->()', { target, associative: true })((p: Int32Array, q: Int32Array, r: Int32Array) => {
        r[0] = p[0]! + q[0]!;
      });
    const gpu = make('gpu');
    const cpu = make('cpu');
    await fc.assert(
      fc.asyncProperty(shapes, fc.integer(), fc.nat(), fc.constantFrom<DType>('int32', 'uint8'), async (shape, seed, axisPick, dtype) => {
        const n = shape.reduce((a, b) => a * b, 1);
        const host = { data: dataOf(dtype, n, seed), shape, dtype };
        const axis = axisPick % shape.length;
        const x = await toDevice(host);
        const r = await gpu.reduce!(x, { axis });
        expect(await valuesOf(r), `reduce ${dtype} [${shape}] axis ${axis}`).toEqual(await valuesOf(await cpu.reduce!(host, { axis })));
        const a = await gpu.accumulate!(x, { axis });
        expect(a).toBeInstanceOf(DeviceArray);
        expect(await valuesOf(a), `accumulate ${dtype} [${shape}] axis ${axis}`).toEqual(await valuesOf(await cpu.accumulate!(host, { axis })));
        for (const d of [x, r, a]) if (d instanceof DeviceArray) d.destroy();
      }),
      { numRuns: 4, seed: 25 },
    );
  });

  it('reduce into a device `out`, and accumulate of device and host arrays along every axis, equal the cpu', async () => {
    for (const dtype of dtypes) {
      const gpu = sumOf(dtype, 'gpu');
      const cpu = sumOf(dtype, 'cpu');
      await fc.assert(
        fc.asyncProperty(shapes, fc.integer(), fc.nat(), async (shape, seed, axisPick) => {
          const n = shape.reduce((a, b) => a * b, 1);
          const host = { data: dataOf(dtype, n, seed), shape, dtype };
          const axis = axisPick % shape.length;
          const x = await toDevice(host);
          const scanned = await gpu.accumulate(x, { axis });
          const expectedScan = await valuesOf(await cpu.accumulate(host, { axis }));
          expect(await valuesOf(scanned), `${dtype} accumulate shape [${shape}] axis ${axis}`).toEqual(expectedScan);
          expect(await valuesOf(await gpu.accumulate(host, { axis })), `${dtype} accumulate of a host array, shape [${shape}] axis ${axis}`).toEqual(expectedScan);
          const kept = shape.filter((_, d) => d !== axis);
          const out = await deviceArray(kept, dtype);
          const r = await gpu.reduce(x, { axis, out });
          expect(r).toBe(out);
          expect(await valuesOf(out), `${dtype} reduce into out, shape [${shape}] axis ${axis}`).toEqual(await valuesOf(await cpu.reduce(host, { axis })));
          for (const d of [x, scanned as DeviceArray, out]) d.destroy();
        }),
        { numRuns: 3, seed: 26 },
      );
    }
  });
});
