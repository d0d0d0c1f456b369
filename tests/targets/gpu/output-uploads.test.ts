/**
 * Which host outputs of a guvectorize call are uploaded before it (dispatch.ts, `rowsWrittenWhole`):
 * an output row the kernel writes whole before reading it (the Hermite `()->(n)` table) is not —
 * its old elements reach no result — while a row the kernel may leave partly unwritten is, so the
 * elements it does not write keep the caller's values. Same results as the cpu target either way,
 * whole, in chunks (streaming.ts) and on two devices.
 */
import { afterAll, afterEach, expect, it } from 'vitest';
import { guvectorize, setGpuOptions } from '../../../src/index.js';
import { shutdownDevice } from '../../../src/targets/gpu/runtime/device.js';
import { setChunkBytes } from '../../../src/targets/gpu/runtime/streaming.js';
import { setTransferTrace } from '../../../src/targets/gpu/runtime/transfer-trace.js';
import { describeGpu } from '../../gpu-available.js';

afterAll(() => shutdownDevice());
afterEach(() => {
  setChunkBytes(undefined);
  setGpuOptions({ devices: 1 });
});

const ROWS = 3000;
const N = 8;
const xs = new Float32Array(ROWS).map((_, i) => ((i * 37) % 101) / 25 - 2);
/** Old contents of the output: none of them is a result either kernel writes. */
const garbage = () => new Float32Array(ROWS * N).map((_, i) => -1000 - i);

function kernels(target: 'cpu' | 'gpu') {
  /** Writes every element of its row, in order: out[0], then out[i] from out[i − 1]. */
  const whole = guvectorize(['void(float32, float32[:])'], '()->(n)', { target })((x: number, out: Float32Array) => {
    out[0] = x;
    for (let i = 1; i < out.length; i++) out[i] = out[i - 1]! * 0.5 + i;
  });
  /** Writes only the first two elements of its row: the others keep what they held. */
  const partial = guvectorize(['void(float32, float32[:])'], '()->(n)', { target })((x: number, out: Float32Array) => {
    out[0] = x;
    out[1] = x * 2;
  });
  return { whole, partial };
}
const cpu = kernels('cpu');
const gpu = kernels('gpu');

/** Runs `call` and returns the bytes it copied from the host towards the device (traced). */
async function uploadedBytes(call: () => Promise<unknown>): Promise<number> {
  let bytes = 0;
  setTransferTrace((e) => {
    if (e.kind === 'host-to-staging') bytes += e.bytes;
  });
  try {
    await call();
  } finally {
    setTransferTrace(undefined);
  }
  return bytes;
}

describeGpu('host outputs uploaded before a guvectorize call', () => {
  it.each([
    ['whole', 1, undefined],
    ['in chunks', 1, 16 * 1024],
    ['on two devices, in chunks', 2, 16 * 1024],
  ] as const)('a row written whole is not uploaded, and the results equal the cpu target (%s)', async (_, devices, chunkBytes) => {
    setGpuOptions({ devices });
    setChunkBytes(chunkBytes);
    const expected = garbage();
    await cpu.whole(xs, { out: { data: expected, shape: [ROWS, N] } });
    const table = garbage();
    const bytes = await uploadedBytes(() => gpu.whole(xs, { out: { data: table, shape: [ROWS, N] } }));
    expect(table).toEqual(expected);
    expect(bytes).toBe(xs.byteLength);
  });

  it.each([
    ['whole', 1, undefined],
    ['in chunks', 1, 16 * 1024],
    ['on two devices, in chunks', 2, 16 * 1024],
  ] as const)('a row partly written is uploaded: the elements not written keep their values (%s)', async (_, devices, chunkBytes) => {
    setGpuOptions({ devices });
    setChunkBytes(chunkBytes);
    const expected = garbage();
    await cpu.partial(xs, { out: { data: expected, shape: [ROWS, N] } });
    const table = garbage();
    const bytes = await uploadedBytes(() => gpu.partial(xs, { out: { data: table, shape: [ROWS, N] } }));
    expect(table).toEqual(expected);
    expect(table[N - 1]).toBe(-1000 - (N - 1));
    expect(bytes).toBe(xs.byteLength + table.byteLength);
  });
});
