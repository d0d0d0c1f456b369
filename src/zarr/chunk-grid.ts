/**
 * How a ufunc call over chunked arrays splits into chunk calls: the outputs' chunks along the loop
 * dimensions are the units of work, and no unit splits a core dimension. Pure arithmetic on shapes,
 * shared by the local runner and the cluster's workers, so both cut the same chunks.
 *
 * For each output chunk (its grid coordinates), the loop region is the chunk's box clipped to the
 * array; each input reads that region of its own loop dimensions — NumPy's broadcasting: aligned on
 * the right, a dimension of size 1 reads its one element — and the whole of its core dimensions.
 */
import type { Layout } from '../signature-parser/index.js';
import { ChunkError } from '../cluster/errors.js';

/** The shape and chunk shape of a chunked array. */
export interface ChunkedShape {
  readonly shape: readonly number[];
  readonly chunkShape: readonly number[];
}

/** The outputs' loop shape, their chunking along it, and the grid of chunks. */
export interface ChunkGrid {
  readonly loopShape: readonly number[];
  readonly loopChunk: readonly number[];
  /** Chunks per loop dimension. */
  readonly gridShape: readonly number[];
  /** Chunks in all. */
  readonly count: number;
}

/** A half-open range `[start, stop)` along one dimension. */
export type Range = readonly [start: number, stop: number];

/**
 * The chunk grid of a call of a ufunc with `layout` over `inputs` (undefined for a scalar input)
 * into `outputs`.
 *
 * @throws ChunkError when an output's chunks split one of its core dimensions, the outputs differ in
 *   loop shape or chunking, or an input does not broadcast to the outputs' loop shape
 */
export function chunkGrid(layout: Layout, inputs: readonly (ChunkedShape | undefined)[], outputs: readonly ChunkedShape[]): ChunkGrid {
  if (inputs.length !== layout.inputs.length) throw new ChunkError(`The ufunc takes ${layout.inputs.length} input${layout.inputs.length === 1 ? '' : 's'}; ${inputs.length} were given.`);
  if (outputs.length !== layout.outputs.length) throw new ChunkError(`The ufunc has ${layout.outputs.length} output${layout.outputs.length === 1 ? '' : 's'}; ${outputs.length} were given.`);
  let loopShape: readonly number[] | undefined;
  let loopChunk: readonly number[] | undefined;
  outputs.forEach((out, o) => {
    const core = layout.outputs[o]!.length;
    const loopNdim = out.shape.length - core;
    if (loopNdim < 0) throw new ChunkError(`Output ${o + 1} has ${out.shape.length} dimensions but the layout \`${layout.text}\` gives it ${core} core dimension${core === 1 ? '' : 's'}.`);
    for (let d = loopNdim; d < out.shape.length; d++) {
      if (out.chunkShape[d] !== out.shape[d]) {
        const fix = [...out.chunkShape.slice(0, loopNdim), ...out.shape.slice(loopNdim)];
        throw new ChunkError(
          `Output ${o + 1}'s chunks [${out.chunkShape.join(', ')}] split its core dimension ${d + 1} (size ${out.shape[d]}): a chunk must hold whole rows of the layout \`${layout.text}\`. Chunk it as [${fix.join(', ')}].`,
        );
      }
    }
    const shape = out.shape.slice(0, loopNdim);
    const chunk = out.chunkShape.slice(0, loopNdim);
    if (!loopShape) {
      loopShape = shape;
      loopChunk = chunk;
    } else if (shape.join() !== loopShape.join() || chunk.join() !== loopChunk!.join()) {
      throw new ChunkError(`Output ${o + 1} has loop shape [${shape.join(', ')}] chunked as [${chunk.join(', ')}], output 1 [${loopShape.join(', ')}] chunked as [${loopChunk!.join(', ')}]: the outputs must agree.`);
    }
  });
  inputs.forEach((input, i) => {
    if (!input) return;
    const core = layout.inputs[i]!.length;
    const loopNdim = input.shape.length - core;
    if (loopNdim < 0) throw new ChunkError(`Input ${i + 1} has ${input.shape.length} dimensions but the layout \`${layout.text}\` gives it ${core} core dimension${core === 1 ? '' : 's'}.`);
    if (loopNdim > loopShape!.length) throw new ChunkError(`Input ${i + 1} has ${loopNdim} loop dimensions, more than the outputs' ${loopShape!.length}.`);
    for (let d = 0; d < loopNdim; d++) {
      const size = input.shape[d]!;
      const target = loopShape![loopShape!.length - loopNdim + d]!;
      if (size !== 1 && size !== target) {
        throw new ChunkError(`Input ${i + 1}'s loop shape [${input.shape.slice(0, loopNdim).join(', ')}] does not broadcast to the outputs' [${loopShape!.join(', ')}] (dimension ${d + 1}: ${size} against ${target}).`);
      }
    }
  });
  const gridShape = loopShape!.map((n, d) => Math.ceil(n / loopChunk![d]!));
  return { loopShape: loopShape!, loopChunk: loopChunk!, gridShape, count: gridShape.reduce((a, b) => a * b, 1) };
}

/** The grid coordinates of chunk number `index` (C order). */
export function chunkCoords(grid: ChunkGrid, index: number): number[] {
  const coords = new Array<number>(grid.gridShape.length);
  for (let d = grid.gridShape.length - 1; d >= 0; d--) {
    coords[d] = index % grid.gridShape[d]!;
    index = Math.floor(index / grid.gridShape[d]!);
  }
  return coords;
}

/**
 * Checks chunk coordinates that came from outside (a queue) against the grid.
 *
 * @throws ChunkError when they are not integers inside the grid
 */
export function checkChunkCoords(grid: ChunkGrid, coords: unknown): readonly number[] {
  if (!Array.isArray(coords) || coords.length !== grid.gridShape.length || !coords.every((c, d) => Number.isInteger(c) && c >= 0 && c < grid.gridShape[d]!)) {
    throw new ChunkError(`Chunk ${JSON.stringify(coords)?.slice(0, 80)} is not in the grid of ${grid.gridShape.length}-dimensional chunk coordinates [${grid.gridShape.map((n) => `0..${n - 1}`).join(', ')}].`);
  }
  return coords as number[];
}

/** The loop region of the chunk at `coords`, clipped to the loop shape. */
export function loopRegion(grid: ChunkGrid, coords: readonly number[]): Range[] {
  return coords.map((c, d) => [c * grid.loopChunk[d]!, Math.min((c + 1) * grid.loopChunk[d]!, grid.loopShape[d]!)] as const);
}

/**
 * What an operand of `shape` with `coreNdim` core dimensions reads of a loop region: its own loop
 * dimensions, aligned on the right, take the region's range (a dimension of size 1 its one element);
 * its core dimensions are read whole (undefined).
 */
export function operandRegion(shape: readonly number[], coreNdim: number, region: readonly Range[]): (Range | undefined)[] {
  const loopNdim = shape.length - coreNdim;
  const out: (Range | undefined)[] = [];
  for (let d = 0; d < loopNdim; d++) {
    out.push(shape[d] === 1 ? [0, 1] : region[region.length - loopNdim + d]!);
  }
  for (let d = 0; d < coreNdim; d++) out.push(undefined);
  return out;
}
