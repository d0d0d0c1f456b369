/**
 * `ufunc/zarr`: ufunc calls over Zarr v3 arrays too large for memory, chunk by chunk — on this
 * machine, with the ufunc's own target, or on a cluster of workers through Redis (`cluster` option;
 * see src/cluster/).
 *
 * @example
 * import { vectorize } from 'ufunc';
 * import { createZarr, mapChunks, openZarr } from 'ufunc/zarr';
 * const scale = vectorize(['float32(float32)'], { target: 'parallel' })((x) => 2 * x);
 * const x = await openZarr('./data.zarr', 'x');
 * const y = await createZarr('./data.zarr', 'y', { shape: x.shape, chunkShape: x.chunkShape, dtype: 'float32' });
 * await mapChunks(scale, [x], y);                                    // on this machine
 * await mapChunks(scale, [x], y, { cluster: { redis: 'redis://127.0.0.1:6379' } }); // on workers
 */
import '../platform/node.js';
import type { AsyncUfunc } from '../callable.js';
import { ArgumentError } from '../errors.js';
import type { ClusterOptions } from '../cluster/client.js';
import { chunkCoords } from './chunk-grid.js';
import { type ChunkedCall, gridOf, isZarrArray, runChunk, type ScalarInput } from './run-chunk.js';
import type { ZarrArray } from './arrays.js';

export { createZarr, openZarr } from './arrays.js';
export type { CreateZarrOptions, ZarrArray } from './arrays.js';
export { ChunkError, ClusterError, DescriptorError } from '../cluster/errors.js';
export type { ClusterOptions } from '../cluster/client.js';

/** Options of `mapChunks`. */
export interface MapChunksOptions {
  /** NumPy's `where`: a bool Zarr array broadcast over the loop, or a boolean. @default true */
  readonly where?: ZarrArray | boolean;
  /**
   * On this machine: how many chunks are read, computed and written at once (memory holds about
   * this many chunks of every operand). @default 2
   */
  readonly concurrency?: number;
  /** Run the chunks on the workers of a cluster instead of here (src/cluster/client.ts). */
  readonly cluster?: ClusterOptions;
  /** Called after each chunk is written, with the chunks done and the total. */
  readonly onProgress?: (done: number, total: number) => void;
}

/**
 * Calls `ufunc` over chunked Zarr arrays, one output chunk at a time, and writes the outputs'
 * chunks. Chunks of the outputs along their loop dimensions are the units: an output's chunks must
 * hold whole core dimensions. Inputs broadcast as in any call; they may be chunked differently
 * from the outputs (a chunk reads the box it needs).
 *
 * @param ufunc - a ufunc made by `vectorize` or `guvectorize`
 * @param inputs - Zarr arrays (from `openZarr`/`createZarr`) or scalars, one per ufunc input
 * @param outputs - the output array, or one per output
 * @returns when every chunk is written
 * @throws ChunkError when the chunks do not fit the layout; the ufunc's own errors (a
 *   KernelRuntimeError names the chunk); ClusterError from a cluster
 */
export async function mapChunks(
  ufunc: AsyncUfunc,
  inputs: readonly (ZarrArray | ScalarInput)[],
  outputs: ZarrArray | readonly ZarrArray[],
  options: MapChunksOptions = {},
): Promise<void> {
  const call: ChunkedCall = { ufunc, inputs, outputs: isZarrArray(outputs) ? [outputs] : (outputs as readonly ZarrArray[]), ...(options.where !== undefined && { where: options.where }) };
  for (const [i, x] of inputs.entries()) {
    if (!isZarrArray(x) && typeof x !== 'number' && typeof x !== 'bigint' && typeof x !== 'boolean') {
      throw new ArgumentError(`Input ${i + 1} of \`mapChunks\` must be a Zarr array (from \`openZarr\` or \`createZarr\`) or a scalar; found ${typeof x}.`);
    }
  }
  const grid = gridOf(call);
  if (options.cluster) {
    const { runOnCluster } = await import('../cluster/client.js');
    await runOnCluster(call, grid, options.cluster, options.onProgress);
    return;
  }
  const concurrency = options.concurrency ?? 2;
  if (!Number.isInteger(concurrency) || concurrency < 1) throw new ArgumentError(`\`concurrency\` must be a positive integer, found ${String(concurrency)}.`);
  let next = 0;
  let done = 0;
  let failed = false;
  const lane = async (): Promise<void> => {
    while (next < grid.count && !failed) {
      const coords = chunkCoords(grid, next++);
      try {
        await runChunk(call, grid, coords);
      } catch (e) {
        failed = true;
        if (e instanceof Error) e.message = `Chunk [${coords.join(', ')}]: ${e.message}`;
        throw e;
      }
      options.onProgress?.(++done, grid.count);
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, grid.count) }, lane));
}

/**
 * A progress callback for `mapChunks` that draws a bar on a terminal (a line per 10% elsewhere).
 *
 * @example
 * await mapChunks(f, [x], y, { cluster, onProgress: progressBar() });
 */
export function progressBar(stream: NodeJS.WriteStream = process.stderr): (done: number, total: number) => void {
  const started = performance.now();
  let lastTenth = -1;
  return (done, total) => {
    const fraction = total === 0 ? 1 : done / total;
    const seconds = (performance.now() - started) / 1000;
    const text = `${done}/${total} chunks, ${(100 * fraction).toFixed(1)}%, ${seconds.toFixed(1)} s`;
    if (stream.isTTY) {
      const width = 30;
      const filled = Math.round(width * fraction);
      stream.write(`\r[${'#'.repeat(filled)}${'.'.repeat(width - filled)}] ${text}${done === total ? '\n' : ''}`);
    } else if (Math.floor(10 * fraction) > lastTenth) {
      lastTenth = Math.floor(10 * fraction);
      stream.write(`${text}\n`);
    }
  };
}
