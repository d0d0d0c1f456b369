/**
 * Drops given lines that native code writes to the process's standard error during one synchronous
 * call (Node, Linux). Why it exists: when Dawn (the `webgpu` package) first lists the GPUs, its
 * Vulkan backend clamps two limits that Mesa's lavapipe and AMD's drivers report as huge and says so
 * with `fprintf(stderr, …)` from native code (dawn/native/Limits.cpp, unconditionally: no toggle,
 * log level or adapter option turns it off), so every program on those drivers would print two
 * "artificially reduced" lines that are no concern of its user. See docs/gpu.md, "Dawn's warnings".
 *
 * How: file descriptor 2 is pointed at an unlinked temporary file for the duration of the call,
 * then back at the original stderr, and what the call wrote there is written to stderr less the
 * dropped lines (so a driver's real error still shows). Node has no `dup2`, so both switches are a
 * `close(2)` followed by an `open` that the kernel gives the lowest free descriptor, 2; the
 * descriptor is checked to be 2, and the switch is only made where reopening stderr by its
 * `/proc/self/fd` link gives back an equivalent file:
 *
 * - a terminal or another character device, or a pipe (a reopened one writes to the same place);
 * - a regular file opened for appending (`>> log`), or written at an offset that is its end (`2> log`)
 *   and shared with no other descriptor of the process (reopened, it appends there); not a file
 *   that stdout writes to as well (`> log 2>&1`: a reopened stderr would not share stdout's offset,
 *   and one would overwrite the other), nor a socket (it cannot be reopened): there the lines stay;
 * - and only while no earlier write to `process.stderr` is still pending (its stream would wait on
 *   the descriptor being replaced), and no file or name lookup is in progress on libuv's threads.
 *
 * The one risk left: a thread this module cannot see (a worker, a native addon's) opening a file in
 * the microseconds between `close(2)` and the `open` after it would be given fd 2. The switch is made
 * once per process (Dawn lists the GPUs once), around one synchronous call.
 */
import { closeSync, constants, fstatSync, openSync, readFileSync, readSync, unlinkSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import { isMainThread } from 'node:worker_threads';

const STDERR = 2;

/** Dawn's two lines (dawn/native/Limits.cpp, `NormalizeLimits`), exactly. */
export const DAWN_LIMIT_WARNING =
  /^Warning: maxDynamic(?:Uniform|Storage)BuffersPerPipelineLayout artificially reduced from \d+ to \d+ to fit dynamic offset allocation limit\.\r?$/;

/**
 * Runs `call` with the lines that match `drop` kept off stderr (whole lines written to fd 2 by any
 * code, native included, while it runs); everything else it writes to stderr is written after it
 * returns or throws, in order. Where stderr cannot be switched safely (see the module comment) the
 * call runs as is.
 *
 * @param drop - the lines to drop (matched without their newline)
 * @param call - a synchronous call
 * @returns what `call` returns
 * @example
 * const promise = withStderrLinesDropped(DAWN_LIMIT_WARNING, () => gpu.requestAdapter());
 */
export function withStderrLinesDropped<T>(drop: RegExp, call: () => T): T {
  const diversion = divertStderr();
  if (!diversion) return call();
  try {
    return call();
  } finally {
    diversion.restore(drop);
  }
}

interface Diversion {
  restore(drop: RegExp): void;
}

/** Points fd 2 at a temporary file; undefined where that cannot be done safely. */
function divertStderr(): Diversion | undefined {
  // Not from a worker thread (a gpu worker's Dawn instance lists the GPUs too): fd 2 is the whole
  // process's, and the main thread may be writing to it or opening files meanwhile.
  if (process.platform !== 'linux' || !isMainThread || !canReopenStderr()) return undefined;
  let original: number | undefined;
  let capture: number | undefined;
  try {
    // The original stderr, reopened: the switch back opens this one's link onto fd 2.
    original = openSync(`/proc/self/fd/${STDERR}`, reopenFlags());
    const path = join(tmpdir(), `ufunc-stderr-${process.pid}-${randomUUID()}`);
    capture = openSync(path, constants.O_RDWR | constants.O_CREAT | constants.O_EXCL, 0o600);
    unlinkSync(path);
  } catch {
    if (original !== undefined) closeSync(original);
    if (capture !== undefined) closeSync(capture);
    return undefined;
  }
  const saved = original;
  const captured = capture;
  closeSync(STDERR);
  const diverted = openSync(`/proc/self/fd/${captured}`, constants.O_WRONLY | constants.O_APPEND);
  if (diverted !== STDERR) {
    // Another thread opened a file in the microseconds between the two calls and was given fd 2:
    // JavaScript cannot take it back (the race the checks of canReopenStderr make unlikely).
    closeSync(diverted);
    closeSync(captured);
    closeSync(saved);
    return undefined;
  }
  return {
    restore(drop: RegExp): void {
      closeSync(STDERR);
      const restored = openSync(`/proc/self/fd/${saved}`, reopenFlags(saved));
      closeSync(saved);
      if (restored !== STDERR) closeSync(restored);
      const written = readAll(captured);
      closeSync(captured);
      const kept = written
        .split(/(?<=\n)/)
        .filter((line) => !drop.test(line.endsWith('\n') ? line.slice(0, -1) : line))
        .join('');
      if (kept) writeSync(STDERR, kept);
    },
  };
}

/** Whether stderr is a file that reopening by its link gives back as it was, with nothing pending on it. */
function canReopenStderr(): boolean {
  try {
    // fds 0 and 1 open: an `open` after `close(2)` lands on 2.
    fstatSync(0);
    fstatSync(1);
    const stat = fstatSync(STDERR);
    if (process.stderr.writableLength > 0) return false;
    // Files being opened on libuv's threads right now (fs, DNS): one of them would be given fd 2
    // between the close and the open. (Other threads of the program are not visible from here.)
    if (process.getActiveResourcesInfo().some((kind) => /^(?:FSReq|GetAddrInfo|GetNameInfo)/.test(kind))) return false;
    if (stat.isCharacterDevice() || stat.isFIFO()) return true;
    if (!stat.isFile()) return false;
    const { flags, position } = descriptorInfo(STDERR);
    if ((flags & constants.O_APPEND) !== 0) return true;
    // Written at an offset: reopened for appending it writes at the same place only while the
    // offset is the end and no other descriptor of this process (stdout, `2>&1`) shares the file.
    const stdout = fstatSync(1);
    return position === stat.size && !(stdout.dev === stat.dev && stdout.ino === stat.ino);
  } catch {
    return false;
  }
}

/** The flags to reopen stderr with: write-only, appending to a regular file, never a controlling terminal. */
function reopenFlags(fd: number = STDERR): number {
  return constants.O_WRONLY | constants.O_NOCTTY | (fstatSync(fd).isFile() ? constants.O_APPEND : 0);
}

/** A descriptor's open flags and offset, from /proc/self/fdinfo (Node has no `fcntl` or `lseek`). */
function descriptorInfo(fd: number): { flags: number; position: number } {
  const info = readFileSync(`/proc/self/fdinfo/${fd}`, 'utf8');
  const flags = /^flags:\s*([0-7]+)$/m.exec(info)?.[1];
  const position = /^pos:\s*(\d+)$/m.exec(info)?.[1];
  return { flags: flags === undefined ? 0 : parseInt(flags, 8), position: position === undefined ? -1 : Number(position) };
}

function readAll(fd: number): string {
  const chunks: Buffer[] = [];
  let position = 0;
  for (;;) {
    const chunk = Buffer.alloc(64 * 1024);
    const n = readSync(fd, chunk, 0, chunk.length, position);
    if (n === 0) break;
    chunks.push(chunk.subarray(0, n));
    position += n;
  }
  return Buffer.concat(chunks).toString('utf8');
}
