/**
 * `guvectorize`: a kernel over core slices (rows, matrices) of broadcast arrays, as Numba's
 * `@guvectorize`, plus output-only core dimensions (`()->(n)`) that Numba refuses.
 */
import { makeCallable, type Ufunc } from '../callable.js';
import { ufuncMethods, type UfuncMethods } from '../methods.js';
import { parseLayout } from '../signature-parser/index.js';
import { checkOptions } from '../options.js';
import { GUVECTORIZE_OPTIONS, UfuncDefinition, type UfuncOptions } from '../ufunc.js';

/**
 * Makes a generalized ufunc.
 *
 * @param signatures - Numba signatures with `void` return and array arguments for outputs, e.g.
 *   `'void(float32[:], float32[:])'`
 * @param layout - core dimensions of inputs and outputs, e.g. `'(n)->(n)'`, `'()->(n)'`, `'(m,n),(n,p)->(m,p)'`
 * @param options - `target` ('cpu' | 'parallel' | 'gpu'), `env` (helpers and constants), `boundsCheck`
 * @returns a decorator: give it the kernel, get the ufunc
 * @default options.target 'cpu'
 * @throws SignatureError, LayoutError, KernelCompileError when they are invalid or disagree
 * @example
 * const hermite = guvectorize(['void(float32, float32[:])'], '()->(n)')((x, out) => { … });
 * const table = await hermite(xs, { dims: { n: 16 } }); // NDArray [xs.length, 16]
 */
export function guvectorize(
  signatures: readonly string[] | string,
  layout: string,
  options: UfuncOptions = {},
): (kernel: Function) => Ufunc & Partial<UfuncMethods> {
  const sigs = typeof signatures === 'string' ? [signatures] : signatures;
  checkOptions(options, GUVECTORIZE_OPTIONS, '`guvectorize`');
  const parsedLayout = parseLayout(layout);
  // A kernel over scalars (`(),()->()`) is a binary ufunc in all but name: it gets reduce, accumulate,
  // outer, reduceat and at, as Numba's gufuncs do.
  const scalarBinary = parsedLayout.inputs.length === 2 && parsedLayout.outputs.length === 1 && [...parsedLayout.inputs, ...parsedLayout.outputs].every((c) => c.length === 0);
  return (kernel: Function) => {
    const def = new UfuncDefinition('guvectorize', kernel, sigs, parsedLayout, options);
    return makeCallable(def, scalarBinary ? ufuncMethods(def) : {});
  };
}
