/**
 * One worker thread per GPU for calls on host arrays that live in SharedArrayBuffers
 * (`sharedArray`), when calls use several devices (Node only).
 *
 * Why: a call on host arrays is bound by the host's copies between the caller's arrays and each
 * device's mapped staging memory, and in one thread those copies run one after another whichever
 * device they feed (4.4–5.7 GB/s on an H200 host: two GPUs barely faster than one,
 * bench/results/multigpu-host-nvidia-h200x2.md). A worker per GPU, with a WebGPU device of its
 * own (device-worker.ts), copies its block of the call on its own thread while the others copy
 * theirs (bench/multigpu-copy-threads.ts measures both ways). A worker can read only shared
 * memory: calls with ordinary arrays keep the calling thread's path (multi-device.ts), since
 * copying them into shared memory first would be the same single-threaded copy again.
 *
 * - **Which GPU**: worker k's Dawn instance lists the adapters at its first request, made while
 *   the calling thread's `DRI_PRIME` names GPU k (a worker's own `process.env` does not reach
 *   native code); on one adapter (lavapipe) every worker opens a device on it.
 * - **A worker that ends** (it should not: no user code runs in it) fails the calls waiting for it
 *   with a `WorkerError` naming its device; the next call starts a new worker for that GPU. The
 *   library never terminates a working worker: dawn.node aborts the process when a thread ends
 *   with a buffer mapping pending. Calls with a `signal` or `timeout` therefore keep the calling
 *   thread's path, where a call past its limit abandons its device.
 * - **Idle**: workers do not keep the process alive between calls; each worker's device is
 *   released when idle as the calling thread's is. `resetDevice()` ends the idle workers.
 */
import { WorkerError } from '../../../errors.js';
import type { TypedKernel } from '../../../compiler/ir.js';
import { type CallPlan, isDeviceResident } from '../../../plan.js';
import { type GpuWorkerHandle, platform } from '../../../platform/platform.js';
import { rebuildError } from '../../parallel/errors.js';
import { currentIdleReleaseMs, onDeviceReset } from './device.js';
import { deviceCount, getGpuOptions } from './gpu-options.js';
import { currentChunkBytes, hostOperandBytes } from './streaming.js';

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
  readonly chunkBytes: number | undefined;
  readonly idleReleaseMs: number;
}

export type DeviceWorkerReply =
  | { readonly id: number; readonly ok: true; readonly adapter?: string }
  | { readonly id: number; readonly ok: false; readonly name: string; readonly message: string };

type Request = DeviceWorkerRequest extends infer R ? (R extends { id: number } ? Omit<R, 'id'> : never) : never;

interface DeviceWorker {
  readonly slot: number;
  readonly handle: GpuWorkerHandle;
  /** Requests sent and not yet answered, by id. */
  readonly waiting: Map<number, { resolve: (reply: DeviceWorkerReply) => void; reject: (e: Error) => void }>;
  /** Resolves with the adapter's name once the worker's device is open. */
  opened: Promise<string>;
  /** How the thread ended, once it has: every request after fails with it. */
  ended?: WorkerError;
}

const workers = new Map<number, DeviceWorker>();
let nextId = 1;

/**
 * Whether a call on host arrays split across devices runs on the GPUs' worker threads: every
 * array it reads or writes is a host array in a SharedArrayBuffer, it has no `signal` or
 * `timeout`, and the host can start them (Node).
 *
 * @param plan the call
 */
export function runsOnDeviceWorkers(plan: CallPlan): boolean {
  if (platform().startGpuWorker === undefined || plan.limits !== undefined) return false;
  const shared = plan.operands.every((o) => o.scalar !== undefined || (!isDeviceResident(o.data) && o.data.buffer instanceof SharedArrayBuffer));
  return shared && hostOperandBytes(plan) >= minBytes;
}

/**
 * Below this many bytes of host operands a call keeps the calling thread: a part's round trip to
 * a worker (the plan cloned, two messages) cost 1–3 ms on a loaded 2-core machine, about what one
 * thread takes to copy 16 MiB at the 5 GB/s measured into staging memory.
 */
const MIN_BYTES = 16 * 2 ** 20;
let minBytes = MIN_BYTES;

/**
 * Runs one block of a call on GPU `slot`'s worker thread; resolves when its results are in the
 * shared outputs.
 *
 * @param part the block (its arrays views of SharedArrayBuffers: shared with the worker, not copied)
 * @param slot the GPU
 * @throws WorkerError when the worker thread ends before answering; the worker's error otherwise
 *   (DeviceError, …), rebuilt as the same class
 */
export async function runOnDeviceWorker(part: CallPlan, slot: number): Promise<void> {
  const worker = workerFor(slot);
  await worker.opened;
  await ask(worker, { op: 'run', plan: { ...part, kernel: cloneableKernel(part.kernel) }, settings: { memoryLimit: getGpuOptions().memoryLimit, chunkBytes: currentChunkBytes(), idleReleaseMs: currentIdleReleaseMs() } });
}

/** Each kernel as a worker can receive it, made once. */
const cloneableKernels = new WeakMap<TypedKernel, TypedKernel>();

/**
 * `kernel` without the functions its IR names (the kernel's and its helpers' own, kept so that
 * errors point into the user's file): functions cannot be sent to a thread. Objects referenced
 * twice stay one object; typed arrays (lookup tables) are kept as they are. An index error in a
 * worker therefore names the kernel's line, not the file position the calling thread would give.
 */
function cloneableKernel(kernel: TypedKernel): TypedKernel {
  let cloneable = cloneableKernels.get(kernel);
  if (!cloneable) {
    cloneable = withoutFunctions(kernel, new Map()) as TypedKernel;
    cloneableKernels.set(kernel, cloneable);
  }
  return cloneable;
}

function withoutFunctions(value: unknown, copies: Map<object, unknown>): unknown {
  if (typeof value !== 'object' || value === null || ArrayBuffer.isView(value)) return value;
  const done = copies.get(value);
  if (done !== undefined) return done;
  if (Array.isArray(value)) {
    const copy: unknown[] = [];
    copies.set(value, copy);
    for (const x of value) copy.push(withoutFunctions(x, copies));
    return copy;
  }
  if (value instanceof Map) {
    const copy = new Map();
    copies.set(value, copy);
    for (const [k, v] of value) if (typeof v !== 'function') copy.set(k, withoutFunctions(v, copies));
    return copy;
  }
  const copy: Record<string, unknown> = {};
  copies.set(value, copy);
  for (const [k, v] of Object.entries(value)) if (typeof v !== 'function') copy[k] = withoutFunctions(v, copies);
  return copy;
}

/** GPU `slot`'s worker, started (and its device opened) if it has none, or it ended. */
function workerFor(slot: number): DeviceWorker {
  const existing = workers.get(slot);
  if (existing && !existing.ended) return existing;
  const worker: DeviceWorker = {
    slot,
    waiting: new Map(),
    opened: Promise.resolve(''),
    handle: platform().startGpuWorker!({
      name: `ufunc gpu ${slot}`,
      onMessage: (reply) => answer(worker, reply as DeviceWorkerReply),
      onError: (error) => end(worker, `failed: ${error.message}`),
      onExit: (code) => end(worker, `stopped (exit code ${code})`),
    }),
  };
  worker.handle.unref();
  workers.set(slot, worker);
  worker.opened = platform()
    .withGpuSelected(slot, deviceCount(), () => ask(worker, { op: 'open' }))
    .then((reply) => (reply.ok && reply.adapter) || '');
  worker.opened.then(
    (adapter) => (labels[slot] = adapter),
    () => {
      // No device in the worker (the call that waited says why): the next call tries a new one.
      if (workers.get(slot) === worker) workers.delete(slot);
      if (worker.waiting.size === 0) void worker.handle.terminate();
    },
  );
  return worker;
}

/** The adapter of each GPU's worker, for messages. */
const labels: string[] = [];

function label(slot: number): string {
  return labels[slot] ? `GPU device ${slot} (${labels[slot]})` : `GPU device ${slot}`;
}

function ask(worker: DeviceWorker, request: Request): Promise<DeviceWorkerReply & { ok: true }> {
  if (worker.ended) return Promise.reject(worker.ended);
  const id = nextId++;
  return new Promise<DeviceWorkerReply>((resolve, reject) => {
    worker.waiting.set(id, { resolve, reject });
    // A worker with work keeps the process alive, as a pending GPU call does.
    if (worker.waiting.size === 1) worker.handle.ref();
    worker.handle.postMessage({ ...request, id });
  }).then((reply) => {
    if (!reply.ok) throw rebuildError(reply.name, reply.message);
    return reply;
  });
}

function answer(worker: DeviceWorker, reply: DeviceWorkerReply): void {
  const waiting = worker.waiting.get(reply.id);
  if (!waiting) return;
  worker.waiting.delete(reply.id);
  if (worker.waiting.size === 0) worker.handle.unref();
  waiting.resolve(reply);
}

function end(worker: DeviceWorker, how: string): void {
  if (worker.ended) return;
  worker.ended = new WorkerError(
    `The worker thread of ${label(worker.slot)} ${how}; the part of the call it was running is lost (its outputs may be partly written). The next call starts a new worker for this GPU.`,
  );
  if (workers.get(worker.slot) === worker) workers.delete(worker.slot);
  for (const { reject } of worker.waiting.values()) reject(worker.ended);
  worker.waiting.clear();
}

onDeviceReset(() => {
  // Only idle workers: ending one with a mapping pending would abort the process (see above).
  for (const worker of [...workers.values()]) {
    if (worker.waiting.size > 0) continue;
    workers.delete(worker.slot);
    worker.ended = new WorkerError(`The worker thread of ${label(worker.slot)} was ended by resetDevice().`);
    void worker.handle.terminate();
  }
});

/** Hooks for tests: not part of the public API. */
export const __testing = {
  /** Makes GPU `slot`'s worker end its thread when the next part of a call reaches it. */
  async exitAtNextRun(slot: number): Promise<void> {
    const worker = workerFor(slot);
    await worker.opened;
    await ask(worker, { op: 'exit-at-next-run' });
  },
  /** Sets the fewest host-operand bytes a call needs to run on the workers (tests: small calls); undefined: 16 MiB. */
  setMinBytes(bytes: number | undefined): void {
    minBytes = bytes ?? MIN_BYTES;
  },
  /** The GPUs whose workers run now. */
  running: (): number[] => [...workers.keys()].sort(),
};
