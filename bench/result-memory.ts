/**
 * How much memory dropped results of parallel calls hold (issue 20, item 4). A large output that a
 * parallel call allocates is a `SharedArrayBuffer` of its own (the workers write it in place), and
 * V8 does not count `SharedArrayBuffer` memory toward starting a garbage collection: results a
 * loop drops are reclaimed only when the heap collects for other reasons. This runs a loop of
 * awaited calls of ReLU on a float32 array, dropping each result, and prints the process's resident
 * memory and the array-buffer memory V8 holds every `--every` calls; then the same loop into a
 * given `out` (what the README advises in such a loop); then with a full collection on the calling
 * thread every `--every` calls (as a program's other allocations would bring), which frees dropped
 * results only where no worker still holds them (each worker collects its own heap once it has
 * released enough: worker.ts). Also the same for plain allocations without the library:
 * `new SharedArrayBuffer(bytes)` against `new ArrayBuffer(bytes)`, written once.
 *
 *   npx tsx bench/result-memory.ts [--size ELEMENTS] [--calls N] [--every K]
 *
 * Keep `size × calls × 4` bytes well within the machine's memory: a fresh result per call can all
 * stay resident.
 */
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { ready, shutdown, vectorize } from '../src/index.js';

const args = process.argv.slice(2);
const flag = (name: string) => (args.includes(name) ? args[args.indexOf(name) + 1] : undefined);
const size = Number(flag('--size') ?? 1 << 22);
const calls = Number(flag('--calls') ?? 120);
const every = Number(flag('--every') ?? 20);

const mib = (bytes: number) => `${(bytes / 2 ** 20).toFixed(0)} MiB`;
const memory = () => {
  const { rss, arrayBuffers } = process.memoryUsage();
  return `resident ${mib(rss)}, array buffers ${mib(arrayBuffers)}`;
};

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

async function loop(what: string, call: () => unknown, collect = false): Promise<void> {
  console.log(`\n${what}: ${calls} calls of ${size.toLocaleString('en-US')} float32 elements (${mib(size * 4)} each)`);
  let since = performance.now();
  for (let i = 1; i <= calls; i++) {
    await call();
    if (i % every === 0) {
      if (collect) gc();
      console.log(`  after ${i} calls: ${memory()}; ${((performance.now() - since) / every).toFixed(2)} ms a call`);
      since = performance.now();
    }
  }
}

const relu = vectorize(['float32(float32)'], { target: 'parallel' })((x: number) => (x > 0 ? x : 0));
await ready();
const x = Float32Array.from({ length: size }, (_, i) => Math.sin(i));
console.log(`Node ${process.version}; at start: ${memory()}`);
await loop('awaited parallel calls, each result dropped', () => relu(x));
const out = new Float32Array(size);
await loop('awaited parallel calls into a given `out`', () => relu(x, { out }));
await loop('awaited parallel calls, each result dropped, the calling thread collecting every few calls', () => relu(x), true);
await loop('`new SharedArrayBuffer` written once, dropped', () => new Uint8Array(new SharedArrayBuffer(size * 4)).fill(1));
await loop('`new ArrayBuffer` written once, dropped', () => new Uint8Array(new ArrayBuffer(size * 4)).fill(1));
await shutdown();
