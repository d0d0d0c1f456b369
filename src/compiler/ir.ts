/**
 * The typed IR: the definition of the kernel language.
 *
 * A kernel is a JS function whose source is parsed (acorn) and lowered to this IR once, then typed
 * once per signature. Every backend (JS for cpu and parallel, WGSL for gpu) consumes the typed IR
 * and nothing else: no backend sees the JS AST or the signature text.
 *
 * The language, in one line each:
 * - values are scalars of a `DType`, or arrays (core slices of arguments, local typed arrays);
 * - every expression carries its type; conversions are explicit `cast` nodes, inserted by typing;
 * - assignments, `++`/`--` and calls of helpers for their effect are statements, never nested in
 *   expressions, so an expression has no side effects and may be evaluated twice;
 * - control flow is structured (if, loops, break, continue, return): no labels, no exceptions.
 */
import type { DType, TypedArray } from '../dtypes.js';
import type { SourceLocation } from '../errors.js';

/** An array value: a core slice of an argument (`origin: 'param'`) or a local typed array. */
export interface ArrayType {
  readonly kind: 'array';
  readonly dtype: DType;
  readonly ndim: number;
}

export type ValueType = DType | ArrayType;

export const isArrayType = (t: ValueType): t is ArrayType => typeof t === 'object';

export type ArithmeticOp = '+' | '-' | '*' | '/' | '%' | '**';
export type BitwiseOp = '&' | '|' | '^' | '<<' | '>>' | '>>>';
export type CompareOp = '<' | '<=' | '>' | '>=' | '==' | '!=';
export type LogicalOp = '&&' | '||';
export type UnaryOp = '-' | '!' | '~';

/** The `Math.*` functions kernels may call: the table is math-functions.ts. */
export { MATH_FUNCTIONS, type MathFunction } from './math-functions.js';
import type { MathFunction } from './math-functions.js';

export const MATH_CONSTANTS: Readonly<Record<string, number>> = {
  PI: Math.PI, E: Math.E, LN2: Math.LN2, LN10: Math.LN10, LOG2E: Math.LOG2E, LOG10E: Math.LOG10E,
  SQRT2: Math.SQRT2, SQRT1_2: Math.SQRT1_2,
};

/** A local variable or parameter, unique within its function (shadowing is resolved by lowering). */
export interface Variable {
  readonly id: number;
  /** The name in the kernel's source; backends add their own prefix so names never collide. */
  readonly name: string;
  readonly type: ValueType;
}

interface ExprBase {
  readonly type: DType;
  readonly loc: SourceLocation;
}

export type Expr =
  | (ExprBase & { readonly kind: 'const'; readonly value: number | bigint | boolean })
  | (ExprBase & { readonly kind: 'var'; readonly variable: Variable })
  | (ExprBase & { readonly kind: 'unary'; readonly op: UnaryOp; readonly arg: Expr })
  /** Operands have already been cast to the operation's type (`type`, or for comparisons `operandType`). */
  | (ExprBase & { readonly kind: 'binary'; readonly op: ArithmeticOp | BitwiseOp; readonly left: Expr; readonly right: Expr })
  | (ExprBase & { readonly kind: 'compare'; readonly op: CompareOp; readonly left: Expr; readonly right: Expr; readonly operandType: DType })
  | (ExprBase & { readonly kind: 'logical'; readonly op: LogicalOp; readonly left: Expr; readonly right: Expr })
  | (ExprBase & { readonly kind: 'select'; readonly cond: Expr; readonly then: Expr; readonly otherwise: Expr })
  /**
   * A conversion. Semantics are those of storing into a typed array of `type` (and of WebGPU where
   * the same): float → int truncates toward zero and wraps modulo 2^bits, NaN → 0 (JS `ToInt32`);
   * int → float rounds to nearest; float64 → float32 rounds (`Math.fround`); anything → bool is
   * `!= 0` (NaN → false); bool → number is 0 or 1.
   */
  | (ExprBase & { readonly kind: 'cast'; readonly value: Expr })
  /**
   * `fastmath`: set by the fastmath pass (passes/fastmath.ts) where the ufunc's `fastmath` option
   * lets the cpu compute this call in its own type (float32 `Math.exp`: targets/cpu/fast-exp.ts).
   */
  | (ExprBase & { readonly kind: 'math'; readonly fn: MathFunction; readonly args: readonly Expr[]; readonly fastmath?: true })
  | (ExprBase & { readonly kind: 'call'; readonly helper: HelperFunction; readonly args: readonly Argument[] })
  /**
   * `a[i]`, `a[i][j]`: one index per dimension of the array. An index is int32, or a float (a JS
   * number such as a loop counter `let i = 0`) that must hold an integer: a fractional, negative
   * or too large index is out of bounds.
   */
  | (ExprBase & { readonly kind: 'index'; readonly array: Variable; readonly indices: readonly Expr[] })
  /** `a.length` (axis 0) and `a.shape[k]`, as int32. */
  | (ExprBase & { readonly kind: 'dim'; readonly array: Variable; readonly axis: number });

/** An argument of a helper call: a scalar expression, or a whole array passed by reference. */
export type Argument = Expr | { readonly kind: 'array-ref'; readonly array: Variable; readonly loc: SourceLocation };

export type Stmt =
  | { readonly kind: 'let'; readonly variable: Variable; readonly init: Expr; readonly loc: SourceLocation }
  /** A local typed array, zero-filled: `new Float32Array(K)` with K known when the kernel is specialised. */
  | { readonly kind: 'local-array'; readonly variable: Variable; readonly length: number; readonly loc: SourceLocation }
  | { readonly kind: 'assign'; readonly variable: Variable; readonly value: Expr; readonly loc: SourceLocation }
  | { readonly kind: 'store'; readonly array: Variable; readonly indices: readonly Expr[]; readonly value: Expr; readonly loc: SourceLocation }
  | { readonly kind: 'if'; readonly cond: Expr; readonly then: readonly Stmt[]; readonly otherwise: readonly Stmt[]; readonly loc: SourceLocation }
  /**
   * Every loop. `for (init; cond; update) body` has all parts; `while` has no init/update;
   * `do … while` has `testFirst: false`. `continue` runs `update` and then the test, as in JS.
   */
  | {
      readonly kind: 'loop';
      readonly init: readonly Stmt[];
      readonly cond: Expr | undefined;
      readonly update: readonly Stmt[];
      readonly body: readonly Stmt[];
      readonly testFirst: boolean;
      readonly loc: SourceLocation;
    }
  | { readonly kind: 'break'; readonly loc: SourceLocation }
  | { readonly kind: 'continue'; readonly loc: SourceLocation }
  | { readonly kind: 'return'; readonly value: Expr | undefined; readonly loc: SourceLocation }
  /** A helper called for its effect on arrays; its result, if any, is dropped. */
  | { readonly kind: 'call'; readonly call: Extract<Expr, { kind: 'call' }>; readonly loc: SourceLocation }
  /**
   * `Math.random()`: declares `variable` (float64, or float32 for `Math.fround(Math.random())`)
   * holding the next uniform in [0, 1) of the loop iteration's random stream
   * (compiler/random-stream.ts defines it). Lowering puts it before the statement that used the call.
   */
  | { readonly kind: 'draw'; readonly variable: Variable; readonly loc: SourceLocation };

/** A helper function from `env`, specialised for the types it is called with. */
export interface HelperFunction {
  /** Unique among the kernel's helpers: `deriv`, `deriv_1`, … for several specialisations. */
  readonly name: string;
  readonly params: readonly Variable[];
  readonly returnType: DType | 'void';
  readonly body: readonly Stmt[];
  /** Local variables declared anywhere in the body (backends may hoist declarations). */
  readonly locals: readonly Variable[];
  /** Per parameter: whether the helper stores into it (array parameters only). */
  readonly writesParam: readonly boolean[];
}

/** A lookup table: its variable (a one-dimensional array no function writes) and its contents, frozen when the ufunc was made. */
export interface KernelTable {
  readonly variable: Variable;
  readonly data: TypedArray;
}

/** A kernel typed for one signature: the unit every backend compiles. */
export interface TypedKernel {
  readonly name: string;
  /** One per argument of the signature; array parameters are core slices. */
  readonly params: readonly Variable[];
  /** `void` for guvectorize kernels; a dtype for vectorize kernels (the value returned). */
  readonly returnType: DType | 'void';
  readonly body: readonly Stmt[];
  readonly locals: readonly Variable[];
  /** Helpers reachable from the body, callees before callers. */
  readonly helpers: readonly HelperFunction[];
  /**
   * The lookup tables (typed arrays in `env`, compiler/tables.ts) the kernel and its helpers read:
   * read-only one-dimensional arrays that every function of the kernel sees. Absent: none.
   */
  readonly tables?: readonly KernelTable[];
  /** The kernel's JS source, for messages. */
  readonly source: string;
  /**
   * The ufunc's `fastmath` option: `Math.exp` of a float32 may be computed in float32
   * (targets/cpu/fast-exp.ts, within 1 ulp) instead of as V8's `Math.exp` rounded to float32. The
   * fastmath pass marks the calls it changes (`fastmath` on a `math` expression).
   */
  readonly fastmath?: boolean;
  /**
   * Of a kernel that draws random numbers, the uint32 scalar parameters through which a call
   * passes its stream (random-stream.ts `withRandomStream`): the key's two words, and the number of
   * the call's first loop iteration (0, but a gpu call streamed in chunks runs each chunk as a call
   * of its own).
   */
  readonly randomStream?: { readonly key: readonly [Variable, Variable]; readonly firstItem: Variable };
}
