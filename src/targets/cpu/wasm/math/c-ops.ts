/**
 * C's double and int arithmetic as Wasm, for porting fdlibm line by line: each method returns a
 * `Val`, a closure that pushes one value (f64 or i32) when called, so `sub(num(1), mul(x, c))`
 * reads as fdlibm's `one - x*c` and emits the same IEEE operations in the same order. fdlibm's
 * word macros (GET_HIGH_WORD, SET_LOW_WORD, INSERT_WORDS, …) are `high`, `withLow`, `words`, ….
 *
 * Integer operations are 32-bit and wrap, as the C code's `int32_t`/`uint32_t` do under V8's
 * build; `shrS`/`shrU` are `>>` on a signed or an unsigned operand, and comparisons say which.
 */
import { MiscOp, Op, ValType } from '../encoder.js';
import type { FunctionEmitter } from '../emit-scalar.js';

/** Pushes one value. */
export type Val = () => void;

/** A double from its two 32-bit words, as fdlibm writes its constants. */
export function fromWords(hi: number, lo: number): number {
  const view = new DataView(new ArrayBuffer(8));
  view.setUint32(0, hi >>> 0);
  view.setUint32(4, lo >>> 0);
  return view.getFloat64(0);
}

export class CScalar {
  constructor(readonly e: FunctionEmitter) {}

  /** A new f64 local. */
  f64(): number {
    return this.e.local(ValType.f64);
  }

  /** A new i32 local. */
  i32(): number {
    return this.e.local(ValType.i32);
  }

  num = (v: number): Val => () => void this.e.constant(v, 'float64');
  int = (v: number): Val => () => void this.e.i32(v | 0);
  get = (l: number): Val => () => void this.e.get(l);

  private bin = (a: Val, b: Val, o: Op): Val => () => (a(), b(), void this.e.op(o));
  private un = (a: Val, o: Op): Val => () => (a(), void this.e.op(o));

  add = (a: Val, b: Val) => this.bin(a, b, Op.f64_add);
  sub = (a: Val, b: Val) => this.bin(a, b, Op.f64_sub);
  mul = (a: Val, b: Val) => this.bin(a, b, Op.f64_mul);
  div = (a: Val, b: Val) => this.bin(a, b, Op.f64_div);
  neg = (a: Val) => this.un(a, Op.f64_neg);
  abs = (a: Val) => this.un(a, Op.f64_abs);
  sqrt = (a: Val) => this.un(a, Op.f64_sqrt);
  lt = (a: Val, b: Val) => this.bin(a, b, Op.f64_lt);
  gt = (a: Val, b: Val) => this.bin(a, b, Op.f64_gt);
  le = (a: Val, b: Val) => this.bin(a, b, Op.f64_le);
  ge = (a: Val, b: Val) => this.bin(a, b, Op.f64_ge);
  eq = (a: Val, b: Val) => this.bin(a, b, Op.f64_eq);
  ne = (a: Val, b: Val) => this.bin(a, b, Op.f64_ne);

  iadd = (a: Val, b: Val) => this.bin(a, b, Op.i32_add);
  isub = (a: Val, b: Val) => this.bin(a, b, Op.i32_sub);
  imul = (a: Val, b: Val) => this.bin(a, b, Op.i32_mul);
  idivU = (a: Val, b: Val) => this.bin(a, b, Op.i32_div_u);
  and = (a: Val, b: Val) => this.bin(a, b, Op.i32_and);
  or = (a: Val, b: Val) => this.bin(a, b, Op.i32_or);
  xor = (a: Val, b: Val) => this.bin(a, b, Op.i32_xor);
  shl = (a: Val, b: Val) => this.bin(a, b, Op.i32_shl);
  shrS = (a: Val, b: Val) => this.bin(a, b, Op.i32_shr_s);
  shrU = (a: Val, b: Val) => this.bin(a, b, Op.i32_shr_u);
  ieq = (a: Val, b: Val) => this.bin(a, b, Op.i32_eq);
  ine = (a: Val, b: Val) => this.bin(a, b, Op.i32_ne);
  ilt = (a: Val, b: Val) => this.bin(a, b, Op.i32_lt_s);
  igt = (a: Val, b: Val) => this.bin(a, b, Op.i32_gt_s);
  ile = (a: Val, b: Val) => this.bin(a, b, Op.i32_le_s);
  ige = (a: Val, b: Val) => this.bin(a, b, Op.i32_ge_s);
  iltU = (a: Val, b: Val) => this.bin(a, b, Op.i32_lt_u);
  igtU = (a: Val, b: Val) => this.bin(a, b, Op.i32_gt_u);
  igeU = (a: Val, b: Val) => this.bin(a, b, Op.i32_ge_u);
  eqz = (a: Val) => this.un(a, Op.i32_eqz);

  /** `(double)i` of a signed int. */
  toF = (a: Val) => this.un(a, Op.f64_convert_i32_s);
  /** `(int)x`, truncating (x in int range, where C's cast is defined). */
  toI: (a: Val) => Val = (a) => () => (a(), void this.e.misc(MiscOp.i32_trunc_sat_f64_s));

  /** GET_HIGH_WORD */
  high: (x: Val) => Val = (x) => () => {
    x();
    this.e.op(Op.i64_reinterpret_f64).code.byte(Op.i64_const).s64(32n);
    this.e.op(Op.i64_shr_u).op(Op.i32_wrap_i64);
  };

  /** GET_LOW_WORD */
  low: (x: Val) => Val = (x) => () => (x(), void this.e.op(Op.i64_reinterpret_f64).op(Op.i32_wrap_i64));

  /** INSERT_WORDS */
  words: (hi: Val, lo: Val) => Val = (hi, lo) => () => {
    hi();
    this.e.op(Op.i64_extend_i32_u).code.byte(Op.i64_const).s64(32n);
    this.e.op(Op.i64_shl);
    lo();
    this.e.op(Op.i64_extend_i32_u).op(Op.i64_or).op(Op.f64_reinterpret_i64);
  };

  /** SET_HIGH_WORD, as a value: x with its high word replaced. */
  withHigh = (x: Val, hi: Val): Val => this.words(hi, this.low(x));
  /** SET_LOW_WORD, as a value: x with its low word replaced. */
  withLow = (x: Val, lo: Val): Val => this.words(this.high(x), lo);

  /** `c ? a : b` (both evaluated; neither may have effects). */
  select: (c: Val, a: Val, b: Val) => Val = (c, a, b) => () => (a(), b(), c(), void this.e.op(Op.select));

  /** a0 + z·(a1 + z·(a2 + …)), as fdlibm nests its polynomials. */
  poly = (z: Val, coefficients: readonly number[]): Val => {
    let p = this.num(coefficients[coefficients.length - 1]!);
    for (let i = coefficients.length - 2; i >= 0; i--) p = this.add(this.num(coefficients[i]!), this.mul(z, p));
    return p;
  };

  set(l: number, v: Val): void {
    v();
    this.e.set(l);
  }

  /** `return v;` */
  ret(v: Val): void {
    v();
    this.e.op(Op.return);
  }

  /** `if (c) { then } else { otherwise }` */
  if(c: Val, then: () => void, otherwise?: () => void): void {
    c();
    this.e.open('if');
    then();
    if (otherwise) {
      this.e.else();
      otherwise();
    }
    this.e.close();
  }

  /** Ends the function with `v` as its result. */
  end(v: Val): void {
    v();
    this.e.op(Op.end);
  }
}
