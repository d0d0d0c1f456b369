#!/usr/bin/env node
/**
 * Runs a command with its standard error passed through, less Dawn's two "artificially reduced"
 * lines. Usage: `node scripts/filter-dawn-warnings.mjs COMMAND [ARGS…]` (how `npm run demo` and
 * `npm run bench` start).
 *
 * Why a second process: when Dawn (the `webgpu` package) first lists the GPUs, its Vulkan backend
 * clamps two limits that Mesa's lavapipe and AMD's drivers report as huge, and says so with a
 * `fprintf(stderr, …)` from native code (dawn/native/Limits.cpp, unconditionally; no toggle,
 * flag or log level turns it off). JavaScript in the same process cannot intercept a native write to
 * fd 2, and swapping fd 2 from Node (close it, open /dev/null so it lands on 2) races with every
 * other thread that opens files — one of them could end up writing the app's stderr into its
 * file. Filtering the child's stderr is the robust way; the lines are harmless (WebGPU's own
 * minimum for both limits is what Dawn keeps) and this library never needs more.
 *
 * Only whole lines that match exactly are dropped; everything else, partial lines included, goes
 * through in order. Exit status and signals are the command's.
 */
import { spawn } from 'node:child_process';

/** The exact lines Dawn prints (see dawn/native/Limits.cpp). */
export const DAWN_LIMIT_WARNING = /^Warning: maxDynamic(?:Uniform|Storage)BuffersPerPipelineLayout artificially reduced from \d+ to \d+ to fit dynamic offset allocation limit\.\r?$/;

const [command, ...args] = process.argv.slice(2);
if (!command) {
  process.stderr.write('usage: node scripts/filter-dawn-warnings.mjs COMMAND [ARGS…]\n');
  process.exit(2);
}

const child = spawn(command, args, { stdio: ['inherit', 'inherit', 'pipe'] });
// The start of the current line, held back while it may still become one of Dawn's lines (so a
// partial line such as a prompt is written as soon as it cannot be one).
let held = '';
// The current line is not Dawn's: the rest of it goes through as it comes.
let passing = false;
const PREFIX = 'Warning: maxDynamic';
const mayBeDawns = (start) => PREFIX.startsWith(start) || start.startsWith(PREFIX);
child.stderr.setEncoding('utf8');
child.stderr.on('data', (chunk) => {
  let out = '';
  let start = 0;
  for (;;) {
    const newline = chunk.indexOf('\n', start);
    const piece = chunk.slice(start, newline === -1 ? undefined : newline + 1);
    if (passing) {
      out += piece;
    } else {
      held += piece;
      if (newline !== -1) {
        if (!DAWN_LIMIT_WARNING.test(held.slice(0, -1))) out += held;
        held = '';
      } else if (!mayBeDawns(held)) {
        out += held;
        held = '';
        passing = true;
      }
    }
    if (newline === -1) break;
    passing = false;
    start = newline + 1;
  }
  if (out) process.stderr.write(out);
});
child.stderr.on('end', () => {
  if (held && !DAWN_LIMIT_WARNING.test(held)) process.stderr.write(held);
});
// Ctrl-C reaches the whole process group; a signal sent to this process alone goes on to the command.
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) process.on(signal, () => child.kill(signal));
child.on('error', (error) => {
  process.stderr.write(`filter-dawn-warnings: could not start \`${command}\`: ${error.message}\n`);
  process.exit(127);
});
child.on('close', (code, signal) => {
  if (signal) {
    process.removeAllListeners(signal);
    process.kill(process.pid, signal);
  } else {
    process.exit(code ?? 1);
  }
});
