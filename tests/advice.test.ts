/**
 * Messages that used to mislead (issue 23): each says what went wrong and what to do instead.
 */
import { describe, expect, it } from 'vitest';
import { getParallelOptions, guvectorize, type NDArray, vectorize } from '../src/index.js';
import { TARGETS } from './targets.js';

describe('converting values', () => {
  it('converts with `Number(x)`: an int64 to the nearest double, a bool to 0 or 1', async () => {
    const half = vectorize(['float64(int64)'])((x: bigint) => Number(x) / 2);
    const xs = BigInt64Array.of(3n, 2n ** 60n + 1n, -7n);
    expect([...(await half(xs))]).toEqual([...xs].map((x) => Number(x) / 2));
    const asNumber = vectorize(['float64(bool)'])((b: boolean) => Number(b) + 0.5);
    expect([...((await asNumber({ data: Uint8Array.of(1, 0), shape: [2], dtype: 'bool' })) as NDArray).data]).toEqual([1.5, 0.5]);
    // The advice of the old message, `{ env: { Number } }`, now works too.
    const viaEnv = vectorize(['float64(int64)'], { env: { Number } })((x: bigint) => Number(x) / 2);
    expect([...(await viaEnv(xs))]).toEqual([...xs].map((x) => Number(x) / 2));
  });

  it.each(TARGETS)('converts with `Number(x)` on %s: int32 to a float, then true division', async (target) => {
    const half = vectorize(['float32(int32)'], { target })((x: number) => Number(x) / 2);
    expect([...(await half(Int32Array.of(3, -7, 2 ** 20)))]).toEqual([1.5, -3.5, 2 ** 19]);
  });

  it('says which conversions exist when a kernel calls another JS built-in', () => {
    expect(() => vectorize(['float64(float64)'])('(x) => String(x)')).toThrowErrorMatchingInlineSnapshot(`
      [KernelCompileError: \`String\` is a JavaScript built-in, which kernels cannot use: kernels compute numbers and booleans (convert with \`Number(x)\` to a double, \`x | 0\` to an int32, \`x !== 0\` to a bool; docs/kernel-language.md lists what kernels may use) (kernel line 1:8)
        (x) => String(x)
               ^]
    `);
    expect(() => vectorize(['float64(float64)'], { env: { String } })('(x) => String(x)')).toThrowError(/`String` is a JavaScript built-in/);
  });

  it('points at plain-JS execution for console.log', () => {
    expect(() => vectorize(['float64(float64)'])('(x) => { console.log(x); return x; }')).toThrowErrorMatchingInlineSnapshot(`
      [KernelCompileError: \`console.log(…)\` cannot run in a compiled kernel: to print from a kernel, run it as plain JS with \`{ disableJit: true }\` (or the environment variable UFUNC_DISABLE_JIT=1), where console.log and the debugger work (docs/debugging.md) (kernel line 1:10)
        (x) => { console.log(x); return x; }
                 ^]
    `);
  });
});

describe('arrays', () => {
  it('refuses a string for what it is, not as "not an array"', () => {
    expect(() => vectorize(['float64(float64)'])('(x) => ("abc" + x).length')).toThrowErrorMatchingInlineSnapshot(`
      [KernelCompileError: The literal \`"abc"\` is not supported in kernels: only numbers, booleans and bigints are (strings cannot be built or measured in a kernel; to print values, run it as plain JS with \`{ disableJit: true }\`) (kernel line 1:9)
        (x) => ("abc" + x).length
                ^]
    `);
  });

  it('says that a number has no length, and what has', () => {
    expect(() => vectorize(['float64(float64)'])('(x) => (x + 1).length')).toThrowErrorMatchingInlineSnapshot(`
      [KernelCompileError: \`x + 1\` is a float64 value, not an array: only arrays (array arguments and local typed arrays, by name: \`out.length\`, \`a[i]\`) have a length and elements (kernel line 1:9)
        (x) => (x + 1).length
                ^]
    `);
  });
});

describe('helpers', () => {
  it('reports mutual recursion as the cycle it is', () => {
    const even = '(n) => n === 0 ? 1 : odd(n - 1)';
    const odd = '(n) => n === 0 ? 0 : even(n - 1)';
    expect(() => vectorize(['float64(float64)'], { env: { even, odd } })('(x) => even(x)')).toThrowErrorMatchingInlineSnapshot(`
      [KernelCompileError: \`even\` calls \`odd\`, which calls \`even\` again (\`even\` → \`odd\` → \`even\`): recursion, direct or through other helpers, is not supported in kernels (GPUs have no call stack): write a loop (kernel line 1:22)
        (n) => n === 0 ? 0 : even(n - 1)
                             ^]
    `);
  });

  it('keeps the direct case short', () => {
    const fact = '(n) => n <= 1 ? 1 : n * fact(n - 1)';
    expect(() => vectorize(['float64(float64)'], { env: { fact } })('(x) => fact(x)')).toThrowError(/^`fact` calls itself; recursion is not supported in kernels \(GPUs have no call stack\): write a loop/);
  });
});

describe('broadcasting', () => {
  it('names the axes of the arguments that disagree, not a negative dimension', async () => {
    const add = vectorize(['float64(float64, float64)'])((a: number, b: number) => a + b);
    await expect(add({ data: new Float64Array(6), shape: [2, 3] }, new Float64Array(4))).rejects.toThrowErrorMatchingInlineSnapshot(
      `[BroadcastError: Cannot broadcast the loop dimensions together: argument 1 [2, 3], argument 2 [4]. Axis 1 of argument 1 is 3 and axis 0 of argument 2 is 4 (shapes line up at their last axis); each must be equal or 1 (NumPy's broadcasting): make them match, or pass an array of size 1 on that axis, whose values then repeat.]`,
    );
    await expect(add(new Float64Array(3), new Float64Array(3), { out: new Float64Array(4) })).rejects.toThrowErrorMatchingInlineSnapshot(
      `[BroadcastError: Cannot broadcast the loop dimensions together: argument 1 [3], argument 2 [3], \`out\` [4]. Axis 0 of argument 1 is 3 and axis 0 of \`out\` is 4 (shapes line up at their last axis); each must be equal or 1 (NumPy's broadcasting): make them match, or pass an array of size 1 on that axis, whose values then repeat.]`,
    );
  });
});

describe('explain on the parallel target', () => {
  it('says where a loop of one chunk runs: one worker when awaited, the calling thread alone in f.sync', () => {
    const rowSum = guvectorize(['void(float64[:], float64[:])'], '(n)->()', { target: 'parallel' })((x: Float64Array, out: Float64Array) => {
      let s = 0;
      for (let i = 0; i < x.length; i++) s += x[i]!;
      out[0] = s;
    });
    const rows = { data: new Float64Array(10 * 20_000), shape: [10, 20_000] }; // work 200,000: on the pool, copies and all
    expect(getParallelOptions().workers).toBeGreaterThan(0);
    expect(rowSum.explain(rows)).toMatch(/^On 1 worker when awaited, and on the calling thread alone in `f\.sync` \(its loop of 10 is one chunk: chunks are at least 64 long\), running /);
  });
});
