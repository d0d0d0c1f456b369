/**
 * An awaited parallel call on ordinary inputs copies them into shared memory chunk by chunk while
 * the workers already run the chunks whose inputs are in (staging.ts `InputPipeline`, protocol.ts
 * `Slot.inputsReady`): the staging itself, and calls through the public API — the same results as
 * the cpu target, a sync call behind such a call, an input detached before it is copied.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ArgumentError, getParallelOptions, guvectorize, type NDArray, ready, vectorize } from '../../../src/index.js';
import type { CallPlan, OperandView } from '../../../src/plan.js';
import { __testing } from '../../../src/targets/parallel/index.js';
import { pipelinedJobs } from '../../call-paths.js';
import { INPUTS_FAILED } from '../../../src/targets/parallel/protocol.js';
import { StagingArenas, stageOperands } from '../../../src/targets/parallel/staging.js';

type Data = Float32Array | Float64Array | Int32Array;

function view(data: Data, offset: number, loopStrides: number[]): OperandView {
  const dtype = data instanceof Float32Array ? 'float32' : data instanceof Float64Array ? 'float64' : 'int32';
  return { dtype, data, offset, loopStrides, coreShape: [], coreStrides: [] };
}

function plan(loopShape: number[], inputs: OperandView[], outputs: OperandView[], kind: CallPlan['kind'] = 'vectorize'): CallPlan {
  return { kind, loopShape, nin: inputs.length, operands: [...inputs, ...outputs], boundsCheck: true, kernelKey: 'test', kernel: undefined as never };
}

describe('InputPipeline', () => {
  const n = 1000;
  const x = Float64Array.from({ length: n }, (_, i) => i + 0.5);
  // A view with an offset into a larger buffer, and one element broadcast to every index.
  const y = Int32Array.from({ length: n + 7 }, (_, i) => 3 * i).subarray(7);
  const b = new Float32Array([42]);
  const stagedCall = () => {
    const p = plan([n], [view(x, 0, [1]), view(y, 0, [1]), view(b, 0, [0])], [view(new Float64Array(n), 0, [1])]);
    const staged = stageOperands(p, new StagingArenas(), undefined, true);
    return { p, staged, pipeline: staged.pipelineInputs(p)! };
  };

  it('opens each chunk once its inputs are in, in order, after what every chunk reads', async () => {
    const { staged, pipeline } = stagedCall();
    const [sx, sy, sb] = staged.data as [Float64Array, Int32Array, Float32Array];
    expect(sx[0]).toBe(0); // nothing copied before the job begins
    const opened: number[] = [];
    const chunkSize = 300;
    pipeline.begin(4, chunkSize, n, (ready) => {
      // Chunks below `ready` have their inputs; the broadcast element is there from the first.
      expect(sb[0]).toBe(42);
      for (let i = 0; i < Math.min(ready * chunkSize, n); i++) {
        expect(sx[i]).toBe(x[i]);
        expect(sy[i]).toBe(y[i]);
      }
      if (ready * chunkSize < n) expect(sx[ready * chunkSize]).toBe(0);
      opened.push(ready);
    });
    await pipeline.finished;
    expect(opened).toEqual([1, 2, 3, 4]);
    expect(pipeline.error).toBeUndefined();
    staged.abandon();
  });

  it('copies chunks larger than a slice in slices, opening each only when all of it is in, and lets the event loop in first', async () => {
    // 2 MB of float64 in chunks of 70,000 indices (560 KB): each chunk takes several slices.
    const m = 250_000;
    const big = Float64Array.from({ length: m }, (_, i) => i + 0.25);
    const p = plan([m], [view(big, 0, [1])], [view(new Float64Array(m), 0, [1])]);
    const staged = stageOperands(p, new StagingArenas(), undefined, true);
    const pipeline = staged.pipelineInputs(p)!;
    const sx = staged.data[0] as Float64Array;
    const chunkSize = 70_000;
    const chunks = Math.ceil(m / chunkSize);
    const opened: number[] = [];
    pipeline.begin(chunks, chunkSize, m, (ready) => {
      const end = Math.min(ready * chunkSize, m);
      expect(sx[end - 1]).toBe(big[end - 1]);
      if (end < m) expect(sx[end]).toBe(0);
      opened.push(ready);
    });
    expect(sx[0]).toBe(0); // begin() copies nothing on the calling turn: the call's planning just ran
    await pipeline.finished;
    expect(opened).toEqual([1, 2, 3, 4]);
    expect(sx).toEqual(big);
    staged.abandon();
  });

  it('makes every remaining copy at once in finishNow (a sync call about to block)', () => {
    const { staged, pipeline } = stagedCall();
    const opened: number[] = [];
    pipeline.begin(10, 100, n, (ready) => opened.push(ready));
    pipeline.finishNow();
    expect(opened.at(-1)).toBe(10);
    expect([...(staged.data[0] as Float64Array)]).toEqual([...x]);
    staged.abandon();
  });

  it('copies contiguous rows of a per-row call row by row', async () => {
    // 100 rows of 10: loop index i reads elements [10i, 10i + 10).
    const rows = plan([100], [{ ...view(x, 0, [10]), coreShape: [10], coreStrides: [1] }], [view(new Float64Array(100), 0, [1])], 'guvectorize');
    const staged = stageOperands(rows, new StagingArenas(), undefined, true);
    const pipeline = staged.pipelineInputs(rows)!;
    const sx = staged.data[0] as Float64Array;
    const opened: number[] = [];
    pipeline.begin(4, 25, 100, (ready) => {
      expect(sx[ready * 250 - 1]).toBe(x[ready * 250 - 1]);
      if (ready < 4) expect(sx[ready * 250]).toBe(0);
      opened.push(ready);
    });
    await pipeline.finished;
    expect(opened).toEqual([1, 2, 3, 4]);
    staged.abandon();
  });

  it('is not made for inputs read out of loop order, rows that overlap, or with nothing to copy', () => {
    const reversed = plan([n], [view(x, n - 1, [-1])], [view(new Float64Array(n), 0, [1])]);
    expect(stageOperands(reversed, new StagingArenas(), undefined, true).pipelineInputs(reversed)).toBeUndefined();
    // Rows of 10 starting every 5 elements: index i also reads row i + 1's first half.
    const overlapping = plan([199], [{ ...view(x, 0, [5]), coreShape: [10], coreStrides: [1] }], [view(new Float64Array(199), 0, [1])], 'guvectorize');
    expect(stageOperands(overlapping, new StagingArenas(), undefined, true).pipelineInputs(overlapping)).toBeUndefined();
    const copied = plan([n], [view(x, 0, [1])], [view(new Float64Array(n), 0, [1])]);
    const now = stageOperands(copied, new StagingArenas());
    expect(now.pipelineInputs(copied)).toBeUndefined();
  });

  it('stops and closes the chunks when an input is detached before it is copied', async () => {
    const source = new Float64Array(n).fill(1);
    const p = plan([n], [view(source, 0, [1])], [view(new Float64Array(n), 0, [1])]);
    const staged = stageOperands(p, new StagingArenas(), undefined, true);
    const pipeline = staged.pipelineInputs(p)!;
    structuredClone(source.buffer, { transfer: [source.buffer] });
    const opened: number[] = [];
    pipeline.begin(4, 250, n, (ready) => opened.push(ready));
    await pipeline.finished;
    expect(pipeline.error).toBeInstanceOf(TypeError);
    expect(opened).toEqual([INPUTS_FAILED]);
    staged.abandon();
  });
});

describe('awaited calls on ordinary inputs', () => {
  beforeAll(async () => {
    // Many small chunks, so that the workers wait for inputs often.
    await __testing.resetPool({ minChunk: 256, chunksPerThread: 32 });
    await ready();
  });
  afterAll(async () => __testing.resetPool());

  // Above the work a call on ordinary arrays needs to use the workers (4× the threshold).
  const n = getParallelOptions().threshold * 4 + 13;
  /** Elements that differ (toEqual on spread arrays of this size takes seconds). */
  const mismatches = (a: Data, b: Data) => {
    let count = a.length === b.length && a.length > 0 ? 0 : Infinity;
    for (let i = 0; i < a.length; i++) if (!Object.is(a[i], b[i])) count++;
    return count;
  };
  const saxpy = (target: 'cpu' | 'parallel') =>
    vectorize(['int32(int32, int32, int32)', 'float32(float32, float32, float32)', 'float64(float64, float64, float64)'], { target })((a: number, x: number, y: number) => a * x + y);
  const cpu = saxpy('cpu');
  const parallel = saxpy('parallel');

  it('give what the cpu target gives, for each dtype and for views with offsets, copying while the workers compute', async () => {
    pipelinedJobs(true);
    for (const Type of [Float64Array, Float32Array, Int32Array] as { from(a: ArrayLike<number>): Data; new (n: number): Data }[]) {
      const x = Type.from(Array.from({ length: n + 5 }, (_, i) => (i % 1000) - 300)).subarray(5);
      const y = Type.from(Array.from({ length: n }, (_, i) => (i * 7) % 501));
      const want = cpu.sync(3, x, y) as Data;
      expect(mismatches((await parallel(3, x, y)) as Data, want)).toBe(0);
      const out = new Type(n + 3).subarray(3);
      await parallel(3, x, y, { out });
      expect(mismatches(out, want)).toBe(0);
    }
    expect(pipelinedJobs()).toBe(6);
  });

  it('give what the cpu target gives for a per-row call on contiguous rows and on a view with an offset', async () => {
    const rowDot = (target: 'cpu' | 'parallel') =>
      guvectorize(['void(float32[:], float32[:], float32[:])'], '(n),(n)->()', { target })((a: Float32Array, b: Float32Array, out: Float32Array) => {
        let s = 0;
        for (let i = 0; i < a.length; i++) s += a[i]! * b[i]!;
        out[0] = s;
      });
    const rows = Math.ceil(n / 16);
    const a = Float32Array.from(Array.from({ length: rows * 16 + 3 }, (_, i) => (i % 97) - 40)).subarray(3);
    const b = Float32Array.from(Array.from({ length: rows * 16 }, (_, i) => (i % 13) * 0.5));
    const args = [{ data: a, shape: [rows, 16] }, { data: b, shape: [rows, 16] }] as const;
    pipelinedJobs(true);
    const got = ((await rowDot('parallel')(...args)) as NDArray<Float32Array>).data;
    expect(pipelinedJobs()).toBe(1);
    const want = (rowDot('cpu').sync(...args) as NDArray<Float32Array>).data;
    expect(got.length).toBe(rows);
    expect(mismatches(got, want)).toBe(0);
  });

  it('run sync calls so too: the calling thread copies chunk by chunk while the workers compute, then claims chunks', () => {
    pipelinedJobs(true);
    for (const Type of [Float64Array, Int32Array] as { from(a: ArrayLike<number>): Data; new (n: number): Data }[]) {
      const x = Type.from(Array.from({ length: n + 2 }, (_, i) => (i % 777) - 100)).subarray(2);
      const y = Type.from(Array.from({ length: n }, (_, i) => (i * 5) % 301));
      const want = cpu.sync(-2, x, y) as Data;
      expect(mismatches(parallel.sync(-2, x, y) as Data, want)).toBe(0);
      const out = new Type(n);
      parallel.sync(-2, x, y, { out });
      expect(mismatches(out, want)).toBe(0);
    }
    expect(pipelinedJobs()).toBe(4);
  });

  it('let a sync call behind them run (it copies the rest of their inputs before it blocks)', async () => {
    const x = Float64Array.from({ length: n }, (_, i) => i);
    const y = new Float64Array(n).fill(1);
    const pending = parallel(2, x, y);
    const now = parallel.sync(3, x, y) as Float64Array;
    const first = (await pending) as Float64Array;
    expect(first[n - 1]).toBe(2 * (n - 1) + 1);
    expect(now[n - 1]).toBe(3 * (n - 1) + 1);
    expect(mismatches(first, cpu.sync(2, x, y) as Float64Array)).toBe(0);
  });

  it('fail with an ArgumentError when an input is detached before it is copied, and the pool goes on', async () => {
    const x = new Float64Array(n).fill(1);
    const y = new Float64Array(n).fill(2);
    const out = new Float64Array(n);
    const call = parallel(3, x, y, { out });
    structuredClone(x.buffer, { transfer: [x.buffer] });
    await expect(call).rejects.toThrow(ArgumentError);
    await expect(call).rejects.toThrow(/Argument 2 .* detached/);
    const z = new Float64Array(n).fill(1);
    expect(((await parallel(3, z, y)) as Float64Array).every((v) => v === 5)).toBe(true);
  });
});
