/** Outputs the front allocates for a parallel call live in shared memory, so nothing is copied back. */
import { expect, it } from 'vitest';
import { getParallelOptions, guvectorize, isShared, setEngineMode, vectorize, type NDArray } from '../../../src/index.js';
import { isInWasmMemory } from '../../../src/targets/cpu/wasm/index.js';
import { __testing } from '../../../src/targets/parallel/index.js';

it('allocates large outputs in shared memory, small ones in ordinary memory', async () => {
  const { threshold } = getParallelOptions();
  const twice = vectorize(['float64(float64)'], { target: 'parallel' })((x: number) => 2 * x);
  const big = await twice(new Float64Array(threshold * 2).fill(1));
  expect(isShared(big)).toBe(true);
  expect(big.every((v: number) => v === 2)).toBe(true);
  expect(isShared(twice.sync(new Float64Array(threshold * 2).fill(1)))).toBe(true);
  expect(isShared(await twice(new Float64Array(4)))).toBe(false);

  const ramp = guvectorize(['void(float64, float64[:])'], '()->(n)', { target: 'parallel' })((x: number, out: Float64Array) => {
    for (let i = 0; i < out.length; i++) out[i] = x + i;
  });
  const table = (await ramp(new Float64Array(threshold).fill(1), { dims: { n: 4 } })) as NDArray;
  expect(isShared(table)).toBe(true);
  expect([...table.data.subarray(0, 4)]).toEqual([1, 2, 3, 4]);
});

it('runs repeated large calls with a scalar argument on the pool (the fast path keeps them splittable)', async () => {
  const { callCounts } = await import('../../call-paths.js');
  const { threshold } = getParallelOptions();
  const saxpy = vectorize(['float32(float32, float32, float32)'], { target: 'parallel' })((a: number, x: number, y: number) => a * x + y);
  const x = new Float32Array(threshold * 8).fill(1);
  const out = new Float32Array(x.length);
  callCounts(true);
  for (let i = 0; i < 3; i++) await saxpy(2, x, x, { out });
  expect(callCounts().pool).toBe(3);
  expect(out.every((v) => v === 3)).toBe(true);
});

it('keeps a result safe while any view of it lives: a subarray of a dropped result is never overwritten by later calls', async () => {
  const { setFlagsFromString } = await import('node:v8');
  const { runInNewContext } = await import('node:vm');
  setFlagsFromString('--expose-gc');
  const gc = runInNewContext('gc') as () => void;
  const { threshold } = getParallelOptions();
  const plusOne = vectorize(['float64(float64)'], { target: 'parallel' })((x: number) => x + 1);
  let result: Float64Array | undefined = (await plusOne(new Float64Array(threshold * 2).fill(1))) as Float64Array;
  // Not a block of the Wasm memory, which is freed when the array object is collected, views or not.
  expect(isInWasmMemory(result)).toBe(false);
  const head = result.subarray(0, 4);
  const whole = new Float64Array(result.buffer, result.byteOffset, 4);
  result = undefined;
  // The result object is collected; its memory must not be handed to the next calls' outputs.
  for (let i = 0; i < 12; i++) {
    gc();
    await new Promise((resolve) => setTimeout(resolve, 20));
    await plusOne(new Float64Array(threshold * 2).fill(41 + i));
    expect([...head]).toEqual([2, 2, 2, 2]);
    expect([...whole]).toEqual([2, 2, 2, 2]);
  }
});

it("chains calls on the Wasm engine: a result (shared memory outside the Wasm memory) is the next call's input, which the threads copy in, per element and per row, sync and awaited", async () => {
  const { callCounts, wasmJobs } = await import('../../call-paths.js');
  const { threshold } = getParallelOptions();
  const before = setEngineMode('wasm');
  try {
    const n = threshold * 8;
    const step = vectorize(['float64(float64)'], { target: 'parallel' })((x: number) => x * 0.5 + 1);
    const first = (await step(Float64Array.from({ length: n }, (_, i) => i))) as Float64Array;
    expect(isShared(first) && !isInWasmMemory(first)).toBe(true);
    callCounts(true);
    wasmJobs(true);
    const awaited = (await step(first)) as Float64Array;
    const sync = step.sync(first) as Float64Array;
    // A per-row kernel reading its output before it writes it: the threads copy the fresh output in too.
    const normalize = guvectorize(['void(float64[:], float64[:])'], '(n)->(n)', { target: 'parallel' })((row: Float64Array, out: Float64Array) => {
      let sum = out[0]!;
      for (let i = 0; i < row.length; i++) sum += row[i]!;
      for (let i = 0; i < row.length; i++) out[i] = row[i]! / sum;
    });
    const rows = { data: first, shape: [n / 8, 8] };
    const normalized = [(await normalize(rows)) as NDArray, normalize.sync(rows) as NDArray];
    expect(callCounts().pool).toBe(4);
    expect(wasmJobs()).toBe(4);
    for (let i = 0; i < n; i++) {
      const expected = (i * 0.5 + 1) * 0.5 + 1;
      if (awaited[i] !== expected || sync[i] !== expected) expect([i, awaited[i], sync[i]]).toEqual([i, expected, expected]);
    }
    for (const { data } of normalized) {
      for (let r = 0; r < n / 8; r++) {
        let sum = 0;
        for (let j = 0; j < 8; j++) sum += first[r * 8 + j]!;
        for (let j = 0; j < 8; j++) if (data[r * 8 + j] !== first[r * 8 + j]! / sum) expect([r, j, data[r * 8 + j]]).toEqual([r, j, first[r * 8 + j]! / sum]);
      }
    }
  } finally {
    setEngineMode(before);
  }
});

it('gives zeros where a per-row kernel leaves its fresh output unwritten on the Wasm engine, though the staging arena held an earlier call\'s rows', async () => {
  const { callCounts, wasmJobs } = await import('../../call-paths.js');
  const { threshold } = getParallelOptions();
  const placement = __testing.measuredPlacement(false);
  const before = setEngineMode('wasm');
  try {
    const rows = threshold;
    const x = Float64Array.from({ length: rows * 8 }, (_, i) => i + 1);
    const signature = ['void(float64[:], float64[:])'];
    // Fills every element of its rows: the arena the Wasm engine stages outputs in holds these after the call.
    const fill = guvectorize(signature, '(n)->(n)', { target: 'parallel' })((row: Float64Array, out: Float64Array) => {
      for (let i = 0; i < row.length; i++) out[i] = -row[i]!;
    });
    // Writes the first element of each row only and reads the second before: the rest stay as allocated.
    const head = guvectorize(signature, '(n)->(n)', { target: 'parallel' })((row: Float64Array, out: Float64Array) => {
      out[0] = row[0]! + out[1]!;
    });
    callCounts(true);
    wasmJobs(true);
    for (const sync of [false, true]) {
      for (let round = 0; round < 2; round++) {
        const filled = (sync ? fill.sync({ data: x, shape: [rows, 8] }) : await fill({ data: x, shape: [rows, 8] })) as NDArray;
        expect(filled.data[rows * 8 - 1]).toBe(-rows * 8);
        const { data } = (sync ? head.sync({ data: x, shape: [rows, 8] }) : await head({ data: x, shape: [rows, 8] })) as NDArray;
        for (let i = 0; i < rows * 8; i++) {
          const expected = i % 8 === 0 ? x[i]! : 0;
          if (data[i] !== expected) expect([sync, round, i, data[i]]).toEqual([sync, round, i, expected]);
        }
      }
    }
    expect(callCounts().pool).toBe(8);
    expect(wasmJobs()).toBe(8);
  } finally {
    setEngineMode(before);
    __testing.measuredPlacement(placement);
  }
});

it('lets the memory of dropped results go: a worker collects its heap once it has released enough shared memory', async () => {
  const { setFlagsFromString } = await import('node:v8');
  const { runInNewContext } = await import('node:vm');
  setFlagsFromString('--expose-gc');
  const gc = runInNewContext('gc') as () => void;
  const held = async (collectAfterBytes: number) => {
    await __testing.resetPool({ collectAfterBytes });
    // The Wasm engine: its results reach the workers only for the call (the JS engine's argument sets keep the last few).
    // On the workers whatever placement.ts measures (this cheap kernel could move to the calling thread).
    const placement = __testing.measuredPlacement(false);
    const before = setEngineMode('wasm');
    try {
      const n = getParallelOptions().threshold * 8;
      const relu = vectorize(['float32(float32)'], { target: 'parallel' })((x: number) => (x > 0 ? x : 0));
      const x = new Float32Array(n).fill(-1);
      await relu(x);
      gc();
      const start = process.memoryUsage().arrayBuffers;
      for (let i = 0; i < 40; i++) await relu(x); // each result dropped
      // V8 frees dead array buffers' memory on a background sweeper after a collection, so the count
      // lags it (on a loaded machine by more than one turn): wait for it, up to a second.
      let held = Infinity;
      for (let wait = 0; wait < 20 && held >= 8; wait++) {
        gc();
        await new Promise((resolve) => setTimeout(resolve, 50));
        held = (process.memoryUsage().arrayBuffers - start) / (n * 4);
      }
      return held;
    } finally {
      setEngineMode(before);
      __testing.measuredPlacement(placement);
    }
  };
  try {
    // Results' worth of memory still held after the calling thread collected.
    expect(await held(1 << 20)).toBeLessThan(8);
    expect(await held(Infinity)).toBeGreaterThan(30); // never collecting: the workers held every result
  } finally {
    await __testing.resetPool();
  }
}, 30_000); // 80 calls of 8 thresholds' worth and up to 2 s of waiting for the sweeper: ~5 s under load, at the default limit
