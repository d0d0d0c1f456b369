/**
 * Staging: operands in shared memory are used where they are; others are copied into a shared
 * arena, only the range they reach, with aliasing between operands kept; outputs are copied back.
 * And the rule for when a call may be split at all.
 */
import { describe, expect, it, vi } from 'vitest';
import type { CallPlan, OperandView } from '../../../src/plan.js';
import { sharedArray } from '../../../src/index.js';
import { canSplitLoop, StagingArenas, stageOperands } from '../../../src/targets/parallel/staging.js';
import { CHUNK_SIZE_F64, ControlBlock, copyingRunner, runClaimedChunks, Slot, TOTAL_F64 } from '../../../src/targets/parallel/protocol.js';
import { callerBytes } from '../../../src/targets/parallel/worker-core.js';

type Data = Float32Array | Float64Array | Int32Array | Uint32Array;

/** An operand view: element (i…; c…) at data[offset + Σ loopStrides·i + Σ coreStrides·c]. */
function view(data: Data, offset: number, loopStrides: number[], core: { shape: number[]; strides: number[] } = { shape: [], strides: [] }): OperandView {
  const dtype = data instanceof Float32Array ? 'float32' : data instanceof Float64Array ? 'float64' : data instanceof Int32Array ? 'int32' : 'uint32';
  return { dtype, data, offset, loopStrides, coreShape: core.shape, coreStrides: core.strides };
}

/** The parts of a plan staging reads. */
function plan(kind: CallPlan['kind'], loopShape: number[], inputs: OperandView[], outputs: OperandView[]): CallPlan {
  return { kind, loopShape, nin: inputs.length, operands: [...inputs, ...outputs], boundsCheck: true, kernelKey: 'test', kernel: undefined as never };
}

const isShared = (a: ArrayLike<unknown>) => (a as Data).buffer instanceof SharedArrayBuffer;

describe('stageOperands', () => {
  it('lets the threads copy back a shared vectorize output chunk by chunk, and copies it all after a failure', () => {
    const n = 1000;
    const x = Float64Array.from({ length: n }, (_, i) => i);
    const stage = (out: Float64Array) => {
      const p = plan('vectorize', [n], [view(x, 0, [1])], [view(out, 0, [1])]);
      // As for a Wasm job: every operand outside the (here: no) Wasm memory is staged.
      const staged = stageOperands(p, new StagingArenas(), () => false);
      const [input, output] = staged.data as Float64Array[];
      for (let i = 0; i < n; i++) output![i] = input![i]! * 2;
      return { staged, copies: staged.chunkCopies(p) };
    };
    const shared = new Float64Array(new SharedArrayBuffer(8 * n));
    const { staged, copies } = stage(shared);
    expect(copies.map((c) => [c.when, c.bytesPerIndex, c.to.length])).toEqual([['after', 8, 8 * n]]);
    copyingRunner(() => {}, copies)({} as never, 0, 600); // a thread's chunk [0, 600)
    expect(shared[599]).toBe(1198);
    expect(shared[600]).toBe(0);
    staged.finish(true); // the job completed: the threads copied every chunk; nothing more here
    expect(shared[600]).toBe(0);
    // After a failure, the calling thread copies everything the arena holds.
    const failed = new Float64Array(new SharedArrayBuffer(8 * n));
    stage(failed).staged.finish(false);
    expect(failed[999]).toBe(1998);
    // An ordinary output cannot be reached by a worker: the calling thread copies it.
    const ordinary = new Float64Array(n);
    const { staged: s2, copies: c2 } = stage(ordinary);
    expect(c2).toEqual([]);
    s2.finish(true);
    expect(ordinary[999]).toBe(1998);
  });

  it('lets the threads copy in, chunk by chunk, operands whose own memory is shared and read in loop order, and back where they are outputs', () => {
    const rows = 100;
    const shared = <T extends Data>(Type: new (b: SharedArrayBuffer) => T, n: number) => new Type(new SharedArrayBuffer(n * 8));
    const x = shared(Float64Array, rows * 4);
    x.forEach((_, i) => (x[i] = i));
    const ordinary = Float64Array.from({ length: rows * 4 }, (_, i) => -i);
    const out = shared(Float64Array, rows * 4).fill(7);
    // Rows of 4: x and `ordinary` read in loop order, `out` a per-row output (copied in: the kernel may read it).
    const rowView = (d: Float64Array) => view(d, 0, [4], { shape: [4], strides: [1] });
    const p = plan('guvectorize', [rows], [rowView(x), rowView(ordinary)], [rowView(out)]);
    const staged = stageOperands(p, new StagingArenas(), () => false, true);
    const copies = staged.chunkCopies(p);
    expect(copies.map((c) => [c.when, c.bytesPerIndex, c.to.buffer === x.buffer || (c.when !== 'clear' && c.from.buffer === x.buffer) ? 'x' : 'out'])).toEqual([
      ['before', 32, 'x'],
      ['before', 32, 'out'],
      ['after', 32, 'out'],
    ]);
    // The calling thread copies in only the ordinary input; the pipeline has nothing left for the others.
    staged.copyIn();
    const [sx, so, sout] = staged.data as Float64Array[];
    expect(so![staged.offset[1]! + 5]).toBe(-5);
    expect(sx![staged.offset[0]! + 5]).toBe(0);
    expect(sout![staged.offset[2]! + 5]).toBe(0);
    // A thread's chunk [10, 20): its rows of x and out copied in before the runner, out's copied back after.
    let seen: number[] = [];
    copyingRunner(
      () => {
        seen = [sx![staged.offset[0]! + 40]!, sx![staged.offset[0]! + 39]!, sout![staged.offset[2]! + 40]!];
        for (let i = 40; i < 80; i++) sout![staged.offset[2]! + i] = sx![staged.offset[0]! + i]! * 2;
        sout![staged.offset[2]! + 80] = -1; // outside the chunk: never copied back by it
      },
      copies,
    )({} as never, 10, 20);
    expect(seen).toEqual([40, 0, 7]);
    expect(out[40]).toBe(80);
    expect(out[79]).toBe(158);
    expect(out[80]).toBe(7);
    // After a failure, the calling thread copies none of the range the threads copied in: the
    // chunks that ran are back already, the others keep their old contents.
    staged.finish(false);
    expect(out[80]).toBe(7);
    expect(out[0]).toBe(7);
  });

  it('clears the staged copy of an output the call allocated instead of reading it, on the threads and on the calling thread', () => {
    const rows = 50;
    const x = Float64Array.from({ length: rows * 4 }, (_, i) => i);
    const rowView = (d: Float64Array) => view(d, 0, [4], { shape: [4], strides: [1] });
    // A fresh output is all zeros: here it holds 5s, which show through wherever it is read rather than cleared.
    const freshView = (d: Float64Array): OperandView => ({ ...rowView(d), fresh: true });
    const arenas = new StagingArenas();
    // Every arena dirty first: a clear must not leave an earlier call's bytes.
    const dirty = arenas.acquire(1 << 16);
    new Uint8Array(dirty.buffer).fill(0xff);
    arenas.release(dirty);
    const out = new Float64Array(new SharedArrayBuffer(rows * 32)).fill(5);
    const p = plan('guvectorize', [rows], [rowView(x)], [freshView(out)]);
    const staged = stageOperands(p, arenas, () => false, true);
    const copies = staged.chunkCopies(p);
    expect(copies.map((c) => [c.when, c.bytesPerIndex])).toEqual([
      ['clear', 32],
      ['after', 32],
    ]);
    staged.copyIn();
    const sout = staged.data[1] as Float64Array;
    const at = staged.offset[1]!;
    let seen: number[] = [];
    copyingRunner(() => {
      seen = [sout[at + 39]!, sout[at + 40]!, sout[at + 79]!, sout[at + 80]!];
      sout[at + 40] = 1;
    }, copies)({} as never, 10, 20);
    expect(seen).toEqual([NaN, 0, 0, NaN]); // rows 10-19 cleared, the others untouched (0xff bytes: NaN)
    expect([out[39], out[40], out[41], out[80]]).toEqual([5, 1, 0, 5]); // the chunk's rows copied back
    // An ordinary fresh output: the calling thread clears it whole (whether in a pipeline or not).
    for (const pipelined of [false, true]) {
      const ordinary = new Float64Array(rows * 4).fill(5);
      const q = plan('guvectorize', [rows], [rowView(x)], [freshView(ordinary)]);
      const s2 = stageOperands(q, arenas, () => false, true);
      new Uint8Array((s2.data[1] as Float64Array).buffer).fill(0xff);
      const pipeline = pipelined ? s2.pipelineCopies(q, false) : undefined;
      if (pipeline) {
        pipeline.begin({ chunks: 1, chunkSize: rows, total: rows, open: () => {} });
        pipeline.finishNow();
      } else s2.copyIn();
      expect(pipelined).toBe(pipeline !== undefined);
      const staged2 = s2.data[1] as Float64Array;
      expect([staged2[s2.offset[1]!], staged2[s2.offset[1]! + rows * 4 - 1]]).toEqual([0, 0]);
      expect((s2.data[0] as Float64Array)[s2.offset[0]! + 7]).toBe(7);
      s2.finish(true, pipeline);
      expect(ordinary.every((v) => v === 0)).toBe(true);
    }
  });

  it('lets the thread that runs a call of one long row copy it in and back, whatever the stride of its loop of one', () => {
    const n = 1000;
    const x = new Float64Array(new SharedArrayBuffer(8 * n));
    x.forEach((_, i) => (x[i] = i));
    const out = new Float64Array(new SharedArrayBuffer(8 * n));
    // One loop index: the front gives its dimension stride 0.
    const row = (d: Float64Array): OperandView => view(d, 0, [0], { shape: [n], strides: [1] });
    const p = plan('guvectorize', [1], [row(x)], [{ ...row(out), fresh: true }]);
    const staged = stageOperands(p, new StagingArenas(), () => false, true);
    const copies = staged.chunkCopies(p);
    expect(copies.map((c) => [c.when, c.bytesPerIndex])).toEqual([
      ['before', 8 * n],
      ['clear', 8 * n],
      ['after', 8 * n],
    ]);
    staged.copyIn(); // nothing left for the calling thread
    const [sx, sout] = staged.data as Float64Array[];
    expect(sx![staged.offset[0]! + n - 1]).toBe(0);
    copyingRunner(() => {
      for (let i = 0; i < n; i++) sout![staged.offset[1]! + i] = sx![staged.offset[0]! + i]! * 2;
    }, copies)({} as never, 0, 1);
    expect(out[n - 1]).toBe(2 * (n - 1));
    staged.finish(true);
  });

  it('leaves copies in to the calling thread when they were made already, or when turned off', () => {
    const x = new Float64Array(new SharedArrayBuffer(8 * 64)).fill(3);
    const out = new Float64Array(new SharedArrayBuffer(8 * 64));
    const p = plan('vectorize', [64], [view(x, 0, [1])], [view(out, 0, [1])]);
    const now = stageOperands(p, new StagingArenas(), () => false);
    expect(now.chunkCopies(p).map((c) => c.when)).toEqual(['after']);
    const off = stageOperands(p, new StagingArenas(), () => false, true);
    expect(off.chunkCopies(p, false).map((c) => c.when)).toEqual(['after']);
    off.copyIn();
    expect((off.data[0] as Float64Array)[off.offset[0]! + 63]).toBe(3);
    // A broadcast input is not in loop order: copied whole, by the calling thread.
    const b = plan('vectorize', [64], [view(x, 0, [0])], [view(out, 0, [1])]);
    expect(stageOperands(b, new StagingArenas(), () => false, true).chunkCopies(b).map((c) => c.when)).toEqual(['after']);
  });

  it('defers the copies in when asked, and copies in and back in slices (an awaited call yields between them)', async () => {
    // 3 MiB in, 3 MiB back: more than one slice each way.
    const x = Float64Array.from({ length: 393_216 }, (_, i) => i * 0.5);
    const out = new Float64Array(x.length);
    const staged = stageOperands(plan('vectorize', [x.length], [view(x, 0, [1])], [view(out, 0, [1])]), new StagingArenas(), undefined, true);
    const [input, output] = staged.data as Float64Array[];
    expect(input![x.length - 1]).toBe(0); // not copied yet
    await staged.copyInYielding();
    expect([...input!.subarray(0, 4)]).toEqual([0, 0.5, 1, 1.5]);
    expect(input![x.length - 1]).toBe(x[x.length - 1]);
    for (let i = 0; i < x.length; i++) output![i] = input![i]! * 2;
    await staged.finishYielding();
    expect(out[x.length - 1]).toBe(2 * x[x.length - 1]!);
    expect(out.every((v, i) => v === 2 * x[i]!)).toBe(true);
  });

  it('uses operands in shared memory in place, and copies nothing for them', () => {
    const x = sharedArray(10, 'float32');
    const out = sharedArray(10, 'float32');
    const staged = stageOperands(plan('vectorize', [10], [view(x, 0, [1])], [view(out, 0, [1])]), new StagingArenas());
    expect(staged.data[0]).toBe(x);
    expect(staged.data[1]).toBe(out);
    expect(staged.offset).toEqual([0, 0]);
  });

  it('copies only the elements an operand reaches (a reversed, strided window of a large array)', () => {
    const big = Float64Array.from({ length: 1_000_000 }, (_, i) => i);
    // Elements 500_010, 500_007, …, 500_001 (4 loop indices, stride −3), each with a core slice of 2 (stride 1).
    const input = view(big, 500_010, [-3], { shape: [2], strides: [1] });
    const staged = stageOperands(plan('guvectorize', [4], [input], []), new StagingArenas());
    const data = staged.data[0] as Float64Array;
    expect(isShared(data)).toBe(true);
    expect(data.length).toBe(500_011 - 500_001 + 1);
    expect([...data]).toEqual([...big.subarray(500_001, 500_012)]);
    // The runner indexes the staged copy with the same strides from the new offset.
    expect(data[staged.offset[0]!]).toBe(500_010);
    staged.finish();
  });

  it('stages an input and an output over the same array once, so an in-place call stays in place', () => {
    const rows = Float32Array.from({ length: 12 }, (_, i) => i);
    const input = view(rows, 0, [4], { shape: [4], strides: [1] });
    const output = view(rows, 0, [4], { shape: [4], strides: [1] });
    const staged = stageOperands(plan('guvectorize', [3], [input], [output]), new StagingArenas());
    const [a, b] = staged.data as Float32Array[];
    expect(a!.buffer).toBe(b!.buffer);
    expect(a!.byteOffset).toBe(b!.byteOffset);
    b![5] = -1;
    staged.finish();
    expect(rows[5]).toBe(-1);
  });

  it('keeps two dtypes viewing the same bytes aliased', () => {
    const buffer = new ArrayBuffer(64);
    const asFloat = new Float32Array(buffer, 8, 8);
    const asBits = new Uint32Array(buffer, 16, 4);
    const staged = stageOperands(plan('vectorize', [4], [view(asFloat, 0, [2])], [view(asBits, 0, [1])]), new StagingArenas());
    const f = staged.data[0] as Float32Array;
    f[staged.offset[0]! + 4] = 1; // asFloat[4] is the same bytes as asBits[2]
    staged.finish();
    expect(asBits[2]).toBe(0x3f800000);
  });

  it('copies back only the range an output reaches, leaving the rest of its array alone', () => {
    const out = new Float32Array(100).fill(7);
    const staged = stageOperands(plan('vectorize', [5], [], [view(out, 20, [2])]), new StagingArenas());
    const data = staged.data[0] as Float32Array;
    expect(data.length).toBe(9);
    data.fill(1);
    out[0] = 3; // outside the range: must survive finish()
    staged.finish();
    expect(out[0]).toBe(3);
    expect([...out.subarray(19, 30)]).toEqual([7, 1, 1, 1, 1, 1, 1, 1, 1, 1, 7]);
  });

  it('does not copy in a vectorize output that every loop index writes, but does for guvectorize', () => {
    for (const kind of ['vectorize', 'guvectorize'] as const) {
      const out = new Float32Array(16).fill(7);
      const staged = stageOperands(plan(kind, [16], [], [view(out, 0, [1], kind === 'guvectorize' ? { shape: [1], strides: [1] } : undefined)]), new StagingArenas());
      expect((staged.data[0] as Float32Array)[3]).toBe(kind === 'vectorize' ? 0 : 7);
      staged.finish();
    }
  });

  it('reuses an arena: the same call stages to the same memory', () => {
    const arenas = new StagingArenas();
    const x = new Float32Array(1000);
    const first = stageOperands(plan('vectorize', [1000], [view(x, 0, [1])], []), arenas);
    const buffer = (first.data[0] as Float32Array).buffer;
    first.finish();
    const second = stageOperands(plan('vectorize', [1000], [view(x, 0, [1])], []), arenas);
    expect((second.data[0] as Float32Array).buffer).toBe(buffer);
    second.finish();
  });
});

describe('canSplitLoop', () => {
  const data = () => new Float64Array(100);
  it.each([
    { what: 'a dense output', loop: [10], out: [1], core: undefined, split: true },
    { what: 'a reversed output', loop: [10], out: [-1], core: undefined, split: true },
    { what: 'a transposed output', loop: [3, 4], out: [1, 3], core: undefined, split: true },
    { what: 'an output with stride 0 (loop indices share an element)', loop: [10], out: [0], core: undefined, split: false },
    { what: 'rows that overlap (stride 2, rows of 3)', loop: [5], out: [2], core: { shape: [3], strides: [1] }, split: false },
    { what: 'rows that touch but do not overlap', loop: [5], out: [3], core: { shape: [3], strides: [1] }, split: true },
  ])('$what: $split', ({ loop, out, core, split }) => {
    expect(canSplitLoop(plan(core ? 'guvectorize' : 'vectorize', loop, [], [view(data(), 50, out, core)]))).toBe(split);
  });

  it('refuses two outputs over the same memory, and accepts an input that is the output itself', () => {
    const a = data();
    expect(canSplitLoop(plan('vectorize', [10], [], [view(a, 0, [1]), view(a, 5, [1])]))).toBe(false);
    expect(canSplitLoop(plan('guvectorize', [10], [view(a, 0, [2], { shape: [2], strides: [1] })], [view(a, 0, [2], { shape: [2], strides: [1] })]))).toBe(true);
    // The same array read with wider rows than the output's: row i's reads reach row i+1's writes.
    expect(canSplitLoop(plan('guvectorize', [10], [view(a, 0, [2], { shape: [3], strides: [1] })], [view(a, 0, [2], { shape: [2], strides: [1] })]))).toBe(false);
  });
});

describe('chunk copies in engine trials', () => {
  it("count in the time of the turn whose chunks make them: a trial weighs each candidate's staging copies, clears included", () => {
    // A clock that moves only when work is done: 1 ms per chunk of the kernel, 3 ms per copy or clear.
    let now = 0;
    const clock = vi.spyOn(performance, 'now').mockImplementation(() => now);
    /** Bytes whose set and fill take 3 ms on the clock. */
    class SlowBytes extends Uint8Array<ArrayBufferLike> {
      override set(...args: Parameters<Uint8Array['set']>): void {
        now += 3;
        super.set(...args);
      }
      override fill(...args: Parameters<Uint8Array['fill']>): this {
        now += 3;
        return super.fill(...args);
      }
    }
    try {
      const rows = 8;
      const caller = new Uint8Array(new SharedArrayBuffer(rows * 4)).fill(9);
      const staged = new SlowBytes(new SharedArrayBuffer(rows * 4));
      const back = new SlowBytes(new SharedArrayBuffer(rows * 4));
      const copies = [
        { from: caller, to: staged, bytesPerIndex: 4, when: 'before' as const },
        { to: staged, bytesPerIndex: 4, when: 'clear' as const },
        { from: staged, to: back, bytesPerIndex: 4, when: 'after' as const },
      ];
      const kernel = (_args: unknown, start: number) => {
        now += 1;
        staged[start * 4] = 100 + start;
      };
      const control = ControlBlock.create(1);
      const { int32, float64 } = control;
      int32[Slot.chunks] = rows;
      int32[Slot.errorChunk] = rows;
      int32[Slot.inputsReady] = rows;
      float64[TOTAL_F64] = rows;
      float64[CHUNK_SIZE_F64] = 1;
      const timed: [number, number, number][] = [];
      const turns = { runners: [kernel, copyingRunner(kernel, copies)], args: [{}, {}] as never, timed: (turn: number, seconds: number, indices: number) => void timed.push([turn, seconds, indices]) };
      runClaimedChunks(control, kernel, {} as never, () => {}, turns);
      // Chunk c runs turn c mod 2: the copying turn's chunks take the kernel's 1 ms and its three copies' 9.
      expect(timed).toEqual(Array.from({ length: rows }, (_, c) => [c % 2, c % 2 ? 0.01 : 0.001, 1]));
      // The copying turn's rows: copied in (9s), cleared, written by the kernel, copied back.
      expect([...back]).toEqual(Array.from({ length: rows * 4 }, (_, i) => (i % 4 === 0 && (i / 4) % 2 ? 100 + i / 4 : 0)));
    } finally {
      clock.mockRestore();
    }
  });
});

describe('what a worker lets go after a job with chunk copies', () => {
  it("counts each caller's array once, and never the staged side (memory no collection frees)", () => {
    const rows = 64;
    const shared = () => new Float64Array(new SharedArrayBuffer(rows * 32));
    const rowView = (d: Float64Array) => view(d, 0, [4], { shape: [4], strides: [1] });
    const x = shared();
    const out = shared();
    // A shared input copied in, a fresh output cleared and copied back: the two callers' arrays, once each.
    const p = plan('guvectorize', [rows], [rowView(x)], [{ ...rowView(out), fresh: true }]);
    const copies = stageOperands(p, new StagingArenas(), () => false, true).chunkCopies(p);
    expect(copies.map((c) => c.when)).toEqual(['before', 'clear', 'after']);
    expect(callerBytes(copies)).toBe(2 * rows * 32);
    // An output the kernel may read, copied in and back: one array, counted once.
    const given = shared();
    const q = plan('guvectorize', [rows], [rowView(x)], [rowView(given)]);
    const both = stageOperands(q, new StagingArenas(), () => false, true).chunkCopies(q);
    expect(both.map((c) => c.when)).toEqual(['before', 'before', 'after']);
    expect(callerBytes(both)).toBe(2 * rows * 32);
  });
});

