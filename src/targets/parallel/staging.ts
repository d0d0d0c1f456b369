/**
 * Operands in shared memory, and what an operand reaches.
 *
 * Workers can only read and write `SharedArrayBuffer` memory. An operand already there is used in
 * place; any other is staged: the byte range it actually reaches is copied into a shared arena
 * (inputs, and outputs whose old contents can show through) and copied back after the call
 * (outputs). Operands over the same buffer are staged together, so in-place calls (`out` = an
 * input) and views of one buffer under two dtypes alias in the arena exactly as they did outside.
 * An awaited call copies inputs read in loop order while the workers compute, and results back as
 * chunks are done (`CopyPipeline`);
 * an operand whose own memory is shared but not where the runner reads (a `SharedArrayBuffer`
 * outside the Wasm memory, as a parallel call's result is) is copied by the threads themselves,
 * chunk by chunk (`chunkCopies`).
 *
 * The footprint analysis also decides whether a call may be split at all: chunks run in any order,
 * so no two loop indices may write the same element (a broadcast `out`, rows that overlap) — such
 * calls run on the calling thread, which gives the cpu target's answer by definition.
 */
import type { TypedArray, TypedArrayConstructor } from '../../dtypes.js';
import type { CallPlan, OperandView } from '../../plan.js';
import { operandReach as reachOf, type OperandReach as Reach } from '../../layout.js';
import { isShared } from '../../shared-memory.js';
import { probes } from '../../probes.js';
import { type ChunkCopy, INPUTS_FAILED } from './protocol.js';

/**
 * Whether distinct loop indices reach disjoint elements, given the width of what one index reaches
 * (sufficient, not necessary: an interleaved layout that is in fact disjoint is refused too, and
 * then runs on the calling thread). Sorting the dimensions by stride, each stride must step over
 * everything the smaller ones span.
 */
function loopIndicesDisjoint(loopShape: readonly number[], loopStrides: readonly number[], width: number): boolean {
  const dims: { stride: number; count: number }[] = [];
  for (let d = 0; d < loopShape.length; d++) {
    if (loopShape[d]! > 1) dims.push({ stride: Math.abs(loopStrides[d]!), count: loopShape[d]! });
  }
  dims.sort((a, b) => a.stride - b.stride);
  let extent = width;
  for (const { stride, count } of dims) {
    if (stride < extent) return false;
    extent += stride * (count - 1);
  }
  return true;
}

function bytesPerElement(view: OperandView): number {
  return (view.data as TypedArray).BYTES_PER_ELEMENT;
}

/**
 * Whether the loop space of a call can be split into chunks that run in any order and still give
 * exactly what the cpu target gives: every output's loop indices write disjoint elements, and no
 * other operand reaches an output's memory except the very same view (in place, as the front
 * leaves it), whose reach is then counted into the output's.
 */
export function canSplitLoop(plan: CallPlan): boolean {
  const { operands, loopShape, nin } = plan;
  for (let k = nin; k < operands.length; k++) {
    const out = operands[k]!;
    const outReach = reachOf(out, loopShape);
    if (!outReach) continue;
    let { coreLow, coreHigh } = outReach;
    const outBytes = byteRange(out, outReach);
    for (let j = 0; j < operands.length; j++) {
      const other = operands[j]!;
      if (j === k || other.scalar !== undefined || (other.data as TypedArray).buffer !== (out.data as TypedArray).buffer) continue;
      const reach = reachOf(other, loopShape);
      if (!reach) continue;
      const bytes = byteRange(other, reach);
      if (bytes.end <= outBytes.start || outBytes.end <= bytes.start) continue;
      const sameIndexing = j < nin && other.data === out.data && other.offset === out.offset && other.loopStrides.every((s, d) => s === out.loopStrides[d]);
      if (!sameIndexing) return false;
      coreLow = Math.min(coreLow, reach.coreLow);
      coreHigh = Math.max(coreHigh, reach.coreHigh);
    }
    if (!loopIndicesDisjoint(loopShape, out.loopStrides, coreHigh - coreLow + 1)) return false;
  }
  return true;
}

function byteRange(view: OperandView, reach: Reach): { start: number; end: number } {
  const data = view.data as TypedArray;
  const size = data.BYTES_PER_ELEMENT;
  return { start: data.byteOffset + (view.offset + reach.low) * size, end: data.byteOffset + (view.offset + reach.high + 1) * size };
}

/**
 * Whether a vectorize output writes every element between the lowest and highest it reaches, so
 * that its old contents cannot show through and need not be copied in.
 */
function writesEveryElement(view: OperandView, loopShape: readonly number[], reach: Reach): boolean {
  const dims = loopShape.map((count, d) => ({ stride: Math.abs(view.loopStrides[d]!), count })).filter((d) => d.count > 1);
  dims.sort((a, b) => a.stride - b.stride);
  let extent = 1;
  for (const { stride, count } of dims) {
    if (stride !== extent) return false;
    extent *= count;
  }
  return extent === reach.high - reach.low + 1;
}

/**
 * The bytes one loop index of a 1-D loop reaches, where a staged range is read or written in loop
 * order — one operand alone in it, whose loop index i reaches only within [i·stride, (i+1)·stride)
 * of its elements (element i of a vectorize call; row i of contiguous rows), or a loop of one index
 * (one long row: whatever its stride, often 0, the index reaches the whole range) — else undefined.
 */
function loopOrderBytes(range: StagedRange, plan: CallPlan): number | undefined {
  if (plan.loopShape.length !== 1 || range.members.length !== 1) return undefined;
  const { view, reach } = range.members[0]!;
  if (reach.low !== 0) return undefined;
  if (plan.loopShape[0] === 1) return (reach.high + 1) * bytesPerElement(view);
  const stride = view.loopStrides[0]!;
  return stride > 0 && reach.coreHigh < stride ? stride * bytesPerElement(view) : undefined;
}

/** A staging area: `buffer` from byte `base` on. */
export interface Arena {
  readonly buffer: SharedArrayBuffer;
  readonly base: number;
}

/** Where staged operands go: shared arenas (JS runners) or the Wasm memory (Wasm runners). */
export interface ArenaSource {
  /** An area of at least `bytes` bytes whose `base` is 8-byte aligned, or undefined if there is no room. */
  acquire(bytes: number): Arena | undefined;
  release(arena: Arena): void;
}

/**
 * Shared arenas for staged operands, reused call after call: a reused arena costs no page faults,
 * and the same arena at the same offsets lets workers keep their cached argument set.
 */
export class StagingArenas implements ArenaSource {
  private free: SharedArrayBuffer[] = [];

  acquire(bytes: number): Arena {
    return { buffer: this.acquireBuffer(bytes), base: 0 };
  }

  private acquireBuffer(bytes: number): SharedArrayBuffer {
    let best = -1;
    this.free.forEach((arena, i) => {
      if (arena.byteLength >= bytes && (best < 0 || arena.byteLength < this.free[best]!.byteLength)) best = i;
    });
    // A far larger arena is left for a call that needs it rather than pinned under a small one.
    if (best >= 0 && this.free[best]!.byteLength <= 4 * bytes + ARENA_GRANULE) return this.free.splice(best, 1)[0]!;
    return new SharedArrayBuffer(Math.ceil(bytes / ARENA_GRANULE) * ARENA_GRANULE);
  }

  release({ buffer: arena }: Arena): void {
    this.free.push(arena);
    if (this.free.length > MAX_FREE_ARENAS) this.free.shift();
  }

  /** Lets go of every free arena (the pool's idle trim). */
  trim(): void {
    this.free = [];
  }
}

const ARENA_GRANULE = 64 * 1024;
const MAX_FREE_ARENAS = 4;

/** One contiguous byte range of a non-shared buffer, staged as a whole. */
interface StagedRange {
  readonly buffer: ArrayBufferLike;
  start: number;
  end: number;
  copyIn: boolean;
  /**
   * Whether the caller's bytes are known zeros (an output the call allocated, alone in its range):
   * the staged copy is cleared instead of read from them (see protocol.ts `ChunkCopy`).
   */
  fresh: boolean;
  copyBack: boolean;
  /** The job's threads copy it back chunk by chunk (see `chunkCopies`). */
  copiedByChunks?: boolean;
  /** The job's threads copy it in chunk by chunk (see `chunkCopies`): the calling thread does not. */
  copiedInByChunks?: boolean;
  /** The calling thread copies it back chunk by chunk as the chunks are done (see `pipelineCopies`). */
  copiedBackByPipeline?: boolean;
  /** Byte offset of `start` in the arena. */
  at: number;
  readonly members: { readonly k: number; readonly view: OperandView; readonly reach: Reach }[];
}

/** A copy between a caller's array and the arena: `to.set(from)`; without `from`, `to.fill(0)`. */
interface Copy {
  readonly from?: Uint8Array;
  readonly to: Uint8Array;
}

/** A copy made by loop index: index i's bytes are [i·bytesPerIndex, (i+1)·bytesPerIndex). */
interface IndexedCopy {
  readonly from: Uint8Array;
  readonly to: Uint8Array;
  readonly bytesPerIndex: number;
}

/** Makes bytes [start, end) of `copy`. */
function copySlice({ from, to }: Copy, start: number, end: number): void {
  if (from) to.set(from.subarray(start, end), start);
  else to.fill(0, start, end);
}

/** Copies are made in slices of this many bytes, so that an async copy can yield between them. */
const SLICE_BYTES = 1 << 20;
/** An async copy yields to the event loop once it has copied for this long. */
const YIELD_AFTER_MS = 2;
/** The input pipeline's slice: small enough that a slice into fresh arena pages takes well under a millisecond. */
const PIPELINE_SLICE_BYTES = 1 << 18;

/** Resumes after the event loop has run what was waiting (timers, I/O), without a timer's clamp. */
export function yieldToEventLoop(): Promise<void> {
  const immediate = (globalThis as { setImmediate?: (f: () => void) => unknown }).setImmediate;
  if (immediate) return new Promise((resolve) => immediate(resolve));
  // A page: a message lets the event loop run without setTimeout's 4 ms floor for nested timers.
  type Port = { onmessage: (() => void) | null; postMessage(m: unknown): void; close(): void };
  const { port1, port2 } = new MessageChannel() as unknown as { port1: Port; port2: Port };
  return new Promise((resolve) => {
    port1.onmessage = () => {
      port1.close();
      resolve();
    };
    port2.postMessage(null);
  });
}

function copyAll(copies: readonly Copy[]): void {
  for (const copy of copies) copySlice(copy, 0, copy.to.length);
}

/**
 * The copies, in slices, yielding to the event loop every {@link YIELD_AFTER_MS} ms: staging a large
 * ordinary array for an awaited call (64 MiB: tens of ms) must not freeze the calling thread's
 * event loop. The caller's arrays are read (or written) while the call runs, as the workers read
 * shared inputs while it runs.
 */
async function copyYielding(copies: readonly Copy[]): Promise<void> {
  let since = performance.now();
  for (const copy of copies) {
    const length = copy.to.length;
    for (let at = 0; at < length; at += SLICE_BYTES) {
      copySlice(copy, at, Math.min(at + SLICE_BYTES, length));
      if (performance.now() - since >= YIELD_AFTER_MS) {
        await yieldToEventLoop();
        since = performance.now();
      }
    }
  }
}

/** Operands as workers see them, and the copies that bring them in and results back. */
export class StagedOperands {
  private finished = false;

  constructor(
    /** Per operand: shared memory the runner indexes (the operand's own where it is shared). */
    readonly data: readonly ArrayLike<unknown>[],
    readonly offset: readonly number[],
    /** Whether any operand's data was replaced (else `data` and `offset` are the plan's own). */
    readonly replaced: boolean,
    private readonly ranges: readonly StagedRange[] = [],
    private readonly arena?: Arena,
    private readonly arenas?: ArenaSource,
    /** Whether the copies into the arena are still to be made (see `stageOperands`' `deferCopies`). */
    private copiesDeferred = false,
  ) {}

  /** The copies into the arena still to be made by the calling thread. */
  private takeCopiesIn(): Copy[] {
    if (!this.copiesDeferred || !this.arena) return [];
    this.copiesDeferred = false;
    const arena = this.arena;
    return this.ranges
      .filter((range) => range.copyIn && !range.copiedInByChunks)
      .map((range) => {
        const length = range.end - range.start;
        const to = new Uint8Array(arena.buffer, range.at, length);
        return range.fresh ? { to } : { from: new Uint8Array(range.buffer, range.start, length), to };
      });
  }

  /** Makes the deferred copies into the arena. */
  copyIn(): void {
    copyAll(this.takeCopiesIn());
  }

  /** Makes the deferred copies into the arena, yielding to the event loop between slices. */
  async copyInYielding(): Promise<void> {
    await copyYielding(this.takeCopiesIn());
  }

  /**
   * Takes the deferred copies into the arena as a {@link CopyPipeline}, which copies the inputs
   * chunk by chunk while the job's first chunks already run — where some input can be copied so: a
   * call over a 1-D loop, an input staged alone whose loop index i reads only within
   * [i·stride, (i+1)·stride) of its elements (element i of a vectorize call; row i of contiguous
   * rows). With `results`, outputs staged so (and copied back by the calling thread) are copied
   * back chunk by chunk as the chunks are done, too; call after {@link chunkCopies}. Undefined
   * where nothing can be copied chunk by chunk (then `copyInYielding` copies the inputs whole).
   */
  pipelineCopies(plan: CallPlan, results: boolean): CopyPipeline | undefined {
    if (!this.arena || plan.loopShape.length !== 1) return undefined;
    const arena = this.arena;
    const whole: Copy[] = [];
    const byIndex: IndexedCopy[] = [];
    const back: IndexedCopy[] = [];
    const copiesIn = this.copiesDeferred;
    for (const range of this.ranges) {
      const length = range.end - range.start;
      const caller = new Uint8Array(range.buffer, range.start, length);
      const staged = new Uint8Array(arena.buffer, range.at, length);
      const member = range.members[0]!;
      const bytesPerIndex = loopOrderBytes(range, plan);
      if (results && range.copyBack && !range.copiedByChunks && !range.copiedInByChunks && bytesPerIndex !== undefined) {
        back.push({ from: staged, to: caller, bytesPerIndex });
        range.copiedBackByPipeline = true;
      }
      if (!copiesIn || !range.copyIn || range.copiedInByChunks) continue;
      if (member.k < plan.nin && bytesPerIndex !== undefined) byIndex.push({ from: caller, to: staged, bytesPerIndex });
      else whole.push(range.fresh ? { to: staged } : { from: caller, to: staged });
    }
    if (byIndex.length === 0 && back.length === 0) {
      for (const range of this.ranges) range.copiedBackByPipeline = false;
      return undefined;
    }
    this.copiesDeferred = false;
    return new CopyPipeline(whole, byIndex, back);
  }

  /**
   * The staged operands that the job's threads can copy themselves, each chunk's part as they run
   * it ({@link ChunkCopy}): those whose own memory is shared (so a worker reaches it: a
   * `SharedArrayBuffer` outside the memory the runner indexes, such as an output the library
   * allocated for an earlier parallel call) and read or written in loop order. Such a range is
   * copied in chunk by chunk before each chunk runs (where it must be copied in and that copy is
   * still to be made) and back after it (outputs); the calling thread then leaves those copies
   * out — after a failure too, see `finish`.
   *
   * @param copyIn - whether threads may copy operands in (else only outputs written whole are
   *   copied back, as before thread copies in existed; A/B benchmarks turn it off)
   */
  chunkCopies(plan: CallPlan, copyIn = true): ChunkCopy[] {
    const copies: ChunkCopy[] = [];
    if (!this.arena) return copies;
    for (const range of this.ranges) {
      const bytesPerIndex = isShared(range.members[0]!.view.data as TypedArray) ? loopOrderBytes(range, plan) : undefined;
      if (bytesPerIndex === undefined) continue;
      const takeIn = range.copyIn && this.copiesDeferred && copyIn;
      if (range.copyIn && !takeIn) continue; // copied in whole by the calling thread: back by it too
      const length = range.end - range.start;
      const caller = new Uint8Array(range.buffer, range.start, length);
      const staged = new Uint8Array(this.arena.buffer, range.at, length);
      if (takeIn) {
        range.copiedInByChunks = true;
        copies.push(range.fresh ? { to: staged, bytesPerIndex, when: 'clear' } : { from: caller, to: staged, bytesPerIndex, when: 'before' });
      }
      if (range.copyBack) {
        range.copiedByChunks = true;
        copies.push({ from: staged, to: caller, bytesPerIndex, when: 'after' });
      }
    }
    return copies;
  }

  /**
   * The operands whose copies the job's threads make chunk by chunk (after {@link chunkCopies}):
   * a runner that reads and writes them where they are (shared memory) needs none of it.
   */
  copiedByThreads(): Set<number> {
    const operands = new Set<number>();
    for (const range of this.ranges) {
      if (range.copiedByChunks || range.copiedInByChunks) for (const { k } of range.members) operands.add(k);
    }
    return operands;
  }

  /**
   * Copies outputs back to where the caller has them and returns the arena (once).
   *
   * @param completed - whether the job ran every chunk (then the threads copied back their chunks'
   *   `chunkCopies`); after a failure everything is copied back here, as the arena holds it, except
   *   ranges the threads copied in and the results of chunks that did not run, where `pipeline`
   *   knows them
   * @param pipeline - the job's {@link CopyPipeline}, cancelled, where it had one: it says what is
   *   left of the results it copies back (`resultsLeft`)
   */
  finish(completed = false, pipeline?: CopyPipeline): void {
    const copies = this.takeCopiesBack(completed, pipeline);
    if (!copies) return;
    try {
      copyAll(copies);
    } finally {
      this.arenas!.release(this.arena!);
    }
  }

  /** {@link finish}, yielding to the event loop between slices. */
  async finishYielding(completed = false, pipeline?: CopyPipeline): Promise<void> {
    const copies = this.takeCopiesBack(completed, pipeline);
    if (!copies) return;
    try {
      await copyYielding(copies);
    } finally {
      this.arenas!.release(this.arena!);
    }
  }

  private takeCopiesBack(completed: boolean, pipeline: CopyPipeline | undefined): Copy[] | undefined {
    if (this.finished || !this.arena) return undefined;
    this.finished = true;
    const arena = this.arena;
    const copies: Copy[] = this.ranges
      // A range the threads copied in holds the caller's data only for the chunks that ran, each
      // of which its thread copied back: nothing of it is copied here, even after a failure.
      .filter((range) => range.copyBack && !range.copiedInByChunks && !(completed && range.copiedByChunks) && !(pipeline && range.copiedBackByPipeline))
      .map((range) => {
        const length = range.end - range.start;
        return { from: new Uint8Array(arena.buffer, range.at, length), to: new Uint8Array(range.buffer, range.start, length) };
      });
    if (pipeline) copies.push(...pipeline.resultsLeft(completed));
    return copies;
  }

  /** Returns the arena without copying anything back (the call did not run here). */
  abandon(): void {
    if (this.finished || !this.arena) return;
    this.finished = true;
    this.arenas!.release(this.arena);
  }
}

/**
 * What a {@link CopyPipeline} learns of its job's chunks while they run (the pool's control block,
 * `Slot.trackChunks`); read only while the job runs.
 */
export interface ChunkProgress {
  /** Whether chunk `chunk` ran. */
  done(chunk: number): boolean;
  /** Chunks that ran so far. */
  count(): number;
  /** Resolves once the count is no longer `seen` (or after a while: the caller looks again). */
  changed(seen: number): Promise<unknown>;
}

/** How a job is cut (pool.ts `chunking`), and how the pipeline tells its threads that chunks may run. */
export interface PipelineLayout {
  readonly chunks: number;
  readonly chunkSize: number;
  readonly total: number;
  /** Tells the threads that chunks below `ready` may run. */
  readonly open: (ready: number) => void;
  /** Where the job tracks its chunks: the results are copied back as they are done. */
  readonly progress?: ChunkProgress | undefined;
}

/**
 * The calling thread's copies for a job, made while it runs: first the copies no chunk can do
 * without (`whole`), then the inputs read in loop order (`inputs`) chunk by chunk, opening each
 * chunk to the workers as soon as its inputs are in (protocol.ts `Slot.inputsReady`); then, in an
 * awaited call, the results of chunks already done (`results`: outputs written in loop order, outside
 * shared memory) back to the caller's array while later chunks still run. Only the thread that owns
 * an ordinary `ArrayBuffer` can touch it, so all of this is the calling thread's: its copies overlap
 * the workers' compute (and their first touch of fresh pages) instead of preceding and following it.
 *
 * Copies are made in slices, yielding to the event loop every {@link YIELD_AFTER_MS} ms, as
 * `copyYielding` does. A sync call about to block on this job makes the input copies at once
 * (`finishNow`): a blocked thread would never make them. Results left when the job ends are copied
 * by {@link StagedOperands.finishYielding} (`resultsLeft`).
 */
export class CopyPipeline {
  private chunk = 0;
  /** The next loop index to copy (within `chunk`). */
  private index = 0;
  private wholeDone = 0;
  /** Bytes of `whole[wholeDone]` copied so far. */
  private wholeAt = 0;
  private layout: PipelineLayout | undefined;
  /** Per chunk, how many of its loop indices' results are copied back (from its start). */
  private resultsCopied: Int32Array = new Int32Array(0);
  /** Chunks below this have every result copied back. */
  private resultsBelow = 0;
  /** Per chunk, whether it ran, as the job ended (where it tracked its chunks): see `cancel`. */
  private ran: Uint8Array | undefined;
  private stopped = false;
  private wake: (() => void) | undefined;
  /** The copy's failure (an input detached while the call ran): the job's later chunks were skipped. */
  error: unknown;
  /** Resolves when every copy is made, or on failure or `cancel`. */
  finished: Promise<void> = Promise.resolve();

  /** Loop indices per slice of the input copies: {@link PIPELINE_SLICE_BYTES} over the bytes one index copies. */
  private readonly sliceIndices: number;
  /** The same for the results. */
  private readonly resultSliceIndices: number;

  constructor(
    private readonly whole: readonly Copy[],
    private readonly inputs: readonly IndexedCopy[],
    /** Results copied back chunk by chunk (only where the job tracks its chunks: `progress`). */
    readonly results: readonly IndexedCopy[] = [],
  ) {
    const perSlice = (copies: readonly IndexedCopy[]) => Math.max(1, Math.floor(PIPELINE_SLICE_BYTES / Math.max(1, copies.reduce((sum, c) => sum + c.bytesPerIndex, 0))));
    this.sliceIndices = perSlice(inputs);
    this.resultSliceIndices = perSlice(results);
  }

  /** Starts copying for a job that has begun, cut as `layout` says. */
  begin(layout: PipelineLayout): void {
    this.layout = layout;
    this.resultsCopied = new Int32Array(layout.chunks);
    this.resultsBelow = 0;
    this.ran = undefined;
    this.stopped = false; // a job that found no worker was finished (cancelling this) and started again
    this.finished = this.drive();
  }

  /**
   * Whether the copies every chunk needs are made — among them ranges an input shares with an
   * output (in place), which the call copies back: not before they were copied in.
   */
  get sharedRangesIn(): boolean {
    return this.wholeDone === this.whole.length;
  }

  /** Makes every remaining input copy now (on the calling thread, without yielding). */
  finishNow(): void {
    if (this.layout && !this.stopped) this.copyInputs(Infinity);
  }

  /**
   * Stops copying: the job ended (the pool calls this as it ends, while the control block still
   * tells which of its chunks ran) or will not run. What is left is copied by the call's finish.
   */
  cancel(): void {
    const progress = this.layout?.progress;
    if (progress && !this.stopped && this.results.length) this.ran = Uint8Array.from({ length: this.layout!.chunks }, (_, c) => (progress.done(c) ? 1 : 0));
    this.stopped = true;
    this.wake?.();
  }

  /**
   * The results not yet copied back, as whole copies, once the pipeline is cancelled: what the
   * call's finish copies. After a job that ran every chunk, all of them; after a failure, those of
   * the chunks that ran — an output's other elements stay as they were — or, where the job did not
   * track its chunks, all of them as the arena holds them (as for any other staged output).
   *
   * @param completed - whether the job ran every chunk
   */
  resultsLeft(completed: boolean): Copy[] {
    const left: Copy[] = [];
    if (!this.layout) return this.results.map(({ from, to }) => ({ from, to }));
    const { chunks, chunkSize, total } = this.layout;
    const wanted = (c: number) => completed || !this.ran || this.ran[c] === 1;
    for (let c = this.resultsBelow; c < chunks; c++) {
      const start = c * chunkSize + this.resultsCopied[c]!;
      let end = Math.min((c + 1) * chunkSize, total);
      if (start >= end || !wanted(c)) continue;
      // Chunks none of whose results were copied join the run.
      while (c + 1 < chunks && this.resultsCopied[c + 1] === 0 && wanted(c + 1)) end = Math.min((++c + 1) * chunkSize, total);
      for (const { from, to, bytesPerIndex: b } of this.results) left.push({ from: from.subarray(start * b, end * b), to: to.subarray(start * b, end * b) });
    }
    return left;
  }

  private async drive(): Promise<void> {
    // The call's own planning has just run on this thread: let the event loop in before copying.
    if (this.whole.length || this.inputs.length) await yieldToEventLoop();
    while (!this.stopped && this.copyInputs(YIELD_AFTER_MS)) await yieldToEventLoop();
    const progress = this.layout!.progress;
    if (!progress || this.results.length === 0) return;
    while (!this.stopped) {
      const seen = progress.count();
      let more: ReturnType<CopyPipeline['copyResults']>;
      try {
        more = this.copyResults(progress, YIELD_AFTER_MS);
      } catch {
        // The caller's output was detached meanwhile: the call's finish copies the rest, and fails
        // as a call whose output is detached fails.
        return;
      }
      if (more === 'done') return;
      if (more === 'yield') await yieldToEventLoop();
      else await Promise.race([progress.changed(seen), new Promise<void>((resolve) => (this.wake = resolve))]);
    }
  }

  /**
   * Copies inputs for up to `budgetMs`, in slices of at most {@link PIPELINE_SLICE_BYTES} so that one
   * step never overruns its budget by more than a slice (a chunk of a large call is megabytes, and
   * the first touch of the arena's fresh pages makes its copy slow); @returns whether copies remain.
   */
  private copyInputs(budgetMs: number): boolean {
    const { chunks, chunkSize, total, open } = this.layout!;
    const until = performance.now() + budgetMs;
    try {
      while (this.wholeDone < this.whole.length) {
        const copy = this.whole[this.wholeDone]!;
        const end = Math.min(this.wholeAt + PIPELINE_SLICE_BYTES, copy.to.length);
        copySlice(copy, this.wholeAt, end);
        this.wholeAt = end;
        if (end === copy.to.length) {
          this.wholeDone++;
          this.wholeAt = 0;
        }
        if (performance.now() >= until) return true;
      }
      if (this.inputs.length === 0 && this.chunk < chunks) open((this.chunk = chunks));
      while (this.chunk < chunks) {
        const chunkEnd = Math.min((this.chunk + 1) * chunkSize, total);
        const start = Math.max(this.chunk * chunkSize, this.index);
        const end = Math.min(start + this.sliceIndices, chunkEnd);
        for (const { from, to, bytesPerIndex: b } of this.inputs) to.set(from.subarray(start * b, end * b), start * b);
        this.index = end;
        if (end === chunkEnd) open(++this.chunk);
        if (performance.now() >= until && this.chunk < chunks) return true;
      }
      return false;
    } catch (error) {
      this.error = error;
      this.stopped = true;
      open(INPUTS_FAILED);
      return false;
    }
  }

  /**
   * Copies back the results of chunks that are done, for up to `budgetMs`, in slices as
   * {@link copyInputs} does; @returns `done` once every result is back, `yield` when the budget ran
   * out, `wait` when the chunks left have not run yet.
   */
  private copyResults(progress: ChunkProgress, budgetMs: number): 'done' | 'yield' | 'wait' {
    const { chunks, chunkSize, total } = this.layout!;
    const until = performance.now() + budgetMs;
    let pending = false;
    for (let c = this.resultsBelow; c < chunks; c++) {
      const first = c * chunkSize;
      const length = Math.min(first + chunkSize, total) - first;
      if (this.resultsCopied[c] === length) continue;
      if (!progress.done(c)) {
        pending = true;
        continue;
      }
      while (this.resultsCopied[c]! < length) {
        const start = first + this.resultsCopied[c]!;
        const end = Math.min(start + this.resultSliceIndices, first + length);
        for (const { from, to, bytesPerIndex: b } of this.results) to.set(from.subarray(start * b, end * b), start * b);
        this.resultsCopied[c] = end - first;
        if (end === first + length) probes.resultChunkCopiedEarly?.();
        if (performance.now() >= until) return 'yield';
      }
      if (!pending) this.resultsBelow = c + 1;
    }
    return pending ? 'wait' : 'done';
  }
}

const emptyShared = new Map<TypedArrayConstructor, TypedArray>();

/**
 * Stages the operands of a call that are not in shared memory (scalar arguments are passed by
 * value and never staged).
 *
 * @param plan - the call; its views are not changed
 * @param arenas - where to take shared memory from
 * @param inPlace - which arrays the runner uses where they are (the JS runner: any shared array;
 *   the Wasm runner: arrays in Wasm memory)
 * @param deferCopies - leave the copies into the arena to `copyIn()` or `copyInYielding()`
 * @returns the data and offsets for the runner's arguments, and `finish()` for after the call;
 *   undefined when `arenas` has no room
 */
export function stageOperands(plan: CallPlan, arenas: StagingArenas, inPlace?: (array: TypedArray) => boolean, deferCopies?: boolean): StagedOperands;
export function stageOperands(plan: CallPlan, arenas: ArenaSource, inPlace?: (array: TypedArray) => boolean, deferCopies?: boolean): StagedOperands | undefined;
export function stageOperands(plan: CallPlan, arenas: ArenaSource, inPlace: (array: TypedArray) => boolean = isShared, deferCopies = false): StagedOperands | undefined {
  const { operands, loopShape, nin } = plan;
  const data: ArrayLike<unknown>[] = operands.map((o) => o.data as TypedArray);
  const offset = operands.map((o) => o.offset);
  const byBuffer = new Map<ArrayBufferLike, StagedRange[]>();
  let replaced = false;
  for (let k = 0; k < operands.length; k++) {
    const view = operands[k]!;
    const array = view.data as TypedArray;
    if (view.scalar !== undefined || inPlace(array)) continue;
    const reach = reachOf(view, loopShape);
    if (!reach) {
      // Reaches nothing: any shared array of the right type will do.
      const Type = array.constructor as TypedArrayConstructor;
      let empty = emptyShared.get(Type);
      if (!empty) emptyShared.set(Type, (empty = new Type(new SharedArrayBuffer(0))));
      data[k] = empty;
      replaced = true;
      continue;
    }
    const { start, end } = byteRange(view, reach);
    const isOutput = k >= nin;
    const copyIn = !isOutput || plan.kind !== 'vectorize' || !writesEveryElement(view, loopShape, reach);
    let ranges = byBuffer.get(array.buffer);
    if (!ranges) byBuffer.set(array.buffer, (ranges = []));
    ranges.push({ buffer: array.buffer, start, end, copyIn, fresh: isOutput && view.fresh === true, copyBack: isOutput, at: 0, members: [{ k, view, reach }] });
  }
  if (byBuffer.size === 0) return new StagedOperands(data, offset, replaced);

  // Overlapping ranges of one buffer become one, which keeps aliasing between operands intact.
  const staged: StagedRange[] = [];
  for (const ranges of byBuffer.values()) {
    ranges.sort((a, b) => a.start - b.start);
    let current = ranges[0]!;
    for (const range of ranges.slice(1)) {
      if (range.start < current.end) {
        current.end = Math.max(current.end, range.end);
        // Whatever the members, the merged range travels whole: an output's skipped copy-in would
        // now leave another member's bytes behind.
        current.copyIn = true;
        current.fresh &&= range.fresh;
        current.copyBack ||= range.copyBack;
        current.members.push(...range.members);
      } else {
        staged.push(current);
        current = range;
      }
    }
    staged.push(current);
  }

  // Each range keeps its start's position modulo 8, so every typed array view stays aligned.
  let bytes = 0;
  for (const range of staged) {
    range.at = Math.ceil(bytes / 8) * 8 + (range.start % 8);
    bytes = range.at + (range.end - range.start);
  }
  const arena = arenas.acquire(bytes);
  if (!arena) return undefined;
  // From here on `at` is the range's byte offset in the arena's buffer.
  for (const range of staged) range.at += arena.base;
  for (const range of staged) {
    for (const { k, view, reach } of range.members) {
      const array = view.data as TypedArray;
      const size = bytesPerElement(view);
      const first = view.offset + reach.low;
      const Type = array.constructor as TypedArrayConstructor;
      data[k] = new Type(arena.buffer, range.at + (array.byteOffset + first * size - range.start), reach.high - reach.low + 1);
      offset[k] = -reach.low;
    }
  }
  const result = new StagedOperands(data, offset, true, staged, arena, arenas, true);
  if (!deferCopies) result.copyIn();
  return result;
}
