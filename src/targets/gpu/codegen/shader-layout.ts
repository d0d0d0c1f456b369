/**
 * What a generated shader is specialised on — everything about a call that is compiled in — and
 * the layout of the params buffer that carries the rest (sizes, offsets, strides, JS scalars).
 *
 * Two calls with equal `ShaderLayout`s (and kernel keys) share one pipeline; `layoutKey` is the
 * cache key. Sizes stay out of the layout (they are params) except a staged operand's core shape,
 * which sizes its workgroup tile.
 */
import type { DType } from '../../../dtypes.js';

/** One storage buffer the shader reads or writes, possibly split over several bindings. */
export interface BindingLayout {
  /** What its elements are; 8- and 16-bit types and bool are packed four or two to a u32 word. */
  readonly dtype: DType;
  /** Written by the kernel (an output, or an input updated in place). */
  readonly writable: boolean;
  /** Storage bindings it is split into: more than one beyond `maxStorageBufferBindingSize`. */
  readonly chunks: number;
  /** Each chunk holds 2^chunkShift u32 words (a power of two, so the chunk is a shift away). */
  readonly chunkShift: number;
}

/** How an operand moves along a one-dimensional loop. */
export type LoopStep = 'broadcast' | 'unit' | 'strided';

export interface OperandLayout {
  /** The binding it lives in, or undefined for a JS scalar (its value is a param). */
  readonly binding: number | undefined;
  /** With a loop of rank 1: how its element offset follows the loop index. */
  readonly step: LoopStep;
  /** Per core axis: whether the stride is 1 (so no multiplication is emitted). */
  readonly coreUnit: readonly boolean[];
  /** The workgroup tile that stages its rows (coalescing.ts), if any. */
  readonly tile: number | undefined;
}

/** A workgroup-memory tile holding `workgroupSize` consecutive rows of one binding. */
export interface TileLayout {
  readonly binding: number;
  readonly dtype: DType;
  /** The core shape of each row (compiled in: it sizes the tile). */
  readonly coreShape: readonly number[];
  /** Words between rows in the tile: the row's size, +1 when even (no bank conflicts). */
  readonly pitch: number;
  /**
   * How the tile starts: `load` copies the rows in (inputs, and outputs updated in place);
   * `zero` relies on WebGPU zero-filling workgroup memory (outputs known to hold zeros); `track`
   * keeps a written flag per element (other outputs): reads of elements not yet written go to
   * memory, and only written elements are stored back.
   */
  readonly init: 'load' | 'zero' | 'track';
  /** Write the tile back. */
  readonly store: boolean;
  /**
   * Write it back as 4-element vectors (one 16-byte store per invocation and step instead of
   * four): an output-only tile of zeros whose rows' span starts on a 16-byte boundary and whose
   * rows are a multiple of 4 elements, so no vector straddles two workgroups' rows.
   */
  readonly wide: boolean;
}

export interface ShaderLayout {
  readonly kind: 'vectorize' | 'guvectorize';
  /** Rank of the loop after merging dimensions that are contiguous for every operand. */
  readonly loopRank: number;
  /** Per operand: the number of core dimensions (its params slots depend on it). */
  readonly coreRanks: readonly number[];
  readonly operands: readonly OperandLayout[];
  readonly bindings: readonly BindingLayout[];
  readonly tiles: readonly TileLayout[];
  readonly workgroupSize: number;
  readonly boundsCheck: boolean;
}

/** The cache key of a layout. */
export function layoutKey(layout: ShaderLayout): string {
  return JSON.stringify(layout);
}

/** Where each value lives in the params buffer (an `array<u32>`), by slot. */
export interface ParamSlots {
  /** Total number of loop iterations (invocations that do work). */
  readonly loopSize: number;
  readonly loopShape: readonly number[];
  readonly operands: readonly {
    readonly offset: number;
    readonly loopStrides: readonly number[];
    readonly coreShape: readonly number[];
    readonly coreStrides: readonly number[];
    /** A JS scalar's bits (f32, i32 or u32; bool as 0 or 1). */
    readonly scalar: number;
  }[];
  /**
   * A word that is always 0, read by the shader so that its float constants are unknown to the
   * driver's optimiser (wgsl-support.ts, `js_const`). Last, so the other slots keep their places.
   */
  readonly opaqueZero: number;
  readonly count: number;
}

/**
 * Params slots for a loop of rank `loopRank` and operands with `coreRanks` core dimensions. Every
 * value has a slot whether or not the shader reads it, so the layout depends on ranks only.
 *
 * @example
 * paramSlots(1, [0, 1]).operands[1].coreShape; // [8]
 */
export function paramSlots(loopRank: number, coreRanks: readonly number[]): ParamSlots {
  let next = 0;
  const take = (n: number) => Array.from({ length: n }, () => next++);
  const loopSize = take(1)[0]!;
  const loopShape = take(loopRank);
  const operands = coreRanks.map((c) => ({
    offset: take(1)[0]!,
    loopStrides: take(loopRank),
    coreShape: take(c),
    coreStrides: take(c),
    scalar: take(1)[0]!,
  }));
  const opaqueZero = take(1)[0]!;
  return { loopSize, loopShape, operands, opaqueZero, count: next };
}

/**
 * Binding numbers: 0 params, 1 the bounds-check record (when checking), then every chunk, then the
 * kernel's lookup tables (compiler/tables.ts), one read-only binding each.
 */
export function bindingNumbers(layout: ShaderLayout, tableCount = 0): { params: number; oob: number | undefined; chunks: number[][]; tables: number[] } {
  let next = layout.boundsCheck ? 2 : 1;
  const chunks = layout.bindings.map((b) => Array.from({ length: b.chunks }, () => next++));
  const tables = Array.from({ length: tableCount }, () => next++);
  return { params: 0, oob: layout.boundsCheck ? 1 : undefined, chunks, tables };
}

/** Elements per u32 word: 4 for 8-bit types and bool, 2 for 16-bit, 1 otherwise. */
export function elementsPerWord(dtype: DType): 1 | 2 | 4 {
  switch (dtype) {
    case 'bool': case 'int8': case 'uint8': case 'uint8c': return 4;
    case 'int16': case 'uint16': return 2;
    case 'int32': case 'uint32': case 'float32': case 'int64': case 'uint64': case 'float64': return 1;
    default: {
      const never: never = dtype;
      throw new Error(`internal: no packing for ${String(never)}`);
    }
  }
}
