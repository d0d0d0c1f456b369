import { describe, expect, it } from 'vitest';
import { SignatureError, LayoutError } from '../src/errors.js';
import { parseLayout, parseSignature } from '../src/signature-parser/index.js';

describe('parseSignature', () => {
  it('reads scalars, arrays and the return type', () => {
    expect(parseSignature('float32(float32, int32)')).toEqual({
      text: 'float32(float32, int32)',
      returnType: 'float32',
      args: [{ kind: 'scalar', dtype: 'float32' }, { kind: 'scalar', dtype: 'int32' }],
    });
    expect(parseSignature('void(float64[:], float64[:,:])').args).toEqual([
      { kind: 'array', dtype: 'float64', ndim: 1 },
      { kind: 'array', dtype: 'float64', ndim: 2 },
    ]);
  });

  it.each([
    ['f4', 'float32'], ['f8', 'float64'], ['i1', 'int8'], ['i2', 'int16'], ['i4', 'int32'], ['i8', 'int64'],
    ['u1', 'uint8'], ['u2', 'uint16'], ['u4', 'uint32'], ['u8', 'uint64'], ['b1', 'bool'], ['boolean', 'bool'],
    ['double', 'float64'], ['intp', 'int64'], ['bool', 'bool'], ['uint64', 'uint64'],
  ])('knows Numba alias %s = %s', (alias, dtype) => {
    expect(parseSignature(`${alias}(${alias})`).returnType).toBe(dtype);
  });

  it('accepts the tuple form as void, contiguity markers and spaces', () => {
    expect(parseSignature('(f4, f4[::1])')).toMatchObject({ returnType: 'void', args: [{ dtype: 'float32' }, { ndim: 1 }] });
    expect(parseSignature(' void ( float32 [ : , ::1 ] ) ').args[0]).toEqual({ kind: 'array', dtype: 'float32', ndim: 2 });
    expect(parseSignature('int32()').args).toEqual([]);
  });

  it('reads a bare list of types as void(...), as Numba does', () => {
    expect(parseSignature('int32[:], int32[:], int32[:]')).toMatchObject({ returnType: 'void', args: [{ dtype: 'int32', ndim: 1 }, { dtype: 'int32', ndim: 1 }, { dtype: 'int32', ndim: 1 }] });
    expect(parseSignature('f8[:],f8[:]')).toMatchObject({ returnType: 'void', args: [{ dtype: 'float64', ndim: 1 }, { dtype: 'float64', ndim: 1 }] });
    expect(parseSignature('f4, f4[:]')).toMatchObject({ returnType: 'void', args: [{ kind: 'scalar', dtype: 'float32' }, { ndim: 1 }] });
    expect(() => parseSignature('f4[:], f4[:] x')).toThrowError(/column 14/);
  });

  it.each([
    'float32(float32,',
    'flot32(float32)',
    'f4[:](f4)',
    'f4(f4[:;])',
    'f4(f4) x',
    'f4(void)',
    'f4(f4[::2])',
    '',
  ])('names the offending text and column: %j', (text) => {
    let error: unknown;
    try {
      parseSignature(text);
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(SignatureError);
    expect((error as SignatureError).column).toBeGreaterThan(0);
    expect((error as Error).message).toMatchSnapshot();
  });
});

describe('parseLayout', () => {
  it('reads inputs, outputs, fixed sizes and empty operands', () => {
    expect(parseLayout('(m,n),(n,p)->(m,p)')).toEqual({
      text: '(m,n),(n,p)->(m,p)',
      inputs: [
        [{ kind: 'symbol', name: 'm' }, { kind: 'symbol', name: 'n' }],
        [{ kind: 'symbol', name: 'n' }, { kind: 'symbol', name: 'p' }],
      ],
      outputs: [[{ kind: 'symbol', name: 'm' }, { kind: 'symbol', name: 'p' }]],
    });
    expect(parseLayout('() -> (n)').outputs).toEqual([[{ kind: 'symbol', name: 'n' }]]);
    expect(parseLayout('(3),()->(3),()')).toMatchObject({ inputs: [[{ kind: 'fixed', size: 3 }], []], outputs: [[{ size: 3 }], []] });
  });

  it.each(['(n)(n)', '(n,)->(n)', '(n)->(0)', '(n)->(n)->()', '(n),->(n)', '(n->(n)', 'n->n', '(n)->'])(
    'names the offending text and column: %j',
    (text) => {
      let error: unknown;
      try {
        parseLayout(text);
      } catch (e) {
        error = e;
      }
      expect(error).toBeInstanceOf(LayoutError);
      expect((error as Error).message).toMatchSnapshot();
    },
  );
});
