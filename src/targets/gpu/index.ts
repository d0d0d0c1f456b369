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
import { abandonDevice } from './runtime/device.js';
import { runOnGpu } from './runtime/dispatch.js';
import { overlappingInputs, withInputsCopied } from './runtime/overlaps.js';
import { placeCall, runAcross, splitSlots } from './runtime/multi-device.js';
import { runOnDeviceWorker, runsOnDeviceWorkers } from './runtime/device-workers.js';
import { chunkBudget, hostOperandBytes, needsStreaming, runStreamed } from './runtime/streaming.js';
import { getGpuOptions } from './runtime/gpu-options.js';
import { describeDoubles } from './codegen/precision.js';
import type { CallPlan, OperandView } from '../../plan.js';
import type { TypedKernel } from '../../compiler/ir.js';
import { typeKernel } from '../../compiler/lower.js';
import { parseFunction } from '../../compiler/parse.js';
import { runPasses } from '../../compiler/passes/index.js';
import type { DeviceArray } from './runtime/device-array.js';
import type { DType } from '../../dtypes.js';
import { explainHold } from './runtime/chain-fusion.js';
import { liveDevice } from './runtime/device.js';
import { treeAccumulate, treeReduce } from './runtime/tree-fold.js';

/** The gpu target, as registered in targets/registry.ts. */
export const gpuTarget: Target = {
  name: 'gpu',
  memory: 'device',
  checkKernel: checkGpuKernel,
  // WGSL has no 64-bit types (see check-kernel.ts).
  canStore: (dtype) => dtype !== 'float64' && dtype !== 'int64' && dtype !== 'uint64',
  storeLimit: 'WGSL has no 64-bit types',
  run: runSeparated,
  placeCall,
  explain: explainCall,
  allocateDeviceArray: outputArray,
  allocateDeviceArrayNow: outputArrayNow,
  readDevice: (array) => (array as DeviceArray).toHost(),
  writeDevice: (array, data) => (array as DeviceArray).set(data),
  associativeFolds: { reduce: treeReduce, accumulate: treeAccumulate },
  // Abandoned rather than destroyed at once: destroying waits for running kernels (see abandonDevice).
  shutdown: () => abandonDevice('it was shut down with shutdown()', true),
};

/**
 * What a call does on the gpu, in the order it happens: how the kernel's doubles are computed
 * (codegen/precision.ts), the choices made for this call (several devices, streaming, copies of
 * overlapping inputs, index checks), and what automatic fusion does with it.
 */
function explainCall(plan: CallPlan): string {
  const parts = ['Runs on the gpu.'];
  const doubles = describeDoubles(plan.kernel);
  if (doubles) parts.push(doubles);
  const slots = splitSlots(plan);
  if (slots) {
    const copies = runsOnDeviceWorkers(plan) ? ', each copied to and from its device by a worker thread of its own (its arrays are SharedArrayBuffers)' : '';
    parts.push(`Its loop is split over ${slots.length} devices (setGpuOptions({ devices })), one block of the outermost dimension each${copies}.`);
  }
  const budget = chunkBudget(plan);
  if (budget !== undefined) {
    const mib = (bytes: number) => `${(bytes / 2 ** 20).toFixed(1)} MiB`;
    const why = needsStreaming(plan)
      ? `more than the memory limit of ${mib(getGpuOptions().memoryLimit)} (setGpuOptions({ memoryLimit }))`
      : 'a large call with host outputs';
    parts.push(`Its host arrays need ${mib(hostOperandBytes(plan))} of device memory, ${why}: it runs in chunks of at most ${mib(budget)}, whose copies overlap the kernels.`);
  }
  const overlapping = overlappingInputs(plan);
  if (overlapping.length > 0) {
    parts.push(`Argument${overlapping.length === 1 ? '' : 's'} ${overlapping.map((k) => k + 1).join(', ')} overlap${overlapping.length === 1 ? 's' : ''} an output otherwise than in place: copied on the device first.`);
  }
  if (!plan.boundsCheck) parts.push('Indices are not checked (boundsCheck: false).');
  parts.push(explainHold(liveDevice(), plan));
  return parts.join(' ');
}

/** Runs a call, first copying device inputs that overlap an output otherwise than in place (overlaps.ts). */
function runSeparated(plan: CallPlan): Promise<void> {
  const overlapping = overlappingInputs(plan);
  if (overlapping.length === 0) return runWithinMemory(plan);
  return withInputsCopied(plan, overlapping, copyOnDevice).then(async (separated) => {
    try {
      await runWithinMemory(separated);
    } finally {
      // Recorded already: the queue runs the call before anything that reuses the copies' memory.
      for (const i of overlapping) (separated.operands[i]!.data as unknown as DeviceArray).destroy();
    }
  });
}

/**
 * Runs a call on host arrays across the devices when there are several (multi-device.ts); each
 * device's part whole, or in chunks when its host arrays exceed the memory limit or are large
 * (streaming.ts).
 */
function runWithinMemory(plan: CallPlan): Promise<void> {
  const slots = splitSlots(plan);
  if (!slots) return runOnOneDevice(plan);
  // Shared host arrays: each block's copies on its own GPU's worker thread (device-workers.ts).
  return runAcross(plan, slots, runsOnDeviceWorkers(plan) ? runOnDeviceWorker : runOnOneDevice);
}

function runOnOneDevice(plan: CallPlan): Promise<void> {
  const budget = chunkBudget(plan);
  return budget === undefined ? runOnGpu(plan) : runStreamed(plan, runOnGpu, budget);
}

/** The identity kernel of each dtype, typed once: what copyOnDevice runs. */
const copyKernels = new Map<DType, TypedKernel>();

/** A copy of a 1-D device array, by an identity kernel on the gpu, queued like any call. */
async function copyOnDevice(whole: DeviceArray): Promise<DeviceArray> {
  let kernel = copyKernels.get(whole.dtype);
  if (!kernel) {
    kernel = runPasses(typeKernel(parseFunction('(x) => x'), { params: [whole.dtype], returnType: whole.dtype, env: {} }));
    copyKernels.set(whole.dtype, kernel);
  }
  const copy = await outputArray(whole.shape, whole.dtype);
  const view = (a: DeviceArray): OperandView => ({
    dtype: a.dtype, data: a as unknown as OperandView['data'], offset: a.offset, loopStrides: [...a.strides], coreShape: [], coreStrides: [],
  });
  await runOnGpu({ kind: 'vectorize', kernel, kernelKey: `gpu-copy:${whole.dtype}`, loopShape: [...whole.shape], operands: [view(whole), view(copy)], nin: 1, boundsCheck: true });
  return copy;
}
