/**
 * Asynchronous call chains: gpu calls are recorded into a shared command encoder (a "batch") and
 * submitted together, without a host round trip per call. What a call would otherwise wait for —
 * WebGPU's error scopes and the shader's bounds-check record — is collected once per batch and
 * looked at when the user synchronises.
 *
 * When a batch is submitted: at the end of the current turn of the event loop (`setImmediate`),
 * when it holds {@link MAX_CALLS_PER_BATCH} calls or its calls have bound
 * {@link EARLY_SUBMIT_BYTES} (large calls), and before anything else of ours touches the
 * queue (an upload, a download — a small one records its copy into the batch instead, see
 * {@link recordReadback} —, `DeviceArray.set`, a release of a buffer it uses): WebGPU runs
 * `queue.writeBuffer` and submissions in the order they are issued, so an unsubmitted batch must
 * go first. (An earlier version found a submission per large call 4× slower on an H100: that was
 * a MAP_READ buffer created per batch, 0.15–0.3 ms of host time each, now reused, and the GPU's
 * clock measured cold; see bench/README.md.)
 *
 * What a batch costs instead of what a call cost: one `queue.submit`, one set of error scopes
 * pushed and popped (synchronously, around `finish` and `submit`: an invalid dispatch makes the
 * command encoder invalid, and that error is reported by `finish`/`submit`, so no scope needs to
 * stay open across calls — which would collide with other code's scopes on the device's one
 * stack), one write of the params of all its calls (one buffer, dynamic offsets; skipped when the
 * buffer holds these words already from the batch before), and one
 * read-back of the bounds-check records of all its calls (one buffer, one slot per call).
 *
 * Errors: every call of a batch gets an outcome when the batch has run — undefined, the
 * KernelRuntimeError of its own failed bounds check, or a DeviceError (WebGPU reported an error
 * for the batch, or the device was lost before it ran). Outcomes are reported by
 * {@link synchronize} (every call since the previous `synchronize()`), and by whatever reads data
 * a failed call wrote, or computed from it ({@link checkBuffers}: `toHost()`, a call with host
 * outputs). See docs/gpu.md, "When errors surface".
 */
import { DeviceError, KernelRuntimeError, UfuncError } from '../../../errors.js';
import { oobError } from './bounds-errors.js';
import { type IndexCheckSite, setLazyMessage } from '../../../compiler/source-excerpt.js';
import { assertDeviceAlive, type DeviceHold, type GpuContext, holdDevice, isDeviceAlive } from './device.js';
import { afterCurrentTask } from '../../../platform/platform.js';
import type { GPUBuffer, GPUCommandEncoder, GPUComputePassEncoder, GPUComputePipeline, GPUDevice } from './webgpu-types.js';

/** Calls per batch; also the number of slots of the params and bounds-check arenas. */
export const MAX_CALLS_PER_BATCH = 128;
/**
 * A batch is also submitted once its calls have bound this many bytes (a rough measure of their
 * GPU time: 1 GiB is about 0.3 ms of an H100's memory traffic), so that the GPU starts on a chain
 * of large calls while the host still records the rest. Every binding of every call counts, also a
 * buffer bound again (the same `out`): the measure is of work, not of memory. 1 GiB was the best
 * of the limits measured (bench/results/chain-early-submit.md); small calls still share one
 * submission per 128.
 */
export const EARLY_SUBMIT_BYTES = 2 ** 30;
/** Bytes of each call's slot in the params and bounds-check arenas (WebGPU's dynamic offset alignment). */
const SLOT_BYTES = 256;
/**
 * The error scopes around a batch's `finish` and `submit` (and a params `writeBuffer`): validation
 * only. WebGPU generates only validation errors from those calls, and Dawn turns any other error
 * there (an out-of-memory or internal failure of its backend) into the loss of the device, reported
 * through `device.lost` and never to a scope (`DeviceBase::HandleError` allows only validation errors
 * for them): 'out-of-memory' and 'internal' scopes there could never report anything. Each push and
 * pop costs 3–4 µs in Dawn's Node binding on an H100 host (bench/results/sync-probe-nvidia-h100.md).
 */
const ERROR_FILTERS: readonly GPUErrorFilter[] = ['validation'];

/** A call in a batch, as error messages name it. */
class CallRecord {
  constructor(
    /** The call's number, counted over the process. */
    readonly id: number,
    readonly kernelName: string,
    /** The shader's bounds-check sites, or undefined when the call checks nothing. */
    readonly sites: readonly IndexCheckSite[] | undefined,
    readonly oobSlot: number,
  ) {}

  /** e.g. "gpu call #12 (`saxpy`)", built only when a message needs it. */
  get label(): string {
    return `gpu call #${this.id} (\`${this.kernelName}\`)`;
  }
}

/** A call's place in a batch: what {@link checkBuffers} waits for. */
export interface CallRef {
  readonly batch: Batch;
  readonly index: number;
}

/** The per-device buffers every batch shares. */
interface Arenas {
  readonly params: GPUBuffer;
  readonly oob: GPUBuffer;
  /** The params slots' host copy, written to `params` in one `writeBuffer` per batch. */
  readonly paramsWords: Uint32Array;
  /**
   * What the latest params write put into `params` (its first `writtenWords` words), by which
   * batch: a batch whose params words equal them skips its write (see {@link Batch.submit}).
   * `writtenWords` is 0 when nothing may be relied on (no write yet, or the latest one failed).
   */
  readonly written: Uint32Array;
  writtenWords: number;
  writer: Batch | undefined;
  readonly slotBytes: number;
  /**
   * Unmapped MAP_READ buffers for the bounds-check records, reused by later batches: creating
   * one per batch cost 0.15–0.3 ms of host time on an H100 (Dawn allocates host-visible memory),
   * more than a whole 2^24-element kernel.
   */
  readonly readbacks: GPUBuffer[];
}

/** Readback buffers kept per device (a batch in flight holds one; a few may overlap). */
const MAX_FREE_READBACKS = 4;

/** Calls recorded into one command encoder and submitted together. */
export class Batch {
  readonly calls: CallRecord[] = [];
  /** Per call: its error, once the batch has run; undefined until then. */
  outcomes: (UfuncError | undefined)[] | undefined;
  /** Resolves (never rejects) once `outcomes` is set. */
  readonly settled: Promise<void>;
  encoder: GPUCommandEncoder | undefined;
  /**
   * The compute pass consecutive calls share: beginning and ending a pass per call cost 40 µs
   * (Dawn on lavapipe). WebGPU makes each dispatch its own usage scope, so a dispatch sees the
   * writes of the dispatches before it in the same pass.
   */
  private pass: GPUComputePassEncoder | undefined;
  private timedPass: GPUComputePassEncoder | undefined;
  /** The pipeline last set in the open pass (setting it again is skipped). */
  lastPipeline: GPUComputePipeline | undefined;
  /** Params slots used. */
  paramSlots = 0;
  /** Bytes bound by its calls so far (see {@link EARLY_SUBMIT_BYTES}). */
  boundBytes = 0;
  /** The latest call's params slot (offset in words, length), which an equal next call shares. */
  lastParamsWord = -1;
  lastParamsLength = 0;
  /** The bind group and dynamic offsets last set in the open pass. */
  private boundGroup: unknown;
  private boundParams = -1;
  private boundOob = -1;
  oobSlots = 0;
  submitted = false;
  /**
   * The errors WebGPU reported for the params write this batch's calls read (empty: none): its
   * own write, or, when its params equalled those already in the arena and it skipped writing,
   * the write of the batch that put them there. Set at submission.
   */
  paramsWrite: Promise<string[]> = NO_ERRORS;
  /** The batch whose params write this one relies on (itself when it wrote). */
  paramsWriter: Batch | undefined;
  /** Calls whose error was already thrown to the user (synchronize() does not repeat them). */
  readonly reported = new Set<number>();
  /** Read-backs recorded into the batch after its calls ({@link recordReadback}). */
  readbacks = 0;
  /**
   * Whether the batch's commands did not run: WebGPU reported an error for its submission, or the
   * device was lost before they finished. Set when `outcomes` is.
   */
  failed = false;
  private settle!: () => void;
  private readonly afterSubmit: (() => void)[] = [];
  private readonly hold: DeviceHold;

  constructor(
    readonly ctx: GpuContext,
    readonly arenas: Arenas,
  ) {
    this.settled = new Promise<void>((resolve) => (this.settle = resolve));
    this.hold = holdDevice(ctx);
  }

  /** The open compute pass, begun if need be (without timestamps). */
  computePass(): GPUComputePassEncoder {
    return (this.pass ??= this.encoder!.beginComputePass());
  }

  /**
   * Ends the open compute pass and begins one with these timestamp writes (kernel-timing.ts), which
   * later calls continue. (`object`: the declarations name no WebGPU dictionary, see webgpu-types.ts.)
   */
  beginTimedPass(timestampWrites: object): GPUComputePassEncoder {
    this.endPass();
    return (this.pass = this.timedPass = this.encoder!.beginComputePass({ timestampWrites: timestampWrites as GPUComputePassTimestampWrites }));
  }

  /** Whether the open pass is the timed one {@link beginTimedPass} began. */
  inTimedPass(): boolean {
    return this.pass !== undefined && this.pass === this.timedPass;
  }

  /** Ends the open compute pass, so that copies, clears or a timed pass can be encoded. */
  endPass(): void {
    this.pass?.end();
    this.pass = undefined;
    this.lastPipeline = undefined;
    this.boundGroup = undefined;
  }

  /**
   * Whether the open pass has this bind group set with these offsets already (then setting it again
   * is skipped); records them as set otherwise, for the caller sets them now.
   */
  sameBindings(group: unknown, paramsOffset: number, oobOffset: number): boolean {
    if (this.boundGroup === group && this.boundParams === paramsOffset && this.boundOob === oobOffset) return true;
    this.boundGroup = group;
    this.boundParams = paramsOffset;
    this.boundOob = oobOffset;
    return false;
  }

  /** Runs `fn` right after the batch is submitted (a timing read-back, say). */
  onSubmit(fn: () => void): void {
    this.afterSubmit.push(fn);
  }

  /** Submits the batch and starts collecting its outcome. Idempotent. */
  submit(): void {
    if (this.submitted) return;
    this.submitted = true;
    if (open.get(this.ctx.device) === this) open.delete(this.ctx.device);
    const { device } = this.ctx;
    const { arenas } = this;
    if (!isDeviceAlive(this.ctx)) {
      this.failed = true;
      this.finishWith(() => lostError(this, 'before they were submitted'));
      return;
    }
    this.endPass();
    const encoder = this.encoder!;
    let readback: GPUBuffer | undefined;
    if (this.oobSlots > 0) {
      const bytes = this.oobSlots * arenas.slotBytes;
      readback = arenas.readbacks.pop() ?? device.createBuffer({ size: arenas.slotBytes * MAX_CALLS_PER_BATCH, usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST });
      encoder.copyBufferToBuffer(arenas.oob, 0, readback, 0, bytes);
      // Zero the used slots again for the next batch (they start zeroed: a new buffer is).
      encoder.clearBuffer(arenas.oob, 0, bytes);
    }
    if (this.paramSlots > 0) this.writeParams();
    for (const filter of ERROR_FILTERS) device.pushErrorScope(filter);
    device.queue.submit([encoder.finish()]);
    const popped = ERROR_FILTERS.map(() => device.popErrorScope()).reverse();
    this.encoder = undefined;
    for (const fn of this.afterSubmit) fn();
    const readBytes = this.oobSlots * arenas.slotBytes;
    const done = readback ? readback.mapAsync(GPUMapMode.READ, 0, readBytes) : device.queue.onSubmittedWorkDone();
    void Promise.allSettled([...popped, done, this.paramsWrite]).then((results) => {
      const reported = scopeErrors(results.slice(0, popped.length) as PromiseSettledResult<GPUError | null>[]);
      const completed = results[popped.length]!.status === 'fulfilled';
      const writeErrors = (results[popped.length + 1] as PromiseFulfilledResult<string[]>).value;
      let records: ArrayBuffer | undefined;
      if (readback && completed) {
        try {
          records = readback.getMappedRange(0, readBytes).slice(0);
          readback.unmap();
        } catch {
          // The device was destroyed meanwhile (abandoned after a limit or `shutdown()`): lost, below.
        }
      }
      // Unmapped and read: reusable by a later batch. Otherwise (mapping failed, device gone) destroyed.
      if (readback && records && isDeviceAlive(this.ctx) && arenas.readbacks.length < MAX_FREE_READBACKS) arenas.readbacks.push(readback);
      else readback?.destroy();
      if (!isDeviceAlive(this.ctx) || (!completed && reported.length === 0)) {
        this.failed = true;
        this.finishWith(() => lostError(this, 'before they finished'));
      } else if (reported.length > 0) {
        this.failed = true;
        const error = new DeviceError(
          `The GPU reported an error for ${describeCalls(this)}, so none of their work was done. WebGPU ${[...writeErrors, ...reported].join('; ')}`,
        );
        this.finishWith(() => error);
      } else if (writeErrors.length > 0) {
        const by = this.paramsWriter === this ? '' : ` (the same words as those of ${describeCalls(this.paramsWriter!)}, submitted before them, whose write they relied on)`;
        const error = new DeviceError(
          `The GPU reported an error writing the parameters of ${describeCalls(this)}${by}, so they ran with wrong parameters and their results are wrong. WebGPU ${writeErrors.join('; ')}`,
        );
        this.finishWith(() => error);
      } else {
        this.finishWith((call) =>
          call.sites && records ? oobError(records.slice(call.oobSlot * arenas.slotBytes, call.oobSlot * arenas.slotBytes + 48), call.sites) : undefined,
        );
      }
    });
  }

  /**
   * Writes the params slots of the batch's calls into the arena, unless the arena holds these
   * words already from the latest write (a chain of equal calls spread over several batches: a
   * write per batch cost an H100 about 2.3 µs per call of a Hermite chain, 4 calls a batch). A
   * batch that skips relies on that write, so it fails when the write failed, with the error
   * WebGPU reported for it ({@link paramsWrite}); the write has its own error scopes, so an error
   * of the writing batch's dispatches (whose write did happen: a failed submission does not undo
   * a `writeBuffer`) does not fail the batches after it. After a failed write the next batch
   * writes again.
   */
  private writeParams(): void {
    const { arenas } = this;
    const words = (this.paramSlots * arenas.slotBytes) / 4;
    if (words <= arenas.writtenWords && arenas.writer && sameRange(arenas.paramsWords, arenas.written, words)) {
      this.paramsWriter = arenas.writer;
      this.paramsWrite = arenas.writer.paramsWrite;
      return;
    }
    const { device } = this.ctx;
    for (const filter of ERROR_FILTERS) device.pushErrorScope(filter);
    device.queue.writeBuffer(arenas.params, 0, arenas.paramsWords, 0, words);
    const popped = ERROR_FILTERS.map(() => device.popErrorScope()).reverse();
    arenas.written.set(arenas.paramsWords.subarray(0, words));
    arenas.writtenWords = words;
    arenas.writer = this;
    this.paramsWriter = this;
    this.paramsWrite = Promise.allSettled(popped).then((results) => {
      const errors = scopeErrors(results);
      // Nothing written may be relied on: the next batch writes its params again.
      if (errors.length > 0 && arenas.writer === this) arenas.writtenWords = 0;
      return errors;
    });
  }

  private finishWith(outcomeOf: (call: CallRecord) => UfuncError | undefined): void {
    this.outcomes = this.calls.map(outcomeOf);
    this.hold.release();
    this.settle();
  }
}

const NO_ERRORS: Promise<string[]> = Promise.resolve([]);

/** The messages of the errors a set of popped error scopes reported (ERROR_FILTERS' order). */
function scopeErrors(results: readonly PromiseSettledResult<GPUError | null>[]): string[] {
  const reported: string[] = [];
  results.forEach((r, i) => {
    if (r.status === 'rejected') reported.push(`${ERROR_FILTERS[i]} error scope failed: ${messageOf(r.reason)}`);
    else if (r.value) reported.push(`${ERROR_FILTERS[i]} error: ${r.value.message.trim()}`);
  });
  return reported;
}

function sameRange(a: Uint32Array, b: Uint32Array, words: number): boolean {
  for (let i = 0; i < words; i++) if (a[i] !== b[i]) return false;
  return true;
}

/** The batch being recorded, per device. */
const open = new Map<GPUDevice, Batch>();

/**
 * Records calls held back for fusion (chain-fusion.ts registers it): called before anything else
 * reaches a device's batch or queue, so held calls keep their place in the order (every device
 * when none is given).
 */
let recordHeldWork: (device?: GPUDevice) => void = () => {};

/** Errors of held calls that could not be recorded, reported by the next {@link synchronize}. */
let lateErrors: UfuncError[] = [];

/**
 * Registers what records held calls (chain-fusion.ts), and what their errors are reported through.
 *
 * @param record records the held calls of a device (all devices when none is given)
 */
export function setHeldWork(record: (device?: GPUDevice) => void): void {
  recordHeldWork = record;
}

/** Records the calls held for fusion on every device now (before a timing session, say). */
export function recordHeldCalls(): void {
  recordHeldWork();
}

/** Keeps an error of a held call for the next {@link synchronize} (its caller got its promise already). */
export function reportLate(error: UfuncError): void {
  lateErrors.push(error);
}
const arenasOf = new WeakMap<GPUDevice, Arenas>();
/** Batches whose calls the next {@link synchronize} reports on. */
let unsynchronized: Batch[] = [];
let callCount = 0;

function arenas(ctx: GpuContext): Arenas {
  let a = arenasOf.get(ctx.device);
  if (!a) {
    const slotBytes = Math.max(SLOT_BYTES, ctx.limits.minStorageBufferOffsetAlignment);
    const usage = GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_DST | GPUBufferUsage.COPY_SRC;
    a = {
      params: ctx.device.createBuffer({ size: slotBytes * MAX_CALLS_PER_BATCH, usage, label: 'ufunc params arena' }),
      oob: ctx.device.createBuffer({ size: slotBytes * MAX_CALLS_PER_BATCH, usage, label: 'ufunc bounds-check arena' }),
      paramsWords: new Uint32Array((slotBytes * MAX_CALLS_PER_BATCH) / 4),
      written: new Uint32Array((slotBytes * MAX_CALLS_PER_BATCH) / 4),
      writtenWords: 0,
      writer: undefined,
      slotBytes,
      readbacks: [],
    };
    arenasOf.set(ctx.device, a);
  }
  return a;
}

/** What a call needs from its batch to record itself. */
export interface RecordedCall {
  readonly batch: Batch;
  readonly encoder: GPUCommandEncoder;
  readonly ref: CallRef;
  /** The params arena and this call's byte offset in it (a dynamic offset). */
  readonly params: GPUBuffer;
  readonly paramsOffset: number;
  /** The bounds-check arena and this call's offset, when it checks. */
  readonly oob: GPUBuffer;
  readonly oobOffset: number;
}

/**
 * Starts recording a call into the device's open batch (opening one if need be, submitting the
 * open one first when it is full). The caller encodes its dispatch into `encoder` now and calls
 * {@link endCall} when done.
 *
 * @param ctx the live device
 * @param kernelName for messages
 * @param params the call's params words (copied now)
 * @param sites the shader's bounds-check sites, or undefined when the shader checks nothing
 */
export function beginCall(ctx: GpuContext, kernelName: string, params: Uint32Array, sites: readonly IndexCheckSite[] | undefined): RecordedCall {
  recordHeldWork(ctx.device);
  const a = arenas(ctx);
  const slotsNeeded = Math.max(1, Math.ceil((params.length * 4) / a.slotBytes));
  let batch = open.get(ctx.device);
  if (batch && (batch.paramSlots + slotsNeeded > MAX_CALLS_PER_BATCH || batch.oobSlots + 1 > MAX_CALLS_PER_BATCH)) {
    batch.submit();
    batch = undefined;
  }
  if (!batch) {
    if (slotsNeeded > MAX_CALLS_PER_BATCH) {
      throw new DeviceError(`This call has ${params.length} params words, more than a batch holds (${(MAX_CALLS_PER_BATCH * a.slotBytes) / 4}); this is a bug in ufunc, please report it.`);
    }
    batch = new Batch(ctx, a);
    batch.encoder = ctx.device.createCommandEncoder();
    open.set(ctx.device, batch);
    unsynchronized.push(batch);
    const opened = batch;
    afterCurrentTask(() => opened.submit());
  }
  // A call with the same params words as the previous one (a chain of equal calls) shares its slot.
  let paramsOffset: number;
  if (sameWords(a.paramsWords, batch.lastParamsWord, batch.lastParamsLength, params)) {
    paramsOffset = batch.lastParamsWord * 4;
  } else {
    paramsOffset = batch.paramSlots * a.slotBytes;
    a.paramsWords.set(params, paramsOffset / 4);
    batch.paramSlots += slotsNeeded;
    batch.lastParamsWord = paramsOffset / 4;
    batch.lastParamsLength = params.length;
  }
  const oobSlot = sites ? batch.oobSlots++ : -1;
  const index = batch.calls.length;
  batch.calls.push(new CallRecord(++callCount, kernelName, sites, oobSlot));
  return {
    batch,
    encoder: batch.encoder!,
    ref: { batch, index },
    params: a.params,
    paramsOffset,
    oob: a.oob,
    oobOffset: Math.max(0, oobSlot) * a.slotBytes,
  };
}

function sameWords(words: Uint32Array, at: number, length: number, params: Uint32Array): boolean {
  if (at < 0 || length !== params.length) return false;
  for (let i = 0; i < length; i++) if (words[at + i] !== params[i]) return false;
  return true;
}

/**
 * Ends a call started with {@link beginCall}: submits the batch when it is full, or when its calls
 * have bound {@link EARLY_SUBMIT_BYTES}.
 *
 * @param call the call
 * @param boundBytes the bytes of the buffers the call bound
 */
export function endCall(call: RecordedCall, boundBytes = 0): void {
  const { batch } = call;
  batch.boundBytes += boundBytes;
  if (batch.calls.length >= MAX_CALLS_PER_BATCH || batch.boundBytes >= EARLY_SUBMIT_BYTES) batch.submit();
}

/**
 * Submits the device's open batch, if any, so that what is issued next to the queue comes after it.
 * Everything of ours that touches the queue outside a batch calls this first.
 *
 * @param device the device
 * @example
 * flushChain(ctx.device);
 * ctx.device.queue.writeBuffer(buffer, 0, data);
 */
export function flushChain(device: GPUDevice): void {
  recordHeldWork(device);
  open.get(device)?.submit();
}

/**
 * Copies `length` bytes of `source` from `offset` into `staging` (an unmapped MAP_READ buffer) at
 * once, without a host round trip and without a section of error scopes of its own: as the last
 * command of the device's open batch, which is submitted now (one submission and one set of error
 * scopes for the calls and their read-back; see docs/gpu.md, "Copies between host and device"), or, when no batch is open, in a submission of
 * its own with its error scopes pushed and popped around it synchronously, as a batch's are.
 * The caller maps `staging` right after this returns.
 *
 * Only for copies that cannot fail validation (range, alignment and usage checked, `staging` a
 * buffer that worked before): a copy in a batch that fails makes the whole submission fail, its
 * calls with it (their message then names the read-back).
 *
 * @param ctx the live device
 * @param source the buffer read, with COPY_SRC usage
 * @param offset a multiple of 4, with `offset + length` inside `source`
 * @param staging the destination, unmapped, with room for `length` bytes
 * @param length a multiple of 4
 * @returns resolves (never rejects) once the copy's submission is known to have run: true when it
 *   did, false when it did not (WebGPU reported an error for it, or the device was lost)
 */
export function recordReadback(ctx: GpuContext, source: GPUBuffer, offset: number, staging: GPUBuffer, length: number): Promise<boolean> {
  recordHeldWork(ctx.device);
  const batch = open.get(ctx.device);
  if (batch) {
    batch.endPass();
    batch.encoder!.copyBufferToBuffer(source, offset, staging, 0, length);
    batch.readbacks++;
    batch.submit();
    return batch.settled.then(() => !batch.failed);
  }
  const { device } = ctx;
  for (const filter of ERROR_FILTERS) device.pushErrorScope(filter);
  const encoder = device.createCommandEncoder();
  encoder.copyBufferToBuffer(source, offset, staging, 0, length);
  device.queue.submit([encoder.finish()]);
  const popped = ERROR_FILTERS.map(() => device.popErrorScope());
  return Promise.allSettled(popped).then((results) => results.every((r) => r.status === 'fulfilled' && r.value === null));
}

/**
 * Waits for every gpu call made so far to finish, and reports the first error of the calls made
 * since the previous `synchronize()` that was not already thrown (by the call itself, or by a
 * `toHost()` of data it wrote): CuPy's `Stream.synchronize()`,
 * Numba's `cuda.synchronize()`. Calls on device arrays return before the GPU has run them; this is
 * where their errors surface when nothing reads their results.
 *
 * @returns when all submitted gpu work is done
 * @throws KernelRuntimeError when a call failed a bounds check, DeviceError when the GPU reported
 *   an error or the device was lost; the message names the call (`gpu call #12 (\`saxpy\`)`) and
 *   how many other calls failed
 * @example
 * for (let step = 0; step < 1000; step++) await rk4(state, { out: state });
 * await synchronize(); // errors of any of the 1000 calls surface here
 */
export async function synchronize(): Promise<void> {
  recordHeldWork();
  const late = lateErrors;
  lateErrors = [];
  const batches = unsynchronized;
  unsynchronized = [];
  for (const batch of open.values()) batch.submit();
  await Promise.all(batches.map((b) => b.settled));
  const errors: { error: UfuncError; label: string }[] = [];
  for (const b of batches) {
    b.outcomes!.forEach((error, i) => {
      if (error && !b.reported.has(i)) errors.push({ error, label: b.calls[i]!.label });
    });
  }
  if (errors.length > 0) throw reported(errors[0]!.error, errors[0]!.label, errors.length - 1 + late.length);
  if (late.length > 0) throw late[0]!;
}

/**
 * Waits for the calls that produced the contents of `buffers` (and the calls those read from),
 * and throws the first error among them: what `toHost()` and calls with host outputs check.
 *
 * @param refs the calls, from {@link taintsOf}
 * @throws the failed call's error (same class), naming the call
 */
export async function checkCalls(refs: readonly CallRef[]): Promise<void> {
  if (refs.length === 0) return;
  for (const r of refs) if (!r.batch.submitted) r.batch.submit();
  for (const r of refs) {
    if (!r.batch.outcomes) await r.batch.settled;
    const error = r.batch.outcomes![r.index];
    if (error) {
      r.batch.reported.add(r.index);
      throw reported(error, r.batch.calls[r.index]!.label, 0);
    }
  }
}

/**
 * The error of a call as reported later, at a synchronisation: same class, the call named. Its
 * message is read from the call's error when it is read itself (an index error's position in the
 * user's file is found then: compiler/source-excerpt.ts).
 */
function reported(error: UfuncError, label: string, others: number): UfuncError {
  const more = others > 0 ? ` (${others} more call${others === 1 ? '' : 's'} failed since the last synchronize())` : '';
  const Kind = error instanceof KernelRuntimeError ? KernelRuntimeError : error instanceof DeviceError ? DeviceError : UfuncError;
  const result = new Kind(`${label} failed`, { cause: error });
  setLazyMessage(result, () => {
    // The sentence first, then any lines quoted under it (the kernel line of an index error).
    const br = error.message.indexOf('\n');
    const [sentence, quoted] = br < 0 ? [error.message, ''] : [error.message.slice(0, br), error.message.slice(br)];
    return `${label} failed: ${sentence}${more}${quoted}`;
  });
  return result;
}

/**
 * Per buffer, the calls whose results it holds (its writers, and the writers of what they read),
 * until the batches have run cleanly: pruned as they settle, so a long chain keeps only the calls
 * still in flight, plus any that failed.
 */
const taints = new WeakMap<GPUBuffer, CallRef[]>();

/** The calls behind a buffer's contents that are still in flight or failed. */
export function taintsOf(buffer: GPUBuffer): readonly CallRef[] {
  recordHeldWork(); // a held call may write it
  const list = taints.get(buffer);
  if (!list) return EMPTY;
  let settled = false;
  for (const r of list) if (r.batch.outcomes && r.batch.outcomes[r.index] === undefined) settled = true;
  if (!settled) return list;
  const live = list.filter((r) => !r.batch.outcomes || r.batch.outcomes[r.index] !== undefined);
  if (live.length !== list.length) taints.set(buffer, live);
  return live;
}
const EMPTY: readonly CallRef[] = [];

/**
 * Records that `call` wrote `buffer` from data produced by `inputs`: the buffer's contents now
 * depend on them (and no longer on what wrote it before, unless it was also read).
 */
export function noteWrite(buffer: GPUBuffer, call: CallRef, inputs: readonly CallRef[]): void {
  taints.set(buffer, inputs.length ? [...inputs, call] : [call]);
}

function lostError(batch: Batch, when: string): DeviceError {
  let why = 'the device is gone';
  try {
    assertDeviceAlive(batch.ctx, 'the device');
  } catch (e) {
    why = messageOf(e).split('. ')[0]!;
  }
  return new DeviceError(
    `${describeCalls(batch)} did not run: the GPU device was lost or released ${when} (${why}). ` +
      'The next call gets a new device: copy the data to it again (toDevice) and rerun the calls.',
  );
}

function describeCalls(batch: Batch): string {
  const calls = batch.calls;
  const what = calls.length === 1 ? calls[0]!.label : `a batch of ${calls.length} calls (${calls[0]!.label} … ${calls[calls.length - 1]!.label})`;
  // A read-back shares the batch's submission: an error WebGPU reports for it is the batch's.
  if (batch.readbacks === 0) return what;
  return `${what} and the read-back${batch.readbacks === 1 ? '' : 's'} (toHost) recorded after them`;
}

function messageOf(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}
