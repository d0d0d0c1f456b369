/**
 * Bad inputs that used to give raw V8 errors or silently wrong answers, on every target (issue 13,
 * items 3, 4 and 10): detached buffers, sizes no typed array can have, an absurd fixed layout size,
 * and native functions passed as helpers. Each must be a typed error with a full sentence.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { ArgumentError, guvectorize, KernelCompileError, LayoutError, vectorize } from '../../src/index.js';
import { shutdownDevice } from '../../src/targets/gpu/runtime/device.js';
import { TARGETS } from '../targets.js';

afterAll(() => shutdownDevice());

/** A typed array whose buffer has been transferred away. */
function detached(n = 4): Float32Array {
  const a = new Float32Array(n).fill(1);
  structuredClone(a.buffer, { transfer: [a.buffer] });
  return a;
}

describe.each(TARGETS)('on %s', (target) => {
  const add = vectorize(['float32(float32, float32)'], { target })((a: number, b: number) => a + b);
  const row = guvectorize(['void(float32, float32[:])'], '()->(n)', { target })((x: number, out: Float32Array) => {
    out[0] = x;
  });

  it('refuses a detached input instead of returning an empty result', async () => {
    await expect(add(detached(), 1)).rejects.toThrow(ArgumentError);
    await expect(add(detached(), 1)).rejects.toThrow(/Argument 1 is a Float32Array whose buffer was detached/);
    await expect(add(new Float32Array(3), detached())).rejects.toThrow(/Argument 2 .* detached/);
    // The fast path (learned from a good call of the same kind) refuses it too.
    await add(new Float32Array(4), 1);
    await expect(add(detached(), 1)).rejects.toThrow(ArgumentError);
  });

  it('refuses a detached `out` and a detached ndarray', async () => {
    await expect(add(new Float32Array(4), 1, { out: detached() })).rejects.toThrow(/`out` is a Float32Array whose buffer was detached/);
    await expect(add({ data: detached(), shape: [4] }, 1)).rejects.toThrow(/Argument 1\.data is a Float32Array whose buffer was detached/);
  });

  it('refuses outputs too large for any typed array with a typed error', async () => {
    const huge = { data: new Float32Array(1), shape: [2 ** 31, 2 ** 31], strides: [0, 0] };
    await expect(add(huge, 1)).rejects.toThrow(ArgumentError);
    await expect(add(huge, 1)).rejects.toThrow(/would have shape \[2147483648, 2147483648\]: 4611686018427387904 float32 elements/);
    await expect(row(new Float32Array(2), { dims: { n: 2 ** 40 } })).rejects.toThrow(/would have shape \[2, 1099511627776\]/);
  });

  it('says a native function cannot be compiled into a kernel', () => {
    const make = (env: Record<string, unknown>) => () =>
      vectorize(['float32(float32)'], { target, env: env as never })((x: number) => (ex as (v: number) => number)(x));
    expect(make({ ex: process.exit })).toThrow(KernelCompileError);
    expect(make({ ex: process.exit })).toThrow(/The helper `ex` \(the function `\w+`\) is a native or bound function, or a built-in/);
    expect(make({ ex: Math.max })).toThrow(/native or bound function, or a built-in/);
    expect(make({ ex: ((x: number) => x).bind(null) })).toThrow(/native or bound function, or a built-in/);
  });
});

declare const ex: unknown;

describe('layouts', () => {
  it('refuses a fixed dimension too large to be a size', () => {
    expect(() => guvectorize(['void(float32[:], float32[:])'], '(9999999999999999999)->()')).toThrow(LayoutError);
    expect(() => guvectorize(['void(float32[:], float32[:])'], '(9999999999999999999)->()')).toThrow(
      /column 2: a fixed dimension must be at most 2147483647/,
    );
    expect(() => guvectorize(['void(float32[:], float32[:])'], '(2147483648)->()')).toThrow(LayoutError);
    expect(() => guvectorize(['void(float32[:], float32[:])'], '(2147483647)->()')).not.toThrow();
  });
});

describe.each(TARGETS.filter((t) => t !== 'cpu'))('an array detached while a call on %s runs', (target) => {
  const n = 300_000; // over the parallel target's threshold for arrays outside shared memory
  const twice = vectorize(['float32(float32)'], { target })((x: number) => 2 * x);

  it('fails the call with an ArgumentError naming `out`', async () => {
    const out = new Float32Array(n);
    const call = twice(new Float32Array(n).fill(1), { out });
    structuredClone(out.buffer, { transfer: [out.buffer] });
    await expect(call).rejects.toThrow(/`out` is a Float32Array whose buffer was detached \(transferred\) while the call was running/);
    await expect(twice(new Float32Array(n).fill(1), { out: new Float32Array(n) })).resolves.toBeInstanceOf(Float32Array);
  });

  it.runIf(target === 'gpu')('has read its inputs when the call returns, so detaching one then changes nothing', async () => {
    const x = new Float32Array(n).fill(1);
    const call = twice(x);
    structuredClone(x.buffer, { transfer: [x.buffer] });
    const y = await call;
    expect([y[0], y[n - 1], y.length]).toEqual([2, 2, n]);
  });
});

describe('the `signal` and `timeout` call options', () => {
  const twice = vectorize(['float64(float64)'], { target: 'parallel' })((x: number) => 2 * x);
  it('are checked like every call option', async () => {
    await expect(twice(Float64Array.of(1), { timeout: -1 })).rejects.toThrow(/`timeout` must be a number of milliseconds greater than 0/);
    await expect(twice(Float64Array.of(1), { signal: 'stop' } as never)).rejects.toThrow(/`signal` must be an AbortSignal/);
  });
  it('need an async call', () => {
    expect(() => twice.sync(Float64Array.of(1), { timeout: 100 })).toThrow(/`signal` and `timeout` apply to calls that return a Promise/);
  });
  it('let a call within its limit finish normally', async () => {
    const y = await twice(Float64Array.of(1, 2), { timeout: 60_000, signal: new AbortController().signal });
    expect(Array.from(y)).toEqual([2, 4]);
  });
});
