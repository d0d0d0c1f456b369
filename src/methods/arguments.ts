/**
 * Argument helpers of the ufunc methods (methods.ts): arrays and axes checked, views of operands
 * as fold kernels take them (rows of the folded axes, a `where` mask laid out as those rows).
 */
import { forcedTypes } from '../call-options.js';
import { ArgumentError } from '../errors.js';
import { cOrderStrides, sameAxes, sizeOf } from '../layout.js';
import { type ArrayOperand, type DeviceOperand, type NDArray, copyToContiguous, describe, toOperand } from '../ndarray.js';

export const arrayArgument = (x: unknown, what: string): ArrayOperand | DeviceOperand => {
  const op = toOperand(x, what);
  if (op.kind === 'scalar') throw new ArgumentError(`${what[0]!.toUpperCase()}${what.slice(1)} must be an array, found ${describe(x)}.`);
  return op;
};

export const normaliseAxis = (axis: number, rank: number): number => {
  const a = axis < 0 ? axis + rank : axis;
  if (!Number.isInteger(axis) || a < 0 || a >= rank) throw new ArgumentError(`\`axis\` ${axis} is out of bounds for an array of ${rank} dimension${rank === 1 ? '' : 's'}.`);
  return a;
};

/** The argument as the caller's value (`original`), or a plain view object of it. */
export const asArgument = (op: ArrayOperand | DeviceOperand, shape: readonly number[], strides: readonly number[], offset = op.offset): unknown => {
  if (op.kind === 'device') {
    const array = op.array;
    // The array's own layout (a reduce over the last axis of a C-ordered array): the array itself, no view to make.
    if (offset === array.offset && sameAxes(shape, array.shape) && sameAxes(strides, array.strides)) return array;
    return (array as unknown as { view(s: readonly number[], st: readonly number[], o: number): unknown }).view(shape, strides, offset);
  }
  return { data: op.data, shape, strides, offset, dtype: op.dtype };
};

/** A 0-d host result as a JS value, as NumPy gives a scalar. */
export const unwrap = (r: unknown): unknown => {
  const nd = r as NDArray;
  if (nd && typeof nd === 'object' && 'data' in nd && Array.isArray(nd.shape) && nd.shape.length === 0) {
    const v = nd.data[nd.offset ?? 0]!;
    return nd.dtype === 'bool' ? v !== 0 : v;
  }
  return r;
};

/** `x` in the fold's `dtype` option: a converted copy of a host array (NumPy's reductions cast unsafely). */
export const inDtype = (op: ArrayOperand | DeviceOperand, dtype: unknown, method: string): ArrayOperand | DeviceOperand => {
  if (dtype === undefined || dtype === null) return op;
  const t = forcedTypes({ dtype: dtype as string }, 0, 1)![0]!;
  if (op.dtype === t) return op;
  if (op.kind === 'device') {
    throw new ArgumentError(`\`${method}\` with \`dtype: '${t}'\` of a ${op.dtype} DeviceArray: device arrays are not converted; pass a ${t} one, or leave \`dtype\` out.`);
  }
  const data = copyToContiguous(op, t);
  return { kind: 'array', data, dtype: t, shape: op.shape, strides: cOrderStrides(op.shape), offset: 0, plain: false, original: undefined };
};

/** Refuses an `out` whose shape is not the result's (NumPy does not broadcast into `out` of a method). */
export const checkOutShape = (out: unknown, expected: readonly number[], method: string, why: string) => {
  if (out === undefined) return;
  const o = arrayArgument(out, '`out`');
  // A 0-d result may go into one element of a 1-D array: a plain typed array cannot be 0-d.
  if (expected.length === 0 && o.shape.length === 1 && o.shape[0] === 1) return;
  if (o.shape.length !== expected.length || o.shape.some((s, d) => s !== expected[d])) {
    throw new ArgumentError(`\`out\` of \`${method}\` must have the result's shape [${expected.join(', ')}] (${why}), found shape [${o.shape.join(', ')}].`);
  }
};

/** x viewed as [...kept axes, n] with the folded axes merged into the last. */
export function rowsView(op: ArrayOperand | DeviceOperand, kept: number[], axes: number[]): unknown {
  const keptShape = kept.map((d) => op.shape[d]!);
  const keptStrides = kept.map((d) => op.strides[d]!);
  const n = sizeOf(axes.map((d) => op.shape[d]!));
  // The folded axes merge when each steps over the whole of the next one (C order among them).
  const live = axes.filter((d) => op.shape[d] !== 1);
  const mergeable = live.every((d, k) => k === live.length - 1 || op.strides[d] === op.strides[live[k + 1]!]! * op.shape[live[k + 1]!]!);
  if (mergeable) {
    const stride = live.length ? op.strides[live[live.length - 1]!]! : 1;
    return asArgument(op, [...keptShape, n], [...keptStrides, stride]);
  }
  if (op.kind === 'device') {
    throw new ArgumentError(`\`reduce\` over axes [${axes.join(', ')}] of this DeviceArray (strides [${op.strides.join(', ')}]) needs them to merge into one; reduce one axis at a time.`);
  }
  const perm = [...kept, ...axes];
  const permuted: ArrayOperand = { ...op, shape: perm.map((d) => op.shape[d]!), strides: perm.map((d) => op.strides[d]!) };
  const data = copyToContiguous(permuted, op.dtype);
  const shape = [...keptShape, n];
  return { data, shape, strides: cOrderStrides(shape), offset: 0, dtype: op.dtype };
}

/** The `where` mask broadcast to x's shape and laid out as `rowsView` lays out x (a host bool array). */
export function maskRows(where: unknown, shape: readonly number[], kept: number[], axes: number[]): unknown {
  const w = toOperand(where, '`where`');
  if (w.kind === 'scalar') {
    if (typeof w.value !== 'boolean') throw new ArgumentError(`\`where\` must be a boolean mask, found ${describe(where)}.`);
    const data = new Uint8Array(sizeOf(shape)).fill(w.value ? 1 : 0);
    return { data, shape: [...kept.map((d) => shape[d]!), sizeOf(axes.map((d) => shape[d]!))], dtype: 'bool' };
  }
  if (w.kind === 'device' || !(w.dtype === 'bool' || w.dtype === 'uint8')) {
    throw new ArgumentError(`\`where\` must be a boolean mask in host memory ({ data: Uint8Array, dtype: 'bool' } or a Uint8Array), found ${w.kind === 'device' ? 'a DeviceArray' : `an array of ${w.dtype}`}.`);
  }
  if (w.shape.length > shape.length || w.shape.some((s, d) => s !== 1 && s !== shape[shape.length - w.shape.length + d])) {
    throw new ArgumentError(`\`where\` of shape [${w.shape.join(', ')}] does not broadcast to the array's shape [${shape.join(', ')}].`);
  }
  // Broadcast (stride 0 on new and size-1 axes), then gather in rows order.
  const lead = shape.length - w.shape.length;
  const strides = shape.map((_, d) => (d < lead || w.shape[d - lead] === 1 ? 0 : w.strides[d - lead]!));
  const perm = [...kept, ...axes];
  const view: ArrayOperand = { ...w, dtype: 'uint8', shape: perm.map((d) => shape[d]!), strides: perm.map((d) => strides[d]!) };
  const data = copyToContiguous(view, 'uint8') as Uint8Array;
  return { data, shape: [...kept.map((d) => shape[d]!), sizeOf(axes.map((d) => shape[d]!))], dtype: 'bool' };
}
