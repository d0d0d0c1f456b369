/**
 * The contract between the front (vectorize, guvectorize) and a target. A target turns a typed
 * kernel and a call plan into work done; it never parses kernels and never reads signatures, and
 * the front never names a target: it asks the registry (registry.ts) for one by the name the user
 * gave, and then only uses the hooks below. docs/architecture.md walks one call through them.
 *
 * A target is a folder with an `index.ts` exporting a `Target`, plus one line in registry.ts.
 * This contract, the plan (plan.ts) and the executables cache sit below both: they import the
 * compiler's IR, dtypes and layout, never the front, and targets never import the front either.
 * What differs between targets the front learns from their capabilities (`memory`, `canStore`,
 * `runSync`, `shutdown`, …), never from their names.
 */
import type { TypedKernel } from '../compiler/ir.js';
import type { DType, TypedArray } from '../dtypes.js';
import type { ArrayOperand, CallPlan, DeviceArrayLike, DeviceOperand } from '../plan.js';

/** What a kernel is compiled for, beyond its memory layout: equal specs compile to equal code. */
export interface KernelToCompile {
  readonly kind: CallPlan['kind'];
  readonly kernel: TypedKernel;
  /** Identifies (kernel function, signature, env, core sizes): see CallPlan.kernelKey. */
  readonly kernelKey: string;
  readonly nin: number;
  readonly boundsCheck: boolean;
}

/**
 * How a target compiles: a kernel for one *layout class* — everything about a call that its
 * generated code is specialised on (which operands are contiguous, broadcast or scalars, the rank
 * of the merged loop, …) — into an executable. The shared cache (executables.ts) calls `compile`
 * once per (kernel spec, layout key); calls whose layouts have equal keys share the executable.
 *
 * @typeParam Layout - the target's layout class (the cpu's `MemoryLayout`, the gpu's `ShaderLayout`)
 * @typeParam Executable - what running needs (a JS runner, a compute pipeline)
 * @typeParam Context - what compiling needs besides the kernel and layout (the gpu: its device)
 */
export interface KernelCompiler<Layout, Executable, Context = undefined> {
  /** A key equal for equal layout classes (a number where it fits: it is looked up on every call). */
  layoutKey(layout: Layout): string | number;
  /** Compiles the kernel for the layout class (`context`: what compiling needs, e.g. the gpu's device). */
  compile(spec: KernelToCompile, layout: Layout, context: Context): Executable;
}

/** One call of a ufunc method, as a target's method hook receives it. */
export interface MethodCall {
  /** The method's arguments: the array(s), then the options object, checked already. */
  readonly args: readonly unknown[];
  readonly target: Target;
  /** The shared default (methods.ts), for a hook that handles only some cases. */
  readonly fallback: () => Promise<unknown>;
}

/**
 * The promise a device target's `run` returns for a call whose work is recorded and that needs no
 * further waiting (its outputs are device arrays): already resolved, and recognised by identity.
 */
export const ENQUEUED: Promise<void> = Promise.resolve();

/** A ufunc method's hook: returns the method's result. */
export type MethodHook = (call: MethodCall) => Promise<unknown>;

export interface Target {
  /** The name users pass as `target` (the registry's key). */
  readonly name: string;
  /**
   * Where the target's kernels find their data. `host`: JS memory; calls can block (`runSync`).
   * `device`: memory of its own; the target takes
   * `DeviceArray` operands, allocates device outputs for calls on them, and calls only resolve
   * asynchronously.
   */
  readonly memory: 'host' | 'device';
  /**
   * Refuses, when a signature is first used, a kernel this target cannot run (the gpu target and
   * float64, say), with a `TargetUnavailableError` or `KernelCompileError` naming the signature.
   * `float64` is the ufunc's option of that name (what a float64 lookup table becomes).
   */
  checkKernel?(kernel: TypedKernel, signature: string, float64?: 'error' | 'float32'): void;
  /**
   * Whether the target's kernels can read and write `dtype` (the gpu: no 64-bit types). Absent: all.
   * Signature dispatch skips loops with a type the target cannot store.
   */
  canStore?(dtype: DType): boolean;
  /** Why it cannot store the dtypes `canStore` refuses, for messages (the gpu: "WGSL has no 64-bit types"). */
  readonly storeLimit?: string;
  /**
   * Runs a call; resolves when every output is written (or, for device outputs, enqueued). A device
   * target returns {@link ENQUEUED} itself when the call's work is recorded and nothing is left to
   * wait for, so the caller can skip its own promise layers (a chain of small gpu calls).
   */
  run(plan: CallPlan): Promise<void>;
  /** Runs a call and returns when it is done; absent where the target cannot block (gpu). */
  runSync?(plan: CallPlan): void;
  /**
   * Runs a call (one without `signal` or `timeout`) to its end on the calling thread and returns
   * true where `run` would have done just that, or returns false having done nothing. An awaited
   * call served by the plan cache uses it to skip the Promise layers of `run` for small calls. Absent: always `run`.
   */
  runIfOnCallingThread?(plan: CallPlan): boolean;
  /**
   * Allocates a host output the call will write: the parallel target gives shared memory, so its
   * workers write results in place instead of into a copy. Absent: an ordinary typed array.
   */
  allocateOutput?(length: number, dtype: DType): TypedArray;
  /**
   * Says which engine would run a call and why (e.g. WebAssembly SIMD, or generated JS because
   * the kernel uses 64-bit integers); absent where there is one way to run.
   */
  explain?(plan: CallPlan): string;
  /**
   * Runs a call whose device arrays decide where it runs (sharded across devices, or on another
   * device than the current one) and returns its result; undefined for every other call.
   * `call` runs the ufunc with other arguments.
   */
  placeCall?(args: readonly unknown[], nin: number, call: (args: unknown[]) => Promise<unknown>): Promise<unknown> | undefined;
  /** Allocates a device-resident output, for calls whose inputs live on the device (`memory: 'device'`). */
  allocateDeviceArray?(shape: readonly number[], dtype: DType): Promise<DeviceArrayLike>;
  /**
   * The same without waiting, or undefined when that needs a wait (no device yet): a call that
   * gets all its outputs this way runs `run` in the same turn, so its host inputs are read during
   * the call.
   */
  allocateDeviceArrayNow?(shape: readonly number[], dtype: DType): DeviceArrayLike | undefined;
  /**
   * Copies a device array's elements to the host, in C order: what a kernel run as plain JS
   * (`disableJit`) reads on the calling thread. Absent: such calls on device arrays are refused.
   */
  readDevice?(array: DeviceArrayLike): Promise<TypedArray>;
  /** Writes host elements (C order) into a device array: the outputs of a plain-JS call. */
  writeDevice?(array: DeviceArrayLike, data: TypedArray): Promise<void>;
  /**
   * The ufunc methods this target runs itself; a method it leaves out runs the shared default
   * (methods.ts), which runs per-row fold kernels on this target (`reduce`, `accumulate`,
   * `reduceat`, `at`) or the kernel through broadcasting (`outer`).
   */
  readonly methods?: Readonly<Partial<Record<'reduce' | 'accumulate' | 'outer' | 'reduceat' | 'at', MethodHook>>>;
  /**
   * `reduce` and `accumulate` of an associative ufunc (`{ associative: true }`) over device
   * arrays, as the target does them best (the gpu: a tree in workgroup memory). Each returns
   * undefined where it does not apply, and methods.ts then folds rows in order with fold kernels.
   */
  readonly associativeFolds?: AssociativeFolds;
  /**
   * Lets go of what the target runs beside the calling thread (the parallel target's workers, the
   * gpu's device), for `shutdown()`: calls in flight reject with a `ShutdownError`, later calls
   * start again. Absent: nothing to stop.
   */
  shutdown?(): Promise<void> | void;
}

/** What a target's associative folds need of the ufunc: its name, and its loop `T(T, T)` as a typed kernel. */
export interface FoldKernels {
  /** The ufunc's name, for messages and labels. */
  readonly name: string;
  /**
   * The typed kernel of the ufunc's loop `dtype(dtype, dtype)` that this target can run, or
   * undefined where the ufunc is not associative or has no such loop (the front decides: signature
   * dispatch is the front's).
   */
  kernelFor(dtype: DType): { readonly kernel: TypedKernel; readonly key: string } | undefined;
}

/** See {@link Target.associativeFolds}. */
export interface AssociativeFolds {
  /**
   * Folds each row of `rows` (the array viewed as [...kept, n]) from `initial` (if given), leaving
   * out the elements where `mask` (bool, laid out as `rows`) is false: into `out` (a device array
   * of shape `kept`) when given, else into a new device array for device rows, or a new host
   * array `{ data, shape }` for host rows.
   */
  reduce(
    fold: FoldKernels,
    rows: ArrayOperand | DeviceOperand,
    initial: number | bigint | boolean | undefined,
    extras?: { readonly mask?: ArrayOperand | DeviceOperand; readonly out?: DeviceOperand },
  ): Promise<unknown>;
  /**
   * The running fold of `x` along `axis`: into `out` (a device array of x's shape and dtype) when
   * given, else a new device array for a device `x`, a new host `{ data, shape }` for a host one.
   */
  accumulate(fold: FoldKernels, x: ArrayOperand | DeviceOperand, axis: number, out?: DeviceOperand): Promise<unknown>;
}
