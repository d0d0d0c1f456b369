/**
 * A test target, to prove the target contract: everything a target is lives in this folder, and
 * it is added with one line (`registerTarget(TRACED_ENTRY)`), with no edit to the front or to
 * other targets. It wraps the cpu target — its compiler, its runner — and records what the front
 * asks of it: compilations, calls, allocations, method calls.
 */
import type { TypedArray } from '../../../src/dtypes.js';
import { DTYPES } from '../../../src/dtypes.js';
import { type CallPlan, loopSize } from '../../../src/plan.js';
import { prepareRunnerArgs } from '../../../src/targets/cpu/memory-layout.js';
import { cpuCompiler } from '../../../src/targets/cpu/index.js';
import { ExecutableCache } from '../../../src/targets/executables.js';
import type { TargetEntry } from '../../../src/targets/registry.js';
import type { KernelCompiler, Target } from '../../../src/targets/target.js';

/** What the target was asked to do, for the tests to check. */
export const trace = { compiled: 0, runs: 0, syncRuns: 0, allocated: 0, reduceHooks: 0 };

const tracedCompiler: KernelCompiler<Parameters<typeof cpuCompiler.compile>[1], ReturnType<typeof cpuCompiler.compile>> = {
  layoutKey: cpuCompiler.layoutKey,
  compile(spec, layout) {
    trace.compiled++;
    return cpuCompiler.compile(spec, layout, undefined);
  },
};
const executables = new ExecutableCache(tracedCompiler, { scopedByKernel: true });

function runHere(plan: CallPlan): void {
  if (loopSize(plan) === 0) return;
  const { args, layout } = prepareRunnerArgs(plan);
  executables.get(plan, layout).runner(args, 0, loopSize(plan));
}

export const tracedTarget: Target = {
  name: 'traced',
  memory: 'host',
  run: async (plan) => {
    trace.runs++;
    runHere(plan);
  },
  runSync: (plan) => {
    trace.syncRuns++;
    runHere(plan);
  },
  allocateOutput: (length, dtype): TypedArray => {
    trace.allocated++;
    return new DTYPES[dtype].arrayType(length);
  },
  // reduce runs here (and hands the work to the shared default); accumulate and outer are left to it.
  methods: {
    reduce: (call) => {
      trace.reduceHooks++;
      return call.fallback();
    },
  },
};

/** The target's line in the registry. */
export const TRACED_ENTRY: TargetEntry = { name: 'traced', memory: 'host', load: () => tracedTarget };
