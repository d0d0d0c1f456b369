/**
 * A corpus kernel's input arrays as the ordinary-array benchmarks make them (bench/ordinary-arrays.ts,
 * bench/ordinary-ab.ts): ordinary typed arrays filled from a seeded LCG within the recipe's range.
 */
import type { InputRecipe, Operand } from '../corpus/kernels.js';

export const ARRAY_TYPES = { float32: Float32Array, float64: Float64Array, int32: Int32Array, int16: Int16Array, uint8: Uint8Array } as const;
/** The dtype name of an array type of {@link ARRAY_TYPES}. */
export const DTYPE_OF = new Map<unknown, keyof typeof ARRAY_TYPES>(Object.entries(ARRAY_TYPES).map(([k, v]) => [v, k as keyof typeof ARRAY_TYPES]));

/** An input of the recipe: a scalar as given, an array filled deterministically from `seed`. */
export function makeInput(recipe: InputRecipe, seed: number): Operand | number {
  if ('scalar' in recipe) return recipe.scalar;
  const length = recipe.shape.reduce((a, b) => a * b, 1);
  const data = new ARRAY_TYPES[recipe.dtype](length);
  let a = seed >>> 0;
  for (let i = 0; i < length; i++) {
    a = (Math.imul(a, 1664525) + 1013904223) >>> 0;
    const u = a / 4294967296;
    data[i] = recipe.dtype.startsWith('float') ? recipe.low + u * (recipe.high - recipe.low) : recipe.low + Math.floor(u * (recipe.high - recipe.low + 1));
  }
  return { data, shape: recipe.shape };
}
