/**
 * Kernels rewritten by tools: Istanbul's coverage counters (Jest's default coverage) are recognised
 * and refused with what to do. The kernel below is what Istanbul makes of `(a, b) => a * b + 1`
 * (its counters `cov_<hash>().f[…]++` and `.s[…]++`), written out here because the instrumenter is
 * not a dependency of this project; minified bundles are tested for real in tests/bundle.
 */
import { describe, expect, it } from 'vitest';
import { KernelCompileError, vectorize } from '../../src/index.js';

const instrumented = new Function(`return (a, b) => {
  cov_1xv7984owx().f[0]++;
  cov_1xv7984owx().s[1]++;
  return a * b + 1;
}`)() as (a: number, b: number) => number;

describe('a coverage-instrumented kernel', () => {
  it('is refused, saying it was instrumented and what to do', () => {
    expect(() => vectorize(['float64(float64, float64)'])(instrumented)).toThrowError(KernelCompileError);
    expect(() => vectorize(['float64(float64, float64)'])(instrumented)).toThrowErrorMatchingInlineSnapshot(`[KernelCompileError: The kernel was instrumented for code coverage: its source holds Istanbul's counters (\`cov_1xv7984owx().f[…\`), which a kernel cannot run. Exclude the file that defines it from instrumentation (\`/* istanbul ignore file */\` at its top, or your test runner's \`coverage.exclude\`), or use V8 coverage (\`vitest --coverage.provider=v8\`, \`c8\`, Jest's \`coverageProvider: "v8"\`), which leaves the source alone.]`);
  });

  it('is refused as a helper too', () => {
    expect(() => vectorize(['float64(float64, float64)'], { env: { mul: instrumented } })((a: number, b: number) => mul(a, b))).toThrowError(
      /^The helper `mul` was instrumented for code coverage/,
    );
  });
});

declare function mul(a: number, b: number): number;
