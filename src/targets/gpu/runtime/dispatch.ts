/**
 * Running one call on the gpu: place the operands (upload host inputs, bind device arrays), lay the
 * call out, get its pipeline, and record one dispatch into the device's open batch (chain.ts).
 *
 * Host inputs are read during the call itself, before it returns its promise: uploaded there and
 * then when the device and the pipeline are ready (the usual case after the first call), copied
 * otherwise — so changing a host array right after the call does not change its result (a call
 * run in chunks, streaming.ts, is one such call per chunk, started as the chunks go). Large host
 * inputs (from 1 MiB) are copied into pooled mapped staging buffers — a sparse view's elements
 * gathered straight into them — and their copies to the device recorded into the call's own batch
 * ({@link stageUpload}); small ones go through `queue.writeBuffer`.
 *
 * Calls whose outputs are all device arrays return once their work is recorded: a chain of calls
 * queues up without waiting for the GPU, and their errors surface at the next synchronisation
 * (`synchronize()`, `toHost()` of data they produced, a call with host outputs). Calls with host
 * outputs wait for the GPU, check, and copy the results into the caller's arrays.
 */
import { DTYPES, type TypedArray } from '../../../dtypes.js';
import { type CallLimits, type CallPlan, isDeviceResident, loopSize, type OperandView } from '../../../plan.js';
import { bufferBytes, pressureYield, releaseBuffer, takeBuffer } from './buffer-pool.js';
import { callLeanReadbackMaxBytes, downloadBufferTo, type LeanReadback, type ReadbackSink, STAGED_UPLOAD_MIN_BYTES, type StagedUpload, stageUpload, stageUploadWith, startLeanReadback } from './buffers.js';
import { tableBuffer } from './table-buffers.js';
import { type DeviceOperandView, layoutCall, type CallLayout } from '../codegen/call-layout.js';
import { beginCall, type CallRef, checkCalls, endCall, flushChain, noteWrite, taintsOf } from './chain.js';
import { type DeviceArray, bufferIsKnownZero, contentsUnspecified, noteKernelWrite } from './device-array.js';
import { watchLimits } from '../../../cancellation.js';
import { CallTimeoutError } from '../../../errors.js';
import { asDeviceError } from './device-errors.js';
import { abandonDevice, type GpuContext, holdDevice, isDeviceAlive, liveDevice, withDevice } from './device.js';
import { gatherInto, type HostPlacement, isAllZero, placeHostOperand, scatterResults, uploadData } from './host-operands.js';
import { isTiming, passTiming } from './kernel-timing.js';
import { type CompiledKernel, compiledKernel, readyKernel } from './pipeline-cache.js';
import { layoutKey } from '../codegen/shader-layout.js';
import { OOB_RECORD_BYTES } from '../codegen/shader-module.js';
import { isSharedArrayBuffer } from '../../../platform/platform.js';
import { ENQUEUED } from '../../target.js';
import { holdCall, setHeldRecorder } from './chain-fusion.js';
import { type CallMemo, memoFor, memoOf, onDeviceOnly, placedMemoFor, remember, rememberPlaced } from './call-memos.js';
import { writesWholeOutputs } from './fused-chain-plan.js';
import { analyseCoverage } from '../../../compiler/passes/output-coverage.js';
import { trace, tracing } from './transfer-trace.js';

/** A host array region the call moves to the device (shared by operands that are the same view). */
interface HostBuffer {
  readonly placement: HostPlacement;
  readonly bytes: number;
  /** Some operand reads it: upload it. */
  read: boolean;
  /** Some operand writes it: bring it back. */
  written: boolean;
  /**
   * Nothing needs uploading: an output that nothing reads and whose host elements are zeros, or that
   * the kernel writes whole ({@link overwritten}).
   */
  pristine: boolean;
  /** Written whole by the kernel and read by nothing: its old contents matter nowhere (neither uploaded nor zeroed). */
  overwritten?: boolean;
  /** An output the call allocated itself (OperandView.fresh): its elements are zeros, known without reading them. */
  allocated?: boolean;
  /** The elements to upload, taken when the call was made. */
  data?: TypedArray;
  /**
   * The elements to upload are gathered from the caller's array straight into staging memory as
   * the call is recorded (a large `packed` region on the path that records at once): no array of
   * them in between.
   */
  gather?: boolean;
  buffer?: GPUBuffer;
  /** The buffer is new (zeroed), not reused from the pool. */
  fresh?: boolean;
}

let hostUploads: 'staged' | 'writeBuffer' = 'staged';

/**
 * How calls upload their large host inputs: through pooled mapped staging buffers (the default)
 * or `queue.writeBuffer` (the earlier path, for benchmarks' A/B runs and tests).
 *
 * @param path `'staged'` or `'writeBuffer'`
 * @returns the previous setting
 */
export function setHostUploadPath(path: 'staged' | 'writeBuffer'): 'staged' | 'writeBuffer' {
  const previous = hostUploads;
  hostUploads = path;
  return previous;
}

const ONE_OFFSET = [0];
const NO_HOST_BUFFERS: readonly HostBuffer[] = [];
const TWO_OFFSETS = [0, 0];

/**
 * Runs a call on the gpu.
 *
 * @param plan the call plan
 * @returns when host outputs are written, or (device outputs only) when the work is recorded
 * @throws TargetUnavailableError without a GPU; KernelRuntimeError for a failed bounds check;
 *   DeviceError when the GPU reports an error or the device is lost
 */
export function runOnGpu(plan: CallPlan): Promise<void> {
  const ctx = liveDevice();
  if (ctx && !plan.limits) {
    // Held for fusion with the calls after it (chain-fusion.ts): recorded later, in order.
    try {
      if (holdCall(ctx, plan)) return pressureYield(ctx) || ENQUEUED;
    } catch (e) {
      return Promise.reject(e);
    }
  }
  const started = startOnGpu(plan);
  // Recorded, nothing to wait for (a chained call): handed on as is, without promise layers.
  if (started === ENQUEUED && !plan.limits) {
    // Under memory pressure, after the current task (buffer-pool.ts, pressureYield).
    const ctx = liveDevice();
    return (ctx && pressureYield(ctx)) || ENQUEUED;
  }
  const work = started.catch((e: unknown) => {
    throw asDeviceError(e, "this call's work");
  });
  return plan.limits ? withinLimits(work, plan.limits) : work;
}

/**
 * A call with a `timeout` or `signal`: when the limit passes first, the device is abandoned (WebGPU
 * cannot stop one dispatch, and a kernel that never ends would hold the queue for every later
 * call), the call rejects with the limit's error, and the next call gets a new device.
 */
async function withinLimits(work: Promise<void>, limits: CallLimits): Promise<void> {
  const watch = watchLimits(limits, 'gpu');
  try {
    const stop = await Promise.race([work.then(() => undefined), watch.stopped]);
    if (!stop) return;
    work.catch(() => {}); // it fails with the device; the call already has its error
    abandonDevice(`a call was stopped by its ${stop instanceof CallTimeoutError ? `\`timeout\` of ${limits.timeout} ms` : '`signal`'}`);
    throw new (stop.constructor as typeof CallTimeoutError)(
      `${stop.message} The gpu target cannot stop a running kernel, so it stopped using that device (device arrays on it are lost; it is destroyed once its work ends) and the next call gets a new one.`,
      { cause: stop.cause },
    );
  } finally {
    watch.dispose();
  }
}

function startOnGpu(plan: CallPlan): Promise<void> {
  try {
    for (const o of plan.operands) if (isDeviceResident(o.data)) (o.data as unknown as DeviceArray).assertUsable();
    if (loopSize(plan) === 0) return ENQUEUED;
    const ctx = liveDevice();
    // The fast path: a call on device arrays (and JS scalars) laid out like an earlier one.
    const deviceOnly = ctx !== undefined && onDeviceOnly(plan);
    if (deviceOnly) {
      const memo = memoFor(ctx.device, plan);
      if (memo) return record(ctx, plan, [], memo.callFor(plan), memo.kernel);
    }
    const hostBuffers: HostBuffer[] = [];
    const views = plan.operands.map((o, j) => deviceView(o, j >= plan.nin, plan, hostBuffers));
    for (const h of hostBuffers) {
      // Outputs nothing reads start from zeros when the caller's elements are zeros (fresh outputs),
      // and an output the kernel writes whole (any vectorize output) needs no upload either.
      h.overwritten = !h.read && (plan.kind === 'vectorize' || rowsWrittenWhole(plan, h));
      // (A new array's pages read to find zeros were mapped once and faulted again by the results.)
      h.pristine = !h.read && (h.overwritten || h.allocated === true || isAllZero(h.placement));
    }
    if (ctx) {
      const operands = placedViews(views);
      // A call with host arrays placed like an earlier one: its layout and pipeline, its own buffers.
      const placed = hostBuffers.length > 0 ? placedMemoFor(ctx.device, plan, operands) : undefined;
      if (placed) {
        for (const h of hostBuffers) if (h.read || !h.pristine) takeElementsNow(h);
        return record(ctx, plan, hostBuffers, placed.callFor(operands), placed.kernel);
      }
      const call = layoutFor(ctx, plan, operands);
      const kernel = readyKernel(ctx, call.key);
      if (kernel) {
        if (deviceOnly) remember(ctx.device, plan, call, kernel);
        else if (hostBuffers.length > 0) rememberPlaced(ctx.device, plan, operands, call, kernel);
        for (const h of hostBuffers) if (h.read || !h.pristine) takeElementsNow(h);
        return record(ctx, plan, hostBuffers, call, kernel);
      }
    }
    // The device or the pipeline is not ready: take the host inputs now, finish later.
    for (const h of hostBuffers) {
      if (h.read || !h.pristine) h.data = h.placement.mode === 'span' ? uploadData(h.placement).slice() : uploadData(h.placement);
    }
    return withDevice(async (ctx) => {
      const call = layoutFor(ctx, plan, placedViews(views));
      const kernel = await compiledKernel(ctx, plan, call.layout);
      return record(ctx, plan, hostBuffers, call, kernel);
    });
  } catch (e) {
    return Promise.reject(e);
  }
}

/** The operands as the device sees them, a host region's known once its `pristine` is decided. */
function placedViews(views: readonly { view: DeviceOperandView; host?: HostBuffer }[]): DeviceOperandView[] {
  return views.map((v) => (v.host ? { ...v.view, pristine: v.host.pristine } : v.view));
}

function layoutFor(ctx: GpuContext, plan: CallPlan, operands: readonly DeviceOperandView[]): CallLayout & { key: string } {
  const call = layoutCall(plan, operands, ctx.limits);
  return { ...call, key: `${plan.kernelKey}#${layoutKey(call.layout)}` };
}

const bufferIds = new WeakMap<GPUBuffer, number>();
let nextBufferId = 1;
function idOf(buffer: GPUBuffer): number {
  let id = bufferIds.get(buffer);
  if (id === undefined) bufferIds.set(buffer, (id = nextBufferId++));
  return id;
}
/** Bind groups kept per pipeline before the cache is cleared (each pins its buffers). */
const MAX_BIND_GROUPS = 64;

function sameBuffers(a: readonly GPUBuffer[], b: readonly GPUBuffer[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/** Records the call's dispatch into the open batch; waits only when there are host outputs. */
function record(ctx: GpuContext, plan: CallPlan, hostBuffers: HostBuffer[], call: CallLayout, kernel: CompiledKernel): Promise<void> {
  const { device } = ctx;
  const temporaries: GPUBuffer[] = [];
  const staged = placeHostBuffers(ctx, hostBuffers, temporaries);
  // The calls behind the device inputs' contents (loops, not array helpers: this runs per call).
  const inputRefs: CallRef[] = [];
  for (let j = 0; j < plan.nin; j++) {
    const data = plan.operands[j]!.data;
    if (!isDeviceResident(data)) continue;
    for (const r of taintsOf((data as unknown as DeviceArray).buffer)) if (!inputRefs.includes(r)) inputRefs.push(r);
  }

  // A kernel whose every index is proven in bounds has no sites: it never writes its record, so it
  // takes no record slot (the binding stays, at offset 0) and its batch reads nothing back.
  const rec = beginCall(ctx, plan.kernel.name, call.params, plan.boundsCheck && kernel.sites.length > 0 ? kernel.sites : undefined);
  const { encoder, batch } = rec;
  if (staged) {
    // In the call's own submission: WebGPU's errors for the copies are the call's, and a batch that
    // fails ran none of them.
    batch.endPass();
    for (const { upload, buffer } of staged) {
      upload.recordInto(encoder, buffer);
      batch.onSubmit(() => upload.release());
    }
  }
  // Reused buffers hold old data: zero those a guvectorize kernel may leave partly unwritten.
  if (plan.kind === 'guvectorize' && !writesWholeOutputs(plan.kernel)) {
    const clear = (b: GPUBuffer) => {
      batch.endPass();
      encoder.clearBuffer(b);
    };
    for (const h of hostBuffers) if (h.pristine && !h.fresh && !h.overwritten) clear(h.buffer!);
    plan.operands.forEach((o, j) => {
      if (j >= plan.nin && isDeviceResident(o.data) && contentsUnspecified((o.data as unknown as DeviceArray).buffer)) clear((o.data as unknown as DeviceArray).buffer);
    });
  }

  const storages = call.layout.bindings.map((_, i) => {
    const storage = call.bindingStorage[i] as HostBuffer | GPUBuffer;
    return 'placement' in storage ? storage.buffer! : storage;
  });
  // The previous call's group when it bound these very buffers (a repeated call: no key built).
  const last = kernel.lastBindGroup;
  let bindGroup = last && sameBuffers(last.storages, storages) ? last.group : undefined;
  let groupKey = '';
  if (!bindGroup) {
    for (const b of storages) groupKey += `${idOf(b)},`;
    bindGroup = kernel.bindGroups.get(groupKey);
  }
  if (!bindGroup) {
    const entries: GPUBindGroupEntry[] = [{ binding: 0, resource: { buffer: rec.params, offset: 0, size: Math.max(4, call.params.length * 4) } }];
    let next = 1;
    if (plan.boundsCheck) entries.push({ binding: next++, resource: { buffer: rec.oob, offset: 0, size: OOB_RECORD_BYTES } });
    call.layout.bindings.forEach((b, i) => {
      const buffer = storages[i]!;
      const chunkBytes = 4 * 2 ** b.chunkShift;
      for (let c = 0; c < b.chunks; c++) {
        const offset = b.chunks === 1 ? 0 : c * chunkBytes;
        // A pooled buffer may be larger than its data (size classes): bind no more than a binding may hold.
        const size = b.chunks === 1 ? Math.min(buffer.size, ctx.limits.maxStorageBufferBindingSize) : Math.min(chunkBytes, buffer.size - offset);
        entries.push({ binding: next++, resource: { buffer, offset, size } });
      }
    });
    // The same for every call of the pipeline: the group key need not name them.
    for (const table of plan.kernel.tables ?? []) entries.push({ binding: next++, resource: { buffer: tableBuffer(ctx, table) } });
    bindGroup = device.createBindGroup({ layout: kernel.bindGroupLayout, entries });
    if (kernel.bindGroups.size >= MAX_BIND_GROUPS) kernel.bindGroups.clear();
    kernel.bindGroups.set(groupKey, bindGroup);
  }
  if (bindGroup !== last?.group) kernel.lastBindGroup = { storages, group: bindGroup };
  // A timed call (kernel-timing.ts) begins a pass of its own with the timestamps around it; the
  // calls of a back-to-back span continue it.
  const timing = passTiming(ctx);
  if (timing && !timing.begins && !batch.inTimedPass()) {
    throw new Error('timeKernels: a back-to-back span was interrupted (its batch was submitted or its pass ended before its last dispatch)');
  }
  const pass = timing?.begins ? batch.beginTimedPass(timing.timestampWrites) : batch.computePass();
  if (batch.lastPipeline !== kernel.pipeline) pass.setPipeline(kernel.pipeline);
  batch.lastPipeline = kernel.pipeline;
  // Bindings stay set across the dispatches of a pass: a call that repeats the previous one's bind
  // group and params slot (a chain of equal calls) sets nothing (2.5–4 µs of Dawn time a call).
  if (!batch.sameBindings(bindGroup, rec.paramsOffset, rec.oobOffset)) {
    // Reused arrays: a fresh array literal per call cost 4× as much to pass to Dawn.
    if (plan.boundsCheck) {
      TWO_OFFSETS[0] = rec.paramsOffset;
      TWO_OFFSETS[1] = rec.oobOffset;
      pass.setBindGroup(0, bindGroup, TWO_OFFSETS);
    } else {
      ONE_OFFSET[0] = rec.paramsOffset;
      pass.setBindGroup(0, bindGroup, ONE_OFFSET);
    }
  }
  pass.dispatchWorkgroups(call.groups[0], call.groups[1]);
  if (timing?.ends) {
    batch.endPass();
    timing.resolve(encoder);
    batch.onSubmit(() => timing.collect());
  }

  for (let j = plan.nin; j < plan.operands.length; j++) {
    const data = plan.operands[j]!.data;
    if (!isDeviceResident(data)) continue;
    const b = (data as unknown as DeviceArray).buffer;
    noteKernelWrite(b);
    noteWrite(b, rec.ref, inputRefs);
  }

  const hostOutputs = hostBuffers.length === 0 ? NO_HOST_BUFFERS : hostBuffers.filter((h) => h.written);
  if (hostOutputs.length === 0) {
    // Device outputs only: return now. The temporaries go back to the pool once the batch is
    // submitted (later users of them come after it in queue order).
    if (temporaries.length) rec.batch.onSubmit(() => temporaries.forEach((b) => releaseBuffer(ctx, b)));
    if (timing?.ends) {
      rec.batch.submit();
    } else if (!timing) {
      let bytes = 0;
      for (const b of storages) bytes += bufferBytes(b);
      endCall(rec, bytes);
    }
    return ENQUEUED;
  }
  // Outputs are copied out in the call's own submission, mapped right behind it: one submission
  // and one wait per call instead of a second submission once the first is done (bench/call-cost.ts;
  // for a call in chunks, buffers.ts callLeanReadbackMaxBytes). The first such call of a size
  // takes downloadBuffer, which pools the staging buffer that later calls use.
  const leans = useLeanReadbacks
    ? hostOutputs.map((h) => (h.placement.length > 0 ? startLeanReadback(ctx, h.buffer!, 0, h.bytes, callLeanReadbackMaxBytes()) : undefined))
    : [];
  rec.batch.submit();
  // Held until the results are back: an idle release must not take the device mid-download.
  const hold = holdDevice(ctx);
  return (async () => {
    try {
      const checked = checkCalls([...inputRefs, rec.ref]).catch((e) => {
        // This call's own error is reported as is (it is the call being awaited).
        throw e instanceof Error && e.cause instanceof Error && rec.batch.outcomes?.[rec.ref.index] === e.cause ? e.cause : e;
      });
      for (const [k, h] of hostOutputs.entries()) {
        const lean = leans[k];
        try {
          if (lean && (await finishLean(lean, h, checked))) continue;
          await checked;
          await bringBack(ctx, h);
        } catch (e) {
          // The later outputs' staging buffers go back (or are destroyed); nothing is written.
          for (const rest of leans.slice(k + 1)) void rest?.finish(new Uint8Array(0), Promise.reject(e)).catch(() => {});
          throw e;
        }
      }
      await checked;
    } finally {
      if (isDeviceAlive(ctx)) temporaries.forEach((b) => releaseBuffer(ctx, b));
      hold.release();
    }
  })();
}

/** A large host input copied into staging buffers, and the buffer its copies go to. */
interface StagedInput {
  readonly upload: StagedUpload;
  readonly buffer: GPUBuffer;
}

/**
 * Takes a device buffer from the pool for each host region of the call (into `temporaries`) and
 * sends the inputs' elements: small ones through `queue.writeBuffer` now, large ones
 * (≥ STAGED_UPLOAD_MIN_BYTES) copied into mapped staging buffers now, whose copies the caller
 * records into the call's batch before its dispatch.
 *
 * @returns the staged inputs, or undefined when there are none
 */
function placeHostBuffers(ctx: GpuContext, hostBuffers: HostBuffer[], temporaries: GPUBuffer[]): StagedInput[] | undefined {
  const { device } = ctx;
  // A buffer from the pool may still be used by the open batch: host writes must not overtake it.
  if (hostBuffers.some((h) => h.data || h.gather)) flushChain(device);
  let staged: StagedInput[] | undefined;
  try {
    for (const h of hostBuffers) {
      const { buffer, fresh } = takeBuffer(ctx, h.bytes);
      h.buffer = buffer;
      h.fresh = fresh;
      temporaries.push(buffer);
      if (h.gather) {
        (staged ??= []).push({ upload: stageGathered(ctx, h.placement), buffer });
        continue;
      }
      if (!h.data) continue;
      if (hostUploads === 'staged' && h.data.byteLength >= STAGED_UPLOAD_MIN_BYTES) {
        (staged ??= []).push({ upload: stageUpload(ctx, h.data), buffer });
      } else {
        // Queue order puts this write after every earlier use of the buffer and before this call's dispatch.
        const started = tracing() ? performance.now() : 0;
        writeWords(device.queue, buffer, h.data);
        // Dawn copies the bytes into staging memory of its own, here and now.
        if (started) trace({ kind: 'host-to-staging', t: started, device: ctx.slot, bytes: h.data.byteLength, ms: performance.now() - started });
      }
    }
  } catch (e) {
    // Nothing was recorded: the staging buffers filled so far go back to the pool.
    for (const s of staged ?? []) s.upload.release();
    throw e;
  }
  return staged;
}

/**
 * The elements a host region uploads, for a call recorded right away: a large `packed` region is
 * marked to be gathered straight into staging memory ({@link stageGathered}); others are taken
 * now (a view of the caller's array, or its gathered elements).
 */
function takeElementsNow(h: HostBuffer): void {
  if (h.placement.mode === 'packed' && hostUploads === 'staged' && h.bytes >= STAGED_UPLOAD_MIN_BYTES) h.gather = true;
  else h.data = uploadData(h.placement);
}

/** Stages a `packed` region's elements, gathered from the caller's array into each staging chunk. */
function stageGathered(ctx: GpuContext, p: HostPlacement): StagedUpload {
  const elementType = p.data.constructor as new (buffer: ArrayBufferLike, byteOffset: number, length: number) => TypedArray;
  const size = p.data.BYTES_PER_ELEMENT;
  // Chunks start at multiples of 8 bytes and hold whole elements (buffers.ts stageUploadWith).
  return stageUploadWith(ctx, p.length * size, (chunk, at) => gatherInto(p, new elementType(chunk.buffer, chunk.byteOffset, chunk.byteLength / size), at / size));
}

/** `queue.writeBuffer` of a typed array's elements, the last 1–3 bytes zero-padded to a word. */
function writeWords(queue: GPUQueue, buffer: GPUBuffer, data: TypedArray): void {
  const bytes = new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
  const whole = bytes.byteLength - (bytes.byteLength % 4);
  // dawn.node crashes on views of a SharedArrayBuffer (see buffers.ts): copy those.
  const source = isSharedArrayBuffer(bytes.buffer) ? bytes.slice() : bytes;
  if (whole > 0) queue.writeBuffer(buffer, 0, source, 0, whole);
  if (whole < bytes.byteLength) {
    const tail = new Uint8Array(4);
    tail.set(bytes.subarray(whole));
    queue.writeBuffer(buffer, whole, tail);
  }
}

/** Per kernel: whether parameter `j`'s 1-D row of a given length is written whole before it is read (keys `j:length`). */
const coverageMemo = new WeakMap<CallPlan['kernel'], Map<string, boolean>>();

/**
 * Whether every operand of a guvectorize call on host region `h` is a 1-D output row that the
 * kernel writes whole before reading any element it has not written (output-coverage.ts), as
 * the Hermite `()->(n)` table's rows are: the caller's old elements then reach no result, so they
 * are not uploaded — for a table of 16 floats a row, the upload was as large as the read-back.
 */
function rowsWrittenWhole(plan: CallPlan, h: HostBuffer): boolean {
  let any = false;
  for (let j = plan.nin; j < plan.operands.length; j++) {
    const o = plan.operands[j]!;
    if (o.scalar !== undefined || o.data !== h.placement.data || isDeviceResident(o.data)) continue;
    if (o.coreShape.length !== 1 || j >= plan.kernel.params.length) return false;
    let memo = coverageMemo.get(plan.kernel);
    if (!memo) coverageMemo.set(plan.kernel, (memo = new Map()));
    const key = `${j}:${o.coreShape[0]}`;
    let whole = memo.get(key);
    if (whole === undefined) memo.set(key, (whole = analyseCoverage(plan.kernel, [j], o.coreShape[0]!).writesAll));
    if (!whole) return false;
    any = true;
  }
  return any;
}

/** How an operand appears on the device; host operands are registered in `hostBuffers`. */
function deviceView(o: OperandView, isOutput: boolean, plan: CallPlan, hostBuffers: HostBuffer[]): { view: DeviceOperandView; host?: HostBuffer } {
  const common = { dtype: o.dtype, coreShape: o.coreShape };
  if (o.scalar !== undefined) {
    return { view: { ...common, storage: undefined, storageBytes: 0, offset: 0, loopStrides: o.loopStrides, coreStrides: o.coreStrides, scalar: o.scalar, pristine: false } };
  }
  if (isDeviceResident(o.data)) {
    const array = o.data as unknown as DeviceArray;
    // A reused output buffer of a guvectorize call is zeroed before the dispatch (see record).
    // (A fused chain's kernel writes its outputs whole: one layout whatever its buffers held.)
    const pristine = !writesWholeOutputs(plan.kernel) && (bufferIsKnownZero(array.buffer) || (isOutput && plan.kind === 'guvectorize' && contentsUnspecified(array.buffer)));
    return {
      view: {
        ...common, storage: array.buffer, storageBytes: array.buffer.size, offset: o.offset,
        loopStrides: o.loopStrides, coreStrides: o.coreStrides, pristine,
      },
    };
  }
  const placement = placeHostOperand(o, plan.loopShape, isOutput ? 'output' : 'input');
  // The same region of the same array (an in-place call) is one buffer, bound once.
  let host = hostBuffers.find((h) => h.placement.data === placement.data && h.placement.low === placement.low && h.placement.high === placement.high && h.placement.mode === placement.mode);
  if (!host) {
    host = { placement, bytes: placement.length * DTYPES[o.dtype].bytes, read: false, written: false, pristine: false };
    hostBuffers.push(host);
  }
  if (isOutput) {
    host.written = true;
    if (o.fresh) host.allocated = true;
  } else {
    host.read = true;
  }
  return {
    view: {
      ...common, storage: host, storageBytes: Math.max(4, Math.ceil(host.bytes / 4) * 4), offset: placement.offset,
      loopStrides: placement.loopStrides, coreStrides: placement.coreStrides, pristine: false,
    },
    host,
  };
}

/**
 * Finishes a host output's lean read-back: its elements written into the caller's array once the
 * call checked out. False when the copy did not run (the caller then takes {@link bringBack}).
 */
async function finishLean(lean: LeanReadback, h: HostBuffer, checked: Promise<unknown>): Promise<boolean> {
  return lean.finish(resultSink(h.placement), checked);
}

/**
 * Where a host output's read-back goes: a dense region straight into the caller's array; a sparse
 * one scattered into the view's elements straight out of the mapped staging memory, a piece at a
 * time (no array of the results in between).
 */
function resultSink(p: HostPlacement): ReadbackSink {
  const size = p.data.BYTES_PER_ELEMENT;
  if (p.dense) return new Uint8Array(p.data.buffer, p.data.byteOffset + p.low * size, p.length * size);
  const elementType = p.data.constructor as new (buffer: ArrayBufferLike, byteOffset: number, length: number) => TypedArray;
  return (bytes, at) => scatterResults(p, new elementType(bytes.buffer, bytes.byteOffset, bytes.byteLength / size), at / size);
}

let useLeanReadbacks = true;

/**
 * Whether calls with host outputs copy small outputs out in their own submission (the default) or
 * read them back after the call's work is done (the earlier path, for benchmarks' A/B runs).
 *
 * @returns the previous setting
 */
export function setHostOutputReadback(path: 'in-call' | 'after'): 'in-call' | 'after' {
  const previous = useLeanReadbacks ? 'in-call' : 'after';
  useLeanReadbacks = path === 'in-call';
  return previous;
}

/** Copies an output's device buffer back into the caller's array (the usual path: after the call's work is done). */
async function bringBack(ctx: GpuContext, h: HostBuffer): Promise<void> {
  if (h.placement.length === 0) return;
  await downloadBufferTo(ctx, h.buffer!, 0, h.bytes, resultSink(h.placement));
}

// How chain-fusion.ts records the calls it held: a repeated call (its layout and pipeline known:
// its recipe is the memo of its signature), and fused plans when their pipeline is ready (compiled
// in the background otherwise, while the calls run one by one). A held call's params are taken
// when it is recorded, from its own plan: the memo's shared words are patched right before.
setHeldRecorder({
  prepare(ctx, plan) {
    if (isTiming() || !onDeviceOnly(plan)) return undefined;
    const memo = memoFor(ctx.device, plan);
    if (memo) return memo;
    // Laid out as startOnGpu does; held only when its pipeline is ready.
    const call = layoutFor(ctx, plan, placedViews(plan.operands.map((o, j) => deviceView(o, j >= plan.nin, plan, []))));
    const kernel = readyKernel(ctx, call.key);
    return kernel && remember(ctx.device, plan, call, kernel);
  },
  record(ctx, plan, recipe) {
    const memo = recipe as CallMemo;
    void record(ctx, plan, [], memo.callFor(plan), memo.kernel);
  },
  recordFused(ctx, plan, slot) {
    // Laid out once per chain shape: the slot keeps the fused call's memo.
    let memo = slot.recipe as CallMemo | undefined;
    if (!memo) {
      const call = layoutFor(ctx, plan, placedViews(plan.operands.map((o, j) => deviceView(o, j >= plan.nin, plan, []))));
      const kernel = readyKernel(ctx, call.key);
      // A failure leaves such chains unfused (each time: the next try fails alike).
      if (!kernel) return compiledKernel(ctx, plan, call.layout).then(() => undefined, () => undefined);
      slot.recipe = memo = memoOf(plan, call, kernel);
    }
    void record(ctx, plan, [], memo.callFor(plan), memo.kernel);
    return true;
  },
});
