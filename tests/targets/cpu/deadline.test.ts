/**
 * A cpu call with a `timeout` stops a kernel that runs past it — an endless loop in the kernel or
 * in a helper, or a long loop over elements — with CallTimeoutError (the runner's loops look at the
 * clock every few thousand iterations); calls without limits run the loops they always ran (issue 26).
 */
import { describe, expect, it } from 'vitest';
import { CallTimeoutError, guvectorize, vectorize } from '../../../src/index.js';
import { DEADLINE_CHECK, DEADLINE_TICKS } from '../../../src/targets/cpu/js/emit-js.js';
import { generateRunner } from '../../../src/targets/cpu/js/codegen.js';
import { prepareRunnerArgs } from '../../../src/targets/cpu/memory-layout.js';
import { prepareCall } from '../../../src/prepare-call.js';
import { UfuncDefinition } from '../../../src/ufunc.js';
import { parseLayout } from '../../../src/signature-parser/index.js';
import { cpuTarget } from '../../../src/targets/cpu/index.js';

type Row = { [i: number]: number; length: number };

describe('cpu calls with a timeout', () => {
  it('stop an endless kernel loop with CallTimeoutError naming the timeout', { timeout: 20_000 }, async () => {
    const endless = vectorize(['float64(float64)'])((x: number) => {
      let s = 0;
      while (x === x || x !== x) s += 1;
      return s;
    });
    const started = performance.now();
    const call = endless(new Float64Array(10), { timeout: 200 });
    await expect(call).rejects.toThrowError(CallTimeoutError);
    await expect(endless(new Float64Array(10), { timeout: 100 })).rejects.toThrowError(/`timeout` of 100 ms/);
    expect(performance.now() - started).toBeLessThan(10_000);
  });

  it('stop an endless loop in a helper, and a long loop over many elements', { timeout: 20_000 }, async () => {
    const spin = (x: number) => {
      let k = x;
      for (;;) {
        k += 1;
        if (k !== k) break;
      }
      return k;
    };
    const viaHelper = guvectorize(['void(float64[:], float64[:])'], '(n)->()', { env: { spin } })((x: Row, o: Row) => {
      o[0] = spin(x[0]!);
    });
    await expect(viaHelper(new Float64Array(4), { timeout: 100 })).rejects.toThrowError(CallTimeoutError);
    // Each element is short; there are many: the element loop checks the clock too.
    const slow = vectorize(['float64(float64)'])((x: number) => Math.sin(x) + Math.cos(x) * Math.exp(x));
    await expect(slow(new Float64Array(50_000_000), { timeout: 20 })).rejects.toThrowError(CallTimeoutError);
  });

  it('finish a call that ends in time, with the same results as without a timeout', async () => {
    const sum = vectorize(['float64(float64)'])((x: number) => {
      let s = 0;
      for (let i = 0; i < 10_000; i++) s += x;
      return s;
    });
    const x = Float64Array.of(0.1, 2, -3);
    expect([...((await sum(x, { timeout: 10_000 })) as Float64Array)]).toEqual([...((await sum(x)) as Float64Array)]);
  });

  it('only runners for calls with a timeout carry the checks, and short counting loops need none', () => {
    const def = new UfuncDefinition('vectorize', (x: number) => {
      let s = 0;
      for (let i = 0; i < 3; i++) s += x; // innermost, at most 3 iterations: no check of its own
      let k = 0;
      while (s > k) k += 1; // may run long: checked
      for (let i = 0; i < 3; i++) {
        for (let j = 0; j < 3; j++) s += j; // innermost counting: unchecked; its outer loop: checked
      }
      return s + k;
    }, ['float64(float64)'], parseLayout('()->()'), {});
    const { plan } = prepareCall(def, [new Float64Array(4)], cpuTarget);
    const { layout } = prepareRunnerArgs(plan);
    expect(generateRunner(plan, layout).source).not.toContain(DEADLINE_CHECK);
    const timed = generateRunner(plan, layout, true).source;
    expect(timed.split(DEADLINE_CHECK).length - 1).toBe(3); // the while loop, the outer for loop, the element loop
    expect(timed).toContain(`$tick = ${DEADLINE_TICKS}`);
  });
});
