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
import { convertConstant, TypedHelper } from './compiler/lower.js';
import { type DType, DTYPES, type TypedArray } from './dtypes.js';
import { ArgumentError } from './errors.js';
import { cOrderStrides, reachOf, sizeOf } from './layout.js';
import { type ArrayOperand, copyToContiguous, describe, type DeviceOperand, type NDArray, toOperand } from './ndarray.js';
import { forcedTypes } from './call-options.js';
import { checkOptions, type OptionRules, rule } from './options.js';
import { prepareCall } from './prepare-call.js';
import { runPrepared } from './run-call.js';
import type { UfuncDefinition, UfuncOptions } from './ufunc.js';
import { loadTarget, loadTargetSync } from './targets/registry.js';
import type { FoldKernels, Target } from './targets/target.js';

/** Options of `reduce`. */
export interface ReduceOptions {
  /** The axis or axes to fold; `null` folds every element. @default 0 */
  readonly axis?: number | readonly number[] | null;
  /** Keep the folded axes in the result, with size 1. @default false */
  readonly keepdims?: boolean;
  /** The value the fold starts from (and the result of an empty fold). @default none: the fold starts from the first element */
  readonly initial?: number | bigint | boolean;
  /** The older name of `initial`. */
  readonly identity?: number | bigint | boolean;
  /** A boolean mask broadcast to `x`'s shape: only elements where it is true are folded (needs `initial` or the ufunc's `identity`). */
  readonly where?: unknown;
  /** Where to write the result (its shape is the result's, with `keepdims` the kept axes too). */
  readonly out?: unknown;
  /** The dtype the fold is done in (NumPy's `dtype`): host arrays are converted to it first (unsafe casting, as NumPy's reductions); a DeviceArray must have it. @default x's dtype */
  readonly dtype?: DType | string;
}

/** Options of `accumulate` and `reduceat`. */
export interface AxisOptions {
  /** The axis to run along. @default 0 */
  readonly axis?: number;
  /** Where to write the result. */
  readonly out?: unknown;
  /** The dtype the fold is done in, as `reduce`'s. */
  readonly dtype?: DType | string;
}

export interface UfuncMethods {
  /** Folds `x` along axes: `f(…f(f(x₀, x₁), x₂)…)`. @example await add.reduce(xs) // sum */
  reduce(x: unknown, options?: ReduceOptions): Promise<UfuncResult>;
  /** The running fold, same shape as `x`. @example await add.accumulate(xs) // prefix sums */
  accumulate(x: unknown, options?: AxisOptions): Promise<UfuncResult>;
  /** `f(a[i…], b[j…])` for every pair: shape `[...a.shape, ...b.shape]`. */
  outer(a: unknown, b: unknown, options?: { readonly out?: unknown }): Promise<UfuncResult>;
  /**
   * Folds the slices `x[indices[i]:indices[i+1]]` along an axis (`x[indices[i]]` where the next index
   * is not larger; the last slice runs to the end), as NumPy's `reduceat`.
   * @example await add.reduceat(Float64Array.of(1, 2, 3, 4), Int32Array.of(0, 2)) // [3, 7]
   */
  reduceat(x: unknown, indices: ArrayLike<number>, options?: AxisOptions): Promise<UfuncResult>;
  /**
   * In place and unbuffered: `a[indices[k]] = f(a[indices[k]], b[k])` for k in order, so a repeated
   * index is applied each time (NumPy's `ufunc.at`). For an n-D `a`, `indices` is a tuple of n index
   * lists (a number or a one-element list stands for every k), as `np.add.at(a, (rows, cols), b)`;
   * `b` a scalar or a 1-D array of one value per index.
   * @example await add.at(counts, Int32Array.of(1, 1, 3), 1) // counts[1] += 2, counts[3] += 1
   * @example await add.at(image, [rows, cols], 1) // image[rows[k], cols[k]] += 1
   */
  at(a: unknown, indices: ArrayLike<number> | readonly (ArrayLike<number> | number)[], b?: unknown): Promise<void>;
}

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

/** Elements per chunk of an associative reduction (foldInChunks). */
const CHUNK = 4096;

type MethodKind = 'reduce' | 'reduceFrom' | 'reduceWhere' | 'accumulate' | 'reduceat' | 'at' | 'atUnary';

/** The layouts and argument lists of the fold kernels. */
const FOLDS: Record<MethodKind, { layout: string; params: readonly string[]; args: (t: string) => string }> = {
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
function foldBody(kind: MethodKind, slices: boolean, arrayType: string, local = false, scalarInputs = false): string {
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
const ARRAY_NAMES: Record<DType, string> = {
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

/** A ufunc's methods; `undefined` members where the ufunc is not binary. */
export function ufuncMethods(def: UfuncDefinition, guvectorize: FoldFactory): UfuncMethods {
  const scalarCore = def.layout.inputs.every((c) => c.length === 0) && def.layout.outputs.every((c) => c.length === 0);
  const slices = def.kind === 'guvectorize';
  const binary = (method: string) => {
    if (def.nin !== 2 || def.nout !== 1 || !scalarCore) {
      throw new ArgumentError(`\`${method}\` needs a ufunc of two inputs and one output without core dimensions (layout \`(),()->()\`); this one has layout \`${def.layout.text}\`.`);
    }
  };
  const folds = new Map<string, ReturnType<ReturnType<FoldFactory>>>();

  /** The dtype T of the ufunc's loop `T(T, T)` that takes `dtype` inputs. */
  const loopType = (dtype: DType, method: string): DType => {
    // The dtype said explicitly: a bool array's storage alone reads as uint8.
    const probe = toOperand({ data: new DTYPES[dtype].arrayType(0), shape: [0], dtype }, 'argument 1');
    const spec = def.select(def.nin === 1 ? [probe] : [probe, probe]);
    const types = def.operandTypes(spec.signature).map((t) => t.dtype);
    if (!types.every((t) => t === types[0])) {
      throw new ArgumentError(`\`${method}\` needs a signature whose inputs and result have one type; the one that accepts ${dtype} is \`${spec.signature.text}\`.`);
    }
    return types[0]!;
  };

  /** Whether the `(),()->()` kernel's loop for T takes its inputs as scalars (rather than one-element arrays). */
  const scalarInputs = (t: DType): boolean => {
    const probe = toOperand({ data: new DTYPES[t].arrayType(0), shape: [0], dtype: t }, 'argument 1');
    const spec = def.select(def.nin === 1 ? [probe] : [probe, probe]);
    return spec.signature.args.slice(0, def.nin).every((a) => a.kind === 'scalar');
  };

  /** The fold kernel of one kind for loop type T, compiled once. */
  const fold = (kind: MethodKind, t: DType) => {
    const key = `${kind}:${t}`;
    let g = folds.get(key);
    if (!g) {
      const spec = FOLDS[kind];
      const make = (local: boolean) => {
        const kernel = new Function(...spec.params, foldBody(kind, slices, ARRAY_NAMES[t]!, local, slices && scalarInputs(t)));
        Object.defineProperty(kernel, 'name', { value: `${def.parsed.name || 'ufunc'}_${kind}` });
        return guvectorize([`void(${spec.args(t)})`], spec.layout, {
          target: def.target,
          // A vectorize kernel's result is converted to the loop's type at every step, as a call's is
          // (NumPy's loops): `if (d === 0) return 0; return n / d;` folds in int64, not in doubles.
          env: { ...def.env, f: slices ? def.fn : new TypedHelper(def.fn, t) },
          // The fold kernels index inside their rows by construction; a (),()->() kernel indexes its own arrays.
          boundsCheck: slices && def.boundsCheck,
          ...(def.options.float64 ? { float64: def.options.float64 } : {}),
          ...(def.fastmath ? { fastmath: true } : {}),
        })(kernel);
      };
      try {
        g = make(true);
      } catch {
        g = make(false); // the kernel returns another type than the loop's: accumulate through out[0]
      }
      folds.set(key, g);
    }
    return g;
  };

  const arrayArgument = (x: unknown, what: string): ArrayOperand | DeviceOperand => {
    const op = toOperand(x, what);
    if (op.kind === 'scalar') throw new ArgumentError(`${what[0]!.toUpperCase()}${what.slice(1)} must be an array, found ${describe(x)}.`);
    return op;
  };

  const normaliseAxis = (axis: number, rank: number): number => {
    const a = axis < 0 ? axis + rank : axis;
    if (!Number.isInteger(axis) || a < 0 || a >= rank) throw new ArgumentError(`\`axis\` ${axis} is out of bounds for an array of ${rank} dimension${rank === 1 ? '' : 's'}.`);
    return a;
  };

  /** The argument as the caller's value (`original`), or a plain view object of it. */
  const asArgument = (op: ArrayOperand | DeviceOperand, shape: readonly number[], strides: readonly number[], offset = op.offset): unknown => {
    if (op.kind === 'device') return (op.array as unknown as { view(s: readonly number[], st: readonly number[], o: number): unknown }).view(shape, strides, offset);
    return { data: op.data, shape, strides, offset, dtype: op.dtype };
  };

  /** A 0-d host result as a JS value, as NumPy gives a scalar. */
  const unwrap = (r: unknown): unknown => {
    const nd = r as NDArray;
    if (nd && typeof nd === 'object' && 'data' in nd && Array.isArray(nd.shape) && nd.shape.length === 0) {
      const v = nd.data[nd.offset ?? 0]!;
      return nd.dtype === 'bool' ? v !== 0 : v;
    }
    return r;
  };

  /** `x` in the fold's `dtype` option: a converted copy of a host array (NumPy's reductions cast unsafely). */
  const inDtype = (op: ArrayOperand | DeviceOperand, dtype: unknown, method: string): ArrayOperand | DeviceOperand => {
    if (dtype === undefined || dtype === null) return op;
    const t = forcedTypes({ dtype: dtype as string }, 0, 1)![0]!;
    if (op.dtype === t) return op;
    if (op.kind === 'device') {
      throw new ArgumentError(`\`${method}\` with \`dtype: '${t}'\` of a ${op.dtype} DeviceArray: device arrays are not converted; pass a ${t} one, or leave \`dtype\` out.`);
    }
    const data = copyToContiguous(op, t);
    return { kind: 'array', data, dtype: t, shape: op.shape, strides: cOrderStrides(op.shape), offset: 0, plain: false, original: undefined };
  };

  /** The fold's starting value: `initial`, or the ufunc's identity converted to the loop's dtype T (NumPy's cast). */
  const identity = (options: ReduceOptions, t: DType) => {
    const given = options.initial ?? options.identity;
    if (given !== undefined) return given;
    const own = def.options.identity;
    return own === undefined || own === 'reorderable' ? undefined : t === 'bool' ? own !== 0 && own !== 0n && own !== false : convertConstant(own, t);
  };

  /**
   * NumPy folds in the dtype of a given `out` when no `dtype` is asked for (1,000 uint8 ones into a
   * uint16 `out` sum to 1,000): that dtype, where the ufunc has a loop for it and x is in host memory.
   */
  const foldDtype = (op: ArrayOperand | DeviceOperand, options: { readonly dtype?: unknown; readonly out?: unknown }): unknown => {
    if (options.dtype !== undefined && options.dtype !== null) return options.dtype;
    if (options.out === undefined || op.kind !== 'array') return undefined;
    const out = toOperand(options.out, '`out`');
    if (out.kind !== 'array' || out.dtype === op.dtype) return undefined;
    try {
      return loopType(out.dtype, 'reduce') === out.dtype ? out.dtype : undefined;
    } catch {
      return undefined; // no loop of that dtype: fold in x's, and cast into out
    }
  };

  /** Refuses an `out` whose shape is not the result's (NumPy does not broadcast into `out` of a method). */
  const checkOutShape = (out: unknown, expected: readonly number[], method: string, why: string) => {
    if (out === undefined) return;
    const o = arrayArgument(out, '`out`');
    // A 0-d result may go into one element of a 1-D array: a plain typed array cannot be 0-d.
    if (expected.length === 0 && o.shape.length === 1 && o.shape[0] === 1) return;
    if (o.shape.length !== expected.length || o.shape.some((s, d) => s !== expected[d])) {
      throw new ArgumentError(`\`out\` of \`${method}\` must have the result's shape [${expected.join(', ')}] (${why}), found shape [${o.shape.join(', ')}].`);
    }
  };

  /** A scalar argument as a 0-d array of the dtype a loop takes it in (NumPy: np.add.reduce(5) is 5). */
  const asArray = (x: unknown): unknown => {
    const op = toOperand(x, 'argument 1');
    if (op.kind !== 'scalar') return x;
    const spec = def.select(def.nin === 1 ? [op] : [op, op]);
    const t = def.operandTypes(spec.signature)[0]!.dtype;
    const data = new DTYPES[t].arrayType(1);
    (data as unknown as unknown[])[0] = t === 'bool' ? (op.value ? 1 : 0) : convertConstant(op.value, t);
    return { data, shape: [], dtype: t };
  };

  /**
   * The ufunc's associative loop `T(T, T)` for a target's own folds: signature dispatch stays in
   * the front, and the target gets the typed kernel (Target.associativeFolds).
   */
  const foldKernels = (target: Target): FoldKernels => ({
    name: def.parsed.name || 'ufunc',
    kernelFor(dtype) {
      if (!def.options.associative || def.nin !== 2 || def.nout !== 1) return undefined;
      if (def.kind === 'guvectorize' && def.layout.text.replace(/\s/g, '') !== '(),()->()') return undefined;
      const probe = toOperand({ data: new DTYPES[dtype].arrayType(0), shape: [0], dtype }, 'argument 1');
      let spec;
      try {
        spec = def.select([probe, probe], { casting: 'same_kind', canStore: target.canStore });
      } catch {
        return undefined;
      }
      if (!def.acceptedTypes(spec).every((t) => t.dtype === dtype)) return undefined;
      return def.kernelFor(spec, []);
    },
  });

  /** The target's own folds of associative kernels over device arrays, if it has them, with the ufunc's loop. */
  const foldsOfTarget = async () => {
    const target = loadTargetSync(def.target) ?? (await loadTarget(def.target));
    return target.associativeFolds && { ...target.associativeFolds, kernels: foldKernels(target) };
  };

  /** The shared default of each method, for targets that do not run it themselves. */
  const defaults: UfuncMethods = {
    async reduce(x, options = {}) {
      const given = arrayArgument(asArray(x), 'argument 1');
      const op = inDtype(given, foldDtype(given, options), 'reduce');
      const rank = op.shape.length;
      const rawAxes = options.axis === null ? [...op.shape.keys()] : Array.isArray(options.axis) ? options.axis : [options.axis ?? 0];
      // A 0-d array folds to its element over `axis` null, 0 or −1 (NumPy: np.sum(3, axis=0) is 3).
      if (rank === 0 && (options.axis === null || options.axis === undefined || options.axis === 0 || options.axis === -1)) return reduceScalar();
      const axes = (rawAxes as number[]).map((a) => normaliseAxis(a, rank));
      if (new Set(axes).size !== axes.length) throw new ArgumentError(`\`axis\` lists an axis twice: [${(rawAxes as number[]).join(', ')}].`);
      // NumPy: a ufunc without an identity (and not declared associative) is not reorderable, so it
      // folds over one axis at a time (np.subtract.reduce(x, axis=(0, 1)) is a ValueError).
      if (axes.length > 1 && !def.options.associative && def.options.identity === undefined) {
        // (`identity: 'reorderable'` declares it reorderable without a value, as Numba's.)
        throw new ArgumentError(
          `\`reduce\` over several axes ([${axes.join(', ')}]${options.axis === null ? ', from `axis: null`' : ''}) needs a reorderable ufunc, and this one has no \`identity\` and is not declared \`associative\` (NumPy: "reduction operation is not reorderable, so at most one axis may be specified"): reduce one axis at a time, or make the ufunc with \`identity\` or \`associative: true\` when its fold order does not matter.`,
        );
      }
      axes.sort((a, b) => a - b);
      const kept = [...op.shape.keys()].filter((d) => !axes.includes(d));
      const n = sizeOf(axes.map((d) => op.shape[d]!));
      const t = loopType(op.dtype, 'reduce');
      const start = identity(options, t);
      const hasWhere = options.where !== undefined && options.where !== true;
      if (start === undefined && (n === 0 || hasWhere)) {
        throw new ArgumentError(
          hasWhere
            ? '`reduce` with `where` needs a starting value for folds the mask leaves empty: pass `initial`, or give the ufunc an `identity`.'
            : `Cannot reduce an empty axis (zero-size reduction over axes [${axes.join(', ')}] of shape [${op.shape.join(', ')}]) without a starting value: pass \`initial\`, or give the ufunc an \`identity\`, as NumPy requires.`,
        );
      }
      // View x as [...kept, n]: the folded axes last, merged into one (copied where they cannot be).
      const rows = rowsView(op, kept, axes);
      const keptShape = kept.map((d) => op.shape[d]!);
      const outShapeKeep = op.shape.map((s, d) => (axes.includes(d) ? 1 : s));
      let outArg: unknown;
      checkOutShape(options.out, options.keepdims ? outShapeKeep : keptShape, 'reduce', options.keepdims ? 'the folded axes kept as size 1' : 'x\'s shape without the folded axes');
      if (options.out !== undefined) {
        const o = arrayArgument(options.out, '`out`');
        const squeeze = options.keepdims ? o.shape.length === rank : false;
        outArg = squeeze ? asArgument(o, keptShape, o.strides.filter((_, d) => !axes.includes(d))) : options.out;
      }
      let result: unknown;
      const explicitStart = options.initial ?? options.identity;
      // The target's own fold (the gpu's tree) of an associative kernel: host or device arrays, a
      // `where` mask (from the start value, as the fold kernels do) and an `out` on the device.
      let tree: unknown;
      if (def.options.associative && n > 0) {
        const folds = await foldsOfTarget();
        const outOp = outArg === undefined ? undefined : toOperand(outArg, '`out`');
        if (folds && (outOp === undefined || outOp.kind === 'device')) {
          const mask = hasWhere ? toOperand(maskRows(options.where, op.shape, kept, axes), '`where`') : undefined;
          const rowsOp = toOperand(rows, 'argument 1') as ArrayOperand | DeviceOperand;
          tree = await folds.reduce(folds.kernels, rowsOp, hasWhere ? start : explicitStart, { mask: mask as ArrayOperand | DeviceOperand | undefined, out: outOp as DeviceOperand | undefined });
        }
      }
      if (tree) {
        result = tree;
      } else if (def.options.associative && !hasWhere && n >= 2 * CHUNK) {
        result = await foldInChunks(rows, n, t, explicitStart, outArg);
      } else if (hasWhere) {
        const mask = maskRows(options.where, op.shape, kept, axes);
        result = await fold('reduceWhere', t)(rows, mask, start!, ...(outArg ? [outArg] : []));
      } else if (explicitStart !== undefined) {
        result = await fold('reduceFrom', t)(rows, start, ...(outArg ? [outArg] : []));
      } else if (n === 0) {
        result = await fold('reduceFrom', t)(rows, start!, ...(outArg ? [outArg] : []));
      } else {
        result = await fold('reduce', t)(rows, ...(outArg ? [outArg] : []));
      }
      if (options.out !== undefined) return options.out;
      if (options.keepdims) return reshapeResult(result, outShapeKeep);
      return unwrap(result);

      async function reduceScalar() {
        return unwrap(await fold('reduce', loopType(op.dtype, 'reduce'))(asArgument(op, [1], [0])));
      }
    },

    async accumulate(x, options = {}) {
      const given = arrayArgument(x, 'argument 1');
      const op = inDtype(given, foldDtype(given, options), 'accumulate');
      if (op !== given) x = given.kind === 'array' && given.plain ? (op as ArrayOperand).data : asArgument(op, op.shape, op.strides);
      if (op.shape.length === 0) throw new ArgumentError('`accumulate` needs an array of at least one dimension, found a 0-d array.');
      const axis = normaliseAxis(options.axis ?? 0, op.shape.length);
      checkOutShape(options.out, op.shape, 'accumulate', 'x\'s');
      const t = loopType(op.dtype, 'accumulate');
      const outOp = options.out === undefined ? undefined : toOperand(options.out, '`out`');
      if (def.options.associative && (outOp === undefined || outOp.kind === 'device')) {
        const own = await foldsOfTarget();
        const tree = await own?.accumulate(own.kernels, op, axis, outOp as DeviceOperand | undefined);
        if (tree) {
          if (outOp) return options.out as unknown as UfuncResult;
          // A 1-D typed array in, a typed array out (as the fold kernels give it).
          const plainRow = op.kind === 'array' && op.shape.length === 1 && ArrayBuffer.isView(x);
          return (plainRow ? (tree as NDArray).data : tree) as unknown as UfuncResult;
        }
      }
      // The last axis is the core axis anyway; leaving `axis` out then keeps a 1-D typed array a typed array.
      const where = axis === op.shape.length - 1 ? {} : { axis };
      const call = options.out === undefined ? [where] : [{ ...where, out: options.out }];
      return fold('accumulate', t)(x, ...call);
    },

    async outer(a, b, options = {}) {
      const opA = toOperand(a, 'argument 1');
      const opB = toOperand(b, 'argument 2');
      const shapeB = opB.kind === 'scalar' ? [] : opB.shape;
      // a gets one broadcast (stride 0) axis per axis of b: shapes [...A, 1, …] and [...B] broadcast to [...A, ...B].
      const viewA = opA.kind === 'scalar' ? a : asArgument(opA, [...opA.shape, ...shapeB.map(() => 1)], [...opA.strides, ...shapeB.map(() => 0)]);
      const args = options.out === undefined ? [viewA, b] : [viewA, b, { out: options.out }];
      return runPrepared(prepareCall(def, args, await loadTarget(def.target)));
    },

    async reduceat(x, indices, options = {}) {
      const given = arrayArgument(x, 'argument 1');
      const op = inDtype(given, foldDtype(given, options), 'reduceat');
      if (op !== given) x = given.kind === 'array' && given.plain ? (op as ArrayOperand).data : asArgument(op, op.shape, op.strides);
      // Slices are folded out of order of their positions (indices may go back), so an `out` that
      // shares memory with x, even as the same view, would be read after being written: NumPy's
      // rule copies x first.
      if (op === given && op.kind === 'array' && options.out !== undefined) {
        const o = toOperand(options.out, '`out`');
        if (o.kind === 'array' && o.data.buffer === op.data.buffer) {
          const data = copyToContiguous(op, op.dtype);
          x = { data, shape: op.shape, strides: cOrderStrides(op.shape), offset: 0, dtype: op.dtype };
        }
      }
      if (op.shape.length === 0) throw new ArgumentError('`reduceat` needs an array of at least one dimension, found a 0-d array.');
      const axis = normaliseAxis(options.axis ?? 0, op.shape.length);
      const n = op.shape[axis]!;
      const starts = Int32Array.from(indexList(indices, 'indices'), (v, k) => {
        if (v < 0 || v >= n) throw new ArgumentError(`\`indices[${k}]\` is ${v}, out of bounds for axis ${axis} of length ${n} (reduceat takes indices 0 … ${n - 1}).`);
        return v;
      });
      checkOutShape(options.out, op.shape.map((s, d) => (d === axis ? starts.length : s)), 'reduceat', `x's, with axis ${axis} as long as \`indices\``);
      const t = loopType(op.dtype, 'reduceat');
      const placed = axis === op.shape.length - 1 ? {} : { axes: [[axis], [0], [axis]] };
      return fold('reduceat', t)(x, starts, options.out === undefined ? placed : { ...placed, out: options.out });
    },

    async at(a, indices, b) {
      const unary = def.nin === 1;
      const op = arrayArgument(a, 'argument 1');
      const rank = op.shape.length;
      // Element k is updated at offset Σ_d index_d[k]·stride_d: the kernel sees the span of memory the
      // array covers as one 1-D array and these offsets into it. A 0-d array has one element, indexed
      // by the empty tuple (NumPy's `np.add.at(a, (), b)`).
      if (rank === 0 && !(Array.isArray(indices) && indices.length === 0)) {
        throw new ArgumentError(`\`indices\` of \`at\` on a 0-d array must be the empty tuple \`[]\` (NumPy's \`()\`), found ${describe(indices)}.`);
      }
      const tuple = rank === 0 ? [] : indexTuple(indices, op.shape);
      if (sizeOf(op.shape) === 0) return; // no index is in bounds, so there were none
      const { low, high } = reachOf(op.shape, op.strides, op.offset)!;
      const idx = new Int32Array(rank === 0 ? 1 : tuple[0]!.length);
      for (let k = 0; k < idx.length; k++) {
        let at = op.offset - low;
        for (let d = 0; d < rank; d++) at += tuple[d]![k]! * op.strides[d]!;
        idx[k] = at;
      }
      a = asArgument(op, [high - low + 1], [1], low);
      const t = loopType(op.dtype, 'at');
      if (op.dtype !== t) throw new ArgumentError(`\`at\` writes argument 1 in place, so it must have the loop's dtype ${t}; found ${op.dtype}.`);
      if (unary) {
        if (b !== undefined) throw new ArgumentError('`at` of a one-input ufunc takes no `b`.');
        await fold('atUnary', t)(idx, a);
        return;
      }
      if (b === undefined) throw new ArgumentError('`at` of a two-input ufunc needs `b`: a scalar, or an array as long as `indices`.');
      let values: unknown = b;
      const opB = toOperand(b, 'argument 3');
      if (opB.kind === 'scalar') {
        const data = new DTYPES[t].arrayType(idx.length);
        (data as unknown as unknown[]).fill(t === 'bool' ? (opB.value ? 1 : 0) : convertConstant(opB.value, t));
        values = data;
      } else if (opB.shape.length !== 1 || opB.shape[0] !== idx.length) {
        throw new ArgumentError(`\`b\` must be a scalar or a 1-D array as long as \`indices\` (${idx.length}), found shape [${opB.shape.join(', ')}].`);
      }
      await fold('at', t)(idx, values, a);
    },
  };

  /** A method checks its arguments, then runs the target's hook where it has one, else the default. */
  const method = <M extends keyof UfuncMethods>(name: M) =>
    (async (...args: unknown[]) => {
      if (!(name === 'at' && def.nin === 1 && def.nout === 1 && scalarCore)) binary(name);
      const options = METHOD_OPTIONS[name];
      if (options) checkOptions(args[options.at], options.rules, `\`${name}\``);
      const target = loadTargetSync(def.target) ?? (await loadTarget(def.target));
      const fallback = () => (defaults[name] as (...a: unknown[]) => Promise<UfuncResult>)(...args);
      const hook = target.methods?.[name];
      return hook ? hook({ args, target, fallback }) : fallback();
    }) as UfuncMethods[M];
  return { reduce: method('reduce'), accumulate: method('accumulate'), outer: method('outer'), reduceat: method('reduceat'), at: method('at') };

  /**
   * An associative fold of rows of length n ≥ 2·CHUNK in two stages: each chunk folds to a partial
   * result (in parallel: chunks are loop iterations of the fold kernel), the partials fold in order,
   * then the n mod CHUNK elements left over. Chunk j covers elements j·CHUNK … (j+1)·CHUNK−1 on
   * every target (so cpu, parallel and gpu agree bit for bit, and only associativity is used: a
   * chunk of interleaved elements would also need commutativity). The order depends only on n,
   * never on the number of workers.
   */
  async function foldInChunks(rows: unknown, n: number, t: DType, start: number | bigint | boolean | undefined, outArg: unknown): Promise<unknown> {
    const op = toOperand(rows, 'argument 1') as ArrayOperand | DeviceOperand;
    const rank = op.shape.length;
    const keptShape = op.shape.slice(0, rank - 1);
    const keptStrides = op.strides.slice(0, rank - 1);
    const s = op.strides[rank - 1]!;
    const c = Math.floor(n / CHUNK);
    const chunks = asArgument(op, [...keptShape, c, CHUNK], [...keptStrides, CHUNK * s, s]);
    const partial = await fold('reduce', t)(chunks);
    const tail = n - c * CHUNK;
    const last = (args: unknown[]) => (outArg ? [...args, outArg] : args);
    const folded = start === undefined
      ? await fold('reduce', t)(...(tail ? [partial] : last([partial])))
      : await fold('reduceFrom', t)(...(tail ? [partial, start] : last([partial, start])));
    if (!tail) return folded;
    const rest = asArgument(op, [...keptShape, tail], [...keptStrides, s], op.offset + c * CHUNK * s);
    return fold('reduceFrom', t)(...last([rest, folded]));
  }

  /** x viewed as [...kept axes, n] with the folded axes merged into the last. */
  function rowsView(op: ArrayOperand | DeviceOperand, kept: number[], axes: number[]): unknown {
    const keptShape = kept.map((d) => op.shape[d]!);
    const keptStrides = kept.map((d) => op.strides[d]!);
    const n = sizeOf(axes.map((d) => op.shape[d]!));
    // The folded axes merge when each steps over the whole of the next one (C order among them).
    const live = axes.filter((d) => op.shape[d] !== 1);
    const mergeable = live.every((d, k) => k === live.length - 1 || op.strides[d] === op.strides[live[k + 1]!]! * op.shape[live[k + 1]!]!);
    if (mergeable) {
      const stride = live.length ? op.strides[live[live.length - 1]!]! : 1;
      return asArgument(op, [...keptShape, n], [...keptStrides, stride]);
    }
    if (op.kind === 'device') {
      throw new ArgumentError(`\`reduce\` over axes [${axes.join(', ')}] of this DeviceArray (strides [${op.strides.join(', ')}]) needs them to merge into one; reduce one axis at a time.`);
    }
    const perm = [...kept, ...axes];
    const permuted: ArrayOperand = { ...op, shape: perm.map((d) => op.shape[d]!), strides: perm.map((d) => op.strides[d]!) };
    const data = copyToContiguous(permuted, op.dtype);
    const shape = [...keptShape, n];
    return { data, shape, strides: cOrderStrides(shape), offset: 0, dtype: op.dtype };
  }

  /** The `where` mask broadcast to x's shape and laid out as `rowsView` lays out x (a host bool array). */
  function maskRows(where: unknown, shape: readonly number[], kept: number[], axes: number[]): unknown {
    const w = toOperand(where, '`where`');
    if (w.kind === 'scalar') {
      if (typeof w.value !== 'boolean') throw new ArgumentError(`\`where\` must be a boolean mask, found ${describe(where)}.`);
      const data = new Uint8Array(sizeOf(shape)).fill(w.value ? 1 : 0);
      return { data, shape: [...kept.map((d) => shape[d]!), sizeOf(axes.map((d) => shape[d]!))], dtype: 'bool' };
    }
    if (w.kind === 'device' || !(w.dtype === 'bool' || w.dtype === 'uint8')) {
      throw new ArgumentError(`\`where\` must be a boolean mask in host memory ({ data: Uint8Array, dtype: 'bool' } or a Uint8Array), found ${w.kind === 'device' ? 'a DeviceArray' : `an array of ${w.dtype}`}.`);
    }
    if (w.shape.length > shape.length || w.shape.some((s, d) => s !== 1 && s !== shape[shape.length - w.shape.length + d])) {
      throw new ArgumentError(`\`where\` of shape [${w.shape.join(', ')}] does not broadcast to the array's shape [${shape.join(', ')}].`);
    }
    // Broadcast (stride 0 on new and size-1 axes), then gather in rows order.
    const lead = shape.length - w.shape.length;
    const strides = shape.map((_, d) => (d < lead || w.shape[d - lead] === 1 ? 0 : w.strides[d - lead]!));
    const perm = [...kept, ...axes];
    const view: ArrayOperand = { ...w, dtype: 'uint8', shape: perm.map((d) => shape[d]!), strides: perm.map((d) => strides[d]!) };
    const data = copyToContiguous(view, 'uint8') as Uint8Array;
    return { data, shape: [...kept.map((d) => shape[d]!), sizeOf(axes.map((d) => shape[d]!))], dtype: 'bool' };
  }
}

/** A result given the shape with the folded axes kept as size 1 (a view of the same data). */
function reshapeResult(result: unknown, shape: number[]): unknown {
  if (result && typeof result === 'object' && (result as { kind?: unknown }).kind === 'device') {
    return (result as { view(s: number[]): unknown }).view(shape);
  }
  const data = ArrayBuffer.isView(result) ? (result as TypedArray) : (result as NDArray).data;
  const dtype = ArrayBuffer.isView(result) ? undefined : (result as NDArray).dtype;
  const nd: NDArray = { data, shape, strides: cOrderStrides(shape), offset: ArrayBuffer.isView(result) ? 0 : ((result as NDArray).offset ?? 0), dtype: dtype ?? (toOperand(data, 'result') as ArrayOperand).dtype, order: 'row-major' };
  return nd;
}

/**
 * `at`'s indices as one list per dimension, negative ones counted from the end and each checked:
 * for a 1-D array a list of integers (or a one-element tuple of one); for n-D a tuple of n lists
 * (NumPy's `np.add.at(a, (rows, cols), b)`), each an integer list or one integer for every element
 * (lists of one element broadcast too).
 */
function indexTuple(indices: unknown, shape: readonly number[]): number[][] {
  const rank = shape.length;
  const isList = (x: unknown) => x !== null && typeof x === 'object' && typeof (x as ArrayLike<unknown>).length === 'number';
  const nested = isList(indices) && (indices as ArrayLike<unknown>).length > 0 && Array.from(indices as ArrayLike<unknown>).some(isList);
  let parts: unknown[];
  if (rank === 1 && !nested) parts = [indices];
  else {
    if (!Array.isArray(indices) || indices.length !== rank) {
      throw new ArgumentError(`\`indices\` of \`at\` on an array of ${rank} dimensions must be a tuple of ${rank} index lists (one per dimension, as NumPy's \`np.add.at(a, (rows, cols), b)\`), found ${describe(indices)}.`);
    }
    parts = indices;
  }
  const lists = parts.map((p, d) => (typeof p === 'number' ? [p] : indexList(p as ArrayLike<number>, rank === 1 ? 'indices' : `indices[${d}]`)));
  const length = Math.max(...lists.map((l) => l.length));
  return lists.map((l, d) => {
    if (l.length !== length && l.length !== 1) {
      throw new ArgumentError(`The index lists of \`at\` must have one length (or length 1): \`indices[${d}]\` has ${l.length}, another ${length}.`);
    }
    const n = shape[d]!;
    return Array.from({ length }, (_, k) => {
      const v = l.length === 1 ? l[0]! : l[k]!;
      const j = v < 0 ? v + n : v;
      if (j < 0 || j >= n) {
        const where = rank === 1 ? `\`indices[${l.length === 1 ? 0 : k}]\`` : `\`indices[${d}][${l.length === 1 ? 0 : k}]\``;
        throw new ArgumentError(`${where} is ${v}, out of bounds for ${rank === 1 ? 'an array' : `axis ${d}`} of length ${n}.`);
      }
      return j;
    });
  });
}

function indexList(indices: ArrayLike<number>, what: string): number[] {
  // A 1-D ndarray-like ({ data, shape }) stands for its elements, as NumPy takes an index array.
  if (indices !== null && typeof indices === 'object' && 'data' in indices && 'shape' in indices) {
    const op = toOperand(indices, `\`${what}\``);
    if (op.kind !== 'array' || op.shape.length !== 1) {
      throw new ArgumentError(`\`${what}\` must be a 1-D array of integers, found ${op.kind === 'array' ? `shape [${op.shape.join(', ')}]` : describe(indices)}.`);
    }
    return indexList(copyToContiguous(op, op.dtype) as unknown as ArrayLike<number>, what);
  }
  if (indices === null || typeof indices !== 'object' || typeof (indices as ArrayLike<number>).length !== 'number') {
    throw new ArgumentError(`\`${what}\` must be an array of integers, found ${describe(indices)}.`);
  }
  const list = Array.from(indices, Number);
  const bad = list.findIndex((v) => !Number.isInteger(v));
  if (bad >= 0) throw new ArgumentError(`\`${what}[${bad}]\` must be an integer, found ${String(indices[bad])}.`);
  return list;
}
