/**
 * What the calling thread and the workers share: the layout of the control block (one
 * `SharedArrayBuffer` per pool), the messages posted to workers, and how a worker's error crosses
 * to the calling thread through shared memory.
 *
 * Why shared memory and not messages: a synchronous call blocks the calling thread in
 * `Atomics.wait`, and a blocked thread runs no message handlers. So everything a call needs back
 * (completion, the failing chunk, the error's class and message) is written into the control
 * block; messages only carry what a worker must learn once (a runner's source, the arrays of an
 * argument set), which workers read when a job starts (in Node synchronously, with
 * `receiveMessageOnPort`).
 */
import type { DType } from '../../dtypes.js';
import { failedSite, type IndexCheckSite } from '../../compiler/source-excerpt.js';
import type { Runner, RunnerArgs } from '../cpu/memory-layout.js';
import type { DriveSpec } from '../cpu/wasm/runner.js';
import type { WasmMemory, WasmModule } from '../cpu/wasm/wasm-api.js';

/**
 * A runner that is a compiled Wasm kernel: the worker instantiates `module` over `memory` (the
 * one shared Wasm memory, posted once with the module) and runs chunks through it.
 */
export interface WasmRunnerPart {
  readonly module: WasmModule;
  readonly memory: WasmMemory;
  readonly imports: readonly string[];
  readonly spec: DriveSpec;
  /** This worker's own area for the kernel's local arrays. */
  readonly scratch: number;
}

/** Int32 slots of the control block's header. */
export const Slot = {
  /** Workers taking part in the current job that have not finished it; the last one notifies. */
  remaining: 0,
  /** The next chunk to claim (`Atomics.add`); chunks are claimed in increasing order. */
  nextChunk: 1,
  chunks: 2,
  /** What the job is: {@link Command}. */
  command: 3,
  runner: 4,
  args: 5,
  /** The lowest chunk that threw; `chunks` while none has. Later chunks are skipped. */
  errorChunk: 6,
  /** 1 + the index of a worker that died while taking part in the job; 0 while none has. */
  diedWorker: 7,
  /**
   * Chunks whose inputs are in place: a thread waits before running a chunk at or above it (an
   * awaited call's thread copies ordinary inputs in chunk by chunk while the workers compute, see
   * staging.ts `CopyPipeline`). {@link INPUTS_FAILED} when the copies stopped: the rest is skipped.
   */
  inputsReady: 8,
  /**
   * 1 where the threads record every chunk they finish (`chunkDone`) for the calling thread, which
   * copies each chunk's results back to an ordinary output as soon as it is done (staging.ts
   * `CopyPipeline`); 0 otherwise.
   */
  trackChunks: 9,
  /** Chunks finished so far, where the job tracks them; bumped after each, notified every `notifyEvery`. */
  chunksDone: 10,
  /**
   * The calling thread is woken when `chunksDone` reaches a multiple of this, and at the last chunk:
   * each wake costs it a turn of its event loop (and on a busy machine, a worker its core), so it
   * copies back a few chunks' results per wake rather than one.
   */
  notifyEvery: 11,
  /**
   * Runners taking the job's chunks in turns (1: `runner` alone): chunk c runs turn
   * c mod `turns`, whose runner and argument set are at {@link turnSlot} (turn 0:
   * `runner` and `args`), and the threads time each chunk they run ({@link ControlBlock.recordTurnTime}).
   * Engine calibration on the workers (engine-calibration.ts): every candidate runs chunks of the
   * same call, at the same moment, each timed by the thread that ran it.
   */
  turns: 12,
  /** Bit t set: turn t's chunks make the job's chunk copies (`copies`); its argument set indexes the staged operands. */
  turnCopies: 13,
} as const;

/** The most runners a job's chunks take turns between. */
export const MAX_TURNS = 4;

/** Int32 slot of turn `turn`'s runner id (`field` 0) or argument set id (`field` 1), for turns 1 and up. */
export function turnSlot(turn: number, field: 0 | 1): number {
  return turn === 0 ? (field === 0 ? Slot.runner : Slot.args) : 16 + 2 * (turn - 1) + field;
}

/** `Slot.inputsReady` when copying the inputs failed (an input detached meanwhile): no chunk waits or runs any more. */
export const INPUTS_FAILED = -1;

export const Command = {
  /** Run the chunks of a runner over an argument set. */
  run: 1,
  /** Only read the mailbox (cache evictions, test hooks), then finish. */
  drain: 2,
} as const;

/** Int32 slots in the header; float64 slots follow. */
const HEADER_INT32 = 32;
/** Float64 index of the loop size; chunk `c` covers [c·chunkSize, min((c+1)·chunkSize, total)). */
export const TOTAL_F64 = HEADER_INT32 / 2;
export const CHUNK_SIZE_F64 = TOTAL_F64 + 1;
/** Float64 index of the first scalar argument slot; bigint scalars use the same bytes as int64. */
export const SCALARS_F64 = CHUNK_SIZE_F64 + 1;
/** Scalar slots: calls with more operands run on the calling thread. */
export const MAX_OPERANDS = 64;

/** Per-worker slots, relative to the worker's area. */
export const WorkerSlot = {
  /** {@link WorkerState}. */
  state: 0,
  /** Messages posted to the worker so far; it reads its port until it has received as many. */
  mailbox: 1,
  /** The chunk whose error is recorded below, or −1. */
  errorChunk: 2,
  errorNameBytes: 3,
  errorMessageBytes: 4,
  /** The index-check site an index error recorded below failed at (the runner's `sites`), or −1. */
  errorSite: 5,
  /**
   * Float64 slots (2 int32 each) from here: per turn, of the chunks this worker ran in the job,
   * the least seconds per loop index, the seconds in all and the loop indices in all.
   */
  turnTimes: 8,
} as const;

export const WorkerState = {
  /** Not yet waiting for jobs: left out of jobs until it is. */
  starting: 0,
  /** Asleep in `Atomics.wait` on this very slot: the pool wakes it by setting `busy` and notifying,
   *  so a job wakes only the workers it has chunks for. */
  idle: 1,
  /** Taking part in the current job. Whoever moves it out of `busy` first (the worker when done, or
   *  the pool when the worker died) decrements `remaining`, so it is decremented exactly once. */
  busy: 2,
  dead: 3,
} as const;

const WORKER_HEADER_INT32 = WorkerSlot.turnTimes + 2 * 3 * MAX_TURNS;
/** Bytes for an error's class name and message (UTF-8); longer messages are cut. */
const ERROR_BYTES = 8192;
const WORKER_AREA_INT32 = WORKER_HEADER_INT32 + ERROR_BYTES / 4;
/** About how often a job that tracks its chunks wakes the calling thread (`Slot.notifyEvery`). */
const WAKES_PER_JOB = 8;
/** The most chunks a job can track (`Slot.trackChunks`): one int32 flag each. */
export const MAX_TRACKED_CHUNKS = 4096;
const FIRST_CHUNK_DONE_INT32 = HEADER_INT32 + 2 * (SCALARS_F64 - TOTAL_F64 + MAX_OPERANDS);
const FIRST_WORKER_INT32 = FIRST_CHUNK_DONE_INT32 + MAX_TRACKED_CHUNKS;

/** Typed views of one pool's control block. */
export class ControlBlock {
  readonly int32: Int32Array;
  readonly float64: Float64Array;
  readonly bigInt64: BigInt64Array;
  readonly bigUint64: BigUint64Array;
  private readonly bytes: Uint8Array;

  constructor(readonly buffer: SharedArrayBuffer) {
    this.int32 = new Int32Array(buffer);
    this.float64 = new Float64Array(buffer);
    this.bigInt64 = new BigInt64Array(buffer);
    this.bigUint64 = new BigUint64Array(buffer);
    this.bytes = new Uint8Array(buffer);
  }

  static create(workers: number): ControlBlock {
    return new ControlBlock(new SharedArrayBuffer((FIRST_WORKER_INT32 + workers * WORKER_AREA_INT32) * 4));
  }

  /**
   * Starts tracking the current job's chunks (`Slot.trackChunks`), or stops it; call before any
   * thread takes part in the job.
   */
  trackChunks(chunks: number): void {
    const track = chunks > 0 && chunks <= MAX_TRACKED_CHUNKS;
    if (track) this.int32.fill(0, FIRST_CHUNK_DONE_INT32, FIRST_CHUNK_DONE_INT32 + chunks);
    Atomics.store(this.int32, Slot.chunksDone, 0);
    Atomics.store(this.int32, Slot.notifyEvery, Math.max(1, Math.floor(chunks / WAKES_PER_JOB)));
    Atomics.store(this.int32, Slot.trackChunks, track ? 1 : 0);
  }

  /** Whether the current job tracks its chunks (see {@link trackChunks}). */
  get tracksChunks(): boolean {
    return Atomics.load(this.int32, Slot.trackChunks) === 1;
  }

  /** Whether chunk `chunk` of the current job (which tracks its chunks) is done. */
  chunkDone(chunk: number): boolean {
    return Atomics.load(this.int32, FIRST_CHUNK_DONE_INT32 + chunk) === 1;
  }

  /** Records that chunk `chunk` ran, and wakes the calling thread if it waits for chunks. */
  markChunkDone(chunk: number): void {
    Atomics.store(this.int32, FIRST_CHUNK_DONE_INT32 + chunk, 1);
    const done = Atomics.add(this.int32, Slot.chunksDone, 1) + 1;
    if (done % this.int32[Slot.notifyEvery]! === 0 || done === this.int32[Slot.chunks]) Atomics.notify(this.int32, Slot.chunksDone);
  }

  /** Int32 index of slot `slot` of worker `w`. */
  workerSlot(w: number, slot: number): number {
    return FIRST_WORKER_INT32 + w * WORKER_AREA_INT32 + slot;
  }

  /** Float64 index of worker `w`'s times of turn `turn`: the least per index, then seconds and indices in all (see {@link WorkerSlot.turnTimes}). */
  private turnTimeSlot(w: number, turn: number): number {
    return this.workerSlot(w, WorkerSlot.turnTimes) / 2 + 3 * turn;
  }

  /** Forgets worker `w`'s chunk times (before a job). */
  clearTurnTimes(w: number): void {
    for (let t = 0; t < MAX_TURNS; t++) {
      const slot = this.turnTimeSlot(w, t);
      this.float64.fill(0, slot, slot + 3);
      this.float64[slot] = Infinity;
    }
  }

  /** Records that worker `w` ran a chunk of `indices` loop indices of turn `turn` in `seconds`. */
  recordTurnTime(w: number, turn: number, seconds: number, indices: number): void {
    const slot = this.turnTimeSlot(w, turn);
    const { float64 } = this;
    if (seconds / indices < float64[slot]!) float64[slot] = seconds / indices;
    float64[slot + 1] += seconds;
    float64[slot + 2] += indices;
  }

  /** Worker `w`'s chunks of turn `turn` in the job: the least seconds per loop index (Infinity: none), seconds and indices in all. */
  turnTime(w: number, turn: number): { least: number; seconds: number; indices: number } {
    const slot = this.turnTimeSlot(w, turn);
    return { least: this.float64[slot]!, seconds: this.float64[slot + 1]!, indices: this.float64[slot + 2]! };
  }

  /** Records the error a chunk threw in worker `w`'s area (workers claim chunks in increasing
   *  order, so the first error a worker records is its lowest). */
  writeError(w: number, chunk: number, error: unknown): void {
    const { name, message } = describeThrown(error);
    const encoder = new TextEncoder();
    const nameBytes = encoder.encode(name).slice(0, 256);
    let messageBytes = encoder.encode(message);
    if (messageBytes.length > ERROR_BYTES - nameBytes.length) messageBytes = messageBytes.slice(0, ERROR_BYTES - nameBytes.length);
    const at = this.workerSlot(w, WORKER_HEADER_INT32) * 4;
    this.bytes.set(nameBytes, at);
    this.bytes.set(messageBytes, at + nameBytes.length);
    this.int32[this.workerSlot(w, WorkerSlot.errorNameBytes)] = nameBytes.length;
    this.int32[this.workerSlot(w, WorkerSlot.errorMessageBytes)] = messageBytes.length;
    this.int32[this.workerSlot(w, WorkerSlot.errorSite)] = failedSite(error) ?? -1;
    Atomics.store(this.int32, this.workerSlot(w, WorkerSlot.errorChunk), chunk);
  }

  /** The error recorded in worker `w`'s area during the current job, if any. */
  readError(w: number): { chunk: number; name: string; message: string; site: number | undefined } | undefined {
    const chunk = Atomics.load(this.int32, this.workerSlot(w, WorkerSlot.errorChunk));
    if (chunk < 0) return undefined;
    const nameLength = this.int32[this.workerSlot(w, WorkerSlot.errorNameBytes)]!;
    const messageLength = this.int32[this.workerSlot(w, WorkerSlot.errorMessageBytes)]!;
    const at = this.workerSlot(w, WORKER_HEADER_INT32) * 4;
    // TextDecoder refuses views of shared memory: copy out first.
    const decoder = new TextDecoder();
    const name = decoder.decode(this.bytes.slice(at, at + nameLength));
    const message = decoder.decode(this.bytes.slice(at + nameLength, at + nameLength + messageLength));
    const site = this.int32[this.workerSlot(w, WorkerSlot.errorSite)]!;
    return { chunk, name, message, site: site >= 0 ? site : undefined };
  }

  /** Lowers `errorChunk` to `chunk` unless a lower chunk already failed. */
  lowerErrorChunk(chunk: number): void {
    for (;;) {
      const current = Atomics.load(this.int32, Slot.errorChunk);
      if (chunk >= current || Atomics.compareExchange(this.int32, Slot.errorChunk, current, chunk) === current) return;
    }
  }
}

function describeThrown(error: unknown): { name: string; message: string } {
  if (error instanceof Error) return { name: error.name, message: error.message };
  return { name: 'Error', message: `The kernel threw a non-Error value: ${String(error)}` };
}

/** How a scalar argument's value is stored in its float64/int64 slot and read back. */
export type ScalarKind = 'number' | 'bool' | 'int64' | 'uint64';

export function scalarKindOf(dtype: DType): ScalarKind {
  return dtype === 'bool' ? 'bool' : dtype === 'int64' ? 'int64' : dtype === 'uint64' ? 'uint64' : 'number';
}

/** A worker's view of an argument set: what a runner reads, with `scalars` filled per job. */
export interface ArgumentSetMessage {
  readonly type: 'args';
  readonly id: number;
  /** Views of shared memory (structured clone shares them); null for scalar arguments. */
  readonly data: readonly (ArrayLike<unknown> | null)[];
  readonly offset: readonly number[];
  readonly loopShape: readonly number[];
  readonly loopStrides: readonly (readonly number[])[];
  readonly coreShape: readonly (readonly number[])[];
  readonly coreStrides: readonly (readonly number[])[];
  /** Per operand: how its scalar is stored, or null for arrays. */
  readonly scalarKinds: readonly (ScalarKind | null)[];
}

/**
 * A staged operand that the threads running a job copy themselves, chunk by chunk: loop index i of
 * the job reaches bytes [i·bytesPerIndex, (i+1)·bytesPerIndex) of `from`, which go to the same
 * bytes of `to`. `before`: the caller's shared array into its staged copy, before the chunk runs —
 * every thread copies its own chunks, in parallel, instead of the calling thread copying it all
 * before the job. `after`: the staged copy back into the caller's shared array, while it is in
 * cache, instead of the calling thread copying it all after the job. `clear`: the staged copy of
 * an output the call allocated (all zeros) is zeroed instead of copied in, before the chunk runs.
 *
 * Why `clear` rather than `before` for such an output: reading its untouched pages maps the
 * kernel's shared zero page, and the copy back then takes a copy-on-write fault per page whose TLB
 * flush interrupts every core running the process — several times what the copy itself costs, and
 * charged partly to the other threads' chunks. Zeroing the arena touches only memory already in use.
 */
export type ChunkCopy =
  | { readonly from: Uint8Array; readonly to: Uint8Array; readonly bytesPerIndex: number; readonly when: 'before' | 'after' }
  | { readonly to: Uint8Array; readonly bytesPerIndex: number; readonly when: 'clear' };

function copyChunk(copies: readonly ChunkCopy[], start: number, end: number): void {
  for (const copy of copies) {
    const at = start * copy.bytesPerIndex;
    const until = end * copy.bytesPerIndex;
    if (copy.when === 'clear') copy.to.fill(0, at, until);
    else copy.to.set(copy.from.subarray(at, until), at);
  }
}

/** A runner that also makes each chunk's {@link ChunkCopy}s, before and after running it. */
export function copyingRunner(runner: Runner, copies: readonly ChunkCopy[]): Runner {
  const before = copies.filter((c) => c.when !== 'after');
  const after = copies.filter((c) => c.when === 'after');
  return (args, start, end) => {
    copyChunk(before, start, end);
    runner(args, start, end);
    copyChunk(after, start, end);
  };
}

export type WorkerMessage =
  /** The staged operands the next job's chunks copy in and back (read before the job; forgotten after it). */
  | { readonly type: 'copies'; readonly copies: readonly ChunkCopy[] }
  /** A JS runner's source, or (with `wasm`) a Wasm kernel. */
  | { readonly type: 'runner'; readonly id: number; readonly source: string; readonly sites: readonly IndexCheckSite[]; readonly wasm?: WasmRunnerPart }
  | ArgumentSetMessage
  /** Drop runners and argument sets (and so the shared memory they hold); `all` drops every set. */
  | { readonly type: 'forget'; readonly runners: readonly number[]; readonly argumentSets: readonly number[] | 'all' }
  /** Test hooks: die at once (`process.exit`), or fill the heap until the worker runs out of memory. */
  | { readonly type: 'crash' }
  | { readonly type: 'exhaust-memory' };


/**
 * Marks worker `w` dead. When it was taking part in a job, also counts it out of `remaining` and
 * records the death, so the job ends (as failed) instead of waiting for it forever. Both the dying
 * worker (its `exit` handler) and the pool (the `exit` event, or a liveness check) call this; the
 * compare-exchange makes exactly one of them count it out.
 */
export function markWorkerDead(control: ControlBlock, w: number): void {
  const int32 = control.int32;
  const slot = control.workerSlot(w, WorkerSlot.state);
  for (;;) {
    const state = Atomics.load(int32, slot);
    if (state === WorkerState.dead) return;
    if (Atomics.compareExchange(int32, slot, state, WorkerState.dead) !== state) continue;
    if (state === WorkerState.busy) {
      Atomics.compareExchange(int32, Slot.diedWorker, 0, w + 1);
      Atomics.sub(int32, Slot.remaining, 1);
      Atomics.notify(int32, Slot.remaining);
    }
    return;
  }
}

/**
 * Runners taking a job's chunks in turns ({@link Slot.turns}): turn t runs `runners[t]` over
 * `args[t]`; each chunk is timed and its seconds and loop indices handed to `timed`.
 */
export interface ChunkTurns {
  readonly runners: readonly Runner[];
  readonly args: readonly RunnerArgs[];
  readonly timed: (turn: number, seconds: number, indices: number) => void;
}

/**
 * Claims chunks of the current job until none are left and runs them: the loop every worker and
 * the calling thread share. A chunk that throws is handed to `failed` and lowers `errorChunk`;
 * chunks after the lowest failed one are skipped (they cannot change the call's error, which is
 * the lowest chunk's). With `turns`, each chunk runs its turn's runner instead, timed.
 */
export function runClaimedChunks(control: ControlBlock, runner: Runner, args: RunnerArgs, failed: (chunk: number, error: unknown) => void, turns?: ChunkTurns): void {
  const { int32, float64 } = control;
  const chunks = int32[Slot.chunks]!;
  const total = float64[TOTAL_F64]!;
  const chunkSize = float64[CHUNK_SIZE_F64]!;
  const track = control.tracksChunks;
  for (;;) {
    const chunk = claimOpenChunk(int32, chunks);
    if (chunk < 0) return;
    if (chunk > Atomics.load(int32, Slot.errorChunk)) continue;
    try {
      if (turns) runTurn(turns, chunk, chunkSize, total);
      else runChunk(runner, args, chunk, chunkSize, total);
      if (track) control.markChunkDone(chunk);
    } catch (error) {
      failed(chunk, error);
      control.lowerErrorChunk(chunk);
    }
  }
}

/** Runs chunk `chunk` on its turn's runner, timed. */
function runTurn(turns: ChunkTurns, chunk: number, chunkSize: number, total: number): void {
  const turn = chunk % turns.runners.length;
  const indices = Math.min(chunkSize, total - chunk * chunkSize);
  const started = performance.now();
  runChunk(turns.runners[turn]!, turns.args[turn]!, chunk, chunkSize, total);
  turns.timed(turn, (performance.now() - started) / 1000, indices);
}

/**
 * Claims the next chunk whose inputs are in place (all of them, for a job whose inputs were copied
 * before it started), sleeping while none is: @returns the chunk, or −1 when none is left or the
 * input copies failed.
 *
 * A thread claims only open chunks, so a sleeping thread holds none and any of them can take the
 * next one: the calling thread wakes one sleeper per chunk it opens (see `openChunks`). Claiming
 * first and then waiting for that chunk's inputs would wake every sleeper at every chunk — 16
 * workers × 128 chunks of futex wake-ups per call on 16 cores, most of them to sleep again.
 */
function claimOpenChunk(int32: Int32Array, chunks: number): number {
  for (;;) {
    const open = Atomics.load(int32, Slot.inputsReady);
    if (open === INPUTS_FAILED) return -1;
    const next = Atomics.load(int32, Slot.nextChunk);
    if (next >= chunks) return -1;
    if (next < open) {
      if (Atomics.compareExchange(int32, Slot.nextChunk, next, next + 1) === next) return next;
    } else {
      Atomics.wait(int32, Slot.inputsReady, open);
    }
  }
}

/**
 * Opens chunks below `open` to the threads (`open` = the job's chunk count: all of them;
 * {@link INPUTS_FAILED}: none more, every sleeper leaves) and wakes as many sleeping threads as
 * chunks it opened (see `claimOpenChunk`).
 *
 * @param before - the chunks open until now
 * @param wakeAll - wake every sleeper all the same (A/B benchmarks: pool.ts `wakeEverySleeper`)
 */
export function openChunks(int32: Int32Array, open: number, before: number, wakeAll = false): void {
  Atomics.store(int32, Slot.inputsReady, open);
  const last = wakeAll || open === INPUTS_FAILED || open >= int32[Slot.chunks]!;
  Atomics.notify(int32, Slot.inputsReady, last ? Infinity : Math.max(0, open - before));
}

/**
 * Runs chunk `chunk` of the current job. Its bounds are passed as small integers where they fit:
 * computed from the control block's float64 slots they are doubles, and a runner whose loop counter
 * starts as a double runs its whole loop in double arithmetic (20–25% slower, measured).
 */
export function runChunk(runner: Runner, args: RunnerArgs, chunk: number, chunkSize: number, total: number): void {
  const start = chunk * chunkSize;
  const end = Math.min(start + chunkSize, total);
  if (end <= 0x7fffffff) runner(args, start | 0, end | 0);
  else runner(args, start, end);
}
