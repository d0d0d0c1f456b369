/**
 * `Math.sin`, `Math.cos`, `Math.tan` as V8 computes them (src/base/ieee754.cc: fdlibm's s_sin.c,
 * s_cos.c, s_tan.c with __kernel_sin, __kernel_cos, __kernel_tan and __ieee754_rem_pio2), ported
 * to Wasm operation for operation: a scalar function each, and f64x2 lanes.
 *
 * Node 20's V8 (11.3) is built without `V8_USE_LIBM_TRIG_FUNCTIONS`, so its sin and cos are
 * fdlibm's, not the glibc-derived variant: these ports give V8's bits on every input checked
 * (bench/math-exhaustive.ts: every float32, 10^8 doubles), where glibc's sin differs on ~4%.
 *
 * Arguments with |x| > 2^19·π/2 (≈ 823,550) take fdlibm's multi-precision reduction
 * (__kernel_rem_pio2, a loop over a table of 2/π: rem-pio2-large.ts), which needs the scratch area
 * of the calling thread: the scalar functions take its address as their last parameter.
 *
 * In lanes (`trigLanes`), a lane is computed in SIMD when |x| ≤ π/4 (no reduction) or when the
 * reduction is fdlibm's first, 85-bit step: |x| ≤ 2^19·π/2, the high word of |x| is not π/2's
 * (where fdlibm uses a 118-bit constant), and the reduced argument keeps all but 16 of |x|'s
 * exponent bits (fdlibm's test for a second step: i > 16). fdlibm's special case for
 * π/4 < |x| < 3π/4 (n = ±1) is the same arithmetic as that first step with n = 1 (the sign
 * handled by negation, which rounding commutes with). Other lanes (NaN, ±∞, huge |x|, x within
 * 2^-16·|x| of a multiple of π/2) make the vector call the scalar function lane by lane.
 */
import type { MathFunction } from '../../../compiler/ir.js';
import { Op, SimdOp, ValType } from './encoder.js';
import type { FunctionEmitter } from './emit-scalar.js';
import { Floats, fromWords, highWordI32, highWords, ifWord, lowWordI32, ret, splat64, type Value } from './float-ops.js';
import { emitLanes, type LaneShape, type MathPort, type PortFunction } from './math-port.js';
import { remPio2Large, returnReduction } from './rem-pio2-large.js';

const HALF = 0.5;
// __kernel_sin
const S1 = fromWords(0xbfc55555, 0x55555549);
const S2_6 = [fromWords(0x3f811111, 0x1110f8a6), fromWords(0xbf2a01a0, 0x19c161d5), fromWords(0x3ec71de3, 0x57b1fe7d), fromWords(0xbe5ae5e6, 0x8a2b9ceb), fromWords(0x3de5d93a, 0x5acfd57c)];
// __kernel_cos
const C1_6 = [fromWords(0x3fa55555, 0x5555554c), fromWords(0xbf56c16c, 0x16c15177), fromWords(0x3efa01a0, 0x19cb1590), fromWords(0xbe927e4f, 0x809c52ad), fromWords(0x3e21ee9e, 0xbdb4b1c4), fromWords(0xbda8fae9, 0xbe8838d4)];
// __kernel_tan
const T = [
  fromWords(0x3fd55555, 0x55555563), fromWords(0x3fc11111, 0x1110fe7a), fromWords(0x3faba1ba, 0x1bb341fe), fromWords(0x3f9664f4, 0x8406d637),
  fromWords(0x3f8226e3, 0xe96e8493), fromWords(0x3f6d6d22, 0xc9560328), fromWords(0x3f57dbc8, 0xfee08315), fromWords(0x3f4344d8, 0xf2f26501),
  fromWords(0x3f3026f7, 0x1a8d1068), fromWords(0x3f147e88, 0xa03792a6), fromWords(0x3f12b80f, 0x32f0a7e9), fromWords(0xbef375cb, 0xdb605373),
  fromWords(0x3efb2a70, 0x74bf7ad4),
];
const PIO4 = fromWords(0x3fe921fb, 0x54442d18);
const PIO4LO = fromWords(0x3c81a626, 0x33145c07);
// __ieee754_rem_pio2
const INVPIO2 = fromWords(0x3fe45f30, 0x6dc9c883);
const PIO2_1 = fromWords(0x3ff921fb, 0x54400000);
const PIO2_1T = fromWords(0x3dd0b461, 0x1a626331);
const PIO2_2 = fromWords(0x3dd0b461, 0x1a600000);
const PIO2_2T = fromWords(0x3ba3198a, 0x2e037073);
const PIO2_3 = fromWords(0x3ba3198a, 0x2e000000);
const PIO2_3T = fromWords(0x397b839a, 0x252049c1);
/** The double nearest π/2: n·PIO2 rounded has the high word of fdlibm's npio2_hw[n − 1] for every n in 1…32. */
const PIO2 = Math.PI / 2;

/** __kernel_sin(x, y, iy): sin(x + y) for |x| ≤ π/4; iy = 0 when y is 0. */
const kernelSin: PortFunction = {
  params: [ValType.f64, ValType.f64, ValType.i32], results: [ValType.f64], calls: [],
  emit(e) {
    const F = new Floats(e, false);
    const [x, y] = [F.get(0), F.get(1)];
    const ix = e.local(ValType.i32);
    highWords(e, 0, undefined, ix);
    ifWord(e, ix, Op.i32_lt_u, 0x3e400000, () => ret(e, x)); // |x| < 2^-27: x ((int)x == 0 always)
    const z = F.let(F.mul(x, x));
    const v = F.let(F.mul(z, x));
    const r = F.let(F.horner(z, S2_6));
    e.get(2).op(Op.i32_eqz).open('if');
    ret(e, F.add(x, F.mul(v, F.add(F.c(S1), F.mul(z, r)))));
    e.close();
    F.sub(x, F.sub(F.sub(F.mul(z, F.sub(F.mul(F.c(HALF), y), F.mul(v, r))), y), F.mul(v, F.c(S1))))();
    e.op(Op.end);
  },
};

/** __kernel_cos(x, y): cos(x + y) for |x| ≤ π/4, as a Value of locals x and y (shared by both widths). */
function kernelCosValue(F: Floats, x: Value, y: Value): Value {
  const z = F.let(F.mul(x, x));
  const r = F.let(F.mul(z, F.horner(z, C1_6)));
  // qx = 0 below |x| = 0.3 (then (1 − 0) − ((z/2 − 0) − …) is fdlibm's 1 − (z/2 − …) exactly),
  // 0.28125 above 0.78125, else |x|/4 by the high word.
  const ax = F.let(F.abs(x));
  const qx = F.let(F.select(F.lt(ax, F.c(fromWords(0x3fd33333, 0))), F.c(0),
    F.select(F.ge(ax, F.c(fromWords(0x3fe90001, 0))), F.c(0.28125), F.highWord(ax, 0x00200000))));
  const iz = F.sub(F.mul(F.c(HALF), z), qx);
  const a = F.sub(F.c(1), qx);
  return F.sub(a, F.sub(iz, F.sub(F.mul(z, r), F.mul(x, y))));
}

const kernelCos: PortFunction = {
  params: [ValType.f64, ValType.f64], results: [ValType.f64], calls: [],
  emit(e) {
    const F = new Floats(e, false);
    const ix = e.local(ValType.i32);
    highWords(e, 0, undefined, ix);
    ifWord(e, ix, Op.i32_lt_u, 0x3e400000, () => ret(e, F.c(1))); // |x| < 2^-27
    kernelCosValue(F, F.get(0), F.get(1))();
    e.op(Op.end);
  },
};

/** __kernel_tan(x, y, iy): tan(x + y) (iy = 1) or −1/tan(x + y) (iy = −1) for |x| ≤ π/4. */
const kernelTan: PortFunction = {
  params: [ValType.f64, ValType.f64, ValType.i32], results: [ValType.f64], calls: [],
  emit(e) {
    const F = new Floats(e, false);
    const [X, Y, IY] = [0, 1, 2];
    const x = F.get(X);
    const y = F.get(Y);
    const hx = e.local(ValType.i32);
    const ix = e.local(ValType.i32);
    highWords(e, X, hx, ix);
    /** −1/(x + y) carefully: fdlibm's two-piece reciprocal. */
    const carefulReciprocal = (w: Value, r: Value) => {
      const z = F.let(F.highWord(w));
      const v = F.let(F.sub(r, F.sub(z, x)));
      const a = F.let(F.div(F.c(-1), w));
      const t = F.let(F.highWord(a));
      const s = F.let(F.add(F.c(1), F.mul(t, z)));
      return F.add(t, F.mul(a, F.add(s, F.mul(t, v))));
    };
    ifWord(e, ix, Op.i32_lt_u, 0x3e300000, () => {
      // |x| < 2^-28 ((int)x == 0 always)
      e.get(ix);
      lowWordI32(e, X);
      e.op(Op.i32_or).get(IY).i32(1).op(Op.i32_add).op(Op.i32_or).op(Op.i32_eqz).open('if');
      ret(e, F.div(F.c(1), F.abs(x)));
      e.close();
      e.get(IY).i32(1).op(Op.i32_eq).open('if');
      ret(e, x);
      e.close();
      ret(e, carefulReciprocal(F.let(F.add(x, y)), y));
    });
    const big = e.local(ValType.i32);
    e.get(ix).i32(0x3fe59428).op(Op.i32_ge_u).tee(big).open('if');
    {
      e.get(hx).i32(0).op(Op.i32_lt_s).open('if');
      F.set(X, F.neg(x));
      F.set(Y, F.neg(y));
      e.close();
      const z = F.let(F.sub(F.c(PIO4), x));
      const w = F.let(F.sub(F.c(PIO4LO), y));
      F.set(X, F.add(z, w));
      F.set(Y, F.c(0));
    }
    e.close();
    const z = F.let(F.mul(x, x));
    const w = F.let(F.mul(z, z));
    const r = e.local(ValType.f64);
    F.set(r, F.horner(w, [T[1]!, T[3]!, T[5]!, T[7]!, T[9]!, T[11]!]));
    const v = F.let(F.mul(z, F.horner(w, [T[2]!, T[4]!, T[6]!, T[8]!, T[10]!, T[12]!])));
    const s = F.let(F.mul(z, x));
    F.set(r, F.add(y, F.mul(z, F.add(F.mul(s, F.add(F.get(r), v)), y))));
    F.set(r, F.add(F.get(r), F.mul(F.c(T[0]!), s)));
    const wr = F.let(F.add(x, F.get(r)));
    e.get(big).open('if');
    {
      const iy = F.let(() => e.get(IY).op(Op.f64_convert_i32_s));
      const t = F.let(F.sub(iy, F.mul(F.c(2), F.sub(x, F.sub(F.div(F.mul(wr, wr), F.add(wr, iy)), F.get(r))))));
      // (1 − ((hx >> 30) & 2)) · t: −t where x < 0 (|x| < 2 here)
      ret(e, F.select(() => e.get(hx).i32(0).op(Op.i32_lt_s), F.neg(t), t));
    }
    e.close();
    e.get(IY).i32(1).op(Op.i32_eq).open('if');
    ret(e, wr);
    e.close();
    carefulReciprocal(wr, F.get(r))();
    e.op(Op.end);
  },
};

/**
 * __ieee754_rem_pio2(x) for π/4 < |x| ≤ 2^19·π/2 (its callers send the others elsewhere):
 * (y0, y1, n) with y0 + y1 = x − n·π/2.
 */
const remPio2: PortFunction = {
  params: [ValType.f64], results: [ValType.f64, ValType.f64, ValType.i32], calls: [],
  emit(e) {
    const F = new Floats(e, false);
    const X = 0;
    const x = F.get(X);
    const hx = e.local(ValType.i32);
    const ix = e.local(ValType.i32);
    const y0 = e.local(ValType.f64);
    const y1 = e.local(ValType.f64);
    highWords(e, X, hx, ix);
    // |x| < 3π/4: n = ±1. x ∓ π/2 with 33 + 53 bits of π/2, or 33 + 33 + 53 near π/2 itself.
    const nearPio2 = (towardZero: (a: Value, b: Value) => Value, n: number) => {
      const z = F.let(towardZero(x, F.c(PIO2_1)));
      e.get(ix).i32(0x3ff921fb).op(Op.i32_ne).open('if');
      F.set(y0, towardZero(z, F.c(PIO2_1T)));
      F.set(y1, towardZero(F.sub(z, F.get(y0)), F.c(PIO2_1T)));
      e.else();
      const z2 = F.let(towardZero(z, F.c(PIO2_2)));
      F.set(y0, towardZero(z2, F.c(PIO2_2T)));
      F.set(y1, towardZero(F.sub(z2, F.get(y0)), F.c(PIO2_2T)));
      e.close();
      e.get(y0).get(y1).i32(n).op(Op.return);
    };
    ifWord(e, ix, Op.i32_lt_u, 0x4002d97c, () => {
      e.get(hx).i32(0).op(Op.i32_gt_s).open('if');
      nearPio2(F.sub, 1);
      e.close();
      nearPio2(F.add, -1);
    });
    // Medium: n = (int)(|x|·2/π + ½), then one to three steps of the reduction.
    const t = e.local(ValType.f64);
    const r = e.local(ValType.f64);
    const w = e.local(ValType.f64);
    const n = e.local(ValType.i32);
    const fn = e.local(ValType.f64);
    F.set(t, F.abs(x));
    F.add(F.mul(F.get(t), F.c(INVPIO2)), F.c(HALF))();
    e.op(Op.i32_trunc_f64_s).tee(n).op(Op.f64_convert_i32_s).set(fn);
    F.set(r, F.sub(F.get(t), F.mul(F.get(fn), F.c(PIO2_1))));
    F.set(w, F.mul(F.get(fn), F.c(PIO2_1T)));
    F.set(y0, F.sub(F.get(r), F.get(w)));
    // Unless n < 32 and the high word differs from n·π/2's (no cancellation): more steps where
    // the reduced argument lost more than 16 (then 49) bits of exponent.
    e.get(n).i32(32).op(Op.i32_lt_s);
    e.get(ix);
    highWordOf(e, F.mul(F.get(fn), F.c(PIO2)));
    e.op(Op.i32_ne).op(Op.i32_and).op(Op.i32_eqz).open('if');
    {
      const j = e.local(ValType.i32);
      e.get(ix).i32(20).op(Op.i32_shr_u).set(j);
      const lost = () => {
        e.get(j);
        highWordI32(e, y0);
        e.i32(20).op(Op.i32_shr_u).i32(0x7ff).op(Op.i32_and).op(Op.i32_sub);
      };
      const step = (c: number, ct: number) => {
        F.set(t, F.get(r));
        F.set(w, F.mul(F.get(fn), F.c(c)));
        F.set(r, F.sub(F.get(t), F.get(w)));
        F.set(w, F.sub(F.mul(F.get(fn), F.c(ct)), F.sub(F.sub(F.get(t), F.get(r)), F.get(w))));
        F.set(y0, F.sub(F.get(r), F.get(w)));
      };
      lost();
      e.i32(16).op(Op.i32_gt_s).open('if');
      step(PIO2_2, PIO2_2T);
      lost();
      e.i32(49).op(Op.i32_gt_s).open('if');
      step(PIO2_3, PIO2_3T);
      e.close();
      e.close();
    }
    e.close();
    F.set(y1, F.sub(F.sub(F.get(r), F.get(y0)), F.get(w)));
    returnReduction(e, hx, y0, y1, n);
  },
};

/** Pushes the high word (i32) of a scalar value. */
function highWordOf(e: FunctionEmitter, v: Value): void {
  v();
  e.op(Op.i64_reinterpret_f64).code.byte(Op.i64_const).s64(32n);
  e.op(Op.i64_shr_u).op(Op.i32_wrap_i64);
}

type Trig = 'sin' | 'cos' | 'tan';

/** sin, cos or tan (fdlibm's s_sin.c, s_cos.c, s_tan.c). */
function trigFunction(fn: Trig): PortFunction {
  const calls = ['fdlibm:rem_pio2', 'fdlibm:rem_pio2_large', ...(fn === 'tan' ? ['fdlibm:kernel_tan'] : ['fdlibm:kernel_sin', 'fdlibm:kernel_cos'])];
  return {
    params: [ValType.f64, ValType.i32], results: [ValType.f64], calls, takesScratch: true,
    emit(e, index) {
      const F = new Floats(e, false);
      const X = 0;
      const ix = e.local(ValType.i32);
      highWords(e, X, undefined, ix);
      const call = (name: string) => e.code.byte(Op.call).u32(index(name));
      ifWord(e, ix, Op.i32_le_u, 0x3fe921fb, () => {
        // |x| ≤ π/4: no reduction
        e.get(X).code.byte(Op.f64_const).f64(0);
        if (fn === 'sin') e.i32(0), call('fdlibm:kernel_sin');
        else if (fn === 'cos') call('fdlibm:kernel_cos');
        else e.i32(1), call('fdlibm:kernel_tan');
        e.op(Op.return);
      });
      ifWord(e, ix, Op.i32_ge_u, 0x7ff00000, () => ret(e, F.sub(F.get(X), F.get(X)))); // NaN
      const y0 = e.local(ValType.f64);
      const y1 = e.local(ValType.f64);
      const n = e.local(ValType.i32);
      // Huge |x| (> 2^19·π/2): __kernel_rem_pio2's multi-precision reduction (rem-pio2-large.ts)
      e.get(ix).i32(0x413921fb).op(Op.i32_gt_u).open('if');
      e.get(X).get(1);
      call('fdlibm:rem_pio2_large');
      e.set(n).set(y1).set(y0);
      e.else();
      e.get(X);
      call('fdlibm:rem_pio2');
      e.set(n).set(y1).set(y0);
      e.close();
      if (fn === 'tan') {
        // 1 − ((n & 1) << 1): 1 for even n, −1 for odd
        e.get(y0).get(y1).i32(1).get(n).i32(1).op(Op.i32_and).i32(1).op(Op.i32_shl).op(Op.i32_sub);
        call('fdlibm:kernel_tan');
        e.op(Op.end);
        return;
      }
      // sin: n&3 = 0 → S, 1 → C, 2 → −S, 3 → −C; cos: 0 → C, 1 → −S, 2 → −C, 3 → S.
      const sinFirst = fn === 'sin';
      e.get(n).i32(1).op(Op.i32_and).open('if', ValType.f64);
      e.get(y0).get(y1);
      if (sinFirst) call('fdlibm:kernel_cos');
      else e.i32(1), call('fdlibm:kernel_sin');
      e.else();
      e.get(y0).get(y1);
      if (sinFirst) e.i32(1), call('fdlibm:kernel_sin');
      else call('fdlibm:kernel_cos');
      e.close();
      const v = e.local(ValType.f64);
      e.set(v);
      e.get(v).op(Op.f64_neg).get(v);
      e.get(n).i32(sinFirst ? 0 : 1).op(Op.i32_add).i32(2).op(Op.i32_and);
      e.op(Op.select);
      e.op(Op.end);
    },
  };
}

// ------------------------------------------------------------------------------ lanes

/** An f64x2 lane mask of |x| in [lo, hi) given as high words of |x| (lo inclusive, hi exclusive). */
function wordRange(F: Floats, ax: Value, lo: number, hi: number): Value {
  return F.and(F.ge(ax, F.c(fromWords(lo, 0))), F.lt(ax, F.c(fromWords(hi, 0))));
}

/** The i64x2 of an f64x2 of small non-negative integers (exact below 2^52). */
function toInt64(e: FunctionEmitter, v: Value): void {
  v();
  splat64(e, 2 ** 52);
  e.simd(SimdOp.f64x2_add);
  splat64(e, 2 ** 52);
  e.simd(SimdOp.i64x2_sub);
}

/** A mask of the lanes of an i64x2 whose bit `bit` is set. */
function bitMask(e: FunctionEmitter, q: number, bit: number): Value {
  return () => {
    e.get(q).i32(63 - bit).simd(SimdOp.i64x2_shl);
    e.i32(63).simd(SimdOp.i64x2_shr_s);
  };
}

/**
 * sin, cos or tan of the f64x2 in local `X` (see the module comment), pushing the result and the
 * mask of lanes computed here.
 */
function trigBody(fn: Trig): (e: FunctionEmitter, args: readonly number[]) => void {
  return (e, [X]) => {
    const F = new Floats(e, true);
    const x = F.get(X!);
    const ax = F.let(F.abs(x));
    // No reduction where |x| ≤ π/4 (high word ≤ 0x3fe921fb): n = 0, y0 = x, y1 = 0.
    const small = F.let(F.lt(ax, F.c(fromWords(0x3fe921fc, 0))));
    const tiny = F.let(F.lt(ax, F.c(2 ** (fn === 'tan' ? -28 : -27))));
    const fnv = F.let(F.select(small, F.c(0), F.trunc(F.add(F.mul(ax, F.c(INVPIO2)), F.c(HALF)))));
    const r = F.let(F.sub(ax, F.mul(fnv, F.c(PIO2_1))));
    const w = F.let(F.mul(fnv, F.c(PIO2_1T)));
    const y0abs = F.let(F.sub(r, w));
    const negative = F.let(F.lt(x, F.c(0)));
    const y0 = F.let(F.select(small, x, F.negateWhere(negative, y0abs)));
    const y1 = F.let(F.select(small, F.c(0), F.negateWhere(negative, F.sub(F.sub(r, y0abs), w))));
    // n & 3 of n = ±fn, as an i64x2
    const q = e.local(ValType.v128);
    const sign = e.local(ValType.v128);
    toInt64(e, fnv);
    e.get(X!).i32(63).simd(SimdOp.i64x2_shr_s).tee(sign);
    e.simd(SimdOp.v128_xor).get(sign).simd(SimdOp.i64x2_sub);
    e.set(q);
    const odd = bitMask(e, q, 0);
    let result: Value;
    if (fn === 'tan') result = tanLanes(F, x, y0, y1, small, tiny, odd);
    else {
      const z = F.let(F.mul(y0, y0));
      const v = F.let(F.mul(z, y0));
      const rs = F.let(F.horner(z, S2_6));
      const sin1 = F.let(F.sub(y0, F.sub(F.sub(F.mul(z, F.sub(F.mul(F.c(HALF), y1), F.mul(v, rs))), y1), F.mul(v, F.c(S1)))));
      const cosK = F.let(kernelCosValue(F, y0, y1));
      if (fn === 'sin') {
        const sin0 = F.select(tiny, x, F.add(y0, F.mul(v, F.add(F.c(S1), F.mul(z, rs)))));
        const sinK = F.select(small, sin0, sin1);
        result = F.negateWhere(bitMask(e, q, 1), F.select(odd, cosK, sinK));
      } else {
        const q1 = e.local(ValType.v128);
        e.get(q);
        e.simd(SimdOp.v128_const);
        for (let l = 0; l < 2; l++) e.code.bytes([1, 0, 0, 0, 0, 0, 0, 0]);
        e.simd(SimdOp.i64x2_add).set(q1);
        result = F.negateWhere(bitMask(e, q1, 1), F.select(odd, sin1, cosK));
      }
    }
    result();
    // Lanes done here: |x| ≤ π/4, or |x| ≤ 2^19·π/2 off π/2's high word with i ≤ 16.
    const firstStep = F.and(
      F.and(F.lt(ax, F.c(fromWords(0x413921fc, 0))), F.not(wordRange(F, ax, 0x3ff921fb, 0x3ff921fc))),
      F.ge(F.abs(y0abs), F.mul(F.exponentOf(ax), F.c(2 ** -16))),
    );
    F.or(small, firstStep)();
  };
}

/** __kernel_tan in lanes (iy = 1 where n is even, −1 where odd). */
function tanLanes(F: Floats, x: Value, y0: Value, y1: Value, small: Value, tiny: Value, odd: Value): Value {
  const ay = F.let(F.abs(y0));
  const big = F.let(F.ge(ay, F.c(fromWords(0x3fe59428, 0))));
  const neg = F.let(F.lt(y0, F.c(0)));
  // |x| ≥ 0.6744: x = (π/4 − |x|) + (π/4lo − ±y), y = 0
  const xs = F.let(F.select(big, F.add(F.sub(F.c(PIO4), ay), F.sub(F.c(PIO4LO), F.negateWhere(neg, y1))), y0));
  const ys = F.let(F.select(big, F.c(0), y1));
  const z = F.let(F.mul(xs, xs));
  const w = F.let(F.mul(z, z));
  const r0 = F.let(F.horner(w, [T[1]!, T[3]!, T[5]!, T[7]!, T[9]!, T[11]!]));
  const v = F.let(F.mul(z, F.horner(w, [T[2]!, T[4]!, T[6]!, T[8]!, T[10]!, T[12]!])));
  const s = F.let(F.mul(z, xs));
  const r1 = F.let(F.add(ys, F.mul(z, F.add(F.mul(s, F.add(r0, v)), ys))));
  const r = F.let(F.add(r1, F.mul(F.c(T[0]!), s)));
  const wr = F.let(F.add(xs, r));
  const iy = F.let(F.select(odd, F.c(-1), F.c(1)));
  const bigResult = F.negateWhere(neg, F.sub(iy, F.mul(F.c(2), F.sub(xs, F.sub(F.div(F.mul(wr, wr), F.add(wr, iy)), r)))));
  // −1/(x + r), fdlibm's careful reciprocal
  const zz = F.let(F.highWord(wr));
  const vv = F.let(F.sub(r, F.sub(zz, xs)));
  const a = F.let(F.div(F.c(-1), wr));
  const t = F.let(F.highWord(a));
  const ss = F.let(F.add(F.c(1), F.mul(t, zz)));
  const reciprocal = F.add(t, F.mul(a, F.add(ss, F.mul(t, vv))));
  return F.select(F.and(small, tiny), x, F.select(big, bigResult, F.select(odd, reciprocal, wr)));
}

function trigPort(fn: Trig): MathPort {
  return {
    arity: 1,
    lanes: (e: FunctionEmitter, scalar: number, shape: LaneShape) => emitLanes(e, scalar, shape, 1, trigBody(fn), true),
  };
}

export const TRIG_FUNCTIONS: Readonly<Record<string, PortFunction>> = {
  'fdlibm:kernel_sin': kernelSin,
  'fdlibm:kernel_cos': kernelCos,
  'fdlibm:kernel_tan': kernelTan,
  'fdlibm:rem_pio2': remPio2,
  'fdlibm:rem_pio2_large': remPio2Large,
  'fdlibm:sin': trigFunction('sin'),
  'fdlibm:cos': trigFunction('cos'),
  'fdlibm:tan': trigFunction('tan'),
};

export const TRIG_PORTS: Partial<Record<MathFunction, MathPort>> = {
  sin: trigPort('sin'),
  cos: trigPort('cos'),
  tan: trigPort('tan'),
};
