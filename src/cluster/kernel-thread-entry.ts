/**
 * What runs on a cluster worker's kernel thread (kernel-thread.ts): each request is one chunk's
 * kernel call over shared memory, run synchronously, one at a time, in the order they come.
 * Descriptors arrive already validated and hash-checked by the worker; they are compiled here by the
 * kernel compiler, as there.
 */
import '../platform/node.js';
import { parentPort } from 'node:worker_threads';
import type { Ufunc } from '../callable.js';
import { UfuncError } from '../errors.js';
import { ufuncFromDescriptor } from './descriptor.js';
import type { KernelReply, KernelRequest } from './kernel-thread.js';

/** As many as the worker keeps (worker.ts); the worker sends one again where asked. */
const CACHED_UFUNCS = 64;
const ufuncs = new Map<string, Ufunc>();

function ufuncFor(request: KernelRequest): Ufunc | undefined {
  let ufunc = ufuncs.get(request.hash);
  if (ufunc || !request.descriptor) return ufunc;
  ufunc = ufuncFromDescriptor(request.descriptor, request.target) as Ufunc;
  if (ufuncs.size >= CACHED_UFUNCS) ufuncs.delete(ufuncs.keys().next().value!);
  ufuncs.set(request.hash, ufunc);
  return ufunc;
}

parentPort!.on('message', (request: KernelRequest) => {
  let reply: KernelReply;
  try {
    const ufunc = ufuncFor(request);
    if (!ufunc) return parentPort!.postMessage({ id: request.id, missing: true } satisfies KernelReply);
    const started = performance.now();
    ufunc.sync(...request.args, { out: request.out.length === 1 ? request.out[0] : request.out, ...(request.where !== undefined && { where: request.where }) });
    reply = { id: request.id, ms: performance.now() - started };
  } catch (e) {
    const error = e instanceof Error ? e : new Error(String(e));
    reply = { id: request.id, error: { name: error.name, message: error.message, library: error instanceof UfuncError } };
  }
  parentPort!.postMessage(reply);
});
