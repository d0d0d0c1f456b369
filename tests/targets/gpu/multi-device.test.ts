/**
 * Several devices in one process (`setGpuOptions({ devices })`, multi-device.ts). lavapipe has one
 * adapter, so `devices: 2` opens two devices on it — each its own queue, memory and state, which
 * is what the library must keep apart. Every result is compared bit for bit with one device's.
 */
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { afterAll, afterEach, describe, expect, it, vi } from 'vitest';
import {
  ArgumentError, DeviceArray, DeviceError, getGpuOptions, type NDArray, setGpuOptions, ShardedArray, toDevice, vectorize,
} from '../../../src/index.js';
import { acquireDevice, liveDevice, onDevice, resetDevice, setIdleReleaseMs, shutdownDevice } from '../../../src/targets/gpu/runtime/device.js';
import { setChunkBytes } from '../../../src/targets/gpu/runtime/streaming.js';
import { streamingStats } from '../../call-paths.js';
import { setTransferTrace, type TransferEvent } from '../../../src/targets/gpu/runtime/transfer-trace.js';
import { hermiteUfuncs } from '../../../examples/hermite.js';
import { describeGpu } from '../../gpu-available.js';

// Each test compiles its kernels once per device, on lavapipe's CPU threads, on a loaded CI machine.
vi.setConfig({ testTimeout: 30_000 });

const DEFAULT_LIMIT = getGpuOptions().memoryLimit;
const values = (n: number, seed = 1) => new Float32Array(n).map((_, i) => (((i + seed) * 7919) % 1000) / 100 - 5);
const saxpy = vectorize(['float32(float32, float32, float32)'], { target: 'gpu' })((a: number, x: number, y: number) => a * x + y);
const hermite = hermiteUfuncs('gpu').fromScalar;
const bits = (x: Float32Array) => new Uint32Array(x.buffer, x.byteOffset, x.length);

/** The same call on one device and on `devices`, for comparing their bits. */
async function onOneAndMany<T>(devices: number, call: () => Promise<T>): Promise<[T, T]> {
  setGpuOptions({ devices: 1 });
  const one = await call();
  setGpuOptions({ devices });
  return [one, await call()];
}

afterEach(() => {
  setTransferTrace(undefined);
  setChunkBytes(undefined);
  setGpuOptions({ devices: 1, memoryLimit: DEFAULT_LIMIT });
  setIdleReleaseMs(200);
  resetDevice();
});
afterAll(() => shutdownDevice());

describe('setGpuOptions({ devices })', () => {
  it("accepts 'all' and counts from 1; refuses anything else, naming what it found", () => {
    setGpuOptions({ devices: 'all' });
    expect(getGpuOptions().devices).toBe('all');
    setGpuOptions({ devices: 3 });
    expect(getGpuOptions().devices).toBe(3);
    expect(() => setGpuOptions({ devices: 0 })).toThrow(ArgumentError);
    expect(() => setGpuOptions({ devices: 1.5 })).toThrow(/devices must be 'all' or an integer from 1 to 64, found 1.5/);
    expect(() => setGpuOptions({ devices: 'some' as never })).toThrow(/found 'some'/);
  });
});

describeGpu('several devices on one adapter (lavapipe)', () => {
  it('gives each slot its own device', async () => {
    setGpuOptions({ devices: 2 });
    const [a, b] = await Promise.all([onDevice(0, acquireDevice), onDevice(1, acquireDevice)]);
    expect(a.device).not.toBe(b.device);
    expect([a.slot, b.slot]).toEqual([0, 1]);
  });

  it('a call on host arrays splits its loop across the devices: the bits of one device', async () => {
    const n = 100_003;
    const xs = values(n);
    const ys = values(n, 5);
    setIdleReleaseMs(Infinity);
    const [one, two] = await onOneAndMany(2, () => saxpy(2.5, xs, ys) as Promise<Float32Array>);
    expect(bits(two)).toEqual(bits(one));
    // Device 1 did its part: it was opened by the call (nothing else here asks for it).
    expect(onDevice(1, liveDevice)).toBeDefined();
    expect(onDevice(2, liveDevice)).toBeUndefined();
    const [, three] = await onOneAndMany(3, () => saxpy(2.5, xs, ys) as Promise<Float32Array>);
    expect(bits(three)).toEqual(bits(one));
  });

  it('the Hermite table ()->(n) from host arrays on 2 devices: the bits of one device', async () => {
    const xs = values(5001);
    const [one, two] = await onOneAndMany(2, () => hermite(xs, { dims: { n: 16 } }) as Promise<NDArray>);
    expect(two.shape).toEqual([5001, 16]);
    expect(bits(two.data as Float32Array)).toEqual(bits(one.data as Float32Array));
  });

  it('splits across devices and streams each part when it exceeds the memory limit', async () => {
    const n = 60_000;
    const xs = values(n);
    const ys = values(n, 3);
    setGpuOptions({ devices: 1 });
    const expected = (await saxpy(-1.25, xs, ys)) as Float32Array;
    setGpuOptions({ devices: 2, memoryLimit: 96 * 1024 });
    const before = streamingStats();
    const got = (await saxpy(-1.25, xs, ys)) as Float32Array;
    const after = streamingStats();
    expect(after.streamedCalls - before.streamedCalls).toBe(2);
    expect(bits(got)).toEqual(bits(expected));
  });

  it('a large call on 2 devices: the two parts issue their chunks in turn, and the trace shows each device copying', async () => {
    const n = 1_200_000; // 1.2 MB a vector in each chunk: staged uploads (from 1 MiB) and read-backs
    const xs = values(n);
    const ys = values(n, 3);
    setGpuOptions({ devices: 1 });
    const expected = (await saxpy(0.5, xs, ys)) as Float32Array;
    setGpuOptions({ devices: 2 });
    setIdleReleaseMs(Infinity);
    await saxpy(0.5, xs, ys); // both devices open and compiled: what is traced below is the calls' own work
    setChunkBytes(4.5 * 2 ** 20); // a device's part (7.5 MiB of operands) in two chunks
    const events: TransferEvent[] = [];
    setTransferTrace((e) => events.push(e));
    const got = (await saxpy(0.5, xs, ys)) as Float32Array;
    // (toEqual on a million elements takes seconds: the first difference instead.)
    const want = bits(expected);
    expect(bits(got).findIndex((v, i) => v !== want[i])).toBe(-1);
    const issued = events.filter((e) => e.kind === 'chunk-issued').map((e) => e.device);
    expect(issued).toEqual([0, 1, 0, 1]);
    for (const device of [0, 1]) {
      const of = (kind: TransferEvent['kind']) => events.filter((e) => e.kind === kind && e.device === device);
      expect(of('chunk-done')).toHaveLength(2);
      expect(of('host-to-staging').reduce((sum, e) => sum + e.bytes, 0)).toBeGreaterThanOrEqual(2 * 4 * (n / 2));
      expect(of('staging-to-host').reduce((sum, e) => sum + e.bytes, 0)).toBe(4 * (n / 2));
    }
  });

  it('toDevice shards along the first dimension; calls run per shard and return sharded results; toHost gathers', async () => {
    const n = 10_001;
    const xs = values(n);
    const ys = values(n, 7);
    setGpuOptions({ devices: 1 });
    const expected = (await saxpy(3, xs, ys)) as Float32Array;
    const table = (await hermite(xs, { dims: { n: 8 } })) as NDArray;
    setGpuOptions({ devices: 2 });
    const dx = await toDevice(xs, { shard: true });
    const dy = await toDevice(ys, { shard: true });
    expect(dx).toBeInstanceOf(ShardedArray);
    expect(dx.rows).toEqual([5001, 5000]);
    expect(dx.devices).toEqual([0, 1]);
    const z = (await saxpy(3, dx, dy)) as ShardedArray;
    expect(z).toBeInstanceOf(ShardedArray);
    expect(z.devices).toEqual([0, 1]);
    expect(bits((await z.toHost()) as Float32Array)).toEqual(bits(expected));
    // Chained on the device, and into a given sharded `out`.
    const out = await toDevice(new Float32Array(n), { shard: true });
    expect(await saxpy(3, dx, dy, { out })).toBe(out);
    expect(bits((await out.toHost()) as Float32Array)).toEqual(bits(expected));
    const positional = await toDevice(new Float32Array(n), { shard: true });
    expect(await saxpy(3, dx, dy, positional)).toBe(positional);
    expect(bits((await positional.toHost()) as Float32Array)).toEqual(bits(expected));
    positional.destroy();
    const rows = (await hermite(dx, { dims: { n: 8 } })) as ShardedArray;
    expect(rows.shape).toEqual([n, 8]);
    expect(rows.rows).toEqual([5001, 5000]);
    expect(bits((await rows.toHost()) as Float32Array)).toEqual(bits(table.data as Float32Array));
    for (const a of [dx, dy, z, out, rows]) a.destroy();
  });

  it('a 2-D array shards by rows; a host row broadcast to every shard', async () => {
    const rows = 37;
    const cols = 11;
    const m = values(rows * cols);
    const row = values(cols, 9);
    setGpuOptions({ devices: 1 });
    const expected = (await saxpy(2, { data: m, shape: [rows, cols] }, row)) as NDArray;
    setGpuOptions({ devices: 3 });
    const dm = await toDevice({ data: m, shape: [rows, cols] }, { shard: true });
    expect(dm.rows).toEqual([13, 12, 12]);
    const z = (await saxpy(2, dm, row)) as ShardedArray;
    expect(z.shape).toEqual([rows, cols]);
    expect(bits((await z.toHost()) as Float32Array)).toEqual(bits(expected.data as Float32Array));
  });

  it('a device array on device 1 runs its call on device 1', async () => {
    setGpuOptions({ devices: 2 });
    const xs = values(1000);
    const d = await toDevice(xs, { device: 1 });
    expect(d.deviceIndex).toBe(1);
    const z = (await saxpy(2, d, d)) as DeviceArray;
    expect(z.deviceIndex).toBe(1);
    setGpuOptions({ devices: 1 });
    const expected = (await saxpy(2, xs, xs)) as Float32Array;
    expect(bits((await z.toHost()) as Float32Array)).toEqual(bits(expected));
  });

  it('refuses sharded arguments cut differently, an unsharded array spanning the shards, and a device array beside shards', async () => {
    setGpuOptions({ devices: 2 });
    const a = await toDevice(values(10), { shard: true });
    setGpuOptions({ devices: 3 });
    const b = await toDevice(values(10), { shard: true });
    await expect(saxpy(1, a, b)).rejects.toThrow(/sharded arguments must be cut alike: one has rows \[5, 5\] on devices \[0, 1\], another rows \[4, 3, 3\]/);
    await expect(saxpy(1, a, values(10))).rejects.toThrow(/argument 3 \(shape \[10\]\) spans the sharded dimension .* shard it too/);
    const d = await toDevice(values(10));
    await expect(saxpy(1, a, d)).rejects.toThrow(/argument 3 is a DeviceArray on device 0, but the call runs on sharded arrays across devices \[0, 1\]/);
    await expect(toDevice(new Float32Array(1), { device: 3 })).rejects.toThrow(/device must be an integer from 0 to 2/);
    const on1 = await toDevice(values(10), { device: 1 });
    await expect(saxpy(1, d, on1)).rejects.toThrow(/the call's device arrays are on different devices/);
    await expect(toDevice({ data: new Float32Array(1), shape: [] }, { shard: true })).rejects.toThrow(/a 0-d array cannot be sharded/);
    const add = vectorize(['float32(float32, float32)'], { target: 'gpu', identity: 0 })((x: number, y: number) => x + y);
    await expect(add.reduce(a as never)).rejects.toThrow(/Argument 1 is a ShardedArray \(rows across GPU devices\), which only calls of gpu ufuncs take, not methods/);
  });
});

/** Runs fixtures/multi-device-child.ts in a fresh process, where no Dawn instance exists yet. */
function runFreshProcess(mode: string) {
  const script = fileURLToPath(new URL('./fixtures/multi-device-child.ts', import.meta.url));
  const child = spawnSync(process.execPath, ['--expose-gc', '--import', 'tsx', script, mode], { encoding: 'utf8', timeout: 25_000 });
  const line = child.stdout.split('\n').find((l) => l.startsWith('{'));
  return { status: child.status, signal: child.signal, json: line ? JSON.parse(line) : undefined, stderr: child.stderr };
}

describeGpu('opening two devices at once in a fresh process', () => {
  // Each opening asked for the process's Dawn instance before either had made it, so two were
  // made and the first left unreferenced: once collected, dawn.node aborted the process (a
  // segfault, a pthread assertion, "std::system_error") — 3 of 3 runs of this child before the fix.
  it('the first call on two devices, a garbage collection, and another call: the process lives and the results are right', () => {
    const run = runFreshProcess('first-call-on-two');
    expect({ status: run.status, signal: run.signal, json: run.json }, run.stderr).toEqual({ status: 0, signal: null, json: { right: true } });
  });

  it('concurrent first requests for the Dawn instance get the same one', () => {
    const run = runFreshProcess('load-twice');
    expect({ status: run.status, json: run.json }, run.stderr).toEqual({ status: 0, json: { sameInstance: true } });
  });
});

describeGpu('a device lost mid-call (device.destroy() on lavapipe)', () => {
  it('fails that call with a DeviceError naming the device, and the next call runs on the devices that remain', async () => {
    setGpuOptions({ devices: 2 });
    setIdleReleaseMs(Infinity);
    const n = 200_000;
    const xs = values(n);
    const ys = values(n, 2);
    await saxpy(1, xs, ys); // both devices open
    const before = await toDevice(xs, { shard: true });
    const lost = await onDevice(1, acquireDevice);
    const call = saxpy(2, xs, ys);
    lost.device.destroy();
    const error = await call.then(() => undefined, (e: unknown) => e);
    // The loss may land before device 1 recorded its part or after: either way the call fails, naming device 1.
    expect(error).toBeInstanceOf(DeviceError);
    expect(String((error as Error).message)).toMatch(/GPU device 1 \(/);
    setGpuOptions({ devices: 1 });
    const expected = (await saxpy(2, xs, ys)) as Float32Array;
    setGpuOptions({ devices: 2 });
    const next = (await saxpy(2, xs, ys)) as Float32Array;
    expect(bits(next)).toEqual(bits(expected));
    expect(onDevice(1, liveDevice)).toBeUndefined(); // device 1 was left out, not replaced
    const sharded = await toDevice(xs, { shard: true });
    expect(sharded.devices).toEqual([0]);
    const onLeft = (await ((await saxpy(2, sharded, ys)) as ShardedArray).toHost()) as Float32Array;
    expect(bits(onLeft)).toEqual(bits(expected));
    sharded.destroy();
    // A shard made before on the lost device: its data went with it, and the error says which device.
    await expect(before.toHost()).rejects.toThrow(/this DeviceArray belongs to GPU device 1 \(.*\), generation \d+, which is gone because it was lost/);
    await expect(saxpy(2, before, before)).rejects.toThrow(DeviceError);
  });
});
