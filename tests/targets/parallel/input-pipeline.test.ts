/**
 * An awaited parallel call on ordinary inputs copies them into shared memory chunk by chunk while
 * the workers already run the chunks whose inputs are in, and copies results back to an ordinary
 * output as chunks are done (staging.ts `CopyPipeline`, protocol.ts `Slot.inputsReady` and
 * `Slot.trackChunks`): the staging itself, and calls through the public API — the same results as
 * the cpu target (offsets, strides, in place, calls in turns), a sync call behind such a call, an
 * input detached before it is copied, a kernel failing mid-call.
 */
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { ArgumentError, getParallelOptions, guvectorize, KernelRuntimeError, type NDArray, ready, vectorize } from '../../../src/index.js';
import type { CallPlan, OperandView } from '../../../src/plan.js';
import { __testing } from '../../../src/targets/parallel/index.js';
import { earlyResultChunks, pipelinedJobs } from '../../call-paths.js';
import { CHUNK_SIZE_F64, ControlBlock, INPUTS_FAILED, openChunks, runClaimedChunks, Slot, TOTAL_F64 } from '../../../src/targets/parallel/protocol.js';
import { type ChunkProgress, StagingArenas, stageOperands } from '../../../src/targets/parallel/staging.js';

type Data = Float32Array | Float64Array | Int32Array;

function view(data: Data, offset: number, loopStrides: number[]): OperandView {
  const dtype = data instanceof Float32Array ? 'float32' : data instanceof Float64Array ? 'float64' : 'int32';
  return { dtype, data, offset, loopStrides, coreShape: [], coreStrides: [] };
}

function plan(loopShape: number[], inputs: OperandView[], outputs: OperandView[], kind: CallPlan['kind'] = 'vectorize'): CallPlan {
  return { kind, loopShape, nin: inputs.length, operands: [...inputs, ...outputs], boundsCheck: true, kernelKey: 'test', kernel: undefined as never };
}

describe('CopyPipeline', () => {
  const n = 1000;
  const x = Float64Array.from({ length: n }, (_, i) => i + 0.5);
  // A view with an offset into a larger buffer, and one element broadcast to every index.
  const y = Int32Array.from({ length: n + 7 }, (_, i) => 3 * i).subarray(7);
  const b = new Float32Array([42]);
  const stagedCall = () => {
    const p = plan([n], [view(x, 0, [1]), view(y, 0, [1]), view(b, 0, [0])], [view(new Float64Array(n), 0, [1])]);
    const staged = stageOperands(p, new StagingArenas(), undefined, true);
    return { p, staged, pipeline: staged.pipelineCopies(p, false)! };
  };

  it('opens each chunk once its inputs are in, in order, after what every chunk reads', async () => {
    const { staged, pipeline } = stagedCall();
    const [sx, sy, sb] = staged.data as [Float64Array, Int32Array, Float32Array];
    expect(sx[0]).toBe(0); // nothing copied before the job begins
    const opened: number[] = [];
    const chunkSize = 300;
    pipeline.begin({ chunks: 4, chunkSize: chunkSize, total: n, open: (ready: number) => {
      // Chunks below `ready` have their inputs; the broadcast element is there from the first.
      expect(sb[0]).toBe(42);
      for (let i = 0; i < Math.min(ready * chunkSize, n); i++) {
        expect(sx[i]).toBe(x[i]);
        expect(sy[i]).toBe(y[i]);
      }
      if (ready * chunkSize < n) expect(sx[ready * chunkSize]).toBe(0);
      opened.push(ready);
    } });
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
    const pipeline = staged.pipelineCopies(p, false)!;
    const sx = staged.data[0] as Float64Array;
    const chunkSize = 70_000;
    const chunks = Math.ceil(m / chunkSize);
    const opened: number[] = [];
    pipeline.begin({ chunks: chunks, chunkSize: chunkSize, total: m, open: (ready: number) => {
      const end = Math.min(ready * chunkSize, m);
      expect(sx[end - 1]).toBe(big[end - 1]);
      if (end < m) expect(sx[end]).toBe(0);
      opened.push(ready);
    } });
    expect(sx[0]).toBe(0); // begin() copies nothing on the calling turn: the call's planning just ran
    await pipeline.finished;
    expect(opened).toEqual([1, 2, 3, 4]);
    expect(sx).toEqual(big);
    staged.abandon();
  });

  it('makes every remaining copy at once in finishNow (a sync call about to block)', () => {
    const { staged, pipeline } = stagedCall();
    const opened: number[] = [];
    pipeline.begin({ chunks: 10, chunkSize: 100, total: n, open: (ready: number) => opened.push(ready) });
    pipeline.finishNow();
    expect(opened.at(-1)).toBe(10);
    expect([...(staged.data[0] as Float64Array)]).toEqual([...x]);
    staged.abandon();
  });

  it('copies contiguous rows of a per-row call row by row', async () => {
    // 100 rows of 10: loop index i reads elements [10i, 10i + 10).
    const rows = plan([100], [{ ...view(x, 0, [10]), coreShape: [10], coreStrides: [1] }], [view(new Float64Array(100), 0, [1])], 'guvectorize');
    const staged = stageOperands(rows, new StagingArenas(), undefined, true);
    const pipeline = staged.pipelineCopies(rows, false)!;
    const sx = staged.data[0] as Float64Array;
    const opened: number[] = [];
    pipeline.begin({ chunks: 4, chunkSize: 25, total: 100, open: (ready: number) => {
      expect(sx[ready * 250 - 1]).toBe(x[ready * 250 - 1]);
      if (ready < 4) expect(sx[ready * 250]).toBe(0);
      opened.push(ready);
    } });
    await pipeline.finished;
    expect(opened).toEqual([1, 2, 3, 4]);
    staged.abandon();
  });

  it('is not made for inputs read out of loop order, rows that overlap, or with nothing to copy', () => {
    const reversed = plan([n], [view(x, n - 1, [-1])], [view(new Float64Array(n), 0, [1])]);
    expect(stageOperands(reversed, new StagingArenas(), undefined, true).pipelineCopies(reversed, false)).toBeUndefined();
    // Rows of 10 starting every 5 elements: index i also reads row i + 1's first half.
    const overlapping = plan([199], [{ ...view(x, 0, [5]), coreShape: [10], coreStrides: [1] }], [view(new Float64Array(199), 0, [1])], 'guvectorize');
    expect(stageOperands(overlapping, new StagingArenas(), undefined, true).pipelineCopies(overlapping, false)).toBeUndefined();
    const copied = plan([n], [view(x, 0, [1])], [view(new Float64Array(n), 0, [1])]);
    const now = stageOperands(copied, new StagingArenas());
    expect(now.pipelineCopies(copied, false)).toBeUndefined();
  });

  it('stops and closes the chunks when an input is detached before it is copied', async () => {
    const source = new Float64Array(n).fill(1);
    const p = plan([n], [view(source, 0, [1])], [view(new Float64Array(n), 0, [1])]);
    const staged = stageOperands(p, new StagingArenas(), undefined, true);
    const pipeline = staged.pipelineCopies(p, false)!;
    structuredClone(source.buffer, { transfer: [source.buffer] });
    const opened: number[] = [];
    pipeline.begin({ chunks: 4, chunkSize: 250, total: n, open: (ready: number) => opened.push(ready) });
    await pipeline.finished;
    expect(pipeline.error).toBeInstanceOf(TypeError);
    expect(opened).toEqual([INPUTS_FAILED]);
    staged.abandon();
  });
});

describe('claiming chunks (protocol.ts)', () => {
  /** A control block for a job of `chunks` chunks of 10 indices, `open` of them open. */
  const job = (chunks: number, open: number) => {
    const control = ControlBlock.create(1);
    control.int32[Slot.chunks] = chunks;
    control.int32[Slot.errorChunk] = chunks;
    control.float64[TOTAL_F64] = chunks * 10;
    control.float64[CHUNK_SIZE_F64] = 10;
    openChunks(control.int32, open, 0);
    return control;
  };
  const ran = (control: ControlBlock) => {
    const starts: number[] = [];
    runClaimedChunks(control, (_args, start) => void starts.push(start / 10), undefined as never, () => {});
    return starts;
  };

  it('runs every open chunk once, in order, and leaves nothing claimed beyond the last', () => {
    const control = job(5, 5);
    expect(ran(control)).toEqual([0, 1, 2, 3, 4]);
    expect(control.int32[Slot.nextChunk]).toBe(5); // claimed by compare-exchange: never past the end
    expect(ran(control)).toEqual([]);
  });

  it('runs none once the input copies failed, whatever was open', () => {
    const control = job(5, 2);
    openChunks(control.int32, INPUTS_FAILED, 2);
    expect(ran(control)).toEqual([]);
    expect(control.int32[Slot.nextChunk]).toBe(0); // nothing was claimed, so no thread holds a chunk
  });
});

describe('CopyPipeline results', () => {
  const n = 1000;
  const chunkSize = 250;
  const x = Float64Array.from({ length: n }, (_, i) => i);
  /** A job's progress as the test marks chunks done. */
  const fakeProgress = () => {
    const done = new Set<number>();
    let wake = () => {};
    const progress: ChunkProgress = {
      done: (c) => done.has(c),
      count: () => done.size,
      changed: () => new Promise<void>((resolve) => (wake = resolve)),
    };
    return { progress, finish: (c: number) => (done.add(c), wake()) };
  };
  const setUp = () => {
    // The output a view with an offset into a larger ordinary array, marked with -1.
    const out = new Float64Array(n + 5).fill(-1).subarray(5);
    const p = plan([n], [view(x, 0, [1])], [view(out, 0, [1])]);
    const staged = stageOperands(p, new StagingArenas(), undefined, true);
    const pipeline = staged.pipelineCopies(p, true)!;
    const stagedOut = staged.data[1] as Float64Array;
    /** What a worker does: chunk c's results into the staged output. */
    const run = (c: number) => {
      for (let i = c * chunkSize; i < (c + 1) * chunkSize; i++) stagedOut[i] = 10 * i;
    };
    const chunk = (c: number) => [...out.subarray(c * chunkSize, (c + 1) * chunkSize)];
    const written = (c: number) => Array.from({ length: chunkSize }, (_, i) => 10 * (c * chunkSize + i));
    const untouched = () => new Array<number>(chunkSize).fill(-1);
    return { staged, pipeline, run, chunk, written, untouched, out };
  };

  it('copies each chunk\'s results back once it is done, while later chunks run, and leaves the rest to the finish', async () => {
    const { staged, pipeline, run, chunk, written, untouched } = setUp();
    const { progress, finish } = fakeProgress();
    pipeline.begin({ chunks: 4, chunkSize, total: n, open: () => {}, progress });
    run(2);
    finish(2);
    await vi.waitFor(() => expect(chunk(2)).toEqual(written(2)));
    expect(chunk(0)).toEqual(untouched());
    run(0);
    finish(0);
    await vi.waitFor(() => expect(chunk(0)).toEqual(written(0)));
    expect(chunk(1)).toEqual(untouched());
    run(1);
    run(3);
    finish(1);
    pipeline.cancel(); // the job ended before the pipeline saw chunk 3 done
    staged.finish(true, pipeline);
    for (const c of [0, 1, 2, 3]) expect(chunk(c)).toEqual(written(c));
  });

  it('after a failure, copies back the results of the chunks that ran and leaves the others untouched', async () => {
    const { staged, pipeline, run, chunk, written, untouched } = setUp();
    const { progress, finish } = fakeProgress();
    pipeline.begin({ chunks: 4, chunkSize, total: n, open: () => {}, progress });
    run(0);
    run(3);
    finish(3);
    await vi.waitFor(() => expect(chunk(3)).toEqual(written(3)));
    finish(0);
    pipeline.cancel(); // chunks 1 and 2 never ran (a kernel failed in chunk 1)
    staged.finish(false, pipeline);
    expect([chunk(0), chunk(1), chunk(2), chunk(3)]).toEqual([written(0), untouched(), untouched(), written(3)]);
  });

  it('stop, without an unhandled rejection, when the caller\'s output is detached; the finish then fails as it did', async () => {
    const { staged, pipeline, run, out } = setUp();
    const { progress, finish } = fakeProgress();
    pipeline.begin({ chunks: 4, chunkSize, total: n, open: () => {}, progress });
    structuredClone(out.buffer, { transfer: [out.buffer] });
    run(0);
    finish(0);
    await pipeline.finished; // resolves: the copy's failure is left to the finish
    pipeline.cancel();
    expect(() => staged.finish(true, pipeline)).toThrow(TypeError);
  });

  it('are copied whole by the finish where the job did not track its chunks', async () => {
    const { staged, pipeline, run, chunk, written } = setUp();
    pipeline.begin({ chunks: 4, chunkSize, total: n, open: () => {} });
    await pipeline.finished;
    for (const c of [0, 1, 2, 3]) run(c);
    expect(chunk(0)).not.toEqual(written(0));
    pipeline.cancel();
    staged.finish(true, pipeline);
    for (const c of [0, 1, 2, 3]) expect(chunk(c)).toEqual(written(c));
  });
});

describe('awaited calls on ordinary inputs', () => {
  beforeAll(async () => {
    // Many small chunks, so that the workers wait for inputs often.
    await __testing.resetPool({ minChunk: 256, chunksPerThread: 32 });
    await ready();
    __testing.pipelineResults(true); // off by default (index.ts says why)
  });
  afterAll(async () => {
    __testing.pipelineResults(false);
    await __testing.resetPool();
  });

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
    earlyResultChunks(true);
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
    // The given ordinary outputs (64 chunks a call; an allocated output is shared memory, which the
    // threads copy back themselves): some chunks' results were back while later chunks still ran.
    expect(earlyResultChunks()).toBeGreaterThan(0);
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
  it('copy results back into ordinary outputs as chunks are done: in place, strided, several calls in flight, the same as cpu', async () => {
    const x = Float64Array.from({ length: n }, (_, i) => (i % 1000) - 300);
    const y = Float64Array.from({ length: n }, (_, i) => (i * 7) % 501);
    const want = cpu.sync(3, x, y) as Float64Array;
    // In place: the output is the input `y` itself (staged once; copied back whole).
    const inPlace = y.slice();
    await parallel(3, x, inPlace, { out: inPlace });
    expect(mismatches(inPlace, want)).toBe(0);
    // A strided output (every other element of a larger array): not in loop order, copied back whole.
    const wide = new Float64Array(2 * n).fill(-1);
    const strided = { data: wide, shape: [n], strides: [2] };
    await parallel(3, x, y, { out: strided as never });
    expect(mismatches(wide.filter((_, i) => i % 2 === 0), want)).toBe(0);
    expect(wide.every((v, i) => i % 2 === 0 || v === -1)).toBe(true);
    // Calls in turns: three awaited calls in flight at once, each into its own ordinary output.
    const outs = [0, 1, 2].map(() => new Float64Array(n + 1).subarray(1));
    await Promise.all(outs.map((out, k) => parallel(k, x, y, { out })));
    outs.forEach((out, k) => expect(mismatches(out, cpu.sync(k, x, y) as Float64Array)).toBe(0));
  });

  it('leave an ordinary output partly written when the kernel fails mid-call: each row as it was or as the kernel writes it', async () => {
    /** Writes `out[i] = i`: out of bounds for every row whose `i` is not in 0…3. */
    const writeAt = (target: 'cpu' | 'parallel') =>
      guvectorize(['void(int32, int32[:])'], '()->(n)', { target })((i: number, out: Int32Array) => {
        out[i] = i;
      });
    const rows = Math.ceil(n / 4);
    const bad = rows >> 1;
    const indices = Int32Array.from({ length: rows }, (_, r) => (r === bad ? 100 : r % 4));
    const cpuOut = new Int32Array(rows * 4).fill(-7);
    const cpuError = (() => {
      try {
        writeAt('cpu').sync(indices, { out: { data: cpuOut, shape: [rows, 4] } });
      } catch (error) {
        return error as Error;
      }
    })();
    expect(cpuError).toBeInstanceOf(KernelRuntimeError);
    const out = new Int32Array(rows * 4).fill(-7);
    await expect(writeAt('parallel')(indices, { out: { data: out, shape: [rows, 4] } })).rejects.toThrow(cpuError!.message);
    // Chunks after the failing one may have run too (threads run ahead): their rows are written.
    const written = (r: number) => [0, 1, 2, 3].map((j) => (j === r % 4 ? j : -7)).join();
    let rowsWritten = 0;
    for (let r = 0; r < rows; r++) {
      const row = [...out.subarray(4 * r, 4 * r + 4)].join();
      if (row !== '-7,-7,-7,-7') rowsWritten++;
      expect(row === '-7,-7,-7,-7' || (r !== bad && row === written(r))).toBe(true);
    }
    // The first chunks ran before the failing one: their rows are there.
    expect([...out.subarray(0, 4)]).toEqual([0, -7, -7, -7]);
    expect(rowsWritten).toBeGreaterThan(0);
  });
});
