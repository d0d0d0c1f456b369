/**
 * The kernels' random stream (compiler/random-stream.ts): Philox4x32 against Random123's published
 * known-answer vectors, and the mapping of words to floats.
 */
import { describe, expect, it } from 'vitest';
import {
  drawFloat32, drawFloat64, float32Of, float64Of, keyOfSeed, philox4x32, seedProblem, streamWords,
} from '../../src/compiler/random-stream.js';

/**
 * Random123 1.14's `examples/kat_vectors`, the philox4x32 lines: rounds, counter (4 words),
 * key (2 words), expected output (4 words).
 */
const KAT_VECTORS = `
philox4x32 7 00000000 00000000 00000000 00000000 00000000 00000000   5f6fb709 0d893f64 4f121f81 4f730a48
philox4x32 7 ffffffff ffffffff ffffffff ffffffff ffffffff ffffffff   5207ddc2 45165e59 4d8ee751 8c52f662
philox4x32 7 243f6a88 85a308d3 13198a2e 03707344 a4093822 299f31d0   4dfccaba 190a87f0 c47362ba b6b5242a
philox4x32 10 00000000 00000000 00000000 00000000 00000000 00000000   6627e8d5 e169c58d bc57ac4c 9b00dbd8
philox4x32 10 ffffffff ffffffff ffffffff ffffffff ffffffff ffffffff   408f276d 41c83b0e a20bc7c6 6d5451fd
philox4x32 10 243f6a88 85a308d3 13198a2e 03707344 a4093822 299f31d0   d16cfe09 94fdcceb 5001e420 24126ea1
`.trim().split('\n').map((line) => {
  const [, rounds, ...words] = line.split(/\s+/);
  const w = words.map((x) => parseInt(x, 16));
  return { rounds: Number(rounds), ctr: w.slice(0, 4), key: w.slice(4, 6), expected: w.slice(6, 10), line };
});

describe('Philox4x32', () => {
  it.each(KAT_VECTORS)('matches Random123: $line', ({ rounds, ctr, key, expected }) => {
    expect(philox4x32(ctr, key, rounds)).toEqual(expected);
  });

  it('is the stream: counter (item lo, item hi, draw, 0), key (seed lo, seed hi)', () => {
    const item = 2 ** 40 + 12345;
    expect(streamWords(keyOfSeed(2 ** 33 + 7), item, 3)).toEqual(philox4x32([12345, 256, 3, 0], [7, 2]));
  });
});

describe('floats from words', () => {
  it('float64: the 53 top bits of w0:w1; float32: the 24 top bits of w0', () => {
    expect(float64Of(0, 0)).toBe(0);
    expect(float64Of(0xffffffff, 0xffffffff)).toBe(1 - 2 ** -53);
    expect(float64Of(0x80000000, 0)).toBe(0.5);
    expect(float64Of(0, 0x40)).toBe(2 ** -53);
    expect(float32Of(0xffffffff)).toBe(1 - 2 ** -24);
    expect(Math.fround(float32Of(0xffffffff))).toBe(1 - 2 ** -24);
    expect(float32Of(0x100)).toBe(2 ** -24);
  });

  it('the float32 draw is the float64 draw truncated to 24 bits (what the gpu computes for a float64 draw)', () => {
    for (let i = 0; i < 1000; i++) {
      const d = drawFloat64(5, 6, i, i % 7);
      expect(drawFloat32(5, 6, i, i % 7)).toBe(Math.floor(d * 2 ** 24) / 2 ** 24);
    }
  });
});

describe('seeds', () => {
  it('takes integers from 0 to 2^53 − 1 and bigints from 0 to 2^64 − 1', () => {
    expect(keyOfSeed(0)).toEqual([0, 0]);
    expect(keyOfSeed(Number.MAX_SAFE_INTEGER)).toEqual([0xffffffff, 0x1fffff]);
    expect(keyOfSeed(2n ** 64n - 1n)).toEqual([0xffffffff, 0xffffffff]);
    expect(keyOfSeed(42n)).toEqual(keyOfSeed(42));
    for (const ok of [0, 1, Number.MAX_SAFE_INTEGER, 0n, 2n ** 64n - 1n]) expect(seedProblem(ok)).toBeUndefined();
    for (const bad of [-1, 0.5, 2 ** 53, NaN, Infinity, '1', null, -1n, 2n ** 64n]) expect(seedProblem(bad)).toBeDefined();
  });
});
