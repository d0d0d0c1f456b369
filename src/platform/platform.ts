/**
 * What the library needs from its host and gets differently in Node and in a web page: threads for
 * the parallel target, the WebGPU entry point, a clock that must not keep the process alive, and an
 * async-context store. Shared code asks `platform()`; the package's entry points install the one
 * implementation that fits (`index.ts`: Node; `browser.ts`: a page), so a browser bundle never
 * reaches `node:*` modules or the `webgpu` package, and a Node program never reaches `navigator`.
 */
import { type SourceLocation, TargetUnavailableError } from '../errors.js';
import type { GPU, GPUAdapterOrNull } from '../targets/gpu/runtime/webgpu-types.js';

/**
 * A script's address: a string, or a `URL` (typed by its `href`, so that the package's types need
 * neither the DOM lib nor Node's).
 */
export type ScriptUrl = string | { readonly href: string };

/** A started worker of the parallel pool, as the pool sees it on either host. */
export interface PoolWorkerHandle {
  /** Posts a message to the worker; it reads messages when the pool marks it busy. */
  postMessage(message: unknown): void;
  /** Lets the worker keep the process alive (Node) while a call waits for it; no-op in a page. */
  ref(): void;
  unref(): void;
  terminate(): Promise<void>;
  /** Whether the worker has stopped, as far as the host can tell without running events. */
  hasStopped(): boolean;
}

/** What a worker is started with, and the hooks through which the pool hears back. */
export interface PoolWorkerInit {
  readonly control: SharedArrayBuffer;
  readonly index: number;
  readonly name: string;
  /** Heap limits (Node only; ignored in a page). */
  readonly resourceLimits?: { readonly maxOldGenerationSizeMb?: number; readonly maxYoungGenerationSizeMb?: number };
  /** The worker's script, when the user gave one (`setParallelOptions({ workerUrl })`). */
  readonly workerUrl?: ScriptUrl;
  /** Shared memory the worker releases before it collects its heap (Node only; worker.ts says why). */
  readonly collectAfterBytes?: number;
  /** The worker said it is ready. */
  onReady(): void;
  /** The worker threw or failed to load. */
  onError(error: Error): void;
  /** The worker stopped (in a page: after an error, since pages report no exits). */
  onExit(code: number): void;
}

/** A worker thread that runs gpu work on a WebGPU device of its own (Node: targets/gpu/runtime/device-worker.ts). */
export interface GpuWorkerHandle {
  postMessage(message: unknown): void;
  /** Lets the worker keep the process alive while a call waits for it. */
  ref(): void;
  unref(): void;
  /** Ends the thread; only while it has nothing of WebGPU's pending (dawn.node aborts the process otherwise). */
  terminate(): Promise<void>;
}

/** What a gpu worker is started with: the hooks through which its owner hears back. */
export interface GpuWorkerInit {
  readonly name: string;
  onMessage(message: unknown): void;
  /** The worker threw or failed to load. */
  onError(error: Error): void;
  onExit(code: number): void;
}

/** Keeps a value for the duration of a function and everything it awaits (AsyncLocalStorage). */
export interface ContextStore<T> {
  run<R>(value: T, fn: () => R): R;
  getStore(): T | undefined;
  /** False where the host cannot follow async contexts; callers fall back to coarser rules. */
  readonly followsAsync: boolean;
}

/** A position in the user's own file, and that line of it. Line and column from 1. */
export interface FilePosition {
  /** The file's path, relative to the working directory when inside it (else absolute, or its URL). */
  readonly file: string;
  readonly line: number;
  readonly column: number;
  readonly text: string;
}

/**
 * Where a function's text (`fn.toString()`) was written: in a file, where positions in the text
 * map to the file's (through its source map where a tool transformed it); or in code a tool made
 * from `file` (a transpiler or bundler) that has no source map, so that positions in the text are
 * positions in that code, not in the user's file.
 */
export type FunctionOrigin =
  | { readonly kind: 'file'; position(loc: SourceLocation): FilePosition | undefined }
  | { readonly kind: 'transformed'; readonly file: string };

export interface Platform {
  readonly name: 'node' | 'browser';
  /** Logical cores: the parallel pool's default size. */
  cores(): number;
  /** Why the parallel target's workers cannot run here, or undefined when they can. */
  parallelUnavailable(): string | undefined;
  /** Whether the calling thread may block in `Atomics.wait` (a page's main thread may not). */
  canBlock(): boolean;
  startWorker(init: PoolWorkerInit): PoolWorkerHandle;
  /** The WebGPU entry point (`navigator.gpu`, or Dawn's `GPU` object in Node). */
  loadGpu(): Promise<GPU>;
  /**
   * The adapter for device `slot` of `count` when several are used (`setGpuOptions({ devices })`):
   * on a host with several GPUs, GPU `slot` (Node: through Mesa's device-select layer); else the
   * one adapter again, so that several devices share it.
   */
  requestAdapterFor(slot: number, count: number): Promise<GPUAdapterOrNull>;
  /** How many GPUs the host has, for `devices: 'all'` (1 where that cannot be told). */
  gpuCount(): number;
  /**
   * Runs `open`, which makes a WebGPU instance list its adapters, while such an instance sees only
   * GPU `slot` of `count` (Node: the device-select layer's `DRI_PRIME`, set in the one environment
   * native code reads, one `open` at a time); just runs it where there is nothing to choose.
   */
  withGpuSelected<T>(slot: number, count: number, open: () => Promise<T>): Promise<T>;
  /** Starts a gpu worker thread (device-workers.ts); absent where there are none (a page). */
  startGpuWorker?(init: GpuWorkerInit): GpuWorkerHandle;
  /** Why no adapter was found, and what to do about it. */
  diagnoseMissingAdapter(): string;
  createContextStore<T>(): ContextStore<T>;
  /**
   * Where a function given as a kernel or helper was written, for error messages (Node: through
   * V8's inspector and the script's source map); undefined where the host cannot tell (a page).
   */
  functionOrigin(fn: Function): FunctionOrigin | undefined;
  /**
   * The size in bytes from which the host's `memcpy` copies with non-temporal stores (glibc on
   * x86-64: `glibc.cpu.x86_non_temporal_threshold`), about twice as fast for large copies: the
   * gpu target sizes the pieces of its host copies above it where arrays are that large
   * (targets/gpu/runtime/streaming.ts). Undefined where it cannot be told (a page, another libc).
   */
  hostCopyThreshold?(): number | undefined;
}

let installed: Platform | undefined;

/** Installs the host's implementation; the package's entry points call this once. */
export function installPlatform(p: Platform): void {
  installed ??= p;
}

/** The host's implementation, or undefined before an entry point installed one. */
export function installedPlatform(): Platform | undefined {
  return installed;
}

/** The host's implementation. */
export function platform(): Platform {
  if (!installed) {
    throw new TargetUnavailableError(
      "No platform is installed: import the library through its package entry ('ufunc'), which picks the Node or the browser build, not through an internal module.",
    );
  }
  return installed;
}

/** `setTimeout` that never keeps a Node process alive by itself (pages have no such notion). */
export function unrefTimeout(fn: () => void, ms: number): TimerHandle {
  const timer = setTimeout(fn, ms);
  (timer as { unref?: () => void }).unref?.();
  return timer as unknown as TimerHandle;
}

/** A timer from {@link unrefTimeout} (opaque: its type differs by host, and the package's types name neither). */
export interface TimerHandle {
  readonly __timerHandle: true;
}

/** Cancels a timer from {@link unrefTimeout}. */
export function cancelTimeout(timer: TimerHandle): void {
  clearTimeout(timer as unknown as Parameters<typeof clearTimeout>[0]);
}

/**
 * A wait that restarts whenever something is used (an idle release), without a timer per use:
 * `touch` only notes the time while a timer is pending, and the timer, when it fires early, waits
 * for the rest. Restarting a `setTimeout` on every gpu call (clear + set) cost several µs a call.
 */
export class IdleWait {
  private timer: TimerHandle | undefined;
  /** When the pending timer fires (performance.now() ms). */
  private firesAt = 0;
  /** When the wait ends: the latest touch plus its `ms`. */
  private endsAt = 0;

  /** @param expire called once the wait has ended with no touch since (never while a timer is cancelled) */
  constructor(private readonly expire: () => void) {}

  /** Starts the wait of `ms` from now again (sooner than a pending one: that timer is replaced). */
  touch(ms: number): void {
    const now = performance.now();
    this.endsAt = now + ms;
    if (this.timer !== undefined && this.firesAt <= this.endsAt) return;
    this.cancel();
    this.arm(ms, now);
  }

  /** Stops waiting. */
  cancel(): void {
    if (this.timer !== undefined) cancelTimeout(this.timer);
    this.timer = undefined;
  }

  private arm(ms: number, now: number): void {
    this.firesAt = now + ms;
    this.timer = unrefTimeout(() => {
      this.timer = undefined;
      const at = performance.now();
      if (at < this.endsAt) this.arm(this.endsAt - at, at);
      else this.expire();
    }, ms);
  }
}

/**
 * Runs `fn` once the current task and its microtasks are done: `setImmediate` in Node, a zero
 * timeout in a page (which has no `setImmediate`).
 */
export function afterCurrentTask(fn: () => void): void {
  if (typeof setImmediate === 'function') setImmediate(fn);
  else setTimeout(fn, 0);
}

/** Whether `buffer` is a SharedArrayBuffer; false where there is none (a page not isolated). */
export function isSharedArrayBuffer(buffer: ArrayBufferLike): boolean {
  return typeof SharedArrayBuffer !== 'undefined' && buffer instanceof SharedArrayBuffer;
}
