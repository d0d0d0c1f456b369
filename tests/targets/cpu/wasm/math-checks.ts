/**
 * The check of a kernel `Math.f(…)` against V8's `Math.f` bit for bit, in SIMD lanes and in the
 * scalar loop, float64 and float32, element-wise and per row (tests of the Wasm ports of `Math`
 * functions: fdlibm.test.ts, trig.test.ts, …).
 */
import { expect } from 'vitest';
import { guvectorize, sharedArray, vectorize } from '../../../../src/index.js';
import { same } from './math-inputs.js';

type Dtype = 'float32' | 'float64';

/** A kernel `Math.<name>(…)` of `arity` arguments (atan2: `Math.atan2(y, x)`). */
function mathKernel(name: string, arity: number, dtype: Dtype) {
  const params = arity === 1 ? ['x'] : ['y', 'x'];
  const signature = `${dtype}(${params.map(() => dtype).join(', ')})`;
  return vectorize([signature])(new Function(...params, `return Math.${name}(${params.join(', ')})`) as (...a: number[]) => number);
}

/** V8's result, rounded to float32 once for a float32 kernel. */
function expected(name: string, dtype: Dtype, args: readonly number[]): number {
  const v = (Math as unknown as Record<string, (...a: number[]) => number>)[name]!(...args);
  return dtype === 'float32' ? Math.fround(v) : v;
}

/**
 * Runs `Math.<name>` over the inputs (one array per argument) as a `dtype` kernel on arrays in Wasm
 * memory, in SIMD lanes, and, with `scalarEvery` > 0, on every `scalarEvery`-th input through the
 * scalar loop (a strided operand); fails at the first result whose bits are not V8's.
 */
export function expectPortMatchesV8(name: string, dtype: Dtype, inputs: readonly ArrayLike<number>[], scalarEvery = 0): void {
  const n = inputs[0]!.length;
  const lanes = dtype === 'float32' ? 4 : 2;
  const kernel = mathKernel(name, inputs.length, dtype);
  const operands = inputs.map((xs) => {
    const a = sharedArray(n, dtype);
    a.set(xs);
    return a;
  });
  const out = sharedArray(n, dtype);
  expect(kernel.explain(...operands, { out })).toMatch(new RegExp(`^WebAssembly \\(SIMD, ${lanes} lanes\\)`));
  kernel.sync(...operands, { out });
  for (let i = 0; i < n; i++) {
    const args = operands.map((a) => a[i]!);
    const want = expected(name, dtype, args);
    if (!same(out[i]!, want)) expect.fail(`${dtype} ${name}(${args.join(', ')}) = ${out[i]} in Wasm lanes (lane ${i % lanes}), ${want} in JS`);
  }
  if (scalarEvery <= 0) return;
  // Every scalarEvery-th input, at every other element of an array (a strided operand).
  const count = Math.floor(n / scalarEvery);
  const strided = operands.map((a) => {
    const data = sharedArray(2 * count, dtype);
    for (let i = 0; i < count; i++) data[2 * i] = a[i * scalarEvery]!;
    return { data, shape: [count], strides: [2] };
  });
  expect(kernel.explain(...strided)).toMatch(/^WebAssembly \(scalar: an operand is strided\)/);
  const scalarOut = kernel.sync(...strided).data as ArrayLike<number>;
  for (let i = 0; i < count; i++) {
    const args = operands.map((a) => a[i * scalarEvery]!);
    const want = expected(name, dtype, args);
    if (!same(scalarOut[i]!, want)) expect.fail(`${dtype} ${name}(${args.join(', ')}) = ${scalarOut[i]} in scalar Wasm, ${want} in JS`);
  }
}

type Vector = { [i: number]: number; length: number };

/**
 * Runs `Math.<name>` per row (guvectorize `(n)->(n)`, SIMD rows) over `xs` in float64, float32
 * (4 rows per vector) and float32 beside a float64 operand (2 rows per vector: float32 lanes 0–1),
 * and fails at the first result whose bits are not V8's.
 */
export function expectPortMatchesV8PerRow(name: string, xs: readonly number[]): void {
  const n = 7;
  const count = Math.floor(xs.length / n);
  const f64 = sharedArray(count * n);
  f64.set(xs.slice(0, count * n));
  const f32 = sharedArray(count * n, 'float32');
  f32.set(f64);
  const view = <T>(data: T) => ({ data, shape: [count, n] });
  const f = (Math as unknown as Record<string, (x: number) => number>)[name]!;
  for (const dtype of ['float64', 'float32'] as const) {
    const rows = guvectorize([`void(${dtype}[:], ${dtype}[:])`], '(n)->(n)')(new Function('x', 'out', `for (let i = 0; i < x.length; i++) out[i] = Math.${name}(x[i]);`) as (x: Vector, out: Vector) => void);
    const input = dtype === 'float64' ? f64 : f32;
    const out = sharedArray(count * n, dtype);
    expect(rows.explain(view(input), { out: view(out) })).toMatch(new RegExp(`^WebAssembly \\(SIMD, ${dtype === 'float64' ? 2 : 4} rows per vector`));
    rows.sync(view(input), { out: view(out) });
    for (let i = 0; i < out.length; i++) {
      const want = dtype === 'float32' ? Math.fround(f(input[i]!)) : f(input[i]!);
      if (!same(out[i]!, want)) expect.fail(`${dtype} row ${name}(${input[i]}) = ${out[i]}, Math.${name}: ${want}`);
    }
  }
  const mixed = guvectorize(['void(float32[:], float64[:], float32[:])'], '(n),(n)->(n)')(new Function('x', 'w', 'out', `for (let i = 0; i < x.length; i++) out[i] = Math.${name}(x[i]) + w[i];`) as (x: Vector, w: Vector, out: Vector) => void);
  const zeros = sharedArray(count * n);
  const outMixed = sharedArray(count * n, 'float32');
  expect(mixed.explain(view(f32), view(zeros), { out: view(outMixed) })).toMatch(/^WebAssembly \(SIMD, 2 rows per vector/);
  mixed.sync(view(f32), view(zeros), { out: view(outMixed) });
  for (let i = 0; i < outMixed.length; i++) {
    const want = Math.fround(Math.fround(f(f32[i]!)) + 0);
    if (!same(outMixed[i]!, want)) expect.fail(`mixed row ${name}(${f32[i]}) = ${outMixed[i]}, expected ${want}`);
  }
}

/**
 * Runs `Math.<name>(x) + w` element-wise with x float32 beside w float64 (2 lanes, the float32
 * values in lanes 0 and 1) and fails at the first result that is not `Math.fround(Math.<name>(x)) + w`.
 */
export function expectPortMatchesV8BesideFloat64(name: string, xs: readonly number[]): void {
  const n = xs.length;
  const kernel = vectorize(['float64(float32, float64)'])(new Function('x', 'w', `return Math.${name}(x) + w`) as (x: number, w: number) => number);
  const x = sharedArray(n, 'float32');
  x.set(xs);
  const w = sharedArray(n);
  for (let i = 0; i < n; i++) w[i] = (i % 7) - 3;
  const out = sharedArray(n);
  expect(kernel.explain(x, w, { out })).toMatch(/^WebAssembly \(SIMD, 2 lanes/);
  kernel.sync(x, w, { out });
  const f = (Math as unknown as Record<string, (v: number) => number>)[name]!;
  for (let i = 0; i < n; i++) {
    const want = Math.fround(f(x[i]!)) + w[i]!;
    if (!same(out[i]!, want)) expect.fail(`float32 beside float64: ${name}(${x[i]}) + ${w[i]} = ${out[i]}, V8: ${want}`);
  }
}
