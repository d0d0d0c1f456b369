/**
 * Arrays as ufuncs take and give them: plain typed arrays, and strided views over a typed array
 * (`{ data, shape, strides?, offset? }`, scijs's `stride` accepted too). Strides count elements
 * and may be zero or negative.
 */
import { type DType, DTYPES, dtypeOfArray, isTypedArray, type TypedArray } from './dtypes.js';
import { ArgumentError } from './errors.js';
import { cOrderStrides, isFContiguous, reachOf, sizeOf, type StridedView } from './layout.js';
import type { ArrayOperand, DeviceArrayLike, DeviceOperand } from './plan.js';

/** A strided n-dimensional view of a typed array; what ufuncs return for results that are not 1-D. */
export interface NDArray<T extends TypedArray = TypedArray> extends Omit<StridedView, 'offset' | 'dtype'> {
  readonly data: T;
  /** The dtype of the elements: the one its typed array holds (a Uint8Array's may be bool). */
  readonly dtype: DTypeOfArray<T>;
  /** Element offset of index [0, 0, …]. */
  readonly offset: number;
  /**
   * How the elements are laid out, in stdlib's words, so `new ndarray(r.dtype, r.data, r.shape,
   * r.strides, r.offset, r.order)` takes a result as it is. Results the library allocates are
   * 'row-major' (C order).
   */
  readonly order: 'row-major' | 'column-major';
}

/** The dtypes a typed array may hold. */
export type DTypeOfArray<T> = T extends Float32Array ? 'float32' : T extends Float64Array ? 'float64'
  : T extends Int8Array ? 'int8' : T extends Int16Array ? 'int16' : T extends Int32Array ? 'int32' : T extends BigInt64Array ? 'int64'
  : T extends Uint8ClampedArray ? 'uint8c' : T extends Uint8Array ? 'uint8' | 'bool' : T extends Uint16Array ? 'uint16' : T extends Uint32Array ? 'uint32' : T extends BigUint64Array ? 'uint64'
  : DType;

/** What a caller may pass where an array is expected. */
export interface NDArrayLike {
  readonly data: TypedArray;
  readonly shape: readonly number[];
  readonly strides?: readonly number[];
  /** scijs ndarray's name for `strides`. */
  readonly stride?: readonly number[];
  readonly offset?: number;
  /**
   * Needed only to read a Uint8Array as `bool` or as `uint8c`; a Uint8ClampedArray is `uint8c`
   * (stdlib's name; scijs's `uint8_clamped` is accepted too): stores into it clamp.
   */
  readonly dtype?: DType | 'uint8_clamped';
}


export interface ScalarOperand {
  readonly kind: 'scalar';
  readonly value: number | bigint | boolean;
}

/** An array resident on a device (gpu target); checked by that target. */
export type { ArrayOperand, DeviceArrayLike, DeviceOperand } from './plan.js';

export type Operand = ArrayOperand | ScalarOperand | DeviceOperand;

/** stdlib's `order` of a layout: 'column-major' for Fortran-contiguous strides (of rank ≥ 2), else 'row-major'. */
export function orderOf(shape: readonly number[], strides: readonly number[]): 'row-major' | 'column-major' {
  return shape.length >= 2 && isFContiguous(shape, strides) ? 'column-major' : 'row-major';
}

const isDeviceArray = (x: unknown): x is DeviceArrayLike =>
  typeof x === 'object' && x !== null && (x as { kind?: unknown }).kind === 'device';

/**
 * Checks one argument and describes it.
 *
 * @param x - a number, bigint, boolean, typed array, ndarray-like or device array
 * @param what - how messages name it, e.g. "argument 2" or "`out`"
 * @throws ArgumentError saying what was expected and what was found
 */
export function toOperand(x: unknown, what: string): Operand {
  if (typeof x === 'number' || typeof x === 'bigint' || typeof x === 'boolean') return { kind: 'scalar', value: x };
  if (isTypedArray(x)) {
    assertAttached(x, what);
    const dtype = dtypeOfArray(x)!;
    return { kind: 'array', data: x, dtype, shape: [x.length], strides: [1], offset: 0, plain: true, original: x };
  }
  if (isDeviceArray(x)) {
    return { kind: 'device', array: x, dtype: x.dtype, shape: x.shape, strides: x.strides, offset: x.offset };
  }
  if (typeof x === 'object' && x !== null && 'data' in x) return ndarrayOperand(x as NDArrayLike, what);
  if (typeof x === 'object' && x !== null && (x as { kind?: unknown }).kind === 'sharded') {
    // The gpu target runs calls on sharded arrays per shard before they get here; nothing else takes them.
    throw new ArgumentError(
      `${capitalise(what)} is a ShardedArray (rows across GPU devices), which only calls of gpu ufuncs take, not methods (reduce, accumulate, outer, …) nor other targets: gather it with toHost(), or call per shard (sharded.shards).`,
    );
  }
  throw new ArgumentError(
    `${capitalise(what)} must be a number, a typed array or an ndarray-like { data, shape, strides? }, found ${describe(x)}.`,
  );
}

function ndarrayOperand(x: NDArrayLike, what: string): ArrayOperand {
  const { data } = x;
  if (!isTypedArray(data)) throw new ArgumentError(`${capitalise(what)}.data must be a typed array, found ${describe(data)}.`);
  assertAttached(data, `${what}.data`);
  const shape = x.shape;
  if (!Array.isArray(shape) || !shape.every((n) => Number.isInteger(n) && n >= 0)) {
    throw new ArgumentError(`${capitalise(what)}.shape must be an array of non-negative integers, found ${JSON.stringify(shape)}.`);
  }
  const strides = x.strides ?? x.stride ?? cOrderStrides(shape);
  if (!Array.isArray(strides) || strides.length !== shape.length || !strides.every((s) => Number.isInteger(s))) {
    throw new ArgumentError(
      `${capitalise(what)}.strides must be ${shape.length} integer${shape.length === 1 ? '' : 's'} (one per axis of shape [${shape.join(', ')}]), found ${JSON.stringify(strides)}.`,
    );
  }
  const offset = x.offset ?? 0;
  if (!Number.isInteger(offset) || offset < 0) throw new ArgumentError(`${capitalise(what)}.offset must be a non-negative integer, found ${offset}.`);
  let dtype = dtypeOfArray(data)!;
  const declared = x.dtype === 'uint8_clamped' ? 'uint8c' : x.dtype;
  if (declared !== undefined && declared !== dtype) {
    // A Uint8Array may be read as bool, or as uint8c (its stores then clamp); a Uint8ClampedArray
    // that says uint8 stays uint8c, as its own stores clamp whatever the label.
    if (dtype === 'uint8' && (declared === 'bool' || declared === 'uint8c')) dtype = declared;
    else if (!(dtype === 'uint8c' && declared === 'uint8')) {
      throw new ArgumentError(`${capitalise(what)} says dtype ${x.dtype} but its data is a ${data.constructor.name} (${dtype}).`);
    }
  }
  // Every reachable element must lie inside data: a wrong stride must not read or write elsewhere.
  const reach = reachOf(shape, strides, offset);
  if (reach) {
    const { low, high } = reach;
    if (low < 0 || high >= data.length) {
      throw new ArgumentError(
        `${capitalise(what)} reaches elements ${low}…${high} of its data (shape [${shape.join(', ')}], strides [${strides.join(', ')}], offset ${offset}), but data has ${data.length} elements.`,
      );
    }
  }
  return { kind: 'array', data, dtype, shape: [...shape], strides: [...strides], offset, plain: false, original: x };
}

/** Copies any strided view into a new C-contiguous typed array of `dtype`, converting as typed arrays do. */
export function copyToContiguous(a: ArrayOperand, dtype: DType): TypedArray {
  const n = sizeOf(a.shape);
  const out = new DTYPES[dtype].arrayType(n);
  const bigOut = DTYPES[dtype].bigint;
  const bigIn = DTYPES[a.dtype].bigint;
  const convert = (v: unknown): unknown => {
    if (bigOut === bigIn) return v;
    if (bigOut) return typeof v === 'number' && Number.isFinite(v) ? BigInt(Math.trunc(v)) : 0n;
    return Number(v);
  };
  const rank = a.shape.length;
  const idx = new Array<number>(rank).fill(0);
  for (let k = 0; k < n; k++) {
    let at = a.offset;
    for (let d = 0; d < rank; d++) at += idx[d]! * a.strides[d]!;
    (out as unknown as unknown[])[k] = convert(a.data[at]);
    for (let d = rank - 1; d >= 0; d--) {
      if (++idx[d]! < a.shape[d]!) break;
      idx[d] = 0;
    }
  }
  return out;
}

export function capitalise(s: string): string {
  return s.charAt(0).toUpperCase() + s.slice(1);
}

export function describe(x: unknown): string {
  if (x === null) return 'null';
  if (x === undefined) return 'undefined';
  if (Array.isArray(x)) return `a plain array of length ${x.length} (wrap it: new Float64Array(array))`;
  if (isTypedArray(x)) return `a ${x.constructor.name} of length ${x.length}`;
  if (typeof x === 'object') return `an object with keys {${Object.keys(x).join(', ')}}`;
  if (typeof x === 'string') return `the string ${JSON.stringify(x.length > 40 ? x.slice(0, 40) + '…' : x)}`;
  return `a ${typeof x}`;
}

/**
 * Whether a typed array's buffer was detached (transferred to a worker, `structuredClone` with
 * `transfer`, `ArrayBuffer.prototype.transfer`): it then reads as empty, so a call on it would
 * silently compute nothing. Node 20 has no `ArrayBuffer.prototype.detached`; a detached buffer is
 * the one whose byte length is 0 and that cannot be viewed.
 *
 * @param array - any typed array
 * @returns true when its memory is gone
 * @example
 * isDetached(x); // false, until `structuredClone(x.buffer, { transfer: [x.buffer] })`
 */
export function isDetached(array: ArrayBufferView): boolean {
  const buffer = array.buffer as ArrayBuffer & { detached?: boolean };
  if (typeof buffer.detached === 'boolean') return buffer.detached;
  if (buffer.byteLength !== 0 || buffer instanceof SharedArrayBuffer) return false;
  try {
    new Uint8Array(buffer);
    return false;
  } catch {
    return true;
  }
}

/**
 * Throws an `ArgumentError` when `array`'s buffer was detached.
 *
 * @param array - the typed array
 * @param what - where it was met, e.g. "argument 1" or "`out`"
 * @param during - set when the buffer was detached while the call ran (not before it)
 * @example
 * assertAttached(x, 'argument 1');
 */
export function assertAttached(array: ArrayBufferView, what: string, during = false): void {
  if (!isDetached(array)) return;
  throw new ArgumentError(
    during
      ? `${capitalise(what)} is a ${array.constructor.name} whose buffer was detached (transferred) while the call was running; its data is gone, so the call cannot ${/out/.test(what) ? 'write its results there' : 'read it'}. Do not transfer arrays a call is using until it has settled.`
      : `${capitalise(what)} is a ${array.constructor.name} whose buffer was detached (transferred, e.g. with \`postMessage\` or \`structuredClone(…, { transfer })\`); its data is gone. Pass an array that still owns its memory.`,
  );
}
