/**
 * The `fastmath` float32 exp (../fast-exp.ts) as Wasm: one f32 lane (scalar loops, tails) or
 * four (f32x4). Both emit the same float32 operations in the same order as `fastExpF32`, so the
 * three agree bit for bit.
 */
import {
  FAST_EXP_C1, FAST_EXP_C2, FAST_EXP_HI, FAST_EXP_LO, FAST_EXP_LOG2E, FAST_EXP_P,
} from '../fast-exp.js';
import { MiscOp, Op, SimdOp, ValType } from './encoder.js';
import type { FunctionEmitter } from './emit-scalar.js';

/** The operations the two widths differ in. */
interface Width {
  readonly float: ValType;
  readonly int: ValType;
  constF(v: number): void;
  constI(v: number): void;
  add(): void; sub(): void; mul(): void; min(): void; max(): void; floor(): void;
  /** float (an integer value) → int */
  toInt(): void;
  iadd(): void; isub(): void;
  /** int → int shifted left or right (arithmetic) by a constant */
  shl(n: number): void; shr(n: number): void;
}

function scalar(e: FunctionEmitter): Width {
  return {
    float: ValType.f32, int: ValType.i32,
    constF: (v) => void e.constant(v, 'float32'), constI: (v) => void e.i32(v),
    add: () => void e.op(Op.f32_add), sub: () => void e.op(Op.f32_sub), mul: () => void e.op(Op.f32_mul),
    min: () => void e.op(Op.f32_min), max: () => void e.op(Op.f32_max), floor: () => void e.op(Op.f32_floor),
    toInt: () => void e.misc(MiscOp.i32_trunc_sat_f32_s),
    iadd: () => void e.op(Op.i32_add), isub: () => void e.op(Op.i32_sub),
    shl: (n) => void e.i32(n).op(Op.i32_shl), shr: (n) => void e.i32(n).op(Op.i32_shr_s),
  };
}

function vector(e: FunctionEmitter): Width {
  const simd = (op: SimdOp) => void e.simd(op);
  return {
    float: ValType.v128, int: ValType.v128,
    constF: (v) => (e.constant(v, 'float32'), simd(SimdOp.f32x4_splat)), constI: (v) => (e.i32(v), simd(SimdOp.i32x4_splat)),
    add: () => simd(SimdOp.f32x4_add), sub: () => simd(SimdOp.f32x4_sub), mul: () => simd(SimdOp.f32x4_mul),
    min: () => simd(SimdOp.f32x4_min), max: () => simd(SimdOp.f32x4_max), floor: () => simd(SimdOp.f32x4_floor),
    toInt: () => simd(SimdOp.i32x4_trunc_sat_f32x4_s),
    iadd: () => simd(SimdOp.i32x4_add), isub: () => simd(SimdOp.i32x4_sub),
    shl: (n) => (e.i32(n), simd(SimdOp.i32x4_shl)), shr: (n) => (e.i32(n), simd(SimdOp.i32x4_shr_s)),
  };
}

/**
 * Replaces the float32 value (f32, or f32x4 with `lanes`) on the stack by its fastmath exp.
 */
export function emitFastExpF32(e: FunctionEmitter, lanes: 1 | 4): void {
  const w = lanes === 1 ? scalar(e) : vector(e);
  const x = e.local(w.float);
  const kf = e.local(w.float);
  const k = e.local(w.int);
  const k1 = e.local(w.int);
  const r = e.local(w.float);
  const z = e.local(w.float);
  // The argument is on the stack: x = min(max(x, LO), HI)   (Math.min(Math.max(x, LO), HI))
  w.constF(FAST_EXP_LO); w.max(); w.constF(FAST_EXP_HI); w.min(); e.set(x);
  // kf = floor(x·log2e + ½); k = int(kf)
  e.get(x); w.constF(FAST_EXP_LOG2E); w.mul(); w.constF(0.5); w.add(); w.floor(); e.tee(kf); w.toInt(); e.set(k);
  // r = (x − kf·C1) − kf·C2; z = r·r
  e.get(x); e.get(kf); w.constF(FAST_EXP_C1); w.mul(); w.sub(); e.get(kf); w.constF(FAST_EXP_C2); w.mul(); w.sub(); e.tee(r);
  e.get(r); w.mul(); e.set(z);
  // p = Horner(P, r); y = ((p·z) + r) + 1
  w.constF(FAST_EXP_P[0]!);
  for (let i = 1; i < FAST_EXP_P.length; i++) { e.get(r); w.mul(); w.constF(FAST_EXP_P[i]!); w.add(); }
  e.get(z); w.mul(); e.get(r); w.add(); w.constF(1); w.add();
  // (y · 2^k1) · 2^(k − k1), k1 = k >> 1; 2^n's bits are (n + 127) << 23
  e.get(k); w.shr(1); e.tee(k1); w.constI(127); w.iadd(); w.shl(23);
  if (lanes === 1) e.op(Op.f32_reinterpret_i32);
  w.mul();
  e.get(k); e.get(k1); w.isub(); w.constI(127); w.iadd(); w.shl(23);
  if (lanes === 1) e.op(Op.f32_reinterpret_i32);
  w.mul();
}
