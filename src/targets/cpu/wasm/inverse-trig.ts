/**
 * `Math.asin`, `Math.acos`, `Math.atan`, `Math.atan2` as V8 computes them (src/base/ieee754.cc:
 * fdlibm's e_asin.c, e_acos.c, s_atan.c, e_atan2.c), ported to Wasm operation for operation: a
 * scalar function each, and f64x2 lanes.
 *
 * In lanes, each of fdlibm's branches is computed for every lane and the lane's own is selected
 * (the branches share their rational or polynomial approximation: it is evaluated once, on the
 * branch's argument per lane):
 * - asin, acos: every lane. fdlibm's special cases come out of the formulas for |x| ≥ 0.5 by
 *   themselves: |x| > 1, ±∞ and NaN give sqrt of a negative number or NaN, so NaN; x = ±1 gives
 *   t = 0, s = 0 and asin's ±(pio2_hi − (2·(0 + 0) − pio2_lo)) = ±(pio2_hi + pio2_lo), its
 *   x·pio2_hi + x·pio2_lo, and acos(−1)'s π − 2·(0 + (0·0 − pio2_lo)) = π + 2·pio2_lo; only
 *   acos(1) (0/0 there) is selected.
 * - atan: every lane, ±∞ and NaN included. fdlibm's four reductions (7/16 ≤ |x| < 11/16, …,
 *   2.4375 ≤ |x| < 2^66) are one division (a·|x| − b)/(c + d·|x|) with (a, b, c, d) per lane:
 *   (2, 1, 2, 1) gives fdlibm's (2x − 1)/(2 + x), (1, 1, 1, 1) (x − 1)/(x + 1), (1, 1.5, 1, 1.5)
 *   (x − 1.5)/(1 + 1.5x), (0, 1, 0, 1) −1/x, each operation exact or rounded as fdlibm's (a·x is
 *   exact for a = 0, 1, 2; 1 + x = x + 1).
 * - atan2: lanes with x and y finite and non-zero (the others, fdlibm's special cases, call the
 *   scalar function): atan(|y/x|) as above, fdlibm's overrides where the exponents differ by more
 *   than 60, and the quadrant; x = 1, where fdlibm returns atan(y), takes no override (then
 *   ±atan(|y|) is atan(y): fdlibm's atan is odd bit for bit).
 */
import type { MathFunction } from '../../../compiler/ir.js';
import { Op, SimdOp, ValType } from './encoder.js';
import type { FunctionEmitter } from './emit-scalar.js';
import { Floats, fromWords, highWords, ifWord, lowWordI32, ret, type Value } from './float-ops.js';
import { emitLanes, type LaneShape, type MathPort, type PortFunction } from './math-port.js';

const PIO2_HI = fromWords(0x3ff921fb, 0x54442d18);
const PIO2_LO = fromWords(0x3c91a626, 0x33145c07);
const PIO4_HI = fromWords(0x3fe921fb, 0x54442d18);
const PI = fromWords(0x400921fb, 0x54442d18);
/** R(t) = P(t)/Q(t), asin's and acos's rational approximation: P's t·(pS0 + …), Q's 1 + t·(qS1 + …). */
const PS = [
  fromWords(0x3fc55555, 0x55555555), fromWords(0xbfd4d612, 0x03eb6f7d), fromWords(0x3fc9c155, 0x0e884455),
  fromWords(0xbfa48228, 0xb5688f3b), fromWords(0x3f49efe0, 0x7501b288), fromWords(0x3f023de1, 0x0dfdf709),
];
const QS = [1, fromWords(0xc0033a27, 0x1c8a2d4b), fromWords(0x40002ae5, 0x9c598ac8), fromWords(0xbfe6066c, 0x1b8d0159), fromWords(0x3fb3b8c5, 0xb12e9282)];
const ATANHI = [fromWords(0x3fddac67, 0x0561bb4f), fromWords(0x3fe921fb, 0x54442d18), fromWords(0x3fef730b, 0xd281f69b), fromWords(0x3ff921fb, 0x54442d18)];
const ATANLO = [fromWords(0x3c7a2b7f, 0x222f65e2), fromWords(0x3c81a626, 0x33145c07), fromWords(0x3c700788, 0x7af0cbbd), fromWords(0x3c91a626, 0x33145c07)];
const AT = [
  fromWords(0x3fd55555, 0x5555550d), fromWords(0xbfc99999, 0x9998ebc4), fromWords(0x3fc24924, 0x920083ff), fromWords(0xbfbc71c6, 0xfe231671),
  fromWords(0x3fb745cd, 0xc54c206e), fromWords(0xbfb3b0f2, 0xaf749a6d), fromWords(0x3fb10d66, 0xa0d03d51), fromWords(0xbfadde2d, 0x52defd9a),
  fromWords(0x3fa97b4b, 0x24760deb), fromWords(0xbfa2b444, 0x2c6a6c2f), fromWords(0x3f90ad3a, 0xe322da11),
];
/** atan2's π's low part, and the results of its special cases as fdlibm's volatile arithmetic rounds them. */
const PI_LO = fromWords(0x3ca1a626, 0x33145c07);
const PI_O_2 = fromWords(0x3ff921fb, 0x54442d18);
const PI_O_4 = fromWords(0x3fe921fb, 0x54442d18);
const TINY = 1.0e-300;

/** R(t) = P(t)/Q(t). */
function rational(F: Floats, t: Value): Value {
  return F.div(F.mul(t, F.horner(t, PS)), F.horner(t, QS));
}

/** (ix − 0x3ff00000 | low word) == 0: |x| == 1. */
function isOne(e: FunctionEmitter, x: number, ix: number): void {
  e.get(ix).i32(0x3ff00000).op(Op.i32_sub);
  lowWordI32(e, x);
  e.op(Op.i32_or).op(Op.i32_eqz);
}

/** asin for 0.5 ≤ |x| < 1 from t = (1 − |x|)/2 and R(t), before the sign: fdlibm's two formulas by |x| ≥ 0.975. */
function asinUpper(F: Floats, t: Value, r: Value, near1: Value): Value {
  const s = F.let(F.sqrt(t));
  const w = F.let(F.highWord(s));
  const c = F.div(F.sub(t, F.mul(w, w)), F.add(s, w));
  const p = F.sub(F.mul(F.mul(F.c(2), s), r), F.sub(F.c(PIO2_LO), F.mul(F.c(2), c)));
  const q = F.sub(F.c(PIO4_HI), F.mul(F.c(2), w));
  return F.select(near1, F.sub(F.c(PIO2_HI), F.sub(F.mul(F.c(2), F.add(s, F.mul(s, r))), F.c(PIO2_LO))), F.sub(F.c(PIO4_HI), F.sub(p, q)));
}

const asin: PortFunction = {
  params: [ValType.f64], results: [ValType.f64], calls: [],
  emit(e) {
    const F = new Floats(e, false);
    const X = 0;
    const x = F.get(X);
    const hx = e.local(ValType.i32);
    const ix = e.local(ValType.i32);
    highWords(e, X, hx, ix);
    ifWord(e, ix, Op.i32_ge_u, 0x3ff00000, () => {
      isOne(e, X, ix);
      e.open('if');
      ret(e, F.add(F.mul(x, F.c(PIO2_HI)), F.mul(x, F.c(PIO2_LO))));
      e.close();
      ret(e, F.c(NaN));
    });
    ifWord(e, ix, Op.i32_lt_u, 0x3fe00000, () => {
      ifWord(e, ix, Op.i32_lt_u, 0x3e400000, () => ret(e, x)); // |x| < 2^-27 (huge + x > one)
      const t = F.let(F.mul(x, x));
      ret(e, F.add(x, F.mul(x, rational(F, t))));
    });
    const t = F.let(F.mul(F.sub(F.c(1), F.abs(x)), F.c(0.5)));
    const near1 = () => void e.get(ix).i32(0x3fef3333).op(Op.i32_ge_u);
    const v = F.let(asinUpper(F, t, F.let(rational(F, t)), near1));
    ret(e, F.select(() => void e.get(hx).i32(0).op(Op.i32_gt_s), v, F.neg(v)));
    e.op(Op.end);
  },
};

/** acos for x < −0.5 and x > 0.5 from z = (1 − |x|)/2 and R(z). */
function acosNegative(F: Floats, z: Value, r: Value): Value {
  const s = F.let(F.sqrt(z));
  const w = F.sub(F.mul(r, s), F.c(PIO2_LO));
  return F.sub(F.c(PI), F.mul(F.c(2), F.add(s, w)));
}
function acosPositive(F: Floats, z: Value, r: Value): Value {
  const s = F.let(F.sqrt(z));
  const df = F.let(F.highWord(s));
  const c = F.div(F.sub(z, F.mul(df, df)), F.add(s, df));
  const w = F.add(F.mul(r, s), c);
  return F.mul(F.c(2), F.add(df, w));
}
/** acos for |x| < 0.5. */
function acosMiddle(F: Floats, x: Value): Value {
  const r = rational(F, F.let(F.mul(x, x)));
  return F.sub(F.c(PIO2_HI), F.sub(x, F.sub(F.c(PIO2_LO), F.mul(x, r))));
}

const acos: PortFunction = {
  params: [ValType.f64], results: [ValType.f64], calls: [],
  emit(e) {
    const F = new Floats(e, false);
    const X = 0;
    const x = F.get(X);
    const hx = e.local(ValType.i32);
    const ix = e.local(ValType.i32);
    highWords(e, X, hx, ix);
    ifWord(e, ix, Op.i32_ge_u, 0x3ff00000, () => {
      isOne(e, X, ix);
      e.open('if');
      ret(e, F.select(() => void e.get(hx).i32(0).op(Op.i32_gt_s), F.c(0), F.add(F.c(PI), F.mul(F.c(2), F.c(PIO2_LO)))));
      e.close();
      ret(e, F.c(NaN));
    });
    ifWord(e, ix, Op.i32_lt_u, 0x3fe00000, () => {
      ifWord(e, ix, Op.i32_le_u, 0x3c600000, () => ret(e, F.add(F.c(PIO2_HI), F.c(PIO2_LO)))); // |x| < 2^-57
      ret(e, acosMiddle(F, x));
    });
    const z = F.let(F.mul(F.sub(F.c(1), F.abs(x)), F.c(0.5))); // (1 + x)/2 for x < 0, (1 − x)/2 for x > 0
    const r = F.let(rational(F, z));
    ifWord(e, hx, Op.i32_lt_s, 0, () => ret(e, acosNegative(F, z, r)));
    ret(e, acosPositive(F, z, r));
    e.op(Op.end);
  },
};

/** atan's polynomial on the reduced x: x·(s1 + s2) of fdlibm (s1 the odd, s2 the even part). */
function atanSum(F: Floats, x: Value): Value {
  const z = F.let(F.mul(x, x));
  const w = F.let(F.mul(z, z));
  const s1 = F.mul(z, F.horner(w, [AT[0]!, AT[2]!, AT[4]!, AT[6]!, AT[8]!, AT[10]!]));
  const s2 = F.mul(w, F.horner(w, [AT[1]!, AT[3]!, AT[5]!, AT[7]!, AT[9]!]));
  return F.add(s1, s2);
}

const atan: PortFunction = {
  params: [ValType.f64], results: [ValType.f64], calls: [],
  emit(e) {
    const F = new Floats(e, false);
    const X = 0;
    const x = F.get(X);
    const hx = e.local(ValType.i32);
    const ix = e.local(ValType.i32);
    highWords(e, X, hx, ix);
    ifWord(e, ix, Op.i32_ge_u, 0x44100000, () => {
      // |x| ≥ 2^66: NaN → x + x, else ±(atanhi[3] + atanlo[3])
      e.get(ix).i32(0x7ff00000).op(Op.i32_gt_u);
      e.get(ix).i32(0x7ff00000).op(Op.i32_eq);
      lowWordI32(e, X);
      e.i32(0).op(Op.i32_ne).op(Op.i32_and).op(Op.i32_or).open('if');
      ret(e, F.add(x, x));
      e.close();
      ret(e, F.select(() => void e.get(hx).i32(0).op(Op.i32_gt_s), F.c(ATANHI[3]! + ATANLO[3]!), F.c(-ATANHI[3]! - ATANLO[3]!)));
    });
    ifWord(e, ix, Op.i32_lt_u, 0x3fdc0000, () => {
      // |x| < 0.4375: no reduction (|x| < 2^-27: x)
      ifWord(e, ix, Op.i32_lt_u, 0x3e400000, () => ret(e, x));
      ret(e, F.sub(x, F.mul(x, atanSum(F, x))));
    });
    const ax = F.let(F.abs(x));
    const id = e.local(ValType.i32);
    const xr = e.local(ValType.f64);
    const reduce = (bound: number, idValue: number, v: Value) => {
      e.get(ix).i32(bound).op(Op.i32_lt_u).open('if');
      F.set(xr, v);
      e.i32(idValue).set(id);
      e.else();
    };
    reduce(0x3fe60000, 0, F.div(F.sub(F.mul(F.c(2), ax), F.c(1)), F.add(F.c(2), ax)));
    reduce(0x3ff30000, 1, F.div(F.sub(ax, F.c(1)), F.add(ax, F.c(1))));
    reduce(0x40038000, 2, F.div(F.sub(ax, F.c(1.5)), F.add(F.c(1), F.mul(F.c(1.5), ax))));
    F.set(xr, F.div(F.c(-1), ax));
    e.i32(3).set(id);
    e.close().close().close();
    const r = F.get(xr);
    const pick = (table: readonly number[]): Value => () => {
      // table[id], by selects
      F.select(() => void e.get(id).i32(0).op(Op.i32_eq), F.c(table[0]!),
        F.select(() => void e.get(id).i32(1).op(Op.i32_eq), F.c(table[1]!), F.select(() => void e.get(id).i32(2).op(Op.i32_eq), F.c(table[2]!), F.c(table[3]!))))();
    };
    const z = F.let(F.sub(pick(ATANHI), F.sub(F.sub(F.mul(r, atanSum(F, r)), pick(ATANLO)), r)));
    ret(e, F.select(() => void e.get(hx).i32(0).op(Op.i32_lt_s), F.neg(z), z));
    e.op(Op.end);
  },
};

const atan2: PortFunction = {
  params: [ValType.f64, ValType.f64], results: [ValType.f64], calls: ['fdlibm:atan'],
  emit(e, index) {
    const F = new Floats(e, false);
    const [Y, X] = [0, 1];
    const y = F.get(Y);
    const x = F.get(X);
    const hx = e.local(ValType.i32);
    const ix = e.local(ValType.i32);
    const hy = e.local(ValType.i32);
    const iy = e.local(ValType.i32);
    const m = e.local(ValType.i32);
    highWords(e, X, hx, ix);
    highWords(e, Y, hy, iy);
    const callAtan = (v: Value) => () => (v(), e.code.byte(Op.call).u32(index('fdlibm:atan')));
    // x or y NaN: x + y
    F.or(F.ne(x, x), F.ne(y, y))();
    e.open('if');
    ret(e, F.add(x, y));
    e.close();
    // x == 1: atan(y)
    e.get(hx).i32(0x3ff00000).op(Op.i32_sub);
    lowWordI32(e, X);
    e.op(Op.i32_or).op(Op.i32_eqz).open('if');
    ret(e, callAtan(y));
    e.close();
    // m = 2·sign(x) + sign(y)
    e.get(hy).i32(31).op(Op.i32_shr_s).i32(1).op(Op.i32_and);
    e.get(hx).i32(30).op(Op.i32_shr_s).i32(2).op(Op.i32_and);
    e.op(Op.i32_or).set(m);
    const byM = (values: readonly [Value, Value, Value, Value]) => {
      // values[m]
      F.select(() => void e.get(m).i32(0).op(Op.i32_eq), values[0],
        F.select(() => void e.get(m).i32(1).op(Op.i32_eq), values[1], F.select(() => void e.get(m).i32(2).op(Op.i32_eq), values[2], values[3])))();
    };
    const isZero = (w: number, v: number) => {
      e.get(w);
      lowWordI32(e, v);
      e.op(Op.i32_or).op(Op.i32_eqz);
    };
    // y == 0
    isZero(iy, Y);
    e.open('if');
    byM([y, y, F.c(PI + TINY), F.c(-PI - TINY)]);
    e.op(Op.return);
    e.close();
    // x == 0
    isZero(ix, X);
    e.open('if');
    ret(e, F.select(() => void e.get(hy).i32(0).op(Op.i32_lt_s), F.c(-PI_O_2 - TINY), F.c(PI_O_2 + TINY)));
    e.close();
    // x = ±∞
    ifWord(e, ix, Op.i32_eq, 0x7ff00000, () => {
      ifWord(e, iy, Op.i32_eq, 0x7ff00000, () => {
        byM([F.c(PI_O_4 + TINY), F.c(-PI_O_4 - TINY), F.c(3.0 * PI_O_4 + TINY), F.c(-3.0 * PI_O_4 - TINY)]);
        e.op(Op.return);
      });
      byM([F.c(0), F.c(-0), F.c(PI + TINY), F.c(-PI - TINY)]);
      e.op(Op.return);
    });
    // y = ±∞
    ifWord(e, iy, Op.i32_eq, 0x7ff00000, () => ret(e, F.select(() => void e.get(hy).i32(0).op(Op.i32_lt_s), F.c(-PI_O_2 - TINY), F.c(PI_O_2 + TINY))));
    // z = atan(|y/x|), or its limits where the exponents differ by more than 60
    const k = e.local(ValType.i32);
    const z = e.local(ValType.f64);
    e.get(iy).get(ix).op(Op.i32_sub).i32(20).op(Op.i32_shr_s).set(k);
    ifWord(e, k, Op.i32_gt_s, 60, () => {
      F.set(z, F.c(PI_O_2 + 0.5 * PI_LO));
      e.get(m).i32(1).op(Op.i32_and).set(m);
    });
    e.get(k).i32(60).op(Op.i32_le_s).open('if');
    {
      e.get(hx).i32(0).op(Op.i32_lt_s).get(k).i32(-60).op(Op.i32_lt_s).op(Op.i32_and).open('if');
      F.set(z, F.c(0));
      e.else();
      F.set(z, callAtan(F.abs(F.div(y, x))));
      e.close();
    }
    e.close();
    const zv = F.get(z);
    byM([zv, F.neg(zv), F.sub(F.c(PI), F.sub(zv, F.c(PI_LO))), F.sub(F.sub(zv, F.c(PI_LO)), F.c(PI))]);
    e.op(Op.end);
  },
};

// ------------------------------------------------------------------------------ lanes

/** A lane mask of |x| below a bound given as a high word (|x| < that word's double). */
function below(F: Floats, ax: Value, word: number): Value {
  return F.lt(ax, F.c(fromWords(word, 0)));
}

function asinLanes(e: FunctionEmitter, [X]: readonly number[]): void {
  const F = new Floats(e, true);
  const x = F.get(X!);
  const ax = F.let(F.abs(x));
  const lower = F.let(below(F, ax, 0x3fe00000));
  const t = F.let(F.select(lower, F.mul(x, x), F.mul(F.sub(F.c(1), ax), F.c(0.5))));
  const r = F.let(rational(F, t));
  const upper = F.let(asinUpper(F, t, r, F.ge(ax, F.c(fromWords(0x3fef3333, 0)))));
  const result = F.select(below(F, ax, 0x3e400000), x, F.select(lower, F.add(x, F.mul(x, r)), F.negateWhere(F.lt(x, F.c(0)), upper)));
  result();
  allLanes(F)();
}

function acosLanes(e: FunctionEmitter, [X]: readonly number[]): void {
  const F = new Floats(e, true);
  const x = F.get(X!);
  const ax = F.let(F.abs(x));
  const lower = F.let(below(F, ax, 0x3fe00000));
  const z = F.let(F.select(lower, F.mul(x, x), F.mul(F.sub(F.c(1), ax), F.c(0.5))));
  const r = F.let(rational(F, z));
  const middle = F.sub(F.c(PIO2_HI), F.sub(x, F.sub(F.c(PIO2_LO), F.mul(x, r))));
  const upper = F.select(F.lt(x, F.c(0)), acosNegative(F, z, r), acosPositive(F, z, r));
  const result = F.select(lower, F.select(below(F, ax, 0x3c600001), F.c(PIO2_HI + PIO2_LO), middle), F.select(F.eq(x, F.c(1)), F.c(0), upper));
  result();
  allLanes(F)();
}

/** fdlibm's atan of an f64x2 value, every lane (NaN and ±∞ included). */
function atanValue(F: Floats, x: Value): Value {
  const ax = F.let(F.abs(x));
  const m0 = F.let(below(F, ax, 0x3fe60000));
  const m1 = F.let(below(F, ax, 0x3ff30000));
  const m2 = F.let(below(F, ax, 0x40038000));
  const byId = (v: readonly number[]) => F.select(m0, F.c(v[0]!), F.select(m1, F.c(v[1]!), F.select(m2, F.c(v[2]!), F.c(v[3]!))));
  // (a·|x| − b)/(c + d·|x|), see the module comment
  const ac = F.let(byId([2, 1, 1, 0])); // a = c
  const bd = F.let(byId([1, 1, 1.5, 1])); // b = d
  const reduced = F.let(F.div(F.sub(F.mul(ac, ax), bd), F.add(ac, F.mul(bd, ax))));
  const none = F.let(below(F, ax, 0x3fdc0000));
  const r = F.let(F.select(none, x, reduced));
  const sum = F.let(atanSum(F, r));
  const z = F.sub(byId(ATANHI), F.sub(F.sub(F.mul(r, sum), byId(ATANLO)), r));
  const reducedResult = F.negateWhere(F.lt(x, F.c(0)), z);
  const huge = F.negateWhere(F.lt(x, F.c(0)), F.c(ATANHI[3]! + ATANLO[3]!));
  return F.select(F.ne(x, x), F.add(x, x),
    F.select(below(F, ax, 0x3e400000), x,
      F.select(none, F.sub(x, F.mul(x, sum)), F.select(below(F, ax, 0x44100000), reducedResult, huge))));
}

function atanLanes(e: FunctionEmitter, [X]: readonly number[]): void {
  const F = new Floats(e, true);
  atanValue(F, F.get(X!))();
  allLanes(F)();
}

/** The mask of every lane. */
function allLanes(F: Floats): Value {
  return F.eq(F.c(0), F.c(0));
}

/** The i64x2 of each lane's high word of |v| (an f64x2). */
function absHighWords(e: FunctionEmitter, F: Floats, v: Value): Value {
  return () => {
    F.abs(v)();
    e.i32(32).simd(SimdOp.i64x2_shr_u);
  };
}

/** An i64x2 constant in both lanes. */
function i64(e: FunctionEmitter, v: number): Value {
  return () => {
    e.simd(SimdOp.v128_const);
    for (let lane = 0; lane < 2; lane++) for (let b = 0n; b < 64n; b += 8n) e.code.byte(Number((BigInt.asUintN(64, BigInt(v)) >> b) & 0xffn));
  };
}

function atan2Lanes(e: FunctionEmitter, [Y, X]: readonly number[]): void {
  const F = new Floats(e, true);
  const y = F.get(Y!);
  const x = F.get(X!);
  // k = (iy − ix) >> 20, the difference of exponents as fdlibm takes it from the high words
  const k = e.local(ValType.v128);
  absHighWords(e, F, y)();
  absHighWords(e, F, x)();
  e.simd(SimdOp.i64x2_sub).i32(20).simd(SimdOp.i64x2_shr_s).set(k);
  const notOne = F.let(F.ne(x, F.c(1)));
  const wide = F.let(F.and(() => (e.get(k), i64(e, 60)(), e.simd(SimdOp.i64x2_gt_s)), notOne));
  const xNegative = F.let(F.lt(x, F.c(0)));
  const narrow = F.and(xNegative, () => (e.get(k), i64(e, -60)(), e.simd(SimdOp.i64x2_lt_s)));
  const z = F.let(F.select(wide, F.c(PI_O_2 + 0.5 * PI_LO), F.select(narrow, F.c(0), atanValue(F, F.abs(F.div(y, x))))));
  // m = 2·sign(x) + sign(y), x's sign dropped where the exponents differ by more than 60
  const left = F.and(xNegative, F.not(wide));
  F.negateWhere(F.lt(y, F.c(0)), F.select(left, F.sub(F.c(PI), F.sub(z, F.c(PI_LO))), z))();
  // lanes done here: x and y finite and non-zero
  const ordinary = (v: Value) => F.and(F.gt(F.abs(v), F.c(0)), F.lt(F.abs(v), F.c(Infinity)));
  F.and(ordinary(x), ordinary(y))();
}

function port(arity: 1 | 2, body: (e: FunctionEmitter, args: readonly number[]) => void): MathPort {
  return { arity, lanes: (e: FunctionEmitter, scalar: number, shape: LaneShape) => emitLanes(e, scalar, shape, arity, body) };
}

export const INVERSE_TRIG_FUNCTIONS: Readonly<Record<string, PortFunction>> = {
  'fdlibm:asin': asin,
  'fdlibm:acos': acos,
  'fdlibm:atan': atan,
  'fdlibm:atan2': atan2,
};

export const INVERSE_TRIG_PORTS: Partial<Record<MathFunction, MathPort>> = {
  asin: port(1, asinLanes),
  acos: port(1, acosLanes),
  atan: port(1, atanLanes),
  atan2: port(2, atan2Lanes),
};
