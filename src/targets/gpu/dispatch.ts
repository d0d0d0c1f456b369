/**
 * Running one call on the gpu: place the operands (upload host inputs, bind device arrays), lay the
 * call out, get its pipeline, encode and submit one dispatch, then check bounds and bring host
 * outputs back.
 *
 * Calls whose outputs are all device arrays return once their work is submitted: a chain of calls
 * queues up on the GPU without waiting. Their bounds checks are read back in the background and
 * reported by whatever next brings the data to the host (`toHost()`, or a call with host outputs).
 * Calls with host outputs wait for the GPU, check, and copy the results into the caller's arrays.
 */
import { DTYPES, type TypedArray } from '../../dtypes.js';
import { type CallPlan, isDeviceResident, loopSize, type OperandView } from '../../plan.js';
import { oobError } from './bounds-errors.js';
import { allocateBuffer, downloadBuffer, uploadToBuffer, writeToBuffer } from './buffers.js';
import { type DeviceOperandView, layoutCall } from './call-layout.js';
import { type DeviceArray, bufferIsKnownZero, noteKernelWrite, pendingCheckOf } from './device-array.js';
import { type GpuContext, holdDevice, runScoped, withDevice } from './device.js';
import { type HostPlacement, isAllZero, placeHostOperand, scatterResults, uploadData } from './host-operands.js';
import { passTiming } from './kernel-timing.js';
import { compiledKernel } from './pipeline-cache.js';
import { OOB_RECORD_BYTES } from './shader-module.js';

/** A host array region the call moves to the device (shared by operands that are the same view). */
interface HostBuffer {
  readonly placement: HostPlacement;
  readonly bytes: number;
  /** Some operand reads it: upload it. */
  read: boolean;
  /** Some operand writes it: bring it back. */
  written: boolean;
  /** Nothing needs uploading and the host elements are zeros (an output that starts zeroed). */
  pristine: boolean;
  buffer?: GPUBuffer;
}

const BUFFER_USAGE = () => GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST;

/**
 * Runs a call on the gpu.
 *
 * @param plan the call plan
 * @returns when host outputs are written, or (device outputs only) when the work is submitted
 * @throws TargetUnavailableError without a GPU; KernelRuntimeError for a failed bounds check;
 *   DeviceError when the GPU reports an error or the device is lost
 */
export async function runOnGpu(plan: CallPlan): Promise<void> {
  for (const o of plan.operands) if (isDeviceResident(o.data)) (o.data as unknown as DeviceArray).assertUsable();
  if (loopSize(plan) === 0) return;
  return withDevice((ctx) => dispatchCall(ctx, plan));
}

async function dispatchCall(ctx: GpuContext, plan: CallPlan): Promise<void> {
  const hostBuffers: HostBuffer[] = [];
  const views = plan.operands.map((o, j) => deviceView(o, j >= plan.nin, plan, hostBuffers));
  for (const h of hostBuffers) {
    // Outputs nothing reads start from zeros when the caller's elements are zeros (fresh outputs),
    // and vectorize writes every element of its output, so neither needs an upload.
    h.pristine = !h.read && (plan.kind === 'vectorize' || isAllZero(h.placement));
  }
  const call = layoutCall(
    plan,
    views.map((v) => (v.host ? { ...v.view, pristine: v.host.pristine } : v.view)),
    ctx.limits,
  );
  const kernel = await compiledKernel(ctx, plan.kernel, plan.kernelKey, call.layout);

  const temporaries: GPUBuffer[] = [];
  let oobReadback: GPUBuffer | undefined;
  let oobMapped: Promise<void> | undefined;
  try {
    await runScoped(ctx, async () => {
      const { device } = ctx;
      for (const h of hostBuffers) {
        h.buffer = allocateBuffer(ctx, h.bytes, BUFFER_USAGE());
        temporaries.push(h.buffer);
        if (h.read || !h.pristine) await writeToBuffer(ctx, h.buffer, 0, uploadData(h.placement));
      }
      const params = uploadToBuffer(ctx, call.params, GPUBufferUsage.STORAGE);
      temporaries.push(params);
      const entries: GPUBindGroupEntry[] = [{ binding: 0, resource: { buffer: params } }];
      let next = 1;
      let oob: GPUBuffer | undefined;
      if (plan.boundsCheck) {
        oob = allocateBuffer(ctx, OOB_RECORD_BYTES, GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC);
        temporaries.push(oob);
        oobReadback = device.createBuffer({ size: OOB_RECORD_BYTES, usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST });
        entries.push({ binding: next++, resource: { buffer: oob } });
      }
      call.layout.bindings.forEach((b, i) => {
        const storage = call.bindingStorage[i] as HostBuffer | GPUBuffer;
        const buffer = 'placement' in storage ? storage.buffer! : storage;
        const chunkBytes = 4 * 2 ** b.chunkShift;
        for (let c = 0; c < b.chunks; c++) {
          const offset = b.chunks === 1 ? 0 : c * chunkBytes;
          const size = b.chunks === 1 ? buffer.size : Math.min(chunkBytes, buffer.size - offset);
          entries.push({ binding: next++, resource: { buffer, offset, size } });
        }
      });
      const bindGroup = device.createBindGroup({ layout: kernel.bindGroupLayout, entries });
      const timing = passTiming(ctx);
      const encoder = device.createCommandEncoder();
      const pass = encoder.beginComputePass(timing ? { timestampWrites: timing.timestampWrites } : {});
      pass.setPipeline(kernel.pipeline);
      pass.setBindGroup(0, bindGroup);
      pass.dispatchWorkgroups(call.groups[0], call.groups[1]);
      pass.end();
      timing?.resolve(encoder);
      if (oob) encoder.copyBufferToBuffer(oob, 0, oobReadback!, 0, OOB_RECORD_BYTES);
      device.queue.submit([encoder.finish()]);
      timing?.collect();
      if (oobReadback) {
        oobMapped = oobReadback.mapAsync(GPUMapMode.READ);
        oobMapped.catch(() => {}); // awaited below or by the pending check
      }
    });
  } catch (e) {
    temporaries.forEach((b) => b.destroy());
    oobReadback?.destroy();
    throw e;
  }

  // This call's bounds check, after the checks of the calls that produced its device inputs.
  const inputChecks = plan.operands
    .slice(0, plan.nin)
    .filter((o) => isDeviceResident(o.data))
    .map((o) => pendingCheckOf((o.data as unknown as DeviceArray).buffer))
    .filter((p): p is Promise<void> => p !== undefined);
  const readback = oobReadback;
  const ownCheck = readback
    ? oobMapped!.then(
        () => {
          const error = oobError(readback.getMappedRange().slice(0), kernel.sites);
          readback.unmap();
          readback.destroy();
          if (error) throw error;
        },
        (e) => {
          readback.destroy();
          throw e;
        },
      )
    : undefined;
  const check = ownCheck || inputChecks.length ? Promise.all([...inputChecks, ...(ownCheck ? [ownCheck] : [])]).then(() => undefined) : undefined;
  check?.catch(() => {});
  plan.operands.forEach((o, j) => {
    if (j >= plan.nin && isDeviceResident(o.data)) noteKernelWrite((o.data as unknown as DeviceArray).buffer, check);
  });

  const hostOutputs = hostBuffers.filter((h) => h.written);
  if (hostOutputs.length === 0) {
    // Device outputs only: return now. Buffers in use by submitted work may be destroyed (WebGPU
    // keeps them until the work is done); the device stays held until the check is read.
    temporaries.forEach((b) => b.destroy());
    if (check) {
      const hold = holdDevice(ctx);
      void check.catch(() => {}).finally(() => hold.release());
    }
    return;
  }
  try {
    await check;
    for (const h of hostOutputs) await bringBack(ctx, h);
  } finally {
    temporaries.forEach((b) => b.destroy());
  }
}

/** How an operand appears on the device; host operands are registered in `hostBuffers`. */
function deviceView(o: OperandView, isOutput: boolean, plan: CallPlan, hostBuffers: HostBuffer[]): { view: DeviceOperandView; host?: HostBuffer } {
  const common = { dtype: o.dtype, coreShape: o.coreShape };
  if (o.scalar !== undefined) {
    return { view: { ...common, storage: undefined, storageBytes: 0, offset: 0, loopStrides: o.loopStrides, coreStrides: o.coreStrides, scalar: o.scalar, pristine: false } };
  }
  if (isDeviceResident(o.data)) {
    const array = o.data as unknown as DeviceArray;
    return {
      view: {
        ...common, storage: array.buffer, storageBytes: array.buffer.size, offset: o.offset,
        loopStrides: o.loopStrides, coreStrides: o.coreStrides, pristine: bufferIsKnownZero(array.buffer),
      },
    };
  }
  const placement = placeHostOperand(o, plan.loopShape);
  // The same region of the same array (an in-place call) is one buffer, bound once.
  let host = hostBuffers.find((h) => h.placement.data === placement.data && h.placement.low === placement.low && h.placement.high === placement.high && h.placement.mode === placement.mode);
  if (!host) {
    host = { placement, bytes: placement.length * DTYPES[o.dtype].bytes, read: false, written: false, pristine: false };
    hostBuffers.push(host);
  }
  if (isOutput) host.written = true;
  else host.read = true;
  return {
    view: {
      ...common, storage: host, storageBytes: Math.max(4, Math.ceil(host.bytes / 4) * 4), offset: placement.offset,
      loopStrides: placement.loopStrides, coreStrides: placement.coreStrides, pristine: false,
    },
    host,
  };
}

/** Copies an output's device buffer back into the caller's array. */
async function bringBack(ctx: GpuContext, h: HostBuffer): Promise<void> {
  const p = h.placement;
  if (p.length === 0) return;
  if (p.dense) {
    await downloadBuffer(ctx, h.buffer!, 0, h.bytes, p.data.subarray(p.low, p.high + 1));
    return;
  }
  const results = new (p.data.constructor as new (length: number) => TypedArray)(p.length);
  await downloadBuffer(ctx, h.buffer!, 0, h.bytes, results);
  scatterResults(p, results);
}
