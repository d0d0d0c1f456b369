/**
 * An exponent of `**` / `Math.pow` that is the same for the whole call but not a literal: a
 * scalar argument (`(p, gamma) => 255 * (p / 255) ** gamma`, `x ** k`) or a value computed only
 * from scalar arguments and literals (`x ** (1 / gamma)`, through `const g = 1 / gamma`). A
 * literal exponent's lanes decide what e_pow.c decides on y alone when the kernel is compiled
 * (math/pow.ts `powLanesOfKnownY`); here the same decision is made once per call, in scalar code
 * before the vector loops (pow.ts `exponentCase`), and the loops are emitted once per case: in the
 * loops of an odd, even or non-integer y, pow's lanes at these sites are the literal exponent's
 * code for that parity, y1 and y2 held in locals; the exponents a literal takes early (0, ±1, 2,
 * 0.5) or leaves to the scalar function (NaN, ±∞, |y| > 2^31) run loops with pow's general lanes,
 * right for every y. Branching per vector instead measured slower (V8 keeps fewer of the lanes'
 * constants in registers across the branches). The value of y comes from the scalar code's own
 * evaluation of the expression, and every lane of the sites uses it, so the decision and the
 * lanes see one value.
 */
import { isArrayType, type Expr, type Stmt, type TypedKernel, type Variable } from '../../../compiler/ir.js';
import { childExprs, forEachExpr, forEachStmt } from '../../../compiler/ir-walk.js';
import type { MemoryLayout } from '../memory-layout.js';
import { Op, SimdOp, ValType } from './encoder.js';
import type { FunctionEmitter } from './emit-scalar.js';
import type { ExponentOfCall } from './math-port.js';
import { EXPONENT_PARITIES, exponentCase } from './math/pow.js';

/** The exponent of the call that a kernel's pow sites share, as found in its body. */
export interface CallExponent {
  /** The `y` arguments of the pow sites it serves (one expression, written once or more). */
  readonly sites: ReadonlySet<Expr>;
  /** y as scalar code computes it before the loops: variables bound to values of the call replaced by those values. */
  readonly value: Expr;
  /** Where the first site is (kernel line:column), for `explain`. */
  readonly at: string;
}

/** What the loops being emitted know of the exponent of the call (`exponentVersion`). */
export interface ExponentVersion {
  readonly exponent: CallExponent;
  readonly known: ExponentOfCall;
  /** A v128 local holding y in every lane, in y's own type (f32x4 for float32, f64x2 for float64). */
  readonly lanes: number;
}

/** Per function being emitted, the case of the exponent of the call its loops being emitted run for. */
const versions = new WeakMap<FunctionEmitter, ExponentVersion>();

/**
 * The case of pow's exponent of the call that the loops `e` is emitting run for, read by the lanes
 * of its pow sites (emit-simd.ts); undefined outside such loops.
 */
export function exponentVersion(e: FunctionEmitter): ExponentVersion | undefined {
  return versions.get(e);
}

/**
 * The exponent of the call of a kernel's pow sites (in its body, not in helpers), or undefined: the
 * first site whose exponent is a value of the call and not a literal, with every site whose
 * exponent is written the same way. Values of the call: literals, scalar parameters passed as one
 * number or broadcast (the same element for every element of the call), and what arithmetic,
 * comparisons, casts and `Math` functions compute from those, through variables bound once
 * (`let`/`const` never assigned again) to such a value.
 */
export function callExponent(kernel: TypedKernel, layout: MemoryLayout): CallExponent | undefined {
  const ofCall = new Set<Variable>();
  kernel.params.forEach((p, i) => {
    if (!isArrayType(p.type) && (layout.inner[i] === 'scalar' || layout.inner[i] === 'broadcast')) ofCall.add(p);
  });
  const bound = boundOnce(kernel.body);
  const value = (x: Expr): Expr | undefined => {
    switch (x.kind) {
      case 'const': return typeof x.value === 'number' ? x : undefined;
      case 'var': {
        if (ofCall.has(x.variable)) return x;
        const init = bound.get(x.variable);
        return init && value(init);
      }
      case 'unary': case 'cast': case 'binary': case 'compare': case 'logical': case 'select': case 'math': {
        const children = childExprs(x).map(value);
        if (children.some((c) => c === undefined)) return undefined;
        return withChildren(x, children as Expr[]);
      }
      default: return undefined;
    }
  };
  let found: { value: Expr; key: string; at: string } | undefined;
  const sites = new Set<Expr>();
  forEachExpr(kernel.body, (x) => {
    if (x.kind !== 'math' || x.fn !== 'pow' || x.fastmath || x.args.length !== 2 || x.args[1]!.kind === 'const') return;
    const y = value(x.args[1]!);
    if (!y || (y.type !== 'float64' && y.type !== 'float32')) return;
    const key = JSON.stringify(y, (k, v) => (k === 'loc' ? undefined : k === 'variable' ? (v as Variable).id : v));
    found ??= { value: y, key, at: `${x.loc.line}:${x.loc.column}` };
    if (key === found.key) sites.add(x.args[1]!);
  });
  return found && { sites, value: found.value, at: found.at };
}

/** Variables declared once by `let` and never assigned again, with their initial values. */
function boundOnce(body: readonly Stmt[]): Map<Variable, Expr> {
  const lets = new Map<Variable, Expr>();
  const again = new Set<Variable>();
  forEachStmt(body, (s) => {
    if (s.kind === 'let') {
      if (lets.has(s.variable)) again.add(s.variable);
      else lets.set(s.variable, s.init);
    } else if (s.kind === 'assign') again.add(s.variable);
  });
  for (const v of again) lets.delete(v);
  return lets;
}

/** `x` with its children replaced (in childExprs' order), the same node where none changed. */
function withChildren(x: Expr, c: readonly Expr[]): Expr {
  if (childExprs(x).every((old, i) => old === c[i])) return x;
  switch (x.kind) {
    case 'unary': return { ...x, arg: c[0]! };
    case 'cast': return { ...x, value: c[0]! };
    case 'binary': case 'compare': case 'logical': return { ...x, left: c[0]!, right: c[1]! };
    case 'select': return { ...x, cond: c[0]!, then: c[1]!, otherwise: c[2]! };
    case 'math': return { ...x, args: c };
    default: return x;
  }
}

/**
 * Emits `loops` (the vector loops of a call) once per case of the exponent of the call, after the
 * scalar code that computes y and decides its case (pow.ts `exponentCase`), each case run where
 * y's falls in it; with no exponent of the call, `loops` once. `loadScalars` sets the scalar
 * parameters' locals as the scalar loop does (y's expression reads them); `elementsLeft` pushes
 * whether the call has elements: without any, y is not computed (a broadcast operand may then
 * have no element to read) and the loops of the other case run, for nothing.
 */
export function emitPerExponentCase(
  e: FunctionEmitter, exponent: CallExponent | undefined, loadScalars: () => void, elementsLeft: () => void, loops: () => void,
): void {
  if (!exponent) return loops();
  const y = e.local(ValType.f64);
  const lanes = e.local(ValType.v128);
  const [y1, y2] = [e.local(ValType.v128), e.local(ValType.v128)];
  const which = e.local(ValType.i32);
  elementsLeft();
  e.open('if');
  loadScalars();
  e.expr(exponent.value);
  if (exponent.value.type === 'float32') {
    const y32 = e.local(ValType.f32);
    e.tee(y32).simd(SimdOp.f32x4_splat).set(lanes);
    e.get(y32).op(Op.f64_promote_f32).set(y);
  } else e.tee(y).simd(SimdOp.f64x2_splat).set(lanes);
  exponentCase(e, y, y1, y2);
  e.set(which);
  e.close();
  const emit = (i: number): void => {
    if (i === EXPONENT_PARITIES.length) {
      versions.delete(e);
      return loops();
    }
    e.get(which).i32(i + 1).op(Op.i32_eq);
    e.open('if');
    versions.set(e, { exponent, known: { parity: EXPONENT_PARITIES[i]!, y1, y2 }, lanes });
    loops();
    e.else();
    emit(i + 1);
    e.close();
  };
  try {
    emit(0);
  } finally {
    versions.delete(e);
  }
}
