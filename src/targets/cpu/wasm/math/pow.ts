/**
 * fdlibm's pow (e_pow.c) as V8 11 has it in src/base/ieee754.cc, behind both `Math.pow` and `**`
 * (V8 computes every `x ** y` with it, integer exponents included: ±1 ** ±∞ is NaN, as ES
 * requires), ported to a scalar Wasm function `(f64, f64) → f64` line by line (c-ops.ts).
 */
import { CScalar, fromWords, type Val } from './c-ops.js';
import { ModuleBuilder, Op, SimdOp, ValType } from '../encoder.js';
import { FunctionEmitter } from '../emit-scalar.js';
import { WebAssemblyApi } from '../wasm-api.js';
import { type CheckedVectorCode, CLanes, type Vec } from './lanes.js';
import type { ExponentOfCall, YParity } from '../math-port.js';

const DP_H = fromWords(0x3fe2b803, 0x40000000);
const DP_L = fromWords(0x3e4cfdeb, 0x43cfd006);
const TWO53 = 2 ** 53;
const HUGE = 1.0e300;
const TINY = 1.0e-300;
const L = [
  fromWords(0x3fe33333, 0x33333303), fromWords(0x3fdb6db6, 0xdb6fabff), fromWords(0x3fd55555, 0x518f264d),
  fromWords(0x3fd17460, 0xa91d4101), fromWords(0x3fcd864a, 0x93c9db65), fromWords(0x3fca7e28, 0x4a454eef),
] as const;
const P = [
  fromWords(0x3fc55555, 0x5555553e), fromWords(0xbf66c16c, 0x16bebd93), fromWords(0x3f11566a, 0xaf25de2c),
  fromWords(0xbebbbd41, 0xc5d26bf1), fromWords(0x3e663769, 0x72bea4d0),
] as const;
const LG2 = fromWords(0x3fe62e42, 0xfefa39ef);
const LG2_H = fromWords(0x3fe62e43, 0);
const LG2_L = fromWords(0xbe205c61, 0x0ca86c39);
const OVT = 8.0085662595372944372e-17;
const CP = fromWords(0x3feec709, 0xdc3a03fd);
const CP_H = fromWords(0x3feec709, 0xe0000000);
const CP_L = fromWords(0xbe3e2fe0, 0x145b01f5);
const IVLN2 = fromWords(0x3ff71547, 0x652b82fe);
const IVLN2_H = fromWords(0x3ff71547, 0x60000000);
const IVLN2_L = fromWords(0x3e54ae0b, 0xf85ddf44);

/** `pow(x, y)` (e_pow.c): parameters 0 and 1. */
export function emitPow(e: FunctionEmitter): void {
  const c = new CScalar(e);
  const { num, int, get, add, sub, mul, div } = c;
  const x = 0;
  const y = 1;
  const f = () => c.f64();
  const [z, ax, zH, zL, pH, pL, y1, t1, t2, r, s, t, u, v, w] = [f(), f(), f(), f(), f(), f(), f(), f(), f(), f(), f(), f(), f(), f(), f()];
  const [ss, s2, sH, sL, tH, tL] = [f(), f(), f(), f(), f(), f()];
  const n32 = () => c.i32();
  const [i, j, k, yisint, n, hx, hy, ix, iy, lx, ly] = [n32(), n32(), n32(), n32(), n32(), n32(), n32(), n32(), n32(), n32(), n32()];
  const bp = (kk: Val) => c.select(kk, num(1.5), num(1));
  const dpH = (kk: Val) => c.select(kk, num(DP_H), num(0));
  const dpL = (kk: Val) => c.select(kk, num(DP_L), num(0));

  c.set(hx, c.high(get(x)));
  c.set(lx, c.low(get(x)));
  c.set(hy, c.high(get(y)));
  c.set(ly, c.low(get(y)));
  c.set(ix, c.and(get(hx), int(0x7fffffff)));
  c.set(iy, c.and(get(hy), int(0x7fffffff)));
  // y == 0: x**0 = 1
  c.if(c.eqz(c.or(get(iy), get(ly))), () => c.ret(num(1)));
  // ±NaN: x + y
  c.if(c.or(c.ne(get(x), get(x)), c.ne(get(y), get(y))), () => c.ret(add(get(x), get(y))));
  // yisint: 0 not an integer, 1 an odd integer, 2 an even integer (only where x < 0)
  c.set(yisint, int(0));
  c.if(c.ilt(get(hx), int(0)), () => {
    c.if(c.ige(get(iy), int(0x43400000)), () => c.set(yisint, int(2)), () => {
      c.if(c.ige(get(iy), int(0x3ff00000)), () => {
        c.set(k, c.isub(c.shrS(get(iy), int(20)), int(0x3ff)));
        c.if(c.igt(get(k), int(20)), () => {
          c.set(j, c.shrU(get(ly), c.isub(int(52), get(k))));
          c.if(c.ieq(c.shl(get(j), c.isub(int(52), get(k))), get(ly)), () => c.set(yisint, c.isub(int(2), c.and(get(j), int(1)))));
        }, () => {
          c.if(c.eqz(get(ly)), () => {
            c.set(j, c.shrS(get(iy), c.isub(int(20), get(k))));
            c.if(c.ieq(c.shl(get(j), c.isub(int(20), get(k))), get(iy)), () => c.set(yisint, c.isub(int(2), c.and(get(j), int(1)))));
          });
        });
      });
    });
  });
  // special values of y
  c.if(c.eqz(get(ly)), () => {
    c.if(c.ieq(get(iy), int(0x7ff00000)), () => {
      // y is ±inf
      c.if(c.eqz(c.or(c.isub(get(ix), int(0x3ff00000)), get(lx))), () => c.ret(sub(get(y), get(y)))); // (±1)**±inf is NaN
      c.if(c.ige(get(ix), int(0x3ff00000)), () => c.ret(c.select(c.ige(get(hy), int(0)), get(y), num(0)))); // (|x| > 1)**±inf = inf, 0
      c.ret(c.select(c.ilt(get(hy), int(0)), c.neg(get(y)), num(0))); // (|x| < 1)**−,+inf = inf, 0
    });
    c.if(c.ieq(get(iy), int(0x3ff00000)), () => {
      // y is ±1
      c.if(c.ilt(get(hy), int(0)), () => c.ret(div(num(1), get(x))));
      c.ret(get(x));
    });
    c.if(c.ieq(get(hy), int(0x40000000)), () => c.ret(mul(get(x), get(x)))); // y is 2
    c.if(c.and(c.ieq(get(hy), int(0x3fe00000)), c.ige(get(hx), int(0))), () => c.ret(c.sqrt(get(x)))); // y is 0.5, x ≥ +0
  });
  c.set(ax, c.abs(get(x)));
  // special values of x: ±0, ±inf, ±1
  c.if(c.and(c.eqz(get(lx)), c.or(c.or(c.ieq(get(ix), int(0x7ff00000)), c.eqz(get(ix))), c.ieq(get(ix), int(0x3ff00000)))), () => {
    c.set(z, get(ax));
    c.if(c.ilt(get(hy), int(0)), () => c.set(z, div(num(1), get(z))));
    c.if(c.ilt(get(hx), int(0)), () => {
      c.if(c.eqz(c.or(c.isub(get(ix), int(0x3ff00000)), get(yisint))), () => c.set(z, num(NaN)), () => {
        c.if(c.ieq(get(yisint), int(1)), () => c.set(z, c.neg(get(z))));
      });
    });
    c.ret(get(z));
  });
  c.set(n, c.iadd(c.shrS(get(hx), int(31)), int(1)));
  // (x < 0)**(non-int) is NaN
  c.if(c.eqz(c.or(get(n), get(yisint))), () => c.ret(num(NaN)));
  // s: the sign of the result, −1 for (−ve)**(odd int)
  c.set(s, c.select(c.eqz(c.or(get(n), c.isub(get(yisint), int(1)))), num(-1), num(1)));
  const overflow = () => mul(mul(get(s), num(HUGE)), num(HUGE));
  const underflow = () => mul(mul(get(s), num(TINY)), num(TINY));
  c.if(c.igt(get(iy), int(0x41e00000)), () => {
    // |y| > 2^31
    c.if(c.igt(get(iy), int(0x43f00000)), () => {
      // |y| > 2^64: must over- or underflow
      c.if(c.ile(get(ix), int(0x3fefffff)), () => c.ret(c.select(c.ilt(get(hy), int(0)), num(Infinity), num(0))));
      c.if(c.ige(get(ix), int(0x3ff00000)), () => c.ret(c.select(c.igt(get(hy), int(0)), num(Infinity), num(0))));
    });
    // over/underflow if x is not close to one
    c.if(c.ilt(get(ix), int(0x3fefffff)), () => c.ret(c.select(c.ilt(get(hy), int(0)), overflow(), underflow())));
    c.if(c.igt(get(ix), int(0x3ff00000)), () => c.ret(c.select(c.igt(get(hy), int(0)), overflow(), underflow())));
    // |1 − x| ≤ 2^-20: log(x) by x − x²/2 + x³/3 − x⁴/4
    c.set(t, sub(get(ax), num(1)));
    c.set(w, mul(mul(get(t), get(t)), sub(num(0.5), mul(get(t), sub(num(0.3333333333333333333333), mul(get(t), num(0.25)))))));
    c.set(u, mul(num(IVLN2_H), get(t)));
    c.set(v, sub(mul(get(t), num(IVLN2_L)), mul(get(w), num(IVLN2))));
    c.set(t1, c.withLow(add(get(u), get(v)), int(0)));
    c.set(t2, sub(get(v), sub(get(t1), get(u))));
  }, () => {
    c.set(n, int(0));
    // subnormal x
    c.if(c.ilt(get(ix), int(0x00100000)), () => {
      c.set(ax, mul(get(ax), num(TWO53)));
      c.set(n, c.isub(get(n), int(53)));
      c.set(ix, c.high(get(ax)));
    });
    c.set(n, c.iadd(get(n), c.isub(c.shrS(get(ix), int(20)), int(0x3ff))));
    c.set(j, c.and(get(ix), int(0x000fffff)));
    // the interval
    c.set(ix, c.or(get(j), int(0x3ff00000)));
    c.if(c.ile(get(j), int(0x3988e)), () => c.set(k, int(0)), () => {
      c.if(c.ilt(get(j), int(0xbb67a)), () => c.set(k, int(1)), () => {
        c.set(k, int(0));
        c.set(n, c.iadd(get(n), int(1)));
        c.set(ix, c.isub(get(ix), int(0x00100000)));
      });
    });
    c.set(ax, c.withHigh(get(ax), get(ix)));
    // ss = s_h + s_l = (x − 1)/(x + 1) or (x − 1.5)/(x + 1.5)
    c.set(u, sub(get(ax), bp(get(k))));
    c.set(v, div(num(1), add(get(ax), bp(get(k)))));
    c.set(ss, mul(get(u), get(v)));
    c.set(sH, c.withLow(get(ss), int(0)));
    // t_h = ax + bp[k], high part
    c.set(tH, c.words(c.iadd(c.iadd(c.or(c.shrS(get(ix), int(1)), int(0x20000000)), int(0x00080000)), c.shl(get(k), int(18))), int(0)));
    c.set(tL, sub(get(ax), sub(get(tH), bp(get(k)))));
    c.set(sL, mul(get(v), sub(sub(get(u), mul(get(sH), get(tH))), mul(get(sH), get(tL)))));
    // log(ax)
    c.set(s2, mul(get(ss), get(ss)));
    c.set(r, mul(mul(get(s2), get(s2)), c.poly(get(s2), L)));
    c.set(r, add(get(r), mul(get(sL), add(get(sH), get(ss)))));
    c.set(s2, mul(get(sH), get(sH)));
    c.set(tH, c.withLow(add(add(num(3), get(s2)), get(r)), int(0)));
    c.set(tL, sub(get(r), sub(sub(get(tH), num(3)), get(s2))));
    // u + v = ss·(1 + …)
    c.set(u, mul(get(sH), get(tH)));
    c.set(v, add(mul(get(sL), get(tH)), mul(get(tL), get(ss))));
    // 2/(3·log2)·(ss + …)
    c.set(pH, c.withLow(add(get(u), get(v)), int(0)));
    c.set(pL, sub(get(v), sub(get(pH), get(u))));
    c.set(zH, mul(num(CP_H), get(pH)));
    c.set(zL, add(add(mul(num(CP_L), get(pH)), mul(get(pL), num(CP))), dpL(get(k))));
    // log2(ax) = (ss + …)·2/(3·log2) = n + dp_h + z_h + z_l
    c.set(t, c.toF(get(n)));
    c.set(t1, c.withLow(add(add(add(get(zH), get(zL)), dpH(get(k))), get(t)), int(0)));
    c.set(t2, sub(get(zL), sub(sub(sub(get(t1), get(t)), dpH(get(k))), get(zH))));
  });
  // (y1 + y2)·(t1 + t2), y split in y1 + y2
  c.set(y1, c.withLow(get(y), int(0)));
  c.set(pL, add(mul(sub(get(y), get(y1)), get(t1)), mul(get(y), get(t2))));
  c.set(pH, mul(get(y1), get(t1)));
  c.set(z, add(get(pL), get(pH)));
  c.set(j, c.high(get(z)));
  c.set(i, c.low(get(z)));
  c.if(c.ige(get(j), int(0x40900000)), () => {
    // z ≥ 1024
    c.if(c.ine(c.or(c.isub(get(j), int(0x40900000)), get(i)), int(0)), () => c.ret(overflow()));
    c.if(c.gt(add(get(pL), num(OVT)), sub(get(z), get(pH))), () => c.ret(overflow()));
  }, () => {
    c.if(c.ige(c.and(get(j), int(0x7fffffff)), int(0x4090cc00)), () => {
      // z ≤ −1075
      c.if(c.ine(c.or(c.isub(get(j), int(0xc090cc00 | 0)), get(i)), int(0)), () => c.ret(underflow()));
      c.if(c.le(get(pL), sub(get(z), get(pH))), () => c.ret(underflow()));
    });
  });
  // 2**(p_h + p_l)
  c.set(i, c.and(get(j), int(0x7fffffff)));
  c.set(k, c.isub(c.shrS(get(i), int(20)), int(0x3ff)));
  c.set(n, int(0));
  c.if(c.igt(get(i), int(0x3fe00000)), () => {
    // |z| > 0.5: n = [z + 0.5]
    c.set(n, c.iadd(get(j), c.shrS(int(0x00100000), c.iadd(get(k), int(1)))));
    c.set(k, c.isub(c.shrS(c.and(get(n), int(0x7fffffff)), int(20)), int(0x3ff)));
    c.set(t, c.words(c.and(get(n), c.xor(c.shrS(int(0x000fffff), get(k)), int(-1))), int(0)));
    c.set(n, c.shrS(c.or(c.and(get(n), int(0x000fffff)), int(0x00100000)), c.isub(int(20), get(k))));
    c.if(c.ilt(get(j), int(0)), () => c.set(n, c.isub(int(0), get(n))));
    c.set(pH, sub(get(pH), get(t)));
  });
  c.set(t, c.withLow(add(get(pL), get(pH)), int(0)));
  c.set(u, mul(get(t), num(LG2_H)));
  c.set(v, add(mul(sub(get(pL), sub(get(t), get(pH))), num(LG2)), mul(get(t), num(LG2_L))));
  c.set(z, add(get(u), get(v)));
  c.set(w, sub(get(v), sub(get(z), get(u))));
  c.set(t, mul(get(z), get(z)));
  c.set(t1, sub(get(z), mul(get(t), c.poly(get(t), P))));
  c.set(r, div(mul(get(z), get(t1)), sub(sub(get(t1), num(2)), add(get(w), mul(get(z), get(w))))));
  c.set(z, sub(num(1), sub(get(r), get(z))));
  c.set(j, c.iadd(c.high(get(z)), c.shl(get(n), int(20))));
  c.if(c.ile(c.shrS(get(j), int(20)), int(0)), () => c.set(z, scalbn(c, get(z), get(n))), () => c.set(z, c.withHigh(get(z), get(j))));
  c.end(mul(get(s), get(z)));
}

/**
 * scalbn(z, n) for pow's subnormal results (z near 1, −1076 < n < 0): z·2^n rounded once, as
 * z·2^(n+64) (exact: a normal double) times 2^-64.
 */
function scalbn(c: CScalar, z: Val, n: Val): Val {
  const { e } = c;
  return () => {
    z();
    n();
    e.i32(64 + 1023).op(Op.i32_add).op(Op.i64_extend_i32_u).code.byte(Op.i64_const).s64(52n);
    e.op(Op.i64_shl).op(Op.f64_reinterpret_i64).op(Op.f64_mul);
    e.constant(2 ** -64, 'float64').op(Op.f64_mul);
  };
}

// ------------------------------------------------------------------ in f64x2 lanes

const LOW0 = -0x100000000n; // SET_LOW_WORD(·, 0) as a mask

/**
 * e_pow.c's general path in lanes, without the sign: log2|x| in extra precision (subnormal |x|
 * scaled by 2^53 as in C) = t1 + t2, (y1 + y2)·(t1 + t2) = z (y1 = y with its low word cleared,
 * y2 = y − y1, exact), 2^z. n = [z + ½] where the high word of |z| is above 0x3fe00000, as C's
 * steps on the high word compute it: trunc(|z|) + (1 where its fraction is ≥ ½), with the sign of
 * z, all exact. Right for lanes whose x is finite, non-zero and not ±1, and |z| < 1020.
 */
function powMagnitude(c: CLanes, ax0: Vec, y: Vec, y1: Vec, y2: Vec): { z0: Vec; magnitude: Vec } {
  const { t1, t2 } = log2Lanes(c, ax0);
  return exp2Lanes(c, t1, t2, y, y1, y2);
}

/** log2(ax) = t1 + t2 in extra precision (the C code's branch for |y| ≤ 2^31), ax0 = |x|. */
function log2Lanes(c: CLanes, ax0: Vec): { t1: Vec; t2: Vec } {
  const { num, int, add, sub, mul, div, select, and, or } = c;
  const low0 = (v: Vec) => and(v, int(LOW0));
  const subnormal = c.let(c.lt(ax0, num(2 ** -1022)));
  const ax1 = c.let(select(subnormal, mul(ax0, num(TWO53)), ax0));
  const ix1 = c.let(c.shrU(ax1, 32));
  const j = c.let(and(ix1, int(0xfffffn)));
  const kOne = c.let(and(c.igt(j, int(0x3988en)), c.ilt(j, int(0xbb67an))));
  const above = c.let(c.ige(j, int(0xbb67an)));
  const n = c.let(c.isub(c.iadd(and(subnormal, int(-53n)), c.isub(c.shrU(ix1, 20), int(0x3ffn))), above));
  const ix = c.let(c.isub(or(j, int(0x3ff00000n)), and(above, int(0x100000n))));
  const ax = c.let(or(and(ax1, int(0xffffffffn)), c.shl(ix, 32)));
  const bp = c.let(select(kOne, num(1.5), num(1)));
  const dpH = c.let(and(kOne, num(DP_H)));
  const dpL = and(kOne, num(DP_L));
  const u0 = c.let(sub(ax, bp));
  const v0 = c.let(div(num(1), add(ax, bp)));
  const ss = c.let(mul(u0, v0));
  const sH = c.let(low0(ss));
  // ix < 2^31 in every lane: its logical shift is C's arithmetic one (V8 emulates i64x2.shr_s in 6 instructions)
  const tH0 = c.let(c.shl(c.iadd(c.iadd(or(c.shrU(ix, 1), int(0x20000000n)), int(0x00080000n)), and(kOne, int(0x40000n))), 32));
  const tL0 = sub(ax, sub(tH0, bp));
  const sL = c.let(mul(v0, sub(sub(u0, mul(sH, tH0)), mul(sH, tL0))));
  const s2a = c.let(mul(ss, ss));
  const r = c.let(add(mul(mul(s2a, s2a), c.poly(s2a, L)), mul(sL, add(sH, ss))));
  const s2 = c.let(mul(sH, sH));
  const tH = c.let(low0(add(add(num(3), s2), r)));
  const tL = sub(r, sub(sub(tH, num(3)), s2));
  const u = c.let(mul(sH, tH));
  const v = c.let(add(mul(sL, tH), mul(tL, ss)));
  const pH0 = c.let(low0(add(u, v)));
  const pL0 = sub(v, sub(pH0, u));
  const zH = c.let(mul(num(CP_H), pH0));
  const zL = c.let(add(add(mul(num(CP_L), pH0), mul(pL0, num(CP))), dpL));
  const tn = c.let(c.toF(n));
  const t1 = c.let(low0(add(add(add(zH, zL), dpH), tn)));
  const t2 = c.let(sub(zL, sub(sub(sub(t1, tn), dpH), zH)));
  return { t1, t2 };
}

/** (y1 + y2)·(t1 + t2) = z, and 2^z (without the sign): z0 and the magnitude. */
function exp2Lanes(c: CLanes, t1: Vec, t2: Vec, y: Vec, y1: Vec, y2: Vec): { z0: Vec; magnitude: Vec } {
  const { num, int, add, sub, mul, div, and } = c;
  const low0 = (v: Vec) => and(v, int(LOW0));
  // (y1 + y2)·(t1 + t2)
  const pL = c.let(add(mul(y2, t1), mul(y, t2)));
  const pH1 = c.let(mul(y1, t1));
  const z0 = c.let(add(pL, pH1));
  const az = c.let(c.abs(z0));
  // n = [z + ½] where the high word of |z| is above 0x3fe00000 (C's steps on the high word)
  const round = c.let(c.igt(c.shrU(az, 32), int(0x3fe00000n)));
  // [|z| + ½] exactly (C adds ½ to the high word: no rounding), as trunc(|z|) + (fraction ≥ ½)
  const whole = c.let(c.un(az, SimdOp.f64x2_trunc));
  const nearest = add(whole, and(c.ge(sub(az, whole), num(0.5)), num(1)));
  const nz = c.let(and(round, c.or(nearest, and(z0, num(-0)))));
  const pH = c.let(sub(pH1, nz));
  // 2^(p_h + p_l)
  const t = c.let(low0(add(pL, pH)));
  const uu = c.let(mul(t, num(LG2_H)));
  const vv = c.let(add(mul(sub(pL, sub(t, pH)), num(LG2)), mul(t, num(LG2_L))));
  const z = c.let(add(uu, vv));
  const w = c.let(sub(vv, sub(z, uu)));
  const tt = c.let(mul(z, z));
  const tp = c.let(sub(z, mul(tt, c.poly(tt, P))));
  const rr = div(mul(z, tp), sub(sub(tp, num(2)), add(w, mul(z, w))));
  const zz = sub(num(1), sub(rr, z));
  const nBits = c.shl(c.add(nz, num(1.5 * 2 ** 52)), 52); // n (|n| < 2^11) in the low bits, shifted to the exponent field
  return { z0, magnitude: c.iadd(zz, nBits) };
}

/** Lanes of x finite, non-zero and not ±1: those the general path computes (given |z| < 1020). */
const ordinaryX = (c: CLanes, ax0: Vec): Vec => c.and(c.lt(ax0, c.num(Infinity)), c.andNot(c.ne(ax0, c.num(0)), c.eq(ax0, c.num(1))));

/**
 * e_pow.c in lanes. Each lane takes its early result where y is 0, ±1, 2 or (x ≥ +0) 0.5 — the
 * same operations as the C code (1, x, 1/x, x·x, sqrt(x)), before any other case, as there; these
 * are computed only for vectors with such a lane (their division and square root would cost every
 * vector otherwise) — NaN for x < 0 and y not an integer, else the general path
 * (`powMagnitude`), with the sign −1 for x < 0 and odd y. yisint is computed on the double (y
 * integer: trunc(y) = y; odd: y/2 not an integer; exact, as y/2 is). Lanes left to the scalar
 * function: x or y NaN or ±∞, x = ±0 or ±1, |y| above 2^31 (by the high word), and |z| ≥ 1020
 * (results that may overflow, underflow or be subnormal).
 */
function powLanes(c: CLanes, x: Vec, y: Vec): { value: Vec; covered: Vec } {
  const { num, int, mul, div, select, and, or } = c;
  const ax0 = c.let(c.abs(x));
  const iy = c.let(c.shrU(c.abs(y), 32));
  const half = c.let(mul(y, num(0.5)));
  const yInt = c.let(c.eq(c.un(y, SimdOp.f64x2_trunc), y));
  const yOdd = c.let(c.andNot(yInt, c.eq(c.un(half, SimdOp.f64x2_trunc), half)));
  const negative = c.let(c.lt(x, num(0)));
  const s = select(and(negative, yOdd), num(-1), num(1));
  const y1 = c.let(and(y, int(LOW0)));
  const { z0, magnitude } = powMagnitude(c, ax0, y, y1, c.sub(y, y1));
  const result = c.local();
  select(c.andNot(negative, yInt), num(NaN), mul(s, magnitude))();
  c.e.set(result);
  // the cases before the general path, in the C code's order
  const xPositive = c.ige(x, int(0n));
  const special = c.let(or(or(or(c.eq(y, num(0)), c.eq(c.abs(y), num(1))), c.eq(y, num(2))), and(c.eq(y, num(0.5)), xPositive)));
  c.whereAny(special, result, () =>
    select(c.eq(y, num(0)), num(1),
      select(c.eq(y, num(1)), x,
        select(c.eq(y, num(-1)), div(num(1), x),
          select(c.eq(y, num(2)), mul(x, x), c.sqrt(x))))));
  const yOk = and(c.lt(c.abs(y), num(Infinity)), c.ile(iy, int(0x41e00000n)));
  const covered = or(special, and(and(ordinaryX(c, ax0), yOk), c.lt(c.abs(z0), num(1020))));
  return { value: c.get(result), covered };
}

/** The high word of a double, as fdlibm's GET_HIGH_WORD (unsigned). */
function highWord(v: number): number {
  const view = new DataView(new ArrayBuffer(8));
  view.setFloat64(0, v);
  return view.getUint32(0);
}

/** What the lanes compute for x ** y, and the mask of lanes they computed as the C code does. */
type PowLanes = { value: Vec; covered: Vec };

/**
 * The exponents whose result the C code gives before its general path, where every lane's y is
 * `k`: x**0 = 1, x, 1/x, x·x, and for 0.5 sqrt(x) where x ≥ +0 (NaN for negative finite x, whose C
 * path gives NaN as not an integer power; −0 and −∞ to the scalar function); else undefined.
 */
function powLanesOfSpecialY(c: CLanes, x: Vec, k: number): PowLanes | undefined {
  const { num, int, mul, div, select, and, or } = c;
  const all = int(-1n);
  if (k === 0) return { value: num(1), covered: all };
  if (k === 1) return { value: x, covered: all };
  if (k === -1) return { value: div(num(1), x), covered: all };
  if (k === 2) return { value: mul(x, x), covered: all };
  if (k !== 0.5) return undefined;
  const xPositive = c.let(c.ige(x, int(0n)));
  return { value: select(xPositive, c.sqrt(x), num(NaN)), covered: or(xPositive, and(c.lt(x, num(0)), c.gt(x, num(-Infinity)))) };
}

/** Whether the lanes leave an exponent to the scalar function whole: NaN, ±∞, |y| above 2^31 by the high word. */
const yLeftToScalar = (k: number): boolean => !Number.isFinite(k) || (highWord(k) & 0x7fffffff) > 0x41e00000;

const parityOf = (k: number): YParity => (!Number.isInteger(k) ? 'not an integer' : Number.isInteger(k * 0.5) ? 'even' : 'odd');

/**
 * The general path where every lane's y is the same (y, and its split y1 + y2): 2^(y·log2|x|),
 * and the lanes it covers; the sign and NaN, which depend on y's parity, are `signOfKnownY`'s.
 */
function magnitudeOfKnownY(c: CLanes, x: Vec, y: Vec, y1: Vec, y2: Vec): { magnitude: Vec; covered: Vec } {
  const ax0 = c.let(c.abs(x));
  const { z0, magnitude } = powMagnitude(c, ax0, y, y1, y2);
  return { magnitude, covered: c.and(ordinaryX(c, ax0), c.lt(c.abs(z0), c.num(1020))) };
}

/** x ** y from the magnitude, by y's parity: −magnitude for x < 0 and odd y, NaN for x < 0 and y not an integer. */
function signOfKnownY(c: CLanes, x: Vec, magnitude: Vec, parity: YParity): Vec {
  const { num, mul, select } = c;
  const negative = c.lt(x, num(0));
  if (parity === 'odd') return mul(select(negative, num(-1), num(1)), magnitude);
  return parity === 'even' ? magnitude : select(negative, num(NaN), magnitude);
}

/** y1 of e_pow.c's split y = y1 + y2: y with its low word cleared. */
function highPart(k: number): number {
  const bits = new BigInt64Array(new Float64Array([k]).buffer);
  bits[0] = bits[0]! & LOW0;
  return new Float64Array(bits.buffer)[0]!;
}

/**
 * e_pow.c in lanes where every lane's y is the same number `k`, known when the kernel is compiled
 * (a literal exponent: `x ** 6`, `x ** 2.4`): what the C code decides on y alone is decided here
 * once — its early results (`powLanesOfSpecialY`), whether y is an integer (else NaN for x < 0) or
 * odd (else the sign is +1), y1 and y2 — so that a vector computes only what depends on x.
 * `undefined` where y itself is left to the scalar function (NaN, ±∞, |y| above 2^31 by the high
 * word).
 */
function powLanesOfKnownY(c: CLanes, x: Vec, k: number): PowLanes | undefined {
  const special = powLanesOfSpecialY(c, x, k);
  if (special) return special;
  if (yLeftToScalar(k)) return undefined;
  const k1 = highPart(k);
  const { magnitude, covered } = magnitudeOfKnownY(c, x, c.num(k), c.num(k1), c.num(k - k1));
  return { value: signOfKnownY(c, x, magnitude, parityOf(k)), covered };
}

/**
 * The loops an exponent of the call selects (`exponentCase`): 0 for the exponents that
 * `powLanesOfKnownY` takes early or leaves to the scalar function (those loops run pow's general
 * lanes, right for every y), else 1 + the index of y's parity here.
 */
export const EXPONENT_PARITIES: readonly YParity[] = ['odd', 'even', 'not an integer'];

/**
 * Pushes the case of the exponent in f64 local `y` (i32: 0, or 1 + its index in
 * EXPONENT_PARITIES), deciding as `powLanesOfKnownY` does on a literal, and sets v128 locals
 * `y1`, `y2` to y's split splatted (used only by the parity cases).
 */
export function exponentCase(e: FunctionEmitter, y: number, y1: number, y2: number): void {
  const s = new CScalar(e);
  const high = s.f64();
  s.set(high, () => (e.get(y).op(Op.i64_reinterpret_f64).code.byte(Op.i64_const).s64(LOW0), void e.op(Op.i64_and).op(Op.f64_reinterpret_i64)));
  for (const [local, v] of [[y1, s.get(high)], [y2, s.sub(s.get(y), s.get(high))]] as const) {
    v();
    e.simd(SimdOp.f64x2_splat).set(local);
  }
  const notInteger = (v: Val) => s.ne(() => (v(), void e.op(Op.f64_trunc)), v);
  const parity = (p: YParity) => s.int(1 + EXPONENT_PARITIES.indexOf(p));
  const general = s.select(notInteger(s.get(y)), parity('not an integer'), s.select(notInteger(s.mul(s.get(y), s.num(0.5))), parity('odd'), parity('even')));
  // yLeftToScalar, and the exponents powLanesOfSpecialY takes
  const toScalar = s.or(s.eqz(s.lt(s.abs(s.get(y)), s.num(Infinity))), s.igt(s.and(s.high(s.get(y)), s.int(0x7fffffff)), s.int(0x41e00000)));
  let other = toScalar;
  for (const k of [0, 1, -1, 2, 0.5]) other = s.or(other, s.eq(s.get(y), s.num(k)));
  s.select(other, s.int(0), general)();
}

/** powLanesOfKnownY's general path for an exponent of the call (`ExponentOfCall`), y in every lane. */
function powLanesOfCallY(c: CLanes, x: Vec, y: Vec, known: ExponentOfCall): PowLanes {
  const { magnitude, covered } = magnitudeOfKnownY(c, x, y, c.get(known.y1), c.get(known.y2));
  return { value: signOfKnownY(c, x, magnitude, known.parity), covered };
}

/**
 * log2(b) = t1 + t2 as pow's lanes compute it (`log2Lanes`), for a base b known when the kernel is
 * compiled: that code itself, run once in a small module of its own, so the two doubles are the
 * ones every vector would compute.
 */
const log2OfBases = new Map<number, readonly [number, number]>();
function log2OfBase(b: number): readonly [number, number] {
  let t = log2OfBases.get(b);
  if (t) return t;
  const e = new FunctionEmitter(undefined as never, 1, -1);
  const c = new CLanes(e);
  const ax0 = c.let(() => void e.get(0).simd(SimdOp.f64x2_splat).simd(SimdOp.f64x2_abs));
  const { t1, t2 } = log2Lanes(c, ax0);
  t1();
  e.simd(SimdOp.f64x2_extract_lane).code.byte(0);
  t2();
  e.simd(SimdOp.f64x2_extract_lane).code.byte(0);
  e.op(Op.end);
  const builder = new ModuleBuilder(undefined);
  const type = { params: [ValType.f64], results: [ValType.f64, ValType.f64] };
  builder.define(builder.declare(type), { type, locals: e.locals, code: e.code, exportName: 'log2' });
  const instance = new WebAssemblyApi.Instance(new WebAssemblyApi.Module(builder.encode()), {});
  t = (instance.exports.log2 as (v: number) => [number, number])(b);
  log2OfBases.set(b, t);
  return t;
}

/**
 * e_pow.c in lanes where every lane's x is the same positive number `b` (not 1, finite), known
 * when the kernel is compiled (a literal base: `2 ** x`, `10 ** (db / 20)`, `1.05 ** -n`): log2(b)
 * in extra precision is computed once (`log2OfBase`), the sign is +1 and no lane is NaN for a
 * negative base; the early results of y = 0, ±1, 2, 0.5 are constants (1, b, 1/b, b·b, sqrt(b),
 * as the C code computes them), taken only by vectors with such a lane. A vector computes y·log2(b)
 * and 2^that; lanes left to the scalar function: y NaN or ±∞, |y| above 2^31, |z| ≥ 1020.
 */
function powLanesOfKnownBase(c: CLanes, y: Vec, b: number): { value: Vec; covered: Vec } | undefined {
  if (!(b > 0 && b < Infinity && b !== 1)) return undefined;
  const { num, int, select, and, or } = c;
  const [t1, t2] = log2OfBase(b);
  const y1 = c.let(and(y, int(LOW0)));
  const { z0, magnitude } = exp2Lanes(c, num(t1), num(t2), y, y1, c.sub(y, y1));
  const result = c.local();
  magnitude();
  c.e.set(result);
  const special = c.let(or(or(or(c.eq(y, num(0)), c.eq(c.abs(y), num(1))), c.eq(y, num(2))), c.eq(y, num(0.5))));
  c.whereAny(special, result, () =>
    select(c.eq(y, num(0)), num(1), select(c.eq(y, num(1)), num(b), select(c.eq(y, num(-1)), num(1 / b), select(c.eq(y, num(2)), num(b * b), num(Math.sqrt(b)))))));
  const yOk = and(c.lt(c.abs(y), num(Infinity)), c.ile(c.shrU(c.abs(y), 32), int(0x41e00000n)));
  return { value: c.get(result), covered: or(special, and(yOk, c.lt(c.abs(z0), num(1020)))) };
}

export const POW_LANES: CheckedVectorCode = {
  lanes: (c, [x, y], known) => {
    const [base, exponent] = [known?.[0], known?.[1]];
    if (typeof exponent === 'object') return powLanesOfCallY(c, x!, y!, exponent);
    return (typeof exponent === 'number' ? powLanesOfKnownY(c, x!, exponent) : undefined) ??
      (typeof base === 'number' ? powLanesOfKnownBase(c, y!, base) : undefined) ?? powLanes(c, x!, y!);
  },
};
