/**
 * The device buffers of lookup tables (compiler/tables.ts): each table is uploaded once per device,
 * the first time a call binds it, and every later call of any kernel that reads it binds the same
 * buffer. Tables never change (the ufunc keeps the copy it made when defined), so nothing is ever
 * uploaded again; a buffer goes with its device, or when the table is garbage-collected.
 */
import type { KernelTable } from '../../../compiler/ir.js';
import { tableWords } from '../../../compiler/tables.js';
import { TargetUnavailableError } from '../../../errors.js';
import type { GpuContext } from './device.js';
import type { GPUBuffer, GPUDevice } from './webgpu-types.js';

const uploaded = new WeakMap<GPUDevice, WeakMap<object, GPUBuffer>>();

/**
 * The read-only storage buffer holding a table on this device, uploaded on first use.
 *
 * @param ctx the device
 * @param table the kernel's table
 * @returns its buffer: one u32 word per element (at least one word: WebGPU binds no empty buffer)
 * @throws TargetUnavailableError when the table is larger than one storage binding of this device
 * @example const buffer = tableBuffer(ctx, plan.kernel.tables![0]!);
 */
export function tableBuffer(ctx: GpuContext, table: KernelTable): GPUBuffer {
  let buffers = uploaded.get(ctx.device);
  if (!buffers) uploaded.set(ctx.device, (buffers = new WeakMap()));
  const known = buffers.get(table.data);
  if (known) return known;
  const size = Math.max(4, table.data.length * 4);
  if (size > ctx.limits.maxStorageBufferBindingSize) {
    throw new TargetUnavailableError(
      `The lookup table \`${table.variable.name}\` has ${table.data.length} elements (${size} bytes as the gpu reads it, 4 per element), more than one storage binding of this GPU holds (${ctx.limits.maxStorageBufferBindingSize} bytes): pass it as an input array, or use target 'cpu' or 'parallel'.`,
    );
  }
  const dtype = (table.variable.type as { dtype: Parameters<typeof tableWords>[1] }).dtype;
  const buffer = ctx.device.createBuffer({ size, usage: GPUBufferUsage.STORAGE, mappedAtCreation: true, label: `ufunc lookup table ${table.variable.name}` });
  new Uint32Array(buffer.getMappedRange()).set(tableWords(table.data, dtype));
  buffer.unmap();
  buffers.set(table.data, buffer);
  return buffer;
}
