/**
 * The constant folder (src/compiler/constant-folding.ts): IEEE edge cases, integer wrap per dtype,
 * float32 rounding, integer division by zero — and, for every operator and type it folds, the
 * same answers as the cpu target computing the same operation at run time on the same values.
 */
import { describe, expect, it } from 'vitest';

import {
  constantValue, convertConstant, foldBinary, foldCompare, foldMath, foldUnary,
} from '../../src/compiler/constant-folding.js';
import type { ArithmeticOp, BitwiseOp, Expr } from '../../src/compiler/ir.js';
import { type DType, DTYPES } from '../../src/dtypes.js';
import { vectorize } from '../../src/index.js';

const loc = { line: 1, column: 0 };
const c = (value: number | boolean | bigint, type: DType): Expr => ({ kind: 'const', value, type, loc });
const bin = (op: ArithmeticOp | BitwiseOp, left: Expr, right: Expr, type: DType): Expr => ({ kind: 'binary', op, left, right, type, loc });

describe('convertConstant: a cast of a known value, as a typed-array store', () => {
  it('wraps integers modulo 2^bits, per dtype', () => {
    const cases: [DType, number, number][] = [
      ['int8', 128, -128], ['int8', -129, 127], ['uint8', 256, 0], ['uint8', -1, 255],
      ['int16', 32768, -32768], ['uint16', 65536, 0], ['uint16', -1, 65535],
      ['int32', 2 ** 31, -(2 ** 31)], ['int32', 2 ** 32 + 5, 5], ['uint32', -1, 2 ** 32 - 1], ['uint32', 2 ** 32, 0],
    ];
    for (const [type, value, expected] of cases) expect(convertConstant(value, type), `${value} as ${type}`).toBe(expected);
  });

  it('truncates floats toward zero; NaN and ±Infinity become 0 in every integer type', () => {
    expect(convertConstant(-2.9, 'int32')).toBe(-2);
    expect(convertConstant(2.9, 'uint8')).toBe(2);
    for (const type of ['int8', 'uint8', 'int16', 'uint16', 'int32', 'uint32'] as const) {
      for (const v of [NaN, Infinity, -Infinity]) expect(convertConstant(v, type), `${v} as ${type}`).toBe(0);
    }
    expect(convertConstant(NaN, 'int64')).toBe(0n);
    expect(convertConstant(-Infinity, 'uint64')).toBe(0n);
  });

  it('clamps and rounds half to even into uint8c (Uint8ClampedArray), NaN → 0', () => {
    const cases: [number, number][] = [[2.5, 2], [3.5, 4], [0.5, 0], [254.5, 254], [-1, 0], [-0, 0], [300, 255], [Infinity, 255], [-Infinity, 0], [NaN, 0]];
    for (const [value, expected] of cases) expect(convertConstant(value, 'uint8c'), String(value)).toBe(expected);
  });

  it('keeps -0 in floats and makes +0 of it in integers; anything → bool is != 0, NaN is false', () => {
    expect(Object.is(convertConstant(-0, 'float64'), -0)).toBe(true);
    expect(Object.is(convertConstant(-0, 'float32'), -0)).toBe(true);
    expect(Object.is(convertConstant(-0, 'int32'), 0)).toBe(true);
    expect(Object.is(convertConstant(-0, 'uint8'), 0)).toBe(true);
    expect([-0, 0, NaN, 0.5, -Infinity, 0n, 3n].map((v) => convertConstant(v, 'bool'))).toEqual([false, false, false, true, true, false, true]);
    expect(convertConstant(true, 'float32')).toBe(1);
    expect(convertConstant(false, 'int64')).toBe(0n);
  });

  it('rounds to float32 once (ties to even), overflowing to ±Infinity and underflowing to ±0', () => {
    expect(convertConstant(0.1, 'float32')).toBe(Math.fround(0.1));
    expect(convertConstant(1 + 2 ** -24, 'float32')).toBe(1); // halfway: to the even neighbour
    expect(convertConstant(1 + 3 * 2 ** -24, 'float32')).toBe(1 + 2 ** -22);
    expect(convertConstant(3.4028235677973366e38, 'float32')).toBe(Infinity); // halfway to 2^128
    expect(convertConstant(3.4028235677973362e38, 'float32')).toBe(3.4028234663852886e38);
    expect(Object.is(convertConstant(-1e-46, 'float32'), -0)).toBe(true);
  });

  it('wraps 64-bit integers modulo 2^64 as bigints', () => {
    expect(convertConstant(2n ** 63n, 'int64')).toBe(-(2n ** 63n));
    expect(convertConstant(-1, 'uint64')).toBe(2n ** 64n - 1n);
    expect(convertConstant(2 ** 64, 'uint64')).toBe(0n);
    expect(convertConstant(-2.5, 'int64')).toBe(-2n);
  });

  it('keeps a bigint\'s low bits in a 32-bit-or-smaller integer, and clamps it whole into uint8c', () => {
    expect(convertConstant(2n ** 53n + 1n, 'int32')).toBe(1);
    expect(convertConstant(2n ** 64n - 1n, 'uint32')).toBe(4294967295);
    expect(convertConstant(-(2n ** 40n) - 3n, 'int8')).toBe(-3);
    expect(convertConstant(2n ** 40n, 'uint8c')).toBe(255);
    expect(convertConstant(-(2n ** 40n), 'uint8c')).toBe(0);
    expect(convertConstant(2n ** 53n + 1n, 'float64')).toBe(2 ** 53);
  });
});

describe('foldUnary, foldBinary, foldCompare: operators in the operation type', () => {
  it('NaN propagates through float operations and compares unequal to itself', () => {
    for (const op of ['+', '-', '*', '/', '%', '**'] as const) expect(foldBinary(op, NaN, 2, 'float64'), op).toBeNaN();
    expect(foldBinary('**', NaN, 0, 'float64')).toBe(1); // JS's Math.pow(NaN, 0)
    expect(foldBinary('%', 5, 0, 'float64')).toBeNaN();
    expect(foldBinary('%', Infinity, 2, 'float32')).toBeNaN();
    expect(foldBinary('-', Infinity, Infinity, 'float64')).toBeNaN();
    expect([foldCompare('==', NaN, NaN), foldCompare('!=', NaN, NaN), foldCompare('<', NaN, 1), foldCompare('>=', NaN, 1)]).toEqual([false, true, false, false]);
  });

  it('keeps the sign of zero in floats, and never makes -0 in integers', () => {
    expect(Object.is(foldUnary('-', 0, 'float64'), -0)).toBe(true);
    expect(Object.is(foldUnary('-', 0, 'float32'), -0)).toBe(true);
    expect(Object.is(foldUnary('-', 0, 'int32'), 0)).toBe(true);
    expect(Object.is(foldBinary('*', -0, 5, 'float64'), -0)).toBe(true);
    expect(Object.is(foldBinary('+', -0, -0, 'float64'), -0)).toBe(true);
    expect(Object.is(foldBinary('+', -0, 0, 'float64'), 0)).toBe(true);
    expect(Object.is(foldBinary('%', -4, 2, 'float64'), -0)).toBe(true);
    expect(Object.is(foldBinary('%', -4, 2, 'int32'), 0)).toBe(true);
    expect(Object.is(foldBinary('*', -3, 0, 'int32'), 0)).toBe(true);
    expect(foldBinary('/', 1, -0, 'float64')).toBe(-Infinity);
    expect(foldCompare('==', -0, 0)).toBe(true);
  });

  it('wraps int32 and uint32 arithmetic modulo 2^32 (`*` as Math.imul, exact beyond 2^53)', () => {
    expect(foldBinary('+', 2147483647, 1, 'int32')).toBe(-2147483648);
    expect(foldBinary('-', 0, 1, 'uint32')).toBe(4294967295);
    expect(foldUnary('-', -2147483648, 'int32')).toBe(-2147483648);
    expect(foldUnary('-', 1, 'uint32')).toBe(4294967295);
    expect(foldBinary('*', 65537, 65537, 'int32')).toBe(131073);
    // The product 0x7fffffff² is not a double: only Math.imul gives its low 32 bits (1).
    expect(foldBinary('*', 0x7fffffff, 0x7fffffff, 'int32')).toBe(1);
    expect(foldBinary('*', 0xffffffff, 0xffffffff, 'uint32')).toBe(1);
    expect(foldBinary('+', 127, 1, 'int8')).toBe(-128);
    expect(foldBinary('+', 255, 1, 'uint8')).toBe(0);
    expect(foldBinary('+', 255, 1, 'uint8c')).toBe(255);
  });

  it('divides integers by zero to 0, as `(a / b) | 0` and `(a % b) | 0` do; −2³¹ / −1 wraps', () => {
    for (const type of ['int32', 'uint32'] as const) {
      expect(foldBinary('/', 7, 0, type), `7 / 0 in ${type}`).toBe(0);
      expect(foldBinary('%', 7, 0, type), `7 % 0 in ${type}`).toBe(0);
      expect(foldBinary('%', 0, 0, type), `0 % 0 in ${type}`).toBe(0);
    }
    expect(foldBinary('/', -7, 2, 'int32')).toBe(-3);
    expect(foldBinary('%', -7, 2, 'int32')).toBe(-1);
    expect(foldBinary('/', -2147483648, -1, 'int32')).toBe(-2147483648);
    expect(foldBinary('%', -2147483648, -1, 'int32')).toBe(0);
    expect(foldBinary('/', 7, 0, 'float64')).toBe(Infinity);
  });

  it('rounds every float32 operation once to float32', () => {
    const [a, b] = [Math.fround(0.1), Math.fround(0.2)];
    expect(foldBinary('+', a, b, 'float32')).toBe(Math.fround(a + b));
    expect(foldBinary('+', a, b, 'float32')).not.toBe(a + b);
    expect(foldBinary('+', 1, 2 ** -24, 'float32')).toBe(1);
    expect(foldBinary('*', 3e38, 10, 'float32')).toBe(Infinity);
    expect(foldBinary('/', 1, 3, 'float32')).toBe(Math.fround(1 / 3));
    expect(foldBinary('%', 5.5, Math.fround(0.1), 'float32')).toBe(Math.fround(5.5 % Math.fround(0.1)));
  });

  it('takes shift counts modulo 32, as JS does; `>>>` gives uint32', () => {
    expect(foldBinary('<<', 1, 32, 'int32')).toBe(1);
    expect(foldBinary('<<', 1, 31, 'int32')).toBe(-2147483648);
    expect(foldBinary('>>', -8, 33, 'int32')).toBe(-4);
    expect(foldBinary('>>>', -1, 0, 'uint32')).toBe(4294967295);
    expect(foldBinary('^', -1, 0x0f, 'int32')).toBe(-16);
    expect(foldUnary('~', 0, 'int32')).toBe(-1);
  });

  it('leaves bool and 64-bit integer operations to run time', () => {
    expect(foldBinary('+', 1, 2, 'int64')).toBeUndefined();
    expect(foldBinary('*', 1, 2, 'uint64')).toBeUndefined();
    expect(foldUnary('-', 1, 'int64')).toBeUndefined();
    expect(foldBinary('&', 1, 1, 'bool')).toBeUndefined();
  });

  it('computes Math functions of numbers as JS does', () => {
    expect(foldMath('max', [3, 4, -1])).toBe(4);
    expect(foldMath('sqrt', [2])).toBe(Math.SQRT2);
    expect(foldMath('min', [0, -0])).toBe(-0);
    expect(foldMath('max', [1, NaN])).toBeNaN();
  });
});

describe('constantValue: constant expressions of the typed IR', () => {
  it('folds literals, operators and casts, and nothing else', () => {
    expect(constantValue(bin('>>>', c(-1, 'uint32'), c(0, 'uint32'), 'uint32'))).toBe(4294967295);
    expect(constantValue({ kind: 'cast', value: c(300.7, 'float64'), type: 'uint8', loc })).toBe(44);
    expect(constantValue({ kind: 'cast', value: c(true, 'bool'), type: 'float32', loc })).toBe(1);
    expect(constantValue({ kind: 'unary', op: '-', arg: bin('*', c(0, 'float64'), c(1, 'float64'), 'float64'), type: 'float64', loc })).toBe(-0);
    expect(constantValue(bin('%', c(7, 'int32'), c(0, 'int32'), 'int32'))).toBe(0);
    expect(constantValue({ kind: 'unary', op: '!', arg: c(true, 'bool'), type: 'bool', loc })).toBeUndefined();
    expect(constantValue(bin('+', c(1n, 'int64'), c(2n, 'int64'), 'int64'))).toBeUndefined();
    expect(constantValue({ kind: 'math', fn: 'sqrt', args: [c(4, 'float64')], type: 'float64', loc })).toBeUndefined();
    const x = { id: 0, name: 'x', type: 'float64' as const };
    expect(constantValue(bin('+', c(1, 'float64'), { kind: 'var', variable: x, type: 'float64', loc }, 'float64'))).toBeUndefined();
  });
});

/** Values that find the edges: zeros of both signs, NaN, infinities, the ends of every integer range, fractions and ties. */
const EDGES = [
  0, -0, 1, -1, 2, -2, 3, 7, -7, 0.5, -0.5, 1.5, 2.5, -2.5, 0.1, 1 / 3, 127, 128, -128, -129, 255, 256, 32767, 32768, -32768,
  65535, 65536, 2147483647, -2147483648, 2147483648, 4294967295, 4294967296, 1e10, -1e10, 2 ** 53, 3.4028235677973366e38,
  1e-46, 1e300, NaN, Infinity, -Infinity,
];

/** The values of `type` among the edges, as the cpu receives them in a typed array of it. */
function edgesOf(type: DType): number[] {
  return [...new Set(EDGES.map((v) => convertConstant(v, type) as number))];
}

describe('the folder computes what the cpu target computes at run time', () => {
  const types = ['int32', 'uint32', 'float32', 'float64'] as const;
  const ops: (ArithmeticOp | BitwiseOp)[] = ['+', '-', '*', '%', '&', '|', '^', '<<', '>>'];
  for (const type of types) {
    for (const op of ops) {
      const bitwise = ['&', '|', '^', '<<', '>>'].includes(op);
      // Bitwise operators are typed int32 whatever their operands, so only int32 runs them.
      if (bitwise && type !== 'int32') continue;
      it(`${type} ${op}`, async () => {
        const kernel = new Function('a', 'b', `return a ${op} b;`) as (a: number, b: number) => number;
        const f = vectorize([`${type}(${type}, ${type})`], { target: 'cpu' })(kernel);
        const values = edgesOf(type);
        const a = values.flatMap((x) => values.map(() => x));
        const b = values.flatMap(() => values);
        const typed = (xs: number[]) => {
          const array = new DTYPES[type].arrayType(xs.length) as Float64Array;
          array.set(xs);
          return array;
        };
        const ran = (await f(typed(a), typed(b))) as Float64Array;
        const folded = a.map((x, k) => foldBinary(op, x, b[k]!, type)!);
        for (let k = 0; k < a.length; k++) {
          if (!Object.is(ran[k], folded[k])) expect.fail(`${a[k]} ${op} ${b[k]} in ${type}: the cpu computes ${ran[k]}, the folder ${folded[k]}`);
        }
      });
    }
  }

  it('`/` on ints gives a double and `(a / b) | 0` truncates, as the folder does', async () => {
    const f = vectorize(['int32(int32, int32)'], { target: 'cpu' })((a: number, b: number) => (a / b) | 0);
    const values = edgesOf('int32');
    const a = values.flatMap((x) => values.map(() => x));
    const b = values.flatMap(() => values);
    const ran = (await f(Int32Array.from(a), Int32Array.from(b))) as Int32Array;
    const folded = a.map((x, k) => foldBinary('|', foldBinary('/', x, b[k]!, 'float64')!, 0, 'int32'));
    expect(Array.from(ran)).toEqual(folded);
    expect(a.map((x, k) => foldBinary('/', x, b[k]!, 'int32'))).toEqual(folded);
  });

  for (const to of ['int8', 'uint8', 'uint8c', 'int32', 'uint32', 'float32', 'float64'] as const) {
    it(`casts int64 → ${to}`, async () => {
      const f = vectorize([`${to}(int64)`], { target: 'cpu' })((a: bigint) => a);
      const values = [0n, 1n, -1n, 255n, 256n, 2n ** 31n, 2n ** 53n + 1n, 2n ** 63n - 1n, -(2n ** 63n), -(2n ** 40n) - 3n];
      const ran = Array.from((await f(BigInt64Array.from(values))) as unknown as ArrayLike<number>);
      expect(ran).toEqual(values.map((v) => convertConstant(v, to)));
    });
  }

  for (const to of ['int8', 'uint8', 'uint8c', 'int16', 'uint16', 'int32', 'uint32', 'float32', 'bool'] as const) {
    it(`casts float64 → ${to}`, async () => {
      const f = vectorize([`${to}(float64)`], { target: 'cpu' })((a: number) => a);
      const values = edgesOf('float64');
      const ran = Array.from((await f(Float64Array.from(values))) as unknown as ArrayLike<number>);
      const folded = values.map((v) => Number(convertConstant(v, to)));
      expect(ran).toEqual(folded);
    });
  }
});
