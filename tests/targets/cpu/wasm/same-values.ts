/**
 * Bit-identity checks for the Wasm engine's tests: the Wasm and JS engines must give the same
 * value in every element — `Object.is`, so −0 differs from 0 — with any NaN equal to any NaN.
 */
import { expect } from 'vitest';
import { __testing as blockTesting } from '../../../../src/targets/cpu/wasm/block-staging.js';
import { setEngineMode } from '../../../../src/targets/cpu/wasm/index.js';

/** Whether two results are the same value (`Object.is`), counting every NaN as the same. */
export const same = (a: unknown, b: unknown): boolean => Object.is(a, b) || (Number.isNaN(a) && Number.isNaN(b));

/** Fails at the first element where the Wasm engine's result `a` differs from the JS engine's `b`. */
export function expectSameArrays(a: ArrayLike<number>, b: ArrayLike<number>): void {
  expect(a.length).toBe(b.length);
  for (let i = 0; i < a.length; i++) {
    if (!same(a[i], b[i])) expect.fail(`element ${i}: wasm ${a[i]} vs js ${b[i]}`);
  }
}

/**
 * Block sizes of the staging of foreign arrays (block-staging.ts) that the tests' Wasm runs cycle
 * through: 1 byte (one loop index per block), a few indices, and the default (one block for
 * these small arrays), so every property runs calls cut into many blocks as well as whole.
 */
const BLOCK_BYTES = [1, 40, 256, undefined] as const;
let nextBlock = 0;

/** Sets the next block size of the cycle; call before each Wasm run. */
export function cycleBlockBytes(): void {
  blockTesting.setBlockBytes(BLOCK_BYTES[nextBlock++ % BLOCK_BYTES.length]);
}

/**
 * Runs `f` on the Wasm engine, then on the JS engine, and returns both results (a thrown error as
 * `Class: message`, so errors compare too). The Wasm run stages foreign arrays in blocks of
 * `staging.blockBytes` (undefined: the library's default), or of the next size of the cycle above
 * when `staging` is omitted; the JS run is the reference.
 */
export function wasmAndJs<T>(f: () => T, staging?: { blockBytes: number | undefined }): [T | string, T | string] {
  const run = () => {
    try {
      return f();
    } catch (e) {
      return `${(e as Error).constructor.name}: ${(e as Error).message}`;
    }
  };
  setEngineMode('wasm');
  if (staging) blockTesting.setBlockBytes(staging.blockBytes);
  else cycleBlockBytes();
  const w = run();
  blockTesting.setBlockBytes(undefined);
  setEngineMode('js');
  return [w, run()];
}
