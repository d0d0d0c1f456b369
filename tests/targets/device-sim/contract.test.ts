/**
 * The target contract for a target with memory of its own, proved by a target that lives only in
 * the test suite (index.ts here) and is added with one line: the front hands it device arrays,
 * allocates device outputs through it, stages casts and masks on it, folds with it, learns from
 * its capabilities what it cannot store or do synchronously, and shuts it down — with no edit to
 * the front or to other targets.
 */
import { describe, expect, it } from 'vitest';

import { guvectorize, shutdown, TargetUnavailableError, type TargetName, vectorize } from '../../../src/index.js';
import { registerTarget } from '../../../src/targets/registry.js';
import { DEVICE_SIM_ENTRY, SimArray, simTrace } from './index.js';

const sim = 'device-sim' as TargetName;
/** A ufunc called with this target's arrays. */
type Loose = ((...args: unknown[]) => Promise<unknown>) & { sync(...args: unknown[]): unknown; reduce(...args: unknown[]): Promise<unknown>; accumulate(...args: unknown[]): Promise<unknown> };

registerTarget(DEVICE_SIM_ENTRY);

describe('a device target added with one line', () => {
  const kernel = (a: number, b: number) => a * b + 1;
  // Loosely typed: the public types know the gpu's DeviceArray, not this target's arrays.
  const onSim = vectorize(['float32(float32, float32)', 'int32(int32, int32)'], { target: sim })(kernel) as unknown as Loose;
  const onCpu = vectorize(['float32(float32, float32)', 'int32(int32, int32)'])(kernel);
  const x = Float32Array.from({ length: 10 }, (_, i) => i - 3.5);
  const y = Float32Array.from({ length: 10 }, (_, i) => 0.25 * i);

  it('runs calls on its device arrays, with the cpu target\'s answers, and allocates their outputs', async () => {
    const allocated = simTrace.allocated;
    const result = await onSim(SimArray.of(x), SimArray.of(y));
    expect(result).toBeInstanceOf(SimArray);
    expect((result as SimArray).toArray()).toEqual([...(await onCpu(x, y))]);
    expect(simTrace.allocated).toBe(allocated + 1);
    // Again (a call like an earlier one), with a scalar, and into a given output.
    const out = SimArray.of(new Float32Array(10));
    await onSim(SimArray.of(x), 2, { out });
    expect(out.toArray()).toEqual([...(await onCpu(x, 2))]);
    await onSim(SimArray.of(x), SimArray.of(y), { out });
    expect(out.toArray()).toEqual([...(await onCpu(x, y))]);
  });

  it('views device arrays as the front asks: strided, 2-D, broadcast', async () => {
    const grid = new SimArray(Float32Array.from({ length: 12 }, (_, i) => i), 'float32', [3, 4], [4, 1], 0);
    const column = new SimArray(Float32Array.from([1, 2, 3]), 'float32', [3, 1], [1, 1], 0);
    const result = (await onSim(grid, column)) as SimArray;
    expect(result.shape).toEqual([3, 4]);
    const expected = await onCpu({ data: Float32Array.from({ length: 12 }, (_, i) => i), shape: [3, 4] }, { data: Float32Array.from([1, 2, 3]), shape: [3, 1] });
    expect(result.toArray()).toEqual([...expected.data]);
    const everyOther = grid.view([6], [2], 0);
    expect(((await onSim(everyOther, 1)) as SimArray).toArray()).toEqual([0, 2, 4, 6, 8, 10].map((v) => v + 1));
  });

  it('stages a cast output and a masked one on the device', async () => {
    const rows = guvectorize(['void(float32[:], float32[:])'], '(n)->(n)', { target: sim })((a: Float32Array, out: Float32Array) => {
      for (let i = 0; i < a.length; i++) out[i] = 2 * a[i]!;
    }) as unknown as Loose;
    const ints = SimArray.of(new Int32Array(10));
    await rows(SimArray.of(x), { out: ints, casting: 'unsafe' });
    expect(ints.toArray()).toEqual([...x].map((v) => Math.trunc(2 * v)));
    const destroyed = simTrace.destroyed;
    const where = Uint8Array.from({ length: 10 }, (_, i) => i % 2);
    const kept = SimArray.of(new Float32Array(10).fill(-1));
    await onSim(SimArray.of(x), SimArray.of(y), { out: kept, where });
    expect(kept.toArray()).toEqual([...x].map((v, i) => (i % 2 ? Math.fround(v * y[i]! + 1) : -1)));
    await rows(SimArray.of(x), { out: SimArray.of(new Int32Array(10)), casting: 'unsafe' });
    expect(simTrace.destroyed).toBeGreaterThan(destroyed); // the staged temporaries are freed
  });

  it('reduces and accumulates device arrays with fold kernels on itself', async () => {
    const add = vectorize(['float32(float32, float32)'], { target: sim, identity: 0 })((a: number, b: number) => a + b) as unknown as Loose;
    const grid = new SimArray(Float32Array.from({ length: 12 }, (_, i) => i), 'float32', [3, 4], [4, 1], 0);
    const sums = (await add.reduce(grid, { axis: 1 })) as SimArray;
    expect(sums).toBeInstanceOf(SimArray);
    expect(sums.toArray()).toEqual([6, 22, 38]);
    const running = (await add.accumulate(grid, { axis: 0 })) as SimArray;
    expect(running.toArray()).toEqual([0, 1, 2, 3, 4, 6, 8, 10, 12, 15, 18, 21]);
  });

  it('is refused what its capabilities say it cannot do, in its own words', async () => {
    const f64 = vectorize(['float64(float64, float64)'], { target: sim })(kernel) as unknown as Loose;
    await expect(f64(SimArray.of(x), SimArray.of(y))).rejects.toThrow(TargetUnavailableError);
    await expect(f64(SimArray.of(x), SimArray.of(y))).rejects.toThrow(/'device-sim' target.*\(the simulated device stores 32-bit types at most\)/s);
    expect(() => onSim.sync(SimArray.of(x), SimArray.of(y))).toThrow(/The 'device-sim' target has no synchronous call/);
    await expect((onCpu as unknown as Loose)(SimArray.of(x), 1)).rejects.toThrow(/is a DeviceArray, which lives on a device, but this ufunc's target is 'cpu'.*use target 'gpu' or 'device-sim'/s);
  });

  it('is shut down by shutdown()', async () => {
    const before = simTrace.shutdowns;
    await shutdown();
    expect(simTrace.shutdowns).toBe(before + 1);
  });
});
