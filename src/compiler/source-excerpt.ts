/**
 * Quoting a kernel's text in messages: the line of a position with a caret under its column, as
 * compile errors (parse.ts) and run-time index errors (the targets' index-check sites) show it.
 *
 * A position is one in the kernel's text (`fn.toString()`, the code that runs). For a kernel or
 * helper given as a function, messages say it in the user's file instead — through the platform's
 * `functionOrigin` (the inspector and source maps), which costs a millisecond or more, so only
 * when the message is first read ({@link setLazyMessage}).
 */
import { KernelRuntimeError, type SourceLocation } from '../errors.js';
import { type FilePosition, type FunctionOrigin, installedPlatform } from '../platform/platform.js';

/**
 * The line of a kernel's text at `loc`, and a caret under the column below it (two lines; the
 * second indented by two spaces more than the first's start, as messages indent both).
 *
 * @param source - the kernel's text
 * @param loc - the position, from 1
 * @returns `return x + y;⏎  ^`-style text
 * @example
 * excerpt('(x) => {\n  return x + y;\n}', { line: 2, column: 14 }); // '  return x + y;\n               ^'
 */
export function excerpt(source: string, loc: SourceLocation): string {
  return quote(source.split('\n')[loc.line - 1] ?? '', loc.column);
}

function quote(line: string, column: number): string {
  return `${line}\n  ${' '.repeat(Math.max(0, column - 1))}^`;
}

/**
 * Where a position in a kernel's text is, as messages say it, and its line quoted with a caret.
 *
 * @param loc - the position in the kernel's (or helper's) text, from 1
 * @param line - that line of the text
 * @param origin - where the function was written (undefined for source text, or where the host
 *   cannot tell)
 * @returns `where`: `tests/k.ts:12:16` in the user's file; `kernel line 1:36 of the code a build
 *   tool made from …` where a tool transformed the file and left no map; `kernel line 3:14`
 *   otherwise. `quoted`: the line (the file's, without its indentation, when mapped) and a caret
 *   under it, for after the message's sentence. `inFile`: the position in the file, when mapped.
 * @example
 * const { where, quoted } = describePosition(loc, line, functionOrigin(fn));
 */
export function describePosition(
  loc: { readonly line: number; readonly column: number },
  line: string,
  origin: FunctionOrigin | undefined,
): { where: string; quoted: string; inFile?: FilePosition } {
  const inFile = origin?.kind === 'file' ? origin.position(loc) : undefined;
  if (inFile) {
    const text = inFile.text.trimStart();
    return { where: `${inFile.file}:${inFile.line}:${inFile.column}`, quoted: quote(text, inFile.column - (inFile.text.length - text.length)), inFile };
  }
  const where = origin?.kind === 'transformed'
    ? `kernel line ${loc.line}:${loc.column} of the code a build tool made from ${origin.file}, not of that file, which has no source map to map it back`
    : `kernel line ${loc.line}:${loc.column}`;
  return { where, quoted: quote(line, loc.column) };
}

/** Where a function was written, by the installed platform (undefined where it cannot tell). */
export function originOf(fn: Function): FunctionOrigin | undefined {
  return installedPlatform()?.functionOrigin(fn);
}

/**
 * Makes `error.message` computed when first read (then kept); assigning it still works.
 *
 * @param error - the error, whose `message` until then is its placeholder
 * @param compute - the message, e.g. with positions mapped to the user's file
 * @example
 * setLazyMessage(error, () => `${sentence} (${describePosition(loc, line, originOf(fn)).where})`);
 */
export function setLazyMessage(error: Error, compute: () => string): void {
  let message: string | undefined;
  Object.defineProperty(error, 'message', {
    configurable: true,
    enumerable: false,
    get: () => (message ??= compute()),
    set: (value: string) => {
      message = value;
    },
  });
}

/**
 * An index check in compiled code, for the message when it fails: the array's name and the
 * position of the access in its kernel's or helper's text. Without `fn` it is plain data, as
 * workers receive it ({@link portableSites}).
 */
export interface IndexCheckSite {
  readonly array: string;
  readonly line: number;
  readonly column: number;
  /** That line of the text, quoted under the message; absent where the text is unknown. */
  readonly text?: string;
  /** The function the position is in, where the kernel or helper was given as one. */
  readonly fn?: Function;
}

/** A position in a kernel's or helper's text, with that line of the text and the function where known. */
export type TextPosition = Omit<IndexCheckSite, 'array'>;

/**
 * The position of an IR node as messages use it: its `source` kept as the line, and its function.
 *
 * @example
 * placeInFile(error, textPosition(e.loc));
 */
export function textPosition(loc: SourceLocation): TextPosition {
  const text = loc.source?.split('\n')[loc.line - 1];
  return { line: loc.line, column: loc.column, ...(text !== undefined ? { text } : {}), ...(loc.fn ? { fn: loc.fn } : {}) };
}

/**
 * The site of an index check at `loc` of array `array`.
 *
 * @param loc - the access's position; its `source` and `fn` (where present) are kept as the line and the function
 * @example
 * sites.push(indexCheckSite(array.name, loc));
 */
export function indexCheckSite(array: string, loc: SourceLocation): IndexCheckSite {
  return { array, ...textPosition(loc) };
}

/** Sites as another thread can receive them: without their functions. */
export function portableSites(sites: readonly IndexCheckSite[]): IndexCheckSite[] {
  return sites.map(({ fn: _fn, ...site }) => site);
}

/** Which site an error of {@link indexError} failed at (workers report it beside the message). */
const failedSites = new WeakMap<Error, number>();

/**
 * The error of a failed index check: the index, the array and where it is read or written, the
 * array's shape, and that line quoted with a caret. Where the site knows its function, the
 * position is the user's file's, found when the message is first read.
 *
 * @param sites - the compiled code's sites
 * @param site - the failed one's number
 * @param index - the index, one number per axis
 * @param dims - the array's shape
 * @example
 * throw indexError(sites, 3, [4], [4]); // Index [4] is out of bounds for `row` at tests/k.ts:12:40 (its shape is [4]). …
 */
export function indexError(sites: readonly IndexCheckSite[], site: number, index: readonly number[], dims: readonly number[]): KernelRuntimeError {
  const at = sites[site];
  const place = at ? `\`${at.array}\` at ${describePosition(at, at.text ?? '', undefined).where}` : `site ${site}`;
  const quoted = at?.text !== undefined ? `\n  ${quote(at.text, at.column)}` : '';
  const error = new KernelRuntimeError(
    `Index [${index.join(', ')}] is out of bounds for ${place} (its shape is [${dims.join(', ')}]). The outputs may be partially written.${quoted}`,
  );
  failedSites.set(error, site);
  if (at) placeInFile(error, at, at.array);
  return error;
}

/**
 * The number of the site an error of {@link indexError} failed at, or undefined for other errors.
 */
export function failedSite(error: unknown): number | undefined {
  return error instanceof Error ? failedSites.get(error) : undefined;
}

/**
 * Says a message's `at kernel line L:C` in the user's file, when the message is first read: for
 * an error built where the position's function is not known (in a worker, rebuilt on this thread
 * from its message) or built before it is looked up, whose message names the position in the text
 * that ran and may end with that line quoted ({@link describePosition}).
 *
 * @param error - the error; its message as it is now is the one to place
 * @param at - the position, with its function (else the message stays as it is)
 * @param name - the array the message names before the position (`` `x` at …``), which is then
 *   named as the user wrote it
 * @example
 * placeInFile(rebuilt, runner.sites[site], runner.sites[site].array);
 */
export function placeInFile(error: Error, at: TextPosition, name?: string): void {
  const { fn } = at;
  if (!fn) return;
  const plain = error.message;
  const unplaced = describePosition(at, at.text ?? '', undefined);
  setLazyMessage(error, () => {
    const placed = describePosition(at, at.text ?? '', originOf(fn));
    const before = `${name === undefined ? '' : `\`${name}\``} at ${unplaced.where}`;
    const after = `${name === undefined ? '' : `\`${userName(name, placed.inFile)}\``} at ${placed.where}`;
    // Not followed by a digit: `kernel line 2:14` must not match in `kernel line 2:145`.
    const head = plain.replace(new RegExp(`${escapeRegExp(before)}(?!\\d)`), () => after);
    const tail = `\n  ${unplaced.quoted}`;
    return at.text !== undefined && head.endsWith(tail) ? `${head.slice(0, -tail.length)}\n  ${placed.quoted}` : head;
  });
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/**
 * The array's name as the user wrote it: a tool may have renamed it in the code that ran (esbuild
 * writes `x2` for an `x` that another `x` shadows), and an access starts with the array's name, so
 * the user's line has it at the access's position. Taken only where it is part of the name that
 * ran (`x2`, `_x`), the name that ran otherwise.
 */
function userName(ran: string, inFile: FilePosition | undefined): string {
  const written = inFile && /^[A-Za-z_$][\w$]*/.exec(inFile.text.slice(inFile.column - 1))?.[0];
  return written && ran.includes(written) ? written : ran;
}
