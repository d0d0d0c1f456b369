/**
 * The typing rules of the kernel language, in one place (documented in docs/kernel-language.md).
 * They follow C's usual arithmetic conversions, which WGSL can honour, with JS's own meaning where
 * JS defines one (bitwise operators work on int32, `>>>` yields uint32, stores convert as typed
 * arrays do).
 */
import { type DType, DTYPES, isFloat } from '../dtypes.js';

/** Small integers and bool take part in arithmetic as int32 (C's integer promotion). */
export function promote(t: DType): DType {
  const d = DTYPES[t];
  if (d.kind === 'b' || (d.kind !== 'f' && d.bits < 32)) return 'int32';
  return t;
}

/**
 * The type both operands of an arithmetic operation are converted to, and its result type:
 * - any float: the wider float (float32 op float64 → float64; int op float32 → float32);
 * - else any 64-bit integer: uint64 if either is uint64, else int64;
 * - else uint32 if either is uint32 (wrapping modulo 2^32, as C); else int32.
 */
export function arithmeticType(a: DType, b: DType): DType {
  const x = promote(a);
  const y = promote(b);
  if (x === y) return x;
  if (isFloat(x) || isFloat(y)) {
    if (x === 'float64' || y === 'float64') return 'float64';
    return 'float32';
  }
  if (x === 'uint64' || y === 'uint64') return 'uint64';
  if (x === 'int64' || y === 'int64') return 'int64';
  if (x === 'uint32' || y === 'uint32') return 'uint32';
  return 'int32';
}

/** The type of a local variable that is assigned values of types `a` and `b`. */
export function joinTypes(a: DType, b: DType): DType {
  if (a === 'bool' && b === 'bool') return 'bool';
  return arithmeticType(a, b);
}

/**
 * Whether a comparison between `a` and `b` is refused: int32 against uint32 has no common type
 * that keeps both exact on every target (C would convert −1 to 4294967295 and compare wrong).
 */
export function isMixedSignComparison(a: DType, b: DType): boolean {
  const x = promote(a);
  const y = promote(b);
  const signed = (t: DType) => DTYPES[t].kind === 'i';
  const unsigned = (t: DType) => DTYPES[t].kind === 'u';
  return (signed(x) && unsigned(y)) || (unsigned(x) && signed(y));
}

/** The float type used for a float computation over `t`: float32 stays, ints become float64 (JS numbers). */
export function floatFor(t: DType): DType {
  return isFloat(t) ? t : 'float64';
}
