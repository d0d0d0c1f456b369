/**
 * fdlibm's logarithms (e_log.c, s_log1p.c, e_log2.c with k_log.h, e_log10.c) as V8 11 has them in
 * src/base/ieee754.cc, ported to scalar Wasm functions `f64 → f64` line by line (c-ops.ts): the
 * same IEEE operations in the same order, so each gives V8's `Math.log*` bit for bit.
 */
import { CScalar, fromWords, type Val } from './c-ops.js';
import type { FunctionEmitter } from '../emit-scalar.js';
import { type CLanes, type Vec, type VectorCode } from './lanes.js';

const LN2_HI = fromWords(0x3fe62e42, 0xfee00000);
const LN2_LO = fromWords(0x3dea39ef, 0x35793c76);
const TWO54 = fromWords(0x43500000, 0);
/** Lg1…Lg7 (log, log2's k_log1p) and Lp1…Lp7 (log1p): the same numbers. */
export const LG = [
  fromWords(0x3fe55555, 0x55555593), fromWords(0x3fd99999, 0x9997fa04), fromWords(0x3fd24924, 0x94229359),
  fromWords(0x3fcc71c5, 0x1d8e78af), fromWords(0x3fc74664, 0x96cb03de), fromWords(0x3fc39a09, 0xd078c69f),
  fromWords(0x3fc2f112, 0xdf3e5244),
] as const;

/**
 * The common start of log, log2 and log10 for x < 2^-1022: ±0 → −∞, negative → NaN, subnormal
 * scaled by 2^54 (k −= 54). Leaves hx (and lx if given) holding the words of the scaled x.
 */
function smallArgument(c: CScalar, x: number, hx: number, k: number, lx?: number): void {
  const { num, int, get } = c;
  c.if(c.ilt(get(hx), int(0x00100000)), () => {
    c.if(c.eqz(c.or(c.and(get(hx), int(0x7fffffff)), c.low(get(x)))), () => c.ret(num(-Infinity)));
    c.if(c.ilt(get(hx), int(0)), () => c.ret(num(NaN)));
    c.set(k, c.isub(get(k), int(54)));
    c.set(x, c.mul(get(x), num(TWO54)));
    c.set(hx, c.high(get(x)));
    if (lx !== undefined) c.set(lx, c.low(get(x)));
  });
}

/** `log(x)` (e_log.c). */
export function emitLog(e: FunctionEmitter): void {
  const c = new CScalar(e);
  const { num, int, get, add, sub, mul, div } = c;
  const x = 0;
  const [hfsq, f, s, z, R, w, t1, t2, dk] = [c.f64(), c.f64(), c.f64(), c.f64(), c.f64(), c.f64(), c.f64(), c.f64(), c.f64()];
  const [k, hx, i, j] = [c.i32(), c.i32(), c.i32(), c.i32()];
  c.set(hx, c.high(get(x)));
  c.set(k, int(0));
  smallArgument(c, x, hx, k);
  c.if(c.ige(get(hx), int(0x7ff00000)), () => c.ret(add(get(x), get(x))));
  c.set(k, c.iadd(get(k), c.isub(c.shrS(get(hx), int(20)), int(1023))));
  c.set(hx, c.and(get(hx), int(0x000fffff)));
  c.set(i, c.and(c.iadd(get(hx), int(0x95f64)), int(0x100000)));
  c.set(x, c.withHigh(get(x), c.or(get(hx), c.xor(get(i), int(0x3ff00000))))); // normalize x or x/2
  c.set(k, c.iadd(get(k), c.shrS(get(i), int(20))));
  c.set(f, sub(get(x), num(1)));
  c.set(dk, c.toF(get(k)));
  c.if(c.iltU(c.and(int(0x000fffff), c.iadd(int(2), get(hx))), int(3)), () => {
    // −2^-20 ≤ f < 2^-20
    c.if(c.eq(get(f), num(0)), () => {
      c.if(c.eqz(get(k)), () => c.ret(num(0)));
      c.ret(add(mul(get(dk), num(LN2_HI)), mul(get(dk), num(LN2_LO))));
    });
    c.set(R, mul(mul(get(f), get(f)), sub(num(0.5), mul(num(0.33333333333333333), get(f)))));
    c.if(c.eqz(get(k)), () => c.ret(sub(get(f), get(R))));
    c.ret(sub(mul(get(dk), num(LN2_HI)), sub(sub(get(R), mul(get(dk), num(LN2_LO))), get(f))));
  });
  c.set(s, div(get(f), add(num(2), get(f))));
  c.set(z, mul(get(s), get(s)));
  c.set(i, c.isub(get(hx), int(0x6147a)));
  c.set(w, mul(get(z), get(z)));
  c.set(j, c.isub(int(0x6b851), get(hx)));
  c.set(t1, mul(get(w), c.poly(get(w), [LG[1], LG[3], LG[5]])));
  c.set(t2, mul(get(z), c.poly(get(w), [LG[0], LG[2], LG[4], LG[6]])));
  c.set(i, c.or(get(i), get(j)));
  c.set(R, add(get(t2), get(t1)));
  c.if(c.igt(get(i), int(0)), () => {
    c.set(hfsq, mul(mul(num(0.5), get(f)), get(f)));
    c.if(c.eqz(get(k)), () => c.ret(sub(get(f), sub(get(hfsq), mul(get(s), add(get(hfsq), get(R)))))));
    c.ret(sub(mul(get(dk), num(LN2_HI)), sub(sub(get(hfsq), add(mul(get(s), add(get(hfsq), get(R))), mul(get(dk), num(LN2_LO)))), get(f))));
  });
  c.if(c.eqz(get(k)), () => c.ret(sub(get(f), mul(get(s), sub(get(f), get(R))))));
  c.end(sub(mul(get(dk), num(LN2_HI)), sub(sub(mul(get(s), sub(get(f), get(R))), mul(get(dk), num(LN2_LO))), get(f))));
}

/** `log1p(x)` (s_log1p.c). */
export function emitLog1p(e: FunctionEmitter): void {
  const c = new CScalar(e);
  const { num, int, get, add, sub, mul, div } = c;
  const x = 0;
  const [hfsq, f, cc, s, z, R, u, dk] = [c.f64(), c.f64(), c.f64(), c.f64(), c.f64(), c.f64(), c.f64(), c.f64()];
  const [k, hx, hu, ax] = [c.i32(), c.i32(), c.i32(), c.i32()];
  c.set(hx, c.high(get(x)));
  c.set(ax, c.and(get(hx), int(0x7fffffff)));
  c.set(k, int(1));
  c.set(f, num(0));
  c.set(cc, num(0));
  c.set(hu, int(0));
  c.if(c.ilt(get(hx), int(0x3fda827a)), () => {
    // 1 + x < sqrt(2)+
    c.if(c.ige(get(ax), int(0x3ff00000)), () => {
      // x ≤ −1
      c.if(c.eq(get(x), num(-1)), () => c.ret(num(-Infinity)));
      c.ret(num(NaN));
    });
    c.if(c.ilt(get(ax), int(0x3e200000)), () => {
      // |x| < 2^-29: x if |x| < 2^-54 (two54 + x > 0 always holds here)
      c.if(c.ilt(get(ax), int(0x3c900000)), () => c.ret(get(x)));
      c.ret(sub(get(x), mul(mul(get(x), get(x)), num(0.5))));
    });
    c.if(c.or(c.igt(get(hx), int(0)), c.ile(get(hx), int(0xbfd2bec4 | 0))), () => {
      // sqrt(2)/2- ≤ 1 + x < sqrt(2)+
      c.set(k, int(0));
      c.set(f, get(x));
      c.set(hu, int(1));
    });
  });
  c.if(c.ige(get(hx), int(0x7ff00000)), () => c.ret(add(get(x), get(x))));
  c.if(c.ine(get(k), int(0)), () => {
    c.if(c.ilt(get(hx), int(0x43400000)), () => {
      c.set(u, add(num(1), get(x)));
      c.set(hu, c.high(get(u)));
      c.set(k, c.isub(c.shrS(get(hu), int(20)), int(1023)));
      c.set(cc, c.select(c.igt(get(k), int(0)), sub(num(1), sub(get(u), get(x))), sub(get(x), sub(get(u), num(1))))); // correction term
      c.set(cc, div(get(cc), get(u)));
    }, () => {
      c.set(u, get(x));
      c.set(hu, c.high(get(u)));
      c.set(k, c.isub(c.shrS(get(hu), int(20)), int(1023)));
      c.set(cc, num(0));
    });
    c.set(hu, c.and(get(hu), int(0x000fffff)));
    c.if(c.ilt(get(hu), int(0x6a09e)), () => {
      c.set(u, c.withHigh(get(u), c.or(get(hu), int(0x3ff00000)))); // normalize u
    }, () => {
      c.set(k, c.iadd(get(k), int(1)));
      c.set(u, c.withHigh(get(u), c.or(get(hu), int(0x3fe00000)))); // normalize u/2
      c.set(hu, c.shrS(c.isub(int(0x00100000), get(hu)), int(2)));
    });
    c.set(f, sub(get(u), num(1)));
  });
  c.set(hfsq, mul(mul(num(0.5), get(f)), get(f)));
  c.set(dk, c.toF(get(k)));
  c.if(c.eqz(get(hu)), () => {
    // |f| < 2^-20
    c.if(c.eq(get(f), num(0)), () => {
      c.if(c.eqz(get(k)), () => c.ret(num(0)));
      c.set(cc, add(get(cc), mul(get(dk), num(LN2_LO))));
      c.ret(add(mul(get(dk), num(LN2_HI)), get(cc)));
    });
    c.set(R, mul(get(hfsq), sub(num(1), mul(num(0.66666666666666666), get(f)))));
    c.if(c.eqz(get(k)), () => c.ret(sub(get(f), get(R))));
    c.ret(sub(mul(get(dk), num(LN2_HI)), sub(sub(get(R), add(mul(get(dk), num(LN2_LO)), get(cc))), get(f))));
  });
  c.set(s, div(get(f), add(num(2), get(f))));
  c.set(z, mul(get(s), get(s)));
  c.set(R, mul(get(z), c.poly(get(z), LG)));
  c.if(c.eqz(get(k)), () => c.ret(sub(get(f), sub(get(hfsq), mul(get(s), add(get(hfsq), get(R)))))));
  c.end(sub(mul(get(dk), num(LN2_HI)), sub(sub(get(hfsq), add(mul(get(s), add(get(hfsq), get(R))), add(mul(get(dk), num(LN2_LO)), get(cc)))), get(f))));
}

/** k_log1p(f) of k_log.h: log(1 + f) − f + f²/2, for 1 + f in ~[sqrt(2)/2, sqrt(2)]. */
function kLog1p(c: CScalar, f: Val): Val {
  const { num, get, add, mul, div } = c;
  const [s, z, w, t1, t2, R, hfsq] = [c.f64(), c.f64(), c.f64(), c.f64(), c.f64(), c.f64(), c.f64()];
  return () => {
    c.set(s, div(f, add(num(2), f)));
    c.set(z, mul(get(s), get(s)));
    c.set(w, mul(get(z), get(z)));
    c.set(t1, mul(get(w), c.poly(get(w), [LG[1], LG[3], LG[5]])));
    c.set(t2, mul(get(z), c.poly(get(w), [LG[0], LG[2], LG[4], LG[6]])));
    c.set(R, add(get(t2), get(t1)));
    c.set(hfsq, mul(mul(num(0.5), f), f));
    mul(get(s), add(get(hfsq), get(R)))();
  };
}

const IVLN2HI = fromWords(0x3ff71547, 0x65200000);
const IVLN2LO = fromWords(0x3de705fc, 0x2eefa200);

/** `log2(x)` (e_log2.c). */
export function emitLog2(e: FunctionEmitter): void {
  const c = new CScalar(e);
  const { num, int, get, add, sub, mul } = c;
  const x = 0;
  const [f, hfsq, hi, lo, r, valHi, valLo, w, y] = [c.f64(), c.f64(), c.f64(), c.f64(), c.f64(), c.f64(), c.f64(), c.f64(), c.f64()];
  const [i, k, hx, lx] = [c.i32(), c.i32(), c.i32(), c.i32()];
  c.set(hx, c.high(get(x)));
  c.set(lx, c.low(get(x)));
  c.set(k, int(0));
  smallArgument(c, x, hx, k);
  c.if(c.ige(get(hx), int(0x7ff00000)), () => c.ret(add(get(x), get(x))));
  // lx is the unscaled low word, as in V8 (it is only compared to 0 where x ≥ 2^-1022)
  c.if(c.and(c.ieq(get(hx), int(0x3ff00000)), c.eqz(get(lx))), () => c.ret(num(0)));
  c.set(k, c.iadd(get(k), c.isub(c.shrS(get(hx), int(20)), int(1023))));
  c.set(hx, c.and(get(hx), int(0x000fffff)));
  c.set(i, c.and(c.iadd(get(hx), int(0x95f64)), int(0x100000)));
  c.set(x, c.withHigh(get(x), c.or(get(hx), c.xor(get(i), int(0x3ff00000)))));
  c.set(k, c.iadd(get(k), c.shrS(get(i), int(20))));
  c.set(y, c.toF(get(k)));
  c.set(f, sub(get(x), num(1)));
  c.set(hfsq, mul(mul(num(0.5), get(f)), get(f)));
  c.set(r, kLog1p(c, get(f)));
  c.set(hi, c.withLow(sub(get(f), get(hfsq)), int(0)));
  c.set(lo, add(sub(sub(get(f), get(hi)), get(hfsq)), get(r)));
  c.set(valHi, mul(get(hi), num(IVLN2HI)));
  c.set(valLo, add(mul(add(get(lo), get(hi)), num(IVLN2LO)), mul(get(lo), num(IVLN2HI))));
  c.set(w, add(get(y), get(valHi)));
  c.set(valLo, add(get(valLo), add(sub(get(y), get(w)), get(valHi))));
  c.set(valHi, get(w));
  c.end(add(get(valLo), get(valHi)));
}

const IVLN10 = 4.34294481903251816668e-01;
const LOG10_2HI = fromWords(0x3fd34413, 0x509f6000);
const LOG10_2LO = fromWords(0x3d59fef3, 0x11f12b36);

/** `log10(x)` (e_log10.c, V8's version); `log` is the index of the log port it calls. */
export function emitLog10(e: FunctionEmitter, log: number): void {
  const c = new CScalar(e);
  const { num, int, get, add, mul } = c;
  const x = 0;
  const y = c.f64();
  const [i, k, hx, lx] = [c.i32(), c.i32(), c.i32(), c.i32()];
  c.set(hx, c.high(get(x)));
  c.set(lx, c.low(get(x)));
  c.set(k, int(0));
  smallArgument(c, x, hx, k, lx);
  c.if(c.ige(get(hx), int(0x7ff00000)), () => c.ret(add(get(x), get(x))));
  c.if(c.and(c.ieq(get(hx), int(0x3ff00000)), c.eqz(get(lx))), () => c.ret(num(0)));
  c.set(k, c.iadd(get(k), c.isub(c.shrS(get(hx), int(20)), int(1023))));
  c.set(i, c.shrU(c.and(get(k), int(0x80000000 | 0)), int(31)));
  c.set(hx, c.or(c.and(get(hx), int(0x000fffff)), c.shl(c.isub(int(0x3ff), get(i)), int(20))));
  c.set(y, c.toF(c.iadd(get(k), get(i))));
  c.set(x, c.words(get(hx), get(lx)));
  const logX: Val = () => (get(x)(), void e.code.byte(0x10).u32(log));
  c.end(add(add(mul(get(y), num(LOG10_2LO)), mul(num(IVLN10), logX)), mul(get(y), num(LOG10_2HI))));
}

// ------------------------------------------------------------------ in f64x2 lanes

/**
 * The reduction of log, log2 and log10 in lanes (x positive, normal, finite): k and the
 * normalized x′ = x/2^k in [sqrt(2)/2, sqrt(2)), as e_log.c computes them from the high word hx.
 */
function reduceLanes(c: CLanes, x: Vec): { hxm: Vec; k: Vec; xn: Vec } {
  const hx = c.let(c.shrU(x, 32));
  const hxm = c.let(c.and(hx, c.int(0xfffffn)));
  const i = c.let(c.and(c.iadd(hxm, c.int(0x95f64n)), c.int(0x100000n)));
  const xn = c.let(c.or(c.and(x, c.int(0x000fffffffffffffn)), c.shl(c.xor(i, c.int(0x3ff00000n)), 32)));
  const k = c.let(c.iadd(c.isub(c.shrU(hx, 20), c.int(1023n)), c.shrU(i, 20)));
  return { hxm, k, xn };
}

/** Lanes of positive, normal, finite x (false for NaN). */
const normalPositive = (c: CLanes, x: Vec): Vec => c.and(c.ge(x, c.num(2 ** -1022)), c.lt(x, c.num(Infinity)));

/**
 * e_log.c in lanes, for x positive, normal and finite outside its branch for −2^-20 ≤ f < 2^-20
 * (the low 20 bits of hx not 0xffffe, 0xfffff or 0). Its four final formulas become two: for
 * k = 0, dk·ln2_hi − ((hfsq − (s·(hfsq + R) + dk·ln2_lo)) − f) is f − (hfsq − s·(hfsq + R))
 * exactly (dk·ln2_* = +0; a + 0 = a here, as hfsq > 0; fl(0 − (b − f)) = fl(f − b), and both are
 * +0 where b = f), and likewise for the other pair; so each lane takes the k ≠ 0 formula of its
 * branch (i > 0 or not), selected per lane.
 */
export const LOG_LANES: VectorCode = {
  covers: (c, [x]) => c.and(normalPositive(c, x!), c.igt(c.and(c.iadd(c.and(c.shrU(x!, 32), c.int(0xfffffn)), c.int(2n)), c.int(0xfffffn)), c.int(2n))),
  compute: (c, [x]) => logOfReduced(c, reduceLanes(c, x!)),
};

function logOfReduced(c: CLanes, { hxm, k, xn }: { hxm: Vec; k: Vec; xn: Vec }): Vec {
  const { num, add, sub, mul, div } = c;
  const f = c.let(sub(xn, num(1)));
  const s = c.let(div(f, add(num(2), f)));
  const dk = c.let(c.toF(k));
  const z = c.let(mul(s, s));
  const w = c.let(mul(z, z));
  const R = c.let(add(mul(z, c.poly(w, [LG[0], LG[2], LG[4], LG[6]])), mul(w, c.poly(w, [LG[1], LG[3], LG[5]]))));
  const ii = c.or(c.isub(hxm, c.int(0x6147an)), c.isub(c.int(0x6b851n), hxm));
  const hfsq = c.let(mul(mul(num(0.5), f), f));
  const wide = sub(mul(dk, num(LN2_HI)), sub(sub(hfsq, add(mul(s, add(hfsq, R)), mul(dk, num(LN2_LO)))), f));
  const narrow = sub(mul(dk, num(LN2_HI)), sub(sub(mul(s, sub(f, R)), mul(dk, num(LN2_LO))), f));
  return c.select(c.igt(ii, c.int(0n)), wide, narrow);
}

/** e_log2.c in lanes, for x positive, normal, finite and not 1 (its only other branch). */
export const LOG2_LANES: VectorCode = {
  covers: (c, [x]) => c.and(normalPositive(c, x!), c.ne(x!, c.num(1))),
  compute: (c, [x]) => {
    const { num, add, sub, mul, div } = c;
    const { k, xn } = reduceLanes(c, x!);
    const y = c.let(c.toF(k));
    const f = c.let(sub(xn, num(1)));
    const hfsq = c.let(mul(mul(num(0.5), f), f));
    // k_log1p(f)
    const s = c.let(div(f, add(num(2), f)));
    const z = c.let(mul(s, s));
    const w = c.let(mul(z, z));
    const R = c.let(add(mul(z, c.poly(w, [LG[0], LG[2], LG[4], LG[6]])), mul(w, c.poly(w, [LG[1], LG[3], LG[5]]))));
    const r = c.let(mul(s, add(hfsq, R)));
    const hi = c.let(c.and(sub(f, hfsq), c.int(-0x100000000n)));
    const lo = c.let(add(sub(sub(f, hi), hfsq), r));
    const valHi = c.let(mul(hi, num(IVLN2HI)));
    const valLo = add(mul(add(lo, hi), num(IVLN2LO)), mul(lo, num(IVLN2HI)));
    const w2 = c.let(add(y, valHi));
    return add(add(valLo, add(sub(y, w2), valHi)), w2);
  },
};

/**
 * e_log10.c in lanes: x scaled to x′ = x/2^n (n = k or k + 1, x′ in [1, 2) or [0.5, 1)), then
 * z = y·log10_2lo + ivln10·log(x′), z + y·log10_2hi; for x positive, normal, finite, not 1, and
 * x′ covered by LOG_LANES.
 */
export const LOG10_LANES: VectorCode = {
  covers: (c, [x]) => c.and(c.and(normalPositive(c, x!), c.ne(x!, c.num(1))), LOG_LANES.covers(c, [scaled(c, x!).xn])),
  compute: (c, [x]) => {
    const { num, add, mul } = c;
    const { y, xn } = scaled(c, x!);
    const logX = LOG_LANES.compute(c, [c.let(xn)]);
    return add(add(mul(y, num(LOG10_2LO)), mul(num(IVLN10), logX)), mul(y, num(LOG10_2HI)));
  },
};

/** log10's scaling: i = sign bit of k, x′ = x with exponent field 0x3ff − i, y = k + i. */
function scaled(c: CLanes, x: Vec): { y: Vec; xn: Vec } {
  const k = c.let(c.isub(c.shrU(x, 52), c.int(1023n)));
  const i = c.let(c.shrU(k, 63));
  const xn = c.or(c.and(x, c.int(0x000fffffffffffffn)), c.shl(c.isub(c.int(0x3ffn), i), 52));
  return { y: c.toF(c.iadd(k, i)), xn };
}

/**
 * log1p's lanes without its correction term: 1 + x in ~[sqrt(2)/2, sqrt(2)), by the high word hx
 * (signed), compared as the whole bits of x (signed 64-bit): hx < h ⟺ bits < h·2^32, hx > 0 ⟺
 * bits ≥ 2^32, hx ≤ h ⟺ bits < (h + 1)·2^32 (V8 has no instruction for i64x2.shr_s: 6 of them).
 */
function log1pNearZero(c: CLanes, x: Vec): Vec {
  const hi = (h: number) => c.int(BigInt(h) << 32n);
  return c.and(c.ilt(x, hi(0x3fda827a)), c.or(c.ige(x, hi(1)), c.ilt(x, hi((0xbfd2bec4 | 0) + 1))));
}

/** log1p's reduction of 1 + x = 2^k·u′ (u′ in ~[sqrt(2)/2, sqrt(2))) where it has a correction term. */
function log1pReduce(c: CLanes, x: Vec): { u: Vec; hu: Vec; k0: Vec; k: Vec; upper: Vec } {
  const u = c.let(c.add(c.num(1), x));
  const huFull = c.let(c.shrU(u, 32));
  const hu = c.let(c.and(huFull, c.int(0xfffffn)));
  const upper = c.let(c.ige(hu, c.int(0x6a09en)));
  const k0 = c.let(c.isub(c.shrU(huFull, 20), c.int(1023n)));
  const k = c.let(c.isub(k0, upper)); // k0 + 1 where upper (a true mask is −1)
  return { u, hu, k0, k, upper };
}

/**
 * s_log1p.c in lanes, for −1 < x < 2^53 outside its branch for |f| < 2^-20 (hu = 0). Its two
 * reductions become per-lane selects: where 1 + x is near 1 (by the high word) f = x, k = 0 and
 * the k ≠ 0 formula with dk = 0 and c = +0 is the k = 0 one exactly (as in LOG_LANES); elsewhere
 * u = 1 + x, the correction c = (1 − (u − x) or x − (u − 1))/u, u normalized by its high word.
 * |x| < 2^-29 gives x or x − x²/2, selected.
 */
export const LOG1P_LANES: VectorCode = {
  covers: (c, [x]) => {
    const { hu, k } = log1pReduce(c, x!);
    // where corrected, k ≠ 0 and hu′ ≠ 0 (hu′ = hu, or (0x100000 − hu) >> 2 where upper: 0 for hu = 0 or hu ≥ 0xffffd)
    const corrected = c.andNot(c.ine(k, c.int(0n)), c.or(c.ieq(hu, c.int(0n)), c.ige(hu, c.int(0xffffdn))));
    const inRange = c.and(c.gt(x!, c.num(-1)), c.lt(x!, c.num(2 ** 53)));
    return c.and(inRange, c.or(log1pNearZero(c, x!), corrected));
  },
  compute: (c, [x]) => {
    const { num, add, sub, mul, div, select } = c;
    const nearZero = c.let(log1pNearZero(c, x!));
    const { u, k0, k, upper } = log1pReduce(c, x!);
    const correction = div(select(c.igt(k0, c.int(0n)), sub(num(1), sub(u, x!)), sub(x!, sub(u, num(1)))), u);
    const cc = c.let(c.andNot(correction, nearZero));
    const un = c.or(c.and(u, c.int(0x000fffffffffffffn)), select(upper, c.int(0x3fe0000000000000n), c.int(0x3ff0000000000000n)));
    const f = c.let(select(nearZero, x!, sub(un, num(1))));
    const dk = c.let(c.andNot(c.toF(k), nearZero));
    const hfsq = c.let(mul(mul(num(0.5), f), f));
    const s = c.let(div(f, add(num(2), f)));
    const z = c.let(mul(s, s));
    const R = c.let(mul(z, c.poly(z, LG)));
    const result = c.local();
    sub(mul(dk, num(LN2_HI)), sub(sub(hfsq, add(mul(s, add(hfsq, R)), add(mul(dk, num(LN2_LO)), cc))), f))();
    c.e.set(result);
    // |x| < 2^-29 (rare lanes): x, or x − x²/2
    const ax = c.let(c.abs(x!));
    c.whereAny(c.let(c.lt(ax, num(2 ** -29))), result, () => select(c.lt(ax, num(2 ** -54)), x!, sub(x!, mul(mul(x!, x!), num(0.5)))));
    return c.get(result);
  },
};
