/**
 * Random kernels over docs/kernel-language.md, each expression built with the type the rules give
 * it (types.ts), and random operands with special values. A `profile` limits the language to what
 * a target promises bit for bit: `gpu` keeps to float32/int32/uint32 and the operations docs/gpu.md
 * lists as exact on the gpu ("Accuracy": + − * and negation, comparisons, conversions, `%`, the
 * exact Math functions, integers), with no double locals other than loop counters.
 */
import type { BinaryOp, CompareOp, DT, Expr, Helper, Kernel, MathFn, Param, Stmt } from './kernel-ast.js';
import { arithmetic, floatFor, isFloat, isInt, join, literalAgainst, mixedSign, promote } from './types.js';

/** A small, fast, seeded generator (mulberry32): the same seed gives the same kernels everywhere. */
export class Rng {
  private s: number;
  constructor(seed: number) {
    this.s = seed >>> 0;
  }
  next(): number {
    this.s = (this.s + 0x6d2b79f5) >>> 0;
    let t = this.s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }
  int(n: number): number {
    return Math.floor(this.next() * n);
  }
  pick<T>(xs: readonly T[]): T {
    return xs[this.int(xs.length)]!;
  }
  chance(p: number): boolean {
    return this.next() < p;
  }
}

export type Profile = 'cpu' | 'gpu';

/** What the language offers each profile. */
const MATH_CPU: readonly MathFn[] = [
  'abs', 'sign', 'floor', 'ceil', 'round', 'trunc', 'fround', 'sqrt', 'cbrt', 'exp', 'expm1', 'log', 'log1p', 'log2', 'log10',
  'sin', 'cos', 'tan', 'asin', 'acos', 'atan', 'sinh', 'cosh', 'tanh', 'asinh', 'acosh', 'atanh', 'atan2', 'pow', 'hypot', 'min', 'max', 'imul', 'clz32',
];
const MATH_GPU: readonly MathFn[] = ['abs', 'sign', 'floor', 'ceil', 'round', 'trunc', 'fround', 'min', 'max', 'imul', 'clz32'];
const INT_PRESERVING: ReadonlySet<MathFn> = new Set(['abs', 'sign', 'floor', 'ceil', 'round', 'trunc', 'min', 'max']);
const LITERALS = [0, 1, 2, 3, 7, 31, 255, 65535, 0.5, 1.5, -2.25, 1e-3, 3e9, 1e20, -1, -0, 2147483647, 4294967295];
const GPU_LITERALS = [0, 1, 2, 3, 7, 31, 255, 0.5, 1.5, -2.25, 1e-3, -1];

/** Coverage: how often each construct was generated (for the tally). */
export type Coverage = Map<string, number>;

interface Scope {
  /** Scalars readable here: parameters, locals, loop counters. */
  readonly vars: { name: string; t: DT; counter?: boolean }[];
  /** Rows readable at an index here: `arr[v]` with v < arr.length. */
  readonly rows: { arr: string; v: string | 0; t: DT }[];
  /** 2-D slices readable as `arr[v][w]`. */
  readonly cells: { arr: string; v: string | 0; w: string | 0; t: DT }[];
  /** Local arrays: any index `v % length` of a counter, or a constant below the length. */
  readonly locals: { arr: string; t: DT; length: number }[];
  /** Locals that may be assigned (not counters). */
  readonly assignable: { name: string; t: DT }[];
  readonly inLoop: boolean;
  /** Loop counters in scope (non-negative integers). */
  readonly counters: string[];
}

export class KernelGenerator {
  private names = 0;
  readonly helpers: Helper[] = [];
  private readonly maths: readonly MathFn[];
  private readonly literals: readonly number[];

  constructor(private readonly rng: Rng, private readonly profile: Profile, private readonly coverage: Coverage) {
    this.maths = profile === 'gpu' ? MATH_GPU : MATH_CPU;
    this.literals = profile === 'gpu' ? GPU_LITERALS : LITERALS;
  }

  private cover(what: string): void {
    this.coverage.set(what, (this.coverage.get(what) ?? 0) + 1);
  }

  private fresh(prefix: string): string {
    return `${prefix}${this.names++}`;
  }

  /** A parameter or value dtype of this profile. */
  dtype(): DT {
    const all: DT[] = this.profile === 'gpu'
      ? ['float32', 'float32', 'int32', 'uint32', 'int16', 'uint8', 'int8', 'uint16']
      : ['float64', 'float64', 'float32', 'float32', 'int32', 'uint32', 'int16', 'uint16', 'int8', 'uint8', 'uint8c'];
    return this.rng.pick(all);
  }

  /** The numeric types an expression may be asked for. */
  private valueType(): DT {
    const all: DT[] = this.profile === 'gpu' ? ['float32', 'float32', 'int32', 'uint32'] : ['float64', 'float64', 'float32', 'int32', 'uint32'];
    return this.rng.pick(all);
  }

  // ------------------------------------------------------------------ expressions

  /** An expression of exactly type `t` (numeric types are those of promote; bool for conditions). */
  expr(asked: DT, s: Scope, depth: number): Expr {
    if (asked === 'bool') return this.condition(s, depth);
    // Values compute in promoted types (an int16 operand is an int32 value): never ask for less.
    const t = promote(asked);
    if (depth <= 0) return this.leaf(t, s) ?? this.convertTo(t, s);
    if (this.rng.chance(0.25)) {
      const l = this.leaf(t, s);
      if (l) return l;
    }
    const choice = this.rng.int(10);
    switch (choice) {
      case 0: case 1: case 2: { const e = this.binary(t, s, depth); if (e) return e; break; }
      case 3: { const e = this.withLiteral(t, s, depth); if (e) return e; break; }
      case 4: { const e = this.mathCall(t, s, depth); if (e) return e; break; }
      case 5:
        this.cover('ternary');
        return { k: 'tern', c: this.condition(s, depth - 1), a: this.expr(t, s, depth - 1), b: this.expr(this.rng.chance(0.7) ? t : this.joinable(t), s, depth - 1), t };
      case 6: {
        if (t === 'int32' && this.rng.chance(0.5)) {
          this.cover('bitwise ~');
          return { k: 'bitnot', a: this.expr(this.valueType(), s, depth - 1), t: 'int32' };
        }
        this.cover('unary -');
        return { k: 'neg', a: this.expr(t, s, depth - 1), t };
      }
      case 7: { const e = this.bitwise(t, s, depth); if (e) return e; break; }
      case 8: { const e = this.helperCall(t, s, depth); if (e) return e; break; }
      default: break;
    }
    return this.leaf(t, s) ?? this.convertTo(t, s);
  }

  /** A type b such that join(t, b) = t (a ternary branch, an assignment converted to t). */
  private joinable(t: DT): DT {
    const options: DT[] = t === 'float64' ? ['float64', 'float32', 'int32', 'uint32'] : t === 'float32' ? ['float32', 'int32'] : t === 'uint32' ? ['uint32', 'int32'] : [t];
    return this.rng.pick(options.filter((x) => this.profile !== 'gpu' || x !== 'float64'));
  }

  /** A value of type t from any other type, through a typed operation: fround, `| 0`, `>>> 0`. */
  private convertTo(t: DT, s: Scope): Expr {
    // Never a literal-only expression: it is computed as JS computes it and stays a weak literal
    // (rule 13), which is not the typed value asked for. Every scope has a typed value to start from.
    const types: DT[] = ['float64', 'float32', 'int32', 'uint32'];
    const start = this.rng.int(types.length);
    let inner: Expr | undefined;
    for (let k = 0; k < types.length && !inner; k++) inner = this.leaf(types[(start + k) % types.length]!, s);
    if (!inner) throw new Error('fuzz generator: a scope without any typed value');
    switch (t) {
      case 'float32': this.cover('Math.fround'); return { k: 'math', fn: 'fround', args: [inner], argType: floatFor(inner.t), t: 'float32' };
      case 'int32': return { k: 'bin', op: '|', a: inner, b: { k: 'lit', v: 0, t: 'int32' }, opType: 'int32', t: 'int32' };
      case 'uint32': return { k: 'bin', op: '>>>', a: inner, b: { k: 'lit', v: 0, t: 'int32' }, opType: 'uint32', t: 'uint32' };
      default: {
        // float64: an int32 (`| 0`) plus a literal that does not fit an integer (rule 2). A float32
        // operand would not do: the literal would adapt to it.
        const v = this.leaf('float64', s);
        if (v) return v;
        const asInt: Expr = { k: 'bin', op: '|', a: inner, b: { k: 'lit', v: 0, t: 'int32' }, opType: 'int32', t: 'int32' };
        return { k: 'bin', op: '+', a: asInt, b: { k: 'lit', v: 0.5, t: 'float64' }, opType: 'float64', t: 'float64' };
      }
    }
  }

  private leaf(t: DT, s: Scope): Expr | undefined {
    const options: Expr[] = [];
    for (const v of s.vars) if (promote(v.t) === t && !(v.counter && this.profile === 'gpu' && t === 'float64')) options.push({ k: 'var', name: v.name, t: v.t });
    const at = (v: string | 0): Expr => (v === 0 ? { k: 'lit', v: 0, t: 'float64' } : { k: 'var', name: v, t: 'float64' });
    for (const r of s.rows) if (promote(r.t) === t) options.push({ k: 'index', arr: r.arr, index: at(r.v), t: r.t });
    for (const c of s.cells) if (promote(c.t) === t) options.push({ k: 'index2', arr: c.arr, i: at(c.v), j: at(c.w), t: c.t });
    for (const l of s.locals) {
      if (promote(l.t) !== t) continue;
      const counter = s.counters.length && this.rng.chance(0.6) ? this.rng.pick(s.counters) : undefined;
      const index: Expr = counter
        ? { k: 'bin', op: '%', a: { k: 'var', name: counter, t: 'float64' }, b: { k: 'lit', v: l.length, t: 'float64' }, opType: 'float64', t: 'float64' }
        : { k: 'lit', v: this.rng.int(l.length), t: 'float64' };
      options.push({ k: 'index', arr: l.arr, index, t: l.t });
    }
    if (options.length === 0) return undefined;
    const e = this.rng.pick(options);
    this.cover(e.k === 'var' ? 'read a scalar' : e.k === 'index2' ? 'read a 2-D slice' : s.locals.some((l) => e.k === 'index' && l.arr === e.arr) ? 'read a local array' : 'read a core slice');
    return e;
  }

  private binary(t: DT, s: Scope, depth: number): Expr | undefined {
    const ops: BinaryOp[] = this.profile === 'gpu' ? ['+', '-', '*', '%'] : ['+', '-', '*', '/', '%', '**'];
    const op = this.rng.pick(ops);
    // Operand types whose arithmetic type is t (for `/` and `**` on integers: float64).
    if (op === '/' || op === '**') {
      if (t === 'float64' && this.rng.chance(0.5)) {
        const a = this.expr(this.rng.pick(['int32', 'uint32', 'float64'] as DT[]), s, depth - 1);
        const b = this.expr(this.rng.pick(['int32', 'float32', 'float64'] as DT[]), s, depth - 1);
        const opType = isFloat(arithmetic(a.t, b.t)) ? arithmetic(a.t, b.t) : 'float64';
        if (opType !== t) return undefined;
        this.cover(`binary ${op}`);
        return { k: 'bin', op, a, b, opType, t };
      }
      if (!isFloat(t)) return undefined;
    }
    const [ta, tb] = this.operandTypes(t);
    const a = this.expr(ta, s, depth - 1);
    const b = this.expr(tb, s, depth - 1);
    const opType = arithmetic(a.t, b.t);
    if (opType !== t) return undefined;
    this.cover(`binary ${op}`);
    return { k: 'bin', op, a, b, opType, t };
  }

  /** Two operand types whose arithmetic type is t. */
  private operandTypes(t: DT): [DT, DT] {
    const other: DT[] = t === 'float64' ? ['float64', 'float32', 'int32', 'uint32'] : t === 'float32' ? ['float32', 'int32'] : t === 'uint32' ? ['uint32', 'int32'] : ['int32'];
    const pair: [DT, DT] = [t, this.rng.pick(other.filter((x) => this.profile !== 'gpu' || x !== 'float64'))];
    return this.rng.chance(0.5) ? pair : [pair[1], pair[0]];
  }

  /** `e op literal`: the literal takes the type of e where it fits (rule 2). */
  private withLiteral(t: DT, s: Scope, depth: number): Expr | undefined {
    const v = this.rng.pick(this.literals);
    const ops: BinaryOp[] = this.profile === 'gpu' ? ['+', '-', '*', '%'] : ['+', '-', '*', '/', '%'];
    const op = this.rng.pick(ops);
    const ta = isFloat(t) ? t : this.rng.pick(['int32', 'uint32', t] as DT[]);
    const a = this.expr(ta, s, depth - 1);
    const lt = literalAgainst(v, a.t);
    let opType = arithmetic(a.t, lt);
    if (op === '/' && !isFloat(opType)) opType = 'float64';
    if (opType !== t) return undefined;
    if (this.profile === 'gpu' && op === '%' && isFloat(t)) return undefined;
    this.cover('a literal operand');
    return { k: 'bin', op, a, b: { k: 'lit', v, t: lt }, opType, t };
  }

  private bitwise(t: DT, s: Scope, depth: number): Expr | undefined {
    if (t !== 'int32' && t !== 'uint32') return undefined;
    const op: BinaryOp = t === 'uint32' ? '>>>' : this.rng.pick(['&', '|', '^', '<<', '>>'] as BinaryOp[]);
    const a = this.expr(this.valueType(), s, depth - 1);
    const b = this.rng.chance(0.5) ? this.expr(this.valueType(), s, depth - 1) : ({ k: 'lit', v: this.rng.pick([0, 1, 3, 31, 32, 255]), t: 'int32' } as Expr);
    this.cover(`bitwise ${op}`);
    return { k: 'bin', op, a, b, opType: t, t };
  }

  private mathCall(t: DT, s: Scope, depth: number): Expr | undefined {
    const fn = this.rng.pick(this.maths);
    if (fn === 'imul' || fn === 'clz32') {
      if (t !== 'int32') return undefined;
      const n = fn === 'imul' ? 2 : 1;
      this.cover(`Math.${fn}`);
      return { k: 'math', fn, args: Array.from({ length: n }, () => this.expr(this.valueType(), s, depth - 1)), argType: 'int32', t: 'int32' };
    }
    if (fn === 'fround') {
      if (t !== 'float32') return undefined;
      const a = this.expr(this.valueType(), s, depth - 1);
      this.cover('Math.fround');
      return { k: 'math', fn, args: [a], argType: floatFor(a.t), t: 'float32' };
    }
    const n = fn === 'atan2' || fn === 'pow' ? 2 : fn === 'hypot' || fn === 'min' || fn === 'max' ? 1 + this.rng.int(3) : 1;
    if (INT_PRESERVING.has(fn)) {
      const args = Array.from({ length: n }, () => this.expr(t, s, depth - 1));
      this.cover(`Math.${fn}`);
      return { k: 'math', fn, args, argType: t, t };
    }
    if (!isFloat(t)) return undefined;
    const args = Array.from({ length: n }, () => this.expr(t === 'float32' ? this.rng.pick(['float32', 'int32'] as DT[]) : this.valueType(), s, depth - 1));
    const argType = floatFor(args.map((a) => a.t).reduce(arithmetic));
    if (argType !== t) return undefined;
    this.cover(`Math.${fn}`);
    return { k: 'math', fn, args, argType, t };
  }

  private helperCall(t: DT, s: Scope, depth: number): Expr | undefined {
    if (depth < 2) return undefined;
    let h = this.helpers.find((x) => x.body.t === t && this.rng.chance(0.5));
    if (!h) {
      const params = Array.from({ length: 1 + this.rng.int(2) }, () => this.valueType());
      const inner: Scope = { vars: params.map((p, i) => ({ name: `p${i}`, t: p })), rows: [], cells: [], locals: [], assignable: [], inLoop: false, counters: [] };
      const body = this.expr(t, inner, 2);
      h = { name: this.fresh('h'), params, body };
      this.helpers.push(h);
    }
    this.cover('helper call');
    return { k: 'call', helper: h.name, args: h.params.map((p) => this.expr(p, s, depth - 1)), t: h.body.t };
  }

  condition(s: Scope, depth: number): Expr {
    const c = this.rng.int(6);
    if (c === 0 && depth > 0) {
      this.cover('logical && ||');
      return { k: 'logic', op: this.rng.pick(['&&', '||'] as const), a: this.condition(s, depth - 1), b: this.condition(s, depth - 1), t: 'bool' };
    }
    if (c === 1 && depth > 0) {
      this.cover('logical !');
      return { k: 'not', a: this.condition(s, depth - 1), t: 'bool' };
    }
    if (c === 2) {
      const a = this.expr(this.rng.pick(this.profile === 'gpu' ? ['float32'] as DT[] : ['float32', 'float64'] as DT[]), s, depth - 1);
      this.cover('isNaN/isFinite');
      return { k: this.rng.pick(['isnan', 'isfinite'] as const), a, t: 'bool' };
    }
    const op = this.rng.pick(['<', '<=', '>', '>=', '===', '!==', '==', '!='] as CompareOp[]);
    const a = this.expr(this.valueType(), s, depth - 1);
    let b: Expr;
    let bt: DT;
    if (this.rng.chance(0.4)) {
      // (A negative literal against an unsigned operand is an int32: a mixed-sign comparison, refused.)
      const v = this.rng.pick(this.literals.filter((x) => !(promote(a.t) === 'uint32' && x < 0)));
      bt = literalAgainst(v, a.t);
      b = { k: 'lit', v, t: bt };
    } else {
      let t2 = this.valueType();
      if (mixedSign(a.t, t2)) t2 = promote(a.t);
      b = this.expr(t2, s, depth - 1);
      bt = b.t;
    }
    this.cover(`compare ${op}`);
    return { k: 'cmp', op, a, b, opType: arithmetic(a.t, bt), t: 'bool' };
  }

  // ------------------------------------------------------------------ statements

  /** A few statements; `allowReturn` lets an `if` return early (`value`: the vectorize result type). */
  stmts(s: Scope, depth: number, count: number, returns?: DT | 'void'): Stmt[] {
    const out: Stmt[] = [];
    const scope: Scope = { ...s, vars: [...s.vars], assignable: [...s.assignable], locals: [...s.locals] };
    for (let n = 0; n < count; n++) out.push(...this.stmt(scope, depth, returns));
    return out;
  }

  private stmt(s: Scope, depth: number, returns?: DT | 'void'): Stmt[] {
    const c = this.rng.int(12);
    if ((c === 0 || c === 1) || depth <= 0) {
      // let: a typed value (on the gpu no double locals), or a literal (a double, rule 1)
      const name = this.fresh('v');
      let init: Expr;
      let t: DT;
      if (this.profile !== 'gpu' && this.rng.chance(0.3)) {
        init = { k: 'lit', v: this.rng.pick(this.literals), t: 'float64' };
        t = 'float64';
        this.cover('let from a literal');
      } else {
        t = this.valueType();
        init = this.expr(t, s, depth);
        this.cover('let');
      }
      s.vars.push({ name, t });
      s.assignable.push({ name, t });
      return [{ k: 'let', name, init, t }];
    }
    if ((c === 2 || c === 3) && s.assignable.length) {
      const v = this.rng.pick(s.assignable);
      const op = this.rng.pick(['=', '+=', '-=', '*='] as const);
      if (op === '=') {
        this.cover('assign');
        return [{ k: 'assign', name: v.name, op, value: this.expr(this.joinable(v.t), s, depth - 1), opType: v.t }];
      }
      const value = this.expr(this.joinable(v.t), s, depth - 1);
      const opType = arithmetic(v.t, value.t);
      if (join(v.t, opType) !== v.t) return [];
      this.cover(`compound ${op}`);
      return [{ k: 'assign', name: v.name, op, value, opType }];
    }
    if (c === 4 && depth > 1) {
      this.cover('if/else');
      return [{ k: 'if', c: this.condition(s, depth - 1), then: this.stmts(s, depth - 1, 1 + this.rng.int(2), returns), otherwise: this.rng.chance(0.5) ? this.stmts(s, depth - 1, 1, returns) : [] }];
    }
    if (c === 5 && depth > 1) return [this.loop(s, depth, returns)];
    if (c === 6 && s.inLoop) {
      this.cover(this.rng.chance(0.5) ? 'break' : 'continue');
      return [{ k: 'if', c: this.condition(s, depth - 1), then: [{ k: this.rng.chance(0.5) ? 'break' : 'continue' }], otherwise: [] }];
    }
    if (c === 7 && returns !== undefined && this.rng.chance(0.5)) {
      this.cover('early return');
      return [{ k: 'if', c: this.condition(s, depth - 1), then: [{ k: 'return', ...(returns === 'void' ? {} : { value: this.expr(this.valueType(), s, depth - 1) }) }], otherwise: [] }];
    }
    if (c === 8 && s.locals.length) {
      const l = this.rng.pick(s.locals);
      const counter = s.counters.length ? this.rng.pick(s.counters) : undefined;
      const index: Expr = counter
        ? { k: 'bin', op: '%', a: { k: 'var', name: counter, t: 'float64' }, b: { k: 'lit', v: l.length, t: 'float64' }, opType: 'float64', t: 'float64' }
        : { k: 'lit', v: this.rng.int(l.length), t: 'float64' };
      this.cover('store into a local array');
      return [{ k: 'store', arr: l.arr, index, value: this.expr(this.valueType(), s, depth - 1) }];
    }
    if (c === 9 && s.locals.length < 3) {
      const dtype = this.rng.pick(this.profile === 'gpu' ? ['float32', 'int32', 'uint32', 'int16', 'uint8'] as DT[] : ['float64', 'float32', 'int32', 'uint32', 'int16', 'uint16', 'int8', 'uint8', 'uint8c'] as DT[]);
      const name = this.fresh('a');
      const length = 1 + this.rng.int(6);
      s.locals.push({ arr: name, t: dtype, length });
      this.cover(`local ${dtype} array`);
      return [{ k: 'localArray', name, dtype, length }];
    }
    return [];
  }

  /** A `for`, `while` or `do … while` over a counter with a small trip count. */
  loop(s: Scope, depth: number, returns?: DT | 'void'): Stmt {
    const v = this.fresh('i');
    const bound = this.tripCount(s);
    const inner: Scope = { ...s, vars: [...s.vars, { name: v, t: 'float64', counter: true }], counters: [...s.counters, v], inLoop: true };
    const body = this.stmts(inner, depth - 1, 1 + this.rng.int(3), returns);
    const kind = this.rng.int(3);
    this.cover(kind === 0 ? 'for' : kind === 1 ? 'while' : 'do … while');
    return kind === 0 ? { k: 'for', v, bound, body } : { k: 'while', v, bound, body, doWhile: kind === 2 };
  }

  /** A trip count: a literal 0…9, a core size, or a parameter's low bits. */
  tripCount(s: Scope): Expr {
    const ints = s.vars.filter((v) => isInt(promote(v.t)) && !v.counter);
    const r = this.rng.int(3);
    if (r === 1 && ints.length) {
      this.cover('trip count from a value');
      const v = this.rng.pick(ints);
      return { k: 'bin', op: '&', a: { k: 'var', name: v.name, t: v.t }, b: { k: 'lit', v: 7, t: 'int32' }, opType: 'int32', t: 'int32' };
    }
    this.cover('trip count from a literal');
    return { k: 'lit', v: this.rng.int(10), t: 'float64' };
  }

  // ------------------------------------------------------------------ kernels

  vectorize(): Kernel {
    const params: Param[] = Array.from({ length: 1 + this.rng.int(3) }, (_, i) => ({ name: `x${i}`, dtype: this.dtype(), shape: 'scalar' as const }));
    const returns = this.profile === 'gpu' ? this.rng.pick(['float32', 'int32', 'uint32', 'int16', 'uint8'] as DT[]) : this.dtype();
    const scope = this.scope(params);
    const body = this.stmts(scope, 3, this.rng.int(4), this.valueType());
    const retType = this.valueType();
    if (this.rng.chance(0.05)) this.cover('no return'); // rule 11: NaN converted
    else body.push({ k: 'return', value: this.expr(retType, { ...scope, vars: [...scope.vars, ...declared(body)] }, 3) });
    this.cover('vectorize');
    return { kind: 'vectorize', params, outputs: 0, returns, helpers: this.helpers, body };
  }

  guvectorize(): Kernel {
    const shape = this.rng.int(4);
    const x: Param = { name: 'x', dtype: this.dtype(), shape: shape === 2 ? 'matrix' : shape === 3 ? 'scalar' : 'row' };
    const extra: Param[] = shape === 1 ? [{ name: 'p', dtype: this.dtype(), shape: 'scalar' }] : [];
    const out: Param = { name: 'out', dtype: this.dtype(), shape: 'row' };
    const params = [x, ...extra, out];
    const layout = ['(n)->(n)', '(n),()->(n)', '(m,n)->(m)', '()->(n)'][shape]!;
    // Element 0 of x's row is readable anywhere (every core size here is at least 1).
    const scope: Scope = {
      ...this.scope(params.filter((p) => p.shape === 'scalar' && p !== out)),
      rows: x.shape === 'row' ? [{ arr: 'x', v: 0, t: x.dtype }] : [],
      cells: x.shape === 'matrix' ? [{ arr: 'x', v: 0, w: 0, t: x.dtype }] : [],
    };
    const body = this.stmts(scope, 2, this.rng.int(3), 'void');
    const i = this.fresh('i');
    const rowScope: Scope = {
      ...scope, vars: [...scope.vars, ...declared(body), { name: i, t: 'float64', counter: true }], counters: [...scope.counters, i], inLoop: true,
      rows: shape === 0 || shape === 1 ? [...scope.rows, { arr: 'x', v: i, t: x.dtype }] : [],
      locals: [...scope.locals, ...declaredArrays(body)],
      assignable: [...scope.assignable, ...declared(body)],
    };
    const inner: Stmt[] = [];
    if (shape === 2) {
      // (m,n)->(m): a fold over the row's second axis
      const acc = this.fresh('s');
      const accType = this.valueType();
      const j = this.fresh('j');
      inner.push({ k: 'let', name: acc, init: this.expr(accType, rowScope, 1), t: accType });
      const cellScope: Scope = { ...rowScope, vars: [...rowScope.vars, { name: acc, t: accType }, { name: j, t: 'float64', counter: true }], cells: [{ arr: 'x', v: i, w: j, t: x.dtype }], counters: [...rowScope.counters, j] };
      const value = this.expr(this.joinable(accType), cellScope, 2);
      const opType = arithmetic(accType, value.t);
      inner.push({ k: 'for', v: j, bound: { k: 'len', arr: 'x', axis: 1, t: 'float64' }, body: [...this.stmts(cellScope, 1, this.rng.int(2), 'void'), ...(join(accType, opType) === accType ? [{ k: 'assign', name: acc, op: '+=', value, opType } as Stmt] : [])] });
      inner.push({ k: 'store', arr: 'out', index: { k: 'var', name: i, t: 'float64' }, value: { k: 'var', name: acc, t: accType } });
      this.cover('2-D core slice');
    } else {
      inner.push(...this.stmts(rowScope, 2, this.rng.int(3), 'void'));
      inner.push({ k: 'store', arr: 'out', index: { k: 'var', name: i, t: 'float64' }, value: this.expr(this.valueType(), { ...rowScope, vars: [...rowScope.vars, ...declared(inner)] }, 3) });
    }
    body.push({ k: 'for', v: i, bound: { k: 'len', arr: shape === 3 ? 'out' : 'x', axis: 0, t: 'float64' }, body: inner });
    this.cover(`guvectorize ${layout}`);
    return { kind: 'guvectorize', params, outputs: 1, layout, helpers: this.helpers, body };
  }

  private scope(scalars: readonly Param[]): Scope {
    return { vars: scalars.map((p) => ({ name: p.name, t: p.dtype })), rows: [], cells: [], locals: [], assignable: [], inLoop: false, counters: [] };
  }
}

/** Locals a statement list declares at its top level (readable after it). */
function declared(body: readonly Stmt[]): { name: string; t: DT }[] {
  return body.flatMap((s) => (s.k === 'let' ? [{ name: s.name, t: s.t }] : []));
}

function declaredArrays(body: readonly Stmt[]): { arr: string; t: DT; length: number }[] {
  return body.flatMap((s) => (s.k === 'localArray' ? [{ arr: s.name, t: s.dtype, length: s.length }] : []));
}

/** Values of a dtype for operands: special values often (NaN, ±∞, ±0, limits, halves, subnormals). */
export function randomValue(rng: Rng, t: DT, profile: Profile): number {
  switch (t) {
    case 'float64': case 'float32': {
      const specials = [NaN, Infinity, -Infinity, 0, -0, 0.5, -0.5, 1.5, 2.5, -2.5, 1, -1, 2 ** 31, -(2 ** 31) - 1, 2 ** 32, 1e-3, 3.4e38, 1e-40, 1e-45, 255.5, 1e300, 5e-324];
      const v = rng.chance(0.4) ? rng.pick(specials) : rng.chance(0.5) ? (rng.next() - 0.5) * 20 : (rng.next() - 0.5) * 2 ** (rng.int(80) - 20);
      const f = t === 'float32' ? Math.fround(v) : v;
      return profile === 'gpu' && Math.abs(f) < 1.2e-38 ? 0 : f;
    }
    case 'int32': return rng.chance(0.3) ? rng.pick([-(2 ** 31), 2 ** 31 - 1, -1, 0, 1, 7, -7]) : rng.chance(0.5) ? rng.int(21) - 10 : (rng.next() * 2 ** 32) | 0;
    case 'uint32': return rng.chance(0.3) ? rng.pick([0, 1, 2 ** 32 - 1, 2 ** 31, 7]) : rng.chance(0.5) ? rng.int(20) : (rng.next() * 2 ** 32) >>> 0;
    case 'int16': return rng.int(65536) - 32768;
    case 'uint16': return rng.int(65536);
    case 'int8': return rng.int(256) - 128;
    case 'uint8': case 'uint8c': return rng.int(256);
    case 'bool': return rng.int(2);
  }
}
