/**
 * Typed IR → WGSL, one function at a time (the kernel, or one specialisation of a helper). The
 * meaning is the cpu target's (emit-js.ts); every place where WGSL differs from JS goes through a
 * support function (wgsl-support.ts) or is documented in docs/gpu.md.
 *
 * Representations. Each IR value lives in one WGSL scalar type, its *rep*:
 * - float32 → f32; int32, int16, int8, uint16, uint8, uint8c → i32 (small types hold their exact value,
 *   wrapped where the IR casts); uint32 → u32; bool → bool;
 * - float64 → i32 where integral-doubles.ts proves it holds integers (loop counters), else f32:
 *   WGSL has no f64, so a double local of a float32 kernel (`let c = 1.0; c *= i`) is computed in
 *   f32 on the gpu. That is the gpu target's one documented departure from the cpu's meaning.
 *
 * Evaluation order and laziness. JS evaluates `c ? a : b`, `a && b` and `a || b` lazily, and an
 * out-of-bounds load or a helper call has an effect (it reports an error, or writes an array). So
 * an expression whose lazy operand has an effect is *linearised*: statements that compute it
 * (a "prelude", with `if`/`else`) go before the statement that uses it, and operands to its left
 * that have effects are first bound to `let`s, so they still run first.
 *
 * Locals are declared where the kernel declares them (`let c = 1` → `var c: f32 = 1.0f;`):
 * WGSL's block scopes are JS's, and every name is unique in the module, so nothing is shadowed.
 * Loops become WGSL `for` where their parts are single statements, else `loop` with `continuing`.
 */
import { type DType, isFloat } from '../../../dtypes.js';
import type { Argument, Expr, HelperFunction, Stmt, Variable } from '../../../compiler/ir.js';
import { type IndexCheckSite, indexCheckSite, placeInFile, textPosition } from '../../../compiler/source-excerpt.js';
import type { MathFunction } from '../../../compiler/math-functions.js';
import { KernelCompileError, type SourceLocation } from '../../../errors.js';
import { constantValue } from '../../../compiler/constant-folding.js';
import type { IntegralDoubles, ValueContext } from '../../../compiler/passes/integral-doubles.js';
import { type ArrayAccessNode, findInBoundsAccesses } from '../../../compiler/passes/bounds.js';
import type { WgslNamer } from './namer.js';
import type { SupportLibrary, SupportName } from './wgsl-support.js';

/** The WGSL scalar type that holds an IR value. */
export type Rep = 'f32' | 'i32' | 'u32' | 'bool';

/** The rep of values of a dtype that are not integral doubles. */
export function repOfType(t: DType): Rep {
  switch (t) {
    case 'float32': case 'float64': return 'f32';
    case 'uint32': return 'u32';
    case 'bool': return 'bool';
    case 'int32': case 'int16': case 'int8': case 'uint16': case 'uint8': case 'uint8c': return 'i32';
    // 64-bit integers never reach WGSL (refused before); i32 keeps the switch total.
    case 'int64': case 'uint64': return 'i32';
    default: {
      const never: never = t;
      throw new Error(`internal: no WGSL rep for ${String(never)}`);
    }
  }
}

/** Where an array's elements live, as far as the code that reaches them depends on it. */
export type ArrayOrigin =
  /** A storage binding (a kernel operand); unit-stride axes are compiled in. */
  | { readonly kind: 'binding'; readonly binding: number; readonly unitStrides: readonly boolean[] }
  /** A workgroup tile that stages an operand's rows (coalescing.ts). */
  | { readonly kind: 'tile'; readonly tile: number }
  /** A function-scope `array<T, K>` (a local typed array). */
  | { readonly kind: 'local'; readonly dtype: DType; readonly length: number }
  /** A lookup table (compiler/tables.ts): a module-scope binding, which no function is passed. */
  | { readonly kind: 'table'; readonly name: string };

export function originKey(o: ArrayOrigin): string {
  switch (o.kind) {
    case 'binding': return `b${o.binding}:${o.unitStrides.map((u) => (u ? '1' : 's')).join('')}`;
    case 'tile': return `t${o.tile}`;
    case 'local': return `l${o.dtype}:${o.length}`;
    case 'table': return `T${o.name}`;
  }
}

/** How the code of one function reaches one array variable. */
export interface ArrayAccess {
  readonly origin: ArrayOrigin;
  readonly dtype: DType;
  /** The element offset of [0, 0, …], a u32 expression. */
  readonly base: string;
  /** Per axis, the stride in elements (u32 expression; `1u` when known). */
  readonly strides: readonly string[];
  /** Per axis, the extent (u32 expression). */
  readonly dims: readonly string[];
  /** A load of element `element` (u32 expression), in the dtype's rep. */
  load(element: string): string;
  /** A statement (no indentation or newline) that stores `value` (in the dtype's rep). */
  store(element: string, value: string): string;
  /** What a caller passes for this array to a helper specialised for `origin`. */
  readonly args: readonly string[];
  /** For local arrays: the statement that declares it (zero-filled). */
  readonly declaration?: string;
  /** For staged rows: a load from memory, bypassing the tile (reads before any write). */
  loadFromMemory?(element: string): string;
}

/** What function emitters share across one module. */
export interface ModuleServices {
  readonly namer: WgslNamer;
  readonly support: SupportLibrary;
  readonly doubles: IntegralDoubles;
  /** Present when the call checks indices. */
  readonly bounds: BoundsServices | undefined;
  /** Reads of staged rows that happen before anything is written over them (compiler/passes/output-coverage.ts). */
  readonly memoryReads: ReadonlySet<Expr>;
  /** The name of `helper` specialised for where its array arguments live (emitted on demand). */
  helperInstance(helper: HelperFunction, arrays: readonly (ArrayAccess | undefined)[]): string;
}

export interface BoundsServices {
  /** The private flag set by a failed check; stores and loops test it. */
  readonly failed: string;
  /** Registers a check site; returns its number (reported back in the error record). */
  site(site: IndexCheckSite): number;
  /** The checker function for indices of these reps ('i' for i32, 'f' for f32), e.g. `if`. */
  checker(kinds: string): string;
}

/** A WGSL expression and whether evaluating it has an effect (reports, stores). */
interface Code {
  readonly text: string;
  readonly effects: boolean;
}

const pure = (text: string): Code => ({ text, effects: false });

/** How a `return` is written in the function being emitted. */
export interface ReturnForm {
  /** The rep of the returned value, or undefined for `void`. */
  readonly rep: Rep | undefined;
}

export class FunctionEmitter {
  /** The accesses of the body being emitted that passes/bounds.ts proves in bounds: not checked. */
  private inBounds = findInBoundsAccesses([]);

  constructor(
    private readonly m: ModuleServices,
    /** Array variables of this function: parameters and local arrays. */
    private readonly arrays: ReadonlyMap<Variable, ArrayAccess>,
    /** Scalar variables of this function: their WGSL names. */
    private readonly names: ReadonlyMap<Variable, string>,
    private readonly returns: ReturnForm,
  ) {}

  /** The rep of a scalar variable. */
  repOfVariable(v: Variable): Rep {
    const t = v.type as DType;
    if (t === 'float64') return this.m.doubles.hasVariable(v) ? 'i32' : 'f32';
    return repOfType(t);
  }

  private rep(e: Expr, context: ValueContext): Rep {
    if (e.type === 'float64') return this.m.doubles.isIntegral(e, context) ? 'i32' : 'f32';
    return repOfType(e.type);
  }

  private temp(hint = 't'): string {
    return this.m.namer.fresh(hint);
  }

  // ------------------------------------------------------------------ statements

  /** Emits a function body (first asking which of its accesses need no bounds check). */
  body(list: readonly Stmt[], ind: string): string {
    if (this.m.bounds) this.inBounds = findInBoundsAccesses(list, { knownLength: (array, axis) => this.knownLength(array, axis) });
    return this.stmts(list, ind);
  }

  /**
   * What the gpu knows of a dimension beyond the IR: the lengths of staging tiles and of the local
   * arrays a helper is specialised for are WGSL constants (`16u`).
   */
  private knownLength(array: Variable, axis: number): number | undefined {
    const text = this.arrays.get(array)?.dims[axis];
    return text !== undefined && /^\d+u$/.test(text) ? Number.parseInt(text, 10) : undefined;
  }

  stmts(list: readonly Stmt[], ind: string): string {
    return list.map((s) => this.stmt(s, ind)).join('');
  }

  private stmt(s: Stmt, ind: string): string {
    const pre: string[] = [];
    const out = (line: string) => pre.join('') + `${ind}${line}\n`;
    switch (s.kind) {
      case 'let': {
        // Declared where the kernel declares it: WGSL's block scopes are JS's, and locals hoisted
        // to the top of the function measured 1.3× slower on an H200 (live across everything).
        const rep = this.repOfVariable(s.variable);
        const value = this.as(s.init, 'value', rep, pre, ind);
        return out(`var ${this.names.get(s.variable)!}: ${rep} = ${unparen(value.text)};`);
      }
      case 'assign': {
        const value = this.as(s.value, 'value', this.repOfVariable(s.variable), pre, ind);
        return out(`${this.names.get(s.variable)!} = ${unparen(value.text)};`);
      }
      case 'local-array':
        // Zero-filled, as `new Float32Array(k)` is, on every pass through here: the declaration
        // carries an explicit zero value, because Dawn's compiler hoists a WGSL `var` without one to
        // the function's start and zeroes it once (lavapipe: a local array declared in a loop kept
        // the previous iteration's elements; tests/targets/gpu/unroll.properties.test.ts).
        return `${ind}${this.arrays.get(s.variable)!.declaration!}\n`;
      case 'store': {
        const access = this.arrays.get(s.array)!;
        let address = this.address(s, access, pre, ind);
        if (address.effects) {
          // The index check runs before the value is computed, as on the cpu.
          const t = this.temp('at');
          pre.push(`${ind}let ${t} = ${address.text};\n`);
          address = pure(t);
        }
        const value = this.as(s.value, 'value', repOfType(access.dtype), pre, ind);
        const store = access.store(address.text, value.text);
        return out(this.m.bounds ? `if (!${this.m.bounds.failed}) { ${store} }` : store);
      }
      case 'if': {
        const cond = this.as(s.cond, 'value', 'bool', pre, ind);
        const otherwise = s.otherwise.length ? ` else {\n${this.stmts(s.otherwise, ind + '  ')}${ind}}` : '';
        return pre.join('') + `${ind}if (${unparen(cond.text)}) {\n${this.stmts(s.then, ind + '  ')}${ind}}${otherwise}\n`;
      }
      case 'loop':
        return this.loop(s, ind);
      case 'break':
        return `${ind}break;\n`;
      case 'continue':
        return `${ind}continue;\n`;
      case 'return': {
        if (!this.returns.rep) return `${ind}return;\n`;
        if (!s.value) return `${ind}return ${this.undefinedValue(this.returns.rep)};\n`;
        const value = this.as(s.value, 'value', this.returns.rep, pre, ind);
        return out(`return ${unparen(value.text)};`);
      }
      case 'call': {
        const call = this.expr(s.call, 'value', pre, ind);
        return out(`${call.text};`);
      }
      case 'draw':
        // float64 draws too: the gpu computes float64 in f32 (random-stream.ts).
        return out(`var ${this.names.get(s.variable)!}: f32 = ${this.m.support.use('js_random_f32')}();`);
    }
  }

  /**
   * Every loop becomes WGSL's `loop` with the update in `continuing`, which is where `continue`
   * goes — exactly JS's `for` (update, then test). A `do … while` tests with `break if`.
   */
  private loop(s: Extract<Stmt, { kind: 'loop' }>, ind: string): string {
    const inner = ind + '  ';
    const body = () => {
      // After a failed index check the element is abandoned (the cpu throws); leaving every loop
      // makes sure a kernel reading zeros instead of the missing element cannot loop forever.
      let text = this.m.bounds ? `${inner}if (${this.m.bounds.failed}) { break; }\n` : '';
      text += this.stmts(s.body, inner);
      return text;
    };
    // A loop whose parts are single plain statements is a WGSL `for`: drivers recognise it (and
    // unroll it) where they do not see through `loop { if (!c) { break; } … }` (measured on an
    // H200: the Hermite recurrence ran 1.5× slower as `loop`).
    const simple = this.forHeader(s);
    if (simple) return `${ind}for (${simple}) {\n${body()}${ind}}\n`;

    let out = this.stmts(s.init, ind);
    out += `${ind}loop {\n`;
    let text = '';
    // `while (true)` has nothing to test.
    if (s.testFirst && s.cond && !(s.cond.kind === 'const' && s.cond.value === true)) {
      const pre: string[] = [];
      const cond = this.as(s.cond, 'value', 'bool', pre, inner);
      text += pre.join('') + `${inner}if (!${paren(cond.text)}) { break; }\n`;
    }
    const bodyText = body();
    // The flag test goes first, then the loop's own test.
    out += this.m.bounds ? bodyText.replace(/^(.*\n)/, `$1${text}`) : text + bodyText;
    const testLast = !s.testFirst && s.cond;
    if (s.update.length || testLast) {
      out += `${inner}continuing {\n${this.stmts(s.update, inner + '  ')}`;
      if (testLast) {
        const pre: string[] = [];
        const cond = this.as(s.cond!, 'value', 'bool', pre, inner + '  ');
        out += pre.join('') + `${inner}  break if !${paren(cond.text)};\n`;
      }
      out += `${inner}}\n`;
    }
    return out + `${ind}}\n`;
  }

  /**
   * `init; cond; update` for a WGSL `for`, when the loop tests first and each part is one
   * statement that needs no prelude (a `for` header holds no statements of its own).
   */
  private forHeader(s: Extract<Stmt, { kind: 'loop' }>): string | undefined {
    if (!s.testFirst || s.init.length > 1 || s.update.length > 1) return undefined;
    const part = (list: readonly Stmt[]): string | undefined => {
      if (list.length === 0) return '';
      const [t] = list;
      if (t!.kind !== 'let' && t!.kind !== 'assign') return undefined;
      const text = this.stmt(t!, '');
      return text.includes('\n') && text.indexOf('\n') !== text.length - 1 ? undefined : text.replace(/;\n$/, '');
    };
    const init = part(s.init);
    const update = part(s.update);
    if (init === undefined || update === undefined) return undefined;
    let cond = '';
    if (s.cond && !(s.cond.kind === 'const' && s.cond.value === true)) {
      const pre: string[] = [];
      const c = this.as(s.cond, 'value', 'bool', pre, '');
      if (pre.length) return undefined;
      cond = unparen(c.text);
    }
    return `${init}; ${cond}; ${update}`;
  }

  /** What JS gives for a missing return value, converted to `rep` (NaN for numbers). */
  undefinedValue(rep: Rep): string {
    switch (rep) {
      case 'f32': return `${this.m.support.use('js_nan')}()`;
      case 'i32': return '0i';
      case 'u32': return '0u';
      case 'bool': return 'false';
    }
  }

  // ------------------------------------------------------------------ expressions

  /** `e` in rep `rep` (only integral doubles change rep: i32 → f32). */
  private as(e: Expr, context: ValueContext, rep: Rep, pre: string[], ind: string): Code {
    const folded = this.folded(e, rep);
    if (folded) return folded;
    const code = this.expr(e, context, pre, ind);
    const from = this.rep(e, context);
    if (from === rep) return code;
    // Hidden, as convert()'s integer → f32 (the driver may know the integer: a counter after an unrolled loop).
    if (from === 'i32' && rep === 'f32') return { text: this.m.support.hide(`f32(${unparen(code.text)})`), effects: code.effects };
    throw new Error(`internal: no representation change from ${from} to ${rep} for a ${e.type} ${e.kind}`);
  }

  /**
   * Emits operands left to right. When a later operand needs a prelude, earlier operands with
   * effects are bound to `let`s first, so effects keep JS's order.
   */
  private operands(list: readonly { e: Expr; context: ValueContext; rep: Rep }[], pre: string[], ind: string): Code[] {
    const codes: Code[] = [];
    for (const { e, context, rep } of list) {
      const sub: string[] = [];
      const code = this.as(e, context, rep, sub, ind);
      if (sub.length) {
        codes.forEach((c, k) => {
          if (!c.effects) return;
          const t = this.temp();
          pre.push(`${ind}let ${t} = ${unparen(c.text)};\n`);
          codes[k] = pure(t);
        });
        pre.push(...sub);
      }
      codes.push(code);
    }
    return codes;
  }

  /**
   * A constant expression as a literal in `rep`, its value computed now with the cpu's semantics
   * (compiler/constant-folding.ts), or undefined when `e` is not constant. A float64 constant the gpu would
   * hold in f32 is refused where f32 cannot hold it at all: ±Infinity for 1e39 where the cpu
   * computes `x - 1e39` in doubles, 0 for 1e-50.
   */
  private folded(e: Expr, rep: Rep): Code | undefined {
    const value = e.kind === 'const' ? e.value : constantValue(e);
    if (value === undefined) return undefined;
    if (rep === 'f32' && e.type === 'float64' && typeof value === 'number' && Number.isFinite(value) && value !== 0) {
      const single = Math.fround(value);
      if (!Number.isFinite(single) || single === 0) {
        throw refusedAt(
          e.loc,
          `The constant ${value} at kernel line ${e.loc.line}:${e.loc.column} is a double (float64) value, which the gpu target computes in f32 (WGSL has no 64-bit floats), and f32 cannot hold it: it would be ${single}, not ${value}. Use a constant within float32's range (about 1.2e-38 to 3.4e38), make the computation float32 on purpose (\`Math.fround(${value})\`), or use target 'cpu' or 'parallel'.`,
        );
      }
    }
    return pure(literal(value, rep, this.m.support));
  }

  private expr(e: Expr, context: ValueContext, pre: string[], ind: string): Code {
    const folded = this.folded(e, this.rep(e, context));
    if (folded) return folded;
    switch (e.kind) {
      case 'const':
        return pure(literal(e.value, this.rep(e, context), this.m.support));
      case 'var':
        return pure(this.names.get(e.variable)!);
      case 'dim':
        return pure(`i32(${this.arrays.get(e.array)!.dims[e.axis]!})`);
      case 'unary': {
        const rep = this.rep(e, context);
        const [a] = this.operands([{ e: e.arg, context: e.op === '-' && rep !== 'f32' ? context : 'value', rep: e.op === '!' ? 'bool' : rep }], pre, ind);
        const text = e.op === '!' ? `!${paren(a!.text)}` : e.op === '~' ? `(~${paren(a!.text)})` : rep === 'u32' ? `(0u - ${a!.text})` : `(-${paren(a!.text)})`;
        return { text, effects: a!.effects };
      }
      case 'binary':
        return this.binary(e, context, pre, ind);
      case 'compare': {
        const test = this.specialValueTest(e, pre, ind);
        if (test) return test;
        const both = e.operandType === 'float64' && this.m.doubles.isIntegral(e.left, 'value') && this.m.doubles.isIntegral(e.right, 'value');
        const rep: Rep = e.operandType === 'float64' ? (both ? 'i32' : 'f32') : repOfType(e.operandType);
        let [a, b] = this.operands([{ e: e.left, context: 'value', rep }, { e: e.right, context: 'value', rep }], pre, ind);
        if (e.op === '!=' && rep === 'f32') {
          // JS's `!==` is true when either side is NaN. Drivers compile WGSL's `!=` on floats to an
          // ordered comparison (false for NaN: lavapipe does), so NaN is tested on the bits.
          [a, b] = [a!, b!].map((c) => {
            if (!c.effects) return c;
            const t = this.temp();
            pre.push(`${ind}let ${t} = ${unparen(c.text)};\n`);
            return pure(t);
          });
          // A constant operand that is not NaN needs no test.
          const tests = [e.left, e.right]
            .map((x, k) => (constantValue(x) !== undefined && !Number.isNaN(constantValue(x)) ? undefined : [a, b][k]!))
            .filter((c): c is Code => c !== undefined)
            .map((c) => `${this.m.support.use('js_is_nan')}(${unparen(c.text)}) || `);
          return pure(`(${tests.join('')}(${a!.text} != ${b!.text}))`);
        }
        return { text: `(${a!.text} ${e.op} ${b!.text})`, effects: a!.effects || b!.effects };
      }
      case 'logical':
        return this.logical(e, pre, ind);
      case 'select':
        return this.select(e, context, pre, ind);
      case 'cast':
        return this.cast(e, context, pre, ind);
      case 'math':
        return this.math(e, context, pre, ind);
      case 'call':
        return this.call(e, pre, ind);
      case 'index': {
        const access = this.arrays.get(e.array)!;
        const address = this.address(e, access, pre, ind);
        const load = this.m.memoryReads.has(e) && access.loadFromMemory ? access.loadFromMemory : access.load;
        // A local array starts zero-filled: the driver can prove such an element zero and fold
        // `0 / x` to 0 or `0 + x` to x (JS: NaN, and +0 for x = −0). Hidden.
        if (access.origin.kind === 'local' && isFloat(access.dtype)) return { text: this.m.support.hide(load(address.text)), effects: address.effects };
        return { text: load(address.text), effects: address.effects };
      }
    }
  }

  /**
   * `x !== x` (isNaN) and `x - x === 0` (isFinite), as lowering writes them, tested on the bits:
   * WGSL lets compilers assume there are no NaNs or infinities, and lavapipe does fold
   * `x - x == 0` to true.
   */
  private specialValueTest(e: Extract<Expr, { kind: 'compare' }>, pre: string[], ind: string): Code | undefined {
    if (!isFloat(e.operandType)) return undefined;
    const sameOperands = e.left === e.right || (e.left.kind === 'var' && e.right.kind === 'var' && e.left.variable === e.right.variable);
    if ((e.op === '!=' || e.op === '==') && sameOperands && this.rep(e.left, 'value') === 'f32') {
      const x = this.as(e.left, 'value', 'f32', pre, ind);
      const isNan = `${this.m.support.use('js_is_nan')}(${unparen(x.text)})`;
      return { text: e.op === '!=' ? isNan : `!${isNan}`, effects: x.effects };
    }
    const l = e.left;
    if (e.op === '==' && l.kind === 'binary' && l.op === '-' && l.left === l.right && e.right.kind === 'const' && e.right.value === 0 && this.rep(l, 'value') === 'f32') {
      const x = this.as(l.left, 'value', 'f32', pre, ind);
      return { text: `${this.m.support.use('js_is_finite')}(${unparen(x.text)})`, effects: x.effects };
    }
    return undefined;
  }

  private binary(e: Extract<Expr, { kind: 'binary' }>, context: ValueContext, pre: string[], ind: string): Code {
    const rep = this.rep(e, context);
    // Children of + - * keep the index or modular context (wrapping is exact modulo 2^32) where the
    // operation itself is in i32; others, and children of an f32 operation, are values (an i32
    // child wrapped modulo 2^32 would be wrong as an f32 operand).
    const childContext: ValueContext = rep !== 'f32' && (e.op === '+' || e.op === '-' || e.op === '*') ? context : 'value';
    const operandRep = (x: Expr): Rep => (rep === 'f32' ? 'f32' : this.rep(x, childContext));
    const [a, b] = this.operands(
      [{ e: e.left, context: childContext, rep: operandRep(e.left) }, { e: e.right, context: childContext, rep: operandRep(e.right) }],
      pre,
      ind,
    );
    const effects = a!.effects || b!.effects;
    const call = (fn: SupportName) => ({ text: `${this.m.support.use(fn)}(${a!.text}, ${b!.text})`, effects });
    const infix = () => ({ text: `(${a!.text} ${e.op} ${b!.text})`, effects });
    switch (e.op) {
      case '+': case '-':
        // The right operand hidden from the driver: no `x - x` → 0 or `(x + y) - y` → x (wgsl-support.ts).
        // A constant is hidden already.
        if (rep === 'f32' && !b!.text.startsWith('js_hide(')) return { text: `(${a!.text} ${e.op} ${this.m.support.hide(unparen(b!.text))})`, effects };
        return infix();
      case '*': case '/': case '&': case '|': case '^':
        return infix();
      case '%':
        if (rep === 'f32') return call('js_fmod');
        if (rep === 'u32') return call('js_urem');
        return call(e.type === 'float64' ? 'js_irem_index' : 'js_irem');
      case '<<': case '>>': case '>>>':
        // JS masks shift counts to 5 bits; `>>` on i32 is arithmetic, `>>>` shifts a u32.
        return { text: `(${a!.text} ${e.op === '<<' ? '<<' : '>>'} (${b!.text} & 31u))`, effects };
      case '**':
        return call('js_pow');
    }
  }

  private logical(e: Extract<Expr, { kind: 'logical' }>, pre: string[], ind: string): Code {
    const left = this.as(e.left, 'value', 'bool', pre, ind);
    const rightPre: string[] = [];
    const right = this.as(e.right, 'value', 'bool', rightPre, ind + '  ');
    // WGSL's && and || short-circuit as JS's do, unless the right side needs statements first.
    if (!rightPre.length) return { text: `(${left.text} ${e.op} ${right.text})`, effects: left.effects || right.effects };
    const t = this.temp();
    pre.push(
      `${ind}var ${t} = ${unparen(left.text)};\n${ind}if (${e.op === '&&' ? t : `!${t}`}) {\n${rightPre.join('')}${ind}  ${t} = ${unparen(right.text)};\n${ind}}\n`,
    );
    return pure(t);
  }

  private select(e: Extract<Expr, { kind: 'select' }>, context: ValueContext, pre: string[], ind: string): Code {
    const rep = this.rep(e, context);
    const cond = this.as(e.cond, 'value', 'bool', pre, ind);
    const thenPre: string[] = [];
    const elsePre: string[] = [];
    const then = this.as(e.then, 'value', rep, thenPre, ind + '  ');
    const otherwise = this.as(e.otherwise, 'value', rep, elsePre, ind + '  ');
    // WGSL's select() evaluates both sides: only for sides without effects.
    if (!thenPre.length && !elsePre.length && !then.effects && !otherwise.effects) {
      return { text: `select(${unparen(otherwise.text)}, ${unparen(then.text)}, ${unparen(cond.text)})`, effects: cond.effects };
    }
    const t = this.temp();
    pre.push(
      `${ind}var ${t}: ${rep};\n${ind}if (${unparen(cond.text)}) {\n${thenPre.join('')}${ind}  ${t} = ${unparen(then.text)};\n` +
        `${ind}} else {\n${elsePre.join('')}${ind}  ${t} = ${unparen(otherwise.text)};\n${ind}}\n`,
    );
    return pure(t);
  }

  private cast(e: Extract<Expr, { kind: 'cast' }>, context: ValueContext, pre: string[], ind: string): Code {
    const to = e.type;
    // Conversions that truncate and wrap (not uint8c's, which rounds and clamps the whole value).
    const wrapping = !isFloat(to) && to !== 'bool' && to !== 'uint8c';
    if (wrapping) {
      const division = this.integerDivision(e.value, pre, ind);
      if (division) return { text: wrapInteger(`bitcast<i32>(${division.text})`, to, division.text), effects: division.effects };
    }
    if (wrapping) {
      const sum = this.integerPlusFraction(e.value, pre, ind);
      if (sum) return { text: wrapInteger(sum.text, to, `bitcast<u32>(${unparen(sum.text)})`), effects: sum.effects };
    }
    // A double converted to an integer type is used modulo 2^32 (compiler/passes/integral-doubles.ts).
    const valueContext: ValueContext = e.value.type === 'float64' && wrapping ? 'modular' : context;
    const fromRep = this.rep(e.value, valueContext);
    const value = this.as(e.value, valueContext, fromRep, pre, ind);
    return { text: convert(value.text, e.value.type, fromRep, to, this.rep(e, context), this.m.support), effects: value.effects };
  }

  /**
   * `(a / b) | 0` (and `>>> 0`, and stores of `a / b` into int arrays) where a and b are exact
   * integers: JS divides in doubles, which for 32-bit integers truncates to the exact integer
   * quotient; f32 would not (2147483647 / 1 rounds to 2³¹). Computed on integers instead.
   *
   * @returns the quotient's 32 bits as a u32 expression, or undefined when the pattern does not apply
   */
  private integerDivision(e: Expr, pre: string[], ind: string): Code | undefined {
    if (e.kind !== 'binary' || e.op !== '/' || e.type !== 'float64') return undefined;
    const a = this.exactInteger(e.left);
    const b = this.exactInteger(e.right);
    if (!a || !b) return undefined;
    const [x, y] = this.operands([a.operand, b.operand], pre, ind);
    const fn = `js_idiv_${a.kind}${b.kind}` as SupportName;
    return { text: `${this.m.support.use(fn)}(${x!.text}, ${y!.text})`, effects: x!.effects || y!.effects };
  }

  /**
   * `(E + c) | 0`, `(E - c) | 0`, `(c + E) | 0`, `(c - E) | 0` (and `>>> 0`, and stores into integer
   * arrays) where E is an integer (an integral double, or an int or uint32 value) and c a constant
   * with a fraction: the cpu adds in doubles, exactly, and truncates; f32 would round E + c. With
   * F = floor(c), E + c truncates to E + F, plus 1 where E + F is negative (towards zero), so it is
   * computed on integers, modulo 2³². Exact while the double sum keeps c's fraction: |c| < 2³² and a
   * fraction in [2⁻¹⁸, 1 − 2⁻¹⁸] (the sum is below 2³³ in magnitude, where doubles have 20
   * fraction bits). Another such constant is refused: f32 cannot compute it as the cpu does.
   *
   * @returns the truncated sum's 32 bits as an i32 expression, or undefined when the pattern does not apply
   */
  private integerPlusFraction(e: Expr, pre: string[], ind: string): Code | undefined {
    if (e.kind !== 'binary' || (e.op !== '+' && e.op !== '-') || e.type !== 'float64') return undefined;
    const fractional = (x: Expr) => {
      const v = constantValue(x);
      return v !== undefined && Number.isFinite(v) && !Number.isInteger(v) ? v : undefined;
    };
    const constantOnLeft = fractional(e.left) !== undefined;
    const c = constantOnLeft ? fractional(e.left) : fractional(e.right);
    if (c === undefined) return undefined;
    const other = constantOnLeft ? e.right : e.left;
    const integer = this.exactInteger(other);
    if (!integer) return undefined;
    const F = Math.floor(c);
    const fraction = c - F;
    if (Math.abs(c) >= 2 ** 32 || fraction < 2 ** -18 || fraction > 1 - 2 ** -18) {
      throw refusedAt(
        e.loc,
        `The constant ${c} at kernel line ${e.loc.line}:${e.loc.column} is added to or subtracted from an integer and the result converted to an integer type; the gpu target computes that exactly only for constants below 2^32 in magnitude whose fraction is at least 2^-18 from an integer (WGSL has no 64-bit floats, and f32 would round the sum). Round the constant to what you mean (\`Math.floor\`, \`Math.ceil\`), or use target 'cpu' or 'parallel'.`,
      );
    }
    const [x] = this.operands([integer.operand], pre, ind);
    const u = integer.kind === 'u';
    const value = unparen(x!.text);
    // The sum's sign as the cpu sees it: with the constant on the right, E + F < 0 ⇔ E < −F; for
    // c − E (the constant on the left, or E subtracted), −E + F < 0 ⇔ E > F.
    const subtracted = constantOnLeft && e.op === '-';
    const negated = !constantOnLeft && e.op === '-';
    const cc = negated ? -c : c; // the constant as added: E - c is E + (−c)
    const Fc = Math.floor(cc);
    let below: string; // whether the true integer sum (±E) + Fc is negative
    if (!subtracted) {
      // E < −Fc
      const k = -Fc;
      below = u ? (k <= 0 ? 'false' : k > 2 ** 32 - 1 ? 'true' : `(${value} < ${k}u)`)
        : k <= -(2 ** 31) ? 'false' : k > 2 ** 31 - 1 ? 'true' : `(${value} < ${literal(k, 'i32', this.m.support)})`;
    } else {
      // Fc − E < 0 ⇔ E > Fc
      below = u ? (Fc < 0 ? 'true' : Fc >= 2 ** 32 - 1 ? 'false' : `(${value} > ${Fc}u)`)
        : Fc < -(2 ** 31) ? 'true' : Fc >= 2 ** 31 - 1 ? 'false' : `(${value} > ${literal(Fc, 'i32', this.m.support)})`;
    }
    const asI32 = u ? `bitcast<i32>(${value})` : paren(x!.text);
    const sum = subtracted ? `${literal(Fc, 'i32', this.m.support)} - ${asI32}` : `${asI32} + ${literal(Fc, 'i32', this.m.support)}`;
    return { text: `(${sum} + select(0i, 1i, ${below}))`, effects: x!.effects };
  }

  /** How to read a float64 operand as the exact i32 or u32 it holds, if it provably holds one. */
  private exactInteger(e: Expr): { kind: 'i' | 'u'; operand: { e: Expr; context: ValueContext; rep: Rep } } | undefined {
    if (e.kind === 'cast' && e.type === 'float64') {
      const from = e.value.type;
      if (from === 'uint32') return { kind: 'u', operand: { e: e.value, context: 'value', rep: 'u32' } };
      if (from === 'int32' || from === 'int16' || from === 'int8' || from === 'uint16' || from === 'uint8' || from === 'uint8c') {
        return { kind: 'i', operand: { e: e.value, context: 'value', rep: 'i32' } };
      }
    }
    if (e.kind === 'const' && typeof e.value === 'number' && Number.isInteger(e.value) && e.value >= 2 ** 31 && e.value < 2 ** 32) {
      return { kind: 'u', operand: { e: { ...e, type: 'uint32' }, context: 'value', rep: 'u32' } };
    }
    if (this.m.doubles.isIntegral(e, 'value')) return { kind: 'i', operand: { e, context: 'value', rep: 'i32' } };
    return undefined;
  }

  private math(e: Extract<Expr, { kind: 'math' }>, context: ValueContext, pre: string[], ind: string): Code {
    const rep = this.rep(e, context);
    // Float functions take f32s; integer ones (and those of integral doubles) their own reps.
    const argRep = (x: Expr): Rep => (rep === 'f32' ? 'f32' : this.rep(x, 'value'));
    const args = this.operands(e.args.map((x) => ({ e: x, context: 'value' as ValueContext, rep: argRep(x) })), pre, ind);
    const effects = args.some((a) => a.effects);
    const mapping = WGSL_MATH[e.fn];
    // Integers (and integral doubles) take exact built-ins; floats their f32 mapping.
    const code = rep === 'f32' ? mapping.f32 : mapping.int;
    if (!code) throw new Error(`internal: Math.${e.fn} on ${rep}`);
    return { text: code(args.map((a) => unparen(a.text)), { rep, support: this.m.support }), effects };
  }

  private call(e: Extract<Expr, { kind: 'call' }>, pre: string[], ind: string): Code {
    const h = e.helper;
    const arrays = e.args.map((a) => (a.kind === 'array-ref' ? this.arrays.get(a.array)! : undefined));
    const scalarArgs = e.args
      .map((a: Argument, i) => ({ a, param: h.params[i]! }))
      .filter((x): x is { a: Expr; param: Variable } => x.a.kind !== 'array-ref')
      .map(({ a, param }) => ({ e: a, context: 'value' as ValueContext, rep: this.repOfVariable(param) }));
    const scalars = this.operands(scalarArgs, pre, ind);
    let next = 0;
    const args = e.args.flatMap((a, i) => (a.kind === 'array-ref' ? arrays[i]!.args : [unparen(scalars[next++]!.text)]));
    return { text: `${this.m.helperInstance(h, arrays)}(${args.join(', ')})`, effects: true };
  }

  /** The element offset of `array[indices]`, checked against its dims when the call checks bounds. */
  private address(node: ArrayAccessNode, access: ArrayAccess, pre: string[], ind: string): Code {
    const { array, indices, loc } = node;
    const reps = indices.map((i) => this.rep(i, 'index'));
    const codes = this.operands(indices.map((e, k) => ({ e, context: 'index' as ValueContext, rep: reps[k]! })), pre, ind);
    const terms = (ks: readonly string[]) =>
      ks.map((k, axis) => (access.strides[axis] === '1u' ? k : `${k} * ${access.strides[axis]}`));
    const offset = (ts: readonly string[]) => (access.base === '0u' ? ts.join(' + ') : [access.base, ...ts].join(' + '));
    const bounds = this.m.bounds;
    if (!bounds || this.inBounds.has(node)) {
      const constant = (e: Expr) => (e.kind === 'const' && typeof e.value === 'number' && Number.isInteger(e.value) && e.value >= 0 ? e.value : undefined);
      const ks = codes.map((c, axis) => {
        const k = constant(indices[axis]!);
        return k !== undefined ? `${k}u` : `u32(${unparen(c.text)})`;
      });
      return { text: offset(terms(ks)), effects: codes.some((c) => c.effects) };
    }
    const site = bounds.site(indexCheckSite(array.name, loc));
    const checker = bounds.checker(reps.map((r) => (r === 'f32' ? 'f' : 'i')).join(''));
    const args = codes.flatMap((c, axis) => [unparen(c.text), access.dims[axis]!]);
    const checked = `${checker}(${site}u, ${args.join(', ')})`;
    if (indices.length === 1) return { text: offset(terms([checked])), effects: true };
    const strides = `vec${indices.length}u(${access.strides.join(', ')})`;
    return { text: offset([`dot(${checked}, ${strides})`]), effects: true };
  }
}

/** Conversions with the semantics of the IR's `cast` (JS's, see ir.ts), between reps. */
export function convert(text: string, from: DType, fromRep: Rep, to: DType, toRep: Rep, support: SupportLibrary): string {
  const x = unparen(text);
  // An integer becoming an f32 is hidden from the driver: it may know the integer (a counter after
  // an unrolled loop) and fold `f32(0) + x` to x or `f32(0) * x` to 0, which JS does not (wgsl-support.ts).
  if (from === to) return fromRep === toRep ? text : fromRep === 'i32' && toRep === 'f32' ? support.hide(`f32(${x})`) : text;
  if (to === 'bool') {
    if (fromRep === 'f32') return `${support.use('js_f32_to_bool')}(${x})`;
    if (fromRep === 'bool') return text;
    return `(${text} != ${fromRep === 'u32' ? '0u' : '0i'})`;
  }
  if (fromRep === 'bool') {
    return toRep === 'f32' ? support.hide(`select(0.0f, 1.0f, ${x})`) : toRep === 'u32' ? `select(0u, 1u, ${x})` : `select(0i, 1i, ${x})`;
  }
  if (toRep === 'f32') return fromRep === 'f32' ? text : support.hide(`f32(${x})`);
  // An integral double (i32) from an integer type: uint32 keeps its low 32 bits (modular context).
  if (to === 'float64') return fromRep === 'u32' ? `bitcast<i32>(${x})` : text;
  // Uint8ClampedArray's store: clamp to 0…255 (and for floats round half to even, NaN → 0).
  if (to === 'uint8c') {
    if (from === 'uint8') return text;
    if (fromRep === 'f32') return `${support.use('js_f32_to_u8c')}(${x})`;
    return fromRep === 'u32' ? `i32(min(${x}, 255u))` : `clamp(${x}, 0i, 255i)`;
  }
  // to an integer type: first JS ToInt32 (as i32 bits), then narrow
  const asI32 = fromRep === 'f32' ? `${support.use('js_f32_to_i32')}(${x})` : fromRep === 'u32' ? `bitcast<i32>(${x})` : text;
  if (to === 'uint32') return fromRep === 'u32' ? text : `bitcast<u32>(${unparen(asI32)})`;
  return wrapInteger(asI32, to, text);
}

/**
 * Narrows an int32 value (`asI32`) to `to`'s range as a typed-array store does; `asU32` is used
 * for uint32 targets.
 */
function wrapInteger(asI32: string, to: DType, asU32: string): string {
  switch (to) {
    case 'int32': return asI32;
    case 'uint32': return asU32;
    case 'int16': return `((${asI32} << 16u) >> 16u)`;
    case 'int8': return `((${asI32} << 24u) >> 24u)`;
    case 'uint16': return `(${asI32} & 65535i)`;
    case 'uint8': return `(${asI32} & 255i)`;
    case 'uint8c': case 'bool': case 'int64': case 'uint64': case 'float32': case 'float64':
      throw new Error(`internal: no integer narrowing to ${to}`);
    default: {
      const never: never = to;
      throw new Error(`internal: no integer narrowing to ${String(never)}`);
    }
  }
}

/** A literal in rep `rep`. Non-finite floats come from support functions (WGSL has no such literals). */
export function literal(value: number | bigint | boolean, rep: Rep, support: SupportLibrary): string {
  if (rep === 'bool') return typeof value === 'boolean' ? String(value) : String(Number(value) !== 0);
  const n = typeof value === 'boolean' ? (value ? 1 : 0) : Number(value);
  switch (rep) {
    case 'i32': {
      const v = n | 0;
      return v === -2147483648 ? 'i32(-2147483648)' : v < 0 ? `(${v}i)` : `${v}i`;
    }
    case 'u32':
      return `${n >>> 0}u`;
    case 'f32':
      return f32Literal(n, support);
  }
}

function f32Literal(n: number, support: SupportLibrary): string {
  const v = Math.fround(n);
  if (Number.isNaN(v)) return `${support.use('js_nan')}()`;
  if (v === Infinity) return `${support.use('js_inf')}()`;
  if (v === -Infinity) return `(-${support.use('js_inf')}())`;
  // Hidden from the driver, so it cannot apply algebra JS does not allow (wgsl-support.ts).
  const opaque = (text: string) => support.hide(text);
  if (Object.is(v, -0)) return support.hideBits('0x80000000u'); // `-0.0f` came out as +0 on lavapipe
  // The shortest decimal that reads back as the same f32.
  let text = String(v);
  for (let digits = 1; digits <= 9; digits++) {
    const candidate = v.toPrecision(digits);
    if (Math.fround(Number(candidate)) === v) {
      text = candidate;
      break;
    }
  }
  text = text.replace(/e\+?/, 'e');
  if (!/[.e]/.test(text)) text += '.0';
  return opaque(`${text}f`);
}

/** Wraps a compound expression in parentheses unless it already is one or is atomic. */
/** The gpu's refusal of the construct at `loc`, its position said in the user's file when the message is read. */
function refusedAt(loc: SourceLocation, message: string): KernelCompileError {
  const error = new KernelCompileError(message, { line: loc.line, column: loc.column });
  placeInFile(error, textPosition(loc));
  return error;
}

export function paren(text: string): string {
  return /^[A-Za-z0-9_.]+$/.test(text) || isWrapped(text) ? text : `(${text})`;
}

/** Drops one pair of outer parentheses that wraps the whole expression. */
export function unparen(text: string): string {
  return isWrapped(text) ? text.slice(1, -1) : text;
}

/** Whether a statement list ends every path with `return` (so nothing may follow it in WGSL). */
export function alwaysReturns(list: readonly Stmt[]): boolean {
  const last = list[list.length - 1];
  if (!last) return false;
  if (last.kind === 'return') return true;
  return last.kind === 'if' && alwaysReturns(last.then) && alwaysReturns(last.otherwise);
}

function isWrapped(text: string): boolean {
  if (!text.startsWith('(') || !text.endsWith(')')) return false;
  let depth = 0;
  for (let i = 0; i < text.length; i++) {
    if (text[i] === '(') depth++;
    else if (text[i] === ')') depth--;
    if (depth === 0 && i < text.length - 1) return false;
  }
  return true;
}

/** What a Math function's WGSL code is written with: the operands' rep and the support library. */
interface WgslMathContext {
  readonly rep: Rep;
  readonly support: SupportLibrary;
}
type WgslMathCode = (args: readonly string[], c: WgslMathContext) => string;

/**
 * How WGSL computes each Math function: `f32` for float values (float32, and float64 computed in
 * f32), `int` for i32/u32 values and integral doubles (exact built-ins). A function whose typing
 * never gives that rep leaves it out (math-functions.ts).
 */
interface WgslMath {
  readonly f32?: WgslMathCode;
  readonly int?: WgslMathCode;
}

// An argument that stands for the whole call (`Math.max(a >> b)`, `Math.floor(i)` of an integer)
// keeps parentheses: WGSL refuses `x - a >> b` unparenthesised.
const fold = (fn: string, args: readonly string[]) => (args.length === 1 ? paren(args[0]!) : args.reduce((acc, x) => `${fn}(${acc}, ${x})`));
const builtin = (fn: string): WgslMathCode => (args) => `${fn}(${args.join(', ')})`;
const supported = (name: SupportName): WgslMathCode => (args, c) => `${c.support.use(name)}(${args.join(', ')})`;
const same: WgslMathCode = ([x]) => paren(x!);

const WGSL_MATH: Readonly<Record<MathFunction, WgslMath>> = {
  abs: { f32: builtin('abs'), int: ([x], c) => (c.rep === 'u32' ? paren(x!) : `abs(${x})`) },
  sign: { f32: supported('js_sign'), int: ([x], c) => (c.rep === 'u32' ? `select(0u, 1u, ${paren(x!)} != 0u)` : `sign(${x})`) },
  floor: { f32: builtin('floor'), int: same },
  ceil: { f32: builtin('ceil'), int: same },
  round: { f32: supported('js_round'), int: same },
  trunc: { f32: builtin('trunc'), int: same },
  fround: { f32: same }, // the argument is already an f32
  sqrt: { f32: supported('js_sqrt') },
  cbrt: { f32: supported('js_cbrt') },
  exp: { f32: builtin('exp') },
  expm1: { f32: supported('js_expm1') },
  log: { f32: supported('js_log') },
  log1p: { f32: supported('js_log1p') },
  log2: { f32: supported('js_log2') },
  log10: { f32: supported('js_log10') },
  sin: { f32: builtin('sin') },
  cos: { f32: builtin('cos') },
  tan: { f32: builtin('tan') },
  asin: { f32: supported('js_asin') },
  acos: { f32: supported('js_acos') },
  atan: { f32: builtin('atan') },
  sinh: { f32: supported('js_sinh') },
  cosh: { f32: builtin('cosh') },
  tanh: { f32: supported('js_tanh') },
  asinh: { f32: supported('js_asinh') },
  acosh: { f32: supported('js_acosh') },
  atanh: { f32: supported('js_atanh') },
  atan2: { f32: supported('js_atan2') },
  pow: { f32: supported('js_pow') },
  hypot: { f32: (args, c) => (args.length === 1 ? `abs(${args[0]})` : fold(c.support.use('js_hypot'), args)) },
  min: { f32: (args, c) => fold(c.support.use('js_min'), args), int: (args) => fold('min', args) },
  max: { f32: (args, c) => fold(c.support.use('js_max'), args), int: (args) => fold('max', args) },
  imul: { int: ([a, b]) => `(${paren(a!)} * ${paren(b!)})` },
  clz32: { int: ([x]) => `i32(countLeadingZeros(bitcast<u32>(${x})))` },
};
