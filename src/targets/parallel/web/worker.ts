/**
 * A worker of the parallel target in a web page (a module Web Worker). Unlike the Node worker it
 * cannot read messages while it blocks (there is no `receiveMessageOnPort`), so it sleeps in
 * `Atomics.waitAsync` and returns to its event loop between jobs; a job waits until the messages
 * the pool posted for it have arrived, then runs synchronously (worker-core.ts).
 *
 * This file is the package's `ufunc/worker` entry under the `browser` condition: a bundle places it
 * beside itself as `worker.js`.
 */
import { type WorkerMessage, WorkerState } from '../protocol.js';
import { WorkerCore } from '../worker-core.js';

interface WorkerScope {
  onmessage: ((event: { data: unknown }) => void) | null;
  postMessage(message: unknown): void;
  close(): void;
}
const scope = globalThis as unknown as WorkerScope;

type WaitAsync = (a: Int32Array, i: number, v: number, t?: number) => { async: boolean; value: unknown };
const waitAsync = (Atomics as unknown as { waitAsync?: WaitAsync }).waitAsync;

let core: WorkerCore | undefined;
const inbox: WorkerMessage[] = [];
let messageArrived: (() => void) | undefined;

scope.onmessage = (event) => {
  if (!core) {
    const { control, index } = event.data as { control: SharedArrayBuffer; index: number };
    core = new WorkerCore(control, index, (code) => {
      scope.close();
      throw new Error(`worker ${index} stopped on request (code ${code})`);
    });
    void serve(core);
    return;
  }
  inbox.push(event.data as WorkerMessage);
  messageArrived?.();
};

async function readMailbox(c: WorkerCore): Promise<void> {
  while (c.unread > 0) {
    const message = inbox.shift();
    if (message === undefined) {
      await new Promise<void>((resolve) => (messageArrived = resolve));
      messageArrived = undefined;
      continue;
    }
    c.handle(message);
  }
}

/** Sleeps until the state slot no longer holds `state`, letting messages in meanwhile. */
async function sleep(c: WorkerCore, state: number): Promise<void> {
  if (waitAsync) {
    const wait = waitAsync(c.int32, c.stateSlot, state);
    if (wait.async) await wait.value;
    return;
  }
  // Browsers without Atomics.waitAsync: block briefly, then yield so messages can arrive.
  Atomics.wait(c.int32, c.stateSlot, state, 2);
  await new Promise((resolve) => setTimeout(resolve, 0));
}

async function serve(c: WorkerCore): Promise<void> {
  c.markIdle();
  scope.postMessage('ready');
  for (;;) {
    const state = Atomics.load(c.int32, c.stateSlot);
    if (state === WorkerState.busy) {
      let failure: unknown;
      try {
        await readMailbox(c);
      } catch (error) {
        failure = error;
      }
      c.runJob(failure);
    } else if (state === WorkerState.dead) {
      scope.close();
      return;
    } else {
      await sleep(c, state);
    }
  }
}
