/**
 * `at`: in place and unbuffered updates at indices, by a fold kernel over the array's memory.
 */
import { convertConstant } from '../compiler/constant-folding.js';
import { DTYPES } from '../dtypes.js';
import { ArgumentError } from '../errors.js';
import { reachOf, sizeOf } from '../layout.js';
import { copyToContiguous, describe, toOperand } from '../ndarray.js';
import type { MethodContext } from './context.js';
import type { UfuncMethods } from './types.js';

/** at for a ufunc, given its methods' context. */
export function atMethod(c: MethodContext): UfuncMethods['at'] {
  const { def, loopType, fold, arrayArgument, asArgument } = c;
  return async function at(a, indices, b) {
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
  };
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

export function indexList(indices: ArrayLike<number>, what: string): number[] {
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
