/**
 * Starts a worker of the parallel target in a page. The script is found as
 * `new Worker(new URL('./worker.js', import.meta.url))`, the form bundlers (Vite, webpack, Parcel)
 * recognise and emit as a separate file; esbuild does not, so with esbuild bundle the package's
 * `ufunc/worker` entry beside the app as `worker.js`, or name the script with
 * `setParallelOptions({ workerUrl })`.
 */
import type { PoolWorkerHandle, PoolWorkerInit } from '../../../platform/platform.js';

// The page's Worker, typed here so that the library compiles without the DOM lib.
interface WebWorker {
  onmessage: ((event: { data: unknown }) => void) | null;
  onerror: ((event: { message?: string; preventDefault(): void }) => void) | null;
  postMessage(message: unknown): void;
  terminate(): void;
}
declare const Worker: new (url: string | URL, options: { type: 'module'; name: string }) => WebWorker;

export function startWebWorker(init: PoolWorkerInit): PoolWorkerHandle {
  const options = { type: 'module', name: init.name } as const;
  const worker = init.workerUrl ? new Worker(typeof init.workerUrl === 'string' ? init.workerUrl : init.workerUrl.href, options) : new Worker(new URL('./worker.js', import.meta.url), options);
  let stopped = false;
  worker.onmessage = (event) => {
    if (event.data === 'ready') init.onReady();
  };
  // A page reports no exits: an error (a script that failed to load, or a throw outside a job) is
  // the end of the worker; the pool replaces it.
  worker.onerror = (event) => {
    event.preventDefault();
    const url = init.workerUrl ? (typeof init.workerUrl === 'string' ? init.workerUrl : init.workerUrl.href) : new URL('./worker.js', import.meta.url).href;
    init.onError(new Error(event.message || `the worker script ${url} failed to load or threw; if you bundled ufunc, bundle its 'ufunc/worker' entry beside your bundle as worker.js, or pass setParallelOptions({ workerUrl })`));
    stopped = true;
    worker.terminate();
    init.onExit(1);
  };
  worker.postMessage({ control: init.control, index: init.index });
  return {
    postMessage: (message) => worker.postMessage(message),
    ref() {},
    unref() {},
    terminate: async () => {
      stopped = true;
      worker.terminate();
    },
    hasStopped: () => stopped,
  };
}
