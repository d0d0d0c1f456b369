/**
 * Loop counters that the Wasm engine keeps in i32 without changing any result.
 *
 * Every JS number is a double, so the IR types `let i = 0` as float64. Computing such a counter
 * in f64 makes every `out[i]` a float index (a check that it is an integer, and a conversion).
 * Unlike the gpu backend (targets/gpu/integral-doubles.ts), which accepts a documented difference
 * past 2³¹, this engine must stay bit-identical, so it keeps in i32 only counters whose values are
 * provably integers in int32 range — the canonical loop
 *
 *     for (let i = start; i < end; i++) …
 *
 * where `start` is an integer constant with |start| ≤ 2³⁰ or an int32-family value, `end` is an
 * int32-family value (an int parameter, `.length`, a constant), the update is `i = i + 1`, and
 * nothing else assigns `i`. Then `start ≤ i ≤ max(start, end) < 2³¹` holds throughout, and
 * `i + 1` never overflows.
 */
import type { Expr, HelperFunction, Stmt, TypedKernel, Variable } from '../../../compiler/ir.js';

const INT32_FAMILY = new Set(['int32', 'int16', 'int8', 'uint16', 'uint8', 'uint8c', 'bool']);

/**
 * Whether a float64 expression is exactly an int32 value: an integer constant in int32 range, a
 * conversion from the int32 family, or a bounded counter.
 */
export function isInt32Exact(e: Expr, counters: ReadonlySet<Variable>): boolean {
  if (e.kind === 'const') return typeof e.value === 'number' && Number.isInteger(e.value) && Math.abs(e.value) < 2 ** 31 && !Object.is(e.value, -0);
  if (e.kind === 'cast') return e.type === 'float64' && INT32_FAMILY.has(e.value.type);
  if (e.kind === 'var') return counters.has(e.variable);
  return false;
}

/**
 * Whether a float64 index expression can be computed in i32 with the same bounds-check outcome
 * and value: int32-exact terms, or one such term plus or minus a constant below 2³⁰ (its true
 * value then lies within ±2³¹+2³⁰, and wrapping never maps an out-of-bounds value into bounds).
 */
export function isInt32Index(e: Expr, counters: ReadonlySet<Variable>): boolean {
  if (isInt32Exact(e, counters)) return true;
  if (e.kind !== 'binary' || (e.op !== '+' && e.op !== '-')) return false;
  const small = (x: Expr) => x.kind === 'const' && typeof x.value === 'number' && Number.isInteger(x.value) && Math.abs(x.value) < 2 ** 30;
  return (isInt32Exact(e.left, counters) && small(e.right)) || (e.op === '+' && small(e.left) && isInt32Exact(e.right, counters));
}

function walk(list: readonly Stmt[], visit: (s: Stmt) => void): void {
  for (const s of list) {
    visit(s);
    if (s.kind === 'if') {
      walk(s.then, visit);
      walk(s.otherwise, visit);
    } else if (s.kind === 'loop') {
      walk(s.init, visit);
      walk(s.body, visit);
      walk(s.update, visit);
    }
  }
}

/** The bounded loop counters of a kernel and its helpers. */
export function findLoopCounters(kernel: TypedKernel): Set<Variable> {
  const counters = new Set<Variable>();
  const bodies: (readonly Stmt[])[] = [kernel.body, ...kernel.helpers.map((h: HelperFunction) => h.body)];
  for (const body of bodies) {
    const writes = new Map<Variable, number>();
    walk(body, (s) => {
      if (s.kind === 'let' || s.kind === 'assign') writes.set(s.variable, (writes.get(s.variable) ?? 0) + 1);
    });
    walk(body, (s) => {
      if (s.kind !== 'loop' || !s.testFirst || s.init.length !== 1 || s.update.length !== 1 || !s.cond) return;
      const init = s.init[0]!;
      const update = s.update[0]!;
      if (init.kind !== 'let' || init.variable.type !== 'float64') return;
      const v = init.variable;
      if (writes.get(v) !== 2) return; // the `let` and the update, nothing else
      const start = init.init;
      const startOk =
        (start.kind === 'const' && typeof start.value === 'number' && Number.isInteger(start.value) && Math.abs(start.value) <= 2 ** 30 && !Object.is(start.value, -0)) ||
        (start.kind === 'cast' && start.type === 'float64' && INT32_FAMILY.has(start.value.type));
      const cond = s.cond;
      const condOk = cond.kind === 'compare' && cond.op === '<' && cond.left.kind === 'var' && cond.left.variable === v && isInt32Exact(cond.right, new Set());
      const u = update.kind === 'assign' && update.variable === v ? update.value : undefined;
      const updateOk =
        u !== undefined && u.kind === 'binary' && u.op === '+' && u.left.kind === 'var' && u.left.variable === v && u.right.kind === 'const' && u.right.value === 1;
      if (startOk && condOk && updateOk) counters.add(v);
    });
  }
  return counters;
}

/**
 * Whether a float64 index is `a % b` with `a` a sum or difference of int32-exact terms and `b`
 * int32-exact: such an index is computed exactly in i64 (`a` may exceed int32), and
 * the remainder of integers is what JS's `%` gives on them (the sign of zero aside, which an
 * index does not see). `b = 0` gives NaN in JS, an index out of bounds.
 */
export function isInt32ModIndex(e: Expr, counters: ReadonlySet<Variable>): boolean {
  return e.kind === 'binary' && e.op === '%' && isSmallSum(e.left, counters, 4) && isInt32Exact(e.right, counters);
}

/** Sums and differences of at most `depth` levels of int32-exact terms: exact in i64. */
function isSmallSum(e: Expr, counters: ReadonlySet<Variable>, depth: number): boolean {
  if (isInt32Exact(e, counters)) return true;
  return depth > 0 && e.kind === 'binary' && (e.op === '+' || e.op === '-') && isSmallSum(e.left, counters, depth - 1) && isSmallSum(e.right, counters, depth - 1);
}

/** A counter `for (let i = start; i < a.shape[axis]; i++)`: inside the loop, start ≤ i < that size. */
export interface CounterBound {
  readonly array: Variable;
  readonly axis: number;
  readonly start: number;
}

/**
 * The counters (of {@link findLoopCounters}) whose loop runs to a size of an array: an index
 * `a[i]` or `a[i - c]` (0 ≤ c ≤ start) on that axis of that very array is in bounds, so its
 * check can go (arrays never change size, and nothing but the update writes a counter).
 */
export function counterBounds(kernel: TypedKernel, counters: ReadonlySet<Variable>): Map<Variable, CounterBound> {
  const bounds = new Map<Variable, CounterBound>();
  for (const body of [kernel.body, ...kernel.helpers.map((h: HelperFunction) => h.body)]) {
    walk(body, (s) => {
      if (s.kind !== 'loop' || !s.cond || s.init[0]?.kind !== 'let') return;
      const v = s.init[0].variable;
      const start = s.init[0].init;
      if (!counters.has(v) || start.kind !== 'const' || typeof start.value !== 'number' || start.value < 0) return;
      const cond = s.cond;
      if (cond.kind !== 'compare' || cond.op !== '<') return;
      const size = cond.right.kind === 'cast' ? cond.right.value : cond.right;
      if (size.kind === 'dim') bounds.set(v, { array: size.array, axis: size.axis, start: start.value });
    });
  }
  return bounds;
}

/**
 * The layout's name of each core axis of the kernel's array parameters (from `CallPlan.coreNames`):
 * axes named alike have equal sizes in every call, checked before the kernel runs.
 */
export type CoreAxisNames = ReadonlyMap<Variable, readonly (string | undefined)[]>;

/** Whether axis `axisA` of `a` and `axisB` of `b` have the same size: the same axis, or the same name. */
export function sameSizedAxes(a: Variable, axisA: number, b: Variable, axisB: number, names: CoreAxisNames): boolean {
  if (a === b && axisA === axisB) return true;
  const nameA = names.get(a)?.[axisA];
  return nameA !== undefined && nameA === names.get(b)?.[axisB];
}

/**
 * Whether index `e` on `axis` of `array` is in bounds by {@link counterBounds}: the counter runs
 * to the size of this axis, or of an axis of another parameter that the layout names alike.
 */
export function isBoundedIndex(e: Expr, array: Variable, axis: number, bounds: ReadonlyMap<Variable, CounterBound>, names: CoreAxisNames = new Map()): boolean {
  const counter = e.kind === 'var' ? e.variable : e.kind === 'binary' && e.op === '-' && e.left.kind === 'var' ? e.left.variable : undefined;
  const b = counter && bounds.get(counter);
  if (!b || !sameSizedAxes(b.array, b.axis, array, axis, names)) return false;
  if (e.kind === 'var') return true;
  const c = (e as Extract<Expr, { kind: 'binary' }>).right;
  return c.kind === 'const' && typeof c.value === 'number' && Number.isInteger(c.value) && c.value >= 0 && c.value <= b.start;
}
