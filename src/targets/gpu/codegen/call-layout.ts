/**
 * From a call to what the gpu compiles and binds: the shader layout (the pipeline cache key), the
 * params buffer's contents, the buffers to bind and the dispatch size. Pure: it sees operands as
 * the device will (offsets and strides into some storage) but creates nothing, so it is testable
 * without a GPU and the same call always maps to the same pipeline.
 */
import { isArrayType } from '../../../compiler/ir.js';
import type { DType } from '../../../dtypes.js';
import { TargetUnavailableError } from '../../../errors.js';
import type { CallPlan } from '../../../plan.js';
import { type LoopOperandLayout, mergeLoopDims, sizeOf } from '../../../layout.js';
import { howKernelReads } from '../../../compiler/passes/operand-reads.js';
import { DIRECT_WORKGROUP_SIZE, planStaging, type StagingCandidate } from './coalescing.js';
import type { BindingLayout, LoopStep, OperandLayout, ShaderLayout } from './shader-layout.js';
import { elementsPerWord, paramSlots } from './shader-layout.js';
import { analyseCoverage } from '../../../compiler/passes/output-coverage.js';

/** An operand as the device sees it. */
export interface DeviceOperandView extends LoopOperandLayout {
  readonly dtype: DType;
  /** Identity of the storage it lives in (operands with the same identity share one binding); undefined for a JS scalar. */
  readonly storage: object | undefined;
  /** Bytes of that storage (a buffer's size). */
  readonly storageBytes: number;
  readonly scalar?: number | bigint | boolean;
  /** The storage is known to hold zeros (a fresh output). */
  readonly pristine: boolean;
}

/** Device limits that shape the layout. */
export interface LayoutLimits {
  readonly maxStorageBufferBindingSize: number;
  readonly maxStorageBuffersPerShaderStage: number;
  readonly maxComputeWorkgroupStorageSize: number;
  readonly maxComputeWorkgroupsPerDimension: number;
}

export interface CallLayout {
  readonly layout: ShaderLayout;
  /** The params buffer's words. */
  readonly params: Uint32Array;
  /** Per binding of the layout: the storage to bind. */
  readonly bindingStorage: readonly object[];
  /** Workgroups to dispatch in x and y. */
  readonly groups: readonly [number, number];
}

/**
 * Lays out one call.
 *
 * @param plan the call plan from the front
 * @param operands each operand as the device sees it (same order as `plan.operands`)
 * @param limits the device's limits
 * @returns the layout, params and bindings
 * @throws TargetUnavailableError when the call needs more storage bindings than the device has, or
 *   more than 2³² loop iterations or elements in one buffer
 */
export function layoutCall(plan: CallPlan, operands: readonly DeviceOperandView[], limits: LayoutLimits): CallLayout {
  const n = sizeOf(plan.loopShape);
  if (n >= 2 ** 32) {
    throw new TargetUnavailableError(`This call has ${n} loop iterations; the gpu target runs at most 2^32 - 1 per call: split it, or use target 'cpu' or 'parallel'.`);
  }
  const merged = mergeLoopDims(plan.loopShape, operands.map((o) => o.loopStrides));
  const loopRank = merged.shape.length;
  const outputs = (j: number) => j >= plan.nin;

  // Bindings: one per distinct storage; writable when any operand on it is an output.
  const bindingOfStorage = new Map<object, number>();
  const bindingStorage: object[] = [];
  const bindingInfo: { dtype: DType; bytes: number; writable: boolean }[] = [];
  const bindingOf = operands.map((o, j) => {
    if (o.storage === undefined) return undefined;
    let b = bindingOfStorage.get(o.storage);
    if (b === undefined) {
      b = bindingStorage.length;
      bindingOfStorage.set(o.storage, b);
      bindingStorage.push(o.storage);
      bindingInfo.push({ dtype: o.dtype, bytes: o.storageBytes, writable: false });
    }
    if (outputs(j)) bindingInfo[b]!.writable = true;
    return b;
  });
  const chunkBytes = 2 ** Math.floor(Math.log2(limits.maxStorageBufferBindingSize));
  const bindings: BindingLayout[] = bindingInfo.map(({ dtype, bytes, writable }) => {
    const size = Math.max(4, Math.ceil(bytes / 4) * 4);
    if (size / 4 / elementsPerWord(dtype) > 2 ** 32) {
      throw new TargetUnavailableError(`An array of ${bytes} bytes has more than 2^32 elements, more than the gpu target addresses: split the work, or use target 'cpu' or 'parallel'.`);
    }
    if (size <= limits.maxStorageBufferBindingSize) return { dtype, writable, chunks: 1, chunkShift: 0 };
    return { dtype, writable, chunks: Math.ceil(size / chunkBytes), chunkShift: Math.log2(chunkBytes / 4) };
  });
  const tableCount = plan.kernel.tables?.length ?? 0;
  const bindingCount = 1 + (plan.boundsCheck ? 1 : 0) + bindings.reduce((s, b) => s + b.chunks, 0) + tableCount;
  if (bindingCount > limits.maxStorageBuffersPerShaderStage) {
    throw new TargetUnavailableError(
      `This call needs ${bindingCount} storage buffer bindings (arrays over ${formatMiB(limits.maxStorageBufferBindingSize)} are bound in pieces${tableCount ? `, and each lookup table takes one` : ''}), ` +
        `but this GPU allows ${limits.maxStorageBuffersPerShaderStage} per shader: pass fewer or smaller arrays per call, or use target 'cpu' or 'parallel'.`,
    );
  }

  // Coalescing: guvectorize rows adjacent along a one-dimensional loop.
  const candidates: StagingCandidate[] = [];
  if (plan.kind === 'guvectorize' && loopRank === 1) {
    const writesRowFirst = (binding: number, size: number) => {
      const params = bindingOf.map((b, j) => (b === binding ? j : -1)).filter((j) => j >= 0 && j < plan.kernel.params.length);
      return params.some(outputs) && size > 0 && analyseCoverage(plan.kernel, params, size).writesAll;
    };
    plan.kernel.params.forEach((p, j) => {
      const o = operands[j]!;
      if (!isArrayType(p.type) || bindingOf[j] === undefined) return;
      const size = sizeOf(o.coreShape);
      candidates.push({
        operand: j, binding: bindingOf[j]!, dtype: o.dtype, offset: o.offset, coreShape: o.coreShape, coreStrides: o.coreStrides,
        loopStride: merged.strides[j]![0]!, isOutput: outputs(j), read: howKernelReads(plan.kernel, j), pristine: o.pristine,
        writesRowFirst: o.coreShape.length === 1 && writesRowFirst(bindingOf[j]!, size),
      });
    });
  }
  const staging = candidates.length ? planStaging(operands.length, candidates, limits.maxComputeWorkgroupStorageSize) : undefined;
  const workgroupSize = staging?.workgroupSize ?? DIRECT_WORKGROUP_SIZE;

  const operandLayouts: OperandLayout[] = operands.map((o, j) => {
    const inner = loopRank === 0 ? 0 : merged.strides[j]![loopRank - 1]!;
    const step: LoopStep = loopRank !== 1 || inner === 0 ? 'broadcast' : inner === 1 ? 'unit' : 'strided';
    return {
      binding: bindingOf[j],
      step: loopRank === 1 ? step : 'broadcast',
      coreUnit: o.coreStrides.map((s, a) => s === 1 || o.coreShape[a]! <= 1),
      tile: staging?.tileOf[j],
    };
  });
  const layout: ShaderLayout = {
    kind: plan.kind,
    loopRank,
    coreRanks: operands.map((o) => o.coreShape.length),
    operands: operandLayouts,
    bindings,
    tiles: staging?.tiles ?? [],
    workgroupSize,
    boundsCheck: plan.boundsCheck,
  };

  const slots = paramSlots(loopRank, layout.coreRanks);
  const params = new Uint32Array(slots.count);
  params[slots.loopSize] = n;
  merged.shape.forEach((extent, d) => (params[slots.loopShape[d]!] = extent));
  operands.forEach((o, j) => {
    const s = slots.operands[j]!;
    // Strides and offsets as 32-bit patterns: the shader's u32 arithmetic wraps, so a negative
    // stride s behaves as s.
    params[s.offset] = o.offset >>> 0;
    merged.strides[j]!.forEach((stride, d) => (params[s.loopStrides[d]!] = stride >>> 0));
    o.coreShape.forEach((extent, a) => (params[s.coreShape[a]!] = extent));
    o.coreStrides.forEach((stride, a) => (params[s.coreStrides[a]!] = stride >>> 0));
    if (o.scalar !== undefined) params[s.scalar] = scalarBits(o.scalar, o.dtype);
  });

  // As square as needed and no more: y rows of x groups, with fewer than y groups to spare
  // (x = 65,535 and y = ⌈total / x⌉ would leave up to a whole row of idle groups).
  const totalGroups = Math.max(1, Math.ceil(n / workgroupSize));
  const y = Math.ceil(totalGroups / limits.maxComputeWorkgroupsPerDimension);
  const x = Math.ceil(totalGroups / y);
  return { layout, params, bindingStorage, groups: [x, y] };
}

const FLOAT_BITS = new Float32Array(1);
const WORD_BITS = new Uint32Array(FLOAT_BITS.buffer);

/** The 32 bits a JS scalar of `dtype` is passed as. */
export function scalarBits(value: number | bigint | boolean, dtype: DType): number {
  const v = typeof value === 'boolean' ? (value ? 1 : 0) : Number(value);
  if (dtype === 'float32' || dtype === 'float64') {
    FLOAT_BITS[0] = v;
    return WORD_BITS[0]!;
  }
  if (dtype === 'bool') return v ? 1 : 0;
  return v >>> 0;
}

function formatMiB(bytes: number): string {
  return `${Math.round(bytes / 2 ** 20)} MiB`;
}
