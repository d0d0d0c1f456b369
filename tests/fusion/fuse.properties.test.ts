/**
 * Property: a random composition of vectorize calls gives the same result fused as called one by
 * one — the same bits on cpu and parallel, within a few float32 ulps on the gpu — over random
 * graphs (a result used twice, arrays used twice, scalars), dtypes (loops selected by the inputs,
 * conversions between steps), shapes that broadcast, strided and reversed views, and special
 * values (NaN, ±Infinity, −0, integer extremes). The same JS function is the oracle: called
 * directly it makes the separate calls; given to `fuse` it runs one kernel. A composition whose
 * calls fail fails alike both ways.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { fuse, type NDArray, type TargetName, vectorize } from '../../src/index.js';
import { TARGETS } from '../targets.js';

type Ufunc = ReturnType<ReturnType<typeof vectorize>>;

/** The ufuncs compositions draw from, with signatures in several dtypes. */
function poolOn(target: TargetName): { unary: Ufunc[]; binary: Ufunc[] } {
  const gpu = target === 'gpu';
  const floats = (arity: 1 | 2) => {
    const types = gpu ? ['float32'] : ['float32', 'float64'];
    return types.map((t) => `${t}(${Array(arity).fill(t).join(', ')})`);
  };
  const withInts = (arity: 1 | 2) => [`int32(${Array(arity).fill('int32').join(', ')})`, ...floats(arity)];
  const v = (sigs: string[], fn: (...xs: number[]) => number) => vectorize(sigs, { target })(fn as never);
  const unary = [
    v(withInts(1), (x) => -x),
    v(withInts(1), (x) => x * x - 3),
    v(floats(1), (x) => Math.abs(x) * 0.5),
    v(floats(1), (x) => (x > 1 ? x - 1 : x * 2)),
    v(gpu ? ['int32(float32)'] : ['int32(float64)'], (x) => x),
    v(gpu ? ['float32(int32)'] : ['float64(int32)', 'float32(float32)'], (x) => x / 4),
  ];
  const binary = [
    v(withInts(2), (a, b) => a + b),
    v(withInts(2), (a, b) => a * b),
    v(withInts(2), (a, b) => a - b * 2),
    v(floats(2), (a, b) => Math.min(a, b)),
    v(floats(2), (a, b) => Math.max(a, b) + 0.1),
  ];
  return { unary, binary };
}

/** One step of a program: a ufunc of the pool and where its arguments come from. */
interface Step {
  readonly binary: boolean;
  readonly ufunc: number;
  /** Per argument: a leaf (`leaf k`), an earlier step (`step k`), or a scalar. */
  readonly args: readonly ({ readonly kind: 'leaf' | 'step'; readonly index: number } | { readonly kind: 'scalar'; readonly value: number })[];
}

const LEAVES = 3;

const step = (k: number) =>
  fc.record({
    binary: fc.boolean(),
    ufunc: fc.nat(4),
    args: fc.array(
      fc.oneof(
        { weight: 3, arbitrary: fc.record({ kind: fc.constant('leaf' as const), index: fc.nat(LEAVES - 1) }) },
        { weight: k === 0 ? 0 : 4, arbitrary: fc.record({ kind: fc.constant('step' as const), index: fc.nat(Math.max(0, k - 1)) }) },
        { weight: 1, arbitrary: fc.record({ kind: fc.constant('scalar' as const), value: fc.constantFrom(2, -0.5, 0, 3) }) },
      ),
      { minLength: 2, maxLength: 2 },
    ),
  });

const program = fc.integer({ min: 1, max: 4 }).chain((n) => fc.tuple(...Array.from({ length: n }, (_, k) => step(k))));

/** A leaf: its dtype and layout within the loop shape [m, n] (broadcast, strided, reversed). */
const leafLayout = fc.record({
  dtype: fc.constantFrom('float32', 'float64', 'int32'),
  form: fc.constantFrom('full', 'row', 'column', 'reversed-row', 'strided-full'),
});

const shape = fc.record({ m: fc.integer({ min: 1, max: 4 }), n: fc.integer({ min: 1, max: 33 }) });

const SPECIAL = [NaN, Infinity, -Infinity, -0, 0, 1, -1, 2 ** 31 - 1, -(2 ** 31), 1e-40, 65504];

function makeLeaf(dtype: string, form: string, m: number, n: number, seed: number): NDArray {
  const Kind = dtype === 'float32' ? Float32Array : dtype === 'float64' ? Float64Array : Int32Array;
  const value = (i: number) => {
    const r = Math.sin(seed * 97 + i * 13.7) * 1e4;
    const special = SPECIAL[(seed + i) % 23];
    const x = special !== undefined && (i + seed) % 5 === 0 ? special : r - Math.trunc(r) + ((i * 7 + seed) % 11) - 5;
    return dtype === 'int32' ? (Number.isFinite(x) ? Math.trunc(x * 1000) | 0 : 7) : x;
  };
  const fill = (len: number, step = 1, offset = 0) => {
    const data = new Kind(offset + len * Math.abs(step) + 2);
    for (let i = 0; i < data.length; i++) data[i] = value(i);
    return data;
  };
  switch (form) {
    case 'row': return { data: fill(n), shape: [n], strides: [1], offset: 0, dtype: dtype as never, order: 'row-major' };
    case 'column': return { data: fill(m), shape: [m, 1], strides: [1, 1], offset: 0, dtype: dtype as never, order: 'row-major' };
    case 'reversed-row': return { data: fill(n, 2, 1), shape: [n], strides: [-2], offset: 1 + 2 * (n - 1), dtype: dtype as never, order: 'row-major' };
    case 'strided-full': return { data: fill(m * n, 2), shape: [m, n], strides: [2 * n, 2], offset: 0, dtype: dtype as never, order: 'row-major' };
    default: return { data: fill(m * n), shape: [m, n], strides: [n, 1], offset: 0, dtype: dtype as never, order: 'row-major' };
  }
}

/** Same value: bits on cpu/parallel; on the gpu NaN alike and within 4 float32 ulps (integers exactly). */
function sameValue(got: number, want: number, target: TargetName): boolean {
  if (Object.is(got, want)) return true;
  if (target !== 'gpu') return false;
  if (Number.isNaN(got) && Number.isNaN(want)) return true;
  if (got === want) return true; // ±0 alike: WGSL may flush or not
  return Math.abs(got - want) <= 4 * 2 ** -23 * Math.max(Math.abs(want), 2 ** -126);
}

describe.each(TARGETS)('fused ≡ separate calls on %s', (target) => {
  const pool = poolOn(target);
  it('over random compositions, dtypes, shapes and layouts', async () => {
    await fc.assert(
      fc.asyncProperty(program, fc.tuple(leafLayout, leafLayout, leafLayout), shape, fc.nat(1000), async (steps, leaves, { m, n }, seed) => {
        const run = async (...xs: unknown[]) => {
          const results: unknown[] = [];
          for (const s of steps as readonly Step[]) {
            const ufunc = s.binary ? pool.binary[s.ufunc % pool.binary.length]! : pool.unary[s.ufunc % pool.unary.length]!;
            const args = s.args.slice(0, s.binary ? 2 : 1).map((a): unknown => (a.kind === 'scalar' ? a.value : a.kind === 'leaf' ? xs[a.index] : results[a.index]));
            if (args.every((a) => typeof a === 'number')) args[0] = xs[0] as never; // at least one array: a call on scalars alone runs at trace time
            results.push(await ufunc(...(args as number[])));
          }
          return results[results.length - 1];
        };
        const gpu = target === 'gpu';
        const arrays = leaves.map((l, k) => makeLeaf(gpu && l.dtype === 'float64' ? 'float32' : l.dtype, l.form, m, n, seed + k));
        let want: unknown;
        let wantError: unknown;
        try {
          want = await run(...arrays);
        } catch (e) {
          wantError = e;
        }
        const fused = fuse(run);
        if (wantError) {
          await expect(fused(...arrays)).rejects.toThrow((wantError as Error).constructor as new () => Error);
          return;
        }
        const got = await fused(...arrays);
        const flat = (r: unknown) => (ArrayBuffer.isView(r) ? (r as Float32Array) : (r as NDArray).data);
        expect(got.constructor).toBe((want as object).constructor);
        const g = flat(got);
        const w = flat(want);
        expect(g.constructor).toBe(w.constructor);
        if (!ArrayBuffer.isView(got)) expect((got as NDArray).shape).toEqual((want as NDArray).shape);
        for (let i = 0; i < w.length; i++) {
          if (!sameValue(Number(g[i]), Number(w[i]), target)) {
            expect.fail(`element ${i}: fused ${g[i]}, separate ${w[i]} (${await fused.explain(...arrays)})`);
          }
        }
      }),
      { numRuns: target === 'gpu' ? 25 : 80 },
    );
  }, 120_000);
});
