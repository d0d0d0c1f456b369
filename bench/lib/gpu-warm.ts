/**
 * Keeping the GPU busy before timing a GPU-bound case: its clocks follow its recent load, so a
 * kernel timed after small calls that leave the GPU idle runs up to ~3× slower than after
 * sustained work (an H100: a sum of 2^24 in 160 µs against 53 µs; bench/results/sync-probe-*.md).
 * bench/pace.ts's folds follow its element-wise passes, and CuPy's timings sustained loops.
 */

/** The library calls used, passed in: bench/call-cost.ts drives another checkout's library too. */
export interface GpuWarmLibrary {
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  readonly saxpy: (a: number, x: any, y: any, options: { out: any }) => Promise<unknown>;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  readonly toDevice: (x: Float32Array) => Promise<any>;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  readonly deviceArray: (shape: number[], dtype: 'float32') => Promise<any>;
  readonly synchronize: () => Promise<void>;
}

/** Back-to-back SAXPY passes over 2^24 float32 elements on the device for `ms` milliseconds. */
export async function keepGpuBusy(ms: number, { saxpy, toDevice, deviceArray, synchronize }: GpuWarmLibrary): Promise<void> {
  const n = 1 << 24;
  const values = () => Float32Array.from({ length: n }, (_, i) => (i % 17) / 8);
  const [bx, by] = await Promise.all([toDevice(values()), toDevice(values())]);
  const bz = await deviceArray([n], 'float32');
  await saxpy(2, bx, by, { out: bz }); // (the first call of a process may wait for the gpu target to load)
  const end = performance.now() + ms;
  do {
    for (let k = 0; k < 20; k++) void saxpy(2, bx, by, { out: bz });
    await synchronize();
  } while (performance.now() < end);
  for (const a of [bx, by, bz]) a.destroy();
}
