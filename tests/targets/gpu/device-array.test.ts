import { afterEach, describe, expect, it } from 'vitest';
import { DTYPES } from '../../../src/dtypes.js';
import { ArgumentError, DeviceError, TargetUnavailableError } from '../../../src/errors.js';
import { uploadToBuffer } from '../../../src/targets/gpu/runtime/buffers.js';
import { DeviceArray, checkGpuDType, deviceArray, toDevice } from '../../../src/targets/gpu/runtime/device-array.js';
import { bufferPoolStats } from '../../../src/targets/gpu/runtime/buffer-pool.js';
import { vectorize } from '../../../src/index.js';
import { acquireDevice, isDeviceAlive, runScoped, setIdleReleaseMs, shutdownDevice } from '../../../src/targets/gpu/runtime/device.js';
import { describeGpu } from '../../gpu-available.js';
import { GPU_DTYPES, TRANSFER_SIZES, firstByteDifference, randomArray } from './transfer-data.js';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

afterEach(() => setIdleReleaseMs(200));

describe('64-bit dtypes', () => {
  it('are refused with the alternatives', () => {
    expect(() => checkGpuDType('float64')).toThrowErrorMatchingInlineSnapshot(
      `[TargetUnavailableError: float64 is not available on the gpu target (WGSL has no 64-bit floats): use float32, or target 'cpu' or 'parallel']`,
    );
    expect(() => checkGpuDType('int64')).toThrowErrorMatchingInlineSnapshot(
      `[TargetUnavailableError: int64 is not available on the gpu target (WGSL has no 64-bit integers): use int32, or target 'cpu' or 'parallel']`,
    );
    expect(() => checkGpuDType('uint64')).toThrowErrorMatchingInlineSnapshot(
      `[TargetUnavailableError: uint64 is not available on the gpu target (WGSL has no 64-bit integers): use uint32, or target 'cpu' or 'parallel']`,
    );
  });

  it('are refused before any device is touched', async () => {
    await expect(toDevice(new Float64Array(3))).rejects.toThrow(TargetUnavailableError);
    await expect(toDevice(new BigInt64Array(3))).rejects.toThrow(/int64 is not available on the gpu target/);
    await expect(deviceArray([2, 2], 'uint64')).rejects.toThrow(/uint64 is not available/);
  });
});

describeGpu('toDevice / toHost', () => {
  describe.each(GPU_DTYPES)('%s', (dtype) => {
    it.each(TRANSFER_SIZES)('round-trips %i elements', async (length) => {
      const data = randomArray(dtype, length, 777);
      const onDevice = await toDevice({ data, shape: [length], dtype });
      expect(onDevice.dtype).toBe(dtype);
      expect(onDevice.shape).toEqual([length]);
      expect(onDevice.strides).toEqual([1]);
      expect(onDevice.byteLength).toBe(length * DTYPES[dtype].bytes);
      const back = await onDevice.toHost();
      expect(back).toBeInstanceOf(DTYPES[dtype].arrayType);
      expect(back.length).toBe(length);
      expect(firstByteDifference(back, data)).toBe(-1);
      onDevice.destroy();
    });
  });

  it('takes a bare typed array as 1-D of its own dtype', async () => {
    const d = await toDevice(new Int8Array([-128, -1, 0, 1, 127]));
    expect(d.dtype).toBe('int8');
    expect(await d.toHost()).toEqual(new Int8Array([-128, -1, 0, 1, 127]));
  });

  it('stores bool as bytes and gives back a Uint8Array', async () => {
    const d = await toDevice({ data: new Uint8Array([1, 0, 0, 1, 1]), shape: [5], dtype: 'bool' });
    expect(d.dtype).toBe('bool');
    expect(await d.toHost()).toEqual(new Uint8Array([1, 0, 0, 1, 1]));
  });

  it('keeps C order for n-D arrays', async () => {
    const data = Float32Array.from({ length: 24 }, (_, i) => i / 4);
    const d = await toDevice({ data, shape: [2, 3, 4] });
    expect(d.strides).toEqual([12, 4, 1]);
    expect(d.isCContiguous).toBe(true);
    expect(await d.toHost()).toEqual(data);
  });

  it('gives back a transposed view in C order', async () => {
    // data is a 3×4 matrix m; the view [4, 3] with strides [1, 4] is its transpose.
    const data = Int32Array.from({ length: 12 }, (_, i) => i);
    const t = await toDevice({ data, shape: [4, 3], strides: [1, 4] });
    expect(t.strides).toEqual([1, 4]); // dense enough to keep its layout on the device
    expect([...(await t.toHost())]).toEqual([0, 4, 8, 1, 5, 9, 2, 6, 10, 3, 7, 11]);
  });

  it('gathers a sparse view before uploading, and handles offsets and negative strides', async () => {
    const data = Uint16Array.from({ length: 100 }, (_, i) => i * 3);
    const everyTenth = await toDevice({ data, shape: [5], strides: [10], offset: 7 });
    expect(everyTenth.strides).toEqual([1]);
    expect(everyTenth.byteLength).toBe(10); // only the five elements went over the bus
    expect([...(await everyTenth.toHost())]).toEqual([21, 51, 81, 111, 141]);

    const reversed = await toDevice({ data, shape: [4], strides: [-1], offset: 9 });
    expect([...(await reversed.toHost())]).toEqual([27, 24, 21, 18]);

    const broadcastRow = await toDevice({ data, shape: [3, 2], strides: [0, 1], offset: 4 });
    expect([...(await broadcastRow.toHost())]).toEqual([12, 15, 12, 15, 12, 15]);
  });

  it('reads a column-major buffer, as a coalescing kernel writes it, back in C order', async () => {
    const ctx = await acquireDevice();
    // 2×3 matrix [[1, 2, 3], [4, 5, 6]] stored column by column.
    const columnMajor = new Float32Array([1, 4, 2, 5, 3, 6]);
    const buffer = await runScoped(ctx, () =>
      uploadToBuffer(ctx, columnMajor, GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST),
    );
    const m = new DeviceArray(ctx, buffer, 'float32', [2, 3], [1, 2]);
    expect(m.isCContiguous).toBe(false);
    expect([...(await m.toHost())]).toEqual([1, 2, 3, 4, 5, 6]);
    m.destroy();
  });

  it('handles a 0-D array', async () => {
    const scalar = await toDevice({ data: new Float32Array([9, 2.5]), shape: [], offset: 1 });
    expect(scalar.size).toBe(1);
    expect([...(await scalar.toHost())]).toEqual([2.5]);
  });

  it('refuses layouts that do not fit the data, and dtypes that do not match it', async () => {
    await expect(toDevice({ data: new Float32Array(6), shape: [2, 4] })).rejects.toThrow(ArgumentError);
    await expect(toDevice({ data: new Float32Array(6), shape: [2, 4] })).rejects.toThrow(
      'toDevice: shape [2, 4] with strides [4, 1] and offset 0 reaches elements 0..7, but data has 6',
    );
    await expect(toDevice({ data: new Float32Array(6), shape: [2, 3], strides: [3] })).rejects.toThrow(/expected 2 integer strides/);
    await expect(toDevice({ data: new Float32Array(6), shape: [-1] })).rejects.toThrow(/shape of integers >= 0/);
    await expect(toDevice({ data: new Int16Array(2), shape: [2], dtype: 'uint16' })).rejects.toThrow(
      'toDevice: dtype `uint16` is stored in a Uint16Array, but data is a Int16Array',
    );
  });
});

describeGpu('deviceArray', () => {
  it.each([
    [[3, 5], 'int16'],
    [[7], 'uint8'],
    [[2, 0, 4], 'float32'],
    [1025, 'bool'],
  ] as const)('allocates zeros of shape %j and dtype %s', async (shape, dtype) => {
    const d = await deviceArray(shape, dtype);
    const dims = typeof shape === 'number' ? [shape] : shape;
    const size = dims.reduce((n: number, x: number) => n * x, 1);
    expect(d.shape).toEqual(dims);
    expect(d.size).toBe(size);
    const back = await d.toHost();
    expect(back).toBeInstanceOf(DTYPES[dtype].arrayType);
    expect(back.length).toBe(size);
    expect([...back].every((v) => v === 0)).toBe(true);
  });
});

describeGpu('DeviceArray lifetime', () => {
  it('cannot be read after destroy()', async () => {
    const d = await toDevice(new Uint32Array([1, 2]));
    d.destroy();
    d.destroy(); // idempotent
    await expect(d.toHost()).rejects.toThrow(DeviceError);
    await expect(d.toHost()).rejects.toThrow('this DeviceArray was destroyed; it has no data any more');
  });

  it('says its device is gone after a shutdown, and what to do', async () => {
    const d = await toDevice(new Float32Array([1, 2, 3]));
    shutdownDevice();
    await expect(d.toHost()).rejects.toThrow(DeviceError);
    await expect(d.toHost()).rejects.toThrow(
      new RegExp(
        `this DeviceArray belongs to GPU device generation ${d.generation}, which is gone because it was shut down with shutdownDevice\\(\\)\\. ` +
          'Its data went with it: copy the data to the device again \\(toDevice\\) and rerun the call\\.',
      ),
    );
    // A new device serves new arrays; the old one stays dead.
    const fresh = await toDevice(new Float32Array([4]));
    expect(fresh.generation).toBe(d.generation + 1);
    expect([...(await fresh.toHost())]).toEqual([4]);
    await expect(d.toHost()).rejects.toThrow(/the current device is generation/);
  });

  it('keeps its device from being released while idle, until destroyed', async () => {
    // Arrays of earlier tests that are not collected yet also hold the device: start afresh.
    shutdownDevice();
    setIdleReleaseMs(20);
    const d = await toDevice(new Int32Array([-5, 6]));
    const ctx = await acquireDevice();
    await sleep(100);
    expect(isDeviceAlive(ctx)).toBe(true);
    expect([...(await d.toHost())]).toEqual([-5, 6]);
    d.destroy();
    await sleep(100);
    expect(isDeviceAlive(ctx)).toBe(false);
  });

  it('`using` destroys an output when its scope ends, also when the scope throws, and the next call reuses its buffer', async () => {
    setIdleReleaseMs(Infinity);
    const ctx = await acquireDevice();
    expect(typeof Symbol.dispose).toBe('symbol');
    const axpy = vectorize(['float32(float32, float32, float32)'], { target: 'gpu' })((a: number, x: number, y: number) => a * x + y);
    const xs = Float32Array.from({ length: 4096 }, (_, i) => i);
    const x = await toDevice(xs);
    (await axpy(1, x, 1)).destroy(); // compiles, and leaves one buffer of the class in the pool
    const before = bufferPoolStats(ctx);
    const scoped: DeviceArray[] = [];
    for (let k = 0; k < 30; k++) {
      using z = (await axpy(k, x, 1)) as DeviceArray;
      scoped.push(z);
      if (k === 29) expect([...((await z.toHost()) as Float32Array).subarray(0, 3)]).toEqual([1, 30, 59]);
    }
    expect(bufferPoolStats(ctx).created - before.created).toBe(0); // one buffer served all 30 calls
    for (const z of scoped) expect(() => z.assertUsable()).toThrow('this DeviceArray was destroyed');
    let inner: DeviceArray | undefined;
    await expect(
      (async () => {
        using z = await toDevice(new Int32Array([1, 2]));
        inner = z;
        throw new Error('the work failed');
      })(),
    ).rejects.toThrow('the work failed');
    await expect(inner!.toHost()).rejects.toThrow(DeviceError);
    x.destroy();
  });
});

