/**
 * V8's `Math.hypot` (src/builtins/math.tq, MathHypot) for a fixed number of arguments, ported to a
 * scalar Wasm function `(f64 × n) → f64`: +∞ if any |argument| is ∞ (even beside NaN), else NaN
 * if any is NaN, +0 if all are ±0; otherwise the arguments are divided by the largest magnitude
 * and their squares summed in argument order with Kahan's compensation, then
 * sqrt(sum)·max — the same operations in the same order, so the same bits.
 */
import { CScalar } from './c-ops.js';
import type { FunctionEmitter } from '../emit-scalar.js';
import type { Vec, VectorCode } from './lanes.js';

/** `Math.hypot` of parameters 0 … arity − 1. */
export function emitHypot(e: FunctionEmitter, arity: number): void {
  const c = new CScalar(e);
  const { num, get, add, sub, mul, div } = c;
  const [max, sum, compensation, q, summand, preliminary] = [c.f64(), c.f64(), c.f64(), c.f64(), c.f64(), c.f64()];
  const nan = c.i32();
  c.set(max, num(0));
  c.set(nan, c.int(0));
  for (let i = 0; i < arity; i++) {
    c.if(c.ne(get(i), get(i)), () => c.set(nan, c.int(1)), () => {
      c.set(i, c.abs(get(i)));
      c.if(c.gt(get(i), get(max)), () => c.set(max, get(i)));
    });
  }
  c.if(c.eq(get(max), num(Infinity)), () => c.ret(num(Infinity)));
  c.if(get(nan), () => c.ret(num(NaN)));
  c.if(c.eq(get(max), num(0)), () => c.ret(num(0)));
  c.set(sum, num(0));
  c.set(compensation, num(0));
  for (let i = 0; i < arity; i++) {
    c.set(q, div(get(i), get(max)));
    c.set(summand, sub(mul(get(q), get(q)), get(compensation)));
    c.set(preliminary, add(get(sum), get(summand)));
    c.set(compensation, sub(sub(get(preliminary), get(sum)), get(summand)));
    c.set(sum, get(preliminary));
  }
  c.end(mul(c.sqrt(get(sum)), get(max)));
}

/** V8's hypot in lanes of `arity` vectors, for finite arguments (±∞ and NaN are not covered). */
export const HYPOT_LANES: VectorCode = {
  covers: (c, xs) => xs.map((x) => c.lt(c.abs(x), c.num(Infinity))).reduce((a, b) => c.and(a, b)),
  compute: (c, xs) => {
    const { num, add, sub, mul, div } = c;
    const abs = xs.map((x) => c.let(c.abs(x)));
    let max: Vec = num(0);
    for (const a of abs) max = c.let(c.select(c.gt(a, max), a, max));
    let sum: Vec = num(0);
    let compensation: Vec = num(0);
    for (const a of abs) {
      const q = c.let(div(a, max));
      const summand = c.let(sub(mul(q, q), compensation));
      const preliminary = c.let(add(sum, summand));
      compensation = c.let(sub(sub(preliminary, sum), summand));
      sum = preliminary;
    }
    return c.select(c.eq(max, num(0)), num(0), mul(c.sqrt(sum), max));
  },
};
