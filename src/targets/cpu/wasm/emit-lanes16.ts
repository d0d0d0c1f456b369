/**
 * The vector body of an element-wise kernel in 8 lanes of 16 bits, as lanes16.ts plans it.
 */
import type { DType } from '../../../dtypes.js';
import type { Expr, MathFunction } from '../../../compiler/ir.js';
import { SimdOp } from './encoder.js';
import type { FunctionEmitter, ModuleContext } from './emit-scalar.js';
import { SimdEmitter } from './emit-simd.js';
import type { Lanes16Plan } from './lanes16.js';

/**
 * Integer operations are i16x8's (exact: every value fits, see
 * the module comment), the planned additions and subtractions saturate, masks are 16 bits wide.
 */
export class Lanes16Emitter extends SimdEmitter {
  constructor(e: FunctionEmitter, ctx: ModuleContext, result: number, private readonly plan: Lanes16Plan) {
    super(e, ctx, 8, result);
  }

  override splat(): void {
    this.simd(SimdOp.i16x8_splat);
  }

  override constant(value: number | boolean, t: DType): void {
    this.e.i32(t === 'bool' ? (value ? -1 : 0) : Number(value));
    this.splat();
  }

  override expr(e: Expr): void {
    if (e.kind === 'unary' && e.op === '-') {
      this.expr(e.arg);
      this.simd(SimdOp.i16x8_neg);
      return;
    }
    super.expr(e);
  }

  protected override binary(op: string, left: Expr, right: Expr, t: DType, self?: Expr): void {
    void t;
    this.expr(left);
    if (op === '<<' || op === '>>' || op === '>>>') {
      // Counts from 16 on: `>>` and `>>>` of a 16-bit value give what a count of 15 gives
      // (lanes16Plan admits `<<` by them only of 0).
      this.e.i32(Math.min(Number((right as { value: number }).value) & 31, 15));
      this.simd(op === '<<' ? SimdOp.i16x8_shl : op === '>>' ? SimdOp.i16x8_shr_s : SimdOp.i16x8_shr_u);
      return;
    }
    this.expr(right);
    const saturate = self !== undefined && this.plan.saturated.has(self);
    const ops: Record<string, SimdOp> = {
      '+': saturate ? SimdOp.i16x8_add_sat_s : SimdOp.i16x8_add, '-': saturate ? SimdOp.i16x8_sub_sat_s : SimdOp.i16x8_sub,
      '*': SimdOp.i16x8_mul, '&': SimdOp.v128_and, '|': SimdOp.v128_or, '^': SimdOp.v128_xor,
    };
    this.simd(ops[op]!);
  }

  protected override compare(op: string, t: DType): void {
    if (t === 'bool') return super.compare(op, t);
    const ops: Record<string, SimdOp> = {
      '<': SimdOp.i16x8_lt_s, '<=': SimdOp.i16x8_le_s, '>': SimdOp.i16x8_gt_s, '>=': SimdOp.i16x8_ge_s, '==': SimdOp.i16x8_eq, '!=': SimdOp.i16x8_ne,
    };
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
      this.simd(SimdOp.i16x8_ne);
      return;
    }
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
    this.expr(args[0]!);
    if (fn === 'abs') {
      this.simd(SimdOp.i16x8_abs);
      return;
    }
    for (const a of args.slice(1)) {
      this.expr(a);
      this.simd(fn === 'imul' ? SimdOp.i16x8_mul : fn === 'min' ? SimdOp.i16x8_min_s : SimdOp.i16x8_max_s);
    }
  }
}
