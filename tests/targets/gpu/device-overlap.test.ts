/**
 * NumPy's overlap rule on device arrays: an output that overlaps an input other than as the very
 * same view (two views of one DeviceArray shifted by an element or a row) gets the input copied
 * first, so the result is the host call's, whatever order the GPU runs invocations in (issue 26).
 */
import { afterAll, expect, it } from 'vitest';
import { guvectorize, toDevice, vectorize } from '../../../src/index.js';
import { shutdownDevice } from '../../../src/targets/gpu/runtime/device.js';
import { describeGpu } from '../../gpu-available.js';

afterAll(() => shutdownDevice());

type Row = { [i: number]: number; length: number };

describeGpu('device views that overlap an output', { timeout: 60_000 }, () => {
  const runningSum = guvectorize(['void(float32[:], float32[:])'], '(n)->(n)', { target: 'gpu' })((x: Row, out: Row) => {
    for (let i = 0; i < x.length; i++) out[i] = x[i]! + (i > 0 ? x[i - 1]! : 0);
  });
  const inc = vectorize(['float32(float32)'], { target: 'gpu' })((x: number) => x + 1);
  const rows = 2000;
  const n = 64;

  it.each([1, -1, n, -n])('shifted by %i elements: as on the host', async (shift) => {
    const total = rows * n + Math.abs(shift);
    const base = Float32Array.from({ length: total }, (_, i) => i % 7);
    const [from, to] = shift > 0 ? [0, shift] : [-shift, 0];
    const host = base.slice();
    await runningSum({ data: host, shape: [rows, n], offset: from }, { out: { data: host, shape: [rows, n], offset: to } });
    const d = await toDevice(base.slice());
    await runningSum(d.view([rows, n], [n, 1], from), { out: d.view([rows, n], [n, 1], to) });
    expect([...((await d.toHost()) as Float32Array)]).toEqual([...host]);

    const host2 = base.slice();
    await inc({ data: host2, shape: [rows * n], offset: from }, { out: { data: host2, shape: [rows * n], offset: to } });
    const d2 = await toDevice(base.slice());
    await inc(d2.view([rows * n], [1], from), { out: d2.view([rows * n], [1], to) });
    expect([...((await d2.toHost()) as Float32Array)]).toEqual([...host2]);
    d.destroy();
    d2.destroy();
  });

  it('in place (the very same view) is not copied, and stays right', async () => {
    const base = Float32Array.from({ length: rows * n }, (_, i) => i % 5);
    const host = base.slice();
    await runningSum({ data: host, shape: [rows, n] }, { out: { data: host, shape: [rows, n] } });
    const d = await toDevice(base.slice());
    const v = d.view([rows, n]);
    await runningSum(v, { out: v });
    expect([...((await d.toHost()) as Float32Array)]).toEqual([...host]);
    d.destroy();
  });
});
