/**
 * The device fast path for guvectorize calls (the plan cache, plan-cache.ts): repeated per-row calls
 * on device arrays reuse an earlier call's plan, give the results the general path gives, and fail
 * with the general path's errors — on a real WebGPU device (lavapipe here).
 */
import { afterEach, expect, it } from 'vitest';
import { DeviceArray, deviceArray, guvectorize, synchronize, toDevice } from '../../../src/index.js';
import { cachedCalls } from '../../call-paths.js';
import { KernelRuntimeError } from '../../../src/errors.js';
import { describeGpu } from '../../gpu-available.js';
import { differences } from './compare-targets.js';
import { hermiteRow } from '../../kernels.js';

const iota = (n: number, scale = 1) => Float32Array.from({ length: n }, (_, i) => i * scale);

const makeHermite = (target: 'gpu' | 'cpu') =>
  guvectorize(['void(float32, float32[:])'], '()->(n)', { target, env: { hermiteRow } })((x: number, out: Float32Array) => {
    hermiteRow(x, out);
  });
/** A row scaled and shifted by two JS numbers: `(n),(),()->(n)`, as a Lorenz-96 step takes F and dt. */
const makeAffine = (target: 'gpu' | 'cpu') =>
  guvectorize(['void(float32[:], float32, float32, float32[:])'], '(n),(),()->(n)', { target })((x: Float32Array, a: number, b: number, out: Float32Array) => {
    for (let i = 0; i < x.length; i++) out[i] = a * x[i]! + b;
  });

async function host(d: unknown): Promise<Float32Array> {
  return (await (d as DeviceArray).toHost()) as Float32Array;
}

/** The error a call fails with (from the call itself or the next synchronisation), as class and message. */
async function failure(call: () => Promise<unknown>): Promise<{ kind: string; message: string }> {
  try {
    const result = await call();
    if (result instanceof DeviceArray) await result.toHost();
    await synchronize();
  } catch (e) {
    return { kind: (e as Error).constructor.name, message: (e as Error).message };
  }
  return { kind: 'none', message: '' };
}

describeGpu('the device fast path of guvectorize calls', { timeout: 60_000 }, () => {
  afterEach(async () => {
    await synchronize().catch(() => {});
  });

  it('repeated per-row calls into `out` take it and give the general path\'s results bit for bit', async () => {
    const gpu = makeHermite('gpu');
    const cpu = makeHermite('cpu');
    const rows = 300;
    const xs = Float32Array.from({ length: rows }, (_, i) => -2 + (4 * i) / rows);
    const x = await toDevice(xs);
    const outs = [await deviceArray([rows, 16], 'float32'), await deviceArray([rows, 16], 'float32')];
    await gpu(x, { out: outs[0]! }); // the general path, which the next calls learn from
    const expected = await host(outs[0]);
    // (and close to the cpu target's, which computes the running factorial in float64)
    const onCpu = ((await cpu(xs, { out: { data: new Float32Array(rows * 16), shape: [rows, 16] } })) as { data: Float32Array }).data;
    expect(expected.every((v, i) => Math.abs(v - onCpu[i]!) <= 1e-6 * Math.max(1, Math.abs(v)))).toBe(true);
    await outs[0]!.set(new Float32Array(rows * 16));
    const before = cachedCalls();
    for (let k = 0; k < 20; k++) await gpu(x, { out: outs[k % 2]! });
    expect(cachedCalls() - before).toBe(20);
    for (const out of outs) expect(differences(await host(out), expected)).toEqual([]);
  });

  it('calls that allocate their output take it too, each getting an array of its own', async () => {
    const gpu = makeAffine('gpu');
    const x = await toDevice({ data: iota(12), shape: [3, 4] });
    const first = (await gpu(x, 2, 1)) as DeviceArray;
    const before = cachedCalls();
    const later = [(await gpu(x, 2, 1)) as DeviceArray, (await gpu(x, 2, 1)) as DeviceArray];
    expect(cachedCalls() - before).toBe(2);
    expect(later[0]).not.toBe(later[1]);
    for (const a of later) {
      expect(a.shape).toEqual(first.shape);
      expect(differences(await host(a), await host(first))).toEqual([]);
    }
  });

  it('JS numbers are read per call; another shape or layout takes the general path and gets its own result', async () => {
    const gpu = makeAffine('gpu');
    const n = 40;
    const x = await toDevice({ data: iota(4 * n), shape: [4, n] });
    const out = await deviceArray([4, n], 'float32');
    const expect4 = (a: number, b: number) => iota(4 * n).map((v) => Math.fround(Math.fround(a * v) + b));
    await gpu(x, 8, 0.01, { out });
    const before = cachedCalls();
    for (const [a, b] of [[8, 0.5], [3, 0.25], [7, 0.75]] as const) {
      await gpu(x, a, b, { out });
      expect(differences(await host(out), expect4(a, b))).toEqual([]);
    }
    expect(cachedCalls() - before).toBe(3);
    // Rows of another length, a transposed view, a shorter loop: each laid out as the general path does.
    const y = await toDevice({ data: iota(3 * 8), shape: [3, 8] });
    const yOut = await deviceArray([3, 8], 'float32');
    await gpu(y, 2, 1, { out: yOut });
    expect(differences(await host(yOut), iota(24).map((v) => Math.fround(2 * v + 1)))).toEqual([]);
    const xT = x.view([n, 4], [1, n], 0); // columns of x as rows
    const tOut = await deviceArray([n, 4], 'float32');
    await gpu(xT, 1, 0, { out: tOut });
    const transposed = new Float32Array(4 * n);
    for (let i = 0; i < n; i++) for (let j = 0; j < 4; j++) transposed[i * 4 + j] = j * n + i;
    expect(differences(await host(tOut), transposed)).toEqual([]);
    await gpu(x, 1, 2, { out }); // back to the first layout
    expect(differences(await host(out), expect4(1, 2))).toEqual([]);
  });

  it('a call that does not fit fails with the same error as on a ufunc that never took the fast path', async () => {
    const learned = makeAffine('gpu');
    const n = 16;
    const x = await toDevice({ data: iota(2 * n), shape: [2, n] });
    const out = await deviceArray([2, n], 'float32');
    await learned(x, 1, 0, { out });
    await learned(x, 1, 0, { out }); // learned and taken
    const cases: [string, (f: ReturnType<typeof makeAffine>) => Promise<unknown>][] = [
      ['a destroyed input', async (f) => {
        const gone = await toDevice({ data: iota(2 * n), shape: [2, n] });
        gone.destroy();
        return f(gone, 1, 0, { out });
      }],
      ['a destroyed out', async (f) => {
        const gone = await deviceArray([2, n], 'float32');
        gone.destroy();
        return f(x, 1, 0, { out: gone });
      }],
      ['an out with other rows', async (f) => f(x, 1, 0, { out: await deviceArray([3, n], 'float32') })],
      ['an out with other row length', async (f) => f(x, 1, 0, { out: await deviceArray([2, n + 1], 'float32') })],
      ['an int32 out', async (f) => f(x, 1, 0, { out: await deviceArray([2, n], 'int32') })],
      ['an int32 input', async (f) => f(await deviceArray([2, n], 'int32'), 1, 0, { out })],
      ['a number where a float32 cannot hold it', async (f) => f(x, 2 ** 200, 0, { out })],
      ['a bigint', async (f) => f(x, 1n, 0, { out })],
    ];
    for (const [what, call] of cases) {
      const fresh = makeAffine('gpu');
      const expected = await failure(() => call(fresh));
      const got = await failure(() => call(learned));
      expect({ what, ...got }).toEqual({ what, ...expected });
    }
    // Not all of those are errors (an int32 out is a cast on the device), but most must be.
    const errors = await Promise.all(cases.map(([, call]) => failure(() => call(makeAffine('gpu')))));
    expect(errors.filter((e) => e.kind !== 'none').length).toBeGreaterThanOrEqual(5);
  });

  it('an out-of-bounds index in a fast-path call surfaces at the next synchronize(), naming the call', async () => {
    const reader = guvectorize(['void(float32[:], int32, float32[:])'], '(n),()->()', { target: 'gpu' })((x: Float32Array, i: number, out: Float32Array) => {
      out[0] = x[i]!;
    });
    const x = await toDevice({ data: iota(8), shape: [2, 4] });
    const out = await deviceArray([2], 'float32');
    await reader(x, 1, { out });
    await reader(x, 2, { out });
    expect(Array.from(await host(out))).toEqual([2, 6]);
    const before = cachedCalls();
    const bad = await reader(x, 9, { out }); // returns at once: nothing waited
    expect(cachedCalls() - before).toBe(1);
    expect(bad).toBe(out);
    const error = await synchronize().then(() => undefined, (e: unknown) => e);
    expect(error).toBeInstanceOf(KernelRuntimeError);
    expect((error as Error).message).toMatch(/^gpu call #\d+ \(`kernel`\) failed: Index \[9\] is out of bounds for `x` at tests\/targets\/gpu\/fast-rows\.test\.ts:146:16 \(its shape is \[4\]\)\. The outputs may be partially written\.\n {2}out\[0\] = x\[i\]!;\n {11}\^$/);
  });
});
