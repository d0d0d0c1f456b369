/**
 * Runs in vitest's main process, around the whole run.
 *
 * Keep-alive: with `pool: 'forks'`, the main process is kept running only by tinypool's handles,
 * which it unreferences whenever it thinks a worker is idle. Under heavy load (several suites on
 * two cores) a run has ended with exit code 0 and no summary, the remaining test files never
 * reported: the main process's event loop ran empty while test files were still to run. A timer
 * of our own keeps it running until vitest's teardown.
 *
 * Watchdog: if the run is still going long after any healthy run ends, something waits for a
 * test file that will never report; fail loudly rather than hang CI.
 *
 * Dawn's lines: a test file's process has a socket for stderr (tinypool's pipe), which the library
 * cannot switch around the call that prints Dawn's two "artificially reduced" lines
 * (src/platform/native-stderr.ts); tinypool writes what it reads to this process's stderr, so they
 * are dropped here, whole lines only.
 */
import { DAWN_LIMIT_WARNING } from '../src/platform/native-stderr.js';

const WATCHDOG_MINUTES = 45;
// The same lines, newline included, wherever they start a line of a chunk.
const DAWN_LINES = new RegExp(DAWN_LIMIT_WARNING.source.replace(/\$$/, '\n'), 'gm');

/** Makes process.stderr drop Dawn's lines; returns the undo. */
function dropDawnLines(): () => void {
  const write = process.stderr.write;
  process.stderr.write = function (this: typeof process.stderr, chunk: unknown, ...rest: unknown[]) {
    if (typeof chunk === 'string' || Buffer.isBuffer(chunk)) {
      const text = chunk.toString();
      if (text.includes('artificially reduced')) {
        const kept = text.replace(DAWN_LINES, '');
        if (kept.length === 0) {
          const callback = rest.find((r) => typeof r === 'function') as (() => void) | undefined;
          callback?.();
          return true;
        }
        chunk = kept;
      }
    }
    return (write as (...args: unknown[]) => boolean).call(this, chunk, ...rest);
  } as typeof process.stderr.write;
  return () => {
    process.stderr.write = write;
  };
}

export default function setup(): () => void {
  const restoreStderr = dropDawnLines();
  const keepAlive = setInterval(() => {}, 60_000);
  const watchdog = setTimeout(() => {
    console.error(`\nThe test run has been going for ${WATCHDOG_MINUTES} minutes, far longer than a healthy run: a test file never reported. Failing the run.`);
    process.exit(1);
  }, WATCHDOG_MINUTES * 60_000);
  return () => {
    clearInterval(keepAlive);
    clearTimeout(watchdog);
    restoreStderr();
  };
}
