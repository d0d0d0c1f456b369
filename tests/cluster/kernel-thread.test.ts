/**
 * A cluster worker's kernel thread (src/cluster/kernel-thread.ts): it computes the same bytes as the
 * ufunc called here, over operands in shared memory or not; the calling thread's event loop runs
 * while it computes; and a kernel's error crosses with its name, message and kind.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { guvectorize, UfuncError, vectorize } from '../../src/api.js';
import { describeUfunc, descriptorHash } from '../../src/cluster/index.js';
import { isJobError, KernelThread } from '../../src/cluster/kernel-thread.js';
import { allocateBox, type Box } from '../../src/zarr/arrays.js';

const thread = new KernelThread('cpu');
afterAll(() => thread.close());

function sent(f: Parameters<typeof describeUfunc>[0]): { hash: string; descriptor: ReturnType<typeof describeUfunc> } {
  const descriptor = describeUfunc(f);
  return { hash: descriptorHash(descriptor), descriptor };
}

function boxOf(values: Float32Array, shared: boolean): Box {
  const box = allocateBox('float32', [values.length], shared);
  (box.data as Float32Array).set(values);
  return box;
}

const affine = vectorize(['float32(float32, float32)'])((x, y) => 2 * x + y);

describe('KernelThread', () => {
  it('writes the bytes the ufunc writes here, into outputs in shared memory or not, with where', async () => {
    const xs = Float32Array.from({ length: 5000 }, (_, i) => Math.sin(i) * 100);
    const want = await affine(xs, 0.25);
    const { hash, descriptor } = sent(affine);
    for (const shared of [true, false]) {
      const out = allocateBox('float32', [xs.length], shared);
      const ms = await thread.run(hash, descriptor, [boxOf(xs, shared), 0.25], { out });
      expect(ms).toBeGreaterThanOrEqual(0);
      expect(Buffer.from((out.data as Float32Array).buffer).equals(Buffer.from(want.buffer))).toBe(true);
    }
    const where = { ...allocateBox('bool', [xs.length]), dtype: 'bool' as const };
    (where.data as Uint8Array).forEach((_, i, a) => (a[i] = i % 3 === 0 ? 1 : 0));
    const out = boxOf(new Float32Array(xs.length).fill(-7), false);
    await thread.run(hash, descriptor, [boxOf(xs, true), 0.25], { out, where });
    expect(Array.from(out.data as Float32Array)).toEqual(Array.from(want, (v, i) => (i % 3 === 0 ? v : -7)));
  });

  it('leaves the calling thread’s event loop running while a kernel computes', async () => {
    const slow = vectorize(['float32(float32)'])((x) => {
      let s = x;
      for (let k = 0; k < 2000; k++) s = Math.fround(Math.sqrt(s * s + 1) - 0.999);
      return s;
    });
    const { hash, descriptor } = sent(slow);
    const xs = boxOf(Float32Array.from({ length: 10_000 }, (_, i) => i / 100), true);
    const want = await slow(xs.data);
    await thread.run(hash, descriptor, [xs], { out: allocateBox('float32', [10_000], true) }); // compiled and warm
    const out = allocateBox('float32', [10_000], true);
    let done = false;
    const call = thread.run(hash, descriptor, [xs], { out }).finally(() => (done = true));
    let turns = 0;
    while (!done) {
      await new Promise((resolve) => setImmediate(resolve));
      turns++;
    }
    await call;
    // On this thread the kernel would have run before the first turn: 20 million square roots take many turns.
    expect(turns).toBeGreaterThan(2);
    expect(Array.from(out.data as Float32Array)).toEqual(Array.from(want as Float32Array));
  });

  it('fails with the kernel’s error, its name and message, as a UfuncError the worker does not retry', async () => {
    const shift = guvectorize(['void(float32[:], float32[:])'], '(n)->(n)')((a, out) => {
      for (let i = 0; i < a.length; i++) out[i] = a[i + 1]!;
    });
    const { hash, descriptor } = sent(shift);
    const x = boxOf(new Float32Array(4), true);
    const error = await thread.run(hash, descriptor, [x], { out: allocateBox('float32', [4], true) }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(UfuncError);
    expect(`${(error as Error).name}: ${(error as Error).message}`).toMatch(/^KernelRuntimeError: Index \[4\] is out of bounds/);
    expect(isJobError(error)).toBe(true);
    // The thread keeps serving.
    const out = allocateBox('float32', [3], true);
    const { hash: h, descriptor: d } = sent(affine);
    await thread.run(h, d, [boxOf(Float32Array.of(1, 2, 3), true), 1], { out });
    expect(Array.from(out.data as Float32Array)).toEqual([3, 5, 7]);
  });

  it('starts again after it was closed, and gets the descriptors it no longer holds', async () => {
    const { hash, descriptor } = sent(affine);
    await thread.close();
    const out = allocateBox('float32', [2], true);
    await thread.run(hash, descriptor, [boxOf(Float32Array.of(1, 2), true), 0], { out });
    expect(Array.from(out.data as Float32Array)).toEqual([2, 4]);
  });
});
