import { Worker } from 'node:worker_threads';
import { expect, it } from 'vitest';
import { sourceBootstrap } from '../../../src/platform/source-worker.js';

// `--expose-gc` is process-wide: workers starting together turn it on and off under each other. A
// worker left without a collector keeps every result of the pool alive (outputs.test.ts's memory
// test failed that way under load), so each must get one however many start at once.
it('gives every worker thread a heap collector when many start at the same moment', { timeout: 120_000 }, async () => {
  const bootstrap = sourceBootstrap(new URL('./fixtures/collector-worker.ts', import.meta.url));
  const got: boolean[] = [];
  for (let round = 0; round < 12; round++) {
    const workers = Array.from({ length: 8 }, () => new Worker(bootstrap, { eval: true }));
    got.push(...(await Promise.all(workers.map((w) => new Promise<boolean>((resolve, reject) => w.once('message', resolve).once('error', reject))))));
    await Promise.all(workers.map((w) => w.terminate()));
  }
  expect(got.filter((ok) => !ok).length).toBe(0);
  expect(got.length).toBe(96);
});
