/**
 * The cpu target: runs the generated JS loop on the calling thread.
 */
import { ArgumentError } from '../../errors.js';
import { type CallPlan, isDeviceResident, loopSize } from '../../plan.js';
import type { TypedKernel } from '../../compiler/ir.js';
import type { Target } from '../target.js';
import { generateRunner, instantiateRunner, layoutKey, prepareRunnerArgs, type Runner } from './codegen.js';

/** Runners by typed kernel (one per signature), then by bounds checking and memory layout. */
const runners = new WeakMap<TypedKernel, [Map<number | string, Runner>, Map<number | string, Runner>]>();

/** The compiled runner for a plan's kernel and memory layout, generated on first use. */
export function runnerFor(plan: CallPlan): { runner: Runner; args: ReturnType<typeof prepareRunnerArgs>['args'] } {
  const { args, layout } = prepareRunnerArgs(plan);
  let byCheck = runners.get(plan.kernel);
  if (!byCheck) runners.set(plan.kernel, (byCheck = [new Map(), new Map()]));
  const byLayout = byCheck[plan.boundsCheck ? 1 : 0];
  const key = layoutKey(layout);
  let runner = byLayout.get(key);
  if (!runner) {
    const { source, sites } = generateRunner(plan, layout);
    runner = instantiateRunner(source, sites);
    byLayout.set(key, runner);
  }
  return { runner, args };
}

function runOnThisThread(plan: CallPlan): void {
  plan.operands.forEach((o, i) => {
    if (isDeviceResident(o.data)) {
      throw new ArgumentError(`Argument ${i + 1} is a DeviceArray, which lives on the GPU: call \`await x.toHost()\` first, or use target 'gpu'.`);
    }
  });
  const n = loopSize(plan);
  if (n === 0) return;
  const { runner, args } = runnerFor(plan);
  runner(args, 0, n);
}

export const cpuTarget: Target = {
  name: 'cpu',
  run: async (plan) => runOnThisThread(plan),
  runSync: runOnThisThread,
};
