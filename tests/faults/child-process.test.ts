/**
 * The fault scenarios of fixtures/fault-scenarios.ts, each target in a child process with a time
 * limit: a call that hangs fails this test (naming the scenario it hung in) instead of hanging the
 * suite. Endless kernels stopped by `timeout`, `signal` and `shutdown()`, a pool torn down and
 * workers exiting with calls in flight, a device destroyed mid-call, concurrent calls, calls
 * dropped and garbage-collected while in flight, a retired pool collected — and every target still
 * answers the next call.
 */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { TARGETS } from '../targets.js';

const root = fileURLToPath(new URL('../../', import.meta.url));
const script = fileURLToPath(new URL('./fixtures/fault-scenarios.ts', import.meta.url));
const LIMIT_MS = 150_000;

interface Report {
  readonly outcomes: Record<string, string>;
  readonly done: boolean;
  readonly lastStarted?: string;
  readonly exitCode: number | null;
  readonly stderr: string;
}

/** Runs the scenarios of one target; ends the child once it reports `done` (or at the limit). */
function runScenarios(target: string): Promise<Report> {
  return new Promise((resolve) => {
    // Node itself with tsx's loader, not tsx's CLI: the CLI runs the script in a process of its own,
    // which SIGKILL on the CLI would leave running (an endless kernel spinning until the machine stops).
    const child = spawn(process.execPath, ['--import', 'tsx', script, target], { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] });
    const outcomes: Record<string, string> = {};
    let done = false;
    let lastStarted: string | undefined;
    let stderr = '';
    let pending = '';
    const timer = setTimeout(() => child.kill('SIGKILL'), LIMIT_MS);
    child.stderr.on('data', (d) => (stderr += d));
    child.stdout.on('data', (d: Buffer) => {
      pending += d.toString();
      const lines = pending.split('\n');
      pending = lines.pop()!;
      for (const line of lines) {
        if (!line.startsWith('{')) continue;
        const entry = JSON.parse(line) as { start?: string; scenario?: string; outcome?: string; done?: boolean };
        if (entry.start) lastStarted = entry.start;
        if (entry.scenario) outcomes[entry.scenario] = entry.outcome!;
        if (entry.done) {
          done = true;
          // The gpu leaves an endless kernel on an abandoned device (lavapipe cannot preempt it).
          setTimeout(() => child.kill('SIGKILL'), target === 'gpu' ? 0 : 10_000);
        }
      }
    });
    child.on('exit', (exitCode) => {
      clearTimeout(timer);
      resolve({ outcomes, done, lastStarted, exitCode, stderr });
    });
  });
}

/** The scenarios every target runs first, and their outcomes. */
const EVERY_TARGET: Record<string, string> = {
    'signal aborted before the call': 'CallAbortedError',
    'concurrent calls': 'ok:12',
    'calls dropped and garbage-collected while in flight': 'ok:8',
    'call after collections': 'ok:14',
    'detached input': 'ArgumentError',
    'result too large for any typed array': 'ArgumentError',
    'a native function as a helper': 'KernelCompileError',
    'x !== y with NaN': 'ok:1,0',
    'an integer constant past int32, computed exactly': 'ok:-1,4',
    'a helper named main': 'ok:2',
    'uint8 per-row output at an odd byte offset': 'ok:2,3,4',
};

const EXPECTED: Record<string, Record<string, string>> = {
  cpu: {
    ...EVERY_TARGET,
    'timeout passed during a kernel': 'CallTimeoutError',
    // The cpu runs the kernel before the call returns its promise: an abort after that is too late.
    'signal aborted during a kernel': 'ok:20000000',
  },
  parallel: {
    ...EVERY_TARGET,
    'endless kernel with a timeout': 'CallTimeoutError',
    'call after a timeout': 'ok:6',
    'endless kernel aborted by a signal': 'CallAbortedError',
    'call after an abort': 'ok:8',
    'shutdown with an endless kernel in flight': 'ShutdownError',
    'call after shutdown': 'ok:10',
    'worker exits during a call': 'WorkerError',
    'call after a worker exit': 'ok:2,2,2',
    'pool torn down with a call in flight': 'ShutdownError',
    'call after the teardown': 'ok:2,2,2',
    'old pool collected, then a call': 'ok:2,2,2',
  },
  gpu: {
    ...EVERY_TARGET,
    'device destroyed 0 ms into a call': 'DeviceError',
    'device destroyed 3 ms into a call': 'DeviceError',
    'device destroyed 10 ms into a call': 'DeviceError',
    'device destroyed 30 ms into a call': 'DeviceError',
    'call after device loss': 'ok:12',
    'slow kernel aborted by a signal': 'CallAbortedError',
    'call after an abort': 'ok:8',
    'shutdown with a slow kernel in flight': 'ShutdownError',
    'call after shutdown': 'ok:10',
    'endless kernel with a timeout': 'CallTimeoutError',
    'call after a timeout': 'ok:6',
  },
};

describe.each(TARGETS)('faults on %s, in a child process', (target) => {
  it('every call settles with the expected outcome, and the next call works', async () => {
    const report = await runScenarios(target);
    expect(report.done, `the child hung in "${report.lastStarted}" (stderr: ${report.stderr.slice(-2000)})`).toBe(true);
    const expected = { ...EXPECTED[target]! };
    // A device destroyed late in a call may find the call already done: then it simply succeeded.
    for (const [name, outcome] of Object.entries(report.outcomes)) {
      if (name.startsWith('device destroyed') && outcome === 'ok:1') expected[name] = 'ok:1';
    }
    expect(report.outcomes).toEqual(expected);
    if (target !== 'gpu') expect(report.exitCode, 'the child exits by itself once shut down').toBe(0);
  }, LIMIT_MS + 10_000);
});
