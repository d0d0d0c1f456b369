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
 *
 * Reductions and other gpu code (issue 12) take and give buffers with {@link takeBuffer} /
 * {@link releaseBuffer}.
 */
import { ArgumentError, TargetUnavailableError } from '../../errors.js';
import { cancelTimeout, type TimerHandle, unrefTimeout } from '../../platform/platform.js';
import { flushChain } from './chain.js';
import type { GpuContext } from './device.js';
import type { GPUBuffer, GPUDevice } from './webgpu-types.js';

/** Usage of every pooled buffer: bindable, copyable both ways. */
export const POOLED_USAGE = (): number => GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST;
/** The pool is emptied after this long without a `takeBuffer`. */
export const POOL_IDLE_MS = 1000;
const MIN_CLASS_BYTES = 256;

let poolLimitBytes = 2 ** 30;

interface Pool {
  readonly device: GPUDevice;
  /** Free buffers by class size. */
  readonly free: Map<number, GPUBuffer[]>;
  freeBytes: number;
  idleTimer: TimerHandle | undefined;
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
}

const pools = new WeakMap<GPUDevice, Pool>();

function poolOf(ctx: GpuContext): Pool {
  let pool = pools.get(ctx.device);
  if (!pool) {
    const created: Pool = {
      device: ctx.device,
      free: new Map(),
      freeBytes: 0,
      idleTimer: undefined,
      stats: { created: 0, reused: 0, kept: 0, dropped: 0, freeBytes: 0 },
    };
    pool = created;
    pools.set(ctx.device, created);
    // A lost or released device takes its buffers with it: forget them.
    void ctx.device.lost.then(() => {
      if (created.idleTimer) cancelTimeout(created.idleTimer);
      created.free.clear();
      created.freeBytes = created.stats.freeBytes = 0;
    });
  }
  return pool;
}

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
  for (const step of [1, 1.25, 1.5, 1.75, 2]) {
    const size = power * step;
    if (size >= n) return Math.ceil(size / 4) * 4;
  }
  return Math.ceil(n / 4) * 4;
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
    return { buffer: reused, fresh: false };
  }
  pool.stats.created++;
  return { buffer: ctx.device.createBuffer({ size, usage: POOLED_USAGE() }), fresh: true };
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
  if (!pool || buffer.usage !== POOLED_USAGE() || buffer.size !== sizeClass(buffer.size) || pool.freeBytes + buffer.size > poolLimitBytes) {
    if (pool) pool.stats.dropped++;
    // Work recorded but not submitted may use it: submit that before destroying it.
    flushChain(ctx.device);
    buffer.destroy();
    return;
  }
  // Kept without submitting the open batch (a submission per release made a chain of fresh
  // outputs 3.5× slower on an H100): the batch may still use it, and the next user's commands come
  // after it in the same batch or a later one. Only a host write (`queue.writeBuffer`) would
  // overtake the open batch, so whoever writes a taken buffer from the host submits the open
  // batch first (dispatch.ts, writeToBuffer).

  const list = pool.free.get(buffer.size);
  if (list) list.push(buffer);
  else pool.free.set(buffer.size, [buffer]);
  pool.freeBytes += buffer.size;
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
  for (const list of pool.free.values()) for (const b of list) b.destroy();
  pool.free.clear();
  pool.freeBytes = pool.stats.freeBytes = 0;
}

function armIdle(pool: Pool): void {
  // Restarted by hand rather than with Node's `refresh()`, which a page's timers lack.
  if (pool.idleTimer) cancelTimeout(pool.idleTimer);
  pool.idleTimer = unrefTimeout(() => {
    pool.idleTimer = undefined;
    emptyPool(pool);
  }, POOL_IDLE_MS);
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
  return pool ? { ...pool.stats } : { created: 0, reused: 0, kept: 0, dropped: 0, freeBytes: 0 };
}
