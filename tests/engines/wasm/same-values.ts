/**
 * Bit-identity checks for the Wasm engine's tests: the Wasm and JS engines must give the same
 * value in every element — `Object.is`, so −0 differs from 0 — with any NaN equal to any NaN.
 */
import { expect } from 'vitest';

/** Whether two results are the same value (`Object.is`), counting every NaN as the same. */
export const same = (a: unknown, b: unknown): boolean => Object.is(a, b) || (Number.isNaN(a) && Number.isNaN(b));

/** Fails at the first element where the Wasm engine's result `a` differs from the JS engine's `b`. */
export function expectSameArrays(a: ArrayLike<number>, b: ArrayLike<number>): void {
  expect(a.length).toBe(b.length);
  for (let i = 0; i < a.length; i++) {
    if (!same(a[i], b[i])) expect.fail(`element ${i}: wasm ${a[i]} vs js ${b[i]}`);
  }
}
