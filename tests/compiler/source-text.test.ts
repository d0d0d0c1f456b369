/**
 * Kernel source text: exactly one function, and nesting within a bound, on every target — a
 * source that is not one function, or nests too deeply for a later stage (lowering, a code
 * generator, the device's WGSL compiler), is a KernelCompileError, never a raw error or a source
 * silently cut short.
 */
import { describe, expect, it } from 'vitest';
import { KernelCompileError, vectorize } from '../../src/index.js';
import { MAX_NESTING } from '../../src/compiler/parse.js';
import { TARGETS } from '../targets.js';

describe('kernel source text', () => {
  it('a source with statements after the function is refused, not cut short', () => {
    const sneaky = '(x) => x /* */ ) ; globalThis.y = 4 ; ((y) => y';
    expect(() => vectorize(['float64(float64)'])(sneaky)).toThrowError(KernelCompileError);
    expect(() => vectorize(['float64(float64)'])(sneaky)).toThrowError(/exactly one function, but it goes on after the function ends/);
    expect(() => vectorize(['float64(float64)'])('(x) => x) , ((y) => y')).toThrowError(KernelCompileError);
    expect(() => vectorize(['float64(float64)'])('f(x) { return x }, g(y) { return y }')).toThrowError(KernelCompileError);
    expect((globalThis as { y?: unknown }).y).toBeUndefined();
    // One function, with spaces, comments, a method's or a declaration's form, is read as before.
    expect(vectorize(['float64(float64)'])('  (x) => x * 2 /* doubled */ ').sync(3)).toBe(6);
    expect(vectorize(['float64(float64)'])('function f(x) { return x + 1; }').sync(3)).toBe(4);
    expect(vectorize(['float64(float64)'])('m(x) { return x - 1; }').sync(3)).toBe(2);
    expect(vectorize(['float64(float64)'])('/* c */ (x) => x // end').sync(3)).toBe(3);
    expect(() => vectorize(['float64(float64)'])('a) => (a')).toThrowError(KernelCompileError);
  });

  it('nesting beyond the bound is a KernelCompileError that names it, whatever the shape', () => {
    const shapes = [
      (d: number) => '(x) => ' + '('.repeat(d) + 'x' + ')'.repeat(d),
      (d: number) => '(x) => ' + '('.repeat(d) + 'x' + '+1)'.repeat(d),
      (d: number) => '(x) => ' + '-('.repeat(d) + 'x' + ')'.repeat(d),
      (d: number) => '(x) => x' + '+x'.repeat(d),
      (d: number) => '(x) => {' + 'if (x>0) {'.repeat(d) + 'return x;' + '}'.repeat(d) + 'return 0;}',
    ];
    for (const shape of shapes) {
      for (const depth of [MAX_NESTING + 10, 1000, 3000]) {
        // Parentheses alone add no depth to the tree: those within the parser's reach compile.
        if (shape(1) === '(x) => (x)' && depth < 1000) expect(vectorize(['float64(float64)'])(shape(depth)).sync(2)).toBe(2);
        else expect(() => vectorize(['float64(float64)'])(shape(depth)), `${shape(3)} at ${depth}`).toThrowError(KernelCompileError);
      }
    }
    expect(vectorize(['float64(float64)'])('(x) => x' + '+x'.repeat(MAX_NESTING - 10)).sync(1)).toBe(MAX_NESTING - 9);
    expect(() => vectorize(['float64(float64)'])('(x) => x' + '+x'.repeat(MAX_NESTING + 10))).toThrowError(/nests \d+ levels deep/);
  });
});

describe.each(TARGETS)('nesting within the bound on %s', { timeout: 60_000 }, (target) => {
  it('runs, or is refused with what to do where the device compiler allows less (never "a bug in ufunc")', async () => {
    for (const src of ['(x) => ' + '('.repeat(300) + 'x' + '+1)'.repeat(300), '(x) => {' + 'if (x>0) {'.repeat(150) + 'return x;' + '}'.repeat(150) + 'return 0;}']) {
      const k = vectorize(['float32(float32)'], { target })(src);
      try {
        const r = (await k(Float32Array.of(1, 2))) as Float32Array;
        expect(r[0]! > 0).toBe(true);
      } catch (e) {
        expect(target).toBe('gpu');
        expect(e).toBeInstanceOf(KernelCompileError);
        expect((e as Error).message).toMatch(/nests expressions or statements more deeply than the device's WGSL compiler allows/);
      }
    }
  });
});
