/** Test data for the gpu transfer tests: every bit pattern a dtype can hold, reproducibly. */
import { ALL_DTYPES, DTYPES, isBigInt, type DType, type TypedArray } from '../../../src/dtypes.js';

/** The dtypes the gpu target stores (WGSL has no 64-bit types). */
export const GPU_DTYPES: readonly DType[] = ALL_DTYPES.filter((t) => !isBigInt(t) && t !== 'float64');

/** Sizes that find bugs: empty, single, odd byte counts for 1- and 2-byte types, past a workgroup, large. */
export const TRANSFER_SIZES = [0, 1, 3, 5, 1025, 1_000_001] as const;

/**
 * `length` elements of `dtype` filled with pseudo-random bytes (so floats include NaNs with
 * payloads, infinities, −0 and subnormals); bool gets 0 and 1 only.
 */
export function randomArray(dtype: DType, length: number, seed = 12345): TypedArray {
  const array = new DTYPES[dtype].arrayType(length);
  const bytes = new Uint8Array(array.buffer, array.byteOffset, array.byteLength);
  let state = (seed ^ length) >>> 0 || 1;
  for (let i = 0; i < bytes.length; i++) {
    // xorshift32: fast, and enough to make every byte differ from its neighbours
    state ^= state << 13;
    state ^= state >>> 17;
    state ^= state << 5;
    bytes[i] = dtype === 'bool' ? state & 1 : state & 0xff;
  }
  return array;
}

/** Index of the first byte where the two views differ, -1 when byte-identical, -2 when lengths differ. */
export function firstByteDifference(a: ArrayBufferView, b: ArrayBufferView): number {
  if (a.byteLength !== b.byteLength) return -2;
  const x = Buffer.from(a.buffer, a.byteOffset, a.byteLength);
  const y = Buffer.from(b.buffer, b.byteOffset, b.byteLength);
  if (x.equals(y)) return -1;
  return x.findIndex((byte, i) => byte !== y[i]);
}
