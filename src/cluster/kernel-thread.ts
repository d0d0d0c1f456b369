/**
 * A cluster worker's kernel thread: the cpu target's kernels run there, one chunk at a time, so that
 * the worker's event loop stays free meanwhile — reading the next chunks, writing the last ones,
 * talking to the queue. The cpu target computes on the thread that calls it; on the worker's own
 * thread every read and write of other jobs would wait for each kernel.
 *
 * Operands travel in shared memory (`SharedArrayBuffer`): chunks read with `shared` and outputs
 * allocated there (run-chunk.ts) cross without a copy, others are copied in (and outputs back).
 * The thread compiles each descriptor once, from the descriptor the worker has already checked
 * (kernel-thread-entry.ts), exactly as the worker does: a kernel computes the same bytes on either.
 */
import type { Worker } from 'node:worker_threads';
import type { TypedArray } from '../dtypes.js';
import { TargetUnavailableError, UfuncError } from '../errors.js';
import { startSourceWorker } from '../platform/source-worker.js';
import type { Box } from '../zarr/arrays.js';
import type { KernelOptions, ScalarInput } from '../zarr/run-chunk.js';
import type { UfuncDescriptor } from './descriptor.js';

/** One kernel call, as the thread receives it. */
export interface KernelRequest {
  readonly id: number;
  readonly hash: string;
  /** Present the first time the thread sees this hash. */
  readonly descriptor?: UfuncDescriptor;
  readonly target: string;
  readonly args: readonly (Box | ScalarInput)[];
  readonly out: readonly Box[];
  readonly where?: Box | boolean;
}

/**
 * The thread's answer: the kernel's time, its error as it can cross threads, or that it does not
 * hold the descriptor (it keeps only the latest ones): the request comes again with it.
 */
export type KernelReply =
  | { readonly id: number; readonly ms: number }
  | { readonly id: number; readonly missing: true }
  | { readonly id: number; readonly error: { readonly name: string; readonly message: string; readonly library: boolean } };

/**
 * An error of the kernel thread's call, as the worker reports it: its name and message as thrown
 * there, and a `UfuncError` where the library threw it (the job itself is wrong, so it is not
 * retried), as the worker's own call would have thrown.
 */
function rebuilt(error: { readonly name: string; readonly message: string; readonly library: boolean }): Error {
  const e = error.library ? new UfuncError(error.message) : new Error(error.message);
  e.name = error.name;
  return e;
}

/** Whether an error is the library's and says the job is wrong (not a target missing here). */
export function isJobError(e: unknown): boolean {
  return e instanceof UfuncError && !(e instanceof TargetUnavailableError) && e.name !== 'TargetUnavailableError';
}

const isShared = (data: TypedArray): boolean => data.buffer instanceof SharedArrayBuffer;

/** `box` with its data in shared memory (copied there where it is not). */
function sharedBox(box: Box): Box {
  if (isShared(box.data)) return box;
  const Ctor = box.data.constructor as new (buffer: SharedArrayBuffer) => TypedArray;
  const data = new Ctor(new SharedArrayBuffer(box.data.byteLength));
  (data as Uint8Array).set(box.data as Uint8Array);
  return { ...box, data };
}

const isBox = (x: unknown): x is Box => typeof x === 'object' && x !== null && 'data' in x;

export class KernelThread {
  private thread: Worker | undefined;
  private readonly pending = new Map<number, { readonly request: KernelRequest; readonly descriptor: UfuncDescriptor; resolve: (ms: number) => void; reject: (e: Error) => void }>();
  /** The descriptors sent to the thread (it asks again for one it has let go of). */
  private known = new Set<string>();
  private nextId = 0;

  constructor(private readonly target: string) {}

  /**
   * Runs `descriptor`'s kernel (hash `hash`) over `args` into `options.out` on the thread.
   *
   * @returns the kernel's time on the thread, in ms
   */
  async run(hash: string, descriptor: UfuncDescriptor, args: readonly (Box | ScalarInput)[], options: KernelOptions): Promise<number> {
    const thread = this.started();
    const outs = Array.isArray(options.out) ? options.out : [options.out as Box];
    const sharedOuts = outs.map(sharedBox);
    const id = this.nextId++;
    const request: KernelRequest = {
      id,
      hash,
      ...(!this.known.has(hash) && { descriptor }),
      target: this.target,
      args: args.map((a) => (isBox(a) ? sharedBox(a) : a)),
      out: sharedOuts,
      ...(options.where !== undefined && { where: isBox(options.where) ? sharedBox(options.where) : options.where }),
    };
    this.known.add(hash);
    const ms = await new Promise<number>((resolve, reject) => {
      this.pending.set(id, { request, descriptor, resolve, reject });
      thread.postMessage(request);
    });
    // Outputs that were copied into shared memory are copied back.
    outs.forEach((o, k) => o.data !== sharedOuts[k]!.data && (o.data as Uint8Array).set(sharedOuts[k]!.data as Uint8Array));
    return ms;
  }

  /** Stops the thread (a call in flight rejects). */
  async close(): Promise<void> {
    const thread = this.thread;
    this.thread = undefined;
    await thread?.terminate();
  }

  private started(): Worker {
    if (this.thread) return this.thread;
    const thread = startSourceWorker(new URL('./kernel-thread-entry.js', import.meta.url), new URL('./kernel-thread-entry.ts', import.meta.url), { name: 'ufunc kernel thread' });
    if (!thread) throw new Error(`the kernel thread's script is missing beside ${import.meta.url}`);
    thread.on('message', (reply: KernelReply) => {
      const call = this.pending.get(reply.id);
      if (!call) return;
      if ('missing' in reply) return thread.postMessage({ ...call.request, descriptor: call.descriptor });
      this.pending.delete(reply.id);
      if ('error' in reply) call.reject(rebuilt(reply.error));
      else { const r = reply as unknown as { recv: number; sent: number }; (globalThis as any).__t = { recv: r.recv, sent: r.sent, got: performance.timeOrigin + performance.now() }; call.resolve(reply.ms); }
    });
    // A thread that stops (out of memory, a crash) fails its calls with an error BullMQ retries; the next call starts another.
    const stopped = (why: string): void => {
      if (this.thread !== thread) return;
      this.thread = undefined;
      this.known = new Set();
      for (const call of this.pending.values()) call.reject(new Error(`the kernel thread stopped: ${why}`));
      this.pending.clear();
    };
    thread.on('error', (e) => stopped(e.message));
    thread.on('exit', (code) => stopped(`it exited with code ${code}`));
    this.thread = thread;
    return thread;
  }
}
