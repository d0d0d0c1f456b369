/**
 * The vector body of a per-row kernel in narrow integer lanes — 8 rows per vector in 16-bit lanes,
 * 16 in 8-bit lanes — as row-int-lanes.ts plans it: ring operations are the lanes' own (they keep
 * the low bits), comparisons, `Math.min`/`max`/`abs`, right shifts and uint8c's clamp read their
 * exact operands signed or unsigned as planned, planned sums saturate, conversions keep the
 * target's low bits, and masks are as wide as the lanes.
 */
import type { DType } from '../../../dtypes.js';
import type { Expr } from '../../../compiler/ir.js';
import { SimdOp } from './encoder.js';
import type { FunctionEmitter, ModuleContext } from './emit-scalar.js';
import { type RowPlan, RowSimdEmitter, varies } from './emit-rows.js';
import { integralSource } from './int-lanes.js';
import type { RowIntLanes } from './row-int-lanes.js';

/** The instructions of one lane width; comparisons and min/max signed and unsigned. */
interface Ops {
  readonly splat: SimdOp; readonly add: SimdOp; readonly sub: SimdOp;
  readonly addSatS: SimdOp; readonly addSatU: SimdOp; readonly subSatS: SimdOp; readonly subSatU: SimdOp; readonly mul?: SimdOp; readonly neg: SimdOp; readonly abs: SimdOp;
  readonly shl: SimdOp; readonly shrS: SimdOp; readonly shrU: SimdOp;
  readonly signed: Readonly<Record<string, SimdOp>>;
  readonly unsigned: Readonly<Record<string, SimdOp>>;
}

const OPS16: Ops = {
  splat: SimdOp.i16x8_splat, add: SimdOp.i16x8_add, sub: SimdOp.i16x8_sub,
  addSatS: SimdOp.i16x8_add_sat_s, addSatU: SimdOp.i16x8_add_sat_u, subSatS: SimdOp.i16x8_sub_sat_s, subSatU: SimdOp.i16x8_sub_sat_u, mul: SimdOp.i16x8_mul, neg: SimdOp.i16x8_neg, abs: SimdOp.i16x8_abs,
  shl: SimdOp.i16x8_shl, shrS: SimdOp.i16x8_shr_s, shrU: SimdOp.i16x8_shr_u,
  signed: {
    '==': SimdOp.i16x8_eq, '!=': SimdOp.i16x8_ne, '<': SimdOp.i16x8_lt_s, '<=': SimdOp.i16x8_le_s, '>': SimdOp.i16x8_gt_s, '>=': SimdOp.i16x8_ge_s,
    min: SimdOp.i16x8_min_s, max: SimdOp.i16x8_max_s,
  },
  unsigned: {
    '==': SimdOp.i16x8_eq, '!=': SimdOp.i16x8_ne, '<': SimdOp.i16x8_lt_u, '<=': SimdOp.i16x8_le_u, '>': SimdOp.i16x8_gt_u, '>=': SimdOp.i16x8_ge_u,
    min: SimdOp.i16x8_min_u, max: SimdOp.i16x8_max_u,
  },
};
const OPS8: Ops = {
  splat: SimdOp.i8x16_splat, add: SimdOp.i8x16_add, sub: SimdOp.i8x16_sub,
  addSatS: SimdOp.i8x16_add_sat_s, addSatU: SimdOp.i8x16_add_sat_u, subSatS: SimdOp.i8x16_sub_sat_s, subSatU: SimdOp.i8x16_sub_sat_u, neg: SimdOp.i8x16_neg, abs: SimdOp.i8x16_abs,
  shl: SimdOp.i8x16_shl, shrS: SimdOp.i8x16_shr_s, shrU: SimdOp.i8x16_shr_u,
  signed: {
    '==': SimdOp.i8x16_eq, '!=': SimdOp.i8x16_ne, '<': SimdOp.i8x16_lt_s, '<=': SimdOp.i8x16_le_s, '>': SimdOp.i8x16_gt_s, '>=': SimdOp.i8x16_ge_s,
    min: SimdOp.i8x16_min_s, max: SimdOp.i8x16_max_s,
  },
  unsigned: {
    '==': SimdOp.i8x16_eq, '!=': SimdOp.i8x16_ne, '<': SimdOp.i8x16_lt_u, '<=': SimdOp.i8x16_le_u, '>': SimdOp.i8x16_gt_u, '>=': SimdOp.i8x16_ge_u,
    min: SimdOp.i8x16_min_u, max: SimdOp.i8x16_max_u,
  },
};

/** Emits a per-row kernel's body in 16-bit (8 rows) or 8-bit (16 rows) lanes. */
export class IntRowSimdEmitter extends RowSimdEmitter {
  private readonly ops: Ops;
  private readonly int: RowIntLanes;

  constructor(e: FunctionEmitter, ctx: ModuleContext, plan: RowPlan & { readonly intLanes: RowIntLanes }) {
    super(e, ctx, plan.intLanes.bits === 16 ? 8 : 16, plan);
    this.int = plan.intLanes;
    this.ops = this.int.bits === 16 ? OPS16 : OPS8;
  }

  override splat(): void {
    this.simd(this.ops.splat);
  }

  override constant(value: number | boolean, t: DType): void {
    const v = t === 'bool' ? (value ? -1 : 0) : Number(value);
    const bytes = this.int.bits === 16 ? new Uint8Array(new Int16Array(8).fill(v).buffer) : new Uint8Array(16).fill(v & 0xff);
    this.simd(SimdOp.v128_const);
    this.e.code.bytes(bytes);
  }

  /** The signed or unsigned form of an operation, as row-int-lanes.ts read its operands. */
  private read(x: Expr, op: string): SimdOp {
    return (this.int.unsigned.has(x) ? this.ops.unsigned : this.ops.signed)[op]!;
  }

  override expr(x: Expr): void {
    if (!varies(x, this.plan.varying)) return super.expr(x); // uniform: scalar, then splat
    const o = this.ops;
    switch (x.kind) {
      case 'unary':
        if (x.op !== '-') break; // `!` and `~`: v128.not
        this.expr(x.arg);
        this.simd(o.neg);
        return;
      case 'binary':
        return this.intBinary(x);
      case 'compare':
        if (x.operandType === 'bool') break;
        this.expr(x.left);
        this.expr(x.right);
        this.simd(this.read(x, x.op));
        return;
      case 'cast':
        return this.intCast(x);
      case 'math': {
        this.expr(x.args[0]!);
        if (x.fn === 'abs') {
          if (!this.int.unsigned.has(x)) this.simd(o.abs); // unsigned: every value is ≥ 0 already
          return;
        }
        for (const a of x.args.slice(1)) {
          this.expr(a);
          this.simd(x.fn === 'imul' ? o.mul! : this.read(x, x.fn));
        }
        return;
      }
      default:
        break;
    }
    super.expr(x);
  }

  private intBinary(x: Extract<Expr, { kind: 'binary' }>): void {
    const o = this.ops;
    this.expr(x.left);
    if (x.op === '<<' || x.op === '>>' || x.op === '>>>') {
      const k = Number((x.right as { value: number }).value) & 31;
      // Read signed (`>>>` too: row-int-lanes.ts admits it only of values ≥ 0), counts from W − 1
      // on fill a lane with its sign, as int32's shift of a value that fits does; read unsigned,
      // counts are below W (row-int-lanes.ts).
      const unsigned = this.int.unsigned.has(x);
      this.e.i32(x.op === '<<' || unsigned ? k : Math.min(k, this.int.bits - 1));
      this.simd(x.op === '<<' ? o.shl : unsigned ? o.shrU : o.shrS);
      return;
    }
    this.expr(x.right);
    if (this.int.saturated.has(x)) {
      const unsigned = this.int.unsigned.has(x);
      this.simd(x.op === '+' ? (unsigned ? o.addSatU : o.addSatS) : unsigned ? o.subSatU : o.subSatS);
      return;
    }
    const ops: Record<string, SimdOp | undefined> = { '+': o.add, '-': o.sub, '*': o.mul, '&': SimdOp.v128_and, '|': SimdOp.v128_or, '^': SimdOp.v128_xor };
    this.simd(ops[x.op]!);
  }

  private intCast(x: Extract<Expr, { kind: 'cast' }>): void {
    const value = integralSource(x) ?? x.value;
    this.expr(value);
    if (value.type === x.type) return;
    if (value.type === 'bool') {
      this.constant(1, 'int32');
      this.simd(SimdOp.v128_and);
      return;
    }
    const sixteen = this.int.bits === 16;
    switch (x.type) {
      case 'bool':
        this.constant(0, 'int32');
        this.simd(this.ops.signed['!=']!);
        return;
      case 'int8':
        if (!sixteen) return; // an 8-bit lane is the stored byte
        this.e.i32(8);
        this.simd(SimdOp.i16x8_shl);
        this.e.i32(8);
        this.simd(SimdOp.i16x8_shr_s);
        return;
      case 'uint8':
        if (!sixteen) return;
        this.constant(255, 'int32');
        this.simd(SimdOp.v128_and);
        return;
      case 'uint8c':
        // An exact value read unsigned is ≥ 0 (at most 255 in 8-bit lanes); one read signed is ≤ 127 there.
        if (this.int.unsigned.has(x)) {
          if (!sixteen) return;
          this.constant(255, 'int32');
          this.simd(this.ops.unsigned.min!);
          return;
        }
        if (sixteen) {
          this.constant(255, 'int32');
          this.simd(this.ops.signed.min!);
        }
        this.constant(0, 'int32');
        this.simd(this.ops.signed.max!);
        return;
      default:
        return; // int16, uint16 and int32: the lane keeps the low bits, all a lane holds
    }
  }
}
