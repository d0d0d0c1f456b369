/**
 * asin, acos, atan and atan2 in Wasm (src/targets/cpu/wasm/inverse-trig.ts) give V8's `Math.*`
 * bits, float64 and float32, in SIMD lanes and in the scalar loop, element-wise and per row:
 * random inputs over every branch of fdlibm's algorithms (near ±1, every exponent, exponent
 * differences around atan2's ±60, every quadrant and signed zero, any bit pattern), and every
 * double or float32 within a few hundred ulps of the algorithms' thresholds, in every lane beside
 * ordinary values. All 2^32 float32 inputs and 10^8 doubles: bench/math-exhaustive.ts.
 */
import { afterEach, describe, it } from 'vitest';
import { engineMode, setEngineMode } from '../../../../src/targets/cpu/wasm/index.js';
import { mulberry32 } from '../../../random.js';
import { expectPortMatchesV8, expectPortMatchesV8BesideFloat64, expectPortMatchesV8PerRow } from './math-checks.js';
import { ASIN_CENTRES, asinInput, ATAN_CENTRES, ATAN2_SPECIALS, atan2Input, atanInput, edgeInputs, ulpsFrom, ulpsFrom32 } from './math-inputs.js';

const initialMode = engineMode();
afterEach(() => {
  setEngineMode(initialMode);
});

describe.each([
  ['asin', asinInput, ASIN_CENTRES],
  ['acos', asinInput, ASIN_CENTRES],
  ['atan', atanInput, ATAN_CENTRES],
] as const)('Math.%s in Wasm equals V8', (name, input, centres) => {
  it('float64 and float32, SIMD lanes and scalar, over 300,000 random inputs', () => {
    setEngineMode('wasm');
    const next = mulberry32(name.length * 31 + name.charCodeAt(1));
    const xs = Array.from({ length: 300_000 }, (_, i) => input(next, i));
    expectPortMatchesV8(name, 'float64', [xs], 3);
    expectPortMatchesV8(name, 'float32', [xs], 3);
    expectPortMatchesV8BesideFloat64(name, xs.slice(0, 50_000));
  });

  it('every double and every float32 within 300 ulps of each threshold, in every lane beside ordinary values', () => {
    setEngineMode('wasm');
    expectPortMatchesV8(name, 'float64', [edgeInputs(300, 2, (x) => x, ulpsFrom, centres)], 1);
    expectPortMatchesV8(name, 'float32', [edgeInputs(300, 4, Math.fround, ulpsFrom32, centres)], 1);
  });

  it('per row: float64, float32, float32 beside float64', () => {
    setEngineMode('wasm');
    const next = mulberry32(5);
    expectPortMatchesV8PerRow(name, [...edgeInputs(3, 4, (x) => x, ulpsFrom, centres), ...Array.from({ length: 20_000 }, (_, i) => input(next, i))]);
  });
});

describe('Math.atan2 in Wasm equals V8', () => {
  it('float64 and float32, SIMD lanes and scalar, over 300,000 random pairs', () => {
    setEngineMode('wasm');
    const next = mulberry32(2);
    const pairs = Array.from({ length: 300_000 }, (_, i) => atan2Input(next, i));
    const ys = pairs.map((p) => p[0]);
    const xs = pairs.map((p) => p[1]);
    expectPortMatchesV8('atan2', 'float64', [ys, xs], 3);
    expectPortMatchesV8('atan2', 'float32', [ys, xs], 3);
  });

  it('every pair of special values (signed zeros, infinities, NaN, ±1, extremes), in every lane, and edges of y/x beside ordinary values', () => {
    setEngineMode('wasm');
    for (const [dtype, lanes, round] of [['float64', 2, (x: number) => x], ['float32', 4, Math.fround]] as const) {
      const ys: number[] = [];
      const xs: number[] = [];
      const ordinary = [0.7, -3.25, 12.5, -0.3];
      for (const y of ATAN2_SPECIALS) {
        for (const x of ATAN2_SPECIALS) {
          for (let lane = 0; lane < lanes; lane++) {
            for (let l = 0; l < lanes; l++) {
              ys.push(round(l === lane ? y : ordinary[l]!));
              xs.push(round(l === lane ? x : ordinary[(l + 1) % 4]!));
            }
          }
        }
      }
      // x = 1 and ratios around 2^±60, the reduction thresholds of atan(|y/x|)
      const edges = edgeInputs(20, lanes, round, dtype === 'float64' ? ulpsFrom : ulpsFrom32, [...ATAN_CENTRES, 2 ** 61, 2 ** -59]);
      for (const e of edges) ys.push(e), xs.push(1);
      for (const e of edges) ys.push(e), xs.push(-round(2.5));
      expectPortMatchesV8('atan2', dtype, [ys, xs], 1);
    }
  });
});
