/**
 * The contract between the front (vectorize, guvectorize) and a target. A target turns a typed
 * kernel and a call plan into work done; it never parses kernels and never reads signatures.
 */
import type { TypedKernel } from '../compiler/ir.js';
import type { DType, TypedArray } from '../dtypes.js';
import type { DeviceArrayLike } from '../ndarray.js';
import type { CallPlan } from '../plan.js';

export const TARGET_NAMES = ['cpu', 'parallel', 'gpu'] as const;
export type TargetName = (typeof TARGET_NAMES)[number];

export interface Target {
  readonly name: TargetName;
  /**
   * Refuses, when a signature is first used, a kernel this target cannot run (the gpu target and
   * float64, say), with a `TargetUnavailableError` or `KernelCompileError` naming the signature.
   */
  checkKernel?(kernel: TypedKernel, signature: string): void;
  /** Runs a call; resolves when every output is written (or, for device outputs, enqueued). */
  run(plan: CallPlan): Promise<void>;
  /** Runs a call and returns when it is done; absent where the target cannot block (gpu). */
  runSync?(plan: CallPlan): void;
  /**
   * Allocates a host output the call will write: the parallel target gives shared memory, so its
   * workers write results in place instead of into a copy. Absent: an ordinary typed array.
   */
  allocateOutput?(length: number, dtype: DType): TypedArray;
  /** Allocates a device-resident output, for calls whose inputs live on the device. */
  allocateDeviceArray?(shape: readonly number[], dtype: DType): Promise<DeviceArrayLike>;
  /**
   * The same without waiting, or undefined when that needs a wait (no device yet): a call that
   * gets all its outputs this way runs `run` in the same turn, so its host inputs are read during
   * the call.
   */
  allocateDeviceArrayNow?(shape: readonly number[], dtype: DType): DeviceArrayLike | undefined;
}
