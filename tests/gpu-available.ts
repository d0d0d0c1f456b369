/**
 * Shared gate for tests that need a WebGPU adapter.
 *
 * Without an adapter the gpu suites are skipped, loudly ("gpu tests SKIPPED: <reason>"), so a
 * developer machine without Vulkan still runs everything else. CI sets `UFUNC_REQUIRE_GPU=1`: there
 * a missing adapter fails the run instead, so the gpu target can never be skipped silently.
 */
import { describe } from 'vitest';
import { describeAdapter, isGpuAvailable } from '../src/targets/gpu/runtime/device.js';
import { setGpuOptions } from '../src/targets/gpu/runtime/gpu-options.js';

// `UFUNC_TEST_GPU_DEVICES=2 npx vitest run tests/targets/gpu/…` runs gpu tests on two devices (on
// lavapipe, two devices of its one adapter): calls on host arrays split across them, and every
// result must still be what one device gives.
const testDevices = Number(process.env.UFUNC_TEST_GPU_DEVICES ?? 1);
if (testDevices > 1) setGpuOptions({ devices: testDevices });

/** Whether a WebGPU device could be created in this process. */
export const gpuAvailable: boolean = await isGpuAvailable();

/** Why the gpu tests are skipped, or undefined when they run. */
export const gpuSkipReason: string | undefined = gpuAvailable
  ? undefined
  : (await describeAdapter()).replace(/^unavailable: /, '');

if (!gpuAvailable) {
  if (process.env.UFUNC_REQUIRE_GPU === '1') {
    throw new Error(`UFUNC_REQUIRE_GPU=1 but the gpu target is not available here: ${gpuSkipReason}`);
  }
  console.warn(`gpu tests SKIPPED: ${gpuSkipReason}`);
}

/** `describe` when a WebGPU adapter is available, `describe.skip` otherwise. */
export const describeGpu: typeof describe = gpuAvailable ? describe : (describe.skip as typeof describe);
