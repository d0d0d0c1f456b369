/**
 * The browser platform: module Web Workers over `SharedArrayBuffer` for the parallel target (only
 * in a cross-origin isolated page, the one kind of page that has `SharedArrayBuffer`), and
 * `navigator.gpu` for the gpu target. Installed by the package's browser entry (browser.ts).
 */
import { TargetUnavailableError } from '../errors.js';
import { startWebWorker } from '../targets/parallel/web/spawn.js';
import { installPlatform, type Platform } from './platform.js';

interface PageGlobals {
  crossOriginIsolated?: boolean;
  document?: unknown;
  Worker?: unknown;
  navigator?: { gpu?: GPU; hardwareConcurrency?: number };
}
const page = globalThis as unknown as PageGlobals;

function parallelUnavailable(): string | undefined {
  if (typeof SharedArrayBuffer === 'undefined' || page.crossOriginIsolated === false) {
    return (
      'The parallel target needs SharedArrayBuffer, which a page has only when it is cross-origin isolated: serve the page with the headers ' +
      '`Cross-Origin-Opener-Policy: same-origin` and `Cross-Origin-Embedder-Policy: require-corp`, or use target \'cpu\'.'
    );
  }
  if (typeof page.Worker !== 'function') {
    return "The parallel target needs Web Workers, which this context does not have; use target 'cpu'.";
  }
  return undefined;
}

async function loadGpu(): Promise<GPU> {
  const gpu = page.navigator?.gpu;
  if (!gpu) {
    throw new TargetUnavailableError(
      "The gpu target needs WebGPU, and `navigator.gpu` is missing here: use a browser with WebGPU (a current Chrome, Edge, Safari or Firefox) in a secure context (https or localhost), pass a device with `setDevice(device)`, or use target 'cpu' or 'parallel'.",
    );
  }
  return gpu;
}

/**
 * A page has no AsyncLocalStorage. This store only knows the synchronous part of `run`; callers
 * that need more check `followsAsync` and fall back (see runScoped in targets/gpu/runtime/device.ts).
 */
function createContextStore<T>() {
  let current: T | undefined;
  return {
    run<R>(value: T, fn: () => R): R {
      const previous = current;
      current = value;
      try {
        return fn();
      } finally {
        current = previous;
      }
    },
    getStore: () => current,
    followsAsync: false,
  };
}

export const browserPlatform: Platform = {
  name: 'browser',
  cores: () => Math.max(1, page.navigator?.hardwareConcurrency ?? 4),
  parallelUnavailable,
  // A page's main thread may not block in Atomics.wait; a worker may.
  canBlock: () => page.document === undefined,
  startWorker: startWebWorker,
  loadGpu,
  // A page sees one adapter: several devices share it.
  requestAdapterFor: async () => (await loadGpu()).requestAdapter(),
  gpuCount: () => 1,
  withGpuSelected: (_slot, _count, open) => open(),
  diagnoseMissingAdapter: () =>
    "the browser offers WebGPU but gave no adapter (WebGPU may be disabled, or the GPU blocklisted: see chrome://gpu); pass a device with `setDevice(device)`, or use target 'cpu' or 'parallel'.",
  createContextStore,
  // A page has no inspector to ask: kernel positions stay positions in `fn.toString()`.
  functionOrigin: () => undefined,
};

installPlatform(browserPlatform);
