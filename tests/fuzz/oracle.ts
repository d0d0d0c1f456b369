/**
 * The fuzzer's oracle: an interpreter of the kernel AST with docs/kernel-language.md's semantics —
 * float32 rounds at each operation (`Math.fround`), int32/uint32 wrap modulo 2³², `/` is true
 * division, `%` of integers by 0 is 0, bitwise operators are JS's, stores convert as typed arrays.
 * `gpu: true` gives docs/gpu.md's: a float64 value is computed in float32 (the fuzzer's gpu kernels
 * keep loop counters and integral doubles small, where i32 and f32 agree with the cpu).
 */
import type { DT, Expr, Helper, Kernel, Stmt } from './kernel-ast.js';
import { convert, isFloat, wrap } from './types.js';

/** A core slice or local array as the oracle sees it. */
export interface Slice {
  readonly dtype: DT;
  readonly shape: readonly number[];
  get(i: number, j?: number): number;
  set(v: number, i: number, j?: number): void;
}

class Return {
  constructor(readonly value: number | undefined) {}
}
class Break {}
class Continue {}
const BREAK = new Break();
export const BITWISE: ReadonlySet<string> = new Set(['&', '|', '^', '<<', '>>', '>>>']);
const CONTINUE = new Continue();

/** Runs one element (vectorize) or one row (guvectorize) of a kernel. */
export class Oracle {
  private readonly helpers: Map<string, Helper>;
  /** Every local's type, from the kernel's `let` statements (names are unique in a kernel). */
  private readonly localTypes: Map<string, DT>;

  constructor(private readonly kernel: Kernel, private readonly gpu = false) {
    this.helpers = new Map(kernel.helpers.map((h) => [h.name, h]));
    this.localTypes = collectLocalTypes(kernel.body);
  }

  /** The value of a float64 operation on this target: a double, or on the gpu an f32. */
  private f64(v: number): number {
    return this.gpu ? Math.fround(v) : v;
  }

  /** A value converted to type `t` (stores, joins, operands converted to an operation's type). */
  to(v: number, from: DT, t: DT): number {
    if (t === 'float64') return this.f64(v);
    if (from === t) return v;
    return convert(v, t);
  }

  /**
   * Runs the kernel on scalar arguments and slices; returns the vectorize result (converted to
   * its return type), or undefined.
   */
  run(scalars: ReadonlyMap<string, number>, slices: ReadonlyMap<string, Slice>): number | undefined {
    const vars = new Map(scalars);
    const arrays = new Map(slices);
    try {
      this.block(this.kernel.body, vars, arrays);
    } catch (e) {
      if (e instanceof Return) return this.kernel.returns ? convert(e.value ?? NaN, this.kernel.returns) : undefined;
      throw e;
    }
    return this.kernel.returns ? convert(NaN, this.kernel.returns) : undefined; // rule 11: no return is undefined
  }

  private block(body: readonly Stmt[], vars: Map<string, number>, arrays: Map<string, Slice>): void {
    for (const s of body) this.stmt(s, vars, arrays);
  }

  private stmt(s: Stmt, vars: Map<string, number>, arrays: Map<string, Slice>): void {
    switch (s.k) {
      case 'let':
        vars.set(s.name, this.to(this.expr(s.init, vars, arrays), s.init.t, s.t));
        return;
      case 'assign': {
        const value = this.expr(s.value, vars, arrays);
        const t = this.typeOfLocal(s.name, vars);
        if (s.op === '=') {
          vars.set(s.name, this.to(value, s.value.t, t));
          return;
        }
        const op = s.op[0] as '+' | '-' | '*';
        const result = this.arith(op, this.to(vars.get(s.name)!, t, s.opType), this.to(value, s.value.t, s.opType), s.opType);
        vars.set(s.name, this.to(result, s.opType, t));
        return;
      }
      case 'store': {
        const arr = arrays.get(s.arr)!;
        const i = this.expr(s.index, vars, arrays);
        const j = s.index2 ? this.expr(s.index2, vars, arrays) : undefined;
        arr.set(this.to(this.expr(s.value, vars, arrays), s.value.t, arr.dtype === 'float64' ? 'float64' : arr.dtype), i, j);
        return;
      }
      case 'localArray': {
        const data = new Array<number>(s.length).fill(0);
        const dtype = s.dtype;
        arrays.set(s.name, {
          dtype, shape: [s.length],
          get: (i) => data[i]!,
          set: (v, i) => { data[i] = dtype === 'float64' ? this.f64(v) : convert(v, dtype); },
        });
        return;
      }
      case 'if':
        if (this.expr(s.c, vars, arrays)) this.block(s.then, vars, arrays);
        else this.block(s.otherwise, vars, arrays);
        return;
      case 'for': {
        vars.set(s.v, 0);
        for (; vars.get(s.v)! < this.expr(s.bound, vars, arrays); vars.set(s.v, vars.get(s.v)! + 1)) {
          if (this.loopBody(s.body, vars, arrays) === 'break') break;
        }
        return;
      }
      case 'while': {
        vars.set(s.v, 0);
        while (vars.get(s.v)! < this.expr(s.bound, vars, arrays)) {
          vars.set(s.v, vars.get(s.v)! + 1);
          if (this.loopBody(s.body, vars, arrays) === 'break') break;
        }
        return;
      }
      case 'break': throw BREAK;
      case 'continue': throw CONTINUE;
      case 'return': throw new Return(s.value ? this.expr(s.value, vars, arrays) : undefined);
    }
  }

  private loopBody(body: readonly Stmt[], vars: Map<string, number>, arrays: Map<string, Slice>): 'break' | undefined {
    try {
      this.block(body, vars, arrays);
    } catch (e) {
      if (e === BREAK) return 'break';
      if (e !== CONTINUE) throw e;
    }
    return undefined;
  }

  private typeOfLocal(name: string, _vars: Map<string, number>): DT {
    return this.localTypes.get(name)!;
  }

  expr(e: Expr, vars: Map<string, number>, arrays: Map<string, Slice>): number {
    switch (e.k) {
      case 'var': return vars.get(e.name)!;
      case 'lit': return this.to(e.v, 'float64', e.t);
      case 'index': return arrays.get(e.arr)!.get(this.expr(e.index, vars, arrays));
      case 'index2': return arrays.get(e.arr)!.get(this.expr(e.i, vars, arrays), this.expr(e.j, vars, arrays));
      case 'len': return arrays.get(e.arr)!.shape[e.axis]!;
      case 'neg': {
        const a = this.to(this.expr(e.a, vars, arrays), e.a.t, e.t);
        return isFloat(e.t) ? this.round(-a, e.t) : wrap(-a, e.t);
      }
      case 'bitnot': return ~this.expr(e.a, vars, arrays);
      case 'not': return this.expr(e.a, vars, arrays) ? 0 : 1;
      case 'bin': {
        // Bitwise operators take their operands' values as they are (ToInt32 is the operator's).
        if (BITWISE.has(e.op)) return this.arith(e.op, this.expr(e.a, vars, arrays), this.expr(e.b, vars, arrays), e.t);
        const a = this.to(this.expr(e.a, vars, arrays), e.a.t, e.opType);
        const b = this.to(this.expr(e.b, vars, arrays), e.b.t, e.opType);
        return this.arith(e.op, a, b, e.opType);
      }
      case 'cmp': {
        const a = this.to(this.expr(e.a, vars, arrays), e.a.t, e.opType);
        const b = this.to(this.expr(e.b, vars, arrays), e.b.t, e.opType);
        switch (e.op) {
          case '<': return a < b ? 1 : 0;
          case '<=': return a <= b ? 1 : 0;
          case '>': return a > b ? 1 : 0;
          case '>=': return a >= b ? 1 : 0;
          case '===': case '==': return a === b ? 1 : 0;
          case '!==': case '!=': return a !== b ? 1 : 0;
        }
        break;
      }
      case 'logic': {
        const a = this.expr(e.a, vars, arrays);
        if (e.op === '&&') return a ? this.expr(e.b, vars, arrays) : 0;
        return a ? 1 : this.expr(e.b, vars, arrays);
      }
      case 'tern':
        return this.expr(e.c, vars, arrays) ? this.to(this.expr(e.a, vars, arrays), e.a.t, e.t) : this.to(this.expr(e.b, vars, arrays), e.b.t, e.t);
      case 'math': return this.math(e, vars, arrays);
      case 'isnan': return Number.isNaN(this.expr(e.a, vars, arrays)) ? 1 : 0;
      case 'isfinite': return Number.isFinite(this.expr(e.a, vars, arrays)) ? 1 : 0;
      case 'call': {
        const h = this.helpers.get(e.helper)!;
        const inner = new Map<string, number>();
        e.args.forEach((a, i) => inner.set(`p${i}`, this.to(this.expr(a, vars, arrays), a.t, h.params[i]!)));
        return this.expr(h.body, inner, arrays);
      }
    }
    throw new Error(`oracle: ${(e as Expr).k}`);
  }

  private round(v: number, t: DT): number {
    return t === 'float32' ? Math.fround(v) : this.f64(v);
  }

  /** `a op b` computed in type t (operands already converted to t). */
  arith(op: string, a: number, b: number, t: DT): number {
    switch (op) {
      case '&': return a & b;
      case '|': return a | b;
      case '^': return a ^ b;
      case '<<': return a << b;
      case '>>': return a >> b;
      case '>>>': return a >>> b;
    }
    if (isFloat(t)) {
      switch (op) {
        case '+': return this.round(a + b, t);
        case '-': return this.round(a - b, t);
        case '*': return this.round(a * b, t);
        case '/': return this.round(a / b, t);
        case '%': return this.round(a % b, t);
        case '**': return this.round(a ** b, t);
      }
    }
    switch (op) {
      case '+': return wrap(a + b, t);
      case '-': return wrap(a - b, t);
      case '*': return wrap(Math.imul(a, b), t);
      case '%': return b === 0 ? 0 : wrap(a % b, t);
    }
    throw new Error(`oracle: ${op} on ${t}`);
  }

  private math(e: Extract<Expr, { k: 'math' }>, vars: Map<string, number>, arrays: Map<string, Slice>): number {
    const args = e.args.map((a) => this.to(this.expr(a, vars, arrays), a.t, e.argType));
    const f = Math[e.fn] as (...x: number[]) => number;
    if (e.fn === 'imul' || e.fn === 'clz32') return f(...args);
    if (isFloat(e.t)) return this.round(f(...args), e.t);
    // Integer abs/sign/min/max/floor/…: the integer type, wrapped (abs(−2³¹) is −2³¹ in int32).
    return wrap(f(...args), e.t);
  }
}

function collectLocalTypes(body: readonly Stmt[], into = new Map<string, DT>()): Map<string, DT> {
  for (const s of body) {
    if (s.k === 'let') into.set(s.name, s.t);
    if (s.k === 'if') {
      collectLocalTypes(s.then, into);
      collectLocalTypes(s.otherwise, into);
    }
    if (s.k === 'for' || s.k === 'while') {
      into.set(s.v, 'float64');
      collectLocalTypes(s.body, into);
    }
  }
  return into;
}
