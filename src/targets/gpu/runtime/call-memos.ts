/**
 * What a repeated call on device arrays reuses: the layout, pipeline and params of an earlier call
 * laid out alike (dispatch.ts's fast path, and the recipes of calls held for fusion).
 *
 * What a call on device arrays compiles and binds depends on its kernel, loop shape and, per
 * operand, dtype, buffer size, offset, strides, which operands share a buffer and whether a buffer
 * holds zeros or left-overs — not on which buffers they are, nor on the values of JS scalars. A
 * memo keeps those facts of the call it was made for; a later call finds it by its kernel key (a
 * string the plan cache hands every call of a ufunc, whose hash V8 keeps) and by comparing the facts
 * one by one: no key string is built per call.
 *
 * A call with host arrays has placed memos of its own ({@link placedMemoFor}): looked up once its
 * operands are placed (each host region gets a buffer of the call's own), by the facts of the
 * operands as the device sees them — what the layout is computed from — and binding the call's own
 * storages.
 */
import { bufferBytes } from './buffer-pool.js';
import type { DType } from '../../../dtypes.js';
import { type CallPlan, isDeviceResident } from '../../../plan.js';
import { type CallLayout, type DeviceOperandView, scalarBits } from '../codegen/call-layout.js';
import { probes } from '../../../probes.js';
import { paramSlots } from '../codegen/shader-layout.js';
import { bufferIsKnownZero, contentsUnspecified, type DeviceArray } from './device-array.js';
import type { CallRecipe } from './fused-chain-plan.js';
import type { CompiledKernel } from './pipeline-cache.js';
import type { GPUBuffer, GPUDevice } from './webgpu-types.js';

/** What records a call laid out like the one it was made for. */
export interface CallMemo extends CallRecipe {
  readonly kernel: CompiledKernel;
  /**
   * The call layout of `plan` (params patched with its JS scalars, its buffers to bind). The
   * arrays are the memo's own, reused by the next call: read them before another call is laid out.
   */
  callFor(plan: CallPlan): CallLayout;
}

/** A buffer's contents as far as they shape a layout: data, known zeros, or left-overs of an earlier user. */
type Contents = 'data' | 'zeros' | 'unspecified';

/** One operand's facts; a JS scalar has only its dtype. */
interface OperandFacts {
  readonly dtype: DType;
  readonly scalar: boolean;
  readonly size: number;
  readonly offset: number;
  readonly loopStrides: readonly number[];
  readonly coreShape: readonly number[];
  readonly coreStrides: readonly number[];
  /** The first operand in the same buffer (itself when none before it). */
  readonly same: number;
  readonly contents: Contents;
}

interface Remembered {
  readonly kind: CallPlan['kind'];
  readonly loopShape: readonly number[];
  readonly operands: readonly OperandFacts[];
  readonly memo: CallMemo;
}

interface DeviceMemos {
  /** By kernel key: the layouts seen for it (a ufunc is called with few). */
  readonly byKernel: Map<string, Remembered[]>;
  count: number;
}
const memos = new WeakMap<GPUDevice, DeviceMemos>();
/** Memos kept per device before the table is cleared. */
const MAX_MEMOS = 256;

/** How many memos were made (each one call laid out; for tests of the table). */
export const callMemoStats = { remembered: 0 };

function memosOf(device: GPUDevice): DeviceMemos {
  let m = memos.get(device);
  if (!m) memos.set(device, (m = { byKernel: new Map(), count: 0 }));
  return m;
}

const bufferOf = (data: unknown): GPUBuffer => (data as DeviceArray).buffer;

/** Whether every operand is a device array or a JS scalar (only such calls have memos). */
export function onDeviceOnly(plan: CallPlan): boolean {
  for (const o of plan.operands) if (o.scalar === undefined && !isDeviceResident(o.data)) return false;
  return true;
}

/**
 * The memo of a call laid out like `plan` on this device, if one was remembered.
 *
 * @param device the device
 * @param plan a call whose operands are device arrays and JS scalars ({@link onDeviceOnly})
 */
export function memoFor(device: GPUDevice, plan: CallPlan): CallMemo | undefined {
  const list = memos.get(device)?.byKernel.get(plan.kernelKey);
  if (!list) return undefined;
  for (const r of list) {
    if (!matches(r, plan)) continue;
    probes.memoisedCall?.();
    return r.memo;
  }
  return undefined;
}

/**
 * Remembers a call's layout and kernel for later calls laid out alike.
 *
 * @param device the device
 * @param plan a call on device arrays and JS scalars
 * @param call its layout
 * @param kernel its compiled kernel
 * @returns the memo
 */
export function remember(device: GPUDevice, plan: CallPlan, call: CallLayout, kernel: CompiledKernel): CallMemo {
  const m = memosOf(device);
  if (m.count >= MAX_MEMOS) {
    m.byKernel.clear();
    m.count = 0;
  }
  const memo = memoOf(plan, call, kernel);
  callMemoStats.remembered++;
  const ops = plan.operands;
  const operands = ops.map((o, j): OperandFacts => {
    if (o.scalar !== undefined) return { dtype: o.dtype, scalar: true, size: 0, offset: 0, loopStrides: [], coreShape: [], coreStrides: [], same: j, contents: 'data' };
    const buffer = bufferOf(o.data);
    return {
      dtype: o.dtype, scalar: false, size: bufferBytes(buffer), offset: o.offset,
      loopStrides: [...o.loopStrides], coreShape: [...o.coreShape], coreStrides: [...o.coreStrides],
      same: firstInBuffer(plan, j, buffer), contents: contentsOf(buffer),
    };
  });
  let list = m.byKernel.get(plan.kernelKey);
  if (!list) m.byKernel.set(plan.kernelKey, (list = []));
  list.push({ kind: plan.kind, loopShape: [...plan.loopShape], operands, memo });
  m.count++;
  return memo;
}

/**
 * What records a call laid out like `plan` again (kept by {@link remember}, or by chain-fusion for a
 * fused call): its layout and kernel, its params patched per call.
 */
export function memoOf(plan: CallPlan, call: CallLayout, kernel: CompiledKernel): CallMemo {
  const slots = paramSlots(call.layout.loopRank, call.layout.coreRanks);
  const scalars = plan.operands.map((o, j) => (o.scalar !== undefined ? j : -1)).filter((j) => j >= 0);
  // Per binding, an operand that lives in it (bindings follow the operands' storages in order).
  const bindingOperand = call.bindingStorage.map((storage) => plan.operands.findIndex((o) => o.scalar === undefined && bufferOf(o.data) === storage));
  // The params words and buffers of the latest call: beginCall copies the words into the batch at
  // once, and record binds the buffers before it returns, so one set serves every call (no
  // allocation per call).
  const params = call.params.slice();
  const bindingStorage: GPUBuffer[] = [];
  const layout: CallLayout = { layout: call.layout, params, bindingStorage, groups: call.groups };
  return {
    kernel,
    checks: kernel.sites.length > 0,
    callFor(p) {
      for (const j of scalars) {
        const o = p.operands[j]!;
        params[slots.operands[j]!.scalar] = scalarBits(o.scalar!, o.dtype);
      }
      for (let b = 0; b < bindingOperand.length; b++) bindingStorage[b] = bufferOf(p.operands[bindingOperand[b]!]!.data);
      return layout;
    },
  };
}

function matches(r: Remembered, plan: CallPlan): boolean {
  const ops = plan.operands;
  if (r.kind !== plan.kind || r.operands.length !== ops.length || !sameNumbers(r.loopShape, plan.loopShape)) return false;
  for (let j = 0; j < ops.length; j++) {
    const o = ops[j]!;
    const f = r.operands[j]!;
    if (f.dtype !== o.dtype || f.scalar !== (o.scalar !== undefined)) return false;
    if (f.scalar) continue;
    const buffer = bufferOf(o.data);
    if (
      f.size !== bufferBytes(buffer) || f.offset !== o.offset || !sameNumbers(f.loopStrides, o.loopStrides) ||
      !sameNumbers(f.coreShape, o.coreShape) || !sameNumbers(f.coreStrides, o.coreStrides) ||
      f.same !== firstInBuffer(plan, j, buffer) || f.contents !== contentsOf(buffer)
    ) {
      return false;
    }
  }
  return true;
}

function firstInBuffer(plan: CallPlan, j: number, buffer: GPUBuffer): number {
  for (let k = 0; k < j; k++) {
    const o = plan.operands[k]!;
    if (o.scalar === undefined && bufferOf(o.data) === buffer) return k;
  }
  return j;
}

function contentsOf(buffer: GPUBuffer): Contents {
  return bufferIsKnownZero(buffer) ? 'zeros' : contentsUnspecified(buffer) ? 'unspecified' : 'data';
}

function sameNumbers(a: readonly number[], b: readonly number[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/** A remembered call with host arrays: its kernel, and its layout for operands placed alike. */
export interface PlacedMemo {
  readonly kernel: CompiledKernel;
  /** The call layout for these operands (params patched with their JS scalars, their storages to bind; reused arrays, as {@link CallMemo}'s). */
  callFor(operands: readonly DeviceOperandView[]): CallLayout;
}

interface PlacedRemembered {
  readonly kind: CallPlan['kind'];
  readonly loopShape: readonly number[];
  readonly operands: readonly DeviceOperandView[];
  readonly memo: PlacedMemo;
}

/** Placed memos per device, by kernel key (kept apart from the device memos: host calls are never held for fusion). */
const placedMemos = new WeakMap<GPUDevice, { readonly byKernel: Map<string, PlacedRemembered[]>; count: number }>();

/**
 * The placed memo of a call with host arrays whose operands, placed, have the facts of an earlier
 * call's: dtype, the storage's size, offset, strides, which operands share a storage, whether it
 * holds zeros.
 *
 * @param device the device
 * @param plan the call
 * @param operands its operands as the device sees them
 */
export function placedMemoFor(device: GPUDevice, plan: CallPlan, operands: readonly DeviceOperandView[]): PlacedMemo | undefined {
  const list = placedMemos.get(device)?.byKernel.get(plan.kernelKey);
  if (!list) return undefined;
  for (const r of list) {
    if (r.kind !== plan.kind || !sameNumbers(r.loopShape, plan.loopShape) || !samePlaced(r.operands, operands)) continue;
    probes.memoisedCall?.();
    return r.memo;
  }
  return undefined;
}

/** Remembers a call with host arrays laid out as `call` from its placed operands. */
export function rememberPlaced(device: GPUDevice, plan: CallPlan, operands: readonly DeviceOperandView[], call: CallLayout, kernel: CompiledKernel): void {
  let m = placedMemos.get(device);
  if (!m) placedMemos.set(device, (m = { byKernel: new Map(), count: 0 }));
  if (m.count >= MAX_MEMOS) {
    m.byKernel.clear();
    m.count = 0;
  }
  const slots = paramSlots(call.layout.loopRank, call.layout.coreRanks);
  const scalars = plan.operands.map((o, j) => (o.scalar !== undefined ? j : -1)).filter((j) => j >= 0);
  // Per binding, an operand that lives in it (bindings follow the operands' storages in order).
  const bindingOperand = call.bindingStorage.map((storage) => operands.findIndex((o) => o.storage === storage));
  const params = call.params.slice();
  const bindingStorage: object[] = [];
  const layout: CallLayout = { layout: call.layout, params, bindingStorage, groups: call.groups };
  const memo: PlacedMemo = {
    kernel,
    callFor(ops) {
      for (const j of scalars) {
        const o = ops[j]!;
        params[slots.operands[j]!.scalar] = scalarBits(o.scalar!, o.dtype);
      }
      for (let b = 0; b < bindingOperand.length; b++) bindingStorage[b] = ops[bindingOperand[b]!]!.storage!;
      return layout;
    },
  };
  // The facts without the storages (which differ per call, and hold the caller's arrays): a marker
  // per storage instead, so that which operands share one is compared by position.
  const markers = operands.map(() => ({}));
  const facts = operands.map((o, j) => ({ ...o, storage: o.storage === undefined ? undefined : markers[firstInStorage(operands, j)] }));
  let list = m.byKernel.get(plan.kernelKey);
  if (!list) m.byKernel.set(plan.kernelKey, (list = []));
  list.push({ kind: plan.kind, loopShape: [...plan.loopShape], operands: facts, memo });
  m.count++;
}

function samePlaced(known: readonly DeviceOperandView[], ops: readonly DeviceOperandView[]): boolean {
  if (known.length !== ops.length) return false;
  for (let j = 0; j < ops.length; j++) {
    const f = known[j]!;
    const o = ops[j]!;
    if (f.dtype !== o.dtype || (f.storage === undefined) !== (o.storage === undefined)) return false;
    if (o.storage === undefined) continue;
    if (
      f.storageBytes !== o.storageBytes || f.offset !== o.offset || f.pristine !== o.pristine || !sameNumbers(f.loopStrides, o.loopStrides) ||
      !sameNumbers(f.coreShape, o.coreShape) || !sameNumbers(f.coreStrides, o.coreStrides) ||
      firstInStorage(known, j) !== firstInStorage(ops, j)
    ) {
      return false;
    }
  }
  return true;
}

function firstInStorage(ops: readonly DeviceOperandView[], j: number): number {
  for (let k = 0; k < j; k++) if (ops[k]!.storage === ops[j]!.storage) return k;
  return j;
}
