/**
 * Arrays that live on the GPU, so a chain of gpu ufunc calls does not cross the bus between steps
 * (Numba's `cuda.to_device` / `cuda.device_array` / `.copy_to_host()`).
 *
 * Elements are stored packed, byte-identical to the host typed array (bool as one byte, 0 or 1).
 * `shape`, `strides` (in elements) and `offset` (in elements) describe a view of the buffer, so a
 * kernel may produce, say, a column-major output (coalesced stores) and `toHost()` still returns
 * C order.
 *
 * A DeviceArray keeps its device from being released while idle, until `destroy()` or until the
 * array is garbage-collected.
 */
import { DTYPES, dtypeOfArray, isTypedArray, type DType, type TypedArray } from '../../dtypes.js';
import { ArgumentError, DeviceError, TargetUnavailableError } from '../../errors.js';
import { cOrderStrides, isCContiguous, reachOf, sizeOf, type StridedView } from '../../layout.js';
import { allocateBuffer, downloadBuffer, uploadToNewBuffer, writeToBuffer } from './buffers.js';
import { assertDeviceAlive, holdDevice, runScoped, withDevice, type DeviceHold, type GpuContext } from './device.js';

/** A host array with its layout, as `toDevice` accepts it. */
export interface HostArrayView {
  readonly data: TypedArray;
  readonly shape: readonly number[];
  /** In elements; C order when omitted. May be 0 (broadcast) or negative. */
  readonly strides?: readonly number[];
  /** In elements, into `data`. @default 0 */
  readonly offset?: number;
  /** Needed only to say `bool` for a Uint8Array. @default the typed array's own dtype */
  readonly dtype?: DType;
}

const DEVICE_ARRAY_USAGE = () => GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST;

// An array dropped without destroy() still gives its hold back when collected, so the device
// can be released; the buffer itself is freed by dawn.node's own finalizer.
const holdsOfCollectedArrays = new FinalizationRegistry<DeviceHold>((hold) => hold.release());

/**
 * Buffers known to hold only zeros: fresh from {@link deviceArray} and not yet written by a
 * kernel. A kernel that stages output rows through workgroup memory (coalescing.ts) can then start
 * from zeros instead of reading the output first.
 */
const knownZero = new WeakSet<GPUBuffer>();

/**
 * Per buffer, the bounds checks of the calls that wrote it and of the calls those read from. Calls
 * on device arrays return as soon as their work is submitted, so a failed index check is found
 * later: it is reported by the next `toHost()` of the data it touched (or by the next call that
 * brings data back to the host), as the same KernelRuntimeError the cpu would have thrown.
 */
const pendingChecks = new WeakMap<GPUBuffer, Promise<void>>();

/**
 * Whether a buffer is known to hold only zeros (allocated zeroed, never written by a kernel).
 *
 * @example
 * bufferIsKnownZero((await deviceArray([4], 'float32')).buffer); // true
 */
export function bufferIsKnownZero(buffer: GPUBuffer): boolean {
  return knownZero.has(buffer);
}

/**
 * Records that a kernel writes `buffer`, and the check that reports its failure (if any).
 *
 * @param buffer the output buffer
 * @param check rejects with the call's KernelRuntimeError; handled here, so it never goes unobserved
 */
export function noteKernelWrite(buffer: GPUBuffer, check: Promise<void> | undefined): void {
  knownZero.delete(buffer);
  if (!check) return;
  const previous = pendingChecks.get(buffer);
  const combined = previous ? Promise.all([previous, check]).then(() => undefined) : check;
  combined.catch(() => {});
  pendingChecks.set(buffer, combined);
}

/**
 * The pending bounds checks of the calls that produced a buffer's contents, if any.
 *
 * @example
 * await pendingCheckOf(array.buffer); // throws the KernelRuntimeError of a failed earlier call
 */
export function pendingCheckOf(buffer: GPUBuffer): Promise<void> | undefined {
  return pendingChecks.get(buffer);
}

/** Data resident on the GPU. Create with {@link toDevice} or {@link deviceArray}. */
export class DeviceArray implements StridedView {
  /** Marks device arrays for the ufunc front, which sends calls on them to the gpu target. */
  readonly kind = 'device' as const;
  readonly shape: readonly number[];
  /** In elements. */
  readonly strides: readonly number[];
  /** Number of elements. */
  readonly size: number;
  /** The bytes of `buffer` that hold the data (the buffer itself is padded to a multiple of 4). */
  readonly byteLength: number;
  /** The device generation the data lives on; it is gone once that device is. */
  readonly generation: number;
  private destroyed = false;
  private readonly hold: DeviceHold;
  /** The device it lives on (views of it are made on the same one). */
  private readonly ctx: GpuContext;

  /**
   * Wraps a buffer that already holds the data. Most code wants {@link toDevice} or
   * {@link deviceArray}; the gpu target uses this for the outputs of a kernel.
   *
   * @param ctx the live device the buffer was created on
   * @param buffer the storage; must have STORAGE, COPY_SRC and COPY_DST usage
   * @param dtype the element type; not a 64-bit one
   * @param shape the extent of each dimension
   * @param strides in elements; C order when omitted
   * @param offset of the first element, in elements
   * @param byteLength the bytes of `buffer` that hold the data (its size before padding)
   * @example
   * const out = new DeviceArray(ctx, buffer, 'float32', [n]);
   */
  constructor(
    ctx: GpuContext,
    readonly buffer: GPUBuffer,
    readonly dtype: DType,
    shape: readonly number[],
    strides?: readonly number[],
    readonly offset: number = 0,
    byteLength?: number,
  ) {
    checkGpuDType(dtype);
    this.shape = Object.freeze([...shape]);
    this.strides = Object.freeze(strides ? [...strides] : cOrderStrides(shape));
    this.size = sizeOf(shape);
    this.byteLength = byteLength ?? this.size * DTYPES[dtype].bytes;
    this.generation = ctx.generation;
    this.ctx = ctx;
    this.hold = holdDevice(ctx);
    holdsOfCollectedArrays.register(this, this.hold, this);
  }

  /**
   * A view of the same data with another layout, without copying: a transposed or column-major
   * view, a sub-array. Both share the buffer, so `destroy()` on either frees it for both.
   *
   * @param shape the view's extents
   * @param strides in elements; may be negative
   * @param offset of the view's first element, in elements
   * @returns the view
   * @throws ArgumentError when the view reaches outside the data
   * @example
   * const rowsByColumns = await deviceArray([16, rows], 'float32');
   * const columnMajor = rowsByColumns.view([rows, 16], [1, rows]); // element (r, c) at c·rows + r
   */
  view(shape: readonly number[], strides?: readonly number[], offset = 0): DeviceArray {
    this.assertUsable();
    const dims = checkShape(shape);
    const steps = strides ? [...strides] : cOrderStrides(dims);
    const capacity = Math.floor(this.buffer.size / DTYPES[this.dtype].bytes);
    if (steps.length !== dims.length || !steps.every(Number.isSafeInteger) || !Number.isSafeInteger(offset) || offset < 0) {
      throw new ArgumentError(`DeviceArray.view: expected ${dims.length} integer strides and an offset >= 0, got [${steps.join(', ')}] and ${offset}`);
    }
    if (!dims.some((d) => d === 0)) {
      const { low, high } = reachOf(dims, steps, offset)!;
      if (low < 0 || high >= capacity) {
        throw new ArgumentError(`DeviceArray.view: shape [${dims.join(', ')}] with strides [${steps.join(', ')}] and offset ${offset} reaches elements ${low}..${high}, but the array holds ${capacity}`);
      }
    }
    return new DeviceArray(this.ctx, this.buffer, this.dtype, dims, steps, offset, this.byteLength);
  }

  /** Number of dimensions. */
  get ndim(): number {
    return this.shape.length;
  }

  /**
   * Whether the elements are packed in C order starting at `offset` (so `toHost` is one copy).
   */
  get isCContiguous(): boolean {
    return isCContiguous(this.shape, this.strides);
  }

  /**
   * Throws unless the array can be used: not destroyed, and its device still alive.
   *
   * @throws DeviceError saying which
   */
  assertUsable(): void {
    if (this.destroyed) throw new DeviceError('this DeviceArray was destroyed; it has no data any more');
    assertDeviceAlive(this.generation, 'this DeviceArray');
  }

  /**
   * Copies the elements to the host, in C order (Numba's `copy_to_host`).
   *
   * @param into where to put them: a typed array of the dtype's storage type with room for `size`
   *   elements (its first `size` are written); a new one when omitted
   * @returns `into`, or a new typed array of the dtype's storage type (Uint8Array for bool)
   * @throws DeviceError when the array was destroyed or its device is gone
   * @throws KernelRuntimeError when a gpu call that produced this data failed an index check
   * @throws ArgumentError when `into` is of another type or too small
   * @example
   * const ys = await (await toDevice(new Float32Array([1, 2]))).toHost(); // Float32Array [1, 2]
   * await ys2d.toHost(reusedHostArray);
   */
  async toHost<T extends TypedArray = TypedArray>(into?: T): Promise<T> {
    this.assertUsable();
    const { bytes: elementBytes, arrayType } = DTYPES[this.dtype];
    if (into && (!(into instanceof arrayType) || into.length < this.size)) {
      throw new ArgumentError(`toHost: expected a ${arrayType.name} of at least ${this.size} elements to copy into, got ${describe(into)} of ${into.length}`);
    }
    const out = (into ?? new arrayType(this.size)) as T;
    // A gpu call that wrote this data may have failed an index check; report it here.
    await pendingCheckOf(this.buffer);
    if (this.size === 0) return out;
    return withDevice(async (ctx) => {
      assertDeviceAlive(this.generation, 'this DeviceArray');
      if (this.isCContiguous) {
        await downloadBuffer(ctx, this.buffer, this.offset * elementBytes, this.size * elementBytes, out);
        return out;
      }
      // Strided: bring back the span the view touches, then gather in C order on the host.
      const { low, high } = reachOf(this.shape, this.strides, this.offset)!;
      const span = new arrayType(high - low + 1);
      await downloadBuffer(ctx, this.buffer, low * elementBytes, span.byteLength, span);
      gatherCOrder(span, this.shape, this.strides, this.offset - low, out);
      return out;
    });
  }

  /**
   * Copies host data into this array, in C order (Numba's `copy_to_device`, CuPy's `set`), without
   * allocating: for refreshing inputs that stay on the device.
   *
   * @param source a typed array of the dtype's storage type with `size` elements
   * @returns when the copy is queued (later gpu calls see the new data)
   * @throws ArgumentError when the source does not fit, or this array is a strided view, or (8- and
   *   16-bit types) a view that does not start and end on a 4-byte boundary of its buffer
   * @example
   * const xs = await deviceArray([n], 'float32');
   * await xs.set(nextFrame);
   */
  async set(source: TypedArray): Promise<void> {
    this.assertUsable();
    const { bytes: elementBytes, arrayType } = DTYPES[this.dtype];
    if (!(source instanceof arrayType) || source.length !== this.size) {
      throw new ArgumentError(`DeviceArray.set: expected a ${arrayType.name} of ${this.size} elements, got ${describe(source)} of ${source.length}`);
    }
    if (!this.isCContiguous) throw new ArgumentError('DeviceArray.set: this array is a strided view; set() writes C-contiguous arrays only (write the base array)');
    const byteOffset = this.offset * elementBytes;
    const byteLength = this.size * elementBytes;
    const endsOnWord = byteLength % 4 === 0 || byteOffset + byteLength >= this.byteLength;
    if (byteOffset % 4 !== 0 || !endsOnWord) {
      throw new ArgumentError(`DeviceArray.set: a ${this.dtype} view must start and end on a 4-byte boundary of its buffer (it spans bytes ${byteOffset}..${byteOffset + byteLength})`);
    }
    if (this.size === 0) return;
    await withDevice((ctx) => {
      assertDeviceAlive(this.generation, 'this DeviceArray');
      return runScoped(ctx, () => writeToBuffer(ctx, this.buffer, byteOffset, source));
    });
    knownZero.delete(this.buffer);
  }

  /**
   * Frees the GPU memory now and lets the device be released when idle. Idempotent. Using the
   * array afterwards is a DeviceError.
   *
   * @example
   * const d = await toDevice(xs); try { … } finally { d.destroy(); }
   */
  destroy(): void {
    if (this.destroyed) return;
    this.destroyed = true;
    holdsOfCollectedArrays.unregister(this);
    this.buffer.destroy();
    this.hold.release();
  }

  /** e.g. `DeviceArray(float32, [2, 3], generation 1)` */
  toString(): string {
    return `DeviceArray(${this.dtype}, [${this.shape.join(', ')}], generation ${this.generation}${this.destroyed ? ', destroyed' : ''})`;
  }
}

/**
 * Copies a host array to the GPU.
 *
 * A strided view keeps its strides when the elements it touches fill at least half of the span
 * between its first and last element (only that span is uploaded); a sparser view is gathered
 * into C order first, so a every-tenth-element view does not upload ten times its data.
 *
 * @param x a typed array (1-D), or `{ data, shape, strides?, offset?, dtype? }`
 * @returns the device array
 * @throws TargetUnavailableError for int64, uint64 and float64 (WGSL has no 64-bit types), or when
 *   there is no GPU
 * @throws ArgumentError when the layout does not fit the data or the dtype does not match it
 * @example
 * const xs = await toDevice(new Float32Array([1, 2, 3]));
 * const m = await toDevice({ data: new Int32Array(6), shape: [2, 3] });
 * const flags = await toDevice({ data: new Uint8Array([1, 0]), shape: [2], dtype: 'bool' });
 */
export async function toDevice(x: TypedArray | HostArrayView): Promise<DeviceArray> {
  const view: HostArrayView = isTypedArray(x) ? { data: x, shape: [x.length] } : x;
  const dtype = hostDType(view);
  checkGpuDType(dtype);
  const shape = checkShape(view.shape);
  const strides = view.strides ? [...view.strides] : cOrderStrides(shape);
  const offset = view.offset ?? 0;
  checkLayout(view.data, shape, strides, offset)!;
  const size = sizeOf(shape);

  let data: TypedArray;
  let deviceStrides: number[];
  let deviceOffset: number;
  if (size === 0) {
    [data, deviceStrides, deviceOffset] = [view.data.subarray(0, 0), cOrderStrides(shape), 0];
  } else if (isCContiguous(shape, strides)) {
    [data, deviceStrides, deviceOffset] = [view.data.subarray(offset, offset + size), strides, 0];
  } else {
    const { low, high } = reachOf(shape, strides, offset)!;
    if (high - low + 1 <= 2 * size) {
      [data, deviceStrides, deviceOffset] = [view.data.subarray(low, high + 1), strides, offset - low];
    } else {
      const packed = new DTYPES[dtype].arrayType(size);
      gatherCOrder(view.data, shape, strides, offset, packed);
      [data, deviceStrides, deviceOffset] = [packed, cOrderStrides(shape), 0];
    }
  }
  return withDevice(async (ctx) => {
    const buffer = await uploadToNewBuffer(ctx, data, DEVICE_ARRAY_USAGE());
    return new DeviceArray(ctx, buffer, dtype, shape, deviceStrides, deviceOffset, data.byteLength);
  });
}

/**
 * Allocates a zero-filled, C-ordered array on the GPU (Numba's `cuda.device_array`, zeroed).
 *
 * @param shape the extent of each dimension, or the length of a 1-D array
 * @param dtype the element type
 * @returns the device array
 * @throws TargetUnavailableError for int64, uint64 and float64, or when there is no GPU
 * @example
 * const out = await deviceArray([1024, 16], 'float32');
 */
export async function deviceArray(shape: readonly number[] | number, dtype: DType): Promise<DeviceArray> {
  checkGpuDType(dtype);
  const dims = checkShape(typeof shape === 'number' ? [shape] : shape);
  const byteLength = sizeOf(dims) * DTYPES[dtype].bytes;
  return withDevice(async (ctx) => {
    const buffer = await runScoped(ctx, () => allocateBuffer(ctx, byteLength, DEVICE_ARRAY_USAGE()));
    knownZero.add(buffer); // WebGPU zero-fills new buffers
    return new DeviceArray(ctx, buffer, dtype, dims, undefined, 0, byteLength);
  });
}

/**
 * Refuses the dtypes WGSL cannot hold.
 *
 * @throws TargetUnavailableError naming the dtype and what to use instead
 * @example
 * checkGpuDType('float64'); // throws: float64 is not available on the gpu target …
 */
export function checkGpuDType(dtype: DType): void {
  const instead: Partial<Record<DType, string>> = {
    float64: 'float64 is not available on the gpu target (WGSL has no 64-bit floats): use float32',
    int64: 'int64 is not available on the gpu target (WGSL has no 64-bit integers): use int32',
    uint64: 'uint64 is not available on the gpu target (WGSL has no 64-bit integers): use uint32',
  };
  const refusal = instead[dtype];
  if (refusal) throw new TargetUnavailableError(`${refusal}, or target 'cpu' or 'parallel'`);
}

function hostDType(view: HostArrayView): DType {
  const stored = dtypeOfArray(view.data);
  if (!stored) throw new ArgumentError(`toDevice: expected a typed array as data, got ${describe(view.data)}`);
  if (view.dtype === undefined) return stored;
  // The declared dtype must be stored by the same kind of typed array (bool and uint8 share Uint8Array).
  const expected = DTYPES[view.dtype].arrayType;
  const actual = view.data instanceof Uint8ClampedArray ? Uint8Array : view.data.constructor;
  if (expected !== actual) {
    throw new ArgumentError(`toDevice: dtype \`${view.dtype}\` is stored in a ${expected.name}, but data is a ${view.data.constructor.name}`);
  }
  return view.dtype;
}

function checkShape(shape: readonly number[]): number[] {
  if (!shape.every((d) => Number.isSafeInteger(d) && d >= 0)) {
    throw new ArgumentError(`expected a shape of integers >= 0, got [${shape.join(', ')}]`);
  }
  return [...shape];
}

function checkLayout(data: TypedArray, shape: readonly number[], strides: readonly number[], offset: number): void {
  if (strides.length !== shape.length || !strides.every(Number.isSafeInteger)) {
    throw new ArgumentError(`toDevice: expected ${shape.length} integer strides for shape [${shape.join(', ')}], got [${strides.join(', ')}]`);
  }
  if (!Number.isSafeInteger(offset) || offset < 0) throw new ArgumentError(`toDevice: expected an offset that is an integer >= 0, got ${offset}`);
  if (shape.some((d) => d === 0)) return;
  const { low, high } = reachOf(shape, strides, offset)!;
  if (low < 0 || high >= data.length) {
    throw new ArgumentError(
      `toDevice: shape [${shape.join(', ')}] with strides [${strides.join(', ')}] and offset ${offset} reaches elements ${low}..${high}, ` +
        `but data has ${data.length}`,
    );
  }
}

/** Copies the view's elements into `out` in C order. */
function gatherCOrder(source: TypedArray, shape: readonly number[], strides: readonly number[], offset: number, out: TypedArray): void {
  const ndim = shape.length;
  if (ndim === 0) {
    (out as Uint8Array)[0] = (source as Uint8Array)[offset]!;
    return;
  }
  const src = source as Uint8Array; // same element type on both sides; the cast only silences bigint unions
  const dst = out as Uint8Array;
  const index = new Array<number>(ndim).fill(0);
  const innerExtent = shape[ndim - 1]!;
  const innerStride = strides[ndim - 1]!;
  let at = offset;
  for (let written = 0; written < dst.length; ) {
    for (let i = 0, p = at; i < innerExtent; i++, p += innerStride) dst[written++] = src[p]!;
    // Advance the outer index like an odometer.
    for (let axis = ndim - 2; axis >= 0; axis--) {
      at += strides[axis]!;
      if (++index[axis]! < shape[axis]!) break;
      at -= shape[axis]! * strides[axis]!;
      index[axis] = 0;
    }
  }
}

function describe(value: unknown): string {
  if (value === null) return 'null';
  if (typeof value === 'object') return (value as object).constructor?.name ?? 'object';
  return typeof value;
}
