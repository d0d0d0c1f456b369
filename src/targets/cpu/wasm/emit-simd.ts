/**
 * SPMD vectorisation of element-wise kernels, in the model of Intel's ISPC: the loop's iterations
 * are independent, so 4 of them (float32/int32/uint32) or 2 (float64) run in the lanes of one
 * 128-bit vector. Control flow becomes masks: an `if` runs both branches under complementary lane
 * masks (a branch no lane takes is skipped), assignments keep inactive lanes' values
 * (`bitselect`), and `return` records the lanes that are done. A scalar loop runs the tail.
 *
 * Each lane computes exactly what the scalar code computes: f32x4/f64x2 arithmetic is IEEE
 * arithmetic per lane, `Math.exp` is fdlibm's in f64x2 lanes (fdlibm.ts), and other functions
 * without an instruction call V8's `Math.*` lane by lane.
 *
 * Only kernels that fit are vectorised (see `simdLanes`): vectorize kernels with a straight-line
 * or branching body (no loops, arrays or helpers), contiguous or broadcast operands, and types of
 * one width. Any other kernel runs the scalar Wasm loop.
 */
import type { DType } from '../../../dtypes.js';
import type { Expr, MathFunction, Stmt, TypedKernel, Variable } from '../../../compiler/ir.js';
import { isArrayType } from '../../../compiler/ir.js';
import type { MemoryLayout } from '../memory-layout.js';
import { Op, SimdOp, ValType } from './encoder.js';
import type { FunctionEmitter, ModuleContext } from './emit-scalar.js';
import { emitFastExpF32 } from './fast-exp.js';
import { emitExpLanes } from './fdlibm.js';

const NATIVE_FLOAT_MATH = new Set<MathFunction>(['abs', 'min', 'max', 'sqrt', 'floor', 'ceil', 'trunc', 'round', 'sign']);
const NATIVE_INT_MATH = new Set<MathFunction>(['abs', 'min', 'max', 'imul']);

/**
 * The lanes a kernel runs in (4 or 2), or the reason it runs scalar.
 */
export function simdLanes(kernel: TypedKernel, kind: 'vectorize' | 'guvectorize', layout: MemoryLayout): 4 | 2 | string {
  if (kind !== 'vectorize') return 'only vectorize kernels are vectorised so far';
  if (kernel.helpers.length) return 'the kernel calls helpers';
  const out = layout.inner[layout.inner.length - 1];
  if (out !== 'unit' && out !== 'origin') return 'the output is not contiguous';
  if (layout.inner.some((s) => s === 'strided')) return 'an operand is strided';
  const operandTypes = [...kernel.params.map((p) => p.type), kernel.returnType];
  const types = new Set<DType>();
  for (const t of operandTypes) {
    if (typeof t !== 'string' || !['float32', 'float64', 'int32', 'uint32'].includes(t)) return `an operand is ${typeof t === 'string' ? t : 'an array'}`;
    types.add(t as DType);
  }
  let refusal: string | undefined;
  const seeType = (t: DType) => {
    if (t === 'bool') return;
    if (!['float32', 'float64', 'int32', 'uint32'].includes(t)) refusal ??= `it computes in ${t}`;
    types.add(t);
  };
  const visit = (e: Expr): void => {
    seeType(e.type);
    switch (e.kind) {
      case 'index': case 'dim': case 'call':
        refusal ??= 'it reads arrays or calls helpers';
        return;
      case 'unary': visit(e.arg); return;
      case 'binary':
        if (!(e.type === 'float32' || e.type === 'float64') && e.op === '%') refusal ??= 'integer `%` has no SIMD instruction';
        if (['<<', '>>', '>>>'].includes(e.op) && e.right.kind !== 'const') refusal ??= 'a shift count varies per element';
        visit(e.left);
        visit(e.right);
        return;
      case 'compare': seeType(e.operandType); visit(e.left); visit(e.right); return;
      case 'logical': visit(e.left); visit(e.right); return;
      case 'select': visit(e.cond); visit(e.then); visit(e.otherwise); return;
      case 'cast': {
        const from = e.value.type;
        const to = e.type;
        const ok = from === 'bool' || to === 'bool' || (to === 'float32' && (from === 'int32' || from === 'uint32')) ||
          ((from === 'int32' || from === 'uint32') && (to === 'int32' || to === 'uint32'));
        if (!ok) refusal ??= `a conversion from ${from} to ${to}`;
        visit(e.value);
        return;
      }
      case 'math':
        if (e.type === 'int32' || e.type === 'uint32') {
          if (!NATIVE_INT_MATH.has(e.fn) || (e.fn === 'abs' && e.type === 'uint32')) refusal ??= `Math.${e.fn} on integers`;
        } else if (e.fn === 'fround') refusal ??= 'Math.fround mixes float64 and float32';
        e.args.forEach(visit);
        return;
      default:
        return;
    }
  };
  const stmts = (list: readonly Stmt[]): void => {
    for (const s of list) {
      switch (s.kind) {
        case 'let': seeType(s.variable.type as DType); visit(s.init); break;
        case 'assign': seeType(s.variable.type as DType); visit(s.value); break;
        case 'if': visit(s.cond); stmts(s.then); stmts(s.otherwise); break;
        case 'return': if (s.value) visit(s.value); break;
        default: refusal ??= `the kernel has a ${s.kind === 'local-array' ? 'local array' : s.kind} statement`;
      }
    }
  };
  stmts(kernel.body);
  if (refusal) return refusal;
  const wide = types.has('float64');
  const narrow = types.has('float32') || types.has('int32') || types.has('uint32');
  if (wide && narrow) return 'float64 and 32-bit types are mixed, so lanes would have two widths';
  return wide ? 2 : 4;
}

/** Emits the vector body of the loop into a scalar function emitter's code. */
export class SimdEmitter {
  protected readonly vars = new Map<Variable, number>();
  /** The lanes the current statement applies to; undefined: all (top level, nothing returned). */
  protected mask: number | undefined;
  private readonly done: number;
  private anyDone = false;
  private allReturned = false;

  constructor(
    protected readonly e: FunctionEmitter,
    protected readonly ctx: ModuleContext,
    protected readonly lanes: 4 | 2,
    readonly result: number,
  ) {
    this.done = e.local(ValType.v128);
  }

  protected simd(op: SimdOp): this {
    this.e.simd(op);
    return this;
  }

  protected lane(op: SimdOp, lane: number): this {
    this.simd(op);
    this.e.code.byte(lane);
    return this;
  }

  varLocal(v: Variable): number {
    let l = this.vars.get(v);
    if (l === undefined) this.vars.set(v, (l = this.e.local(ValType.v128)));
    return l;
  }

  /** A scalar of type `t` on the stack becomes a vector of it. */
  splat(t: DType): void {
    this.simd(t === 'float64' ? SimdOp.f64x2_splat : t === 'float32' ? SimdOp.f32x4_splat : SimdOp.i32x4_splat);
  }

  constant(value: number | boolean, t: DType): void {
    if (t === 'bool') {
      if (this.lanes === 2) this.e.code.byte(Op.i64_const).s64(value ? -1n : 0n);
      else this.e.i32(value ? -1 : 0);
      this.simd(this.lanes === 2 ? SimdOp.i64x2_splat : SimdOp.i32x4_splat);
      return;
    }
    this.e.constant(value, t);
    this.splat(t);
  }

  private allOnes(): void {
    this.constant(true, 'bool');
  }

  /** Pushes the mask of lanes still running here, or returns false when that is every lane. */
  protected activeMask(): boolean {
    if (this.mask === undefined && !this.anyDone) return false;
    if (this.mask === undefined) this.allOnes();
    else this.e.get(this.mask);
    if (this.anyDone) this.e.get(this.done).simd(SimdOp.v128_andnot);
    return true;
  }

  /** Resets per-iteration state; call at the start of each vector iteration. */
  begin(defaultResult: number, returnType: DType): void {
    this.constant(defaultResult, returnType);
    this.e.set(this.result);
    this.constant(false, 'bool');
    this.e.set(this.done);
  }

  stmts(list: readonly Stmt[]): void {
    for (const s of list) {
      if (this.allReturned) return;
      this.stmt(s);
    }
  }

  protected assign(local: number, value: Expr): void {
    this.expr(value);
    if (this.activeMask()) {
      // value, mask → bitselect(value, old, mask)
      this.narrowMask(value.type);
      const m = this.e.local(ValType.v128);
      this.e.set(m);
      this.e.get(local).get(m);
      this.simd(SimdOp.v128_bitselect);
    }
    this.e.set(local);
  }

  protected stmt(s: Stmt): void {
    switch (s.kind) {
      case 'let':
      case 'assign':
        this.assign(this.varLocal(s.variable), s.kind === 'let' ? s.init : s.value);
        return;
      case 'if': {
        const cond = this.e.local(ValType.v128);
        this.expr(s.cond);
        this.e.set(cond);
        const thenMask = this.e.local(ValType.v128);
        const elseMask = this.e.local(ValType.v128);
        if (this.activeMask()) {
          const active = this.e.local(ValType.v128);
          this.e.set(active);
          this.e.get(active).get(cond);
          this.simd(SimdOp.v128_and);
          this.e.set(thenMask);
          this.e.get(active).get(cond);
          this.simd(SimdOp.v128_andnot);
          this.e.set(elseMask);
        } else {
          this.e.get(cond).set(thenMask);
          this.e.get(cond);
          this.simd(SimdOp.v128_not);
          this.e.set(elseMask);
        }
        const saved = this.mask;
        const branch = (mask: number, body: readonly Stmt[]) => {
          if (!body.length) return;
          this.e.get(mask);
          this.simd(SimdOp.v128_any_true);
          this.e.open('if');
          this.mask = mask;
          this.stmts(body);
          this.allReturned = false; // a branch's returns cover only its lanes
          this.mask = saved;
          this.e.close();
        };
        branch(thenMask, s.then);
        branch(elseMask, s.otherwise);
        return;
      }
      case 'return': {
        if (s.value) this.assign(this.result, s.value);
        if (this.mask === undefined && !this.anyDone) {
          this.allReturned = true;
          return;
        }
        // done |= active
        this.activeMask();
        if (this.anyDone) {
          this.e.get(this.done);
          this.simd(SimdOp.v128_or);
        }
        this.e.set(this.done);
        this.anyDone = true;
        return;
      }
      default:
        throw new Error(`unreachable SIMD statement ${s.kind}`);
    }
  }

  expr(e: Expr): void {
    const t = e.type;
    switch (e.kind) {
      case 'const':
        this.constant(e.value as number | boolean, t);
        return;
      case 'var':
        this.e.get(this.varLocal(e.variable));
        return;
      case 'unary':
        this.expr(e.arg);
        if (e.op === '!' || e.op === '~') this.simd(SimdOp.v128_not);
        else this.simd(t === 'float64' ? SimdOp.f64x2_neg : t === 'float32' ? SimdOp.f32x4_neg : SimdOp.i32x4_neg);
        return;
      case 'binary':
        this.binary(e.op, e.left, e.right, t);
        return;
      case 'compare':
        this.expr(e.left);
        this.expr(e.right);
        this.compare(e.op, e.operandType);
        return;
      case 'logical':
        this.expr(e.left);
        this.expr(e.right);
        this.simd(e.op === '&&' ? SimdOp.v128_and : SimdOp.v128_or);
        return;
      case 'select': {
        this.expr(e.then);
        this.expr(e.otherwise);
        this.expr(e.cond);
        this.narrowMask(t);
        this.simd(SimdOp.v128_bitselect);
        return;
      }
      case 'cast':
        this.expr(e.value);
        this.cast(e.value.type, t);
        return;
      case 'math':
        this.math(e.fn, e.args, t);
        return;
      default:
        throw new Error(`unreachable SIMD expression ${e.kind}`);
    }
  }

  private binary(op: string, left: Expr, right: Expr, t: DType): void {
    if (t === 'float32' || t === 'float64') {
      if (op === '%') return this.perLane('fmod', [left, right], t);
      this.expr(left);
      this.expr(right);
      const f32: Record<string, SimdOp> = { '+': SimdOp.f32x4_add, '-': SimdOp.f32x4_sub, '*': SimdOp.f32x4_mul, '/': SimdOp.f32x4_div };
      const f64: Record<string, SimdOp> = { '+': SimdOp.f64x2_add, '-': SimdOp.f64x2_sub, '*': SimdOp.f64x2_mul, '/': SimdOp.f64x2_div };
      this.simd((t === 'float32' ? f32 : f64)[op]!);
      return;
    }
    this.expr(left);
    if (op === '<<' || op === '>>' || op === '>>>') {
      this.e.i32(Number((right as { value: number }).value));
      this.simd(op === '<<' ? SimdOp.i32x4_shl : op === '>>' ? SimdOp.i32x4_shr_s : SimdOp.i32x4_shr_u);
      return;
    }
    this.expr(right);
    const ops: Record<string, SimdOp> = {
      '+': SimdOp.i32x4_add, '-': SimdOp.i32x4_sub, '*': SimdOp.i32x4_mul, '&': SimdOp.v128_and, '|': SimdOp.v128_or, '^': SimdOp.v128_xor,
    };
    this.simd(ops[op]!);
  }

  protected compare(op: string, t: DType): void {
    if (t === 'bool') {
      this.simd(SimdOp.v128_xor);
      if (op === '==') this.simd(SimdOp.v128_not);
      return;
    }
    const table: Record<string, Record<string, SimdOp>> = {
      float32: { '<': SimdOp.f32x4_lt, '<=': SimdOp.f32x4_le, '>': SimdOp.f32x4_gt, '>=': SimdOp.f32x4_ge, '==': SimdOp.f32x4_eq, '!=': SimdOp.f32x4_ne },
      float64: { '<': SimdOp.f64x2_lt, '<=': SimdOp.f64x2_le, '>': SimdOp.f64x2_gt, '>=': SimdOp.f64x2_ge, '==': SimdOp.f64x2_eq, '!=': SimdOp.f64x2_ne },
      int32: { '<': SimdOp.i32x4_lt_s, '<=': SimdOp.i32x4_le_s, '>': SimdOp.i32x4_gt_s, '>=': SimdOp.i32x4_ge_s, '==': SimdOp.i32x4_eq, '!=': SimdOp.i32x4_ne },
      uint32: { '<': SimdOp.i32x4_lt_u, '<=': SimdOp.i32x4_le_u, '>': SimdOp.i32x4_gt_u, '>=': SimdOp.i32x4_ge_u, '==': SimdOp.i32x4_eq, '!=': SimdOp.i32x4_ne },
    };
    this.simd(table[t]![op]!);
    // Masks are as wide as the lanes: 32-bit comparisons in 2-lane (mixed-width) code widen.
    if (this.lanes === 2 && t !== 'float64') this.simd(SimdOp.i64x2_extend_low_i32x4_s);
  }

  /**
   * In 2-lane code that also holds 32-bit values (lanes 0 and 1 of a 4-lane vector), a mask of
   * two 64-bit lanes on the stack becomes one of 32-bit lanes 0 and 1, to select 32-bit values.
   */
  protected narrowMask(t: DType): void {
    if (this.lanes !== 2 || t === 'float64' || t === 'bool') return;
    const m = this.e.local(ValType.v128);
    this.e.tee(m).get(m).shuffle([0, 1, 2, 3, 8, 9, 10, 11, 0, 1, 2, 3, 8, 9, 10, 11]);
  }

  protected cast(from: DType, to: DType): void {
    if (from === to) return;
    if (from === 'bool') {
      // A mask and'ed with the bits of 1 gives 1 or +0.
      this.narrowMask(to);
      this.constant(1, to === 'bool' ? 'int32' : to);
      this.simd(SimdOp.v128_and);
      return;
    }
    if (to === 'bool') {
      if (from === 'float32' || from === 'float64') {
        // x != 0 and not NaN: |x| > 0.
        this.simd(from === 'float32' ? SimdOp.f32x4_abs : SimdOp.f64x2_abs);
        this.constant(0, from);
        this.simd(from === 'float32' ? SimdOp.f32x4_gt : SimdOp.f64x2_gt);
      } else {
        this.constant(0, from);
        this.simd(SimdOp.i32x4_ne);
      }
      if (this.lanes === 2 && from !== 'float64') this.simd(SimdOp.i64x2_extend_low_i32x4_s);
      return;
    }
    if (to === 'float32') {
      // float64 → float32 only in 2-lane code: lanes 0 and 1, rounded as Math.fround.
      if (from === 'float64') this.simd(SimdOp.f32x4_demote_f64x2_zero);
      else this.simd(from === 'uint32' ? SimdOp.f32x4_convert_i32x4_u : SimdOp.f32x4_convert_i32x4_s);
      return;
    }
    if (to === 'float64') {
      // Only in 2-lane code, from lanes 0 and 1; every conversion is exact.
      if (from === 'float32') this.simd(SimdOp.f64x2_promote_low_f32x4);
      else this.simd(from === 'uint32' ? SimdOp.f64x2_convert_low_i32x4_u : SimdOp.f64x2_convert_low_i32x4_s);
      return;
    }
    // int32 ↔ uint32: the same bits.
  }

  protected math(fn: MathFunction, args: readonly Expr[], t: DType): void {
    const f32 = t === 'float32';
    if (t === 'int32' || t === 'uint32') {
      const u = t === 'uint32';
      if (fn === 'abs') {
        this.expr(args[0]!);
        this.simd(SimdOp.i32x4_abs);
        return;
      }
      this.expr(args[0]!);
      for (const a of args.slice(1)) {
        this.expr(a);
        this.simd(fn === 'imul' ? SimdOp.i32x4_mul : fn === 'min' ? (u ? SimdOp.i32x4_min_u : SimdOp.i32x4_min_s) : u ? SimdOp.i32x4_max_u : SimdOp.i32x4_max_s);
      }
      return;
    }
    if (fn === 'exp' && f32 && this.ctx.fastmath) {
      this.expr(args[0]!);
      emitFastExpF32(this.e, 4);
      return;
    }
    if (fn === 'exp') {
      // fdlibm's exp in f64x2 lanes, bit for bit V8's Math.exp (fdlibm.ts).
      this.expr(args[0]!);
      emitExpLanes(this.e, this.ctx.mathImport('exp', 1), !f32 ? 'f64x2' : this.lanes === 4 ? 'f32x4' : 'f32x2');
      return;
    }
    if (!NATIVE_FLOAT_MATH.has(fn)) return this.perLane(`${fn}/${args.length}`, args, t);
    const one = (a32: SimdOp, a64: SimdOp) => {
      this.expr(args[0]!);
      this.simd(f32 ? a32 : a64);
    };
    switch (fn) {
      case 'abs': return one(SimdOp.f32x4_abs, SimdOp.f64x2_abs);
      case 'sqrt': return one(SimdOp.f32x4_sqrt, SimdOp.f64x2_sqrt);
      case 'floor': return one(SimdOp.f32x4_floor, SimdOp.f64x2_floor);
      case 'ceil': return one(SimdOp.f32x4_ceil, SimdOp.f64x2_ceil);
      case 'trunc': return one(SimdOp.f32x4_trunc, SimdOp.f64x2_trunc);
      case 'min':
      case 'max':
        // f32x4/f64x2 min and max are IEEE-754 2019 minimum/maximum: NaN if either is NaN,
        // −0 below +0 — exactly Math.min/Math.max.
        this.expr(args[0]!);
        for (const a of args.slice(1)) {
          this.expr(a);
          this.simd(fn === 'min' ? (f32 ? SimdOp.f32x4_min : SimdOp.f64x2_min) : f32 ? SimdOp.f32x4_max : SimdOp.f64x2_max);
        }
        return;
      case 'round': {
        // r = ceil(x); r − 0.5 > x ? r − 1 : r, per lane (V8's Math.round).
        const x = this.e.local(ValType.v128);
        const r = this.e.local(ValType.v128);
        this.expr(args[0]!);
        this.e.tee(x);
        this.simd(f32 ? SimdOp.f32x4_ceil : SimdOp.f64x2_ceil);
        this.e.tee(r);
        this.constant(1, t);
        this.simd(f32 ? SimdOp.f32x4_sub : SimdOp.f64x2_sub);
        this.e.get(r);
        this.e.get(r);
        this.constant(0.5, t);
        this.simd(f32 ? SimdOp.f32x4_sub : SimdOp.f64x2_sub);
        this.e.get(x);
        this.simd(f32 ? SimdOp.f32x4_gt : SimdOp.f64x2_gt);
        this.simd(SimdOp.v128_bitselect);
        return;
      }
      case 'sign': {
        // x < 0 ? −1 : x > 0 ? 1 : x (NaN and ±0 as they are).
        const x = this.e.local(ValType.v128);
        const lt = f32 ? SimdOp.f32x4_lt : SimdOp.f64x2_lt;
        const gt = f32 ? SimdOp.f32x4_gt : SimdOp.f64x2_gt;
        this.expr(args[0]!);
        this.e.set(x);
        this.constant(-1, t);
        this.constant(1, t);
        this.e.get(x);
        this.constant(0, t);
        this.simd(lt);
        this.simd(SimdOp.v128_bitselect);
        this.e.get(x);
        this.e.get(x);
        this.constant(0, t);
        this.simd(lt);
        this.e.get(x);
        this.constant(0, t);
        this.simd(gt);
        this.simd(SimdOp.v128_or);
        this.simd(SimdOp.v128_bitselect);
        return;
      }
      default:
        throw new Error(`unreachable SIMD Math.${fn}`);
    }
  }

  /** A function without an instruction: V8's own, lane by lane, in doubles. */
  private perLane(importName: string, args: readonly Expr[], t: DType): void {
    const f32 = t === 'float32';
    const locals = args.map((a) => {
      const l = this.e.local(ValType.v128);
      this.expr(a);
      this.e.set(l);
      return l;
    });
    const index = importName === 'fmod' ? this.ctx.fmodImport() : this.ctx.mathImport(importName.split('/')[0] as MathFunction, args.length);
    const res = this.e.local(ValType.v128);
    this.e.get(locals[0]!).set(res);
    for (let l = 0; l < this.lanes; l++) {
      this.e.get(res);
      for (const a of locals) {
        this.e.get(a);
        this.lane(f32 ? SimdOp.f32x4_extract_lane : SimdOp.f64x2_extract_lane, l);
        if (f32) this.e.op(Op.f64_promote_f32);
      }
      this.e.code.byte(Op.call).u32(index);
      if (f32) this.e.op(Op.f32_demote_f64);
      this.lane(f32 ? SimdOp.f32x4_replace_lane : SimdOp.f64x2_replace_lane, l);
      this.e.set(res);
    }
    this.e.get(res);
  }
}

export { isArrayType };
