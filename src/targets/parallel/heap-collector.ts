/**
 * A full collection of a worker thread's heap, for the parallel pool's workers. Why: every result a
 * parallel call allocates is a `SharedArrayBuffer` of its own, which reaches each worker in a
 * message, and the worker's object for it keeps the memory alive until that worker's heap is
 * collected. A worker never returns to its event loop and allocates almost nothing, and V8 does not
 * count shared memory toward starting a collection, so without this it never collected: every
 * result stayed resident until the pool shut down, whatever the calling thread dropped.
 */
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

/**
 * Attempts at reading `gc`. `--expose-gc` is a process-wide V8 flag, turned on only while `gc` is
 * read: a worker starting at the same moment may turn it off between another's turning it on and
 * reading it. With one attempt, 15 of 160 workers started 8 at a time got no collector (2-core VM),
 * and their handles kept every result of the pool alive; with retries, none.
 */
const ATTEMPTS = 16;

/**
 * @returns this thread's `gc`, or undefined where it cannot be had (the pool then runs without
 *   collecting, as before). The flag is left as found: off, unless the process started with it.
 */
export function heapCollector(): (() => void) | undefined {
  const exposed = (globalThis as { gc?: () => void }).gc;
  if (exposed) return exposed;
  for (let attempt = 0; attempt < ATTEMPTS; attempt++) {
    try {
      setFlagsFromString('--expose-gc');
      try {
        return runInNewContext('gc') as () => void;
      } finally {
        setFlagsFromString('--no-expose-gc');
      }
    } catch {
      // Another thread turned the flag off before `gc` was read (ReferenceError): try again.
    }
  }
  return undefined;
}
