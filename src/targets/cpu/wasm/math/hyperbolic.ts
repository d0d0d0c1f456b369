/**
 * fdlibm's expm1 (s_expm1.c) and V8's sinh, cosh, tanh built on it and on exp (src/base/ieee754.cc
 * of V8 11), ported to scalar Wasm functions line by line (c-ops.ts), bit-identical to V8's
 * `Math.expm1`, `Math.sinh`, `Math.cosh`, `Math.tanh`.
 */
import { CScalar, fromWords, type Val } from './c-ops.js';
import type { FunctionEmitter } from '../emit-scalar.js';
import { Op, SimdOp } from '../encoder.js';
import { emitExpF64x2Fast } from '../fdlibm.js';
import { type CLanes, float32WithRoundingTest, type Vec, type VectorCode } from './lanes.js';

const O_THRESHOLD = fromWords(0x40862e42, 0xfefa39ef);
const LN2_HI = fromWords(0x3fe62e42, 0xfee00000);
const LN2_LO = fromWords(0x3dea39ef, 0x35793c76);
const INV_LN2 = fromWords(0x3ff71547, 0x652b82fe);
/** Q1…Q5, scaled (Qn·2^n) for R(2z), z = x²/2. */
const Q = [
  fromWords(0xbfa11111, 0x111110f4), fromWords(0x3f5a01a0, 0x19fe5585), fromWords(0xbf14ce19, 0x9eaadbb7),
  fromWords(0x3ed0cfca, 0x86e65239), fromWords(0xbe8afdb7, 0x6e09c32d),
] as const;
const TINY = 1.0e-300;

/** `expm1(x)` (s_expm1.c). */
export function emitExpm1(e: FunctionEmitter): void {
  const c = new CScalar(e);
  const { num, int, get, add, sub, mul, div } = c;
  const x = 0;
  const [y, hi, lo, cc, t, ee, hxs, hfx, r1, twopk] = Array.from({ length: 10 }, () => c.f64()) as [number, number, number, number, number, number, number, number, number, number];
  const [k, xsb, hx] = [c.i32(), c.i32(), c.i32()];
  c.set(hx, c.high(get(x)));
  c.set(xsb, c.and(get(hx), int(0x80000000 | 0)));
  c.set(hx, c.and(get(hx), int(0x7fffffff)));
  // huge and non-finite arguments
  c.if(c.igeU(get(hx), int(0x4043687a)), () => {
    // |x| ≥ 56·ln2
    c.if(c.igeU(get(hx), int(0x40862e42)), () => {
      c.if(c.igeU(get(hx), int(0x7ff00000)), () => {
        c.if(c.ne(get(x), get(x)), () => c.ret(add(get(x), get(x))));
        c.ret(c.select(c.eqz(get(xsb)), get(x), num(-1))); // expm1(±inf) = {inf, −1}
      });
      c.if(c.gt(get(x), num(O_THRESHOLD)), () => c.ret(num(Infinity)));
    });
    // x < −56·ln2: −1 (x + tiny < 0 holds for every such x)
    c.if(c.ine(get(xsb), int(0)), () => c.ret(num(TINY - 1)));
  });
  c.set(cc, num(0));
  c.set(k, int(0));
  // argument reduction
  c.if(c.igtU(get(hx), int(0x3fd62e42)), () => {
    // |x| > 0.5·ln2
    c.if(c.iltU(get(hx), int(0x3ff0a2b2)), () => {
      // and |x| < 1.5·ln2
      c.if(c.eqz(get(xsb)), () => {
        c.set(hi, sub(get(x), num(LN2_HI)));
        c.set(lo, num(LN2_LO));
        c.set(k, int(1));
      }, () => {
        c.set(hi, add(get(x), num(LN2_HI)));
        c.set(lo, num(-LN2_LO));
        c.set(k, int(-1));
      });
    }, () => {
      c.set(k, c.toI(add(mul(num(INV_LN2), get(x)), c.select(c.eqz(get(xsb)), num(0.5), num(-0.5)))));
      c.set(t, c.toF(get(k)));
      c.set(hi, sub(get(x), mul(get(t), num(LN2_HI))));
      c.set(lo, mul(get(t), num(LN2_LO)));
    });
    c.set(x, sub(get(hi), get(lo)));
    c.set(cc, sub(sub(get(hi), get(x)), get(lo)));
  }, () => {
    // |x| < 2^-54: x (x − ((huge + x) − (huge + x)) = x − 0)
    c.if(c.iltU(get(hx), int(0x3c900000)), () => c.ret(sub(get(x), num(0))));
  });
  // x is now in the primary range
  c.set(hfx, mul(num(0.5), get(x)));
  c.set(hxs, mul(get(x), get(hfx)));
  c.set(r1, add(num(1), mul(get(hxs), c.poly(get(hxs), Q))));
  c.set(t, sub(num(3), mul(get(r1), get(hfx))));
  c.set(ee, mul(get(hxs), div(sub(get(r1), get(t)), sub(num(6), mul(get(x), get(t))))));
  c.if(c.eqz(get(k)), () => c.ret(sub(get(x), sub(mul(get(x), get(ee)), get(hxs)))));
  c.set(twopk, c.words(c.iadd(int(0x3ff00000), c.shl(get(k), int(20))), int(0)));
  c.set(ee, sub(mul(get(x), sub(get(ee), get(cc))), get(cc)));
  c.set(ee, sub(get(ee), get(hxs)));
  c.if(c.ieq(get(k), int(-1)), () => c.ret(sub(mul(num(0.5), sub(get(x), get(ee))), num(0.5))));
  c.if(c.ieq(get(k), int(1)), () => {
    c.if(c.lt(get(x), num(-0.25)), () => c.ret(mul(num(-2), sub(get(ee), add(get(x), num(0.5))))));
    c.ret(add(num(1), mul(num(2), sub(get(x), get(ee)))));
  });
  c.if(c.or(c.ile(get(k), int(-2)), c.igt(get(k), int(56))), () => {
    c.set(y, sub(num(1), sub(get(ee), get(x))));
    c.if(c.ieq(get(k), int(1024)), () => c.set(y, mul(mul(get(y), num(2)), num(8.98846567431158e307))), () => c.set(y, mul(get(y), get(twopk))));
    c.ret(sub(get(y), num(1)));
  });
  c.if(c.ilt(get(k), int(20)), () => {
    c.set(t, c.words(c.isub(int(0x3ff00000), c.shrS(int(0x200000), get(k))), int(0))); // 1 − 2^-k
    c.set(y, sub(get(t), sub(get(ee), get(x))));
    c.set(y, mul(get(y), get(twopk)));
  }, () => {
    c.set(t, c.words(c.shl(c.isub(int(0x3ff), get(k)), int(20)), int(0))); // 2^-k
    c.set(y, sub(get(x), add(get(ee), get(t))));
    c.set(y, add(get(y), num(1)));
    c.set(y, mul(get(y), get(twopk)));
  });
  c.end(get(y));
}

/** A call of another port (its function index) on one value. */
function call(c: CScalar, index: number, arg: Val): Val {
  return () => (arg(), void c.e.code.byte(Op.call).u32(index));
}

const KSINH_OVERFLOW = 710.4758600739439;
const LOG_MAXD = 709.7822265625;

/** V8's `sinh(x)`; `expm1` and `exp` are the indices of those ports. */
export function emitSinh(e: FunctionEmitter, expm1: number, exp: number): void {
  const c = new CScalar(e);
  const { num, get, add, sub, mul, div } = c;
  const x = 0;
  const [h, ax, t, w] = [c.f64(), c.f64(), c.f64(), c.f64()];
  c.set(h, c.select(c.lt(get(x), num(0)), num(-0.5), num(0.5)));
  c.set(ax, c.abs(get(x)));
  c.if(c.lt(get(ax), num(22)), () => {
    c.if(c.lt(get(ax), num(2 ** -28)), () => c.ret(get(x)));
    c.set(t, call(c, expm1, get(ax)));
    c.if(c.lt(get(ax), num(1)), () => c.ret(mul(get(h), sub(mul(num(2), get(t)), div(mul(get(t), get(t)), add(get(t), num(1)))))));
    c.ret(mul(get(h), add(get(t), div(get(t), add(get(t), num(1))))));
  });
  c.if(c.lt(get(ax), num(LOG_MAXD)), () => c.ret(mul(get(h), call(c, exp, get(ax)))));
  c.if(c.le(get(ax), num(KSINH_OVERFLOW)), () => {
    c.set(w, call(c, exp, mul(num(0.5), get(ax))));
    c.set(t, mul(get(h), get(w)));
    c.ret(mul(get(t), get(w)));
  });
  c.end(mul(get(x), num(1.0e307)));
}

/** V8's `cosh(x)`; `expm1` and `exp` are the indices of those ports. */
export function emitCosh(e: FunctionEmitter, expm1: number, exp: number): void {
  const c = new CScalar(e);
  const { num, int, get, add, mul, div } = c;
  const x = 0;
  const [t, w] = [c.f64(), c.f64()];
  const ix = c.i32();
  c.set(ix, c.and(c.high(get(x)), int(0x7fffffff)));
  c.if(c.ilt(get(ix), int(0x3fd62e43)), () => {
    // |x| in [0, 0.5·ln2]: 1 + expm1(|x|)²/(2·exp(|x|))
    c.set(t, call(c, expm1, c.abs(get(x))));
    c.set(w, add(num(1), get(t)));
    c.if(c.ilt(get(ix), int(0x3c800000)), () => c.ret(get(w)));
    c.ret(add(num(1), div(mul(get(t), get(t)), add(get(w), get(w)))));
  });
  c.if(c.ilt(get(ix), int(0x40360000)), () => {
    // |x| in [0.5·ln2, 22]: (exp(|x|) + 1/exp(|x|))/2
    c.set(t, call(c, exp, c.abs(get(x))));
    c.ret(add(mul(num(0.5), get(t)), div(num(0.5), get(t))));
  });
  c.if(c.ilt(get(ix), int(0x40862e42)), () => c.ret(mul(num(0.5), call(c, exp, c.abs(get(x))))));
  c.if(c.le(c.abs(get(x)), num(KSINH_OVERFLOW)), () => {
    c.set(w, call(c, exp, mul(num(0.5), c.abs(get(x)))));
    c.set(t, mul(num(0.5), get(w)));
    c.ret(mul(get(t), get(w)));
  });
  c.if(c.ige(get(ix), int(0x7ff00000)), () => c.ret(mul(get(x), get(x))));
  c.end(num(Infinity));
}

/** fdlibm's `tanh(x)` (s_tanh.c); `expm1` is the index of that port. */
export function emitTanh(e: FunctionEmitter, expm1: number): void {
  const c = new CScalar(e);
  const { num, int, get, add, sub, mul, div } = c;
  const x = 0;
  const [t, z] = [c.f64(), c.f64()];
  const [jx, ix] = [c.i32(), c.i32()];
  c.set(jx, c.high(get(x)));
  c.set(ix, c.and(get(jx), int(0x7fffffff)));
  c.if(c.ige(get(ix), int(0x7ff00000)), () => {
    // tanh(±inf) = ±1, tanh(NaN) = NaN
    c.if(c.ige(get(jx), int(0)), () => c.ret(add(div(num(1), get(x)), num(1))));
    c.ret(sub(div(num(1), get(x)), num(1)));
  });
  c.if(c.ilt(get(ix), int(0x40360000)), () => {
    // |x| < 22; |x| < 2^-28: x (huge + x > 1 holds)
    c.if(c.ilt(get(ix), int(0x3e300000)), () => c.ret(get(x)));
    c.if(c.ige(get(ix), int(0x3ff00000)), () => {
      c.set(t, call(c, expm1, mul(num(2), c.abs(get(x)))));
      c.set(z, sub(num(1), div(num(2), add(get(t), num(2)))));
    }, () => {
      c.set(t, call(c, expm1, mul(num(-2), c.abs(get(x)))));
      c.set(z, div(c.neg(get(t)), add(get(t), num(2))));
    });
  }, () => c.set(z, num(1 - TINY)));
  c.end(c.select(c.ige(get(jx), int(0)), get(z), c.neg(get(z))));
}

// ------------------------------------------------------------------ in f64x2 lanes

/** |x| from which fdlibm's reductions are not k = 0: high word above 0x3fd62e42 (≈ 0.5·ln 2). */
const HALF_LN2_UP = fromWords(0x3fd62e43, 0);
/** kf + MAGIC has kf + 1023 in its low mantissa bits (kf an integer, |kf| < 2^11). */
const MAGIC = 2 ** 52 + 1023;
const NEG_56LN2 = -fromWords(0x4043687a, 0);

/** 2^k of integer-valued doubles k (−1022 ≤ k ≤ 1023): (k + 1023) << 52. */
const pow2 = (c: CLanes, k: Vec): Vec => c.shl(c.add(k, c.num(MAGIC)), 52);

/**
 * s_expm1.c in lanes, for x ≤ 708 (NaN, +∞ and larger x are not covered). fdlibm's three
 * reductions are one (as exp's, fdlibm.ts): kf = trunc(invln2·x ± ½) where |x| > 0.5·ln2 (by the
 * high word), else 0; for |x| between 0.5·ln2 and 1.5·ln2 that is ±1 and x − kf·ln2_hi, kf·ln2_lo
 * are fdlibm's x ∓ ln2_hi, ±ln2_lo exactly; for kf = 0, hi = x, lo = +0, x′ = x and c = +0. Its
 * final formulas, one per range of k, are all computed and selected per lane, as are its early
 * results: x for |x| < 2^-54, −1 for x ≤ −56·ln2.
 */
export function expm1Lanes(c: CLanes, x: Vec): Vec {
  const { num, add, sub, mul, div, select } = c;
  const ax = c.let(c.abs(x));
  const half = c.or(c.and(x, c.num(-0)), c.num(0.5));
  const kf = c.let(c.and(c.un(c.add(mul(num(INV_LN2), x), half), SimdOp.f64x2_trunc), c.ge(ax, num(HALF_LN2_UP))));
  const hi = c.let(sub(x, mul(kf, num(LN2_HI))));
  const lo = c.let(mul(kf, num(LN2_LO)));
  const xr = c.let(sub(hi, lo));
  const cc = c.let(sub(sub(hi, xr), lo));
  const hfx = c.let(mul(num(0.5), xr));
  const hxs = c.let(mul(xr, hfx));
  const r1 = c.let(add(num(1), mul(hxs, c.poly(hxs, Q))));
  const t = c.let(sub(num(3), mul(r1, hfx)));
  const e = c.let(mul(hxs, div(sub(r1, t), sub(num(6), mul(xr, t)))));
  const e2 = c.let(sub(sub(mul(xr, sub(e, cc)), cc), hxs));
  const twopk = c.let(pow2(c, kf));
  const twomk = pow2(c, c.neg(kf));
  const k0 = sub(xr, sub(mul(xr, e), hxs));
  const kMinus1 = sub(mul(num(0.5), sub(xr, e2)), num(0.5));
  const k1 = select(c.lt(xr, num(-0.25)), mul(num(-2), sub(e2, add(xr, num(0.5)))), add(num(1), mul(num(2), sub(xr, e2))));
  const kFar = sub(mul(sub(num(1), sub(e2, xr)), twopk), num(1));
  const kBelow20 = mul(sub(sub(num(1), twomk), sub(e2, xr)), twopk);
  const kFrom20 = mul(add(sub(xr, add(e2, twomk)), num(1)), twopk);
  const byK = select(c.eq(kf, num(0)), k0, select(c.eq(kf, num(-1)), kMinus1, select(c.eq(kf, num(1)), k1,
    select(c.or(c.le(kf, num(-2)), c.gt(kf, num(56))), kFar, select(c.lt(kf, num(20)), kBelow20, kFrom20)))));
  return select(c.lt(ax, num(2 ** -54)), x, select(c.le(x, num(NEG_56LN2)), num(-1), byK));
}

export const EXPM1_LANES: VectorCode = {
  covers: (c, [x]) => c.le(x!, c.num(708)),
  compute: (c, [x]) => expm1Lanes(c, x!),
};

/** s_tanh.c in lanes: every lane (NaN gives NaN, whatever its payload). */
export const TANH_LANES: VectorCode = {
  covers: (c, [x]) => c.eq(x!, x!),
  compute: (c, [x]) => {
    const { num, add, sub, div, mul, select } = c;
    const ax = c.let(c.abs(x!));
    const atLeast1 = c.let(c.ge(ax, num(1)));
    const t = c.let(expm1Lanes(c, c.let(select(atLeast1, mul(num(2), ax), mul(num(-2), ax)))));
    const z = c.let(select(c.ge(ax, num(22)), num(1 - TINY), select(atLeast1, sub(num(1), div(num(2), add(t, num(2)))), div(c.neg(t), add(t, num(2))))));
    return select(c.lt(ax, num(2 ** -28)), x!, select(c.ige(x!, c.int(0n)), z, c.neg(z)));
  },
};

/** exp of lanes 2^-28 ≤ x ≤ 708, x ≠ 1 (fdlibm.ts's vector code). */
const expFast = (c: CLanes, x: Vec): Vec => () => (x(), emitExpF64x2Fast(c.e));

/** V8's sinh in lanes, for |x| ≤ 708 (exp's code only for vectors with a lane of |x| ≥ 22). */
export const SINH_LANES: VectorCode = {
  covers: (c, [x]) => c.le(c.abs(x!), c.num(708)),
  compute: (c, [x]) => {
    const { num, add, sub, mul, div, select } = c;
    const h = c.let(select(c.lt(x!, num(0)), num(-0.5), num(0.5)));
    const ax = c.let(c.abs(x!));
    const t = c.let(expm1Lanes(c, ax));
    const result = c.local();
    select(c.lt(ax, num(1)), mul(h, sub(mul(num(2), t), div(mul(t, t), add(t, num(1))))), mul(h, add(t, div(t, add(t, num(1))))))();
    c.e.set(result);
    c.whereAny(c.let(c.ge(ax, num(22))), result, () => mul(h, expFast(c, ax)));
    return select(c.lt(ax, num(2 ** -28)), x!, c.get(result));
  },
};

/** V8's cosh in lanes, for |x| ≤ 708 (each of its two methods only for vectors with a lane that takes it). */
export const COSH_LANES: VectorCode = {
  covers: (c, [x]) => c.le(c.abs(x!), c.num(708)),
  compute: (c, [x]) => {
    const { num, add, mul, div, select } = c;
    const ax = c.let(c.abs(x!));
    const result = c.local();
    const small = c.let(c.lt(ax, num(HALF_LN2_UP)));
    c.whereAny(small, result, () => {
      // |x| < 0.5·ln2: 1 + expm1(|x|)²/(2·exp(|x|))
      const t = c.let(expm1Lanes(c, ax));
      const w = c.let(add(num(1), t));
      return select(c.lt(ax, num(2 ** -55)), w, add(num(1), div(mul(t, t), add(w, w))));
    });
    c.whereAny(c.let(c.ge(ax, num(HALF_LN2_UP))), result, () => {
      // (exp(|x|) + 1/exp(|x|))/2 below 22, exp(|x|)/2 from 22
      const te = c.let(select(c.eq(ax, num(1)), num(Math.E), expFast(c, ax))); // fdlibm's exp(1) = E
      return select(c.lt(ax, num(22)), add(mul(num(0.5), te), div(num(0.5), te)), mul(num(0.5), te));
    });
    return c.get(result);
  },
};

/** expm1(r)/r = Σ rⁿ/(n + 1)!, n = 0…9 (Taylor: the tail is < 2^-40.3 relative for |r| ≤ 0.3466). */
const EXPM1_TAYLOR = Array.from({ length: 10 }, (_, n) => 1 / Array.from({ length: n + 1 }, (__, i) => i + 1).reduce((a, b) => a * b, 1));
/** The float32 rounding test's margin, in ulps of the double y (see expm1Approx). */
const FLOAT32_MARGIN = 2 ** 17;

/**
 * e^r (`E`) and e^r − 1 (`em1`) in doubles for |r| < 180, cheaper than the ports: k = nearest(r/ln 2),
 * r′ = r − k·LN2 (|r′| ≤ 0.3466; the subtraction is exact, k·LN2 is within 2^-46.4 of k·ln 2),
 * q = r′·Σ r′ⁿ/(n + 1)! ≈ expm1(r′) (relative error < 2^-40), E = (1 + q)·2^k, em1 = q where
 * k = 0, else E − 1 (its error amplified by at most E/|E − 1| ≤ 3.41 for k = ±1 … so < 2^-38.2).
 * The float32 functions built on them (FLOAT32_CODE) add a few roundings and no cancellation, so
 * their y is within 2^-37 relative of the true value, < 2^16 ulps of y; the port's double is a
 * few ulps from it, so |y − f| < 2^17 ulps of y (FLOAT32_MARGIN). bench/math-exhaustive.ts checks
 * every float32 input.
 */
function expm1Approx(c: CLanes, r: Vec): { E: Vec; em1: Vec } {
  const { num, add, sub, mul, select } = c;
  const k = c.let(c.un(mul(r, num(INV_LN2)), SimdOp.f64x2_nearest));
  const rr = c.let(sub(r, mul(k, num(Math.LN2))));
  const q = c.let(mul(rr, c.poly(rr, EXPM1_TAYLOR)));
  const E = c.let(mul(add(num(1), q), pow2(c, k)));
  return { E, em1: c.let(select(c.eq(k, num(0)), q, sub(E, num(1)))) };
}

/** x's sign on a non-negative value v. */
const withSign = (c: CLanes, v: Vec, x: Vec): Vec => c.or(v, c.and(x, c.num(-0)));

/**
 * The float32 versions of expm1, sinh, cosh and tanh in lanes: the cheap double y (on expm1Approx)
 * and the float32 inputs it is used for (others, and vectors near a rounding midpoint, run the
 * exact lanes): results of normal float32 magnitude below the overflow threshold.
 */
export const FLOAT32_CODE: Record<'expm1' | 'sinh' | 'cosh' | 'tanh', { approx(c: CLanes, x: Vec): Vec; lo: number; hi: number; tiny: number }> = {
  expm1: { approx: (c, x) => expm1Approx(c, x).em1, lo: -80, hi: 80, tiny: 2 ** -28 },
  sinh: {
    approx: (c, x) => {
      const t = expm1Approx(c, c.abs(x)).em1;
      return withSign(c, c.mul(c.num(0.5), c.add(t, c.div(t, c.add(t, c.num(1))))), x);
    },
    lo: -89, hi: 89, tiny: 2 ** -28,
  },
  cosh: {
    approx: (c, x) => {
      const { E } = expm1Approx(c, c.abs(x));
      return c.add(c.mul(c.num(0.5), E), c.div(c.num(0.5), E));
    },
    lo: -89, hi: 89, tiny: 0,
  },
  tanh: {
    approx: (c, x) => {
      const { em1 } = expm1Approx(c, c.mul(c.num(2), c.abs(x)));
      return withSign(c, c.div(em1, c.add(em1, c.num(2))), x);
    },
    lo: -22, hi: 22, tiny: 2 ** -28,
  },
};

/**
 * `fn` of a float32 vector (local x): FLOAT32_CODE's y for lanes with tiny ≤ |x| and lo ≤ x ≤ hi
 * (float32 compares, false for NaN) where the rounding test passes, else `exact`.
 */
export function hyperbolic32Lanes(fn: keyof typeof FLOAT32_CODE, e: FunctionEmitter, x: number, exact: () => void): void {
  const { approx, lo, hi, tiny } = FLOAT32_CODE[fn];
  float32WithRoundingTest(e, x, approx, (c, v) => {
    const f32 = (n: number) => () => void e.constant(n, 'float32').simd(SimdOp.f32x4_splat);
    const inRange = c.and(c.binary(SimdOp.f32x4_ge, v, f32(lo)), c.binary(SimdOp.f32x4_le, v, f32(hi)));
    return tiny > 0 ? c.and(inRange, c.binary(SimdOp.f32x4_ge, c.un(v, SimdOp.f32x4_abs), f32(tiny))) : inRange;
  }, FLOAT32_MARGIN, exact);
}
