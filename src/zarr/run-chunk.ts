/**
 * One unit of a chunked call: read each input's box of one output chunk, call the ufunc on them,
 * write each output's chunk. The local runner and the cluster's workers both run this.
 */
import { type AsyncUfunc, definitionOf } from '../callable.js';
import { parseLayout } from '../signature-parser/index.js';
import { allocateBox, type Box, readBox, writeBox, type ZarrArray } from './arrays.js';
import { chunkGrid, type ChunkGrid, loopRegion, operandRegion } from './chunk-grid.js';
import type { ChunkBuffers, ChunkLease } from './chunk-buffers.js';

/** A scalar input, broadcast to every chunk. */
export type ScalarInput = number | bigint | boolean;

/** The operands of a chunked call. */
export interface ChunkedCall {
  readonly ufunc: AsyncUfunc;
  readonly inputs: readonly (ZarrArray | ScalarInput)[];
  readonly outputs: readonly ZarrArray[];
  /** NumPy's `where`: a bool (or 0/1 integer) Zarr array broadcast to the loop, or one boolean. */
  readonly where?: ZarrArray | boolean;
}

export function isZarrArray(x: unknown): x is ZarrArray {
  return typeof x === 'object' && x !== null && 'array' in x && 'chunkShape' in x && 'path' in x;
}

/** The chunk grid of a call (see chunk-grid.ts for the rules). */
export function gridOf(call: ChunkedCall): ChunkGrid {
  const layout = parseLayout(call.ufunc.layout);
  return chunkGrid(layout, call.inputs.map((x) => (isZarrArray(x) ? x : undefined)), call.outputs);
}

/** Where a chunk's time went, in ms (added to by each chunk run with it). */
export interface ChunkTimes {
  /** Reading the inputs' boxes (and the outputs' chunks under `where`). */
  readMs: number;
  /** The ufunc call (on a kernel thread: its time there, without the wait for the thread). */
  kernelMs: number;
  /** Encoding and writing the outputs' chunks. */
  writeMs: number;
}

/** The options of one chunk's kernel call: its outputs and `where`. */
export interface KernelOptions {
  readonly out: Box | Box[];
  readonly where?: Box | boolean;
}

/**
 * Runs the ufunc on one chunk's operands, filling `options.out`; resolves to the kernel's own time
 * in ms where it measured it (else the wait for it counts).
 */
export type KernelCall = (ufunc: AsyncUfunc, args: readonly (Box | ScalarInput)[], options: KernelOptions) => Promise<number | undefined>;

/** How a chunk runs. */
export interface RunChunkOptions {
  /** Added to: where the chunk's time went. */
  readonly times?: ChunkTimes;
  /** Runs the kernel (a cluster worker's runs it on its kernel thread). @default the ufunc called here */
  readonly kernel?: KernelCall;
  /** Reads chunks into shared memory and allocates outputs there, for a kernel on another thread. */
  readonly shared?: boolean;
  /** With `shared`: that memory comes from these buffers, and goes back to them once the chunk is written or failed. */
  readonly buffers?: ChunkBuffers;
}

const callHere: KernelCall = async (ufunc, args, options) => {
  await ufunc(...args, options);
  return undefined;
};

/**
 * Runs the chunk at `coords`: reads, calls, writes. An output chunk is written only after the kernel
 * ran on the whole chunk, each chunk file atomically (store.ts), so running a chunk twice writes the
 * same bytes twice.
 */
export async function runChunk(call: ChunkedCall, grid: ChunkGrid, coords: readonly number[], options: RunChunkOptions = {}): Promise<void> {
  const lease = options.shared ? options.buffers?.lease() : undefined;
  try {
    await runChunkWith(call, grid, coords, options, lease);
  } finally {
    lease?.release();
  }
}

async function runChunkWith(call: ChunkedCall, grid: ChunkGrid, coords: readonly number[], options: RunChunkOptions, lease: ChunkLease | undefined): Promise<void> {
  const { times, kernel = callHere } = options;
  const read = { shared: options.shared === true, ...(lease && { lease }) };
  const layout = parseLayout(call.ufunc.layout);
  const region = loopRegion(grid, coords);
  let t = performance.now();
  const lap = (): number => {
    const now = performance.now();
    const ms = now - t;
    t = now;
    return ms;
  };
  const args = await Promise.all(call.inputs.map((x, i) => (isZarrArray(x) ? readBox(x, operandRegion(x.shape, layout.inputs[i]!.length, region), read) : x)));
  const outRegions = call.outputs.map((o, k) => operandRegion(o.shape, layout.outputs[k]!.length, region));
  let where: Box | boolean | undefined;
  let outs: Box[];
  if (call.where !== undefined && call.where !== true) {
    // Where `where` is false an output keeps what it held: start from the stored chunk.
    where = isZarrArray(call.where) ? await readBox(call.where, operandRegion(call.where.shape, 0, region), read) : call.where;
    outs = await Promise.all(call.outputs.map((o, k) => readBox(o, outRegions[k]!, read)));
  } else {
    // A `vectorize` kernel returns each output's value at every loop index: it writes them whole. A
    // gufunc's kernel may leave part of an output unwritten, which then reads zeros, as in a new array.
    const overwritten = definitionOf(call.ufunc)?.kind === 'vectorize';
    outs = call.outputs.map((o, k) => allocateBox(o.dtype, outRegions[k]!.map((r, d) => (r ? r[1] - r[0] : o.shape[d]!)), read.shared, lease, overwritten));
  }
  const readMs = lap();
  const ownMs = await kernel(call.ufunc, args, { out: outs.length === 1 ? outs[0]! : outs, ...(where !== undefined && { where }) });
  const kernelMs = lap();
  await Promise.all(call.outputs.map((o, k) => writeBox(o, outRegions[k]!, outs[k]!)));
  if (times) {
    times.readMs += readMs;
    times.kernelMs += ownMs ?? kernelMs;
    times.writeMs += lap();
  }
}
