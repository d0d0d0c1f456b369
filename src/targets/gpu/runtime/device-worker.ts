/**
 * The worker thread of one GPU (device-workers.ts starts it, Node only): it runs the parts of
 * host-array calls the calling thread sends it on a WebGPU device of its own, so the copies
 * between the caller's memory and that device's staging buffers run on this thread, beside those
 * of the other GPUs' workers, instead of all on the calling thread.
 *
 * A part arrives as a `CallPlan` whose arrays are views of the caller's SharedArrayBuffers
 * (structured cloning shares their memory, copies none of it), and runs through the gpu target as
 * any call on one device does: uploaded, computed and written back into the shared outputs, in
 * chunks when large. Failures come back as `{ ok: false, name, message }`; nothing ends this thread
 * while a mapping is pending (dawn.node aborts the whole process when a thread ends so).
 */
import { parentPort } from 'node:worker_threads';
import '../../../platform/node.js';
import type { CallPlan } from '../../../plan.js';
import { gpuTarget } from '../index.js';
import { acquireDevice, setIdleReleaseMs } from './device.js';
import { setGpuOptions } from './gpu-options.js';
import { setChunkBytes } from './streaming.js';

/** What the calling thread asks; each request is answered once, by id, with a {@link DeviceWorkerReply}. */
export type DeviceWorkerRequest =
  /** Create the device (while the calling thread's DRI_PRIME names this worker's GPU). */
  | { readonly id: number; readonly op: 'open' }
  /** Run one part of a call, with the calling thread's memory limit and chunk size. */
  | { readonly id: number; readonly op: 'run'; readonly plan: CallPlan; readonly settings: WorkerSettings }
  /** Tests (device-workers.ts `__testing`): end this thread when the next part arrives, before touching the GPU. */
  | { readonly id: number; readonly op: 'exit-at-next-run' };

/** The calling thread's settings that decide how a part runs, sent with each. */
export interface WorkerSettings {
  readonly memoryLimit: number;
  readonly chunkBytes: number;
  readonly idleReleaseMs: number;
}

export type DeviceWorkerReply =
  | { readonly id: number; readonly ok: true; readonly adapter?: string }
  | { readonly id: number; readonly ok: false; readonly name: string; readonly message: string };

let exitAtNextRun = false;

async function handle(request: DeviceWorkerRequest): Promise<DeviceWorkerReply> {
  switch (request.op) {
    case 'open': {
      const { adapterInfo: a } = await acquireDevice();
      return { id: request.id, ok: true, adapter: a.description || a.device || a.vendor };
    }
    case 'run':
      if (exitAtNextRun) process.exit(1);
      setGpuOptions({ memoryLimit: request.settings.memoryLimit });
      setChunkBytes(request.settings.chunkBytes);
      setIdleReleaseMs(request.settings.idleReleaseMs);
      await gpuTarget.run(request.plan);
      return { id: request.id, ok: true };
    case 'exit-at-next-run':
      exitAtNextRun = true;
      return { id: request.id, ok: true };
  }
}

parentPort!.on('message', (request: DeviceWorkerRequest) => {
  handle(request).then(
    (reply) => parentPort!.postMessage(reply),
    (e: unknown) => {
      const error = e instanceof Error ? e : new Error(String(e));
      parentPort!.postMessage({ id: request.id, ok: false, name: error.constructor.name, message: error.message } satisfies DeviceWorkerReply);
    },
  );
});
