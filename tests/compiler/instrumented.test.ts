/**
 * Kernels rewritten by coverage tools: Istanbul (Jest's default coverage, nyc, vitest's istanbul
 * provider) adds counters such as `cov_<hash>().s[3]++` to every function. The compiler leaves
 * them out, so an instrumented kernel and its helpers compile and give the results of the code as
 * written, on every target. The code here is instrumented by Istanbul's own instrumenter
 * (istanbul-lib-instrument), as `jest --coverage` does.
 */
import { createInstrumenter } from 'istanbul-lib-instrument';
import { describe, expect, it } from 'vitest';
import { guvectorize, KernelCompileError, vectorize } from '../../src/index.js';
import { TARGETS } from '../targets.js';

// A module of kernels as a user writes them: a helper with branches, an element-wise kernel with a
// logical expression and a ternary, and a per-row kernel with a loop and `if`/`else` chains.
const moduleSource = `
function clamp(v, lo, hi) {
  if (v < lo) return lo;
  return v > hi ? hi : v;
}
const softsign = (x, k) => (x > 0 && k > 0 ? x / (k + x) : clamp(x, -1, 1));
function rowStats(row, out) {
  let positives = 0;
  let sum = 0;
  for (let i = 0; i < row.length; i++) {
    if (row[i] > 0) {
      positives++;
    } else {
      sum -= 1;
    }
    if (i % 3 === 0) sum += clamp(row[i], -2, 2);
    else if (i % 3 === 1 || i === 5) sum += row[i] * 0.5;
    else sum += row[i] > 1 ? 1 : row[i];
  }
  out[0] = positives;
  out[1] = sum;
}
return { clamp, softsign, rowStats };
`;

type Kernels = { clamp: (v: number, lo: number, hi: number) => number; softsign: (x: number, k: number) => number; rowStats: (row: Float32Array, out: Float32Array) => void };

const plain = new Function(moduleSource)() as Kernels;
const instrumentedSource = createInstrumenter({ esModules: false, compact: false }).instrumentSync(`(function () {${moduleSource}})`, 'kernels.js');
const instrumented = (0, eval)(instrumentedSource)() as Kernels;

const xs = Float32Array.from({ length: 1000 }, (_, i) => Math.sin(i) * 3);
const ks = Float32Array.from({ length: 1000 }, (_, i) => Math.cos(i * 0.7));

describe('a kernel instrumented by Istanbul', () => {
  it('really is instrumented (the counters are in its source)', () => {
    expect(String(instrumented.softsign)).toMatch(/cov_\w+\(\)\.[sfb]\[/);
    expect(String(instrumented.rowStats)).toMatch(/cov_\w+\(\)\.b\[\d+\]\[\d+\]\+\+/);
  });

  it.each(TARGETS)('compiles with its helper and gives the uninstrumented results on %s', async (target) => {
    const make = (k: Kernels) => vectorize(['float32(float32, float32)'], { target, env: { clamp: k.clamp } })(k.softsign);
    expect(await make(instrumented)(xs, ks)).toEqual(await make(plain)(xs, ks));
    const rows = { data: xs, shape: [100, 10] };
    const stats = (k: Kernels) => guvectorize(['void(float32[:], float32[:])'], '(n)->(m)', { target, env: { clamp: k.clamp } })(k.rowStats);
    const expected = await stats(plain)(rows, { dims: { m: 2 } });
    expect(await stats(instrumented)(rows, { dims: { m: 2 } })).toEqual(expected);
  }, 60_000);

  it('is refused, saying what to do, when `cov_…` is used other than as a counter', () => {
    expect(() => vectorize(['float64(float64)'])('(x) => cov_1xv7984owx().s[1] + x')).toThrowErrorMatchingInlineSnapshot(`
      [KernelCompileError: The kernel was instrumented for code coverage, and \`cov_1xv7984owx\` is used here in a way that is not one of Istanbul's counters, so it cannot be left out. Exclude the file that defines it from instrumentation (\`/* istanbul ignore file */\` at its top, or your test runner's \`coverage.exclude\`), use V8 coverage (\`vitest --coverage.provider=v8\`, \`c8\`, Jest's \`coverageProvider: "v8"\`), which leaves the source alone, or pass the kernel as source text (kernel line 1:8)
        (x) => cov_1xv7984owx().s[1] + x
               ^]
    `);
  });
});

describe('kernels and helpers as source text', () => {
  it.each(TARGETS)('compile and run on %s', async (target) => {
    const f = vectorize(['float32(float32, float32)'], { target, env: { clamp: String(plain.clamp) } })(String(plain.softsign));
    expect(await f(xs, ks)).toEqual(await vectorize(['float32(float32, float32)'], { target, env: { clamp: plain.clamp } })(plain.softsign)(xs, ks));
    const g = guvectorize(['void(float32[:], float32[:])'], '(n)->()', { target })('(row, out) => { let s = 0; for (let i = 0; i < row.length; i++) s += row[i]; out[0] = s; }');
    expect(((await g({ data: new Float32Array([1, 2, 3, 4]), shape: [2, 2] })) as { data: Float32Array }).data).toEqual(new Float32Array([3, 7]));
  }, 60_000);

  it('say where source text is not a function', () => {
    expect(() => vectorize(['float64(float64)'])('x * 2')).toThrowError(KernelCompileError);
    expect(() => vectorize(['float64(float64)'])('x * 2')).toThrowErrorMatchingInlineSnapshot(`[KernelCompileError: The kernel must be a function, found source that is not one: x * 2]`);
    expect(() => vectorize(['float64(float64)'], { env: { h: '(a) =>' } })('(x) => h(x)')).toThrowErrorMatchingInlineSnapshot(`
      [KernelCompileError: The helper \`h\` could not be parsed: Unexpected token (kernel line 1:7)
        (a) =>
              ^]
    `);
  });
});
