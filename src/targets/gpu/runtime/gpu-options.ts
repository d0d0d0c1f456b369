/**
 * The gpu target's process-wide options: how much device memory a call's host arrays may take at
 * once (beyond it the call is streamed through in chunks, streaming.ts).
 */
import { ArgumentError } from '../../../errors.js';

/** What {@link setGpuOptions} sets; {@link getGpuOptions} returns all of it. */
export interface GpuOptions {
  /**
   * Bytes of device memory one call's host arrays may occupy at once, per device (their device
   * copies: inputs uploaded and outputs to bring back). A call whose host operands need more runs
   * in chunks along its loop dimensions, several chunks in flight so that uploads, kernels and
   * downloads overlap. WebGPU does not report how much memory a GPU has, so this is the library's
   * budget, not the GPU's size. Device arrays the call reads or writes are not counted: they
   * exist already.
   * @default 4 GiB
   */
  readonly memoryLimit: number;
}

const DEFAULTS: GpuOptions = { memoryLimit: 4 * 2 ** 30 };
let current: GpuOptions = DEFAULTS;

/**
 * Sets some of the gpu target's options; the others keep their values. `setGpuOptions({})`
 * changes nothing; pass a default value to go back to it.
 *
 * @param options the options to change
 * @throws ArgumentError for a memory limit that is not a positive number
 * @example
 * setGpuOptions({ memoryLimit: 8 * 2 ** 30 }); // stream calls whose host arrays exceed 8 GiB
 */
export function setGpuOptions(options: Partial<GpuOptions>): void {
  if (options === null || typeof options !== 'object') throw new ArgumentError(`setGpuOptions: expected an object of options, found ${options === null ? 'null' : typeof options}.`);
  const { memoryLimit } = options;
  if (memoryLimit !== undefined && !(typeof memoryLimit === 'number' && memoryLimit > 0)) {
    throw new ArgumentError(`setGpuOptions: memoryLimit must be a number of bytes > 0, found ${String(memoryLimit)}.`);
  }
  current = { memoryLimit: memoryLimit ?? current.memoryLimit };
}

/**
 * The gpu target's options now (a copy).
 *
 * @example
 * const { memoryLimit, devices } = getGpuOptions();
 */
export function getGpuOptions(): GpuOptions {
  return { ...current };
}
