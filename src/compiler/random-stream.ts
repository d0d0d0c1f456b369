/**
 * The random stream of `Math.random()` in kernels: the definition every target computes bit for bit.
 *
 * The generator is Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3",
 * SC 2011; Random123's `philox4x32_R(10, ctr, key)`), a counter-based generator: a draw is a pure
 * function of its coordinates, so a thread, a worker or a gpu invocation computes the draws of its
 * elements without any state shared with the others, and every target gives the same numbers.
 *
 * Draw `n` (0, 1, 2, … in the order the element's code runs them) of loop iteration `i` (the
 * element of a vectorize call, the row of a guvectorize call; the flat C-order index over the
 * call's loop shape) under the 64-bit key `k` (from the call's `seed`) is the block
 *
 *     [w0, w1, w2, w3] = philox4x32_10(ctr = [i mod 2^32, floor(i / 2^32), n, 0], key = [k mod 2^32, floor(k / 2^32)])
 *
 * and its value is, by the draw's type:
 * - float64: `((w0 >>> 5) · 2^26 + (w1 >>> 6)) · 2^-53`, the 53 top bits of w0:w1 (a multiple of
 *   2^-53 in [0, 1 − 2^-53]);
 * - float32 (`Math.fround(Math.random())`): `(w0 >>> 8) · 2^-24`, a multiple of 2^-24 in
 *   [0, 1 − 2^-24]: the float64 value truncated (not rounded: never 1) to 24 bits.
 *
 * The gpu has no float64: there a float64 draw is the float32 one, that is the cpu's value
 * truncated to 24 bits (docs/random.md).
 */
import type { Stmt, TypedKernel, Variable } from './ir.js';
import { forEachStmt } from './ir-walk.js';

/** Philox4x32's round multipliers and Weyl key increments (Random123's PHILOX_M4x32_0 …). */
export const PHILOX = { M0: 0xd2511f53, M1: 0xcd9e8d57, W0: 0x9e3779b9, W1: 0xbb67ae85, ROUNDS: 10 } as const;

/** The last block computed (one generator per thread: a draw reads its words right after). */
const block = new Uint32Array(4);

/** Philox4x32 of one counter block into {@link block}: no allocation, as kernels call it per draw. */
function philoxBlock(c0: number, c1: number, c2: number, c3: number, k0: number, k1: number, rounds: number): void {
  for (let r = 0; r < rounds; r++) {
    if (r > 0) {
      k0 = (k0 + PHILOX.W0) | 0;
      k1 = (k1 + PHILOX.W1) | 0;
    }
    const hi0 = mulHiBy(PHILOX.M0 & 0xffff, PHILOX.M0 >>> 16, c0), lo0 = Math.imul(PHILOX.M0, c0);
    const hi1 = mulHiBy(PHILOX.M1 & 0xffff, PHILOX.M1 >>> 16, c2), lo1 = Math.imul(PHILOX.M1, c2);
    c0 = hi1 ^ c1 ^ k0;
    c1 = lo1;
    c2 = hi0 ^ c3 ^ k1;
    c3 = lo0;
  }
  block[0] = c0;
  block[1] = c1;
  block[2] = c2;
  block[3] = c3;
}

/**
 * The high 32 bits (as int32 bits) of the 64-bit product of the uint32 a = a1 · 2^16 + a0 and b,
 * from 16-bit halves as the WGSL does: every partial product and sum stays exact, and there is no
 * double `%` (which V8 computes by a call).
 */
function mulHiBy(a0: number, a1: number, b: number): number {
  const b0 = b & 0xffff, b1 = b >>> 16;
  const p01 = a0 * b1, p10 = a1 * b0;
  const mid = ((a0 * b0) >>> 16) + (p01 & 0xffff) + (p10 & 0xffff);
  return (a1 * b1 + (p01 >>> 16) + (p10 >>> 16) + (mid >>> 16)) | 0;
}

/**
 * Philox4x32 with `rounds` rounds (10 for the kernels' stream) of one counter block.
 *
 * @param ctr - four uint32 words
 * @param key - two uint32 words
 * @param rounds - @default 10
 * @returns four uint32 words
 * @example philox4x32([0, 0, 0, 0], [0, 0]) // [0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8]
 */
export function philox4x32(ctr: readonly number[], key: readonly number[], rounds: number = PHILOX.ROUNDS): [number, number, number, number] {
  philoxBlock(ctr[0]! >>> 0, ctr[1]! >>> 0, ctr[2]! >>> 0, ctr[3]! >>> 0, key[0]! >>> 0, key[1]! >>> 0, rounds);
  return [block[0]!, block[1]!, block[2]!, block[3]!];
}

/** The block of draw `draw` of loop iteration `item` (an integer below 2^53) under the key (key0, key1). */
function streamBlock(key0: number, key1: number, item: number, draw: number): void {
  philoxBlock(item >>> 0, (item / 4294967296) >>> 0, draw >>> 0, 0, key0, key1, PHILOX.ROUNDS);
}

/**
 * The four words of draw `draw` of loop iteration `item` under a key: the raw stream (the
 * statistical tests read it).
 */
export function streamWords(key: StreamKey, item: number, draw: number): [number, number, number, number] {
  streamBlock(key[0], key[1], item, draw);
  return [block[0]!, block[1]!, block[2]!, block[3]!];
}

/** A float64 uniform in [0, 1) from a block's first two words (the module comment). */
export function float64Of(w0: number, w1: number): number {
  return ((w0 >>> 5) * 67108864 + (w1 >>> 6)) * 2 ** -53;
}

/** A float32 uniform in [0, 1) from a block's first word (the module comment). */
export function float32Of(w0: number): number {
  return (w0 >>> 8) * 2 ** -24;
}

/**
 * Draw `draw` of loop iteration `item` as a float64, as every target computes it (the JS engine
 * calls this one).
 *
 * @example drawFloat64(1, 0, 0, 0) // the first number of element 0 under seed 1
 */
export function drawFloat64(key0: number, key1: number, item: number, draw: number): number {
  streamBlock(key0, key1, item, draw);
  return float64Of(block[0]!, block[1]!);
}

/** Draw `draw` of loop iteration `item` as a float32, as every target computes it. */
export function drawFloat32(key0: number, key1: number, item: number, draw: number): number {
  streamBlock(key0, key1, item, draw);
  return float32Of(block[0]!);
}

/** A stream's key: the seed as two uint32 words, low first. */
export type StreamKey = readonly [number, number];

/**
 * Why a `seed` call option is not one, or undefined when it is: an integer from 0 to 2^53 − 1, or
 * a bigint from 0 to 2^64 − 1.
 */
export function seedProblem(seed: unknown): string | undefined {
  if (typeof seed === 'bigint') return seed >= 0n && seed < 2n ** 64n ? undefined : 'a bigint from 0n to 2n ** 64n - 1n';
  if (typeof seed === 'number' && Number.isSafeInteger(seed) && seed >= 0) return undefined;
  return 'an integer from 0 to Number.MAX_SAFE_INTEGER (or a bigint from 0n to 2n ** 64n - 1n)';
}

/**
 * The key of a checked `seed` (see {@link seedProblem}).
 *
 * @example keyOfSeed(2 ** 32 + 5) // [5, 1]
 */
export function keyOfSeed(seed: number | bigint): StreamKey {
  if (typeof seed === 'bigint') return [Number(seed & 0xffffffffn), Number(seed >> 32n)];
  return [seed >>> 0, (seed / 4294967296) >>> 0];
}

/** A fresh key for a call without `seed`: 64 bits from the platform's cryptographic generator. */
export function freshKey(): StreamKey {
  const words = globalThis.crypto.getRandomValues(new Uint32Array(2));
  return [words[0]!, words[1]!];
}

/** Whether a typed kernel draws random numbers (a `draw` statement in its body or a helper's). */
export function drawsRandom(kernel: TypedKernel): boolean {
  const has = (body: readonly Stmt[]) => {
    let found = false;
    forEachStmt(body, (s) => (found ||= s.kind === 'draw'));
    return found;
  };
  return has(kernel.body) || kernel.helpers.some((h) => has(h.body));
}

const withStream = new WeakMap<TypedKernel, TypedKernel>();

/**
 * The kernel with its random stream as three more uint32 scalar parameters after its `nin` inputs
 * (its `randomStream`: the key's low and high word, the first loop iteration's number): a call
 * passes them as scalar inputs there, so every target receives them the way it receives any
 * scalar argument, per call (the parallel target's workers included).
 *
 * @param kernel - a kernel that draws ({@link drawsRandom})
 * @param nin - the number of inputs the call's operands have before these (its outputs follow)
 * @returns the same kernel object for the same kernel (compiled code is cached by kernel)
 * @example withRandomStream(kernel, 1).params // [x, seed_lo, seed_hi, first_item]
 */
export function withRandomStream(kernel: TypedKernel, nin: number): TypedKernel {
  const known = withStream.get(kernel);
  if (known) return known;
  let nextId = 1 + Math.max(0, ...[...kernel.params, ...kernel.locals].map((v) => v.id));
  const word = (name: string): Variable => ({ id: nextId++, name, type: 'uint32' });
  const randomStream = { key: [word('seed_lo'), word('seed_hi')] as const, firstItem: word('first_item') };
  const params = [...kernel.params.slice(0, nin), ...randomStream.key, randomStream.firstItem, ...kernel.params.slice(nin)];
  const result: TypedKernel = { ...kernel, params, randomStream };
  withStream.set(kernel, result);
  return result;
}
