/**
 * The examples on the gpu, against the cpu. The gpu computes the examples' double locals in f32
 * (WGSL has no f64: docs/gpu.md), so results agree to float32 precision rather than bit for bit.
 */
import { afterAll, expect, it } from 'vitest';
import { hermiteUfuncs, seedTable } from '../../../examples/hermite.js';
import { runLorenz } from '../../../examples/lorenz96.js';
import { runSaxpy } from '../../../examples/saxpy.js';
import type { NDArray } from '../../../src/ndarray.js';
import { shutdownDevice } from '../../../src/targets/gpu/runtime/device.js';
import { describeGpu } from '../../gpu-available.js';

afterAll(() => shutdownDevice());

/** The largest |gpu − cpu| relative to max(1, |cpu|). */
function relativeError(cpu: ArrayLike<number>, gpu: ArrayLike<number>): number {
  let worst = 0;
  for (let i = 0; i < cpu.length; i++) worst = Math.max(worst, Math.abs(gpu[i]! - cpu[i]!) / Math.max(1, Math.abs(cpu[i]!)));
  return worst;
}

/** Seed 001's printed table (SEEDS.md). */
const SEED_TABLE = [
  [1.0, 0.0, -0.70710677, -0.0],
  [1.0, 1.0, 0.0, -0.8164966],
  [1.0, 2.0, 2.1213202, 0.8164966],
  [1.0, 3.0, 5.656854, 7.3484693],
  [1.0, 4.0, 10.606602, 21.22891],
].flat();

describeGpu('examples on the gpu', { timeout: 120_000 }, () => {
  it('hermite: the seed table, both layouts, within a few float32 ULPs of the cpu', async () => {
    const [cpu, gpu] = await Promise.all([seedTable('cpu'), seedTable('gpu')]);
    for (const key of ['fromScalar', 'inPlace'] as const) {
      expect(relativeError(cpu[key].data as Float32Array, gpu[key].data as Float32Array)).toBeLessThan(4e-7);
      expect(relativeError(SEED_TABLE, gpu[key].data as Float32Array)).toBeLessThan(4e-7);
    }
  });

  it('hermite: 20,000 rows × 16, ()->(n) and (n)->(n)', async () => {
    const rows = 20_000;
    const xs = new Float32Array(rows).map((_, i) => (i % 1000) / 250 - 2);
    const results = await Promise.all((['cpu', 'gpu'] as const).map((t) => hermiteUfuncs(t).fromScalar(xs, { dims: { n: 16 } }) as Promise<NDArray>));
    expect(relativeError(results[0]!.data as Float32Array, results[1]!.data as Float32Array)).toBeLessThan(2e-6);
    const inPlace = await Promise.all(
      (['cpu', 'gpu'] as const).map(async (t) => {
        const rowsData = { data: new Float32Array(rows * 16).map((_, j) => (j % 16 === 1 ? xs[Math.floor(j / 16)]! : 1)), shape: [rows, 16] };
        await hermiteUfuncs(t).inPlace(rowsData, { out: rowsData });
        return rowsData.data;
      }),
    );
    expect(relativeError(inPlace[0]!, inPlace[1]!)).toBeLessThan(2e-6);
  });

  it('saxpy: the same z as the cpu (a·x + y may be fused into one rounding: WGSL §15.7.5 allows it)', async () => {
    const n = 1 << 20;
    const [cpu, gpu] = await Promise.all([runSaxpy('cpu', n), runSaxpy('gpu', n)]);
    let worstUlps = 0;
    for (let i = 0; i < n; i++) {
      const ulp = 2 ** (Math.floor(Math.log2(Math.max(Math.abs(cpu.z[i]!), 2 ** -126))) - 23);
      worstUlps = Math.max(worstUlps, Math.abs(gpu.z[i]! - cpu.z[i]!) / ulp);
    }
    expect(worstUlps).toBeLessThanOrEqual(1);
    expect(gpu.maxError).toBeLessThanOrEqual(1e-5 * 300); // the example's own allclose
  });

  it('lorenz96: one RK4 step of 5,000 members × 40, with a helper and local arrays', async () => {
    const [cpu, gpu] = await Promise.all([runLorenz('cpu', 5_000), runLorenz('gpu', 5_000)]);
    expect(gpu.result.shape).toEqual([5_000, 40]);
    expect(relativeError(cpu.result.data as Float32Array, gpu.result.data as Float32Array)).toBeLessThan(1e-6);
    expect(gpu.maxError).toBeLessThan(1e-5);
  });
});
