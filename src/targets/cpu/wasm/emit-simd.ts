/**
 * SPMD vectorisation of element-wise kernels, in the model of Intel's ISPC: the loop's iterations
 * are independent, so 4 of them (32-bit values) or 2 (where a value is float64; 32-bit values then
 * use lanes 0 and 1) run in the lanes of one 128-bit vector. Integers of 8 and 16 bits take part
 * in arithmetic as int32 (the kernel language's rule 4), so lanes hold them as exact int32 values:
 * loads sign- or zero-extend, stores keep the low bytes (the wrap of a typed-array store; the
 * conversions to them, `cast` below, already wrapped or clamped). Where the operands are narrower
 * than the lanes, a step of the loop runs the body on several vectors in turn — 8 int16, 16 uint8
 * elements per step — so that each operand moves in whole 16-byte vectors. Control flow becomes masks: an `if` runs both branches under complementary lane
 * masks (a branch no lane takes is skipped), assignments keep inactive lanes' values
 * (`bitselect`), and `return` records the lanes that are done. A scalar loop runs the tail.
 *
 * Each lane computes exactly what the scalar code computes: f32x4/f64x2 arithmetic is IEEE
 * arithmetic per lane, `Math` functions ported from V8's own algorithms (exp, sin, cos, …:
 * math-ports.ts) run in f64x2 lanes, and other functions without an instruction call V8's `Math.*`
 * lane by lane.
 *
 * Only kernels that fit are vectorised (see `simdShape`): vectorize kernels with a straight-line
 * or branching body (no arrays; helpers are inlined), contiguous or broadcast operands, and loops
 * whose trip count is the same for every element (element-loops.ts: uniform values stay scalar).
 * Any other kernel runs the scalar Wasm loop.
 */
import { type DType, DTYPES } from '../../../dtypes.js';
import type { Expr, HelperFunction, MathFunction, Stmt, TypedKernel, Variable } from '../../../compiler/ir.js';
import { isArrayType } from '../../../compiler/ir.js';
import { forEachExpr } from '../../../compiler/ir-walk.js';
import type { MemoryLayout } from '../memory-layout.js';
import { Op, SimdOp, ValType } from './encoder.js';
import type { FunctionEmitter, ModuleContext } from './emit-scalar.js';
import { emitFastExpF32 } from './fast-exp.js';
import { integralSource, type IntLanesPlan, intLanesPlan } from './int-lanes.js';
import { WASM_MATH } from './math-support.js';
import { MATH_PORTS } from './math-ports.js';
import { exponentVersion } from './call-exponent.js';
import { fitsIntegerType, type FloatRange, floatRange, truncatesToInt32 } from './float-ranges.js';


/** Integer types narrower than the lanes: held in them as exact int32 values. */
const NARROW_INTS: ReadonlySet<DType> = new Set<DType>(['int8', 'uint8', 'uint8c', 'int16', 'uint16']);
const LANE_TYPES: ReadonlySet<DType> = new Set<DType>(['float32', 'float64', 'int32', 'uint32', ...NARROW_INTS]);

/** The type lanes compute a value of type `t` in: 8- and 16-bit integers as int32. */
export function laneType(t: DType): DType {
  return NARROW_INTS.has(t) ? 'int32' : t;
}

/** Inclusive value ranges of the narrow integer types (uint8c holds what uint8 holds). */
const NARROW_RANGE: Partial<Record<DType, readonly [number, number]>> = {
  int8: [-128, 127], uint8: [0, 255], uint8c: [0, 255], int16: [-32768, 32767], uint16: [0, 65535],
};

/**
 * Which values of an element-wise kernel with loops vary per element, and which loops run masked
 * (element-loops.ts works them out).
 */
export interface ElementLoops {
  readonly varying: ReadonlySet<Variable>;
  /** Loops whose trip count differs per element (their condition varies, or a `break`/`continue` under one). */
  readonly masked: ReadonlySet<Stmt>;
  varies(e: Expr): boolean;
}

/**
 * How an element-wise kernel runs in lanes: `lanes` elements per vector (4, or 2 where a value is
 * float64), `vectors` vectors per step of the loop (more than 1 where an operand is narrower than
 * the lanes, so that it is read and written 16 bytes per step).
 */
export interface SimdShape {
  /** 16 and 8: 8- and 16-bit integer lanes (int-lanes.ts). */
  readonly lanes: 16 | 8 | 4 | 2;
  readonly vectors: number;
  /** How narrow integer lanes compute, where `lanes` is 8 or 16. */
  readonly intLanes?: IntLanesPlan;
  /** Which values vary per element, where the kernel has loops (element-loops.ts). */
  readonly loops?: ElementLoops;
}

/**
 * Whether a kernel calls a `Math` function that lanes compute with more than an instruction or
 * two (exp's ported code with its fallback branch, V8's functions lane by lane).
 */
export function callsOutOfLine(kernel: TypedKernel): boolean {
  let found = false;
  for (const body of [kernel.body, ...kernel.helpers.map((h) => h.body)]) {
    forEachExpr(body, (e) => {
      if (e.kind === 'math' && WASM_MATH[e.fn].floatLanes !== 'instructions') found = true;
      if (e.kind === 'binary' && e.op === '%') found = true; // fmod, lane by lane
    });
  }
  return found;
}

/**
 * How a kernel runs in lanes, or the reason it runs scalar. A kernel with loops needs `loops`, its
 * values split into uniform and varying ones (element-loops.ts): then only varying values take
 * lanes, and each step of the loop is one vector.
 */
export function simdShape(kernel: TypedKernel, kind: 'vectorize' | 'guvectorize', layout: MemoryLayout, loops?: ElementLoops): SimdShape | string {
  const lanes = simdLanes(kernel, kind, layout, loops);
  if (typeof lanes === 'string') return lanes;
  if (loops) return { lanes, vectors: 1, loops };
  // The narrowest operand in memory decides how many vectors a step takes.
  let bytes = 16;
  [...kernel.params.map((p) => p.type), kernel.returnType].forEach((t, i) => {
    const step = layout.inner[i];
    if (step !== 'unit' && step !== 'origin') return;
    bytes = Math.min(bytes, DTYPES[t as DType].bytes);
  });
  // float64 alone: two vectors per step where the body is arithmetic, whose dependency chain (a
  // polynomial's Horner steps) then runs twice side by side: degree-5 polynomial 20–27 % faster
  // (bench/results/lanes-xeon-2c.md); no change measured for branches or division, and out-of-line
  // functions would only double their code.
  if (lanes === 2 && bytes === 8) return { lanes, vectors: callsOutOfLine(kernel) ? 1 : 2 };
  if (lanes === 4 && bytes <= 2) {
    // Integers of 8 and 16 bits only: lanes of their width where every value provably fits them.
    const plan = intLanesPlan(kernel);
    if (typeof plan !== 'string') return plan.lanes.bits === 8 ? { lanes: 16, vectors: 1, intLanes: plan } : { lanes: 8, vectors: 2 / bytes, intLanes: plan };
  }
  const vectors = Math.max(1, 16 / (lanes * bytes));
  return { lanes, vectors };
}

/**
 * The lanes a kernel runs in (4 or 2), or the reason it runs scalar.
 */
function simdLanes(kernel: TypedKernel, kind: 'vectorize' | 'guvectorize', layout: MemoryLayout, loops?: ElementLoops): 4 | 2 | string {
  if (kind !== 'vectorize') return 'only vectorize kernels are vectorised so far';
  const out = layout.inner[layout.inner.length - 1];
  if (out !== 'unit' && out !== 'origin') return 'the output is not contiguous';
  if (layout.inner.some((s) => s === 'strided')) return 'an operand is strided';
  const operandTypes = [...kernel.params.map((p) => p.type), kernel.returnType];
  const types = new Set<DType>();
  for (const t of operandTypes) {
    if (typeof t !== 'string' || !LANE_TYPES.has(t as DType)) return `an operand is ${typeof t === 'string' ? t : 'an array'}`;
    types.add(laneType(t as DType));
  }
  let refusal: string | undefined;
  const seeType = (t: DType) => {
    if (t === 'bool') return;
    if (!LANE_TYPES.has(t)) refusal ??= `it computes in ${t}`;
    types.add(laneType(t));
  };
  const visit = (e: Expr): void => {
    seeType(e.type);
    // A uniform value is computed once for every lane, by the scalar code: only its type matters
    // where it meets varying values (it is splatted).
    if (loops && !loops.varies(e)) return;
    switch (e.kind) {
      case 'index': case 'dim':
        refusal ??= 'it reads arrays';
        return;
      case 'call':
        // Helpers are inlined (SimdEmitter.inline): their bodies follow the kernel's rules.
        e.args.forEach((a, i) => {
          if (a.kind === 'array-ref') refusal ??= 'a helper takes an array';
          else assigned(e.helper.params[i]!, a);
        });
        helper(e.helper);
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
      case 'cast':
        // Every conversion between lane types (and bool) has a lane form (SimdEmitter.cast).
        visit(integralSource(e) ?? e.value);
        return;
      case 'math':
        if (laneType(e.type) === 'int32' || e.type === 'uint32') {
          if (!WASM_MATH[e.fn].intLanes || (e.fn === 'abs' && e.type === 'uint32')) refusal ??= `Math.${e.fn} on integers`;
        } else if (e.fn === 'fround') refusal ??= 'Math.fround mixes float64 and float32';
        e.args.forEach(visit);
        return;
      default:
        return;
    }
  };
  const seen = new Set<HelperFunction>();
  const helper = (h: HelperFunction): void => {
    if (seen.has(h)) return;
    seen.add(h);
    if (h.returnType !== 'void') seeType(h.returnType);
    stmts(h.body);
  };
  /** A value that stays scalar where uniform (a uniform variable's, a condition). */
  const scalarOrLanes = (e: Expr): void => {
    if (!loops || loops.varies(e)) visit(e);
  };
  const assigned = (v: Variable, value: Expr): void => {
    if (loops && !loops.varying.has(v)) return scalarOrLanes(value);
    seeType(v.type as DType);
    visit(value);
  };
  const stmts = (list: readonly Stmt[]): void => {
    for (const s of list) {
      switch (s.kind) {
        case 'call': visit(s.call); break;
        case 'let': assigned(s.variable, s.init); break;
        case 'assign': assigned(s.variable, s.value); break;
        case 'if': scalarOrLanes(s.cond); stmts(s.then); stmts(s.otherwise); break;
        case 'return': if (s.value) visit(s.value); break;
        case 'loop':
          if (!loops) refusal ??= 'the kernel has a loop statement';
          stmts(s.init);
          if (s.cond) scalarOrLanes(s.cond);
          stmts(s.body);
          stmts(s.update);
          break;
        case 'break': case 'continue':
          if (!loops) refusal ??= `the kernel has a ${s.kind} statement`;
          break;
        default: refusal ??= `the kernel has a ${s.kind === 'local-array' ? 'local array' : s.kind} statement`;
      }
    }
  };
  stmts(kernel.body);
  if (refusal) return refusal;
  // float64 beside 32-bit values: 2 lanes, the 32-bit values in lanes 0 and 1 (as per-row code does).
  return types.has('float64') ? 2 : 4;
}

/** Emits the vector body of the loop into a scalar function emitter's code. */
export class SimdEmitter {
  protected readonly vars = new Map<Variable, number>();
  /** The lanes the current statement applies to; undefined: all (top level, nothing returned). */
  protected mask: number | undefined;
  /** Lanes that returned (of the kernel, or of the helper being inlined). */
  protected done: number;
  protected anyDone = false;
  protected allReturned = false;

  constructor(
    protected readonly e: FunctionEmitter,
    protected readonly ctx: ModuleContext,
    /** 4 or 2 (32- and 64-bit lanes); 8 and 16 for 16- and 8-bit integer lanes (int-lanes.ts). */
    protected readonly lanes: 16 | 8 | 4 | 2,
    /** Where `return` puts its value (the kernel's, or the inlined helper's). */
    protected result: number,
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

  /**
   * A uniform scalar of type `t` on the stack becomes a vector (bool: a lane mask): where a value
   * computed once for all lanes (emit-rows.ts, element-loops.ts) meets one that varies per lane.
   */
  splatUniform(t: DType): void {
    if (t === 'bool') {
      if (this.lanes === 2) {
        this.e.op(Op.i64_extend_i32_u);
        this.simd(SimdOp.i64x2_splat).simd(SimdOp.i64x2_neg);
      } else this.simd(SimdOp.i32x4_splat).simd(SimdOp.i32x4_neg);
      return;
    }
    this.splat(t);
  }

  /** A vector of `value` in every lane, as a `v128.const` (which loops hoist: FunctionEmitter.hoistConstants). */
  constant(value: number | boolean, t: DType): void {
    const bytes = new Uint8Array(16);
    const view = new DataView(bytes.buffer);
    for (let at = 0; at < 16; at += t === 'float64' ? 8 : 4) {
      if (t === 'float64') view.setFloat64(at, value as number, true);
      else if (t === 'float32') view.setFloat32(at, value as number, true);
      else if (t === 'bool') view.setInt32(at, value ? -1 : 0, true); // every lane's bits, of 64-bit lanes too
      else view.setInt32(at, (value as number) | 0, true);
    }
    this.simd(SimdOp.v128_const);
    this.e.code.bytes(bytes);
  }

  protected allOnes(): void {
    this.constant(true, 'bool');
  }

  /**
   * Loops that run under a mask (innermost last): the lanes still looping, and the lanes that left
   * the current iteration (`break` or `continue`) — see {@link maskedLoop}.
   */
  protected readonly maskedLoops: { readonly looping: number; readonly exited: number; exits: boolean }[] = [];

  /** Pushes the mask of lanes still running here, or returns false when that is every lane. */
  protected activeMask(): boolean {
    if (this.mask === undefined && !this.anyDone && !this.maskedLoops.length) return false;
    if (this.mask === undefined) this.allOnes();
    else this.e.get(this.mask);
    if (this.anyDone) this.e.get(this.done).simd(SimdOp.v128_andnot);
    // Until a `break`/`continue` of a loop is emitted, no lane has left its current iteration.
    for (const loop of this.maskedLoops) if (loop.exits) this.e.get(loop.exited).simd(SimdOp.v128_andnot);
    return true;
  }

  /**
   * A loop whose trip count differs per lane, ISPC style: it runs while any lane still loops.
   * `looping` starts as the lanes active at the loop and loses, at each test, the lanes whose
   * condition fails, and at a `break` the lanes that take it; `exited` holds the lanes that took a
   * `break` or `continue` in the current iteration (cleared before the update, which `continue`d
   * lanes run, as in JS). The body runs with `looping` as its mask, so stores and assignments of
   * lanes that left keep their values. `test` pushes the condition: a lane mask when
   * `varying`, else one i32 for every lane.
   *
   * Per-row code (emit-rows.ts) runs such loops, and element-wise code where a test or benchmark
   * asks (element-loops.ts: by default an element-wise kernel whose loops end per element runs
   * the scalar loop, which measured faster); the loop counters stay uniform scalars.
   */
  protected maskedLoop(s: Extract<Stmt, { kind: 'loop' }>, varying: boolean, test: () => void): void {
    const e = this.e;
    this.stmts(s.init);
    const looping = e.local(ValType.v128);
    const exited = e.local(ValType.v128);
    if (!this.activeMask()) this.allOnes();
    e.set(looping);
    const saved = this.mask;
    this.mask = looping;
    e.open('block');
    const exit = e.depth() - 1;
    e.open('loop');
    const top = e.depth() - 1;
    const check = () => {
      if (s.cond) {
        test();
        if (varying) {
          e.get(looping).simd(SimdOp.v128_and).set(looping);
        } else e.op(Op.i32_eqz).br(exit, true);
      }
      e.get(looping).simd(SimdOp.v128_any_true).op(Op.i32_eqz).br(exit, true);
    };
    if (s.testFirst) check();
    this.constant(false, 'bool');
    e.set(exited);
    const frame = { looping, exited, exits: false };
    this.maskedLoops.push(frame);
    this.stmts(s.body);
    this.constant(false, 'bool');
    e.set(exited);
    this.stmts(s.update);
    this.maskedLoops.pop();
    if (!s.testFirst) check();
    e.br(top);
    e.close();
    e.close();
    this.mask = saved;
  }

  /** `break` (`exits` true) or `continue` of the innermost masked loop, for the active lanes. */
  protected maskedExit(exits: boolean): void {
    const loop = this.maskedLoops[this.maskedLoops.length - 1]!;
    const e = this.e;
    const active = e.local(ValType.v128);
    this.activeMask();
    e.tee(active).get(loop.exited).simd(SimdOp.v128_or).set(loop.exited);
    loop.exits = true;
    if (exits) e.get(loop.looping).get(active).simd(SimdOp.v128_andnot).set(loop.looping);
  }

  /** Resets per-iteration state; call at the start of each vector iteration. */
  begin(defaultResult: number, returnType: DType): void {
    this.mask = undefined;
    this.anyDone = false;
    this.allReturned = false;
    this.constant(defaultResult, returnType);
    this.e.set(this.result);
    this.constant(false, 'bool');
    this.e.set(this.done);
  }

  /** The statements of a function: the kernel's body, or an inlined helper's. */
  body(list: readonly Stmt[]): void {
    this.stmts(list);
  }

  stmts(list: readonly Stmt[]): void {
    for (const s of list) {
      if (this.allReturned) return;
      this.stmt(s);
    }
  }

  /**
   * Sets a variable's lanes from `value`, keeping inactive lanes' values, except where it is
   * declared (`fresh`): lanes inactive at a declaration stay inactive for the rest of its scope (masks
   * only narrow within a block, and a loop's next iteration declares it again), so their values
   * are never read.
   */
  protected assign(local: number, value: Expr, fresh = false): void {
    this.expr(value);
    if (!fresh && this.activeMask()) {
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
        this.assign(this.varLocal(s.variable), s.kind === 'let' ? s.init : s.value, s.kind === 'let');
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
      case 'call':
        return; // a helper reads and writes no array here (simdShape), so a call for its effect has none
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
        this.binary(e.op, e.left, e.right, t, e);
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
      case 'cast': {
        const value = integralSource(e) ?? e.value;
        this.expr(value);
        this.cast(value.type, t, floatRange(value));
        return;
      }
      case 'math':
        this.math(e.fn, e.args, t, e.fastmath === true);
        return;
      case 'call':
        this.inlineHelper(e);
        return;
      default:
        throw new Error(`unreachable SIMD expression ${e.kind}`);
    }
  }

  protected binary(op: string, left: Expr, right: Expr, t: DType, self?: Expr): void {
    void self;
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
    this.simd(table[laneType(t)]![op]!);
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

  /** Converts the lanes on the stack; `range`: what is known of the value (float-ranges.ts). */
  protected cast(from: DType, to: DType, range?: FloatRange): void {
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
        this.constant(0, 'int32');
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
    // To an integer type: a typed array's store.
    if (to === 'uint8c') return this.clampToUint8(from);
    if (from === 'float32' || from === 'float64') this.toInt32(from, range);
    const bounds = NARROW_RANGE[to];
    const have = NARROW_RANGE[from];
    // int32 ↔ uint32: the same bits; or every value fits the type, so its wrap changes nothing
    if (!bounds || (have && have[0] >= bounds[0] && have[1] <= bounds[1]) || (range && fitsIntegerType(range, to))) return;
    // Keep the low bits: sign-extend them (int8, int16) or mask the rest off (uint8, uint16).
    if (bounds[0] < 0) {
      const shift = bounds[1] === 127 ? 24 : 16;
      this.e.i32(shift);
      this.simd(SimdOp.i32x4_shl);
      this.e.i32(shift);
      this.simd(SimdOp.i32x4_shr_s);
    } else {
      this.constant(bounds[1], 'int32');
      this.simd(SimdOp.v128_and);
    }
  }

  /**
   * JS's ToInt32 of floats in lanes (the wrap of `Int32Array`'s store), to int32 lanes (lanes 0
   * and 1 from float64). float64, t = trunc(x): where every lane has |t| < 2⁵¹, t + 1.5·2⁵² is
   * exact (in [2⁵², 2⁵³), whose spacing is 1) and its low 32 mantissa bits are t + 2⁵¹ mod 2³²,
   * ToInt32's bits — an add and a shuffle; otherwise (large values, NaN, ±∞) r = t −
   * floor(t·2⁻³²)·2³² is exact (an integer in [0, 2³²)), and its unsigned saturating truncation is
   * ToInt32's bits; NaN and ±∞ make r NaN, which truncates to 0. float32 (where a lane is not
   * below 2³¹ in magnitude; else the truncation alone): below 2³¹ in magnitude the signed saturating truncation is
   * exact; from 2³¹ on, x is a multiple of 2⁸ and r = x − floor(x·2⁻³²)·2³² is exact in float32
   * too (a multiple of 2⁸ below 2³²: at most 24 significant bits).
   */
  private toInt32(from: 'float32' | 'float64', range?: FloatRange): void {
    const x = this.e.local(ValType.v128);
    if (range && truncatesToInt32(range)) return this.truncateInRange(from, range);
    if (from === 'float64') {
      this.simd(SimdOp.f64x2_trunc);
      this.e.tee(x);
      this.simd(SimdOp.f64x2_abs);
      this.constant(2 ** 51, 'float64');
      this.simd(SimdOp.f64x2_lt).simd(SimdOp.i64x2_all_true);
      this.e.open('if', ValType.v128);
      this.e.get(x);
      this.constant(1.5 * 2 ** 52, 'float64');
      this.simd(SimdOp.f64x2_add);
      const m = this.e.local(ValType.v128);
      this.e.tee(m).get(m).shuffle([0, 1, 2, 3, 8, 9, 10, 11, 0, 1, 2, 3, 8, 9, 10, 11]);
      this.e.else();
      this.e.get(x).get(x);
      this.constant(2 ** -32, 'float64');
      this.simd(SimdOp.f64x2_mul).simd(SimdOp.f64x2_floor);
      this.constant(2 ** 32, 'float64');
      this.simd(SimdOp.f64x2_mul).simd(SimdOp.f64x2_sub).simd(SimdOp.i32x4_trunc_sat_f64x2_u_zero);
      this.e.close();
      return;
    }
    // below: the mask of lanes under 2³¹ in magnitude (NaN is not), kept for the select
    const small = this.e.local(ValType.v128);
    this.e.tee(x);
    this.simd(SimdOp.f32x4_abs);
    this.constant(2 ** 31, 'float32');
    this.simd(SimdOp.f32x4_lt);
    this.e.tee(small);
    this.simd(SimdOp.i32x4_all_true);
    this.e.open('if', ValType.v128);
    this.e.get(x);
    this.simd(SimdOp.i32x4_trunc_sat_f32x4_s);
    this.e.else();
    this.e.get(x);
    this.simd(SimdOp.i32x4_trunc_sat_f32x4_s);
    this.e.get(x).get(x);
    this.constant(2 ** -32, 'float32');
    this.simd(SimdOp.f32x4_mul).simd(SimdOp.f32x4_floor);
    this.constant(2 ** 32, 'float32');
    this.simd(SimdOp.f32x4_mul).simd(SimdOp.f32x4_sub).simd(SimdOp.i32x4_trunc_sat_f32x4_u);
    this.e.get(small);
    this.simd(SimdOp.v128_bitselect);
    this.e.close();
  }

  /**
   * ToInt32 of floats known to truncate into int32 (or be NaN, which ToInt32 and the saturating
   * truncation both make 0): the saturating truncation alone; float64 known to be neither NaN nor
   * 2⁵¹ or more in magnitude, t + 1.5·2⁵² as above (an add and a shuffle, where V8 spends five
   * instructions on `trunc_sat_f64x2_s_zero`), truncated first unless every value is an integer.
   */
  private truncateInRange(from: 'float32' | 'float64', range: FloatRange): void {
    if (from === 'float32') {
      this.simd(SimdOp.i32x4_trunc_sat_f32x4_s);
      return;
    }
    if (range.maybeNaN || Math.max(-range.lo, range.hi) >= 2 ** 51) {
      this.simd(SimdOp.i32x4_trunc_sat_f64x2_s_zero);
      return;
    }
    if (!range.integral) this.simd(SimdOp.f64x2_trunc);
    this.constant(1.5 * 2 ** 52, 'float64');
    this.simd(SimdOp.f64x2_add);
    const m = this.e.local(ValType.v128);
    this.e.tee(m).get(m).shuffle([0, 1, 2, 3, 8, 9, 10, 11, 0, 1, 2, 3, 8, 9, 10, 11]);
  }

  /**
   * `Uint8ClampedArray`'s store in lanes: floats round half to even (`nearest`) and truncate
   * saturating (NaN → 0), then every value clamps to 0…255 as an int32 (a uint32 as unsigned).
   */
  private clampToUint8(from: DType): void {
    if (from === 'uint8') return;
    if (from === 'float32') this.simd(SimdOp.f32x4_nearest).simd(SimdOp.i32x4_trunc_sat_f32x4_s);
    else if (from === 'float64') this.simd(SimdOp.f64x2_nearest).simd(SimdOp.i32x4_trunc_sat_f64x2_s_zero);
    this.constant(255, 'int32');
    if (from === 'uint32') {
      this.simd(SimdOp.i32x4_min_u);
      return;
    }
    this.simd(SimdOp.i32x4_min_s);
    this.constant(0, 'int32');
    this.simd(SimdOp.i32x4_max_s);
  }

  protected math(fn: MathFunction, args: readonly Expr[], t: DType, fastmath: boolean): void {
    const f32 = t === 'float32';
    if (laneType(t) === 'int32' || t === 'uint32') {
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
    if (fastmath) {
      this.expr(args[0]!);
      emitFastExpF32(this.e, 4);
      return;
    }
    const port = MATH_PORTS[fn];
    if (WASM_MATH[fn].floatLanes === 'port' && port?.arity === args.length) {
      // A port of V8's own algorithm in lanes, bit for bit V8's Math.* (math-ports.ts).
      const ofCall = exponentVersion(this.e);
      const exponentOfCall = fn === 'pow' && ofCall?.exponent.sites.has(args[1]!) ? ofCall : undefined;
      // pow's exponent of the call: y as the code before the loops computed it (call-exponent.ts)
      if (exponentOfCall) {
        this.expr(args[0]!);
        this.e.get(exponentOfCall.lanes);
      } else for (const a of args) this.expr(a);
      // a literal argument, as its lanes hold it (`constant`: a float32 one rounded to float32)
      const known = exponentOfCall ? [undefined, exponentOfCall.known]
        : args.map((a) => (a.kind !== 'const' || typeof a.value !== 'number' ? undefined : a.type === 'float32' ? Math.fround(a.value) : a.type === 'float64' ? a.value : undefined));
      port.lanes(this.e, this.ctx.mathImport(fn, args.length), !f32 ? 'f64x2' : this.lanes === 4 ? 'f32x4' : 'f32x2', known);
      return;
    }
    if (WASM_MATH[fn].floatLanes !== 'instructions') return this.perLane(`${fn}/${args.length}`, args, t);
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
        return this.minMax(fn, args, t);
      case 'round': {
        // r = ceil(x); r − 0.5 > x ? r − 1 : r, per lane (V8's Math.round), as r − (1 or +0):
        // subtracting +0 leaves every r as it is, −0 included.
        const x = this.e.local(ValType.v128);
        const r = this.e.local(ValType.v128);
        this.expr(args[0]!);
        this.e.tee(x);
        this.simd(f32 ? SimdOp.f32x4_ceil : SimdOp.f64x2_ceil);
        this.e.tee(r);
        this.e.get(r);
        this.constant(0.5, t);
        this.simd(f32 ? SimdOp.f32x4_sub : SimdOp.f64x2_sub);
        this.e.get(x);
        this.simd(f32 ? SimdOp.f32x4_gt : SimdOp.f64x2_gt);
        this.constant(1, t);
        this.simd(SimdOp.v128_and);
        this.simd(f32 ? SimdOp.f32x4_sub : SimdOp.f64x2_sub);
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

  /**
   * `Math.min`/`Math.max` of floats. f32x4/f64x2 min and max are IEEE-754 2019 minimum/maximum —
   * NaN if either is NaN, −0 below +0: exactly Math.min/Math.max — but V8 spends about seven
   * instructions on each (x86's minpd/maxpd follow neither rule). Against a constant c that is not
   * NaN, the pseudo-minimum `pmin(x, c)` = c < x ? c : x is one instruction and gives the same
   * values: x when x is NaN (the comparison fails), the lesser otherwise, x when they are equal —
   * which is the right zero unless c is the zero the rule prefers (min: −0; max: +0). Against +0,
   * `pmax(x, +0) + 0` turns the −0 it may keep into +0 and changes nothing else; against −0,
   * min stays IEEE minimum. The operands' order does not matter (min and max of a set), so the
   * constants are applied last.
   */
  private minMax(fn: 'min' | 'max', args: readonly Expr[], t: DType): void {
    const f32 = t === 'float32';
    const ops = fn === 'min' ? (f32 ? [SimdOp.f32x4_min, SimdOp.f32x4_pmin] : [SimdOp.f64x2_min, SimdOp.f64x2_pmin]) : f32 ? [SimdOp.f32x4_max, SimdOp.f32x4_pmax] : [SimdOp.f64x2_max, SimdOp.f64x2_pmax];
    const constant = (a: Expr) => a.kind === 'const' && !Number.isNaN(Number(a.value));
    const ordered = [...args.filter((a) => !constant(a)), ...args.filter(constant)];
    this.expr(ordered[0]!);
    for (const a of ordered.slice(1)) {
      this.expr(a);
      const c = constant(a) ? Number((a as { value: number }).value) : undefined;
      if (c === undefined || (fn === 'min' && Object.is(c, -0))) {
        this.simd(ops[0]!);
        continue;
      }
      this.simd(ops[1]!);
      if (fn === 'max' && Object.is(c, 0)) {
        this.constant(0, t);
        this.simd(f32 ? SimdOp.f32x4_add : SimdOp.f64x2_add);
      }
    }
  }

  /**
   * A helper call, inlined: its parameters are fresh variables, its body runs under the caller's
   * active lanes (those that have not returned) with a result and a returned-lanes mask of its own
   * (a helper that ends without `return` gives what undefined converts to), and the result is left
   * on the stack.
   */
  private inlineHelper(x: Extract<Expr, { kind: 'call' }>): void {
    const h = x.helper;
    h.params.forEach((p, i) => this.stmt({ kind: 'let', variable: p, init: x.args[i] as Expr, loc: x.loc }));
    const saved = { result: this.result, done: this.done, anyDone: this.anyDone, allReturned: this.allReturned, mask: this.mask };
    if (this.activeMask()) this.e.set((this.mask = this.e.local(ValType.v128)));
    const t = h.returnType === 'void' ? 'int32' : h.returnType;
    this.result = this.e.local(ValType.v128);
    this.done = this.e.local(ValType.v128);
    this.anyDone = false;
    this.allReturned = false;
    this.constant(t === 'float32' || t === 'float64' ? NaN : t === 'bool' ? false : 0, t);
    this.e.set(this.result);
    this.constant(false, 'bool');
    this.e.set(this.done);
    this.body(h.body);
    const result = this.result;
    this.result = saved.result;
    this.done = saved.done;
    this.anyDone = saved.anyDone;
    this.allReturned = saved.allReturned;
    this.mask = saved.mask;
    this.e.get(result);
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
    // float64: 2 lanes, also where 4 rows hold them in pairs of vectors (row-pairs.ts)
    for (let l = 0; l < (f32 ? this.lanes : 2); l++) {
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
