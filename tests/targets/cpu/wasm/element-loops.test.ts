/**
 * Element-wise kernels with loops in SIMD lanes (element-loops.ts): uniform loop counters stay
 * scalar, varying values take lanes, and every element's result is the JS engine's, bit for bit —
 * uniform and varying trip counts, `break`/`continue`, nested loops, loops in helpers, `return`
 * inside loops, over float32, float64, int32 and 8/16-bit integers, with scalar and broadcast
 * operands and lengths that leave tails. Loops whose trip count varies per element run the scalar
 * loop by default (`explain` says why); the masked form in lanes is checked too (`all`).
 */
import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import { type DType, DTYPES } from '../../../../src/dtypes.js';
import { engineMode, setEngineMode } from '../../../../src/targets/cpu/wasm/index.js';
import { __testing as loopsTesting } from '../../../../src/targets/cpu/wasm/element-loops.js';
import { sharedArray, vectorize } from '../../../../src/index.js';
import { __testing as blockTesting } from '../../../../src/targets/cpu/wasm/block-staging.js';
import { cycleBlockBytes, expectSameArrays } from './same-values.js';

const initialMode = engineMode();
afterEach(() => {
  setEngineMode(initialMode);
  blockTesting.setBlockBytes(undefined);
  loopsTesting.setLanesTake('uniform');
});

const INT_RANGE: Partial<Record<DType, [number, number]>> = {
  int8: [-128, 127], uint8: [0, 255], int16: [-32768, 32767], uint16: [0, 65535], int32: [-(2 ** 31), 2 ** 31 - 1],
};
const EDGES = [0, -0, 0.5, -1.5, 1, 2, 3.75, 100, -1e5, 1e10, 3.4e38, NaN, Infinity, -Infinity, 5e-324];

function valuesOf(dtype: DType): fc.Arbitrary<number> {
  const range = INT_RANGE[dtype];
  if (range) return fc.oneof(fc.integer({ min: range[0], max: range[1] }), fc.integer({ min: -20, max: 20 }).filter((x) => x >= range[0]));
  if (dtype === 'float64') return fc.oneof(fc.double(), fc.constantFrom(...EDGES), fc.double({ min: -10, max: 10 }));
  return fc.oneof(fc.float(), fc.constantFrom(...EDGES), fc.float({ min: -10, max: 10 })).map(Math.fround);
}

function fill(dtype: DType, values: number[], shared: boolean): ArrayLike<number> {
  const array = (shared ? sharedArray(values.length, dtype as never) : new DTYPES[dtype].arrayType(values.length)) as unknown as { [i: number]: number };
  values.forEach((v, i) => (array[i] = v));
  return array as unknown as ArrayLike<number>;
}

interface Case {
  readonly signature: string;
  readonly kernel: (...xs: number[]) => number;
  readonly env?: Record<string, unknown>;
  /** What `explain` says by default: the lanes, or the scalar loop's reason. */
  readonly explain: string;
  /** Operands passed as one scalar (uniform) number, by index. */
  readonly scalars?: readonly number[];
}

const steps = 6;
const clamp3 = (v: number) => Math.min(Math.max(v, -3), 3);
const powi = (base: number, n: number) => {
  let r = 1;
  for (let i = 0; i < n; i++) r *= base;
  return r;
};
const CASES: Case[] = [
  // Uniform trip counts: counters and tests scalar, values in lanes (2 where a varying value is
  // float64: `let t = 1`, or a value times a counter, is float64 by the language's rule 1).
  { signature: 'float32(float32)', env: { steps }, kernel: (x) => { let s = x; for (let k = 0; k < steps; k++) s = s * 0.999 + 0.5 / (1 + s * s); return s; }, explain: 'SIMD, 4 lanes' },
  { signature: 'float64(float64)', kernel: (x) => { let p = 0; for (let k = 8; k >= 0; k--) p = p * x + 1 / (k + 1); return p; }, explain: 'SIMD, 2 lanes' },
  { signature: 'float32(float32)', kernel: (x) => { let s = 1; let t = 1; for (let k = 1; k <= 12; k++) { t = (t * x) / k; s += t; } return s; }, explain: 'SIMD, 2 lanes' },
  { signature: 'float32(float32, int32)', scalars: [1], kernel: (x, n) => { let s = 0; for (let i = 0; i < n % 9; i++) s = s * 0.5 + x * i; return s; }, explain: 'SIMD, 2 lanes' },
  { signature: 'int32(int32)', kernel: (a) => { let h = a; for (let i = 0; i < 5; i++) { h = (h ^ (h >>> 3)) * 31 + i; if (i === 2) continue; h = h + 1; } return h; }, explain: 'SIMD, 2 lanes' },
  { signature: 'int16(int16, int16)', kernel: (a, b) => { let s = a; for (let i = 0; i < 4; i++) { if (i > 2) break; s = s * 3 - b; } return s; }, explain: 'SIMD, 4 lanes' },
  { signature: 'uint8(uint8)', kernel: (a) => { let s = a; let j = 0; do { s = (s * 5 + 1) & 255; j++; } while (j < 3); return s; }, explain: 'SIMD, 4 lanes' },
  { signature: 'float32(float32, float32)', kernel: (x, y) => { let s = 0; for (let i = 0; i < 3; i++) for (let j = 0; j <= i; j++) s += x > y ? x * j : y - i; return s; }, explain: 'SIMD, 2 lanes' },
  // A count assigned only uniform values, but under a varying condition: varying.
  { signature: 'int32(float32)', kernel: (x) => { let c = 0; for (let i = 0; i < 7; i++) { if (x > i) c = c + 1; else c = c - 2; } return c; }, explain: 'SIMD, 2 lanes' },
  // Helpers with loops: a uniform trip count passed as a parameter, a counter bound by a scalar
  // operand; a `return` under a uniform condition, before a loop.
  { signature: 'float32(float32)', env: { powi }, kernel: (x) => powi(x, 3) - powi(x * 0.5, 2), explain: 'SIMD, 2 lanes' },
  { signature: 'float64(float64, int32)', env: { powi }, scalars: [1], kernel: (x, n) => { if (n > 6 || n < -6) return x; let s = 0; for (let i = 0; i < n; i++) s += powi(x, i); return s; }, explain: 'SIMD, 2 lanes' },
  { signature: 'int32(int32, int16)', env: { powi }, kernel: (a, b) => { let s = b; for (let i = 0; i < 3; i++) s = s + a * powi(2, i); return s; }, explain: 'SIMD, 2 lanes' },
  // A helper with a loop, called from a loop; a uniform value (a helper parameter) across it.
  { signature: 'float64(float64)', env: { clamp3 }, kernel: (x) => { let s = 0; for (let i = 0; i < 4; i++) s += clamp3(x * i); return s; }, explain: 'SIMD, 2 lanes' },
  // Loops that elements leave at different iterations (a varying condition, `break`, `continue`,
  // a `return` inside): the scalar loop by default.
  { signature: 'int32(float32)', kernel: (c) => { let z = 0; let n = 0; while (n < 30 && z * z < 4) { z = z * z + c; n++; } return n; }, explain: 'scalar: elements leave a loop at different iterations (a condition' },
  { signature: 'float32(float32, int8)', kernel: (x, m) => { let s = x; for (let i = 0; i < m; i++) s = s * 0.5 + 1; return s; }, explain: 'scalar: elements leave a loop at different iterations (a condition' },
  { signature: 'float64(float64)', kernel: (x) => { let s = 0; for (let i = 0; i < 20; i++) { if (s > x) break; s += i; } return s; }, explain: 'scalar: elements leave a loop at different iterations (a condition' },
  { signature: 'float64(float64)', kernel: (x) => { let s = 0; for (let i = 0; i < 9; i++) { if (x > i) continue; s += i * x; } return s; }, explain: 'scalar: elements leave a loop at different iterations (a condition' },
  { signature: 'int32(float32, float32)', kernel: (cr, ci) => { let zr = 0; let zi = 0; for (let i = 0; i < 40; i++) { const t = zr * zr - zi * zi + cr; zi = 2 * zr * zi + ci; zr = t; if (zr * zr + zi * zi >= 4) return i; } return 40; }, explain: 'scalar: elements leave a loop at different iterations (a `return`' },
  { signature: 'float64(float64)', kernel: (x) => { if (!(Math.abs(x) < 1e6)) return -1; let t = 0; let y = Math.abs(x) + 1; while (true) { if (y > 100) return t; y = y * 2 + 1; t++; } }, explain: 'scalar: elements leave a loop at different iterations (a `return`' },
];

function run(c: Case, mode: 'uniform' | 'all'): void {
  loopsTesting.setLanesTake(mode);
  const f = vectorize([c.signature], c.env ? { env: c.env } : {})(c.kernel);
  const types = c.signature.slice(c.signature.indexOf('(') + 1, -1).split(',').map((t) => t.trim() as DType);
  const ret = c.signature.slice(0, c.signature.indexOf('(')) as DType;
  if (mode === 'uniform') {
    setEngineMode('wasm');
    const probe = types.map((t, k) => (c.scalars?.includes(k) ? 3 : fill(t, new Array(64).fill(1), true)));
    expect(f.explain(...probe, { out: sharedArray(64, ret as never) })).toContain(`WebAssembly (${c.explain}`);
  }
  fc.assert(
    fc.property(
      fc.array(fc.tuple(...types.map(valuesOf)), { minLength: 0, maxLength: 70 }),
      fc.boolean(),
      fc.integer({ min: -1, max: types.length - 1 }),
      (rows, shared, broadcast) => {
        const inputs = types.map((t, k) =>
          c.scalars?.includes(k) ? (rows[0]?.[k] ?? 2)
            : k === broadcast && rows.length ? fill(t, [rows[0]![k]!], shared) : fill(t, rows.map((r) => r[k]!), shared));
        setEngineMode('wasm');
        cycleBlockBytes();
        const w = f.sync(...inputs) as ArrayLike<number>;
        setEngineMode('js');
        expectSameArrays(w, f.sync(...inputs) as ArrayLike<number>);
      },
    ),
    { numRuns: 40 },
  );
}

describe('element-wise kernels with loops in SIMD lanes', () => {
  it('leaves a function once every lane has returned, before a loop no lane reaches', () => {
    // Every lane returns before `while (true)`, whose only exit is a `return` no lane runs.
    loopsTesting.setLanesTake('all');
    const f = vectorize(['float64(float64)'])((x: number) => { if (!(Math.abs(x) < 1e6)) return -1; let t = 0; let y = Math.abs(x) + 1; while (true) { if (y > 100) return t; y = y * 2 + 1; t++; } });
    const xs = Float64Array.of(NaN, Infinity, 3.4e38, -1e7, NaN, 1e9, 0.5, NaN, NaN);
    setEngineMode('wasm');
    expect(f.explain(xs)).toContain('WebAssembly (SIMD, 2 lanes');
    expect(Array.from(f.sync(xs) as Float64Array)).toEqual([-1, -1, -1, -1, -1, -1, 6, -1, -1]);
  });

  it.each(CASES.map((c, i) => [i, c.signature, c] as const))('kernel %i: %s (default: uniform loops in lanes)', (_, __, c) => run(c, 'uniform'));
  it.each(CASES.map((c, i) => [i, c.signature, c] as const))('kernel %i: %s (masked loops in lanes too)', (_, __, c) => {
    run(c, 'all');
    // In lanes whatever the loops: the masked form is checked, not the scalar loop.
    setEngineMode('wasm');
    const f = vectorize([c.signature], c.env ? { env: c.env } : {})(c.kernel);
    const types = c.signature.slice(c.signature.indexOf('(') + 1, -1).split(',').map((t) => t.trim() as DType);
    expect(f.explain(...types.map((t, k) => (c.scalars?.includes(k) ? 3 : fill(t, [1, 2, 3, 4, 5], true))))).toContain('WebAssembly (SIMD');
  });
});
