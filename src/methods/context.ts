/**
 * What the ufunc methods share for one ufunc (methods.ts): its fold kernels, compiled once per kind
 * and loop type; its loop type for a dtype; its starting values; the target's own folds; and the
 * argument helpers. Each method module takes this context.
 */
import { convertConstant } from '../compiler/constant-folding.js';
import type { TypedKernel } from '../compiler/ir.js';
import { TypedHelper } from '../compiler/lower.js';
import { drawsRandom } from '../compiler/random-stream.js';
import { DTYPES, type DType } from '../dtypes.js';
import { ArgumentError } from '../errors.js';
import { type ArrayOperand, type DeviceOperand, toOperand } from '../ndarray.js';
import { loadTarget, loadTargetSync } from '../targets/registry.js';
import type { FoldKernels, Target } from '../targets/target.js';
import type { UfuncDefinition } from '../ufunc.js';
import { plainFunction, storedValue, withCheckedTables } from '../plain-kernel.js';
import { arrayArgument, asArgument, checkOutShape, inDtype, maskRows, normaliseAxis, rowsView, unwrap } from './arguments.js';
import { ARRAY_NAMES, CHUNK, type FoldFactory, FOLDS, foldBody, type MethodKind } from './fold-kernels.js';
import type { ReduceOptions } from './types.js';

/**
 * A plain-JS ufunc's kernel as its fold kernels call it (`disableJit`): the function itself, its
 * result converted to the loop's type `t` (when given) as a compiled fold converts it. Its lookup
 * tables are the checked read-only views a call reads (a kernel given as text binds them here).
 */
function plainHelper(def: UfuncDefinition, t: DType | undefined): Function {
  const fn = plainFunction(withCheckedTables({ fn: def.fn, env: def.env, params: def.parsed.params }));
  if (t === undefined) return fn;
  const box = new DTYPES[t].arrayType(1) as unknown as unknown[];
  return (...args: unknown[]) => {
    box[0] = storedValue(t, fn(...args));
    return t === 'bool' ? box[0] !== 0 : box[0];
  };
}

/** The shared helpers of one ufunc's methods. */
export type MethodContext = ReturnType<typeof methodContext>;

/** The methods' shared helpers for a ufunc, with its fold kernels made by `guvectorize`. */
export function methodContext(def: UfuncDefinition, guvectorize: FoldFactory) {
  const scalarCore = def.layout.inputs.every((c) => c.length === 0) && def.layout.outputs.every((c) => c.length === 0);
  const slices = def.kind === 'guvectorize';
  const binary = (method: string) => {
    if (def.nin !== 2 || def.nout !== 1 || !scalarCore) {
      throw new ArgumentError(`\`${method}\` needs a ufunc of two inputs and one output without core dimensions (layout \`(),()->()\`); this one has layout \`${def.layout.text}\`.`);
    }
  };
  const folds = new Map<string, ReturnType<ReturnType<FoldFactory>>>();

  /** Loop types found, by input dtype, while the ufunc's loops are `loopsSeen` (each call of a method asks). */
  const loopTypes = new Map<DType, DType>();
  let loopsSeen = -1;
  /** The dtype T of the ufunc's loop `T(T, T)` that takes `dtype` inputs. */
  const loopType = (dtype: DType, method: string): DType => {
    if (loopsSeen !== def.loopCount) {
      loopTypes.clear();
      loopsSeen = def.loopCount;
    }
    const known = loopTypes.get(dtype);
    if (known !== undefined) return known;
    // The dtype said explicitly: a bool array's storage alone reads as uint8.
    const probe = toOperand({ data: new DTYPES[dtype].arrayType(0), shape: [0], dtype }, 'argument 1');
    const spec = def.select(def.nin === 1 ? [probe] : [probe, probe]);
    const types = def.operandTypes(spec.signature).map((t) => t.dtype);
    if (!types.every((t) => t === types[0])) {
      throw new ArgumentError(`\`${method}\` needs a signature whose inputs and result have one type; the one that accepts ${dtype} is \`${spec.signature.text}\`.`);
    }
    // (select may have compiled a lazy loop: the count is taken after it.)
    loopsSeen = def.loopCount;
    loopTypes.set(dtype, types[0]!);
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
          env: { ...def.env, f: def.disableJit ? plainHelper(def, slices ? undefined : t) : slices ? def.fn : new TypedHelper(def.fn, t) },
          // A plain-JS ufunc's folds are plain JS too, calling its kernel as it is.
          disableJit: def.disableJit,
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
   * the front, and the target gets the typed kernel (Target.associativeFolds). Found once per
   * target and dtype while the ufunc's loops stay the same (a reduce asks on every call).
   */
  const foldKernels = (target: Target): FoldKernels => {
    const found = new Map<DType, { kernel: TypedKernel; key: string } | undefined>();
    let seen = -1;
    return {
      name: def.parsed.name || 'ufunc',
      kernelFor(dtype) {
        if (seen !== def.loopCount) {
          found.clear();
          seen = def.loopCount;
        }
        if (found.has(dtype)) return found.get(dtype);
        const typed = associativeLoop(target, dtype);
        seen = def.loopCount;
        found.set(dtype, typed);
        return typed;
      },
    };
  };
  const associativeLoop = (target: Target, dtype: DType): { kernel: TypedKernel; key: string } | undefined => {
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
    const typed = def.kernelFor(spec, []);
    // A target's own folds have no random stream: such kernels fold through the fold kernels, which draw as calls do.
    return drawsRandom(typed.kernel) ? undefined : typed;
  };

  /** The target's own folds, with this ufunc's loops, per target (made once). */
  const targetFolds = new WeakMap<Target, (NonNullable<Target['associativeFolds']> & { kernels: FoldKernels }) | undefined>();
  /** The target's own folds of associative kernels over device arrays, if it has them, with the ufunc's loop. */
  const foldsOn = (target: Target) => {
    // A plain-JS ufunc (`disableJit`) has no typed kernel for them: its folds run as plain JS.
    if (def.disableJit) return undefined;
    if (!targetFolds.has(target)) targetFolds.set(target, target.associativeFolds && { ...target.associativeFolds, kernels: foldKernels(target) });
    return targetFolds.get(target);
  };
  /** (Without a Promise layer once the target is loaded: a reduce asks on every call.) */
  const foldsOfTarget = (): ReturnType<typeof foldsOn> | Promise<ReturnType<typeof foldsOn>> => {
    const target = loadTargetSync(def.target);
    return target ? foldsOn(target) : loadTarget(def.target).then(foldsOn);
  };


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

  return { def, scalarCore, slices, binary, loopType, scalarInputs, fold, arrayArgument, normaliseAxis, asArgument, unwrap, inDtype, identity, foldDtype, checkOutShape, asArray, foldKernels, foldsOfTarget, foldInChunks, rowsView, maskRows };
}
