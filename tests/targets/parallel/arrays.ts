/**
 * Random operands for comparing the parallel target with the cpu target: shapes with 0 and 1,
 * broadcasting, strided views with gaps, reversed (negative) and zero strides, permuted axes, in
 * ordinary or shared memory. An operand is described by a spec and materialised twice with the
 * same contents, once for each target.
 */
import fc from 'fast-check';
import type { DType, TypedArray } from '../../../src/index.js';
import { DTYPES } from '../../../src/dtypes.js';
import { mulberry32 } from '../../random.js';

/** How one axis steps through memory. */
type AxisStep = 'dense' | 'gap' | 'reverse' | 'zero';

export interface ArraySpec {
  readonly kind: 'array';
  readonly dtype: DType;
  readonly shape: readonly number[];
  readonly strides: readonly number[];
  readonly offset: number;
  /** Elements of the underlying typed array (more than the view reaches: gaps and padding). */
  readonly length: number;
  readonly seed: number;
  /** Put the parallel target's copy in shared memory. */
  readonly shared: boolean;
  /** Pass a 1-D dense view as the bare typed array. */
  readonly bare: boolean;
}

export interface ScalarSpec {
  readonly kind: 'scalar';
  readonly value: number;
}

export type OperandSpec = ArraySpec | ScalarSpec;

/** Loop shapes of rank 0–3 whose sizes include 0 and 1. */
export const loopShape = (maxRank = 3): fc.Arbitrary<number[]> =>
  fc.array(fc.oneof({ weight: 1, arbitrary: fc.constantFrom(0, 1) }, { weight: 4, arbitrary: fc.integer({ min: 2, max: 7 }) }), { maxLength: maxRank });

/** A shape that broadcasts to `loop`: a suffix of it with some sizes turned into 1. */
export const broadcastShape = (loop: readonly number[]): fc.Arbitrary<number[]> =>
  fc
    .tuple(fc.integer({ min: 0, max: loop.length }), fc.array(fc.boolean(), { minLength: loop.length, maxLength: loop.length }))
    .map(([drop, ones]) => loop.slice(drop).map((n, d) => (ones[d + drop] ? 1 : n)));

/**
 * A random layout of `shape`: axes in a random order, each dense, with a gap, reversed, or (when
 * allowed) with stride 0, at a random offset inside a larger typed array.
 */
export function arraySpec(dtype: DType, shape: readonly number[], options: { zeroStrides?: boolean } = {}): fc.Arbitrary<ArraySpec> {
  const steps: AxisStep[] = options.zeroStrides ? ['dense', 'dense', 'gap', 'reverse', 'zero'] : ['dense', 'dense', 'gap', 'reverse'];
  return fc
    .record({
      order: fc.shuffledSubarray([...shape.keys()], { minLength: shape.length, maxLength: shape.length }),
      steps: fc.array(fc.constantFrom(...steps), { minLength: shape.length, maxLength: shape.length }),
      padding: fc.tuple(fc.nat(3), fc.nat(3)),
      seed: fc.integer(),
      shared: fc.boolean(),
      bare: fc.boolean(),
    })
    .map(({ order, steps, padding, seed, shared, bare }) => {
      const strides = new Array<number>(shape.length).fill(0);
      let extent = 1;
      for (let i = order.length - 1; i >= 0; i--) {
        const axis = order[i]!;
        const step = steps[axis]!;
        if (step === 'zero') continue;
        const stride = step === 'gap' ? 2 * extent : extent;
        strides[axis] = step === 'reverse' ? -stride : stride;
        extent += stride * Math.max(0, shape[axis]! - 1);
      }
      let low = 0;
      let high = 0;
      shape.forEach((n, d) => {
        const reach = Math.max(0, n - 1) * strides[d]!;
        if (reach < 0) low += reach;
        else high += reach;
      });
      const offset = padding[0] - low;
      const length = offset + high + 1 + padding[1];
      const dense = shape.length === 1 && strides[0] === 1 && offset === 0 && length === shape[0];
      return { kind: 'array' as const, dtype, shape: [...shape], strides, offset, length, seed, shared, bare: bare && dense };
    });
}

const SPECIAL_FLOATS = [Number.NaN, 0, -0, Infinity, -Infinity, 1e-40, -5e-324, 3.4028234663852886e38, 1, -1];

/** Fills an array with values of every kind its dtype has: specials, extremes, random bits. */
export function fillRandom(data: TypedArray, dtype: DType, seed: number): void {
  const next = mulberry32(seed);
  const info = DTYPES[dtype];
  for (let i = 0; i < data.length; i++) {
    const r = next();
    if (info.kind === 'f') {
      (data as Float64Array)[i] = r < 0.15 ? SPECIAL_FLOATS[Math.floor(next() * SPECIAL_FLOATS.length)]! : (next() - 0.5) * 2 ** Math.floor(next() * 40 - 20);
    } else if (info.kind === 'b') {
      (data as Uint8Array)[i] = r < 0.5 ? 1 : 0;
    } else if (info.bigint) {
      (data as BigInt64Array)[i] = BigInt.asIntN(64, (BigInt(Math.floor(next() * 2 ** 32)) << 32n) | BigInt(Math.floor(next() * 2 ** 32)));
    } else {
      // Small values half the time, so that divisions and shifts meet 0, 1 and −1.
      (data as Int32Array)[i] = r < 0.5 ? Math.floor(next() * 7) - 3 : Math.floor(next() * 2 ** 32);
    }
  }
}

/** The argument a spec stands for, with its data in shared memory or not. */
export function materialise(spec: OperandSpec, shared: boolean): unknown {
  if (spec.kind === 'scalar') return spec.value;
  const { arrayType, bytes } = DTYPES[spec.dtype];
  const data = shared ? new arrayType(new SharedArrayBuffer(spec.length * bytes)) : new arrayType(spec.length);
  fillRandom(data, spec.dtype, spec.seed);
  if (spec.bare) return data;
  return { data, shape: spec.shape, strides: spec.strides, offset: spec.offset, dtype: spec.dtype };
}

function bytesOf(array: TypedArray): Uint8Array {
  return new Uint8Array(array.buffer, array.byteOffset, array.byteLength);
}

/** Whether two results are the same to the bit: typed arrays, ndarrays, scalars, lists of these. */
export function sameBits(a: unknown, b: unknown): boolean {
  if (Array.isArray(a) && Array.isArray(b)) return a.length === b.length && a.every((x, i) => sameBits(x, b[i]));
  if (ArrayBuffer.isView(a) && ArrayBuffer.isView(b)) {
    if (a.constructor !== b.constructor) return false;
    if (a instanceof Float32Array || a instanceof Float64Array) {
      // Every bit, except which NaN: JS has one NaN value, and its bits in a typed array depend on
      // which operand's NaN the hardware propagated (V8's JS and Wasm compilers may order a
      // commutative operation's operands differently; JS itself stores 0x7ff8… or 0xfff8…).
      const x = a as Float64Array;
      const y = b as Float64Array;
      return x.length === y.length && x.every((v, i) => Object.is(v, y[i]) || (Number.isNaN(v) && Number.isNaN(y[i])));
    }
    return Buffer.compare(bytesOf(a as TypedArray), bytesOf(b as TypedArray)) === 0;
  }
  if (typeof a === 'object' && a !== null && typeof b === 'object' && b !== null && 'data' in a && 'data' in b) {
    const x = a as { data: TypedArray; shape: number[]; strides?: number[]; offset?: number };
    const y = b as typeof x;
    return JSON.stringify([x.shape, x.strides, x.offset]) === JSON.stringify([y.shape, y.strides, y.offset]) && sameBits(x.data, y.data);
  }
  return Object.is(a, b);
}

/** A call's outcome in a form both targets' outcomes can be compared in. */
export type Outcome = { readonly ok: true; readonly value: unknown } | { readonly ok: false; readonly name: string; readonly message: string };

export async function outcomeOf(call: () => unknown): Promise<Outcome> {
  try {
    return { ok: true, value: await call() };
  } catch (error) {
    const e = error as Error;
    return { ok: false, name: e.constructor.name, message: e.message };
  }
}
