import { describe, expect, it } from 'vitest';
import { broadcastShapes, loopStridesFor, schedule } from '../src/broadcast.js';
import { BroadcastError, LayoutError } from '../src/errors.js';
import { parseLayout } from '../src/signature-parser/index.js';

describe('broadcastShapes (NumPy broadcasting, examples from the NumPy user guide)', () => {
  it.each([
    [[[256, 256, 3], [3]], [256, 256, 3]],
    [[[8, 1, 6, 1], [7, 1, 5]], [8, 7, 6, 5]],
    [[[5, 4], [1]], [5, 4]],
    [[[5, 4], [4]], [5, 4]],
    [[[15, 3, 5], [15, 1, 5]], [15, 3, 5]],
    [[[15, 3, 5], [3, 5]], [15, 3, 5]],
    [[[15, 3, 5], [3, 1]], [15, 3, 5]],
    [[[], [3]], [3]],
    [[[0], [1]], [0]],
  ])('%j → %j', (shapes, expected) => {
    expect(broadcastShapes(shapes as number[][])).toEqual(expected);
  });

  it.each([
    [[3], [4]],
    [[2, 1], [8, 4, 3]],
    [[0], [2]],
  ])('refuses %j with %j', (a, b) => {
    expect(() => broadcastShapes([a, b], ['argument 1', 'argument 2'])).toThrow(BroadcastError);
  });

  it('says which operands disagree', () => {
    expect(() => broadcastShapes([[2, 3], [4]], ['argument 1', 'argument 2'])).toThrowErrorMatchingInlineSnapshot(
      `[BroadcastError: Cannot broadcast the loop dimensions together: argument 1 [2, 3], argument 2 [4]. Axis 1 of argument 1 is 3 and axis 0 of argument 2 is 4 (shapes line up at their last axis); each must be equal or 1 (NumPy's broadcasting): make them match, or pass an array of size 1 on that axis, whose values then repeat.]`,
    );
  });
});

describe('schedule', () => {
  const mm = parseLayout('(m,n),(n,p)->(m,p)');

  it('binds core dimensions and broadcasts the loop dimensions', () => {
    const s = schedule(mm, [{ shape: [7, 2, 3], what: 'argument 1' }, { shape: [3, 4], what: 'argument 2' }], [undefined]);
    expect(s.loopShape).toEqual([7]);
    expect(s.outputCoreShapes).toEqual([[2, 4]]);
    expect(Object.fromEntries(s.coreSizes)).toEqual({ m: 2, n: 3, p: 4 });
  });

  it('refuses mismatched core dimensions, naming both operands', () => {
    expect(() => schedule(mm, [{ shape: [2, 3], what: 'argument 1' }, { shape: [4, 4], what: 'argument 2' }], [undefined])).toThrowErrorMatchingInlineSnapshot(
      `[BroadcastError: Core dimension \`n\` of the layout \`(m,n),(n,p)->(m,p)\` is 3 in argument 1 but 4 in argument 2.]`,
    );
  });

  it('takes output-only dimensions from dims, and says how when missing', () => {
    const layout = parseLayout('()->(n)');
    expect(schedule(layout, [{ shape: [5], what: 'argument 1' }], [undefined], { n: 16 }).outputCoreShapes).toEqual([[16]]);
    expect(() => schedule(layout, [{ shape: [5], what: 'argument 1' }], [undefined])).toThrowErrorMatchingInlineSnapshot(
      `[LayoutError: Core dimension \`n\` of output 1 appears in no input of the layout \`()->(n)\`, so its size is unknown: pass \`{ dims: { n: N } }\` or an \`out\` array.]`,
    );
    expect(() => schedule(layout, [{ shape: [5], what: 'argument 1' }], [undefined], { k: 3 })).toThrow(LayoutError);
    expect(() => schedule(layout, [{ shape: [5], what: 'argument 1' }], [undefined], { n: -1 })).toThrow(LayoutError);
  });

  it('takes output-only dimensions from out, and checks its loop shape', () => {
    const layout = parseLayout('()->(n)');
    expect(schedule(layout, [{ shape: [5], what: 'argument 1' }], [{ shape: [5, 3], what: '`out`' }]).outputCoreShapes).toEqual([[3]]);
    expect(() => schedule(layout, [{ shape: [5], what: 'argument 1' }], [{ shape: [4, 3], what: '`out`' }])).toThrow(BroadcastError);
  });

  it('checks fixed core sizes and input rank', () => {
    const layout = parseLayout('(3)->()');
    expect(() => schedule(layout, [{ shape: [2, 4], what: 'argument 1' }], [undefined])).toThrow(/fixes it at 3/);
    expect(() => schedule(parseLayout('(m,n)->()'), [{ shape: [4], what: 'argument 1' }], [undefined])).toThrow(/needs at least 2/);
  });
});

describe('loopStridesFor', () => {
  it('puts 0 where an operand is broadcast and right-aligns', () => {
    expect(loopStridesFor([3, 1], [1, 1], 2, 0)).toEqual([1, 0]);
    expect(loopStridesFor([4], [1], 3, 0)).toEqual([0, 0, 1]);
    expect(loopStridesFor([5, 16], [16, 1], 1, 1)).toEqual([16]);
  });
});
