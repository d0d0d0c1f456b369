/**
 * Per-row kernels that may leave part of a row unwritten — a `return` inside a loop before the
 * loop that writes the row — on every target and engine: rows that returned early keep what the
 * output held (a given `out`'s contents, zeros for an allocated one), never another call's scratch.
 */
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { engineMode, setEngineMode } from '../src/targets/cpu/wasm/index.js';
import { guvectorize, setParallelOptions, shutdown } from '../src/index.js';
import { DEFAULT_THRESHOLD } from '../src/targets/parallel/index.js';
import { TARGETS } from './targets.js';

const initialMode = engineMode();
afterEach(() => setEngineMode(initialMode));
afterAll(async () => {
  setParallelOptions({ threshold: DEFAULT_THRESHOLD });
  await shutdown();
});

type Vector = { [i: number]: number; length: number };

describe.each(TARGETS)('a row that returns early on %s', { timeout: 60_000 }, (target) => {
  const skipNegative = guvectorize(['void(float32[:], float32[:])'], '(n)->(n)', { target })((x: Vector, out: Vector) => {
    for (let i = 0; i < x.length; i++) {
      if (x[i]! < 0) return;
    }
    for (let i = 0; i < out.length; i++) out[i] = 1;
  });
  const rows = 15_000;
  const table = (value: number) => ({ data: new Float32Array(rows * 4).fill(value), shape: [rows, 4] });

  it.each(target === 'cpu' ? ['wasm', 'js'] as const : ['auto'] as const)('engine %s: allocated rows stay zero, a given out keeps its contents', async (mode) => {
    setParallelOptions({ threshold: 0 });
    if (mode !== 'auto') setEngineMode(mode);
    // A first call fills whatever scratch the engine stages rows in with ones.
    expect([...((await skipNegative(table(1))) as { data: Float32Array }).data.slice(0, 4)]).toEqual([1, 1, 1, 1]);
    const allocated = (await skipNegative(table(-1))) as { data: Float32Array };
    expect(allocated.data.filter((v) => v !== 0).length).toBe(0);
    const out = { data: new Float32Array(rows * 4).fill(7), shape: [rows, 4] };
    await skipNegative(table(-1), { out });
    expect(out.data.filter((v) => v !== 7).length).toBe(0);
    // Rows that do not return are written whole, beside rows that do.
    const mixed = table(1);
    for (let r = 0; r < rows; r += 3) mixed.data[r * 4 + 2] = -1;
    const out2 = { data: new Float32Array(rows * 4).fill(7), shape: [rows, 4] };
    await skipNegative(mixed, { out: out2 });
    for (let r = 0; r < rows; r++) expect(out2.data[r * 4], `row ${r}`).toBe(r % 3 === 0 ? 7 : 1);
  });
});
