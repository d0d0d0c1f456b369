/**
 * Per-row kernels over 8- and 16-bit integers in lanes of their own width: 8 rows per vector in
 * 16-bit lanes (i16x8), 16 rows in 8-bit lanes (i8x16), instead of 4 in 32-bit lanes — where that
 * gives the JS engine's results bit for bit. Which kernels qualify, and how (emit-row-int-lanes.ts
 * emits them; emit-rows.ts copies rows in and out).
 *
 * The language computes small integers as int32 (rule 4). A lane of W bits holds the low W bits of
 * such a value; that is the value itself where it lies in [−2^(W−1), 2^(W−1)) (read as signed) or
 * in [0, 2^W) (read as unsigned) — *exact* — and otherwise the value modulo 2^W only — *modular*.
 * An interval analysis over the rows' values (a fixpoint over the kernel's loops, each local's
 * interval widened to "any int32" where it still grows after {@link WIDEN_AFTER} passes: `s += x[i]`,
 * `count++`) sorts every per-row value into one or the other, and the kernel qualifies when every
 * operation gives in W-bit lanes what it gives in int32:
 * - `+ − ×` (and `Math.imul`), `& | ^`, `<<` by a constant below W, negation and `~` keep the
 *   low W bits of their result from the low W bits of their operands (they commute with taking
 *   a value modulo 2^W, and int32's own wrap modulo 2³² keeps that), so modular operands are fine;
 *   8-bit lanes have no multiply;
 * - a conversion to int16 or uint16 (in 16-bit lanes) or to int8 or uint8 keeps the low bits too —
 *   so does a typed array's store, which converts (`out[0] = s` of an int16 row sum wraps exactly
 *   as the lanes do): the result is exact again, of the target's range;
 * - comparisons, `Math.min`/`max`/`abs`, `>>`/`>>>`, a conversion to bool or to uint8c (a clamp)
 *   need exact operands, read the same way (both signed or both unsigned: a uint8 value and an
 *   int16 one compare in signed 16-bit lanes, two uint16 values unsigned) — except the
 *   saturating idiom: `Math.min(Math.max(a + b, −32768), 32767)`, or `a + b` stored into uint8c,
 *   of exact `a` and `b` adds with saturation where the clamp gives the same for the saturated sum;
 * - floats, uint32, division and `%`, other `Math` functions, and stores into arrays wider than
 *   the lanes (int32, float) do not run here: the kernel keeps 32-bit lanes.
 * Uniform values (emit-rows.ts: computed once per block by scalar code, in int32) enter the lanes
 * as their low W bits; a loop counter running to a core size lies in [start, maxCore] inside the
 * vector loop, which checks every core size against its scratch first.
 *
 * 8-bit lanes are tried where every array and per-row scalar is 8-bit; else 16-bit lanes, which
 * hold 8-bit elements widened (sign- or zero-extended) and store their low byte back.
 */
import { type DType, DTYPES } from '../../../dtypes.js';
import type { Expr, HelperFunction, Stmt, TypedKernel, Variable } from '../../../compiler/ir.js';
import { isArrayType } from '../../../compiler/ir.js';
import { counterBounds, findLoopCounters } from './loop-counters.js';
import { integralSource } from './int-lanes.js';

/** How a per-row kernel runs in narrow integer lanes. */
export interface RowIntLanes {
  readonly bits: 16 | 8;
  /**
   * Comparisons, `Math.min`/`max`/`abs`, right shifts and conversions to uint8c whose operands
   * the lanes hold as unsigned values (the others as signed).
   */
  readonly unsigned: ReadonlySet<Expr>;
  /**
   * Additions and subtractions computed with saturation (read signed or unsigned as `unsigned`
   * says): their sums may leave the lanes, but only `Math.min`/`max` with constants or uint8c's
   * clamp read them, which give the same for the saturated sum.
   */
  readonly saturated: ReadonlySet<Expr>;
  /** Whether some per-row value may leave the lanes (held modulo 2^bits), and the locals that may. */
  readonly wrapped: boolean;
  readonly wrappedLocals: readonly string[];
}

/** How a plan's rows use narrow lanes, in words, for `explain`: "in 16-bit lanes (…)". */
export function describeIntLanes(int: RowIntLanes): string {
  const bits = int.bits;
  const locals = int.wrappedLocals.map((n) => `\`${n}\``).join(', ');
  const wrapped = int.wrapped ? `; values that may leave them${locals ? ` (${locals})` : ''} are only added, multiplied, or stored into ${bits === 16 ? '8- or 16-bit' : '8-bit'} arrays, which keep their low bits` : '';
  const saturated = int.saturated.size ? '; sums only clamped add with saturation' : '';
  return `in ${bits}-bit lanes (per-row values fit ${bits} bits${wrapped}${saturated})`;
}

/** Inclusive bounds of an int32 value; {@link ANY}: nothing known beyond int32. */
type Range = readonly [number, number];
const ANY: Range = [-(2 ** 31), 2 ** 31 - 1];

const TYPE_RANGE: Partial<Record<DType, Range>> = {
  int8: [-128, 127], uint8: [0, 255], uint8c: [0, 255], int16: [-32768, 32767], uint16: [0, 65535], bool: [0, 1], int32: ANY,
  // `>>>` gives uint32, and uint32 arithmetic wraps modulo 2³² as int32's does (typing-rules.ts):
  // the same bits. Its intervals are true values where they are ≥ 0 (else any: it wrapped).
  uint32: ANY,
};
const NARROW = new Set<DType>(['int8', 'uint8', 'uint8c', 'int16', 'uint16']);

/** Fixpoint passes before a local whose interval still grows is bounded by its steps (or any int32). */
const WIDEN_AFTER = 3;
/** Passes after which every local still growing holds any int32 (bounds that feed each other). */
const MAX_PASSES = 12;

/** The step `e` of an assignment `v = v ± e`, `v = e + v` or `v = e − v` (|v| grows by at most |e|), or undefined. */
function stepOf(value: Expr, v: Variable): Expr | undefined {
  if (value.kind !== 'binary' || (value.op !== '+' && value.op !== '-')) return undefined;
  const isV = (x: Expr) => x.kind === 'var' && x.variable === v;
  return isV(value.left) ? value.right : isV(value.right) ? value.left : undefined;
}

class Refusal extends Error {}

/**
 * The narrow lanes a per-row kernel's rows run in (8-bit where every array and per-row scalar is
 * 8-bit and the kernel qualifies there, else 16-bit), or why they keep 32-bit lanes.
 *
 * @param kernel - the kernel the 4-lane row plan runs (its float64 locals already held as int32 where exact)
 * @param varying - the values that vary per row (RowPlan.varying)
 * @param maxCore - the largest core size the vector loop runs (larger rows run the scalar loop)
 * @param varies - whether an expression varies per row (emit-rows.ts)
 */
export function rowIntLanes(kernel: TypedKernel, varying: ReadonlySet<Variable>, maxCore: number, varies: (e: Expr) => boolean): RowIntLanes | string {
  const widths = [...kernel.params].filter((p) => isArrayType(p.type) || varying.has(p)).map((p) => DTYPES[isArrayType(p.type) ? p.type.dtype : p.type].bytes);
  let why = '';
  for (const bits of [8, 16] as const) {
    if (bits === 8 && widths.some((b) => b !== 1)) continue;
    try {
      return new RowRanges(kernel, varying, maxCore, varies, bits).plan();
    } catch (error) {
      if (!(error instanceof Refusal)) throw error;
      why = error.message;
    }
  }
  return why;
}

const refuse = (why: string): never => {
  throw new Refusal(why);
};
const within = (r: Range, b: Range) => r[0] >= b[0] && r[1] <= b[1];
/** An int32 interval, or any int32 where the operation may leave int32 (it wraps). */
const int32 = (lo: number, hi: number): Range => (lo < ANY[0] || hi > ANY[1] ? ANY : [lo, hi]);
const join = (a: Range | undefined, b: Range): Range => (a ? [Math.min(a[0], b[0]), Math.max(a[1], b[1])] : b);

/** The interval analysis of one kernel for lanes of `bits` bits (file comment); refuses by throwing. */
class RowRanges {
  private readonly width: string;
  /** The values a lane holds read signed, and read unsigned. */
  private readonly signed: Range;
  private readonly unsigned: Range;
  private readonly bounds: ReturnType<typeof counterBounds>;
  /** Per local (and per-row scalar): its interval, joined over the passes. */
  private readonly ranges = new Map<Variable, Range>();
  private readonly unsignedOps = new Set<Expr>();
  private readonly saturatedOps = new Set<Expr>();
  /** The last pass: ranges are stable, and operations that need exact operands are checked. */
  private final = false;
  /** Depth of uniform expressions being walked: their operations are scalar code's, in int32. */
  private uniformDepth = 0;
  /** Some per-row value may leave the lanes (found in the last pass). */
  private wrapped = false;
  /** Where a helper's `return` values go while its body is walked (per call). */
  private readonly returns: Range[][] = [];
  /** How many times per row the statement being walked runs at most (loops to a core size: maxCore trips). */
  private runs = 1;
  /**
   * Per local, this pass: the largest magnitude it is set to other than by a step, and the sum of
   * its steps' (`v = v ± e`) magnitudes times their runs per row — together a bound on |v|.
   */
  private readonly magnitudes = new Map<Variable, { reset: number; steps: number }>();
  /** Locals whose interval is their magnitude bound (no longer joined, recomputed each pass). */
  private readonly bounded = new Set<Variable>();

  constructor(
    private readonly kernel: TypedKernel, private readonly varying: ReadonlySet<Variable>, private readonly maxCore: number,
    private readonly varies: (e: Expr) => boolean, private readonly bits: 16 | 8,
  ) {
    this.width = `${bits}-bit lanes`;
    this.signed = [-(2 ** (bits - 1)), 2 ** (bits - 1) - 1];
    this.unsigned = [0, 2 ** bits - 1];
    this.bounds = counterBounds(kernel, findLoopCounters(kernel));
    for (const p of kernel.params) {
      if (isArrayType(p.type)) this.heldType(p.type.dtype, `\`${p.name}\``);
      else if (varying.has(p)) {
        this.heldType(p.type, `\`${p.name}\``);
        // Per-row scalars hold their type's values.
        this.ranges.set(p, TYPE_RANGE[p.type]!);
      }
    }
  }

  /**
   * The fixpoint: walk until no local's interval grows. One still growing after WIDEN_AFTER passes
   * is bounded by its magnitudes (a counter `c++` along the row: |c| ≤ maxCore), else any int32.
   * Then the last pass, which checks.
   */
  plan(): RowIntLanes {
    const { ranges, magnitudes, bounded } = this;
    const boundOf = (v: Variable): Range => {
      const m = magnitudes.get(v)!;
      const bound = m.reset + m.steps;
      return bound <= ANY[1] ? [-bound, bound] : ANY;
    };
    for (let pass = 1; ; pass++) {
      const before = new Map(ranges);
      magnitudes.clear();
      this.stmts(this.kernel.body);
      for (const v of bounded) ranges.set(v, pass < MAX_PASSES ? boundOf(v) : ANY);
      const grown = [...ranges].filter(([v, r]) => before.get(v)?.[0] !== r[0] || before.get(v)?.[1] !== r[1]).map(([v]) => v);
      if (!grown.length) break;
      if (pass < WIDEN_AFTER) continue;
      for (const v of grown) {
        if (bounded.has(v)) continue;
        bounded.add(v);
        ranges.set(v, boundOf(v));
      }
    }
    this.final = true;
    this.stmts(this.kernel.body);
    const wrappedLocals = [...ranges].filter(([v, r]) => !this.exact(r) && !this.kernel.params.includes(v)).map(([v]) => v.name);
    return { bits: this.bits, unsigned: this.unsignedOps, saturated: this.saturatedOps, wrapped: this.wrapped, wrappedLocals: [...new Set(wrappedLocals)] };
  }

  private exact(r: Range): boolean {
    return within(r, this.signed) || within(r, this.unsigned);
  }

  private heldType(t: DType, what: string): void {
    if (!NARROW.has(t) || DTYPES[t].bytes * 8 > this.bits) refuse(`${what} is ${t}, wider than ${this.width}`);
  }

  /** The one way exact operands read alike: 'signed', 'unsigned', or a refusal. */
  private reading(e: Expr, operands: readonly Range[]): 'signed' | 'unsigned' {
    if (this.uniformDepth > 0) return 'signed'; // scalar code's, in int32
    if (operands.every((r) => within(r, this.signed))) return 'signed';
    if (operands.every((r) => within(r, this.unsigned))) {
      if (this.final) this.unsignedOps.add(e);
      return 'unsigned';
    }
    if (this.final) refuse(`a value at kernel line ${e.loc.line}:${e.loc.column} is compared, clamped or shifted right but may leave ${this.width}`);
    return 'signed';
  }

  /** A uniform leaf's interval (a constant, a variable, a core size), or a conversion of a float's. */
  private uniform(e: Expr): Range {
    switch (e.kind) {
      case 'const':
        return typeof e.value === 'boolean' ? [0, 1] : Number.isInteger(Number(e.value)) && Math.abs(Number(e.value)) < 2 ** 31 ? [Number(e.value), Number(e.value)] : ANY;
      case 'var': {
        const b = this.bounds.get(e.variable);
        if (b && this.kernel.params.includes(b.array)) return [b.start, Math.max(b.start, this.maxCore)];
        return TYPE_RANGE[e.type] ?? ANY;
      }
      case 'dim':
        return this.kernel.params.includes(e.array) ? [0, this.maxCore] : ANY;
      case 'cast':
        // A counter converted from its double: its bounds.
        return this.converted(e, e.value.kind === 'var' ? this.uniform(e.value) : ANY);
      default:
        return TYPE_RANGE[e.type] ?? ANY;
    }
  }

  /** The interval of a conversion to `e.type` of a value in `v`. */
  private converted(e: Expr, v: Range): Range {
    const to = e.type;
    if (to === 'int32') return v;
    // The same bits: the same value where ≥ 0 (operation() takes a uint32 below 0 as wrapped).
    if (to === 'uint32') return v;
    if (to === 'bool') return [0, 1];
    if (to === 'uint8c') return [Math.min(Math.max(v[0], 0), 255), Math.min(Math.max(v[1], 0), 255)];
    const t = TYPE_RANGE[to];
    if (!t || !NARROW.has(to)) return refuse(`a conversion to ${to}`);
    return within(v, t) ? v : t;
  }

  /** The interval of an expression; where a uniform one meets per-row values, the lanes get its low bits. */
  private rangeOf(e: Expr): Range {
    if (this.uniformDepth > 0) return this.operation(e);
    if (this.varies(e)) {
      const r = this.operation(e);
      if (this.final && !this.exact(r)) this.wrapped = true;
      return r;
    }
    if (!TYPE_RANGE[e.type]) refuse(`a ${e.type} value at kernel line ${e.loc.line}:${e.loc.column} meets per-row values`);
    this.uniformDepth++;
    try {
      return this.operation(e);
    } finally {
      this.uniformDepth--;
    }
  }

  /** The interval of an expression from its operands' (rangeOf), checking what needs exact operands. */
  private operation(e: Expr): Range {
    const r = this.operationOf(e);
    // A uint32 below 0 has wrapped to 2³² and more: nothing known but its low bits.
    return e.type === 'uint32' && r[0] < 0 ? ANY : r;
  }

  private operationOf(e: Expr): Range {
    if (!TYPE_RANGE[e.type]) return this.uniformDepth > 0 ? ANY : refuse(`a per-row value at kernel line ${e.loc.line}:${e.loc.column} is ${e.type}`);
    switch (e.kind) {
      case 'const':
      case 'dim':
        return this.uniform(e);
      case 'var':
        return this.varying.has(e.variable) ? this.ranges.get(e.variable) ?? ANY : this.uniform(e);
      case 'index': {
        const t = e.array.type;
        const dtype = isArrayType(t) ? t.dtype : e.type;
        this.heldType(dtype, `\`${e.array.name}\``);
        return TYPE_RANGE[dtype]!;
      }
      case 'unary': {
        const a = this.rangeOf(e.arg);
        if (e.op === '!') return [0, 1];
        return e.op === '-' ? int32(-a[1], -a[0]) : int32(-a[1] - 1, -a[0] - 1);
      }
      case 'binary':
        return this.binary(e);
      case 'compare': {
        const operands = [this.rangeOf(e.left), this.rangeOf(e.right)];
        if (e.operandType !== 'bool' && this.uniformDepth === 0) {
          if (!TYPE_RANGE[e.operandType]) refuse(`a comparison in ${e.operandType}`);
          this.reading(e, operands);
        }
        return [0, 1];
      }
      case 'logical':
        this.rangeOf(e.left);
        this.rangeOf(e.right);
        return [0, 1];
      case 'select':
        this.rangeOf(e.cond);
        return join(this.rangeOf(e.then), this.rangeOf(e.otherwise));
      case 'cast':
        return this.cast(e);
      case 'math':
        return this.math(e);
      case 'call':
        return this.call(e);
    }
  }

  private cast(e: Extract<Expr, { kind: 'cast' }>): Range {
    const value = integralSource(e) ?? e.value;
    if (!this.varies(value) && !TYPE_RANGE[value.type]) return this.uniform(e); // of a float: scalar code's conversion
    if (e.type === 'uint8c') {
      const clamped = this.saturating(e, value, (x) => Math.min(Math.max(x, 0), 255));
      if (clamped) return clamped;
    }
    const v = this.rangeOf(value);
    if (e.type === 'bool' || e.type === 'uint8c') this.reading(e, [v]);
    return this.converted(e, v);
  }

  private math(e: Extract<Expr, { kind: 'math' }>): Range {
    if (e.fn === 'min' || e.fn === 'max') {
      const clamp = this.clampNest(e);
      const clamped = clamp && this.saturating(e, clamp.leaf, clamp.f, clamp.nodes);
      if (clamped) return clamped;
    }
    const args = e.args.map((a) => this.rangeOf(a));
    if (e.fn === 'imul') return int32(...this.product(args[0]!, args[1]!));
    if (e.fn === 'abs') {
      const [lo, hi] = args[0]!;
      this.reading(e, [args[0]!]);
      return [lo >= 0 ? lo : hi <= 0 ? -hi : 0, Math.max(Math.abs(lo), Math.abs(hi))];
    }
    if ((e.fn !== 'min' && e.fn !== 'max') || args.length === 0) return refuse(`Math.${e.fn} in ${this.width}`);
    this.reading(e, args);
    const pick = e.fn === 'min' ? Math.min : Math.max;
    return [pick(...args.map((r) => r[0])), pick(...args.map((r) => r[1]))];
  }

  /**
   * The saturating idiom (as int-lanes.ts admits it element-wise): `f(a ± b)` where `a` and `b`
   * fit the lanes read alike, `a ± b` may not, and `f` — `Math.min`/`max` with constants, or
   * uint8c's clamp — is monotone and constant beyond the lanes' bounds over the sum's range: then
   * f(saturated sum) = f(sum), so the lanes add with saturation. The interval of `e` (`f`'s), or
   * undefined where the idiom does not apply (the sum fits, or f is not constant there).
   */
  private saturating(e: Expr, sum: Expr, f: (x: number) => number, nodes: readonly Expr[] = [e]): Range | undefined {
    if (this.uniformDepth > 0 || sum.kind !== 'binary' || (sum.op !== '+' && sum.op !== '-')) return undefined;
    const operands = [this.rangeOf(sum.left), this.rangeOf(sum.right)] as const;
    const [a, b] = operands;
    const v: Range = sum.op === '+' ? [a[0] + b[0], a[1] + b[1]] : [a[0] - b[1], a[1] - b[0]];
    if (this.exact(v)) return undefined;
    const bounds = operands.every((r) => within(r, this.signed)) ? this.signed : operands.every((r) => within(r, this.unsigned)) ? this.unsigned : undefined;
    const constants = nodes.flatMap((n) => (n.kind === 'math' ? n.args.filter((x) => x.kind === 'const').map((x) => Number(x.value)) : []));
    if (!bounds || constants.some((c) => !within([c, c], bounds))) return undefined;
    const lo = Math.max(v[0], bounds[0]);
    const hi = Math.min(v[1], bounds[1]);
    const out: Range = [f(lo), f(hi)];
    if (f(lo) !== f(v[0]) || f(hi) !== f(v[1]) || !within(out, bounds)) return undefined;
    if (this.final) {
      this.saturatedOps.add(sum);
      if (bounds === this.unsigned) for (const x of [sum, ...nodes]) this.unsignedOps.add(x);
    }
    return out;
  }

  /**
   * A nest of `Math.min`/`max` whose arguments are integer constants and one other expression (the
   * leaf): the leaf, the nest as a function of it, and its min/max nodes.
   */
  private clampNest(e: Extract<Expr, { kind: 'math' }>): { leaf: Expr; f: (x: number) => number; nodes: Expr[] } | undefined {
    const leaves: Expr[] = [];
    const nodes: Expr[] = [];
    const walk = (x: Expr): boolean => {
      if (x.kind === 'math' && (x.fn === 'min' || x.fn === 'max') && x.args.length > 0) {
        nodes.push(x);
        return x.args.every(walk);
      }
      if (x.kind === 'const') return typeof x.value === 'number' && Number.isInteger(x.value);
      leaves.push(x);
      return true;
    };
    if (!walk(e) || leaves.length !== 1) return undefined;
    const at = (x: Expr, v: number): number => (x.kind === 'math' ? (x.fn === 'min' ? Math.min : Math.max)(...x.args.map((a) => at(a, v))) : x.kind === 'const' ? Number(x.value) : v);
    return { leaf: leaves[0]!, f: (v) => at(e, v), nodes };
  }

  private product(a: Range, b: Range): [number, number] {
    if (this.bits === 8) refuse('`*` has no 8-bit lane instruction');
    const p = [a[0] * b[0], a[0] * b[1], a[1] * b[0], a[1] * b[1]];
    return [Math.min(...p), Math.max(...p)];
  }

  private binary(e: Extract<Expr, { kind: 'binary' }>): Range {
    const { bits, signed, unsigned, width } = this;
    const a = this.rangeOf(e.left);
    if (e.op === '<<' || e.op === '>>' || e.op === '>>>') {
      if (e.right.kind !== 'const') return refuse('a shift count varies per row');
      const k = Number(e.right.value) & 31;
      if (e.op === '<<') {
        // Lanes take shift counts modulo their width.
        if (k >= bits) refuse(`a shift by ${k} in ${width}`);
        return int32(a[0] * 2 ** k, a[1] * 2 ** k);
      }
      if (e.op === '>>>' && a[0] < 0) refuse('`>>>` of a value that may be negative');
      // Signed lanes shift by at most W − 1 (the sign fills them, as in int32); unsigned ones by less than W.
      if (this.reading(e, [a]) === 'unsigned' && k >= bits) refuse(`a shift by ${k} in ${width}`);
      return [Math.floor(a[0] / 2 ** k), Math.floor(a[1] / 2 ** k)];
    }
    const b = this.rangeOf(e.right);
    switch (e.op) {
      case '+': return int32(a[0] + b[0], a[1] + b[1]);
      case '-': return int32(a[0] - b[1], a[1] - b[0]);
      case '*': return int32(...this.product(a, b));
      case '&':
        // x & m with 0 ≤ m < 2^W depends only on x's low W bits.
        if (within(a, unsigned) || within(b, unsigned)) return [0, Math.min(...[a, b].filter((r) => r[0] >= 0).map((r) => r[1]))];
        return within(a, signed) && within(b, signed) ? signed : ANY;
      case '|':
      case '^':
        if (within(a, signed) && within(b, signed)) return signed;
        return within(a, unsigned) && within(b, unsigned) ? [0, 2 ** Math.ceil(Math.log2(Math.max(a[1], b[1]) + 1)) - 1] : ANY;
      default:
        return refuse(`\`${e.op}\` in ${width}`);
    }
  }

  /** A helper call, as the lanes inline it: its parameters assigned, its body walked, its returns joined. */
  private call(x: Extract<Expr, { kind: 'call' }>): Range {
    const h: HelperFunction = x.helper;
    h.params.forEach((p, i) => {
      const a = x.args[i]!;
      if (a.kind !== 'array-ref') this.assign(p, a);
    });
    this.returns.push([[0, 0]]); // a helper that ends without `return` gives undefined: 0 once converted
    const outer = this.runs;
    this.runs = Infinity;
    this.stmts(h.body);
    this.runs = outer;
    return this.returns.pop()!.reduce((r, v) => join(r, v));
  }

  private assign(v: Variable, value: Expr): void {
    if (!this.varying.has(v)) return; // uniform: scalar code
    if (isArrayType(v.type) || !TYPE_RANGE[v.type]) refuse(`\`${v.name}\` is ${isArrayType(v.type) ? 'an array' : v.type} per row`);
    const r = this.rangeOf(value);
    if (this.final) return;
    const m = this.magnitudes.get(v) ?? { reset: 0, steps: 0 };
    const step = stepOf(value, v);
    if (step) {
      const d = this.rangeOf(step);
      m.steps += this.runs * Math.max(Math.abs(d[0]), Math.abs(d[1]));
    } else m.reset = Math.max(m.reset, Math.abs(r[0]), Math.abs(r[1]));
    this.magnitudes.set(v, m);
    if (!this.bounded.has(v)) this.ranges.set(v, join(this.ranges.get(v), r));
  }

  private stmts(list: readonly Stmt[]): void {
    for (const s of list) this.stmt(s);
  }

  private stmt(s: Stmt): void {
    switch (s.kind) {
      case 'let': return this.assign(s.variable, s.init);
      case 'assign': return this.assign(s.variable, s.value);
      case 'store': {
        const t = s.array.type;
        if (!isArrayType(t) || s.value.type !== t.dtype) refuse(`a store of ${s.value.type} into a ${isArrayType(t) ? t.dtype : t} array`);
        this.heldType((t as { dtype: DType }).dtype, `\`${s.array.name}\``);
        this.rangeOf(s.value);
        return;
      }
      case 'local-array':
        this.heldType((s.variable.type as { dtype: DType }).dtype, `the local array \`${s.variable.name}\``);
        return;
      case 'if':
        if (this.varies(s.cond)) this.rangeOf(s.cond);
        this.stmts(s.then);
        this.stmts(s.otherwise);
        return;
      case 'loop': {
        this.stmts(s.init);
        const counter = s.init[0]?.kind === 'let' ? this.bounds.get(s.init[0].variable) : undefined;
        const outer = this.runs;
        this.runs *= counter && this.kernel.params.includes(counter.array) ? this.maxCore : Infinity;
        if (s.cond && this.varies(s.cond)) this.rangeOf(s.cond);
        this.stmts(s.body);
        this.stmts(s.update);
        this.runs = outer;
        return;
      }
      case 'return':
        if (s.value && (this.varies(s.value) || this.returns.length)) {
          const r = this.rangeOf(s.value);
          if (this.returns.length) this.returns[this.returns.length - 1]!.push(r);
        }
        return;
      case 'call':
        this.rangeOf(s.call);
        return;
      case 'break':
      case 'continue':
        return;
      default:
        refuse(`a ${s.kind} statement`);
    }
  }
}
