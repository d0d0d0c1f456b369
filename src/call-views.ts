/**
 * Views a call's planning stages share: an operand as the kernel's loop sees it (loop strides,
 * then its core dimensions), axes moved last, and views of device arrays.
 */
import { loopStridesFor } from './broadcast.js';
import type { DType } from './dtypes.js';
import type { ArrayOperand, DeviceOperand } from './ndarray.js';
import type { OperandView } from './plan.js';

/** An operand as the plan holds it: loop strides over the call's loop, then its core shape and strides. */
export function viewOf(op: ArrayOperand | DeviceOperand, dtype: DType, loopRank: number, coreRank: number, coreShape: readonly number[]): OperandView {
  const split = op.shape.length - coreRank;
  const coreStrides = coreRank === 0 ? coreShape.map(() => 1) : op.strides.slice(split);
  return {
    dtype,
    data: op.kind === 'device' ? (op.array as unknown as OperandView['data']) : op.data,
    offset: op.offset,
    loopStrides: loopStridesFor(op.shape, op.strides, loopRank, coreRank),
    coreShape,
    coreStrides,
  };
}

/** An operand viewed with some of its axes permuted (`perm[d]` is the original axis of new axis d). */
export function permuted<T extends ArrayOperand | DeviceOperand>(op: T, perm: readonly number[]): T {
  return { ...op, shape: perm.map((d) => op.shape[d]!), strides: perm.map((d) => op.strides[d]!) };
}

/** A device array's view of other shape and strides, over the same memory. */
export function deviceView(a: DeviceOperand['array'], shape: readonly number[], strides: readonly number[], offset: number): DeviceOperand['array'] {
  return a.view(shape, strides, offset);
}
