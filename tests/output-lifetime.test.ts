/**
 * Outputs a call allocates are the caller's for as long as any view of them lives: later calls,
 * on any target and engine, never write into them — kept whole, as a subarray of a dropped result,
 * or as a view over its buffer — with garbage collections between the calls.
 */
import fc from 'fast-check';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { expect, it } from 'vitest';
import { getParallelOptions, vectorize } from '../src/index.js';

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

const affine = (target: 'cpu' | 'parallel') =>
  vectorize(['float64(float64, float64)', 'float32(float32, float32)', 'int32(int32, int32)', 'uint8(uint8, uint8)'], { target })((x: number, k: number) => x * 3 + k);
const ufuncs = { cpu: affine('cpu'), parallel: affine('parallel') };
const TYPES = { float64: Float64Array, float32: Float32Array, int32: Int32Array, uint8: Uint8Array } as const;
type Result = Float64Array | Float32Array | Int32Array | Uint8Array;
type Kept = { view: Result; from: number; k: number };

it('never overwrites a live output, however many calls follow (property, cpu and parallel)', async () => {
  // Sizes on both sides of the parallel target's thresholds (its own call runs on the calling thread below them).
  const big = getParallelOptions().threshold * 4 + 3;
  const call = fc.record({
    target: fc.constantFrom('cpu' as const, 'parallel' as const),
    dtype: fc.constantFrom('float64' as const, 'float32' as const, 'int32' as const, 'uint8' as const),
    length: fc.oneof(fc.integer({ min: 1, max: 64 }), fc.integer({ min: big, max: big + 64 })),
    keep: fc.constantFrom('whole' as const, 'subarray' as const, 'buffer view' as const),
    collect: fc.boolean(),
  });
  await fc.assert(
    fc.asyncProperty(fc.array(call, { minLength: 4, maxLength: 10 }), async (calls) => {
      const kept: Kept[] = [];
      for (const [i, { target, dtype, length, keep, collect }] of calls.entries()) {
        const Type = TYPES[dtype];
        const x = Type.from(Array.from({ length }, (_, j) => j % 50));
        const k = i + 1;
        // (The loop is the first whose types take the arguments: float64 for an integer array and a number.)
        let result: Result | undefined = (await ufuncs[target](x, k)) as Result;
        const Out = result.constructor as new (buffer: ArrayBufferLike, byteOffset: number, length: number) => Result;
        const from = length > 8 ? 5 : 0;
        const view = keep === 'whole' ? result : keep === 'subarray' ? result.subarray(from) : new Out(result.buffer, result.byteOffset + from * result.BYTES_PER_ELEMENT, length - from);
        kept.push({ view, from: keep === 'whole' ? 0 : from, k });
        result = undefined; // only the kept view holds it now
        if (collect) {
          gc();
          await new Promise((resolve) => setTimeout(resolve, 0)); // finalizers run
        }
      }
      for (const { view, from, k } of kept) {
        let wrong = 0;
        for (let j = 0; j < view.length; j++) {
          const want = ((from + j) % 50) * 3 + k;
          if (view[j] !== (view instanceof Uint8Array ? want & 255 : want)) wrong++;
        }
        expect(wrong).toBe(0);
      }
    }),
    { numRuns: 10 },
  );
}, 60_000);
