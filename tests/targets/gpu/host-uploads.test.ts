/**
 * Large host inputs of a call go up through the device's pool of mapped staging buffers, their
 * copies recorded into the call's own submission (dispatch.ts, buffers.ts `stageUpload`): results
 * equal the cpu target's and the `queue.writeBuffer` path's for odd and large sizes, the staging
 * buffers are reused by the next call, inputs are read during the call (also a streamed call's
 * chunks, streaming.ts), and a call that fails writes nothing into its host outputs.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { DeviceError, KernelRuntimeError } from '../../../src/errors.js';
import { getGpuOptions, guvectorize, type NDArray, setGpuOptions, sharedArray, toDevice, vectorize } from '../../../src/index.js';
import { downloadBuffer, setStagingPoolLimit, STAGING_IDLE_MS, stageUpload, stagingPoolStats } from '../../../src/targets/gpu/runtime/buffers.js';
import { acquireDevice, holdDevice, shutdownDevice } from '../../../src/targets/gpu/runtime/device.js';
import { setHostUploadPath } from '../../../src/targets/gpu/runtime/dispatch.js';
import { setSpanSlack } from '../../../src/targets/gpu/runtime/host-operands.js';
import { IN_FLIGHT } from '../../../src/targets/gpu/runtime/streaming.js';
import { streamingStats } from '../../call-paths.js';
import { setTransferTrace, type TransferEvent } from '../../../src/targets/gpu/runtime/transfer-trace.js';
import { describeGpu } from '../../gpu-available.js';
import { differences } from './compare-targets.js';

afterAll(() => shutdownDevice());

const MiB = 2 ** 20;
const pattern = (n: number, seed: number) => new Float32Array(n).map((_, i) => (((i + seed) * 7919) % 1013) * 0.25 - 100);

/** Counts the MAP_WRITE (upload staging) buffers the device creates from now until `restore()`. */
function countStagingBuffers(ctx: { device: unknown }): { count: () => number; restore: () => void } {
  const device = ctx.device as { createBuffer: (d: GPUBufferDescriptor) => GPUBuffer };
  const create = device.createBuffer;
  let created = 0;
  device.createBuffer = function (descriptor) {
    if ((descriptor.usage & GPUBufferUsage.MAP_WRITE) !== 0) created++;
    return create.call(this, descriptor);
  };
  return { count: () => created, restore: () => void (device.createBuffer = create) };
}

/**
 * Holds back every `mapAsync(WRITE)` of the buffers of `like`'s class (as if the GPU were still busy
 * copying out of a staging buffer) until `release()`, which also puts `mapAsync` back.
 */
function holdWriteMappings(like: GPUBuffer): { release: () => void } {
  const prototype = Object.getPrototypeOf(like) as { mapAsync: (this: GPUBuffer, mode: number, ...rest: number[]) => Promise<void> };
  const mapAsync = prototype.mapAsync;
  let open!: () => void;
  const gate = new Promise<void>((resolve) => (open = resolve));
  prototype.mapAsync = function (mode, ...rest) {
    return mode === GPUMapMode.WRITE ? gate.then(() => mapAsync.call(this, mode, ...rest)) : mapAsync.call(this, mode, ...rest);
  };
  return {
    release: () => {
      prototype.mapAsync = mapAsync;
      open();
    },
  };
}

/** Runs `fn` with calls uploading large host inputs through `queue.writeBuffer`. */
async function viaWriteBuffer<T>(fn: () => Promise<T>): Promise<T> {
  setHostUploadPath('writeBuffer');
  try {
    return await fn();
  } finally {
    setHostUploadPath('staged');
  }
}

describeGpu('large host inputs through staging buffers', { timeout: 120_000 }, () => {
  const make = (target: 'cpu' | 'gpu') => vectorize(['float32(float32, float32)'], { target })((a: number, b: number) => a * 3 - b);
  const cpu = make('cpu');
  const gpu = make('gpu');

  it.each([
    ['just over 1 MiB, not a whole number of chunks', MiB / 4 + 3],
    ['several 16 MiB chunks and a partial one', 9 * MiB + 5],
  ])('equal the cpu and the writeBuffer path: %s (%i float32)', async (_, n) => {
    const a = pattern(n, 1);
    const b = pattern(n, 2);
    const expected = (await cpu(a, b)) as Float32Array;
    const staged = (await gpu(a, b)) as Float32Array;
    const written = (await viaWriteBuffer(() => gpu(a, b))) as Float32Array;
    expect(differences(expected, staged, [a, b])).toEqual([]);
    expect(differences(expected, written, [a, b])).toEqual([]);
  });

  it('packed 8- and 16-bit inputs of odd byte lengths: the last word is padded with zeros, not an earlier upload', async () => {
    const f = (target: 'cpu' | 'gpu') => vectorize(['int32(int8, uint16)'], { target })((a: number, b: number) => a * 1000 + b);
    const n = MiB + 3; // 1 MiB + 3 bytes of int8: a partial last word
    const a = new Int8Array(n).map((_, i) => (i * 37) % 256);
    const b = new Uint16Array(n).map((_, i) => (i * 7919) % 65536);
    // A first call leaves other bytes in the staging buffers the second call reuses.
    await f('gpu')(new Int8Array(n).fill(-1), new Uint16Array(n).fill(65535));
    const expected = (await f('cpu')(a, b)) as Int32Array;
    expect(differences(expected, (await f('gpu')(a, b)) as Int32Array)).toEqual([]);
    const tail = (target: 'cpu' | 'gpu') => guvectorize(['void(int8[:], int32[:])'], '(n)->()', { target })((x: Int8Array, out: Int32Array) => {
      out[0] = x[x.length - 1]! + x.length;
    });
    const x = a.subarray(1); // starts inside a word, ends on the last byte
    // One row: a 0-d result, the row's last byte plus its length.
    const expectedTail = a[n - 1]! + (n - 1);
    for (const target of ['cpu', 'gpu'] as const) {
      const { data, shape } = (await tail(target)(x)) as NDArray<Int32Array>;
      expect({ target, shape, value: data[0] }).toEqual({ target, shape: [], value: expectedTail });
    }
  });

  it('views with offsets and strides: a subarray starting past element 0, and every other element (packed first)', async () => {
    const n = MiB / 2 + 7;
    const base = pattern(2 * n + 5, 13);
    const b = pattern(n, 14);
    const shifted = base.subarray(3, 3 + n); // byte offset 12: bytes 12.. of the buffer, not 0..
    expect(differences((await cpu(shifted, b)) as Float32Array, (await gpu(shifted, b)) as Float32Array)).toEqual([]);
    const strided = { data: base, shape: [n], strides: [2], offset: 1 };
    expect(differences((await cpu(strided, b)).data, (await gpu(strided, b)).data)).toEqual([]);
  });

  it('sparse views are gathered straight into the staging buffers: chunks that end inside a row, backwards, int8, uint16, broadcast', async () => {
    // Every sparse view gathered (the rule uploads views up to 64 bytes an element as their span).
    setSpanSlack(1);
    try {
      await sparseViewsGathered();
    } finally {
      setSpanSlack(undefined);
    }
  });

  async function sparseViewsGathered(): Promise<void> {
    // Every third column of 4,700 rows × 3,000: 4.7 M float32 (18.8 MiB, two 16 MiB chunks, the
    // first ending inside row 4,194), gathered. Each gpu call runs twice: the first compiles (its
    // inputs are taken into an array meanwhile), the second is recorded at once and gathers.
    const rows = 4700;
    const cols = 1000;
    const x = { data: pattern(rows * cols * 3, 17), shape: [rows, cols], strides: [3 * cols, 3], offset: 2 };
    const y = { data: pattern(rows * cols, 18), shape: [rows, cols] };
    const expected = (await cpu(x, y)).data;
    for (let k = 0; k < 2; k++) expect(differences(expected, (await gpu(x, y)).data)).toEqual([]);
    expect(differences(expected, (await viaWriteBuffer(() => gpu(x, y))).data)).toEqual([]);

    const u16 = (target: 'cpu' | 'gpu') => vectorize(['float32(uint16, float32)'], { target })((a: number, b: number) => a * 0.5 + b);
    const halves = new Uint16Array(3 * 200_000 * 3).map((_, i) => (i * 7919) % 65536);
    const xBack = { data: halves, shape: [3, 200_000], strides: [600_000, -3], offset: 599_999 }; // 1.1 MiB gathered, rows backwards
    const yRows = { data: new Float32Array([1, 2, 3]), shape: [3, 200_000], strides: [1, 0] }; // broadcast along rows
    const expected16 = (await u16('cpu')(xBack, yRows)).data;
    const u16Gpu = u16('gpu');
    for (let k = 0; k < 2; k++) expect(differences(expected16, (await u16Gpu(xBack, yRows)).data)).toEqual([]);

    const i8 = (target: 'cpu' | 'gpu') => vectorize(['int32(int8, int32)'], { target })((a: number, b: number) => a * 3 + b);
    const bytes = new Int8Array(5 * MiB + 1).map((_, i) => (i * 131) % 256);
    const x8 = { data: bytes, shape: [MiB + 1], strides: [5], offset: 0 }; // 1 MiB + 1 byte gathered: a partial last word
    const y8 = new Int32Array(MiB + 1).fill(2);
    const expected8 = (await i8('cpu')(x8, y8)).data;
    const i8Gpu = i8('gpu');
    for (let k = 0; k < 2; k++) expect(differences(expected8, (await i8Gpu(x8, y8)).data)).toEqual([]);
  }

  it('stageUpload pads the last word with zeros, also in a staging buffer that held other bytes', async () => {
    const ctx = await acquireDevice();
    const { device } = ctx;
    const usage = GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST;
    const upload = async (bytes: Uint8Array) => {
      const target = device.createBuffer({ size: Math.ceil(bytes.byteLength / 4) * 4 + 8, usage });
      const staged = stageUpload(ctx, bytes);
      const encoder = device.createCommandEncoder();
      staged.recordInto(encoder, target);
      device.queue.submit([encoder.finish()]);
      staged.release();
      const back = await downloadBuffer(ctx, target, 0, target.size);
      target.destroy();
      return back;
    };
    const stagingCreated = countStagingBuffers(ctx);
    const full = new Uint8Array(MiB + 8).fill(0xab);
    expect((await upload(full)).every((v) => v === 0xab)).toBe(false); // the last 8 bytes of the target are zeros
    await device.queue.onSubmittedWorkDone();
    await new Promise((resolve) => setTimeout(resolve, 10)); // the staging buffer is mapped again
    const created = stagingCreated.count();
    // 5 bytes from byte 3 of their buffer: the copy moves 8 bytes, the last 3 zeros.
    const odd = new Uint8Array(new ArrayBuffer(MiB + 16), 3, MiB + 5).fill(0x5c);
    const back = await upload(odd);
    stagingCreated.restore();
    expect(stagingCreated.count()).toBe(created); // the same staging buffer, holding 0xab after the data
    expect([...back.subarray(MiB, MiB + 16)]).toEqual([0x5c, 0x5c, 0x5c, 0x5c, 0x5c, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
    expect(back.subarray(0, MiB + 5).every((v) => v === 0x5c)).toBe(true);
  });

  it('the staging pools are kept while the GPU copies out of a staging buffer and while read-backs go on, emptied once idle', async () => {
    const ctx = await acquireDevice();
    const hold = holdDevice(ctx); // not released while idle: the pools' idle time is what is tested
    const { device } = ctx;
    const target = device.createBuffer({ size: MiB, usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST });
    // The staging buffer's mapping again is held back, as if the GPU were busy with the copy.
    const mappings = holdWriteMappings(target);
    try {
      const staged = stageUpload(ctx, new Uint8Array(MiB).fill(1));
      const encoder = device.createCommandEncoder();
      staged.recordInto(encoder, target);
      device.queue.submit([encoder.finish()]);
      staged.release();
      await new Promise((resolve) => setTimeout(resolve, STAGING_IDLE_MS + 300));
      expect(stagingPoolStats(ctx).write.bytes).toBeGreaterThan(0); // still being mapped: kept
    } finally {
      mappings.release();
    }
    // Read-backs keep the write pool too (a loop of calls uploads first and reads back last).
    // (Short pauses: under a loaded machine's delays the gaps must stay well under STAGING_IDLE_MS.)
    for (let t = 0; t < STAGING_IDLE_MS + 300; t += 200) {
      await downloadBuffer(ctx, target, 0, 4096);
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    expect(stagingPoolStats(ctx).write.bytes).toBeGreaterThan(0);
    await new Promise((resolve) => setTimeout(resolve, STAGING_IDLE_MS + 300));
    expect(stagingPoolStats(ctx)).toEqual({ read: { bytes: 0, sizes: [] }, write: { bytes: 0, sizes: [] } });
    target.destroy();
    hold.release();
  });

  it('a staging buffer given back to a full pool while it is being mapped again is destroyed only once the mapping has settled', async () => {
    // Destroying it at once aborted the pending mapping, which dawn.node rejects from a later turn;
    // many of those (two devices streaming, a pool too small for their chunks) killed a process.
    const ctx = await acquireDevice();
    const hold = holdDevice(ctx);
    const { device } = ctx;
    const target = device.createBuffer({ size: MiB, usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST });
    const mappings = holdWriteMappings(target);
    const destroyed: TransferEvent[] = [];
    setTransferTrace((e) => e.kind === 'staging-destroyed' && e.direction === 'write' && destroyed.push(e));
    setStagingPoolLimit(0); // the pool is full for any buffer given back
    try {
      const staged = stageUpload(ctx, new Uint8Array(MiB).fill(1));
      const encoder = device.createCommandEncoder();
      staged.recordInto(encoder, target);
      device.queue.submit([encoder.finish()]);
      staged.release(); // mapped again (held back by the gate), and given back to the full pool
      await device.queue.onSubmittedWorkDone();
      expect(destroyed).toEqual([]); // its mapping is pending: not destroyed yet
    } finally {
      mappings.release();
    }
    for (let t = 0; t < 2000 && destroyed.length === 0; t += 20) await new Promise((resolve) => setTimeout(resolve, 20));
    setTransferTrace(undefined);
    setStagingPoolLimit(undefined);
    expect(destroyed).toHaveLength(1);
    expect(destroyed[0]).toMatchObject({ mapState: 'mapped' }); // destroyed after its mapping, not during it
    target.destroy();
    hold.release();
  });

  it('a large upload that repeats goes through staging buffers of its size, reused by the next call', async () => {
    const ctx = await acquireDevice();
    const n = 9 * MiB; // 36 MiB per input: one staging buffer of 64 MiB per input once it repeats
    const a = pattern(n, 3);
    const b = pattern(n, 4);
    const expected = (await cpu(a, b)) as Float32Array;
    await gpu(a, b); // 16 MiB chunks; the whole size is wanted from now on
    await gpu(a, b); // creates the whole-size staging buffers
    const stagingCreated = countStagingBuffers(ctx);
    try {
      for (let k = 0; k < 3; k++) expect(differences(expected, (await gpu(a, b)) as Float32Array)).toEqual([]);
    } finally {
      stagingCreated.restore();
    }
    expect(stagingCreated.count()).toBe(0);
    expect(stagingPoolStats(ctx).write.sizes.filter((s) => s === 64 * MiB)).toHaveLength(2);
  });

  it('a streamed call (host arrays over the memory limit) uploads its chunks of several MiB the same way', async () => {
    const n = 6 * MiB + 3; // 24 MiB per array; chunks of at most 8 MiB of host operands, ~2.7 MiB per input
    const a = pattern(n, 15);
    const b = pattern(n, 16);
    const expected = (await cpu(a, b)) as Float32Array;
    await shutdownDevice(); // a device whose staging pool is empty
    const ctx = await acquireDevice();
    const limit = getGpuOptions().memoryLimit;
    setGpuOptions({ memoryLimit: 24 * MiB });
    const stagingCreated = countStagingBuffers(ctx);
    const chunksBefore = streamingStats().chunks;
    try {
      const out = new Float32Array(n);
      await gpu(a, b, { out });
      expect(differences(expected, out, [a, b])).toEqual([]);
      expect(differences(expected, (await viaWriteBuffer(() => gpu(a, b))) as Float32Array, [a, b])).toEqual([]);
    } finally {
      stagingCreated.restore();
      setGpuOptions({ memoryLimit: limit });
    }
    expect(streamingStats().chunks - chunksBefore).toBeGreaterThan(2 * IN_FLIGHT);
    expect(stagingCreated.count()).toBeGreaterThan(0);
  });

  it('reads the inputs during the call: changing them before awaiting does not change the result', async () => {
    const n = MiB;
    const a = pattern(n, 5);
    const b = pattern(n, 6);
    const expected = (await cpu(a, b)) as Float32Array;
    const pending = gpu(a, b);
    a.fill(0);
    b.fill(1);
    expect(differences(expected, (await pending) as Float32Array)).toEqual([]);
  });

  it('inputs in shared memory (a SharedArrayBuffer) are uploaded the same way', async () => {
    const n = MiB / 2 + 1;
    const a = sharedArray(n, 'float32');
    a.set(pattern(n, 7));
    const b = pattern(n, 8);
    expect(differences((await cpu(a, b)) as Float32Array, (await gpu(a, b)) as Float32Array)).toEqual([]);
  });

  it('a call that fails a bounds check writes nothing into its host output', async () => {
    const pick = guvectorize(['void(float32[:], int32, float32[:])'], '(n),()->()', { target: 'gpu' })((x: Float32Array, i: number, out: Float32Array) => {
      out[0] = x[i]!;
    });
    const rows = 64;
    const x = { data: pattern(rows * 8192, 9), shape: [rows, 8192] }; // 2 MiB: staged
    const index = new Int32Array(rows).fill(5);
    index[40] = 8192;
    const out = new Float32Array(rows).fill(-7);
    await expect(pick(x, index, { out })).rejects.toThrow(KernelRuntimeError);
    expect(out.every((v) => v === -7)).toBe(true);
    index[40] = 3;
    await pick(x, index, { out });
    expect(out[40]).toBe(x.data[40 * 8192 + 3]);
  });

  it('a call whose submission fails (a destroyed buffer) is a DeviceError naming it, its host output untouched', async () => {
    const f = vectorize(['float32(float32, float32)'], { target: 'gpu' })((a: number, b: number) => a + b);
    const n = MiB / 2;
    const a = pattern(n, 10);
    const d = await toDevice(pattern(n, 11));
    await f(a, d); // compiles f with this layout
    d.buffer.destroy(); // behind the DeviceArray's back: the batch with the staged copy is invalid
    const out = new Float32Array(n).fill(4);
    await expect(f(a, d, { out })).rejects.toThrow(DeviceError);
    await expect(f(a, d, { out })).rejects.toThrow(/gpu call #\d+ \(`\w+`\)/);
    expect(out.every((v) => v === 4)).toBe(true);
    // The staging buffers of the failed calls went back to the pool: the next call works.
    const b = pattern(n, 12);
    expect(differences((await cpu(a, b)) as Float32Array, (await gpu(a, b)) as Float32Array)).toEqual([]);
  });
});

describe('setHostUploadPath', () => {
  it('returns the previous setting', () => {
    expect(setHostUploadPath('writeBuffer')).toBe('staged');
    expect(setHostUploadPath('staged')).toBe('writeBuffer');
  });
});
