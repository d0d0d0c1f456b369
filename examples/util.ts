/** Small helpers the examples share: printing tables and knowing when run directly. */
import type { NDArray } from '../src/index.js';

/**
 * Whether this module is the script node was started with. Written without `node:url` so that the
 * examples also bundle for a page (examples/browser), where it is always false.
 */
export function isMain(moduleUrl: string): boolean {
  const script = (globalThis as { process?: { argv: string[] } }).process?.argv[1];
  if (script === undefined || !moduleUrl.startsWith('file:')) return false;
  const path = decodeURIComponent(new URL(moduleUrl).pathname).replace(/^\/([A-Za-z]:)/, '$1');
  return path.replace(/\\/g, '/') === script.replace(/\\/g, '/');
}

/** Formats a float32 matrix the way NumPy prints one (shortest float32 digits, aligned). */
export function formatTable(a: NDArray): string {
  const [rows, cols] = a.shape as [number, number];
  const cells: string[][] = [];
  for (let r = 0; r < rows; r++) {
    const row: string[] = [];
    for (let c = 0; c < cols; c++) {
      const v = Number(a.data[(a.offset ?? 0) + r * a.strides[0]! + c * a.strides[1]!]);
      row.push(a.dtype === 'float32' ? shortestFloat32(v) : String(v));
    }
    cells.push(row);
  }
  const width = Math.max(...cells.flat().map((s) => s.length));
  return cells.map((row, r) => `${r === 0 ? '[[' : ' ['}${row.map((s) => s.padStart(width)).join(' ')}]${r === rows - 1 ? ']' : ''}`).join('\n');
}

/** The shortest decimal that reads back as the same float32 (what NumPy prints). */
export function shortestFloat32(v: number): string {
  if (!Number.isFinite(v)) return String(v);
  if (Object.is(v, -0)) return '-0.';
  for (let digits = 1; digits <= 9; digits++) {
    const s = v.toPrecision(digits);
    if (Math.fround(Number(s)) === v) {
      const n = Number(s);
      return Number.isInteger(n) ? `${n}.` : String(n);
    }
  }
  return String(v);
}
