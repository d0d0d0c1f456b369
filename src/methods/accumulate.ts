/**
 * `accumulate`: the running fold along an axis, by a fold kernel over rows (or a target's own tree).
 */
import type { UfuncResult } from '../callable.js';
import { ArgumentError } from '../errors.js';
import { type ArrayOperand, type DeviceOperand, type NDArray, toOperand } from '../ndarray.js';
import type { MethodContext } from './context.js';
import type { UfuncMethods } from './types.js';

/** accumulate for a ufunc, given its methods' context. */
export function accumulateMethod(c: MethodContext): UfuncMethods['accumulate'] {
  const { def, loopType, fold, arrayArgument, normaliseAxis, asArgument, inDtype, foldDtype, checkOutShape, foldsOfTarget } = c;
  return async function accumulate(x, options = {}) {
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
  };
}
