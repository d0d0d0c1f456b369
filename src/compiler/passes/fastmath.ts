/**
 * Pass: `fastmath`. Where the ufunc's `fastmath` option is on, marks the `Math` calls the cpu may
 * compute in their own float type instead of as V8's float64 `Math.*` rounded: today float32
 * `Math.exp` (targets/cpu/fast-exp.ts, within 1 ulp, the same bits on the JS and Wasm engines).
 * Back ends read the mark (`fastmath` on the `math` expression), not the option; the gpu ignores
 * it (WGSL's `exp` is the device's either way).
 */
import type { Expr, TypedKernel } from '../ir.js';
import { rewriteExprs } from '../ir-walk.js';

/**
 * Marks the calls `fastmath` changes in a kernel and its helpers.
 *
 * @param kernel - the typed kernel, its `fastmath` option set as the ufunc's
 * @returns the same kernel when the option is off or nothing changes, else a new one
 * @example
 * // with fastmath: `Math.exp(x)` of a float32 x prints as `Math.exp[fastmath](x):float32`
 * markFastMath(kernel);
 */
export function markFastMath(kernel: TypedKernel): TypedKernel {
  if (!kernel.fastmath) return kernel;
  return rewriteExprs(kernel, (e: Expr) => (e.kind === 'math' && e.fn === 'exp' && e.type === 'float32' && !e.fastmath ? { ...e, fastmath: true } : e));
}
