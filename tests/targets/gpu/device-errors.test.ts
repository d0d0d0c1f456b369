/** WebGPU's bare rejections (a device destroyed under pending work) become DeviceErrors that say so. */
import { expect, it } from 'vitest';
import { DeviceError, KernelRuntimeError } from '../../../src/errors.js';
import { asDeviceError } from '../../../src/targets/gpu/runtime/device-errors.js';

it('turns an AbortError with an empty message into a DeviceError that explains it', () => {
  const bare = new DOMException('', 'AbortError');
  const e = asDeviceError(bare, "this call's work") as DeviceError;
  expect(e).toBeInstanceOf(DeviceError);
  expect(e.message).toMatchInlineSnapshot(`"The GPU device stopped this call's work (WebGPU AbortError with no message), which happens when the device is destroyed or lost while work is pending; nothing was written. The next call gets a new device."`);
  expect(e.cause).toBe(bare);
  expect(asDeviceError(new DOMException('Device destroyed', 'OperationError'), 'an upload to the GPU')).toBeInstanceOf(DeviceError);
});

it('leaves other errors alone', () => {
  const own = new KernelRuntimeError('x');
  expect(asDeviceError(own, 'w')).toBe(own);
  const type = new TypeError('y');
  expect(asDeviceError(type, 'w')).toBe(type);
});
