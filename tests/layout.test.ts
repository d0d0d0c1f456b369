import fc from 'fast-check';
import { describe, expect, it } from 'vitest';

import { cOrderStrides, isCContiguous, isFContiguous, mergeLoopDims, operandReach, reachOf, sameAxes, sizeOf } from '../src/layout.js';

/** Every element index a view touches, in C order of its indices (the oracle for the module). */
function addresses(shape: readonly number[], strides: readonly number[], offset: number): number[] {
  const out: number[] = [];
  const n = sizeOf(shape);
  const idx = new Array<number>(shape.length).fill(0);
  for (let k = 0; k < n; k++) {
    out.push(idx.reduce((at, i, d) => at + i * strides[d]!, offset));
    for (let d = shape.length - 1; d >= 0; d--) {
      if (++idx[d]! < shape[d]!) break;
      idx[d] = 0;
    }
  }
  return out;
}

const shapeArb = fc.array(fc.integer({ min: 0, max: 4 }), { maxLength: 4 });
const viewArb = shapeArb.chain((shape) =>
  fc.record({
    shape: fc.constant(shape),
    strides: fc.array(fc.integer({ min: -6, max: 6 }), { minLength: shape.length, maxLength: shape.length }),
    offset: fc.integer({ min: 0, max: 50 }),
  }),
);

describe('layout', () => {
  it('sameAxes: equal axis for axis, lengths included', () => {
    expect(sameAxes([], [])).toBe(true);
    expect(sameAxes([4, 16], [4, 16])).toBe(true);
    expect(sameAxes([4, 16], [16, 4])).toBe(false);
    expect(sameAxes([4], [4, 1])).toBe(false);
    expect(sameAxes([-1, 0], [-1, 0])).toBe(true);
    fc.assert(
      fc.property(fc.array(fc.integer({ min: -3, max: 3 }), { maxLength: 4 }), fc.array(fc.integer({ min: -3, max: 3 }), { maxLength: 4 }), (a, b) => {
        expect(sameAxes(a, b)).toBe(JSON.stringify(a) === JSON.stringify(b));
      }),
    );
  });

  it('gives C-order strides and sizes', () => {
    expect(cOrderStrides([2, 3, 4])).toEqual([12, 4, 1]);
    expect(cOrderStrides([])).toEqual([]);
    expect(sizeOf([])).toBe(1);
    expect(sizeOf([3, 0])).toBe(0);
  });

  it('C-order strides walk elements 0, 1, 2, … (property)', () => {
    fc.assert(
      fc.property(shapeArb, (shape) => {
        const strides = cOrderStrides(shape);
        expect(addresses(shape, strides, 0)).toEqual([...Array(sizeOf(shape)).keys()]);
        expect(isCContiguous(shape, strides)).toBe(true);
      }),
    );
  });

  it('isCContiguous is true exactly when element k of the view is element offset + k (property)', () => {
    fc.assert(
      fc.property(viewArb, ({ shape, strides, offset }) => {
        const walk = addresses(shape, strides, offset);
        const contiguous = walk.every((a, k) => a === offset + k);
        // An empty view touches nothing, so only its strides can be judged (NumPy's flags do the same).
        if (sizeOf(shape) > 0) expect(isCContiguous(shape, strides)).toBe(contiguous);
      }),
    );
    expect(isCContiguous([3, 1], [1, 7])).toBe(true);
    expect(isFContiguous([2, 3], [1, 2])).toBe(true);
    expect(isFContiguous([2, 3], [3, 1])).toBe(false);
    // Fortran order is C order of the reversed axes.
    fc.assert(fc.property(viewArb, ({ shape, strides }) => {
      expect(isFContiguous(shape, strides)).toBe(isCContiguous([...shape].reverse(), [...strides].reverse()));
    }));
    expect(isCContiguous([2, 3], [1, 2])).toBe(false);
  });

  it('reachOf is the lowest and highest element touched, undefined when empty (property)', () => {
    fc.assert(
      fc.property(viewArb, ({ shape, strides, offset }) => {
        const walk = addresses(shape, strides, offset);
        const reach = reachOf(shape, strides, offset);
        if (walk.length === 0) expect(reach).toBeUndefined();
        else expect(reach).toEqual({ low: Math.min(...walk), high: Math.max(...walk) });
      }),
    );
    expect(reachOf([2, 3], [-3, 1], 3)).toEqual({ low: 0, high: 5 });
  });

  it('operandReach covers loop and core dimensions relative to the offset', () => {
    expect(operandReach({ offset: 4, loopStrides: [3], coreShape: [3], coreStrides: [1] }, [2])).toEqual({ low: 0, high: 5, coreLow: 0, coreHigh: 2 });
    expect(operandReach({ offset: 0, loopStrides: [-4], coreShape: [2], coreStrides: [-1] }, [3])).toEqual({ low: -9, high: 0, coreLow: -1, coreHigh: 0 });
    expect(operandReach({ offset: 0, loopStrides: [1], coreShape: [0], coreStrides: [1] }, [3])).toBeUndefined();
  });

  it('mergeLoopDims keeps every operand\'s addresses, in order (property)', () => {
    const callArb = shapeArb.chain((shape) =>
      fc.record({
        shape: fc.constant(shape),
        operands: fc.array(
          fc.oneof(
            fc.constant(cOrderStrides(shape)),
            fc.constant(shape.map(() => 0)),
            fc.array(fc.integer({ min: -6, max: 6 }), { minLength: shape.length, maxLength: shape.length }),
          ),
          { minLength: 1, maxLength: 3 },
        ),
      }),
    );
    fc.assert(
      fc.property(callArb, ({ shape, operands }) => {
        const merged = mergeLoopDims(shape, operands);
        expect(sizeOf(merged.shape)).toBe(sizeOf(shape));
        expect(merged.shape.length).toBeLessThanOrEqual(shape.filter((n) => n !== 1).length);
        operands.forEach((strides, i) => expect(addresses(merged.shape, merged.strides[i]!, 0)).toEqual(addresses(shape, strides, 0)));
      }),
    );
    expect(mergeLoopDims([4, 5], [[5, 1], [0, 0]])).toEqual({ shape: [20], strides: [[1], [0]] });
  });
});
