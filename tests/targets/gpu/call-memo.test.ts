/**
 * The memo of calls on device arrays and placed host arrays (call-memos.ts): a call with the facts of an earlier one reuses
 * its layout, pipeline and bindings, patched with its own buffers and scalars; any other call is
 * laid out anew. Each case checks the path taken (the memoisedCall probe) and the bits against the
 * cpu target. (An output that holds zeros is one of the facts: a call into a fresh output and the
 * next call into it, which then holds results, are laid out apart.)
 */
import { afterAll, afterEach, beforeAll, expect, it } from 'vitest';
import { type DeviceArray, deviceArray, guvectorize, setGpuOptions, synchronize, toDevice, vectorize } from '../../../src/index.js';
import { setChainFusion } from '../../../src/targets/gpu/runtime/chain-fusion.js';
import { onDevice, resetDevice, setIdleReleaseMs } from '../../../src/targets/gpu/runtime/device.js';
import { cachedCalls, memoisedGpuCalls } from '../../call-paths.js';
import { describeGpu } from '../../gpu-available.js';

const kernel = (a: number, x: number, y: number) => a * x + y;
const saxpy = vectorize(['float32(float32, float32, float32)'], { target: 'gpu' })(kernel);
const saxpyCpu = vectorize(['float32(float32, float32, float32)'], { target: 'cpu' })(kernel);
const values = (n: number, seed: number) => Float32Array.from({ length: n }, (_, i) => Math.fround(Math.sin(i * 0.37 + seed) * 4));
const bits = (x: Float32Array) => Array.from(new Uint32Array(x.buffer, x.byteOffset, x.length));

/** Runs `call` and returns how many calls took the memo meanwhile. */
async function memoised(call: () => Promise<unknown>): Promise<number> {
  const before = memoisedGpuCalls();
  await call();
  return memoisedGpuCalls() - before;
}

/** Runs `call` and returns how many calls the plan cache served, and how many took the memo, meanwhile. */
async function paths(call: () => Promise<unknown>): Promise<{ cached: number; memoised: number }> {
  const [cached, memo] = [cachedCalls(), memoisedGpuCalls()];
  await call();
  return { cached: cachedCalls() - cached, memoised: memoisedGpuCalls() - memo };
}

describeGpu('the memo of calls on device arrays', { timeout: 60_000 }, () => {
  // Calls recorded one by one (chain-fusion.test.ts covers calls held and fused).
  beforeAll(() => setChainFusion(false));
  afterAll(() => setChainFusion(true)); // the default
  afterEach(async () => {
    await synchronize().catch(() => {});
    setGpuOptions({ devices: 1 });
    setIdleReleaseMs(200);
  });

  it('serves a call like an earlier one, with its own buffers and scalars', async () => {
    const n = 300;
    const [x, y, z] = [values(n, 1), values(n, 2), values(n, 3)];
    const [dx, dy, dz] = await Promise.all([x, y, z].map((v) => toDevice(v)));
    const out = await deviceArray([n], 'float32');
    expect(await memoised(() => saxpy(2, dx, dy, { out }))).toBe(0); // into zeros
    expect(await memoised(() => saxpy(2, dx, dy, { out }))).toBe(0); // into results: laid out anew
    expect(await memoised(() => saxpy(-3, dz, dx, { out }))).toBe(1);
    expect(bits((await out.toHost()) as Float32Array)).toEqual(bits((await saxpyCpu(-3, z, x)) as Float32Array));
  });

  it('lays out anew a call on a view of another offset, stride or length of the same buffer', async () => {
    const n = 256;
    const x = values(n, 4);
    const dx = await toDevice(x);
    const out = await deviceArray([n], 'float32');
    for (let k = 0; k < 2; k++) await saxpy(2, dx, 1, { out });
    const reversed = dx.view([n], [-1], n - 1);
    expect(await memoised(() => saxpy(2, reversed, 1, { out }))).toBe(0);
    expect(bits((await out.toHost()) as Float32Array)).toEqual(bits((await saxpyCpu(2, x.slice().reverse(), 1)) as Float32Array));
    const half = dx.view([n / 2], [2], 1);
    const halfOut = out.view([n / 2], [1], n / 2);
    expect(await memoised(() => saxpy(3, half, 0, { out: halfOut }))).toBe(0);
    const want = (await saxpyCpu(3, x.filter((_, i) => i % 2 === 1), 0)) as Float32Array;
    expect(bits(((await out.toHost()) as Float32Array).subarray(n / 2))).toEqual(bits(want));
    // The first layout is still remembered beside the others.
    expect(await memoised(() => saxpy(2, dx, 1, { out }))).toBe(1);
  });

  it('after an array is destroyed: a call with it is refused, and one on the new array of its pooled buffer is right', async () => {
    const n = 512;
    const [x, y] = [values(n, 5), values(n, 6)];
    const [dx, dy] = await Promise.all([toDevice(x), toDevice(y)]);
    let out = await deviceArray([n], 'float32');
    await saxpy(1.5, dx, dy, { out });
    await synchronize();
    out.destroy();
    await expect(saxpy(1.5, dx, dy, { out })).rejects.toThrow(/destroyed/);
    out = await deviceArray([n], 'float32'); // the same size class: likely the buffer just freed
    await saxpy(-1.5, dx, dy, { out });
    expect(bits((await out.toHost()) as Float32Array)).toEqual(bits((await saxpyCpu(-1.5, x, y)) as Float32Array));
  });

  it('an output that holds zeros or left-overs is a different call for a kernel that writes outputs in part', async () => {
    // Writes out[0] only where x[0] > 0: the rest of a reused (left-over) output must be cleared first.
    const firstIfPositive = guvectorize(['void(float32[:], float32[:])'], '(n)->(n)', { target: 'gpu' })((x: Float32Array, out: Float32Array) => {
      if (x[0]! > 0) out[0] = x[0]!;
    });
    const rows = 4;
    const n = 8;
    const x = await toDevice({ data: Float32Array.from({ length: rows * n }, (_, i) => (i % 16 < 8 ? 1 : -1) * (i + 1)), shape: [rows, n] });
    const fresh = (await firstIfPositive(x)) as DeviceArray;
    const again = (await firstIfPositive(x)) as DeviceArray;
    const want = Float32Array.from({ length: rows * n }, (_, i) => (i % n === 0 && i % 16 < 8 ? i + 1 : 0));
    expect(Array.from((await fresh.toHost()) as Float32Array)).toEqual(Array.from(want));
    expect(Array.from((await again.toHost()) as Float32Array)).toEqual(Array.from(want));
  });

  it('keeps memos per device: the same call on two devices runs on each with its own buffers', async () => {
    setGpuOptions({ devices: 2 });
    setIdleReleaseMs(Infinity);
    const n = 200;
    const [x, y] = [values(n, 7), values(n, 8)];
    const onSlot = (slot: number, a: number) =>
      onDevice(slot, async () => {
        const [dx, dy] = await Promise.all([toDevice(x), toDevice(y)]);
        const out = await deviceArray([n], 'float32');
        await saxpy(a, dx, dy, { out }); // into zeros
        const first = await memoised(() => saxpy(a, dx, dy, { out }));
        const second = await memoised(() => saxpy(a, dx, dy, { out }));
        return { first, second, result: (await out.toHost()) as Float32Array };
      });
    const zero = await onSlot(0, 2.5);
    const one = await onSlot(1, 2.5);
    // Device 1's first call is laid out on device 1, whatever device 0 remembered.
    expect([zero.second, one.first, one.second]).toEqual([1, 0, 1]);
    expect(bits(one.result)).toEqual(bits(zero.result));
    expect(bits(one.result)).toEqual(bits((await saxpyCpu(2.5, x, y)) as Float32Array));
    resetDevice();
  });

  it('serves calls on host arrays from the plan cache and the memo, with their own arrays, scalars and lengths', async () => {
    const n = 1000;
    const [x, y, z] = [values(n, 11), values(n, 12), values(n, 13)];
    const out = new Float32Array(n);
    for (let k = 0; k < 2; k++) await saxpy(2, x, y, { out });
    // (The plan cache keys a JS number by its class: 3 is planned as 2 was; -0.5 is planned anew, and memoised.)
    expect(await paths(() => saxpy(3, z, x, { out }))).toEqual({ cached: 1, memoised: 1 });
    expect(bits(out)).toEqual(bits((await saxpyCpu(3, z, x)) as Float32Array));
    expect(await paths(() => saxpy(-0.5, z, x, { out }))).toEqual({ cached: 0, memoised: 1 });
    expect(bits(out)).toEqual(bits((await saxpyCpu(-0.5, z, x)) as Float32Array));
    // A new result array each call (no `out`): a plain Float32Array, as a planned call returns.
    const first = (await saxpy(3, x, y)) as Float32Array;
    let again: unknown;
    expect((await paths(async () => void (again = await saxpy(5, y, z)))).cached).toBe(1);
    expect(again).toBeInstanceOf(Float32Array);
    expect(again).not.toBe(first);
    expect(bits(again as Float32Array)).toEqual(bits((await saxpyCpu(5, y, z)) as Float32Array));
    // Another length: another layout (the memo is not taken), the right bits.
    const short = values(77, 14);
    const shortOut = new Float32Array(77);
    expect((await paths(() => saxpy(2, short, short, { out: shortOut }))).memoised).toBe(0);
    expect(bits(shortOut)).toEqual(bits((await saxpyCpu(2, short, short)) as Float32Array));
  });

  it('plans a call on host arrays whose `out` overlaps an input otherwise than in place, and one that mixes host and device arrays', async () => {
    const n = 512;
    const data = values(n + 1, 15);
    const x = data.subarray(0, n);
    const shifted = data.subarray(1, n + 1); // overlaps x, one element on
    const y = values(n, 16);
    const want = (await saxpyCpu(2, x.slice(), y)) as Float32Array;
    await saxpy(2, x.slice(), y, { out: new Float32Array(n) }); // a template for (f32, f32, out f32)
    expect((await paths(() => saxpy(2, x, y, { out: shifted }))).cached).toBe(0);
    expect(bits(shifted)).toEqual(bits(want));
    // In place (out is the very input): cached, and right.
    const inPlace = values(n, 17);
    const wantInPlace = (await saxpyCpu(2, inPlace, y)) as Float32Array;
    expect((await paths(() => saxpy(2, inPlace, y, { out: inPlace }))).cached).toBe(1);
    expect(bits(inPlace)).toEqual(bits(wantInPlace));
    const dy = await toDevice(y);
    expect((await paths(() => saxpy(2, values(n, 18), dy))).cached).toBe(0);
  });
});
