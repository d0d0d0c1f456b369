/**
 * The result types of calls and methods (src/signature-types.ts) say what the runtime returns: each
 * call here is typed by `expectTypeOf` (checked when the project type-checks) and its value checked
 * at run time to be of that kind — a typed array of that class, an NDArray of that shape, a number.
 */
import { describe, expect, expectTypeOf, it } from 'vitest';
import { guvectorize, vectorize, type NDArray } from '../../src/index.js';

/** What a value is, as the types name it: a typed array's class, `NDArray[shape]`, or a typeof. */
function kind(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(kind).join(', ')}]`;
  if (ArrayBuffer.isView(value)) return value.constructor.name;
  if (typeof value === 'object' && value !== null && 'shape' in value && 'data' in value) {
    const { shape, data, offset, order, dtype } = value as NDArray;
    return `NDArray<${data.constructor.name}>[${shape.join(',')}] ${typeof offset} ${order} ${dtype}`;
  }
  return typeof value;
}

const xs = new Float32Array(4);
const nd = { data: xs, shape: [2, 2] };

describe('call results by layout', () => {
  it('()->(n): an NDArray from a typed array (loop and core dimension), a typed array from a scalar', async () => {
    const fill = guvectorize(['void(float32, float32[:])'], '()->(n)')((x, out) => {
      for (let k = 0; k < out.length; k++) out[k] = x;
    });
    const fromArray = await fill(xs, { dims: { n: 3 } });
    expectTypeOf(fromArray).toEqualTypeOf<NDArray<Float32Array>>();
    expect(kind(fromArray)).toBe('NDArray<Float32Array>[4,3] number row-major float32');
    const fromScalar = await fill(2, { dims: { n: 3 } });
    expectTypeOf(fromScalar).toEqualTypeOf<Float32Array>();
    expect(kind(fromScalar)).toBe('Float32Array');
  });

  it('(n)->(n): a typed array from one, an NDArray from an ndarray-like or with `axes`', async () => {
    const cumsum = guvectorize(['void(float64[:], float64[:])'], '(n)->(n)')((x, out) => {
      let s = 0;
      for (let k = 0; k < x.length; k++) {
        s += x[k]!;
        out[k] = s;
      }
    });
    const plain = await cumsum(new Float64Array(4));
    expectTypeOf(plain).toEqualTypeOf<Float64Array>();
    expect(kind(plain)).toBe('Float64Array');
    const viewed = await cumsum({ data: new Float64Array(4), shape: [2, 2] });
    expectTypeOf(viewed).toEqualTypeOf<NDArray<Float64Array>>();
    expect(kind(viewed)).toBe('NDArray<Float64Array>[2,2] number row-major float64');
    const withAxes = await cumsum(new Float64Array(4), { axes: [[0], [0]] });
    expectTypeOf(withAxes).toEqualTypeOf<NDArray<Float64Array>>();
    expect(kind(withAxes)).toBe('NDArray<Float64Array>[4] number row-major float64');
  });

  it('(n)->(),(n): a 0-D NDArray and a typed array; (),()->(): a number from scalars', async () => {
    const stats = guvectorize(['void(float32[:], float32[:], float32[:])'], '(n)->(),(n)')((x, m, y) => {
      m[0] = x[0]!;
      y[0] = x[0]!;
    });
    const both = await stats(xs);
    expectTypeOf(both).toEqualTypeOf<[NDArray<Float32Array>, Float32Array]>();
    expect(kind(both)).toBe('[NDArray<Float32Array>[] number row-major float32, Float32Array]');
    const add = guvectorize(['void(int32, int32, int32[:])'], '(),()->()')((a, b, out) => {
      out[0] = a + b;
    });
    const scalar = await add(1, 2);
    expectTypeOf(scalar).toEqualTypeOf<number>();
    expect(scalar).toBe(3);
    const row = await add(new Int32Array(2), 2);
    expectTypeOf(row).toEqualTypeOf<Int32Array>();
    expect(kind(row)).toBe('Int32Array');
  });
});

describe('method results', () => {
  const plus = vectorize(['float32(float32, float32)', 'float64(float64, float64)'])((a, b) => a + b);

  it('reduce: a number for a typed array, an NDArray with keepdims or an axis of an ndarray-like', async () => {
    const sum = await plus.reduce(Float32Array.of(1, 2, 3));
    expectTypeOf(sum).toEqualTypeOf<number>();
    expect(sum).toBe(6);
    const kept = await plus.reduce(xs, { keepdims: true });
    expectTypeOf(kept).toEqualTypeOf<NDArray<Float32Array>>();
    expect(kind(kept)).toBe('NDArray<Float32Array>[1] number row-major float32');
    const columns = await plus.reduce(nd, { axis: 0 });
    expectTypeOf(columns).toEqualTypeOf<number | NDArray<Float32Array>>();
    expect(kind(columns)).toBe('NDArray<Float32Array>[2] number row-major float32');
  });

  it('accumulate, reduceat: the input\'s kind and dtype (a (),()->() guvectorize\'s too); outer: an NDArray', async () => {
    const running = await plus.accumulate(new Float64Array(2));
    expectTypeOf(running).toEqualTypeOf<Float64Array>();
    expect(kind(running)).toBe('Float64Array');
    const runningNd = await plus.accumulate(nd);
    expectTypeOf(runningNd).toEqualTypeOf<NDArray<Float32Array>>();
    expect(kind(runningNd)).toBe('NDArray<Float32Array>[2,2] number row-major float32');
    const pieces = await plus.reduceat(xs, [0, 2]);
    expectTypeOf(pieces).toEqualTypeOf<Float32Array>();
    expect(kind(pieces)).toBe('Float32Array');
    const addInts = guvectorize(['void(int32, int32, int32[:])'], '(),()->()')((a, b, out) => {
      out[0] = a + b;
    });
    const total = await addInts.reduce(Int32Array.of(1, 2, 3));
    expectTypeOf(total).toEqualTypeOf<number>();
    expect(total).toBe(6);
    const prefix = await addInts.accumulate(Int32Array.of(1, 2, 3));
    expectTypeOf(prefix).toEqualTypeOf<Int32Array>();
    expect(kind(prefix)).toBe('Int32Array');
    const table = await plus.outer(xs, xs);
    expectTypeOf(table).toEqualTypeOf<NDArray<Float32Array>>();
    expect(kind(table)).toBe('NDArray<Float32Array>[4,4] number row-major float32');
  });
});
