/**
 * The buffer pool forgets what it knew of a buffer's contents when the buffer changes hands: an
 * output no kernel wrote (a zero-row call's), destroyed, must not make a later `toDevice` array
 * passed as `out` look zero-filled, which zeroed every element its kernel did not write (issue 26).
 */
import { afterAll, expect, it } from 'vitest';
import { guvectorize, toDevice, type DeviceArray } from '../../../src/index.js';
import { shutdownDevice } from '../../../src/targets/gpu/runtime/device.js';
import { describeGpu } from '../../gpu-available.js';

afterAll(() => shutdownDevice());

type Row = { [i: number]: number; length: number };

describeGpu('pooled buffers change hands', { timeout: 60_000 }, () => {
  it('a later out keeps the elements its kernel does not write', async () => {
    const double = guvectorize(['void(float32[:], float32[:])'], '(n)->(n)', { target: 'gpu' })((x: Row, out: Row) => {
      for (let i = 0; i < x.length; i++) out[i] = x[i]! * 2;
    });
    const first = guvectorize(['void(float32[:], float32[:])'], '(n)->(n)', { target: 'gpu' })((x: Row, out: Row) => {
      out[0] = x[0]!;
    });
    for (const n of [4, 16, 64]) {
      const empty = await toDevice({ data: new Float32Array(0), shape: [0, n] });
      ((await double(empty)) as DeviceArray).destroy();
      const out = await toDevice({ data: new Float32Array(8 * n).fill(5), shape: [8, n] });
      await first(await toDevice({ data: new Float32Array(8 * n).fill(1), shape: [8, n] }), { out });
      const expected = Array.from({ length: 8 * n }, (_, i) => (i % n === 0 ? 1 : 5));
      expect([...((await out.toHost()) as Float32Array)], `n = ${n}`).toEqual(expected);
    }
  });
});
