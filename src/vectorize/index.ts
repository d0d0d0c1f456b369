/**
 * `vectorize`: an element-wise kernel over broadcast arrays, as Numba's `@vectorize`.
 */
import { makeCallable, type Ufunc } from '../callable.js';
import { parseFunction } from '../compiler/parse.js';
import { parseLayout } from '../signature-parser/index.js';
import { checkOptions } from '../options.js';
import { UfuncDefinition, type UfuncOptions, VECTORIZE_OPTIONS, withJitSetting } from '../ufunc.js';
import { ufuncMethods, type UfuncMethods } from '../methods.js';
import { guvectorize } from '../guvectorize/index.js';
import type { TargetName } from '../targets/registry.js';
import type { AllParsed, Exact, MergedKernel, TargetOf, TypedVectorize, VectorizeKernel } from '../signature-types.js';

export type VectorizeUfunc = Ufunc & UfuncMethods;

/**
 * What `vectorize(signatures, options)` returns: give it the kernel, get the ufunc. With literal
 * signatures the kernel's parameters are typed from them (the first overload; a kernel annotated
 * otherwise, e.g. with `Float32Array` for a slice, takes the second) and so is the ufunc.
 */
export interface VectorizeDecorator<Sigs extends readonly string[], T extends TargetName> {
  (kernel: MergedKernel<VectorizeKernel<Sigs>>): TypedVectorize<Sigs, T>;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  (kernel: (...args: any[]) => unknown): TypedVectorize<Sigs, T>;
  // eslint-disable-next-line @typescript-eslint/no-unsafe-function-type
  (kernel: Function | string): TypedVectorize<Sigs, T>;
}

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
export function vectorize<const Sigs extends readonly string[], const O extends UfuncOptions = { target: 'cpu' }>(
  signatures: Sigs,
  options?: Exact<O, UfuncOptions>,
): AllParsed<Sigs> extends true ? VectorizeDecorator<Sigs, TargetOf<O>> : (kernel: Function | string) => VectorizeUfunc;
export function vectorize<const S extends string, const O extends UfuncOptions = { target: 'cpu' }>(
  signature: S,
  options?: Exact<O, UfuncOptions>,
): AllParsed<[S]> extends true ? VectorizeDecorator<[S], TargetOf<O>> : (kernel: Function | string) => VectorizeUfunc;
export function vectorize(signatures?: readonly string[] | string, options?: UfuncOptions): (kernel: Function | string) => VectorizeUfunc;
export function vectorize(
  signatures: readonly string[] | string = [],
  options: UfuncOptions = {},
): (kernel: Function | string) => VectorizeUfunc {
  const sigs = typeof signatures === 'string' ? [signatures] : signatures;
  checkOptions(options, VECTORIZE_OPTIONS, '`vectorize`');
  return (kernel: Function | string) => {
    const arity = kernelArity(kernel);
    const layout = parseLayout(`${Array(arity).fill('()').join(',')}->()`);
    const def = new UfuncDefinition('vectorize', kernel, sigs, layout, withJitSetting(options));
    return makeCallable(def, ufuncMethods(def, guvectorize));
  };
}

function kernelArity(kernel: Function | string): number {
  if (typeof kernel === 'string') return Math.max(parseFunction(kernel).params.length, 1);
  if (typeof kernel !== 'function') return 0; // parseFunction reports it
  // Function.length stops at a default parameter; those are refused when the kernel is parsed.
  return Math.max(kernel.length, 1);
}
