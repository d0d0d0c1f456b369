/**
 * fdlibm's algorithms, ported to Wasm, so that `Math.*` in a Wasm kernel is computed inline and
 * still gives V8's result bit for bit: V8's `Math.*` are fdlibm's (src/base/ieee754.cc, from
 * FreeBSD msun), and every operation below is the C code's, in the same order, on IEEE doubles
 * with round-to-nearest, which C and Wasm share. tests/targets/cpu/wasm/fdlibm.test.ts checks every
 * port against `Math.*` over millions of inputs including the edge values.
 *
 * This module: exp, as a scalar function (`emitExp`) and in SIMD lanes (`emitExpLanes`: f64x2,
 * float32 lanes through f64x2 halves, where a cheaper approximation with a rounding test gives the
 * same float32 wherever it is far enough from a rounding midpoint). The other ports: math-ports.ts.
 */
import type { MathFunction } from '../../../compiler/math-functions.js';
import { MiscOp, Op, SimdOp, ValType } from './encoder.js';
import type { FunctionEmitter } from './emit-scalar.js';
import type { MathPort, PortFunction } from './math-port.js';

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

/** |x| from which fdlibm's reduction is not k = 0: the high word of |x| above 0x3fd62e42 (≈ 0.5·ln 2). */
const HALF_LN2_UP = fromWords(0x3fd62e43, 0);
/** The lanes the vector code computes: 2^-28 ≤ |x| ≤ FAST_MAX (there −1021 ≤ k ≤ 1021), x ≠ 1. */
const TWO_M28 = 2 ** -28;
const FAST_MAX = 708;
/** kf + MAGIC has kf + 1023 in its low mantissa bits (kf an integer, |kf| < 2^11). */
const MAGIC = 2 ** 52 + 1023;

/** Multiplies the f64x2 on the stack by 2^k, k the integer-valued f64x2 in local kf: 2^k's bits are (k + 1023) << 52. */
function timesPow2(e: FunctionEmitter, kf: number): void {
  e.get(kf);
  splat64(e, MAGIC);
  e.simd(SimdOp.f64x2_add);
  e.i32(52);
  e.simd(SimdOp.i64x2_shl);
  e.simd(SimdOp.f64x2_mul);
}

/** Pushes the high two float32 lanes of the f32x4 in local x as an f64x2. */
export function promoteHigh(e: FunctionEmitter, x: number): void {
  e.get(x).get(x).shuffle([8, 9, 10, 11, 12, 13, 14, 15, 8, 9, 10, 11, 12, 13, 14, 15]);
  e.simd(SimdOp.f64x2_promote_low_f32x4);
}

/** Joins two f32x4 whose lanes 0–1 hold values (demoted halves) into one: a's lanes 0–1, then b's. */
export function joinHalves(e: FunctionEmitter): void {
  e.shuffle([0, 1, 2, 3, 4, 5, 6, 7, 16, 17, 18, 19, 20, 21, 22, 23]);
}

/** An f64x2 constant with `v` in both lanes. */
function splat64(e: FunctionEmitter, v: number): void {
  e.simd(SimdOp.v128_const);
  e.code.f64(v).f64(v);
}

/**
 * Replaces the f64x2 on the stack by fdlibm's exp of each lane, for lanes where 2^-28 ≤ |x| ≤ 708
 * and x ≠ 1 (the others give something else; the callers send them to the scalar port). The
 * same IEEE operations in the same order as `emitExp` (f64x2 arithmetic rounds each lane as the
 * scalar instruction does), with fdlibm's three reductions merged into one by the choice of k:
 *  - |x| ≤ 0.5·ln 2 (by the high word): k = 0. fdlibm returns 1 − ((x·c)/(c − 2) − x); here
 *    hi = x − 0·ln2HI = x, lo = 0·ln2LO = +0, x' = hi − lo = x, and
 *    1 − ((lo − (x·c)/(2 − c)) − hi) is the same number: fl(c − 2) = −fl(2 − c) (rounding is
 *    symmetric), a/(−b) = −(a/b), and 0 − q = −q (when q = ±0 both give −x − … = −x, x ≠ 0).
 *    The result is then multiplied by 2^0 = 1, exactly.
 *  - otherwise k = (int)(invln2·x + halF[xsb]) (a truncation, as C's cast), t = k, as fdlibm's
 *    third case. Its second case, high word of |x| from 0x3fd62e43 to below 0x3ff0a2b2, takes
 *    k = ±1, hi = x − ln2HI[xsb], lo = ln2LO[xsb]: the formula gives exactly that there. Those |x|
 *    lie between 0.5·ln 2 + 1.7e7 ulps and 1.5·ln 2 − 1.0e9 ulps, so invln2·|x| (rounded: 0.5 and
 *    1.5 are doubles) is in [0.5, 1.5), + ½ in [1, 2), and k = ±1; then k·ln2HI = ±ln2HI and
 *    k·ln2LO = ±ln2LO exactly, and x − (−ln2HI) is x + ln2HI.
 * 2^k is built from its exponent bits as fdlibm's INSERT_WORDS (−1021 ≤ k ≤ 1021 here).
 * tests/targets/cpu/wasm/fdlibm.test.ts and bench/exp-exhaustive.ts check it against Math.exp.
 */
export function emitExpF64x2Fast(e: FunctionEmitter): void {
  const x = e.local(ValType.v128);
  const kf = e.local(ValType.v128);
  const hi = e.local(ValType.v128);
  const lo = e.local(ValType.v128);
  const r = e.local(ValType.v128);
  const t = e.local(ValType.v128);
  const c = e.local(ValType.v128);
  const s = (op: SimdOp) => e.simd(op);
  // kf = trunc(invln2·x + copysign(½, x)) where |x| > 0.5·ln 2 (by the high word), else +0
  e.tee(x);
  splat64(e, INV_LN2);
  s(SimdOp.f64x2_mul);
  e.get(x);
  splat64(e, -0);
  s(SimdOp.v128_and);
  splat64(e, 0.5);
  s(SimdOp.v128_or);
  s(SimdOp.f64x2_add);
  s(SimdOp.f64x2_trunc);
  e.get(x);
  s(SimdOp.f64x2_abs);
  splat64(e, HALF_LN2_UP);
  s(SimdOp.f64x2_ge);
  s(SimdOp.v128_and);
  e.tee(kf);
  // hi = x − kf·ln2HI; lo = kf·ln2LO; x' = hi − lo
  splat64(e, LN2_LO);
  s(SimdOp.f64x2_mul);
  e.set(lo);
  e.get(x).get(kf);
  splat64(e, LN2_HI);
  s(SimdOp.f64x2_mul);
  s(SimdOp.f64x2_sub);
  e.tee(hi);
  e.get(lo);
  s(SimdOp.f64x2_sub);
  e.tee(r);
  // t = x'·x'; c = x' − t·(P1 + t·(P2 + t·(P3 + t·(P4 + t·P5))))
  e.get(r);
  s(SimdOp.f64x2_mul);
  e.set(t);
  e.get(r).get(t);
  splat64(e, P1);
  e.get(t);
  splat64(e, P2);
  e.get(t);
  splat64(e, P3);
  e.get(t);
  splat64(e, P4);
  e.get(t);
  splat64(e, P5);
  for (let i = 0; i < 4; i++) s(SimdOp.f64x2_mul), s(SimdOp.f64x2_add);
  s(SimdOp.f64x2_mul);
  s(SimdOp.f64x2_sub);
  e.set(c);
  // y = 1 − ((lo − (x'·c)/(2 − c)) − hi)
  splat64(e, 1);
  e.get(lo).get(r).get(c);
  s(SimdOp.f64x2_mul);
  splat64(e, 2);
  e.get(c);
  s(SimdOp.f64x2_sub);
  s(SimdOp.f64x2_div);
  s(SimdOp.f64x2_sub);
  e.get(hi);
  s(SimdOp.f64x2_sub);
  s(SimdOp.f64x2_sub);
  timesPow2(e, kf);
}

/** Pushes the mask of f64x2 (or f32x4) lanes the vector code computes: 2^-28 ≤ |x| ≤ 708, x ≠ 1. */
function fastLanes(e: FunctionEmitter, x: number, f32: boolean): void {
  const ax = e.local(ValType.v128);
  const c = (v: number) => (f32 ? (e.constant(v, 'float32'), e.simd(SimdOp.f32x4_splat)) : splat64(e, v));
  e.get(x).simd(f32 ? SimdOp.f32x4_abs : SimdOp.f64x2_abs).tee(ax);
  c(TWO_M28);
  e.simd(f32 ? SimdOp.f32x4_ge : SimdOp.f64x2_ge);
  e.get(ax);
  c(FAST_MAX);
  e.simd(f32 ? SimdOp.f32x4_le : SimdOp.f64x2_le);
  e.simd(SimdOp.v128_and);
  e.get(x);
  c(1);
  e.simd(f32 ? SimdOp.f32x4_ne : SimdOp.f64x2_ne);
  e.simd(SimdOp.v128_and);
}

/**
 * float32 exp with a rounding test (Ziv): where the result is rounded once to float32, it must be
 * `Math.fround(Math.exp(x))`, and fdlibm's double is < 1 ulp from e^x, so any double y close
 * enough to e^x and not close to a float32 rounding midpoint rounds to the same float32.
 *
 * y: k = nearest(x·invln2) (|k| ≤ 128), r = x − k·LN2 (LN2 the double nearest ln 2), y = P(r)·2^k
 * with P the degree-7 minimax polynomial below (Horner). Error of y, relative to e^x:
 *  - reduction: |k·LN2 − k·ln 2| ≤ 128·2^-55.3 = 2^-48.3, rounding of k·LN2 (< 89) ≤ 2^-47, of
 *    x − k·LN2 (|r| < 0.35) ≤ 2^-55: |r − (x − k·ln 2)| ≤ 2^-46.5, a relative error ≤ 2^-46.4 in e^r;
 *  - P on |r| ≤ 0.34658 (0.5·ln 2 plus the rounding of x·invln2): relative error of the double
 *    Horner evaluation vs e^r (80-bit) ≤ 2^-34.53 on 2,000,001 equispaced points (fit by Lawson
 *    iteration, measured in NumPy, same IEEE ops); ·2^k is exact (normal results).
 * So |y − e^x| ≤ ε·e^x with ε = 2^-34 (0.4 bits to spare). With y in [2^e, 2^(e+1)) and
 * u = 2^(e−52) its ulp: ε·e^x < 2^-34·2^(e+1)·(1 + 2ε) < 2^19·u + 1·u, and fdlibm's f = Math.exp(x)
 * is < ulp(f) ≤ 2u from e^x, so |y − f| < 2^19 + 3 ulps of y. A normal float32 cell is 2^29
 * ulps of y (its low 29 mantissa bits are the offset from the float32 below; the midpoint is
 * at 0x10000000); MARGIN = 2^19 + 2^10 > 2^19 + 3. Where those 29 bits are farther than MARGIN
 * from 0x10000000, every midpoint is farther than |y − f| from y (the next cells' midpoints are
 * ≥ 2^27 ulps away), so y and f lie strictly on the same side of each, and
 * fround(y) = fround(f). Lanes are taken only for FAST32_LO ≤ x ≤ FAST32_HI (float32 compares,
 * false for NaN): there e^x ∈ [2^-126·(1 + 4.2e-5), 2^128·(1 − 3.7e-5)], so y and f are normal
 * float32 magnitudes below 2^128 in double (the test's premise) with room for ε. A vector with
 * any lane off that range or near a midpoint (~2^-9 of lanes) takes the exact path (emitExpLanes'
 * fdlibm lanes / scalar port). bench/exp-exhaustive.ts checks all 2^32 float32 inputs.
 */
const FAST32_LO = Math.fround(-87.3365);
const FAST32_HI = Math.fround(88.7228);
/** P(r) ≈ e^r on |r| ≤ 0.34658, coefficients of r^0…r^7 (hex: 0x1.ffffffffabb98p-1, 0x1.000000010b542p+0, 0x1.00000059ce4b6p-1, 0x1.55555343f3fefp-3, 0x1.5554686d223dcp-5, 0x1.1112fa34c9a62p-7, 0x1.6da4b0423d230p-10, 0x1.9eb721ec1cfe4p-13). */
const EXP32_P = [
  0.999999999961676, 1.000000000243134, 0.5000000104547755, 0.16666665125967436, 0.041666225392937156,
  0.008333561106678992, 0.0013948185519981997, 0.0001977516943757466,
];
const MARGIN = 2 ** 19 + 2 ** 10;
/** The rounding test's constants, for bench/exp-exhaustive.ts's replica. */
export const EXP32_TEST = { lo: FAST32_LO, hi: FAST32_HI, p: EXP32_P, margin: MARGIN, invln2: INV_LN2 } as const;

/** Replaces the f64x2 on the stack (float32 values) by y ≈ e^x as above (any bits off FAST32_LO…HI). */
function emitExp32Approx(e: FunctionEmitter): void {
  const x = e.local(ValType.v128);
  const kf = e.local(ValType.v128);
  const r = e.local(ValType.v128);
  const s = (op: SimdOp) => e.simd(op);
  // kf = nearest(x·invln2); r = x − kf·LN2
  e.tee(x).get(x);
  splat64(e, INV_LN2);
  s(SimdOp.f64x2_mul);
  s(SimdOp.f64x2_nearest);
  e.tee(kf);
  splat64(e, Math.LN2);
  s(SimdOp.f64x2_mul);
  s(SimdOp.f64x2_sub);
  e.set(r);
  // P(r), Horner
  splat64(e, EXP32_P[7]!);
  for (let i = 6; i >= 0; i--) {
    e.get(r);
    s(SimdOp.f64x2_mul);
    splat64(e, EXP32_P[i]!);
    s(SimdOp.f64x2_add);
  }
  timesPow2(e, kf);
}

/** An i32x4 constant with `v` in every lane. */
function splat32i(e: FunctionEmitter, v: number): void {
  e.simd(SimdOp.v128_const);
  for (let i = 0; i < 4; i++) e.code.byte(v & 0xff).byte((v >>> 8) & 0xff).byte((v >>> 16) & 0xff).byte((v >>> 24) & 0xff);
}

/**
 * f32x4 → f32x4 exp by the rounding test above; the vector `exact` path is emitted for vectors
 * the test rejects (x is its local holding the input).
 */
function emitExp32Lanes(e: FunctionEmitter, x: number, exact: () => void): void {
  const y0 = e.local(ValType.v128);
  const y1 = e.local(ValType.v128);
  e.get(x);
  e.simd(SimdOp.f64x2_promote_low_f32x4);
  emitExp32Approx(e);
  e.set(y0);
  promoteHigh(e, x);
  emitExp32Approx(e);
  e.set(y1);
  // ok = in range and not near a midpoint: FAST32_LO ≤ x ≤ FAST32_HI, and the low 29 bits of y
  // (low words of y0, y1 gathered) outside 0x10000000 ± MARGIN: ((lo − (2^28 − MARGIN)) mod 2^29) > 2·MARGIN
  e.get(x);
  e.constant(FAST32_LO, 'float32');
  e.simd(SimdOp.f32x4_splat).simd(SimdOp.f32x4_ge);
  e.get(x);
  e.constant(FAST32_HI, 'float32');
  e.simd(SimdOp.f32x4_splat).simd(SimdOp.f32x4_le).simd(SimdOp.v128_and);
  e.get(y0).get(y1);
  e.shuffle([0, 1, 2, 3, 8, 9, 10, 11, 16, 17, 18, 19, 24, 25, 26, 27]);
  splat32i(e, 2 ** 28 - MARGIN);
  e.simd(SimdOp.i32x4_sub);
  splat32i(e, 0x1fffffff);
  e.simd(SimdOp.v128_and);
  splat32i(e, 2 * MARGIN);
  e.simd(SimdOp.i32x4_le_u);
  e.simd(SimdOp.v128_andnot);
  e.simd(SimdOp.i32x4_all_true);
  e.open('if', ValType.v128);
  {
    e.get(y0).simd(SimdOp.f32x4_demote_f64x2_zero);
    e.get(y1).simd(SimdOp.f32x4_demote_f64x2_zero);
    joinHalves(e);
  }
  e.else();
  exact();
  e.close();
}

/**
 * Replaces the vector on the stack by `Math.exp` of each lane, bit for bit: float64 (f64x2),
 * float32 in 4 lanes (f32x4: each half promoted to f64x2, exp, rounded to float32 once, as
 * `Math.fround(Math.exp(x))`), or float32 in lanes 0 and 1 (`'f32x2'`, in 2-lane code). When a
 * lane is off the vector code's range (|x| < 2^-28, |x| > 708, x = 1, ±∞, NaN: rare in practice),
 * every lane of the vector calls the scalar port `scalarExp` instead (emitExp). 'f32x4' first
 * tries the cheaper approximation with a rounding test (emitExp32Lanes); only the vectors it
 * rejects run fdlibm's lanes.
 */
export function emitExpLanes(e: FunctionEmitter, scalarExp: number, shape: 'f64x2' | 'f32x4' | 'f32x2'): void {
  if (shape === 'f32x2') {
    // Lanes 2 and 3 hold no value of the kernel: lanes 0 and 1 in doubles, rounded back.
    e.simd(SimdOp.f64x2_promote_low_f32x4);
    emitExpLanes(e, scalarExp, 'f64x2');
    e.simd(SimdOp.f32x4_demote_f64x2_zero);
    return;
  }
  const x = e.local(ValType.v128);
  const f32 = shape === 'f32x4';
  e.set(x);
  if (f32) emitExp32Lanes(e, x, () => emitExpLanesExact(e, scalarExp, x, true));
  else emitExpLanesExact(e, scalarExp, x, false);
}

/** fdlibm's exp in lanes on the vector in local x (f64x2, or f32x4 through two f64x2 halves). */
function emitExpLanesExact(e: FunctionEmitter, scalarExp: number, x: number, f32: boolean): void {
  const lanes = f32 ? 4 : 2;
  fastLanes(e, x, f32);
  e.simd(f32 ? SimdOp.i32x4_all_true : SimdOp.i64x2_all_true);
  e.open('if', ValType.v128);
  {
    e.get(x);
    if (!f32) emitExpF64x2Fast(e);
    else {
      e.simd(SimdOp.f64x2_promote_low_f32x4);
      emitExpF64x2Fast(e);
      e.simd(SimdOp.f32x4_demote_f64x2_zero);
      {
        promoteHigh(e, x);
        emitExpF64x2Fast(e);
        e.simd(SimdOp.f32x4_demote_f64x2_zero);
        joinHalves(e);
      }
    }
  }
  e.else();
  {
    e.get(x);
    for (let l = 0; l < lanes; l++) {
      e.get(x);
      e.simd(f32 ? SimdOp.f32x4_extract_lane : SimdOp.f64x2_extract_lane);
      e.code.byte(l);
      if (f32) e.op(Op.f64_promote_f32);
      e.code.byte(Op.call).u32(scalarExp);
      if (f32) e.op(Op.f32_demote_f64);
      e.simd(f32 ? SimdOp.f32x4_replace_lane : SimdOp.f64x2_replace_lane);
      e.code.byte(l);
    }
  }
  e.close();
}

export const EXP_FUNCTIONS: Readonly<Record<string, PortFunction>> = {
  'fdlibm:exp': { params: [ValType.f64], results: [ValType.f64], calls: [], emit: emitExp },
};

export const EXP_PORTS: Partial<Record<MathFunction, MathPort>> = {
  exp: { arity: 1, lanes: emitExpLanes },
};
