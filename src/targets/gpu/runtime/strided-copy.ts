/**
 * Copies between a strided view of a host array and a device buffer's elements (or the mapped
 * staging memory of a piece of them): the gather of a host input into staging memory and the
 * scatter of results out of it (host-operands.ts).
 *
 * These copies run on the JS thread of every call on sparse host views, so they must run at memory
 * speed for every element type. A loop indexing whatever typed array came is megamorphic in V8
 * (one keyed load and store site seeing nine array classes: ~9 ns an element); here elements are
 * moved as unsigned words of their width (a float32 as a Uint32Array word: the bits as they are —
 * a Float32Array load widens a signalling NaN to double and quiets it), by one loop function per
 * word width, each compiled from the same source so that each keeps its own type feedback, and
 * unit-stride rows go through `set(subarray)` (memcpy).
 */
import type { TypedArray } from '../../../dtypes.js';

/** One dimension of a copy: its extent and the element strides of the host view and of the device layout. */
export interface CopyDim {
  readonly extent: number;
  readonly host: number;
  readonly device: number;
}

/**
 * A copy's dimensions made ready to walk: dimensions that move nothing dropped, device strides
 * made positive, neighbours that both sides walk contiguously merged.
 */
export interface StridedCopy {
  /** Outer to inner; each has extent > 1, a device stride ≥ 0, and a stride ≠ 0 on at least one side. */
  readonly dims: readonly CopyDim[];
  readonly hostOffset: number;
  readonly deviceOffset: number;
  /** Device index = deviceOffset + the C-order index over `dims` (a range is then found without a walk). */
  readonly cOrderDevice: boolean;
}

/**
 * Prepares a copy between a host view and its device elements.
 *
 * Each pair (a host index, a device index) is visited once; a dimension along which neither side
 * moves (a broadcast dimension of a placement) is visited at index 0 only. One side may stay put
 * along a dimension the other moves along (a broadcast host view gathered into C order: its
 * element read once for each device element). A dimension walked backwards on the device is walked
 * forwards on both sides: the same pairs, in another order — which matters only where two pairs
 * share a host element that a scatter writes, and then only for a layout that mirrors the host's
 * (the same device element: the same value).
 *
 * @param dims the view's dimensions, outer to inner
 * @param hostOffset the view's first element in the host array
 * @param deviceOffset its first element on the device
 * @example
 * // every third element of 10, packed on the device: one dimension, host stride 3, device stride 1
 * stridedCopy([{ extent: 10, host: 3, device: 1 }], 0, 0);
 */
export function stridedCopy(dims: readonly CopyDim[], hostOffset: number, deviceOffset: number): StridedCopy {
  const merged: CopyDim[] = [];
  for (const d of dims) {
    if (d.extent <= 1 || (d.host === 0 && d.device === 0)) continue;
    let { host, device } = d;
    if (device < 0) {
      hostOffset += (d.extent - 1) * host;
      deviceOffset += (d.extent - 1) * device;
      host = -host;
      device = -device;
    }
    const last = merged[merged.length - 1];
    if (last && last.host === host * d.extent && last.device === device * d.extent) {
      merged[merged.length - 1] = { extent: last.extent * d.extent, host, device };
    } else {
      merged.push({ extent: d.extent, host, device });
    }
  }
  let step = 1;
  let cOrderDevice = true;
  for (let k = merged.length - 1; k >= 0; k--) {
    if (merged[k]!.device !== step) cOrderDevice = false;
    step *= merged[k]!.extent;
  }
  return { dims: merged, hostOffset, deviceOffset, cOrderDevice };
}

/**
 * Copies the view's elements whose device index is `from … from + into.length − 1` from `host`
 * into `into` (device element `from` at index 0).
 *
 * @param c the copy
 * @param host the host array (the view's)
 * @param into device elements, of the host array's element size
 * @param from the device index of `into[0]`
 */
export function gatherRange(c: StridedCopy, host: TypedArray, into: TypedArray, from: number): void {
  walkRange(c, words(host), words(into), from, from + into.length, false);
}

/**
 * Copies the device elements `fromDevice` (device index `from` at index 0) into the view's
 * elements of `host` that they hold; the host array's other elements are left as they are.
 *
 * @param c the copy
 * @param host the host array (the view's)
 * @param fromDevice device elements, of the host array's element size
 * @param from the device index of `fromDevice[0]`
 */
export function scatterRange(c: StridedCopy, host: TypedArray, fromDevice: TypedArray, from: number): void {
  walkRange(c, words(host), words(fromDevice), from, from + fromDevice.length, true);
}

/** Unsigned words of an element's width (8-byte elements as float64: a load and store keep its bits). */
type Words = Uint8Array | Uint16Array | Uint32Array | Float64Array;
type WordsClass = new (buffer: ArrayBufferLike, byteOffset: number, length: number) => Words;
const WORD_CLASSES: Record<number, WordsClass> = { 1: Uint8Array, 2: Uint16Array, 4: Uint32Array, 8: Float64Array };

function words(a: TypedArray): Words {
  const W = WORD_CLASSES[a.BYTES_PER_ELEMENT]!;
  return a instanceof W ? a : new W(a.buffer, a.byteOffset, a.length);
}

/**
 * Copies `rows` rows of `cols` elements: `target[to + r·toRow + c·toStep] = source[from + r·fromRow + c·fromStep]`.
 * Both arrays are of one word class (one function per class: see the file comment).
 */
type CopyRows = (target: Words, to: number, toRow: number, toStep: number, source: Words, from: number, fromRow: number, fromStep: number, rows: number, cols: number) => void;

/** Unit-stride rows at least this long are copied by `set(subarray)` (memcpy); shorter ones by the loop. */
const SET_MIN_ELEMENTS = 64;

const COPY_ROWS_PARAMS = ['target', 'to', 'toRow', 'toStep', 'source', 'from', 'fromRow', 'fromStep', 'rows', 'cols'];
const COPY_ROWS_BODY = `
  'use strict';
  if (toStep === 1 && fromStep === 1 && cols >= ${SET_MIN_ELEMENTS}) {
    for (let r = 0; r < rows; r++, to += toRow, from += fromRow) target.set(source.subarray(from, from + cols), to);
    return;
  }
  // Rows of two (a pair of columns): an inner loop entered per row cost ~3× as much an element.
  if (cols === 2) {
    for (let r = 0; r < rows; r++, to += toRow, from += fromRow) {
      target[to] = source[from];
      target[to + toStep] = source[from + fromStep];
    }
    return;
  }
  for (let r = 0; r < rows; r++, to += toRow, from += fromRow) {
    for (let c = 0, t = to, f = from; c < cols; c++, t += toStep, f += fromStep) target[t] = source[f];
  }`;

/** The same loop where code cannot be compiled at run time (a page's Content-Security-Policy): shared by every class, slower. */
function copyRowsShared(target: Words, to: number, toRow: number, toStep: number, source: Words, from: number, fromRow: number, fromStep: number, rows: number, cols: number): void {
  for (let r = 0; r < rows; r++, to += toRow, from += fromRow) {
    for (let c = 0, t = to, f = from; c < cols; c++, t += toStep, f += fromStep) target[t] = source[f]!;
  }
}

function compileCopyRows(): CopyRows {
  try {
    return new Function(...COPY_ROWS_PARAMS, COPY_ROWS_BODY) as CopyRows;
  } catch {
    return copyRowsShared;
  }
}

/** One loop function per word class, each with its own type feedback. */
const COPY_ROWS = new Map<WordsClass, CopyRows>(Object.values(WORD_CLASSES).map((W) => [W, compileCopyRows()]));

/**
 * Copies the pairs whose device index lies in `lo … hi − 1` (device element g at `device[g − lo]`),
 * host to device or, with `toHost`, device to host. The two innermost dimensions are copied as
 * blocks of rows; a block that straddles the range is clipped row by row.
 */
function walkRange(c: StridedCopy, host: Words, device: Words, lo: number, hi: number, toHost: boolean): void {
  if (hi <= lo) return;
  const copyRows = COPY_ROWS.get(host.constructor as WordsClass)!;
  const copy = (g: number, h: number, rows: number, rowDevice: number, rowHost: number, cols: number, stepDevice: number, stepHost: number) => {
    if (toHost) copyRows(host, h, rowHost, stepHost, device, g - lo, rowDevice, stepDevice, rows, cols);
    else copyRows(device, g - lo, rowDevice, stepDevice, host, h, rowHost, stepHost, rows, cols);
  };
  const { dims } = c;
  const rank = dims.length;
  if (rank === 0) {
    if (c.deviceOffset >= lo && c.deviceOffset < hi) copy(c.deviceOffset, c.hostOffset, 1, 0, 0, 1, 1, 0);
    return;
  }
  const inner = dims[rank - 1]!;
  /** The part of a row (device start g) inside the range, copied. */
  const clippedRow = (g: number, h: number) => {
    let first = 0;
    let end = inner.extent;
    if (inner.device === 0) {
      if (g < lo || g >= hi) return;
    } else {
      first = g >= lo ? 0 : Math.ceil((lo - g) / inner.device);
      end = g >= hi ? 0 : Math.min(inner.extent, Math.ceil((hi - g) / inner.device));
    }
    if (first < end) copy(g + first * inner.device, h + first * inner.host, 1, 0, 0, end - first, inner.device, inner.host);
  };
  if (rank === 1) {
    clippedRow(c.deviceOffset, c.hostOffset);
    return;
  }
  const rows = dims[rank - 2]!;
  const blockReach = (rows.extent - 1) * rows.device + (inner.extent - 1) * inner.device;
  // The blocks: one per index of the dimensions outside the two innermost, walked as an odometer.
  const outer = rank - 2;
  const index = new Array<number>(outer).fill(0);
  let g = c.deviceOffset;
  let h = c.hostOffset;
  if (c.cOrderDevice && lo > g) {
    // Device indices run in C order: start at the block that holds `lo`.
    let block = Math.floor((lo - g) / (rows.extent * inner.extent));
    for (let k = outer - 1; k >= 0 && block > 0; k--) {
      const d = dims[k]!;
      index[k] = block % d.extent;
      block = Math.floor(block / d.extent);
      g += index[k]! * d.device;
      h += index[k]! * d.host;
    }
    if (block > 0) return; // the range starts after the last element
  }
  for (;;) {
    if (c.cOrderDevice && g >= hi) return;
    if (g + blockReach >= lo && g < hi) {
      if (g >= lo && g + blockReach < hi) {
        copy(g, h, rows.extent, rows.device, rows.host, inner.extent, inner.device, inner.host);
      } else {
        for (let r = 0; r < rows.extent; r++) clippedRow(g + r * rows.device, h + r * rows.host);
      }
    }
    let k = outer - 1;
    for (; k >= 0; k--) {
      const d = dims[k]!;
      g += d.device;
      h += d.host;
      if (++index[k]! < d.extent) break;
      g -= d.extent * d.device;
      h -= d.extent * d.host;
      index[k] = 0;
    }
    if (k < 0) return;
  }
}
