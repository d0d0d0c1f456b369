import { describe, expect, it } from 'vitest';
import { guvectorize, KernelRuntimeError, LayoutError, SignatureError, type NDArray, type Slice2 } from '../src/index.js';
import { TARGETS } from './targets.js';

const f32 = (xs: number[]) => Float32Array.from(xs);

describe.each(TARGETS)('guvectorize on %s', (target) => {
  it('runs the running-power example of seed 001 in place over 1,280,000 rows', async () => {
    // (n)->(n): each row [k, 0, 0, 0] with k = (i mod 4) + 1 becomes k + k² + … + k^(j+1).
    const powers = guvectorize(['void(float32[:], float32[:])'], '(n)->(n)', { target })((x: Float32Array, out: Float32Array) => {
      const k = x[0]!;
      let p = k;
      out[0] = k;
      for (let j = 1; j < out.length; j++) {
        p *= k;
        out[j] = out[j - 1]! + p;
      }
    });
    const rows = 1_280_000;
    const data = new Float32Array(rows * 4);
    for (let i = 0; i < rows; i++) data[i * 4] = (i % 4) + 1;
    const m = { data, shape: [rows, 4] };
    await powers(m, { out: m });
    const expected = [[1, 2, 3, 4], [2, 6, 14, 30], [3, 12, 39, 120], [4, 20, 84, 340]];
    for (const i of [0, 1, 2, 3, 4, 5, 6, 7, rows - 4, rows - 3, rows - 2, rows - 1]) {
      expect([...data.subarray(i * 4, i * 4 + 4)]).toEqual(expected[i % 4]);
    }
    // 1.28 million rows take 4 s on lavapipe alone (a CPU emulating the GPU); more on a busy machine.
  }, 30_000);

  it('multiplies batches of matrices: (m,n),(n,p)->(m,p), broadcasting the batch', async () => {
    const matmul = guvectorize(['void(float32[:,:], float32[:,:], float32[:,:])'], '(m,n),(n,p)->(m,p)', { target })(
      (a: Slice2, b: Slice2, c: Slice2) => {
        for (let i = 0; i < a.shape[0]; i++) {
          for (let j = 0; j < b.shape[1]; j++) {
            let s = 0;
            for (let k = 0; k < a.shape[1]; k++) s += a[i]![k]! * b[k]![j]!;
            c[i]![j] = s;
          }
        }
      },
    );
    const a = { data: f32([1, 2, 3, 4, 5, 6, 0, 1, 1, 0, 2, 2]), shape: [2, 2, 3] };
    const b = { data: f32([1, 0, 0, 1, 1, 1]), shape: [3, 2] }; // broadcast over the batch
    const c = (await matmul(a, b)) as NDArray;
    expect(c.shape).toEqual([2, 2, 2]);
    expect([...c.data]).toEqual([4, 5, 10, 11, 1, 2, 2, 4]);
  });

  it('gives several outputs, fixed core sizes and one-element slices for ()', async () => {
    const stats = guvectorize(['void(float32[:], float32[:], float32[:])'], '(n)->(),()', { target })(
      (x: Float32Array, lo: Float32Array, hi: Float32Array) => {
        lo[0] = x[0]!;
        hi[0] = x[0]!;
        for (let i = 1; i < x.length; i++) {
          lo[0] = Math.min(lo[0]!, x[i]!);
          hi[0] = Math.max(hi[0]!, x[i]!);
        }
      },
    );
    const [lo, hi] = (await stats({ data: f32([3, 1, 2, 9, 7, 8]), shape: [2, 3] })) as NDArray[];
    expect([...lo!.data]).toEqual([1, 7]);
    expect([...hi!.data]).toEqual([3, 9]);

    const norm = guvectorize(['void(float32[:], float32[:])'], '(3)->()', { target })((v: Float32Array, out: Float32Array) => {
      out[0] = Math.sqrt(v[0]! * v[0]! + v[1]! * v[1]! + v[2]! * v[2]!);
    });
    expect([...((await norm({ data: f32([3, 4, 0, 0, 0, 2]), shape: [2, 3] })) as NDArray).data]).toEqual([5, 2]);
  });

  it('reports an index out of bounds at its line of this file', async () => {
    const bad = guvectorize(['void(float32[:], float32[:])'], '(n)->(n)', { target })((x: Float32Array, out: Float32Array) => {
      for (let i = 0; i <= x.length; i++) out[i] = x[i]!;
    });
    await expect(bad({ data: f32([1, 2, 3, 4]), shape: [2, 2] })).rejects.toThrowError(KernelRuntimeError);
    await expect(bad({ data: f32([1, 2, 3, 4]), shape: [2, 2] })).rejects.toThrowError(/out of bounds for `out` at tests\/guvectorize\.test\.ts:73:\d+ \(its shape is \[2\]\)/);
  });
});

describe('guvectorize definitions', () => {
  it('refuses layouts and signatures that disagree, saying how', () => {
    expect(() => guvectorize(['void(float32[:], float32[:])'], '(n),(n)->(n)')((a: number) => a)).toThrowErrorMatchingSnapshot();
    expect(() => guvectorize(['void(float32[:,:], float32[:])'], '(n)->(n)')((a: number, b: number) => a + b)).toThrowErrorMatchingSnapshot();
    expect(() => guvectorize(['void(float32[:], float32)'], '(n)->()')((a: number, b: number) => a + b)).toThrowErrorMatchingSnapshot();
    expect(() => guvectorize(['float32(float32[:], float32[:])'], '(n)->(n)')((a: number, b: number) => a + b)).toThrowError(SignatureError);
    expect(() => guvectorize(['void(float32[:], float32[:])'], '(n)=>(n)')((a: number, b: number) => a + b)).toThrowError(LayoutError);
  });

  it('needs the size of output-only dimensions', async () => {
    const ramp = guvectorize(['void(float32, float32[:])'], '()->(n)')((x: number, out: Float32Array) => {
      for (let i = 0; i < out.length; i++) out[i] = x + i;
    });
    await expect(ramp(f32([1]))).rejects.toThrowError(LayoutError);
    expect(((await ramp(f32([1, 10]), { dims: { n: 3 } })) as NDArray).data).toEqual(f32([1, 2, 3, 10, 11, 12]));
    const out = { data: new Float32Array(4), shape: [2, 2] };
    await ramp(f32([1, 10]), { out });
    expect([...out.data]).toEqual([1, 2, 10, 11]);
    expect([...((await ramp(5, { dims: { n: 2 } })) as Float32Array)]).toEqual([5, 6]);
  });
});
