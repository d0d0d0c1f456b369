/**
 * The caching allocator for device buffers: call outputs, host operands' device copies and
 * device arrays given back with `destroy()` are kept in size classes and handed out again, so a
 * call that allocates its output costs what a call into `out` costs (creating a buffer in Dawn
 * allocates and zero-fills device memory: milliseconds for hundreds of MiB).
 *
 * - **Size classes**: four per power of two (1, 1.25, 1.5, 1.75 × 2^k bytes, at least 256 bytes),
 *   so a buffer is at most 25% larger than asked for and a class is reused by sizes close to it.
 * - **Reuse after the GPU is done**: a released buffer may still be used by submitted (or
 *   recorded, not yet submitted) work. Everything that reuses it goes through the same queue, in
 *   order: WebGPU orders later commands after earlier ones (and later dispatches of a pass after
 *   earlier ones), so the GPU has finished with the old contents before the new work touches them
 *   (a stream-ordered allocator, like CuPy's). Host writes into a taken buffer submit the open
 *   batch first, so they cannot overtake work recorded before.
 * - **Contents are unspecified**: pooled buffers are not zeroed. Outputs of vectorize calls are
 *   written whole; the gpu target zeroes a reused buffer where a kernel may leave elements
 *   unwritten (guvectorize outputs) and `deviceArray()` keeps its zeroed contract.
 * - **Bounded**: at most {@link setBufferPoolLimit} bytes (default 1 GiB) are kept; beyond that
 *   a released buffer is destroyed.
 * - **Released on idle and on device loss**: the pool is emptied when nothing was taken from it
 *   for {@link POOL_IDLE_MS} ms, and when its device is lost or released (its buffers go with it).
 * - **Arrays dropped without `destroy()`** give their buffers back only when the garbage collector
 *   finalises them, and V8 does not see device memory: on an H100 a chain of SAXPY calls on 2^26
 *   elements that dropped its outputs ran 100 calls without a single collection and held 27 GB
 *   of device memory at the end (an out-of-memory error some calls later). So (1) the pool tells
 *   V8 how much device memory its buffers hold, as a native addon does with
 *   `AdjustAmountOfExternalAllocatedMemory`: one untouched 64 MiB ArrayBuffer per 64 MiB of its
 *   buffers, which V8 counts as external memory (calloc maps them lazily: address space, not
 *   memory); and (2) a call that had to create a buffer while buffers of more than the pool limit
 *   are taken resolves only after the current task ({@link pressureYield}), so the finalisers of
 *   arrays the collector found unreachable run, and give their buffers back, during the chain
 *   (they run only between tasks, and a chain of `await f(x)` is one task). Same chain on the
 *   H100: 4.8 GB held at most instead of 27, 37 buffers created in 105 calls instead of 105, 4.8
 *   instead of 7.0 ms per call (bench/results/gc-chain-nvidia-h100-80gb-hbm3.md); with the
 *   report alone 7.4 GB and 14.2 ms per call. `destroy()`, `using` or `out` remain the fast way
 *   (0.35 ms per call).
 *
 * Reductions and other gpu code (issue 12) take and give buffers with {@link takeBuffer} /
 * {@link releaseBuffer}.
 */
import { ArgumentError, TargetUnavailableError } from '../../../errors.js';
import { afterCurrentTask, IdleWait, platform } from '../../../platform/platform.js';
import { flushChain } from './chain.js';
import type { GpuContext } from './device.js';
import type { GPUBuffer, GPUDevice } from './webgpu-types.js';

/** Usage of every pooled buffer: bindable, copyable both ways. */
export const POOLED_USAGE = (): number => GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST;
/** The pool is emptied after this long without a `takeBuffer`. */
export const POOL_IDLE_MS = 1000;
const MIN_CLASS_BYTES = 256;
/**
 * The unit in which device memory is reported to V8: above glibc's largest mmap threshold (32
 * MiB), so each is a fresh mapping of zero pages that nothing touches.
 */
const BALLAST_BYTES = 64 * 2 ** 20;

let poolLimitBytes = 2 ** 30;

interface Pool {
  readonly device: GPUDevice;
  /** Free buffers by class size. */
  readonly free: Map<number, GPUBuffer[]>;
  freeBytes: number;
  /** Bytes of the buffers this pool created and has not destroyed (free or taken). */
  heldBytes: number;
  /** Bytes of its buffers taken and not given back (owned by arrays, or in use by calls). */
  takenBytes: number;
  /** Untouched ArrayBuffers, one per BALLAST_BYTES of `heldBytes`: what V8 is told of device memory. */
  readonly ballast: ArrayBuffer[];
  /** A buffer was created while more than the limit was taken: the next recorded call yields. */
  pressure: boolean;
  /** Empties the pool after POOL_IDLE_MS without a take. */
  readonly idle: IdleWait;
  readonly stats: BufferPoolStats;
}

/** Counters for tests and benchmarks. */
export interface BufferPoolStats {
  /** Buffers created because no free one of the class was there. */
  created: number;
  /** Takes served from the pool. */
  reused: number;
  /** Buffers given back and kept. */
  kept: number;
  /** Buffers given back and destroyed (pool full). */
  dropped: number;
  /** Bytes in free buffers now. */
  freeBytes: number;
  /** Recorded calls that resolved after the current task because the pool was under pressure. */
  yields: number;
  /** Bytes of the buffers the pool created and has not destroyed, now and at most. */
  heldBytes: number;
  peakHeldBytes: number;
  /** Bytes of untouched ArrayBuffers that report `heldBytes` to V8 (0 where not reported). */
  reportedBytes: number;
}

const pools = new WeakMap<GPUDevice, Pool>();

function poolOf(ctx: GpuContext): Pool {
  let pool = pools.get(ctx.device);
  if (!pool) {
    const created: Pool = {
      device: ctx.device,
      free: new Map(),
      freeBytes: 0,
      heldBytes: 0,
      takenBytes: 0,
      ballast: [],
      pressure: false,
      idle: new IdleWait(() => emptyPool(created)),
      stats: { created: 0, reused: 0, kept: 0, dropped: 0, freeBytes: 0, yields: 0, heldBytes: 0, peakHeldBytes: 0, reportedBytes: 0 },
    };
    pool = created;
    pools.set(ctx.device, created);
    // A lost or released device takes its buffers with it: forget them.
    void ctx.device.lost.then(() => {
      created.idle.cancel();
      created.free.clear();
      created.freeBytes = created.stats.freeBytes = 0;
      created.heldBytes = created.takenBytes = created.stats.heldBytes = created.stats.reportedBytes = 0;
      created.ballast.length = 0;
    });
  }
  return pool;
}

/** The size classes within a power of two (see {@link sizeClass}). */
const CLASS_STEPS = [1, 1.25, 1.5, 1.75, 2];

/**
 * The class size for `byteLength` bytes: the smallest of 1, 1.25, 1.5, 1.75 × 2^k ≥ the length
 * (and ≥ 256), rounded to a multiple of 4.
 *
 * @example
 * sizeClass(1000); // 1024
 * sizeClass(1100); // 1280
 */
export function sizeClass(byteLength: number): number {
  const n = Math.max(MIN_CLASS_BYTES, byteLength);
  const power = 2 ** Math.floor(Math.log2(n));
  for (const step of CLASS_STEPS) {
    const size = power * step;
    if (size >= n) return Math.ceil(size / 4) * 4;
  }
  return Math.ceil(n / 4) * 4;
}

/** Sizes of buffers read so far (see {@link bufferBytes}). */
const byteSizes = new WeakMap<GPUBuffer, number>();

/**
 * A buffer's size in bytes, read from WebGPU once: each read of `GPUBuffer.size` calls into native
 * code (0.1–0.3 µs in Dawn's Node binding, against 0.01 µs for this lookup), and a gpu call reads
 * the sizes of its operands several times.
 *
 * @param buffer any buffer (the size of a buffer never changes)
 * @returns its size
 */
export function bufferBytes(buffer: GPUBuffer): number {
  let size = byteSizes.get(buffer);
  if (size === undefined) byteSizes.set(buffer, (size = buffer.size));
  return size;
}

/**
 * A buffer of at least `byteLength` bytes with {@link POOLED_USAGE}: a free one of its size class,
 * or a new one. Its contents are unspecified (zero only when new: see `fresh`). Call it where an
 * out-of-memory error is caught (inside a batch or `runScoped`).
 *
 * @param ctx the device
 * @param byteLength bytes needed
 * @returns the buffer (its `size` is the class size) and whether it was just created (then zeroed)
 * @throws TargetUnavailableError when the size exceeds the device's `maxBufferSize`
 * @example
 * const { buffer } = takeBuffer(ctx, n * 4);
 * // … use it in gpu work …
 * releaseBuffer(ctx, buffer);
 */
export function takeBuffer(ctx: GpuContext, byteLength: number): { buffer: GPUBuffer; fresh: boolean } {
  const pool = poolOf(ctx);
  armIdle(pool);
  // Beyond the largest class that fits, take the exact size rather than fail.
  let size = sizeClass(byteLength);
  if (size > ctx.limits.maxBufferSize) size = Math.max(4, Math.ceil(byteLength / 4) * 4);
  if (size > ctx.limits.maxBufferSize) {
    throw new TargetUnavailableError(
      `an array of ${byteLength} bytes does not fit in one buffer on this GPU (maxBufferSize is ${ctx.limits.maxBufferSize} bytes on ` +
        `${ctx.adapterInfo.description || ctx.adapterInfo.vendor}): split the work, or use target 'cpu' or 'parallel'`,
    );
  }
  const list = pool.free.get(size);
  const reused = list?.pop();
  if (reused) {
    pool.freeBytes -= size;
    pool.stats.freeBytes = pool.freeBytes;
    pool.stats.reused++;
    pool.takenBytes += size;
    return { buffer: reused, fresh: false };
  }
  pool.stats.created++;
  const buffer = ctx.device.createBuffer({ size, usage: POOLED_USAGE() });
  if (poolLimitBytes > 0 && pool.takenBytes >= poolLimitBytes) pool.pressure = true;
  pooledBuffers.add(buffer);
  pool.heldBytes += size;
  pool.takenBytes += size;
  reportHeldBytes(pool);
  return { buffer, fresh: true };
}

/** Buffers created by a pool and not destroyed: their bytes are in its `heldBytes`. */
const pooledBuffers = new WeakSet<GPUBuffer>();

/** Destroys a buffer, and stops counting it if it is one of the pool's. */
function destroyBuffer(pool: Pool | undefined, buffer: GPUBuffer): void {
  if (pool && pooledBuffers.delete(buffer)) {
    pool.heldBytes -= buffer.size;
    reportHeldBytes(pool);
  }
  buffer.destroy();
}

/**
 * Keeps one untouched ArrayBuffer per BALLAST_BYTES of device memory the pool holds, so that V8,
 * which counts ArrayBuffers as external memory, collects when device memory held by unreachable
 * arrays grows. In Node only: a page's engine may commit such memory.
 */
function reportHeldBytes(pool: Pool): void {
  pool.stats.heldBytes = pool.heldBytes;
  pool.stats.peakHeldBytes = Math.max(pool.stats.peakHeldBytes, pool.heldBytes);
  if (!ballastAllowed()) return;
  const wanted = Math.floor(pool.heldBytes / BALLAST_BYTES);
  while (pool.ballast.length > wanted) pool.ballast.pop();
  while (pool.ballast.length < wanted) {
    try {
      pool.ballast.push(new ArrayBuffer(BALLAST_BYTES));
    } catch {
      break; // no address space for it (a ulimit, a 32-bit host): report less
    }
  }
  pool.stats.reportedBytes = pool.ballast.length * BALLAST_BYTES;
}

let ballastOn: boolean | undefined;
function ballastAllowed(): boolean {
  if (ballastOn === undefined) {
    try {
      ballastOn = platform().name === 'node';
    } catch {
      ballastOn = false;
    }
  }
  return ballastOn;
}

/**
 * What a recorded call returns instead of resolving at once when the pool is under pressure (it
 * created a buffer while more than the pool limit was taken): a promise resolved after the current
 * task, during which the finalisers of arrays the garbage collector found unreachable give their
 * buffers back. Undefined otherwise.
 *
 * @param ctx the device of the call
 * @returns the promise, or undefined
 */
export function pressureYield(ctx: GpuContext): Promise<void> | undefined {
  const pool = pools.get(ctx.device);
  if (!pool?.pressure) return undefined;
  pool.pressure = false;
  pool.stats.yields++;
  return new Promise((resolve) => afterCurrentTask(resolve));
}

/**
 * Gives a buffer from {@link takeBuffer} back. Work already recorded or submitted that uses it
 * still runs correctly (see the file comment); the caller must not use it afterwards.
 *
 * @param ctx the device it was taken from (a buffer of a device that is gone is dropped)
 * @param buffer the buffer
 */
export function releaseBuffer(ctx: GpuContext, buffer: GPUBuffer): void {
  const pool = pools.get(ctx.device);
  const size = bufferBytes(buffer);
  // (A pool's own buffers have its usage: only another buffer's is read from WebGPU.)
  const pooled = pooledBuffers.has(buffer);
  if (pool && pooled) pool.takenBytes -= size;
  if (!pool || (!pooled && buffer.usage !== POOLED_USAGE()) || size !== sizeClass(size) || pool.freeBytes + size > poolLimitBytes) {
    if (pool) pool.stats.dropped++;
    // Work recorded but not submitted may use it: submit that before destroying it.
    flushChain(ctx.device);
    destroyBuffer(pool, buffer);
    return;
  }
  // Kept without submitting the open batch (a submission per release made a chain of fresh
  // outputs 3.5× slower on an H100): the batch may still use it, and the next user's commands come
  // after it in the same batch or a later one. Only a host write (`queue.writeBuffer`) would
  // overtake the open batch, so whoever writes a taken buffer from the host submits the open
  // batch first (dispatch.ts, writeToBuffer).

  const list = pool.free.get(size);
  if (list) list.push(buffer);
  else pool.free.set(size, [buffer]);
  pool.freeBytes += size;
  pool.stats.freeBytes = pool.freeBytes;
  pool.stats.kept++;
}

/**
 * Destroys every free buffer of the device's pool now (buffers in use are not affected).
 *
 * @param ctx the device
 */
export function trimBufferPool(ctx: GpuContext): void {
  const pool = pools.get(ctx.device);
  if (pool) emptyPool(pool);
}

function emptyPool(pool: Pool): void {
  flushChain(pool.device);
  for (const list of pool.free.values()) for (const b of list) destroyBuffer(pool, b);
  pool.free.clear();
  pool.freeBytes = pool.stats.freeBytes = 0;
}

function armIdle(pool: Pool): void {
  pool.idle.touch(POOL_IDLE_MS);
}

/**
 * Sets how many bytes of free buffers the pool of each device may keep.
 *
 * @param bytes a number ≥ 0; 0 disables caching
 * @default 1 GiB
 * @example
 * setBufferPoolLimit(4 * 2 ** 30); // keep up to 4 GiB of free buffers for reuse
 */
export function setBufferPoolLimit(bytes: number): void {
  if (!(bytes >= 0)) throw new ArgumentError(`setBufferPoolLimit: expected a number of bytes >= 0, got ${bytes}`);
  poolLimitBytes = bytes;
}

/**
 * The pool's counters for a device (a copy).
 *
 * @example
 * const { reused } = bufferPoolStats(await acquireDevice());
 */
export function bufferPoolStats(ctx: GpuContext): BufferPoolStats {
  const pool = pools.get(ctx.device);
  return pool ? { ...pool.stats } : { created: 0, reused: 0, kept: 0, dropped: 0, freeBytes: 0, yields: 0, heldBytes: 0, peakHeldBytes: 0, reportedBytes: 0 };
}
