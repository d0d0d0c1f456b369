/**
 * The WebGPU types the package's declarations name, without making its users load WebGPU's types.
 *
 * The gpu code is written against the standard WebGPU types (`@webgpu/types`, a dev dependency).
 * If the emitted `.d.ts` named those globals (`GPUDevice`, `GPUBuffer`, …) directly, every user
 * would need `@webgpu/types` — and that package itself needs the DOM lib, so a strict Node project
 * (`lib: ["ES2022"]`, `skipLibCheck: false`) would fail to compile the package's types. The modules
 * whose declarations are part of the public surface therefore import the names from here instead:
 *
 * - each alias is the host's own WebGPU type when the program declares one (this package's build,
 *   a page with `@webgpu/types`, a Node app using the `webgpu` package), found through
 *   `typeof globalThis` so that no global name is written in the `.d.ts`;
 * - otherwise a small structural stand-in, which any real WebGPU object satisfies.
 *
 * Example: in a Node-only app `DeviceArray['buffer']` is {@link WebGpuBuffer}; in an app with
 * `@webgpu/types` it is that app's `GPUBuffer`, usable with its own WebGPU calls.
 */

/** The host's WebGPU interface `Name` (read from its constructor's `prototype`), else `Fallback`. */
type HostWebGpu<Name extends string, Fallback> = typeof globalThis extends { readonly [K in Name]: { readonly prototype: infer Host } }
  ? Host
  : Fallback;

/**
 * What the library needs of a WebGPU device you pass to `setDevice`: a structural subset of
 * `GPUDevice`, so a device from `navigator.gpu`, the `webgpu` package or another binding fits,
 * whichever WebGPU typings (if any) your project uses.
 */
export interface WebGpuDevice {
  readonly queue: object;
  readonly limits: object;
  readonly features: { has(name: string): boolean };
  readonly lost: Promise<unknown>;
  createBuffer(descriptor: never): unknown;
  createComputePipeline(descriptor: never): unknown;
  destroy(): void;
}

/** A WebGPU buffer as seen without WebGPU typings: a structural subset of `GPUBuffer`. */
export interface WebGpuBuffer {
  readonly size: number;
  readonly usage: number;
  destroy(): void;
}

/** A WebGPU object the package's declarations name but that users never handle. */
interface OpaqueWebGpuObject {
  readonly label: string;
}

// The names match WebGPU's own, so a module that imports them reads like WebGPU code.
export type GPUDevice = HostWebGpu<'GPUDevice', WebGpuDevice>;
export type GPUBuffer = HostWebGpu<'GPUBuffer', WebGpuBuffer>;
export type GPUCommandEncoder = HostWebGpu<'GPUCommandEncoder', OpaqueWebGpuObject>;
export type GPUComputePassEncoder = HostWebGpu<'GPUComputePassEncoder', OpaqueWebGpuObject>;
export type GPUComputePipeline = HostWebGpu<'GPUComputePipeline', OpaqueWebGpuObject>;
export type GPUSupportedLimits = HostWebGpu<'GPUSupportedLimits', Readonly<Record<string, number | undefined>>>;
/** The entry point (`navigator.gpu`, or the `webgpu` package's `create()` result). */
export type GPU = HostWebGpu<'GPU', { requestAdapter(options?: never): Promise<unknown> }>;
/** What `GPU.requestAdapter()` resolves to (an adapter or null). */
export type GPUAdapterOrNull = Awaited<ReturnType<GPU['requestAdapter']>>;
