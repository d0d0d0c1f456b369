/**
 * The staging pools keep the staging buffers of the calls being made now (buffers.ts, giveStaging):
 * a pool that is full gives up its least recently used buffers, so calls of alternating shapes
 * after calls of another size stop creating staging buffers (pinned host memory) once warm. Two
 * devices on lavapipe's one adapter, each its own pools; creations counted through the transfer trace.
 */
import { afterAll, afterEach, describe, expect, it, vi } from 'vitest';
import { getGpuOptions, type NDArray, setGpuOptions, vectorize } from '../../../src/index.js';
import { expectStagingInFlight, setStagingPoolLimit, stagingPoolMaxBytes, stagingPoolStats } from '../../../src/targets/gpu/runtime/buffers.js';
import { acquireDevice, onDevice, resetDevice, setIdleReleaseMs, shutdownDevice } from '../../../src/targets/gpu/runtime/device.js';
import { setChunkBytes } from '../../../src/targets/gpu/runtime/streaming.js';
import { setTransferTrace, type TransferEvent } from '../../../src/targets/gpu/runtime/transfer-trace.js';
import { hermiteUfuncs } from '../../../examples/hermite.js';
import { describeGpu } from '../../gpu-available.js';

vi.setConfig({ testTimeout: 60_000 });

const MiB = 2 ** 20;
const DEFAULT_LIMIT = getGpuOptions().memoryLimit;
const values = (n: number, seed = 1) => new Float32Array(n).map((_, i) => (((i + seed) * 7919) % 1000) / 100 - 5);
const saxpy = vectorize(['float32(float32, float32, float32)'], { target: 'gpu' })((a: number, x: number, y: number) => a * x + y);
const hermite = hermiteUfuncs('gpu').fromScalar;
type StagingCreated = Extract<TransferEvent, { kind: 'staging-created' }>;

afterEach(() => {
  setTransferTrace(undefined);
  setChunkBytes(undefined);
  setStagingPoolLimit(undefined);
  setGpuOptions({ devices: 1, memoryLimit: DEFAULT_LIMIT });
  setIdleReleaseMs(200);
  resetDevice();
});
afterAll(() => shutdownDevice());

const bits = (x: Float32Array) => new Uint32Array(x.buffer, x.byteOffset, x.length);
/** The first index where the bits differ, or -1 (toEqual on millions of elements takes minutes). */
const firstDifference = (a: Uint32Array, b: Uint32Array) => (a.length !== b.length ? 0 : a.findIndex((v, i) => v !== b[i]));

describeGpu('staging pools under alternating calls (two devices on one adapter)', () => {
  it('after calls of another size filled the pools, alternating SAXPY and Hermite calls create their read-back buffers once, not in every call', async () => {
    // Per device: the earlier SAXPY leaves three 4 MiB read-back staging buffers; then a small SAXPY
    // (one 2 MiB read-back) and the Hermite table (two chunks, 8 MiB read-backs) alternate. Both fit
    // the 20 MiB pool together but not beside the earlier buffers: a pool keeping what it had
    // destroyed the Hermite buffers it was given back and created two per device in every call.
    const limit = 20 * MiB;
    setGpuOptions({ devices: 2 });
    setIdleReleaseMs(Infinity);
    setChunkBytes(12 * MiB);
    setStagingPoolLimit(limit);
    const created: StagingCreated[] = [];
    setTransferTrace((e) => e.kind === 'staging-created' && created.push(e));
    const big = values(8 * MiB);
    await saxpy(2, big, values(big.length, 3)); // 16 MiB an array per device, chunks of 4 MiB an array
    expect(created.some((e) => e.direction === 'read' && e.bytes === 4 * MiB)).toBe(true);
    const xs = values(MiB);
    const rows = values(393_216); // 12 MiB of table per device, in two chunks
    const first = { saxpy: new Uint32Array(0), hermite: new Uint32Array(0) };
    const warm = created.length;
    for (let round = 0; round < 6; round++) {
      const line = (await saxpy(2, xs, xs)) as Float32Array;
      const table = (await hermite(rows, { dims: { n: 16 } })) as NDArray;
      if (round === 0) {
        first.saxpy = bits(line).slice();
        first.hermite = bits(table.data as Float32Array).slice();
      } else {
        expect(firstDifference(bits(line), first.saxpy)).toBe(-1);
        expect(firstDifference(bits(table.data as Float32Array), first.hermite)).toBe(-1);
      }
    }
    // How many of a device's two Hermite chunks hold a read-back buffer at once depends on timing
    // (one, or both), and so does how soon the earlier calls' 4 MiB buffers must make room; what
    // does not is that no device creates more read-back buffers over all rounds than its calls hold
    // at once — one 2 MiB and at most two 8 MiB — where a pool keeping what it had created one or
    // two 8 MiB buffers in every round (6 or more).
    for (const device of [0, 1]) {
      const reads = created.slice(warm).filter((e) => e.device === device && e.direction === 'read');
      expect(reads.map((e) => e.bytes / MiB).sort((a, b) => a - b)).toEqual(reads.length === 2 ? [2, 8] : [2, 8, 8]);
      const pools = await onDevice(device, async () => stagingPoolStats(await acquireDevice()));
      expect(pools.read.bytes).toBeLessThanOrEqual(limit);
      expect(pools.read.sizes).toContain(8 * MiB); // given back last: the most recent
    }
  });

  it('a full pool gives up its least recently used buffers, never holds more than its limit, and keeps none larger than it', async () => {
    setStagingPoolLimit(6 * MiB);
    const ctx = await acquireDevice();
    const kept: number[][] = [];
    for (const mib of [1, 2, 4, 1, 8]) {
      // One call reading back `mib` MiB through a staging buffer of that size.
      const xs = values((mib * MiB) / 4, mib);
      const back = (await saxpy(1, xs, 0)) as Float32Array;
      expect(firstDifference(bits(back), bits(xs))).toBe(-1);
      kept.push(stagingPoolStats(ctx).read.sizes.map((s) => s / MiB));
    }
    expect(kept).toEqual([[1], [1, 2], [2, 4], [1, 4], [1, 4]]);
  });
});

describe('the staging pools grow to what a chunked call holds at once', () => {
  it('keeps at least 1 GiB a direction, and the staging of the chunks in flight where that is more; a set limit is kept as set', () => {
    expect(stagingPoolMaxBytes('write')).toBeGreaterThanOrEqual(2 ** 30);
    // Chunks of a SAXPY with 200 MiB pieces (above a 181 MiB memcpy threshold), 3 in flight: two
    // inputs a chunk, each through a 256 MiB staging buffer; one output.
    expectStagingInFlight([200 * MiB, 200 * MiB], [200 * MiB], 3);
    expect(stagingPoolMaxBytes('write')).toBe(3 * 2 * 256 * MiB);
    expect(stagingPoolMaxBytes('read')).toBe(2 ** 30); // 3 × 256 MiB: under the least it keeps
    expectStagingInFlight([MiB], [MiB], 3); // smaller calls do not shrink it
    expect(stagingPoolMaxBytes('write')).toBe(3 * 2 * 256 * MiB);
    setStagingPoolLimit(0);
    expect(stagingPoolMaxBytes('write')).toBe(0);
  });
});
