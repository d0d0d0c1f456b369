/**
 * FreeBSD's cbrt (s_cbrt.c) as V8 11 has it in src/base/ieee754.cc, ported to a scalar Wasm
 * function line by line (c-ops.ts): bit-identical to V8's `Math.cbrt`.
 */
import { CScalar, fromWords } from './c-ops.js';
import type { FunctionEmitter } from '../emit-scalar.js';
import { Op, SimdOp } from '../encoder.js';
import type { VectorCode } from './lanes.js';

/** (1023 − 1023/3 − 0.03306235651)·2^20, and the same less 54/3 for subnormals. */
const B1 = 715094163;
const B2 = 696219795;
/** |1/cbrt(x) − p(x)| < 2^-23.5 */
const P = [
  fromWords(0x3ffe03e6, 0x0f61e692), fromWords(0xbffe28e0, 0x92f02420), fromWords(0x3ff9f160, 0x4a49d6c2),
  fromWords(0xbfe844cb, 0xbee751d9), fromWords(0x3fc2b000, 0xd4e4edd7),
] as const;

/** `cbrt(x)` (s_cbrt.c). */
export function emitCbrt(e: FunctionEmitter): void {
  const c = new CScalar(e);
  const { num, int, get, add, mul, div, sub } = c;
  const x = 0;
  const [r, s, t, w] = [c.f64(), c.f64(), c.f64(), c.f64()];
  const [hx, sign] = [c.i32(), c.i32()];
  c.set(hx, c.high(get(x)));
  c.set(sign, c.and(get(hx), int(0x80000000 | 0)));
  c.set(hx, c.xor(get(hx), get(sign)));
  c.if(c.ige(get(hx), int(0x7ff00000)), () => c.ret(add(get(x), get(x)))); // cbrt(NaN, ±inf) is itself
  c.if(c.ilt(get(hx), int(0x00100000)), () => {
    // zero or subnormal
    c.if(c.eqz(c.or(get(hx), c.low(get(x)))), () => c.ret(get(x)));
    c.set(t, mul(num(2 ** 54), get(x)));
    c.set(t, c.words(c.or(get(sign), c.iadd(c.idivU(c.and(c.high(get(t)), int(0x7fffffff)), int(3)), int(B2))), int(0)));
  }, () => {
    c.set(t, c.words(c.or(get(sign), c.iadd(c.idivU(get(hx), int(3)), int(B1))), int(0)));
  });
  // New cbrt to 23 bits: cbrt(x) = t·cbrt(x/t³) ≈ t·P(t³/x)
  c.set(r, mul(mul(get(t), get(t)), div(get(t), get(x))));
  c.set(t, mul(get(t), add(add(num(P[0]), mul(get(r), add(num(P[1]), mul(get(r), num(P[2]))))), mul(mul(mul(get(r), get(r)), get(r)), add(num(P[3]), mul(get(r), num(P[4])))))));
  // Round t away from zero to 23 bits: bits = (bits + 0x80000000) & 0xFFFFFFFFC0000000
  get(t)();
  e.op(Op.i64_reinterpret_f64).code.byte(Op.i64_const).s64(0x80000000n);
  e.op(Op.i64_add).code.byte(Op.i64_const).s64(-0x40000000n);
  e.op(Op.i64_and).op(Op.f64_reinterpret_i64).set(t);
  // One Newton step to 53 bits, error < 0.667 ulps
  c.set(s, mul(get(t), get(t)));
  c.set(r, div(get(x), get(s)));
  c.set(w, add(get(t), get(t)));
  c.set(r, div(sub(get(r), get(t)), add(get(w), get(r))));
  c.end(add(get(t), mul(get(t), get(r))));
}

/**
 * s_cbrt.c in lanes, for normal finite x. hx/3 (hx the high word of |x|) is floor(hx/3.0) in
 * doubles, exact: the rounded quotient is within 2^-22 of hx/3, whose fraction is 0, ⅓ or ⅔.
 */
export const CBRT_LANES: VectorCode = {
  covers: (c, [x]) => {
    const ax = c.let(c.abs(x!));
    return c.and(c.ge(ax, c.num(2 ** -1022)), c.lt(ax, c.num(Infinity)));
  },
  compute: (c, [x]) => {
    const { num, int, add, mul, div, sub } = c;
    const hx = c.shrU(c.and(x!, int(0x7fffffffffffffffn)), 32);
    const high = add(c.un(div(c.toF(hx), num(3)), SimdOp.f64x2_floor), num(B1));
    // (high + 2^52) holds high in its low 32 bits; high << 32 | sign is t
    const t0 = c.let(c.or(c.shl(add(high, num(2 ** 52)), 32), c.and(x!, int(-0x8000000000000000n))));
    const r0 = c.let(mul(mul(t0, t0), div(t0, x!)));
    const t1 = mul(t0, add(add(num(P[0]), mul(r0, add(num(P[1]), mul(r0, num(P[2]))))), mul(mul(mul(r0, r0), r0), add(num(P[3]), mul(r0, num(P[4]))))));
    const t = c.let(c.and(c.iadd(t1, int(0x80000000n)), int(-0x40000000n)));
    const s = mul(t, t);
    const r1 = c.let(div(x!, s));
    const w = add(t, t);
    const r = c.let(div(sub(r1, t), add(w, r1)));
    return add(t, mul(t, r));
  },
};
