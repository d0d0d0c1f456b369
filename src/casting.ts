/**
 * Casts of a call: its `casting` option, checked, and the store that writes a loop's results into
 * an output of another dtype — an `Int16Array` out for an int32 loop, a `Uint8ClampedArray` out
 * (canvas pixels) for a float loop, a masked (`where`) store. Which casts a rule allows is
 * cast-rules.ts.
 */
import { type Casting, CASTING_RULES } from './cast-rules.js';
import { type DType, DTYPES, isBigInt, type TypedArray } from './dtypes.js';
import { ArgumentError } from './errors.js';

/** The `casting` option as given, or its default `'same_kind'`; anything else is an `ArgumentError`. */
export function checkCasting(x: unknown): Casting {
  if (x === undefined) return 'same_kind';
  if (typeof x === 'string' && (CASTING_RULES as readonly string[]).includes(x)) return x as Casting;
  throw new ArgumentError(`\`casting\` must be one of ${CASTING_RULES.map((r) => `'${r}'`).join(', ')}, found ${typeof x === 'string' ? `'${x}'` : typeof x}.`);
}

/**
 * A function converting one stored element of `from` into what a typed array of `to` stores, as
 * NumPy's casts do: integers wrap, floats round to float32, anything non-zero (NaN too) is true,
 * and uint8c (a `Uint8ClampedArray`'s store) clamps to 0…255 and rounds half to even, NaN → 0.
 */
export function converter(from: DType, to: DType): (v: number | bigint) => number | bigint {
  const bigFrom = isBigInt(from);
  const bigTo = isBigInt(to);
  if (to === 'uint8c') {
    // Through a scratch Uint8ClampedArray, so the destination may be any byte array.
    const scratch = new Uint8ClampedArray(1);
    return bigFrom ? (v) => ((scratch[0] = Number(v)), scratch[0]) : (v) => ((scratch[0] = v as number), scratch[0]);
  }
  if (to === 'bool') return bigFrom ? (v) => (v !== 0n ? 1 : 0) : (v) => (v !== 0 ? 1 : 0);
  if (from === 'bool') return bigTo ? (v) => (v ? 1n : 0n) : (v) => v;
  if (bigTo) {
    const wrap = to === 'int64' ? (b: bigint) => BigInt.asIntN(64, b) : (b: bigint) => BigInt.asUintN(64, b);
    return bigFrom ? (v) => wrap(v as bigint) : (v) => (Number.isFinite(v) ? wrap(BigInt(Math.trunc(v as number))) : 0n);
  }
  if (bigFrom) {
    const bits = DTYPES[to].bits;
    return DTYPES[to].kind === 'f' ? (v) => Number(v) : (v) => Number(BigInt.asIntN(Math.max(bits, 32), v as bigint));
  }
  return (v) => v;
}

/**
 * Copies `source` (C-contiguous over `shape`) into a strided destination, converting each element,
 * optionally only where `mask` (a strided view over the same shape, 0 = skip) is set.
 */
export function storeCast(
  source: TypedArray,
  sourceType: DType,
  dest: { readonly data: TypedArray; readonly dtype: DType; readonly strides: readonly number[]; readonly offset: number },
  shape: readonly number[],
  mask?: { readonly data: TypedArray; readonly strides: readonly number[]; readonly offset: number },
): void {
  const convert = converter(sourceType, dest.dtype);
  const rank = shape.length;
  const n = shape.reduce((a, b) => a * b, 1);
  if (n === 0) return;
  const idx = new Array<number>(rank).fill(0);
  const out = dest.data as unknown as (number | bigint)[];
  const src = source as unknown as (number | bigint)[];
  let at = dest.offset;
  let m = mask?.offset ?? 0;
  for (let k = 0; k < n; k++) {
    if (!mask || mask.data[m] !== 0) out[at] = convert(src[k]!);
    for (let d = rank - 1; d >= 0; d--) {
      at += dest.strides[d]!;
      if (mask) m += mask.strides[d]!;
      if (++idx[d]! < shape[d]!) break;
      at -= dest.strides[d]! * shape[d]!;
      if (mask) m -= mask.strides[d]! * shape[d]!;
      idx[d] = 0;
    }
  }
}
