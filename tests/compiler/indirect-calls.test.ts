/**
 * Helpers called the way transpilers write calls of imported functions: `(0, f)(x)` and
 * `(0, ns.f)(x)` (TypeScript's CommonJS output, esbuild, vitest's module runner). They compile as
 * the `f(x)` the user wrote, with `f` looked up in `env`; other comma expressions stay refused.
 */
import { describe, expect, it } from 'vitest';
import { guvectorize, KernelCompileError, type NDArray, vectorize } from '../../src/index.js';
import { hermiteRow } from '../kernels.js';

const square = (v: number) => v * v;
const xs = Float32Array.from({ length: 64 }, (_, i) => i / 8 - 4);
const expected = xs.map((x) => Math.fround(x * x + 1));

describe('indirect calls of helpers', () => {
  it.each([
    ['(0, square)(x)', '(x) => (0, square)(x) + 1'],
    ['(0, helpers_1.square)(x)', '(x) => (0, helpers_1.square)(x) + 1'],
    ['(0,import_helpers.square)(x)', 'function (x) { return (0,import_helpers.square)(x) + 1; }'],
  ])('%s is the call square(x)', async (_, source) => {
    const f = vectorize(['float32(float32)'], { env: { square } })(source);
    expect(await f(xs)).toEqual(expected);
  });

  it('an imported helper, as this test runner rewrites its calls, compiles and runs', async () => {
    const kernel = (x: number, out: Float32Array) => {
      hermiteRow(x, out);
    };
    expect(String(kernel)).toMatch(/\(0,\s*([\w$]+\.)?hermiteRow\)\(/); // what the compiler is given
    const f = guvectorize(['void(float32, float32[:])'], '()->(n)', { env: { hermiteRow } })(kernel);
    const rows = (await f(Float32Array.of(0.5, 2), { dims: { n: 4 } })) as NDArray<Float32Array>;
    const row = new Float32Array(4);
    hermiteRow(2, row);
    expect(rows.shape).toEqual([2, 4]);
    expect(Array.from(rows.data.subarray(4))).toEqual(Array.from(row));
  });

  it('other comma expressions as callees are still refused', () => {
    for (const source of ['(x) => (1, square)(x)', '(x) => (0, square, square)(x)', '(x) => (0, helpers[k])(x)']) {
      expect(() => vectorize(['float32(float32)'], { env: { square } })(source)).toThrow(KernelCompileError);
    }
  });

  it('the helper must still be in env: the error names it', () => {
    expect(() => vectorize(['float32(float32)'])('(x) => (0, helpers_1.square)(x)')).toThrow(/square/);
  });
});
