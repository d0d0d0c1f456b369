/**
 * Costly kernels go to the workers below the threshold: the threshold counts elements, and an
 * element of a kernel with a loop of hundreds of steps costs what a thousand elements of `a + b`
 * cost (on the calling thread, an awaited call of it would block the event loop throughout).
 */
import { afterEach, describe, expect, it } from 'vitest';
import { ready, setParallelOptions, vectorize } from '../../../src/index.js';
import { DEFAULT_THRESHOLD } from '../../../src/targets/parallel/index.js';
import { callCounts } from '../../call-paths.js';
import { isCostly, MIN_COSTED_WORK, POOL_SECONDS, recordCallTime } from '../../../src/targets/parallel/kernel-cost.js';
import type { TypedKernel } from '../../../src/compiler/ir.js';
import os from 'node:os';

const N = 8192; // well below the threshold (32,768), and 4× that for ordinary arrays

describe('the cost of a kernel', () => {
  afterEach(() => setParallelOptions({ workers: os.availableParallelism(), threshold: DEFAULT_THRESHOLD }));

  it('sends an element-wise kernel with a loop to the workers from its first call', async () => {
    const iterate = vectorize(['float64(float64)'], { target: 'parallel' })((x: number) => {
      let s = 0;
      for (let i = 0; i < 400; i++) s += Math.sqrt(x + i) * 0.5;
      return s;
    });
    await ready();
    const xs = new Float64Array(N).map((_, i) => i);
    callCounts(true);
    const ys = await iterate(xs);
    expect(callCounts(true)).toEqual({ pool: 1, callingThread: 0, unsplittable: 0 });
    let expected = 0;
    for (let i = 0; i < 400; i++) expected += Math.sqrt(N - 1 + i) * 0.5;
    expect(ys[N - 1]).toBe(expected);
    expect(iterate.explain(xs)).toMatch(/^On \d+ workers?/);
  });

  it('keeps a cheap kernel on the calling thread below the threshold, and says what it measured', async () => {
    const twice = vectorize(['float64(float64)'], { target: 'parallel' })((x: number) => 2 * x);
    // 2,048 elements of `2 * x` take a few µs (the lowest of six calls, so a loaded machine's pauses
    // are left out): far below the pool's 0.25 ms.
    const xs = new Float64Array(2048).fill(1);
    for (let k = 0; k < 6; k++) await twice(xs);
    callCounts(true);
    expect((await twice(xs))[0]).toBe(2);
    expect(callCounts(true)).toEqual({ pool: 0, callingThread: 1, unsplittable: 0 });
    expect(twice.explain(xs)).toMatch(/measured cost, about [\d.e-]+ ms on one thread, is below 0\.25 ms/);
  });

  it('sends a kernel without a loop to the workers once two calls measured it costly', async () => {
    const heavy = vectorize(['float64(float64)'], { target: 'parallel' })(
      (x: number) => Math.exp(Math.sin(x)) * Math.log1p(Math.abs(Math.cos(x))) + Math.atan2(Math.tan(x), Math.cbrt(x + 2)) + Math.pow(Math.abs(x) + 1, 0.3) +
        Math.sinh(Math.sin(x)) * Math.cosh(Math.cos(x)) + Math.asin(Math.sin(x) / 2) + Math.hypot(Math.exp(Math.cos(x)), Math.log(x * x + 1)),
    );
    const xs = new Float64Array(N).map((_, i) => i / N);
    // The first call compiles (not counted); the next two are timed on the calling thread.
    callCounts(true);
    let seconds = Infinity;
    for (let k = 0; k < 3; k++) {
      const t0 = performance.now();
      await heavy(xs);
      if (k > 0) seconds = Math.min(seconds, (performance.now() - t0) / 1000);
    }
    expect(callCounts(true)).toEqual({ pool: 0, callingThread: 3, unsplittable: 0 });
    // What decides: whether the kernel measured at least POOL_SECONDS a call of N (the library timed
    // the same calls, within the call's overhead: keep clear of the border).
    if (Math.abs(seconds - POOL_SECONDS) < 0.3 * POOL_SECONDS) return;
    const costly = seconds >= POOL_SECONDS;
    callCounts(true);
    await heavy(xs);
    expect(callCounts(true).pool).toBe(costly ? 1 : 0);
  });

  it('counts no call below MIN_COSTED_WORK and trusts a cost from two timed calls on', () => {
    const kernel = { returnType: 'float64', body: [], helpers: [] } as unknown as TypedKernel;
    recordCallTime(kernel, MIN_COSTED_WORK - 1, 1, 'thread');
    expect(isCostly(kernel, 10 * MIN_COSTED_WORK)).toBe(false);
    recordCallTime(kernel, MIN_COSTED_WORK, 1, 'thread'); // the first call in a place compiles: not counted
    recordCallTime(kernel, MIN_COSTED_WORK, 1e-3, 'thread');
    expect(isCostly(kernel, MIN_COSTED_WORK)).toBe(false); // one timed call is not trusted yet
    recordCallTime(kernel, MIN_COSTED_WORK, 2e-3, 'thread');
    expect(isCostly(kernel, MIN_COSTED_WORK)).toBe(true); // 1 ms ≥ 0.25 ms
    expect(isCostly(kernel, MIN_COSTED_WORK - 1)).toBe(false);
    recordCallTime(kernel, 10 * MIN_COSTED_WORK, 1e-4, 'pool'); // the first pool call compiles: not counted
    recordCallTime(kernel, 10 * MIN_COSTED_WORK, 1e-4, 'pool');
    expect(isCostly(kernel, MIN_COSTED_WORK)).toBe(false); // 10 µs per 1,024
  });
});
