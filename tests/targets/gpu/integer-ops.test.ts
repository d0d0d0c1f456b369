/**
 * Integer kernels on the gpu give exactly the cpu's results (WGSL integer arithmetic is exact and
 * wraps; JS's differences — division and remainder by zero, shift counts, ToInt32 — are handled
 * by the generated code). Properties over random values with the extremes mixed in.
 */
import fc from 'fast-check';
import { afterAll, expect, it } from 'vitest';
import { shutdownDevice } from '../../../src/targets/gpu/runtime/device.js';
import { describeGpu } from '../../gpu-available.js';
import { differences, runBoth } from './compare-targets.js';

const INT32_EXTREMES = [0, 1, -1, 2, -2, 3, 7, 31, 32, 33, 255, 256, 65535, 65536, 2147483647, -2147483648, -2147483647, 1073741824];
const UINT32_EXTREMES = [0, 1, 2, 3, 31, 32, 33, 255, 65535, 2147483647, 2147483648, 4294967295, 4294967294];
const int32 = fc.oneof(fc.constantFrom(...INT32_EXTREMES), fc.integer({ min: -2147483648, max: 2147483647 }));
const uint32 = fc.oneof(fc.constantFrom(...UINT32_EXTREMES), fc.nat({ max: 4294967295 }));
const RUNS = { numRuns: 12 };

/** A property: for arrays of pairs, the gpu's results equal the cpu's, element for element. */
async function exactOnPairs(kernel: Function, signature: string, a: fc.Arbitrary<number>, b: fc.Arbitrary<number>, A: new (xs: number[]) => ArrayLike<number>, B: new (xs: number[]) => ArrayLike<number>) {
  await fc.assert(
    fc.asyncProperty(fc.array(fc.tuple(a, b), { minLength: 1, maxLength: 400 }), async (pairs) => {
      const xs = new A(pairs.map((p) => p[0]));
      const ys = new B(pairs.map((p) => p[1]));
      const { cpu, gpu } = await runBoth(kernel, signature, [xs, ys]);
      expect(differences(cpu as ArrayLike<number>, gpu as ArrayLike<number>, [xs, ys])).toEqual([]);
    }),
    RUNS,
  );
}

const I = Int32Array as unknown as new (xs: number[]) => ArrayLike<number>;
const U = Uint32Array as unknown as new (xs: number[]) => ArrayLike<number>;

describeGpu('int32 kernels equal the cpu exactly', () => {
  afterAll(() => shutdownDevice());
  const cases: [string, Function, string][] = [
    ['a + b', (a: number, b: number) => a + b, 'int32(int32, int32)'],
    ['a - b', (a: number, b: number) => a - b, 'int32(int32, int32)'],
    ['a * b', (a: number, b: number) => a * b, 'int32(int32, int32)'],
    ['(a / b) | 0 (b = 0 gives 0, −2³¹ / −1 wraps)', (a: number, b: number) => (a / b) | 0, 'int32(int32, int32)'],
    ['a % b (b = 0 gives 0)', (a: number, b: number) => a % b, 'int32(int32, int32)'],
    ['& | ^ ~', (a: number, b: number) => (a & b) ^ (a | ~b), 'int32(int32, int32)'],
    ['<< masks the count to 5 bits', (a: number, b: number) => a << b, 'int32(int32, int32)'],
    ['>> is arithmetic', (a: number, b: number) => a >> b, 'int32(int32, int32)'],
    ['>>> gives uint32', (a: number, b: number) => a >>> b, 'uint32(int32, int32)'],
    ['-a, Math.abs, Math.sign', (a: number, b: number) => -a + Math.abs(b) + Math.sign(a - b), 'int32(int32, int32)'],
    ['Math.imul, Math.clz32, Math.min, Math.max', (a: number, b: number) => Math.imul(a, b) + Math.clz32(a) + Math.min(a, b) - Math.max(a, b), 'int32(int32, int32)'],
    ['comparisons', (a: number, b: number) => (a < b ? 1 : 0) + (a <= b ? 2 : 0) + (a > b ? 4 : 0) + (a >= b ? 8 : 0) + (a === b ? 16 : 0) + (a !== b ? 32 : 0), 'int32(int32, int32)'],
    ['a < b as bool', (a: number, b: number) => a < b, 'bool(int32, int32)'],
    ['int32 → float32 rounds to nearest', (a: number, b: number) => a + b * 0, 'float32(int32, int32)'],
    ['an int32 divided by a uint32, truncated', (a: number, b: number) => (a / (b >>> 0)) | 0, 'int32(int32, int32)'],
  ];
  for (const [name, kernel, signature] of cases) {
    it(name, async () => exactOnPairs(kernel, signature, int32, int32, I, I), 60_000);
  }
});

describeGpu('uint32 kernels equal the cpu exactly', () => {
  afterAll(() => shutdownDevice());
  const cases: [string, Function, string][] = [
    ['a + b, a - b, a * b wrap modulo 2³²', (a: number, b: number) => a * b + a - b, 'uint32(uint32, uint32)'],
    ['(a / b) >>> 0 (b = 0 gives 0)', (a: number, b: number) => (a / b) >>> 0, 'uint32(uint32, uint32)'],
    ['a % b (b = 0 gives 0)', (a: number, b: number) => a % b, 'uint32(uint32, uint32)'],
    ['a >>> b', (a: number, b: number) => a >>> b, 'uint32(uint32, uint32)'],
    ['comparisons and Math.min/max', (a: number, b: number) => (a < b ? Math.min(a, b) : Math.max(a, b)), 'uint32(uint32, uint32)'],
    ['uint32 → int32 through | 0', (a: number, b: number) => (a | 0) + (b | 0), 'int32(uint32, uint32)'],
  ];
  for (const [name, kernel, signature] of cases) {
    it(name, async () => exactOnPairs(kernel, signature, uint32, uint32, U, U), 60_000);
  }
});

describeGpu('conversions and small integer types equal the cpu exactly', () => {
  afterAll(() => shutdownDevice());
  const specials = fc.constantFrom(NaN, Infinity, -Infinity, -0, 0.5, -0.5, 2 ** 31, -(2 ** 31), 2 ** 32, 2 ** 32 + 512, 1e10, -1e10, 3e38, 4294967295.5, 2147483520);
  const anyFloat = fc.oneof(specials, fc.float(), fc.integer({ min: -(2 ** 31), max: 2 ** 31 }).map(Math.fround));
  const F = Float32Array as unknown as new (xs: number[]) => ArrayLike<number>;
  it('float32 → int32 is ToInt32 (truncate, wrap; NaN and ±Infinity give 0)', async () =>
    exactOnPairs((a: number, b: number) => (a | 0) + (b | 0) * 0, 'int32(float32, float32)', anyFloat, anyFloat, F, F), 60_000);
  it('float32 → uint32, int8, uint16 as typed-array stores convert', async () => {
    await exactOnPairs((a: number, _b: number) => a, 'uint32(float32, float32)', anyFloat, anyFloat, F, F);
    await exactOnPairs((a: number, _b: number) => a, 'int8(float32, float32)', anyFloat, anyFloat, F, F);
    await exactOnPairs((a: number, _b: number) => a, 'uint16(float32, float32)', anyFloat, anyFloat, F, F);
  }, 60_000);
  it('int8 and uint16 arithmetic wraps into packed outputs', async () => {
    const i8 = fc.integer({ min: -128, max: 127 });
    const u16 = fc.integer({ min: 0, max: 65535 });
    await exactOnPairs((a: number, b: number) => a * b + 1, 'int8(int8, int8)', i8, i8, Int8Array as never, Int8Array as never);
    await exactOnPairs((a: number, b: number) => a - b, 'uint16(uint16, uint16)', u16, u16, Uint16Array as never, Uint16Array as never);
    await exactOnPairs((a: number, b: number) => a + b, 'int16(uint8, int16)', fc.integer({ min: 0, max: 255 }), fc.integer({ min: -32768, max: 32767 }), Uint8Array as never, Int16Array as never);
  }, 60_000);
  it('bool inputs and outputs are bytes', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(fc.tuple(fc.boolean(), fc.boolean()), { minLength: 1, maxLength: 400 }), async (pairs) => {
        const asBool = (k: 0 | 1) => ({ data: Uint8Array.from(pairs.map((p) => (p[k] ? 1 : 0))), shape: [pairs.length], dtype: 'bool' });
        const { cpu, gpu } = await runBoth((a: boolean, b: boolean) => a !== b && !a, 'bool(bool, bool)', [asBool(0), asBool(1)]);
        expect(differences((cpu as never as { data: Uint8Array }).data, (gpu as never as { data: Uint8Array }).data)).toEqual([]);
      }),
      RUNS,
    );
  }, 60_000);
});
