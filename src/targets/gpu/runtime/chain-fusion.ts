/**
 * Automatic fusion of recorded gpu calls. A chain written as separate calls on device arrays,
 *
 *     await saxpy(2, x, y, { out: t }); await gauss(t, { out: g }); await mul(g, x, { out: v });
 *
 * reads and writes 8 arrays; run as one kernel that still writes t, g and v it moves 5. So an
 * element-wise call on device arrays is not recorded at once: it is *held*, and the next call
 * that reads its output over the same iteration space joins it. The held chain is recorded — as
 * one kernel when it has several calls and that kernel is compiled, else call by call — before
 * anything else reaches the device's queue or batch (another call, an upload, a read-back,
 * `synchronize()`, the end of the current task: chain.ts asks through `setHeldWork`).
 *
 * Correct by construction: the fused kernel is the calls' typed kernels composed (compiler/
 * compose.ts), each step rounded to its output dtype as its store did, run per element in the
 * same order. A call joins only when nothing can tell the difference:
 * - it runs over the same loop shape, and reads at least one held output — exactly that view
 *   (same buffer, offset, strides, dtype): element i of a step reads element i of the one before;
 * - every other buffer it shares with the held calls is shared view for view (an in-place
 *   `f(t, { out: t })` joins: each element is read before it is written, in one thread), never a
 *   shifted or strided view of the same memory;
 * - it is a vectorize call on device arrays and scalars only, with no `signal`/`timeout`, whose
 *   own pipeline exists (a repeated call), so recording it later never waits.
 * Every output the user still holds is written; an output the user `destroy()`ed before the chain
 * was recorded is not (nothing can read it), and a view written again by a later call of the chain
 * is written once, with the later value. A fused kernel that is not compiled yet is compiled in the
 * background while its calls are recorded one by one: recording never waits, so the queue order is
 * the call order. Errors of a fused dispatch name its calls (`gpu call #12 (\`saxpy > gauss\`)`).
 */
import { type CallPlan, isDeviceResident, loopSize, type OperandView } from '../../../plan.js';
import { afterCurrentTask } from '../../../platform/platform.js';
import { UfuncError, DeviceError } from '../../../errors.js';
import { reportLate, setHeldWork } from './chain.js';
import type { DeviceArray } from './device-array.js';
import type { GpuContext } from './device.js';
import { type CallRecipe, fusedCall, type FusedSlot, sameView } from './fused-chain-plan.js';
import { fuseChainsEnabled, setGpuOptions } from './gpu-options.js';
import type { GPUBuffer, GPUDevice } from './webgpu-types.js';

/** How held calls are recorded (dispatch.ts provides it). */
export interface HeldRecorder {
  /**
   * What records `plan` later without waiting (its layout and pipeline are known: a repeated
   * call), or undefined when it cannot be (a first call, a timed pass, …): then it is not held.
   */
  prepare(ctx: GpuContext, plan: CallPlan): CallRecipe | undefined;
  /** Records a held call alone, with the recipe `prepare` gave. */
  record(ctx: GpuContext, plan: CallPlan, recipe: CallRecipe): void;
  /**
   * Records a fused call now if its pipeline is ready (true), laid out once per chain shape (kept in
   * `slot`); else starts compiling it (settles when compiled or failed).
   */
  recordFused(ctx: GpuContext, plan: CallPlan, slot: FusedSlot): true | Promise<void>;
}

/** The calls held on one device, in call order, with what records each alone. */
interface HeldChain {
  readonly ctx: GpuContext;
  readonly calls: CallPlan[];
  readonly recipes: CallRecipe[];
}

/** Calls one fused kernel takes at most (its parameters grow with the chain). */
const MAX_CHAIN = 8;

const held = new Map<GPUDevice, HeldChain>();
let recorder: HeldRecorder | undefined;

/** What automatic fusion has done in this process (for tests, benchmarks and `explain`). */
export const chainFusionStats = { held: 0, fusedDispatches: 0, fusedCalls: 0, unfusedForCompile: 0, lastStores: 0 };

/** Fused kernels being compiled in the background (their chains meanwhile run call by call). */
const compiling = new Set<Promise<void>>();

/**
 * Resolves once the fused kernels being compiled are ready (or failed): a chain seen again after
 * this runs fused. For tests and benchmarks that want the fused path from a known point on.
 *
 * @example await chain(); await fusedKernelsCompiled(); await chain(); // the second runs fused
 */
export async function fusedKernelsCompiled(): Promise<void> {
  recordHeld();
  await Promise.all([...compiling]);
}

/** Lets dispatch.ts record held calls (it imports this module; this one does not import it). */
export function setHeldRecorder(r: HeldRecorder): void {
  recorder = r;
}

/**
 * Turns automatic fusion off or on (`setGpuOptions({ fuseChains })`, on by default), recording
 * whatever is held when it goes off: for A/B measurements and tests.
 *
 * @param on whether element-wise calls on device arrays are held for fusion
 */
export function setChainFusion(on: boolean): void {
  setGpuOptions({ fuseChains: on });
  if (!on) recordHeld();
}

/**
 * Holds a call for fusion with the calls after it, or records what is held and says no.
 *
 * @param ctx the live device
 * @param plan the call
 * @returns true when the call is held (its work is recorded later, before anything that could see
 *   it); false when it must run now (whatever was held is recorded already)
 */
export function holdCall(ctx: GpuContext, plan: CallPlan): boolean {
  const recipe = fuseChainsEnabled() && recorder && !notHoldable(plan) ? recorder.prepare(ctx, plan) : undefined;
  if (!recipe) {
    recordHeld(ctx.device);
    return false;
  }
  for (const o of plan.operands) if (o.scalar === undefined) (o.data as unknown as DeviceArray).assertUsable();
  const chain = held.get(ctx.device);
  chainFusionStats.held++;
  if (chain && chain.ctx === ctx && !joinRefusal(chain, plan)) {
    chain.calls.push(plan);
    chain.recipes.push(recipe);
    return true;
  }
  recordHeld(ctx.device);
  held.set(ctx.device, { ctx, calls: [plan], recipes: [recipe] });
  // Whatever is held when the current task ends is recorded then (one wake-up per task, not per chain).
  if (!endOfTaskPending) {
    endOfTaskPending = true;
    afterCurrentTask(recordAtEndOfTask);
  }
  return true;
}

let endOfTaskPending = false;
function recordAtEndOfTask(): void {
  endOfTaskPending = false;
  recordHeld();
}

/**
 * Records the calls held on a device (every device when none is given): fused, or one by one.
 * Idempotent; chain.ts calls it before anything else uses the queue. An error recording them
 * (their callers have their promises already) is reported by the next `synchronize()`.
 *
 * @param device the device, or undefined for all
 */
export function recordHeld(device?: GPUDevice): void {
  if (held.size === 0) return;
  if (device === undefined) {
    for (const d of [...held.keys()]) recordHeld(d);
    return;
  }
  const chain = held.get(device);
  if (!chain) return;
  held.delete(device);
  const { ctx, calls, recipes } = chain;
  try {
    if (calls.length > 1) {
      const fused = fusedCall(calls, recipes);
      if (fused === 'nothing') {
        chainFusionStats.lastStores = 0;
        return;
      }
      const recorded = fused && recorder!.recordFused(ctx, fused.plan, fused.slot);
      if (recorded === true) {
        chainFusionStats.fusedDispatches++;
        chainFusionStats.fusedCalls += calls.length;
        chainFusionStats.lastStores = fused.plan.operands.length - fused.plan.nin;
        return;
      }
      if (recorded) {
        chainFusionStats.unfusedForCompile++;
        compiling.add(recorded);
        void recorded.then(() => compiling.delete(recorded));
      }
    }
    // A lone call whose output the user destroyed already has nothing to show for its work.
    if (calls.length === 1 && (calls[0]!.operands[calls[0]!.nin]!.data as unknown as DeviceArray).destroyed) return;
    for (let k = 0; k < calls.length; k++) recorder!.record(ctx, calls[k]!, recipes[k]!);
  } catch (e) {
    const names = calls.map((c) => `\`${c.kernel.name}\``).join(', ');
    reportLate(e instanceof UfuncError ? e : new DeviceError(`Recording the gpu calls ${names}, held to be fused, failed: ${e instanceof Error ? e.message : String(e)}`, { cause: e }));
  }
}

setHeldWork(recordHeld);

/** Why a call is not held for fusion (undefined: it can be): a vectorize call on device arrays and scalars, one device output, nothing to wait for. */
function notHoldable(plan: CallPlan): string | undefined {
  if (plan.kind !== 'vectorize' || plan.kernel.returnType === 'void') return 'it is not an element-wise (vectorize) call';
  if (plan.limits) return 'it has a `signal` or `timeout`, so it is waited for';
  if (plan.kernel.randomStream) return 'its kernel calls `Math.random()`, whose stream belongs to the call';
  if (plan.operands.length !== plan.nin + 1) return 'it has several outputs';
  if (loopSize(plan) === 0) return 'it has no elements';
  for (const o of plan.operands) if (o.scalar === undefined && !isDeviceResident(o.data)) return 'an operand is a host array (its call moves data and waits)';
  return undefined;
}

const bufferOf = (o: OperandView): GPUBuffer => (o.data as unknown as DeviceArray).buffer;

/** Why `plan` may not join the held chain (undefined: it may; see the module's comment for the rules). */
function joinRefusal(chain: HeldChain, plan: CallPlan): string | undefined {
  const { calls } = chain;
  if (calls.length >= MAX_CHAIN) return `the held chain has ${MAX_CHAIN} calls already`;
  const shape = calls[0]!.loopShape;
  if (plan.loopShape.length !== shape.length || plan.loopShape.some((n, d) => n !== shape[d])) {
    return `it runs over [${plan.loopShape.join(', ')}] and the held calls over [${shape.join(', ')}]`;
  }
  if (calls.some((c) => Boolean(c.kernel.fastmath) !== Boolean(plan.kernel.fastmath))) return 'its ufunc and a held one differ in `fastmath`';
  let feeds = false;
  for (const o of plan.operands) {
    if (o.scalar === undefined) {
      const buffer = bufferOf(o);
      for (const c of calls) {
        for (let j = 0; j < c.operands.length; j++) {
          const h = c.operands[j]!;
          if (h.scalar !== undefined || bufferOf(h) !== buffer) continue;
          const written = j === c.nin || o === plan.operands[plan.nin];
          // The same memory through another view, written by one side: a hazard (read-read is not).
          if (!sameView(h, o)) {
            if (written) return `it ${o === plan.operands[plan.nin] ? 'writes' : 'reads'} memory a held call (\`${c.kernel.name}\`) ${j === c.nin ? 'writes' : 'reads'} through another view (offset, strides or dtype)`;
            continue;
          }
          if (j === c.nin && o !== plan.operands[plan.nin]) feeds = true;
        }
      }
    }
  }
  return feeds ? undefined : 'it reads no output of the held calls';
}

/**
 * What automatic fusion does with a call like `plan` now, as a sentence (for the gpu target's
 * `explain`).
 *
 * @param ctx the live device, or undefined before one exists
 * @param plan the call
 */
export function explainHold(ctx: GpuContext | undefined, plan: CallPlan): string {
  if (!fuseChainsEnabled()) return 'Automatic fusion is off (setGpuOptions({ fuseChains: true }) turns it on).';
  const why = notHoldable(plan);
  if (why) return `Recorded at once, not fused with other calls: ${why}.`;
  const chain = ctx && held.get(ctx.device);
  const refusal = chain ? joinRefusal(chain, plan) : 'no calls are held';
  const joined = refusal ? `It starts a new chain (${refusal}).` : `It joins the held chain of ${chain!.calls.length} call${chain!.calls.length === 1 ? '' : 's'} (${chain!.calls.map((c) => `\`${c.kernel.name}\``).join(', ')}): they run as one kernel.`;
  return `Held for fusion with the calls after it (once its pipeline exists: a first call runs at once). ${joined}`;
}
