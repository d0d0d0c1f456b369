/**
 * `reduceat`: folds of slices along an axis, by a fold kernel over rows.
 */
import { ArgumentError } from '../errors.js';
import { cOrderStrides } from '../layout.js';
import { type ArrayOperand, copyToContiguous, toOperand } from '../ndarray.js';
import type { MethodContext } from './context.js';
import { indexList } from './at.js';
import type { UfuncMethods } from './types.js';

/** reduceat for a ufunc, given its methods' context. */
export function reduceatMethod(c: MethodContext): UfuncMethods['reduceat'] {
  const { loopType, fold, arrayArgument, normaliseAxis, asArgument, inDtype, foldDtype, checkOutShape } = c;
  return async function reduceat(x, indices, options = {}) {
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
  };
}
