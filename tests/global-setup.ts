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
 */
const WATCHDOG_MINUTES = 45;

export default function setup(): () => void {
  const keepAlive = setInterval(() => {}, 60_000);
  const watchdog = setTimeout(() => {
    console.error(`\nThe test run has been going for ${WATCHDOG_MINUTES} minutes, far longer than a healthy run: a test file never reported. Failing the run.`);
    process.exit(1);
  }, WATCHDOG_MINUTES * 60_000);
  return () => {
    clearInterval(keepAlive);
    clearTimeout(watchdog);
  };
}
