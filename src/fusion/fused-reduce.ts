/**
 * A trailing `reduce` folded inside the fused kernel. `add.reduce(saxpy(a, x, y), { axis })`
 * becomes the reduce's own fold kernel (methods/fold-kernels.ts: `(n)->()`, from `initial`, or
 * under a `where` mask) with the fused element-wise kernel computed where the fold reads each
 * element (fusion around a gufunc, around-gufunc.ts) — one pass over the arrays, no intermediate.
 *
 * The fold runs over the same rows, in the same order, as the separate `reduce` on cpu and
 * parallel (methods.md): every array of the element-wise part is viewed as the intermediate
 * result would have been — broadcast to its shape, the folded axes moved last and merged — so a
 * row is folded sequentially, or, for an associative ufunc and rows of n ≥ 2·4096 elements, in
 * chunks of 4096 whose partials (one fused kernel, chunks spread over workers or gpu threads) fold
 * in order, then the elements left over (a second fused kernel). On the gpu this is the fold
 * kernels' order, not the tree the separate call takes for device arrays: the result is within
 * the bounds methods.md gives for either.
 *
 * What the separate reduce would refuse or treat otherwise (a bad axis, an empty fold without a
 * start, a `dtype` the fold would convert twice, axes that do not merge) is not folded here: the
 * reduce then runs as a second call over the fused result, which reports errors as it does.
 */
import { definitionOf, type Ufunc } from '../callable.js';
import { broadcastShapes } from '../broadcast.js';
import type { CallOptions } from '../call-options.js';
import { forcedTypes } from '../call-options.js';
import type { DType } from '../dtypes.js';
import { sizeOf } from '../layout.js';
import { methodContextOf } from '../methods.js';
import { CHUNK } from '../methods/fold-kernels.js';
import { reshapeResult } from '../methods/reduce.js';
import type { ReduceOptions } from '../methods/types.js';
import { type ArrayOperand, type DeviceOperand, toOperand } from '../ndarray.js';
import type { Target } from '../targets/target.js';
import { fusedGufunc } from './around-gufunc.js';
import { argumentsOf, type FusedChain, planChain, traceKey } from './plan.js';
import { Trace, type TracedCall } from './trace.js';

type MethodContext = NonNullable<ReturnType<typeof methodContextOf>>;

/** How a trailing reduce runs for one call: folded in the fused kernel, or as a second call (and why). */
export type ReducePlan =
  | {
      readonly kind: 'fold';
      readonly how: string;
      readonly run: () => Promise<unknown>;
      /** What the target says of the fused fold kernel that does the work (the first one, where the fold runs as two): its engine line. */
      readonly explain: () => string;
    }
  | { readonly kind: 'second-call'; readonly reason: string };

/** The fused element-wise part a reduce folds: its ufunc, plan, result dtype, and this call's trace and arguments. */
export interface ReducedChain {
  readonly ufunc: Ufunc;
  readonly chain: FusedChain;
  readonly resultDtype: DType;
  readonly calls: readonly TracedCall[];
  readonly args: readonly unknown[];
  /** The fused call's options (they go to the reduce, as to the last call). */
  readonly options: CallOptions;
  readonly target: Target;
}

/** Compiled fused folds, by the fused element-wise ufunc and the fold's trace key. */
const folds = new WeakMap<Ufunc, Map<string, { chain: FusedChain; ufunc: Ufunc }>>();

/**
 * Plans the trailing reduce of a fused chain for one call.
 *
 * @param r - the element-wise part and the call
 * @returns the fold to run, or why the reduce runs as a second call over the fused result
 */
export function planReduce(r: ReducedChain): ReducePlan {
  const reduce = r.calls[r.chain.reduce!]!;
  const second = (reason: string): ReducePlan => ({ kind: 'second-call', reason });
  const c = methodContextOf(reduce.def);
  if (!c || reduce.def.disableJit) return second(`${reduce.what} has no compiled fold kernels`);
  if (r.chain.around) return second(`${reduce.what} reduces the result of a guvectorize call`);
  const options = { ...((reduce.args[1] as ReduceOptions | undefined) ?? {}), ...r.options } as ReduceOptions;
  const kernelArgs = argumentsOf(r.chain, r.calls, r.args);
  const ops = kernelArgs.map((a, k) => (r.chain.sources[k]!.kind === 'scalar' ? undefined : (toOperand(a, `argument ${k + 1}`) as ArrayOperand | DeviceOperand)));
  let shape: number[];
  try {
    shape = broadcastShapes(ops.flatMap((op) => (op ? [op.shape] : [])));
  } catch {
    return second('the arrays do not broadcast (the separate calls say how)');
  }
  const rank = shape.length;
  if (rank === 0) return second('the element-wise result is 0-d');
  const rawAxes = options.axis === null ? [...shape.keys()] : Array.isArray(options.axis) ? options.axis : [options.axis ?? 0];
  const axes = (rawAxes as number[]).map((a) => (a < 0 ? a + rank : a));
  if (axes.some((a, k) => !Number.isInteger(a) || a < 0 || a >= rank || axes.indexOf(a) !== k)) return second('its `axis` is not valid for the result (the reduce says why)');
  const reorderable = reduce.def.options.associative || reduce.def.options.identity !== undefined;
  if (axes.length > 1 && !reorderable) return second('it folds several axes of a ufunc that is not reorderable (the reduce refuses it)');
  axes.sort((a, b) => a - b);
  const anyDevice = ops.some((op) => op?.kind === 'device');
  const t = loopTypeOf(c, r.resultDtype, anyDevice, options);
  if (typeof t !== 'string') return second(t.reason);
  const start = c.identity(options, t);
  const hasWhere = options.where !== undefined && options.where !== true;
  const kept = [...shape.keys()].filter((d) => !axes.includes(d));
  const n = sizeOf(axes.map((d) => shape[d]!));
  if (n === 0 || (hasWhere && start === undefined)) return second('the fold is empty or masked without a starting value (the reduce says what it needs)');
  const keptShape = kept.map((d) => shape[d]!);
  const outShapeKeep = shape.map((s, d) => (axes.includes(d) ? 1 : s));
  let outArg: unknown;
  try {
    c.checkOutShape(options.out, options.keepdims ? outShapeKeep : keptShape, 'reduce', '');
    if (options.out !== undefined) {
      const o = c.arrayArgument(options.out, '`out`');
      outArg = options.keepdims && o.shape.length === rank ? c.asArgument(o, keptShape, o.strides.filter((_, d) => !axes.includes(d))) : options.out;
    }
  } catch {
    return second('its `out` does not have the result’s shape (the reduce says so)');
  }
  // Each array as the intermediate result's rows: broadcast to its shape, folded axes last and merged.
  const rows: ({ op: ArrayOperand | DeviceOperand; strides: number[]; stride: number } | undefined)[] = [];
  for (const op of ops) {
    if (!op) {
      rows.push(undefined);
      continue;
    }
    const lead = rank - op.shape.length;
    const strides = shape.map((_, d) => (d < lead || op.shape[d - lead] === 1 ? 0 : op.strides[d - lead]!));
    const live = axes.filter((d) => shape[d] !== 1);
    if (!live.every((d, k) => k === live.length - 1 || strides[d] === strides[live[k + 1]!]! * shape[live[k + 1]!]!)) {
      return second(`an array of the element-wise part cannot be viewed with the folded axes [${axes.join(', ')}] merged into one`);
    }
    rows.push({ op, strides: kept.map((d) => strides[d]!), stride: live.length ? strides[live[live.length - 1]!]! : 1 });
  }
  const view = (extra: { shape: number[]; strides: (s: number) => number[]; offset: (s: number) => number }) =>
    kernelArgs.map((a, k) => {
      const row = rows[k];
      return row ? c.asArgument(row.op, [...keptShape, ...extra.shape], [...row.strides, ...extra.strides(row.stride)], row.op.offset + extra.offset(row.stride)) : a;
    });
  const whole = { shape: [n], strides: (s: number) => [s], offset: () => 0 };
  const fold = (kind: FoldKind, args: unknown[], extra: unknown[], out: unknown) => {
    const { ufunc, kernelArgs: foldArgs } = fusedFold(r, c, kind, t, args, extra);
    return ufunc(...foldArgs, ...(out === undefined ? [] : [{ out }]));
  };
  const explainFold = (kind: FoldKind, args: unknown[], extra: unknown[], out: unknown) => () => {
    const { ufunc, kernelArgs: foldArgs } = fusedFold(r, c, kind, t, args, extra);
    return ufunc.explain(...foldArgs, ...(out === undefined ? [] : [{ out }]));
  };
  const finish = (result: unknown) => (options.out !== undefined ? options.out : options.keepdims ? reshapeResult(result, outShapeKeep) : c.unwrap(result));
  const order = `over axis ${axes.length === 1 ? axes[0] : `[${axes.join(', ')}]`} of shape [${shape.join(', ')}]`;

  if (reduce.def.options.associative && !hasWhere && n >= 2 * CHUNK) {
    const chunks = Math.floor(n / CHUNK);
    const tail = n - chunks * CHUNK;
    const explicitStart = options.initial ?? options.identity;
    const partialArgs = () => view({ shape: [chunks, CHUNK], strides: (s) => [CHUNK * s, s], offset: () => 0 });
    return {
      kind: 'fold',
      explain: () => explainFold('reduce', partialArgs(), [], undefined)(),
      how: `${order}, in chunks of ${CHUNK} (${chunks} partials per row, folded in the kernel) whose partials fold in order${tail ? `, then the ${tail} elements left over (a second fused kernel)` : ''}, as the separate reduce does`,
      run: async () => {
        const partials = await fold('reduce', partialArgs(), [], undefined);
        const last = (xs: unknown[]) => (tail || !outArg ? xs : [...xs, outArg]);
        const folded = explicitStart === undefined
          ? await c.fold('reduce', t)(...last([partials]))
          : await c.fold('reduceFrom', t)(...last([partials, start]));
        if (!tail) return finish(folded);
        return finish(await fold('reduceFrom', view({ shape: [tail], strides: (s) => [s], offset: (s) => chunks * CHUNK * s }), [folded], outArg));
      },
    };
  }
  if (hasWhere) {
    let mask: unknown;
    try {
      mask = c.maskRows(options.where, shape, kept, axes);
    } catch {
      return second('its `where` is not a mask of the result’s shape (the reduce says why)');
    }
    return {
      kind: 'fold',
      how: `${order}, masked by \`where\`, from ${String(start)}, in order`,
      run: async () => finish(await fold('reduceWhere', view(whole), [mask, start], outArg)),
      explain: explainFold('reduceWhere', view(whole), [mask, start], outArg),
    };
  }
  const explicitStart = options.initial ?? options.identity;
  if (explicitStart !== undefined) {
    return { kind: 'fold', how: `${order}, from ${String(start)}, in order`, run: async () => finish(await fold('reduceFrom', view(whole), [start], outArg)), explain: explainFold('reduceFrom', view(whole), [start], outArg) };
  }
  return { kind: 'fold', how: `${order}, in order`, run: async () => finish(await fold('reduce', view(whole), [], outArg)), explain: explainFold('reduce', view(whole), [], outArg) };
}

/**
 * The fold's loop type T, as the separate reduce picks it (its `dtype`, an `out`'s dtype, or the
 * element-wise result's), when one conversion of the element-wise result gives the separate
 * reduce's input; else why not.
 */
function loopTypeOf(c: MethodContext, resultDtype: DType, device: boolean, options: ReduceOptions): DType | { reason: string } {
  try {
    const asked = c.foldDtype({ kind: device ? 'device' : 'array', dtype: resultDtype } as ArrayOperand, options);
    const t0 = asked === undefined ? resultDtype : forcedTypes({ dtype: asked as string }, 0, 1)![0]!;
    if (device && t0 !== resultDtype) return { reason: 'its `dtype` asks to convert a DeviceArray (the reduce refuses it)' };
    const t = c.loopType(t0, 'reduce');
    if (t0 !== resultDtype && t0 !== t) return { reason: `it folds in ${t} after converting to ${t0}: two conversions, which the fused kernel does not make` };
    return t;
  } catch {
    return { reason: 'the reduce has no loop for the result’s dtype (it says so)' };
  }
}

type FoldKind = 'reduce' | 'reduceFrom' | 'reduceWhere';

/**
 * One fold kernel with the fused element-wise kernel computed where it reads, and the arguments to
 * call it with: traces the element-wise ufunc on the viewed arguments and the fold after it, and
 * plans that as a chain around the fold kernel (cached by its trace key).
 */
function fusedFold(r: ReducedChain, c: MethodContext, kind: FoldKind, t: DType, args: readonly unknown[], extra: readonly unknown[]): { ufunc: Ufunc; kernelArgs: unknown[] } {
  const foldUfunc = c.fold(kind, t);
  const trace = new Trace(args.map((_, k) => r.chain.sources[k]!.kind !== 'scalar'));
  const notSeparately = () => Promise.reject(new Error('internal: a fused fold does not run its calls separately'));
  const elementwise = trace.record(definitionOf(r.ufunc)!, 'call', args.map((a, k) => trace.inputs[k] ?? a), notSeparately);
  const result = trace.record(definitionOf(foldUfunc)!, 'call', [elementwise, ...extra], notSeparately);
  const key = `${r.target.name}|${traceKey(trace.calls, result, args, {})}`;
  let byKey = folds.get(r.ufunc);
  if (!byKey) folds.set(r.ufunc, (byKey = new Map()));
  let entry = byKey.get(key);
  if (!entry) {
    const chain = planChain(trace.calls, result, args, {}, r.target);
    if (chain.kind === 'unfusable' || !chain.around) throw new Error(`internal: a fold kernel did not fuse (${chain.kind === 'unfusable' ? chain.reason : 'no gufunc'})`);
    entry = { chain, ufunc: fusedGufunc(chain.around, chain.target, chain.boundsCheck) };
    byKey.set(key, entry);
  }
  return { ufunc: entry.ufunc, kernelArgs: argumentsOf(entry.chain, trace.calls, args) };
}
