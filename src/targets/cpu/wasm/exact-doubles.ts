/**
 * Doubles that a per-row kernel holds exactly in 32 bits, so its rows fill 4 lanes instead of 2.
 *
 * Every JS number is a double, so the IR types `let s = 0` as float64 (the language's rule 1), and
 * one float64 value per row halves the rows per vector (emit-rows.ts). Many such locals only ever
 * hold an int32 or a float32: `let s = 0; s = (s + x[i]) | 0` (an int32 sum), `let m = -Infinity;
 * m = Math.max(m, x[i])` on float32 rows (a running maximum). Held as int32 or float32 values they
 * are the same numbers, so every result stays the JS engine's bit for bit. This engine must stay
 * bit-identical (unlike the gpu's integral-doubles.ts), so only exact rules count.
 *
 * A float64 local (a `let` of the kernel or a helper, not a loop counter) is *int32* when every
 * value assigned to it is:
 * - an integer literal in int32 range (not −0: int32 has none);
 * - a conversion to float64 of int32, int16, int8, uint16, uint8 or uint8c;
 * - a bounded loop counter (loop-counters.ts: an integer in int32 range);
 * - an int32 local; `c ? a : b`, `Math.min`, `Math.max` of such values;
 * - or the local itself plus or minus such a value (`s += x[i]`, `count++`), where the steps'
 *   bounds times their runs per row (loops running to a core size: at most `maxCore` trips in the
 *   vector loop) keep every sum within int32 (findNarrowLocals).
 * It is *float32* (where not int32) by the same rules with float32 for int32: literals that
 * `Math.fround` keeps (±Infinity and −0 included, NaN not), conversions from float32 and from
 * 8- and 16-bit integers (exact in 24 bits), float32 locals, selects, `Math.min/max/abs/floor/
 * ceil/trunc/round` and negation of such values (each gives a value float32 holds, the same in
 * float32 as in float64).
 *
 * Where such values meet, the operation runs in the narrow type where that is exact:
 * - a comparison of two int32 (or two float32) values compares them in that type;
 * - a conversion to a 32-bit-or-narrower integer type (`(s + x[i]) | 0`, a store into an
 *   Int16Array) of sums, differences and negations of int32 values computes in int32: the double is exact
 *   (< 2⁵³) and the conversion keeps it modulo 2³² (or 2^bits), as int32 addition wraps;
 * - a conversion of `c ? a : b` is `c ? conversion of a : conversion of b`; of an int32 (as a
 *   double) to an integer type (uint8c's clamp included) or to float32, the int32's own (the same
 *   value; one rounding either way);
 * - a conversion to float32 (`Math.fround` too) of `a op b` with float32 `a`, `b` and op one of + − × ÷ is the
 *   float32 operation: rounding the double result to float32 gives the correctly rounded float32
 *   result (53 ≥ 2·24 + 2: double rounding is innocuous for these operations, which is why
 *   asm.js's `fround(a + b)` is a float32 addition).
 * Everywhere else a narrowed local is read as the double it stands for (an exact conversion), and
 * what reads no narrowed local is left as it was.
 */
import type { DType } from '../../../dtypes.js';
import type { Expr, HelperFunction, MathFunction, Stmt, TypedKernel, Variable } from '../../../compiler/ir.js';
import { childExprs, forEachStmt } from '../../../compiler/ir-walk.js';
import { counterBounds, findLoopCounters } from './loop-counters.js';

type Narrow = 'int32' | 'float32';

const INT32_SOURCES = new Set<DType>(['int32', 'int16', 'int8', 'uint16', 'uint8', 'uint8c']);
const FLOAT32_SOURCES = new Set<DType>(['float32', 'int16', 'int8', 'uint16', 'uint8', 'uint8c']);
/** Integer conversions that keep a value modulo 2^bits (uint8c clamps and bool compares: not these). */
const MODULAR_TARGETS = new Set<DType>(['int32', 'uint32', 'int16', 'uint16', 'int8', 'uint8']);
/** Integer types a conversion of an int32 reaches directly (uint8c clamps it, as it clamps the double). */
const INT_TARGETS = new Set<DType>([...MODULAR_TARGETS, 'uint8c']);
/** Math functions of float32 values whose result float32 holds, equal to the float64 one. */
const FLOAT32_CLOSED = new Set<MathFunction>(['min', 'max', 'abs', 'floor', 'ceil', 'trunc', 'round']);
const INT32_CLOSED = new Set<MathFunction>(['min', 'max']);
/** Levels of `+`/`−` computed in int32 under a modular conversion (|sum| < 2³¹⁺⁸, exact in a double). */
const MODULAR_DEPTH = 8;

/**
 * What {@link narrow} knows of float64 variables: the bounded loop counters (integers in int32
 * range, loop-counters.ts), and during the analysis which locals are taken to hold the narrow type
 * (after rewriting, reads of narrowed locals are conversions from them).
 */
interface Known {
  readonly counters: ReadonlySet<Variable>;
  readonly local?: (v: Variable) => boolean;
}

/**
 * `e` (a float64 expression) as an expression of type `to` with the same value, or undefined
 * where the rules (file comment) do not show that it has one.
 */
function narrow(e: Expr, to: Narrow, known: Known): Expr | undefined {
  if (e.type !== 'float64') return undefined;
  switch (e.kind) {
    case 'const': {
      const v = e.value;
      if (typeof v !== 'number') return undefined;
      const exact = to === 'int32' ? Number.isInteger(v) && v >= -(2 ** 31) && v < 2 ** 31 && !Object.is(v, -0) : !Number.isNaN(v) && Object.is(Math.fround(v), v);
      return exact ? { ...e, type: to } : undefined;
    }
    case 'cast': {
      const from = e.value.type;
      if (from === to) return e.value;
      return (to === 'int32' ? INT32_SOURCES : FLOAT32_SOURCES).has(from) ? { ...e, type: to } : undefined;
    }
    case 'var':
      if (to === 'int32' && known.counters.has(e.variable)) return { ...e, kind: 'cast', type: 'int32', value: e };
      return known.local?.(e.variable) ? e : undefined;
    case 'select': {
      const then = narrow(e.then, to, known);
      const otherwise = then && narrow(e.otherwise, to, known);
      return otherwise ? { ...e, type: to, then: then!, otherwise } : undefined;
    }
    case 'math': {
      // (`Math.max()` with no argument is −Infinity, no int32.)
      if (!(to === 'int32' ? INT32_CLOSED : FLOAT32_CLOSED).has(e.fn) || e.args.length === 0) return undefined;
      const args = e.args.map((a) => narrow(a, to, known));
      return args.every((a) => a) ? { ...e, type: to, args: args as Expr[] } : undefined;
    }
    case 'unary': {
      if (to !== 'float32' || e.op !== '-') return undefined;
      const arg = narrow(e.arg, to, known);
      return arg ? { ...e, type: to, arg } : undefined;
    }
    default:
      return undefined;
  }
}

/** A float64 sum, difference or negation of int32 values (up to `depth` levels) as an int32 expression equal modulo 2³². */
function modularInt32(e: Expr, depth: number, known: Known): Expr | undefined {
  const exact = narrow(e, 'int32', known);
  if (exact || depth === 0) return exact;
  if (e.kind === 'unary' && e.op === '-') {
    // −0 (of 0) converts to 0, as int32 negation gives.
    const arg = modularInt32(e.arg, depth - 1, known);
    return arg ? { ...e, type: 'int32', arg } : undefined;
  }
  if (e.kind !== 'binary' || (e.op !== '+' && e.op !== '-')) return undefined;
  const left = modularInt32(e.left, depth - 1, known);
  const right = left && modularInt32(e.right, depth - 1, known);
  return right ? { ...e, type: 'int32', left: left!, right } : undefined;
}

/** An assignment of a local: the value, and how many times at most it runs per row. */
interface Assignment {
  readonly value: Expr;
  readonly runs: number;
}

/**
 * Every assignment (and `let`) of a float64 local, with a bound on its runs per row: the product
 * of its loops' trip counts where each is a counter running to a core size of an array operand
 * (at most `maxCore` in the vector loop, which checks every operand's core sizes against its
 * scratch first), else unbounded. Statements in helpers count as unbounded.
 */
function assignmentsOf(kernel: TypedKernel, counters: ReadonlySet<Variable>, maxCore: number): { values: Map<Variable, Assignment[]>; refused: Set<Variable> } {
  const values = new Map<Variable, Assignment[]>();
  const refused = new Set<Variable>();
  const bounds = counterBounds(kernel, counters);
  const add = (v: Variable, value: Expr, runs: number) => values.set(v, [...(values.get(v) ?? []), { value, runs }]);
  const walk = (list: readonly Stmt[], runs: number): void => {
    for (const s of list) {
      if (s.kind === 'let' && s.variable.type === 'float64' && !counters.has(s.variable)) add(s.variable, s.init, runs);
      else if (s.kind === 'assign') add(s.variable, s.value, runs);
      else if (s.kind === 'draw') refused.add(s.variable);
      else if (s.kind === 'if') {
        walk(s.then, runs);
        walk(s.otherwise, runs);
      } else if (s.kind === 'loop') {
        const counter = s.init[0]?.kind === 'let' ? bounds.get(s.init[0].variable) : undefined;
        const trips = counter && kernel.params.includes(counter.array) ? maxCore : Infinity;
        walk(s.init, runs);
        walk(s.body, runs * trips);
        walk(s.update, runs * trips);
      }
    }
  };
  walk(kernel.body, 1);
  for (const h of kernel.helpers) walk(h.body, Infinity);
  return { values, refused };
}

/** A bound on |value| of an int32-exact double (narrow's rules): 2³¹ where nothing smaller is known. */
function magnitude(e: Expr): number {
  const ranges: Partial<Record<DType, number>> = { int8: 128, uint8: 255, uint8c: 255, int16: 32768, uint16: 65535 };
  if (e.kind === 'const') return Math.abs(e.value as number);
  if (e.kind === 'cast') return ranges[e.value.type] ?? 2 ** 31;
  if (e.kind === 'select') return Math.max(magnitude(e.then), magnitude(e.otherwise));
  if (e.kind === 'math') return Math.max(...e.args.map(magnitude));
  return 2 ** 31;
}

/** The step `e` of an assignment `v = v ± e`, `v = e + v` or `v = e − v`, or undefined. */
function stepOf(value: Expr, v: Variable): Expr | undefined {
  if (value.kind !== 'binary' || (value.op !== '+' && value.op !== '-')) return undefined;
  const isV = (x: Expr) => x.kind === 'var' && x.variable === v;
  return isV(value.left) ? value.right : isV(value.right) ? value.left : undefined;
}

/**
 * The float64 locals of a kernel that hold only int32 or only float32 values: a fixpoint that
 * starts from every candidate and drops those assigned anything else. A local is int32 also where
 * it is stepped (`s += x[i]`, `count++`) by int32 values whose bound, times the step's runs per
 * row, plus its other values' bound, stays below 2³¹: then no sum leaves int32, and int32 addition
 * is the double's.
 */
function findNarrowLocals(kernel: TypedKernel, counters: ReadonlySet<Variable>, maxCore: number): Map<Variable, Narrow> {
  const { values, refused } = assignmentsOf(kernel, counters, maxCore);
  // Assigned without a `let` of their own here: parameters (of helpers too), counters.
  const candidates = [...values.keys()].filter((v) => v.type === 'float64' && !refused.has(v) && !counters.has(v) && !kernel.params.includes(v) && !kernel.helpers.some((h) => h.params.includes(v)));
  const narrowed = new Map<Variable, Narrow>();
  const holds = (v: Variable, to: Narrow, known: Known): boolean => {
    let reset = 0;
    let stepped = 0;
    for (const { value, runs } of values.get(v)!) {
      if (narrow(value, to, known)) reset = Math.max(reset, magnitude(value));
      else {
        const step = to === 'int32' ? stepOf(value, v) : undefined;
        if (!step || !narrow(step, to, known)) return false;
        stepped += runs * magnitude(step);
      }
    }
    return stepped === 0 || reset + stepped < 2 ** 31;
  };
  for (const to of ['int32', 'float32'] as const) {
    const held = new Set(candidates.filter((v) => !narrowed.has(v)));
    for (let size = -1; size !== held.size;) {
      size = held.size;
      for (const v of held) if (!holds(v, to, { counters, local: (w) => held.has(w) })) held.delete(v);
    }
    for (const v of held) narrowed.set(v, to);
  }
  return narrowed;
}

/**
 * The kernel with its float64 locals that hold only int32 or float32 values (file comment) held
 * in those types, and the operations where they meet computed there; the very kernel where it has
 * none.
 */
export function narrowExactDoubles(kernel: TypedKernel, maxCore: number): TypedKernel {
  const known: Known = { counters: findLoopCounters(kernel) };
  const kinds = findNarrowLocals(kernel, known.counters, maxCore);
  if (kinds.size === 0) return kernel;
  const renamed = new Map<Variable, Variable>([...kinds].map(([v, t]) => [v, { ...v, type: t }]));
  const helpers = new Map<HelperFunction, HelperFunction>();
  const narrowedLocals = new Set(renamed.values());
  /**
   * Whether a rewritten expression reads a narrowed local: only there do comparisons and
   * conversions change (others, a loop's `i < n` say, stay as loop-counters.ts recognises them).
   */
  const readsNarrowed = (e: Expr): boolean => (e.kind === 'var' && narrowedLocals.has(e.variable)) || childExprs(e).some(readsNarrowed);

  const expr = (e: Expr): Expr => {
    switch (e.kind) {
      case 'var': {
        const v = renamed.get(e.variable);
        return v ? { ...e, kind: 'cast', type: 'float64', value: { ...e, type: v.type as DType, variable: v } } : e;
      }
      case 'unary': return { ...e, arg: expr(e.arg) };
      case 'binary': case 'logical': return { ...e, left: expr(e.left), right: expr(e.right) };
      case 'select': return { ...e, cond: expr(e.cond), then: expr(e.then), otherwise: expr(e.otherwise) };
      case 'math': {
        const args = e.args.map(expr);
        if (e.fn === 'fround' && args[0]!.type === 'float64') {
          // `Math.fround(x)` is x's conversion to float32 (`s = Math.fround(s + x[i])`).
          const converted = conversion({ kind: 'cast', type: 'float32', value: args[0]!, loc: e.loc }, args[0]!);
          if (!(converted.kind === 'cast' && converted.value === args[0])) return converted;
        }
        return { ...e, args };
      }
      case 'index': return { ...e, indices: e.indices.map(expr) };
      case 'call': return { ...e, helper: helpers.get(e.helper) ?? e.helper, args: e.args.map((a) => (a.kind === 'array-ref' ? a : expr(a))) };
      case 'compare': {
        const left = expr(e.left);
        const right = expr(e.right);
        if (e.operandType === 'float64' && (readsNarrowed(left) || readsNarrowed(right))) {
          for (const to of ['int32', 'float32'] as const) {
            const l = narrow(left, to, known);
            const r = l && narrow(right, to, known);
            if (r) return { ...e, operandType: to, left: l!, right: r };
          }
        }
        return { ...e, left, right };
      }
      case 'cast': return conversion(e, expr(e.value));
      default: return e;
    }
  };
  /** A conversion from float64, computed in int32 or float32 where that is exact (file comment). */
  const conversion = (e: Extract<Expr, { kind: 'cast' }>, value: Expr, inSelect = false): Expr => {
    // A select's branches all convert: one left a double would keep the select in float64 lanes.
    if (value.type !== 'float64' || !(inSelect || readsNarrowed(value))) return { ...e, value };
    // An int32 as a double converts as the int32 does (to float32: one rounding either way).
    if (value.kind === 'cast' && value.value.type === 'int32' && (INT_TARGETS.has(e.type) || e.type === 'float32')) return e.type === 'int32' ? value.value : { ...e, value: value.value };
    if (MODULAR_TARGETS.has(e.type)) {
      const m = modularInt32(value, MODULAR_DEPTH, known);
      if (m) return e.type === 'int32' ? m : { ...e, value: m };
    }
    if (value.kind === 'select') {
      const branch = (x: Expr) => conversion({ ...e, value: x }, x, true);
      return { ...value, type: e.type, then: branch(value.then), otherwise: branch(value.otherwise) };
    }
    if (e.type === 'float32') {
      const exact = narrow(value, 'float32', known);
      if (exact) return exact;
      if (value.kind === 'binary' && ['+', '-', '*', '/'].includes(value.op)) {
        const left = narrow(value.left, 'float32', known);
        const right = left && narrow(value.right, 'float32', known);
        if (right) return { ...value, type: 'float32', left: left!, right };
      }
    }
    return { ...e, value };
  };
  /** `v ± e` of an int32 local stepped within int32 (findNarrowLocals), as an int32 operation. */
  const steppedInt32 = (value: Expr): Expr | undefined => {
    if (value.kind !== 'binary' || (value.op !== '+' && value.op !== '-')) return undefined;
    const left = narrow(value.left, 'int32', known);
    const right = left && narrow(value.right, 'int32', known);
    return right ? { ...value, type: 'int32', left: left!, right } : undefined;
  };
  const assigned = (v: Variable, value: Expr): [Variable, Expr] => {
    const r = renamed.get(v);
    const rewritten = expr(value);
    if (!r) return [v, rewritten];
    const held = narrow(rewritten, r.type as Narrow, known) ?? steppedInt32(rewritten);
    if (!held) throw new Error(`internal: \`${v.name}\` holds ${r.type} values by findNarrowLocals, but an assignment does not narrow`);
    return [r, held];
  };
  const stmt = (s: Stmt): Stmt => {
    switch (s.kind) {
      case 'let': { const [variable, init] = assigned(s.variable, s.init); return { ...s, variable, init }; }
      case 'assign': { const [variable, value] = assigned(s.variable, s.value); return { ...s, variable, value }; }
      case 'store': return { ...s, indices: s.indices.map(expr), value: expr(s.value) };
      case 'if': return { ...s, cond: expr(s.cond), then: s.then.map(stmt), otherwise: s.otherwise.map(stmt) };
      case 'loop': return { ...s, init: s.init.map(stmt), cond: s.cond && expr(s.cond), update: s.update.map(stmt), body: s.body.map(stmt) };
      case 'return': return { ...s, value: s.value && expr(s.value) };
      case 'call': return { ...s, call: expr(s.call) as Extract<Expr, { kind: 'call' }> };
      default: return s;
    }
  };
  // Helpers come callees first (as lowering lists them), so a call finds its rewritten helper.
  for (const h of kernel.helpers) helpers.set(h, { ...h, body: h.body.map(stmt) });
  return { ...kernel, body: kernel.body.map(stmt), helpers: kernel.helpers.map((h) => helpers.get(h)!) };
}

/** The locals `narrowed` (narrowExactDoubles's result for `kernel`) holds in 32 bits, in words: "`s` as int32, `m` as float32". */
export function describeNarrowedLocals(kernel: TypedKernel, narrowed: TypedKernel): string {
  const types = (k: TypedKernel) => {
    const found = new Map<number, Variable>();
    for (const body of [k.body, ...k.helpers.map((h: HelperFunction) => h.body)]) forEachStmt(body, (s) => s.kind === 'let' && found.set(s.variable.id, s.variable));
    return found;
  };
  const before = types(kernel);
  return [...types(narrowed).values()].filter((v) => before.get(v.id)?.type !== v.type).map((v) => `\`${v.name}\` as ${v.type}`).join(', ');
}
