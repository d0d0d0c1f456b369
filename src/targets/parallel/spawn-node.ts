/**
 * Starts the library's worker threads in Node (`worker_threads`): the parallel target's, and the
 * gpu target's worker per GPU ({@link startNodeGpuWorker}).
 *
 * Where the script comes from: `worker.js` beside this module (`new URL('./worker.js',
 * import.meta.url)`), which is where it sits in the published package and where a bundle finds it
 * when the package's `ufunc/worker` entry is bundled beside the app as `worker.js`; or the script
 * the user names with `setParallelOptions({ workerUrl })`. Run from source (tsx, vitest), only
 * worker.ts exists: a small bootstrap imports it. Node 20 workers do not get the module hooks a
 * TypeScript loader registered in the calling thread (`--import tsx` included), so where that import
 * fails for its extension the bootstrap registers tsx in the worker and retries (source-worker.ts).
 */
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { MessageChannel, Worker, type WorkerOptions } from 'node:worker_threads';
import { TargetUnavailableError } from '../../errors.js';
import type { GpuWorkerHandle, GpuWorkerInit, PoolWorkerHandle, PoolWorkerInit } from '../../platform/platform.js';
import { sourceBootstrap, startSourceWorker } from '../../platform/source-worker.js';
import type { NodeWorkerData } from './worker.js';

function startWorker(init: PoolWorkerInit, options: WorkerOptions): Worker {
  if (init.workerUrl !== undefined) return new Worker(typeof init.workerUrl === 'string' ? init.workerUrl : new URL(init.workerUrl.href), options);
  // Written out in full so that bundlers which follow `new Worker(new URL(…))` see it.
  if (existsSync(fileURLToPath(new URL('./worker.js', import.meta.url)))) return new Worker(new URL('./worker.js', import.meta.url), options);
  const ts = new URL('./worker.ts', import.meta.url);
  if (!existsSync(fileURLToPath(ts))) {
    throw new TargetUnavailableError(
      `The parallel target's worker script is missing: ${fileURLToPath(new URL('./worker.js', import.meta.url))} does not exist. ` +
        `If you bundled ufunc, bundle its worker too, as worker.js beside your bundle (esbuild: \`esbuild app.js worker=ufunc/worker --bundle --platform=node --format=esm --outdir=out\`), ` +
        `or name the script with setParallelOptions({ workerUrl }).`,
    );
  }
  return new Worker(sourceBootstrap(ts), { ...options, eval: true });
}

export function startNodeWorker(init: PoolWorkerInit): PoolWorkerHandle {
  const { port1, port2 } = new MessageChannel();
  const data: NodeWorkerData = { control: init.control, index: init.index, port: port2, ...(init.collectAfterBytes !== undefined ? { collectAfterBytes: init.collectAfterBytes } : {}) };
  const worker = startWorker(init, {
    workerData: data,
    transferList: [port2],
    name: init.name,
    ...(init.resourceLimits ? { resourceLimits: init.resourceLimits } : {}),
  });
  worker.unref();
  port1.unref();
  worker.once('message', () => {
    // Read once while the worker runs: Node caches the worker's loop start time at the first read,
    // and a first read after the worker stopped can never show it stopped (the idle time stays 0),
    // so a sync call blocked on a worker that ran out of memory would wait for it forever.
    worker.performance.eventLoopUtilization();
    init.onReady();
  });
  // Without a listener an `error` event would be thrown on the calling thread.
  worker.on('error', (error) => init.onError(error));
  worker.on('exit', (code) => init.onExit(code));
  return {
    postMessage: (message) => port1.postMessage(message),
    ref: () => worker.ref(),
    unref: () => worker.unref(),
    terminate: async () => {
      await worker.terminate();
    },
    // Undocumented but stable since Node 14: a stopped worker reports an idle time of -1. It is
    // the one sign of a death (out of memory, say) that needs no event on this thread.
    hasStopped: () => worker.performance.eventLoopUtilization().idle < 0,
  };
}

/**
 * Starts a worker thread of the gpu target (targets/gpu/runtime/device-worker.ts; its entry is
 * platform/gpu-worker-entry.ts), from the entry's `.js` where the package is built, else from source.
 *
 * @param init the hooks through which the caller hears back
 * @returns the handle; the worker keeps the process alive until `unref()`
 * @throws TargetUnavailableError when the worker's script is missing (a bundle without it)
 */
export function startNodeGpuWorker(init: GpuWorkerInit): GpuWorkerHandle {
  const js = new URL('../../platform/gpu-worker-entry.js', import.meta.url);
  const worker = startSourceWorker(js, new URL('../../platform/gpu-worker-entry.ts', import.meta.url), { name: init.name });
  if (!worker) {
    throw new TargetUnavailableError(
      `The gpu target's worker script is missing: ${fileURLToPath(js)} does not exist. Calls on shared arrays across several GPUs need it (bundle it beside the library), or pass ordinary arrays.`,
    );
  }
  worker.on('message', (message) => init.onMessage(message));
  // Without a listener an `error` event would be thrown on the calling thread.
  worker.on('error', (error) => init.onError(error));
  worker.on('exit', (code) => init.onExit(code));
  return {
    postMessage: (message) => worker.postMessage(message),
    ref: () => worker.ref(),
    unref: () => worker.unref(),
    terminate: async () => {
      await worker.terminate();
    },
  };
}
