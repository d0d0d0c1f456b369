/**
 * The vector body of an element-wise kernel in narrow integer lanes (8 × 16 bits or 16 × 8 bits),
 * as int-lanes.ts plans it: integer operations are the lanes' own (exact: every value fits, or a
 * ring operation wraps to the stored bits), the planned additions and subtractions saturate, masks
 * are as wide as the lanes.
 */
import type { DType } from '../../../dtypes.js';
import type { Expr, MathFunction } from '../../../compiler/ir.js';
import { SimdOp } from './encoder.js';
import type { FunctionEmitter, ModuleContext } from './emit-scalar.js';
import { SimdEmitter } from './emit-simd.js';
import type { IntLanesPlan } from './int-lanes.js';

/** The instructions of one lane shape. */
interface LaneOps {
  readonly splat: SimdOp;
  readonly add: SimdOp; readonly addSat: SimdOp; readonly sub: SimdOp; readonly subSat: SimdOp;
  readonly mul?: SimdOp; readonly neg: SimdOp; readonly abs?: SimdOp;
  readonly min: SimdOp; readonly max: SimdOp;
  readonly shl: SimdOp; readonly shr: SimdOp;
  readonly eq: SimdOp; readonly ne: SimdOp; readonly lt: SimdOp; readonly le: SimdOp; readonly gt: SimdOp; readonly ge: SimdOp;
}

const I16: LaneOps = {
  splat: SimdOp.i16x8_splat, add: SimdOp.i16x8_add, addSat: SimdOp.i16x8_add_sat_s, sub: SimdOp.i16x8_sub, subSat: SimdOp.i16x8_sub_sat_s,
  mul: SimdOp.i16x8_mul, neg: SimdOp.i16x8_neg, abs: SimdOp.i16x8_abs, min: SimdOp.i16x8_min_s, max: SimdOp.i16x8_max_s,
  shl: SimdOp.i16x8_shl, shr: SimdOp.i16x8_shr_s,
  eq: SimdOp.i16x8_eq, ne: SimdOp.i16x8_ne, lt: SimdOp.i16x8_lt_s, le: SimdOp.i16x8_le_s, gt: SimdOp.i16x8_gt_s, ge: SimdOp.i16x8_ge_s,
};
const I8: LaneOps = {
  splat: SimdOp.i8x16_splat, add: SimdOp.i8x16_add, addSat: SimdOp.i8x16_add_sat_s, sub: SimdOp.i8x16_sub, subSat: SimdOp.i8x16_sub_sat_s,
  neg: SimdOp.i8x16_neg, abs: SimdOp.i8x16_abs, min: SimdOp.i8x16_min_s, max: SimdOp.i8x16_max_s,
  shl: SimdOp.i8x16_shl, shr: SimdOp.i8x16_shr_s,
  eq: SimdOp.i8x16_eq, ne: SimdOp.i8x16_ne, lt: SimdOp.i8x16_lt_s, le: SimdOp.i8x16_le_s, gt: SimdOp.i8x16_gt_s, ge: SimdOp.i8x16_ge_s,
};
/** uint8/uint8c kernels: values in [0, 255], unsigned comparisons, saturation and shifts. */
const U8: LaneOps = {
  ...I8, addSat: SimdOp.i8x16_add_sat_u, subSat: SimdOp.i8x16_sub_sat_u, abs: undefined, min: SimdOp.i8x16_min_u, max: SimdOp.i8x16_max_u,
  shr: SimdOp.i8x16_shr_u, lt: SimdOp.i8x16_lt_u, le: SimdOp.i8x16_le_u, gt: SimdOp.i8x16_gt_u, ge: SimdOp.i8x16_ge_u,
};

export class IntLanesEmitter extends SimdEmitter {
  private readonly ops: LaneOps;

  constructor(e: FunctionEmitter, ctx: ModuleContext, result: number, private readonly plan: IntLanesPlan) {
    super(e, ctx, plan.lanes.bits === 16 ? 8 : 16, result);
    this.ops = plan.lanes.bits === 16 ? I16 : plan.lanes.signed ? I8 : U8;
  }

  override splat(): void {
    this.simd(this.ops.splat);
  }

  override constant(value: number | boolean, t: DType): void {
    const v = t === 'bool' ? (value ? -1 : 0) : Number(value);
    const bytes = this.plan.lanes.bits === 16 ? new Uint8Array(new Int16Array(8).fill(v).buffer) : new Uint8Array(16).fill(v & 0xff);
    this.simd(SimdOp.v128_const);
    this.e.code.bytes(bytes);
  }

  override expr(e: Expr): void {
    if (e.kind === 'unary' && e.op === '-') {
      this.expr(e.arg);
      this.simd(this.ops.neg);
      return;
    }
    super.expr(e);
  }

  protected override binary(op: string, left: Expr, right: Expr, t: DType, self?: Expr): void {
    void t;
    const o = this.ops;
    this.expr(left);
    if (op === '<<' || op === '>>' || op === '>>>') {
      // 16-bit lanes: counts from 16 on give, for `>>` and `>>>` of a 16-bit value, what 15 gives
      // (int-lanes.ts admits `<<` by them only of 0, and no count from 8 on in 8-bit lanes).
      this.e.i32(Math.min(Number((right as { value: number }).value) & 31, this.plan.lanes.bits - 1));
      // `>>>` only of values ≥ 0 (int-lanes.ts): the same as `>>`.
      this.simd(op === '<<' ? o.shl : o.shr);
      return;
    }
    this.expr(right);
    const saturate = self !== undefined && this.plan.saturated.has(self);
    const ops: Record<string, SimdOp | undefined> = {
      '+': saturate ? o.addSat : o.add, '-': saturate ? o.subSat : o.sub,
      '*': o.mul, '&': SimdOp.v128_and, '|': SimdOp.v128_or, '^': SimdOp.v128_xor,
    };
    this.simd(ops[op]!);
  }

  protected override compare(op: string, t: DType): void {
    if (t === 'bool') return super.compare(op, t);
    const o = this.ops;
    const ops: Record<string, SimdOp> = { '<': o.lt, '<=': o.le, '>': o.gt, '>=': o.ge, '==': o.eq, '!=': o.ne };
    this.simd(ops[op]!);
  }

  protected override cast(from: DType, to: DType): void {
    if (from === to) return;
    if (from === 'bool') {
      this.constant(1, 'int32');
      this.simd(SimdOp.v128_and);
      return;
    }
    if (to === 'bool') {
      this.constant(0, 'int32');
      this.simd(this.ops.ne);
      return;
    }
    if (this.plan.lanes.bits === 8) return; // an 8-bit lane is the stored byte (int-lanes.ts: the value fits, wraps or saturated)
    switch (to) {
      case 'int8':
        this.e.i32(8);
        this.simd(SimdOp.i16x8_shl);
        this.e.i32(8);
        this.simd(SimdOp.i16x8_shr_s);
        return;
      case 'uint8':
        this.constant(255, 'int32');
        this.simd(SimdOp.v128_and);
        return;
      case 'uint8c':
        this.constant(255, 'int32');
        this.simd(SimdOp.i16x8_min_s);
        this.constant(0, 'int32');
        this.simd(SimdOp.i16x8_max_s);
        return;
      default:
        return; // int16 and int32: the lane is the value (it fits, or int16 keeps its low 16 bits)
    }
  }

  protected override math(fn: MathFunction, args: readonly Expr[], t: DType): void {
    void t;
    const o = this.ops;
    this.expr(args[0]!);
    if (fn === 'abs') {
      if (o.abs) this.simd(o.abs); // unsigned lanes: every value is ≥ 0 already
      return;
    }
    for (const a of args.slice(1)) {
      this.expr(a);
      this.simd(fn === 'imul' ? o.mul! : fn === 'min' ? o.min : o.max);
    }
  }
}
