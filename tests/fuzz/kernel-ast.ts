/**
 * The fuzzer's own description of a kernel: a small typed AST that the generator builds, the
 * printer turns into kernel source text, and the oracle evaluates. It is independent of the
 * library's compiler (src/compiler): types follow docs/kernel-language.md's rules as written there,
 * implemented again here (types.ts), so a disagreement between the two is a finding.
 */

/** The dtypes the fuzzer uses for parameters, locals, local arrays and outputs. */
export type DT = 'float64' | 'float32' | 'int32' | 'uint32' | 'int16' | 'uint16' | 'int8' | 'uint8' | 'uint8c' | 'bool';

export type BinaryOp = '+' | '-' | '*' | '/' | '%' | '**' | '&' | '|' | '^' | '<<' | '>>' | '>>>';
export type CompareOp = '<' | '<=' | '>' | '>=' | '===' | '!==' | '==' | '!=';
export type MathFn =
  | 'abs' | 'sign' | 'floor' | 'ceil' | 'round' | 'trunc' | 'fround' | 'sqrt' | 'cbrt' | 'exp' | 'expm1' | 'log' | 'log1p' | 'log2' | 'log10'
  | 'sin' | 'cos' | 'tan' | 'asin' | 'acos' | 'atan' | 'sinh' | 'cosh' | 'tanh' | 'asinh' | 'acosh' | 'atanh'
  | 'atan2' | 'pow' | 'hypot' | 'min' | 'max' | 'imul' | 'clz32';

/** An expression. `t` is its type by the documented rules (set by the generator, read by printer and oracle). */
export type Expr =
  /** A scalar parameter, a local, or a loop counter. */
  | { readonly k: 'var'; readonly name: string; readonly t: DT }
  /** A literal: typed by the operand it meets (`t` is that type), a double on its own. */
  | { readonly k: 'lit'; readonly v: number; readonly t: DT }
  /** `arr[index]` of a core slice or local array; `index` holds an integer in bounds. */
  | { readonly k: 'index'; readonly arr: string; readonly index: Expr; readonly t: DT }
  /** `arr[i][j]` of a 2-D core slice. */
  | { readonly k: 'index2'; readonly arr: string; readonly i: Expr; readonly j: Expr; readonly t: DT }
  /** `arr.length` or `arr.shape[1]`: a double holding the size. */
  | { readonly k: 'len'; readonly arr: string; readonly axis: 0 | 1; readonly t: DT }
  | { readonly k: 'neg' | 'bitnot' | 'not'; readonly a: Expr; readonly t: DT }
  /** `opType` is the type the operation computes in (operands are converted to it). */
  | { readonly k: 'bin'; readonly op: BinaryOp; readonly a: Expr; readonly b: Expr; readonly opType: DT; readonly t: DT }
  | { readonly k: 'cmp'; readonly op: CompareOp; readonly a: Expr; readonly b: Expr; readonly opType: DT; readonly t: 'bool' }
  | { readonly k: 'logic'; readonly op: '&&' | '||'; readonly a: Expr; readonly b: Expr; readonly t: 'bool' }
  | { readonly k: 'tern'; readonly c: Expr; readonly a: Expr; readonly b: Expr; readonly t: DT }
  /** `argType` is the type the arguments are converted to; `t` the result's. */
  | { readonly k: 'math'; readonly fn: MathFn; readonly args: readonly Expr[]; readonly argType: DT; readonly t: DT }
  | { readonly k: 'isnan' | 'isfinite'; readonly a: Expr; readonly t: 'bool' }
  /** A call of an `env` helper whose body is `return <body>` over parameters `p0, p1, …`. */
  | { readonly k: 'call'; readonly helper: string; readonly args: readonly Expr[]; readonly t: DT };

export type Stmt =
  | { readonly k: 'let'; readonly name: string; readonly init: Expr; readonly t: DT }
  | { readonly k: 'assign'; readonly name: string; readonly op: '=' | '+=' | '-=' | '*='; readonly value: Expr; readonly opType: DT }
  | { readonly k: 'store'; readonly arr: string; readonly index: Expr; readonly index2?: Expr; readonly value: Expr }
  | { readonly k: 'localArray'; readonly name: string; readonly dtype: DT; readonly length: number }
  | { readonly k: 'if'; readonly c: Expr; readonly then: readonly Stmt[]; readonly otherwise: readonly Stmt[] }
  /** `for (let v = 0; v < bound; v++)` (`bound` a double expression, the trip count ≤ a few dozen). */
  | { readonly k: 'for'; readonly v: string; readonly bound: Expr; readonly body: readonly Stmt[] }
  /** `let v = 0; while (v < bound) { v++; … }` (the counter steps first, so `continue` cannot loop forever). */
  | { readonly k: 'while'; readonly v: string; readonly bound: Expr; readonly body: readonly Stmt[]; readonly doWhile: boolean }
  | { readonly k: 'break' | 'continue' }
  | { readonly k: 'return'; readonly value?: Expr };

/** A helper of `env`: `(p0, …) => <body>` where the body reads only its parameters. */
export interface Helper {
  readonly name: string;
  readonly params: readonly DT[];
  readonly body: Expr;
}

/** Where a parameter sits: a scalar per element, a 1-D core slice, a 2-D core slice. */
export type ParamShape = 'scalar' | 'row' | 'matrix';

export interface Param {
  readonly name: string;
  readonly dtype: DT;
  readonly shape: ParamShape;
}

/**
 * A kernel: vectorize (`params` are scalars, `returns` the result type) or guvectorize (`layout`,
 * the last `outputs` params are written).
 */
export interface Kernel {
  readonly kind: 'vectorize' | 'guvectorize';
  readonly params: readonly Param[];
  readonly outputs: number;
  readonly layout?: string;
  readonly returns?: DT;
  readonly helpers: readonly Helper[];
  readonly body: readonly Stmt[];
}
