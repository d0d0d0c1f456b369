/**
 * Numba type signatures: `float32(float32, float32)`, `void(float64[:], float64[:,:])`, the tuple
 * form `(float32, float32[:])` (return `void`), and Numba's short aliases (`f4`, `i8`, `b1`, …).
 * Pure text → data; no codegen and no target knowledge.
 */
import { SignatureError } from '../errors.js';
import { type DType, isDType } from '../dtypes.js';

/** One argument of a signature: a scalar, or an array of `ndim` dimensions (`float32[:,:]` → 2). */
export type ArgType =
  | { readonly kind: 'scalar'; readonly dtype: DType }
  | { readonly kind: 'array'; readonly dtype: DType; readonly ndim: number };

export interface Signature {
  /** The text as written, for messages. */
  readonly text: string;
  /** `void` for guvectorize kernels, which write their outputs through array arguments. */
  readonly returnType: DType | 'void';
  readonly args: readonly ArgType[];
}

/** Numba's names that are not the canonical ones. */
const ALIASES: Readonly<Record<string, DType>> = {
  b1: 'bool',
  boolean: 'bool',
  bool_: 'bool',
  i1: 'int8',
  i2: 'int16',
  i4: 'int32',
  i8: 'int64',
  intc: 'int32',
  intp: 'int64',
  int_: 'int64',
  u1: 'uint8',
  // scijs's name for stdlib's uint8c (a Uint8ClampedArray); Numba and NumPy have no clamped type.
  uint8_clamped: 'uint8c',
  u2: 'uint16',
  u4: 'uint32',
  u8: 'uint64',
  uintc: 'uint32',
  uintp: 'uint64',
  f4: 'float32',
  f8: 'float64',
  single: 'float32',
  double: 'float64',
  float_: 'float64',
};

/** The canonical dtype for a Numba type name, or undefined. */
export function resolveTypeName(name: string): DType | undefined {
  if (isDType(name)) return name;
  return Object.prototype.hasOwnProperty.call(ALIASES, name) ? ALIASES[name] : undefined;
}

const KNOWN_NAMES = 'bool, int8, int16, int32, int64, uint8, uint8c, uint16, uint32, uint64, float32, float64 (or f4, f8, i4, i8, u4, b1, …)';

/** A tiny cursor over the text that reports errors with 1-based columns. */
class Cursor {
  pos = 0;
  constructor(readonly text: string) {}

  skipSpace(): void {
    while (this.pos < this.text.length && /\s/.test(this.text[this.pos]!)) this.pos++;
  }
  peek(): string {
    this.skipSpace();
    return this.text[this.pos] ?? '';
  }
  atEnd(): boolean {
    return this.peek() === '';
  }
  eat(ch: string): boolean {
    if (this.peek() === ch) {
      this.pos++;
      return true;
    }
    return false;
  }
  expect(ch: string, what: string): void {
    if (!this.eat(ch)) this.fail(`expected \`${ch}\` ${what}, found ${this.describeHere()}`);
  }
  identifier(): { name: string; column: number } | undefined {
    this.skipSpace();
    const m = /^[A-Za-z_][A-Za-z0-9_]*/.exec(this.text.slice(this.pos));
    if (!m) return undefined;
    const column = this.pos + 1;
    this.pos += m[0].length;
    return { name: m[0], column };
  }
  describeHere(): string {
    this.skipSpace();
    if (this.pos >= this.text.length) return 'the end of the signature';
    const rest = /^[A-Za-z_0-9]+|^./.exec(this.text.slice(this.pos))![0];
    return `\`${rest}\``;
  }
  fail(message: string, column = this.pos + 1): never {
    throw new SignatureError(
      `Invalid signature \`${this.text}\` at column ${column}: ${message}.\n  ${this.text}\n  ${' '.repeat(column - 1)}^`,
      this.text,
      column,
    );
  }
}

function parseType(c: Cursor, allowVoid: boolean): DType | 'void' | ArgType {
  const id = c.identifier();
  if (!id) c.fail(`expected a type name such as float32, found ${c.describeHere()}`);
  if (id.name === 'void') {
    if (!allowVoid) c.fail('`void` can only be a return type', id.column);
    return 'void';
  }
  const dtype = resolveTypeName(id.name);
  if (!dtype) c.fail(`unknown type \`${id.name}\`; expected one of ${KNOWN_NAMES}`, id.column);
  if (!c.eat('[')) return dtype;
  // Array: `[:]`, `[:,:]`, with Numba's contiguity markers `::1` accepted and ignored.
  let ndim = 0;
  for (;;) {
    c.skipSpace();
    if (!c.eat(':')) c.fail(`expected \`:\` for an array dimension, found ${c.describeHere()}`);
    if (c.eat(':')) {
      c.skipSpace();
      if (c.text[c.pos] !== '1') c.fail(`expected \`1\` after \`::\` (a contiguous dimension), found ${c.describeHere()}`);
      c.pos++;
    }
    ndim++;
    if (c.eat(']')) break;
    c.expect(',', 'between array dimensions or `]` to close them');
  }
  return { kind: 'array', dtype, ndim };
}

function asArg(t: DType | ArgType): ArgType {
  return typeof t === 'string' ? { kind: 'scalar', dtype: t } : t;
}

/**
 * Parses one Numba signature. A bare list of types (`f8[:], f8[:]`) is `void(…)`, as in Numba.
 *
 * @param text - e.g. `float32(float32, float32)`, `void(float64[:], float64[:,:])` or `(f4, f4[:])`
 * @returns the return type and argument types
 * @throws SignatureError naming the offending text and its column
 * @example parseSignature('f8(f8, i4)') // { returnType: 'float64', args: [float64, int32] }
 */
export function parseSignature(text: string): Signature {
  if (typeof text !== 'string') {
    throw new SignatureError(`A signature must be a string such as \`float32(float32, float32)\`, found ${typeof text}.`);
  }
  const c = new Cursor(text);
  let returnType: DType | 'void' = 'void';
  if (c.peek() !== '(') {
    const start = c.pos;
    const r = parseType(c, true);
    // Numba reads a bare list of argument types (`int32[:], int32[:]`) as `void(int32[:], int32[:])`.
    if (r !== 'void' && (c.peek() === ',' || c.atEnd())) {
      c.pos = start;
      return { text, returnType: 'void', args: parseArguments(c, true) };
    }
    if (typeof r === 'object') c.fail('the return type cannot be an array: write `void` and pass the output as an array argument', 1);
    returnType = r as DType | 'void';
  }
  c.expect('(', 'to open the argument list');
  return { text, returnType, args: parseArguments(c, false) };
}

/** The argument list after `(` (or, `bare`, a list without parentheses running to the end). */
function parseArguments(c: Cursor, bare: boolean): ArgType[] {
  const args: ArgType[] = [];
  if (bare || !c.eat(')')) {
    for (;;) {
      const t = parseType(c, false);
      args.push(asArg(t as DType | ArgType));
      if (bare ? c.atEnd() : c.eat(')')) break;
      c.expect(',', bare ? 'between arguments' : 'between arguments or `)` to close them');
    }
  }
  if (!c.atEnd()) c.fail(`unexpected ${c.describeHere()} after the argument list`);
  return args;
}

/** Formats an argument type back into Numba's notation, for messages. */
export function formatArgType(t: ArgType): string {
  return t.kind === 'scalar' ? t.dtype : `${t.dtype}[${Array(t.ndim).fill(':').join(',')}]`;
}
