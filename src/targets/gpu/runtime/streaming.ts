/**
 * Calls whose host arrays do not fit under the memory limit (`setGpuOptions({ memoryLimit })`)
 * run in chunks along their loop dimensions, each chunk an ordinary call on a slice of the loop,
 * with {@link IN_FLIGHT} chunks in flight: while the GPU runs one chunk's kernel, the next chunk's
 * inputs are being uploaded and the previous chunk's results read back. Each chunk takes its
 * device buffers from the pool and gives them back when its results are home, so a streamed call
 * holds about `memoryLimit` bytes of device memory however large its arrays are.
 *
 * So do large calls that fit ({@link chunkBudget}): a call with host outputs whose host operands
 * exceed one chunk's bytes runs the same way, so that its copies overlap each other and its
 * kernel, and its staging buffers (pinned host memory) and device buffers are those of one chunk,
 * reused from chunk to chunk, rather than as large as its arrays and created anew by each call.
 *
 * - **Where the loop is cut**: the outermost loop dimension, in slices as large as fit; when one
 *   index of it is still too large (a few long rows), each slice is cut along the next dimension,
 *   and so on. Core dimensions (guvectorize) are never cut: one row must fit.
 * - **Same answer**: each loop index is computed by the same kernel on the same elements, so the
 *   results are the unstreamed call's bit for bit. A host input that shares memory with a host
 *   output (otherwise than exactly in place) is copied first, as a chunk's results would
 *   otherwise reach the host before a later chunk has read its inputs.
 * - **Device arrays** a streamed call reads or writes stay where they are (they are bound whole,
 *   each chunk at its offset): they exist already, so they fit; only host arrays are streamed.
 *   A device array larger than the device's memory cannot be made in the first place.
 */
import { DTYPES, type TypedArray } from '../../../dtypes.js';
import { sizeOf } from '../../../layout.js';
import { type CallPlan, isDeviceResident, loopSize, type OperandView } from '../../../plan.js';
import { probes } from '../../../probes.js';
import { sizeClass } from './buffer-pool.js';
import { expectStagingInFlight } from './buffers.js';
import { flushChain } from './chain.js';
import { currentSlot, liveDevice } from './device.js';
import { getGpuOptions } from './gpu-options.js';
import { pieceTarget } from './host-copy.js';
import { type HostPlacement, placeHostOperand } from './host-operands.js';
import { trace, tracing } from './transfer-trace.js';

/**
 * Chunks in flight at once: one uploading, one in the kernel, one downloading. Each chunk's host
 * arrays take at most `memoryLimit / IN_FLIGHT` bytes of device memory.
 */
export const IN_FLIGHT = 3;

/**
 * Host operands under this many bytes are not cut into chunks for speed (two staging chunks' worth:
 * buffers.ts copies in 16 MiB pieces below 32 MiB in any case).
 */
const SMALLEST_CHUNKED_BYTES = 32 * 2 ** 20;

/**
 * How large chunks are: sized so that the largest host operand of each is copied in one piece of
 * {@link pieceTarget} bytes, above the host's memcpy threshold (host-copy.ts), and a call is cut
 * into as many chunks as that allows — more chunks overlap more of the copies with each other and
 * with the kernel — but never fewer than the memory limit needs (IN_FLIGHT chunks must fit under
 * it). SAXPY 2^28 from host arrays on an H200: 444 ms in 6 chunks of ~171 MiB pieces, 512 ms in 4
 * of 256 MiB, 612–622 ms in 16 of 64 MiB (bench/results/multigpu-nvidia-h200x2-session5.md).
 * {@link setChunkBytes} sets the most host-operand bytes of one chunk instead (undefined here: derived).
 */
let chunkBytes: number | undefined;

/**
 * Sets the most host-operand bytes of one chunk, instead of deriving it from the host's copy
 * threshold (for benchmarks comparing chunk sizes, and for tests, which make small calls run in
 * chunks).
 *
 * @param bytes a number of bytes > 0, or undefined to derive it (the default)
 * @returns the previous value
 */
export function setChunkBytes(bytes: number | undefined): number | undefined {
  const previous = chunkBytes;
  chunkBytes = bytes === undefined ? undefined : Math.max(1, bytes);
  return previous;
}

/** The chunk bytes set by {@link setChunkBytes}, or undefined (passed to the gpu workers with each part of a call). */
export function currentChunkBytes(): number | undefined {
  return chunkBytes;
}

/**
 * Device bytes the call's host operands take: each distinct host region once, in the pool's
 * size classes (what it will actually allocate).
 */
export function hostOperandBytes(plan: CallPlan): number {
  return hostOperandShares(plan).total;
}

/**
 * The part of a call for loop indices `start … start + count − 1` of dimension `dim` (the other
 * dimensions whole): the same operands, their offsets moved to the slice.
 */
export function sliceLoop(plan: CallPlan, dim: number, start: number, count: number): CallPlan {
  const loopShape = plan.loopShape.slice();
  loopShape[dim] = count;
  const operands = plan.operands.map((o): OperandView => (o.scalar !== undefined || start === 0 ? o : { ...o, offset: o.offset + start * (o.loopStrides[dim] ?? 0) }));
  const stream = plan.kernel.randomStream;
  if (stream && start > 0) {
    // Math.random() numbers loop iterations as the whole call does: a part is a run of them in C
    // order (the dimensions after `dim` are whole), so it starts `start` rows of `dim` further on.
    const k = plan.kernel.params.indexOf(stream.firstItem);
    const first = (operands[k]!.scalar as number) + start * sizeOf(plan.loopShape.slice(dim + 1));
    operands[k] = { ...operands[k]!, data: Uint32Array.of(first), scalar: first };
  }
  return { ...plan, loopShape, operands };
}

/**
 * Cuts a call into parts whose host operands take at most `budget` bytes each (see the file
 * comment); a part that cannot be cut further (one row of core dimensions) is yielded as it is.
 */
export function* loopChunks(plan: CallPlan, budget: number, dim = 0): Generator<CallPlan> {
  const bytes = hostOperandBytes(plan);
  if (bytes <= budget || dim >= plan.loopShape.length) {
    yield plan;
    return;
  }
  const n = plan.loopShape[dim]!;
  // Rough at first (broadcast operands do not shrink with the slice): parts still too large are cut again.
  let step = Math.max(1, Math.floor((n * budget) / bytes));
  // Size classes round each operand up: shrink the step until a slice fits, so that the slices
  // are alike (and so are their pooled buffers) rather than each cut again into a large and a small part.
  for (let tries = 0; tries < 8 && step > 1 && step < n; tries++) {
    const first = hostOperandBytes(sliceLoop(plan, dim, 0, step));
    if (first <= budget) break;
    step = Math.max(1, Math.floor((step * budget) / first));
  }
  // As many slices as that takes, evened out: the last is not a small one of another size class,
  // whose new buffers would join the others' in the pool (and the call's device memory).
  step = Math.ceil(n / Math.ceil(n / step));
  if (step >= n) {
    yield* loopChunks(plan, budget, dim + 1);
    return;
  }
  for (let start = 0; start < n; start += step) {
    const part = sliceLoop(plan, dim, start, Math.min(step, n - start));
    yield* loopChunks(part, budget, step === 1 ? dim + 1 : dim);
  }
}

/**
 * Whether the call must be streamed: its host operands need more than the memory limit.
 *
 * @param plan the call
 * @param limit bytes allowed (default: the `memoryLimit` option)
 */
export function needsStreaming(plan: CallPlan, limit = getGpuOptions().memoryLimit): boolean {
  // Every call asks: first a bound from the arrays' own sizes (no placements), exact only beyond it.
  let bound = 0;
  for (const o of plan.operands) if (o.scalar === undefined && !isDeviceResident(o.data)) bound += (o.data as TypedArray).byteLength;
  if (bound * 1.25 + 256 * plan.operands.length <= limit || loopSize(plan) === 0) return false;
  return hostOperandBytes(plan) > limit;
}

/**
 * The host-operand bytes of each chunk when the call is to run in chunks, else undefined: a call
 * whose host operands exceed the memory limit, and a call with host outputs (so it waits for its
 * results anyway), no `timeout` or `signal` (they apply to the call as a whole), whose host
 * operands make at least two chunks whose largest pieces are {@link pieceTarget} bytes. Chunks take
 * at most `limit / IN_FLIGHT` bytes; where the arrays allow, as many chunks as keep the pieces at
 * that size. With {@link setChunkBytes}, at most that many bytes each.
 *
 * @param plan the call
 * @param limit bytes allowed (default: the `memoryLimit` option)
 */
export function chunkBudget(plan: CallPlan, limit = getGpuOptions().memoryLimit): number | undefined {
  // Every call asks (a chain of calls on device arrays too): loops, no allocation, until it is large.
  let hostOutputs = false;
  let bound = 0;
  const { operands } = plan;
  for (let j = 0; j < operands.length; j++) {
    const o = operands[j]!;
    if (o.scalar !== undefined || isDeviceResident(o.data)) continue;
    bound += (o.data as TypedArray).byteLength;
    if (j >= plan.nin) hostOutputs = true;
  }
  if (bound === 0) return undefined;
  const maxChunk = Math.max(1, Math.floor(limit / IN_FLIGHT));
  const streamed = needsStreaming(plan, limit);
  if (!streamed && (!hostOutputs || plan.limits || plan.loopShape.length === 0 || loopSize(plan) === 0)) return undefined;
  if (chunkBytes !== undefined) {
    const budget = Math.min(maxChunk, chunkBytes);
    if (streamed) return budget;
    return bound > chunkBytes && hostOperandBytes(plan) > chunkBytes ? budget : undefined;
  }
  // Calls too small to gain from chunks return before the host's threshold is first read (a process start).
  if (!streamed && bound < SMALLEST_CHUNKED_BYTES) return undefined;
  const piece = pieceTarget();
  // Two chunks with pieces at the target need at least twice the target (a cheap test first).
  if (!streamed && bound < 2 * piece) return undefined;
  const { total, largest } = hostOperandShares(plan);
  const chunks = Math.max(Math.ceil(total / maxChunk), Math.floor(largest / piece));
  if (chunks <= 1 || plan.loopShape.length === 0) return streamed ? maxChunk : undefined;
  // The bytes of a slice of the outer dimension that makes that many chunks, in size classes as
  // loopChunks counts them (a budget of total / chunks would be cut again into smaller pieces).
  const rows = plan.loopShape[0]!;
  const slice = hostOperandBytes(sliceLoop(plan, 0, 0, Math.max(1, Math.ceil(rows / chunks))));
  return Math.max(1, Math.min(maxChunk, slice));
}

/**
 * The device bytes of the call's host operands ({@link hostOperandBytes}, in size classes) and
 * the host bytes of the largest of them.
 */
function hostOperandShares(plan: CallPlan): { total: number; largest: number } {
  const seen: HostPlacement[] = [];
  let total = 0;
  let largest = 0;
  for (const [j, o] of plan.operands.entries()) {
    if (o.scalar !== undefined || isDeviceResident(o.data)) continue;
    const p = placeHostOperand(o, plan.loopShape, j < plan.nin ? 'input' : 'output');
    if (seen.some((s) => s.data === p.data && s.low === p.low && s.high === p.high && s.mode === p.mode)) continue;
    seen.push(p);
    const bytes = p.length * DTYPES[o.dtype].bytes;
    total += bytes === 0 ? 0 : sizeClass(bytes);
    largest = Math.max(largest, bytes);
  }
  return { total, largest };
}

/**
 * Runs a call in chunks of at most `budget` bytes of host operands, IN_FLIGHT at once. Between
 * issuing two chunks it lets other work of the same turn run first: so the parts of a call split
 * across devices (multi-device.ts) issue their chunks in turn, device 0, 1, 0, 1, … rather than
 * each device waiting for another's host copies of its first chunks. The first chunk to fail stops
 * new ones from starting; the call rejects with its error once the chunks in flight have ended
 * (outputs may then be partly written, as with any failed call).
 *
 * @param plan the call
 * @param run runs one chunk on the device (the target's ordinary run)
 * @param budget host-operand bytes of one chunk ({@link chunkBudget})
 */
export async function runStreamed(plan: CallPlan, run: (part: CallPlan) => Promise<void>, budget: number): Promise<void> {
  const separated = withOverlapsCopied(plan);
  probes.streamedCall?.();
  const inFlight: Promise<void>[] = [];
  let failure: { error: unknown } | undefined;
  let index = 0;
  for (const part of loopChunks(separated, budget)) {
    while (inFlight.length >= IN_FLIGHT) await inFlight.shift()!.catch(() => {});
    if (index > 0) await Promise.resolve();
    else expectChunkStaging(part);
    if (failure) break;
    const chunk = runChunk(part, run, index++).catch((error: unknown) => {
      failure ??= { error };
    });
    inFlight.push(chunk);
    probes.streamedChunk?.(inFlight.length);
  }
  await Promise.all(inFlight);
  if (failure) throw failure.error;
}

/**
 * Tells the staging pools what chunks like `part` hold, IN_FLIGHT at once (buffers.ts), so that
 * they keep those staging buffers for the next chunks.
 */
function expectChunkStaging(part: CallPlan): void {
  const uploads: number[] = [];
  const downloads: number[] = [];
  part.operands.forEach((o, j) => {
    if (o.scalar !== undefined || isDeviceResident(o.data)) return;
    (j < part.nin ? uploads : downloads).push(placeHostOperand(o, part.loopShape, j < part.nin ? 'input' : 'output').length * DTYPES[o.dtype].bytes);
  });
  expectStagingInFlight(uploads, downloads, IN_FLIGHT);
}

/**
 * One chunk: the call, then — for a chunk whose outputs are device arrays, which returns once
 * recorded — its submission and completion, so that chunks in flight are really on the GPU and
 * the uploads of later chunks wait for buffers to come back to the pool.
 */
async function runChunk(part: CallPlan, run: (part: CallPlan) => Promise<void>, index: number): Promise<void> {
  const traced = tracing() ? { device: currentSlot(), chunk: index, bytes: hostOperandBytes(part) } : undefined;
  if (traced) trace({ kind: 'chunk-issued', t: performance.now(), ...traced });
  await run(part);
  if (part.operands.slice(part.nin).some((o) => !isDeviceResident(o.data))) {
    if (traced) trace({ kind: 'chunk-done', t: performance.now(), ...traced });
    return;
  }
  const ctx = liveDevice();
  if (ctx) {
    flushChain(ctx.device);
    await ctx.device.queue.onSubmittedWorkDone();
  }
  if (traced) trace({ kind: 'chunk-done', t: performance.now(), ...traced });
}

/**
 * The plan with each host input that shares bytes with a host output (other than the very same
 * view, an in-place call) replaced by a copy of its elements: chunks write results home while
 * later chunks still have inputs to read.
 */
export function withOverlapsCopied(plan: CallPlan): CallPlan {
  const hostOutputs = plan.operands.slice(plan.nin).filter((o) => o.scalar === undefined && !isDeviceResident(o.data));
  if (hostOutputs.length === 0) return plan;
  const sameView = (a: OperandView, b: OperandView) =>
    a.data === b.data && a.offset === b.offset && a.loopStrides.every((s, d) => s === b.loopStrides[d]) && a.coreStrides.every((s, d) => s === b.coreStrides[d]) &&
    a.coreShape.every((s, d) => s === b.coreShape[d]);
  let copied = false;
  const operands = plan.operands.map((o, j) => {
    if (j >= plan.nin || o.scalar !== undefined || isDeviceResident(o.data)) return o;
    const data = o.data as TypedArray;
    const shares = hostOutputs.some((out) => bytesIntersect(out.data as TypedArray, data) && !sameView(out, o));
    if (!shares) return o;
    copied = true;
    return { ...o, data: data.slice() as TypedArray };
  });
  return copied ? { ...plan, operands } : plan;
}

/**
 * Whether two typed arrays share bytes: not merely a buffer (two `sharedArray`s may both lie in
 * the Wasm engine's memory, apart).
 */
function bytesIntersect(a: TypedArray, b: TypedArray): boolean {
  return a.buffer === b.buffer && a.byteOffset < b.byteOffset + b.byteLength && b.byteOffset < a.byteOffset + a.byteLength;
}
