/**
 * `Math.random()` in kernels: the stream of compiler/random-stream.ts, bit for bit on every target
 * (the cpu's JS engine, parallel workers, the gpu on lavapipe), per element and per row, several
 * draws per element, in helpers; `{ seed }` and its errors.
 */
import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import { ArgumentError, getGpuOptions, guvectorize, KernelCompileError, setGpuOptions, vectorize } from '../src/index.js';
import { streamingStats } from './call-paths.js';
import { drawFloat32, drawFloat64, keyOfSeed, type StreamKey } from '../src/compiler/random-stream.js';
import { TARGETS, FLOAT64_TARGETS } from './targets.js';

/** A helper the kernels find in `env`. */
declare function jitter(scale: number): number;

/** The reference: draw `draw` of element `item`, as the stream's definition computes it. */
const f32 = ([k0, k1]: StreamKey, item: number, draw = 0) => drawFloat32(k0, k1, item, draw);
const f64 = ([k0, k1]: StreamKey, item: number, draw = 0) => drawFloat64(k0, k1, item, draw);

/** Indices where `actual` differs from `expected(i)`, at most 5. */
function mismatches(actual: ArrayLike<number>, expected: (i: number) => number): number[] {
  const bad: number[] = [];
  for (let i = 0; i < actual.length && bad.length < 5; i++) if (!Object.is(actual[i], expected(i))) bad.push(i);
  return bad;
}

// More elements than one gpu workgroup row of 65,535 × 64 would hold is too slow on lavapipe; this
// covers several workgroups, every parallel worker and the fast-path sizes.
const N = 70_001;

describe.each(TARGETS)('Math.random() on %s', (target) => {
  it('draws float32 uniforms equal to the stream, element by element, for a seed', async () => {
    const uniform = vectorize(['float32(float32)'], { target })((_x: number) => Math.fround(Math.random()));
    const x = new Float32Array(N);
    const key = keyOfSeed(20261126);
    const out = (await uniform(x, { seed: 20261126 })) as Float32Array;
    expect(mismatches(out, (i) => f32(key, i))).toEqual([]);
    // The same seed again: the same numbers; another seed, or none, others.
    expect(mismatches((await uniform(x, { seed: 20261126 })) as Float32Array, (i) => out[i]!)).toEqual([]);
    const other = (await uniform(x, { seed: 20261127 })) as Float32Array;
    const unseeded = [(await uniform(x)) as Float32Array, (await uniform(x)) as Float32Array];
    for (const y of [other, ...unseeded]) expect(y.filter((v, i) => v === out[i]).length).toBeLessThan(50);
    expect(unseeded[0]!.filter((v, i) => v === unseeded[1]![i]).length).toBeLessThan(50);
    // Uniform in [0, 1): mean 1/2, nothing outside.
    expect(out.every((v) => v >= 0 && v < 1)).toBe(true);
    expect(Math.abs(out.reduce((s, v) => s + v, 0) / N - 0.5)).toBeLessThan(0.01);
  }, 60_000);

  it('draws several numbers per element, in source order, helpers continuing the stream', async () => {
    const key = keyOfSeed(5n);
    const env = { jitter: (s: number) => s * Math.fround(Math.random()) };
    // The statement's own draws come first (draw 0, 1), then the helper's as it runs (draw 2).
    const three = vectorize(['float32(float32)'], { target, env })((x: number) => Math.fround(Math.random()) - 2 * Math.fround(Math.random()) + jitter(x));
    const x = Float32Array.from({ length: 1000 }, (_, i) => i);
    const out = (await three(x, { seed: 5n })) as Float32Array;
    const fr = Math.fround;
    expect(mismatches(out, (i) => fr(fr(f32(key, i, 0) - fr(2 * f32(key, i, 1))) + fr(x[i]! * f32(key, i, 2))))).toEqual([]);
  }, 60_000);

  it('numbers rows of a guvectorize call, draws along the row', async () => {
    const fill = guvectorize(['void(float32[:], float32[:])'], '(n)->(n)', { target })((_x: Float32Array, out: Float32Array) => {
      for (let j = 0; j < out.length; j++) out[j] = Math.fround(Math.random());
    });
    const rows = 3001, n = 7;
    const out = (await fill({ data: new Float32Array(rows * n), shape: [rows, n] }, { seed: 99 })) as { data: Float32Array };
    const key = keyOfSeed(99);
    expect(mismatches(out.data, (k) => f32(key, Math.floor(k / n), k % n))).toEqual([]);
  }, 60_000);

  it('numbers elements in C order over a loop of two dimensions that do not merge (a transposed input)', async () => {
    const plus = vectorize(['float32(float32)'], { target })((x: number) => x + Math.fround(Math.random()));
    const [r, c] = [37, 53];
    const data = Float32Array.from({ length: r * c }, (_, i) => i % 3);
    // x viewed transposed: element (i, j) is data[j * r + i].
    const out = (await plus({ data, shape: [r, c], strides: [1, r], dtype: 'float32' }, { seed: 3 })) as { data: Float32Array };
    const key = keyOfSeed(3);
    expect(mismatches(out.data, (k) => Math.fround(data[(k % c) * r + Math.floor(k / c)]! + f32(key, k)))).toEqual([]);
  }, 60_000);

  it('writes only where `where` is true, numbering every element', async () => {
    const uniform = vectorize(['float32(float32)'], { target })((_x: number) => Math.fround(Math.random()));
    const where = Uint8Array.from({ length: 500 }, (_, i) => i % 3);
    const out = (await uniform(new Float32Array(500), { seed: 11, where })) as Float32Array;
    const key = keyOfSeed(11);
    expect(mismatches(out, (i) => (where[i] ? f32(key, i) : 0))).toEqual([]);
  }, 60_000);

  it('Monte Carlo π: a quarter circle hit by uniform points', async () => {
    const hit = vectorize(['float32(float32)'], { target })((_: number) => {
      const x = Math.fround(Math.random()), y = Math.fround(Math.random());
      return x * x + y * y < 1 ? 1 : 0;
    });
    const hits = (await hit(new Float32Array(200_000), { seed: 2026 })) as Float32Array;
    const pi = (4 * hits.reduce((s, v) => s + v, 0)) / hits.length;
    expect(Math.abs(pi - Math.PI)).toBeLessThan(0.02); // σ ≈ 0.0037
  }, 60_000);
});

describe('Math.random() across targets (property)', () => {
  // One ufunc per target, made once: `()->(n)` rows of n draws each.
  const fills = TARGETS.map((target) =>
    guvectorize(['void(float32[:], float32[:])'], '()->(n)', { target })((_x: Float32Array, out: Float32Array) => {
      for (let j = 0; j < out.length; j++) out[j] = Math.fround(Math.random());
    }),
  );

  it('every target draws the stream for any seed, number of rows and draws per row', async () => {
    await fc.assert(
      fc.asyncProperty(fc.bigInt({ min: 0n, max: 2n ** 64n - 1n }), fc.integer({ min: 1, max: 300 }), fc.integer({ min: 1, max: 5 }), async (seed, rows, n) => {
        const key = keyOfSeed(seed);
        for (const fill of fills) {
          const out = (await fill(new Float32Array(rows), { seed, dims: { n } })) as { data: Float32Array };
          expect(mismatches(out.data, (k) => f32(key, Math.floor(k / n), k % n))).toEqual([]);
        }
      }),
      { numRuns: 15 },
    );
  }, 120_000);
});

describe.each(FLOAT64_TARGETS)('float64 Math.random() on %s', (target) => {
  it('draws the 53-bit uniforms of the stream', async () => {
    const uniform = vectorize(['float64(float64)'], { target })((_x: number) => Math.random());
    const out = (await uniform(new Float64Array(N), { seed: 2n ** 64n - 1n })) as Float64Array;
    const key = keyOfSeed(2n ** 64n - 1n);
    expect(mismatches(out, (i) => f64(key, i))).toEqual([]);
    // Not only multiples of 2^-24: the low bits are drawn too.
    expect(out.some((v) => v * 2 ** 24 !== Math.floor(v * 2 ** 24))).toBe(true);
  }, 60_000);

  it('draws the same float64 numbers run as plain JS (`disableJit`), and gives Math.random back after', async () => {
    const random = Math.random;
    const twice = vectorize(['float64(float64)'], { target, disableJit: true })((_x: number) => Math.random() + 2 * Math.random());
    const out = (await twice(new Float64Array(300), { seed: 12 })) as Float64Array;
    const key = keyOfSeed(12);
    expect(mismatches(out, (i) => f64(key, i, 0) + 2 * f64(key, i, 1))).toEqual([]);
    expect(Math.random).toBe(random);
  });
});

describe.runIf(TARGETS.includes('gpu'))('float64 draws on the gpu', () => {
  it('are the float32 draws: the cpu\'s double truncated to 24 bits (WGSL has no f64)', async () => {
    const kernel = (_x: number) => Math.random();
    const gpu = vectorize(['float32(float32)'], { target: 'gpu' })(kernel);
    const cpu = vectorize(['float64(float64)'])(kernel);
    const x = new Float32Array(5000);
    const onGpu = (await gpu(x, { seed: 8 })) as Float32Array;
    const onCpu = cpu.sync(new Float64Array(5000), { seed: 8 }) as Float64Array;
    expect(mismatches(onGpu, (i) => Math.floor(onCpu[i]! * 2 ** 24) / 2 ** 24)).toEqual([]);
  }, 60_000);
});

describe.runIf(TARGETS.includes('gpu'))('Math.random() in a gpu call streamed in chunks (host arrays over the memory limit)', () => {
  const limit = getGpuOptions().memoryLimit;
  afterEach(() => setGpuOptions({ memoryLimit: limit }));

  it('numbers iterations as the whole call does, cut along the first dimension or the next', async () => {
    const uniform = vectorize(['float32(float32)'], { target: 'gpu' })((x: number) => x + Math.fround(Math.random()));
    const key = keyOfSeed(77);
    setGpuOptions({ memoryLimit: 64 * 1024 });
    const before = streamingStats().chunks;
    const flat = (await uniform(new Float32Array(40_000), { seed: 77 })) as Float32Array;
    expect(mismatches(flat, (i) => f32(key, i))).toEqual([]);
    // Rows of 12,000 (96 KB in and out): each row is cut too.
    const rows = (await uniform({ data: new Float32Array(3 * 12_000), shape: [3, 12_000] }, { seed: 77 })) as { data: Float32Array };
    expect(mismatches(rows.data, (i) => f32(key, i))).toEqual([]);
    expect(streamingStats().chunks - before).toBeGreaterThan(6);
  }, 60_000);
});

describe('Math.random() in kernels: what is refused', () => {
  it('a `seed` that is not an integer from 0 to 2^53 − 1 or a bigint below 2^64', () => {
    const uniform = vectorize(['float64(float64)'])((_x: number) => Math.random());
    const x = new Float64Array(2);
    for (const seed of [-1, 0.5, 2 ** 53, NaN, '7', -1n, 2n ** 64n]) {
      expect(() => uniform.sync(x, { seed } as never)).toThrow(ArgumentError);
    }
    expect(() => uniform.sync(x, { seed: 1.5 })).toThrowErrorMatchingInlineSnapshot(`[ArgumentError: \`seed\` must be an integer from 0 to Number.MAX_SAFE_INTEGER (or a bigint from 0n to 2n ** 64n - 1n), found 1.5.]`);
  });

  it('`Math.random()` in a loop\'s test or update, and with arguments', () => {
    const inTest = () => vectorize(['float64(float64)'])((_x: number) => {
      let n = 0;
      while (Math.random() < 0.5) n++;
      return n;
    });
    expect(inTest).toThrow(KernelCompileError);
    expect(inTest).toThrowErrorMatchingInlineSnapshot(`
      [KernelCompileError: \`Math.random()\` is not supported in a loop's test, which runs again on every iteration: draw into a variable in the loop's body (\`const u = Math.random();\`) (tests/math-random.test.ts:184:14)
        while (Math.random() < 0.5) n++;
               ^]
    `);
    const inUpdate = () => vectorize(['float64(float64)'])((_x: number) => {
      let s = 0;
      for (let i = 0; i < 3; i += Math.random()) s++;
      return s;
    });
    expect(inUpdate).toThrowErrorMatchingInlineSnapshot(`
      [KernelCompileError: \`Math.random()\` is not supported in a \`for\` loop's update, which runs again on every iteration: draw into a variable in the loop's body (\`const u = Math.random();\`) (tests/math-random.test.ts:195:35)
        for (let i = 0; i < 3; i += Math.random()) s++;
                                    ^]
    `);
    const withArgument = () => vectorize(['float64(float64)'])((v: number) => (Math.random as (x: number) => number)(v));
    expect(withArgument).toThrowErrorMatchingInlineSnapshot(`
      [KernelCompileError: \`Math.random\` takes no arguments (tests/math-random.test.ts:203:80)
        const withArgument = () => vectorize(['float64(float64)'])((v: number) => (Math.random as (x: number) => number)(v));
                                                                                   ^]
    `);
  });
});
