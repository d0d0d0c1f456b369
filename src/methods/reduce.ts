/**
 * `reduce`: folds x along axes — a target's own tree over device arrays, chunks for an associative ufunc, or fold kernels over rows.
 */
import { type TypedArray } from '../dtypes.js';
import { ArgumentError } from '../errors.js';
import { cOrderStrides, sizeOf } from '../layout.js';
import { type ArrayOperand, type DeviceOperand, type NDArray, toOperand } from '../ndarray.js';
import { CHUNK } from './fold-kernels.js';
import type { MethodContext } from './context.js';
import type { UfuncMethods } from './types.js';

/** reduce for a ufunc, given its methods' context. */
export function reduceMethod(c: MethodContext): UfuncMethods['reduce'] {
  const { def, loopType, fold, arrayArgument, normaliseAxis, asArgument, unwrap, inDtype, identity, foldDtype, checkOutShape, asArray, foldsOfTarget, foldInChunks, rowsView, maskRows } = c;
  return async function reduce(x, options = {}) {
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
  };
}

/** A result given the shape with the folded axes kept as size 1 (a view of the same data). */
export function reshapeResult(result: unknown, shape: number[]): unknown {
  if (result && typeof result === 'object' && (result as { kind?: unknown }).kind === 'device') {
    return (result as { view(s: number[]): unknown }).view(shape);
  }
  const data = ArrayBuffer.isView(result) ? (result as TypedArray) : (result as NDArray).data;
  const dtype = ArrayBuffer.isView(result) ? undefined : (result as NDArray).dtype;
  const nd: NDArray = { data, shape, strides: cOrderStrides(shape), offset: ArrayBuffer.isView(result) ? 0 : ((result as NDArray).offset ?? 0), dtype: dtype ?? (toOperand(data, 'result') as ArrayOperand).dtype, order: 'row-major' };
  return nd;
}
