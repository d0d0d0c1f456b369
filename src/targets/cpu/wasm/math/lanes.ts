/**
 * Ports in SIMD lanes. The vector counterpart of c-ops.ts: doubles in f64x2 lanes and their bit
 * patterns in i64x2 lanes, as closures that push one v128, so that a port's vector code reads as
 * the C it computes lane by lane. `vectorPort` wraps a port's vector code: the lanes it covers (a
 * mask) run it; a vector with any other lane calls the scalar function per lane (`callPerLane`,
 * also what a port without vector code does); float32 vectors run as f64x2 halves, each rounded
 * once to float32.
 */
import { Op, SimdOp, ValType } from '../encoder.js';
import type { FunctionEmitter } from '../emit-scalar.js';
import { joinHalves, promoteHigh } from '../fdlibm.js';
import type { KnownArguments, LaneShape } from '../math-port.js';


/**
 * One call of the scalar function `index` per lane of the vectors in locals `args`: what a port
 * without vector code does, and what vector code does for the vectors it does not cover.
 */
export function callPerLane(e: FunctionEmitter, args: readonly number[], shape: LaneShape, index: number): void {
  const f32 = shape !== 'f64x2';
  const lanes = shape === 'f32x4' ? 4 : 2;
  const extract = f32 ? SimdOp.f32x4_extract_lane : SimdOp.f64x2_extract_lane;
  e.get(args[0]!);
  for (let l = 0; l < lanes; l++) {
    for (const a of args) {
      e.get(a).simd(extract).code.byte(l);
      if (f32) e.op(Op.f64_promote_f32);
    }
    e.code.byte(Op.call).u32(index);
    if (f32) e.op(Op.f32_demote_f64);
    e.simd(f32 ? SimdOp.f32x4_replace_lane : SimdOp.f64x2_replace_lane).code.byte(l);
  }
}

/** Pushes one v128. */
export type Vec = () => void;

export class CLanes {
  constructor(readonly e: FunctionEmitter) {}

  /** A new v128 local. */
  local(): number {
    return this.e.local(ValType.v128);
  }

  /** An f64x2 constant. */
  num = (v: number): Vec => () => {
    this.e.simd(SimdOp.v128_const);
    this.e.code.f64(v).f64(v);
  };

  /** An i64x2 constant. */
  int = (v: bigint): Vec => () => {
    this.e.simd(SimdOp.v128_const);
    const b = new DataView(new ArrayBuffer(8));
    b.setBigInt64(0, BigInt.asIntN(64, v), true);
    for (let r = 0; r < 2; r++) for (let i = 0; i < 8; i++) this.e.code.byte(b.getUint8(i));
  };

  get = (l: number): Vec => () => void this.e.get(l);

  private bin = (a: Vec, b: Vec, o: SimdOp): Vec => () => (a(), b(), void this.e.simd(o));
  /** Any binary instruction (f32x4 compares, …). */
  binary = (o: SimdOp, a: Vec, b: Vec): Vec => this.bin(a, b, o);

  /** Any unary f64x2 instruction. */
  un = (a: Vec, o: SimdOp): Vec => () => (a(), void this.e.simd(o));

  add = (a: Vec, b: Vec) => this.bin(a, b, SimdOp.f64x2_add);
  sub = (a: Vec, b: Vec) => this.bin(a, b, SimdOp.f64x2_sub);
  mul = (a: Vec, b: Vec) => this.bin(a, b, SimdOp.f64x2_mul);
  div = (a: Vec, b: Vec) => this.bin(a, b, SimdOp.f64x2_div);
  abs = (a: Vec) => this.un(a, SimdOp.f64x2_abs);
  neg = (a: Vec) => this.un(a, SimdOp.f64x2_neg);
  sqrt = (a: Vec) => this.un(a, SimdOp.f64x2_sqrt);
  lt = (a: Vec, b: Vec) => this.bin(a, b, SimdOp.f64x2_lt);
  gt = (a: Vec, b: Vec) => this.bin(a, b, SimdOp.f64x2_gt);
  le = (a: Vec, b: Vec) => this.bin(a, b, SimdOp.f64x2_le);
  ge = (a: Vec, b: Vec) => this.bin(a, b, SimdOp.f64x2_ge);
  eq = (a: Vec, b: Vec) => this.bin(a, b, SimdOp.f64x2_eq);
  ne = (a: Vec, b: Vec) => this.bin(a, b, SimdOp.f64x2_ne);

  iadd = (a: Vec, b: Vec) => this.bin(a, b, SimdOp.i64x2_add);
  isub = (a: Vec, b: Vec) => this.bin(a, b, SimdOp.i64x2_sub);
  and = (a: Vec, b: Vec) => this.bin(a, b, SimdOp.v128_and);
  or = (a: Vec, b: Vec) => this.bin(a, b, SimdOp.v128_or);
  xor = (a: Vec, b: Vec) => this.bin(a, b, SimdOp.v128_xor);
  /** a & ~b */
  andNot = (a: Vec, b: Vec) => this.bin(a, b, SimdOp.v128_andnot);
  ieq = (a: Vec, b: Vec) => this.bin(a, b, SimdOp.i64x2_eq);
  ine = (a: Vec, b: Vec) => this.bin(a, b, SimdOp.i64x2_ne);
  igt = (a: Vec, b: Vec) => this.bin(a, b, SimdOp.i64x2_gt_s);
  ige = (a: Vec, b: Vec) => this.bin(a, b, SimdOp.i64x2_ge_s);
  ilt = (a: Vec, b: Vec) => this.bin(a, b, SimdOp.i64x2_lt_s);
  ile = (a: Vec, b: Vec) => this.bin(a, b, SimdOp.i64x2_le_s);
  private shift = (a: Vec, n: number, o: SimdOp): Vec => () => (a(), this.e.i32(n), void this.e.simd(o));
  shl = (a: Vec, n: number) => this.shift(a, n, SimdOp.i64x2_shl);
  shrS = (a: Vec, n: number) => this.shift(a, n, SimdOp.i64x2_shr_s);
  shrU = (a: Vec, n: number) => this.shift(a, n, SimdOp.i64x2_shr_u);

  /** `m ? a : b` per lane (m a mask of all-ones or all-zeros lanes). */
  select = (m: Vec, a: Vec, b: Vec): Vec => () => (a(), b(), m(), void this.e.simd(SimdOp.v128_bitselect));

  /** (double)k of integers |k| < 2^51 in i64x2 lanes: (bits of 1.5·2^52) + k, as a double, − 1.5·2^52. */
  toF = (k: Vec): Vec => this.sub(this.iadd(k, this.int(0x4338000000000000n)), this.num(1.5 * 2 ** 52));

  /** a0 + z·(a1 + z·(a2 + …)), as fdlibm nests its polynomials. */
  poly = (z: Vec, coefficients: readonly number[]): Vec => {
    let p = this.num(coefficients[coefficients.length - 1]!);
    for (let i = coefficients.length - 2; i >= 0; i--) p = this.add(this.num(coefficients[i]!), this.mul(z, p));
    return p;
  };

  /**
   * Emits, where any lane of `mask` is set: local `into` = mask ? value : into, the value's code
   * only then (a branch of the C code that few vectors take costs nothing elsewhere).
   */
  whereAny(mask: Vec, into: number, value: () => Vec): void {
    mask();
    this.e.simd(SimdOp.v128_any_true);
    this.e.open('if');
    this.select(mask, value(), this.get(into))();
    this.e.set(into);
    this.e.close();
  }

  /** Evaluates v into a new local (once), returning a reader of it. */
  let = (v: Vec): Vec => {
    const l = this.local();
    v();
    this.e.set(l);
    return this.get(l);
  };
}

/**
 * A port's vector code over f64x2 lanes: `covers(args)` is the mask of lanes it computes bit for
 * bit as the scalar function does; `compute(args)` the values (any bits in other lanes), emitted
 * only for vectors whose every lane is covered.
 */
export interface GuardedVectorCode {
  covers(c: CLanes, args: readonly Vec[]): Vec;
  compute(c: CLanes, args: readonly Vec[]): Vec;
}

/**
 * Vector code that learns which lanes it covers only while computing them: `value` and `covered`
 * are emitted for every vector, and a vector with a lane outside `covered` calls the scalar
 * function per lane instead.
 */
export interface CheckedVectorCode {
  /** `known[i]`: the value of every lane of argument i, where the kernel gives a constant there. */
  lanes(c: CLanes, args: readonly Vec[], known?: KnownArguments): { value: Vec; covered: Vec };
}


export type VectorCode = GuardedVectorCode | CheckedVectorCode;

/**
 * Pushes the function of the vectors in locals `args` (math/ports.ts's `lanes`): the vector code
 * where it covers every lane (float32: both f64x2 halves), else one scalar call per lane. `known`:
 * arguments the kernel gives as constants (as doubles: a float32 constant already rounded).
 */
export function vectorPort(code: VectorCode, e: FunctionEmitter, args: readonly number[], shape: LaneShape, scalar: number, known?: KnownArguments): void {
  const c = new CLanes(e);
  const halves = (promote: (x: number) => void): Vec[] => args.map((a) => c.let(() => promote(a)));
  const low = (x: number) => void e.get(x).simd(SimdOp.f64x2_promote_low_f32x4);
  const parts = shape === 'f64x2' ? [args.map(c.get)] : shape === 'f32x2' ? [halves(low)] : [halves(low), halves((x) => promoteHigh(e, x))];
  /** Pushes the result from the parts' values (f64x2 each). */
  const join = (values: readonly Vec[]) => {
    if (shape === 'f64x2') return values[0]!();
    for (const v of values) {
      v();
      e.simd(SimdOp.f32x4_demote_f64x2_zero);
    }
    if (values.length === 2) joinHalves(e);
  };
  let values: Vec[] | undefined;
  if ('lanes' in code) {
    const computed = parts.map((p) => code.lanes(c, p, known));
    values = computed.map((r) => c.let(r.value));
    computed.forEach((r, p) => {
      r.covered();
      e.simd(SimdOp.i64x2_all_true);
      if (p > 0) e.op(Op.i32_and);
    });
  } else {
    parts.forEach((p, i) => {
      code.covers(c, p)();
      e.simd(SimdOp.i64x2_all_true);
      if (i > 0) e.op(Op.i32_and);
    });
  }
  e.open('if', ValType.v128);
  join(values ?? parts.map((p) => (code as GuardedVectorCode).compute(c, p)));
  e.else();
  callPerLane(e, args, shape, scalar);
  e.close();
}

/**
 * A float32 kernel's function by a cheaper double approximation y with a rounding test (Ziv), as
 * fdlibm.ts does for exp: where |y − f| < `margin` ulps of y (f the port's double, whose
 * `Math.fround` the kernel must give) and y's low 29 mantissa bits — its offset within a float32
 * cell — are more than `margin` from the cell's midpoint 0x10000000, y and f lie strictly on the
 * same side of every rounding midpoint, so fround(y) = fround(f). `approx` computes y from an
 * f64x2 half (y must be a normal float32 magnitude wherever `accepts` holds); a vector with a lane
 * that `accepts` (f32x4 mask on the float32 x) rejects, or whose y is near a midpoint, runs
 * `exact` instead. Pushes the f32x4 result; x is the local holding the float32 vector.
 */
export function float32WithRoundingTest(
  e: FunctionEmitter, x: number, approx: (c: CLanes, x: Vec) => Vec, accepts: (c: CLanes, x: Vec) => Vec, margin: number, exact: () => void,
): void {
  const c = new CLanes(e);
  const y0 = c.let(approx(c, c.let(() => void e.get(x).simd(SimdOp.f64x2_promote_low_f32x4))));
  const y1 = c.let(approx(c, c.let(() => promoteHigh(e, x))));
  const splat32 = (v: number) => {
    e.simd(SimdOp.v128_const);
    for (let i = 0; i < 4; i++) e.code.byte(v & 0xff).byte((v >>> 8) & 0xff).byte((v >>> 16) & 0xff).byte((v >>> 24) & 0xff);
  };
  accepts(c, c.get(x))();
  // the low words of y0, y1 gathered: ((lo − (2^28 − margin)) mod 2^29) > 2·margin
  y0();
  y1();
  e.shuffle([0, 1, 2, 3, 8, 9, 10, 11, 16, 17, 18, 19, 24, 25, 26, 27]);
  splat32(2 ** 28 - margin);
  e.simd(SimdOp.i32x4_sub);
  splat32(0x1fffffff);
  e.simd(SimdOp.v128_and);
  splat32(2 * margin);
  e.simd(SimdOp.i32x4_le_u);
  e.simd(SimdOp.v128_andnot);
  e.simd(SimdOp.i32x4_all_true);
  e.open('if', ValType.v128);
  y0();
  e.simd(SimdOp.f32x4_demote_f64x2_zero);
  y1();
  e.simd(SimdOp.f32x4_demote_f64x2_zero);
  joinHalves(e);
  e.else();
  exact();
  e.close();
}
