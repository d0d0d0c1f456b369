/**
 * Properties: a compiled kernel equals the same JS function evaluated directly, with the declared
 * rounding applied the way docs/kernel-language.md says, over random values (NaN, ±Infinity, −0,
 * subnormals, integer extremes), random shapes, broadcasts and strides. Every target that claims
 * the types is checked: cpu against the oracle, parallel bit-identical to cpu (gpu has its own
 * suite with the WGSL accuracy bounds in tests/targets/gpu).
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { guvectorize, type NDArray, vectorize } from '../src/index.js';
import { FLOAT64_TARGETS } from './targets.js';

const f32 = Math.fround;

/** float32 values including NaN, ±Infinity, −0 and subnormals. */
const float32 = fc.float({ noDefaultInfinity: false, noNaN: false });
const float64 = fc.double();
const int32 = fc.oneof(fc.integer(), fc.constantFrom(-2147483648, 2147483647, 0, -1, 1));

/** Strided view of `values` in a random layout: reversed, with gaps, at an offset. */
function arbitraryView() {
  return fc.record({ step: fc.constantFrom(1, 2, 3, -1, -2), offset: fc.nat(3) });
}

function layOut(values: Float32Array, step: number, offset: number): { data: Float32Array; shape: number[]; strides: number[]; offset: number } {
  const n = values.length;
  const span = n === 0 ? 1 : (n - 1) * Math.abs(step) + 1;
  const data = new Float32Array(offset + span + 2).fill(Number.NaN);
  const first = step > 0 || n === 0 ? offset : offset + (n - 1) * -step;
  for (let i = 0; i < n; i++) data[first + i * step] = values[i]!;
  return { data, shape: [n], strides: [step], offset: first };
}

/** Same float (NaN equal to NaN, −0 distinct from +0). */
const same = (a: number, b: number) => Object.is(a, b) || (Number.isNaN(a) && Number.isNaN(b));

describe.each(FLOAT64_TARGETS)('kernels equal direct evaluation on %s', (target) => {
  it('float32: a*x + y rounds after each operation', async () => {
    const saxpy = vectorize(['float32(float32, float32, float32)'], { target })((a: number, x: number, y: number) => a * x + y);
    await fc.assert(
      fc.asyncProperty(float32, fc.array(fc.tuple(float32, float32), { maxLength: 300 }), arbitraryView(), async (a, pairs, layout) => {
        const x = Float32Array.from(pairs.map((p) => p[0]));
        const y = Float32Array.from(pairs.map((p) => p[1]));
        const z = (await saxpy(a, layOut(x, layout.step, layout.offset), y)) as NDArray;
        pairs.forEach(([xi, yi], i) => expect(same(z.data[i] as number, f32(f32(a * xi) + yi))).toBe(true));
      }),
      { numRuns: 60 },
    );
  });

  it('float64: a polynomial with Math functions equals JS', async () => {
    const fn = (x: number, y: number) => Math.sin(x) * y - Math.exp(-Math.abs(x)) / (1 + y * y) + Math.atan2(y, x) + (x % 3);
    const k = vectorize(['float64(float64, float64)'], { target })(fn);
    await fc.assert(
      fc.asyncProperty(fc.array(fc.tuple(float64, float64), { maxLength: 200 }), async (pairs) => {
        const z = await k(Float64Array.from(pairs.map((p) => p[0])), Float64Array.from(pairs.map((p) => p[1])));
        pairs.forEach(([x, y], i) => expect(same(z[i], fn(x, y))).toBe(true));
      }),
      { numRuns: 60 },
    );
  });

  it('int32: wrapping arithmetic, JS division and remainder, shifts and bitwise', async () => {
    const fn = (a: number, b: number) => a * b - (a + b) + ((a / b) | 0) + (a % b) + (a >> (b & 31)) + (a ^ ~b);
    // The oracle: the same expression with int32 wrapping written out (| 0 after each operation).
    const oracle = (a: number, b: number) => {
      const m = Math.imul(a, b);
      const s = (a + b) | 0;
      const d = (a / b) | 0;
      const r = (a % b) | 0;
      return (((((((m - s) | 0) + d) | 0) + r) | 0) + (a >> (b & 31)) + (a ^ ~b)) | 0;
    };
    const k = vectorize(['int32(int32, int32)'], { target })(fn);
    await fc.assert(
      fc.asyncProperty(fc.array(fc.tuple(int32, int32), { maxLength: 200 }), async (pairs) => {
        const z = await k(Int32Array.from(pairs.map((p) => p[0])), Int32Array.from(pairs.map((p) => p[1])));
        pairs.forEach(([a, b], i) => expect(z[i]).toBe(oracle(a, b)));
      }),
      { numRuns: 60 },
    );
  });

  it('conversions on store are those of typed arrays (NaN → 0, wrap modulo 2^bits)', async () => {
    const toInt8 = vectorize(['int8(float64)'], { target })((x: number) => x);
    const toUint16 = vectorize(['uint16(float64)'], { target })((x: number) => x * 2);
    await fc.assert(
      fc.asyncProperty(fc.array(float64, { maxLength: 100 }), async (xs) => {
        const input = Float64Array.from(xs);
        expect([...(await toInt8(input))]).toEqual([...Int8Array.from(xs)]);
        expect([...(await toUint16(input))]).toEqual([...Uint16Array.from(xs.map((x) => x * 2))]);
      }),
      { numRuns: 40 },
    );
  });

  it('broadcasting over random shapes matches an explicit loop', async () => {
    const sub = vectorize(['float64(float64, float64)'], { target })((a: number, b: number) => a - b);
    const shapes = fc.tuple(fc.integer({ min: 0, max: 4 }), fc.integer({ min: 1, max: 5 }), fc.integer({ min: 1, max: 6 }));
    await fc.assert(
      fc.asyncProperty(shapes, fc.boolean(), fc.boolean(), async ([p, q, r], broadcastA, broadcastB) => {
        const shapeA = [p, broadcastA ? 1 : q, r];
        const shapeB = [broadcastB ? 1 : q, r];
        const a = { data: Float64Array.from({ length: p * shapeA[1]! * r }, (_, i) => i * 1.5), shape: shapeA };
        const b = { data: Float64Array.from({ length: shapeB[0]! * r }, (_, i) => i * 0.25), shape: shapeB };
        const z = (await sub(a, b)) as NDArray;
        const qOut = broadcastA && broadcastB ? 1 : q;
        expect(z.shape).toEqual([p, qOut, r]);
        for (let i = 0; i < p; i++)
          for (let j = 0; j < qOut; j++)
            for (let k = 0; k < r; k++) {
              const av = a.data[(i * shapeA[1]! + (broadcastA ? 0 : j)) * r + k]!;
              const bv = b.data[(broadcastB ? 0 : j) * r + k]!;
              expect(z.data[(i * qOut + j) * r + k]).toBe(av - bv);
            }
      }),
      { numRuns: 60 },
    );
  });

  it('guvectorize with a helper and a local array over random rows, transposed views included', async () => {
    const scale = (v: Float64Array, k: number) => { for (let i = 0; i < v.length; i++) v[i] = v[i]! * k; };
    const cumsum = guvectorize(['void(float64[:], float64, float64[:])'], '(n),()->(n)', { target, env: { scale } })(
      (x: Float64Array, k: number, out: Float64Array) => {
        const t = new Float64Array(x.length);
        let s = 0;
        for (let i = 0; i < x.length; i++) { s += x[i]!; t[i] = s; }
        scale(t, k);
        for (let i = 0; i < x.length; i++) out[i] = t[i]!;
      },
    );
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 0, max: 7 }), fc.integer({ min: 1, max: 9 }), fc.boolean(), float64, async (rows, n, transposed, k) => {
        const values = Float64Array.from({ length: rows * n }, (_, i) => Math.sin(i) * 10);
        // transposed: the same logical matrix stored column-major
        const data = transposed ? Float64Array.from({ length: rows * n }, (_, j) => values[(j % rows) * n + Math.floor(j / rows)]!) : values;
        const x = { data, shape: [rows, n], strides: transposed ? [1, rows] : [n, 1] };
        const z = (await cumsum(x, k)) as NDArray;
        for (let r = 0; r < rows; r++) {
          let s = 0;
          for (let i = 0; i < n; i++) {
            s += values[r * n + i]!;
            expect(same(z.data[r * n + i] as number, s * k)).toBe(true);
          }
        }
      }),
      { numRuns: 60 },
    );
  });
});

describe('parallel is bit-identical to cpu', () => {
  it('for random float32 kernels inputs', async () => {
    const fn = (x: number, y: number) => Math.sqrt(Math.abs(x)) * y + Math.cos(y) / (x + 1);
    const cpu = vectorize(['float32(float32, float32)'], { target: 'cpu' })(fn);
    const par = vectorize(['float32(float32, float32)'], { target: 'parallel' })(fn);
    await fc.assert(
      fc.asyncProperty(fc.array(fc.tuple(float32, float32), { maxLength: 500 }), async (pairs) => {
        const x = Float32Array.from(pairs.map((p) => p[0]));
        const y = Float32Array.from(pairs.map((p) => p[1]));
        const a = await cpu(x, y);
        const b = await par(x, y);
        expect(Buffer.from(b.buffer).equals(Buffer.from(a.buffer))).toBe(true);
      }),
      { numRuns: 30 },
    );
  });
});
