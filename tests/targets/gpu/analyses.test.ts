/**
 * The gpu target's analyses and planning, without a GPU: names, integral doubles, host operand
 * placement, staging decisions and the bounds-check record.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { parseFunction } from '../../../src/compiler/parse.js';
import { typeKernel } from '../../../src/compiler/lower.js';
import type { Stmt } from '../../../src/compiler/ir.js';
import type { OperandView } from '../../../src/plan.js';
import { oobError } from '../../../src/targets/gpu/runtime/bounds-errors.js';
import { planStaging, type StagingCandidate } from '../../../src/targets/gpu/codegen/coalescing.js';
import { gatherInto, placeHostOperand, scatterResults, uploadData } from '../../../src/targets/gpu/runtime/host-operands.js';
import { findIntegralDoubles } from '../../../src/compiler/passes/integral-doubles.js';
import { forEachStmt } from '../../../src/compiler/ir-walk.js';
import { WGSL_RESERVED, WgslNamer } from '../../../src/targets/gpu/codegen/namer.js';

describe('WgslNamer', () => {
  it('keeps plain names and renames keywords, reserved words, built-ins and repeats', () => {
    const namer = new WgslNamer();
    expect(['x', 'x', 'loop', 'var', 'select', 'max', 'filter', '$tmp', '__y', '_', '1st', 'x_1'].map((h) => namer.fresh(h))).toEqual([
      'x', 'x_1', 'loop_1', 'var_1', 'select_1', 'max_1', 'filter_1', 'tmp', 'y', 'v', 'v1st', 'x_1_1',
    ]);
  });

  it('knows the WGSL keywords and reserved words', () => {
    for (const word of ['fn', 'let', 'loop', 'continuing', 'const_assert', 'diagnostic', 'enable', 'requires', 'NULL', 'await', 'demote_to_helper', 'typedef']) {
      expect(WGSL_RESERVED.has(word)).toBe(true);
    }
  });
});

function typed(fn: Function, params: ('float32' | 'int32' | { kind: 'array'; dtype: 'float32'; ndim: number })[], returnType: 'float32' | 'void' = 'void', env = {}) {
  return typeKernel(parseFunction(fn), { params: params as never, returnType, env }, { writable: new Set(params.map((_, i) => i)) });
}

/** The variables declared by `let` in a body, by name. */
function lets(body: readonly Stmt[]) {
  const found = new Map<string, Extract<Stmt, { kind: 'let' }>['variable']>();
  forEachStmt(body, (s) => s.kind === 'let' && found.set(s.variable.name, s.variable));
  return found;
}

describe('integral doubles', () => {
  it('keeps loop counters, their sums and differences in i32; not running products', () => {
    const kernel = typed((x: number, out: Float32Array) => {
      let c = 1.0;
      for (let i = 2; i < out.length; i++) {
        const j = i - 1;
        c *= i;
        out[j] = c * x;
      }
      let k = 0.5;
      k += 1;
      let m = out.length;
      m = m + 2;
    }, ['float32', { kind: 'array', dtype: 'float32', ndim: 1 }]);
    const doubles = findIntegralDoubles(kernel);
    const v = lets(kernel.body);
    expect(doubles.hasVariable(v.get('i')!)).toBe(true);
    expect(doubles.hasVariable(v.get('j')!)).toBe(true);
    expect(doubles.hasVariable(v.get('c')!)).toBe(false); // c *= i reaches 13! > 2^31
    expect(doubles.hasVariable(v.get('k')!)).toBe(false); // 0.5
    expect(v.get('m')!.type).toBe('int32'); // `.length` is an int32 already
  });

  it('follows helper parameters through their call sites', () => {
    function at(a: Float32Array, i: number): number {
      return a[i]!;
    }
    const kernel = typed((a: Float32Array, out: Float32Array) => {
      for (let i = 0; i < a.length; i++) out[i] = at(a, i) + at(a, 0);
    }, [{ kind: 'array', dtype: 'float32', ndim: 1 }, { kind: 'array', dtype: 'float32', ndim: 1 }], 'void', { at });
    const doubles = findIntegralDoubles(kernel);
    expect(doubles.hasVariable(kernel.helpers[0]!.params[1]!)).toBe(true);
  });
});

describe('host operand placement', () => {
  const view = (data: Float32Array, loopStrides: number[], coreStrides: number[], offset = 0, coreShape = coreStrides.map(() => 2)): OperandView => ({
    dtype: 'float32', data, offset, loopStrides, coreShape, coreStrides,
  });

  it('uploads the span a view touches, with its strides, broadcasting included', () => {
    const data = new Float32Array(100).map((_, i) => i);
    const p = placeHostOperand(view(data, [-4, 0], [], 40, []), [5, 7], 'input');
    expect(p.mode).toBe('span');
    expect([p.low, p.high, p.offset]).toEqual([24, 40, 16]);
    expect(p.loopStrides).toEqual([-4, 0]);
    expect([...uploadData(p)]).toEqual([...data.subarray(24, 41)]);
  });

  it('gathers a sparse view, and scatters results into exactly its elements', () => {
    const data = new Float32Array(1000).fill(-1);
    const p = placeHostOperand(view(data, [100], [], 5, []), [10], 'output');
    expect(p.mode).toBe('packed');
    expect(p.length).toBe(10);
    expect(p.loopStrides).toEqual([1]);
    scatterResults(p, Float32Array.from({ length: 10 }, (_, i) => i));
    expect(data[5]).toBe(0);
    expect(data[905]).toBe(9);
    expect(data[6]).toBe(-1);
  });

  it('gathers any piece of a sparse view (gatherInto from any element): the elements in C order, broadcast dimensions once', () => {
    // A view of 1–3 loop dimensions and 0–1 core dimensions, strides of either sign, some 0.
    const dim = fc.record({ extent: fc.integer({ min: 1, max: 6 }), stride: fc.integer({ min: -40, max: 40 }) });
    fc.assert(
      fc.property(fc.array(dim, { minLength: 1, maxLength: 3 }), fc.array(dim, { maxLength: 1 }), fc.nat(), fc.nat(), (loop, core, fromSeed, lengthSeed) => {
        const dims = [...loop, ...core];
        // The lowest offset that keeps every element at index ≥ 0.
        const offset = dims.reduce((o, d) => o + Math.max(0, -d.stride * (d.extent - 1)), 0);
        const size = offset + dims.reduce((o, d) => o + Math.max(0, d.stride * (d.extent - 1)), 0) + 1;
        const data = Float32Array.from({ length: size }, (_, i) => i);
        const v = view(data, loop.map((d) => d.stride), core.map((d) => d.stride), offset, core.map((d) => d.extent));
        const p = placeHostOperand(v, loop.map((d) => d.extent), 'output');
        // The reference: the view's elements in C order, a dimension that does not move taken once.
        const moving = dims.filter((d) => d.stride !== 0 && d.extent > 1);
        const expected: number[] = [];
        const visit = (k: number, at: number): void => {
          if (k === moving.length) expected.push(at);
          else for (let i = 0; i < moving[k]!.extent; i++) visit(k + 1, at + i * moving[k]!.stride);
        };
        visit(0, offset);
        if (p.mode !== 'packed') return; // an output about as long as its span is placed as it is
        expect(p.length).toBe(expected.length);
        const from = fromSeed % p.length;
        const into = new Float32Array((lengthSeed % (p.length + 2)) + 1).fill(-1);
        gatherInto(p, into, from);
        const count = Math.min(into.length, p.length - from);
        expect([...into]).toEqual([...expected.slice(from, from + count), ...new Array<number>(into.length - count).fill(-1)]);
      }),
      { numRuns: 400 },
    );
  });
});

describe('staging decisions', () => {
  const row = (over: Partial<StagingCandidate> = {}): StagingCandidate => ({
    operand: 1, binding: 1, dtype: 'float32', offset: 0, coreShape: [16], coreStrides: [1], loopStride: 16, isOutput: true, read: 'rows', pristine: true, writesRowFirst: false, ...over,
  });

  it('stages adjacent 32-bit rows; fresh outputs start zeroed, others track what is written', () => {
    expect(planStaging(2, [row()], 16384).tiles).toEqual([{ binding: 1, dtype: 'float32', coreShape: [16], pitch: 17, init: 'zero', store: true, wide: true }]);
    expect(planStaging(2, [row({ pristine: false })], 16384).tiles[0]!.init).toBe('track');
    expect(planStaging(2, [row({ pristine: false, writesRowFirst: true })], 16384).tiles[0]!.init).toBe('zero');
    expect(planStaging(2, [row({ operand: 0, isOutput: false }), row()], 16384).tiles[0]!.init).toBe('load');
  });

  it('stores output-only zero tiles as 4-element vectors only where rows are 4k elements from a 16-byte boundary', () => {
    const wide = (over: Partial<StagingCandidate>) => planStaging(2, [row(over)], 16384).tiles[0]!.wide;
    expect(wide({})).toBe(true);
    expect(wide({ offset: 8, coreShape: [12], coreStrides: [1], loopStride: 12 })).toBe(true);
    expect(wide({ offset: 2 })).toBe(false);
    expect(wide({ coreShape: [6], coreStrides: [1], loopStride: 6 })).toBe(false);
    expect(wide({ pristine: false })).toBe(false); // tracked: only written elements go back
    expect(planStaging(2, [row({ operand: 0, isOutput: false }), row()], 16384).tiles[0]!.wide).toBe(false); // in place
  });

  it('reads rows in only when the kernel reads them through', () => {
    expect(planStaging(1, [row({ operand: 0, isOutput: false, read: 'elements' })], 16384).tiles).toEqual([]);
    expect(planStaging(2, [row({ operand: 0, isOutput: false, read: 'elements', pristine: false }), row({ pristine: false })], 16384).tiles[0]!.init).toBe('track');
  });

  it('does not stage strided rows, 16-bit types, or tiles that do not fit', () => {
    expect(planStaging(2, [row({ loopStride: 17 })], 16384).tiles).toEqual([]);
    expect(planStaging(2, [row({ coreStrides: [2] })], 16384).tiles).toEqual([]);
    expect(planStaging(2, [row({ dtype: 'int16' })], 16384).tiles).toEqual([]);
    expect(planStaging(2, [row({ coreShape: [1000], loopStride: 1000 })], 16384).tiles).toEqual([]);
    expect(planStaging(2, [row({ coreShape: [100], loopStride: 100 })], 16384).workgroupSize).toBe(32);
  });

  it('takes 128 rows for tiles that only collect outputs, 64 for tiles read from memory', () => {
    expect(planStaging(2, [row()], 16384).workgroupSize).toBe(128);
    expect(planStaging(2, [row({ pristine: false, writesRowFirst: true })], 16384).workgroupSize).toBe(128);
    expect(planStaging(2, [row({ pristine: false })], 16384).workgroupSize).toBe(64); // tracked: unwritten reads go to memory
    expect(planStaging(2, [row({ operand: 0, isOutput: false }), row()], 16384).workgroupSize).toBe(64); // rows read in
    // In place, reading one fixed element of the row: it comes from memory.
    expect(planStaging(2, [row({ operand: 0, isOutput: false, read: 'elements' }), row({ writesRowFirst: true, pristine: false })], 16384).workgroupSize).toBe(64);
    // 128 rows only where they fit: 128 × 33 words × 4 bytes > 16384.
    expect(planStaging(2, [row({ coreShape: [32], loopStride: 32 })], 16384).workgroupSize).toBe(64);
  });
});

describe('bounds-check record', () => {
  it('decodes int and float indices into the cpu message', () => {
    const record = new Uint32Array(12);
    record.set([2, 1, 2, 0b10]);
    new Int32Array(record.buffer, 16, 1)[0] = -1;
    new Float32Array(record.buffer, 20, 1)[0] = 2.5;
    record.set([3, 4], 8);
    expect(oobError(record.buffer, [{ array: 'a', line: 1, column: 1 }, { array: 'b', line: 2, column: 7 }])?.message).toBe(
      'Index [-1, 2.5] is out of bounds for `b` at kernel line 2:7 (its shape is [3, 4]). The outputs may be partially written.',
    );
    expect(oobError(new Uint32Array(12).buffer, [])).toBeUndefined();
  });
});
