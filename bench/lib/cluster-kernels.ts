/**
 * The kernels of the scale-out benchmarks (bench/cluster.ts, bench/process-scaling.ts): one
 * compute-bound, one memory-bound, float32 → float32. Their Numba twins are in
 * bench/peers/dask_zarr.py.
 */
import { vectorize } from '../../src/api.js';

/** The compute-bound kernel: `steps` iterations of s·0.999 + 0.5/(1+s²) per element. */
export function computeKernel(steps: number) {
  return vectorize(['float32(float32)'], { env: { steps } })((x) => {
    let s = x;
    for (let k = 0; k < steps; k++) s = s * 0.999 + 0.5 / (1 + s * s);
    return s;
  });
}

/** The memory-bound kernel: 2x + 1. */
export function memoryKernel() {
  return vectorize(['float32(float32)'])((x) => 2 * x + 1);
}
