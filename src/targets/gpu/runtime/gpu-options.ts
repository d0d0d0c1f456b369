/**
 * The gpu target's process-wide options: how much device memory a call's host arrays may take at
 * once (beyond it the call is streamed through in chunks, streaming.ts), and how many devices the
 * calls are spread over (multi-device.ts), and whether chains of calls fuse (chain-fusion.ts).
 */
import { ArgumentError } from '../../../errors.js';
import { platform } from '../../../platform/platform.js';

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
  /**
   * How many GPU devices calls use: `1`, a count, or `'all'` (one per GPU of the host). With
   * several, a call on host arrays splits its outermost loop dimension across them, and
   * `toDevice(x, { shard: true })` places an array across them. A count above the GPUs present
   * opens several devices on the same GPU (how CI tests it on lavapipe). Set it before the first
   * gpu call: devices already open stay where they are.
   * @default 1
   */
  readonly devices: number | 'all';
  /**
   * Whether consecutive element-wise calls on device arrays are held and run as one kernel
   * (chain-fusion.ts; docs/gpu.md, "Automatic fusion of call chains"): the results are those of the
   * calls one by one; `false` records every call as it is made (for comparisons, or to see each
   * call's own dispatch in a profiler).
   * @default true
   */
  readonly fuseChains: boolean;
}

const DEFAULTS: GpuOptions = { memoryLimit: 4 * 2 ** 30, devices: 1, fuseChains: true };
let current: GpuOptions = DEFAULTS;

/**
 * Sets some of the gpu target's options; the others keep their values. `setGpuOptions({})`
 * changes nothing; pass a default value to go back to it.
 *
 * @param options the options to change
 * @throws ArgumentError for a memory limit that is not a positive number, or a device count that is
 *   not 'all' or an integer from 1 to 64
 * @example
 * setGpuOptions({ memoryLimit: 8 * 2 ** 30 }); // stream calls whose host arrays exceed 8 GiB
 * setGpuOptions({ devices: 'all' });           // spread calls over every GPU of the host
 * setGpuOptions({ fuseChains: false });        // record every call as it is made, none fused
 */
export function setGpuOptions(options: Partial<GpuOptions>): void {
  if (options === null || typeof options !== 'object') throw new ArgumentError(`setGpuOptions: expected an object of options, found ${options === null ? 'null' : typeof options}.`);
  const { memoryLimit, devices, fuseChains } = options;
  if (memoryLimit !== undefined && !(typeof memoryLimit === 'number' && memoryLimit > 0)) {
    throw new ArgumentError(`setGpuOptions: memoryLimit must be a number of bytes > 0, found ${String(memoryLimit)}.`);
  }
  if (devices !== undefined && devices !== 'all' && !(Number.isSafeInteger(devices) && devices >= 1 && devices <= MAX_DEVICES)) {
    throw new ArgumentError(`setGpuOptions: devices must be 'all' or an integer from 1 to ${MAX_DEVICES}, found ${typeof devices === 'string' ? `'${devices}'` : String(devices)}.`);
  }
  if (fuseChains !== undefined && typeof fuseChains !== 'boolean') throw new ArgumentError(`setGpuOptions: fuseChains must be true or false, found ${String(fuseChains)}.`);
  current = { memoryLimit: memoryLimit ?? current.memoryLimit, devices: devices ?? current.devices, fuseChains: fuseChains ?? current.fuseChains };
}

/** Whether automatic fusion of gpu call chains is on (read on every held-call decision: no copy). */
export function fuseChainsEnabled(): boolean {
  return current.fuseChains;
}

/** More devices than this is a mistake (each holds its own memory and driver threads). */
const MAX_DEVICES = 64;

/**
 * How many devices calls use now: the `devices` option, `'all'` resolved to the host's GPU count.
 *
 * @example
 * setGpuOptions({ devices: 'all' }); deviceCount(); // 2 on a host with two GPUs
 */
export function deviceCount(): number {
  return current.devices === 'all' ? platform().gpuCount() : current.devices;
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
