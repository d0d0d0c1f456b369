/**
 * Every benchmarked output is compared with the hand-written loop's, so that a fast wrong answer
 * never reaches a report as a win.
 */

export interface Tolerance {
  readonly relative: number;
  readonly absolute: number;
}

/**
 * Rounding differs between contenders (float32 rounding per operation or per store, the GPU's
 * `exp` and `sqrt` within their ULP bounds, the Hermite recurrence compounding over 16 steps), so
 * float32 results are held to 1e-4; float64 results must agree almost exactly.
 */
export function toleranceFor(dtype: 'float32' | 'float64'): Tolerance {
  return dtype === 'float32' ? { relative: 1e-4, absolute: 1e-4 } : { relative: 1e-12, absolute: 1e-12 };
}

/**
 * @param actual the contender's output
 * @param expected the reference output, same length
 * @param tolerance |actual − expected| ≤ absolute + relative·|expected| everywhere
 * @returns 'ok', or how many elements differ and the first of them
 * @example
 * compareOutputs(zs, reference, toleranceFor('float32')); // 'ok'
 */
export function compareOutputs(actual: ArrayLike<number>, expected: ArrayLike<number>, tolerance: Tolerance): string {
  if (actual.length !== expected.length) return `WRONG: length ${actual.length}, expected ${expected.length}`;
  let wrong = 0;
  let first = -1;
  for (let i = 0; i < expected.length; i++) {
    const allowed = tolerance.absolute + tolerance.relative * Math.abs(expected[i]);
    // written as !(… <= …) so that NaN where a number was expected counts as wrong
    if (!(Math.abs(actual[i] - expected[i]) <= allowed)) {
      if (first < 0) first = i;
      wrong++;
    }
  }
  if (wrong === 0) return 'ok';
  return `WRONG at ${wrong} of ${expected.length}, first [${first}]: ${actual[first]}, expected ${expected[first]}`;
}
