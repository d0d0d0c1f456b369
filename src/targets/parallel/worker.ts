/**
 * A worker of the parallel target. It lives in a synchronous loop: sleep in `Atomics.wait` on its
 * state slot, and when the pool marks it busy (and notifies), read its mailbox, claim chunks of
 * the loop space and run them with the very runner the cpu target generates. It never returns to
 * its event loop, so every message is read with `receiveMessageOnPort`, and everything the
 * calling thread needs back is written into shared memory (see protocol.ts for why).
 */
import { parentPort, receiveMessageOnPort, workerData } from 'node:worker_threads';
import { instantiateRunner, type Runner, type RunnerArgs } from '../cpu/codegen.js';
import {
  type ArgumentSetMessage, Command, CHUNK_SIZE_F64, ControlBlock, markWorkerDead, runChunk, SCALARS_F64, Slot, TOTAL_F64,
  type WorkerData, type WorkerMessage, WorkerSlot, WorkerState,
} from './protocol.js';

const { control: buffer, index, port } = workerData as WorkerData;
const control = new ControlBlock(buffer);
const int32 = control.int32;
const stateSlot = control.workerSlot(index, WorkerSlot.state);
const mailboxSlot = control.workerSlot(index, WorkerSlot.mailbox);

/** Runners by id; a runner whose source failed to instantiate throws that failure when run. */
const runners = new Map<number, Runner>();

interface ArgumentSet {
  readonly args: RunnerArgs & { scalars: (number | bigint | boolean | undefined)[] };
  readonly message: ArgumentSetMessage;
}
const argumentSets = new Map<number, ArgumentSet>();
let received = 0;

function handle(message: WorkerMessage): void {
  switch (message.type) {
    case 'runner': {
      let runner: Runner;
      try {
        runner = instantiateRunner(message.source, message.sites);
      } catch (error) {
        // E.g. a local array too large to allocate: the call fails as it would on the cpu target.
        runner = () => {
          throw error;
        };
      }
      runners.set(message.id, runner);
      return;
    }
    case 'args': {
      const args = {
        data: message.data as ArrayLike<unknown>[],
        offset: message.offset,
        loopShape: message.loopShape,
        loopStrides: message.loopStrides,
        coreShape: message.coreShape,
        coreStrides: message.coreStrides,
        scalars: message.scalarKinds.map(() => undefined),
      };
      argumentSets.set(message.id, { args, message });
      return;
    }
    case 'forget':
      for (const id of message.runners) runners.delete(id);
      if (message.argumentSets === 'all') argumentSets.clear();
      else for (const id of message.argumentSets) argumentSets.delete(id);
      return;
    case 'crash':
      return process.exit(70);
    case 'exhaust-memory': {
      const hoard: number[][] = [];
      for (;;) hoard.push(new Array<number>(1 << 20).fill(hoard.length + 0.5));
    }
  }
}

/** Reads every message posted before the job started (postMessage queues them synchronously). */
function readMailbox(): void {
  const posted = Atomics.load(int32, mailboxSlot);
  while (received < posted) {
    const entry = receiveMessageOnPort(port);
    if (entry === undefined) {
      Atomics.wait(int32, mailboxSlot, posted, 1); // not expected; do not spin hot if it happens
      continue;
    }
    received++;
    handle(entry.message as WorkerMessage);
  }
}

function runChunks(): void {
  const runner = runners.get(int32[Slot.runner]!);
  const set = argumentSets.get(int32[Slot.args]!);
  if (!runner || !set) {
    control.writeError(index, 0, new Error(`worker ${index} has no runner ${int32[Slot.runner]} or argument set ${int32[Slot.args]} (a bug in the parallel target)`));
    control.lowerErrorChunk(0);
    return;
  }
  const { args, message } = set;
  message.scalarKinds.forEach((kind, k) => {
    if (kind === null) return;
    const slot = SCALARS_F64 + k;
    args.scalars[k] = kind === 'number' ? control.float64[slot] : kind === 'bool' ? control.float64[slot] !== 0 : kind === 'int64' ? control.bigInt64[slot] : control.bigUint64[slot];
  });
  const chunks = int32[Slot.chunks]!;
  const total = control.float64[TOTAL_F64]!;
  const chunkSize = control.float64[CHUNK_SIZE_F64]!;
  let failed = false;
  for (;;) {
    const chunk = Atomics.add(int32, Slot.nextChunk, 1);
    if (chunk >= chunks) return;
    // A chunk after one that threw cannot change the call's error (the lowest chunk's is reported).
    if (chunk > Atomics.load(int32, Slot.errorChunk)) continue;
    try {
      runChunk(runner, args, chunk, chunkSize, total);
    } catch (error) {
      if (!failed) control.writeError(index, chunk, error);
      failed = true;
      control.lowerErrorChunk(chunk);
    }
  }
}

function runJob(): void {
  try {
    readMailbox();
    if (int32[Slot.command] === Command.run) runChunks();
  } catch (error) {
    control.writeError(index, 0, error);
    control.lowerErrorChunk(0);
  }
  if (Atomics.compareExchange(int32, stateSlot, WorkerState.busy, WorkerState.idle) === WorkerState.busy) {
    if (Atomics.sub(int32, Slot.remaining, 1) === 1) Atomics.notify(int32, Slot.remaining);
  }
}

// `process.exit` in a worker stops only this thread, and runs this first: a calling thread blocked
// in `Atomics.wait` learns of the death at once instead of at its next liveness check.
process.on('exit', () => markWorkerDead(control, index));

Atomics.compareExchange(int32, stateSlot, WorkerState.starting, WorkerState.idle);
parentPort!.postMessage('ready');
for (;;) {
  const state = Atomics.load(int32, stateSlot);
  if (state === WorkerState.busy) runJob();
  // Counted out by the pool (it took this thread for dead, or is terminating it): leave.
  else if (state === WorkerState.dead) process.exit(0);
  else Atomics.wait(int32, stateSlot, state);
}
