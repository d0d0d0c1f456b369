/**
 * What a worker of the parallel target does, on either host: keep the runners and argument sets
 * the pool sent, and when marked busy, claim chunks of the loop space and run them with the very
 * runner the cpu target generates. The host (worker.ts in Node, web/worker.ts in a page) only
 * decides how the worker sleeps and how it reads its messages: everything the calling thread needs
 * back is written into shared memory (see protocol.ts for why).
 */
import { instantiateRunner } from '../cpu/js/codegen.js';
import { type Runner, type RunnerArgs } from '../cpu/memory-layout.js';
import { instantiateKernel, wasmRunner } from '../cpu/wasm/runner.js';
import {
  type ArgumentSetMessage, type ChunkCopy, Command, ControlBlock, copyingRunner, runClaimedChunks, SCALARS_F64, Slot, turnSlot,
  type WorkerMessage, WorkerSlot, WorkerState,
} from './protocol.js';

interface ArgumentSet {
  readonly args: RunnerArgs & { scalars: (number | bigint | boolean | undefined)[] };
  readonly message: ArgumentSetMessage;
}

/**
 * The bytes of the callers' arrays that a job's chunk copies reached, each array once: what this
 * worker stops holding when it forgets them. The staged side is the Wasm memory or a reused arena,
 * which no collection frees: counting it (and an array once per copy) made the workers collect
 * their heaps twice as often as the memory they let go called for.
 */
export function callerBytes(copies: readonly ChunkCopy[]): number {
  // A range copied in and back has one view of the caller's array for both (a message keeps that).
  const callers = new Set<Uint8Array>();
  for (const copy of copies) {
    if (copy.when === 'before') callers.add(copy.from);
    else if (copy.when === 'after') callers.add(copy.to);
  }
  let bytes = 0;
  for (const view of callers) bytes += view.byteLength;
  return bytes;
}

/** One worker's state and its steps; the host drives them. */
export class WorkerCore {
  readonly control: ControlBlock;
  readonly int32: Int32Array;
  readonly stateSlot: number;
  readonly mailboxSlot: number;
  /** Messages handled so far; the pool's count of posted ones is in the mailbox slot. */
  received = 0;
  /** Runners by id; a runner whose source failed to instantiate throws that failure when run. */
  private readonly runners = new Map<number, Runner>();
  private readonly argumentSets = new Map<number, ArgumentSet>();
  /** The current job's staged operands to copy chunk by chunk (a `copies` message before it). */
  private copies: readonly ChunkCopy[] = [];
  /**
   * Bytes of shared memory this worker stopped referencing (argument sets forgotten, a job's
   * copies done) since its host last collected its heap (`collected()`): until then its objects
   * for that memory keep it alive, whoever else dropped it.
   */
  releasedBytes = 0;

  /**
   * @param buffer the pool's control block
   * @param index this worker's index in the pool
   * @param exit stops this worker at once (the `crash` test hook)
   */
  constructor(buffer: SharedArrayBuffer, readonly index: number, private readonly exit: (code: number) => never) {
    this.control = new ControlBlock(buffer);
    this.int32 = this.control.int32;
    this.stateSlot = this.control.workerSlot(index, WorkerSlot.state);
    this.mailboxSlot = this.control.workerSlot(index, WorkerSlot.mailbox);
  }

  /** Messages the pool posted before the current job that this worker has not read yet. */
  get unread(): number {
    return Atomics.load(this.int32, this.mailboxSlot) - this.received;
  }

  handle(message: WorkerMessage): void {
    this.received++;
    switch (message.type) {
      case 'runner': {
        let runner: Runner;
        try {
          const { wasm } = message;
          runner = wasm
            ? wasmRunner(wasm.spec, instantiateKernel(wasm.module, wasm.imports, message.sites, wasm.memory), wasm.scratch)
            : instantiateRunner(message.source, message.sites);
        } catch (error) {
          // E.g. a local array too large to allocate: the call fails as it would on the cpu target.
          runner = () => {
            throw error;
          };
        }
        this.runners.set(message.id, runner);
        return;
      }
      case 'args': {
        const args = {
          data: message.data as ArrayLike<unknown>[],
          offset: message.offset,
          loopShape: message.loopShape,
          loopStrides: message.loopStrides,
          coreShape: message.coreShape,
          coreStrides: message.coreStrides,
          scalars: message.scalarKinds.map(() => undefined),
        };
        this.argumentSets.set(message.id, { args, message });
        return;
      }
      case 'copies':
        this.copies = message.copies;
        return;
      case 'forget': {
        for (const id of message.runners) this.runners.delete(id);
        const ids = message.argumentSets === 'all' ? [...this.argumentSets.keys()] : message.argumentSets;
        for (const id of ids) {
          const set = this.argumentSets.get(id);
          if (!set) continue;
          this.argumentSets.delete(id);
          for (const data of set.message.data) this.releasedBytes += (data as { byteLength?: number } | null)?.byteLength ?? 0;
        }
        return;
      }
      case 'crash':
        return this.exit(70);
      case 'exhaust-memory': {
        const hoard: number[][] = [];
        for (;;) hoard.push(new Array<number>(1 << 20).fill(hoard.length + 0.5));
      }
    }
  }

  /** Marks this worker ready for jobs (once started). */
  markIdle(): void {
    Atomics.compareExchange(this.int32, this.stateSlot, WorkerState.starting, WorkerState.idle);
  }

  /** Runs the current job (its messages already read) and counts this worker out of it. */
  runJob(readFailure?: unknown): void {
    const { control, int32, index } = this;
    try {
      if (readFailure !== undefined) throw readFailure;
      if (int32[Slot.command] === Command.run) this.runChunks();
    } catch (error) {
      control.writeError(index, 0, error);
      control.lowerErrorChunk(0);
    } finally {
      this.releasedBytes += callerBytes(this.copies);
      this.copies = [];
    }
    if (Atomics.compareExchange(int32, this.stateSlot, WorkerState.busy, WorkerState.idle) === WorkerState.busy) {
      if (Atomics.sub(int32, Slot.remaining, 1) === 1) Atomics.notify(int32, Slot.remaining);
    }
  }

  private runChunks(): void {
    const { control, int32, index } = this;
    const turns = int32[Slot.turns]!;
    const copyMask = int32[Slot.turnCopies]!;
    const runners: Runner[] = [];
    const argsOfTurn: RunnerArgs[] = [];
    for (let t = 0; t < turns; t++) {
      const runnerId = int32[turnSlot(t, 0)]!;
      const setId = int32[turnSlot(t, 1)]!;
      const runner = this.runners.get(runnerId);
      const set = this.argumentSets.get(setId);
      if (!runner || !set) {
        control.writeError(index, 0, new Error(`worker ${index} has no runner ${runnerId} or argument set ${setId} (a bug in the parallel target)`));
        control.lowerErrorChunk(0);
        return;
      }
      this.readScalars(set);
      runners.push(this.copies.length && copyMask & (1 << t) ? copyingRunner(runner, this.copies) : runner);
      argsOfTurn.push(set.args);
    }
    let failed = false;
    const onFailure = (chunk: number, error: unknown) => {
      if (!failed) control.writeError(index, chunk, error);
      failed = true;
    };
    if (turns === 1) return runClaimedChunks(control, runners[0]!, argsOfTurn[0]!, onFailure);
    const timed = (turn: number, seconds: number, indices: number) => control.recordTurnTime(index, turn, seconds, indices);
    runClaimedChunks(control, runners[0]!, argsOfTurn[0]!, onFailure, { runners, args: argsOfTurn, timed });
  }

  /** Fills an argument set's scalars with the current job's values (from the control block). */
  private readScalars({ args, message }: ArgumentSet): void {
    const { control } = this;
    message.scalarKinds.forEach((kind, k) => {
      if (kind === null) return;
      const slot = SCALARS_F64 + k;
      args.scalars[k] = kind === 'number' ? control.float64[slot] : kind === 'bool' ? control.float64[slot] !== 0 : kind === 'int64' ? control.bigInt64[slot] : control.bigUint64[slot];
    });
  }
}
