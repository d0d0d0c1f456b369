import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DTYPES } from '../../../src/dtypes.js';
import { ArgumentError, DeviceError } from '../../../src/errors.js';
import { STAGING_IDLE_MS, allocateBuffer, downloadBuffer, paddedByteLength, stagingPoolStats, uploadToBuffer, writeToBuffer } from '../../../src/targets/gpu/runtime/buffers.js';
import { acquireDevice, holdDevice, runScoped, type DeviceHold, type GpuContext } from '../../../src/targets/gpu/runtime/device.js';
import { describeGpu } from '../../gpu-available.js';
import { GPU_DTYPES, TRANSFER_SIZES, firstByteDifference, randomArray } from './transfer-data.js';

describe('paddedByteLength', () => {
  it('rounds up to whole 4-byte words, at least one', () => {
    expect([0, 1, 3, 4, 5, 8, 1_000_001].map(paddedByteLength)).toEqual([4, 4, 4, 4, 8, 8, 1_000_004]);
  });
});

describeGpu('host ↔ device transfers', () => {
  let ctx: GpuContext;
  let hold: DeviceHold;
  const usage = () => GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC;

  beforeAll(async () => {
    ctx = await acquireDevice();
    hold = holdDevice(ctx);
  });
  afterAll(() => hold.release());

  describe.each(GPU_DTYPES)('%s', (dtype) => {
    it.each(TRANSFER_SIZES)('round-trips %i elements byte for byte', async (length) => {
      const data = randomArray(dtype, length);
      const buffer = await runScoped(ctx, () => uploadToBuffer(ctx, data, usage()));
      expect(buffer.size).toBe(paddedByteLength(data.byteLength));
      const back = await downloadBuffer(ctx, buffer, 0, data.byteLength, new DTYPES[dtype].arrayType(length));
      expect(back).toBeInstanceOf(DTYPES[dtype].arrayType);
      expect(firstByteDifference(back, data)).toBe(-1);
      // The padding after packed 1- and 2-byte elements is zero, not garbage.
      const padding = await downloadBuffer(ctx, buffer, data.byteLength, buffer.size - data.byteLength);
      expect([...padding]).toEqual(new Array(buffer.size - data.byteLength).fill(0));
      buffer.destroy();
    });
  });

  it('uploads only the view, not the whole underlying ArrayBuffer', async () => {
    const whole = Int16Array.from({ length: 10 }, (_, i) => i * 1000 - 3000);
    const view = whole.subarray(3, 8);
    const buffer = await runScoped(ctx, () => uploadToBuffer(ctx, view, usage()));
    expect(buffer.size).toBe(12);
    expect([...(await downloadBuffer(ctx, buffer, 0, 10, new Int16Array(5)))]).toEqual([0, 1000, 2000, 3000, 4000]);
  });

  it('reads back ranges that start and end inside 4-byte words', async () => {
    const data = Uint8Array.from({ length: 23 }, (_, i) => 200 - i);
    const buffer = await runScoped(ctx, () => uploadToBuffer(ctx, data, usage()));
    for (let offset = 0; offset < 6; offset++) {
      for (let length = 0; offset + length <= data.length; length += 3) {
        const back = await downloadBuffer(ctx, buffer, offset, length);
        expect([...back], `bytes ${offset}..${offset + length}`).toEqual([...data.subarray(offset, offset + length)]);
      }
    }
  });

  it('reads back across chunk boundaries into a view of a larger array', async () => {
    // 40 MiB + 6 bytes: three 16 MiB chunks, the last partial; odd start and end.
    const data = randomArray('uint8', 40 * 2 ** 20 + 6);
    const buffer = await runScoped(ctx, () => uploadToBuffer(ctx, data, usage()));
    const into = new Uint8Array(data.length + 16).fill(0xee);
    const view = into.subarray(8, 8 + data.length - 7);
    const back = await downloadBuffer(ctx, buffer, 5, data.length - 7, view);
    expect(back).toBe(view);
    expect(firstByteDifference(view, data.subarray(5, data.length - 2))).toBe(-1);
    expect([...into.subarray(0, 8), ...into.subarray(8 + view.length)]).toEqual(new Array(8 + 15).fill(0xee));
    buffer.destroy();
    // 40 MiB each way through lavapipe: about 4 s alone, more on a busy machine.
  }, 30_000);

  it('reuses staging buffers across many small downloads', async () => {
    const buffer = await runScoped(ctx, () => uploadToBuffer(ctx, new Float32Array([0.5, -2, Infinity]), usage()));
    const results = await Promise.all(
      Array.from({ length: 20 }, () => downloadBuffer(ctx, buffer, 4, 8, new Float32Array(2))),
    );
    for (const r of results) expect([...r]).toEqual([-2, Infinity]);
  });

  it('allocates zero-filled buffers', async () => {
    const buffer = await runScoped(ctx, () => allocateBuffer(ctx, 4099, usage()));
    expect(buffer.size).toBe(4100);
    const back = await downloadBuffer(ctx, buffer, 0, 4099);
    expect(back.every((b) => b === 0)).toBe(true);
  });

  it('refuses ranges outside the buffer and destinations that are too small', async () => {
    const buffer = await runScoped(ctx, () => uploadToBuffer(ctx, new Uint8Array(6), usage()));
    await expect(downloadBuffer(ctx, buffer, 4, 5)).rejects.toThrow(ArgumentError);
    await expect(downloadBuffer(ctx, buffer, 4, 5)).rejects.toThrow('bytes 4..9 (4..12 widened to whole 4-byte words) are outside the buffer of 8 bytes');
    await expect(downloadBuffer(ctx, buffer, 0, 6, new Uint8Array(4))).rejects.toThrow(
      'the destination holds 4 bytes, fewer than the 6 requested',
    );
    await expect(downloadBuffer(ctx, buffer, -1, 2)).rejects.toThrow(ArgumentError);
  });

  it('refuses to read a buffer without COPY_SRC', async () => {
    const buffer = ctx.device.createBuffer({ size: 16, usage: GPUBufferUsage.STORAGE });
    await expect(downloadBuffer(ctx, buffer, 0, 16)).rejects.toThrow(/without GPUBufferUsage.COPY_SRC/);
  });

  it('turns reading a destroyed buffer into a DeviceError instead of returning stale bytes', async () => {
    const buffer = await runScoped(ctx, () => uploadToBuffer(ctx, new Uint32Array([1, 2, 3]), usage()));
    buffer.destroy();
    const failure = downloadBuffer(ctx, buffer, 0, 12);
    await expect(failure).rejects.toThrow(DeviceError);
    await expect(failure).rejects.toThrow(/validation error: .*destroyed/is);
  });

  it('reports a buffer larger than the device allows', () => {
    const tooBig = ctx.limits.maxBufferSize + 1;
    expect(() => allocateBuffer(ctx, tooBig, usage())).toThrow(
      new RegExp(`an array of ${paddedByteLength(tooBig)} bytes does not fit in one buffer on this GPU \\(maxBufferSize is ${ctx.limits.maxBufferSize} bytes`),
    );
  });
});

describeGpu('staging for large transfers that repeat', () => {
  let ctx: GpuContext;
  let hold: DeviceHold;
  const MiB = 2 ** 20;
  const usage = () => GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST;

  beforeAll(async () => {
    ctx = await acquireDevice();
    hold = holdDevice(ctx);
  });
  afterAll(() => hold.release());

  it('copies a repeated large download in one piece through one staging buffer of its size, byte for byte', async () => {
    // 33 MiB + 7 bytes: above the 32 MiB threshold; odd start and end inside 4-byte words.
    const data = randomArray('uint8', 33 * MiB + 7);
    const buffer = await runScoped(ctx, () => uploadToBuffer(ctx, data, usage()));
    const before = stagingPoolStats(ctx).read.sizes.filter((s) => s === 64 * MiB).length;
    for (let round = 0; round < 3; round++) {
      const into = new Uint8Array(data.length + 4).fill(0xee);
      const view = into.subarray(2, 2 + data.length - 6);
      await downloadBuffer(ctx, buffer, 3, data.length - 6, view);
      expect(firstByteDifference(view, data.subarray(3, data.length - 3)), `round ${round}`).toBe(-1);
      expect([...into.subarray(0, 2), ...into.subarray(2 + view.length)]).toEqual(new Array(into.length - view.length).fill(0xee));
    }
    // The first download went in 16 MiB chunks; the next ones through a 64 MiB buffer, kept.
    expect(stagingPoolStats(ctx).read.sizes.filter((s) => s === 64 * MiB).length).toBe(before + 1);
    buffer.destroy();
  }, 30_000);

  it('copies a repeated large upload in one piece, the tail bytes padded, concurrent uploads apart', async () => {
    const buffer = await runScoped(ctx, () => allocateBuffer(ctx, 33 * MiB + 8, usage()));
    for (let round = 0; round < 3; round++) {
      const data = randomArray('uint8', 33 * MiB + 5);
      await writeToBuffer(ctx, buffer, 0, data);
      const back = await downloadBuffer(ctx, buffer, 0, data.length + 3);
      expect(firstByteDifference(back.subarray(0, data.length), data), `round ${round}`).toBe(-1);
      expect([...back.subarray(data.length)]).toEqual([0, 0, 0]);
    }
    expect(stagingPoolStats(ctx).write.sizes).toContain(64 * MiB);
    // Two uploads at once into the two halves of the buffer: each gets its own staging buffers.
    const a = randomArray('uint8', 16 * MiB + 4);
    const b = randomArray('uint8', 16 * MiB + 4);
    await Promise.all([writeToBuffer(ctx, buffer, 0, a), writeToBuffer(ctx, buffer, 16 * MiB + 4, b)]);
    const back = await downloadBuffer(ctx, buffer, 0, 32 * MiB + 8);
    expect(firstByteDifference(back.subarray(0, a.length), a)).toBe(-1);
    expect(firstByteDifference(back.subarray(a.length), b)).toBe(-1);
    buffer.destroy();
  }, 30_000);

  it('empties the staging pools after a while without transfers', async () => {
    const buffer = await runScoped(ctx, () => uploadToBuffer(ctx, new Float32Array(1 << 20), usage()));
    await downloadBuffer(ctx, buffer, 0, 4 * MiB);
    expect(stagingPoolStats(ctx).read.bytes).toBeGreaterThan(0);
    await new Promise((resolve) => setTimeout(resolve, STAGING_IDLE_MS + 300));
    expect(stagingPoolStats(ctx)).toEqual({ read: { bytes: 0, sizes: [] }, write: { bytes: 0, sizes: [] } });
    buffer.destroy();
  }, 30_000);
});
