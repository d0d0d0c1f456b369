/**
 * `vectorize`: an element-wise kernel over broadcast arrays, as Numba's `@vectorize`.
 */
import { makeCallable, type Ufunc } from '../callable.js';
import { parseLayout } from '../signature-parser/index.js';
import { checkOptions } from '../options.js';
import { UfuncDefinition, type UfuncOptions, VECTORIZE_OPTIONS } from '../ufunc.js';
import { ufuncMethods, type UfuncMethods } from '../methods.js';

export type VectorizeUfunc = Ufunc & UfuncMethods;

/**
 * Makes an element-wise ufunc from a scalar kernel.
 *
 * @param signatures - Numba signatures such as `'float32(float32, float32)'`, tried in order; none
 *   (`[]` or omitted) compiles one lazily per input dtype tuple, inferring the return type
 * @param options - `target` ('cpu' | 'parallel' | 'gpu'), `env` (helpers and constants), `boundsCheck`, `identity`
 * @returns a decorator: give it the kernel, get the ufunc
 * @default options.target 'cpu'
 * @throws SignatureError, KernelCompileError when the signatures or the kernel are invalid
 * @example
 * const saxpy = vectorize(['float32(float32, float32, float32)'])((a, x, y) => a * x + y);
 * const z = await saxpy(2, xs, ys); // Float32Array
 */
export function vectorize(
  signatures: readonly string[] | string = [],
  options: UfuncOptions = {},
): (kernel: Function) => VectorizeUfunc {
  const sigs = typeof signatures === 'string' ? [signatures] : signatures;
  checkOptions(options, VECTORIZE_OPTIONS, '`vectorize`');
  return (kernel: Function) => {
    const arity = kernelArity(kernel);
    const layout = parseLayout(`${Array(arity).fill('()').join(',')}->()`);
    const def = new UfuncDefinition('vectorize', kernel, sigs, layout, options);
    return makeCallable(def, ufuncMethods(def));
  };
}

function kernelArity(kernel: Function): number {
  if (typeof kernel !== 'function') return 0; // parseFunction reports it
  // Function.length stops at a default parameter; those are refused when the kernel is parsed.
  return Math.max(kernel.length, 1);
}
