/**
 * Snapshots of generated JS, one per language feature: a change in what the compiler emits shows
 * up here as a diff to review.
 */
import { describe, expect, it } from 'vitest';
import type { ValueType } from '../../../src/compiler/ir.js';
import { typeKernel } from '../../../src/compiler/lower.js';
import { parseFunction } from '../../../src/compiler/parse.js';
import type { DType } from '../../../src/dtypes.js';
import type { Slice2 } from '../../../src/kernel-types.js';
import { generateRunner, generateScalarFunction, instantiateRunner } from '../../../src/targets/cpu/js/codegen.js';
import { type MemoryLayout } from '../../../src/targets/cpu/memory-layout.js';
import { mergeLoopDims } from '../../../src/layout.js';

const f32a: ValueType = { kind: 'array', dtype: 'float32', ndim: 1 };
const f64m: ValueType = { kind: 'array', dtype: 'float64', ndim: 2 };

function vectorized(fn: Function, params: DType[], ret: DType, inner: MemoryLayout['inner'] = params.map(() => 'unit').concat('unit') as MemoryLayout['inner'], rank: 0 | 1 | 2 = 1) {
  const kernel = typeKernel(parseFunction(fn), { params, returnType: ret, env: {} });
  return generateRunner({ kind: 'vectorize', kernel, nin: params.length, boundsCheck: true }, { rank, inner, coreUnit: inner.map(() => []), int32Indices: true }).source;
}

function generalized(fn: Function, params: ValueType[], nin: number, env = {}, coreUnit: boolean[][] = params.map((p) => (typeof p === 'object' ? Array(p.ndim).fill(true) : [])), boundsCheck = true) {
  const writable = new Set(params.map((_, i) => i).filter((i) => i >= nin));
  const kernel = typeKernel(parseFunction(fn), { params, returnType: 'void', env }, { writable, coreDims: () => 4 });
  return generateRunner({ kind: 'guvectorize', kernel, nin, boundsCheck }, { rank: 1, inner: params.map(() => 'unit'), coreUnit, int32Indices: true }).source;
}

describe('generated JS', () => {
  it('float32 arithmetic rounds after each operation; a scalar argument is bound once', () => {
    expect(vectorized((a: number, x: number, y: number) => a * x + y, ['float32', 'float32', 'float32'], 'float32', ['scalar', 'unit', 'unit', 'unit'])).toMatchSnapshot();
  });

  it('int32 wraps: imul, | 0, and true division', () => {
    expect(vectorized((a: number, b: number) => a * b + ((a / b) | 0) - (a % b), ['int32', 'int32'], 'int32')).toMatchSnapshot();
  });

  it('uint32, bitwise and shifts', () => {
    expect(vectorized((a: number, b: number) => ((a >>> 3) ^ (b << 2)) + (a & 255), ['uint32', 'uint32'], 'uint32')).toMatchSnapshot();
  });

  it('uint8c: stores go through Uint8ClampedArray\'s own conversion ($toU8c); reads are plain bytes', () => {
    expect(vectorized((a: number, b: number) => a * b + 0.5, ['float32', 'uint8c'], 'uint8c')).toMatchSnapshot();
  });

  it('int64 as bigints', () => {
    expect(vectorized((a: bigint, b: bigint) => a * b + a / b, ['int64', 'int64'], 'int64')).toMatchSnapshot();
  });

  it('control flow: if/else, loops with continue and break, early return', () => {
    expect(
      vectorized((x: number) => {
        if (x < 0) return 0;
        let s = 0;
        for (let i = 0; i < 10; i++) {
          if (i === 3) continue;
          if (s > x) break;
          s += i;
        }
        let k = 0;
        do { k++; } while (k < 3);
        while (k > 0) k--;
        return x > 1 ? s : -s;
      }, ['float64'], 'float64'),
    ).toMatchSnapshot();
  });

  it('Math functions, constants, conversions and bool', () => {
    expect(vectorized((x: number, b: boolean) => (b && !isNaN(x) ? Math.sin(x) * Math.PI + Math.hypot(x, 1) : Math.fround(x)), ['float32', 'bool'], 'float32')).toMatchSnapshot();
  });

  it('strided and broadcast operands in a two-level loop', () => {
    expect(vectorized((a: number, b: number) => a - b, ['float64', 'float64'], 'float64', ['strided', 'broadcast', 'unit'], 2)).toMatchSnapshot();
  });

  it('guvectorize: core slices, bounds checks, in-place row', () => {
    expect(generalized((x: number, out: Float32Array) => { out[0] = 1; for (let i = 1; i < out.length; i++) out[i] = out[i - 1]! * x; }, ['float32', f32a], 1)).toMatchSnapshot();
  });

  it('guvectorize: 2-D slices with strided core axes, no bounds checks', () => {
    expect(
      generalized(
        (a: Slice2, out: Slice2) => { for (let i = 0; i < a.length; i++) for (let j = 0; j < a.shape[1]; j++) out[j]![i] = a[i]![j]!; },
        [f64m, f64m], 1, {}, [[false, true], [true, false]], false,
      ),
    ).toMatchSnapshot();
  });

  it('helpers with array parameters and local arrays', () => {
    const scale = (v: Float32Array, k: number) => { for (let i = 0; i < v.length; i++) v[i] *= k; };
    expect(
      generalized((x: Float32Array, out: Float32Array) => {
        const t = new Float32Array(x.length);
        for (let i = 0; i < x.length; i++) t[i] = x[i]!;
        scale(t, 2);
        for (let i = 0; i < x.length; i++) out[i] = t[i]!;
      }, [f32a, f32a], 1, { scale }),
    ).toMatchSnapshot();
  });

  it('the scalar form used by reduce and accumulate', () => {
    const kernel = typeKernel(parseFunction((a: number, b: number) => (a > b ? a : b)), { params: ['float32', 'float32'], returnType: 'float32', env: {} });
    expect(generateScalarFunction(kernel).source).toMatchSnapshot();
  });
});

describe('mergeLoopDims', () => {
  it('merges dimensions every operand walks contiguously', () => {
    expect(mergeLoopDims([4, 5, 6], [[30, 6, 1], [30, 6, 1]])).toEqual({ shape: [120], strides: [[1], [1]] });
  });
  it('keeps apart dimensions where one operand is broadcast or strided', () => {
    expect(mergeLoopDims([4, 5], [[5, 1], [0, 1]])).toEqual({ shape: [4, 5], strides: [[5, 1], [0, 1]] });
    expect(mergeLoopDims([4, 5], [[10, 2], [5, 1]])).toEqual({ shape: [20], strides: [[2], [1]] });
    expect(mergeLoopDims([3, 1, 2], [[2, 9, 1]])).toEqual({ shape: [6], strides: [[1]] });
  });
});

describe('instantiated runners', () => {
  it('prime themselves: before the first call, calls over an empty range run only the prologue (its reads of the arguments), and write nothing', () => {
    const kernel = typeKernel(parseFunction((x: number) => x * 2), { params: ['float64'], returnType: 'float64', env: {} });
    const { source, sites } = generateRunner({ kind: 'vectorize', kernel, nin: 1, boundsCheck: true }, { rank: 1, inner: ['unit', 'unit'], coreUnit: [[], []], int32Indices: true });
    const primingCalls = Number(/primingCalls: (\d+) \};\n$/.exec(source)![1]);
    expect(primingCalls).toBeGreaterThanOrEqual(16);
    const runner = instantiateRunner(source, sites);
    const x = Float64Array.of(1, 2, 3);
    const out = new Float64Array(3).fill(-1);
    let reads = 0;
    const args = {
      get data() {
        reads++;
        return [x, out];
      },
      offset: [0, 0], loopShape: [3], loopStrides: [[1], [1]], coreShape: [[], []], coreStrides: [[], []], scalars: [undefined, undefined],
    };
    runner(args, 1, 3);
    expect(reads).toBe(2 * (primingCalls + 1)); // `$a.data` once per array operand in each prologue
    expect([...out]).toEqual([-1, 4, 6]);
    runner(args, 0, 1);
    expect(reads).toBe(2 * (primingCalls + 2));
    expect([...out]).toEqual([2, 4, 6]);
  });
});
