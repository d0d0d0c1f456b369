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
import { gatherRange, scatterRange, type StridedCopy, stridedCopy } from './strided-copy.js';

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

/**
 * How many bytes of span per distinct element an input view may have and still be uploaded as its
 * span (a memcpy, the kernel reading it strided) rather than gathered element by element on the
 * host: 64, a cache line — up to there a gather reads as many lines as the copy does, with a JS
 * loop (~4 ns an element on the H100 host) instead of memcpy. On that host the span beat the
 * gather at every stride measured, 16 to 64 bytes per element: 0.28–0.90× of its time (SAXPY on
 * 2^24 elements every k-th, float32 and uint8; bench/results/host-placement-nvidia-h100.md).
 */
const SPAN_BYTES_PER_ELEMENT = 64;
let spanSlack: number | undefined;

/**
 * Overrides how much bigger than its distinct elements a host view's span may be and still be
 * placed as is (`span`) rather than gathered (`packed`), for inputs and outputs alike: for
 * benchmarks that time both placements.
 *
 * @param slack a factor ≥ 1 (1: only a view about as long as its span — within 64 elements — is
 *   placed as it is; Infinity: every view is), or undefined for the rule (inputs: up to
 *   {@link SPAN_BYTES_PER_ELEMENT} bytes of span an element; outputs: dense ones only)
 * @returns the previous override
 */
export function setSpanSlack(slack: number | undefined): number | undefined {
  const previous = spanSlack;
  spanSlack = slack;
  return previous;
}

/**
 * Decides how a host operand is placed on the device. An input is uploaded as its span while that
 * is at most {@link SPAN_BYTES_PER_ELEMENT} bytes an element, else gathered. An output is
 * placed as its span only where that is dense: a sparse one comes back packed, its elements
 * scattered into the view — its span would bring more bytes back for the same scatter (span 1.2–1.9×
 * the time of packed for float32 outputs of every 2nd to 16th element on the H100 host). An
 * output whose old elements go up (a guvectorize kernel not known to write its rows whole) is
 * then gathered.
 *
 * @param view the operand (not a JS scalar)
 * @param loopShape the call's loop shape (the extents of `view.loopStrides`)
 * @param role whether the call reads the view (an input) or writes it (an output)
 */
export function placeHostOperand(view: OperandView, loopShape: readonly number[], role: 'input' | 'output'): HostPlacement {
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
  const slack = spanSlack ?? (role === 'input' ? SPAN_BYTES_PER_ELEMENT / data.BYTES_PER_ELEMENT : 1);
  if (span <= slack * distinct + 64) {
    return {
      data, mode: 'span', low, high, length: span, offset: view.offset - low,
      loopStrides: view.loopStrides, coreStrides: view.coreStrides, hostOffset: view.offset, dims, dense: span === distinct && tilesSpan(dims),
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

/**
 * Whether the view's elements are each a different element of its span: its moving dimensions,
 * smallest stride first, nest as C order's do (each stride the product of the extents inside it).
 * A view as many elements long as its span can still overlap itself (shape [9, 9], strides
 * [−3, −7]), and then misses some of the span's elements, which a dense read-back would overwrite.
 */
function tilesSpan(dims: readonly Dim[]): boolean {
  const moving = dims.filter((d) => d.stride !== 0 && d.extent > 1).sort((a, b) => Math.abs(a.stride) - Math.abs(b.stride));
  let step = 1;
  for (const d of moving) {
    if (Math.abs(d.stride) !== step) return false;
    step *= d.extent;
  }
  return true;
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
 * the placement ends first) into `into`, a typed array of the placement's element size: so a large
 * placement can be gathered a piece at a time, straight into mapped staging memory.
 *
 * @param p a placement of mode `packed` (its device elements are its distinct elements in C order)
 * @param into where the elements go, from its index 0
 * @param from the first device element
 */
export function gatherInto(p: HostPlacement, into: TypedArray, from: number): void {
  gatherRange(copyOf(p), p.data, into, from);
}

/**
 * Writes device results into the caller's array, only into the elements of the view.
 *
 * @param p the placement
 * @param fromDevice device elements `from …` of the placement (all of them by default), of its element size
 * @param from the device index of `fromDevice[0]`
 */
export function scatterResults(p: HostPlacement, fromDevice: TypedArray, from = 0): void {
  if (p.dense) {
    // Bytes, not values: a set() between arrays of two classes converts each element.
    const size = p.data.BYTES_PER_ELEMENT;
    new Uint8Array(p.data.buffer, p.data.byteOffset + (p.low + from) * size).set(new Uint8Array(fromDevice.buffer, fromDevice.byteOffset, fromDevice.byteLength));
    return;
  }
  scatterRange(copyOf(p), p.data, fromDevice, from);
}

/** The placement's view paired with its device elements. */
function copyOf(p: HostPlacement): StridedCopy {
  const deviceStrides = [...p.loopStrides, ...p.coreStrides];
  return stridedCopy(p.dims.map((d, k) => ({ extent: d.extent, host: d.stride, device: deviceStrides[k]! })), p.hostOffset, p.offset);
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
