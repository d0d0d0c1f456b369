/**
 * Checking options objects. Every options object the library takes (the factories', a call's,
 * the ufunc methods', the parallel target's) is described by an {@link OptionRules} table and
 * checked here, so that a misspelt key is an error that names it and the key that was meant,
 * instead of an option silently ignored: `vectorize(sigs, { targt: 'gpu' })` must not quietly run
 * on the cpu.
 */
import { ArgumentError } from './errors.js';
import { describe } from './ndarray.js';

/**
 * Checks one option's value: returns what the option allows (a phrase such as "a boolean", which
 * the error puts as "`boundsCheck` must be a boolean, found …") when the value is not allowed,
 * undefined when it is.
 */
export type OptionRule = (value: unknown) => string | undefined;

/** The valid keys of an options object, each with the rule its value must follow. */
export type OptionRules = Readonly<Record<string, OptionRule>>;

/**
 * Checks an options object: every key must be one of `rules`, and every value that is not
 * undefined must follow its rule.
 *
 * @param options - the object as the caller passed it (undefined is allowed: no options)
 * @param rules - the valid keys and their rules
 * @param owner - what takes the options, for messages: "`vectorize`", "a call", "`reduce`"
 * @throws ArgumentError naming an unknown key and the closest valid one, or a key whose value is
 *   not allowed and what is
 * @example
 * checkOptions({ targt: 'gpu' }, FACTORY_RULES, '`vectorize`');
 * // ArgumentError: Unknown option `targt` for `vectorize`; did you mean `target`? …
 */
export function checkOptions(options: unknown, rules: OptionRules, owner: string): void {
  if (options === undefined) return;
  if (typeof options !== 'object' || options === null || Array.isArray(options) || ArrayBuffer.isView(options)) {
    throw new ArgumentError(`The options of ${owner} must be an object, found ${describeValue(options)}.`);
  }
  const valid = Object.keys(rules);
  for (const key of Object.keys(options)) {
    if (Object.hasOwn(rules, key)) continue;
    const near = closestName(key, valid);
    const listing = valid.length === 0 ? 'none' : formatList(valid.map((k) => `\`${k}\``));
    throw new ArgumentError(
      `Unknown option \`${key}\` for ${owner}${near ? `; did you mean \`${near}\`?` : '.'} The options of ${owner} are ${listing}.`,
    );
  }
  for (const key of valid) {
    const value = (options as Record<string, unknown>)[key];
    if (value === undefined) continue;
    const allowed = rules[key]!(value);
    if (allowed !== undefined) throw new ArgumentError(`\`${key}\` must be ${allowed}, found ${describeValue(value)}.`);
  }
}

/**
 * The valid name a misspelt one most likely meant: the nearest by edit distance (a swap of two
 * neighbouring letters counts as one edit), ignoring case, if it is near enough to be a typo —
 * at most one edit in three letters, and at least one.
 *
 * @example closestName('targt', ['target', 'env']) // 'target'
 */
export function closestName(name: string, candidates: readonly string[]): string | undefined {
  let best: string | undefined;
  let bestDistance = Infinity;
  for (const candidate of candidates) {
    const d = editDistance(name.toLowerCase(), candidate.toLowerCase());
    if (d < bestDistance) [best, bestDistance] = [candidate, d];
  }
  return bestDistance <= Math.max(1, Math.floor(Math.max(name.length, 1) / 3)) ? best : undefined;
}

/** Optimal string alignment distance: insertions, deletions, substitutions and adjacent swaps. */
function editDistance(a: string, b: string): number {
  const rows = Array.from({ length: a.length + 1 }, (_, i) => Array.from({ length: b.length + 1 }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)));
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let d = Math.min(rows[i - 1]![j]! + 1, rows[i]![j - 1]! + 1, rows[i - 1]![j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) d = Math.min(d, rows[i - 2]![j - 2]! + 1);
      rows[i]![j] = d;
    }
  }
  return rows[a.length]![b.length]!;
}

/** A value as messages show it: numbers as written, strings quoted, anything else described. */
export function describeValue(value: unknown): string {
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  if (typeof value === 'bigint') return `${value}n`;
  return describe(value);
}

function formatList(items: readonly string[]): string {
  return items.length <= 1 ? items.join('') : `${items.slice(0, -1).join(', ')} and ${items[items.length - 1]}`;
}

/** Rules every options table draws on. */
export const rule = {
  /** Any value: the option is checked where it is used (`out` is checked as an array argument). */
  any: (): OptionRule => () => undefined,
  boolean: (): OptionRule => (v) => (typeof v === 'boolean' ? undefined : 'a boolean (true or false)'),
  nonNegativeInteger: (): OptionRule => (v) => (typeof v === 'number' && Number.isInteger(v) && v >= 0 ? undefined : 'a non-negative integer'),
  /** A JS scalar a kernel can take: a number, a bigint or a boolean. */
  scalar: (): OptionRule => (v) => (typeof v === 'number' || typeof v === 'bigint' || typeof v === 'boolean' ? undefined : 'a number, a bigint or a boolean'),
  /** A plain object (`env`, `dims`). */
  object: (what: string): OptionRule => (v) => (typeof v === 'object' && v !== null && !Array.isArray(v) && !ArrayBuffer.isView(v) ? undefined : what),
  oneOf: (values: readonly string[]): OptionRule => (v) => (typeof v === 'string' && values.includes(v) ? undefined : `one of ${formatList(values.map((x) => `'${x}'`))}`),
  /** An axis number, or null where the option allows it. */
  axis: (nullable: boolean): OptionRule => (v) =>
    (typeof v === 'number' && Number.isInteger(v)) || (nullable && v === null) ? undefined : nullable ? 'an integer or null' : 'an integer',
} as const;
