/**
 * The parallel target: the cpu target's generated runner, run over chunks of the loop space by a
 * pool of worker threads on shared memory. Only the driver differs from the cpu target (as Numba's
 * parallel target overrides only `build()`), so results are bit-identical to it.
 *
 * A call runs on the calling thread instead, exactly as on the cpu target, when threads cannot pay
 * for themselves (less work than the threshold, or a kernel so cheap that the calling thread
 * measured faster: placement.ts) or when splitting could change the answer (an output that
 * several loop indices write, see staging.ts).
 */
import type { TypedKernel } from '../../compiler/ir.js';
import { type DType, DTYPES, type TypedArray } from '../../dtypes.js';
import { TargetUnavailableError } from '../../errors.js';
import { checkOptions, type OptionRules, rule } from '../../options.js';
import { platform, type ScriptUrl, unrefTimeout } from '../../platform/platform.js';
import { type CallPlan, isDeviceResident, loopSize } from '../../plan.js';
import { probes } from '../../probes.js';
import { prepareRunnerArgs } from '../cpu/memory-layout.js';
import { cpuTarget, runSettledEngine, variantsOf } from '../cpu/index.js';
import { isShared } from '../../shared-memory.js';
import type { Target } from '../target.js';
import { ArgumentSets, type RunnerSource, runnerSourceFor, wasmRunnerSourceFor } from './kernel-cache.js';
import { chooseEngine, isInWasmMemory } from '../cpu/wasm/index.js';
import { calibrationOf, callShapeKey, decideEngine, type EngineDecision, type Engine, measuredChoice, recordTurns, turnsOf } from '../cpu/engine-calibration.js';
import { fastmathNote, variantOf, wasmKernelFor, wasmLayoutOf, WasmMemoryFull, wasmVariant, type WasmVariant } from '../cpu/wasm/engine.js';
import { buffer as wasmBuffer, release as releaseWasm, reserve } from '../cpu/wasm/memory.js';
import { estimatedSeconds, isCostly, MIN_COSTED_WORK, POOL_SECONDS, recordCallTime } from './kernel-cost.js';
import { placeCall, placementKey, recordPlacement } from './placement.js';
import { chunking, type Job, type JobOutcome, minChunkOf, type PoolOptions, type ScalarArgument, type Turn, type TurnTime, WorkerPool } from './pool.js';
import { Command, MAX_OPERANDS, scalarKindOf, type WorkerMessage } from './protocol.js';
import { type ArenaSource, canSplitLoop, type CopyPipeline, type StagedOperands, StagingArenas, stageOperands, yieldToEventLoop } from './staging.js';

/** Options of the parallel target, shared by every ufunc that uses it. */
export interface ParallelOptions {
  /**
   * Worker threads in the pool; 0 runs every call on the calling thread.
   * @default the number of logical cores (`os.availableParallelism()` in Node,
   *   `navigator.hardwareConcurrency` in a page)
   */
  readonly workers: number;
  /**
   * Calls with less work than this run on the calling thread with the cpu runner. Work is the loop
   * size times the largest operand's core size: elements for vectorize, rows × row length for
   * guvectorize. Calls with operands outside shared memory need 4 times as much (they pay for
   * copies too). A call of a costly kernel goes to the workers below it too (kernel-cost.ts).
   * @default 32768 (see DEFAULT_THRESHOLD)
   */
  readonly threshold: number;
  /**
   * The workers' script. By default `worker.js` beside the library's module, where it is in the
   * package and where a bundle has it when the package's `ufunc/worker` entry is bundled beside the
   * app as `worker.js`; set this when the bundle puts it elsewhere.
   * @default undefined (`new URL('./worker.js', import.meta.url)`)
   */
  readonly workerUrl?: ScriptUrl | undefined;
}

/**
 * Where splitting a call starts to pay for a cheap kernel: `a + b` on float32 with both inputs and
 * the output in shared memory, sync calls, median of 21 samples after warm-up, on 2 cores (AMD
 * EPYC VM, Node 20). The pool breaks even at about 24,000 elements (125 µs a call) and wins from
 * 32,768 on: 1.0–1.2× there, 1.3× at 40,000–50,000, 1.6× at 100,000, 1.8× at 10⁶. A costlier
 * kernel wins sooner (`Math.exp` at 4,096 elements already), so this is the conservative end.
 */
export const DEFAULT_THRESHOLD = 32_768;

/**
 * A call whose operands must be copied into shared memory first needs this many times the
 * threshold's work: those copies cost about what `a + b` itself costs. Measured as above with
 * ordinary arrays, the pool breaks even with the calling thread at about 131,072 elements.
 */
const STAGED_THRESHOLD_FACTOR = 4;

const PARALLEL_OPTIONS: OptionRules = {
  workers: rule.nonNegativeInteger(),
  threshold: rule.nonNegativeInteger(),
  workerUrl: (v) => (typeof v === 'string' || (typeof v === 'object' && v !== null && typeof (v as { href?: unknown }).href === 'string') ? undefined : 'a string or a URL'),
};

// `workers` is read from the platform on first use, not at import: the platform is installed by the
// package entry, which may import this module first.
let configured: { workers?: number; threshold: number; workerUrl?: ScriptUrl | undefined } = { threshold: DEFAULT_THRESHOLD };
function currentOptions(): ParallelOptions {
  configured.workers ??= platform().cores();
  return configured as ParallelOptions; // read on every call: not copied
}
/** Pool settings only tests change. */
let poolTuning: Omit<PoolOptions, 'size'> = {};

/**
 * Sets options of the parallel target. A new pool size takes effect at the next call that finds the
 * pool idle; the threshold at once.
 *
 * @param changes - the options to change; others keep their values
 * @param changes.workers - worker threads (0 or more; @default the number of logical cores)
 * @param changes.threshold - the least work a call needs to use the workers (@default 32768)
 * @example
 * setParallelOptions({ workers: 4, threshold: 100_000 });
 */
export function setParallelOptions(changes: Partial<ParallelOptions>): void {
  checkOptions(changes, PARALLEL_OPTIONS, '`setParallelOptions`');
  configured = {
    workers: changes.workers ?? configured.workers,
    threshold: changes.threshold ?? configured.threshold,
    workerUrl: 'workerUrl' in changes ? changes.workerUrl : configured.workerUrl,
  };
}

/**
 * The parallel target's options as they are now.
 *
 * @returns the pool size and threshold
 * @example
 * const { workers } = getParallelOptions();
 */
export function getParallelOptions(): ParallelOptions {
  return { ...currentOptions() };
}

let pool: WorkerPool | undefined;
const arenas = new StagingArenas();
/** Whether calls copy their inputs while the workers compute (tests and A/B benchmarks turn it off). */
let pipelineCopies = true;
/**
 * Whether awaited calls copy results back to an ordinary `out` as chunks are done, while later ones
 * run. Off: on the 16-core host it gained nothing (bench/results/ordinary-ab-intel-xeon-16c.md: the
 * calling thread's input copies outlast the workers' compute on every corpus kernel, so the results
 * are all done by the time it could copy them), and runs with it on showed the same ufunc's later
 * `sharedArray` calls 20× slower there, unexplained; tests and A/B benchmarks turn it on.
 */
let pipelineResults = false;
/** Whether the threads copy in staged operands whose own memory is shared (A/B benchmarks turn it off). */
let threadCopiesIn = true;
/**
 * Whether an output the call allocated is staged cleared rather than copied in (A/B benchmarks turn
 * it off: as before, when the fresh output's untouched pages were read and then written back).
 */
let freshOutputsCleared = true;

/** `plan` as staging sees it: without its outputs' `fresh` marks where the A/B turned clearing off. */
function stagingPlan(plan: CallPlan): CallPlan {
  return freshOutputsCleared ? plan : { ...plan, operands: plan.operands.map(({ fresh: _fresh, ...view }) => view) };
}
/**
 * Whether a call the pool could take may run on the calling thread where that measured faster
 * (placement.ts); tests of the pool's own workings and A/B benchmarks turn it off.
 */
let measuredPlacement = true;
const argumentSets = new ArgumentSets();

function currentPool(): WorkerPool {
  const options = currentOptions();
  if (pool && (pool.size !== options.workers || pool.workerUrl !== options.workerUrl) && pool.idle) {
    void pool.terminate();
    pool = undefined;
  }
  pool ??= new WorkerPool({ size: options.workers, ...(options.workerUrl !== undefined ? { workerUrl: options.workerUrl } : {}), ...poolTuning });
  return pool;
}

/**
 * Starts the pool's workers in the background, where the parallel target can run here: the front
 * calls this when a ufunc on the parallel target is defined (as Numba launches its threads when a
 * parallel ufunc is built), so that the first call finds them started. Holds nothing open and
 * throws nothing: a pool that cannot start is reported by the first call.
 */
export function warmUpPool(): void {
  if (platform().parallelUnavailable() !== undefined || currentOptions().workers === 0) return;
  try {
    currentPool();
  } catch {
    // The call reports it (a missing worker script, say).
  }
}

/**
 * Resolves once the parallel target's workers have started and wait for jobs (starting them if
 * need be); at once where the target has no workers.
 */
export async function poolReady(): Promise<void> {
  if (platform().parallelUnavailable() !== undefined || currentOptions().workers === 0) return;
  await currentPool().ready();
}

/** Idle for this long, the pool lets go of staging arenas and of workers' cached argument sets. */
const IDLE_TRIM_MS = 2000;
let lastCallEnded = 0;
let trimArmed = false;

/** Notes a call's end; arms the trim timer (re-arming a timer on every call costs more than this). */
function noteCallEnded(): void {
  lastCallEnded = performance.now();
  if (trimArmed) return;
  trimArmed = true;
  unrefTimeout(trimIdle, IDLE_TRIM_MS);
}

function trimIdle(): void {
  const idleFor = performance.now() - lastCallEnded;
  if (idleFor < IDLE_TRIM_MS || (pool && !pool.idle)) {
    unrefTimeout(trimIdle, Math.max(IDLE_TRIM_MS - idleFor, 10));
    return;
  }
  trimArmed = false;
  arenas.trim();
  argumentSets.clear();
  if (!pool) return;
  pool.forget([], 'all');
  pool.drain().catch(() => {}); // a failure here has no call to report to; the next call sees it
}

/** The work of a call, as the threshold counts it. */
function workOf(plan: CallPlan, loop: number): number {
  let core = 1;
  for (const o of plan.operands) {
    let size = 1;
    for (const n of o.coreShape) size *= n;
    if (size > core) core = size;
  }
  return loop * core;
}

interface PlannedJob {
  readonly pool: WorkerPool;
  readonly job: Job;
  readonly staged: StagedOperands;
  /** Its engine, and where the call is a trial of engine-calibration.ts, what to record its chunks' times in. */
  readonly decision: EngineDecision;
  /** In a trial, the candidates taking its chunks in turns (the job's turns, in order). */
  readonly turns?: readonly Engine[];
  readonly startedAt: number;
  /** Its shape in placement.ts, where its time is recorded there (the pool was idle when it began). */
  readonly placement?: string;
}

/**
 * A call the calling thread runs: why, and where placement.ts chose the calling thread for a call
 * the pool could take, its shape there (its time is recorded) and whether it is awaited.
 */
interface OnCallingThread {
  readonly reason: string;
  readonly placed?: { readonly key: string; readonly awaited: boolean };
}

/** The calling-thread reason of a loop that may not be split (counted apart by the tests). */
const UNSPLITTABLE = 'several loop indices write the same output elements, so the loop cannot be split';

/**
 * Why a call runs on the calling thread, or undefined where it goes to the workers.
 *
 * @param awaited - an awaited call (else `f.sync`): it runs on the calling thread only briefly (placement.ts)
 * @param count - a call, not `explain`: it counts toward placement.ts's re-checks
 */
function callingThreadReason(plan: CallPlan, awaited: boolean, count = false): OnCallingThread | { recheck: true } | undefined {
  const reason = ruleReason(plan);
  if (reason !== undefined) return { reason };
  if (plan.limits !== undefined || !measuredPlacement || !poolEngineSettled(plan)) return undefined;
  const work = workOf(plan, loopSize(plan));
  const key = placementKey(plan, work);
  const placed = placeCall(plan.kernel, key, work, awaited, currentOptions().workers, count);
  if (placed.place === 'thread') return { reason: placed.reason!, placed: { key, awaited } };
  return placed.recheck ? { recheck: true } : undefined;
}

/**
 * Whether the engine the workers run a call on is settled (engine-calibration.ts): before, the
 * pool's calls alternate engines and its time is not yet what it will be, so placement.ts waits.
 */
function poolEngineSettled(plan: CallPlan): boolean {
  const total = loopSize(plan);
  if (!chooseEngine(plan, total, notShared).guess) return true;
  return calibrationOf(plan.kernel, callShapeKey(plan, prepareRunnerArgs(plan).layout, 'parallel'))?.winner !== undefined;
}

/** Why a call runs on the calling thread by the rules that need no measurement of where it ran. */
function ruleReason(plan: CallPlan): string | undefined {
  const options = currentOptions();
  const total = loopSize(plan);
  if (total === 0) return 'the loop is empty';
  if (options.workers === 0) return 'the pool has no workers (setParallelOptions({ workers: 0 }))';
  const work = workOf(plan, total);
  // A call with a signal or timeout runs on the workers whatever its size: only there can it be
  // stopped (a kernel that never ends does so on one element as on a million).
  const limited = plan.limits !== undefined;
  // A kernel measured (or presumed, kernel-cost.ts) costly goes to the workers below the threshold too.
  const costly = isCostly(plan.kernel, work);
  if (work < options.threshold && !limited && !costly) return `its work (${work}) is below the threshold (${options.threshold})${costNote(plan.kernel, work)}`;
  const { operands } = plan;
  if (operands.length > MAX_OPERANDS) return `it has more than ${MAX_OPERANDS} operands`;
  if (operands.some((o) => isDeviceResident(o.data))) return 'an operand lives on the GPU';
  if (!canSplitLoop(plan) && !limited) return UNSPLITTABLE;
  if (!limited && !costly && work < STAGED_THRESHOLD_FACTOR * options.threshold && operands.some((o) => o.scalar === undefined && !isShared(o.data as TypedArray))) {
    return `its work (${work}) is below ${STAGED_THRESHOLD_FACTOR}× the threshold and some arrays would have to be copied into shared memory${costNote(plan.kernel, work)}`;
  }
  return undefined;
}

/** What the kernel was measured to cost, for a calling-thread reason. */
function costNote(kernel: TypedKernel, work: number): string {
  const seconds = estimatedSeconds(kernel, work);
  if (seconds === undefined) return '';
  return `, and its measured cost, about ${(seconds * 1e3).toPrecision(2)} ms on one thread, is below ${POOL_SECONDS * 1e3} ms`;
}

/** Arrays outside shared memory are copied for the workers either way. */
const notShared = (data: TypedArray): boolean => !isShared(data);

/** Staging areas in the Wasm memory, for calls the workers run as Wasm. */
const wasmArenas: ArenaSource = {
  acquire(bytes) {
    const base = reserve(Math.max(bytes, 1));
    return base === undefined ? undefined : { buffer: wasmBuffer(), base, bytes: Math.max(bytes, 1) };
  },
  release(arena) {
    releaseWasm(arena.base, (arena as { bytes: number } & typeof arena).bytes);
  },
};

/**
 * The operands staged for the Wasm engine (their copies in not yet made) and its runner, or
 * undefined where the JS runner runs.
 */
function wasmJob(plan: CallPlan, poolSize: number, variant: WasmVariant): { staged: StagedOperands; stagedPlan: CallPlan; runner: RunnerSource } | undefined {
  const staged = stageOperands(stagingPlan(plan), wasmArenas, isInWasmMemory, true);
  if (!staged) return undefined; // the Wasm memory is full: the JS runner runs the call
  const stagedPlan = stagedPlanOf(plan, staged);
  const runner = wasmRunnerSourceFor(stagedPlan, wasmLayoutOf(prepareRunnerArgs(stagedPlan).layout, variant), poolSize);
  if (!runner) {
    staged.abandon();
    return undefined;
  }
  return { staged, stagedPlan, runner };
}

/**
 * The plan over the staged copies (the runner is specialised on the memory it indexes).
 *
 * @param keep - operands left where they are
 */
function stagedPlanOf(plan: CallPlan, staged: StagedOperands, keep?: ReadonlySet<number>): CallPlan {
  return staged.replaced
    ? { ...plan, operands: plan.operands.map((o, k) => (staged.data[k] === o.data || keep?.has(k) ? o : { ...o, data: staged.data[k] as TypedArray, offset: staged.offset[k]! })) }
    : plan;
}

/**
 * The job for a call, or why the call runs on the calling thread. The operands staged into shared
 * memory are not yet copied there: the caller copies them (`copyInputs`).
 *
 * @param awaited - an awaited call (else `f.sync`)
 */
function planJob(plan: CallPlan, awaited: boolean): PlannedJob | OnCallingThread {
  const onThread = callingThreadReason(plan, awaited, true);
  if (onThread !== undefined && 'reason' in onThread) return onThread;
  const total = loopSize(plan);
  const workers = currentPool();
  const startedAt = performance.now();
  const placement = workers.idle && !plan.limits ? placementKey(plan, workOf(plan, total)) : undefined;
  // A re-check of the pool by placement.ts runs the engine measured there, not a trial of the others.
  let decision: EngineDecision = onThread?.recheck
    ? { engine: settledEngine(plan), loop: total }
    : decideEngine(plan, total, 'parallel', chooseEngine(plan, total, notShared), () => variantsOf(plan));
  if (decision.trial && plan.limits) {
    // A call with limits may be stopped midway (its workers terminated): not a trial.
    recordTurns(decision.trial, undefined);
    decision = { engine: decision.trial.winner ?? decision.trial.guess, loop: decision.loop };
  }
  try {
    const planned = decision.trial ? trialJobFor(plan, workers, decision, startedAt) : jobFor(plan, workers, decision, startedAt);
    return { ...planned, ...(placement !== undefined ? { placement } : {}) };
  } catch (error) {
    // Nothing ran: the trial recorded no time, and the shape's next large call is one.
    if (decision.trial) recordTurns(decision.trial, undefined);
    throw error;
  }
}

/** The engine measured fastest on the workers for a call's shape (before that, the guess). */
function settledEngine(plan: CallPlan): Engine {
  const total = loopSize(plan);
  const choice = measuredChoice(plan, total, 'parallel', chooseEngine(plan, total, notShared));
  return choice.engine === 'js' ? 'js' : variantOf(choice);
}

/** The job of {@link planJob}, on the engine decided. */
function jobFor(plan: CallPlan, workers: WorkerPool, decision: EngineDecision, startedAt: number): PlannedJob {
  const splittable = canSplitLoop(plan);
  const total = loopSize(plan);
  let runner: RunnerSource;
  let staged: StagedOperands;
  let stagedPlan: CallPlan;
  const wasm = decision.engine !== 'js' ? wasmJob(plan, workers.size, decision.engine) : undefined;
  if (wasm) {
    ({ runner, staged, stagedPlan } = wasm);
    probes.wasmJob?.();
  } else {
    staged = stageOperands(stagingPlan(plan), arenas, undefined, true);
    stagedPlan = stagedPlanOf(plan, staged);
  }
  // Operands whose own memory is shared are copied by the threads, chunk by chunk as they run
  // them, in parallel and from cache (for the JS runner none is staged: it reads shared memory).
  const copies = staged.chunkCopies(plan, threadCopiesIn);
  const { args, layout } = prepareRunnerArgs(stagedPlan);
  let evictedRunners: readonly number[] = [];
  if (!wasm) ({ runner, evicted: evictedRunners } = runnerSourceFor(stagedPlan, layout));
  const { set, evicted: evictedSets } = argumentSets.lookup(stagedPlan, args);
  if (evictedRunners.length || evictedSets.length) workers.forget(evictedRunners, evictedSets);
  const scalars: ScalarArgument[] = [];
  plan.operands.forEach((o, operand) => {
    if (o.scalar !== undefined) scalars.push({ operand, kind: scalarKindOf(o.dtype), value: o.scalar });
  });
  probes.poolCall?.();
  const job: Job = {
    command: Command.run, runner: runner!, argumentSet: set, total, scalars, caller: { runner: runner!.runner, args },
    ...(copies.length ? { copies } : {}),
    ...(plan.limits ? { limits: plan.limits } : {}),
    // Not splittable: one worker runs the loop in order, exactly as the calling thread would.
    ...(splittable ? {} : { singleChunk: true }),
  };
  return { pool: workers, job, staged, decision, startedAt };
}

/**
 * The job of a trial of engine-calibration.ts on the workers: every candidate takes chunks of the
 * call in turns ({@link turnsOf}), each chunk timed by the thread that runs it. The operands are
 * staged as for the Wasm engine (the JS runner reads the Wasm memory as well), so nothing is
 * copied twice; where an operand's own memory is shared and the Wasm engine's threads copy it
 * chunk by chunk (`chunkCopies`), the JS engine's chunks read and write it where it is, as they
 * do when JS runs the whole call, and make no copies: each engine's chunks cost what they cost it
 * alone. Where the Wasm memory has no room, the call runs on the JS engine and is no trial.
 */
function trialJobFor(plan: CallPlan, workers: WorkerPool, decision: EngineDecision, startedAt: number): PlannedJob {
  const trial = decision.trial!;
  const staged = stageOperands(stagingPlan(plan), wasmArenas, isInWasmMemory, true);
  if (!staged) {
    recordTurns(trial, undefined);
    return jobFor(plan, workers, { engine: 'js', loop: decision.loop }, startedAt);
  }
  const stagedPlan = stagedPlanOf(plan, staged);
  const copies = staged.chunkCopies(plan, threadCopiesIn);
  const { args, layout } = prepareRunnerArgs(stagedPlan);
  const { set, evicted } = argumentSets.lookup(stagedPlan, args);
  // The JS engine's view: the staged copies, except operands the Wasm engine's threads copy.
  const jsPlan = stagedPlanOf(plan, staged, staged.copiedByThreads());
  const turns: Turn[] = [];
  const engines: Engine[] = [];
  const evictedRunners: number[] = [];
  const evictedSets: number[] = [...evicted];
  for (const engine of turnsOf(trial)) {
    if (engine === 'js') {
      const js = prepareRunnerArgs(jsPlan);
      const { runner, evicted } = runnerSourceFor(jsPlan, js.layout);
      const jsSet = argumentSets.lookup(jsPlan, js.args);
      evictedRunners.push(...evicted);
      evictedSets.push(...jsSet.evicted);
      turns.push({ runner, argumentSet: jsSet.set, copies: false });
    } else {
      const runner = wasmRunnerSourceFor(stagedPlan, wasmLayoutOf(layout, engine), workers.size);
      if (!runner) continue; // no room for its local arrays: this candidate sits the trial out
      turns.push({ runner, argumentSet: set, copies: true });
    }
    engines.push(engine);
  }
  if (evictedRunners.length || evictedSets.length) workers.forget(evictedRunners, evictedSets);
  const scalars: ScalarArgument[] = [];
  plan.operands.forEach((o, operand) => {
    if (o.scalar !== undefined) scalars.push({ operand, kind: scalarKindOf(o.dtype), value: o.scalar });
  });
  probes.poolCall?.();
  const first = turns[0]!;
  const callerArgs = first.copies ? args : prepareRunnerArgs(jsPlan).args;
  const job: Job = {
    command: Command.run, runner: first.runner, argumentSet: first.argumentSet, total: loopSize(plan), scalars, caller: { runner: first.runner.runner, args: callerArgs },
    ...(copies.length ? { copies } : {}),
    ...(canSplitLoop(plan) ? {} : { singleChunk: true }),
    turns,
  };
  return { pool: workers, job, staged, decision, turns: engines, startedAt };
}

/**
 * Ends a call that was a trial of engine-calibration.ts: records each candidate's chunk times
 * where the call succeeded ({@link recordTurns}).
 */
function endTrial(planned: PlannedJob, outcome: JobOutcome | undefined): void {
  const { decision, turns } = planned;
  if (!decision.trial) return;
  if (outcome?.ok !== true || !turns || !outcome.turnTimes) return recordTurns(decision.trial, undefined);
  const means = outcome.turnTimes.map((time) => time.mean);
  const seconds = turnTimesHook ? turnTimesHook(turns, means, outcome.turnTimes) : means;
  recordTurns(decision.trial, new Map(turns.map((engine, t) => [engine, seconds[t]!])));
}

/**
 * Replaces the workers' chunk times of trials (tests: deterministic choices; benchmarks read them):
 * it gets the candidates in turn order, the seconds per loop index recorded for each, and all
 * that was measured of each.
 */
let turnTimesHook: ((engines: readonly Engine[], measured: readonly number[], times: readonly TurnTime[]) => readonly number[]) | undefined;

/**
 * Where and on which engine a call runs, for `f.explain(…)`: on the workers (each running the
 * Wasm kernel or the generated JS runner) or on the calling thread, as the cpu target would.
 */
function explain(plan: CallPlan): string {
  const onThread = callingThreadReason(plan, true);
  const why = onThread && 'reason' in onThread ? onThread.reason : undefined;
  if (why !== undefined) return `On the calling thread (${why}): ${cpuTarget.explain!(plan)}`;
  const choice = measuredChoice(plan, loopSize(plan), 'parallel', chooseEngine(plan, loopSize(plan), notShared), () => variantsOf(plan));
  const onWorkers = threadsOf(plan);
  if (choice.engine === 'js') return `${onWorkers} JavaScript: ${choice.reason}${fastmathNote(plan.kernel)}`;
  const { layout } = prepareRunnerArgs(plan);
  let module: Parameters<typeof wasmVariant>[1];
  try {
    module = wasmKernelFor(plan, wasmLayoutOf(layout, variantOf(choice))).module;
  } catch (error) {
    if (error instanceof WasmMemoryFull) return `${onWorkers} JavaScript: ${error.message}${fastmathNote(plan.kernel)}`;
    throw error;
  }
  return `${onWorkers} WebAssembly (${wasmVariant(plan, module)}): ${choice.reason}${fastmathNote(plan.kernel)}`;
}

/**
 * Which threads a call the pool takes runs on, as the pool cuts its loop (pool.ts `chunking`): a
 * loop of one chunk takes one worker when awaited, and in `f.sync` the calling thread alone.
 */
function threadsOf(plan: CallPlan): string {
  const { workers } = currentOptions();
  const total = loopSize(plan);
  const single = !canSplitLoop(plan);
  const callerRuns = poolTuning.callerRuns !== false;
  if (callerRuns && chunking(total, workers + 1, poolTuning, single).chunks === 1) {
    const why = single ? UNSPLITTABLE : `its loop of ${total} is one chunk: chunks are at least ${minChunkOf(poolTuning)} long`;
    return `On 1 worker when awaited, and on the calling thread alone in \`f.sync\` (${why}), running`;
  }
  const used = Math.min(workers, chunking(total, workers, poolTuning, single).chunks);
  return `On ${used} worker${used === 1 ? '' : 's'} (and the calling thread in \`f.sync\`; an awaited call leaves it free), each running`;
}

/** @param onThread - why the pool declined the call, where it was asked */
function runOnCallingThread(plan: CallPlan, onThread?: OnCallingThread): void {
  // An empty loop (inputs broadcast to an empty `out`) runs nowhere: no call to report.
  if (loopSize(plan) > 0) probes.callingThreadCall?.(onThread?.reason === UNSPLITTABLE);
  const work = workOf(plan, loopSize(plan));
  if (work < MIN_COSTED_WORK) return cpuTarget.runSync!(plan);
  const placed = onThread?.placed;
  const started = performance.now();
  // An awaited call placed here must stay brief: no trial of the slower engine (it could take 100×).
  if (placed?.awaited) runSettledEngine(plan);
  else cpuTarget.runSync!(plan);
  const seconds = (performance.now() - started) / 1000;
  recordCallTime(plan.kernel, work, seconds, 'thread');
  if (placed) recordPlacement(plan.kernel, placed.key, 'thread', work, seconds);
}

/** Records a pool call's wall time as the kernel's cost (kernel-cost.ts says why that is a fair bound). */
function recordPoolTime(plan: CallPlan, planned: PlannedJob, outcome: JobOutcome | undefined): void {
  if (outcome?.ok !== true || planned.job.limits) return;
  const work = workOf(plan, loopSize(plan));
  const seconds = (performance.now() - planned.startedAt) / 1000;
  recordCallTime(plan.kernel, work, seconds, 'pool');
  if (planned.placement !== undefined) recordPlacement(plan.kernel, planned.placement, 'pool', work, seconds);
}

function settle(outcome: JobOutcome): void {
  noteCallEnded();
  if (!outcome.ok) throw outcome.error;
}

/** Refuses calls where workers cannot run (a page that is not cross-origin isolated). */
function assertParallelAvailable(): void {
  const why = platform().parallelUnavailable();
  if (why !== undefined) throw new TargetUnavailableError(why);
}

/**
 * Inputs read in loop order are copied chunk by chunk, each chunk opened to the workers as soon as
 * its inputs are in, and in an awaited call, results written in loop order are copied back chunk
 * by chunk as the chunks are done (`CopyPipeline`): the pipeline of a job, where it has one. (Not
 * for a job with limits, which the pool runs apart, nor one of a single chunk.)
 */
function copyPipelineOf(plan: CallPlan, planned: PlannedJob, awaited: boolean): CopyPipeline | undefined {
  if (planned.job.singleChunk || planned.job.limits || !pipelineCopies) return undefined;
  const pipeline = planned.staged.pipelineCopies(plan, awaited && pipelineResults);
  if (pipeline) probes.pipelinedJob?.();
  return pipeline;
}

function runSync(plan: CallPlan): void {
  assertParallelAvailable();
  // Behind a call with a limit, which may be stuck until its limit passes (and this thread, blocked,
  // would never see that pass): run on this thread instead, with the same results.
  if (isSmall(plan) || pool?.busyWithLimitedJob) return runOnCallingThread(plan);
  const planned = planJob(plan, false);
  if (!('job' in planned)) return runOnCallingThread(plan, planned);
  // The pool makes the pipeline's copies on this thread once the workers are woken, before this
  // thread claims chunks itself: they compute the first chunks while it copies the rest.
  const pipeline = copyPipelineOf(plan, planned, false);
  try {
    planned.staged.copyIn();
  } catch (error) {
    planned.staged.abandon(); // an input detached: nothing ran, nothing is copied back
    endTrial(planned, undefined);
    throw error;
  }
  let outcome: JobOutcome | undefined;
  try {
    outcome = planned.pool.runSync(pipeline ? { ...planned.job, pipeline } : planned.job);
    if (pipeline?.error !== undefined) {
      // An input detached while it was copied: the chunks after it did not run; nothing is copied back.
      planned.staged.abandon();
      outcome = undefined;
      throw pipeline.error;
    }
  } finally {
    // The job never began (the pool refused it): an arena never copied into is not copied back.
    if (pipeline && !pipeline.sharedRangesIn) planned.staged.abandon();
    planned.staged.finish(outcome?.ok === true, pipeline);
    endTrial(planned, outcome);
    recordPoolTime(plan, planned, outcome);
  }
  settle(outcome);
}

/**
 * An awaited call: the workers compute, and this thread only copies what must be staged (in slices
 * between which its event loop runs) and waits, so its event loop keeps running throughout.
 */
async function run(plan: CallPlan): Promise<void> {
  assertParallelAvailable();
  const planned = planJob(plan, true);
  if (!('job' in planned)) {
    runOnCallingThread(plan, planned);
    // Placed here as brief (placement.ts), but a loop of such awaited calls would chain microtasks
    // and starve the event loop (timers, I/O) for as long as it runs: each gives it a turn after.
    if (planned.placed) await yieldToEventLoop();
    return;
  }
  const pipeline = copyPipelineOf(plan, planned, true);
  try {
    await planned.staged.copyInYielding();
  } catch (error) {
    planned.staged.abandon(); // an input detached meanwhile: nothing ran, nothing is copied back
    endTrial(planned, undefined);
    throw error;
  }
  let outcome: JobOutcome | undefined;
  try {
    outcome = await planned.pool.run(pipeline ? { ...planned.job, pipeline } : planned.job);
    if (pipeline?.error !== undefined) {
      // An input detached while it was copied: the chunks after it did not run; nothing is copied back.
      planned.staged.abandon();
      outcome = undefined;
      throw pipeline.error;
    }
  } finally {
    // The job never began (`shutdown()` while it waited for the pool): an arena never copied into is not copied back.
    if (pipeline && !pipeline.sharedRangesIn) planned.staged.abandon();
    try {
      await planned.staged.finishYielding(outcome?.ok === true, pipeline);
    } finally {
      endTrial(planned, outcome);
      recordPoolTime(plan, planned, outcome);
    }
  }
  settle(outcome);
}

/**
 * A small call (less work than the threshold, no limits) runs on the calling thread, as `run`
 * would run it, without `run`'s Promise; larger calls return false for `run` to take.
 */
function runIfOnCallingThread(plan: CallPlan): boolean {
  assertParallelAvailable();
  if (!isSmall(plan)) return false;
  runOnCallingThread(plan);
  return true;
}

/**
 * A call without limits and with less work than the threshold: `planJob` would leave it to the
 * calling thread. The first rules of {@link callingThreadReason}, without building a reason's text:
 * this runs on every call.
 */
function isSmall(plan: CallPlan): boolean {
  if (plan.limits) return false;
  const total = loopSize(plan);
  const options = currentOptions();
  if (total === 0 || options.workers === 0) return true;
  const work = workOf(plan, total);
  return work < options.threshold && !isCostly(plan.kernel, work);
}

/**
 * An output array for a call with `length` output elements (the front calls this through
 * `Target.allocateOutput`): where the call will likely use the pool, over a `SharedArrayBuffer` of
 * its own, so that workers running the JS runner write the results in place.
 *
 * Not in the Wasm memory (as `sharedArray` allocates): a block there is freed when the array object
 * is collected, and a result's `subarray(…)` or `.buffer` view does not keep the block alive, so a
 * later call reusing it would silently overwrite what such a view shows. A buffer of its own lives
 * as long as any view of it. Workers running Wasm write into a staged copy in the Wasm memory, which
 * is copied back.
 */
function allocateOutput(length: number, dtype: DType): TypedArray {
  assertParallelAvailable();
  const options = currentOptions();
  const { arrayType, bytes } = DTYPES[dtype];
  return options.workers > 0 && length >= options.threshold ? new arrayType(new SharedArrayBuffer(length * bytes), 0, length) : new arrayType(length);
}

/**
 * The parallel target: the cpu target's compiled runners (kernel-cache.ts reuses its compiler), a
 * different driver — chunks of the loop on a pool of workers over shared memory.
 */
/**
 * Terminates the worker pool: calls in flight reject with a ShutdownError. The next call starts a
 * new pool. Used by `shutdown()`.
 *
 * @example
 * await shutdownPool();
 */
export async function shutdownPool(): Promise<void> {
  const old = pool;
  pool = undefined;
  await old?.terminate();
}

export const parallelTarget: Target = { name: 'parallel', memory: 'host', explain, run, runSync, runIfOnCallingThread, allocateOutput, shutdown: shutdownPool };

/**
 * Hooks for tests: not part of the public API.
 * @internal
 */
export const __testing = {
  /** The pool, started if need be, once every worker waits for jobs. */
  async readyPool(): Promise<WorkerPool> {
    const p = currentPool();
    await p.ready();
    return p;
  },
  /** Posts a message (e.g. `{ type: 'crash' }`) to worker `w`; it acts on it at its next job. */
  postToWorker(w: number, message: WorkerMessage): void {
    currentPool().postToWorker(w, message);
  },
  /** Whether calls copy inputs in (and awaited calls results back) while the workers compute (CopyPipeline); returns the old setting. */
  pipelineCopies(on: boolean): boolean {
    const was = pipelineCopies;
    pipelineCopies = on;
    return was;
  },
  /** Whether awaited calls copy results back chunk by chunk while later chunks run (CopyPipeline); returns the old setting. */
  pipelineResults(on: boolean): boolean {
    const was = pipelineResults;
    pipelineResults = on;
    return was;
  },
  /** Whether the pool wakes every sleeping thread at each chunk a pipeline opens (as before: A/B); returns the old setting. */
  wakeEverySleeper(on: boolean): boolean {
    const p = currentPool();
    const was = p.wakeEverySleeper;
    p.wakeEverySleeper = on;
    return was;
  },
  /** Whether the threads copy in staged operands whose own memory is shared (`chunkCopies`); returns the old setting. */
  threadCopiesIn(on: boolean): boolean {
    const was = threadCopiesIn;
    threadCopiesIn = on;
    return was;
  },
  /** Whether an output the call allocated is staged cleared rather than copied in (A/B); returns the old setting. */
  freshOutputsCleared(on: boolean): boolean {
    const was = freshOutputsCleared;
    freshOutputsCleared = on;
    return was;
  },
  /** Whether calls may run on the calling thread where that measured faster (placement.ts); returns the old setting. */
  measuredPlacement(on: boolean): boolean {
    const was = measuredPlacement;
    measuredPlacement = on;
    return was;
  },
  /**
   * Replaces the chunk times the workers measured in engine-calibration trials with what `times`
   * returns for them (undefined: measured times again); it gets the candidates in turn order and
   * their measured least seconds per loop index. Returns the old hook.
   */
  turnTimes(times: typeof turnTimesHook): typeof turnTimesHook {
    const was = turnTimesHook;
    turnTimesHook = times;
    return was;
  },
  /** Replaces the pool with one built with these settings (at the next call). */
  async resetPool(tuning: Omit<PoolOptions, 'size'> = {}): Promise<void> {
    poolTuning = tuning;
    const old = pool;
    pool = undefined;
    await old?.terminate();
  },
};
