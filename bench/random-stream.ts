/**
 * Writes the kernels' random stream (src/compiler/random-stream.ts) to stdout as raw 32-bit
 * little-endian words, for a statistical test battery that reads raw words from stdin:
 *
 *     npx tsx bench/random-stream.ts --seed 20261126 | dieharder -g 200 -a
 *
 * The words are those kernels turn into floats, in the order of the loop: for each loop
 * iteration i = 0, 1, 2, …, for each of its draws n < D (`--draws`, default 1), the words w0 and w1
 * of Philox4x32-10 block (i, n) (a float64 draw reads both; a float32 draw reads w0). With
 * `--words 4` all four words of each block are written. It runs until the reader closes the pipe
 * (or `--items N` iterations).
 */
import { keyOfSeed, seedProblem, streamWords } from '../src/compiler/random-stream.js';

function option(name: string, fallback: string): string {
  const at = process.argv.indexOf(`--${name}`);
  return at >= 0 && process.argv[at + 1] !== undefined ? process.argv[at + 1]! : fallback;
}

const seedText = option('seed', '20261126');
const seed = /^\d+$/.test(seedText) && BigInt(seedText) > BigInt(Number.MAX_SAFE_INTEGER) ? BigInt(seedText) : Number(seedText);
const problem = seedProblem(seed);
if (problem) throw new Error(`--seed must be ${problem}, found ${seedText}`);
const key = keyOfSeed(seed);
const draws = Number(option('draws', '1'));
const wordsPerBlock = Number(option('words', '2'));
const items = Number(option('items', 'Infinity'));
if (!(draws >= 1 && Number.isInteger(draws))) throw new Error(`--draws must be a positive integer, found ${draws}`);
if (wordsPerBlock !== 2 && wordsPerBlock !== 4) throw new Error(`--words must be 2 or 4, found ${wordsPerBlock}`);

const CHUNK_WORDS = 1 << 16;
let item = 0;
let draw = 0;
let closed = false;
process.stdout.on('error', () => {
  closed = true; // the reader has read enough (EPIPE)
});

function fill(): Uint32Array | undefined {
  if (item >= items) return undefined;
  const words = new Uint32Array(CHUNK_WORDS);
  let k = 0;
  while (k < CHUNK_WORDS && item < items) {
    const block = streamWords(key, item, draw);
    for (let w = 0; w < wordsPerBlock; w++) words[k++] = block[w]!;
    if (++draw === draws) {
      draw = 0;
      item++;
    }
  }
  return k === CHUNK_WORDS ? words : words.subarray(0, k);
}

function pump(): void {
  while (!closed) {
    const words = fill();
    if (!words) {
      process.stdout.end();
      return;
    }
    // Raw bytes in the machine's order: little-endian on every platform Node runs on here.
    if (!process.stdout.write(new Uint8Array(words.buffer, words.byteOffset, words.byteLength))) {
      process.stdout.once('drain', pump);
      return;
    }
  }
}
pump();
