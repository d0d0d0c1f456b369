/**
 * `outer`: the ufunc over every pair, as one call with a broadcast view of a.
 */
import { toOperand } from '../ndarray.js';
import { prepareCall } from '../prepare-call.js';
import { runPrepared } from '../run-call.js';
import { loadTarget } from '../targets/registry.js';
import type { MethodContext } from './context.js';
import type { UfuncMethods } from './types.js';

/** outer for a ufunc, given its methods' context. */
export function outerMethod(c: MethodContext): UfuncMethods['outer'] {
  const { def, asArgument } = c;
  return async function outer(a, b, options = {}) {
    const opA = toOperand(a, 'argument 1');
    const opB = toOperand(b, 'argument 2');
    const shapeB = opB.kind === 'scalar' ? [] : opB.shape;
    // a gets one broadcast (stride 0) axis per axis of b: shapes [...A, 1, …] and [...B] broadcast to [...A, ...B].
    const viewA = opA.kind === 'scalar' ? a : asArgument(opA, [...opA.shape, ...shapeB.map(() => 1)], [...opA.strides, ...shapeB.map(() => 0)]);
    const args = options.out === undefined ? [viewA, b] : [viewA, b, { out: options.out }];
    return runPrepared(prepareCall(def, args, await loadTarget(def.target)));
  };
}
