import { describe, expect, it } from 'vitest';
import type { Expr, Stmt, TypedKernel, ValueType } from '../../src/compiler/ir.js';
import { typeKernel } from '../../src/compiler/lower.js';
import { parseFunction } from '../../src/compiler/parse.js';
import type { DType } from '../../src/dtypes.js';
import { KernelCompileError } from '../../src/errors.js';

const f32a: ValueType = { kind: 'array', dtype: 'float32', ndim: 1 };

function typed(fn: Function, params: ValueType[], returnType: DType | 'void' | 'infer' = 'infer', env = {}, writable: number[] = []): TypedKernel {
  return typeKernel(parseFunction(fn), { params, returnType, env }, { writable: new Set(writable) });
}

/** The type of the first returned expression. */
function returned(k: TypedKernel): Expr {
  const find = (list: readonly Stmt[]): Expr | undefined => {
    for (const s of list) {
      if (s.kind === 'return' && s.value) return s.value;
      if (s.kind === 'if') return find(s.then) ?? find(s.otherwise);
    }
    return undefined;
  };
  return find(k.body)!;
}

/** Type of `expr` in a kernel (a, b) with the given parameter types, before the return's cast. */
function typeOf(source: string, a: DType, b: DType = a): DType {
  const k = typed(new Function('a', 'b', `return ${source};`), [a, b], 'infer');
  return k.returnType as DType;
}

describe('typing rules (docs/kernel-language.md)', () => {
  it.each([
    ['a + b', 'float32', 'float32', 'float32'],
    ['a * b', 'float32', 'float64', 'float64'],
    ['a + b', 'int32', 'float32', 'float32'],
    ['a + b', 'int32', 'int32', 'int32'],
    ['a + b', 'int8', 'int8', 'int32'],
    ['a + b', 'uint8', 'int16', 'int32'],
    ['a + b', 'int32', 'uint32', 'uint32'],
    ['a + b', 'int32', 'int64', 'int64'],
    ['a + b', 'uint64', 'int64', 'uint64'],
    ['a / b', 'int32', 'int32', 'float64'],
    ['(a / b) | 0', 'int32', 'int32', 'int32'],
    ['a % b', 'int32', 'int32', 'int32'],
    ['a & b', 'uint32', 'uint32', 'int32'],
    ['a >>> 1', 'int32', 'int32', 'uint32'],
    ['a << b', 'float64', 'float64', 'int32'],
    ['a < b', 'float32', 'int32', 'bool'],
    ['a * 2', 'float32', 'float32', 'float32'],
    ['a * 0.5', 'float32', 'float32', 'float32'],
    ['a * 0.5', 'int32', 'int32', 'float64'],
    ['a + 1', 'int32', 'int32', 'int32'],
    ['a + 3000000000', 'int32', 'int32', 'float64'],
    ['Math.sqrt(a)', 'float32', 'float32', 'float32'],
    ['Math.sqrt(a)', 'int32', 'int32', 'float64'],
    ['Math.abs(a)', 'int32', 'int32', 'int32'],
    ['Math.floor(a)', 'int16', 'int16', 'int32'],
    ['Math.max(a, b)', 'int32', 'float32', 'float32'],
    ['Math.fround(a)', 'float64', 'float64', 'float32'],
    ['Math.imul(a, b)', 'float64', 'float64', 'int32'],
    ['a ** b', 'float32', 'float32', 'float32'],
    ['a ? a : b', 'bool', 'bool', 'bool'],
    ['-a', 'uint8', 'uint8', 'int32'],
    ['!a', 'float32', 'float32', 'bool'],
    ['isNaN(a)', 'float32', 'float32', 'bool'],
  ])('%s with (%s, %s) is %s', (source, a, b, expected) => {
    expect(typeOf(source, a as DType, b as DType)).toBe(expected);
  });

  it('types locals by every value assigned to them', () => {
    // s is a JS number accumulating float32 values: a double, as in JS (and Numba's float64).
    const k = typed((a: Float32Array) => { let s = 0; for (let i = 0; i < a.length; i++) s += a[i]!; return s; }, [f32a]);
    expect(k.locals.find((v) => v.name === 's')!.type).toBe('float64');
    // m starts as an int32 value and is assigned float32 values: the join is float32.
    const j = typed((a: Float32Array) => { let m = a.length; m = a[0]!; return m; }, [f32a]);
    expect(j.locals.find((v) => v.name === 'm')!.type).toBe('float32');
  });

  it('makes a literal-initialised local a double, as JS does (no int32 overflow at 13!)', () => {
    const k = typed((n: number) => { let c = 1; for (let i = 2; i <= n; i++) c *= i; return c; }, ['int32']);
    expect(k.locals.find((v) => v.name === 'c')!.type).toBe('float64');
  });

  it('keeps a local assigned from int32 values an int32', () => {
    const k = typed((a: number, b: number) => { const m = Math.imul(a, b); return m; }, ['int32', 'int32']);
    expect(k.returnType).toBe('int32');
  });

  it('folds literal-only expressions as JS does', () => {
    const k = typed(() => 1 / 3, [], 'infer');
    expect(returned(k)).toMatchObject({ kind: 'const', value: 1 / 3 });
  });

  it('specialises helpers per argument types and reaches nested helpers', () => {
    const inner = (x: number) => x * 2;
    const outer = (x: number) => inner(x) + 1;
    const k = typed((a: number, b: number) => outer(a) + outer(b), ['float32', 'int32'], 'infer', { outer, inner });
    expect(k.helpers.map((h) => h.name)).toEqual(['inner', 'outer', 'inner_1', 'outer_1']);
    expect(k.helpers.map((h) => h.returnType)).toEqual(['float32', 'float32', 'int32', 'int32']);
    expect(k.returnType).toBe('float32');
  });

  it('lets helpers write arrays the kernel may write, and sizes local arrays from core dimensions', () => {
    const fill = (o: Float32Array, v: number) => { for (let i = 0; i < o.length; i++) o[i] = v; };
    const k = typeKernel(
      parseFunction((x: number, out: Float32Array) => { const t = new Float64Array(out.length); t[0] = x; fill(out, t[0]); }),
      { params: ['float32', f32a], returnType: 'void', env: { fill } },
      { writable: new Set([1]), coreDims: (p, axis) => (p === 1 && axis === 0 ? 7 : undefined) },
    );
    expect(k.body[0]).toMatchObject({ kind: 'local-array', length: 7 });
    expect(k.helpers[0]!.writesParam).toEqual([true, false]);
  });
});

describe('constructs outside the kernel language are KernelCompileErrors with line:column', () => {
  const refuse = (fn: Function, params: ValueType[] = ['float64'], env = {}, writable: number[] = []) => {
    try {
      typed(fn, params, params.some((p) => typeof p === 'object') ? 'void' : 'infer', env, writable);
    } catch (e) {
      expect(e).toBeInstanceOf(KernelCompileError);
      expect((e as KernelCompileError).location?.line).toBeGreaterThan(0);
      return (e as Error).message;
    }
    throw new Error('expected a KernelCompileError');
  };

  it.each<[string, Function]>([
    ['object literal', new Function('x', 'return { x };')],
    ['array literal', new Function('x', 'return [x];')],
    ['string', new Function('x', 'return "a";')],
    ['template string', new Function('x', 'return `${x}`;')],
    ['this', new Function('x', 'return this.y;')],
    ['closure variable', new Function('x', 'return x + outside;')],
    ['nested function', new Function('x', 'const f = (y) => y; return f(x);')],
    ['try/catch', new Function('x', 'try { return x; } catch (e) { return 0; }')],
    ['throw', new Function('x', 'throw x;')],
    ['switch', new Function('x', 'switch (x) { case 1: return 1; } return 0;')],
    ['for…of', new Function('x', 'for (const y of x) {} return 0;')],
    ['var', new Function('x', 'var y = x; return y;')],
    ['Math.random in a loop test', new Function('x', 'let n = 0; while (Math.random() < x) n++; return n;')],
    ['unknown Math function', new Function('x', 'return Math.foo(x);')],
    ['method call', new Function('x', 'return x.toFixed(2);')],
    ['assignment in expression', new Function('x', 'let y = 0; return (y = x);')],
    ['update in expression', new Function('x', 'let y = 0; return y++;')],
    ['logical on numbers', new Function('x', 'return x || 1;')],
    ['nullish', new Function('x', 'return x ?? 1;')],
    ['const reassigned', new Function('x', 'const y = 1; y = 2; return y;')],
    ['let without value', new Function('x', 'let y; return x;')],
    ['labelled break', new Function('x', 'a: for (;;) { break a; } return x;')],
    ['destructuring', new Function('x', 'const [a] = x; return a;')],
    ['typeof', new Function('x', 'return typeof x;')],
    ['delete', new Function('x', 'return delete x.y;')],
  ])('%s', (_what, fn) => {
    expect(refuse(fn)).toMatchSnapshot();
  });

  it('async, generator and recursive functions', () => {
    expect(refuse(async (x: number) => x)).toMatch(/`async` functions are not supported/);
    const fact = (n: number): number => (n <= 1 ? 1 : n * fact(n - 1));
    expect(refuse((x: number) => fact(x), ['float64'], { fact })).toMatch(/recursion is not supported/);
  });

  it('writes to inputs, directly or through a helper', () => {
    expect(refuse((a: Float32Array, out: Float32Array) => { a[0] = 1; out[0] = 2; }, [f32a, f32a], {}, [1])).toMatch(/`a` is an input/);
    const clear = (o: Float32Array) => { o[0] = 0; };
    expect(refuse((a: Float32Array, out: Float32Array) => { clear(a); out[0] = 1; }, [f32a, f32a], { clear }, [1])).toMatch(/`clear` writes to its parameter/);
  });

  it('wrong index counts, non-integer indices, local arrays of unknown size', () => {
    // @ts-expect-error indexing a number, as a kernel author might by mistake
    expect(refuse((a: Float32Array, o: Float32Array) => { o[0] = a[0]![1]; }, [f32a, f32a], {}, [1])).toMatch(/has 1 dimension and is indexed with 2/);
    expect(refuse((a: Float32Array, o: Float32Array) => { o[0] = a[0.5]!; }, [f32a, f32a], {}, [1])).toMatch(/must be an integer/);
    expect(refuse((a: Float32Array, n: number) => { const t = new Float32Array(n); a[0] = t[0]; }, [f32a, 'int32'])).toMatch(/known when the kernel is compiled/);
    expect(refuse((a: Float32Array) => { const t = new Array(3); return t; }, [f32a])).toMatch(/is not supported in kernels; local arrays are/);
  });

  it('signed against unsigned comparisons, >>> on 64-bit', () => {
    expect(refuse((a: number, b: number) => a < b, ['int32', 'uint32'])).toMatch(/compares a signed with an unsigned/);
    expect(refuse(new Function('a', 'return a >>> 1n;'), ['int64'])).toMatch(/`>>>` is not defined for 64-bit/);
  });

  it('parameter count against the signature', () => {
    expect(() => typed((a: number, b: number) => a + b, ['float32'])).toThrowErrorMatchingInlineSnapshot(`[KernelCompileError: The kernel \`kernel\` takes 2 parameters (a, b) but its signature has 1 argument.]`);
  });

  it('a syntax error in a non-function value', () => {
    expect(() => parseFunction(42)).toThrow(KernelCompileError);
    expect(() => parseFunction(Math.sin)).toThrow(/native or bound function/);
  });
});
