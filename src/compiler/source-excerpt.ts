/**
 * Quoting a kernel's text in messages: the line of a position with a caret under its column, as
 * compile errors (parse.ts) and run-time index errors (the targets' index-check sites) show it.
 */
import type { SourceLocation } from '../errors.js';

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
  const line = source.split('\n')[loc.line - 1] ?? '';
  return `${line}\n  ${' '.repeat(Math.max(0, loc.column - 1))}^`;
}

/**
 * How a run-time index error (a `KernelRuntimeError`) names the place of an index check: the
 * array and the position, then — where the position knows its text — that line and a caret, on
 * lines of their own (the error puts them after its sentence).
 *
 * @param array - the array's name in the kernel
 * @param loc - the position of the access
 * @returns e.g. `` `x` at kernel line 2:12⏎  return x[i + 5];⏎         ^ ``
 * @example
 * sites.push(indexCheckSite(array.name, loc));
 */
export function indexCheckSite(array: string, loc: SourceLocation): string {
  const place = `\`${array}\` at kernel line ${loc.line}:${loc.column}`;
  return loc.source === undefined ? place : `${place}\n  ${excerpt(loc.source, loc)}`;
}

/**
 * The parts of an index-check site from {@link indexCheckSite}: the place, for the error's sentence,
 * and the quoted line with its caret (empty when the site has none), for after it.
 *
 * @param site - a site's text
 * @returns the place and the excerpt (which starts with a line break when present)
 * @example
 * const { place, excerpt } = siteParts(sites[k]);
 */
export function siteParts(site: string): { place: string; excerpt: string } {
  const br = site.indexOf('\n');
  return br < 0 ? { place: site, excerpt: '' } : { place: site.slice(0, br), excerpt: site.slice(br) };
}
