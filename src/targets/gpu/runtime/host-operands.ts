/**
 * How a host operand of a call gets to the device and, for outputs, back: the part of its typed
 * array it touches is uploaded as it is (its offset and strides stay valid on the device, with the
 * offset shifted), unless the view is so sparse that gathering its elements is cheaper; results
 * come back into exactly the elements of the caller's view.
 *
 * Broadcast dimensions (stride 0) are never materialised: a `[1] → [n]` operand uploads one
 * element, and the shader reads it n times.
 */
import type { TypedArray } from '../../../dtypes.js';
import { type LoopOperandLayout, type Reach, reachOf } from '../../../layout.js';
import type { OperandView } from '../../../plan.js';

/** One dimension of a view: loop dimensions first, then core dimensions. */
interface Dim {
  readonly extent: number;
  readonly stride: number;
}

/** Where a host operand's elements go on the device. */
export interface HostPlacement extends Reach, Omit<LoopOperandLayout, 'coreShape'> {
  readonly data: TypedArray;
  /**
   * `span`: elements `low…high` of `data` are uploaded as they are. `packed`: the view's distinct
   * elements are gathered in C order (broadcast dimensions stay stride 0). `offset` and the
   * strides are the view on the device, into the device buffer.
   */
  readonly mode: 'span' | 'packed';
  /** Elements the device buffer holds. */
  readonly length: number;
  /** The host view's own offset and dimensions (for gathering and scattering). */
  readonly hostOffset: number;
  readonly dims: readonly Dim[];
  /** The device elements are exactly `data[low…high]` with no gaps (so results come back in one copy). */
  readonly dense: boolean;
}

/** How much bigger than its distinct elements a span may be and still be uploaded as is. */
const SPAN_SLACK = 2;

/**
 * Decides how a host operand is placed on the device.
 *
 * @param view the operand (not a JS scalar)
 * @param loopShape the call's loop shape (the extents of `view.loopStrides`)
 */
export function placeHostOperand(view: OperandView, loopShape: readonly number[]): HostPlacement {
  const data = view.data as TypedArray;
  const dims: Dim[] = [
    ...loopShape.map((extent, d) => ({ extent, stride: view.loopStrides[d] ?? 0 })),
    ...view.coreShape.map((extent, a) => ({ extent, stride: view.coreStrides[a] ?? 0 })),
  ];
  const reach = reachOf(dims.map((d) => d.extent), dims.map((d) => d.stride), view.offset);
  if (!reach) return emptyPlacement(view, data, dims);
  const { low, high } = reach;
  let distinct = 1;
  for (const { extent, stride } of dims) if (stride !== 0) distinct *= extent;
  const span = high - low + 1;
  if (span <= SPAN_SLACK * distinct + 64) {
    return {
      data, mode: 'span', low, high, length: span, offset: view.offset - low,
      loopStrides: view.loopStrides, coreStrides: view.coreStrides, hostOffset: view.offset, dims, dense: span === distinct,
    };
  }
  // Packed: C order over the dimensions that move; broadcast dimensions keep stride 0.
  const packedStrides = new Array<number>(dims.length).fill(0);
  let step = 1;
  for (let d = dims.length - 1; d >= 0; d--) {
    if (dims[d]!.stride === 0 || dims[d]!.extent === 1) continue;
    packedStrides[d] = step;
    step *= dims[d]!.extent;
  }
  const loopRank = loopShape.length;
  return {
    data, mode: 'packed', low, high, length: distinct, offset: 0,
    loopStrides: packedStrides.slice(0, loopRank), coreStrides: packedStrides.slice(loopRank),
    hostOffset: view.offset, dims, dense: false,
  };
}

function emptyPlacement(view: OperandView, data: TypedArray, dims: Dim[]): HostPlacement {
  return {
    data, mode: 'span', low: 0, high: -1, length: 0, offset: 0,
    loopStrides: view.loopStrides, coreStrides: view.coreStrides, hostOffset: view.offset, dims, dense: true,
  };
}

/**
 * The elements to upload for a placement (a view of the caller's array for `span`, a new array
 * for `packed`).
 */
export function uploadData(p: HostPlacement): TypedArray {
  if (p.mode === 'span') return p.data.subarray(p.low, p.high + 1);
  const packed = new (p.data.constructor as new (length: number) => TypedArray)(p.length);
  gatherInto(p, packed, 0);
  return packed;
}

/**
 * Gathers device elements `from … from + into.length − 1` of a `packed` placement (fewer where
 * the placement ends first) into `into`, a typed array of the placement's type: so a large
 * placement can be gathered a piece at a time, straight into mapped staging memory.
 *
 * @param p a placement of mode `packed` (its device elements are its distinct elements in C order)
 * @param into where the elements go, from its index 0
 * @param from the first device element
 */
export function gatherInto(p: HostPlacement, into: TypedArray, from: number): void {
  const count = Math.min(into.length, p.length - from);
  if (count <= 0) return;
  const source = p.data as Uint8Array;
  const dest = into as Uint8Array;
  const moving = movingDims(p);
  if (moving.length === 0) {
    dest[0] = source[p.hostOffset]!;
    return;
  }
  // Device strides decrease in C order: `from` splits into one index per moving dimension.
  const index = new Array<number>(moving.length);
  let host = p.hostOffset;
  let rest = from - p.offset;
  for (let k = 0; k < moving.length; k++) {
    index[k] = Math.floor(rest / moving[k]!.device);
    rest -= index[k]! * moving[k]!.device;
    host += index[k]! * moving[k]!.stride;
  }
  const last = moving.length - 1;
  const inner = moving[last]!;
  let written = 0;
  for (;;) {
    const run = Math.min(inner.extent - index[last]!, count - written);
    for (let r = 0; r < run; r++, host += inner.stride) dest[written++] = source[host]!;
    if (written >= count) return;
    // The inner dimension ran to its end: back to its start, one step along the next that moves.
    host -= inner.extent * inner.stride;
    index[last] = 0;
    for (let axis = last - 1; axis >= 0; axis--) {
      const d = moving[axis]!;
      host += d.stride;
      if (++index[axis]! < d.extent) break;
      host -= d.extent * d.stride;
      index[axis] = 0;
    }
  }
}

/**
 * Writes device results (`fromDevice`, the device buffer's elements) into the caller's array,
 * only into the elements of the view.
 */
export function scatterResults(p: HostPlacement, fromDevice: TypedArray): void {
  if (p.dense) {
    (p.data as Uint8Array).set(fromDevice as Uint8Array, p.low);
    return;
  }
  walkDistinct(p, (host, device) => ((p.data as Uint8Array)[host] = (fromDevice as Uint8Array)[device]!));
}

/** Whether every byte of the elements a placement uploads is zero (then a fresh zeroed buffer will do). */
export function isAllZero(p: HostPlacement): boolean {
  if (p.mode === 'packed' || p.length === 0) return p.length === 0;
  const bytes = new Uint8Array(p.data.buffer, p.data.byteOffset + p.low * p.data.BYTES_PER_ELEMENT, p.length * p.data.BYTES_PER_ELEMENT);
  // Words where the bytes start on a word boundary; a Uint32Array view at any other byte offset
  // throws, even an empty one (8- and 16-bit views such as `subarray(1, 4)`).
  const whole = bytes.byteOffset % 4 === 0 ? Math.floor(bytes.byteLength / 4) : 0;
  if (whole > 0) {
    const words = new Uint32Array(bytes.buffer, bytes.byteOffset, whole);
    for (let i = 0; i < words.length; i++) if (words[i] !== 0) return false;
  }
  for (let i = whole * 4; i < bytes.length; i++) if (bytes[i] !== 0) return false;
  return true;
}

/**
 * Calls `visit(hostIndex, deviceIndex)` for every element of the view, each distinct element
 * once: broadcast dimensions are walked at index 0 only.
 */
/** The dimensions along which the view moves (not broadcast, extent > 1), with their device strides. */
function movingDims(p: HostPlacement): (Dim & { device: number })[] {
  const deviceStrides = [...p.loopStrides, ...p.coreStrides];
  return p.dims.map((d, k) => ({ ...d, device: deviceStrides[k]! })).filter((d) => d.stride !== 0 && d.extent > 1);
}

function walkDistinct(p: HostPlacement, visit: (host: number, device: number) => void): void {
  const moving = movingDims(p);
  const deviceOffset = p.offset;
  if (moving.length === 0) {
    visit(p.hostOffset, deviceOffset);
    return;
  }
  const index = new Array<number>(moving.length).fill(0);
  const inner = moving[moving.length - 1]!;
  let host = p.hostOffset;
  let device = deviceOffset;
  for (;;) {
    for (let i = 0, h = host, g = device; i < inner.extent; i++, h += inner.stride, g += inner.device) visit(h, g);
    let axis = moving.length - 2;
    for (; axis >= 0; axis--) {
      const d = moving[axis]!;
      host += d.stride;
      device += d.device;
      if (++index[axis]! < d.extent) break;
      host -= d.extent * d.stride;
      device -= d.extent * d.device;
      index[axis] = 0;
    }
    if (axis < 0) return;
  }
}
