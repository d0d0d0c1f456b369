/** GitHub-flavoured Markdown tables, padded so that the source reads as a table too. */

export interface Column {
  readonly header: string;
  /** Numbers read best right-aligned. @default 'left' */
  readonly align?: 'left' | 'right';
}

function escapeCell(text: string): string {
  return text.replace(/\|/g, '\\|').replace(/\n/g, ' ');
}

/**
 * @param columns headers and alignment
 * @param rows one array of cell texts per row, as many cells as columns
 * @returns the table, lines joined with `\n`, no trailing newline
 * @example
 * markdownTable([{ header: 'target' }, { header: 'time', align: 'right' }], [['cpu', '12.3 ms']]);
 */
export function markdownTable(columns: readonly Column[], rows: readonly (readonly string[])[]): string {
  const cells = rows.map((row) => columns.map((_, i) => escapeCell(row[i] ?? '')));
  const widths = columns.map((column, i) =>
    Math.max(3, column.header.length, ...cells.map((row) => row[i].length)),
  );
  const pad = (text: string, i: number): string =>
    columns[i].align === 'right' ? text.padStart(widths[i]) : text.padEnd(widths[i]);
  const line = (texts: readonly string[]): string => `| ${texts.map(pad).join(' | ')} |`;
  const rule = columns.map((column, i) =>
    column.align === 'right' ? `${'-'.repeat(widths[i] - 1)}:` : '-'.repeat(widths[i]),
  );
  return [line(columns.map((c) => c.header)), `| ${rule.join(' | ')} |`, ...cells.map(line)].join('\n');
}
