/**
 * Runs a call on arrays outside Wasm memory ("foreign" arrays) in cache-sized blocks of its loop:
 * each block's bytes of every operands operand are copied into a small scratch area of the Wasm
 * memory, the kernel runs there, and the bytes of the outputs go back — before the next block.
 *
 * Copying whole arrays in and out (the simple way) moves every byte through DRAM two more times
 * than the kernel itself does; a memory-bound kernel (SAXPY) then ran 5–6× slower than Numba's
 * single pass. In blocks of a few hundred KiB, the copy in reads the operands array once (the
 * kernel's own pass), the kernel reads and writes the scratch in cache, and the copy out writes
 * the operands array once: DRAM sees one pass, as for a kernel on the data where it lies.
 *
 * The blocks are staged in a memory of the calling thread's own, not the shared one (memory.ts):
 * V8 copies to and from a SharedArrayBuffer with relaxed atomic word moves, measured 17 GB/s
 * against 28 GB/s for a plain memcpy between ArrayBuffers (2-core EPYC, 256 KiB blocks), and the
 * copies are most of the time of a memory-bound kernel. The kernel is compiled a second time for
 * that memory (engine.ts, `privateKernelFor`); operands that lie in the shared memory are staged
 * like the others.
 *
 * That memory is never grown: where a block needs more room, a larger memory replaces it and the
 * kernels are instantiated again over the new one. Growing a non-shared memory detaches its old
 * buffer, and the first ArrayBuffer detached in a process makes V8 check every typed-array access
 * of optimized JS for detachment from then on (its "ArrayBufferDetaching" protector), deoptimizing
 * the JS code already optimized: a user's loop over typed arrays ran 1.3× slower for the rest of
 * the process after the first Wasm call on ordinary arrays (bench/js-engine-isolation.ts).
 *
 * Semantics are the whole-call staging's, which are the JS engine's:
 * - A block stages, per ArrayBuffer, the smallest byte ranges that hold everything the block's
 *   iterations can touch of each operand (loop steps, core extents, either sign of stride);
 *   ranges that overlap are merged into one, so operands that alias (in place, overlapping views)
 *   alias in the scratch exactly as in memory, and the kernel sees, per block, the bytes that the
 *   earlier blocks wrote back. Bytes of a range that the kernel does not write go back unchanged.
 * - Outputs that a block writes whole (a contiguous vectorize output; a contiguous per-row output
 *   that the kernel writes whole before reading it, compiler/passes/output-coverage.ts) are not
 *   copied in, unless another operand shares their range.
 * - A contiguous output the call allocated itself (`fresh`: zeros until a block writes it back, and
 *   no two blocks' ranges of it overlap) is cleared in the scratch rather than copied in: reading a
 *   new array's untouched pages maps them once and writing the results back faults them again.
 * - An error in a block (an index out of bounds): earlier blocks are written back; the failing
 *   block is run again from the arrays' current contents with every range copied in, and what it
 *   wrote before the error goes back — exactly what the JS engine leaves written — before the
 *   error is thrown.
 */
import type { TypedArray } from '../../../dtypes.js';
import { DTYPES } from '../../../dtypes.js';
import type { TypedKernel } from '../../../compiler/ir.js';
import { isArrayType } from '../../../compiler/ir.js';
import { analyseCoverage } from '../../../compiler/passes/output-coverage.js';
import type { CallPlan } from '../../../plan.js';
import type { RunnerArgs } from '../memory-layout.js';
import { buffer as sharedBuffer, isInWasmMemory } from './memory.js';
import { driver, type DriveSpec, type WasmRun } from './runner.js';
import { type WasmMemory, WebAssemblyApi } from './wasm-api.js';

/**
 * Bytes staged per block, all operands together. SAXPY over 16.7 M float32 on ordinary arrays,
 * medians in one process: 2-core EPYC 256 KiB 17.1 ms, 512 KiB 17.0, 1 MiB 15.3, 2 MiB 15.7,
 * whole arrays 20; 16-core Xeon (2 MiB L2) 128 KiB 27.3, 256 KiB 25.2, 512 KiB 24.6, 1 MiB 24.5,
 * 2 MiB 30.2, 4 MiB 34.3. Smaller blocks pay a fixed cost per block (views, `drive`, copies).
 */
const DEFAULT_BLOCK_BYTES = 1024 * 1024;
let blockBytes = DEFAULT_BLOCK_BYTES;

/** Bytes of operands staged per block (for `explain`). */
export function blockStagingBytes(): number {
  return blockBytes;
}

/** Staging a block larger than this (a huge inner loop dimension) is left to whole-array staging, so the private memory stays small. */
const MAX_PRIVATE_BYTES = 64 * 1024 * 1024;
const PAGE = 65536;

/** A kernel compiled for the private memory: its drive spec, bytes of scratch for local arrays, and its entry over a given memory. */
export interface BlockKernel {
  readonly spec: DriveSpec;
  readonly scratchBytes: number;
  /** The kernel's entry instantiated over `memory` (the private memory as it is now: see `privateMemoryOf`). */
  runIn(memory: WasmMemory): WasmRun;
}

let privateMemory: WasmMemory | undefined;

/**
 * The calling thread's private memory (not shared), with room for at least `bytes`: replaced by a
 * larger one where it has less, never grown (see the module comment); undefined where no memory
 * that large can be made.
 */
function privateMemoryOf(bytes: number): WasmMemory | undefined {
  const have = privateMemory?.buffer.byteLength ?? 0;
  if (bytes <= have) return privateMemory;
  try {
    // At least twice the old size, so that a few replacements reach any size a process needs. An
    // old memory lives on while a kernel instantiated over it does (until that kernel next runs in
    // blocks, or is collected): at most the sum of the smaller sizes, less than the new one.
    const pages = Math.max(Math.ceil(bytes / PAGE), (2 * have) / PAGE, 16);
    privateMemory = new WebAssemblyApi.Memory({ initial: pages, maximum: pages });
  } catch {
    return undefined;
  }
  return privateMemory;
}

/** One operand's part in a call: where its element 0 is, how its reach grows along loop dimension 0. */
interface Reach {
  readonly operand: number;
  /** Its buffer; for arrays in the shared Wasm memory, the memory's newest buffer (arrays made before a `grow` view older buffer objects of the same memory, and may alias). */
  readonly source: ArrayBufferLike;
  /** Byte address of the operand's element 0 in its buffer. */
  readonly origin: number;
  /** Bytes per step of loop dimension 0. */
  readonly step0: number;
  /** Lowest and highest byte offsets from an iteration's base that the other loop dimensions and the core reach (the last byte excluded). */
  readonly below: number;
  readonly above: number;
  readonly output: boolean;
  /** A block writes every byte of this operand's range (see the module comment). */
  readonly overwritten: boolean;
  /** Its range holds zeros until its block writes it back: cleared in the scratch, not copied in. */
  readonly zeroed: boolean;
}

const coveredOutputs = new WeakMap<TypedKernel, Map<number, boolean>>();

/** Whether a per-row kernel writes 1-D parameter `p` whole before reading it, whatever its length. */
function writesRowWhole(kernel: TypedKernel, p: number): boolean {
  let byParam = coveredOutputs.get(kernel);
  if (!byParam) coveredOutputs.set(kernel, (byParam = new Map()));
  let covered = byParam.get(p);
  if (covered === undefined) {
    const t = kernel.params[p]?.type;
    // Written whole for a length of 2³⁰ means by a loop up to the row's length: for any length.
    const c = t && isArrayType(t) && t.ndim === 1 ? analyseCoverage(kernel, [p], 2 ** 30) : undefined;
    covered = c !== undefined && c.writesAll && c.memoryReads.size === 0;
    byParam.set(p, covered);
  }
  return covered;
}

/** The reach of each array operand, or undefined where a block cannot be described (an empty core). */
function reaches(plan: CallPlan, args: RunnerArgs): Reach[] | undefined {
  const shape = args.loopShape;
  const out: Reach[] = [];
  for (let i = 0; i < plan.operands.length; i++) {
    const o = plan.operands[i]!;
    if (o.scalar !== undefined) continue;
    const data = o.data as TypedArray;
    const b = DTYPES[o.dtype].bytes;
    let below = 0;
    let above = b;
    const strides = args.loopStrides[i]!;
    for (let q = 1; q < shape.length; q++) {
      const d = (shape[q]! - 1) * strides[q]! * b;
      if (d < 0) below += d;
      else above += d;
    }
    for (let a = 0; a < o.coreShape.length; a++) {
      if (o.coreShape[a] === 0) return undefined;
      const d = (o.coreShape[a]! - 1) * o.coreStrides[a]! * b;
      if (d < 0) below += d;
      else above += d;
    }
    const output = i >= plan.nin;
    const step0 = strides[0]! * b;
    const contiguous = shape.length === 1 && (plan.kind === 'vectorize'
      ? strides[0] === 1
      : o.coreShape.length === 1 && o.coreStrides[0] === 1 && strides[0] === o.coreShape[0]);
    const contiguousRows = contiguous && (plan.kind === 'vectorize' || writesRowWhole(plan.kernel, i));
    out.push({
      operand: i,
      source: isInWasmMemory(data) ? sharedBuffer() : data.buffer,
      origin: data.byteOffset + o.offset * b,
      step0,
      below,
      above,
      output,
      overwritten: output && contiguousRows,
      zeroed: output && contiguous && !contiguousRows && o.fresh === true,
    });
  }
  return out;
}

/** A byte range of one buffer staged for a block: the operands whose reach it holds. */
interface Range {
  source: ArrayBufferLike;
  lo: number;
  hi: number;
  copyIn: boolean;
  /** Cleared in the scratch instead of copied in (an allocated output's zeros). */
  zeroIn: boolean;
  copyOut: boolean;
  staged: number;
}

/**
 * Runs the whole loop of a plan whose arrays are partly or wholly outside Wasm memory, in blocks
 * (see the module comment).
 *
 * @returns false, having run nothing, where the call cannot be run in blocks (an empty core, no
 *   loop dimension) or the Wasm memory has no room for the scratch: the caller then stages whole
 *   arrays, or runs the JS engine.
 */
export function runInBlocks(plan: CallPlan, args: RunnerArgs, kernel: BlockKernel): boolean {
  const shape = args.loopShape;
  if (shape.length === 0) return false;
  const operands = reaches(plan, args);
  if (!operands) return false;
  const rows = shape[0]!;
  let inner = 1;
  for (let q = 1; q < shape.length; q++) inner *= shape[q]!;
  if (rows === 0 || inner === 0) return true;
  let perStep = 0;
  let fixed = 0;
  for (const r of operands) {
    perStep += Math.abs(r.step0);
    fixed += r.above - r.below + 32; // + alignment
  }
  const steps = perStep === 0 ? rows : Math.max(1, Math.min(rows, Math.floor(Math.max(blockBytes - fixed, 0) / perStep)));
  const scratchBytes = (steps - 1) * perStep + fixed;
  // The private memory: the kernel's local arrays at 16, then the block's staged ranges.
  const scratch = 16 + Math.ceil(kernel.scratchBytes / 16) * 16;
  const privateMemory = scratch + scratchBytes > MAX_PRIVATE_BYTES ? undefined : privateMemoryOf(scratch + scratchBytes);
  if (!privateMemory) return false;
  const memory = new Uint8Array(privateMemory.buffer);

  const sources = new Map<ArrayBufferLike, Uint8Array>();
  for (const r of operands) if (!sources.has(r.source)) sources.set(r.source, new Uint8Array(r.source));
  const blockShape = [...shape];
  const blockArgs: RunnerArgs = { ...args, loopShape: blockShape };
  const runBlock = driver(kernel.spec, blockArgs, kernel.runIn(privateMemory), 16);
  const addresses = new Array<number>(plan.operands.length);
  const lo = new Array<number>(operands.length);
  const hi = new Array<number>(operands.length);
  const order = operands.map((_, k) => k);
  // Buffers in the order of their first operand; ranges sort by buffer, then by address.
  const rank = operands.map((r) => operands.findIndex((o) => o.source === r.source));
  const rangeOf = new Array<Range>(operands.length);
  const ranges: Range[] = [];
  // Range objects reused from block to block. The loop allocates nothing of its own per block
  // (beside the views it copies through): short-lived objects per block, beside a fresh output's
  // new external memory, set V8 off on more full collections
  // (bench/results/ordinary-arrays-cpu-engines-intel-xeon-2c.md).
  const spare: Range[] = [];
  for (let a0 = 0; a0 < rows; a0 += steps) {
      const count = Math.min(steps, rows - a0);
      blockShape[0] = count;
      // Each operands operand's bytes for iterations a0 … a0+count−1, then merged per buffer where they overlap.
      for (let k = 0; k < operands.length; k++) {
        const r = operands[k]!;
        const first = r.origin + a0 * r.step0;
        const last = first + (count - 1) * r.step0;
        lo[k] = Math.min(first, last) + r.below;
        hi[k] = Math.max(first, last) + r.above;
      }
      sortByPlace(order, rank, lo);
      ranges.length = 0;
      for (let o = 0; o < order.length; o++) {
        const k = order[o]!;
        const r = operands[k]!;
        const last = ranges[ranges.length - 1];
        if (last && last.source === r.source && lo[k]! < last.hi) {
          last.hi = Math.max(last.hi, hi[k]!);
          last.copyIn = true; // shared by two operands: what one does not write, the other may read
          last.zeroIn = false;
          last.copyOut ||= r.output;
        } else {
          const g = spare[ranges.length] ?? (spare[ranges.length] = { source: r.source, lo: 0, hi: 0, copyIn: false, zeroIn: false, copyOut: false, staged: 0 });
          g.source = r.source;
          g.lo = lo[k]!;
          g.hi = hi[k]!;
          g.copyIn = !r.overwritten && !r.zeroed;
          g.zeroIn = r.zeroed;
          g.copyOut = r.output;
          ranges.push(g);
        }
        rangeOf[k] = ranges[ranges.length - 1]!;
      }
      let cursor = scratch;
      for (let q = 0; q < ranges.length; q++) {
        const g = ranges[q]!;
        // Keep each range's alignment modulo 16 (vector loads and stores of the kernel stay aligned as they are in memory).
        cursor = ((cursor + 15) & ~15) + (g.lo & 15);
        g.staged = cursor;
        cursor += g.hi - g.lo;
        if (g.copyIn) memory.set(sources.get(g.source)!.subarray(g.lo, g.hi), g.staged);
        else if (g.zeroIn) memory.fill(0, g.staged, g.staged + (g.hi - g.lo));
      }
      for (let k = 0; k < operands.length; k++) {
        const g = rangeOf[k]!;
        addresses[operands[k]!.operand] = g.staged + (operands[k]!.origin + a0 * operands[k]!.step0 - g.lo);
      }
      try {
        runBlock(addresses, 0, count * inner);
      } catch (error) {
        // Outputs not copied in hold stale scratch bytes, and the others hold this block's partial
        // writes: run the block again from the arrays (unchanged by it) with every range copied in,
        // so that what goes back is what the JS engine writes before the error.
        for (const g of ranges) memory.set(sources.get(g.source)!.subarray(g.lo, g.hi), g.staged);
        try {
          runBlock(addresses, 0, count * inner);
        } catch (again) {
          copyBack(ranges, sources, memory);
          throw again;
        }
        copyBack(ranges, sources, memory);
        throw error;
      }
      copyBack(ranges, sources, memory);
  }
  return true;
}

function copyBack(ranges: readonly Range[], sources: ReadonlyMap<ArrayBufferLike, Uint8Array>, memory: Uint8Array): void {
  for (let q = 0; q < ranges.length; q++) {
    const g = ranges[q]!;
    if (g.copyOut) sources.get(g.source)!.set(memory.subarray(g.staged, g.staged + g.hi - g.lo), g.lo);
  }
}

/**
 * Sorts operand indices by buffer (`rank`), then by the block's first byte (`lo`), in place and
 * stably: an insertion sort over a handful of operands, which allocates nothing (see `spare`).
 */
function sortByPlace(order: number[], rank: readonly number[], lo: readonly number[]): void {
  for (let i = 1; i < order.length; i++) {
    const k = order[i]!;
    let j = i - 1;
    while (j >= 0 && (rank[order[j]!]! > rank[k]! || (rank[order[j]!]! === rank[k]! && lo[order[j]!]! > lo[k]!))) {
      order[j + 1] = order[j]!;
      j--;
    }
    order[j + 1] = k;
  }
}

/**
 * Hooks for tests: not part of the public API.
 * @internal
 */
export const __testing = {
  /** Sets the bytes staged per block (tests use a few bytes, so small calls run in many blocks); undefined restores the default. */
  setBlockBytes(bytes: number | undefined): void {
    blockBytes = bytes ?? DEFAULT_BLOCK_BYTES;
  },
  blockBytes: (): number => blockBytes,
  /** The private memory as it is now (undefined before the first call in blocks). */
  privateMemory: (): WasmMemory | undefined => privateMemory,
};
