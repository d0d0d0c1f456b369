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
 * copy out of mapped memory on the main thread (the GPU copy and the mapping alone run at 50 GB/s),
 * a new staging buffer per download 2.8 GB/s (allocation dominates).
 * On an H100 host (glibc 2.39, 2026-11-24; docs/gpu.md, "Copies between host and device"): the
 * host copy into or out of the mapping is the whole cost, and one `TypedArray.set` of 256 MiB ran at
 * 8.2–8.7 GB/s where the same bytes copied in 16 MiB (or 1, 64, 128 MiB) pieces ran at 5–5.7 GB/s —
 * glibc's memcpy uses non-temporal stores only above a size threshold. So a large transfer that
 * repeats goes through one staging buffer of its own size (up to 256 MiB) and one host copy: see
 * {@link chunkBytesFor}.
 */
import { ArgumentError, DeviceError, TargetUnavailableError, UfuncError } from '../../../errors.js';
import { flushChain, recordReadback } from './chain.js';
import { asDeviceError } from './device-errors.js';
import { runScoped, scopedSectionsPending, type GpuContext } from './device.js';
import { IdleWait } from '../../../platform/platform.js';
import { pieceTarget } from './host-copy.js';
import { trace, tracing } from './transfer-trace.js';
import type { GPUBuffer, GPUCommandEncoder, GPUDevice } from './webgpu-types.js';

/**
 * Bytes per `writeBuffer` call and per transfer chunk. Chunking keeps Dawn's own staging copy of
 * an upload bounded, and lets the mapping of one download chunk overlap the copy of the next.
 * {@link setTransferChunkBytes} lowers it in tests, so that small transfers cross chunks.
 */
const TRANSFER_CHUNK_BYTES = 16 * 2 ** 20;
let transferChunkBytes = TRANSFER_CHUNK_BYTES;

/**
 * Sets the bytes per transfer chunk (for tests: transfers of a few KiB then cross chunk borders
 * as transfers of tens of MiB do).
 *
 * @param bytes a power of two ≥ 4 KiB, or undefined for the default (16 MiB)
 * @returns the previous value
 * @throws ArgumentError for another value
 */
export function setTransferChunkBytes(bytes: number | undefined): number {
  if (bytes !== undefined && (!Number.isSafeInteger(bytes) || bytes < STAGING_MIN_BYTES || (bytes & (bytes - 1)) !== 0)) {
    throw new ArgumentError(`setTransferChunkBytes: expected a power of two >= ${STAGING_MIN_BYTES} bytes, or undefined, got ${bytes}`);
  }
  const previous = transferChunkBytes;
  transferChunkBytes = bytes ?? TRANSFER_CHUNK_BYTES;
  return previous;
}
/** Download chunks copied ahead of the one being read back. */
const DOWNLOADS_IN_FLIGHT = 2;
/** Staging buffers come in power-of-two sizes from here up. */
const STAGING_MIN_BYTES = 4096;
/** A transfer of at least this many bytes may go through one staging buffer of its own size. */
const WHOLE_STAGING_MIN_BYTES = 32 * 2 ** 20;
/**
 * The largest staging buffer, and so the largest chunk, of such a transfer: 256 MiB, or on a host
 * whose memcpy threshold is higher, the power of two that holds a piece above it (host-copy.ts), so
 * that such pieces are copied whole.
 */
function wholeStagingMaxBytes(): number {
  return (wholeStagingMax ??= Math.max(256 * 2 ** 20, stagingSize(pieceTarget())));
}
let wholeStagingMax: number | undefined;
/**
 * Host-visible memory a device's staging pool keeps between transfers, per direction, at least:
 * the staging buffers of the chunks a chunked call has in flight (streaming.ts), so that they are
 * reused from chunk to chunk rather than created anew. A chunked call that needs more says so
 * ({@link expectStagingInFlight}).
 */
const STAGING_POOL_MIN_BYTES = 2 ** 30;
/** Set by {@link setStagingPoolLimit}: the pools' bytes, whatever calls need; undefined: see STAGING_POOL_MIN_BYTES. */
let stagingPoolFixedBytes: number | undefined;
/** The most staging bytes per direction that a chunked call has said it holds at once. */
const stagingInFlight = { read: 0, write: 0 };

/**
 * Sets how many bytes each staging pool keeps, whatever calls need (for tests, which make it
 * overflow with small transfers, and benchmarks; undefined: the default, at least 1 GiB and what
 * chunked calls hold at once).
 *
 * @param bytes bytes ≥ 0, or undefined
 */
export function setStagingPoolLimit(bytes: number | undefined): void {
  stagingPoolFixedBytes = bytes;
}

/**
 * The bytes each staging pool keeps now, per direction (see {@link setStagingPoolLimit} and
 * {@link expectStagingInFlight}).
 *
 * @example
 * stagingPoolMaxBytes('write'); // 1073741824 before any large chunked call
 */
export function stagingPoolMaxBytes(direction: 'read' | 'write'): number {
  return stagingPoolFixedBytes ?? Math.max(STAGING_POOL_MIN_BYTES, stagingInFlight[direction]);
}

/**
 * Says that a chunked call will hold, at once on one device, `copies` transfers of each of these
 * byte counts per direction (its host inputs and outputs, once per chunk in flight): the staging
 * pools keep as many bytes (with the staging sizes such transfers take, when they repeat), so its
 * staging buffers are reused from chunk to chunk. Per direction, the most any call said, for the
 * process: the pools keep only what transfers give back, and empty when idle.
 *
 * @param uploads bytes of each host input of one chunk
 * @param downloads bytes of each host output of one chunk
 * @param copies chunks in flight
 */
export function expectStagingInFlight(uploads: readonly number[], downloads: readonly number[], copies: number): void {
  const held = (bytes: number, direction: 'read' | 'write') => {
    if (direction === 'write' ? bytes < STAGED_UPLOAD_MIN_BYTES : bytes === 0) return 0;
    if (bytes < WHOLE_STAGING_MIN_BYTES) return direction === 'write' ? writeSlotSize(bytes) * Math.ceil(bytes / transferChunkBytes) : stagingSize(Math.min(bytes, transferChunkBytes)) * DOWNLOADS_IN_FLIGHT;
    const chunk = Math.min(bytes, wholeStagingMaxBytes());
    return stagingSize(chunk) * Math.ceil(bytes / chunk);
  };
  const sum = (list: readonly number[], direction: 'read' | 'write') => list.reduce((total, bytes) => total + held(bytes, direction), 0);
  stagingInFlight.write = Math.max(stagingInFlight.write, copies * sum(uploads, 'write'));
  stagingInFlight.read = Math.max(stagingInFlight.read, copies * sum(downloads, 'read'));
}
/** Free staging buffers are destroyed after this long without a transfer in their direction. */
export const STAGING_IDLE_MS = 2000;

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
  for (let done = 0; done < size; done += transferChunkBytes) {
    const n = Math.min(transferChunkBytes, size - done);
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
  for (let at = 0; at < whole; at += transferChunkBytes) {
    writeBytes(queue, buffer, at, bytes, at, Math.min(transferChunkBytes, whole - at));
  }
  if (whole < bytes.byteLength) {
    // writeBuffer sizes must be multiples of 4: send the last 1–3 bytes zero-padded.
    const tail = new Uint8Array(4);
    tail.set(bytes.subarray(whole));
    queue.writeBuffer(buffer, whole, tail);
  }
  return buffer;
}

/**
 * Uploads below this size go through `queue.writeBuffer`; larger ones through the staging pool
 * ({@link writeToBuffer}, and a call's host inputs: {@link stageUpload}).
 */
export const STAGED_UPLOAD_MIN_BYTES = 2 ** 20;

/** A MAP_WRITE staging buffer, mapped (or being mapped again: `ready`) while it waits in the pool. */
interface WriteSlot {
  readonly buffer: GPUBuffer;
  ready: Promise<void>;
  /** `ready` has resolved: the slot can be written now (see {@link stageUpload}). */
  mapped: boolean;
  /** `ready` has not settled: the GPU may still be copying out of the slot. */
  pending: boolean;
}

/** Maps a slot for writing again, after the GPU has copied out of it (queue order). */
function remap(slot: WriteSlot): void {
  slot.mapped = false;
  slot.pending = true;
  slot.ready = slot.buffer.mapAsync(GPUMapMode.WRITE);
  // Awaited when the slot is taken again; a failed mapping leaves `mapped` false.
  slot.ready.then(
    () => {
      slot.mapped = true;
      slot.pending = false;
    },
    () => (slot.pending = false),
  );
}

/**
 * Writes `data` into `buffer` at `byteOffset` (a multiple of 4). Small data goes through
 * `queue.writeBuffer`; large data through staging buffers kept mapped for writing (a pool per
 * device): copy a chunk into one, unmap it, copy it to `buffer` on the GPU, and map it again while
 * the next chunk fills another. Chunks are 16 MiB, or, for a large upload that repeats, the whole
 * upload up to 256 MiB ({@link chunkBytesFor}). Measured on an H200 for 256 MiB: 8.3–8.9 GB/s
 * through 16 MiB chunks, 2.2 GB/s through `writeBuffer` (which stages through a fresh allocation);
 * on an H100 host 5.1 GB/s through 16 MiB chunks, 7.2 GB/s through one 256 MiB staging buffer.
 * On lavapipe `writeBuffer` is as fast, and small writes avoid the pool's round trips.
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
  const pool = stagingPoolOf(ctx, 'write');
  const chunkBytes = chunkBytesFor(pool, whole);
  try {
    await runScoped(ctx, async () => {
      // The slot of the previous chunk is given back only once the next one is taken, so
      // consecutive chunks alternate between two buffers: one fills while the other is re-mapped.
      let previous: WriteSlot | undefined;
      let current: WriteSlot | undefined;
      try {
        for (let at = 0; at < whole; at += chunkBytes) {
          const n = Math.min(chunkBytes, whole - at);
          current = takeWriteSlot(ctx, pool, n);
          await current.ready;
          const started = tracing() ? performance.now() : 0;
          new Uint8Array(current.buffer.getMappedRange(0, n)).set(bytes.subarray(at, at + n));
          if (started) trace({ kind: 'host-to-staging', t: started, device: ctx.slot, bytes: n, ms: performance.now() - started });
          current.buffer.unmap();
          const encoder = device.createCommandEncoder();
          encoder.copyBufferToBuffer(current.buffer, 0, buffer, byteOffset + at, n);
          device.queue.submit([encoder.finish()]);
          remap(current);
          if (previous) giveStaging(pool, previous);
          previous = current;
          current = undefined;
        }
      } finally {
        // A slot whose chunk failed half-way is in an unknown state: never give it back.
        if (current) current.buffer.destroy();
        if (previous) giveStaging(pool, previous);
      }
      writeTail();
    });
  } catch (e) {
    throw asDeviceError(e, 'an upload to the GPU');
  }
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

/** Host bytes copied into mapped staging buffers, whose copies to the device are still to be recorded. */
export interface StagedUpload {
  /**
   * Records the copies from the staging buffers into `buffer` (from byte 0, the data's length
   * rounded up to whole words, the padding zero) into `encoder`, once.
   */
  recordInto(encoder: GPUCommandEncoder, buffer: GPUBuffer): void;
  /**
   * Gives the staging buffers back (mapped again for the next upload, in queue order): call it once
   * the encoder is submitted, or dropped unsubmitted.
   */
  release(): void;
}

/**
 * Copies `data` into staging buffers of the device's write pool now, synchronously, so that the
 * caller may change `data` as soon as this returns; the copies to the device are recorded later,
 * into the caller's command encoder ({@link StagedUpload.recordInto}), so they run in the same
 * submission as the work that reads them and fail with it. Only slots whose mapping has completed
 * are taken (an upload cannot wait for one); a new slot is created, mapped, when none is. The
 * chunks are those of {@link writeToBuffer}: 16 MiB, or one chunk of the whole upload (up to
 * 256 MiB) for a large upload that repeats, so a loop of calls on large host arrays copies each
 * input with one host copy into a staging buffer reused from the call before.
 *
 * This is the path of a call's large host inputs (dispatch.ts) instead of `queue.writeBuffer`,
 * which Dawn stages through a fresh allocation (1.4 GB/s on an H100 host, against 7–9 GB/s through
 * a reused mapped buffer).
 *
 * @param ctx the live device
 * @param data the bytes to upload (its view)
 * @returns the staged upload, to record and then release
 * @throws whatever WebGPU throws when a mapping fails (the device was destroyed); nothing is pooled then
 * @example
 * const staged = stageUpload(ctx, hostArray);
 * staged.recordInto(encoder, buffer);
 * device.queue.submit([encoder.finish()]);
 * staged.release();
 */
export function stageUpload(ctx: GpuContext, data: ArrayBufferView): StagedUpload {
  const bytes = new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
  return stageUploadWith(ctx, bytes.byteLength, (chunk, at) => chunk.set(bytes.subarray(at, at + chunk.byteLength)));
}

/**
 * {@link stageUpload} of `byteLength` bytes that `write` puts into the mapped staging memory
 * itself, a chunk at a time: so a strided host view is gathered straight into it (dispatch.ts),
 * without an array of its elements in between.
 *
 * @param ctx the live device
 * @param byteLength bytes to upload
 * @param write writes bytes `at … at + chunk.byteLength − 1` of the upload into `chunk` (the
 *   mapped memory, a whole number of 8-byte words long but for the last chunk; the bytes after
 *   the upload's end, up to a multiple of 4, are zeroed here)
 * @returns the staged upload, to record and then release
 */
export function stageUploadWith(ctx: GpuContext, byteLength: number, write: (chunk: Uint8Array, at: number) => void): StagedUpload {
  const padded = Math.ceil(byteLength / 4) * 4;
  const pool = stagingPoolOf(ctx, 'write');
  const chunkBytes = chunkBytesFor(pool, padded);
  const slots: WriteSlot[] = [];
  const started = tracing() ? performance.now() : 0;
  try {
    for (let at = 0; at < padded; at += chunkBytes) {
      const n = Math.min(chunkBytes, padded - at);
      const slot = takeMappedSlot(ctx, pool, n);
      slots.push(slot);
      const mapped = new Uint8Array(slot.buffer.getMappedRange(0, n));
      const end = Math.min(at + n, byteLength);
      write(mapped.subarray(0, end - at), at);
      // The last word's padding: a reused slot holds an earlier upload's bytes there.
      if (end - at < n) mapped.fill(0, end - at);
      slot.buffer.unmap();
    }
  } catch (e) {
    for (const slot of slots) slot.buffer.destroy();
    throw e;
  }
  if (started) trace({ kind: 'host-to-staging', t: started, device: ctx.slot, bytes: padded, ms: performance.now() - started });
  let recorded = false;
  return {
    recordInto(encoder, buffer) {
      if (recorded) throw new Error('stageUpload: recordInto was called twice');
      recorded = true;
      let at = 0;
      for (const slot of slots) {
        const n = Math.min(chunkBytes, padded - at);
        encoder.copyBufferToBuffer(slot.buffer, 0, buffer, at, n);
        at += n;
      }
    },
    release() {
      for (const slot of slots.splice(0)) {
        remap(slot);
        giveStaging(pool, slot);
      }
    },
  };
}

/**
 * Copies `byteLength` bytes starting at `byteOffset` of `buffer` back to the host, through
 * MAP_READ staging buffers (pooled per device) in chunks with two in flight, so mapping one chunk
 * overlaps copying the next: 16 MiB chunks, or, for a large download that repeats, the whole
 * download up to 256 MiB, copied out of the mapping at once ({@link chunkBytesFor}). Offsets need
 * not be multiples of 4.
 *
 * @param ctx the device `buffer` lives on
 * @param buffer a buffer with `COPY_SRC` usage
 * @param byteOffset where to start, in bytes
 * @param byteLength how many bytes
 * @param into where to put them (its first `byteLength` bytes); a new Uint8Array when omitted
 * @param ready awaited after the copies are queued and before anything is written into `into`:
 *   the check of the calls that wrote `buffer` (its rejection is thrown, `into` left untouched)
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
  ready?: Promise<unknown>,
): Promise<T>;
export async function downloadBuffer(
  ctx: GpuContext,
  buffer: GPUBuffer,
  byteOffset: number,
  byteLength: number,
  into?: ArrayBufferView,
  ready?: Promise<unknown>,
): Promise<ArrayBufferView> {
  // A bad length is refused by downloadBufferTo, with the other arguments' checks, in their order.
  const length = Number.isSafeInteger(byteLength) && byteLength >= 0 ? byteLength : 0;
  const result = into ?? new Uint8Array(length);
  await downloadBufferTo(ctx, buffer, byteOffset, byteLength, new Uint8Array(result.buffer, result.byteOffset, Math.min(length, result.byteLength)), ready);
  return result;
}

/**
 * Where read-back bytes go: into a byte array, or to a function that takes them a piece at a time,
 * straight out of the mapped staging memory (so a strided host view is scattered from there, with
 * no array of the bytes in between).
 *
 * The function gets bytes `at … at + bytes.byteLength − 1` of the range read, in order, and may
 * read them only during the call (they are the staging buffer's mapping). For a range that starts
 * at a multiple of 4 bytes, `bytes` starts at byte 0 of an ArrayBuffer of its own (a typed array of
 * any element size up to 4 may view it), and every piece but the last is a multiple of 4 KiB long.
 */
export type ReadbackSink = Uint8Array | ((bytes: Uint8Array, at: number) => void);

/**
 * {@link downloadBuffer} into a {@link ReadbackSink}.
 *
 * @param ctx the device `buffer` lives on
 * @param buffer a buffer with `COPY_SRC` usage
 * @param byteOffset where to start, in bytes
 * @param byteLength how many bytes
 * @param sink where the bytes go (a byte array: its first `byteLength` bytes)
 * @param ready as for {@link downloadBuffer}: nothing reaches `sink` before it resolves
 * @throws as {@link downloadBuffer}
 * @example
 * await downloadBufferTo(ctx, out, 0, n * 4, (bytes, at) => scatter(new Float32Array(bytes.buffer, bytes.byteOffset, bytes.byteLength / 4), at / 4));
 */
export async function downloadBufferTo(ctx: GpuContext, buffer: GPUBuffer, byteOffset: number, byteLength: number, sink: ReadbackSink, ready?: Promise<unknown>): Promise<void> {
  if (!Number.isSafeInteger(byteOffset) || !Number.isSafeInteger(byteLength) || byteOffset < 0 || byteLength < 0) {
    throw new ArgumentError(`downloadBuffer: expected a byte offset and length that are integers >= 0, got ${byteOffset} and ${byteLength}`);
  }
  const end = byteOffset + byteLength;
  const { alignedStart, alignedEnd } = wordSpan(byteOffset, byteLength);
  if (alignedEnd > buffer.size) {
    throw new ArgumentError(
      `downloadBuffer: bytes ${byteOffset}..${end} (${alignedStart}..${alignedEnd} widened to whole 4-byte words) are outside the buffer of ${buffer.size} bytes`,
    );
  }
  if ((buffer.usage & GPUBufferUsage.COPY_SRC) === 0) {
    throw new ArgumentError('downloadBuffer: the buffer was created without GPUBufferUsage.COPY_SRC, so it cannot be read back');
  }
  if (sink instanceof Uint8Array && sink.byteLength < byteLength) {
    throw new ArgumentError(`downloadBuffer: the destination holds ${sink.byteLength} bytes, fewer than the ${byteLength} requested`);
  }
  if (byteLength === 0) return;

  const pool = stagingPoolOf(ctx, 'read');
  const chunkBytes = chunkBytesFor(pool, alignedEnd - alignedStart);
  const chunkCount = Math.ceil((alignedEnd - alignedStart) / chunkBytes);
  const flights: Promise<GPUBuffer>[] = [];
  const issueNext = (): void => {
    if (flights.length >= chunkCount) return;
    const chunkStart = alignedStart + flights.length * chunkBytes;
    const flight = copyChunkToStaging(ctx, pool, buffer, chunkStart, Math.min(chunkBytes, alignedEnd - chunkStart));
    flight.catch(() => {}); // awaited in order below; this only marks it handled
    flights.push(flight);
  };
  for (let i = 0; i < DOWNLOADS_IN_FLIGHT; i++) issueNext();

  let consumed = 0;
  try {
    // The copies are queued; nothing is written into `dest` until `ready` resolves (when it rejects,
    // `dest` is left as it was and the copies' staging buffers are released below).
    if (ready) await ready;
    for (let i = 0; i < chunkCount; i++) {
      const staging = await flights[i];
      consumed = i + 1;
      issueNext();
      const chunkStart = alignedStart + i * chunkBytes;
      const chunkEnd = Math.min(chunkStart + chunkBytes, alignedEnd);
      const from = Math.max(chunkStart, byteOffset);
      const to = Math.min(chunkEnd, end);
      const started = tracing() ? performance.now() : 0;
      const mapped = staging.getMappedRange(0, chunkEnd - chunkStart);
      deliver(sink, new Uint8Array(mapped, from - chunkStart, to - from), from - byteOffset);
      staging.unmap();
      if (started) trace({ kind: 'staging-to-host', t: started, device: ctx.slot, bytes: to - from, ms: performance.now() - started });
      giveStaging(pool, staging);
    }
  } catch (e) {
    // Do not leave later chunks mapped or their staging buffers alive.
    for (const settled of await Promise.allSettled(flights.slice(consumed))) {
      if (settled.status === 'fulfilled') settled.value.destroy();
    }
    throw e;
  }
}

/** Hands bytes `at …` of a read-back to its sink. */
function deliver(sink: ReadbackSink, bytes: Uint8Array, at: number): void {
  if (sink instanceof Uint8Array) sink.set(bytes, at);
  else sink(bytes, at);
}

/**
 * The byte range `byteOffset`…`byteOffset + byteLength` widened to whole 4-byte words, which is what
 * buffer copies move; the bytes asked for are trimmed out when copied to the host.
 */
function wordSpan(byteOffset: number, byteLength: number): { alignedStart: number; alignedEnd: number } {
  return { alignedStart: byteOffset - (byteOffset % 4), alignedEnd: Math.ceil((byteOffset + byteLength) / 4) * 4 };
}

/**
 * Read-backs of at most this many bytes may take the lean path ({@link startLeanReadback}). Its gain
 * is fixed: 13–19 µs per read-back on an H100 with the GPU idle, 47 µs behind a chain of small
 * calls. That matters while the transfer itself is short; 1 MiB takes 0.1–0.2 ms to copy out of a
 * mapping (5–9 GB/s), so above it the gain is a tenth or less, while the usual path's pieces (16 MiB
 * chunks, two in flight; whole-size staging for large repeats) pay only from 16 MiB. 1 MiB is also
 * where uploads switch from `writeBuffer` to the staging pool, and it bounds the staging buffers the
 * lean path holds (the pool's power-of-two sizes from 4 KiB).
 */
export const LEAN_READBACK_MAX_BYTES = 2 ** 20;

/**
 * A call's host output of at most this many bytes is read back the lean way ({@link
 * startLeanReadback}, dispatch.ts) when the pool holds a staging buffer of its size: a call in
 * chunks (streaming.ts) reuses one per chunk in flight. Its gain there is not fixed: the usual
 * path's copy is submitted only once the JS thread has seen the call's work done, and that thread
 * spends its turns copying other chunks into and out of staging memory, so each chunk's results
 * waited a second round trip, with the copy engine idle (bench/multigpu-host.ts traces). The
 * largest whole-transfer staging buffer (256 MiB, or more where the host's memcpy threshold is higher).
 */
export function callLeanReadbackMaxBytes(): number {
  return wholeStagingMaxBytes();
}

/** A small read-back whose copy is queued (see {@link startLeanReadback}). */
export interface LeanReadback {
  /**
   * Waits for `ready` and for the copy, then writes the bytes into `dest` — only when both passed.
   *
   * @param dest where the bytes go (a byte array exactly the length read back, or a function: {@link ReadbackSink})
   * @param ready the check of the calls that wrote the data: its rejection is thrown, `dest` untouched
   * @returns true when `dest` holds the data; false when the copy did not run (its submission
   *   failed, the device was lost) and nothing was written: the caller takes {@link downloadBuffer},
   *   which reads the data or throws the error that says why not
   */
  finish(dest: ReadbackSink, ready: Promise<unknown> | undefined): Promise<boolean>;
}

/**
 * Starts a small read-back of `byteLength` bytes from `byteOffset` of `buffer` without awaiting
 * anything: the copy goes into a pooled MAP_READ staging buffer as the last command of the open
 * batch, or in a submission of its own when none is open ({@link recordReadback}), and the mapping
 * is requested right behind it. What {@link downloadBuffer} does besides — acquiring the device, a
 * `runScoped` section (queued behind other sections, error scopes held across awaits, an
 * AsyncLocalStorage context), a submission of its own behind the calls' batch, awaits between the
 * steps — made a one-element `toHost()` with the GPU idle take 66–72 µs on an H100 where Dawn's
 * raw copy and mapping take 36–40; this path takes 53 (A/B in one process, means of 6 rounds).
 *
 * Applies only when the range is small (`maxBytes`: {@link LEAN_READBACK_MAX_BYTES}, or for a call's
 * host outputs {@link callLeanReadbackMaxBytes}), valid, the pool has a
 * staging buffer of its size (one that a read-back used before: so the copy can only fail for
 * reasons that fail the device, never for a bad buffer of ours), and no `runScoped` section is
 * running or queued on the device (its work must reach the queue first). Otherwise returns
 * undefined and the caller takes {@link downloadBuffer}, whose staging buffer then stays in the pool.
 *
 * @param ctx the live device
 * @param buffer the buffer to read, with COPY_SRC usage
 * @param byteOffset where to start, in bytes
 * @param byteLength how many bytes, > 0
 * @param maxBytes the most bytes it applies to
 * @returns the read-back to finish, or undefined
 */
export function startLeanReadback(
  ctx: GpuContext,
  buffer: GPUBuffer,
  byteOffset: number,
  byteLength: number,
  maxBytes = LEAN_READBACK_MAX_BYTES,
): LeanReadback | undefined {
  if (byteLength <= 0 || byteLength > maxBytes) return undefined;
  const { alignedStart, alignedEnd } = wordSpan(byteOffset, byteLength);
  if (alignedStart < 0 || alignedEnd > buffer.size || (buffer.usage & GPUBufferUsage.COPY_SRC) === 0) return undefined;
  if (scopedSectionsPending(ctx.device) > 0) return undefined;
  const pool = stagingPoolOf(ctx, 'read');
  const length = alignedEnd - alignedStart;
  const staging = takeFromPool(pool, stagingSize(length));
  if (!staging) return undefined;
  const copied = recordReadback(ctx, buffer, alignedStart, staging, length);
  const mapped = staging.mapAsync(GPUMapMode.READ, 0, length);
  return {
    async finish(dest, ready) {
      const [check, map, ran] = await Promise.allSettled([ready, mapped, copied]);
      const ok = map.status === 'fulfilled' && ran.status === 'fulfilled' && ran.value;
      if (check.status === 'rejected' || !ok) {
        if (ok) {
          staging.unmap();
          giveStaging(pool, staging);
        } else {
          // Mapped or not, holding what: never given back.
          await mapped.catch(() => {});
          staging.destroy();
        }
        if (check.status === 'rejected') throw check.reason;
        return false;
      }
      try {
        const started = tracing() ? performance.now() : 0;
        deliver(dest, new Uint8Array(staging.getMappedRange(0, length), byteOffset - alignedStart, byteLength), 0);
        staging.unmap();
        if (started) trace({ kind: 'staging-to-host', t: started, device: ctx.slot, bytes: byteLength, ms: performance.now() - started });
      } catch {
        // The device was destroyed meanwhile: downloadBuffer says so.
        staging.destroy();
        return false;
      }
      giveStaging(pool, staging);
      return true;
    },
  };
}

/** Copies one chunk into a staging buffer and maps it; resolves once it can be read. */
async function copyChunkToStaging(ctx: GpuContext, pool: StagingPool<GPUBuffer>, source: GPUBuffer, chunkStart: number, length: number): Promise<GPUBuffer> {
  const staging = takeReadStaging(ctx, pool, length);
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

/**
 * Staging buffers of one direction on one device, by size: MAP_READ buffers (unmapped) for
 * downloads, mapped MAP_WRITE slots for uploads.
 */
interface StagingPool<T> {
  readonly direction: 'read' | 'write';
  readonly free: Map<number, T[]>;
  /**
   * The same free entries, least recently given back first: what a full pool destroys to keep the
   * entry given back (see {@link giveStaging}).
   */
  readonly recency: T[];
  bytes: number;
  /**
   * Sizes of whole-transfer staging buffers a transfer could have used: the next transfer that
   * needs one of these sizes creates it (see {@link chunkBytesFor}).
   */
  readonly wanted: Set<number>;
  /** Empties the pool after STAGING_IDLE_MS without a transfer ({@link armStagingIdle}). */
  readonly idle: IdleWait;
  readonly sizeOf: (entry: T) => number;
  readonly destroy: (entry: T) => void;
  /**
   * While the entry's mapping is still pending (the GPU copying out of it, then the map), what
   * settles when it is done; undefined when the entry is idle. A pool with a pending entry is not
   * idle, and a pending entry is not destroyed before its mapping settles (see {@link giveStaging}).
   */
  readonly settling: (entry: T) => Promise<unknown> | undefined;
}

// Per device, weakly: a released device's pools go with it (its buffers die with the device).
const readPools = new WeakMap<GPUDevice, StagingPool<GPUBuffer>>();
const writePools = new WeakMap<GPUDevice, StagingPool<WriteSlot>>();

function stagingPoolOf(ctx: GpuContext, direction: 'read'): StagingPool<GPUBuffer>;
function stagingPoolOf(ctx: GpuContext, direction: 'write'): StagingPool<WriteSlot>;
function stagingPoolOf(ctx: GpuContext, direction: 'read' | 'write'): StagingPool<GPUBuffer> | StagingPool<WriteSlot> {
  let read = readPools.get(ctx.device);
  let write = writePools.get(ctx.device);
  if (direction === 'read' && !read) {
    readPools.set(ctx.device, (read = newPool<GPUBuffer>('read', (b) => b.size, (b) => destroyStaging(ctx, b, 'read'), () => undefined)));
  }
  if (direction === 'write' && !write) {
    writePools.set(ctx.device, (write = newPool<WriteSlot>('write', (s) => s.buffer.size, (s) => destroyStaging(ctx, s.buffer, 'write'), (s) => (s.pending ? s.ready : undefined))));
  }
  // A transfer either way keeps both pools: a loop of calls uploads at the start of each call and
  // reads back at its end, and a slow kernel between must not empty the other direction's pool.
  if (read) armStagingIdle(read);
  if (write) armStagingIdle(write);
  return direction === 'read' ? read! : write!;
}

/** Creates a staging buffer (traced: pinned host memory, costly to create). */
function createStaging(ctx: GpuContext, size: number, direction: 'read' | 'write'): GPUBuffer {
  if (tracing()) trace({ kind: 'staging-created', t: performance.now(), device: ctx.slot, bytes: size, direction });
  return direction === 'read'
    ? ctx.device.createBuffer({ size, usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST })
    : ctx.device.createBuffer({ size, usage: GPUBufferUsage.MAP_WRITE | GPUBufferUsage.COPY_SRC, mappedAtCreation: true });
}

function destroyStaging(ctx: GpuContext, buffer: GPUBuffer, direction: 'read' | 'write'): void {
  if (tracing()) trace({ kind: 'staging-destroyed', t: performance.now(), device: ctx.slot, bytes: buffer.size, direction, mapState: buffer.mapState });
  buffer.destroy();
}

function newPool<T>(
  direction: 'read' | 'write',
  sizeOf: (entry: T) => number,
  destroy: (entry: T) => void,
  settling: (entry: T) => Promise<unknown> | undefined,
): StagingPool<T> {
  const pool: StagingPool<T> = { direction, free: new Map(), recency: [], bytes: 0, wanted: new Set(), idle: new IdleWait(() => emptyStaging(pool)), sizeOf, destroy, settling };
  return pool;
}

/**
 * Empties the pool (and forgets wanted sizes) once no transfer used the device's pools for
 * STAGING_IDLE_MS and none of its entries is still in use by the GPU.
 */
function armStagingIdle<T>(pool: StagingPool<T>): void {
  pool.idle.touch(STAGING_IDLE_MS);
}

function emptyStaging<T>(pool: StagingPool<T>): void {
  for (const list of pool.free.values()) {
    if (list.some((entry) => pool.settling(entry) !== undefined)) {
      armStagingIdle(pool);
      return;
    }
  }
  for (const list of pool.free.values()) for (const entry of list) pool.destroy(entry);
  pool.free.clear();
  pool.recency.length = 0;
  pool.bytes = 0;
  pool.wanted.clear();
}

/**
 * The chunk size of a transfer of `span` bytes: one chunk of the whole transfer (up to 256 MiB)
 * when the transfer is large (≥ 32 MiB) and a staging buffer of that size is in the pool or was
 * wanted by an earlier transfer; 16 MiB chunks otherwise. So a large transfer that repeats (frames,
 * a loop, a benchmark) is copied by the host in one piece, which glibc's memcpy does with
 * non-temporal stores (measured 1.5–1.6× faster on an H100 host), and a one-off transfer does not
 * pay for creating a large buffer of pinned host memory.
 */
function chunkBytesFor<T>(pool: StagingPool<T>, span: number): number {
  if (span < WHOLE_STAGING_MIN_BYTES) return transferChunkBytes;
  const chunk = Math.min(span, wholeStagingMaxBytes());
  const size = stagingSize(chunk);
  if ((pool.free.get(size)?.length ?? 0) > 0 || pool.wanted.has(size)) return chunk;
  pool.wanted.add(size);
  return transferChunkBytes;
}

function stagingSize(length: number): number {
  return Math.max(STAGING_MIN_BYTES, 2 ** Math.ceil(Math.log2(length)));
}

function takeFromPool<T>(pool: StagingPool<T>, size: number): T | undefined {
  const reused = pool.free.get(size)?.pop();
  if (reused !== undefined) forget(pool, reused, size);
  return reused;
}

/** Takes an entry, already removed from its size's list, out of the pool's accounts. */
function forget<T>(pool: StagingPool<T>, entry: T, size: number): void {
  pool.bytes -= size;
  // Taken entries are mostly the most recent: search from the end.
  const at = pool.recency.lastIndexOf(entry);
  if (at >= 0) pool.recency.splice(at, 1);
}

function takeReadStaging(ctx: GpuContext, pool: StagingPool<GPUBuffer>, length: number): GPUBuffer {
  const size = stagingSize(length);
  return takeFromPool(pool, size) ?? createStaging(ctx, size, 'read');
}

/** Chunks up to 16 MiB share one slot size, so the pool does not fill with odd sizes. */
function writeSlotSize(length: number): number {
  return length <= transferChunkBytes ? transferChunkBytes : stagingSize(length);
}

function newWriteSlot(ctx: GpuContext, size: number): WriteSlot {
  return { buffer: createStaging(ctx, size, 'write'), ready: Promise.resolve(), mapped: true, pending: false };
}

function takeWriteSlot(ctx: GpuContext, pool: StagingPool<WriteSlot>, length: number): WriteSlot {
  const size = writeSlotSize(length);
  return takeFromPool(pool, size) ?? newWriteSlot(ctx, size);
}

/** A pooled slot that is mapped now, or a new one (mapped at creation). */
function takeMappedSlot(ctx: GpuContext, pool: StagingPool<WriteSlot>, length: number): WriteSlot {
  const size = writeSlotSize(length);
  const list = pool.free.get(size);
  if (list) {
    for (let i = list.length - 1; i >= 0; i--) {
      if (!list[i]!.mapped) continue;
      const slot = list.splice(i, 1)[0]!;
      forget(pool, slot, size);
      return slot;
    }
  }
  return newWriteSlot(ctx, size);
}

/**
 * Keeps a staging buffer for the next transfer. A pool that would exceed its bytes destroys its
 * least recently given back entries first, whatever their size, rather than the one given back: the
 * sizes in use now are kept, and sizes that earlier calls used and later ones do not leave. (Keeping
 * what it had made a pool full of one kind of call's staging buffers destroy, and so re-create in
 * every call, those of the kind of call that came next: two 128 MiB buffers per two-device Hermite
 * call on an H200 after SAXPY rows, bench/results/multigpu-nvidia-h200x2-session5.md.) An entry
 * larger than the whole pool is destroyed.
 */
function giveStaging<T>(pool: StagingPool<T>, entry: T): void {
  const size = pool.sizeOf(entry);
  if (size > stagingPoolMaxBytes(pool.direction)) {
    retire(pool, entry);
    return;
  }
  while (pool.bytes + size > stagingPoolMaxBytes(pool.direction) && pool.recency.length > 0) {
    const oldest = pool.recency.shift()!;
    const oldSize = pool.sizeOf(oldest);
    const list = pool.free.get(oldSize)!;
    list.splice(list.indexOf(oldest), 1);
    if (list.length === 0) pool.free.delete(oldSize);
    pool.bytes -= oldSize;
    retire(pool, oldest);
  }
  const list = pool.free.get(size);
  if (list) list.push(entry);
  else pool.free.set(size, [entry]);
  pool.recency.push(entry);
  pool.bytes += size;
}

/**
 * Destroys an entry the pool does not keep — once its mapping has settled, if one is pending.
 * Destroying a buffer whose mapping is pending aborts the mapping, and dawn.node settles such a
 * mapping's promise from a later turn of the event loop (AsyncRunner::Reject): processes that did so
 * for many staging buffers, two devices streaming through a staging pool too small for their
 * chunks, died (docs/gpu.md, "Copies between host and device": segmentation faults, once V8's
 * "Check failed: node->IsInUse()" under napi_reject_deferred), and none did with the destruction
 * deferred.
 */
function retire<T>(pool: StagingPool<T>, entry: T): void {
  const settling = pool.settling(entry);
  if (!settling) pool.destroy(entry);
  else void settling.then(() => pool.destroy(entry), () => pool.destroy(entry));
}

/**
 * What a device's staging pools hold now (for tests and benchmarks): per direction, the bytes of
 * free staging buffers and their sizes.
 *
 * @example
 * stagingPoolStats(ctx).read.sizes; // e.g. [16777216, 16777216]
 */
export function stagingPoolStats(ctx: GpuContext): Record<'read' | 'write', { bytes: number; sizes: number[] }> {
  const describe = <T>(pool: StagingPool<T> | undefined) => ({
    bytes: pool?.bytes ?? 0,
    sizes: pool ? [...pool.free.entries()].flatMap(([size, list]) => list.map(() => size)).sort((a, b) => a - b) : [],
  });
  return { read: describe(readPools.get(ctx.device)), write: describe(writePools.get(ctx.device)) };
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
