/**
 * Host ↔ device transfers for the gpu target.
 *
 * Data is stored packed and byte-identical to the host typed array (an int8 array of 5 elements
 * occupies 5 bytes; the WGSL side widens). WebGPU wants buffer sizes, copy offsets and copy sizes
 * in multiples of 4 bytes, so buffers are rounded up to a multiple of 4 (and to at least 4 bytes,
 * so an empty array can still be bound) and copies of odd ranges are widened and trimmed here.
 *
 * Measured on lavapipe (Mesa 25.0.7, 2 cores), 64 MiB, median of 11 interleaved runs:
 * upload with chunked `queue.writeBuffer` 16 MiB ≈ 780 MiB/s, whole `writeBuffer` ≈ 820 MiB/s
 * (same within noise), `mappedAtCreation` + copy ≈ 220 MiB/s; download through MAP_READ staging
 * buffers in 16 MiB chunks, two in flight ≈ 370 MiB/s, one 64 MiB chunk ≈ 235 MiB/s.
 * On an H200 (256 MiB): `writeBuffer` 2.2 GB/s, a pool of mapped MAP_WRITE staging buffers
 * 8.3–10 GB/s (so large uploads use one, see writeToBuffer); downloads 7–9 GB/s, bounded by the
 * copy out of mapped memory on the main thread (9.4 GB/s there; the GPU copy and the mapping alone
 * run at 50 GB/s), a new staging buffer per download 2.8 GB/s (allocation dominates).
 */
import { ArgumentError, DeviceError, TargetUnavailableError, UfuncError } from '../../errors.js';
import { flushChain } from './chain.js';
import { asDeviceError } from './device-errors.js';
import { runScoped, type GpuContext } from './device.js';

/**
 * Bytes per `writeBuffer` call and per download chunk. Chunking keeps Dawn's own staging copy of
 * an upload bounded, and lets the mapping of one download chunk overlap the copy of the next.
 */
const TRANSFER_CHUNK_BYTES = 16 * 2 ** 20;
/** Download chunks copied ahead of the one being read back. */
const DOWNLOADS_IN_FLIGHT = 2;
/** Staging buffers come in power-of-two sizes from here up to `TRANSFER_CHUNK_BYTES`. */
const STAGING_MIN_BYTES = 4096;
/** Host-visible memory a device's staging pool may keep between downloads. */
const STAGING_POOL_MAX_BYTES = 64 * 2 ** 20;

/**
 * The size of the buffer that stores `byteLength` bytes: a multiple of 4, at least 4.
 *
 * @example
 * paddedByteLength(5); // 8
 * paddedByteLength(0); // 4
 */
export function paddedByteLength(byteLength: number): number {
  return Math.max(4, Math.ceil(byteLength / 4) * 4);
}

/**
 * Creates a zero-filled buffer for `byteLength` bytes (WebGPU zero-initialises new buffers).
 * Call it inside {@link runScoped} to catch an out-of-memory error.
 *
 * @param ctx the device
 * @param byteLength bytes of data; the buffer is {@link paddedByteLength} bytes
 * @param usage GPUBufferUsage flags
 * @returns the new buffer
 * @throws TargetUnavailableError when the size exceeds the device's `maxBufferSize`
 * @example
 * const out = allocateBuffer(ctx, n * 4, GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC);
 */
export function allocateBuffer(ctx: GpuContext, byteLength: number, usage: GPUBufferUsageFlags): GPUBuffer {
  const size = paddedByteLength(byteLength);
  checkBufferSize(ctx, size);
  return ctx.device.createBuffer({ size, usage });
}

/**
 * `queue.writeBuffer` from a byte range. dawn.node crashes the process (a segfault) when handed a
 * view of a SharedArrayBuffer — the memory the parallel target and `sharedArray` use — so such
 * bytes are first copied, a chunk at a time, into ordinary memory.
 */
function writeBytes(queue: GPUQueue, buffer: GPUBuffer, at: number, bytes: Uint8Array, from: number, size: number): void {
  // `typeof` first: a page that is not cross-origin isolated has no SharedArrayBuffer at all.
  if (typeof SharedArrayBuffer === 'undefined' || !(bytes.buffer instanceof SharedArrayBuffer)) {
    queue.writeBuffer(buffer, at, bytes, from, size);
    return;
  }
  for (let done = 0; done < size; done += TRANSFER_CHUNK_BYTES) {
    const n = Math.min(TRANSFER_CHUNK_BYTES, size - done);
    queue.writeBuffer(buffer, at + done, bytes.slice(from + done, from + done + n));
  }
}

/**
 * Copies `data` into a new buffer of {@link paddedByteLength} bytes; the bytes after the data are
 * zero. Uses `queue.writeBuffer` in 16 MiB chunks: on lavapipe that measured 3.5× faster than
 * `mappedAtCreation` for 64 MiB. `COPY_DST` is added to `usage`. The copy of `data` is taken
 * before this returns, so the caller may reuse `data` at once.
 *
 * Call it inside {@link runScoped}: an out-of-memory error does not throw here.
 *
 * @param ctx the device
 * @param data the bytes to upload (any typed array or DataView; its view, not its whole buffer)
 * @param usage GPUBufferUsage flags, e.g. `GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC`
 * @returns the new buffer
 * @throws TargetUnavailableError when the data exceeds the device's `maxBufferSize`
 * @example
 * const xs = uploadToBuffer(ctx, new Float32Array([1, 2, 3]), GPUBufferUsage.STORAGE);
 */
export function uploadToBuffer(ctx: GpuContext, data: ArrayBufferView, usage: GPUBufferUsageFlags): GPUBuffer {
  flushChain(ctx.device);
  const buffer = allocateBuffer(ctx, data.byteLength, usage | GPUBufferUsage.COPY_DST);
  // Bytes, so that writeBuffer's offsets and sizes count bytes (for a typed array they count elements).
  const bytes = new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
  const { queue } = ctx.device;
  const whole = bytes.byteLength - (bytes.byteLength % 4); // not `& ~3`: byte counts pass 2^31
  for (let at = 0; at < whole; at += TRANSFER_CHUNK_BYTES) {
    writeBytes(queue, buffer, at, bytes, at, Math.min(TRANSFER_CHUNK_BYTES, whole - at));
  }
  if (whole < bytes.byteLength) {
    // writeBuffer sizes must be multiples of 4: send the last 1–3 bytes zero-padded.
    const tail = new Uint8Array(4);
    tail.set(bytes.subarray(whole));
    queue.writeBuffer(buffer, whole, tail);
  }
  return buffer;
}

/** Uploads below this size go through `queue.writeBuffer`; larger ones through the staging pool. */
const STAGED_UPLOAD_MIN_BYTES = 2 ** 20;
/** Size and number of the mapped staging buffers large uploads go through (per device). */
const UPLOAD_STAGING_BYTES = 16 * 2 ** 20;
const UPLOAD_STAGING_COUNT = 3;

interface UploadPool {
  readonly slots: { readonly buffer: GPUBuffer; ready: Promise<void> }[];
  next: number;
  /** Uploads take turns on the pool. */
  queue: Promise<void>;
}
const uploadPools = new WeakMap<GPUDevice, UploadPool>();

function uploadPoolOf(ctx: GpuContext): UploadPool {
  let pool = uploadPools.get(ctx.device);
  if (!pool) {
    pool = {
      slots: Array.from({ length: UPLOAD_STAGING_COUNT }, () => ({
        buffer: ctx.device.createBuffer({ size: UPLOAD_STAGING_BYTES, usage: GPUBufferUsage.MAP_WRITE | GPUBufferUsage.COPY_SRC, mappedAtCreation: true }),
        ready: Promise.resolve(),
      })),
      next: 0,
      queue: Promise.resolve(),
    };
    uploadPools.set(ctx.device, pool);
  }
  return pool;
}

/**
 * Writes `data` into `buffer` at `byteOffset` (a multiple of 4). Small data goes through
 * `queue.writeBuffer`; large data through a per-device pool of three 16 MiB staging buffers kept
 * mapped for writing: copy a chunk into one, unmap it, copy it to `buffer` on the GPU, and map it
 * again while the next chunk fills the next one. Measured on an H200 for 256 MiB: 8.3–8.9 GB/s
 * through such a pool, 2.2 GB/s through `writeBuffer` (which stages through a fresh allocation);
 * on lavapipe `writeBuffer` is as fast, and small writes avoid the pool's round trips.
 *
 * A length that is not a multiple of 4 is padded with zeros to the next multiple of 4 (so up to 3
 * bytes after the data are overwritten). `data` must not change until the promise resolves.
 *
 * @param ctx the device
 * @param buffer the destination, with COPY_DST usage
 * @param byteOffset where in `buffer`, a multiple of 4
 * @param data the bytes (a typed array or DataView: its view)
 * @returns when the data has been handed to the GPU (later work on the queue sees it)
 * @throws DeviceError when the device reports an error or is lost
 * @example
 * await writeToBuffer(ctx, buffer, 0, new Float32Array(1 << 26));
 */
export async function writeToBuffer(ctx: GpuContext, buffer: GPUBuffer, byteOffset: number, data: ArrayBufferView): Promise<void> {
  // Recorded calls that use `buffer` come before this write (WebGPU orders the queue as issued).
  flushChain(ctx.device);
  const bytes = new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
  const whole = bytes.byteLength - (bytes.byteLength % 4); // not `& ~3`: byte counts pass 2^31
  const { device } = ctx;
  const writeTail = () => {
    if (whole === bytes.byteLength) return;
    // writeBuffer sizes must be multiples of 4: send the last 1–3 bytes zero-padded.
    const tail = new Uint8Array(4);
    tail.set(bytes.subarray(whole));
    device.queue.writeBuffer(buffer, byteOffset + whole, tail);
  };
  if (whole < STAGED_UPLOAD_MIN_BYTES) {
    if (whole > 0) writeBytes(device.queue, buffer, byteOffset, bytes, 0, whole);
    writeTail();
    return;
  }
  const pool = uploadPoolOf(ctx);
  const upload = pool.queue.then(() =>
    runScoped(ctx, async () => {
      for (let at = 0; at < whole; at += UPLOAD_STAGING_BYTES) {
        const slot = pool.slots[pool.next]!;
        pool.next = (pool.next + 1) % pool.slots.length;
        await slot.ready;
        const n = Math.min(UPLOAD_STAGING_BYTES, whole - at);
        new Uint8Array(slot.buffer.getMappedRange(0, n)).set(bytes.subarray(at, at + n));
        slot.buffer.unmap();
        const encoder = device.createCommandEncoder();
        encoder.copyBufferToBuffer(slot.buffer, 0, buffer, byteOffset + at, n);
        device.queue.submit([encoder.finish()]);
        slot.ready = slot.buffer.mapAsync(GPUMapMode.WRITE);
        slot.ready.catch(() => {}); // awaited when the slot comes round again
      }
      writeTail();
    }),
  );
  pool.queue = upload.catch(() => {});
  return upload.catch((e: unknown) => {
    throw asDeviceError(e, 'an upload to the GPU');
  });
}

/**
 * Creates a buffer holding `data` (see {@link writeToBuffer}); the bytes after the data, up to a
 * multiple of 4, are zero. `COPY_DST` is added to `usage`.
 *
 * @param ctx the device
 * @param data the bytes to upload
 * @param usage GPUBufferUsage flags
 * @returns the new buffer, once the data is on its way
 * @throws TargetUnavailableError when the data exceeds the device's `maxBufferSize`
 * @throws DeviceError when the device reports an error (out of memory, say) or is lost
 * @example
 * const xs = await uploadToNewBuffer(ctx, new Float32Array(1 << 26), GPUBufferUsage.STORAGE);
 */
export async function uploadToNewBuffer(ctx: GpuContext, data: ArrayBufferView, usage: GPUBufferUsageFlags): Promise<GPUBuffer> {
  return runScoped(ctx, async () => {
    const buffer = allocateBuffer(ctx, data.byteLength, usage | GPUBufferUsage.COPY_DST);
    try {
      await writeToBuffer(ctx, buffer, 0, data);
    } catch (e) {
      buffer.destroy();
      throw e;
    }
    return buffer;
  });
}

/**
 * Copies `byteLength` bytes starting at `byteOffset` of `buffer` back to the host, through
 * MAP_READ staging buffers (pooled per device) in 16 MiB chunks with two in flight, so mapping one
 * chunk overlaps copying the next. Offsets need not be multiples of 4.
 *
 * @param ctx the device `buffer` lives on
 * @param buffer a buffer with `COPY_SRC` usage
 * @param byteOffset where to start, in bytes
 * @param byteLength how many bytes
 * @param into where to put them (its first `byteLength` bytes); a new Uint8Array when omitted
 * @returns `into`, or the new Uint8Array
 * @throws ArgumentError when the range is outside the buffer or `into` is too small
 * @throws DeviceError when the GPU reports an error or the device is lost during the copy
 * @example
 * const ys = await downloadBuffer(ctx, out, 0, n * 4, new Float32Array(n));
 */
export async function downloadBuffer(ctx: GpuContext, buffer: GPUBuffer, byteOffset: number, byteLength: number): Promise<Uint8Array>;
export async function downloadBuffer<T extends ArrayBufferView>(
  ctx: GpuContext,
  buffer: GPUBuffer,
  byteOffset: number,
  byteLength: number,
  into: T,
): Promise<T>;
export async function downloadBuffer(
  ctx: GpuContext,
  buffer: GPUBuffer,
  byteOffset: number,
  byteLength: number,
  into?: ArrayBufferView,
): Promise<ArrayBufferView> {
  if (!Number.isSafeInteger(byteOffset) || !Number.isSafeInteger(byteLength) || byteOffset < 0 || byteLength < 0) {
    throw new ArgumentError(`downloadBuffer: expected a byte offset and length that are integers >= 0, got ${byteOffset} and ${byteLength}`);
  }
  const end = byteOffset + byteLength;
  // Copies move whole 4-byte words: widen the range, then trim when copying out.
  const alignedStart = byteOffset - (byteOffset % 4);
  const alignedEnd = Math.ceil(end / 4) * 4;
  if (alignedEnd > buffer.size) {
    throw new ArgumentError(
      `downloadBuffer: bytes ${byteOffset}..${end} (${alignedStart}..${alignedEnd} widened to whole 4-byte words) are outside the buffer of ${buffer.size} bytes`,
    );
  }
  if ((buffer.usage & GPUBufferUsage.COPY_SRC) === 0) {
    throw new ArgumentError('downloadBuffer: the buffer was created without GPUBufferUsage.COPY_SRC, so it cannot be read back');
  }
  if (into && into.byteLength < byteLength) {
    throw new ArgumentError(`downloadBuffer: the destination holds ${into.byteLength} bytes, fewer than the ${byteLength} requested`);
  }
  const result = into ?? new Uint8Array(byteLength);
  if (byteLength === 0) return result;
  const dest = new Uint8Array(result.buffer, result.byteOffset, byteLength);

  const chunkCount = Math.ceil((alignedEnd - alignedStart) / TRANSFER_CHUNK_BYTES);
  const flights: Promise<GPUBuffer>[] = [];
  const issueNext = (): void => {
    if (flights.length >= chunkCount) return;
    const chunkStart = alignedStart + flights.length * TRANSFER_CHUNK_BYTES;
    const flight = copyChunkToStaging(ctx, buffer, chunkStart, Math.min(TRANSFER_CHUNK_BYTES, alignedEnd - chunkStart));
    flight.catch(() => {}); // awaited in order below; this only marks it handled
    flights.push(flight);
  };
  for (let i = 0; i < DOWNLOADS_IN_FLIGHT; i++) issueNext();

  let consumed = 0;
  try {
    for (let i = 0; i < chunkCount; i++) {
      const staging = await flights[i];
      consumed = i + 1;
      issueNext();
      const chunkStart = alignedStart + i * TRANSFER_CHUNK_BYTES;
      const chunkEnd = Math.min(chunkStart + TRANSFER_CHUNK_BYTES, alignedEnd);
      const from = Math.max(chunkStart, byteOffset);
      const to = Math.min(chunkEnd, end);
      const mapped = staging.getMappedRange(0, chunkEnd - chunkStart);
      dest.set(new Uint8Array(mapped, from - chunkStart, to - from), from - byteOffset);
      staging.unmap();
      returnStaging(ctx.device, staging);
    }
  } catch (e) {
    // Do not leave later chunks mapped or their staging buffers alive.
    for (const settled of await Promise.allSettled(flights.slice(consumed))) {
      if (settled.status === 'fulfilled') settled.value.destroy();
    }
    throw e;
  }
  return result;
}

/** Copies one chunk into a staging buffer and maps it; resolves once it can be read. */
async function copyChunkToStaging(ctx: GpuContext, source: GPUBuffer, chunkStart: number, length: number): Promise<GPUBuffer> {
  const staging = takeStaging(ctx, length);
  let mapped: Promise<void> | undefined;
  try {
    await runScoped(ctx, () => {
      flushChain(ctx.device); // the calls that write `source` go first
      const encoder = ctx.device.createCommandEncoder();
      encoder.copyBufferToBuffer(source, chunkStart, staging, 0, length);
      ctx.device.queue.submit([encoder.finish()]);
      // Mapping is requested right behind the copy, so it resolves as soon as the copy is done.
      mapped = staging.mapAsync(GPUMapMode.READ, 0, length);
      mapped.catch(() => {}); // awaited below
    });
    await mapped;
    return staging;
  } catch (e) {
    await mapped?.catch(() => {});
    // Possibly mapped, possibly holding stale bytes: never give it back to the pool.
    staging.destroy();
    if (e instanceof UfuncError) throw e;
    const named = asDeviceError(e, 'reading a buffer back from the GPU');
    if (named !== e) throw named;
    throw new DeviceError(`reading a buffer back from the GPU failed: ${e instanceof Error ? e.message : String(e)}`, { cause: e });
  }
}

interface StagingPool {
  /** Unmapped MAP_READ buffers by size. */
  readonly free: Map<number, GPUBuffer[]>;
  bytes: number;
}

// Per device, weakly: a released device's pool goes with it (its buffers die with the device).
const stagingPools = new WeakMap<GPUDevice, StagingPool>();

function stagingSize(length: number): number {
  return Math.max(STAGING_MIN_BYTES, 2 ** Math.ceil(Math.log2(length)));
}

function takeStaging(ctx: GpuContext, length: number): GPUBuffer {
  const size = stagingSize(length);
  const pool = stagingPools.get(ctx.device);
  const reused = pool?.free.get(size)?.pop();
  if (reused && pool) {
    pool.bytes -= size;
    return reused;
  }
  return ctx.device.createBuffer({ size, usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST });
}

function returnStaging(device: GPUDevice, staging: GPUBuffer): void {
  let pool = stagingPools.get(device);
  if (!pool) {
    pool = { free: new Map(), bytes: 0 };
    stagingPools.set(device, pool);
  }
  if (pool.bytes + staging.size > STAGING_POOL_MAX_BYTES) {
    staging.destroy();
    return;
  }
  const list = pool.free.get(staging.size) ?? [];
  list.push(staging);
  pool.free.set(staging.size, list);
  pool.bytes += staging.size;
}

function checkBufferSize(ctx: GpuContext, size: number): void {
  const max = ctx.limits.maxBufferSize;
  if (size > max) {
    throw new TargetUnavailableError(
      `an array of ${size} bytes does not fit in one buffer on this GPU (maxBufferSize is ${max} bytes on ` +
        `${ctx.adapterInfo.description || ctx.adapterInfo.vendor}): split the work, or use target 'cpu' or 'parallel'`,
    );
  }
}
