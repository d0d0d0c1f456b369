/**
 * The cpu target: runs the generated JS loop on the calling thread.
 */
import { limitExceeded } from '../../cancellation.js';
import { ArgumentError, CallTimeoutError } from '../../errors.js';
import { type CallPlan, isDeviceResident, loopSize } from '../../plan.js';
import { chooseEngine, explainPlan, surelyJs, runWasm } from './wasm/index.js';
import { alongRowsVariant, floatPairsVariant, maskedLoopsVariant, variantOf } from './wasm/engine.js';
import { decideEngine, type Engine, measuredChoice, recordTrial, startTrialClock } from './engine-calibration.js';
import { ExecutableCache } from '../executables.js';
import type { KernelCompiler, Target } from '../target.js';
import { generateRunner, instantiateRunner } from './js/codegen.js';
import type { IndexCheckSite } from '../../compiler/source-excerpt.js';
import { layoutKey, type MemoryLayout, prepareRunnerArgs, type Runner, type RunnerArgs } from './memory-layout.js';

/** A compiled cpu kernel: the runner, and its source (which the parallel target posts to workers). */
export interface CompiledRunner {
  readonly source: string;
  /** Bounds-check sites, for error messages. */
  readonly sites: readonly IndexCheckSite[];
  readonly runner: Runner;
}

/** How the cpu compiles: one JS runner per kernel and memory layout (codegen.ts). */
export const cpuCompiler: KernelCompiler<MemoryLayout, CompiledRunner> = {
  layoutKey,
  compile(spec, layout) {
    const { source, sites } = generateRunner(spec, layout);
    return { source, sites, runner: instantiateRunner(source, sites) };
  },
};

/** Runners by typed kernel (one per signature), then by bounds checking and memory layout. */
const runners = new ExecutableCache(cpuCompiler, { scopedByKernel: true });

/**
 * Runners whose loops check a deadline every few thousand iterations (emit-js.ts, DEADLINE_CHECK),
 * for calls with a `timeout`: compiled apart, so calls without one run the loops as they were.
 */
const timedRunners = new ExecutableCache<MemoryLayout, CompiledRunner>({
  layoutKey,
  compile(spec, layout) {
    const { source, sites } = generateRunner(spec, layout, true);
    return { source, sites, runner: instantiateRunner(source, sites) };
  },
}, { scopedByKernel: true });

/** The compiled runner for a plan's kernel and memory layout, generated on first use. */
export function runnerFor(plan: CallPlan): { runner: Runner; args: RunnerArgs } {
  const { args, layout } = prepareRunnerArgs(plan);
  return { runner: runners.get(plan, layout).runner, args };
}

function runOnThisThread(plan: CallPlan): void {
  plan.operands.forEach((o, i) => {
    if (isDeviceResident(o.data)) {
      throw new ArgumentError(`Argument ${i + 1} is a DeviceArray, which lives on the GPU: call \`await x.toHost()\` first, or use target 'gpu'.`);
    }
  });
  const n = loopSize(plan);
  if (n === 0) return;
  const deadline = plan.limits?.deadline;
  if (deadline !== undefined) return runWithDeadline(plan, n, deadline);
  if (surelyJs(plan, n)) return runJs(plan, n);
  const decision = decideEngine(plan, n, 'cpu', chooseEngine(plan, n, undefined, true), () => variantsOf(plan));
  if (!decision.trial) {
    if (decision.engine === 'js' || !runWasm(plan, 0, undefined, decision.engine)) runJs(plan, n);
    return;
  }
  // A trial (engine-calibration.ts): timed whole; a Wasm call that fell back to JS (no room in the
  // Wasm memory) is not recorded.
  const elapsed = startTrialClock(decision.trial.cpuClock === true);
  let seconds: number | undefined;
  try {
    const ran = decision.engine !== 'js' && runWasm(plan, 0, undefined, decision.engine) ? decision.engine : (runJs(plan, n), 'js');
    if (ran === decision.engine) seconds = elapsed();
  } finally {
    recordTrial(decision.trial, decision.engine, seconds, decision.loop);
  }
}

/** The candidates a call offers calibration besides the two engines: the Wasm loop's masked-lanes, float64-pairs and along-the-row variants, where it has them. */
export function variantsOf(plan: CallPlan): readonly Engine[] {
  if (maskedLoopsVariant(plan)) return ['wasm-masked'];
  return [...(floatPairsVariant(plan) ? ['wasm-pairs' as const] : []), ...(alongRowsVariant(plan) ? ['wasm-along' as const] : [])];
}

/**
 * Runs a call on the engine measured faster for its shape (before that, the guess), never as a
 * trial of the other: for a call that must not take the slower engine's time, such as an awaited
 * call that the parallel target runs on the calling thread within the event loop's budget
 * (parallel/placement.ts). No timeout (such calls go to the workers).
 */
export function runSettledEngine(plan: CallPlan): void {
  const n = loopSize(plan);
  if (n === 0) return;
  const choice = measuredChoice(plan, n, 'cpu', chooseEngine(plan, n, undefined, true));
  if (choice.engine !== 'wasm' || !runWasm(plan, 0, undefined, variantOf(choice))) runJs(plan, n);
}

/**
 * A call with a timeout runs the JS runner that looks at the clock in its loops, so that a kernel
 * that runs long, or never ends, stops with CallTimeoutError (the Wasm engine has no such checks:
 * docs/reliability.md).
 */
function runWithDeadline(plan: CallPlan, n: number, deadline: number): void {
  const { args, layout } = prepareRunnerArgs(plan);
  try {
    timedRunners.get(plan, layout).runner({ ...args, deadline }, 0, n);
  } catch (e) {
    // The runner's own error knows no limits; the call's says which timeout passed.
    throw e instanceof CallTimeoutError ? (limitExceeded(plan.limits, 'cpu') ?? e) : e;
  }
}

function runJs(plan: CallPlan, n: number): void {
  const { runner, args } = runnerFor(plan);
  runner(args, 0, n);
}

/**
 * An async call. Its `signal` and `timeout` are honoured before the kernel starts; a `timeout` also
 * inside the kernel's loops, which look at the clock every few thousand iterations and stop the
 * call with CallTimeoutError. An abort of the `signal` cannot reach a kernel running on the calling
 * thread (it arrives through the event loop): it is seen when the kernel ends, and the error says
 * so and points to the parallel target, which can stop kernels on any limit.
 */
async function run(plan: CallPlan): Promise<void> {
  runOnThisThread(plan);
  const stop = limitExceeded(plan.limits, 'cpu');
  if (!stop) return;
  const what = stop instanceof CallTimeoutError ? `took longer than its \`timeout\` of ${plan.limits!.timeout} ms` : 'was aborted by its `signal` while the kernel ran';
  throw new (stop.constructor as typeof CallTimeoutError)(
    `The call on the cpu target ${what}. The cpu target runs kernels on the calling thread and cannot stop one midway, so the kernel ran to its end (its outputs are written). For kernels that may run long or never end, use target 'parallel' with a \`timeout\` or \`signal\`: it stops them.`,
    { cause: stop.cause },
  );
}

export const cpuTarget: Target = {
  name: 'cpu',
  memory: 'host',
  explain: (plan) => {
    const n = loopSize(plan);
    return explainPlan(plan, n, measuredChoice(plan, n, 'cpu', chooseEngine(plan, n, undefined, true), () => variantsOf(plan)));
  },
  run,
  runSync: runOnThisThread,
  runIfOnCallingThread: (plan) => (runOnThisThread(plan), true),
};
