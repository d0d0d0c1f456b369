/**
 * sin, cos and tan in Wasm (src/targets/cpu/wasm/trig.ts) give V8's `Math.*` bits, float64 and
 * float32, in SIMD lanes and in the scalar loop, element-wise and per row: random inputs over
 * every range of the argument reduction (near-multiples of π/2, huge |x|, any bit pattern), and
 * every double or float32 within a few hundred ulps of the algorithm's thresholds, in every lane
 * beside ordinary values. All 2^32 float32 inputs and 10^8 doubles: bench/math-exhaustive.ts.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { engineMode, setEngineMode } from '../../../../src/targets/cpu/wasm/index.js';
import { sharedArray, vectorize } from '../../../../src/index.js';
import { mulberry32 } from '../../../random.js';
import { expectPortMatchesV8, expectPortMatchesV8BesideFloat64, expectPortMatchesV8PerRow } from './math-checks.js';
import { edgeInputs, TRIG_CENTRES, trigInput, ulpsFrom, ulpsFrom32 } from './math-inputs.js';

const initialMode = engineMode();
afterEach(() => {
  setEngineMode(initialMode);
});

describe.each(['sin', 'cos', 'tan'])('Math.%s in Wasm equals V8', (name) => {
  it('float64 and float32, SIMD lanes and scalar, over 300,000 random inputs', () => {
    setEngineMode('wasm');
    const next = mulberry32(name.length * 101);
    const xs = Array.from({ length: 300_000 }, (_, i) => trigInput(next, i));
    expectPortMatchesV8(name, 'float64', [xs], 3);
    expectPortMatchesV8(name, 'float32', [xs], 3);
    expectPortMatchesV8BesideFloat64(name, xs.slice(0, 50_000));
  });

  it('every double within 300 ulps of each threshold, in every lane beside ordinary values', () => {
    setEngineMode('wasm');
    expectPortMatchesV8(name, 'float64', [edgeInputs(300, 2, (x) => x, ulpsFrom, TRIG_CENTRES)], 1);
  });

  it('every float32 within 300 ulps of each threshold, in every lane beside ordinary values', () => {
    setEngineMode('wasm');
    expectPortMatchesV8(name, 'float32', [edgeInputs(300, 4, Math.fround, ulpsFrom32, TRIG_CENTRES)], 1);
  });

  it('per row: float64, float32, float32 beside float64', () => {
    setEngineMode('wasm');
    const next = mulberry32(7);
    expectPortMatchesV8PerRow(name, [...edgeInputs(3, 4, (x) => x, ulpsFrom, TRIG_CENTRES), ...Array.from({ length: 20_000 }, (_, i) => trigInput(next, i))]);
  });
});

describe('huge arguments', () => {
  it('are reduced in Wasm (fdlibm\'s __kernel_rem_pio2 port), not by calling V8\'s Math.*', () => {
    setEngineMode('wasm');
    const next = mulberry32(99);
    const xs = sharedArray(4096);
    for (let i = 0; i < xs.length; i++) xs[i] = (next() < 0.5 ? -1 : 1) * 2 ** (20 + 1003 * next());
    const expected = [Math.sin, Math.cos, Math.tan].map((f) => Array.from(xs, (x) => f(x)));
    const saved = [Math.sin, Math.cos, Math.tan];
    const out = [sharedArray(4096), sharedArray(4096), sharedArray(4096)];
    // An import of V8's Math.sin/cos/tan would now return 42.
    Math.sin = Math.cos = Math.tan = () => 42;
    try {
      vectorize(['float64(float64)'])((x: number) => Math.sin(x)).sync(xs, { out: out[0]! });
      vectorize(['float64(float64)'])((x: number) => Math.cos(x)).sync(xs, { out: out[1]! });
      vectorize(['float64(float64)'])((x: number) => Math.tan(x)).sync(xs, { out: out[2]! });
    } finally {
      [Math.sin, Math.cos, Math.tan] = saved as [typeof Math.sin, typeof Math.cos, typeof Math.tan];
    }
    for (let f = 0; f < 3; f++) expect(Array.from(out[f]!)).toEqual(expected[f]);
  });
});
