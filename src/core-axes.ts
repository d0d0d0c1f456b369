/**
 * Guvectorize's `axes`, `axis` and `keepdims` call options (NumPy's): which axes of each operand hold
 * its core dimensions. Operands are viewed with those axes moved last, which is where the scheduler
 * and the targets expect core dimensions; an allocated output is made in the caller's layout and
 * viewed the same way.
 */
import { ArgumentError } from './errors.js';
import type { CallOptions } from './call-options.js';

/**
 * Per operand (inputs, then outputs), the axes that hold its core dimensions as the caller gave
 * them (possibly negative), or undefined for the default: the last ones. With `keepdims`, an output's
 * entry lists where the inputs' reduced core dimensions stay, with size 1.
 *
 * @param cores - the number of core dimensions of each operand, inputs then outputs
 * @param coreNames - the core dimension names of each operand (for `axis`)
 */
export function requestedCoreAxes(options: CallOptions, nin: number, cores: readonly number[], coreNames: readonly (readonly string[])[], kind: 'vectorize' | 'guvectorize'): (readonly number[] | undefined)[] {
  const { axes, axis, keepdims } = options;
  const none = cores.map(() => undefined);
  if (axes === undefined && axis === undefined && keepdims === undefined) return none;
  if (kind === 'vectorize') {
    const which = axes !== undefined ? 'axes' : axis !== undefined ? 'axis' : 'keepdims';
    throw new ArgumentError(`\`${which}\` applies to guvectorize ufuncs (it says where their core dimensions lie); an element-wise ufunc has none. For a reduction use \`.reduce(x, { axis })\`.`);
  }
  if (keepdims !== undefined && typeof keepdims !== 'boolean') throw new ArgumentError(`\`keepdims\` must be true or false, found ${typeof keepdims}.`);
  if (axes !== undefined && axis !== undefined) throw new ArgumentError('Pass `axes` or `axis`, not both.');
  const nout = cores.length - nin;
  let requested: (readonly number[] | undefined)[] = [...none];
  if (axis !== undefined) {
    const names = new Set(coreNames.flat());
    if (names.size !== 1 || cores.some((c) => c > 1)) {
      throw new ArgumentError(`\`axis\` can only be used with a single shared core dimension, not with the ${names.size} distinct one${names.size === 1 ? '' : 's'} of this layout; use \`axes\`.`);
    }
    if (!Number.isInteger(axis)) throw new ArgumentError(`\`axis\` must be an integer, found ${String(axis)}.`);
    requested = cores.map((c) => (c === 1 ? [axis] : []));
  } else if (axes !== undefined) {
    const outputsScalar = cores.slice(nin).every((c) => c === 0);
    if (!Array.isArray(axes) || !(axes.length === nin + nout || (outputsScalar && axes.length === nin))) {
      throw new ArgumentError(`\`axes\` must list, for each of the ${nin + nout} operands (inputs then outputs), the axes of its core dimensions${outputsScalar ? ` (outputs without core dimensions may be left out, so ${nin} entries also do)` : ''}; found ${Array.isArray(axes) ? `${axes.length} entries` : typeof axes}.`);
    }
    requested = cores.map((c, k) => {
      const entry = axes[k];
      if (entry === undefined) return undefined;
      const list = typeof entry === 'number' ? [entry] : entry;
      if (typeof entry === 'number' && c !== 1) throw new ArgumentError(`\`axes[${k}]\` is one integer, but operand ${k + 1} has ${c} core dimensions: give a list of ${c}.`);
      if (!Array.isArray(list) || !list.every(Number.isInteger)) throw new ArgumentError(`\`axes[${k}]\` must be a list of integers, found ${JSON.stringify(entry)}.`);
      const expected = keepdims && k >= nin ? cores[0]! : c;
      if (list.length !== expected) throw new ArgumentError(`\`axes[${k}]\` lists ${list.length} ax${list.length === 1 ? 'is' : 'es'}, but operand ${k + 1} has ${expected} core dimension${expected === 1 ? '' : 's'}.`);
      return list;
    });
  }
  if (keepdims) {
    const c = cores[0]!;
    if (!cores.slice(0, nin).every((x) => x === c) || !cores.slice(nin).every((x) => x === 0)) {
      throw new ArgumentError('`keepdims` needs a layout whose inputs all have the same number of core dimensions and whose outputs have none (a reduction such as `(n)->()`).');
    }
    // The kept axes: with `axis`, where the inputs' are (NumPy's `axis` names every operand's);
    // with `axes` that leave the outputs out, an output's default place, last (NumPy: shape (3, 3, 1)
    // for input axes [(0,)] of a (3, 3, 3) array).
    for (let o = nin; o < cores.length; o++) {
      if (!requested[o]?.length) requested[o] = (axis !== undefined ? requested[0] : undefined) ?? Array.from({ length: c }, (_, a) => a - c);
    }
  }
  return requested;
}

/** The requested axes as positions in `[0, rank)`, distinct. */
export function normaliseAxes(list: readonly number[], rank: number, what: string): number[] {
  const seen = new Set<number>();
  return list.map((a) => {
    const d = a < 0 ? a + rank : a;
    if (d < 0 || d >= rank) throw new ArgumentError(`Axis ${a} of ${what} is out of bounds for an array of ${rank} dimension${rank === 1 ? '' : 's'}.`);
    if (seen.has(d)) throw new ArgumentError(`Axis ${a} is repeated in the axes of ${what}.`);
    seen.add(d);
    return d;
  });
}

/** The permutation that moves `axes` (positions) last, keeping the other axes in order. */
export function axesLast(rank: number, axes: readonly number[]): number[] {
  return [...Array.from({ length: rank }, (_, d) => d).filter((d) => !axes.includes(d)), ...axes];
}

/** The shape of an output laid out with its core dimensions at `axes`, its loop dimensions elsewhere in order. */
export function placeCoreAxes(loopShape: readonly number[], coreShape: readonly number[], axes: readonly number[]): number[] {
  const rank = loopShape.length + coreShape.length;
  const shape = new Array<number>(rank);
  axes.forEach((d, a) => (shape[d] = coreShape[a]!));
  let l = 0;
  for (let d = 0; d < rank; d++) if (shape[d] === undefined) shape[d] = loopShape[l++]!;
  return shape;
}
