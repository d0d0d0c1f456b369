/**
 * NumPy's ufunc methods — `reduce`, `accumulate`, `outer`, `reduceat`, `at` — for two-input,
 * one-output ufuncs (vectorize, and guvectorize with layout `(),()->()`), on the ufunc's own target.
 *
 * Each method is a small per-row kernel ("fold kernel") that calls the ufunc's kernel as a helper:
 * `reduce` is `(n)->()` folding a row in order, `accumulate` is `(n)->(n)`, `reduceat` is
 * `(n),(m)->(m)`, `at` is `(m),(m)->(n)` writing its output in place. These are guvectorize ufuncs
 * on the same target, so they run where the ufunc runs: rows are split over the parallel target's
 * workers, run one thread per row on the gpu, and take and give device arrays there (results stay
 * on the device). The fold within a row is sequential, in NumPy's order, so every target gives the
 * cpu's (and NumPy's) answer; only a reduction declared `associative` is split within a row (see
 * `reduce`).
 */
import type { UfuncResult } from './callable.js';
import { checkOptions, type OptionRules, rule } from './options.js';
import { loadTarget, loadTargetSync } from './targets/registry.js';
import type { UfuncDefinition } from './ufunc.js';
import { accumulateMethod } from './methods/accumulate.js';
import { atMethod } from './methods/at.js';
import { type MethodContext, methodContext } from './methods/context.js';
import type { FoldFactory } from './methods/fold-kernels.js';
import { outerMethod } from './methods/outer.js';
import { reduceMethod } from './methods/reduce.js';
import { reduceatMethod } from './methods/reduceat.js';
import type { UfuncMethods } from './methods/types.js';

export type { FoldFactory } from './methods/fold-kernels.js';
export type { AxisOptions, ReduceOptions, UfuncMethods } from './methods/types.js';

const REDUCE_RULES: OptionRules = {
  axis: (v) => (v === null || Number.isInteger(v) || (Array.isArray(v) && v.every(Number.isInteger)) ? undefined : 'an integer, a list of integers or null'),
  keepdims: rule.boolean(),
  initial: rule.scalar(),
  identity: rule.scalar(),
  where: rule.any(),
  out: rule.any(),
  dtype: rule.any(),
};
const AXIS_RULES: OptionRules = { axis: rule.axis(false), out: rule.any(), dtype: rule.any() };

/** Each method's options, and where among its arguments they are (`at` takes none). */
const METHOD_OPTIONS: Readonly<Record<keyof UfuncMethods, { readonly rules: OptionRules; readonly at: number } | undefined>> = {
  reduce: { rules: REDUCE_RULES, at: 1 },
  accumulate: { rules: AXIS_RULES, at: 1 },
  outer: { rules: { out: rule.any() }, at: 2 },
  reduceat: { rules: AXIS_RULES, at: 2 },
  at: undefined,
};

const contexts = new WeakMap<UfuncDefinition, MethodContext>();

/** The methods' context of a ufunc that has methods (its fold kernels, loop types, starting values): `fuse` folds a trailing `reduce` with it. */
export function methodContextOf(def: UfuncDefinition): MethodContext | undefined {
  return contexts.get(def);
}

/**
 * A ufunc's methods; `undefined` members where the ufunc is not binary. Each method is a module of
 * methods/ over one shared context (methods/context.ts); `guvectorize` makes their fold kernels.
 */
export function ufuncMethods(def: UfuncDefinition, guvectorize: FoldFactory): UfuncMethods {
  const c = methodContext(def, guvectorize);
  contexts.set(def, c);
  const { scalarCore, binary } = c;
  /** The shared default of each method, for targets that do not run it themselves. */
  const defaults: UfuncMethods = { reduce: reduceMethod(c), accumulate: accumulateMethod(c), outer: outerMethod(c), reduceat: reduceatMethod(c), at: atMethod(c) };

  /** A method checks its arguments, then runs the target's hook where it has one, else the default. */
  const method = <M extends keyof UfuncMethods>(name: M) =>
    (async (...args: unknown[]) => {
      if (!(name === 'at' && def.nin === 1 && def.nout === 1 && scalarCore)) binary(name);
      const options = METHOD_OPTIONS[name];
      if (options) checkOptions(args[options.at], options.rules, `\`${name}\``);
      const target = loadTargetSync(def.target) ?? (await loadTarget(def.target));
      const fallback = () => (defaults[name] as (...a: unknown[]) => Promise<UfuncResult>)(...args);
      // A plain-JS ufunc (`disableJit`) runs the shared defaults, whose folds are plain JS too.
      const hook = def.disableJit ? undefined : target.methods?.[name];
      return hook ? hook({ args, target, fallback }) : fallback();
    }) as UfuncMethods[M];
  return { reduce: method('reduce'), accumulate: method('accumulate'), outer: method('outer'), reduceat: method('reduceat'), at: method('at') };
}
