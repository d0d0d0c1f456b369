/**
 * Calls whose host arrays exceed `setGpuOptions({ memoryLimit })` run in chunks along their loop
 * dimensions, several in flight (streaming.ts): same results as the cpu target, device memory held
 * within the limit. A small limit makes small arrays stream, as a GPU's memory would large ones.
 */
import { afterAll, afterEach, describe, expect, it, vi } from 'vitest';
import { ArgumentError, type DeviceArray, deviceArray, getGpuOptions, guvectorize, type NDArray, setGpuOptions, toDevice, vectorize } from '../../../src/index.js';
import { bufferPoolStats } from '../../../src/targets/gpu/runtime/buffer-pool.js';
import { acquireDevice, setIdleReleaseMs, shutdownDevice } from '../../../src/targets/gpu/runtime/device.js';
import { deviceCount } from '../../../src/targets/gpu/runtime/gpu-options.js';
import { chunkBudget, hostOperandBytes, IN_FLIGHT, loopChunks, setChunkBytes } from '../../../src/targets/gpu/runtime/streaming.js';
import { pieceTarget } from '../../../src/targets/gpu/runtime/host-copy.js';
import { platform, type Platform } from '../../../src/platform/platform.js';
import { streamingStats } from '../../call-paths.js';
import type { CallPlan } from '../../../src/plan.js';
import { hermiteUfuncs } from '../../../examples/hermite.js';
import { describeGpu } from '../../gpu-available.js';
import { differences } from './compare-targets.js';

const KiB = 1024;
const DEFAULT_LIMIT = getGpuOptions().memoryLimit;
const values = (n: number, seed = 1) => new Float32Array(n).map((_, i) => (((i + seed) * 7919) % 1000) / 100 - 5);

afterEach(() => {
  setGpuOptions({ memoryLimit: DEFAULT_LIMIT });
  setChunkBytes(undefined);
  setIdleReleaseMs(200);
});
afterAll(() => shutdownDevice());

describe('setGpuOptions', () => {
  it('rejects a memory limit that is not a positive number, naming what it found', () => {
    expect(() => setGpuOptions({ memoryLimit: 0 })).toThrow(ArgumentError);
    expect(() => setGpuOptions({ memoryLimit: -1 })).toThrow(/memoryLimit must be a number of bytes > 0, found -1/);
    expect(() => setGpuOptions({ memoryLimit: '1GB' as unknown as number })).toThrow(/found 1GB/);
    expect(() => setGpuOptions(null as unknown as object)).toThrow(/expected an object of options, found null/);
    setGpuOptions({});
    expect(getGpuOptions().memoryLimit).toBe(DEFAULT_LIMIT);
  });
});

describe('loopChunks', () => {
  const plan = (loopShape: number[], strides: number[][], n: number): CallPlan =>
    ({
      kind: 'vectorize', kernel: {} as never, kernelKey: 'k', loopShape, nin: strides.length - 1, boundsCheck: true,
      operands: strides.map((s) => ({ dtype: 'float32', data: new Float32Array(n), offset: 0, loopStrides: s, coreShape: [], coreStrides: [] })),
    }) as CallPlan;

  it('cuts the outermost dimension into slices that fit, and covers every index once', () => {
    const p = plan([1000], [[1], [1]], 1000);
    const parts = [...loopChunks(p, 1024)];
    expect(parts.length).toBeGreaterThan(4);
    for (const part of parts) expect(hostOperandBytes(part)).toBeLessThanOrEqual(1024);
    const starts = parts.map((part) => part.operands[0]!.offset);
    expect(starts[0]).toBe(0);
    expect(parts.reduce((sum, part) => sum + part.loopShape[0]!, 0)).toBe(1000);
    parts.forEach((part, k) => k > 0 && expect(starts[k]).toBe(starts[k - 1]! + parts[k - 1]!.loopShape[0]!));
  });

  it('cuts slices alike: one step whose slices fit in their size classes, evened out over the dimension', () => {
    // 100,000 elements a vector: a step of 1000 × 100,000 / 1,200,000 = 83,333 is 333,332 bytes a
    // vector, rounded up to 393,216 by the size classes: too large, so the step shrinks rather than
    // each slice being cut again into a large and a small part.
    const p = plan([100_000], [[1], [1], [1]], 100_000);
    const parts = [...loopChunks(p, 1000 * 1000)];
    const sizes = new Set(parts.map((part) => part.loopShape[0]!));
    expect(Math.max(...sizes) - Math.min(...sizes)).toBeLessThanOrEqual(1);
    expect(new Set(parts.map(hostOperandBytes)).size).toBe(1);
    for (const part of parts) expect(hostOperandBytes(part)).toBeLessThanOrEqual(1000 * 1000);
    expect(parts.reduce((sum, part) => sum + part.loopShape[0]!, 0)).toBe(100_000);
  });

  it('cuts the next dimension when one index of the outer one does not fit; a broadcast row stays whole', () => {
    const p = plan([4, 2000], [[2000, 1], [0, 1], [2000, 1]], 8000); // x[4, 2000] + row[2000] -> out
    const parts = [...loopChunks(p, 6 * KiB)];
    for (const part of parts) {
      expect(part.loopShape[0]).toBe(1);
      expect(hostOperandBytes(part)).toBeLessThanOrEqual(6 * KiB);
    }
    expect(parts.reduce((sum, part) => sum + part.loopShape[1]!, 0)).toBe(4 * 2000);
  });
});

describe('chunkBudget', () => {
  const plan = (n: number, outputs: 'host' | 'none', limits?: object): CallPlan =>
    ({
      kind: 'vectorize', kernel: {} as never, kernelKey: 'k', loopShape: [n], nin: 1, boundsCheck: true, limits,
      operands: (outputs === 'host' ? [0, 1] : [0]).map(() => ({ dtype: 'float32', data: new Float32Array(n), offset: 0, loopStrides: [1], coreShape: [], coreStrides: [] })),
    }) as CallPlan;

  it('chunks a call over its memory limit, and a large call with host outputs; not a small one, nor one without host outputs or with a timeout', () => {
    setChunkBytes(64 * KiB);
    expect(chunkBudget(plan(64 * KiB, 'host'), 96 * KiB)).toBe(32 * KiB); // over the limit: a third of it a chunk
    expect(chunkBudget(plan(64 * KiB, 'host'), 2 ** 30)).toBe(64 * KiB); // large (512 KiB): chunks of 64 KiB
    expect(chunkBudget(plan(4 * KiB, 'host'), 2 ** 30)).toBeUndefined(); // 32 KiB: one piece
    expect(chunkBudget(plan(64 * KiB, 'none'), 2 ** 30)).toBeUndefined(); // device outputs: returns once recorded
    expect(chunkBudget(plan(64 * KiB, 'host', { timeout: 1000 }), 2 ** 30)).toBeUndefined(); // the limit is the whole call's
    setChunkBytes(undefined);
    expect(chunkBudget(plan(64 * KiB, 'host'), 2 ** 30)).toBeUndefined(); // 512 KiB is under two pieces of the host's
  });

  describe('derived from the host copy threshold (setChunkBytes not set)', () => {
    const MiB = 2 ** 20;
    const THRESHOLD = 2 * MiB;
    afterEach(() => vi.restoreAllMocks());
    /** A call of float32 inputs and one float32 output of `outElements` elements a loop index (a Hermite-like row: 16). */
    const call = (n: number, nin: number, outElements = 1): CallPlan =>
      ({
        kind: 'vectorize', kernel: {} as never, kernelKey: 'k', loopShape: [n], nin, boundsCheck: true,
        operands: [
          ...Array.from({ length: nin }, () => ({ dtype: 'float32', data: new Float32Array(n), offset: 0, loopStrides: [1], coreShape: [], coreStrides: [] })),
          { dtype: 'float32', data: new Float32Array(n * outElements), offset: 0, loopStrides: [outElements], coreShape: outElements > 1 ? [outElements] : [], coreStrides: outElements > 1 ? [1] : [] },
        ],
      }) as CallPlan;
    /** The bytes of each chunk's largest host operand when the call runs in chunks of `budget`. */
    const largestPieces = (p: CallPlan, budget: number) =>
      [...loopChunks(p, budget)].map((part) => Math.max(...part.operands.map((o) => o.loopStrides[0]! * part.loopShape[0]! * 4)));

    it('pieces of the largest operand above the threshold, as many chunks as that allows, for a SAXPY and a table of rows', () => {
      vi.spyOn(platform() as Required<Platform>, 'hostCopyThreshold').mockReturnValue(THRESHOLD);
      expect(pieceTarget()).toBe(Math.ceil(THRESHOLD * 1.1));
      for (const [p, arrayBytes] of [
        [call(4 * MiB, 2), 16 * MiB], // SAXPY: three arrays of 16 MiB
        [call(3_111_111, 2), 4 * 3_111_111], // an odd length
        [call(MiB, 1, 16), 64 * MiB], // rows of 16: a 4 MiB input, a 64 MiB output
      ] as const) {
        const budget = chunkBudget(p, 2 ** 34)!;
        expect(budget).toBeDefined();
        const pieces = largestPieces(p, budget);
        for (const piece of pieces) expect(piece).toBeGreaterThanOrEqual(THRESHOLD);
        // As many chunks as keep the pieces at the target (within the pool's size classes, 25% apart).
        expect(pieces.length).toBeGreaterThanOrEqual(Math.floor(arrayBytes / (1.25 * pieceTarget())));
      }
    });

    it('never fewer chunks than the memory limit needs, even with pieces below the threshold; one piece for arrays under two pieces', () => {
      vi.spyOn(platform() as Required<Platform>, 'hostCopyThreshold').mockReturnValue(THRESHOLD);
      const p = call(4 * MiB, 2); // 48 MiB of host operands
      const limit = 12 * MiB; // chunks of at most 4 MiB: pieces of ~1.3 MiB
      const budget = chunkBudget(p, limit)!;
      expect(budget).toBeLessThanOrEqual(limit / IN_FLIGHT);
      for (const part of loopChunks(p, budget)) expect(hostOperandBytes(part)).toBeLessThanOrEqual(limit / IN_FLIGHT);
      const threshold = vi.spyOn(platform() as Required<Platform>, 'hostCopyThreshold').mockReturnValue(16 * MiB);
      expect(chunkBudget(call(8 * MiB, 2), 2 ** 34)).toBeUndefined(); // 32 MiB arrays: under two pieces of 17.6 MiB
      threshold.mockReturnValue(THRESHOLD).mockClear();
      // 24 MiB of operands (pieces of 2.2 MiB would fit): too small to cut for speed; the threshold not even read.
      expect(chunkBudget(call(2 * MiB, 2), 2 ** 34)).toBeUndefined();
      expect(threshold).not.toHaveBeenCalled();
    });

    it("the Node platform reads glibc's threshold as this process uses it (Linux x86-64), and says nothing elsewhere", () => {
      const threshold = platform().hostCopyThreshold?.();
      if (process.platform === 'linux' && process.arch === 'x64') {
        // glibc derives it from the caches: a few MiB to a few hundred (181 MiB on the 2-core CI VM).
        expect(threshold).toBeGreaterThanOrEqual(2 ** 20);
        expect(threshold).toBeLessThan(2 ** 32);
      } else expect(threshold).toBeUndefined();
    });

    it('pieces of 64 MiB where the threshold is not known', () => {
      vi.spyOn(platform() as Required<Platform>, 'hostCopyThreshold').mockReturnValue(undefined);
      expect(pieceTarget()).toBe(64 * 2 ** 20);
    });
  });
});

describeGpu('streamed calls', { timeout: 120_000 }, () => {
  const axpy = (target: 'cpu' | 'gpu') => vectorize(['float32(float32, float32, float32)'], { target })((a: number, x: number, y: number) => a * x + y);
  const gpuAxpy = axpy('gpu');
  const cpuAxpy = axpy('cpu');

  it('SAXPY over host arrays 12× the limit: cpu results, chunks in flight, device memory held within the limit', async () => {
    const n = 96 * KiB; // 384 KiB a vector, 1.1 MiB of host operands
    const limit = 96 * KiB;
    const x = values(n);
    const y = values(n, 5);
    const expected = (await cpuAxpy(2.5, x, y)) as Float32Array;
    setIdleReleaseMs(Infinity);
    shutdownDevice(); // a fresh device: its pool's peak is this test's
    setGpuOptions({ memoryLimit: limit });
    const before = streamingStats();
    const got = (await gpuAxpy(2.5, x, y)) as Float32Array;
    const after = streamingStats();
    expect(differences(expected, got)).toEqual([]);
    // One streamed part per device the call was split over (UFUNC_TEST_GPU_DEVICES=2: two).
    expect(after.streamedCalls).toBe(before.streamedCalls + deviceCount());
    expect(after.chunks - before.chunks).toBeGreaterThanOrEqual(12);
    expect(after.maxInFlight).toBe(IN_FLIGHT);
    expect(bufferPoolStats(await acquireDevice()).peakHeldBytes).toBeLessThanOrEqual(limit);
  });

  it('under the default limit the same call is one chunk', async () => {
    const before = streamingStats();
    const x = values(4096);
    expect(differences((await cpuAxpy(2, x, 1)) as Float32Array, (await gpuAxpy(2, x, 1)) as Float32Array)).toEqual([]);
    expect(streamingStats().streamedCalls).toBe(before.streamedCalls);
  });

  it('2-D views, broadcasting and rows longer than a chunk', async () => {
    setGpuOptions({ memoryLimit: 24 * KiB });
    const m = { data: values(6 * 3000), shape: [3000, 6], strides: [1, 3000] }; // transposed
    const row = values(6, 3);
    const [c, g] = [(await cpuAxpy(m, row, 1)) as NDArray, (await gpuAxpy(m, row, 1)) as NDArray];
    expect(differences(c.data, g.data)).toEqual([]);
    const long = { data: values(3 * 20000), shape: [3, 20000] }; // one row is 78 KiB: cut within rows
    const before = streamingStats().chunks;
    const [c2, g2] = [(await cpuAxpy(0.5, long, row.subarray(0, 1))) as NDArray, (await gpuAxpy(0.5, long, row.subarray(0, 1))) as NDArray];
    expect(differences(c2.data, g2.data)).toEqual([]);
    expect(streamingStats().chunks - before).toBeGreaterThanOrEqual(9);
  });

  it('an output that overlaps an input, shifted, gets what it would unstreamed', async () => {
    setGpuOptions({ memoryLimit: 16 * KiB });
    const base = values(20001);
    const [bc, bg] = [base.slice(), base.slice()];
    await cpuAxpy(2, bc.subarray(1), 1, { out: bc.subarray(0, 20000) });
    await gpuAxpy(2, bg.subarray(1), 1, { out: bg.subarray(0, 20000) });
    expect(differences(bc, bg)).toEqual([]);
    const [ic, ig] = [base.slice(), base.slice()]; // exactly in place
    await cpuAxpy(3, ic, ic, { out: ic });
    await gpuAxpy(3, ig, ig, { out: ig });
    expect(differences(ic, ig)).toEqual([]);
  });

  it('host inputs into a device output, and a device input beside host ones', async () => {
    setGpuOptions({ memoryLimit: 32 * KiB });
    const x = values(40000);
    const expected = (await cpuAxpy(1.5, x, x)) as Float32Array;
    const out = await deviceArray([40000], 'float32');
    const before = streamingStats().chunks;
    await gpuAxpy(1.5, x, x, { out });
    expect(streamingStats().chunks - before).toBeGreaterThanOrEqual(4);
    expect(differences(expected, (await out.toHost()) as Float32Array)).toEqual([]);
    out.destroy();
    const dx = await toDevice(x);
    const result = (await gpuAxpy(1.5, dx, x)) as unknown as DeviceArray; // a device input: a device result
    expect(differences(expected, (await result.toHost()) as Float32Array)).toEqual([]);
    dx.destroy();
    result.destroy();
  });

  it('a large call within the limit runs in chunks too (the chunk size made small here): the bits of one piece', async () => {
    const n = 50_001;
    const x = values(n);
    const y = values(n, 3);
    const whole = (await gpuAxpy(0.75, x, y)) as Float32Array;
    setChunkBytes(64 * KiB);
    const before = streamingStats();
    const chunked = (await gpuAxpy(0.75, x, y)) as Float32Array;
    const after = streamingStats();
    expect(after.streamedCalls - before.streamedCalls).toBe(deviceCount()); // one per device's part
    expect(after.chunks - before.chunks).toBeGreaterThanOrEqual(9); // 600 KiB of operands in ≤ 64 KiB
    expect(new Uint32Array(chunked.buffer)).toEqual(new Uint32Array(whole.buffer));
  });

  it('the Hermite table ()->(n) streamed over its rows: the bits of the unstreamed gpu call', async () => {
    // (The gpu's sqrt and division may differ from the cpu's in the last bit: compared with itself.)
    const gpu = hermiteUfuncs('gpu').fromScalar;
    const xs = values(5000).map((v) => v / 2.5);
    const whole = (await gpu(xs, { dims: { n: 16 } })) as NDArray;
    setGpuOptions({ memoryLimit: 48 * KiB });
    const before = streamingStats().chunks;
    const g = (await gpu(xs, { dims: { n: 16 } })) as NDArray;
    expect(g.shape).toEqual([5000, 16]);
    expect(differences(whole.data, g.data)).toEqual([]);
    expect(streamingStats().chunks - before).toBeGreaterThanOrEqual(8);
  });
});
