import { describe, expect, it } from 'vitest';

import type { Expr, Stmt, TypedKernel, ValueType } from '../../src/compiler/ir.js';
import { forEachExpr, forEachStmt } from '../../src/compiler/ir-walk.js';
import { typeKernel } from '../../src/compiler/lower.js';
import { parseFunction } from '../../src/compiler/parse.js';
import { type ArrayAccessNode, type BoundsOptions, findInBoundsAccesses, runPasses } from '../../src/compiler/passes/index.js';

const f32a: ValueType = { kind: 'array', dtype: 'float32', ndim: 1 };
const f32m: ValueType = { kind: 'array', dtype: 'float32', ndim: 2 };

function typed(fn: Function, params: ValueType[], writable: number[]): TypedKernel {
  return runPasses(typeKernel(parseFunction(fn), { params, returnType: 'void', env: {} }, { writable: new Set(writable) }));
}

/** Every access of the kernel body, in source order (a store before the reads at its place), as `array ✓` (proved) or `array ✗`. */
function verdicts(fn: Function, params: ValueType[], writable: number[], options?: BoundsOptions): string[] {
  const kernel = typed(fn, params, writable);
  const safe = findInBoundsAccesses(kernel.body, options);
  const accesses: ArrayAccessNode[] = [];
  forEachStmt(kernel.body, (s: Stmt) => s.kind === 'store' && accesses.push(s));
  forEachExpr(kernel.body, (e: Expr) => e.kind === 'index' && accesses.push(e));
  accesses.sort((a, b) => a.loc.line - b.loc.line || a.loc.column - b.loc.column);
  return accesses.map((a) => `${a.array.name} ${safe.has(a) ? '✓' : '✗'}`);
}

describe('bounds-check elimination (passes/bounds.ts)', () => {
  it('proves a counter bounded by the dimension it indexes, and not another array\'s', () => {
    expect(verdicts((a: Float32Array, out: Float32Array) => {
      for (let i = 0; i < out.length; i++) {
        out[i] = a[i]!;
      }
    }, [f32a, f32a], [1])).toEqual(['out ✓', 'a ✗']);
  });

  it('follows conversions and locals declared once: `const n = a.length`', () => {
    expect(verdicts((a: Float32Array, out: Float32Array) => {
      const n = a.length;
      for (let i = 0; i < n; i++) {
        out[0] += a[i]!;
      }
    }, [f32a, f32a], [1])).toEqual(['out ✗', 'out ✗', 'a ✓']);
  });

  it('does not prove a counter that the body assigns', () => {
    expect(verdicts((a: Float32Array, out: Float32Array) => {
      for (let i = 0; i < a.length; i++) {
        out[0] += a[i]!;
        i += 1;
      }
    }, [f32a, f32a], [1])).toEqual(['out ✗', 'out ✗', 'a ✗']);
  });

  it('proves `i - 1` only when the lower bound makes it non-negative, and never `i + 1` against the same dimension', () => {
    expect(verdicts((a: Float32Array, out: Float32Array) => {
      for (let i = 0; i < a.length; i++) {
        out[0] += a[i - 1]!;
      }
      for (let i = 1; i < a.length; i++) {
        out[0] += a[i - 1]!;
        out[0] += a[i + 1]!;
      }
    }, [f32a, f32a], [1])).toEqual([
      'out ✗', 'out ✗', 'a ✗', // a[i - 1], i from 0
      'out ✗', 'out ✗', 'a ✓', // a[i - 1], i from 1
      'out ✗', 'out ✗', 'a ✗', // a[i + 1]
    ]);
  });

  it('proves cyclic indices `(i ± c) % n` whose dividend cannot be negative, and whose n is the dimension within its loop', () => {
    expect(verdicts((a: Float32Array, out: Float32Array) => {
      const n = a.length;
      for (let i = 0; i < n; i++) {
        out[0] += a[(i + 1) % n]!;
        out[0] += a[(i + n - 2) % n]!; // i + n − 2 ≥ n − 2: not provably ≥ 0 for an unknown n
        out[0] += a[(i - 1) % n]!; // −1 % n is −1 for i = 0
        out[0] += a[i % out.length]!; // another dimension
      }
      out[0] += a[5 % n]!; // n may be 0 here: 5 % 0 is NaN
    }, [f32a, f32a], [1])).toEqual([
      'out ✗', 'out ✗', 'a ✓',
      'out ✗', 'out ✗', 'a ✗',
      'out ✗', 'out ✗', 'a ✗',
      'out ✗', 'out ✗', 'a ✗',
      'out ✗', 'out ✗', 'a ✗',
    ]);
    // With the length known (a gpu tile, a local array): n − 2 ≥ 0 is evident.
    expect(verdicts((a: Float32Array, out: Float32Array) => {
      const n = a.length;
      for (let i = 0; i < n; i++) {
        out[i] = a[(i + n - 2) % n]! + a[(i + n - 1) % n]!;
      }
    }, [f32a, f32a], [1], { knownLength: (array) => (array.name === 'a' || array.name === 'out' ? 40 : undefined) })).toEqual(['out ✓', 'a ✓', 'a ✓']);
  });

  it('proves constants below a local array\'s length (sized through a const local), not one equal to it', () => {
    expect(verdicts((a: Float32Array, out: Float32Array) => {
      const k = 4;
      const t = new Float32Array(k);
      t[3] = a[0]!;
      t[4] = a[0]!;
      for (let i = 0; i < 3; i++) {
        t[i + 1] = t[i]!;
      }
      for (let i = 0; i < k; i++) {
        t[i + 1] = 1;
      }
      out[0] = t[0]!;
    }, [f32a, f32a], [1])).toEqual([
      't ✓', 'a ✗', // t[3] = a[0]
      't ✗', 'a ✗', // t[4] = a[0]: 4 is t's length
      't ✓', 't ✓', // t[i + 1] = t[i], i < 3
      't ✗', // t[i + 1], i < 4
      'out ✗', 't ✓', // out[0] = t[0]
    ]);
  });

  it('does not prove a loop that is not `for (let i = k; i < bound; i++)`', () => {
    expect(verdicts((a: Float32Array, out: Float32Array) => {
      for (let i = 0; i <= a.length; i++) out[0] += a[i]!;
      for (let i = 0; i < a.length; i += 2) out[0] += a[i]!;
      let j = 0;
      while (j < a.length) {
        out[0] += a[j]!;
        j++;
      }
    }, [f32a, f32a], [1])).toEqual(Array(3).fill(['out ✗', 'out ✗', 'a ✗']).flat());
  });

  it('matches each axis with its own dimension', () => {
    expect(verdicts((m: Float32Array[], out: Float32Array) => {
      for (let i = 0; i < out.length; i++) {
        out[i] = m[i]![0]!; // m's axis 0 is not out's
      }
    }, [f32m, f32a], [1])).toEqual(['out ✓', 'm ✗']);
  });

  it('uses lengths the backend knows (a gpu staging tile)', () => {
    const fn = (a: Float32Array, out: Float32Array) => {
      out[0] = a[2]!;
    };
    const known: BoundsOptions = { knownLength: (array) => (array.name === 'a' ? 3 : undefined) };
    expect(verdicts(fn, [f32a, f32a], [1])).toEqual(['out ✗', 'a ✗']);
    expect(verdicts(fn, [f32a, f32a], [1], known)).toEqual(['out ✗', 'a ✓']);
    expect(verdicts(fn, [f32a, f32a], [1], { knownLength: () => 2 })).toEqual(['out ✓', 'a ✗']);
  });
});
