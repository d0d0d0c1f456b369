/**
 * The fold kernels the methods run (methods.ts): per-row guvectorize kernels that call the ufunc's
 * kernel as a helper `f` — their layouts, argument lists and bodies — and the factory that makes
 * them (guvectorize, passed in by the factories).
 */
import type { DType } from '../dtypes.js';
import type { UfuncOptions } from '../ufunc.js';

/** Elements per chunk of an associative reduction (foldInChunks). */
export const CHUNK = 4096;

export type MethodKind = 'reduce' | 'reduceFrom' | 'reduceWhere' | 'accumulate' | 'reduceat' | 'at' | 'atUnary';

/** The layouts and argument lists of the fold kernels. */
export const FOLDS: Record<MethodKind, { layout: string; params: readonly string[]; args: (t: string) => string }> = {
  reduce: { layout: '(n)->()', params: ['x', 'out'], args: (t) => `${t}[:], ${t}[:]` },
  reduceFrom: { layout: '(n),()->()', params: ['x', 'init', 'out'], args: (t) => `${t}[:], ${t}, ${t}[:]` },
  reduceWhere: { layout: '(n),(n),()->()', params: ['x', 'mask', 'init', 'out'], args: (t) => `${t}[:], bool[:], ${t}, ${t}[:]` },
  accumulate: { layout: '(n)->(n)', params: ['x', 'out'], args: (t) => `${t}[:], ${t}[:]` },
  reduceat: { layout: '(n),(m)->(m)', params: ['x', 'starts', 'out'], args: (t) => `${t}[:], int32[:], ${t}[:]` },
  at: { layout: '(m),(m)->(n)', params: ['indices', 'b', 'out'], args: (t) => `int32[:], ${t}[:], ${t}[:]` },
  atUnary: { layout: '(m)->(n)', params: ['indices', 'out'], args: (t) => `int32[:], ${t}[:]` },
};

/**
 * The body of a fold kernel. `combine(a, b, into)` is the ufunc's kernel applied to two values: a
 * call of the helper `f` for vectorize; for a `(),()->()` guvectorize, whose kernel writes through
 * one-element arrays, the values go through local one-element arrays.
 */
export function foldBody(kind: MethodKind, slices: boolean, arrayType: string, local = false, scalarInputs = false): string {
  // A local accumulator keeps the running value in a register instead of storing it each step;
  // used where the kernel returns the loop's type (else the store into out[0] converts it, as a
  // vectorize call's store does).
  if (local && !slices) {
    switch (kind) {
      case 'reduce':
        return 'let acc = x[0];\nfor (let i = 1; i < x.length; i++) { acc = f(acc, x[i]); }\nout[0] = acc;';
      case 'reduceFrom':
        return 'let acc = init;\nfor (let i = 0; i < x.length; i++) { acc = f(acc, x[i]); }\nout[0] = acc;';
      default:
        break;
    }
  }
  // A `(),()->()` kernel takes its inputs as scalars (`void(float64, float64, float64[:])`) or as
  // one-element arrays (`void(float64[:], float64[:], float64[:])`), as its signature declares.
  const combine = (a: string, b: string, into: string) =>
    !slices ? `${into} = f(${a}, ${b});` : scalarInputs ? `f(${a}, ${b}, fo); ${into} = fo[0];` : `fa[0] = ${a}; fb[0] = ${b}; f(fa, fb, fo); ${into} = fo[0];`;
  const prelude = !slices ? '' : scalarInputs ? `const fo = new ${arrayType}(1);\n` : `const fa = new ${arrayType}(1); const fb = new ${arrayType}(1); const fo = new ${arrayType}(1);\n`;
  switch (kind) {
    case 'reduce':
      return `${prelude}out[0] = x[0];\nfor (let i = 1; i < x.length; i++) { ${combine('out[0]', 'x[i]', 'out[0]')} }`;
    case 'reduceFrom':
      return `${prelude}out[0] = init;\nfor (let i = 0; i < x.length; i++) { ${combine('out[0]', 'x[i]', 'out[0]')} }`;
    case 'reduceWhere':
      return `${prelude}out[0] = init;\nfor (let i = 0; i < x.length; i++) { if (mask[i]) { ${combine('out[0]', 'x[i]', 'out[0]')} } }`;
    case 'accumulate':
      return `${prelude}if (x.length > 0) { out[0] = x[0]; }\nfor (let i = 1; i < x.length; i++) { ${combine('out[i - 1]', 'x[i]', 'out[i]')} }`;
    case 'reduceat':
      return `${prelude}for (let k = 0; k < starts.length; k++) {
  const start = starts[k];
  let end = x.length;
  if (k + 1 < starts.length) { end = starts[k + 1]; }
  out[k] = x[start];
  for (let i = start + 1; i < end; i++) { ${combine('out[k]', 'x[i]', 'out[k]')} }
}`;
    case 'atUnary':
      return slices
        ? `${prelude}for (let k = 0; k < indices.length; k++) { const j = indices[k]; ${scalarInputs ? 'f(out[j], fo)' : 'fa[0] = out[j]; f(fa, fo)'}; out[j] = fo[0]; }`
        : `for (let k = 0; k < indices.length; k++) { const j = indices[k]; out[j] = f(out[j]); }`;
    case 'at':
      return `${prelude}for (let k = 0; k < indices.length; k++) { const j = indices[k]; ${combine('out[j]', 'b[k]', 'out[j]')} }`;
  }
}

/** Typed-array constructor names by dtype, for the local arrays of `(),()->()` fold kernels. */
export const ARRAY_NAMES: Record<DType, string> = {
  float32: 'Float32Array', float64: 'Float64Array', int32: 'Int32Array', uint32: 'Uint32Array', int16: 'Int16Array',
  uint16: 'Uint16Array', int8: 'Int8Array', uint8: 'Uint8Array', uint8c: 'Uint8ClampedArray', bool: 'Uint8Array', int64: 'BigInt64Array', uint64: 'BigUint64Array',
};

/**
 * Makes the fold kernels the methods run: `guvectorize`, which the factories pass in (this module
 * does not import them, so a method is not a cycle through the factory that made its ufunc).
 */
export type FoldFactory = (
  signatures: readonly string[],
  layout: string,
  options: UfuncOptions,
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
) => (kernel: Function) => (...args: any[]) => Promise<unknown>;
