/**
 * The target contract, proved by a target that lives only in the test suite (index.ts here) and is
 * added with one line: it runs vectorize and guvectorize calls, sync and async, on every layout,
 * with the cpu's answers; it compiles once per layout class; methods it does not run itself fall
 * back to the shared defaults.
 */
import { beforeAll, describe, expect, it } from 'vitest';

import { guvectorize, TargetUnavailableError, type TargetName, vectorize } from '../../../src/index.js';
import { registerTarget } from '../../../src/targets/registry.js';
import { trace, TRACED_ENTRY } from './index.js';

const traced = 'traced' as TargetName;

beforeAll(() => registerTarget(TRACED_ENTRY));

describe('a target added with one line', () => {
  const kernel = (a: number, b: number) => a * b + 1;
  const f = () => vectorize(['float64(float64, float64)'], { target: traced })(kernel);
  const onCpu = vectorize(['float64(float64, float64)'])(kernel);

  it('runs calls with the cpu target\'s answers, sync and async, on every layout', async () => {
    const ufunc = f();
    expect(ufunc.target).toBe('traced');
    const x = Float64Array.from({ length: 12 }, (_, i) => i - 3);
    const y = Float64Array.from({ length: 12 }, (_, i) => 0.5 * i);
    const strided = { data: x, shape: [3, 2], strides: [4, 2], offset: 1 };
    const calls: unknown[][] = [[x, y], [x, 2], [strided, 3], [{ data: x, shape: [3, 4] }, { data: y, shape: [1, 4] }], [2, 5]];
    for (const args of calls) {
      // Each row of `calls` is a valid argument list; the types cannot follow a table of them.
      const call = args as [never, never];
      expect(await ufunc(...call)).toEqual(await onCpu(...call));
      expect(ufunc.sync(...call)).toEqual(onCpu.sync(...call));
    }
    expect(trace.runs).toBeGreaterThanOrEqual(calls.length);
    expect(trace.syncRuns).toBeGreaterThanOrEqual(calls.length);
    expect(trace.allocated).toBeGreaterThan(0); // the front allocates outputs through the target
  });

  it('compiles once per kernel and layout class, whatever the call', async () => {
    const ufunc = f();
    const before = trace.compiled;
    const x = new Float64Array(100);
    for (let i = 0; i < 5; i++) ufunc.sync(x, x);
    expect(trace.compiled - before).toBe(1);
    await ufunc({ data: x, shape: [50], strides: [2] }, x.subarray(0, 50)); // strided: another class
    await ufunc({ data: x, shape: [25], strides: [4] }, x.subarray(0, 25)); // strided again: the same class
    expect(trace.compiled - before).toBe(2);
  });

  it('runs guvectorize kernels', async () => {
    const cumsum = (t: TargetName) =>
      guvectorize(['void(float32[:], float32[:])'], '(n)->(n)', { target: t })((a: Float32Array, out: Float32Array) => {
        let s = 0;
        for (let i = 0; i < a.length; i++) {
          s += a[i]!;
          out[i] = s;
        }
      });
    const rows = { data: Float32Array.from({ length: 12 }, (_, i) => i), shape: [3, 4] };
    expect(await cumsum(traced)(rows)).toEqual(await cumsum('cpu')(rows));
  });

  it('runs the ufunc methods it hooks, and the shared default for the others', async () => {
    const add = vectorize(['float64(float64, float64)'], { target: traced, identity: 0 })((a: number, b: number) => a + b);
    const x = Float64Array.of(1, 2, 3, 4);
    const hooks = trace.reduceHooks;
    expect(await add.reduce(x)).toBe(10);
    expect(trace.reduceHooks).toBe(hooks + 1);
    expect([...(await add.accumulate(x))]).toEqual([1, 3, 6, 10]);
    const runs = trace.runs;
    expect((await add.outer(Float64Array.of(1, 2), Float64Array.of(10, 20, 30))).data).toEqual(Float64Array.of(11, 21, 31, 12, 22, 32));
    expect(trace.runs).toBe(runs + 1); // outer ran on the traced target
  });

  it('is listed where targets are', () => {
    expect(() => vectorize([], { target: 'tpu' as TargetName })).toThrowError(TargetUnavailableError);
    expect(() => vectorize([], { target: 'tpu' as TargetName })((a: number) => a)).toThrowErrorMatchingInlineSnapshot(
      `[TargetUnavailableError: Unknown target \`tpu\`; the targets are 'cpu', 'parallel', 'gpu', 'traced'.]`,
    );
    expect(() => registerTarget(TRACED_ENTRY)).toThrowError(/registered already/);
  });
});
