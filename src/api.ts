/**
 * ufunc: Numba's `@vectorize` and `@guvectorize` for TypeScript — write an element-wise or
 * per-row kernel once, run it on the CPU, on all cores, or on the GPU.
 *
 * The public API, the same on every host. The package's entry points (index.ts for Node,
 * browser.ts for a page) install their platform and re-export this module.
 */
export { vectorize } from './vectorize/index.js';
export type { VectorizeUfunc } from './vectorize/index.js';
export type { AxisOptions, ReduceOptions, UfuncMethods } from './methods.js';
export { guvectorize } from './guvectorize/index.js';
export { fuse } from './fusion/fuse.js';
export type { FusedFunction, FuseOptions } from './fusion/fuse.js';
export type { AsyncUfunc, Ufunc, UfuncResult } from './callable.js';
export type { CallOptions, UfuncOptions } from './ufunc.js';
export type { NDArray, NDArrayLike } from './ndarray.js';
export type { CoreSlice, Slice, Slice2 } from './kernel-types.js';
export type { DType, TypedArray } from './dtypes.js';
export type { HostDType } from './targets/gpu/runtime/device-array.js';
export type { Exact } from './signature-types.js';
export type { TargetName } from './targets/registry.js';
export { availableTargets, ready } from './targets/registry.js';
export { DeviceArray, deviceArray, toDevice, type ToDeviceOptions } from './targets/gpu/runtime/device-array.js';
export { ShardedArray } from './targets/gpu/runtime/sharded-array.js';
export type { HostArrayView } from './targets/gpu/runtime/device-array.js';
export type { WebGpuBuffer, WebGpuDevice } from './targets/gpu/runtime/webgpu-types.js';
export { describeAdapter, setDevice } from './targets/gpu/runtime/device.js';
export type { ScriptUrl } from './platform/platform.js';
export { synchronize } from './targets/gpu/runtime/chain.js';
export { setBufferPoolLimit } from './targets/gpu/runtime/buffer-pool.js';
export { getGpuOptions, setGpuOptions } from './targets/gpu/runtime/gpu-options.js';
export type { GpuOptions } from './targets/gpu/runtime/gpu-options.js';
// The parallel target: arrays in shared memory (used without copying), the pool's options, its error.
export { sharedArray, sharedNDArray, isShared } from './shared-memory.js';
export type { TypedArrayOf } from './shared-memory.js';
export { setParallelOptions, getParallelOptions } from './targets/parallel/index.js';
export type { ParallelOptions } from './targets/parallel/index.js';
export {
  UfuncError, SignatureError, LayoutError, BroadcastError, ArgumentError, KernelCompileError,
  KernelRuntimeError, TargetUnavailableError, DeviceError, WorkerError, CallCancelledError, CallAbortedError,
  CallTimeoutError, ShutdownError, FusionError,
} from './errors.js';
// The cpu target's engines (WebAssembly or generated JS): see docs/wasm-engine.md.
export { engineMode, setEngineMode } from './targets/cpu/wasm/index.js';
export type { EngineMode } from './targets/cpu/wasm/index.js';
export { shutdown } from './shutdown.js';
export { parseSignature, parseLayout } from './signature-parser/index.js';
export type { Signature, ArgType, Layout, CoreDim } from './signature-parser/index.js';
