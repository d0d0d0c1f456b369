/**
 * What lanes know of a float value before computing it: an interval it lies in, whether it may be
 * NaN, whether it is an integer. Code generation uses it where knowing saves instructions that
 * exist only for values that cannot occur — a conversion to int32 that need not handle huge values
 * or NaN, a narrowing whose wrap cannot change the value, a `Math.min` whose constant operand makes
 * IEEE minimum's NaN and −0 rules moot (emit-simd.ts).
 *
 * Sound for every value of the operands: intervals are widened, never assumed. A value the
 * analysis does not follow (a variable, a call) is anything, NaN included.
 */
import type { DType } from '../../../dtypes.js';
import type { Expr } from '../../../compiler/ir.js';

export interface FloatRange {
  /** Every value that is not NaN lies in [lo, hi]. */
  readonly lo: number;
  readonly hi: number;
  readonly maybeNaN: boolean;
  /** Every value that is not NaN is an integer (or ±∞, where the interval allows it). */
  readonly integral: boolean;
}

const ANYTHING: FloatRange = { lo: -Infinity, hi: Infinity, maybeNaN: true, integral: false };

const INT_RANGES: Partial<Record<DType, readonly [number, number]>> = {
  int8: [-128, 127], uint8: [0, 255], uint8c: [0, 255], int16: [-32768, 32767], uint16: [0, 65535],
  int32: [-(2 ** 31), 2 ** 31 - 1], uint32: [0, 2 ** 32 - 1], bool: [0, 1],
};

/** The values of an integer type (or bool), as a float range; undefined for a float type. */
export function integerTypeRange(t: DType): FloatRange | undefined {
  const r = INT_RANGES[t];
  return r ? { lo: r[0], hi: r[1], maybeNaN: false, integral: true } : undefined;
}

const finite = (r: FloatRange) => Number.isFinite(r.lo) && Number.isFinite(r.hi);

/** The range of a float (or integer) expression's values. */
export function floatRange(e: Expr): FloatRange {
  const asInt = integerTypeRange(e.type);
  if (asInt) return asInt;
  if (e.type !== 'float64' && e.type !== 'float32') return ANYTHING;
  switch (e.kind) {
    case 'const': {
      const v = Number(e.value);
      return Number.isNaN(v) ? ANYTHING : { lo: v, hi: v, maybeNaN: false, integral: Number.isInteger(v) };
    }
    case 'cast': {
      // An integer converts exactly (to float32 by rounding: still an integer, within the same bounds
      // widened to float32's); float64 → float32 rounds within the bounds' own roundings.
      const r = floatRange(e.value);
      if (e.type === 'float32') return { lo: Math.fround(r.lo), hi: Math.fround(r.hi), maybeNaN: r.maybeNaN, integral: r.integral };
      return r;
    }
    case 'unary':
      if (e.op !== '-') return ANYTHING;
      return negate(floatRange(e.arg));
    case 'binary':
      return binary(e.op, floatRange(e.left), floatRange(e.right), e.type);
    case 'select': {
      const a = floatRange(e.then);
      const b = floatRange(e.otherwise);
      return { lo: Math.min(a.lo, b.lo), hi: Math.max(a.hi, b.hi), maybeNaN: a.maybeNaN || b.maybeNaN, integral: a.integral && b.integral };
    }
    case 'math':
      return math(e.fn, e.args.map(floatRange));
    default:
      return ANYTHING;
  }
}

function negate(r: FloatRange): FloatRange {
  return { lo: -r.hi, hi: -r.lo, maybeNaN: r.maybeNaN, integral: r.integral };
}

/**
 * Interval arithmetic on finite operands. The bounds computed in doubles are rounded as the lanes
 * round (monotone), so a float64 result lies within them; a float32 one within their float32
 * roundings, which Math.fround of the double bounds gives (each float32 operation is the float32
 * rounding of the exact result, as Math.fround of the double result is for + − × of float32
 * operands).
 */
function binary(op: string, a: FloatRange, b: FloatRange, t: DType): FloatRange {
  if (!finite(a) || !finite(b) || !['+', '-', '*'].includes(op)) return ANYTHING;
  const maybeNaN = a.maybeNaN || b.maybeNaN;
  const integral = a.integral && b.integral;
  let lo: number;
  let hi: number;
  if (op === '+') [lo, hi] = [a.lo + b.lo, a.hi + b.hi];
  else if (op === '-') [lo, hi] = [a.lo - b.hi, a.hi - b.lo];
  else {
    const products = [a.lo * b.lo, a.lo * b.hi, a.hi * b.lo, a.hi * b.hi];
    [lo, hi] = [Math.min(...products), Math.max(...products)];
  }
  if (t === 'float32') [lo, hi] = [Math.fround(lo), Math.fround(hi)];
  // ±∞ bounds (an overflow) stay sound: the interval then holds every value it may take.
  return { lo, hi, maybeNaN, integral };
}

function math(fn: string, args: readonly FloatRange[]): FloatRange {
  const [x] = args;
  if (!x) return ANYTHING;
  switch (fn) {
    case 'round':
    case 'floor':
    case 'ceil':
    case 'trunc':
      // within one of the bounds' own rounding: [floor(lo), ceil(hi)]
      return { lo: Math.floor(x.lo), hi: Math.ceil(x.hi), maybeNaN: x.maybeNaN, integral: true };
    case 'abs': {
      const lo = x.lo >= 0 ? x.lo : x.hi <= 0 ? -x.hi : 0;
      return { lo, hi: Math.max(Math.abs(x.lo), Math.abs(x.hi)), maybeNaN: x.maybeNaN, integral: x.integral };
    }
    case 'min':
    case 'max': {
      const pick = fn === 'min' ? Math.min : Math.max;
      return {
        lo: pick(...args.map((a) => a.lo)),
        hi: pick(...args.map((a) => a.hi)),
        maybeNaN: args.some((a) => a.maybeNaN),
        integral: args.every((a) => a.integral),
      };
    }
    default:
      return ANYTHING;
  }
}

/** Whether every value of `r` converts to int32 by truncation alone (saturating truncation's range). */
export function truncatesToInt32(r: FloatRange): boolean {
  return r.lo > -(2 ** 31) - 1 && r.hi < 2 ** 31;
}

/**
 * Whether the truncation of every value of `r` fits the integer type `t`, so that the wrap of a
 * conversion to `t` changes nothing (NaN converts to 0, which every type holds).
 */
export function fitsIntegerType(r: FloatRange, t: DType): boolean {
  const bounds = INT_RANGES[t];
  return bounds !== undefined && Math.trunc(r.lo) >= bounds[0] && Math.trunc(r.hi) <= bounds[1];
}

