/**
 * Values of constant expressions, computed when the kernel is compiled, with the cpu's semantics.
 *
 * The gpu computes float64 values in f32 (or i32, see integral-doubles.ts). A constant expression
 * such as `-2147483648 / -1` or `-1 >>> 0` is known exactly when compiling, so it is folded here, in
 * doubles, instead of being computed in f32 on the device (where `-2147483648 / -1` is 2³¹ rounded
 * and `x + 2³¹` loses x). Only what the typed IR fully determines is folded: literals, unary and
 * binary operators and conversions; not `Math.*` (the gpu's built-ins differ in the last ULPs, and a
 * folded value would make the same expression give two answers).
 */
import type { Expr } from '../ir.js';
import type { DType } from '../../dtypes.js';

/**
 * The value of a constant expression of a 32-bit-or-smaller number type, or undefined when `e` is
 * not constant (or is of a type not folded here: bool, 64-bit integers).
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
      if (a === undefined || e.op === '!') return undefined;
      return coerce(e.op === '-' ? -a : ~a, e.type);
    }
    case 'binary': {
      const a = constantValue(e.left);
      const b = constantValue(e.right);
      if (a === undefined || b === undefined) return undefined;
      const float = e.type === 'float64' || e.type === 'float32';
      switch (e.op) {
        case '+': return coerce(a + b, e.type);
        case '-': return coerce(a - b, e.type);
        case '*': return float ? coerce(a * b, e.type) : coerce(Math.imul(a, b), e.type);
        // Integer division and remainder follow the cpu's own rules (lower.ts); not folded here.
        case '/': return float ? coerce(a / b, e.type) : undefined;
        case '%': return float ? coerce(a % b, e.type) : undefined;
        case '**': return float ? coerce(a ** b, e.type) : undefined;
        case '&': return coerce(a & b, e.type);
        case '|': return coerce(a | b, e.type);
        case '^': return coerce(a ^ b, e.type);
        case '<<': return coerce(a << b, e.type);
        case '>>': return coerce(a >> b, e.type);
        case '>>>': return coerce(a >>> b, e.type);
      }
      return undefined;
    }
    case 'cast': {
      const a = constantValue(e.value);
      return a === undefined ? undefined : coerce(a, e.type);
    }
    default:
      return undefined;
  }
}

/** A number as a value of `type` (the IR's cast semantics: JS's typed-array stores). */
function coerce(v: number, type: DType): number | undefined {
  switch (type) {
    case 'float64': return v;
    case 'float32': return Math.fround(v);
    case 'int32': return v | 0;
    case 'uint32': return v >>> 0;
    case 'int16': return (v << 16) >> 16;
    case 'int8': return (v << 24) >> 24;
    case 'uint16': return v & 0xffff;
    case 'uint8': return v & 0xff;
    case 'uint8c': return Number.isNaN(v) || v <= 0 ? 0 : v >= 255 ? 255 : roundHalfToEven(v);
    case 'bool': case 'int64': case 'uint64': return undefined; // not folded here
    default: {
      const never: never = type;
      throw new Error(`internal: no constant conversion to ${String(never)}`);
    }
  }
}

/** Uint8ClampedArray's rounding of a value strictly between 0 and 255: to nearest, ties to even. */
function roundHalfToEven(v: number): number {
  const f = Math.floor(v);
  const d = v - f;
  return d > 0.5 || (d === 0.5 && f % 2 === 1) ? f + 1 : f;
}
