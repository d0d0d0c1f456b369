/**
 * Generalized-ufunc layout strings: `(m,n),(n,p)->(m,p)`, `()->(n)`, fixed sizes `(3)`, several
 * outputs `(n)->(),()`. Pure text → data.
 */
import { LayoutError } from '../errors.js';

export type CoreDim =
  | { readonly kind: 'symbol'; readonly name: string }
  | { readonly kind: 'fixed'; readonly size: number };

export interface Layout {
  readonly text: string;
  /** Core dimensions of each input, in order. `()` is an input with no core dimensions. */
  readonly inputs: readonly (readonly CoreDim[])[];
  readonly outputs: readonly (readonly CoreDim[])[];
}

function fail(text: string, column: number, message: string): never {
  throw new LayoutError(
    `Invalid layout \`${text}\` at column ${column}: ${message}.\n  ${text}\n  ${' '.repeat(column - 1)}^`,
    text,
    column,
  );
}

function parseOperands(text: string, start: number, end: number): CoreDim[][] {
  const operands: CoreDim[][] = [];
  let i = start;
  const skip = () => {
    while (i < end && /\s/.test(text[i]!)) i++;
  };
  const here = () => (i < end ? `\`${text[i]}\`` : i === text.length ? 'the end of the layout' : '`->`');
  for (;;) {
    skip();
    if (text[i] !== '(' || i >= end) fail(text, i + 1, `expected \`(\` to open an operand's core dimensions, found ${here()}`);
    i++;
    const dims: CoreDim[] = [];
    skip();
    if (text[i] === ')') i++;
    else {
      for (;;) {
        skip();
        const rest = text.slice(i, end);
        const name = /^[A-Za-z_][A-Za-z0-9_]*/.exec(rest);
        const num = /^[0-9]+/.exec(rest);
        if (name) {
          dims.push({ kind: 'symbol', name: name[0] });
          i += name[0].length;
        } else if (num) {
          const size = Number(num[0]);
          if (size < 1) fail(text, i + 1, `a fixed dimension must be at least 1, found \`${num[0]}\``);
          // Larger sizes could not be allocated, and are not exact past 2⁵³ (`9999999999999999999`).
          if (size > MAX_FIXED_SIZE) fail(text, i + 1, `a fixed dimension must be at most ${MAX_FIXED_SIZE} (2³¹ − 1), found \`${num[0]}\``);
          dims.push({ kind: 'fixed', size });
          i += num[0].length;
        } else {
          fail(text, i + 1, `expected a dimension name or a fixed size, found ${here()}`);
        }
        skip();
        if (text[i] === ')' && i < end) {
          i++;
          break;
        }
        if (text[i] !== ',' || i >= end) fail(text, i + 1, `expected \`,\` or \`)\`, found ${here()}`);
        i++;
      }
    }
    operands.push(dims);
    skip();
    if (i >= end) return operands;
    if (text[i] !== ',') fail(text, i + 1, `expected \`,\` between operands, found ${here()}`);
    i++;
  }
}

/**
 * Parses a layout string.
 *
 * @param text - e.g. `(m,n),(n,p)->(m,p)`
 * @returns the core dimensions of each input and output
 * @throws LayoutError naming the offending text and its column
 * @example parseLayout('()->(n)') // { inputs: [[]], outputs: [[{ kind: 'symbol', name: 'n' }]] }
 */
/** The largest fixed core dimension: an index of a core slice is an int32 on every target. */
const MAX_FIXED_SIZE = 2 ** 31 - 1;

export function parseLayout(text: string): Layout {
  if (typeof text !== 'string') {
    throw new LayoutError(`A layout must be a string such as \`(n),()->(n)\`, found ${typeof text}.`);
  }
  const arrow = text.indexOf('->');
  if (arrow < 0) fail(text, text.length + 1, 'expected `->` between the inputs and the outputs');
  if (text.indexOf('->', arrow + 2) >= 0) fail(text, text.indexOf('->', arrow + 2) + 1, 'found a second `->`');
  const inputs = parseOperands(text, 0, arrow);
  const outputs = parseOperands(text, arrow + 2, text.length);
  return { text, inputs, outputs };
}

/** Formats one operand's core dims, e.g. `(m,n)`. */
export function formatCoreDims(dims: readonly CoreDim[]): string {
  return `(${dims.map((d) => (d.kind === 'symbol' ? d.name : String(d.size))).join(',')})`;
}
