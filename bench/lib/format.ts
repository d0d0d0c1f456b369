/** Numbers as the reports print them: three significant digits and a unit that fits. */

const SI_PREFIXES = ['', 'k', 'M', 'G', 'T', 'P'] as const;

function significant(value: number): string {
  return value >= 100 ? value.toFixed(0) : value >= 10 ? value.toFixed(1) : value.toFixed(2);
}

/** 0.000123 → "123 µs". */
export function formatSeconds(seconds: number): string {
  if (!Number.isFinite(seconds)) return '—';
  if (seconds >= 1) return `${significant(seconds)} s`;
  if (seconds >= 1e-3) return `${significant(seconds * 1e3)} ms`;
  if (seconds >= 1e-6) return `${significant(seconds * 1e6)} µs`;
  return `${significant(seconds * 1e9)} ns`;
}

/** 3.07e12, 'B/s' → "3.07 TB/s"; decimal prefixes, as bandwidths are quoted. */
export function formatRate(perSecond: number, unit: string): string {
  if (!Number.isFinite(perSecond) || perSecond <= 0) return '—';
  const power = Math.min(SI_PREFIXES.length - 1, Math.max(0, Math.floor(Math.log10(perSecond) / 3)));
  return `${significant(perSecond / 1000 ** power)} ${SI_PREFIXES[power]}${unit}`;
}

/** 16777216 → "16,777,216". */
export function formatCount(count: number): string {
  return count.toLocaleString('en-US');
}

/** 1.234 → "1.23×". */
export function formatRatio(ratio: number): string {
  return Number.isFinite(ratio) ? `${significant(ratio)}×` : '—';
}

/** 1_073_741_824 → "1 GiB"; binary prefixes, as memory sizes are quoted. */
export function formatBytes(bytes: number): string {
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let value = bytes;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit++;
  }
  return `${Number.isInteger(value) ? value : significant(value)} ${units[unit]}`;
}

/** 2^20 → "2^20"; other sizes as counts. Used for the scaling sweep's sizes. */
export function formatSize(size: number): string {
  const exponent = Math.log2(size);
  return Number.isInteger(exponent) ? `2^${exponent}` : formatCount(size);
}
