/**
 * Foreign arrays (outside Wasm memory) staged in blocks of the loop (block-staging.ts): the cpu
 * target's Wasm runs give the JS engine's results bit for bit, whatever the block size, with
 * operands that alias in one buffer, several loop dimensions, operands partly in Wasm memory,
 * outputs that are not copied in, and an error in the middle of a block (what is written before
 * it, and the message, are the JS engine's).
 */
import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import { __testing as blockTesting } from '../../../../src/targets/cpu/wasm/block-staging.js';
import { engineMode, setEngineMode } from '../../../../src/targets/cpu/wasm/index.js';
import { guvectorize, sharedArray, vectorize } from '../../../../src/index.js';
import { expectSameArrays, wasmAndJs } from './same-values.js';

const initialMode = engineMode();
afterEach(() => {
  setEngineMode(initialMode);
  blockTesting.setBlockBytes(undefined);
});

type Vector = { [i: number]: number; length: number };

const blockSizes = fc.constantFrom(1, 24, 100, 1000, undefined);
const doubles = fc.oneof(fc.double(), fc.double({ min: -10, max: 10, noNaN: true }), fc.constantFrom(-0, 0.5, 5e-324));

describe('foreign arrays staged in blocks', () => {
  it('give the JS engine\'s results when operands alias in one buffer (in place, shifted, reversed views)', () => {
    const f = vectorize(['float64(float64, float64)'])((x: number, y: number) => x * 0.5 - y);
    fc.assert(
      fc.property(blockSizes, fc.integer({ min: 1, max: 40 }), fc.array(fc.tuple(fc.integer({ min: 0, max: 12 }), fc.constantFrom(1, 2, -1)), { minLength: 3, maxLength: 3 }), fc.array(doubles, { minLength: 1, maxLength: 30 }), (bytes, n, views, values) => {
          const run = () => {
            const data = Float64Array.from({ length: 2 * n + 40 }, (_, i) => values[i % values.length]!);
            const [x, y, out] = views.map(([offset, step]) => ({ data, shape: [n], strides: [step], offset: step > 0 ? offset : offset + (n - 1) * -step }));
            f.sync(x!, y!, { out: out! });
            return data;
          };
          const [w, j] = wasmAndJs(run, { blockBytes: bytes });
          expectSameArrays(w as Float64Array, j as Float64Array);
        }),
      { numRuns: 150 },
    );
  });

  it('give the JS engine\'s results over several loop dimensions, strided and broadcast, with operands partly in Wasm memory', () => {
    const f = vectorize(['float32(float32, float64)'])((x: number, y: number) => (x > y ? x - y : y * 3));
    fc.assert(
      fc.property(blockSizes, fc.integer({ min: 1, max: 6 }), fc.integer({ min: 1, max: 7 }), fc.constantFrom(1, 2, -1), fc.boolean(), fc.array(doubles, { minLength: 1, maxLength: 30 }), (bytes, m, n, step, shared, values) => {
          const run = () => {
            const xs = Float32Array.from({ length: m * n * 2 + 3 }, (_, i) => values[i % values.length]!);
            const xData = shared ? sharedArray(xs.length, 'float32') : xs;
            xData.set(xs);
            const x = { data: xData, shape: [m, n], strides: [n * 2, step], offset: step > 0 ? 1 : 1 + (n - 1) * -step };
            const y = Float64Array.from({ length: n }, (_, i) => values[(i * 3) % values.length]!);
            const out = { data: new Float32Array(m * n * 3).fill(7), shape: [m, n], strides: [n * 3, 2], offset: 0 };
            f.sync(x, y, { out });
            return out.data;
          };
          const [w, j] = wasmAndJs(run, { blockBytes: bytes });
          expectSameArrays(w as Float32Array, j as Float32Array);
        }),
      { numRuns: 100 },
    );
  });

  it('give the JS engine\'s results for a per-row kernel over a 2-D batch, in place and not', () => {
    const f = guvectorize(['void(float64[:], float64, float64[:])'], '(n),()->(n)')((x: Vector, a: number, out: Vector) => {
      let s = 0;
      for (let i = 0; i < x.length; i++) {
        s = s * a + x[i]!;
        out[i] = s;
      }
    });
    fc.assert(
      fc.property(blockSizes, fc.integer({ min: 1, max: 5 }), fc.integer({ min: 1, max: 5 }), fc.integer({ min: 1, max: 6 }), fc.boolean(), fc.array(doubles, { minLength: 1, maxLength: 30 }), (bytes, b1, b2, n, inPlace, values) => {
          const run = () => {
            const data = Float64Array.from({ length: b1 * b2 * n * 2 }, (_, i) => values[i % values.length]!);
            const x = { data, shape: [b1, b2, n], strides: [b2 * n * 2, n * 2, 1], offset: 0 };
            const out = inPlace ? x : { data: new Float64Array(b1 * b2 * n).fill(-2), shape: [b1, b2, n] };
            f.sync(x, 0.5, { out });
            return [...data, ...out.data];
          };
          const [w, j] = wasmAndJs(run, { blockBytes: bytes });
          expectSameArrays(w as number[], j as number[]);
        }),
      { numRuns: 100 },
    );
  });

  it('an output the call allocates is zeros where the kernel does not write it; a given `out` keeps its values there', () => {
    // Writes from w on only (and not provably the whole row): the allocated output's staging is
    // cleared rather than copied in (block-staging.ts); a given out must still be copied in. The
    // same ufunc serves both, in turns, so a cached plan of one kind of call cannot leak into the other.
    const f = guvectorize(['void(float64[:], int32, float64[:])'], '(n),()->(n)')((x: Vector, w: number, out: Vector) => {
      for (let i = w; i < x.length; i++) out[i] = x[i]! * 2;
    });
    fc.assert(
      fc.property(blockSizes, fc.integer({ min: 1, max: 40 }), fc.integer({ min: 1, max: 9 }), fc.integer({ min: 0, max: 10 }), fc.array(doubles, { minLength: 1, maxLength: 30 }), (bytes, rows, n, w, values) => {
        const run = () => {
          const x = { data: Float64Array.from({ length: rows * n }, (_, i) => values[i % values.length]!), shape: [rows, n] };
          const fresh = f.sync(x, w) as unknown as { data: Float64Array };
          const out = { data: new Float64Array(rows * n).fill(7), shape: [rows, n] };
          f.sync(x, w, { out });
          const again = f.sync(x, w) as unknown as { data: Float64Array };
          return [...fresh.data, ...out.data, ...again.data];
        };
        const [wasm, js] = wasmAndJs(run, { blockBytes: bytes });
        expectSameArrays(wasm as number[], js as number[]);
        const all = js as number[];
        for (let r = 0; r < rows; r++) {
          for (let i = 0; i < Math.min(w, n); i++) {
            expect(all[r * n + i]).toBe(0);
            expect(all[rows * n + r * n + i]).toBe(7);
          }
        }
      }),
      { numRuns: 100 },
    );
  });

  it('keep an output that is also an input in place when a third operand lies between them in the buffer', () => {
    // out[i] reads x[i − 1] after out[i − 1] was written over it: only one staged copy of the
    // shared rows gives JS's result, whatever the operands' order in the buffer.
    const f = guvectorize(['void(float64[:], float64[:], float64[:])'], '(n),(n)->(n)')((x: Vector, y: Vector, out: Vector) => {
      for (let i = 0; i < x.length; i++) out[i] = x[i]! + (i > 0 ? x[i - 1]! : 1) * y[i]!;
    });
    fc.assert(
      fc.property(blockSizes, fc.integer({ min: 1, max: 9 }), fc.integer({ min: 2, max: 5 }), fc.boolean(), fc.array(doubles, { minLength: 1, maxLength: 30 }), (bytes, batch, n, yFirst, values) => {
          const run = () => {
            const data = Float64Array.from({ length: 2 * batch * n }, (_, i) => values[i % values.length]!);
            const x = { data, shape: [batch, n], strides: [n, 1], offset: yFirst ? batch * n : 0 };
            const y = { data, shape: [batch, n], strides: [n, 1], offset: yFirst ? 0 : batch * n };
            f.sync(x, y, { out: x });
            return data;
          };
          const [w, j] = wasmAndJs(run, { blockBytes: bytes });
          expectSameArrays(w as Float64Array, j as Float64Array);
        }),
      { numRuns: 100 },
    );
  });

  it('an error in the middle of a block leaves written what the JS engine writes, outputs not copied in included', () => {
    // `out` is written whole by every index (vectorize) or row (the per-row kernel), so its blocks
    // are not copied in: after an error the block must be redone from the arrays.
    const g = vectorize(['float64(float64, int32)'])((x: number, k: number) => {
      const t = new Float64Array(2);
      return x * 2 + t[k]!;
    });
    const rows = guvectorize(['void(float64[:], int32, float64[:])'], '(n),()->(n)')((x: Vector, k: number, out: Vector) => {
      for (let i = 0; i < x.length; i++) out[i] = x[i]! * 3;
      if (k === 1) out[0] = x[x.length]!;
    });
    fc.assert(
      fc.property(blockSizes, fc.integer({ min: 1, max: 30 }), fc.nat(), fc.array(doubles, { minLength: 1, maxLength: 30 }), fc.double({ noNaN: true }), (bytes, n, badSeed, values, fillValue) => {
          const bad = badSeed % n;
          const x = Float64Array.from({ length: n * 3 }, (_, i) => values[i % values.length]!);
          const k = Int32Array.from({ length: n }, (_, i) => (i === bad ? 5 : 0));
          const [w, j] = wasmAndJs(() => {
            const out = new Float64Array(n).fill(fillValue);
            let error = '';
            try {
              g.sync(x.subarray(0, n), k, { out });
            } catch (e) {
              error = (e as Error).message;
            }
            return { error, out };
          }, { blockBytes: bytes });
          const a = w as { error: string; out: Float64Array };
          const b = j as { error: string; out: Float64Array };
          expect(b.error).toContain('out of bounds');
          expect(a.error).toBe(b.error);
          expectSameArrays(a.out, b.out);
          const ones = Int32Array.from({ length: n }, (_, i) => (i === bad ? 1 : 0));
          const [w2, j2] = wasmAndJs(() => {
            const out = new Float64Array(n * 3).fill(fillValue);
            let error = '';
            try {
              rows.sync({ data: x, shape: [n, 3] }, ones, { out: { data: out, shape: [n, 3] } });
            } catch (e) {
              error = (e as Error).message;
            }
            return { error, out };
          }, { blockBytes: bytes });
          const a2 = w2 as { error: string; out: Float64Array };
          const b2 = j2 as { error: string; out: Float64Array };
          expect(b2.error).toContain('out of bounds');
          expect(a2.error).toBe(b2.error);
          expectSameArrays(a2.out, b2.out);
        }),
      { numRuns: 120 },
    );
  });

  it('runs SAXPY on ordinary arrays in Wasm at the default block size, in several blocks, and explain says so', () => {
    setEngineMode('auto');
    const f = vectorize(['float32(float32, float32, float32)'])((a: number, x: number, y: number) => a * x + y);
    const n = 300_001; // 3.6 MB over three arrays: four blocks of 1 MiB, the last one short
    const x = Float32Array.from({ length: n }, (_, i) => Math.sin(i) * 1e3);
    const y = Float32Array.from({ length: n }, (_, i) => Math.cos(i) / 7);
    expect(f.explain(2.5, x, y)).toMatch(/^WebAssembly \(SIMD, 4 lanes\): the arrays outside Wasm memory are copied in and out in blocks of 1024 KiB that stay in cache \(no extra pass over memory\)\./);
    const [w, j] = wasmAndJs(() => f.sync(2.5, x, y) as Float32Array, { blockBytes: undefined });
    expectSameArrays(w as Float32Array, j as Float32Array);
  });

  it('replaces the private memory by a larger one where a block needs more room, and never detaches a buffer (V8 would slow typed-array code for the rest of the process)', () => {
    setEngineMode('wasm');
    const f = vectorize(['float64(float64, float64, float64)'])((a: number, x: number, y: number) => a * x - y);
    const x = Float64Array.from({ length: 200_000 }, (_, i) => Math.sin(i) * 1e3);
    const y = Float64Array.from({ length: 200_000 }, (_, i) => Math.cos(i) / 7);
    blockTesting.setBlockBytes(4096);
    const [small] = wasmAndJs(() => f.sync(0.5, x.subarray(0, 1000), y.subarray(0, 1000)) as Float64Array, { blockBytes: 4096 });
    const before = blockTesting.privateMemory()!;
    const buffer = before.buffer;
    const bytes = buffer.byteLength;
    // Blocks of 4 MiB: more than the memory holds now.
    expect(bytes).toBeLessThan(4 << 20);
    const [w, j] = wasmAndJs(() => f.sync(0.5, x, y) as Float64Array, { blockBytes: 4 << 20 });
    expectSameArrays(w as Float64Array, j as Float64Array);
    const after = blockTesting.privateMemory()!;
    expect(after).not.toBe(before);
    expect(after.buffer.byteLength).toBeGreaterThanOrEqual(4 << 20);
    expect(buffer.byteLength).toBe(bytes); // not detached (a detached buffer reads 0 bytes)
    // The kernel instantiated over the old memory runs over the new one: small calls again.
    const [again, reference] = wasmAndJs(() => f.sync(0.5, x.subarray(0, 1000), y.subarray(0, 1000)) as Float64Array, { blockBytes: 4096 });
    expectSameArrays(again as Float64Array, reference as Float64Array);
    expectSameArrays(again as Float64Array, small as Float64Array);
  });
});
