/**
 * ufunc: Numba's `@vectorize` and `@guvectorize` for TypeScript — write an element-wise or
 * per-row kernel once, run it on the CPU, on all cores, or on the GPU.
 */
export { vectorize } from './vectorize/index.js';
export type { VectorizeUfunc } from './vectorize/index.js';
export type { ReduceOptions, UfuncMethods } from './vectorize/methods.js';
export { guvectorize } from './guvectorize/index.js';
export type { Ufunc, UfuncResult } from './callable.js';
export type { CallOptions, UfuncOptions } from './ufunc.js';
export type { NDArray, NDArrayLike } from './ndarray.js';
export type { DType, TypedArray } from './dtypes.js';
export type { TargetName } from './targets/target.js';
export { availableTargets } from './targets/registry.js';
export {
  UfuncError, SignatureError, LayoutError, BroadcastError, ArgumentError, KernelCompileError,
  KernelRuntimeError, TargetUnavailableError, DeviceError,
} from './errors.js';
export { parseSignature, parseLayout } from './signature-parser/index.js';
export type { Signature, ArgType, Layout, CoreDim } from './signature-parser/index.js';
