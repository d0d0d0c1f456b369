/**
 * The worker pool: persistent `worker_threads`, one job at a time over a shared control block.
 *
 * A job is the loop space of one call cut into chunks. The calling thread writes the job into the
 * control block, marks as many idle workers busy as there are chunks for and notifies each (an idle
 * worker sleeps on its own state slot); they and the calling thread then claim chunks with
 * `Atomics.add` until none are left (claiming instead of a fixed split keeps every thread busy
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
import type { Runner, RunnerArgs } from '../cpu/codegen.js';
import { rebuildError, WorkerError } from './errors.js';
import type { ArgumentSet, RunnerSource } from './kernel-cache.js';
import {
  CHUNK_SIZE_F64, Command, ControlBlock, markWorkerDead, runChunk, SCALARS_F64, type ScalarKind, Slot, TOTAL_F64,
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
}

/** How a job ended. */
export type JobOutcome = { readonly ok: true } | { readonly ok: false; readonly error: Error };

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
}

export interface PoolOptions {
  readonly size: number;
  /**
   * Whether the calling thread claims chunks too, instead of only waiting. A call of one chunk then
   * wakes no worker at all; on large calls (2 cores: 3 threads against 2 workers alone) the two
   * measured the same. @default true
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
  /** The worker script, where the default (`worker.js` beside the library) does not fit a bundle. */
  readonly workerUrl?: ScriptUrl;
}

/** Chunks smaller than this many loop indices cost more to hand out than they save. */
const MIN_CHUNK = 64;
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
      // An async job is in flight: its workers finish without this thread's help.
      this.waitSync(this.current);
      this.finish(this.current);
    }
    const running = this.start(job, false);
    this.claimChunks(running);
    this.waitSync(running);
    return this.finish(running);
  }

  /** Runs a job; the calling thread claims chunks before it yields, then waits asynchronously. */
  async run(job: Job): Promise<JobOutcome> {
    this.checkUsable();
    while (this.current) await new Promise<void>((resolve) => this.waiting.push(resolve));
    this.checkUsable();
    const running = this.start(job, true);
    this.claimChunks(running);
    if (!this.waitBriefly()) await this.waitAsync(running);
    return this.finish(running);
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

  /** Stops every worker. */
  async terminate(): Promise<void> {
    this.terminated = true;
    await Promise.all(
      this.workers.map((pooled) => {
        pooled.retired = true;
        return pooled.worker.terminate();
      }),
    );
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
      if (pooled.worker.hasStopped()) markWorkerDead(this.control, pooled.index);
    }
  }

  // ------------------------------------------------------------------ jobs

  private start(job: Job, async: boolean): RunningJob {
    const { control } = this;
    const { int32, float64 } = control;
    const idle = this.workers.filter((w) => !w.retired && Atomics.load(int32, control.workerSlot(w.index, WorkerSlot.state)) === WorkerState.idle);
    let candidates = idle;
    // The calling thread also runs chunks when asked to, and always when no worker is ready yet.
    const callerRuns = job.command === Command.run && (this.options.callerRuns !== false || idle.length === 0);
    const running: RunningJob = { job, async, callerRuns, participants: candidates };
    this.current = running;

    // The job first, then who takes part: a worker marked busy reads the job at once.
    int32[Slot.command] = job.command;
    int32[Slot.diedWorker] = 0;
    if (job.command === Command.run) {
      const total = job.total!;
      const threads = idle.length + (callerRuns ? 1 : 0);
      const chunkCount = Math.max(1, Math.min(Math.ceil(total / (this.options.minChunk ?? MIN_CHUNK)), threads * (this.options.chunksPerThread ?? 8)));
      const chunkSize = Math.ceil(total / chunkCount);
      const chunks = Math.ceil(total / chunkSize);
      // Workers beyond the chunks there are would wake only to find none left: a small call that is
      // one chunk runs on the calling thread alone and costs no round trip.
      candidates = idle.slice(0, Math.max(0, chunks - (callerRuns ? 1 : 0)));
      int32[Slot.runner] = job.runner!.id;
      int32[Slot.args] = job.argumentSet!.id;
      int32[Slot.chunks] = chunks;
      int32[Slot.errorChunk] = int32[Slot.chunks]!;
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
        const { runner, argumentSet } = job;
        if (!pooled.runners.has(runner!.id)) {
          this.post(pooled, { type: 'runner', id: runner!.id, source: runner!.source, sites: runner!.sites });
          pooled.runners.add(runner!.id);
        }
        if (!pooled.argumentSets.has(argumentSet!.id)) {
          this.post(pooled, argumentSet!.message);
          pooled.argumentSets.add(argumentSet!.id);
        }
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

  /** The calling thread's share: it claims chunks like a worker until none are left. */
  private claimChunks(running: RunningJob): void {
    const { job } = running;
    if (!running.callerRuns || !job.caller) return;
    const { int32, float64 } = this.control;
    const { runner, args } = job.caller;
    const chunks = int32[Slot.chunks]!;
    const total = float64[TOTAL_F64]!;
    const chunkSize = float64[CHUNK_SIZE_F64]!;
    for (;;) {
      const chunk = Atomics.add(int32, Slot.nextChunk, 1);
      if (chunk >= chunks) return;
      if (chunk > Atomics.load(int32, Slot.errorChunk)) continue;
      try {
        runChunk(runner, args, chunk, chunkSize, total);
      } catch (error) {
        running.callerError ??= { chunk, error };
        this.control.lowerErrorChunk(chunk);
      }
    }
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
      if (wait.async && (await wait.value) === 'timed-out') this.checkLiveness(running);
    }
  }

  /** Reads how the job ended (once), frees the pool and hands it to the next waiting job. */
  private finish(running: RunningJob): JobOutcome {
    if (running.outcome) return running.outcome;
    const { control } = this;
    let lowest: { chunk: number; error: Error } | undefined;
    if (running.callerError) lowest = { chunk: running.callerError.chunk, error: running.callerError.error as Error };
    for (const pooled of running.participants) {
      const reported = control.readError(pooled.index);
      if (reported && (!lowest || reported.chunk < lowest.chunk)) lowest = { chunk: reported.chunk, error: rebuildError(reported.name, reported.message) };
    }
    const died = Atomics.load(control.int32, Slot.diedWorker);
    if (died > 0) {
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
      running.outcome = lowest ? { ok: false, error: lowest.error } : { ok: true };
    }
    this.current = undefined;
    if (running.async) for (const pooled of running.participants) pooled.worker.unref();
    this.replaceDead();
    this.waiting.shift()?.();
    return running.outcome;
  }
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
