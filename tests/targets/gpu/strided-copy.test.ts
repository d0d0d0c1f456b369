/**
 * The host side of sparse host views on the gpu (runtime/strided-copy.ts through host-operands.ts):
 * a placement's elements gathered into its device layout and results scattered back, a piece of
 * the device range at a time as the staging chunks come, equal a plain loop's bit for bit — every
 * element size, signalling NaNs included — for views with negative, broadcast and non-contiguous
 * strides and odd offsets, and leave the caller's other elements as they were. No GPU needed.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { DType, TypedArray } from '../../../src/dtypes.js';
import { DTYPES } from '../../../src/dtypes.js';
import { gatherInto, type HostPlacement, placeHostOperand, scatterResults } from '../../../src/targets/gpu/runtime/host-operands.js';
import { gatherRange, scatterRange, stridedCopy } from '../../../src/targets/gpu/runtime/strided-copy.js';

const GPU_DTYPES: DType[] = ['int8', 'uint8', 'uint8c', 'int16', 'uint16', 'int32', 'uint32', 'float32'];

/** Unsigned words of an array's element width, over the same bytes. */
function wordsOf(a: TypedArray): Uint8Array | Uint16Array | Uint32Array | BigUint64Array {
  const W = { 1: Uint8Array, 2: Uint16Array, 4: Uint32Array, 8: BigUint64Array }[a.BYTES_PER_ELEMENT as 1 | 2 | 4 | 8];
  return new W(a.buffer as ArrayBuffer, a.byteOffset, a.length);
}

/** Random bytes, with float32 signalling NaNs where the words are 4 bytes (a Float32Array load would quiet them). */
function filled(dtype: DType, length: number, seed: number): TypedArray {
  const a = new DTYPES[dtype].arrayType(length) as TypedArray;
  const bytes = new Uint8Array(a.buffer, a.byteOffset, a.byteLength);
  for (let i = 0; i < bytes.length; i++) bytes[i] = (Math.imul(i + seed, 2654435761) >>> 13) & 255;
  if (a.BYTES_PER_ELEMENT === 4) {
    const w = wordsOf(a) as Uint32Array;
    for (let i = 0; i < w.length; i += 3) w[i] = 0x7f800001 + (i & 0x3fffff);
  }
  return a;
}

/** A view: loop shape and strides (elements), offset, into a host array of `length` elements. */
interface View {
  readonly dtype: DType;
  readonly shape: number[];
  readonly strides: number[];
  readonly offset: number;
  readonly length: number;
}

const views: fc.Arbitrary<View> = fc
  .record({
    dtype: fc.constantFrom(...GPU_DTYPES),
    dims: fc.array(fc.record({ extent: fc.integer({ min: 1, max: 9 }), stride: fc.integer({ min: -12, max: 12 }) }), { minLength: 0, maxLength: 4 }),
    pad: fc.integer({ min: 0, max: 5 }),
  })
  .map(({ dtype, dims, pad }) => {
    const shape = dims.map((d) => d.extent);
    const strides = dims.map((d) => d.stride);
    // The lowest element a negative stride reaches sets the offset; the highest, the array's length.
    let low = 0;
    let high = 0;
    for (const { extent, stride } of dims) (stride < 0 ? (low += (extent - 1) * stride) : (high += (extent - 1) * stride));
    const offset = pad - low;
    return { dtype, shape, strides, offset, length: offset + high + 1 + pad };
  });

function operand(v: View, data: TypedArray) {
  return { data, dtype: v.dtype, offset: v.offset, loopStrides: v.strides, coreStrides: [], coreShape: [] };
}

/** The view's (host index, device index) pairs in C order, each distinct element once (broadcast dimensions at index 0). */
function pairs(v: View, p: HostPlacement): [number, number][] {
  const deviceStrides = [...p.loopStrides, ...p.coreStrides];
  const out: [number, number][] = [];
  const walk = (d: number, host: number, device: number) => {
    if (d === v.shape.length) return void out.push([host, device]);
    const extent = v.strides[d] === 0 ? 1 : v.shape[d]!;
    for (let i = 0; i < extent; i++) walk(d + 1, host + i * v.strides[d]!, device + i * deviceStrides[d]!);
  };
  walk(0, v.offset, p.offset);
  return out;
}

/** Cuts `0 … length` into pieces at the given fractions. */
function pieces(length: number, cuts: number[]): [number, number][] {
  const at = [...new Set([0, ...cuts.map((c) => Math.floor(c * length)), length])].sort((a, b) => a - b);
  return at.slice(1).map((end, k) => [at[k]!, end]);
}

const cuts = fc.array(fc.double({ min: 0, max: 1, noNaN: true }), { maxLength: 4 });

describe('gathering a sparse host view into its device layout', () => {
  it('equals a plain loop bit for bit, gathered whole or a piece at a time', () => {
    fc.assert(
      fc.property(views, cuts, (v, at) => {
        const data = filled(v.dtype, v.length, 1);
        const p = placeHostOperand(operand(v, data) as never, v.shape, 'output');
        if (p.mode !== 'packed') return;
        const want = new DTYPES[v.dtype].arrayType(p.length) as TypedArray;
        const w = wordsOf(want);
        const source = wordsOf(data);
        for (const [host, device] of pairs(v, p)) w[device] = source[host]!;
        const whole = new DTYPES[v.dtype].arrayType(p.length) as TypedArray;
        gatherInto(p, whole, 0);
        expect([...wordsOf(whole)]).toEqual([...w]);
        const pieced = new DTYPES[v.dtype].arrayType(p.length) as TypedArray;
        for (const [from, to] of pieces(p.length, at)) gatherInto(p, pieced.subarray(from, to), from);
        expect([...wordsOf(pieced)]).toEqual([...w]);
      }),
      { numRuns: 400 },
    );
  });
});

describe('scattering device results into a host view', () => {
  it("writes the view's elements bit for bit, a piece at a time, and leaves the others as they were", () => {
    fc.assert(
      fc.property(views, cuts, fc.constantFrom('input', 'output') as fc.Arbitrary<'input' | 'output'>, (v, at, role) => {
        const before = filled(v.dtype, v.length, 2);
        const p = placeHostOperand(operand(v, before) as never, v.shape, role);
        const results = filled(v.dtype, p.length, 3);
        const want = before.slice() as TypedArray;
        const w = wordsOf(want);
        const r = wordsOf(results);
        for (const [host, device] of pairs(v, p)) w[host] = r[device]!;
        for (const split of [[], at]) {
          const into = before.slice() as TypedArray;
          const target = { ...p, data: into };
          for (const [from, to] of pieces(p.length, split)) scatterResults(target, results.subarray(from, to), from);
          expect([...wordsOf(into)]).toEqual([...w]);
        }
      }),
      { numRuns: 400 },
    );
  });

  it('a view with an odd byte offset (a subarray of an 8-bit array) and 8-byte elements', () => {
    const bytes = filled('uint8', 101, 4).subarray(3) as Uint8Array;
    const c = stridedCopy([{ extent: 4, host: 5, device: 3 }, { extent: 3, host: -1, device: 1 }], 2 + 2, 0);
    const device = new Uint8Array(12);
    gatherRange(c, bytes, device, 0);
    const expected: number[] = [];
    for (let i = 0; i < 4; i++) for (let j = 0; j < 3; j++) expected.push(bytes[4 + 5 * i - j]!);
    expect([...device]).toEqual(expected);
    // Float64 words keep NaN payloads (8-byte elements reach the copies only as float64 words).
    const doubles = new Float64Array(6);
    const dw = new BigUint64Array(doubles.buffer);
    dw.set([0x7ff0000000000001n, 0xfff8000000001234n, 1n, 2n, 0x7ff4000000000000n, 3n]);
    const back = new Float64Array(3);
    gatherRange(stridedCopy([{ extent: 3, host: 2, device: 1 }], 0, 0), doubles, back, 0);
    expect([...new BigUint64Array(back.buffer)]).toEqual([0x7ff0000000000001n, 1n, 0x7ff4000000000000n]);
    const home = new Float64Array(6);
    scatterRange(stridedCopy([{ extent: 3, host: -2, device: 1 }], 5, 0), home, back, 0);
    expect([...new BigUint64Array(home.buffer)]).toEqual([0n, 0x7ff4000000000000n, 0n, 1n, 0n, 0x7ff0000000000001n]);
  });
});

describe('copies between a strided view and C order (toDevice of a sparse view, toHost of a strided device array)', () => {
  const strided = fc.array(fc.record({ extent: fc.integer({ min: 1, max: 7 }), stride: fc.integer({ min: -6, max: 6 }) }), { minLength: 1, maxLength: 4 });

  /** The pairs (strided index, C index) in C order, and the strided side's offset making every index ≥ 0. */
  function walk(dims: { extent: number; stride: number }[]): { offset: number; reach: number; pairs: [number, number][] } {
    let low = 0;
    let high = 0;
    for (const { extent, stride } of dims) (stride < 0 ? (low += (extent - 1) * stride) : (high += (extent - 1) * stride));
    const offset = -low;
    const pairs: [number, number][] = [];
    const go = (d: number, at: number) => {
      if (d === dims.length) return void pairs.push([at, pairs.length]);
      for (let i = 0; i < dims[d]!.extent; i++) go(d + 1, at + i * dims[d]!.stride);
    };
    go(0, offset);
    return { offset, reach: high - low + 1, pairs };
  }
  const cStrides = (dims: { extent: number }[]) => dims.map((_, d) => dims.slice(d + 1).reduce((a, b) => a * b.extent, 1));

  it('gathers a host view with broadcast and negative strides into C order, a piece at a time', () => {
    fc.assert(
      fc.property(strided, cuts, (dims, at) => {
        const { offset, reach, pairs } = walk(dims);
        const host = filled('uint16', reach, 5);
        const want = new Uint16Array(pairs.length);
        for (const [h, c] of pairs) want[c] = host[h] as number;
        const copy = stridedCopy(dims.map((d, k) => ({ extent: d.extent, host: d.stride, device: cStrides(dims)[k]! })), offset, 0);
        const got = new Uint16Array(pairs.length);
        for (const [from, to] of pieces(got.length, at)) gatherRange(copy, host, got.subarray(from, to), from);
        expect([...got]).toEqual([...want]);
      }),
      { numRuns: 300 },
    );
  });

  it('reads a device view with broadcast and negative strides back into C order, a piece of its span at a time', () => {
    fc.assert(
      fc.property(strided, cuts, (dims, at) => {
        const { offset, reach, pairs } = walk(dims);
        const span = filled('float32', reach, 6) as Float32Array;
        const want = new Uint32Array(pairs.length);
        const spanWords = new Uint32Array(span.buffer);
        for (const [s, c] of pairs) want[c] = spanWords[s]!;
        const copy = stridedCopy(dims.map((d, k) => ({ extent: d.extent, host: cStrides(dims)[k]!, device: d.stride })), 0, offset);
        const out = new Float32Array(pairs.length);
        for (const [from, to] of pieces(reach, at)) scatterRange(copy, out, span.subarray(from, to), from);
        expect([...new Uint32Array(out.buffer)]).toEqual([...want]);
      }),
      { numRuns: 300 },
    );
  });
});
