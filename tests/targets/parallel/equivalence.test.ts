/**
 * The parallel target gives what the cpu target gives, to the bit, for every kernel, dtype,
 * broadcast, stride and layout: random calls run on both and their results (whole output buffers,
 * gaps included) or errors (class and message) are compared. The threshold is 0 and chunks may be
 * one loop index long, so even tiny calls are split across the workers; the calling thread claims
 * chunks in one run of the suite and only waits in the other, so that workers do run every case.
 * The cpu target runs the JS engine (the reference); the parallel target runs each case once on
 * the JS engine and once on the Wasm engine (engine mode 'wasm': Wasm wherever it can run the
 * kernel, so its workers run the compiled Wasm kernel even on tiny calls).
 */
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type DType, type EngineMode, guvectorize, type NDArrayLike, sharedArray, setEngineMode, setParallelOptions, type Ufunc, vectorize } from '../../../src/index.js';
import { __testing, DEFAULT_THRESHOLD } from '../../../src/targets/parallel/index.js';
import { callCounts, wasmJobs } from '../../call-paths.js';
import { type ArraySpec, arraySpec, broadcastShape, loopShape, materialise, type OperandSpec, outcomeOf, sameBits } from './arrays.js';
import { hermiteRow } from '../../kernels.js';

// These tests are of the pool's own workings: every call the pool could take goes there, not to the
// calling thread where that measured faster (placement.ts, tested in placement.test.ts).
let measuredPlacement: boolean;
beforeAll(() => void (measuredPlacement = __testing.measuredPlacement(false)));
afterAll(() => void __testing.measuredPlacement(measuredPlacement));

/** Makes the same kernel for both targets. */
function both<F extends (...args: never[]) => unknown>(make: (target: 'cpu' | 'parallel') => F): { cpu: F; parallel: F } {
  return { cpu: make('cpu'), parallel: make('parallel') };
}

interface CallSpec {
  readonly inputs: readonly OperandSpec[];
  /** Outputs passed as `out`, or none (then the front allocates them). */
  readonly out?: readonly ArraySpec[];
  readonly dims?: Readonly<Record<string, number>>;
  readonly sync: boolean;
}

function callArguments(spec: CallSpec, forParallel: boolean): { args: unknown[]; outs: unknown[] } {
  const share = (s: OperandSpec) => forParallel && s.kind === 'array' && s.shared;
  const args = spec.inputs.map((s) => materialise(s, share(s)));
  const outs = (spec.out ?? []).map((s) => materialise(s, share(s)));
  const options = { ...(spec.out ? { out: outs.length === 1 ? outs[0] : outs } : {}), ...(spec.dims ? { dims: spec.dims } : {}) };
  return { args: Object.keys(options).length ? [...args, options] : args, outs };
}

/** The engine the parallel target runs in the current `describe` (the cpu target runs JS). */
let parallelEngine: EngineMode = 'js';

/** Runs `f` with an engine mode, restoring the one before. */
async function withEngine<T>(mode: EngineMode, f: () => T | Promise<T>): Promise<T> {
  const before = setEngineMode(mode);
  try {
    return await f();
  } finally {
    setEngineMode(before);
  }
}

/** Runs one call on both targets and expects the same outcome. */
async function expectSameOnBoth(pair: { cpu: Ufunc; parallel: Ufunc }, spec: CallSpec): Promise<void> {
  const onCpu = callArguments(spec, false);
  const onParallel = callArguments(spec, true);
  const expected = await withEngine('js', () => outcomeOf(() => pair.cpu.sync(...onCpu.args)));
  const actual = await withEngine(parallelEngine, () => outcomeOf(() => (spec.sync ? pair.parallel.sync(...onParallel.args) : pair.parallel(...onParallel.args))));
  if (!expected.ok || !actual.ok) {
    // Outputs are partially written after a kernel error, differently on each target: not compared.
    expect(actual).toEqual(expected);
    return;
  }
  expect(sameBits(actual.value, expected.value)).toBe(true);
  expect(sameBits(onParallel.outs, onCpu.outs)).toBe(true);
}

const scalarFor = (dtype: DType): fc.Arbitrary<OperandSpec> =>
  (dtype === 'float32' || dtype === 'float64'
    ? fc.double()
    : dtype === 'uint8'
      ? fc.integer({ min: 0, max: 255 })
      : dtype === 'bool'
        ? fc.constantFrom(0, 1)
        : fc.integer({ min: -100, max: 100 })
  ).map((value) => ({ kind: 'scalar', value }));

/** A vectorize call: each input an array that broadcasts to the loop shape, or a scalar. */
function vectorizeCall(inputTypes: readonly DType[], outputType: DType): fc.Arbitrary<CallSpec> {
  return loopShape().chain((loop) =>
    fc.record({
      inputs: fc.tuple(
        ...inputTypes.map((dtype) =>
          fc.oneof({ weight: 1, arbitrary: scalarFor(dtype) }, { weight: 5, arbitrary: broadcastShape(loop).chain((shape) => arraySpec(dtype, shape)) }),
        ),
      ),
      // Zero strides in `out`: loop indices that share an element must run in the cpu order.
      out: fc.option(arraySpec(outputType, loop, { zeroStrides: true }).map((s) => [s]), { nil: undefined }),
      sync: fc.boolean(),
    }),
  );
}

const VECTORIZE_CASES = [
  {
    name: 'float32, rounding after each operation',
    types: ['float32', 'float32'] as DType[], result: 'float32' as DType,
    kernels: both((target) => vectorize(['float32(float32, float32)'], { target })((a: number, b: number) => a * b + a / (b - 1))),
  },
  {
    name: 'float64 with Math functions',
    types: ['float64', 'float64'] as DType[], result: 'float64' as DType,
    kernels: both((target) => vectorize(['float64(float64, float64)'], { target })((a: number, b: number) => Math.sin(a) * b - Math.exp(-Math.abs(b)) + Math.atan2(a, b) + (a % 3))),
  },
  {
    name: 'int32, wrapping, division and shifts',
    types: ['int32', 'int32'] as DType[], result: 'int32' as DType,
    kernels: both((target) => vectorize(['int32(int32, int32)'], { target })((a: number, b: number) => a * b - ((a / b) | 0) + (a % b) + (a >> (b & 31)))),
  },
  {
    name: 'uint8 and a control-flow body',
    types: ['uint8', 'uint8'] as DType[], result: 'uint8' as DType,
    kernels: both((target) =>
      vectorize(['uint8(uint8, uint8)'], { target })((a: number, b: number) => {
        let s = a;
        for (let i = 0; i < (b & 7); i++) s = s * 3 + i;
        if (s > 100) return s - b;
        return s;
      }),
    ),
  },
  {
    name: 'int64 as bigints',
    types: ['int64', 'int64'] as DType[], result: 'int64' as DType,
    kernels: both((target) => vectorize(['int64(int64, int64)'], { target })((a: bigint, b: bigint) => a * b + a / b - (a % b))),
  },
  {
    name: 'bool',
    types: ['bool', 'bool'] as DType[], result: 'bool' as DType,
    kernels: both((target) => vectorize(['bool(bool, bool)'], { target })((a: boolean, b: boolean) => (a && !b) || (b && !a))),
  },
  {
    name: 'three inputs of mixed types',
    types: ['float32', 'int32', 'float64'] as DType[], result: 'float64' as DType,
    kernels: both((target) => vectorize(['float64(float32, int32, float64)'], { target })((a: number, k: number, c: number) => a * k + c)),
  },
];

/** A helper with array parameters, called from a kernel that also has a local array. */
function smooth(x: Float64Array, weight: number, out: Float64Array): void {
  for (let i = 0; i < x.length; i++) {
    const left = i > 0 ? x[i - 1]! : x[i]!;
    const right = i + 1 < x.length ? x[i + 1]! : x[i]!;
    out[i] = weight * x[i]! + (1 - weight) * 0.5 * (left + right);
  }
}

/** A 2-D core slice as kernels index it. */
type Matrix = Float32Array[] & { readonly shape: readonly number[] };

const coreSize = fc.integer({ min: 0, max: 5 });

const GUVECTORIZE_CASES: { name: string; kernels: { cpu: Ufunc; parallel: Ufunc }; call: fc.Arbitrary<CallSpec> }[] = [
  {
    name: '(n)->() weighted sum, float64',
    kernels: both((target) =>
      guvectorize(['void(float64[:], float64[:])'], '(n)->()', { target })((x: Float64Array, out: Float64Array) => {
        let s = 0;
        for (let i = 0; i < x.length; i++) s += x[i]! * (i + 1);
        out[0] = s;
      }),
    ),
    call: fc.tuple(loopShape(), coreSize).chain(([loop, n]) =>
      fc.record({
        inputs: fc.tuple(broadcastShape(loop).chain((shape) => arraySpec('float64', [...shape, n]))),
        out: fc.option(arraySpec('float64', loop, { zeroStrides: true }).map((s) => [s]), { nil: undefined }),
        sync: fc.boolean(),
      }),
    ),
  },
  {
    name: '()->(n) Hermite recurrence, float32 (out of bounds for n < 2)',
    kernels: both((target) => guvectorize(['void(float32, float32[:])'], '()->(n)', { target })(hermiteRow)),
    call: fc.tuple(loopShape(), coreSize).chain(([loop, n]) =>
      fc.oneof(
        fc.record({ inputs: fc.tuple(broadcastShape(loop).chain((shape) => arraySpec('float32', shape))), dims: fc.constant({ n }), sync: fc.boolean() }),
        fc.record({
          inputs: fc.tuple(broadcastShape(loop).chain((shape) => arraySpec('float32', shape))),
          out: arraySpec('float32', [...loop, n], { zeroStrides: true }).map((s) => [s]),
          sync: fc.boolean(),
        }),
      ),
    ),
  },
  {
    name: '(n),()->(n) through a helper in env, with a local array',
    kernels: both((target) =>
      guvectorize(['void(float64[:], float64, float64[:])'], '(n),()->(n)', { target, env: { smooth } })((x: Float64Array, weight: number, out: Float64Array) => {
        const tmp = new Float64Array(x.length);
        smooth(x, weight, tmp);
        smooth(tmp, weight, out);
      }),
    ),
    call: fc.tuple(loopShape(), coreSize).chain(([loop, n]) =>
      fc.record({
        inputs: fc.tuple(
          broadcastShape(loop).chain((shape) => arraySpec('float64', [...shape, n])),
          fc.oneof(scalarFor('float64'), broadcastShape(loop).chain((shape) => arraySpec('float64', shape))),
        ),
        out: fc.option(arraySpec('float64', [...loop, n]).map((s) => [s]), { nil: undefined }),
        sync: fc.boolean(),
      }),
    ),
  },
  {
    name: '(m,n),(n,p)->(m,p) matrix product, float32',
    kernels: both((target) =>
      guvectorize(['void(float32[:,:], float32[:,:], float32[:,:])'], '(m,n),(n,p)->(m,p)', { target })((a: Matrix, b: Matrix, c: Matrix) => {
        for (let i = 0; i < c.shape[0]; i++) {
          for (let j = 0; j < c.shape[1]; j++) {
            let s = 0;
            for (let k = 0; k < b.shape[0]; k++) s += a[i]![k]! * b[k]![j]!;
            c[i]![j] = s;
          }
        }
      }),
    ),
    call: fc.tuple(loopShape(2), coreSize, coreSize, coreSize).chain(([loop, m, n, p]) =>
      fc.record({
        inputs: fc.tuple(
          broadcastShape(loop).chain((shape) => arraySpec('float32', [...shape, m, n])),
          broadcastShape(loop).chain((shape) => arraySpec('float32', [...shape, n, p])),
        ),
        out: fc.option(arraySpec('float32', [...loop, m, p]).map((s) => [s]), { nil: undefined }),
        sync: fc.boolean(),
      }),
    ),
  },
  {
    name: '()->(n) int32 that writes out of bounds for most rows (the first row in loop order is reported)',
    kernels: both((target) =>
      guvectorize(['void(int32, int32[:])'], '()->(n)', { target })((i: number, out: Int32Array) => {
        out[i] = i;
      }),
    ),
    call: loopShape().chain((loop) => fc.record({ inputs: fc.tuple(broadcastShape(loop).chain((shape) => arraySpec('int32', shape))), dims: fc.constant({ n: 3 }), sync: fc.boolean() })),
  },
];

describe.each([
  { callerRuns: true, engine: 'js' as EngineMode, label: 'the calling thread claiming chunks too' },
  { callerRuns: false, engine: 'js' as EngineMode, label: 'only workers running chunks' },
  { callerRuns: true, engine: 'wasm' as EngineMode, label: 'the calling thread claiming chunks too' },
  { callerRuns: false, engine: 'wasm' as EngineMode, label: 'only workers running chunks' },
])('parallel target ($engine engine) equals cpu target (JS engine), $label', ({ callerRuns, engine }) => {
  beforeAll(async () => {
    parallelEngine = engine;
    setParallelOptions({ threshold: 0 });
    callCounts(true);
    wasmJobs(true);
    await __testing.resetPool({ callerRuns, minChunk: 1 });
    await __testing.readyPool();
  });
  afterAll(async () => {
    // With threshold 0, only calls that may not be split (an `out` that loop indices share) run on
    // the calling thread; every other call must have gone to the pool. (How many calls are not
    // splittable depends on the random specs, so a ratio of the two counts would be flaky.)
    const { pool, callingThread, unsplittable } = callCounts(true);
    expect(callingThread).toBe(unsplittable);
    expect(pool).toBeGreaterThan(0);
    // On the Wasm engine, every pool call of a kernel Wasm can run (all but the int64 ones) is Wasm.
    const wasm = wasmJobs(true);
    if (engine === 'wasm') expect(wasm).toBeGreaterThan(pool / 2);
    else expect(wasm).toBe(0);
    setParallelOptions({ threshold: DEFAULT_THRESHOLD });
    await __testing.resetPool();
  });

  it.each(VECTORIZE_CASES)('vectorize: $name', async ({ types, result, kernels }) => {
    await fc.assert(fc.asyncProperty(vectorizeCall(types, result), (spec) => expectSameOnBoth(kernels, spec)), { numRuns: 40 });
  });

  it.each(GUVECTORIZE_CASES)('guvectorize: $name', async ({ kernels, call }) => {
    await fc.assert(fc.asyncProperty(call, (spec) => expectSameOnBoth(kernels, spec)), { numRuns: 40 });
  });

  it('runs in place (out is the input), sync and async', async () => {
    const kernels = both((target) =>
      guvectorize(['void(float32[:], float32[:])'], '(n)->(n)', { target, env: { hermiteRow } })((x: Float32Array, out: Float32Array) => {
        const v = x[1]!;
        hermiteRow(v, out);
      }),
    );
    await fc.assert(
      fc.asyncProperty(fc.tuple(loopShape(2), fc.integer({ min: 2, max: 9 })).chain(([loop, n]) => fc.tuple(arraySpec('float32', [...loop, n]), fc.boolean())), async ([rows, sync]) => {
        const onCpu = materialise(rows, false);
        const onParallel = materialise(rows, rows.shared);
        await withEngine('js', () => kernels.cpu.sync(onCpu as NDArrayLike, { out: onCpu as NDArrayLike }));
        await withEngine(parallelEngine, () =>
          sync ? kernels.parallel.sync(onParallel as NDArrayLike, { out: onParallel as NDArrayLike }) : kernels.parallel(onParallel as NDArrayLike, { out: onParallel as NDArrayLike }),
        );
        expect(sameBits(onParallel, onCpu)).toBe(true);
      }),
      { numRuns: 40 },
    );
  });
});

describe('parallel target equals cpu target on larger calls, default chunking', () => {
  // The default engine choice: Wasm on shared (Wasm-memory) arrays and for kernels that pay for
  // copies, JS otherwise; the cpu reference runs the JS engine.
  let before: EngineMode;
  beforeAll(() => {
    setParallelOptions({ threshold: 0 });
    before = setEngineMode('auto');
  });
  afterAll(() => {
    setParallelOptions({ threshold: DEFAULT_THRESHOLD });
    setEngineMode(before);
  });
  const reference = <T>(f: () => T): T => {
    const was = setEngineMode('js');
    try {
      return f();
    } finally {
      setEngineMode(was);
    }
  };

  const exp = both((target) => vectorize(['float32(float32)'], { target })((x: number) => Math.exp(x)));
  const hermite = both((target) => guvectorize(['void(float32, float32[:])'], '()->(n)', { target })(hermiteRow));

  describe.each([1025, 100_001, 1_000_001])('%d loop indices', (size) => {
    it.each([
      { memory: 'ordinary', allocate: (n: number) => new Float32Array(n) },
      { memory: 'shared', allocate: (n: number) => sharedArray(n, 'float32') },
    ])('in $memory memory, sync and async, reversed input', async ({ allocate }) => {
      const x = allocate(size);
      for (let i = 0; i < size; i++) x[i] = Math.sin(i) * 20;
      const reversed = { data: x, shape: [size], strides: [-1], offset: size - 1 };
      for (const input of [x, reversed]) {
        const expected = reference(() => exp.cpu.sync(input));
        expect(sameBits(await exp.parallel(input), expected)).toBe(true);
        expect(sameBits(exp.parallel.sync(input), expected)).toBe(true);
        const out = allocate(size);
        await exp.parallel(input, { out });
        expect(sameBits(out, ArrayBuffer.isView(expected) ? expected : expected.data)).toBe(true);
      }
      const rows = Math.ceil(size / 16);
      const table = reference(() => hermite.cpu.sync(x.subarray(0, rows), { dims: { n: 16 } }));
      expect(sameBits(await hermite.parallel(x.subarray(0, rows), { dims: { n: 16 } }), table)).toBe(true);
      expect(sameBits(hermite.parallel.sync(x.subarray(0, rows), { dims: { n: 16 } }), table)).toBe(true);
      // The guess (a row of 16 does enough work to pay for copies; below 256 elements, rows × 16,
      // entering Wasm does not pay), unless the calls above measured both engines for this call shape.
      const explained = hermite.parallel.explain(x.subarray(0, rows), { dims: { n: 16 } });
      const engine = explained.includes('chosen by measurement') ? '(WebAssembly|JavaScript)' : rows * 16 >= 256 ? 'WebAssembly' : 'JavaScript';
      expect(explained).toMatch(new RegExp(`^On \\d+ workers? \\(and the calling thread in \`f\\.sync\`; an awaited call leaves it free\\), each running ${engine}`));
      // …vectorised over rows (emit-rows.ts): 2 rows per vector, float64 inside the recurrence; or,
      // where the workers measured the variants, the one they chose: its float64 values in pairs of
      // vectors (row-pairs.ts), or rows one after another with the loop along the row (along-rows.ts).
      const measured = explained.includes('chosen by measurement');
      if (explained.includes('each running WebAssembly')) expect(explained).toMatch(measured ? /WebAssembly \((SIMD, 2 rows per vector|SIMD, 4 rows per vector \(float64 values in pairs|rows one after another, the loop at line \d+ in SIMD along the row)/ : /WebAssembly \(SIMD, 2 rows per vector/);
    }, 60_000);
  });
});
