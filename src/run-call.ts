/**
 * The run stage of a call: a prepared call (prepare-call.ts) runs on its target under the guards
 * every call shares — limits (`signal`, `timeout`), `shutdown()`, arrays detached while it runs —
 * and hands back what its finish stage gives (call-finish.ts).
 */
import { limitExceeded, shutdownEpoch, shutdownError, whenShutdown } from './cancellation.js';
import type { DType } from './dtypes.js';
import { CallCancelledError } from './errors.js';
import { assertAttached } from './ndarray.js';
import type { CallPlan } from './plan.js';
import { ENQUEUED, type Target } from './targets/target.js';
import { type PlainKernel, runPreparedPlain } from './plain-kernel.js';

/** A call turned into a plan, with what is needed to hand results back. */
export interface PreparedCall {
  readonly plan: CallPlan;
  readonly target: Target;
  /** Outputs to allocate on the device before running (gpu calls with device inputs). */
  readonly deviceOutputs: readonly { readonly output: number; readonly shape: readonly number[]; readonly dtype: DType }[];
  readonly finish: () => unknown;
  readonly setDeviceOutput: (o: number, array: unknown) => void;
  /**
   * The kernel to call as plain JS, for a ufunc made with `disableJit`: then the plan carries only
   * the signature's types, and no target runs it (plain-kernel.ts does).
   */
  readonly plain?: PlainKernel;
}

/** Runs a prepared call on its target, asynchronously. */
export function runPrepared(call: PreparedCall): Promise<unknown> {
  if (call.plain) return runPreparedPlain(call, call.plain);
  // Without waiting where the target allows it: the call reads its host inputs before returning.
  try {
    const now = call.deviceOutputs.map(({ shape, dtype }) => call.target.allocateDeviceArrayNow?.(shape, dtype));
    if (now.every((a) => a !== undefined)) {
      now.forEach((a, k) => call.setDeviceOutput(call.deviceOutputs[k]!.output, a));
      return runGuarded(call.target, call.plan).then(() => call.finish());
    }
  } catch (e) {
    return Promise.reject(e);
  }
  return runPreparedAsync(call);
}

async function runPreparedAsync(call: PreparedCall): Promise<unknown> {
  if (call.deviceOutputs.length) {
    for (const { output, shape, dtype } of call.deviceOutputs) {
      call.setDeviceOutput(output, await call.target.allocateDeviceArray!(shape, dtype));
    }
  }
  await runGuarded(call.target, call.plan);
  return call.finish();
}

/**
 * Runs a plan on its target, asynchronously. An array whose buffer is detached (transferred)
 * while the call runs makes V8 throw a bare `TypeError` wherever the call next touches it (a
 * copy to or from the GPU, a copy back from shared memory): such failures, and outputs detached by
 * the time the call ends, become an `ArgumentError` naming the operand.
 *
 * @param target - the call's target
 * @param plan - the call's plan
 * @example
 * await runGuarded(target, plan);
 */
export function runGuarded(target: Target, plan: CallPlan): Promise<void> {
  const stop = plan.limits && limitExceeded(plan.limits, target.name);
  if (stop) return Promise.reject(stop); // an already aborted signal: nothing runs
  const epoch = shutdownEpoch();
  let work: Promise<void>;
  try {
    work = target.run(plan);
  } catch (e) {
    return guardedFailure(target, plan, epoch, e);
  }
  // Recorded on the device with nothing to wait for (a chained gpu call): handed on as it is (the
  // caller knows it by identity), without a shutdown race, whose promises cost more than the rest
  // of a small call and pile reactions onto the shutdown promise, nor a layer of this function's.
  if (work === ENQUEUED) return ENQUEUED;
  return settleGuarded(target, plan, epoch, work);
}

/** A failure of a call's run, as the guards report it (see {@link runGuarded}). */
async function guardedFailure(target: Target, plan: CallPlan, epoch: number, e: unknown): Promise<never> {
  if (e instanceof TypeError || e instanceof RangeError) throwIfDetached(plan, 0);
  // `shutdown()` ran meanwhile: whatever the call failed with (a lost device, a stopped worker), that is why.
  if (epoch !== shutdownEpoch() && !(e instanceof CallCancelledError)) throw shutdownError(target.name, e, target.memory === 'device' ? 'device' : 'workers');
  throw e;
}

/** Waits for a call's work under the guards (see {@link runGuarded}). */
async function settleGuarded(target: Target, plan: CallPlan, epoch: number, work: Promise<void>): Promise<void> {
  try {
    if (target.memory === 'device') {
      // Work on a device cannot be stopped: the call is answered at `shutdown()` without it.
      const shut = Symbol('shutdown');
      if ((await Promise.race([work, whenShutdown().then(() => shut)])) === shut) {
        work.catch(() => {});
        throw shutdownError(target.name, undefined, 'device');
      }
    } else {
      await work;
    }
  } catch (e) {
    return guardedFailure(target, plan, epoch, e);
  }
  throwIfDetached(plan, plan.nin);
}

function throwIfDetached(plan: CallPlan, from: number): void {
  for (let k = from; k < plan.operands.length; k++) {
    const data = plan.operands[k]!.data;
    if (ArrayBuffer.isView(data)) {
      assertAttached(data, k < plan.nin ? `argument ${k + 1}` : plan.operands.length - plan.nin === 1 ? '`out`' : `\`out[${k - plan.nin}]\``, true);
    }
  }
}
