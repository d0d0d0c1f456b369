/**
 * fdlibm's algorithms, ported to Wasm, so that `Math.*` in a Wasm kernel is computed inline and
 * still gives V8's result bit for bit: V8's `Math.*` are fdlibm's (src/base/ieee754.cc, from
 * FreeBSD msun), and every operation below is the C code's, in the same order, on IEEE doubles
 * with round-to-nearest, which C and Wasm share. tests/engines/wasm/fdlibm.test.ts checks every
 * port against `Math.*` over millions of inputs including the edge values.
 *
 * Ported so far: exp. Other functions call V8's own `Math.*` through an import.
 */
import type { MathFunction } from '../../compiler/ir.js';
import { MiscOp, Op, ValType } from './encoder.js';
import type { FunctionEmitter } from './emit-scalar.js';

/** A double from its two 32-bit words, as fdlibm writes its constants. */
function fromWords(hi: number, lo: number): number {
  const view = new DataView(new ArrayBuffer(8));
  view.setUint32(0, hi >>> 0);
  view.setUint32(4, lo >>> 0);
  return view.getFloat64(0);
}

const O_THRESHOLD = fromWords(0x40862e42, 0xfefa39ef);
const U_THRESHOLD = fromWords(0xc0874910, 0xd52d3051);
const LN2_HI = fromWords(0x3fe62e42, 0xfee00000);
const LN2_LO = fromWords(0x3dea39ef, 0x35793c76);
const INV_LN2 = fromWords(0x3ff71547, 0x652b82fe);
const P1 = fromWords(0x3fc55555, 0x5555553e);
const P2 = fromWords(0xbf66c16c, 0x16bebd93);
const P3 = fromWords(0x3f11566a, 0xaf25de2c);
const P4 = fromWords(0xbebbbd41, 0xc5d26bf1);
const P5 = fromWords(0x3e663769, 0x72bea4d0);
const E = fromWords(0x4005bf0a, 0x8b145769);
const TWO_M1000 = fromWords(0x01700000, 0);
const TWO_1023 = fromWords(0x7fe00000, 0);

/** The functions ported here. */
export const PORTED: ReadonlySet<MathFunction> = new Set<MathFunction>(['exp']);

/**
 * Emits the body of `exp(x: f64) → f64` (parameter 0), fdlibm's e_exp.c as V8 has it (including
 * V8's special case `exp(1) = E`).
 */
export function emitExp(e: FunctionEmitter): void {
  const x = 0;
  const hx = e.local(ValType.i32);
  const xsb = e.local(ValType.i32);
  const k = e.local(ValType.i32);
  const hi = e.local(ValType.f64);
  const lo = e.local(ValType.f64);
  const t = e.local(ValType.f64);
  const c = e.local(ValType.f64);
  const y = e.local(ValType.f64);
  const twopk = e.local(ValType.f64);
  const f = (v: number) => e.constant(v, 'float64');
  const ret = () => e.op(Op.return);

  // hx = high word of x; xsb = sign bit; hx = high word of |x|
  e.get(x).op(Op.i64_reinterpret_f64).code.byte(Op.i64_const).s64(32n);
  e.op(Op.i64_shr_u).op(Op.i32_wrap_i64).tee(hx);
  e.i32(31).op(Op.i32_shr_u).set(xsb);
  e.get(hx).i32(0x7fffffff).op(Op.i32_and).set(hx);

  // Non-finite, overflow and underflow arguments.
  e.get(hx).i32(0x40862e42).op(Op.i32_ge_u).open('if');
  {
    e.get(hx).i32(0x7ff00000).op(Op.i32_ge_u).open('if');
    {
      e.get(x).get(x).op(Op.f64_ne).open('if');
      e.get(x).get(x).op(Op.f64_add);
      ret();
      e.close();
      // exp(+inf) = inf, exp(-inf) = 0
      e.get(x);
      f(0);
      e.get(xsb).op(Op.i32_eqz).op(Op.select);
      ret();
    }
    e.close();
    e.get(x);
    f(O_THRESHOLD);
    e.op(Op.f64_gt).open('if');
    f(Infinity); // huge * huge
    ret();
    e.close();
    e.get(x);
    f(U_THRESHOLD);
    e.op(Op.f64_lt).open('if');
    f(0); // twom1000 * twom1000
    ret();
    e.close();
  }
  e.close();

  // Argument reduction.
  e.get(hx).i32(0x3fd62e42).op(Op.i32_gt_u).open('if');
  {
    e.get(hx).i32(0x3ff0a2b2).op(Op.i32_lt_u).open('if');
    {
      e.get(x);
      f(1);
      e.op(Op.f64_eq).open('if');
      f(E);
      ret();
      e.close();
      // hi = x - ln2HI[xsb]; lo = ln2LO[xsb]; k = 1 - xsb - xsb
      e.get(x);
      f(-LN2_HI);
      f(LN2_HI);
      e.get(xsb).op(Op.select).op(Op.f64_sub).set(hi);
      f(-LN2_LO);
      f(LN2_LO);
      e.get(xsb).op(Op.select).set(lo);
      e.i32(1).get(xsb).op(Op.i32_sub).get(xsb).op(Op.i32_sub).set(k);
    }
    e.else();
    {
      // k = (int)(invln2 * x + halF[xsb]); t = k; hi = x - t*ln2HI[0]; lo = t*ln2LO[0]
      f(INV_LN2);
      e.get(x).op(Op.f64_mul);
      f(-0.5);
      f(0.5);
      e.get(xsb).op(Op.select).op(Op.f64_add);
      e.misc(MiscOp.i32_trunc_sat_f64_s).tee(k);
      e.op(Op.f64_convert_i32_s).set(t);
      e.get(x).get(t);
      f(LN2_HI);
      e.op(Op.f64_mul).op(Op.f64_sub).set(hi);
      e.get(t);
      f(LN2_LO);
      e.op(Op.f64_mul).set(lo);
    }
    e.close();
    e.get(hi).get(lo).op(Op.f64_sub).set(0);
  }
  e.else();
  {
    // |x| < 2^-28: return 1 + x (huge + x > one always holds)
    e.get(hx).i32(0x3e300000).op(Op.i32_lt_u).open('if');
    f(1);
    e.get(x).op(Op.f64_add);
    ret();
    e.close();
    e.i32(0).set(k);
  }
  e.close();

  // t = x*x; twopk = 2^k (or 2^(k+1000) for k < -1021)
  e.get(x).get(x).op(Op.f64_mul).set(t);
  e.i32(0x3ff00000);
  e.get(k);
  e.get(k).i32(1000).op(Op.i32_add);
  e.get(k).i32(-1021).op(Op.i32_ge_s).op(Op.select);
  e.i32(20).op(Op.i32_shl).op(Op.i32_add);
  e.op(Op.i64_extend_i32_u).code.byte(Op.i64_const).s64(32n);
  e.op(Op.i64_shl).op(Op.f64_reinterpret_i64).set(twopk);
  // c = x - t*(P1 + t*(P2 + t*(P3 + t*(P4 + t*P5))))
  e.get(x).get(t);
  f(P1);
  e.get(t);
  f(P2);
  e.get(t);
  f(P3);
  e.get(t);
  f(P4);
  e.get(t);
  f(P5);
  e.op(Op.f64_mul).op(Op.f64_add).op(Op.f64_mul).op(Op.f64_add).op(Op.f64_mul).op(Op.f64_add).op(Op.f64_mul).op(Op.f64_add);
  e.op(Op.f64_mul).op(Op.f64_sub).set(c);
  // k == 0: return one - ((x*c)/(c-2.0) - x)
  e.get(k).op(Op.i32_eqz).open('if');
  f(1);
  e.get(x).get(c).op(Op.f64_mul).get(c);
  f(2);
  e.op(Op.f64_sub).op(Op.f64_div).get(x).op(Op.f64_sub).op(Op.f64_sub);
  ret();
  e.close();
  // y = one - ((lo - (x*c)/(2.0-c)) - hi)
  f(1);
  e.get(lo).get(x).get(c).op(Op.f64_mul);
  f(2);
  e.get(c).op(Op.f64_sub).op(Op.f64_div).op(Op.f64_sub).get(hi).op(Op.f64_sub).op(Op.f64_sub).set(y);
  e.get(k).i32(-1021).op(Op.i32_ge_s).open('if');
  {
    e.get(k).i32(1024).op(Op.i32_eq).open('if');
    e.get(y);
    f(2);
    e.op(Op.f64_mul);
    f(TWO_1023);
    e.op(Op.f64_mul);
    ret();
    e.close();
    e.get(y).get(twopk).op(Op.f64_mul);
    ret();
  }
  e.close();
  e.get(y).get(twopk).op(Op.f64_mul);
  f(TWO_M1000);
  e.op(Op.f64_mul);
  e.op(Op.end);
}
