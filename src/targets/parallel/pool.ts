/**
 * The worker pool: persistent `worker_threads`, one job at a time over a shared control block.
 *
 * A job is the loop space of one call cut into chunks. The calling thread writes the job into the
 * control block, marks as many idle workers busy as there are chunks for and notifies each (an idle
 * worker sleeps on its own state slot); they (and, in a sync call, the calling thread) then claim
 * chunks with `Atomics.add` until none are left (claiming instead of a fixed split keeps every thread busy
 * when the OS hands out cores unevenly). Each worker counts
 * itself out of `remaining` when done; the last one notifies, which ends `Atomics.wait` (sync
 * calls) or `Atomics.waitAsync` (async calls) on the calling thread.
 *
 * Deaths: a worker that calls `process.exit` marks itself dead on the way out; for any other
 * death the pool learns of it from the `exit` event (async calls) or from a liveness check
 * between waits (sync calls, whose thread runs no events while it blocks). Either way the dead
 * worker is counted out, the job fails with a `WorkerError`, and the worker is replaced.
 *
 * The pool holds the process open only while an async call is in flight: workers are unref'd
 * otherwise (and workers blocked in `Atomics.wait` are stopped with the process at exit).
 */
import { TargetUnavailableError } from '../../errors.js';
import { platform, type PoolWorkerHandle, type PoolWorkerInit, type ScriptUrl } from '../../platform/platform.js';
import type { Runner, RunnerArgs } from '../cpu/memory-layout.js';
import { shutdownError, watchLimits } from '../../cancellation.js';
import type { CallLimits } from '../../plan.js';
import { rebuildError, WorkerError } from './errors.js';
import { placeInFile, portableSites } from '../../compiler/source-excerpt.js';
import type { ArgumentSet, RunnerSource } from './kernel-cache.js';
import type { CopyPipeline } from './staging.js';
import {
  CHUNK_SIZE_F64, type ChunkCopy, Command, ControlBlock, copyingRunner, markWorkerDead, openChunks, runClaimedChunks, SCALARS_F64, type ScalarKind, Slot, TOTAL_F64, turnSlot,
  type WorkerMessage, WorkerSlot, WorkerState,
} from './protocol.js';

/** One scalar argument's value, written into the control block for every call. */
export interface ScalarArgument {
  readonly operand: number;
  readonly kind: ScalarKind;
  readonly value: number | bigint | boolean;
}

/** Work for the pool. */
export interface Job {
  readonly command: (typeof Command)[keyof typeof Command];
  readonly runner?: RunnerSource;
  readonly argumentSet?: ArgumentSet;
  /** Loop size. */
  readonly total?: number;
  readonly scalars?: readonly ScalarArgument[];
  /** The calling thread's runner and arguments, when it claims chunks too. */
  readonly caller?: { readonly runner: Runner; readonly args: RunnerArgs };
  /**
   * The call has a `signal` or `timeout`: only workers run it (the calling thread stays free to
   * notice the limit), and workers still running it when the limit passes are terminated.
   */
  readonly limits?: CallLimits;
  /** Run the whole loop as one chunk (a call whose outputs several loop indices write). */
  readonly singleChunk?: boolean;
  /** Staged operands each thread copies in before and back after each chunk it runs. */
  readonly copies?: readonly ChunkCopy[];
  /**
   * Copies the calling thread makes while the chunks run: inputs in (in a sync job, before it
   * claims chunks), chunks waiting for theirs; in an awaited job, results back as chunks are done.
   */
  readonly pipeline?: CopyPipeline;
  /**
   * Runners taking the chunks in turns, each chunk timed by the thread that runs it (protocol.ts
   * `Slot.turns`): chunk c runs turn c mod the turns. The job's `runner` and
   * `argumentSet` are then turn 0's, and the calling thread claims chunks only where no worker can.
   */
  readonly turns?: readonly Turn[];
}

/** A runner taking chunks of a job in turns with others. */
export interface Turn {
  readonly runner: RunnerSource;
  readonly argumentSet: ArgumentSet;
  /** Whether its chunks make the job's `copies` (its argument set indexes the staged operands they fill). */
  readonly copies: boolean;
}

/** What the workers measured of one turn of a job: seconds per loop index over its chunks (NaN, Infinity: it ran none). */
export interface TurnTime {
  /** All its chunks' seconds ÷ all their loop indices. */
  readonly mean: number;
  /** The least of its chunks' seconds per loop index. */
  readonly least: number;
}

/** How a job ended; for a job with turns, what the workers measured of each turn. */
export type JobOutcome = { readonly ok: true; readonly turnTimes?: readonly TurnTime[] } | { readonly ok: false; readonly error: Error };

interface PooledWorker {
  readonly index: number;
  readonly worker: PoolWorkerHandle;
  readonly ready: Promise<void>;
  /** Messages posted to it so far. */
  posted: number;
  readonly runners: Set<number>;
  readonly argumentSets: Set<number>;
  /** Replaced or terminated: its `exit` event changes nothing. */
  retired: boolean;
  /** What the `error` / `exit` events said, for the message of the call it failed. */
  failure?: Error;
  exitCode?: number;
}

interface RunningJob {
  readonly job: Job;
  readonly async: boolean;
  participants: PooledWorker[];
  /** Whether the calling thread claims chunks. */
  readonly callerRuns: boolean;
  callerError?: { chunk: number; error: unknown };
  outcome?: JobOutcome;
  /** Why the job was stopped before its workers finished (a limit, `shutdown()`). */
  stopped?: Error;
  /** Wakes whoever waits for the job, to notice `stopped`. */
  interrupt?: () => void;
}

export interface PoolOptions {
  readonly size: number;
  /**
   * Whether a sync call's thread claims chunks too, instead of only waiting (an awaited call's
   * thread never does: it keeps its event loop running). A call of one chunk then wakes no worker
   * at all; on large calls (2 cores: 3 threads against 2 workers alone) the two measured the same.
   * @default true
   */
  readonly callerRuns?: boolean;
  /**
   * Chunks per thread. More keep threads evenly busy when the OS gives them unequal time (another
   * process, a busy core: one chunk per thread lost 20% on Hermite then); each costs one runner
   * call. @default 8
   */
  readonly chunksPerThread?: number;
  /** The fewest loop indices in a chunk (tests lower it to split tiny calls). @default 64 */
  readonly minChunk?: number;
  /** Heap limits of each worker (tests use a small one to provoke running out of memory). */
  readonly resourceLimits?: PoolWorkerInit['resourceLimits'];
  /** Shared memory a worker releases before it collects its heap (tests lower it; worker.ts says why). */
  readonly collectAfterBytes?: number;
  /** The worker script, where the default (`worker.js` beside the library) does not fit a bundle. */
  readonly workerUrl?: ScriptUrl;
}

/** Chunks smaller than this many loop indices cost more to hand out than they save. */
const MIN_CHUNK = 64;

/**
 * How a job's loop is cut into chunks for `threads` threads: as many as keep each thread busy
 * (`chunksPerThread` each), none shorter than `minChunk` loop indices; one where the loop may not
 * be split. `explain` tells from it how many threads a call takes.
 *
 * @param total - the loop's length
 * @param threads - the threads that claim chunks (the idle workers, and a sync call's own thread)
 * @param tuning - the pool's `minChunk` and `chunksPerThread`
 * @param singleChunk - the loop may not be split
 * @returns the number of chunks and their length (the last may be shorter)
 * @example
 * chunking(10, 3, {}, false); // { chunks: 1, chunkSize: 10 }: ten rows are one chunk (at least 64)
 */
export function chunking(total: number, threads: number, tuning: Pick<PoolOptions, 'minChunk' | 'chunksPerThread'>, singleChunk: boolean): { chunks: number; chunkSize: number } {
  const wanted = singleChunk ? 1 : Math.max(1, Math.min(Math.ceil(total / minChunkOf(tuning)), threads * (tuning.chunksPerThread ?? 8)));
  const chunkSize = Math.ceil(total / wanted);
  return { chunks: Math.ceil(total / chunkSize), chunkSize };
}

/** The fewest loop indices in a chunk. */
export const minChunkOf = (tuning: Pick<PoolOptions, 'minChunk'>): number => tuning.minChunk ?? MIN_CHUNK;
/** How often a blocked calling thread checks that the workers it waits for are alive. */
const LIVENESS_INTERVAL_MS = 50;
/** How long an async call blocks for workers before it yields to the event loop. */
const ASYNC_GRACE_MS = 0.2;

export class WorkerPool {
  readonly control: ControlBlock;
  private readonly workers: PooledWorker[] = [];
  private current: RunningJob | undefined;
  /** Async jobs waiting for the pool, first come first served. */
  private readonly waiting: (() => void)[] = [];
  private terminated = false;
  /**
   * Wake every sleeping thread at each chunk a pipeline opens, as before sleepers claimed only open
   * chunks (A/B benchmarks set it; protocol.ts `claimOpenChunk` says why one per chunk is enough).
   */
  wakeEverySleeper = false;
  /** Set when a worker died before it ever ran: the pool cannot work (e.g. the script did not load). */
  private startupFailure: Error | undefined;

  constructor(private readonly options: PoolOptions) {
    this.control = ControlBlock.create(options.size);
    for (let w = 0; w < options.size; w++) this.workers.push(this.spawn(w));
  }

  get size(): number {
    return this.options.size;
  }

  get workerUrl(): ScriptUrl | undefined {
    return this.options.workerUrl;
  }

  /** Resolves once every worker has started and waits for jobs. */
  async ready(): Promise<void> {
    // Held while waiting: with every worker unref'd, nothing else might keep the process alive.
    for (const pooled of this.workers) pooled.worker.ref();
    try {
      await Promise.all(this.workers.map((w) => w.ready));
    } finally {
      if (!this.current?.async) for (const pooled of this.workers) pooled.worker.unref();
    }
  }

  /** Runs a job, blocking the calling thread until it is done. */
  runSync(job: Job): JobOutcome {
    this.checkUsable();
    if (!platform().canBlock()) {
      throw new TargetUnavailableError(
        "A synchronous call (`f.sync`) on the parallel target blocks the calling thread until the workers finish, which a page's main thread may not do: use `await f(...)`, or call `f.sync` from a Web Worker.",
      );
    }
    if (this.current) {
      // An async job is in flight: its workers finish without this thread's help, once its inputs
      // are in (copied by this thread between turns of its event loop, which it is about to block).
      this.current.job.pipeline?.finishNow();
      this.waitSync(this.current);
      this.finish(this.current);
    }
    const running = this.start(job, false);
    if (job.pipeline) {
      // This thread is about to block: it makes every copy now, each chunk opened to the workers
      // as soon as its inputs are in, and then claims chunks itself.
      this.beginPipeline(running, job.pipeline);
      job.pipeline.finishNow();
    }
    this.claimChunks(running);
    this.waitSync(running);
    return this.finish(running);
  }

  /**
   * Runs a job on the workers alone, waiting asynchronously: the calling thread claims no chunks,
   * so its event loop keeps running (timers, I/O, a page's rendering) however long the job takes.
   * Workers still starting are waited for, not stood in for.
   */
  async run(job: Job): Promise<JobOutcome> {
    this.checkUsable();
    if (job.limits) return this.runLimited(job, job.limits);
    for (let attempt = 0; ; attempt++) {
      if (this.anyStarting()) await this.ready();
      while (this.current) await new Promise<void>((resolve) => this.waiting.push(resolve));
      this.checkStillUsable();
      const running = this.start(job, true);
      if (running.participants.length === 0 && job.command === Command.run) {
        // Every worker died since `ready()` (they are being replaced): wait for the new ones.
        this.finish(running);
        if (attempt < 2) continue;
        return { ok: false, error: new WorkerError('No worker of the parallel target could take this call (every worker has stopped); the pool replaces them, so the call can be retried.') };
      }
      if (job.pipeline) {
        this.beginPipeline(running, job.pipeline);
      } else if (this.waitBriefly()) {
        return this.finish(running);
      }
      await this.waitAsync(running);
      return this.finish(running);
    }
  }

  /** Whether a worker has not yet reached its job loop (it then takes no part in jobs). */
  private anyStarting(): boolean {
    const { int32 } = this.control;
    return this.workers.some((w) => !w.retired && Atomics.load(int32, this.control.workerSlot(w.index, WorkerSlot.state)) === WorkerState.starting);
  }

  /** Whether the job in flight has limits (a sync call then runs on its own thread, not behind it). */
  get busyWithLimitedJob(): boolean {
    return this.current?.job.limits !== undefined;
  }

  /**
   * Runs a job with a signal or time limit. The calling thread claims no chunks, so it keeps
   * running its event loop and sees the limit pass; the limit also applies while the job waits
   * for the pool or for its workers to start. Workers still running the job then are terminated
   * and replaced (a kernel that never ends cannot be stopped any other way).
   */
  private async runLimited(job: Job, limits: CallLimits): Promise<JobOutcome> {
    const watch = watchLimits(limits, 'parallel');
    try {
      const stoppedWhile = async (wait: Promise<unknown>): Promise<Error | undefined> => {
        const r = await Promise.race([wait.then(() => undefined), watch.stopped]);
        return r;
      };
      // Workers that are still starting take no part in a job, and this thread takes none: wait.
      const started = await stoppedWhile(this.ready());
      if (started) return { ok: false, error: started };
      while (this.current) {
        let resolve!: () => void;
        const turn = new Promise<void>((r) => (resolve = r));
        this.waiting.push(resolve);
        const stop = await stoppedWhile(turn);
        if (stop) {
          const at = this.waiting.indexOf(resolve);
          if (at >= 0) this.waiting.splice(at, 1);
          else this.waiting.shift()?.(); // our turn had come meanwhile: pass it on
          return { ok: false, error: stop };
        }
      }
      this.checkStillUsable();
      const running = this.start(job, true);
      if (running.participants.length === 0) {
        running.stopped = new WorkerError('No worker of the parallel target could take this call (every worker has stopped); the pool replaces them, so the call can be retried.');
      }
      for (;;) {
        if (running.stopped || Atomics.load(this.control.int32, Slot.remaining) <= 0) break;
        const interrupted = new Promise<void>((resolve) => (running.interrupt = resolve));
        const remaining = Atomics.load(this.control.int32, Slot.remaining);
        const wait = waitAsync(this.control.int32, Slot.remaining, remaining, LIVENESS_INTERVAL_MS);
        const woke = wait.async ? Promise.race([wait.value, interrupted]) : Promise.resolve(wait.value);
        const stop = await stoppedWhile(woke);
        if (stop) {
          await this.abandon(running, stop);
          break;
        }
        if (!running.stopped) this.checkLiveness(running);
      }
      return this.finish(running);
    } finally {
      watch.dispose();
    }
  }

  /**
   * Stops a job whose limit passed: terminates the workers still running it (they may be in a
   * kernel that never ends), waits until they are gone — so nothing writes into the control
   * block or the outputs any more — and starts new workers in their place.
   */
  private async abandon(running: RunningJob, why: Error): Promise<void> {
    running.stopped ??= why;
    const { int32 } = this.control;
    const stuck = running.participants.filter(
      (pooled) => Atomics.compareExchange(int32, this.control.workerSlot(pooled.index, WorkerSlot.state), WorkerState.busy, WorkerState.dead) === WorkerState.busy,
    );
    for (const pooled of stuck) pooled.retired = true;
    await Promise.all(stuck.map((pooled) => pooled.worker.terminate()));
    Atomics.store(int32, Slot.remaining, 0);
    if (!this.terminated) for (const pooled of stuck) this.workers[pooled.index] = this.spawn(pooled.index);
  }

  /** After waiting for the pool: a pool terminated meanwhile (`shutdown()`) fails the queued call. */
  private checkStillUsable(): void {
    if (this.terminated) throw shutdownError('parallel');
    this.checkUsable();
  }

  /** Tells the workers to drop runners and argument sets the calling thread evicted. */
  forget(runners: readonly number[], argumentSets: readonly number[] | 'all'): void {
    for (const pooled of this.workers) {
      const runnerIds = runners.filter((id) => pooled.runners.delete(id));
      if (runnerIds.length) this.post(pooled, { type: 'forget', runners: runnerIds, argumentSets: [] });
      if (argumentSets === 'all') {
        if (pooled.argumentSets.size) this.post(pooled, { type: 'forget', runners: [], argumentSets: 'all' });
        pooled.argumentSets.clear();
        continue;
      }
      const setIds = argumentSets.filter((id) => pooled.argumentSets.delete(id));
      if (setIds.length) this.post(pooled, { type: 'forget', runners: [], argumentSets: setIds });
    }
  }

  /** Whether no job is running or waiting. */
  get idle(): boolean {
    return !this.current && this.waiting.length === 0;
  }

  /** Lets workers read their mailboxes now (e.g. to drop memory when idle) instead of at the next call. */
  async drain(): Promise<void> {
    await this.run({ command: Command.drain });
  }

  /** Messages posted to each worker so far (tests check that runners are sent once). */
  get messagesPosted(): number[] {
    return this.workers.map((w) => w.posted);
  }

  /** Posts a message to worker `w`; it is read at the worker's next job. For tests' hooks. */
  postToWorker(w: number, message: WorkerMessage): void {
    this.post(this.workers[w]!, message);
  }

  /**
   * Stops every worker. A job in flight fails with a ShutdownError, and so do jobs waiting for the
   * pool; nothing waits for the workers to finish their chunks (they may never).
   */
  async terminate(): Promise<void> {
    this.terminated = true;
    // Before the workers go, so that their deaths read as the shutdown they are.
    const running = this.current;
    if (running && !running.outcome) running.stopped ??= shutdownError('parallel');
    await Promise.all(
      this.workers.map((pooled) => {
        pooled.retired = true;
        return pooled.worker.terminate();
      }),
    );
    if (running && !running.outcome) {
      // Every worker is gone: count them all out, and wake whoever waits for them.
      Atomics.store(this.control.int32, Slot.remaining, 0);
      Atomics.notify(this.control.int32, Slot.remaining);
      running.interrupt?.();
    }
    for (const wake of this.waiting.splice(0)) wake();
  }

  // ------------------------------------------------------------------ workers

  private spawn(index: number): PooledWorker {
    const { int32 } = this.control;
    Atomics.store(int32, this.control.workerSlot(index, WorkerSlot.state), WorkerState.starting);
    Atomics.store(int32, this.control.workerSlot(index, WorkerSlot.mailbox), 0);
    let started = false;
    let resolveReady!: () => void;
    const ready = new Promise<void>((resolve) => (resolveReady = resolve));
    // Filled in below; the hooks run only after the worker has started, so never before that.
    let pooled!: PooledWorker;
    const worker = platform().startWorker({
      control: this.control.buffer,
      index,
      name: `ufunc parallel worker ${index}`,
      ...(this.options.resourceLimits ? { resourceLimits: this.options.resourceLimits } : {}),
      ...(this.options.collectAfterBytes !== undefined ? { collectAfterBytes: this.options.collectAfterBytes } : {}),
      ...(this.options.workerUrl !== undefined ? { workerUrl: this.options.workerUrl } : {}),
      onReady: () => {
        started = true;
        resolveReady();
      },
      onError: (error) => (pooled.failure = error),
      onExit: (code) => {
        resolveReady();
        pooled.exitCode = code;
        if (pooled.retired) return;
        markWorkerDead(this.control, index);
        // Node reads a worker's messages before its `exit` event, so `started` is current here.
        if (!started) this.startupFailure ??= pooled.failure ?? new Error(`worker ${index} exited with code ${code} before it started`);
        if (!this.current) this.replaceDead();
      },
    });
    pooled = { index, worker, ready, posted: 0, runners: new Set(), argumentSets: new Set(), retired: false };
    return pooled;
  }

  private post(pooled: PooledWorker, message: WorkerMessage): void {
    pooled.worker.postMessage(message);
    pooled.posted++;
  }

  /** Replaces every dead worker (not before the job it died in has ended: its slots are read). */
  private replaceDead(): void {
    if (this.terminated || this.startupFailure) return;
    const { int32 } = this.control;
    for (const pooled of this.workers) {
      if (pooled.retired || Atomics.load(int32, this.control.workerSlot(pooled.index, WorkerSlot.state)) !== WorkerState.dead) continue;
      pooled.retired = true;
      this.workers[pooled.index] = this.spawn(pooled.index);
    }
  }

  private checkUsable(): void {
    if (this.startupFailure) {
      throw new TargetUnavailableError(
        `The parallel target's workers could not start (${this.startupFailure.message}); use target 'cpu', or see the worker's error above.`,
        { cause: this.startupFailure },
      );
    }
    if (this.terminated) throw new TargetUnavailableError('This worker pool was terminated.');
  }

  /** Checks the workers a blocked thread waits for; a stopped one is counted out of the job. */
  private checkLiveness(running: RunningJob): void {
    for (const pooled of running.participants) {
      if (pooled.worker.hasStopped() || pooled.retired) markWorkerDead(this.control, pooled.index);
    }
  }

  // ------------------------------------------------------------------ jobs

  private start(job: Job, async: boolean): RunningJob {
    const { control } = this;
    const { int32, float64 } = control;
    const idle = this.workers.filter((w) => !w.retired && Atomics.load(int32, control.workerSlot(w.index, WorkerSlot.state)) === WorkerState.idle);
    let candidates = idle;
    // A sync call's thread also runs chunks when asked to, and always when no worker is ready yet;
    // an awaited call's thread never does (see `run`).
    const callerRuns = job.command === Command.run && !async && !job.limits && (idle.length === 0 || (this.options.callerRuns !== false && !job.turns));
    const running: RunningJob = { job, async, callerRuns, participants: candidates };
    this.current = running;

    // The job first, then who takes part: a worker marked busy reads the job at once.
    int32[Slot.command] = job.command;
    int32[Slot.diedWorker] = 0;
    if (job.command === Command.run) {
      const total = job.total!;
      const threads = idle.length + (callerRuns ? 1 : 0);
      const { chunks, chunkSize } = chunking(total, threads, this.options, job.singleChunk === true);
      // Workers beyond the chunks there are would wake only to find none left: a small call that is
      // one chunk runs on the calling thread alone and costs no round trip.
      candidates = idle.slice(0, Math.max(0, chunks - (callerRuns ? 1 : 0)));
      const turns = job.turns ?? [{ runner: job.runner!, argumentSet: job.argumentSet!, copies: true }];
      turns.forEach((turn, t) => {
        int32[turnSlot(t, 0)] = turn.runner.id;
        int32[turnSlot(t, 1)] = turn.argumentSet.id;
      });
      int32[Slot.turns] = turns.length;
      int32[Slot.turnCopies] = turns.reduce((mask, turn, t) => (turn.copies ? mask | (1 << t) : mask), 0);
      int32[Slot.chunks] = chunks;
      int32[Slot.errorChunk] = int32[Slot.chunks]!;
      // Set before any worker is woken: a chunk at or above it waits for its inputs.
      Atomics.store(int32, Slot.inputsReady, job.pipeline ? 0 : chunks);
      // An awaited job whose results the calling thread copies back learns which chunks are done.
      control.trackChunks(async && job.pipeline?.results.length ? chunks : 0);
      float64[TOTAL_F64] = total;
      float64[CHUNK_SIZE_F64] = chunkSize;
      for (const { operand, kind, value } of job.scalars ?? []) {
        const slot = SCALARS_F64 + operand;
        if (kind === 'int64') control.bigInt64[slot] = value as bigint;
        else if (kind === 'uint64') control.bigUint64[slot] = value as bigint;
        else float64[slot] = Number(value);
      }
    } else {
      int32[Slot.chunks] = 0;
      int32[Slot.errorChunk] = 0;
    }
    Atomics.store(int32, Slot.nextChunk, 0);
    Atomics.store(int32, Slot.remaining, candidates.length);
    for (const pooled of candidates) {
      if (job.command === Command.run) {
        for (const { runner, argumentSet } of job.turns ?? [{ runner: job.runner!, argumentSet: job.argumentSet! }]) {
          if (!pooled.runners.has(runner.id)) {
            this.post(pooled, { type: 'runner', id: runner.id, source: runner.source, sites: portableSites(runner.sites), ...(runner.wasm ? { wasm: runner.wasm(pooled.index) } : {}) });
            pooled.runners.add(runner.id);
          }
          if (!pooled.argumentSets.has(argumentSet.id)) {
            this.post(pooled, argumentSet.message);
            pooled.argumentSets.add(argumentSet.id);
          }
        }
        if (job.copies?.length) this.post(pooled, { type: 'copies', copies: job.copies });
        if (job.turns) control.clearTurnTimes(pooled.index);
      }
      Atomics.store(int32, control.workerSlot(pooled.index, WorkerSlot.errorChunk), -1);
      Atomics.store(int32, control.workerSlot(pooled.index, WorkerSlot.mailbox), pooled.posted);
    }
    running.participants = candidates.filter((pooled) => {
      const slot = control.workerSlot(pooled.index, WorkerSlot.state);
      if (Atomics.compareExchange(int32, slot, WorkerState.idle, WorkerState.busy) !== WorkerState.idle) {
        Atomics.sub(int32, Slot.remaining, 1); // it died since: it takes no part
        return false;
      }
      Atomics.notify(int32, slot, 1);
      // Whoever waits asynchronously for workers must hold the process open meanwhile.
      if (async) pooled.worker.ref();
      return true;
    });
    return running;
  }

  /**
   * Starts a job's pipeline: its input copies open its chunks to the threads as their inputs come
   * in, and where the job tracks its chunks, the results of those done are copied back.
   */
  private beginPipeline(running: RunningJob, pipeline: CopyPipeline): void {
    const { control } = this;
    const { int32, float64 } = control;
    let opened = 0;
    const progress = control.tracksChunks
      ? {
          done: (chunk: number) => control.chunkDone(chunk),
          count: () => Atomics.load(int32, Slot.chunksDone),
          changed: (seen: number) => {
            const wait = waitAsync(int32, Slot.chunksDone, seen, LIVENESS_INTERVAL_MS);
            return wait.async ? wait.value : Promise.resolve();
          },
        }
      : undefined;
    pipeline.begin({
      chunks: int32[Slot.chunks]!,
      chunkSize: float64[CHUNK_SIZE_F64]!,
      total: float64[TOTAL_F64]!,
      open: (ready) => {
        if (this.current !== running) return;
        openChunks(int32, ready, opened, this.wakeEverySleeper);
        opened = ready;
      },
      progress,
    });
  }

  /** The calling thread's share: it claims chunks like a worker until none are left. */
  private claimChunks(running: RunningJob): void {
    const { job } = running;
    if (!running.callerRuns || !job.caller) return;
    // In a job with turns it runs turn 0's runner (untimed), which makes the copies only where that turn does.
    const copies = job.turns && !job.turns[0]!.copies ? undefined : job.copies;
    const runner = copies?.length ? copyingRunner(job.caller.runner, copies) : job.caller.runner;
    runClaimedChunks(this.control, runner, job.caller.args, (chunk, error) => {
      running.callerError ??= { chunk, error };
    });
  }

  private waitSync(running: RunningJob): void {
    const { int32 } = this.control;
    for (;;) {
      const remaining = Atomics.load(int32, Slot.remaining);
      if (remaining <= 0) return;
      if (Atomics.wait(int32, Slot.remaining, remaining, LIVENESS_INTERVAL_MS) === 'timed-out') this.checkLiveness(running);
    }
  }

  /**
   * Waits for workers that are nearly done (a small call, or the calling thread took the last
   * chunk) without yielding, for at most ASYNC_GRACE_MS: resuming through the event loop would cost
   * more than the wait. @returns whether the workers are done
   */
  private waitBriefly(): boolean {
    const { int32 } = this.control;
    if (!platform().canBlock()) return Atomics.load(int32, Slot.remaining) <= 0;
    const graceUntil = performance.now() + ASYNC_GRACE_MS;
    for (;;) {
      const remaining = Atomics.load(int32, Slot.remaining);
      if (remaining <= 0) return true;
      const left = graceUntil - performance.now();
      if (left <= 0) return false;
      Atomics.wait(int32, Slot.remaining, remaining, left);
    }
  }

  private async waitAsync(running: RunningJob): Promise<void> {
    const { int32 } = this.control;
    // A sync call may have waited this job out and finished it meanwhile.
    while (!running.outcome) {
      const remaining = Atomics.load(int32, Slot.remaining);
      if (remaining <= 0) return;
      const wait = waitAsync(int32, Slot.remaining, remaining, 20 * LIVENESS_INTERVAL_MS);
      if (!wait.async) continue;
      const interrupted = new Promise<'interrupted'>((resolve) => (running.interrupt = () => resolve('interrupted')));
      const woke = await Promise.race([wait.value, interrupted]);
      if (running.stopped) return;
      if (woke === 'timed-out') this.checkLiveness(running);
    }
  }

  /** What the job's workers measured of each turn, over all their chunks of it. */
  private turnTimes(running: RunningJob): TurnTime[] {
    return running.job.turns!.map((_, t) => {
      const times = running.participants.map((pooled) => this.control.turnTime(pooled.index, t));
      const seconds = times.reduce((sum, time) => sum + time.seconds, 0);
      const indices = times.reduce((sum, time) => sum + time.indices, 0);
      return { mean: indices > 0 ? seconds / indices : Infinity, least: Math.min(...times.map((time) => time.least)) };
    });
  }

  /** Reads how the job ended (once), frees the pool and hands it to the next waiting job. */
  private finish(running: RunningJob): JobOutcome {
    if (running.outcome) return running.outcome;
    const { control } = this;
    let lowest: { chunk: number; error: Error } | undefined;
    if (running.callerError) lowest = { chunk: running.callerError.chunk, error: running.callerError.error as Error };
    for (const pooled of running.participants) {
      const reported = control.readError(pooled.index);
      if (reported && (!lowest || reported.chunk < lowest.chunk)) {
        const error = rebuildError(reported.name, reported.message);
        // The worker's runner has no functions: the site here has, to say the user's position.
        const site = reported.site === undefined ? undefined : runnerOfChunk(running.job, reported.chunk)?.sites[reported.site];
        if (site) placeInFile(error, site, site.array);
        lowest = { chunk: reported.chunk, error };
      }
    }
    const died = Atomics.load(control.int32, Slot.diedWorker);
    if (running.stopped) {
      running.outcome = { ok: false, error: running.stopped };
    } else if (died > 0) {
      const pooled = this.workers[died - 1]!;
      // The exit code and error arrive as events, which a sync call's thread may not have run yet.
      const how = pooled.failure ? `: ${pooled.failure.message}` : pooled.exitCode !== undefined ? ` (exit code ${pooled.exitCode})` : ' (it exited or ran out of memory)';
      running.outcome = {
        ok: false,
        error: new WorkerError(
          `Worker ${died - 1} of the parallel target stopped while running this call${how}. The outputs may be partially written; the worker has been replaced, so the call can be retried.`,
        ),
      };
    } else {
      running.outcome = lowest ? { ok: false, error: lowest.error } : running.job.turns ? { ok: true, turnTimes: this.turnTimes(running) } : { ok: true };
    }
    this.current = undefined;
    // Copies still to make are of chunks no thread runs any more (skipped after an error).
    running.job.pipeline?.cancel();
    // Every worker, not only the participants: `ready()` may have held the others meanwhile.
    if (running.async) for (const pooled of this.workers) pooled.worker.unref();
    this.replaceDead();
    this.waiting.shift()?.();
    return running.outcome;
  }
}

/** The runner that ran chunk `chunk` of a job (its turn's, in a job with turns). */
function runnerOfChunk(job: Job, chunk: number): RunnerSource | undefined {
  if (!job.turns) return job.runner;
  return job.turns[chunk % job.turns.length]!.runner;
}

type WaitAsyncResult = { async: false; value: 'not-equal' | 'timed-out' } | { async: true; value: Promise<'ok' | 'timed-out'> };

/**
 * `Atomics.waitAsync` (Node ≥ 16, Chromium, Safari; not in the ES2022 lib typings). Where a browser
 * lacks it, a short timer stands in: the caller re-reads the slot after it.
 */
function waitAsync(array: Int32Array, index: number, value: number, timeoutMs: number): WaitAsyncResult {
  const native = (Atomics as unknown as { waitAsync?(a: Int32Array, i: number, v: number, t: number): WaitAsyncResult }).waitAsync;
  if (native) return native(array, index, value, timeoutMs);
  return { async: true, value: new Promise((resolve) => setTimeout(() => resolve('timed-out'), 1)) };
}
