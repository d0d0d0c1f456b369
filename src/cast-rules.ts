/**
 * The cast rules, in one place: which casts between dtypes NumPy's `casting` rules allow
 * (`'no' | 'equiv' | 'safe' | 'same_kind' | 'unsafe'`, one table), and which dtypes a JS scalar
 * casts to by its value (NEP 50's weak scalars: one list of integer ranges, which the plan cache's
 * and the fusion's keys read through {@link numberCastClass}). What a cast then does to a value is
 * the constant folder's `convertConstant` (compiler/constant-folding.ts) inside kernels and
 * casting.ts's `converter` for host outputs. The kernel language's own implicit conversions (C's
 * usual arithmetic conversions with JS's meaning) are typing rules, compiler/typing-rules.ts.
 */
import { ALL_DTYPES, type DType, DTYPES } from './dtypes.js';

export const CASTING_RULES = ['no', 'equiv', 'safe', 'same_kind', 'unsafe'] as const;
export type Casting = (typeof CASTING_RULES)[number];

/** Columns of {@link CAST_TABLE}'s rows. */
const COLUMNS: readonly DType[] = ['bool', 'int8', 'int16', 'int32', 'int64', 'uint8', 'uint8c', 'uint16', 'uint32', 'uint64', 'float32', 'float64'];

/**
 * The weakest rule under which each cast is allowed — row: from, column: to (in {@link COLUMNS}'
 * order); `no`, `eq`(uiv), `S` (safe), `K` (same_kind), `u` (unsafe). The rules nest (no ⊂ equiv ⊂
 * safe ⊂ same_kind ⊂ unsafe), so a cast is allowed under its rule and every weaker one. NumPy's
 * `np.can_cast` table (tests/fixtures/numpy-can-cast.json), except where this library chose:
 * - int64 and uint64 → float64 are `same_kind`, not `safe`: a double cannot hold every 64-bit
 *   integer, and inputs are matched to loops only where no value changes;
 * - uint8c (a `Uint8ClampedArray`, no NumPy dtype) is uint8 whose stores clamp and round: uint8 and
 *   uint8c hold the same values in the same bytes (`equiv`), and any number may be stored into one
 *   (`same_kind`: it clamps, as canvas pixels do).
 */
const CAST_TABLE: Readonly<Record<DType, string>> = {
  //       bool int8 i16 i32 i64 u8  u8c u16 u32 u64 f32 f64
  bool:    'no  S   S   S   S   S   S   S   S   S   S   S',
  int8:    'u   no  S   S   S   u   K   u   u   u   S   S',
  int16:   'u   K   no  S   S   u   K   u   u   u   S   S',
  int32:   'u   K   K   no  S   u   K   u   u   u   K   S',
  int64:   'u   K   K   K   no  u   K   u   u   u   K   K',
  uint8:   'u   K   S   S   S   no  eq  S   S   S   S   S',
  uint8c:  'u   K   S   S   S   eq  no  S   S   S   S   S',
  uint16:  'u   K   K   S   S   K   K   no  S   S   S   S',
  uint32:  'u   K   K   K   S   K   K   K   no  S   K   S',
  uint64:  'u   K   K   K   K   K   K   K   K   no  K   K',
  float32: 'u   u   u   u   u   u   K   u   u   u   no  S',
  float64: 'u   u   u   u   u   u   K   u   u   u   K   no',
};

const RULE_OF: Readonly<Record<string, Casting>> = { no: 'no', eq: 'equiv', S: 'safe', K: 'same_kind', u: 'unsafe' };

/** Each rule's place in the nesting, and per cast the place of the weakest rule that allows it. */
const RULE_RANK: Readonly<Record<Casting, number>> = { no: 0, equiv: 1, safe: 2, same_kind: 3, unsafe: 4 };
const CAST_RANK = Object.fromEntries(
  ALL_DTYPES.map((from) => {
    const cells = CAST_TABLE[from].split(/\s+/);
    return [from, Object.fromEntries(COLUMNS.map((to, k) => [to, RULE_RANK[RULE_OF[cells[k]!]!]]))];
  }),
) as Readonly<Record<DType, Readonly<Record<DType, number>>>>;

/**
 * Whether values of `from` may be cast to `to` under a casting rule (NumPy's `np.can_cast`, with
 * this library's choices: {@link CAST_TABLE}).
 *
 * @example canCast('int32', 'int16', 'same_kind') // true
 * @example canCast('float64', 'int32', 'same_kind') // false
 */
export function canCast(from: DType, to: DType, casting: Casting): boolean {
  return CAST_RANK[from][to] <= RULE_RANK[casting];
}

/** The stricter of a rule and `safe`: how inputs are matched against loops nobody forced (NumPy's type resolver). */
export function inputCasting(casting: Casting): Casting {
  return casting === 'same_kind' || casting === 'unsafe' ? 'safe' : casting;
}

/**
 * A JS scalar argument is "weak", as Python scalars are under NumPy's NEP 50: an integer-valued
 * number may become any integer type that holds it or any float; a fractional or non-finite number
 * any float; a boolean anything. Returns whether `value` may be passed as `to`.
 *
 * @example canCastScalar(300, 'uint8') // false
 * @example canCastScalar(-1, 'int8') // true
 */
export function canCastScalar(value: number | bigint | boolean, to: DType): boolean {
  const t = DTYPES[to];
  if (typeof value === 'boolean') return true;
  if (t.kind === 'b') return false;
  if (t.kind === 'f') return true;
  if (typeof value === 'bigint') return value >= minOf(to) && value <= maxOf(to);
  return Number.isInteger(value) && value >= Number(minOf(to)) && value <= Number(maxOf(to));
}

/** The least value of an integer dtype. */
function minOf(t: DType): bigint {
  const d = DTYPES[t];
  return d.kind === 'i' ? -(1n << BigInt(d.bits - 1)) : 0n;
}

/** The greatest value of an integer dtype. */
function maxOf(t: DType): bigint {
  const d = DTYPES[t];
  return d.kind === 'i' ? (1n << BigInt(d.bits - 1)) - 1n : (1n << BigInt(d.bits)) - 1n;
}

const INTEGER_DTYPES = ALL_DTYPES.filter((t) => DTYPES[t].kind === 'i' || DTYPES[t].kind === 'u');
/** The integer dtypes' maxima and negative minima as doubles, as {@link canCastScalar} compares numbers: ascending, then descending. */
const UPPER_BOUNDS = [...new Set(INTEGER_DTYPES.map((t) => Number(maxOf(t))))].sort((a, b) => a - b);
const LOWER_BOUNDS = [...new Set(INTEGER_DTYPES.map((t) => Number(minOf(t))).filter((v) => v < 0))].sort((a, b) => b - a);

/** How many classes {@link numberCastClass} has (15: fractional, 9 non-negative, 5 negative). */
export const NUMBER_CAST_CLASSES = 1 + UPPER_BOUNDS.length + 1 + LOWER_BOUNDS.length + 1;

/**
 * The class of a JS number by the casts it allows: numbers of one class get the same answer from
 * {@link canCastScalar} for every dtype, and from `Number.isInteger`. 0 for a fractional number
 * (NaN and ±Infinity too: floats only); else the integer ranges that hold it, which its sign and
 * the first bound past it decide (2⁶³ and 2⁶⁴ being the doubles nearest int64's and uint64's maxima).
 * Classes 0 … {@link NUMBER_CAST_CLASSES} − 1: keys of plans that read only these facts of a number.
 *
 * @example numberCastClass(200) === numberCastClass(255) // true: both fit uint8, neither int8
 */
export function numberCastClass(x: number): number {
  if (!Number.isInteger(x)) return 0;
  let k = 0;
  if (x >= 0) {
    while (k < UPPER_BOUNDS.length && x > UPPER_BOUNDS[k]!) k++;
    return 1 + k;
  }
  while (k < LOWER_BOUNDS.length && x < LOWER_BOUNDS[k]!) k++;
  return 2 + UPPER_BOUNDS.length + k;
}
