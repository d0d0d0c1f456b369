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
import { DTYPES, dtypeOfArray, isTypedArray, type DType, type TypedArray, type TypedArrayOf } from '../../../dtypes.js';
import { ArgumentError, DeviceError, TargetUnavailableError } from '../../../errors.js';
import { cOrderStrides, isCContiguous, reachOf, sizeOf, type StridedView } from '../../../layout.js';
import { releaseBuffer, takeBuffer } from './buffer-pool.js';
import { downloadBuffer, downloadBufferTo, type ReadbackSink, startLeanReadback, writeToBuffer } from './buffers.js';
import { type CallRef, checkCalls, flushChain, taintsOf } from './chain.js';
import { assertDeviceAlive, holdDevice, isDeviceAlive, liveDevice, onDevice, runScoped, withDevice, type DeviceHold, type GpuContext } from './device.js';
import { deviceCount } from './gpu-options.js';
import { usableSlots } from './multi-device.js';
import { ShardedArray, splitRows } from './sharded-array.js';
import { gatherRange, scatterRange, stridedCopy } from './strided-copy.js';
import type { GPUBuffer } from './webgpu-types.js';

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

declare global {
  // Declared here as TypeScript's `esnext.disposable` lib and @types/node declare it (the
  // declarations merge), so that `DeviceArray[Symbol.dispose]` type-checks in projects whose lib
  // is ES2022 without that lib. At run time the method exists where `Symbol.dispose` does (Node
  // 20+, current browsers).
  interface SymbolConstructor {
    /** The method `using` declarations call when their scope ends (explicit resource management). */
    readonly dispose: unique symbol;
  }
}

// An array dropped without destroy() still gives its hold back when collected, so the device
// can be released; the buffer itself is freed by dawn.node's own finalizer.
const collectedArrays = new FinalizationRegistry<{ hold: DeviceHold; storage: SharedStorage }>(({ hold, storage }) => {
  hold.release();
  if (--storage.arrays === 0) releaseStorage(storage);
});

/** `DeviceArray.set()` calls that have not yet handed their data to the queue (see `leanDownload`). */
let setsInFlight = 0;

/**
 * Buffers known to hold only zeros: fresh from {@link deviceArray} and not yet written by a
 * kernel. A kernel that stages output rows through workgroup memory (coalescing.ts) can then start
 * from zeros instead of reading the output first.
 */
const knownZero = new WeakSet<GPUBuffer>();

/**
 * Buffers reused from the pool whose contents are whatever their last user left: outputs of calls
 * until a kernel writes them (a guvectorize call zeroes them first, see dispatch.ts).
 */
const unspecified = new WeakSet<GPUBuffer>();

/**
 * Whether a buffer is known to hold only zeros (allocated zeroed, never written by a kernel).
 *
 * @example
 * bufferIsKnownZero((await deviceArray([4], 'float32')).buffer); // true
 */
export function bufferIsKnownZero(buffer: GPUBuffer): boolean {
  return knownZero.has(buffer);
}

/** Whether a buffer's contents are left over from an earlier user (a reused output not yet written). */
export function contentsUnspecified(buffer: GPUBuffer): boolean {
  return unspecified.has(buffer);
}

/**
 * Records that a kernel writes `buffer`: it no longer holds zeros, nor left-over data.
 *
 * @param buffer the output buffer
 */
export function noteKernelWrite(buffer: GPUBuffer): void {
  forgetContents(buffer);
}

/** Forgets what was known of a buffer's contents (written, or handed to another user). */
function forgetContents(buffer: GPUBuffer): void {
  knownZero.delete(buffer);
  unspecified.delete(buffer);
}

/**
 * The storage a DeviceArray and its views share: the buffer goes back to the pool when the last of
 * them is collected, or at once on `destroy()` of any of them.
 */
export interface SharedStorage {
  readonly ctx: GpuContext;
  readonly buffer: GPUBuffer;
  /** From the pool (given back to it), or created for this array alone. */
  readonly pooled: boolean;
  released: boolean;
  arrays: number;
}

function releaseStorage(storage: SharedStorage): void {
  if (storage.released) return;
  storage.released = true;
  // What was known of its contents belonged to this array: the pool's next user (toDevice, which
  // writes data into it) must not inherit "holds zeros" from an output no kernel ever wrote (a
  // zero-row call's), nor "left over" (issue 26).
  forgetContents(storage.buffer);
  if (!isDeviceAlive(storage.ctx)) return; // its buffers went with the device
  if (storage.pooled) {
    releaseBuffer(storage.ctx, storage.buffer);
  } else {
    flushChain(storage.ctx.device); // recorded work that uses it must be submitted before destroy()
    storage.buffer.destroy();
  }
}

/**
 * Data resident on the GPU, of dtype `D`. Create with {@link toDevice} or {@link deviceArray}.
 * `toHost()` gives the typed array of the dtype (`Float32Array` for a `DeviceArray<'float32'>`).
 */
export class DeviceArray<D extends DType = DType> implements StridedView {
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
  private readonly storage: SharedStorage;
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
    readonly dtype: D,
    shape: readonly number[],
    strides?: readonly number[],
    readonly offset: number = 0,
    byteLength?: number,
    /** Internal: the storage shared with the array this is a view of, or `'pooled'` for a buffer from the pool. */
    storage?: SharedStorage | 'pooled',
  ) {
    checkGpuDType(dtype);
    this.shape = Object.freeze([...shape]);
    this.strides = Object.freeze(strides ? [...strides] : cOrderStrides(shape));
    this.size = sizeOf(shape);
    this.byteLength = byteLength ?? this.size * DTYPES[dtype].bytes;
    this.generation = ctx.generation;
    this.ctx = ctx;
    this.hold = holdDevice(ctx);
    this.storage = typeof storage === 'object' ? storage : { ctx, buffer, pooled: storage === 'pooled', released: false, arrays: 0 };
    this.storage.arrays++;
    collectedArrays.register(this, { hold: this.hold, storage: this.storage }, this);
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
  view(shape: readonly number[], strides?: readonly number[], offset = 0): DeviceArray<D> {
    this.assertUsable();
    const dims = checkShape(shape);
    const steps = strides ? [...strides] : cOrderStrides(dims);
    // The data, not the buffer: a pooled buffer may be larger than what it holds (size classes).
    const capacity = Math.floor(Math.max(4, Math.ceil(this.byteLength / 4) * 4) / DTYPES[this.dtype].bytes);
    if (steps.length !== dims.length || !steps.every(Number.isSafeInteger) || !Number.isSafeInteger(offset) || offset < 0) {
      throw new ArgumentError(`DeviceArray.view: expected ${dims.length} integer strides and an offset >= 0, got [${steps.join(', ')}] and ${offset}`);
    }
    if (!dims.some((d) => d === 0)) {
      const { low, high } = reachOf(dims, steps, offset)!;
      if (low < 0 || high >= capacity) {
        throw new ArgumentError(`DeviceArray.view: shape [${dims.join(', ')}] with strides [${steps.join(', ')}] and offset ${offset} reaches elements ${low}..${high}, but the array holds ${capacity}`);
      }
    }
    return new DeviceArray(this.ctx, this.buffer, this.dtype, dims, steps, offset, this.byteLength, this.storage);
  }

  /** Which device holds the data: 0, or 1… when several are used (`setGpuOptions({ devices })`). */
  get deviceIndex(): number {
    return this.ctx.slot;
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
    if (this.storage.released) throw new DeviceError('this DeviceArray was destroyed; it has no data any more');
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
  async toHost<T extends TypedArrayOf[D] = TypedArrayOf[D]>(into?: T): Promise<T> {
    this.assertUsable();
    const { bytes: elementBytes, arrayType } = DTYPES[this.dtype];
    if (into && (!(into instanceof arrayType) || into.length < this.size)) {
      throw new ArgumentError(`toHost: expected a ${arrayType.name} of at least ${this.size} elements to copy into, got ${describe(into)} of ${into.length}`);
    }
    const out = (into ?? new arrayType(this.size)) as T;
    // A gpu call that wrote this data (or what it was computed from) may have failed; report it here.
    const calls = taintsOf(this.buffer);
    const lean = this.size > 0 ? this.leanDownload(out, calls) : undefined;
    if (lean && (await lean)) return out;
    if (calls.length === 0 || this.size === 0) {
      await checkCalls(calls);
      if (this.size === 0) return out;
      return this.download(out);
    }
    // Calls still in flight: queue the copy behind them now rather than after they have finished
    // (which cost a host round trip: on an H100, 7.5 µs per call of a 20-call Hermite chain read
    // back at its end). Their errors still come first, and `out` is written only once they passed.
    const checked = checkCalls(calls);
    const [check, copy] = await Promise.allSettled([checked, this.download(out, checked)]);
    if (check.status === 'rejected') throw check.reason;
    if (copy.status === 'rejected') throw copy.reason;
    return copy.value;
  }

  /**
   * A small read-back's lean path ({@link startLeanReadback}): its copy is recorded now, behind the
   * calls in flight that wrote the data and in their submission, and the calls are checked while it
   * runs; their error is thrown first and `out` is written only when they passed.
   *
   * @returns undefined (at once) when the lean path does not apply; else whether `out` holds the
   *   data: false when the copy did not run (nothing was written; the usual path then reads the data
   *   or says what failed)
   */
  private leanDownload(out: TypedArray, calls: readonly CallRef[]): Promise<boolean> | undefined {
    // A set() not yet awaited reaches the queue only after a turn or two: the usual path, which
    // queues its copy behind it (as before the lean path), keeps such a read-back after the write.
    if (setsInFlight > 0) return undefined;
    const elementBytes = DTYPES[this.dtype].bytes;
    if (this.isCContiguous) {
      const byteLength = this.size * elementBytes;
      const lean = startLeanReadback(this.ctx, this.buffer, this.offset * elementBytes, byteLength);
      return lean?.finish(new Uint8Array(out.buffer, out.byteOffset, byteLength), calls.length > 0 ? checkCalls(calls) : undefined);
    }
    const { low, high } = reachOf(this.shape, this.strides, this.offset)!;
    const lean = startLeanReadback(this.ctx, this.buffer, low * elementBytes, (high - low + 1) * elementBytes);
    return lean?.finish(this.spanSink(out, low), calls.length > 0 ? checkCalls(calls) : undefined);
  }

  /**
   * Where the span a strided view touches (from element `low` of the buffer) goes when read back:
   * the view's elements copied into `out` in C order straight out of the mapped staging memory, a
   * piece at a time (no array of the span in between).
   */
  private spanSink(out: TypedArray, low: number): ReadbackSink {
    const cStrides = cOrderStrides(this.shape);
    const view = stridedCopy(this.shape.map((extent, d) => ({ extent, host: cStrides[d]!, device: this.strides[d]! })), 0, this.offset - low);
    const size = out.BYTES_PER_ELEMENT;
    const elementType = out.constructor as new (buffer: ArrayBufferLike, byteOffset: number, length: number) => TypedArray;
    return (bytes, at) => scatterRange(view, out, new elementType(bytes.buffer, bytes.byteOffset, bytes.byteLength / size), at / size);
  }

  /** Copies the elements into `out` (C order), writing nothing there before `ready` resolves. */
  private download<T extends TypedArray>(out: T, ready?: Promise<void>): Promise<T> {
    const elementBytes = DTYPES[this.dtype].bytes;
    return onDevice(this.ctx.slot, () => withDevice(async (ctx) => {
      assertDeviceAlive(this.generation, 'this DeviceArray');
      if (this.isCContiguous) {
        await downloadBuffer(ctx, this.buffer, this.offset * elementBytes, this.size * elementBytes, out, ready);
        return out;
      }
      // Strided: the span the view touches comes back, its elements gathered in C order on the way.
      const { low, high } = reachOf(this.shape, this.strides, this.offset)!;
      await downloadBufferTo(ctx, this.buffer, low * elementBytes, (high - low + 1) * elementBytes, this.spanSink(out, low), ready);
      return out;
    }));
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
    setsInFlight++;
    try {
      await onDevice(this.ctx.slot, () => withDevice((ctx) => {
        assertDeviceAlive(this.generation, 'this DeviceArray');
        return runScoped(ctx, () => writeToBuffer(ctx, this.buffer, byteOffset, source));
      }));
    } finally {
      setsInFlight--;
    }
    forgetContents(this.buffer);
  }

  /**
   * Frees the GPU memory now and lets the device be released when idle. Idempotent. Using the
   * array afterwards is a DeviceError.
   *
   * @example
   * const d = await toDevice(xs); try { … } finally { d.destroy(); }
   */
  destroy(): void {
    if (this.storage.released) return;
    collectedArrays.unregister(this);
    this.storage.arrays--;
    releaseStorage(this.storage);
    this.hold.release();
  }

  /** The memory it views: its buffer, shared by every view of one array (plan.ts `DeviceArrayLike`). */
  get memory(): GPUBuffer {
    return this.buffer;
  }

  /** Whether `destroy()` was called on this array or a view of its memory (chain-fusion.ts leaves such outputs unwritten). */
  get destroyed(): boolean {
    return this.storage.released;
  }

  /** e.g. `DeviceArray(float32, [2, 3], generation 1)` */
  toString(): string {
    return `DeviceArray(${this.dtype}, [${this.shape.join(', ')}], generation ${this.generation}${this.storage.released ? ', destroyed' : ''})`;
  }
}

// Merged into the class: `using z = await f(x)` destroys `z` when its scope ends.
export interface DeviceArray<D extends DType = DType> {
  /**
   * Same as {@link DeviceArray.destroy}: lets `using` free the array when its scope ends.
   *
   * @example
   * { using z = await saxpy(2, dx, dy); await z.toHost(host); } // z's memory is back in the pool here
   */
  [Symbol.dispose](): void;
}
// Defined only where the runtime has the symbol (a computed key of undefined would add a method
// named "undefined").
if (typeof Symbol.dispose === 'symbol') {
  Object.defineProperty(DeviceArray.prototype, Symbol.dispose, {
    value: function dispose(this: DeviceArray): void {
      this.destroy();
    },
    writable: true,
    configurable: true,
  });
}

/**
 * The dtype of a host array as the types see it: a view's `dtype` where it names one, else its
 * typed array's (a `Uint8Array` is uint8; one holding booleans says `dtype: 'bool'`).
 */
export type HostDType<X> = X extends { readonly dtype: infer D extends DType }
  ? D
  : X extends { readonly data: infer T } ? HostDType<T>
  : X extends Float32Array ? 'float32' : X extends Float64Array ? 'float64'
  : X extends Int8Array ? 'int8' : X extends Int16Array ? 'int16' : X extends Int32Array ? 'int32' : X extends BigInt64Array ? 'int64'
  : X extends Uint8ClampedArray ? 'uint8c' : X extends Uint8Array ? 'uint8' : X extends Uint16Array ? 'uint16' : X extends Uint32Array ? 'uint32' : X extends BigUint64Array ? 'uint64'
  : DType;

/**
 * Copies a host array to the GPU.
 *
 * A strided view keeps its strides when the elements it touches fill at least half of the span
 * between its first and last element (only that span is uploaded); a sparser view is gathered
 * into C order first, so a every-tenth-element view does not upload ten times its data.
 *
 * With several devices (`setGpuOptions({ devices })`), `{ shard: true }` cuts the array along its
 * first dimension into one block of rows per device (a {@link ShardedArray}), and `{ device: k }`
 * puts it on device k.
 *
 * @param x a typed array (1-D), or `{ data, shape, strides?, offset?, dtype? }`
 * @param options `shard: true` to place it across the devices; `device` to choose one
 * @returns the device array, or the sharded array
 * @throws TargetUnavailableError for int64, uint64 and float64 (WGSL has no 64-bit types), or when
 *   there is no GPU
 * @throws ArgumentError when the layout does not fit the data or the dtype does not match it, for
 *   a 0-d array to shard, or a device index outside the devices configured
 * @example
 * const xs = await toDevice(new Float32Array([1, 2, 3]));
 * const m = await toDevice({ data: new Int32Array(6), shape: [2, 3] });
 * const flags = await toDevice({ data: new Uint8Array([1, 0]), shape: [2], dtype: 'bool' });
 * setGpuOptions({ devices: 'all' });
 * const rows = await toDevice(xs, { shard: true }); // ShardedArray: a block of rows per GPU
 */
export function toDevice<X extends TypedArray | HostArrayView>(x: X, options?: { shard?: false; device?: number }): Promise<DeviceArray<HostDType<X>>>;
export function toDevice(x: TypedArray | HostArrayView, options: { shard: true }): Promise<ShardedArray>;
export function toDevice(x: TypedArray | HostArrayView, options?: ToDeviceOptions): Promise<DeviceArray | ShardedArray>;
export function toDevice(x: TypedArray | HostArrayView, options: ToDeviceOptions = {}): Promise<DeviceArray | ShardedArray> {
  const view: HostArrayView = isTypedArray(x) ? { data: x, shape: [x.length] } : x;
  try {
    if (options.shard === true) return toDevices(view);
    const { device } = options;
    if (device === undefined) return toOneDevice(view);
    const count = deviceCount();
    if (!(Number.isSafeInteger(device) && device >= 0 && device < count)) {
      throw new ArgumentError(`toDevice: device must be an integer from 0 to ${count - 1} (setGpuOptions({ devices }) is ${count}), found ${String(device)}`);
    }
    return onDevice(device, () => toOneDevice(view));
  } catch (e) {
    return Promise.reject(e);
  }
}

/** What {@link toDevice} accepts as its second argument. */
export interface ToDeviceOptions {
  /** Cut the array along its first dimension across the devices (`setGpuOptions({ devices })`). */
  readonly shard?: boolean;
  /** Put it on this device (0 … devices − 1). @default the current device (0 outside calls) */
  readonly device?: number;
}

/** The array cut along its first dimension, one block of rows per usable device, uploaded at once. */
async function toDevices(view: HostArrayView): Promise<ShardedArray> {
  if (view.shape.length === 0) throw new ArgumentError('toDevice: a 0-d array cannot be sharded (shards are blocks of its first dimension)');
  const shape = checkShape(view.shape);
  const strides = view.strides ? [...view.strides] : cOrderStrides(shape);
  const slots = usableSlots();
  let start = 0;
  const parts = splitRows(shape[0]!, slots.length).map((rows, k) => {
    const part: HostArrayView = { ...view, shape: [rows, ...shape.slice(1)], strides, offset: (view.offset ?? 0) + (rows === 0 ? 0 : start * strides[0]!) };
    start += rows;
    return onDevice(slots[k]!, () => toOneDevice(part));
  });
  const settled = await Promise.allSettled(parts);
  const failed = settled.find((r): r is PromiseRejectedResult => r.status === 'rejected');
  if (failed) {
    for (const r of settled) if (r.status === 'fulfilled') r.value.destroy();
    throw failed.reason;
  }
  return new ShardedArray(settled.map((r) => (r as PromiseFulfilledResult<DeviceArray>).value));
}

async function toOneDevice(view: HostArrayView): Promise<DeviceArray> {
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
      const cStrides = cOrderStrides(shape);
      gatherRange(stridedCopy(shape.map((extent, d) => ({ extent, host: strides[d]!, device: cStrides[d]! })), offset, 0), view.data, packed, 0);
      [data, deviceStrides, deviceOffset] = [packed, cOrderStrides(shape), 0];
    }
  }
  return withDevice((ctx) =>
    runScoped(ctx, async () => {
      const { buffer } = takeBuffer(ctx, data.byteLength);
      try {
        await writeToBuffer(ctx, buffer, 0, data);
      } catch (e) {
        releaseBuffer(ctx, buffer);
        throw e;
      }
      return new DeviceArray(ctx, buffer, dtype, shape, deviceStrides, deviceOffset, data.byteLength, 'pooled');
    }),
  );
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
export async function deviceArray<D extends DType>(shape: readonly number[] | number, dtype: D): Promise<DeviceArray<D>>;
export async function deviceArray(shape: readonly number[] | number, dtype: DType): Promise<DeviceArray> {
  checkGpuDType(dtype);
  const dims = checkShape(typeof shape === 'number' ? [shape] : shape);
  const byteLength = sizeOf(dims) * DTYPES[dtype].bytes;
  return withDevice((ctx) =>
    runScoped(ctx, () => {
      const { buffer, fresh } = takeBuffer(ctx, byteLength);
      if (!fresh) {
        // A reused buffer holds its last user's data: zero it, in queue order after that use.
        flushChain(ctx.device);
        const encoder = ctx.device.createCommandEncoder();
        encoder.clearBuffer(buffer);
        ctx.device.queue.submit([encoder.finish()]);
      }
      knownZero.add(buffer);
      return new DeviceArray(ctx, buffer, dtype, dims, undefined, 0, byteLength, 'pooled');
    }),
  );
}

/**
 * An output array for a gpu call, from the buffer pool: zeroed when the buffer is new, left-over
 * contents otherwise (the call overwrites or zeroes it, see dispatch.ts). Made at once when the
 * device is live, so the call is recorded in the same turn of the event loop.
 *
 * @param shape the extents
 * @param dtype the element type
 * @returns the array, or undefined when the device must be created first
 */
export function outputArrayNow(shape: readonly number[], dtype: DType): DeviceArray | undefined {
  const ctx = liveDevice();
  return ctx ? outputArrayOn(ctx, shape, dtype) : undefined;
}

/** {@link outputArrayNow}, waiting for the device when need be. */
export async function outputArray(shape: readonly number[], dtype: DType): Promise<DeviceArray> {
  return outputArrayNow(shape, dtype) ?? withDevice((ctx) => outputArrayOn(ctx, shape, dtype));
}

function outputArrayOn(ctx: GpuContext, shape: readonly number[], dtype: DType): DeviceArray {
  checkGpuDType(dtype);
  const dims = checkShape(shape);
  const byteLength = sizeOf(dims) * DTYPES[dtype].bytes;
  const { buffer, fresh } = takeBuffer(ctx, byteLength);
  if (fresh) knownZero.add(buffer);
  else unspecified.add(buffer);
  return new DeviceArray(ctx, buffer, dtype, dims, undefined, 0, byteLength, 'pooled');
}

/** Why each dtype WGSL cannot hold is refused. */
const NOT_ON_GPU: Partial<Record<DType, string>> = {
  float64: 'float64 is not available on the gpu target (WGSL has no 64-bit floats): use float32',
  int64: 'int64 is not available on the gpu target (WGSL has no 64-bit integers): use int32',
  uint64: 'uint64 is not available on the gpu target (WGSL has no 64-bit integers): use uint32',
};

/**
 * Refuses the dtypes WGSL cannot hold.
 *
 * @throws TargetUnavailableError naming the dtype and what to use instead
 * @example
 * checkGpuDType('float64'); // throws: float64 is not available on the gpu target …
 */
export function checkGpuDType(dtype: DType): void {
  const refusal = NOT_ON_GPU[dtype];
  if (refusal) throw new TargetUnavailableError(`${refusal}, or target 'cpu' or 'parallel'`);
}

function hostDType(view: HostArrayView): DType {
  const stored = dtypeOfArray(view.data);
  if (!stored) throw new ArgumentError(`toDevice: expected a typed array as data, got ${describe(view.data)}`);
  if (view.dtype === undefined) return stored;
  // The declared dtype must be stored by the same kind of typed array (bool, uint8 and uint8c are
  // all bytes: Uint8Array and Uint8ClampedArray hold them alike).
  const bytes = (c: unknown) => (c === Uint8ClampedArray ? Uint8Array : c);
  const expected = DTYPES[view.dtype].arrayType;
  if (bytes(expected) !== bytes(view.data.constructor)) {
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

function describe(value: unknown): string {
  if (value === null) return 'null';
  if (typeof value === 'object') return (value as object).constructor?.name ?? 'object';
  return typeof value;
}
