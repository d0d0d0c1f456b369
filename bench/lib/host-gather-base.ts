/**
 * The host gather and scatter loops as they were on main a446b7c (src/targets/gpu/runtime/host-operands.ts
 * before strided-copy.ts), kept as bench/host-gather.ts's baseline where no base checkout is at hand
 * (the GPU host runs a checkout without git history): one loop for every element type, indexing
 * whatever typed array came, and a callback per element for the scatter.
 */
import type { TypedArray } from '../../src/dtypes.js';

/** The fields of a placement (host-operands.ts HostPlacement) these loops read. */
export interface BasePlacement {
  readonly data: TypedArray;
  readonly length: number;
  readonly low: number;
  readonly offset: number;
  readonly hostOffset: number;
  readonly loopStrides: readonly number[];
  readonly coreStrides: readonly number[];
  readonly dims: readonly { readonly extent: number; readonly stride: number }[];
  readonly dense: boolean;
}
type HostPlacement = BasePlacement;
type Dim = BasePlacement['dims'][number];

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
export function scatterResults(p: HostPlacement, fromDevice: TypedArray): void {
  if (p.dense) {
    (p.data as Uint8Array).set(fromDevice as Uint8Array, p.low);
    return;
  }
  walkDistinct(p, (host, device) => ((p.data as Uint8Array)[host] = (fromDevice as Uint8Array)[device]!));
}
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
