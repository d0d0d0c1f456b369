/**
 * Which float64 values of a kernel provably hold integers, so the gpu can keep them in i32.
 *
 * Every JS number is a double, so the IR types `let i = 0` as float64 even in a float32 kernel.
 * WGSL has no f64; computing such a loop counter in f32 would make `out[i]` a float index (a
 * conversion and a check per access) and would lose exactness past 2²⁴. A double that is only ever
 * assigned integers, sums and differences of integers is an integer on the cpu; on the gpu it is
 * the same integer in i32 as long as |value| < 2³¹ — the one documented difference.
 *
 * The rules (a value is *integral*):
 * - an integer literal with |v| < 2³¹ (not −0: i32 has no negative zero);
 * - a conversion to float64 of int32, int16, int8, uint16, uint8, uint8c or bool (not uint32: ≥ 2³¹);
 * - an integral variable: a float64 local (or helper parameter) whose every assignment (or
 *   argument) is integral — found by a fixpoint that starts from "all" and drops offenders;
 * - `a + b`, `a - b`, `-a`, `c ? a : b`, and `Math.abs/min/max/sign/floor/ceil/round/trunc` of
 *   integral values.
 * Not `*` (a running product such as `c *= i` leaves i32 at 13!), `/`, `%` or anything else.
 * A constant expression (`-2147483648 / -1`) counts as its value, folded when compiling
 * (constant-folding.ts). `-a` counts only where the sign of a zero cannot matter (below).
 *
 * Converted to an integer type (`(x + (-1 >>> 0)) | 0`, a store into an Int32Array) the value is
 * also used modulo 2³²: there integer constants up to 2³² and uint32 values count too, as their
 * low 32 bits, so the conversion is exact where f32 would round (`x + 4294967295` in f32 is
 * 4294967296 for every small x).
 *
 * In an index (`a[expr]`) the value is only used modulo 2³² (an index ≥ 2³¹ is out of bounds
 * anyway), so there `*` is integral too (i32 multiplication wraps, which is exact modulo 2³²),
 * and `%` is integral when its operands are integral by the rules above (a zero divisor, NaN on
 * the cpu, becomes an out-of-bounds index on the gpu).
 */
import type { Expr, HelperFunction, Stmt, TypedKernel, Variable } from '../ir.js';
import { isArrayType } from '../ir.js';
import { MATH } from '../math-functions.js';
import { constantValue } from '../constant-folding.js';
import { forEachExpr, forEachStmt } from '../ir-walk.js';

const INT_SOURCES = new Set(['int32', 'int16', 'int8', 'uint16', 'uint8', 'uint8c', 'bool']);

/**
 * Where an expression's value goes: a plain value, an array index (used modulo 2³²), or a
 * conversion to a 32-bit-or-smaller integer type (`x | 0`, `x >>> 0`, a store into an int array:
 * also used modulo 2³²).
 */
export type ValueContext = 'value' | 'index' | 'modular';

/** The result of the analysis for one kernel (with its helpers). */
export class IntegralDoubles {
  private readonly memo = { value: new WeakMap<Expr, boolean>(), index: new WeakMap<Expr, boolean>(), modular: new WeakMap<Expr, boolean>() };

  constructor(private readonly variables: ReadonlySet<Variable>) {}

  /** Whether a float64 variable is kept in i32. */
  hasVariable(v: Variable): boolean {
    return this.variables.has(v);
  }

  /**
   * Whether a float64 expression holds an integer, so it is computed in i32.
   *
   * @param e an expression of type float64 (other types return false)
   * @param context 'index' where the value is used as an array index
   */
  isIntegral(e: Expr, context: ValueContext): boolean {
    const memo = this.memo[context];
    let known = memo.get(e);
    if (known === undefined) {
      known = integral(e, context, this.variables);
      memo.set(e, known);
    }
    return known;
  }
}

function integral(e: Expr, context: ValueContext, vars: ReadonlySet<Variable>): boolean {
  if (e.type !== 'float64') return false;
  const sub = (x: Expr, c: ValueContext = context) => integral(x, c, vars);
  const constant = e.kind === 'const' ? (typeof e.value === 'number' ? e.value : undefined) : constantValue(e);
  if (constant !== undefined) {
    // Used modulo 2³², any integer constant is exact as its low 32 bits (`-1 >>> 0` is -1 in i32);
    // kept below 2³² so that sums of a few such terms stay exact doubles on the cpu.
    if (context === 'modular') return Number.isInteger(constant) && Math.abs(constant) < 2 ** 32;
    return Number.isInteger(constant) && Math.abs(constant) < 2 ** 31 && !Object.is(constant, -0);
  }
  switch (e.kind) {
    case 'var':
      return vars.has(e.variable);
    case 'cast':
      return INT_SOURCES.has(e.value.type) || (context === 'modular' && e.value.type === 'uint32') || sub(e.value);
    case 'unary':
      // `-i` is −0 on the cpu when i is 0, which i32 cannot hold: only where the sign of a zero
      // cannot matter (an index, a conversion to an integer type).
      return e.op === '-' && context !== 'value' && sub(e.arg);
    case 'binary':
      if (e.op === '+' || e.op === '-') return sub(e.left) && sub(e.right);
      if (e.op === '*') return context === 'index' && sub(e.left) && sub(e.right);
      if (e.op === '%') return context === 'index' && sub(e.left, 'value') && sub(e.right, 'value');
      return false;
    case 'select':
      return sub(e.then, 'value') && sub(e.otherwise, 'value');
    case 'math':
      return MATH[e.fn].integral && e.args.every((a) => sub(a, 'value'));
    default:
      return false;
  }
}

/**
 * Finds the integral doubles of a kernel and its helpers.
 *
 * @param kernel the typed kernel
 * @returns the analysis; ask it about variables and expressions
 * @example
 * const doubles = findIntegralDoubles(kernel);
 * doubles.hasVariable(loopCounter); // true for `for (let i = 0; i < n; i++)`
 */
export function findIntegralDoubles(kernel: TypedKernel): IntegralDoubles {
  const sources = new Map<Variable, Expr[]>();
  const addSource = (v: Variable, e: Expr) => {
    const list = sources.get(v);
    if (list) list.push(e);
  };
  const functions: { params: readonly Variable[]; body: readonly Stmt[]; locals: readonly Variable[]; isKernel: boolean }[] = [
    { ...kernel, isKernel: true },
    ...kernel.helpers.map((h: HelperFunction) => ({ ...h, isKernel: false })),
  ];
  for (const f of functions) {
    for (const v of f.locals) if (v.type === 'float64') sources.set(v, []);
    // A kernel's parameters come from buffers, never integral; a helper's come from its call sites.
    if (!f.isKernel) for (const p of f.params) if (!isArrayType(p.type) && p.type === 'float64') sources.set(p, []);
  }
  for (const f of functions) {
    forEachStmt(f.body, (s) => {
      if (s.kind === 'let') addSource(s.variable, s.init);
      else if (s.kind === 'assign') addSource(s.variable, s.value);
      else if (s.kind === 'draw') sources.delete(s.variable); // a uniform in [0, 1): never an integer
    });
    forEachExpr(f.body, (e) => {
      if (e.kind !== 'call') return;
      e.args.forEach((a, i) => {
        if (a.kind !== 'array-ref') addSource(e.helper.params[i]!, a);
      });
    });
  }
  const vars = new Set(sources.keys());
  for (let changed = true; changed; ) {
    changed = false;
    for (const v of vars) {
      if (!sources.get(v)!.every((e) => integral(e, 'value', vars))) {
        vars.delete(v);
        changed = true;
      }
    }
  }
  return new IntegralDoubles(vars);
}
