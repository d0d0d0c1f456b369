import { afterEach, describe, expect, it, vi } from 'vitest';

import type { TypedKernel, ValueType } from '../../src/compiler/ir.js';
import { typeKernel } from '../../src/compiler/lower.js';
import { parseFunction } from '../../src/compiler/parse.js';
import { propagateConstants } from '../../src/compiler/passes/constant-propagation.js';
import { markFastMath } from '../../src/compiler/passes/fastmath.js';
import { runPasses, TRANSFORMS } from '../../src/compiler/passes/index.js';
import { printKernel } from '../../src/compiler/print-ir.js';
import { guvectorize, KernelCompileError, type NDArray, vectorize } from '../../src/index.js';
import { TARGETS } from '../targets.js';

const f32a: ValueType = { kind: 'array', dtype: 'float32', ndim: 1 };
/** A name the kernels below take from `env`. */
declare const SCALE: number;
/** A helper the fastmath tests take from `env`. */
declare function expHelper(u: number): number;

function typed(fn: Function, params: ValueType[], returnType: 'float32' | 'float64' | 'void', env = {}, writable: number[] = []): TypedKernel {
  return typeKernel(parseFunction(fn), { params, returnType, env }, { writable: new Set(writable) });
}

describe('the IR printer', () => {
  it('prints every statement with its types', () => {
    const k = typed((a: Float32Array, out: Float32Array) => {
      let s = 0;
      for (let i = 0; i < a.length; i++) {
        if (a[i]! > 0) s += a[i]!;
        else continue;
      }
      out[0] = Math.sqrt(s);
    }, [f32a, f32a], 'void', {}, [1]);
    expect(printKernel(k)).toMatchInlineSnapshot(`
      "kernel kernel(a: float32[:], out: float32[:]) -> void
        let s: float64 = 0:float64
        loop (let i: float64 = 0:float64; (i:float64 < float64(a.shape[0]:int32)):bool; i = (i:float64 + 1:float64):float64) {
          if ((a[i:float64]:float32 > 0:float32):bool) {
            s = (s:float64 + float64(a[i:float64]:float32)):float64
          } else {
            continue
          }
        }
        out[0:int32] = float32(Math.sqrt(s:float64):float64)
      "
    `);
  });
});

describe('constant propagation', () => {
  it('replaces const locals holding compile-time values and folds arithmetic on them', () => {
    const k = typed((x: number) => {
      const k2 = 2 * SCALE;
      const half = 0.5;
      let y = x * k2 + half;
      return y;
    }, ['float64'], 'float64', { SCALE: 3 });
    const folded = propagateConstants(k);
    expect(printKernel(folded)).toMatchInlineSnapshot(`
      "kernel kernel(x: float64) -> float64
        let y: float64 = ((x:float64 * 6:float64):float64 + 0.5:float64):float64
        return y:float64
      "
    `);
    expect(folded.locals.map((v) => v.name)).toEqual(['y']);
  });

  it('leaves variables that are assigned again, and folds float32 and int32 as they run', () => {
    const k = typed((x: number) => {
      let c = 1;
      c = c + 1;
      const big = 2147483647;
      const wrapped = (big | 0) + 1;
      return x * 0.1 + c + wrapped;
    }, ['float32'], 'float32');
    const text = printKernel(propagateConstants(k));
    expect(text).toContain('let c: float64 = 1:float64');
    // int32 wraps, as `| 0` does at run time; the result is then converted for the float64 sum.
    expect(text).toContain('-2147483648:float64');
    expect(text).not.toContain('wrapped');
    // Nothing to fold: the very same kernel comes back.
    const plain = typed((x: number) => x + 1, ['float32'], 'float32');
    expect(propagateConstants(plain)).toBe(plain);
  });

  it('gives the same results as without it, on every target', async () => {
    const kernel = (x: number) => {
      const third = 1 / 3;
      const n = 7 * 3 - 1;
      return x * third + n;
    };
    const xs = Float32Array.from({ length: 33 }, (_, i) => i * 0.37 - 4);
    const expected = xs.map((x) => Math.fround(Math.fround(x * Math.fround(1 / 3)) + 20));
    for (const target of TARGETS) {
      const f = vectorize(['float32(float32)'], { target })(kernel);
      expect([...(await f(xs))], target).toEqual([...expected]);
    }
  });

  it('is in the visible list of passes', () => {
    expect(TRANSFORMS.map((p) => p.name)).toEqual(['constant-propagation', 'fastmath']);
  });
});

describe('the fastmath pass', () => {
  const f32: ValueType = 'float32';
  const kernel = (v: number) => Math.exp(v) + expHelper(v) + Math.exp(2 * v) * 0 + Math.sin(v);
  const env = { expHelper: (u: number) => Math.exp(u) };

  it('marks float32 Math.exp, in the body and in helpers, only under the option', () => {
    const k = typed(kernel, [f32], 'float32', env);
    expect(markFastMath(k)).toBe(k);
    const marked = markFastMath({ ...k, fastmath: true });
    const printed = printKernel(marked);
    expect(printed.match(/Math\.exp\[fastmath\]/g)).toHaveLength(3);
    expect(printed).not.toContain('Math.sin[fastmath]');
    expect(markFastMath(marked)).toBe(marked);
  });

  it('leaves float64 Math.exp as it is', () => {
    const k = { ...typed((v: number) => Math.exp(v), ['float64'], 'float64'), fastmath: true };
    expect(markFastMath(k)).toBe(k);
  });
});

describe('const locals size local arrays (a natural kernel that was refused)', () => {
  const smooth = (target: (typeof TARGETS)[number]) =>
    guvectorize(['void(float32[:], float32[:])'], '(n)->(n)', { target })((x: Float32Array, out: Float32Array) => {
      const n = x.length;
      const k1 = new Float32Array(n);
      const k2 = new Float32Array(n + 1);
      for (let i = 0; i < n; i++) k1[i] = 2 * x[i]!;
      k2[n] = 1;
      for (let i = 0; i < n; i++) out[i] = k1[i]! + k2[n]!;
    });

  it.each(TARGETS)('on %s', async (target) => {
    const rows = { data: Float32Array.from({ length: 12 }, (_, i) => i), shape: [3, 4] };
    const result = (await smooth(target)(rows)) as NDArray;
    expect(result.shape).toEqual([3, 4]);
    expect([...result.data]).toEqual([...rows.data].map((v) => 2 * v + 1));
    // Another row length is another specialisation, with its own local array sizes.
    const wide = (await smooth(target)({ data: new Float32Array(10).fill(1), shape: [2, 5] })) as NDArray;
    expect([...wide.data]).toEqual(new Array(10).fill(3));
  });

  it('still refuses a length known only at run time', () => {
    expect(() =>
      guvectorize(['void(float32[:], int32, float32[:])'], '(n),()->(n)')((x: Float32Array, m: number, out: Float32Array) => {
        const len = m;
        const t = new Float32Array(len);
        out[0] = t[0]! + x[0]!;
      }),
    ).toThrowError(KernelCompileError);
  });
});

describe('UFUNC_DUMP_IR', () => {
  afterEach(() => {
    delete process.env.UFUNC_DUMP_IR;
    vi.restoreAllMocks();
  });

  it('prints the IR after typing and after each pass, when asked', () => {
    const written: string[] = [];
    vi.spyOn(process.stderr, 'write').mockImplementation((chunk: string | Uint8Array) => (written.push(String(chunk)), true));
    const k = typed((x: number) => { const two = 2; return x * two; }, ['float64'], 'float64');
    runPasses(k);
    expect(written).toEqual([]);
    process.env.UFUNC_DUMP_IR = '1';
    runPasses(k);
    expect(written.map((w) => w.split('\n')[0])).toEqual([
      '// ufunc IR of `kernel` after typing',
      '// ufunc IR of `kernel` after constant-propagation',
      '// ufunc IR of `kernel` after fastmath',
    ]);
    expect(written[1]).toContain('(x:float64 * 2:float64)');
    written.length = 0;
    process.env.UFUNC_DUMP_IR = 'constant-propagation';
    runPasses(k);
    expect(written).toHaveLength(1);
  });
});
