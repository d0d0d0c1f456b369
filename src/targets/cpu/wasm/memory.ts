/**
 * The one WebAssembly memory every Wasm kernel reads and writes, and the allocator that hands out
 * arrays inside it. Wasm code reaches only its own memory: arrays allocated here (by
 * `sharedArray`, `sharedNDArray`) are used where they are, any other array is copied in and out
 * for the call.
 *
 * The memory is shared (`shared: true`): its buffer is a `SharedArrayBuffer`, so the parallel
 * target's workers use the same arrays, and growing it never detaches arrays already handed out
 * (a non-shared memory's buffer is detached on every `grow`).
 *
 * Blocks are freed when their array is garbage-collected (`FinalizationRegistry`). Hazard: a view
 * made from `array.buffer` (which is the whole memory) or `array.subarray(…)` does not keep the
 * block alive — keep the array itself while any view of it is in use.
 */

import { type WasmMemory, WebAssemblyApi } from './wasm-api.js';

const PAGE = 65536;
/** 4 GiB, the most a 32-bit Wasm memory can address; only reserved, not committed. */
const MAX_PAGES = 65536;
const ALIGN = 16;

let memory: WasmMemory | undefined;
/** Every `SharedArrayBuffer` object the memory has handed out (each `grow` makes a new one). */
const buffers = new WeakSet<ArrayBufferLike>();
let currentBuffer: SharedArrayBuffer | undefined;
/** The first byte never handed out; below it, free blocks sorted by address. */
let top = ALIGN;
/** The most bytes the allocator hands out: the whole 32-bit space, or less (tests only, see below). */
let limit = MAX_PAGES * PAGE;
const free: { address: number; size: number }[] = [];
/** Tests only (see `__testing`): reserve as if no block below `top` were free. */
let freeBlocksIgnored = false;

const registry = new FinalizationRegistry<{ address: number; size: number }>((block) => release(block.address, block.size));

/** The memory, created on first use. */
export function wasmMemory(): WasmMemory {
  if (!memory) {
    memory = new WebAssemblyApi.Memory({ initial: 16, maximum: MAX_PAGES, shared: true });
    buffer();
  }
  return memory;
}

/** The memory's current buffer (a new object after each `grow`). */
export function buffer(): SharedArrayBuffer {
  const b = wasmMemory().buffer as SharedArrayBuffer;
  if (b !== currentBuffer) {
    buffers.add(b);
    currentBuffer = b;
  }
  return b;
}

/** Whether a typed array lies in the Wasm memory (then its byte address is its `byteOffset`). */
export function isInWasmMemory(view: ArrayBufferView): boolean {
  return memory !== undefined && buffers.has(view.buffer);
}

/**
 * Reserves `bytes` bytes (16-byte aligned), growing the memory if need be. Returns the address,
 * or undefined when the memory cannot grow that far. Reused blocks are not zeroed.
 */
export function reserve(bytes: number): number | undefined {
  const size = Math.max(ALIGN, Math.ceil(bytes / ALIGN) * ALIGN);
  for (let i = 0; i < (freeBlocksIgnored ? 0 : free.length); i++) {
    const block = free[i]!;
    if (block.size < size) continue;
    const address = block.address;
    if (block.size === size) free.splice(i, 1);
    else free[i] = { address: address + size, size: block.size - size };
    return address;
  }
  const mem = wasmMemory();
  const end = top + size;
  if (end > limit) return undefined;
  const have = mem.buffer.byteLength;
  if (end > have) {
    try {
      // Grow by at least an eighth, so that many small allocations do not grow page by page.
      const pages = Math.max(Math.ceil((end - have) / PAGE), Math.ceil(have / PAGE / 8));
      mem.grow(Math.min(pages, MAX_PAGES - have / PAGE));
    } catch {
      return undefined;
    }
    if (end > mem.buffer.byteLength) return undefined;
  }
  top = end;
  return end - size;
}

/** Returns a block to the allocator, merging it with free neighbours. */
export function release(address: number, bytes: number): void {
  const size = Math.max(ALIGN, Math.ceil(bytes / ALIGN) * ALIGN);
  let lo = 0;
  let hi = free.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (free[mid]!.address < address) lo = mid + 1;
    else hi = mid;
  }
  let block = { address, size };
  const next = free[lo];
  if (next && block.address + block.size === next.address) {
    block = { address, size: size + next.size };
    free.splice(lo, 1);
  }
  const prev = free[lo - 1];
  if (prev && prev.address + prev.size === block.address) {
    free[lo - 1] = { address: prev.address, size: prev.size + block.size };
  } else {
    free.splice(lo, 0, block);
  }
  // A free block at the top goes back to the untouched space.
  const last = free[free.length - 1];
  if (last && last.address + last.size === top) {
    top = last.address;
    free.pop();
  }
}

/**
 * A zeroed typed array in the Wasm memory, freed when it is garbage-collected; undefined when the
 * memory is full (callers then allocate elsewhere).
 */
export function allocateInWasmMemory<T extends ArrayBufferView>(
  arrayType: { new (buffer: ArrayBufferLike, byteOffset: number, length: number): T; readonly BYTES_PER_ELEMENT: number },
  length: number,
): T | undefined {
  const bytes = length * arrayType.BYTES_PER_ELEMENT;
  const address = reserve(bytes);
  if (address === undefined) return undefined;
  const array = new arrayType(buffer(), address, length);
  new Uint8Array(buffer(), address, bytes).fill(0);
  registry.register(array, { address, size: bytes });
  return array;
}

/** Bytes handed out and not yet freed (for tests and diagnostics). */
export function wasmMemoryInUse(): number {
  return top - free.reduce((s, b) => s + b.size, 0) - ALIGN;
}

/**
 * Hooks for tests: not part of the public API.
 * @internal
 */
export const __testing = {
  /** Makes the allocator act as if the memory could not grow beyond `bytes` (undefined: 4 GiB). */
  limitMemory(bytes: number | undefined): void {
    limit = bytes ?? MAX_PAGES * PAGE;
  },
  /**
   * Makes the allocator act as if no freed block were free (false: as usual): with `limitMemory(top())`,
   * a memory with no room at all, whatever arrays the garbage collector has freed meanwhile.
   */
  ignoreFreeBlocks(on: boolean): void {
    freeBlocksIgnored = on;
  },
  /** The first byte never handed out. */
  top: (): number => top,
};
