/**
 * The worker thread of one GPU (device-workers.ts starts it, Node only; its entry is
 * platform/gpu-worker-entry.ts): it runs the parts of
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
import type { MessagePort } from 'node:worker_threads';
import { gpuTarget } from '../index.js';
import { acquireDevice, setIdleReleaseMs } from './device.js';
import { setGpuOptions } from './gpu-options.js';
import type { DeviceWorkerReply, DeviceWorkerRequest } from './device-workers.js';
import { setChunkBytes } from './streaming.js';

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

/**
 * Serves the calling thread's requests arriving on `port` (the worker's `parentPort`): what the
 * worker's entry (platform/gpu-worker-entry.ts, which installs the Node platform first) runs.
 *
 * @param port the worker's port to its owner
 */
export function serveDeviceWorker(port: MessagePort): void {
  port.on('message', (request: DeviceWorkerRequest) => {
    handle(request).then(
      (reply) => port.postMessage(reply),
      (e: unknown) => {
        const error = e instanceof Error ? e : new Error(String(e));
        port.postMessage({ id: request.id, ok: false, name: error.constructor.name, message: error.message } satisfies DeviceWorkerReply);
      },
    );
  });
}
