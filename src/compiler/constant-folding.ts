/**
 * The constant folder: values known when a kernel is compiled, computed with the IR's semantics
 * (ir.ts, docs/kernel-language.md) — exactly what the cpu target computes at run time. Every place
 * that evaluates an operation early asks here: lowering (literal-only expressions such as `2 * PI`,
 * local array lengths, conversions of literals), the constant-propagation pass, the gpu emitter
 * (which writes a folded literal where f32 would compute `-2147483648 / -1` or `-1 >>> 0` wrong)
 * and the front (a scalar argument converted to its loop's dtype).
 *
 * Folded: conversions of any value; unary and binary operators on numbers of the 32-bit-or-smaller
 * types; comparisons. Not folded: 64-bit integers (bigint arithmetic stays at run time) and
 * `Math.*` on typed operands (the gpu's built-ins differ in the last ULPs, and a folded value would
 * make the same expression give two answers); `Math.*` on literals only, which are JS numbers.
 */
import { type DType, DTYPES, isBigInt, type TypedArray } from '../dtypes.js';
import type { ArithmeticOp, BitwiseOp, CompareOp, Expr } from './ir.js';
import type { MathFunction } from './math-functions.js';

/** One typed array per dtype, through which a number is stored as a typed array of it stores it. */
const STORES = Object.fromEntries(Object.values(DTYPES).map((d) => [d.name, new d.arrayType(1)])) as Record<DType, TypedArray>;

/**
 * A value converted to `type` exactly as a cast does at run time (ir.ts `cast`): what a typed
 * array of `type` stores — floats truncate toward zero and wrap into integers, NaN and ±Infinity
 * become 0, uint8c clamps and rounds half to even, float32 rounds; anything → bool is `!= 0`
 * (NaN is false); 64-bit integers are bigints wrapped modulo 2⁶⁴.
 *
 * @example convertConstant(-1, 'uint8') // 255
 * @example convertConstant(2.5, 'uint8c') // 2
 */
export function convertConstant(value: number | bigint | boolean, type: DType): number | bigint | boolean {
  const d = DTYPES[type];
  if (d.kind === 'b') return typeof value === 'bigint' ? value !== 0n : typeof value === 'boolean' ? value : value !== 0 && !Number.isNaN(value);
  const n = typeof value === 'boolean' ? (value ? 1 : 0) : value;
  if (d.bigint) {
    const big = typeof n === 'bigint' ? n : Number.isFinite(n) ? BigInt(Math.trunc(n)) : 0n;
    return d.kind === 'i' ? BigInt.asIntN(64, big) : BigInt.asUintN(64, big);
  }
  if (d.kind === 'f') return d.bits === 32 ? Math.fround(Number(n)) : Number(n);
  // A bigint's low 32 bits, as the cpu's int64 → int32 cast keeps them: Number() first would round
  // one beyond 2⁵³. A clamped store sees the whole value (a bigint's sign and size), as Uint8ClampedArray's.
  const num = typeof n === 'bigint' && type !== 'uint8c' ? Number(BigInt.asIntN(32, n)) : Number(n);
  const store = STORES[type];
  store[0] = num;
  return store[0]!;
}

/** `v` as a number of `type`, or undefined for the types whose operators are not folded (bool, 64-bit integers). */
function asNumber(v: number, type: DType): number | undefined {
  return type === 'bool' || isBigInt(type) ? undefined : (convertConstant(v, type) as number);
}

/**
 * `-a` or `~a` in `type` (the operation's type: the operand already has it).
 *
 * @returns the value, or undefined where not folded (bool, 64-bit integers)
 * @example foldUnary('-', -2147483648, 'int32') // -2147483648 (wraps)
 */
export function foldUnary(op: '-' | '~', a: number, type: DType): number | undefined {
  return asNumber(op === '-' ? -a : ~a, type);
}

/**
 * `a op b` in `type`, the operation's type (both operands already have it), as the cpu computes
 * it: floats in doubles rounded to the type (float32: once, `Math.fround`); integers in doubles
 * then wrapped, which is exact for 32-bit operands except `*` (`Math.imul`); integer `/` and `%`
 * are JS's then converted (`(a / b) | 0`: `x / 0` and `x % 0` give 0); bitwise operators are JS's
 * (shift counts modulo 32).
 *
 * @returns the value, or undefined where not folded (bool, 64-bit integers)
 * @example foldBinary('>>>', -1, 0, 'uint32') // 4294967295
 * @example foldBinary('*', 65537, 65537, 'int32') // 131073 (wraps modulo 2³²)
 */
export function foldBinary(op: ArithmeticOp | BitwiseOp, a: number, b: number, type: DType): number | undefined {
  switch (op) {
    case '+': return asNumber(a + b, type);
    case '-': return asNumber(a - b, type);
    case '*': return asNumber(DTYPES[type].kind === 'f' ? a * b : Math.imul(a, b), type);
    case '/': return asNumber(a / b, type);
    case '%': return asNumber(a % b, type);
    case '**': return asNumber(a ** b, type);
    case '&': return asNumber(a & b, type);
    case '|': return asNumber(a | b, type);
    case '^': return asNumber(a ^ b, type);
    case '<<': return asNumber(a << b, type);
    case '>>': return asNumber(a >> b, type);
    case '>>>': return asNumber(a >>> b, type);
  }
}

/**
 * `a op b` on two numbers of one type (JS's comparisons: NaN compares false, except `!=`; −0 equals 0).
 *
 * @example foldCompare('!=', NaN, NaN) // true
 */
export function foldCompare(op: CompareOp, a: number, b: number): boolean {
  switch (op) {
    case '<': return a < b;
    case '<=': return a <= b;
    case '>': return a > b;
    case '>=': return a >= b;
    case '==': return a === b;
    case '!=': return a !== b;
  }
}

/**
 * `Math[fn](...args)` on JS numbers, as JS computes it: for literal-only calls (`Math.sqrt(2)`),
 * which are JS numbers before any kernel type applies, and for integral functions of integers
 * (`Math.max(n, 4)` sizing a local array), which every target computes exactly.
 *
 * @example foldMath('max', [3, 4]) // 4
 */
export function foldMath(fn: MathFunction, args: readonly number[]): number {
  return (Math[fn] as (...x: number[]) => number)(...args);
}

/**
 * The value of a constant expression of the typed IR of a 32-bit-or-smaller number type (a bool
 * constant reads as 0 or 1), or undefined when `e` is not constant or of a type not folded: the
 * folds above applied to literals, unary and binary operators and conversions; never `Math.*`.
 *
 * @param e - any expression
 * @returns its value, exactly as the cpu target computes it
 * @example
 * constantValue(minusOneShiftedRightByZero); // 4294967295
 */
export function constantValue(e: Expr): number | undefined {
  switch (e.kind) {
    case 'const':
      return typeof e.value === 'number' ? e.value : typeof e.value === 'boolean' ? Number(e.value) : undefined;
    case 'unary': {
      const a = constantValue(e.arg);
      return a === undefined || e.op === '!' ? undefined : foldUnary(e.op, a, e.type);
    }
    case 'binary': {
      const a = constantValue(e.left);
      const b = constantValue(e.right);
      return a === undefined || b === undefined ? undefined : foldBinary(e.op, a, b, e.type);
    }
    case 'cast': {
      const a = constantValue(e.value);
      return a === undefined ? undefined : asNumber(a, e.type);
    }
    default:
      return undefined;
  }
}
