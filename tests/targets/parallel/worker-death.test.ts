/**
 * How a calling thread blocked in a sync call learns that a Node worker died without running its
 * `exit` handler (out of memory): `hasStopped()`, which needs no event on the blocked thread.
 *
 * The case that hung a sync call before: the first liveness check came only after the worker had
 * already died. Node caches a worker's loop start time at the first read of its event-loop
 * utilization, and a first read after the death never shows the worker stopped — so the handle
 * reads it once when the worker says it is ready.
 */
import { describe, expect, it } from 'vitest';
import { startNodeWorker } from '../../../src/targets/parallel/spawn-node.js';

/** Says it is ready, waits for the go signal, then allocates until its small heap runs out. */
const DOOMED = `
  const { parentPort, workerData } = require('node:worker_threads');
  const flag = new Int32Array(workerData.control);
  parentPort.postMessage('ready');
  Atomics.wait(flag, 0, 0);
  const hoard = [];
  for (;;) hoard.push(new Array(100_000).fill(hoard.length));
`;

/** Blocks the calling thread (no events run) for `ms`. */
const block = (ms: number) => Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);

describe('a Node worker that runs out of memory while the calling thread is blocked', () => {
  it('is seen stopped by hasStopped(), though nothing asked before it died', async () => {
    const control = new SharedArrayBuffer(4);
    let exited = false;
    let ready!: () => void;
    const isReady = new Promise<void>((resolve) => (ready = resolve));
    const handle = startNodeWorker({
      control,
      index: 0,
      name: 'doomed',
      resourceLimits: { maxOldGenerationSizeMb: 16, maxYoungGenerationSizeMb: 4 },
      workerUrl: new URL(`data:text/javascript,${encodeURIComponent(`import { createRequire } from 'node:module'; const require = createRequire(${JSON.stringify(import.meta.url)}); ${DOOMED}`)}`),
      onReady: () => ready(),
      onError: () => {},
      onExit: () => (exited = true),
    });
    await isReady; // and nothing reads the worker's liveness before it dies

    // From here on the thread stays blocked, as a sync call's does: the worker dies meanwhile
    // (tens of ms with a 16 MiB heap) and its `exit` event cannot run before the checks below.
    const flag = new Int32Array(control);
    Atomics.store(flag, 0, 1);
    Atomics.notify(flag, 0);
    block(1000);
    let stopped = false;
    for (let waited = 0; waited < 5000 && !stopped; waited += 20) {
      stopped = handle.hasStopped();
      if (!stopped) block(20);
    }
    expect(exited).toBe(false); // still blocked: only hasStopped() could have told
    expect(stopped).toBe(true);
    await handle.terminate();
  }, 20_000);
});
