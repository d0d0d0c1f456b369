/**
 * NumPy's ufunc methods for two-input, one-output vectorize ufuncs. A target may run a method
 * itself (its `methods` hooks, target.ts); otherwise the shared defaults here run it: `outer` on
 * the ufunc's target through broadcasting; `reduce` and `accumulate` fold one element after
 * another, on the calling thread with the cpu target's code (the same results as the kernel gives
 * on cpu).
 */
import { convertConstant } from '../compiler/lower.js';
import { type DType, DTYPES } from '../dtypes.js';
import { ArgumentError } from '../errors.js';
import { cOrderStrides, isCContiguous, sizeOf } from '../layout.js';
import { type ArrayOperand, describe, type NDArray, toOperand } from '../ndarray.js';
import { checkOptions, type OptionRules, rule } from '../options.js';
import { instantiateScalarFunction } from '../targets/cpu/codegen.js';
import type { UfuncResult } from '../callable.js';
import { prepareCall, runPrepared, type UfuncDefinition } from '../ufunc.js';
import { loadTarget, loadTargetSync } from '../targets/registry.js';

export interface ReduceOptions {
  /** The axis to fold; `null` folds every element. @default 0 */
  readonly axis?: number | null;
  /** The starting value (and the result for an empty axis). @default the ufunc's `identity`, else the first element */
  readonly identity?: number | bigint | boolean;
}

export interface UfuncMethods {
  /** Folds `x` along an axis: `f(…f(f(x₀, x₁), x₂)…)`. @example await add.reduce(xs) // sum */
  reduce(x: unknown, options?: ReduceOptions): Promise<UfuncResult>;
  /** The running fold, same shape as `x`. @example await add.accumulate(xs) // prefix sums */
  accumulate(x: unknown, options?: { readonly axis?: number }): Promise<UfuncResult>;
  /** `f(a[i…], b[j…])` for every pair: shape `[...a.shape, ...b.shape]`. */
  outer(a: unknown, b: unknown, options?: { readonly out?: unknown }): Promise<UfuncResult>;
}

/** Each method's options, and where among its arguments they are. */
const METHOD_OPTIONS: Readonly<Record<keyof UfuncMethods, { readonly rules: OptionRules; readonly at: number }>> = {
  reduce: { rules: { axis: rule.axis(true), identity: rule.scalar() }, at: 1 },
  accumulate: { rules: { axis: rule.axis(false) }, at: 1 },
  outer: { rules: { out: rule.any() }, at: 2 },
};

export function ufuncMethods(def: UfuncDefinition): UfuncMethods {
  const binary = () => {
    if (def.nin !== 2 || def.nout !== 1) {
      throw new ArgumentError(`reduce, accumulate and outer need a kernel of two inputs and one output; this one takes ${def.nin}.`);
    }
  };

  /** The kernel as a scalar function over a signature `T(T, T)` that accepts `dtype`. */
  const folder = (dtype: DType) => {
    const probe = toOperand(new DTYPES[dtype].arrayType(0), 'argument 1');
    const spec = def.select([probe, probe]);
    const [a, b] = spec.signature.args;
    const r = spec.signature.returnType as DType;
    if (a!.dtype !== r || b!.dtype !== r) {
      throw new ArgumentError(`reduce and accumulate need a signature whose inputs and result have one type; the one that accepts ${dtype} is \`${spec.signature.text}\`.`);
    }
    const { kernel } = def.kernelFor(spec, []);
    return { fn: instantiateScalarFunction(kernel), dtype: r };
  };

  const arrayArgument = (x: unknown): ArrayOperand => {
    const op = toOperand(x, 'argument 1');
    if (op.kind !== 'array') throw new ArgumentError(`Argument 1 must be an array in host memory, found ${op.kind === 'scalar' ? describe(x) : 'a DeviceArray (call toHost() first)'}.`);
    return op;
  };

  const checkAxis = (axis: number, rank: number): number => {
    const a = axis < 0 ? axis + rank : axis;
    if (!Number.isInteger(axis) || a < 0 || a >= rank) throw new ArgumentError(`\`axis\` ${axis} is out of range for an array of ${rank} dimension${rank === 1 ? '' : 's'}.`);
    return a;
  };

  /** Calls `visit(base, stride, length, k)` for every line along `axis`, k numbering the lines. */
  const forEachLine = (x: ArrayOperand, axis: number, visit: (base: number, stride: number, n: number, k: number) => void) => {
    const others = x.shape.map((_, d) => d).filter((d) => d !== axis);
    const count = sizeOf(others.map((d) => x.shape[d]!));
    const idx = new Array(others.length).fill(0);
    for (let k = 0; k < count; k++) {
      let base = x.offset;
      others.forEach((d, j) => (base += idx[j] * x.strides[d]!));
      visit(base, x.strides[axis]!, x.shape[axis]!, k);
      for (let j = others.length - 1; j >= 0; j--) {
        if (++idx[j] < x.shape[others[j]!]!) break;
        idx[j] = 0;
      }
    }
  };

  /** The shared default of each method, for targets that do not run it themselves. */
  const defaults: UfuncMethods = {
    async reduce(x, options = {}) {
      let arr = arrayArgument(x);
      const { fn, dtype } = folder(arr.dtype);
      if (options.axis === null || arr.shape.length === 0) {
        const flat = arr.shape.length === 0 ? [] : [sizeOf(arr.shape)];
        const contiguous = isCContiguous(arr.shape, arr.strides);
        if (!contiguous && arr.shape.length > 1) {
          const { copyToContiguous } = await import('../ndarray.js');
          arr = { ...arr, data: copyToContiguous(arr, arr.dtype), offset: 0 };
        }
        arr = { ...arr, shape: flat.length ? flat : [1], strides: [arr.shape.length > 1 ? 1 : (arr.strides[0] ?? 1)] };
      }
      const axis = checkAxis(options.axis ?? 0, arr.shape.length);
      const identity = options.identity ?? def.options.identity;
      const start = identity === undefined ? undefined : convertConstant(identity, dtype);
      const resultShape = arr.shape.filter((_, d) => d !== axis);
      const out = new DTYPES[dtype].arrayType(Math.max(1, sizeOf(resultShape)));
      forEachLine(arr, axis, (base, stride, n, k) => {
        if (n === 0 && start === undefined) {
          throw new ArgumentError(`Cannot reduce an empty axis without an identity: pass \`{ identity }\` to reduce, or \`identity\` to vectorize.`);
        }
        const data = arr.data as unknown as unknown[];
        let acc: unknown = start ?? data[base];
        for (let j = start === undefined ? 1 : 0; j < n; j++) acc = fn(acc, data[base + j * stride]);
        (out as unknown as unknown[])[k] = acc;
      });
      if (resultShape.length === 0) return dtype === 'bool' ? out[0] !== 0 : out[0];
      if (resultShape.length === 1 && arr.plain) return out;
      return { data: out, shape: resultShape, strides: cOrderStrides(resultShape), offset: 0, dtype } satisfies NDArray;
    },

    async accumulate(x, options = {}) {
      const arr = arrayArgument(x);
      const { fn, dtype } = folder(arr.dtype);
      const axis = checkAxis(options.axis ?? 0, arr.shape.length);
      const strides = cOrderStrides(arr.shape);
      const out = new DTYPES[dtype].arrayType(sizeOf(arr.shape));
      const o = out as unknown as unknown[];
      const others = arr.shape.map((_, d) => d).filter((d) => d !== axis);
      const idx = new Array(others.length).fill(0);
      forEachLine(arr, axis, (base, stride, n) => {
        let outBase = 0;
        others.forEach((d, j) => (outBase += idx[j] * strides[d]!));
        const data = arr.data as unknown as unknown[];
        let acc: unknown = data[base];
        for (let j = 0; j < n; j++) {
          if (j > 0) acc = fn(acc, data[base + j * stride]);
          o[outBase + j * strides[axis]!] = acc;
        }
        for (let j = others.length - 1; j >= 0; j--) {
          if (++idx[j] < arr.shape[others[j]!]!) break;
          idx[j] = 0;
        }
      });
      if (arr.shape.length === 1 && arr.plain) return out;
      return { data: out, shape: [...arr.shape], strides, offset: 0, dtype } satisfies NDArray;
    },

    async outer(a, b, options = {}) {
      const opA = toOperand(a, 'argument 1');
      const opB = toOperand(b, 'argument 2');
      const shapeB = opB.kind === 'scalar' ? [] : opB.shape;
      // a gets one broadcast (stride 0) axis per axis of b: shapes [...A, 1, …] and [...B] broadcast to [...A, ...B].
      const viewA =
        opA.kind === 'array'
          ? { data: opA.data, shape: [...opA.shape, ...shapeB.map(() => 1)], strides: [...opA.strides, ...shapeB.map(() => 0)], offset: opA.offset, dtype: opA.dtype }
          : a;
      const viewB = opB.kind === 'array' ? { data: opB.data, shape: opB.shape, strides: opB.strides, offset: opB.offset, dtype: opB.dtype } : b;
      const args = options.out === undefined ? [viewA, viewB] : [viewA, viewB, { out: options.out }];
      return runPrepared(prepareCall(def, args, await loadTarget(def.target)));
    },
  };

  /** A method checks its arguments, then runs the target's hook where it has one, else the default. */
  const method = <M extends keyof UfuncMethods>(name: M) =>
    (async (...args: unknown[]) => {
      binary();
      checkOptions(args[METHOD_OPTIONS[name].at], METHOD_OPTIONS[name].rules, `\`${name}\``);
      const target = loadTargetSync(def.target) ?? (await loadTarget(def.target));
      const fallback = () => (defaults[name] as (...a: unknown[]) => Promise<UfuncResult>)(...args);
      const hook = target.methods?.[name];
      return hook ? hook({ def, args, target, fallback }) : fallback();
    }) as UfuncMethods[M];
  return { reduce: method('reduce'), accumulate: method('accumulate'), outer: method('outer') };
}
