/**
 * The ports of V8's `Math.*` in the Wasm engine (src/targets/cpu/wasm/math/) give V8's results bit for
 * bit: each function over the edge values of its algorithm (with neighbours) and 200,000 seeded
 * random inputs (bench/lib/math-inputs.ts), in SIMD lanes (contiguous arrays in Wasm memory) and
 * in the scalar loop (a strided operand), as float64 (`Math.f(x)`) and float32
 * (`Math.fround(Math.f(x))` of the float32 input). NaN results are compared as NaN (V8 and Wasm
 * may return different NaN payloads). The proof over every float32 and ≥ 10^8 doubles per
 * function: bench/math-exhaustive.ts.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { engineMode, setEngineMode } from '../../../../src/targets/cpu/wasm/index.js';
import { guvectorize, sharedArray, vectorize } from '../../../../src/index.js';
import {
  BINARY, binaryEdges, fillBinary, fillUnary, PORTED_FUNCTIONS, type PortedFunction, reference, unaryEdges,
} from '../../../../bench/lib/math-inputs.js';

const initialMode = engineMode();
afterEach(() => setEngineMode(initialMode));

const RANDOM = 200_000;
type Dtype = 'float32' | 'float64';

/** The inputs of `fn`: edges first, then random; one array per argument. */
function inputs(fn: PortedFunction): Float64Array[] {
  if (BINARY.has(fn)) {
    const edges = binaryEdges(fn as 'pow' | 'hypot');
    const xs = new Float64Array(edges.length + RANDOM);
    const ys = new Float64Array(edges.length + RANDOM);
    edges.forEach(([x, y], i) => ((xs[i] = x), (ys[i] = y)));
    fillBinary(fn as 'pow' | 'hypot', xs, ys, 20, edges.length);
    return [xs, ys];
  }
  const edges = unaryEdges(fn as Exclude<PortedFunction, 'pow' | 'hypot'>);
  const xs = new Float64Array(edges.length + RANDOM);
  xs.set(edges);
  fillUnary(fn as Exclude<PortedFunction, 'pow' | 'hypot'>, xs, 20, edges.length);
  return [xs];
}

interface AnyUfunc {
  sync(...a: unknown[]): void;
  explain(...a: unknown[]): string;
}
const kernels = new Map<string, AnyUfunc>();
function kernel(fn: PortedFunction, dtype: Dtype): AnyUfunc {
  const key = `${fn} ${dtype}`;
  let k = kernels.get(key);
  if (!k) {
    const body = BINARY.has(fn) ? new Function('x', 'y', `return Math.${fn}(x, y);`) : new Function('x', `return Math.${fn}(x);`);
    const sig = BINARY.has(fn) ? `${dtype}(${dtype}, ${dtype})` : `${dtype}(${dtype})`;
    kernels.set(key, (k = vectorize([sig])(body as (...x: number[]) => number) as unknown as AnyUfunc));
  }
  return k;
}

/**
 * Runs `Math.fn` on `args` in the Wasm engine and fails at the first result that is not V8's,
 * naming the inputs. `strided`: every operand read with a stride of 2 (the scalar loop).
 */
function expectV8Bits(fn: PortedFunction, args: Float64Array[], dtype: Dtype, strided: boolean): void {
  setEngineMode('wasm');
  const n = args[0]!.length;
  const operands = args.map((a) => {
    const data = sharedArray(strided ? 2 * n : n, dtype);
    for (let i = 0; i < n; i++) data[strided ? 2 * i : i] = a[i]!;
    return strided ? { data, shape: [n], strides: [2] } : data;
  });
  const out = sharedArray(n, dtype);
  const k = kernel(fn, dtype);
  expect(k.explain(...operands, { out })).toMatch(strided ? /^WebAssembly \(scalar/ : /^WebAssembly \(SIMD/);
  k.sync(...operands, { out });
  const f = reference(fn);
  const read = (i: number) => args.map((a) => (dtype === 'float32' ? Math.fround(a[i]!) : a[i]!));
  for (let i = 0; i < n; i++) {
    const [x, y] = read(i) as [number, number];
    const want = dtype === 'float32' ? Math.fround(f(x, y)) : f(x, y);
    const got = out[i]!;
    if (!(Object.is(got, want) || (Number.isNaN(got) && Number.isNaN(want)))) {
      expect.fail(`${dtype} Math.${fn}(${read(i).join(', ')}) = ${got} in Wasm (${strided ? 'scalar' : 'lanes'}, element ${i}), V8 gives ${want}`);
    }
  }
}

describe('ports of V8 Math functions in the Wasm engine', () => {
  for (const fn of PORTED_FUNCTIONS) {
    describe(`Math.${fn}`, () => {
      const args = inputs(fn);
      for (const dtype of ['float64', 'float32'] as const) {
        it(`${dtype}, in SIMD lanes: V8's bits on edges and ${RANDOM} random inputs`, () => expectV8Bits(fn, args, dtype, false));
        it(`${dtype}, in the scalar loop: V8's bits on edges and ${RANDOM} random inputs`, () => expectV8Bits(fn, args, dtype, true));
      }
    });
  }

  it('Math.hypot of 1, 3 and 5 arguments, and per row', () => {
    setEngineMode('wasm');
    const n = 20_000;
    const xs = Array.from({ length: 5 }, (_, i) => {
      const a = new Float64Array(n);
      fillBinary('hypot', a, new Float64Array(n), 30 + i);
      return a;
    });
    const cases: [string, (...v: number[]) => number, number][] = [
      ['1', (a) => Math.hypot(a), 1],
      ['3', (a, b, c) => Math.hypot(a, b, c), 3],
      ['5', (a, b, c, d, e) => Math.hypot(a, b, c, d, e), 5],
    ];
    for (const [name, body, arity] of cases) {
      const k = vectorize([`float64(${Array(arity).fill('float64').join(', ')})`])(body) as unknown as { sync(...a: unknown[]): void };
      const operands = xs.slice(0, arity).map((a) => {
        const s = sharedArray(n);
        s.set(a);
        return s;
      });
      const out = sharedArray(n);
      k.sync(...operands, { out });
      for (let i = 0; i < n; i++) {
        const want = (Math.hypot as (...v: number[]) => number)(...xs.slice(0, arity).map((a) => a[i]!));
        if (!(Object.is(out[i], want) || (Number.isNaN(out[i]) && Number.isNaN(want)))) expect.fail(`hypot of ${name} at ${i}: ${out[i]} vs ${want}`);
      }
    }
    // Per row (emit-rows.ts's lanes): log and pow of each element.
    const rows = guvectorize(['void(float64[:], float64[:])'], '(n)->(n)')((x: { [i: number]: number; length: number }, out: { [i: number]: number; length: number }) => {
      for (let i = 0; i < x.length; i++) out[i] = Math.log(x[i]!) + x[i]! ** 1.25;
    });
    const data = sharedArray(4000);
    data.set(inputs('log')[0]!.subarray(0, 4000));
    const out = sharedArray(4000);
    rows.sync({ data, shape: [1000, 4] }, { out: { data: out, shape: [1000, 4] } });
    for (let i = 0; i < 4000; i++) {
      const want = Math.log(data[i]!) + data[i]! ** 1.25;
      if (!(Object.is(out[i], want) || (Number.isNaN(out[i]) && Number.isNaN(want)))) expect.fail(`row log + pow at ${i} (x = ${data[i]}): ${out[i]} vs ${want}`);
    }
  });

  /**
   * `x ** K` (side 'exponent') or `K ** x` ('base') with the literal K compiled into the lanes
   * (pow.ts powLanesOfKnownY, powLanesOfKnownBase): every x in `xs` against V8, per literal,
   * float64 and float32 (whose literal is a float32), in lanes and in the scalar loop.
   */
  function expectLiteralPow(side: 'exponent' | 'base', literals: readonly string[], xs: Float64Array): void {
    setEngineMode('wasm');
    const n = 40_000;
    for (const dtype of ['float64', 'float32'] as const) {
      const round = dtype === 'float32' ? Math.fround : (v: number) => v;
      for (const strided of [false, true]) {
        const data = sharedArray(strided ? 2 * n : n, dtype);
        for (let i = 0; i < n; i++) data[strided ? 2 * i : i] = xs[i]!;
        const operand = strided ? { data, shape: [n], strides: [2] } : data;
        for (const literal of literals) {
          const source = side === 'exponent' ? `x ** (${literal})` : `(${literal}) ** x`;
          const k = vectorize([`${dtype}(${dtype})`])(new Function('x', `return ${source};`) as (x: number) => number) as unknown as AnyUfunc;
          const out = sharedArray(n, dtype);
          k.sync(operand, { out });
          const c = round(Number(new Function(`return ${literal};`)()));
          for (let i = 0; i < n; i++) {
            const x = data[strided ? 2 * i : i]!;
            const want = round(side === 'exponent' ? x ** c : c ** x);
            const got = out[i]!;
            if (!(Object.is(got, want) || (Number.isNaN(got) && Number.isNaN(want)))) {
              expect.fail(`${dtype} ${source} at x = ${x}: ${got} in Wasm (${strided ? 'scalar' : 'lanes'}), V8 gives ${want}`);
            }
          }
        }
      }
    }
  }

  it('pow with a literal exponent: V8\'s bits for every x of the edges and random inputs', () => {
    const exponents = [
      '0', '-0', '1', '-1', '2', '-2', '0.5', '-0.5', '3', '-3', '6', '7', '-7', '2.4', '1 / 2.4', '1 / 2.2', '-1.5', '1.25', '1 / 3', '12', '100',
      '1024', '-1074', '-1075', '1e10', '1e-300', '2 ** 31', '2 ** 31 + 1', '-(2 ** 31)', '2 ** 31 + 2 ** 11', '2 ** 53', '2 ** 64', '1 + 2 ** -52',
      'NaN', 'Infinity', '-Infinity',
    ];
    expectLiteralPow('exponent', exponents, inputs('pow')[0]!);
  }, 120_000);

  it('pow with a literal base: V8\'s bits for every y of the edges and random inputs', () => {
    const bases = ['2', '10', 'Math.E', '1.05', '0.5', '0.999', '1 + 2 ** -40', '3', '1e-300', '5e-324', '1e300', '2 ** 1023', '1.7976931348623157e308', '1', '0', '-2', '-0.5', 'Infinity', 'NaN'];
    expectLiteralPow('base', bases, inputs('pow')[1]!);
  }, 120_000);

  it('float32 in lanes 0 and 1 of 2-lane code (rows beside float64): the JS engine\'s bits', () => {
    const rows = guvectorize(['void(float32[:], float64[:])'], '(n)->(n)')((x: { [i: number]: number; length: number }, out: { [i: number]: number; length: number }) => {
      for (let i = 0; i < x.length; i++) {
        out[i] = Math.tanh(x[i]!) + Math.log(x[i]!) + Math.log2(x[i]!) + Math.log10(x[i]!) + Math.log1p(x[i]!) + Math.expm1(x[i]!) +
          Math.sinh(x[i]!) + Math.cosh(x[i]!) + Math.cbrt(x[i]!) + x[i]! ** x[i]! + Math.hypot(x[i]!, 2);
      }
    });
    const n = 8000;
    const data = sharedArray(n, 'float32');
    data.set(inputs('log1p')[0]!.subarray(0, n));
    const run = (mode: 'js' | 'wasm') => {
      setEngineMode(mode);
      const out = sharedArray(n);
      const args = [{ data, shape: [n / 4, 4] }, { out: { data: out, shape: [n / 4, 4] } }] as const;
      if (mode === 'wasm') expect(rows.explain(...args)).toMatch(/^WebAssembly \(SIMD, 2 rows per vector/);
      rows.sync(...args);
      return out;
    };
    const [js, wasm] = [run('js'), run('wasm')];
    for (let i = 0; i < n; i++) {
      if (!(Object.is(js[i], wasm[i]) || (Number.isNaN(js[i]) && Number.isNaN(wasm[i])))) expect.fail(`x = ${data[i]}: ${wasm[i]} in Wasm, ${js[i]} in JS`);
    }
  });
});
