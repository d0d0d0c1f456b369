/**
 * Calls on sparse host views end to end (dispatch.ts, host-operands.ts, strided-copy.ts): inputs
 * gathered straight into the staging chunks, results scattered straight out of the mapped
 * read-back staging memory, a chunk at a time. The gpu's results equal the cpu target's in the
 * caller's whole array — the elements outside an output view keep their values — for every
 * element type the gpu stores, views with negative, broadcast and non-contiguous strides and odd
 * byte offsets, in-place calls, kernels that write only some elements, on both read-back paths
 * (in the call's submission and after it), below and above the staging threshold (1 MiB) with
 * staging chunks of a few KiB (setTransferChunkBytes), and in chunks of the loop (setChunkBytes).
 * Also strided device views read back (`toHost()`: their span's elements picked out of the mapped
 * staging pieces) and sparse host views uploaded (`toDevice`).
 */
import fc from 'fast-check';
import { afterAll, afterEach, beforeAll, expect, it } from 'vitest';
import type { DType, TypedArray } from '../../../src/dtypes.js';
import { DTYPES } from '../../../src/dtypes.js';
import { guvectorize, toDevice, vectorize } from '../../../src/index.js';
import { setTransferChunkBytes } from '../../../src/targets/gpu/runtime/buffers.js';
import { shutdownDevice } from '../../../src/targets/gpu/runtime/device.js';
import { setHostOutputReadback } from '../../../src/targets/gpu/runtime/dispatch.js';
import { setSpanSlack } from '../../../src/targets/gpu/runtime/host-operands.js';
import { setChunkBytes } from '../../../src/targets/gpu/runtime/streaming.js';
import { describeGpu } from '../../gpu-available.js';
import { differences } from './compare-targets.js';

const KiB = 1024;
beforeAll(() => setTransferChunkBytes(16 * KiB));
afterAll(() => {
  setTransferChunkBytes(undefined);
  return shutdownDevice();
});
afterEach(() => {
  setChunkBytes(undefined);
  setHostOutputReadback('in-call');
  setSpanSlack(undefined);
});

/** The element types the gpu stores (target `canStore`), with a kernel each that mixes its two inputs. */
const TYPES: DType[] = ['int8', 'uint8', 'uint8c', 'int16', 'uint16', 'int32', 'uint32', 'float32'];

type Ufunc = (...args: unknown[]) => Promise<unknown>;
const made = new Map<string, Ufunc>();
function mix(dtype: DType, target: 'cpu' | 'gpu'): Ufunc {
  const key = `${dtype}:${target}`;
  if (!made.has(key)) {
    // Exact on both targets: integer wrap-around and one float32 rounding.
    made.set(key, vectorize([`${dtype}(${dtype}, ${dtype})`], { target })((a: number, b: number) => a - b) as unknown as Ufunc);
  }
  return made.get(key)!;
}

function filled(dtype: DType, length: number, seed: number): TypedArray {
  const a = new DTYPES[dtype].arrayType(length) as TypedArray;
  const float = DTYPES[dtype].kind === 'f';
  for (let i = 0; i < length; i++) {
    const v = (Math.imul(i + seed, 2654435761) >>> 16) % 251;
    (a as Float32Array)[i] = float ? v * 0.375 - 40 : v - 100;
  }
  return a;
}

/** A strided view of a fresh array (its elements from `seed`), `byteShift` elements into the array's buffer. */
interface ViewSpec {
  readonly shape: number[];
  readonly strides: number[];
  readonly shift: number;
}
function view(dtype: DType, s: ViewSpec, seed: number): { data: TypedArray; shape: number[]; strides: number[]; offset: number } {
  let low = 0;
  let high = 0;
  s.shape.forEach((n, d) => (s.strides[d]! < 0 ? (low += (n - 1) * s.strides[d]!) : (high += (n - 1) * s.strides[d]!)));
  // A subarray `shift` elements in: an odd byte offset for 8-bit types.
  const data = filled(dtype, s.shift + high - low + 3, seed).subarray(s.shift) as TypedArray;
  return { data, shape: s.shape, strides: s.strides, offset: 1 - low };
}
const copyOf = (v: ReturnType<typeof view>) => ({ ...v, data: v.data.slice() as TypedArray });

/** Both targets on the same arguments (outputs copied first): the gpu's whole output array must equal the cpu's. */
async function same(dtype: DType, x: unknown, y: unknown, out: ReturnType<typeof view>, runs = 1): Promise<void> {
  const cpuOut = copyOf(out);
  await mix(dtype, 'cpu')(x, y, { out: cpuOut });
  for (let k = 0; k < runs; k++) {
    const gpuOut = copyOf(out);
    await mix(dtype, 'gpu')(x, y, { out: gpuOut });
    expect(differences(cpuOut.data, gpuOut.data)).toEqual([]);
  }
}

const dims = fc.array(fc.record({ extent: fc.integer({ min: 1, max: 40 }), stride: fc.integer({ min: -5, max: 5 }) }), { minLength: 1, maxLength: 3 });

describeGpu('sparse host views on the gpu', { timeout: 300_000 }, () => {
  it('random views of every stored type, inputs and outputs: the caller’s whole output array equals the cpu target’s', async () => {
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...TYPES), dims, fc.integer({ min: 1, max: 4 }), fc.boolean(), fc.constantFrom(undefined, 1, Infinity), async (dtype, d, outStep, broadcastY, slack) => {
        // The rule's placements, every sparse view gathered, or every view uploaded as its span.
        setSpanSlack(slack);
        const shape = d.map((e) => e.extent);
        const x = view(dtype, { shape, strides: d.map((e) => e.stride), shift: 1 }, 1);
        // y: broadcast along the first dimension, or C order.
        const y = broadcastY ? view(dtype, { shape, strides: [0, ...shape.slice(1).map((_, k) => shape.slice(k + 2).reduce((a, b) => a * b, 1))], shift: 0 }, 2) : view(dtype, { shape, strides: cOrder(shape), shift: 0 }, 2);
        // out: every outStep-th element in C order (1: dense), an odd element offset.
        const out = view(dtype, { shape, strides: cOrder(shape).map((s) => s * outStep), shift: 3 }, 3);
        await same(dtype, x, y, out);
      }),
      { numRuns: 40 },
    );
  });

  it.each(TYPES)('%s: views above the staging threshold, gathered and scattered a staging chunk at a time, on both read-back paths', async (dtype) => {
    const n = Math.ceil((1.25 * 2 ** 20) / DTYPES[dtype].bytes); // > 1 MiB gathered: staged in chunks of 16 KiB
    const x = view(dtype, { shape: [n], strides: [-3], shift: 1 }, 4); // backwards
    const y = view(dtype, { shape: [n], strides: [1], shift: 0 }, 5);
    // The rule's placements (x uploaded as its span, out packed), then every sparse view gathered
    // and scattered packed, then every view as its span (out read back whole and picked from).
    for (const slack of [undefined, 1, Infinity]) {
      setSpanSlack(slack);
      for (const step of [3, 2]) {
        const out = view(dtype, { shape: [n], strides: [step], shift: 1 }, 6);
        // The first call compiles; the second reads back in its own submission, from a pooled staging buffer.
        await same(dtype, x, y, out, 2);
        setHostOutputReadback('after');
        await same(dtype, x, y, out);
        setHostOutputReadback('in-call');
      }
    }
  });

  it('2-D views: columns of rows, a transposed view, rows backwards; in loop chunks too', async () => {
    const dtype = 'int16';
    const rows = 700;
    const cols = 600;
    const x = view(dtype, { shape: [rows, cols], strides: [5 * cols, 3], shift: 1 }, 7); // every 3rd column of every 5th row
    const y = view(dtype, { shape: [rows, cols], strides: [1, rows], shift: 0 }, 8); // transposed
    const out = view(dtype, { shape: [rows, cols], strides: [-2 * cols, 1], shift: 1 }, 9); // every 2nd row, backwards
    await same(dtype, x, y, out, 2);
    setChunkBytes(64 * KiB);
    await same(dtype, x, y, out, 2);
  });

  it('in place: the output is the same strided view as an input', async () => {
    for (const dtype of ['uint8', 'float32'] as const) {
      const n = Math.ceil(2 ** 20 / DTYPES[dtype].bytes) + 5;
      const a = view(dtype, { shape: [n], strides: [3], shift: 1 }, 10);
      const b = view(dtype, { shape: [n], strides: [1], shift: 0 }, 11);
      const cpuA = copyOf(a);
      await mix(dtype, 'cpu')(cpuA, b, { out: cpuA });
      for (let k = 0; k < 2; k++) {
        const gpuA = copyOf(a);
        await mix(dtype, 'gpu')(gpuA, b, { out: gpuA });
        expect(differences(cpuA.data, gpuA.data)).toEqual([]);
      }
    }
  });

  it('a kernel that writes only some elements of its output rows: the others keep the caller’s values', async () => {
    const partial = (target: 'cpu' | 'gpu') =>
      guvectorize(['void(uint16[:], uint16[:])'], '(n)->(n)', { target })((x: Uint16Array, out: Uint16Array) => {
        out[0] = x[0]! + 1;
        out[out.length - 1] = x[1]! * 3;
      });
    const rows = 5000;
    const n = 70;
    const x = view('uint16', { shape: [rows, n], strides: [2 * n, 2], shift: 1 }, 12);
    const out = view('uint16', { shape: [rows, n], strides: [3 * n, -3], shift: 1 }, 13); // > 1 MiB span, sparse
    const cpuOut = copyOf(out);
    await partial('cpu')(x, { out: cpuOut });
    const gpu = partial('gpu');
    for (const chunk of [undefined, 96 * KiB]) {
      setChunkBytes(chunk);
      for (let k = 0; k < 2; k++) {
        const gpuOut = copyOf(out);
        await gpu(x, { out: gpuOut });
        expect(differences(cpuOut.data, gpuOut.data)).toEqual([]);
      }
    }
    // An output the call allocates is zeros where the kernel writes nothing (its pooled device
    // buffer, which held the calls' results above, cleared; the new array not read to find that out).
    setChunkBytes(undefined);
    const cpuNew = (await partial('cpu')(x)) as { data: Uint16Array };
    for (let k = 0; k < 2; k++) {
      const gpuNew = (await gpu(x)) as { data: Uint16Array };
      expect(differences(cpuNew.data, gpuNew.data)).toEqual([]);
      expect(gpuNew.data[1]).toBe(0);
    }
  });
});

describeGpu('strided views to and from device arrays', { timeout: 300_000 }, () => {
  it('toDevice of sparse host views and toHost of strided device views equal a plain loop, over many staging chunks and on the lean path', async () => {
    const rows = 300;
    const cols = 1100;
    const data = filled('int16', rows * cols * 2, 14) as Int16Array; // 1.3 MiB
    /** Elements of `data` viewed with shape/strides/offset, in C order. */
    const plain = (source: ArrayLike<number>, shape: number[], strides: number[], offset: number) => {
      const out: number[] = [];
      const walk = (d: number, at: number): void => {
        if (d === shape.length) out.push(source[at]!);
        else for (let i = 0; i < shape[d]!; i++) walk(d + 1, at + i * strides[d]!);
      };
      walk(0, offset);
      return out;
    };
    const whole = await toDevice({ data, shape: [rows, 2 * cols] });
    const views: [number[], number[], number][] = [
      [[rows, cols], [2 * cols, 2], 1], // every other column: the span read back, its elements picked
      [[cols, rows], [1, 2 * cols], 0], // transposed
      [[rows, cols], [-2 * cols, -1], (rows - 1) * 2 * cols + cols - 1], // both dimensions backwards
      [[4, 3, cols], [0, 2 * cols, 1], 5], // broadcast along the first dimension
    ];
    for (const [shape, strides, offset] of views) {
      const want = plain(data, shape, strides, offset);
      // The first read-back of a size goes the usual way (16 KiB chunks); the second, at most 1 MiB, takes the lean path.
      for (let k = 0; k < 2; k++) expect([...(await whole.view(shape, strides, offset).toHost())]).toEqual(want);
      // A sparse host view, gathered before its upload.
      const up = await toDevice({ data, shape, strides, offset });
      expect([...(await up.toHost())]).toEqual(want);
      up.destroy();
    }
    whole.destroy();
  });
});

function cOrder(shape: readonly number[]): number[] {
  return shape.map((_, d) => shape.slice(d + 1).reduce((a, b) => a * b, 1));
}
