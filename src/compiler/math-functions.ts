/**
 * The `Math.*` functions kernels may call, and what the compiler knows of each: one table. Typing
 * (lower.ts), the passes and every back end read it; each back end keeps its own
 * `Record<MathFunction, …>` of how it computes them (JS: targets/cpu/js/emit-js.ts, Wasm:
 * targets/cpu/wasm/math-support.ts, WGSL: targets/gpu/codegen/emit-wgsl.ts), so a function added
 * here does not compile until every back end says how it runs it.
 */

/**
 * How a function's result type follows from its arguments' (docs/kernel-language.md):
 * - `float`: computes in the float type of its arguments (integers use float64, as JS numbers);
 * - `keeps`: integers (64-bit ones included) keep their type, floats theirs (abs, sign, min, max);
 * - `rounding`: floats keep their type, an integer is returned as it is (floor, ceil, round, trunc);
 * - `float32`: the result is a float32 (fround);
 * - `int32`: works on int32, as JS does (imul, clz32).
 */
export type MathTyping = 'float' | 'keeps' | 'rounding' | 'float32' | 'int32';

export interface MathFunctionInfo {
  /** The fewest and the most arguments it takes in kernels. */
  readonly arity: readonly [number, number];
  readonly typing: MathTyping;
  /**
   * Of float32 arguments, the float64 result is already a float32: no rounding again after the
   * call (abs, sign, the rounding functions, min, max, fround).
   */
  readonly exactInFloat32: boolean;
  /**
   * Of integral arguments, the result is integral and computed exactly: the gpu keeps such
   * doubles in i32 (passes/integral-doubles.ts), and typing may evaluate it at compile time.
   */
  readonly integral: boolean;
}

const unary = (typing: MathTyping, exactInFloat32 = false, integral = false): MathFunctionInfo => ({ arity: [1, 1], typing, exactInFloat32, integral });
const float = unary('float');
const rounding = unary('rounding', true, true);
const variadic = (typing: MathTyping, exactInFloat32: boolean, integral: boolean): MathFunctionInfo => ({ arity: [1, 64], typing, exactInFloat32, integral });

/** Every function kernels may call, by name. */
export const MATH = {
  abs: unary('keeps', true, true),
  sign: unary('keeps', true, true),
  floor: rounding,
  ceil: rounding,
  round: rounding,
  trunc: rounding,
  fround: unary('float32', true),
  sqrt: float, cbrt: float, exp: float, expm1: float, log: float, log1p: float, log2: float, log10: float,
  sin: float, cos: float, tan: float, asin: float, acos: float, atan: float,
  sinh: float, cosh: float, tanh: float, asinh: float, acosh: float, atanh: float,
  atan2: { arity: [2, 2], typing: 'float', exactInFloat32: false, integral: false },
  pow: { arity: [2, 2], typing: 'float', exactInFloat32: false, integral: false },
  hypot: variadic('float', false, false),
  min: variadic('keeps', true, true),
  max: variadic('keeps', true, true),
  imul: { arity: [2, 2], typing: 'int32', exactInFloat32: false, integral: false },
  clz32: unary('int32'),
} as const satisfies Record<string, MathFunctionInfo>;

export type MathFunction = keyof typeof MATH;

/** The names, in the table's order. */
export const MATH_FUNCTIONS = Object.keys(MATH) as readonly MathFunction[];

/** Whether `name` is a Math function kernels may call. */
export function isMathFunction(name: string): name is MathFunction {
  return Object.hasOwn(MATH, name);
}
