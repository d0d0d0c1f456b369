/**
 * Shared memory (what `sharedArray` and the parallel target use) on the gpu target: dawn.node
 * crashes the process when handed a SharedArrayBuffer view directly, so uploads copy it first.
 */
import { expect, it } from 'vitest';
import { sharedArray, toDevice, vectorize } from '../../../src/index.js';
import { describeGpu } from '../../gpu-available.js';

describeGpu('gpu target with SharedArrayBuffer data', () => {
  it('uploads shared arrays to device arrays and back', async () => {
    const xs = sharedArray(100_003, 'float32').map((_, i) => i * 0.5) as Float32Array;
    const d = await toDevice(xs);
    expect([...(await d.toHost())]).toEqual([...xs]);
  });

  it('runs a ufunc on shared inputs into a shared out', async () => {
    const twice = vectorize(['float32(float32)'], { target: 'gpu' })((x: number) => x * 2);
    const xs = sharedArray(5000, 'float32').fill(1.5) as Float32Array;
    const out = sharedArray(5000, 'float32') as Float32Array;
    await twice(xs, { out });
    expect(out.every((v) => v === 3)).toBe(true);
  });
});
