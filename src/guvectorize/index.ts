/**
 * `guvectorize`: a kernel over core slices (rows, matrices) of broadcast arrays, as Numba's
 * `@guvectorize`, plus output-only core dimensions (`()->(n)`) that Numba refuses.
 */
import { LayoutError } from '../errors.js';
import { makeCallable, type Ufunc } from '../callable.js';
import { ufuncMethods, type UfuncMethods } from '../methods.js';
import { parseLayout } from '../signature-parser/index.js';
import { checkOptions } from '../options.js';
import { GUVECTORIZE_OPTIONS, UfuncDefinition, type UfuncOptions, withJitSetting } from '../ufunc.js';
import type { AllParsed, Exact, GuvectorizeKernel, MergedKernel, TargetOf, TypedGuvectorize } from '../signature-types.js';
import type { TargetName } from '../targets/registry.js';

/**
 * What `guvectorize(signatures, layout, options)` returns: give it the kernel, get the ufunc. With
 * literal signatures and layout the kernel's parameters (scalars and core slices) are typed from
 * them (the first overload; a kernel annotated otherwise, e.g. with `Float32Array` for a slice,
 * takes the second) and so is the ufunc.
 */
export interface GuvectorizeDecorator<Sigs extends readonly string[], L extends string, T extends TargetName> {
  (kernel: MergedKernel<GuvectorizeKernel<Sigs>>): TypedGuvectorize<Sigs, L, T>;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  (kernel: (...args: any[]) => unknown): TypedGuvectorize<Sigs, L, T>;
  // eslint-disable-next-line @typescript-eslint/no-unsafe-function-type
  (kernel: Function | string): TypedGuvectorize<Sigs, L, T>;
}

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
export function guvectorize<const Sigs extends readonly string[], const L extends string, const O extends UfuncOptions = { target: 'cpu' }>(
  signatures: Sigs,
  layout: L,
  options?: Exact<O, UfuncOptions>,
): AllParsed<Sigs> extends true ? GuvectorizeDecorator<Sigs, L, TargetOf<O>> : (kernel: Function | string) => Ufunc & Partial<UfuncMethods>;
export function guvectorize<const S extends string, const L extends string, const O extends UfuncOptions = { target: 'cpu' }>(
  signature: S,
  layout: L,
  options?: Exact<O, UfuncOptions>,
): AllParsed<[S]> extends true ? GuvectorizeDecorator<[S], L, TargetOf<O>> : (kernel: Function | string) => Ufunc & Partial<UfuncMethods>;
export function guvectorize(signatures: readonly string[] | string, layout: string, options?: UfuncOptions): (kernel: Function | string) => Ufunc & Partial<UfuncMethods>;
export function guvectorize(
  signatures: readonly string[] | string,
  layout: string,
  options: UfuncOptions = {},
): (kernel: Function | string) => Ufunc & Partial<UfuncMethods> {
  const sigs = typeof signatures === 'string' ? [signatures] : signatures;
  if (typeof signatures === 'string' && (layout === undefined || (typeof layout === 'object' && layout !== null)) && signatures.includes('->')) {
    // Numba's dynamic gufunc, `@guvectorize('(n)->()')`, compiles a loop per call from the argument
    // types; this library types kernels when the ufunc is made, so it needs the signatures.
    throw new LayoutError(
      `\`guvectorize('${signatures}')\` is given a layout but no signatures: a gufunc without signatures (Numba's dynamic gufunc) is not supported. Pass the signatures first, then the layout: \`guvectorize(['void(float64[:], float64[:])'], '${signatures}')\`.`,
      signatures,
    );
  }
  checkOptions(options, GUVECTORIZE_OPTIONS, '`guvectorize`');
  const parsedLayout = parseLayout(layout);
  // A kernel over scalars (`(),()->()`) is a binary ufunc in all but name: it gets reduce, accumulate,
  // outer, reduceat and at, as Numba's gufuncs do.
  const scalarBinary = parsedLayout.inputs.length === 2 && parsedLayout.outputs.length === 1 && [...parsedLayout.inputs, ...parsedLayout.outputs].every((c) => c.length === 0);
  return (kernel: Function | string) => {
    const def = new UfuncDefinition('guvectorize', kernel, sigs, parsedLayout, withJitSetting(options));
    return makeCallable(def, scalarBinary ? ufuncMethods(def, guvectorize) : {});
  };
}
