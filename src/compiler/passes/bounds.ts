/**
 * Bounds-check elimination, as an analysis: which array accesses are in bounds by construction, so
 * that a backend that checks indices at run time may leave their checks out.
 *
 * An index is in bounds, for the dimension it indexes, when it is
 * - a non-negative integer constant below that dimension, the dimension being known when compiling
 *   (a constant, a local array's length, or a length the backend knows, such as a gpu tile's);
 * - `i`, `i + c` or `i - c` for the counter `i` of an enclosing `for (let i = k; i < bound; i++)`
 *   whose body assigns `i` nowhere, when `k ± c ≥ 0` and `bound ± c` is at most the dimension:
 *   `bound` is this very dimension (same array, same axis; then `c` may only be subtracted) or
 *   both are known numbers;
 * - `a % m` (a cyclic index: `x[(i + 1) % n]`, `x[(i + n - 2) % n]`) when `a` is provably
 *   non-negative (counters from their lower bound, dimensions, non-negative constants, their sums,
 *   minus constants) and `m` is that dimension, or a known number from 1 up to it; an unknown
 *   dimension `m` counts only inside a loop whose counter it bounds (so that it is at least 1
 *   there: `a % 0` is NaN).
 * A bound or a dimension may be written through conversions and through locals declared once and
 * never assigned (`const n = a.length`). Anything else is not proved, and keeps its check.
 */
import type { Expr, Stmt, Variable } from '../ir.js';
import { childExprs, directExprs, forEachStmt } from '../ir-walk.js';

/** An array access: a read `a[i, …]` or a store `a[i, …] = v`. */
export type ArrayAccessNode = Extract<Expr, { kind: 'index' }> | Extract<Stmt, { kind: 'store' }>;

/** A dimension as far as it is known: a number, or axis `axis` of `array` (size known at run time). */
type Dimension = number | { readonly array: Variable; readonly axis: number };

/** What the analysis knows of a loop counter inside its loop's body: `lower ≤ i < bound`. */
interface CounterRange {
  readonly variable: Variable;
  readonly lower: number;
  readonly bound: Dimension;
}

export interface BoundsOptions {
  /**
   * Lengths the backend knows when compiling beyond the IR's own (local arrays): e.g. the gpu's
   * staging tiles, or a helper's array parameter specialised for a local array. Undefined: unknown.
   */
  readonly knownLength?: (array: Variable, axis: number) => number | undefined;
}

/** The accesses of one function body whose every index is in bounds by construction. */
export class InBoundsAccesses {
  constructor(private readonly proved: ReadonlySet<ArrayAccessNode>) {}

  /** Whether every index of this access is in bounds wherever the access occurs in the body. */
  has(access: ArrayAccessNode): boolean {
    return this.proved.has(access);
  }

  /** How many accesses were proved. */
  get size(): number {
    return this.proved.size;
  }
}

/**
 * Finds the accesses of a function body (a kernel's or a helper's) that cannot be out of bounds.
 *
 * @param body - the typed statements of one function
 * @param options - lengths the backend knows when compiling
 * @returns the proved accesses (an access node met twice counts only if proved both times)
 * @example
 * const safe = findInBoundsAccesses(kernel.body);
 * if (!safe.has(store)) emitCheck(store);
 */
export function findInBoundsAccesses(body: readonly Stmt[], options: BoundsOptions = {}): InBoundsAccesses {
  const localLengths = new Map<Variable, number>();
  const assigned = new Set<Variable>();
  forEachStmt(body, (s) => {
    if (s.kind === 'local-array') localLengths.set(s.variable, s.length);
    if (s.kind === 'assign') assigned.add(s.variable);
  });
  // Locals declared once and never assigned: their value is their initial value everywhere.
  const unchanging = new Map<Variable, Expr>();
  forEachStmt(body, (s) => {
    if (s.kind === 'let' && !assigned.has(s.variable)) unchanging.set(s.variable, s.init);
  });

  const lengthOf = (array: Variable, axis: number): number | undefined =>
    options.knownLength?.(array, axis) ?? (axis === 0 ? localLengths.get(array) : undefined);

  const dimensionOf = (e: Expr, seen = new Set<Variable>()): Dimension | undefined => {
    const k = nonNegativeInteger(e);
    if (k !== undefined) return k;
    if (e.kind === 'cast') return dimensionOf(e.value, seen);
    if (e.kind === 'dim') return lengthOf(e.array, e.axis) ?? { array: e.array, axis: e.axis };
    if (e.kind === 'var' && !seen.has(e.variable)) {
      const init = unchanging.get(e.variable);
      return init ? dimensionOf(init, new Set(seen).add(e.variable)) : undefined;
    }
    return undefined;
  };

  const counterRange = (s: Extract<Stmt, { kind: 'loop' }>): CounterRange | undefined => {
    const [init] = s.init;
    const [update] = s.update;
    if (!s.testFirst || s.init.length !== 1 || s.update.length !== 1 || !init || !update || !s.cond) return undefined;
    const variable = init.kind === 'let' || init.kind === 'assign' ? init.variable : undefined;
    const start = init.kind === 'let' ? init.init : init.kind === 'assign' ? init.value : undefined;
    if (!variable || !start || start.kind !== 'const' || typeof start.value !== 'number' || !Number.isInteger(start.value)) return undefined;
    // A narrower integer counter could wrap around below its bound (`i + 1` stored into a uint8).
    if (!WIDE_COUNTER_TYPES.has(variable.type as string)) return undefined;
    const cond = s.cond;
    if (cond.kind !== 'compare' || cond.op !== '<' || !isVariable(cond.left, variable)) return undefined;
    const bound = dimensionOf(cond.right);
    if (bound === undefined) return undefined;
    const step = update.kind === 'assign' && update.variable === variable ? update.value : undefined;
    if (!step || step.kind !== 'binary' || step.op !== '+' || !isVariable(step.left, variable) || step.right.kind !== 'const' || step.right.value !== 1) return undefined;
    let reassigned = false;
    forEachStmt(s.body, (t) => {
      if ((t.kind === 'assign' || t.kind === 'let') && t.variable === variable) reassigned = true;
    });
    return reassigned ? undefined : { variable, lower: start.value, bound };
  };

  /** A lower bound of an integer-valued expression, where one is evident; undefined otherwise. */
  const lowerBound = (e: Expr, counters: readonly CounterRange[], seen = new Set<Variable>()): number | undefined => {
    if (e.kind === 'const') return typeof e.value === 'number' && Number.isInteger(e.value) ? e.value : undefined;
    if (e.kind === 'cast') {
      // A conversion keeps a non-negative integer below 2³¹ (indices are); a negative one may wrap.
      const inner = lowerBound(e.value, counters, seen);
      return inner !== undefined && inner >= 0 ? inner : undefined;
    }
    if (e.kind === 'dim') {
      const d = dimensionOf(e);
      return typeof d === 'number' ? d : 0;
    }
    if (e.kind === 'var') {
      const range = [...counters].reverse().find((r) => r.variable === e.variable);
      if (range) return range.lower;
      const init = seen.has(e.variable) ? undefined : unchanging.get(e.variable);
      return init ? lowerBound(init, counters, new Set(seen).add(e.variable)) : undefined;
    }
    if (e.kind === 'binary' && (e.op === '+' || e.op === '-')) {
      const l = lowerBound(e.left, counters, seen);
      if (l === undefined) return undefined;
      if (e.op === '-') return e.right.kind === 'const' && typeof e.right.value === 'number' && Number.isInteger(e.right.value) ? l - e.right.value : undefined;
      const r = lowerBound(e.right, counters, seen);
      return r === undefined ? undefined : l + r;
    }
    return undefined;
  };

  /** `a % m` with a ≥ 0 is in [0, m): in bounds when m is at least 1 and at most the dimension. */
  const cyclicInBounds = (index: Expr, dim: Dimension, counters: readonly CounterRange[]): boolean => {
    let e = index;
    while (e.kind === 'cast') e = e.value;
    if (e.kind !== 'binary' || e.op !== '%') return false;
    const low = lowerBound(e.left, counters);
    if (low === undefined || low < 0) return false;
    const m = dimensionOf(e.right);
    if (m === undefined) return false;
    if (typeof m === 'number') return m >= 1 && typeof dim === 'number' && m <= dim;
    return sameDimension(m, dim) && counters.some((r) => sameDimension(r.bound, m));
  };

  const inBounds = (index: Expr, dim: Dimension | undefined, counters: readonly CounterRange[]): boolean => {
    if (dim === undefined) return false;
    if (cyclicInBounds(index, dim, counters)) return true;
    const k = nonNegativeInteger(index);
    if (k !== undefined) return typeof dim === 'number' && k < dim;
    let variable: Expr = index;
    let offset = 0;
    if (index.kind === 'binary' && (index.op === '+' || index.op === '-') && index.right.kind === 'const' && typeof index.right.value === 'number' && Number.isInteger(index.right.value)) {
      variable = index.left;
      offset = index.op === '+' ? index.right.value : -index.right.value;
    }
    if (variable.kind !== 'var') return false;
    const counter = variable.variable;
    const range = [...counters].reverse().find((r) => r.variable === counter);
    if (!range || range.lower + offset < 0) return false;
    // i + offset < bound + offset ≤ dim
    if (offset <= 0 && sameDimension(range.bound, dim)) return true;
    return typeof range.bound === 'number' && typeof dim === 'number' && range.bound + offset <= dim;
  };

  const proved = new Set<ArrayAccessNode>();
  const refuted = new Set<ArrayAccessNode>();
  const judge = (access: ArrayAccessNode, counters: readonly CounterRange[]) => {
    const ok = access.indices.every((index, axis) => inBounds(index, lengthOf(access.array, axis) ?? { array: access.array, axis }, counters));
    (ok ? proved : refuted).add(access);
  };
  const visitExpr = (e: Expr, counters: readonly CounterRange[]): void => {
    if (e.kind === 'index') judge(e, counters);
    for (const child of childExprs(e)) visitExpr(child, counters);
  };
  const visit = (list: readonly Stmt[], counters: readonly CounterRange[]): void => {
    for (const s of list) {
      if (s.kind === 'store') judge(s, counters);
      if (s.kind === 'if') {
        visitExpr(s.cond, counters);
        visit(s.then, counters);
        visit(s.otherwise, counters);
      } else if (s.kind === 'loop') {
        // init, test and update run outside the counter's range; only the body is inside it.
        visit(s.init, counters);
        if (s.cond) visitExpr(s.cond, counters);
        visit(s.update, counters);
        const range = counterRange(s);
        visit(s.body, range ? [...counters, range] : counters);
      } else {
        for (const e of directExprs(s)) visitExpr(e, counters);
      }
    }
  };
  visit(body, []);
  for (const access of refuted) proved.delete(access);
  return new InBoundsAccesses(proved);
}

/** Counter types in which `i + 1` cannot wrap while `i` is below a dimension (< 2³¹). */
const WIDE_COUNTER_TYPES: ReadonlySet<string> = new Set(['float64', 'float32', 'int32', 'uint32']);

/**
 * The value of a literal that is a non-negative integer below 2³¹ (exact in every index type).
 * Only literals: constant propagation has already folded what it can into them.
 */
function nonNegativeInteger(e: Expr): number | undefined {
  return e.kind === 'const' && typeof e.value === 'number' && Number.isInteger(e.value) && e.value >= 0 && e.value < 2 ** 31 ? e.value : undefined;
}

function sameDimension(a: Dimension, b: Dimension): boolean {
  if (typeof a === 'number' || typeof b === 'number') return a === b;
  return a.array === b.array && a.axis === b.axis;
}

function isVariable(e: Expr, v: Variable): boolean {
  return e.kind === 'var' && e.variable === v;
}
