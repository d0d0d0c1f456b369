/**
 * WebGPU's own rejections, made into the library's errors. When a device is destroyed or lost
 * under pending work, Dawn rejects the promises of that work (`mapAsync`, say) with a bare
 * `DOMException` — `AbortError` or `OperationError`, often with an empty message — which says
 * nothing to a caller who never touched WebGPU.
 */
import { DeviceError, UfuncError } from '../../../errors.js';

/**
 * `e` as a DeviceError when it is one of WebGPU's rejections; anything else unchanged.
 *
 * @param e - what was thrown
 * @param what - the work that failed, for the message: "this call's work", "an upload to the GPU"
 * @returns the error to throw
 * @example
 * try { await staging.mapAsync(GPUMapMode.READ); } catch (e) { throw asDeviceError(e, 'reading back'); }
 */
export function asDeviceError(e: unknown, what: string): unknown {
  const name = (e as { name?: unknown } | null)?.name;
  if (e instanceof UfuncError || (name !== 'AbortError' && name !== 'OperationError')) return e;
  const detail = e instanceof Error && e.message ? `: ${e.message}` : ' with no message';
  return new DeviceError(
    `The GPU device stopped ${what} (WebGPU ${String(name)}${detail}), which happens when the device is destroyed or lost while work is pending; nothing was written. The next call gets a new device.`,
    { cause: e },
  );
}
