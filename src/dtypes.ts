/**
 * The element types a ufunc works on: Numba's names and their typed-array storage (which casts
 * between them are allowed: cast-rules.ts).
 */

export type DType =
  | 'bool'
  | 'int8'
  | 'int16'
  | 'int32'
  | 'int64'
  | 'uint8'
  | 'uint8c'
  | 'uint16'
  | 'uint32'
  | 'uint64'
  | 'float32'
  | 'float64';

export type TypedArray =
  | Int8Array
  | Int16Array
  | Int32Array
  | BigInt64Array
  | Uint8Array
  | Uint8ClampedArray
  | Uint16Array
  | Uint32Array
  | BigUint64Array
  | Float32Array
  | Float64Array;

export type TypedArrayConstructor = {
  new (length: number): TypedArray;
  new (buffer: ArrayBufferLike, byteOffset?: number, length?: number): TypedArray;
  readonly BYTES_PER_ELEMENT: number;
  readonly name: string;
};

export interface DTypeInfo {
  readonly name: DType;
  /** NumPy's kind letter: b(ool), i(nt), u(nsigned), f(loat). */
  readonly kind: 'b' | 'i' | 'u' | 'f';
  readonly bits: 8 | 16 | 32 | 64;
  readonly bytes: number;
  /** The typed array that stores it; bool is stored one byte per element, 0 or 1. */
  readonly arrayType: TypedArrayConstructor;
  /** True where the JS value is a bigint (int64, uint64). */
  readonly bigint: boolean;
}

function info(name: DType, kind: DTypeInfo['kind'], bits: DTypeInfo['bits'], arrayType: TypedArrayConstructor): DTypeInfo {
  return { name, kind, bits, bytes: bits / 8, arrayType, bigint: bits === 64 && kind !== 'f' };
}

export const DTYPES: Readonly<Record<DType, DTypeInfo>> = {
  bool: info('bool', 'b', 8, Uint8Array as TypedArrayConstructor),
  int8: info('int8', 'i', 8, Int8Array as TypedArrayConstructor),
  int16: info('int16', 'i', 16, Int16Array as TypedArrayConstructor),
  int32: info('int32', 'i', 32, Int32Array as TypedArrayConstructor),
  int64: info('int64', 'i', 64, BigInt64Array as unknown as TypedArrayConstructor),
  uint8: info('uint8', 'u', 8, Uint8Array as TypedArrayConstructor),
  // stdlib's name (scijs: uint8_clamped): uint8 whose stores clamp to 0…255 and round half to even.
  uint8c: info('uint8c', 'u', 8, Uint8ClampedArray as TypedArrayConstructor),
  uint16: info('uint16', 'u', 16, Uint16Array as TypedArrayConstructor),
  uint32: info('uint32', 'u', 32, Uint32Array as TypedArrayConstructor),
  uint64: info('uint64', 'u', 64, BigUint64Array as unknown as TypedArrayConstructor),
  float32: info('float32', 'f', 32, Float32Array as TypedArrayConstructor),
  float64: info('float64', 'f', 64, Float64Array as TypedArrayConstructor),
};

export const ALL_DTYPES: readonly DType[] = Object.keys(DTYPES) as DType[];

export function isDType(s: string): s is DType {
  return Object.prototype.hasOwnProperty.call(DTYPES, s);
}

export const isFloat = (t: DType): boolean => DTYPES[t].kind === 'f';
export const isInteger = (t: DType): boolean => DTYPES[t].kind === 'i' || DTYPES[t].kind === 'u';
export const isBigInt = (t: DType): boolean => DTYPES[t].bigint;

/**
 * The dtype a typed array stores. `Uint8Array` reads as uint8 (pass `{ data, dtype: 'bool' }` for
 * booleans); `Uint8ClampedArray` is uint8c.
 */
export function dtypeOfArray(a: unknown): DType | undefined {
  if (a instanceof Float32Array) return 'float32';
  if (a instanceof Float64Array) return 'float64';
  if (a instanceof Int32Array) return 'int32';
  if (a instanceof Uint32Array) return 'uint32';
  if (a instanceof Int16Array) return 'int16';
  if (a instanceof Uint16Array) return 'uint16';
  if (a instanceof Int8Array) return 'int8';
  if (a instanceof Uint8Array) return 'uint8';
  if (a instanceof Uint8ClampedArray) return 'uint8c';
  if (a instanceof BigInt64Array) return 'int64';
  if (a instanceof BigUint64Array) return 'uint64';
  return undefined;
}

export function isTypedArray(a: unknown): a is TypedArray {
  return ArrayBuffer.isView(a) && !(a instanceof DataView);
}

/** The typed array that stores each dtype. */
export interface TypedArrayOf {
  bool: Uint8Array;
  int8: Int8Array;
  int16: Int16Array;
  int32: Int32Array;
  int64: BigInt64Array;
  uint8: Uint8Array;
  uint8c: Uint8ClampedArray;
  uint16: Uint16Array;
  uint32: Uint32Array;
  uint64: BigUint64Array;
  float32: Float32Array;
  float64: Float64Array;
}
