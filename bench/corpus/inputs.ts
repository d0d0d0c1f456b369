/**
 * The corpus's inputs as its benchmarks make them (bench/corpus.ts, bench/placement-ab.ts): typed
 * arrays filled from a recipe with a seeded generator, and passed as users pass them.
 */
import { sharedArray } from '../../src/index.js';
import type { InputRecipe, Operand } from './kernels.js';

const ARRAY_TYPES = { float32: Float32Array, float64: Float64Array, int32: Int32Array, int16: Int16Array, uint8: Uint8Array } as const;
const DTYPE_OF = new Map<unknown, keyof typeof ARRAY_TYPES>(Object.entries(ARRAY_TYPES).map(([k, v]) => [v, k as keyof typeof ARRAY_TYPES]));

export function makeInput(recipe: InputRecipe, next: () => number): Operand | number {
  if ('scalar' in recipe) return recipe.scalar;
  const length = recipe.shape.reduce((a, b) => a * b, 1);
  const data = new ARRAY_TYPES[recipe.dtype](length);
  const integer = !recipe.dtype.startsWith('float');
  for (let i = 0; i < length; i++) {
    const u = next();
    data[i] = integer ? recipe.low + Math.floor(u * (recipe.high - recipe.low + 1)) : recipe.low + u * (recipe.high - recipe.low);
  }
  return { data, shape: recipe.shape };
}

/** As users pass them: 1-D arrays as typed arrays, others as `{ data, shape }`, scalars as numbers. */
export const callArgument = (a: Operand | number) => (typeof a === 'number' ? a : a.shape.length === 1 ? a.data : { data: a.data, shape: a.shape });

/** A copy of an operand in a `sharedArray` (the Wasm memory); scalars as they are. */
export function sharedOperand(a: Operand | number): Operand | number {
  if (typeof a === 'number') return a;
  const copy = sharedArray(a.data.length, DTYPE_OF.get(a.data.constructor)!);
  copy.set(a.data as never);
  return { data: copy as never, shape: a.shape };
}
