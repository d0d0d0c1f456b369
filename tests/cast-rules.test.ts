/**
 * The cast rules (src/cast-rules.ts) against NumPy's `np.can_cast`, for every pair of dtypes and
 * every casting rule (tests/fixtures/numpy-can-cast.json, made by the command in it), with this
 * library's choices listed here one by one; and the scalar rule's number classes.
 */
import { readFileSync } from 'node:fs';

import { describe, expect, it } from 'vitest';

import {
  canCast, canCastScalar, type Casting, CASTING_RULES, NUMBER_CAST_CLASSES, numberCastClass,
} from '../src/cast-rules.js';
import { ALL_DTYPES, type DType } from '../src/dtypes.js';

interface NumpyCanCast {
  readonly command: string;
  readonly numpy: string;
  readonly canCast: Record<Casting, Record<string, string[]>>;
}

const numpy = JSON.parse(readFileSync(new URL('fixtures/numpy-can-cast.json', import.meta.url), 'utf8')) as NumpyCanCast;
/** The dtypes NumPy has (uint8c, a Uint8ClampedArray, has none: it reads as uint8, below). */
const NUMPY_DTYPES = ALL_DTYPES.filter((t) => t !== 'uint8c');

/**
 * Where this library answers otherwise than NumPy, and why (src/cast-rules.ts says it too): a
 * double cannot hold every 64-bit integer, so int64/uint64 → float64 is not safe here.
 */
const CHOSEN: readonly { from: DType; to: DType; casting: Casting; allowed: boolean }[] = [
  { from: 'int64', to: 'float64', casting: 'safe', allowed: false },
  { from: 'uint64', to: 'float64', casting: 'safe', allowed: false },
];

describe('canCast against NumPy 1.24 np.can_cast', () => {
  it('covers every NumPy dtype of this library and every rule', () => {
    expect(Object.keys(numpy.canCast).sort()).toEqual([...CASTING_RULES].sort());
    for (const rule of CASTING_RULES) expect(Object.keys(numpy.canCast[rule]).sort()).toEqual([...NUMPY_DTYPES].sort());
  });

  for (const casting of CASTING_RULES) {
    it(`answers as NumPy for every pair under '${casting}', but for the casts listed`, () => {
      const differences: string[] = [];
      for (const from of NUMPY_DTYPES) {
        for (const to of NUMPY_DTYPES) {
          const chosen = CHOSEN.find((c) => c.from === from && c.to === to && c.casting === casting);
          const expected = chosen ? chosen.allowed : numpy.canCast[casting][from]!.includes(to);
          if (canCast(from, to, casting) !== expected) differences.push(`${from} → ${to}: ${canCast(from, to, casting)}, expected ${expected}`);
        }
      }
      expect(differences).toEqual([]);
    });
  }

  it('differs from NumPy exactly where it chose to', () => {
    for (const c of CHOSEN) {
      expect(numpy.canCast[c.casting][c.from]!.includes(c.to), `NumPy: ${c.from} → ${c.to} under '${c.casting}'`).toBe(!c.allowed);
      expect(canCast(c.from, c.to, c.casting)).toBe(c.allowed);
    }
  });

  it('reads uint8c as uint8, but equivalent to it and a target of any same_kind cast (a clamping store)', () => {
    const asUint8 = (t: DType): DType => (t === 'uint8c' ? 'uint8' : t);
    for (const casting of CASTING_RULES) {
      for (const from of ALL_DTYPES) {
        for (const to of ALL_DTYPES) {
          if (from !== 'uint8c' && to !== 'uint8c') continue;
          let expected = canCast(asUint8(from), asUint8(to), casting);
          if (casting === 'no' && from !== to) expected = false;
          if (casting === 'same_kind' && to === 'uint8c') expected = true;
          expect(canCast(from, to, casting), `${from} → ${to} under '${casting}'`).toBe(expected);
        }
      }
    }
  });

  it('nests the rules: a cast allowed under one rule is allowed under every weaker one', () => {
    for (const from of ALL_DTYPES) {
      for (const to of ALL_DTYPES) {
        const allowed = CASTING_RULES.map((r) => canCast(from, to, r));
        expect(allowed, `${from} → ${to}`).toEqual([...allowed].sort((a, b) => Number(a) - Number(b)));
      }
    }
  });
});

describe('canCastScalar and the classes of numbers', () => {
  it('lets an integer-valued number become the integer types that hold it, any number a float, a boolean anything', () => {
    expect(ALL_DTYPES.filter((t) => canCastScalar(255, t))).toEqual(['int16', 'int32', 'int64', 'uint8', 'uint8c', 'uint16', 'uint32', 'uint64', 'float32', 'float64']);
    expect(ALL_DTYPES.filter((t) => canCastScalar(-129, t))).toEqual(['int16', 'int32', 'int64', 'float32', 'float64']);
    expect(ALL_DTYPES.filter((t) => canCastScalar(0.5, t))).toEqual(['float32', 'float64']);
    expect(ALL_DTYPES.filter((t) => canCastScalar(NaN, t))).toEqual(['float32', 'float64']);
    expect(ALL_DTYPES.filter((t) => canCastScalar(-0, t))).toEqual(ALL_DTYPES.filter((t) => t !== 'bool'));
    expect(ALL_DTYPES.filter((t) => canCastScalar(2n ** 63n, t))).toEqual(['uint64', 'float32', 'float64']);
    expect(ALL_DTYPES.every((t) => canCastScalar(true, t))).toBe(true);
  });

  /** Integers at and beside every bound of every integer range, and non-integers. */
  const PROBES = [
    0, -0, 1, -1, 0.5, NaN, Infinity, -Infinity, 1e300, -1e300, Number.MAX_SAFE_INTEGER, 2 ** 53 + 2,
    ...[127, 255, 32767, 65535, 2 ** 31 - 1, 2 ** 32 - 1, 2 ** 63, 2 ** 64].flatMap((b) => [b - 1, b, b + 1, b * 2, -b, -b - 1, -b - 2, -b * 2]),
  ];

  it('puts numbers in one class only where canCastScalar answers alike for every dtype', () => {
    const answers = (x: number) => ALL_DTYPES.map((t) => canCastScalar(x, t)).join();
    const byClass = new Map<number, string>();
    for (const x of PROBES) {
      const k = numberCastClass(x);
      expect(k).toBeGreaterThanOrEqual(0);
      expect(k).toBeLessThan(NUMBER_CAST_CLASSES);
      const known = byClass.get(k);
      if (known === undefined) byClass.set(k, answers(x));
      else expect(answers(x), `${x} in class ${k}`).toBe(known);
    }
    expect(byClass.size).toBe(NUMBER_CAST_CLASSES);
    expect(NUMBER_CAST_CLASSES).toBe(15);
  });
});
