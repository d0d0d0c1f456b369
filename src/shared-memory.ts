/**
 * Arrays in shared memory (`SharedArrayBuffer`). The parallel target's workers read and write such
 * arrays where they are; any other array is copied into shared memory for the call (and outputs
 * copied back), which for a cheap kernel can cost as much as the kernel itself.
 */
import { type DType, DTYPES, type TypedArrayOf } from './dtypes.js';
import { ArgumentError, TargetUnavailableError } from './errors.js';
import { cOrderStrides, sizeOf } from './layout.js';
import type { NDArray } from './ndarray.js';
import { allocateInWasmMemory } from './targets/cpu/wasm/index.js';

export type { TypedArrayOf } from './dtypes.js';

function checkDType(dtype: unknown): asserts dtype is DType {
  if (typeof dtype !== 'string' || !Object.prototype.hasOwnProperty.call(DTYPES, dtype)) {
    throw new ArgumentError(`Unknown dtype \`${String(dtype)}\`; the dtypes are ${Object.keys(DTYPES).join(', ')}.`);
  }
}

/**
 * Allocates a zeroed typed array in shared memory, which the parallel target uses without copying.
 *
 * Where there is room it lies in the Wasm engine's memory (kernels then read it in place), and its
 * memory is freed when *this array object* is garbage-collected: keep the array itself while any
 * view of it (`subarray(…)`, a typed array over `.buffer`) is in use, or a later allocation may
 * reuse the memory under that view. (Outputs the library allocates for a call never lie there.)
 *
 * @param length - number of elements
 * @param dtype - element type @default 'float64'
 * @returns a typed array of `dtype` over a new `SharedArrayBuffer`
 * @example
 * const xs = sharedArray(1_000_000, 'float32');
 * xs.fill(1);
 * const ys = await expf(xs, { out: sharedArray(xs.length, 'float32') });
 */
export function sharedArray<D extends DType = 'float64'>(length: number, dtype: D = 'float64' as D): TypedArrayOf[D] {
  checkDType(dtype);
  if (!Number.isSafeInteger(length) || length < 0) throw new ArgumentError(`\`length\` must be a non-negative integer, found ${String(length)}.`);
  const { arrayType, bytes } = DTYPES[dtype];
  if (typeof SharedArrayBuffer === 'undefined') {
    throw new TargetUnavailableError(
      'Shared memory (SharedArrayBuffer) is not available here: a page has it only when it is cross-origin isolated (headers `Cross-Origin-Opener-Policy: same-origin` and `Cross-Origin-Embedder-Policy: require-corp`). Use an ordinary typed array instead.',
    );
  }
  // In the Wasm engine's memory where there is room (kernels then read it in place), else a
  // SharedArrayBuffer of its own.
  const inWasm = length > 0 ? allocateInWasmMemory(arrayType, length) : undefined;
  return (inWasm ?? new arrayType(new SharedArrayBuffer(length * bytes), 0, length)) as TypedArrayOf[D];
}

/**
 * Allocates a zeroed C-contiguous n-dimensional array in shared memory.
 *
 * @param shape - the size of each axis
 * @param dtype - element type @default 'float64'
 * @returns an `NDArray` whose `data` lies in a new `SharedArrayBuffer`
 * @example
 * const table = sharedNDArray([xs.length, 16], 'float32');
 * await hermite(xs, { out: table });
 */
export function sharedNDArray<D extends DType = 'float64'>(shape: readonly number[], dtype: D = 'float64' as D): NDArray<TypedArrayOf[D]> {
  if (!Array.isArray(shape) || !shape.every((n) => Number.isSafeInteger(n) && n >= 0)) {
    throw new ArgumentError(`\`shape\` must be an array of non-negative integers, found ${JSON.stringify(shape)}.`);
  }
  const data = sharedArray(sizeOf(shape), dtype);
  return { data, shape: [...shape], strides: cOrderStrides(shape), offset: 0, dtype: dtype as unknown as NDArray<TypedArrayOf[D]>['dtype'], order: 'row-major' };
}

/**
 * Whether an array's memory is shared, i.e. the parallel target uses it without copying.
 *
 * @param array - a typed array, or an ndarray-like `{ data }`
 * @returns true where its buffer is a `SharedArrayBuffer`
 * @example
 * isShared(sharedArray(4, 'int32')); // true
 */
export function isShared(array: ArrayBufferView | { readonly data: ArrayBufferView }): boolean {
  const { buffer } = ArrayBuffer.isView(array) ? array : array.data;
  if (typeof SharedArrayBuffer !== 'undefined' && buffer instanceof SharedArrayBuffer) return true;
  // A SharedArrayBuffer from another realm (a vm context) fails `instanceof` but is shared too.
  return !(buffer instanceof ArrayBuffer) && Object.prototype.toString.call(buffer) === '[object SharedArrayBuffer]';
}
