/**
 * Double-precision arithmetic written once for a scalar f64 and for f64x2 lanes, so that a port
 * of a C formula reads like the C (`sub(one, mul(half, z))`) and emits the same IEEE operations in
 * the same order in either width: each f64x2 instruction rounds every lane exactly as the f64
 * instruction rounds a scalar. Conditions are i32 (scalar) or lane masks (f64x2), and `select`
 * takes either, so straight-line code with selects is shared as well; branches stay scalar.
 */
import { Op, SimdOp, ValType } from './encoder.js';
import type { FunctionEmitter } from './emit-scalar.js';

/** Code that pushes one value: an f64 (scalar) or an f64x2 (lanes), or a condition. */
export type Value = () => void;

/** A double from its two 32-bit words, as fdlibm writes its constants. */
export function fromWords(hi: number, lo: number): number {
  const view = new DataView(new ArrayBuffer(8));
  view.setUint32(0, hi >>> 0);
  view.setUint32(4, lo >>> 0);
  return view.getFloat64(0);
}

/** An f64x2 constant with `v` in both lanes. */
export function splat64(e: FunctionEmitter, v: number): void {
  e.simd(SimdOp.v128_const);
  e.code.f64(v).f64(v);
}

/** An i64x2 constant with `v` in both lanes. */
function splatI64(e: FunctionEmitter, v: bigint): void {
  e.simd(SimdOp.v128_const);
  for (let lane = 0; lane < 2; lane++) {
    for (let b = 0n; b < 64n; b += 8n) e.code.byte(Number((BigInt.asUintN(64, v) >> b) & 0xffn));
  }
}

const F64: Record<string, Op> = {
  add: Op.f64_add, sub: Op.f64_sub, mul: Op.f64_mul, div: Op.f64_div, neg: Op.f64_neg, abs: Op.f64_abs, sqrt: Op.f64_sqrt,
  lt: Op.f64_lt, le: Op.f64_le, gt: Op.f64_gt, ge: Op.f64_ge, eq: Op.f64_eq, ne: Op.f64_ne, trunc: Op.f64_trunc,
  and: Op.i32_and, or: Op.i32_or,
};
const F64X2: Record<string, SimdOp> = {
  add: SimdOp.f64x2_add, sub: SimdOp.f64x2_sub, mul: SimdOp.f64x2_mul, div: SimdOp.f64x2_div, neg: SimdOp.f64x2_neg,
  abs: SimdOp.f64x2_abs, sqrt: SimdOp.f64x2_sqrt, lt: SimdOp.f64x2_lt, le: SimdOp.f64x2_le, gt: SimdOp.f64x2_gt,
  ge: SimdOp.f64x2_ge, eq: SimdOp.f64x2_eq, ne: SimdOp.f64x2_ne, trunc: SimdOp.f64x2_trunc, and: SimdOp.v128_and, or: SimdOp.v128_or,
};

/** Double arithmetic on one value (`lanes` false: f64) or two (`lanes` true: f64x2). */
export class Floats {
  /** The Wasm type of a value (and of a condition in lanes). */
  readonly type: ValType;

  constructor(readonly e: FunctionEmitter, readonly lanes: boolean) {
    this.type = lanes ? ValType.v128 : ValType.f64;
  }

  private op(name: string): void {
    if (this.lanes) this.e.simd(F64X2[name]!);
    else this.e.op(F64[name]!);
  }

  private unary(name: string): (a: Value) => Value {
    return (a) => () => (a(), this.op(name));
  }

  private binary(name: string): (a: Value, b: Value) => Value {
    return (a, b) => () => (a(), b(), this.op(name));
  }

  /** A constant (in every lane). */
  c(v: number): Value {
    return () => (this.lanes ? splat64(this.e, v) : this.e.code.byte(Op.f64_const).f64(v));
  }

  /** The value of a local. */
  get(local: number): Value {
    return () => void this.e.get(local);
  }

  /** Computes `v` now into a new local (of the value type, or `type`), and reads that local. */
  let(v: Value, type: ValType = this.type): Value {
    const local = this.e.local(type);
    v();
    this.e.set(local);
    return this.get(local);
  }

  /** Computes `v` now into `local`. */
  set(local: number, v: Value): void {
    v();
    this.e.set(local);
  }

  readonly add = this.binary('add');
  readonly sub = this.binary('sub');
  readonly mul = this.binary('mul');
  readonly div = this.binary('div');
  readonly neg = this.unary('neg');
  readonly abs = this.unary('abs');
  readonly sqrt = this.unary('sqrt');
  /** Rounds toward zero: C's (int) cast of a value that fits, back in a double. */
  readonly trunc = this.unary('trunc');
  readonly lt = this.binary('lt');
  readonly le = this.binary('le');
  readonly gt = this.binary('gt');
  readonly ge = this.binary('ge');
  readonly eq = this.binary('eq');
  readonly ne = this.binary('ne');
  /** Both conditions (i32 or lane masks). */
  readonly and = this.binary('and');
  readonly or = this.binary('or');

  /** Not `cond` (i32 or lane mask). */
  not(cond: Value): Value {
    return () => {
      cond();
      if (this.lanes) this.e.simd(SimdOp.v128_not);
      else this.e.op(Op.i32_eqz);
    };
  }

  /** `cond ? a : b`, per lane. */
  select(cond: Value, a: Value, b: Value): Value {
    return () => {
      if (this.lanes) {
        a();
        b();
        cond();
        this.e.simd(SimdOp.v128_bitselect);
      } else {
        a();
        b();
        cond();
        this.e.op(Op.select);
      }
    };
  }

  /** c[0] + z·(c[1] + z·(c[2] + …)), fdlibm's Horner form. */
  horner(z: Value, c: readonly number[]): Value {
    let acc = this.c(c[c.length - 1]!);
    for (let i = c.length - 2; i >= 0; i--) acc = this.add(this.c(c[i]!), this.mul(z, acc));
    return acc;
  }

  /**
   * x with its low 32 bits cleared (fdlibm's SET_LOW_WORD(x, 0)); with `minus` set, the high word
   * also less `minus` (INSERT_WORDS(q, ix − minus, 0)).
   */
  highWord(x: Value, minus = 0): Value {
    return () => {
      x();
      if (this.lanes) {
        splatI64(this.e, -0x100000000n);
        this.e.simd(SimdOp.v128_and);
        if (minus) {
          splatI64(this.e, BigInt(minus) << 32n);
          this.e.simd(SimdOp.i64x2_sub);
        }
      } else {
        this.e.op(Op.i64_reinterpret_f64).code.byte(Op.i64_const).s64(-0x100000000n);
        this.e.op(Op.i64_and);
        if (minus) this.e.code.byte(Op.i64_const).s64(BigInt(minus) << 32n), this.e.op(Op.i64_sub);
        this.e.op(Op.f64_reinterpret_i64);
      }
    };
  }

  /** x with the sign bit flipped where `cond` holds (lanes only): −x there, bit for bit. */
  negateWhere(cond: Value, x: Value): Value {
    return () => {
      x();
      cond();
      splat64(this.e, -0);
      this.e.simd(SimdOp.v128_and);
      this.e.simd(SimdOp.v128_xor);
    };
  }

  /** Lanes only: |x| with its mantissa cleared, 2^e for a normal x = ±2^e·1.f. */
  exponentOf(x: Value): Value {
    return () => {
      x();
      splatI64(this.e, 0x7ff0000000000000n);
      this.e.simd(SimdOp.v128_and);
    };
  }
}

/** Pushes the high 32 bits of the f64 in local x as an i32 (fdlibm's GET_HIGH_WORD). */
export function highWordI32(e: FunctionEmitter, x: number): void {
  e.get(x).op(Op.i64_reinterpret_f64).code.byte(Op.i64_const).s64(32n);
  e.op(Op.i64_shr_u).op(Op.i32_wrap_i64);
}

/** Pushes the low 32 bits of the f64 in local x as an i32 (fdlibm's GET_LOW_WORD). */
export function lowWordI32(e: FunctionEmitter, x: number): void {
  e.get(x).op(Op.i64_reinterpret_f64).op(Op.i32_wrap_i64);
}

/** Emits `return` of the value. */
export function ret(e: FunctionEmitter, v: Value): void {
  v();
  e.op(Op.return);
}

/** `if (word <op> bound) { then }` on an i32 local (a high word, as fdlibm compares them). */
export function ifWord(e: FunctionEmitter, word: number, op: Op, bound: number, then: () => void): void {
  e.get(word).i32(bound).op(op).open('if');
  then();
  e.close();
}

/** Sets local `hx` (if any) to the high word of the f64 in local x, and `ix` to that of |x|. */
export function highWords(e: FunctionEmitter, x: number, hx: number | undefined, ix: number): void {
  highWordI32(e, x);
  if (hx !== undefined) e.tee(hx);
  e.i32(0x7fffffff).op(Op.i32_and).set(ix);
}
