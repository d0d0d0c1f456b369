/**
 * Hand-written SVG charts for the benchmark reports: no browser, no dependency, readable in a
 * GitHub Markdown preview. Both charts use logarithmic value axes, because the contenders span
 * orders of magnitude (a software GPU next to NumPy next to an H200).
 */

/** Tableau 10: distinct in colour and in grey, so a black-and-white print still separates them. */
const PALETTE = ['#4e79a7', '#f28e2b', '#59a14f', '#e15759', '#76b7b2', '#edc948', '#b07aa1', '#ff9da7', '#9c755f', '#bab0ac'];
const FONT = 'font-family="system-ui, -apple-system, Segoe UI, Helvetica, Arial, sans-serif"';

export interface Series {
  readonly name: string;
  /** @default the next colour of the palette, in the order series are listed */
  readonly color?: string;
}

export interface BarGroup {
  /** The group's label under the axis, e.g. the workload. */
  readonly label: string;
  /** Values by series name; a series missing here leaves its slot empty. */
  readonly values: Readonly<Record<string, number>>;
}

export interface BarChart {
  readonly title: string;
  readonly subtitle?: string;
  readonly valueLabel: string;
  /** The bars of every group, in this order and with these colours. */
  readonly series: readonly Series[];
  readonly groups: readonly BarGroup[];
  /** Writes an axis or bar value, e.g. `(v) => formatRate(v, 'B/s')`. */
  readonly formatValue: (value: number) => string;
}

export interface LinePanel {
  readonly title: string;
  /** Points (x, y) by series name; x and y must be positive (both axes are logarithmic). */
  readonly points: Readonly<Record<string, readonly (readonly [number, number])[]>>;
  /** Vertical dashed lines, e.g. where one series overtakes another; labelled under the panel. */
  readonly markers?: readonly { readonly x: number; readonly label: string; readonly color?: string }[];
}

export interface LineChart {
  readonly title: string;
  readonly subtitle?: string;
  readonly xLabel: string;
  readonly yLabel: string;
  readonly series: readonly Series[];
  /** Side by side, each with its own axes. */
  readonly panels: readonly LinePanel[];
  readonly formatY: (value: number) => string;
}

function escapeXml(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
}

function colorsOf(series: readonly Series[]): Map<string, string> {
  return new Map(series.map((s, i) => [s.name, s.color ?? PALETTE[i % PALETTE.length]]));
}

const round = (n: number): string => String(Math.round(n * 10) / 10);

function text(x: number, y: number, content: string, attributes = ''): string {
  return `<text x="${round(x)}" y="${round(y)}" ${attributes}>${escapeXml(content)}</text>`;
}

/** Whole powers of `base` spanning the values, at least one step apart. */
function logRange(values: readonly number[], base: number): { low: number; high: number } {
  const positive = values.filter((v) => v > 0 && Number.isFinite(v));
  if (positive.length === 0) return { low: 1, high: base };
  const low = Math.floor(Math.log(Math.min(...positive)) / Math.log(base));
  const high = Math.max(low + 1, Math.ceil(Math.log(Math.max(...positive)) / Math.log(base)));
  return { low, high };
}

/** The legend as one or more rows of swatches, starting at (x, y); returns it and its height. */
function legend(series: readonly Series[], colors: Map<string, string>, x: number, y: number, width: number): { svg: string; height: number } {
  const parts: string[] = [];
  let cx = x;
  let cy = y;
  for (const s of series) {
    const itemWidth = 30 + s.name.length * 7.2;
    if (cx + itemWidth > x + width && cx > x) {
      cx = x;
      cy += 18;
    }
    parts.push(`<rect x="${round(cx)}" y="${round(cy - 9)}" width="12" height="12" rx="2" fill="${colors.get(s.name)}"/>`);
    parts.push(text(cx + 16, cy + 1, s.name, 'font-size="12" fill="#333"'));
    cx += itemWidth;
  }
  return { svg: parts.join('\n'), height: cy - y + 18 };
}

function document(width: number, height: number, body: string[]): string {
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${round(width)}" height="${round(height)}" viewBox="0 0 ${round(width)} ${round(height)}" ${FONT}>`,
    `<rect width="100%" height="100%" fill="#fff"/>`,
    ...body,
    '</svg>',
    '',
  ].join('\n');
}

/** Axis ticks are whole powers: "10 GB/s" reads better than "10.0 GB/s". */
function tickLabel(format: (value: number) => string, value: number): string {
  return format(value).replace(/\.0+(?!\d)/, '');
}

function heading(title: string, subtitle: string | undefined, x: number): string[] {
  const lines = [text(x, 26, title, 'font-size="17" font-weight="600" fill="#111"')];
  if (subtitle) lines.push(text(x, 45, subtitle, 'font-size="12" fill="#555"'));
  return lines;
}

/**
 * Grouped bars on a logarithmic value axis: one group per workload, one bar per series.
 *
 * @param chart title, series (legend order and colours), groups and the value formatter
 * @returns a complete SVG document
 * @example
 * writeFileSync('chart.svg', barChartSvg({ title: 'Throughput', valueLabel: 'GB/s', series: [{ name: 'cpu' }],
 *   groups: [{ label: 'saxpy', values: { cpu: 4.2e9 } }], formatValue: (v) => formatRate(v, 'B/s') }));
 */
export function barChartSvg(chart: BarChart): string {
  const colors = colorsOf(chart.series);
  const barWidth = 14;
  const groupGap = 28;
  const groupWidth = chart.series.length * barWidth + groupGap;
  const left = 78;
  const plotWidth = Math.max(560, chart.groups.length * groupWidth);
  const width = left + plotWidth + 24;
  const top0 = chart.subtitle ? 62 : 44;
  const key = legend(chart.series, colors, left, top0 + 4, plotWidth);
  const top = top0 + key.height + 40; // room for the value labels above the tallest bar
  const plotHeight = 300;
  const bottom = top + plotHeight;
  const height = bottom + 48;

  const { low, high } = logRange(chart.groups.flatMap((g) => Object.values(g.values)), 10);
  const yOf = (v: number): number => bottom - ((Math.log10(v) - low) / (high - low)) * plotHeight;

  const body = [...heading(chart.title, chart.subtitle, left), key.svg];
  for (let exponent = low; exponent <= high; exponent++) {
    const y = yOf(10 ** exponent);
    body.push(`<line x1="${left}" x2="${left + plotWidth}" y1="${round(y)}" y2="${round(y)}" stroke="${exponent === low ? '#333' : '#e3e3e3'}"/>`);
    body.push(text(left - 6, y + 4, tickLabel(chart.formatValue, 10 ** exponent), 'font-size="11" fill="#555" text-anchor="end"'));
  }
  body.push(text(16, top + plotHeight / 2, chart.valueLabel, `font-size="12" fill="#333" text-anchor="middle" transform="rotate(-90 16 ${round(top + plotHeight / 2)})"`));

  const groupsWidth = chart.groups.length * groupWidth;
  const firstGroup = left + (plotWidth - groupsWidth) / 2 + groupGap / 2;
  chart.groups.forEach((group, g) => {
    const x0 = firstGroup + g * groupWidth;
    chart.series.forEach((s, i) => {
      const value = group.values[s.name];
      if (value === undefined || !(value > 0)) return;
      const x = x0 + i * barWidth;
      const y = yOf(value);
      const label = chart.formatValue(value);
      body.push(
        `<rect x="${round(x)}" y="${round(y)}" width="${barWidth - 2}" height="${round(bottom - y)}" fill="${colors.get(s.name)}"><title>${escapeXml(`${group.label} · ${s.name}: ${label}`)}</title></rect>`,
      );
      const lx = x + (barWidth - 2) / 2 + 3;
      body.push(text(lx, y - 3, label, `font-size="9" fill="#444" transform="rotate(-90 ${round(lx)} ${round(y - 3)})"`));
    });
    body.push(text(x0 + (chart.series.length * barWidth) / 2, bottom + 18, group.label, 'font-size="12" fill="#222" text-anchor="middle"'));
  });
  return document(width, height, body);
}

/** "2" with a raised exponent, for log₂ axis labels. */
function powerOfTwoLabel(x: number, y: number, exponent: number): string {
  return `<text x="${round(x)}" y="${round(y)}" font-size="11" fill="#555" text-anchor="middle">2<tspan dy="-5" font-size="8">${exponent}</tspan></text>`;
}

/**
 * Log-log line plots, one panel per workload, sharing a legend: throughput against problem size.
 * The x axis is in powers of two, the y axis in decades.
 *
 * @param chart title, axis labels, series (legend order and colours), panels and the y formatter
 * @returns a complete SVG document
 * @example
 * writeFileSync('scaling.svg', lineChartSvg({ title: 'Scaling', xLabel: 'elements', yLabel: 'GB/s',
 *   series: [{ name: 'cpu' }], panels: [{ title: 'SAXPY', points: { cpu: [[1024, 1e9], [4096, 2e9]] } }],
 *   formatY: (v) => formatRate(v, 'B/s') }));
 */
export function lineChartSvg(chart: LineChart): string {
  const colors = colorsOf(chart.series);
  const left = 78;
  const panelWidth = 440;
  const panelGap = 90;
  const plotHeight = 300;
  const width = left + chart.panels.length * (panelWidth + panelGap) - panelGap + 24;
  const top0 = chart.subtitle ? 62 : 44;
  const key = legend(chart.series, colors, left, top0 + 4, width - left - 24);
  const top = top0 + key.height + 28;
  const bottom = top + plotHeight;
  const markerRows = Math.max(0, ...chart.panels.map((p) => p.markers?.length ?? 0));
  const height = bottom + 56 + 16 * markerRows;

  const body = [...heading(chart.title, chart.subtitle, left), key.svg];
  chart.panels.forEach((panel, p) => {
    const x0 = left + p * (panelWidth + panelGap);
    const all = Object.values(panel.points).flat();
    const xs = logRange(all.map(([x]) => x), 2);
    const ys = logRange(all.map(([, y]) => y), 10);
    const xOf = (x: number): number => x0 + ((Math.log2(x) - xs.low) / (xs.high - xs.low)) * panelWidth;
    const yOf = (y: number): number => bottom - ((Math.log10(y) - ys.low) / (ys.high - ys.low)) * plotHeight;

    body.push(text(x0, top - 10, panel.title, 'font-size="13" font-weight="600" fill="#222"'));
    for (let exponent = ys.low; exponent <= ys.high; exponent++) {
      const y = yOf(10 ** exponent);
      body.push(`<line x1="${round(x0)}" x2="${round(x0 + panelWidth)}" y1="${round(y)}" y2="${round(y)}" stroke="${exponent === ys.low ? '#333' : '#e3e3e3'}"/>`);
      body.push(text(x0 - 6, y + 4, tickLabel(chart.formatY, 10 ** exponent), 'font-size="11" fill="#555" text-anchor="end"'));
    }
    const xStep = xs.high - xs.low > 8 ? 2 : 1;
    for (let exponent = xs.low; exponent <= xs.high; exponent += xStep) {
      const x = xOf(2 ** exponent);
      body.push(`<line x1="${round(x)}" x2="${round(x)}" y1="${top}" y2="${bottom}" stroke="${exponent === xs.low ? '#333' : '#efefef'}"/>`);
      body.push(powerOfTwoLabel(x, bottom + 17, exponent));
    }
    body.push(text(x0 + panelWidth / 2, bottom + 40, chart.xLabel, 'font-size="12" fill="#333" text-anchor="middle"'));
    const yMid = top + plotHeight / 2;
    body.push(text(x0 - 62, yMid, chart.yLabel, `font-size="12" fill="#333" text-anchor="middle" transform="rotate(-90 ${round(x0 - 62)} ${round(yMid)})"`));

    (panel.markers ?? []).forEach((marker, m) => {
      const x = xOf(marker.x);
      const color = marker.color ?? '#666';
      body.push(`<line x1="${round(x)}" x2="${round(x)}" y1="${top}" y2="${bottom}" stroke="${color}" stroke-dasharray="5 4"/>`);
      // Labels go under the axis, one row each, where no line or point can cover them.
      body.push(text(x0, bottom + 62 + 16 * m, `┆ ${marker.label}`, `font-size="12" fill="${color}"`));
    });
    for (const s of chart.series) {
      const points = (panel.points[s.name] ?? []).filter(([x, y]) => x > 0 && y > 0);
      if (points.length === 0) continue;
      const color = colors.get(s.name)!;
      const path = points.map(([x, y]) => `${round(xOf(x))},${round(yOf(y))}`).join(' ');
      body.push(`<polyline points="${path}" fill="none" stroke="${color}" stroke-width="2"/>`);
      for (const [x, y] of points) {
        body.push(`<circle cx="${round(xOf(x))}" cy="${round(yOf(y))}" r="3" fill="${color}"><title>${escapeXml(`${panel.title} · ${s.name} · 2^${Math.log2(x)}: ${chart.formatY(y)}`)}</title></circle>`);
      }
    }
  });
  return document(width, height, body);
}
