/**
 * Property: the straight-line form of a kernel (codegen/unroll.ts: helpers inlined, loops over
 * known lengths unrolled, local arrays in scalars) gives the same bits as the loop form, for a
 * sweep of kernels with helpers and local arrays, random data and random core sizes (trip counts
 * 0, 1 and more; rows staged in tiles, and column-major rows that are not), and both agree with the
 * cpu target. (The sweep found that a local array declared in a loop was not zero-filled again at
 * each pass on the gpu, in both forms: fixed in emit-wgsl.ts's local-array statement.)
 */
import fc from 'fast-check';
import { afterAll, expect, it } from 'vitest';
import { guvectorize, type NDArray } from '../../../src/index.js';
import { setLoopUnrolling } from '../../../src/targets/gpu/codegen/unroll.js';
import { describeGpu } from '../../gpu-available.js';

interface Row {
  [i: number]: number;
  readonly length: number;
}
interface Matrix {
  [row: number]: Row;
  readonly shape: readonly number[];
}

function tendency(x: Row, forcing: number, dxdt: Row): void {
  const n = x.length;
  for (let i = 0; i < n; i++) dxdt[i] = (x[(i + 1) % n]! - x[(i + n - 2) % n]!) * x[(i + n - 1) % n]! - x[i]! + forcing;
}
function rk2(x: Row, dt: number, k: Row, stage: Row, out: Row): void {
  tendency(x, 8, k);
  for (let i = 0; i < x.length; i++) stage[i] = x[i]! + (dt / 2) * k[i]!;
  tendency(stage, 8, k);
  for (let i = 0; i < x.length; i++) out[i] = x[i]! + dt * k[i]!;
}
/** Returns early: not inlined, called with a local array. */
function firstNegative(a: Row): number {
  for (let i = 0; i < a.length; i++) if (a[i]! < 0) return i;
  return -1;
}
function scale(a: Row, by: number): void {
  for (let i = 0; i < a.length; i++) a[i] = a[i]! * by;
}

/** Kernels of layout `(n)->(n)` (float32 rows), each a shape the transformation meets. */
const rowKernels: Record<string, { kernel: (x: Row, out: Row) => void; env?: Record<string, unknown> }> = {
  'helpers and two local rows (Lorenz-like)': {
    kernel: (x, out) => {
      const k = new Float32Array(x.length);
      const stage = new Float32Array(x.length);
      rk2(x, 0.01, k, stage, out);
    },
    env: { rk2, tendency },
  },
  'recurrence over the output, reversed and strided loops': {
    kernel: (x, out) => {
      if (out.length > 0) out[0] = 1;
      for (let i = 1; i < out.length; i++) out[i] = x[i]! * out[i - 1]! - 0.5;
      for (let i = out.length - 1; i >= 0; i--) out[i] = out[i]! + x[out.length - 1 - i]!;
      for (let i = 0; i < out.length; i += 2) out[i] = -out[i]!;
    },
  },
  'triangular nested loops and a local array declared in a loop': {
    kernel: (x, out) => {
      for (let i = 0; i < x.length; i++) {
        const acc = new Float32Array(4);
        for (let j = 0; j <= i; j++) acc[j % 4] = acc[j % 4]! + x[j]!;
        out[i] = acc[0]! - acc[1]! + acc[2]! * acc[3]!;
      }
    },
  },
  'a local array passed to a helper that returns early, one inlined, a read before any write': {
    kernel: (x, out) => {
      const t = new Float32Array(x.length);
      for (let i = 0; i < x.length; i++) t[i] = x[i]! - 0.25;
      scale(t, 3);
      const f = firstNegative(t);
      for (let i = 0; i < out.length; i++) out[i] = t[i]! + f + (i + 1 < t.length ? 0 : t[(i + 1) % t.length]!);
    },
    env: { scale, firstNegative },
  },
  'a local array in scalars, declared in a loop left as a loop (zero-filled at every pass)': {
    kernel: (x, out) => {
      for (let i = 0; i < x.length; i++) {
        const acc = new Float32Array(2);
        if (x[i]! > 0.95) break;
        acc[0] = acc[0]! + x[i]!;
        acc[1] = acc[1]! + acc[0]! * 2;
        out[i] = acc[1]!;
      }
    },
  },
  'an early exit and a counter changed in the body (left as loops) beside unrolled ones': {
    kernel: (x, out) => {
      let s = 0;
      for (let i = 0; i < x.length; i++) {
        if (x[i]! > 0.9) break;
        s += x[i]!;
      }
      for (let i = 0; i < x.length; i++) {
        out[i] = s * x[i]!;
        if (x[i]! < -0.9) i++;
      }
    },
  },
};

const SIZES = fc.record({ rows: fc.integer({ min: 1, max: 70 }), n: fc.integer({ min: 1, max: 16 }), columnMajor: fc.boolean(), seed: fc.nat() });

function data(length: number, seed: number): Float32Array {
  let s = seed >>> 0;
  return Float32Array.from({ length }, () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return (s / 2 ** 32) * 2 - 1;
  });
}

/** A fresh result's elements as bits (results the library allocates are C-ordered from offset 0). */
const bitsOf = (a: NDArray) => Array.from(new Uint32Array(a.data.buffer, a.data.byteOffset, a.data.length));

describeGpu('straight-line code for small arrays, randomly', { timeout: 300_000 }, () => {
  afterAll(() => setLoopUnrolling(true));

  for (const [name, { kernel, env }] of Object.entries(rowKernels)) {
    it(`${name}: the same bits as the loop form, and the cpu's values`, async () => {
      const make = (target: 'gpu' | 'cpu') => guvectorize(['void(float32[:], float32[:])'], '(n)->(n)', { target, ...(env ? { env } : {}) })(kernel);
      // One ufunc per form: a call whose layout is new compiles it under the switch as set then.
      const forms = [make('gpu'), make('gpu')];
      const cpuUfunc = make('cpu');
      await fc.assert(
        fc.asyncProperty(SIZES, async ({ rows, n, columnMajor, seed }) => {
          const x = data(rows * n, seed);
          const input = columnMajor ? { data: x, shape: [rows, n], strides: [1, rows] } : { data: x, shape: [rows, n] };
          const results: number[][] = [];
          for (const [k, f] of forms.entries()) {
            setLoopUnrolling(k === 1);
            results.push(bitsOf((await f(input)) as NDArray));
          }
          setLoopUnrolling(true);
          expect(results[1]).toEqual(results[0]);
          const cpu = (await cpuUfunc(input)) as NDArray;
          const expected = cpu.data as Float32Array;
          const got = new Float32Array(new Uint32Array(results[1]!).buffer);
          expected.forEach((e, i) => expect(Math.abs(got[i]! - e)).toBeLessThanOrEqual(1e-3 * Math.max(1, Math.abs(e))));
        }),
        { numRuns: 4 },
      );
    });
  }

  it('2-D cores: nested loops over tiles (matmul), the same bits as the loop form', async () => {
    const matmul = (a: Matrix, b: Matrix, c: Matrix) => {
      for (let i = 0; i < a.shape[0]!; i++) {
        for (let j = 0; j < b.shape[1]!; j++) {
          let s = 0;
          for (let k = 0; k < a.shape[1]!; k++) s += a[i]![k]! * b[k]![j]!;
          c[i]![j] = s;
        }
      }
    };
    const forms = [0, 1].map(() => guvectorize(['void(float32[:,:], float32[:,:], float32[:,:])'], '(m,n),(n,p)->(m,p)', { target: 'gpu' })(matmul));
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 1, max: 40 }), fc.integer({ min: 1, max: 5 }), fc.integer({ min: 1, max: 5 }), fc.nat(), async (batch, m, p, seed) => {
        const a = { data: data(batch * m * 3, seed), shape: [batch, m, 3] };
        const b = { data: data(batch * 3 * p, seed + 1), shape: [batch, 3, p] };
        const results: number[][] = [];
        for (const [k, f] of forms.entries()) {
          setLoopUnrolling(k === 1);
          results.push(bitsOf((await f(a, b)) as NDArray));
        }
        setLoopUnrolling(true);
        expect(results[1]).toEqual(results[0]);
      }),
      { numRuns: 4 },
    );
  });
});
