/**
 * Writes `Math.random()` as kernels return it through the public API to stdout, as raw 32-bit
 * little-endian words, for a statistical test battery that reads words from stdin (TestU01 through
 * scripts/testu01-stdin.c, PractRand's `RNG_test stdin32`; scripts/random-battery.sh runs them):
 *
 *     npx tsx bench/random-kernel-stream.ts --seed 20261126 --target cpu | RNG_test stdin32
 *
 * The kernel is `vectorize(['float64(float64)'])((_x) => Math.random())`: one float64 draw per
 * element, the pattern of a Monte Carlo kernel. Call c (0, 1, 2, …) of the stream fills
 * `--elements` elements (2^22 by default) with `{ seed: seed + c }`: a call numbers its loop
 * iterations from 0, so a stream longer than one call is what a user gets by calling again with
 * the next seed (the test then also covers neighbouring keys, not only neighbouring counters).
 *
 * A draw x is a multiple of 2^-53, x · 2^53 = m is its 53 random bits (docs/random.md: the top 27
 * bits of Philox word w0, then the top 26 of w1). Each draw gives one word:
 * - `--bits high` (default): floor(x · 2^32), the 32 most significant bits of m, the bits that
 *   decide the value a user sees (w0's top 27 bits, then w1's top 5);
 * - `--bits low`: m mod 2^32, its 32 least significant bits (w0's bits 5–10, then w1's top 26):
 *   the bits a weak generator gets wrong first, which `high` tests only in part.
 * Both are 32 uniform bits if the generator is good, and both go through the kernel, the call
 * and the float conversion as a user's numbers do: a bias or correlation there shows up here too.
 *
 * It runs until the reader closes the pipe, or `--calls N` calls.
 */
import { shutdown, vectorize } from '../src/index.js';

function option(name: string, fallback: string): string {
  const at = process.argv.indexOf(`--${name}`);
  return at >= 0 && process.argv[at + 1] !== undefined ? process.argv[at + 1]! : fallback;
}

const seed = Number(option('seed', '20261126'));
const target = option('target', 'cpu') as 'cpu' | 'parallel';
const elements = Number(option('elements', String(1 << 22)));
const calls = Number(option('calls', 'Infinity'));
const bits = option('bits', 'high');
if (!Number.isSafeInteger(seed) || seed < 0) throw new Error(`--seed must be an integer from 0 to 2^53 - 1, found ${option('seed', '')}`);
if (target !== 'cpu' && target !== 'parallel') throw new Error(`--target must be cpu or parallel, found ${target}`);
if (!(Number.isInteger(elements) && elements >= 1)) throw new Error(`--elements must be a positive integer, found ${elements}`);
if (bits !== 'high' && bits !== 'low') throw new Error(`--bits must be high or low, found ${bits}`);

const uniform = vectorize(['float64(float64)'], { target })((_x: number) => Math.random());
const x = new Float64Array(elements);
const out = new Float64Array(elements);
const words = new Uint32Array(elements);

let closed = false;
process.stdout.on('error', () => {
  closed = true; // the reader has read enough (EPIPE)
});

/** One word per draw, as the module comment says. */
function toWords(draws: Float64Array): void {
  if (bits === 'high') for (let i = 0; i < draws.length; i++) words[i] = Math.floor(draws[i]! * 4294967296);
  else
    for (let i = 0; i < draws.length; i++) {
      const m = draws[i]! * 9007199254740992; // 2^53: exact, an integer below 2^53
      words[i] = m - Math.floor(m / 4294967296) * 4294967296;
    }
}

/** Waits until stdout has room again (or the reader has gone). */
function drained(): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      process.stdout.off('drain', done).off('error', done);
      resolve();
    };
    process.stdout.once('drain', done).once('error', done);
  });
}

for (let c = 0; c < calls && !closed; c++) {
  await uniform(x, { seed: seed + c, out });
  toWords(out);
  // Raw bytes in the machine's order: little-endian on every platform Node runs on here (a copy:
  // `words` is filled again while the pipe drains; waiting for it bounds the memory).
  if (!process.stdout.write(new Uint8Array(words.buffer).slice())) await drained();
}
process.stdout.end();
await shutdown();
