/**
 * A worker of the parallel target in Node (`worker_threads`). It lives in a synchronous loop: sleep
 * in `Atomics.wait` on its state slot, and when the pool marks it busy (and notifies), read its
 * mailbox and run the job (worker-core.ts). It never returns to its event loop, so every message is
 * read with `receiveMessageOnPort`.
 *
 * This file is the package's `ufunc/worker` entry under the `node` condition: a bundle places it
 * beside itself as `worker.js`.
 */
import { type MessagePort, parentPort, receiveMessageOnPort, workerData } from 'node:worker_threads';
import { heapCollector } from './heap-collector.js';
import { markWorkerDead, type WorkerMessage, WorkerState } from './protocol.js';
import { WorkerCore } from './worker-core.js';

/**
 * By default a worker collects its heap once it has released this much shared memory: a collection
 * costs milliseconds (more under load), and this many bytes of results cost far longer to compute;
 * the memory results hold through the workers stays bounded by about this much.
 */
const COLLECT_AFTER_BYTES = 256 * 1024 * 1024;

/** What a Node worker receives at start. */
export interface NodeWorkerData {
  readonly control: SharedArrayBuffer;
  readonly index: number;
  readonly port: MessagePort;
  /** Shared memory this worker releases before it collects its heap (@default COLLECT_AFTER_BYTES). */
  readonly collectAfterBytes?: number;
}

const { control: buffer, index, port, collectAfterBytes = COLLECT_AFTER_BYTES } = workerData as NodeWorkerData;
const core = new WorkerCore(buffer, index, (code) => process.exit(code));
const { int32, stateSlot, mailboxSlot } = core;

/** Reads every message posted before the job started (postMessage queues them synchronously). */
function readMailbox(): void {
  while (core.unread > 0) {
    const entry = receiveMessageOnPort(port);
    if (entry === undefined) {
      Atomics.wait(int32, mailboxSlot, Atomics.load(int32, mailboxSlot), 1); // not expected; do not spin hot if it happens
      continue;
    }
    core.handle(entry.message as WorkerMessage);
  }
}

const collectHeap = heapCollector();

// `process.exit` in a worker stops only this thread, and runs this first: a calling thread blocked
// in `Atomics.wait` learns of the death at once instead of at its next liveness check.
process.on('exit', () => markWorkerDead(core.control, index));

core.markIdle();
parentPort!.postMessage('ready');
for (;;) {
  const state = Atomics.load(int32, stateSlot);
  if (state === WorkerState.busy) {
    let failure: unknown;
    try {
      readMailbox();
    } catch (error) {
      failure = error;
    }
    core.runJob(failure);
    if (collectHeap && core.releasedBytes >= collectAfterBytes) {
      collectHeap();
      core.releasedBytes = 0;
    }
  }
  // Counted out by the pool (it took this thread for dead, or is terminating it): leave.
  else if (state === WorkerState.dead) process.exit(0);
  else Atomics.wait(int32, stateSlot, state);
}
