/**
 * Runs one kernel on cpu and gpu over the same inputs, for the gpu-vs-cpu property tests. Ufuncs
 * are made once per (kernel, signature) and reused, so a property's runs share one pipeline.
 */
import { vectorize } from '../../../src/index.js';
import type { TypedArray } from '../../../src/dtypes.js';

type Ufunc = (...args: unknown[]) => Promise<unknown>;
const made = new Map<string, { cpu: Ufunc; gpu: Ufunc }>();

/** The vectorize ufunc for `kernel` with `signature`, on both targets. */
export function onBothTargets(kernel: Function, signature: string): { cpu: Ufunc; gpu: Ufunc } {
  const key = `${signature}|${kernel.toString()}`;
  let pair = made.get(key);
  if (!pair) {
    pair = {
      cpu: vectorize([signature], { target: 'cpu' })(kernel) as unknown as Ufunc,
      gpu: vectorize([signature], { target: 'gpu' })(kernel) as unknown as Ufunc,
    };
    made.set(key, pair);
  }
  return pair;
}

/** Both targets' results for one call. */
export async function runBoth(kernel: Function, signature: string, args: unknown[]): Promise<{ cpu: TypedArray; gpu: TypedArray }> {
  const { cpu, gpu } = onBothTargets(kernel, signature);
  const [c, g] = await Promise.all([cpu(...args), gpu(...args)]);
  return { cpu: c as TypedArray, gpu: g as TypedArray };
}

/** Indices where the results differ (Object.is: NaN equals NaN, −0 differs from +0), with values. */
export function differences(cpu: ArrayLike<number | bigint>, gpu: ArrayLike<number | bigint>, inputs: readonly ArrayLike<unknown>[] = []): string[] {
  const out: string[] = [];
  for (let i = 0; i < cpu.length && out.length < 5; i++) {
    if (!Object.is(cpu[i], gpu[i])) out.push(`[${i}] inputs (${inputs.map((a) => String(a[i])).join(', ')}): cpu ${String(cpu[i])}, gpu ${String(gpu[i])}`);
  }
  return out;
}
