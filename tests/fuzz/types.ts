/**
 * docs/kernel-language.md's typing and conversion rules, written again for the fuzzer's oracle
 * (not imported from src/compiler: the point is to check the compiler against the document).
 */
import type { DT } from './kernel-ast.js';

export const isFloat = (t: DT): boolean => t === 'float32' || t === 'float64';
export const isInt = (t: DT): boolean => !isFloat(t) && t !== 'bool';
export const isUnsigned = (t: DT): boolean => t === 'uint32' || t === 'uint16' || t === 'uint8' || t === 'uint8c';

/** Rule 4: small integers (8, 16 bit, uint8c) and bool take part as int32. */
export function promote(t: DT): DT {
  return t === 'float64' || t === 'float32' || t === 'uint32' || t === 'int32' ? t : 'int32';
}

/** Rule 4: mixed operands take the wider type. */
export function arithmetic(a: DT, b: DT): DT {
  const x = promote(a);
  const y = promote(b);
  if (x === y) return x;
  if (isFloat(x) || isFloat(y)) return x === 'float64' || y === 'float64' ? 'float64' : 'float32';
  return 'uint32'; // int32 with uint32
}

/** Rule 9: a local's type is the join of every value assigned to it. */
export function join(a: DT, b: DT): DT {
  return a === 'bool' && b === 'bool' ? 'bool' : arithmetic(a, b);
}

/** Rule 12: comparing a signed with an unsigned integer is refused. */
export function mixedSign(a: DT, b: DT): boolean {
  const x = promote(a);
  const y = promote(b);
  return (x === 'int32' && y === 'uint32') || (x === 'uint32' && y === 'int32');
}

/** Rule 2: the type a literal `v` takes against an operand of type `t` (a literal that does not fit makes it float64). */
export function literalAgainst(v: number, t: DT): DT {
  const p = promote(t);
  if (isFloat(p)) return p;
  // −0 is not an integer value; a negative integer against an unsigned operand is an int32 (then
  // the operation is uint32's, C's rule: `u + -1` wraps; `u < -1` is a mixed-sign comparison).
  if (!Number.isInteger(v) || Object.is(v, -0)) return 'float64';
  if (p === 'int32') return v >= -(2 ** 31) && v < 2 ** 31 ? 'int32' : 'float64';
  if (v >= 0 && v < 2 ** 32) return 'uint32';
  return v < 0 && v >= -(2 ** 31) ? 'int32' : 'float64';
}

/** The float type of a float computation over `t` (Math functions): float32 stays, the rest is float64. */
export const floatFor = (t: DT): DT => (t === 'float32' ? 'float32' : 'float64');

const ARRAYS: Record<DT, { new (n: number): { [i: number]: number } }> = {
  float64: Float64Array, float32: Float32Array, int32: Int32Array, uint32: Uint32Array, int16: Int16Array, uint16: Uint16Array,
  int8: Int8Array, uint8: Uint8Array, uint8c: Uint8ClampedArray, bool: Uint8Array,
};

/** The typed-array constructor of a dtype (bool is stored as Uint8Array). */
export function arrayOf(t: DT): { new (n: number): { [i: number]: number } } {
  return ARRAYS[t];
}

/** JS's constructor name for a local array of dtype `t`. */
export const ARRAY_NAMES: Partial<Record<DT, string>> = {
  float64: 'Float64Array', float32: 'Float32Array', int32: 'Int32Array', uint32: 'Uint32Array', int16: 'Int16Array',
  uint16: 'Uint16Array', int8: 'Int8Array', uint8: 'Uint8Array', uint8c: 'Uint8ClampedArray',
};

const cell: Record<string, { [i: number]: number }> = {};

/**
 * Rule 10: a value of type `from` converted to `to` as typed arrays convert (float → int truncates
 * and wraps, NaN/±∞ → 0; float64 → float32 rounds; → bool is `x != 0`; → uint8c clamps and rounds
 * half to even). Values of the fuzzer are JS numbers (bool: 0/1).
 */
export function convert(v: number, to: DT): number {
  if (to === 'bool') return v !== 0 && !Number.isNaN(v) ? 1 : 0;
  if (to === 'float64') return v;
  const c = (cell[to] ??= new (arrayOf(to))(1));
  c[0] = v;
  return c[0]!;
}

/** The wrap of an exact integer result into int32 or uint32 (rule 5). */
export const wrap = (v: number, t: DT): number => (t === 'uint32' ? v >>> 0 : v | 0);
