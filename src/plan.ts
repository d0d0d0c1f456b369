/**
 * What the front (vectorize, guvectorize) hands a target: a typed kernel and operand views laid out
 * over a broadcast loop. No target looks at signatures or user arguments; no front generates code.
 */
import type { DType, TypedArray } from './dtypes.js';
import type { TypedKernel } from './compiler/ir.js';
import { type LoopOperandLayout, sizeOf, type StridedLayout, type StridedView } from './layout.js';

/**
 * One operand as the kernel sees it. Element (i₀ … i_{L−1}; c₀ … c_{C−1}) of the operand lives at
 * `data[offset + Σ loopStrides[d]·i_d + Σ coreStrides[a]·c_a]`; strides count elements, may be
 * 0 (broadcast) or negative.
 */
export interface OperandView extends LoopOperandLayout {
  readonly dtype: DType;
  /** Host memory, or (gpu target only) a device array. */
  readonly data: TypedArray | DeviceResident;
  /** A JS scalar passed by value: every loop index reads this (data is a 1-element array holding it). */
  readonly scalar?: number | bigint | boolean;
  /**
   * An output the call allocated itself: all zeros when the call starts, so a copy of its old
   * contents (block staging, for a kernel not known to write every element) can be a clear instead.
   */
  readonly fresh?: true;
}

/** Data that lives on a device; only the gpu target reads it. */
export interface DeviceResident {
  readonly kind: 'device';
}

/**
 * A call's limits (the `signal` and `timeout` call options). A target that can stop work stops it
 * when the signal aborts or the deadline passes, and rejects with a `CallCancelledError`.
 */
export interface CallLimits {
  readonly signal?: AbortSignal;
  /** The `timeout` option, in milliseconds. */
  readonly timeout?: number;
  /** `performance.now()` by which the call must end. */
  readonly deadline?: number;
}

export interface CallPlan {
  readonly kind: 'vectorize' | 'guvectorize';
  readonly kernel: TypedKernel;
  /** Identifies (kernel function, signature, env) for caches: equal keys compile to equal code. */
  readonly kernelKey: string;
  readonly loopShape: readonly number[];
  /** Inputs first, then outputs. */
  readonly operands: readonly OperandView[];
  readonly nin: number;
  /** Whether kernels check array indices against core dimensions (default true). */
  readonly boundsCheck: boolean;
  /**
   * guvectorize: per operand (as `operands`), the layout's name of each core axis (undefined where
   * the layout fixes a size). Axes named alike have equal sizes, by the call's own check
   * (`schedule`), so engines may drop bounds checks that this makes redundant. Absent: nothing known.
   */
  readonly coreNames?: readonly (readonly (string | undefined)[])[];
  /** Present when the call passed `signal` or `timeout`. */
  readonly limits?: CallLimits;
  /**
   * A plain-JS call's (`disableJit`) random stream key: its kernel's `Math.random()` draws from it
   * (compiled kernels that draw take theirs as inputs, compiler/random-stream.ts).
   */
  readonly plainRandomKey?: readonly [number, number];
}

export function loopSize(plan: CallPlan): number {
  return sizeOf(plan.loopShape);
}

export const isDeviceResident = (d: OperandView['data']): d is DeviceResident =>
  (d as DeviceResident).kind === 'device';

/**
 * The device-array interface the front and targets share: an array in a device target's memory
 * (the gpu's `DeviceArray` implements it), and an operand viewing one.
 */
export interface DeviceOperand extends StridedView {
  readonly kind: 'device';
  readonly array: DeviceArrayLike;
}

/** An array in a device target's memory (the gpu's `DeviceArray`), as far as the front uses one. */
export interface DeviceArrayLike extends StridedView {
  readonly kind: 'device';
  /** Its number of elements. */
  readonly size: number;
  /**
   * The memory it views, the same object for every view of one array (the gpu's `GPUBuffer`): a
   * call that copies device operands to the host (plain JS, `disableJit`) copies each memory once, so
   * that outputs interleaved in one array see each other's writes, as on the device.
   */
  readonly memory?: object;
  /** Another view of the same memory (methods and staged outputs read and write through views). */
  view(shape: readonly number[], strides: readonly number[], offset: number): DeviceArrayLike;
  /** Frees its memory now (a call's device temporaries). */
  destroy(): void;
}

/**
 * What a later call with the same argument facts reuses of a planned call (plan-cache.ts): its
 * plan without the operands, the dtypes the loop reads and writes, and for calls laid out per
 * array (guvectorize on device arrays) the loop shape, the views and the layouts planned for.
 */
export interface PlanTemplate {
  readonly plan: Omit<CallPlan, 'operands' | 'loopShape'>;
  /** Per operand (inputs, then the output): the dtype the loop reads or writes. */
  readonly types: readonly OperandView['dtype'][];
  /** Calls laid out per array: the loop shape. */
  readonly loopShape?: readonly number[];
  /** Calls laid out per array: the operand views, without their arrays (put in per call). */
  readonly views?: readonly Omit<OperandView, 'data'>[];
  /** Calls laid out per array: each array input's layout (an empty slot for a number). */
  readonly layouts?: readonly (StridedLayout | undefined)[];
  /** Calls laid out per array: the output's layout and dtype, given or as allocated. */
  readonly output?: StridedLayout & { readonly dtype: OperandView['dtype'] };
}

/** A checked array argument. */
export interface ArrayOperand extends StridedView {
  readonly kind: 'array';
  readonly data: TypedArray;
  /** The caller passed a bare typed array (so a 1-D result may be one too). */
  readonly plain: boolean;
  /** What the caller passed, returned as is when it is an `out`. */
  readonly original: unknown;
}
