/**
 * The gpu target: kernels compiled to WGSL and run through WebGPU (Dawn's node binding).
 *
 * Nothing here touches WebGPU at import time: the device is created by the first call (so a
 * machine without a GPU can import the library, and a gpu ufunc rejects its first call with
 * TargetUnavailableError). See docs/gpu.md for what runs how, and where results differ from cpu.
 */
import type { Target } from '../target.js';
import { checkGpuKernel } from './codegen/check-kernel.js';
import { outputArray, outputArrayNow } from './runtime/device-array.js';
import { runOnGpu } from './runtime/dispatch.js';
import { treeAccumulate, treeReduce } from './runtime/tree-fold.js';

/** The gpu target, as registered in targets/registry.ts. */
export const gpuTarget: Target = {
  name: 'gpu',
  memory: 'device',
  checkKernel: checkGpuKernel,
  // WGSL has no 64-bit types (see check-kernel.ts).
  canStore: (dtype) => dtype !== 'float64' && dtype !== 'int64' && dtype !== 'uint64',
  run: runOnGpu,
  allocateDeviceArray: outputArray,
  allocateDeviceArrayNow: outputArrayNow,
  associativeFolds: { reduce: treeReduce, accumulate: treeAccumulate },
};
