/**
 * The worker thread of bench/multigpu-copy-threads.ts: one WebGPU device of its own (its own Dawn
 * instance, pinned to a GPU by the `DRI_PRIME` the main thread sets while it opens), copying
 * between SharedArrayBuffers and that device through {@link StagingCopier}. Every request is
 * answered with `{ ok: true, … }` or `{ ok: false, error }`; none ends the thread with a mapping
 * pending (a worker that ends so aborts the whole process in dawn.node).
 */
import { parentPort } from 'node:worker_threads';
import { create, globals } from 'webgpu';
import { StagingCopier } from './staging-copier.js';

export type CopyRequest =
  | { op: 'open'; capacity: number; chunkBytes: number; inFlight: number }
  | { op: 'upload' | 'download'; memory: SharedArrayBuffer; byteOffset: number; byteLength: number }
  | { op: 'memcpy'; from: SharedArrayBuffer; to: SharedArrayBuffer; byteOffset: number; byteLength: number; chunkBytes: number }
  | { op: 'close' };

export type CopyReply = { ok: true; ms: number; adapter?: string } | { ok: false; error: string };

Object.assign(globalThis, globals);
/** Referenced for the worker's life: dawn.node crashes if its instance is collected while a device lives. */
let gpu: GPU | undefined;
let device: GPUDevice | undefined;
let copier: StagingCopier | undefined;

async function handle(request: CopyRequest): Promise<CopyReply> {
  const started = performance.now();
  const took = () => performance.now() - started;
  switch (request.op) {
    case 'open': {
      gpu ??= create([]);
      const adapter = await gpu.requestAdapter();
      if (!adapter) throw new Error('no WebGPU adapter in the worker');
      device = await adapter.requestDevice({ requiredLimits: { maxBufferSize: adapter.limits.maxBufferSize } });
      copier = new StagingCopier(device, request.capacity, request.chunkBytes, request.inFlight);
      return { ok: true, ms: took(), adapter: adapter.info.description || adapter.info.vendor };
    }
    case 'upload':
      await copier!.upload(new Uint8Array(request.memory, request.byteOffset, request.byteLength));
      return { ok: true, ms: took() };
    case 'download':
      await copier!.download(new Uint8Array(request.memory, request.byteOffset, request.byteLength));
      return { ok: true, ms: took() };
    case 'memcpy': {
      const from = new Uint8Array(request.from, request.byteOffset, request.byteLength);
      const to = new Uint8Array(request.to, request.byteOffset, request.byteLength);
      for (let at = 0; at < from.byteLength; at += request.chunkBytes) to.set(from.subarray(at, at + request.chunkBytes), at);
      return { ok: true, ms: took() };
    }
    case 'close':
      await copier?.destroy();
      device?.destroy();
      copier = undefined;
      device = undefined;
      return { ok: true, ms: took() };
  }
}

parentPort!.on('message', (request: CopyRequest) => {
  handle(request)
    .then(
      (reply) => parentPort!.postMessage(reply),
      (e: unknown) => parentPort!.postMessage({ ok: false, error: e instanceof Error ? e.message : String(e) } satisfies CopyReply),
    )
    // Closed, the port lets the thread end by itself, with nothing of Dawn's pending.
    .finally(() => request.op === 'close' && parentPort!.close());
});
