/**
 * The layout scheduler: splits each operand's shape into loop and core dimensions, broadcasts the
 * loop dimensions (NumPy's rules), binds core dimension names to sizes, and derives output shapes.
 * No codegen and no target knowledge (Numba's GUFuncEngine.schedule plays this part).
 */
import { BroadcastError, LayoutError } from './errors.js';
import type { CoreDim, Layout } from './signature-parser/index.js';
import { formatCoreDims } from './signature-parser/index.js';

/** One operand's shape as seen by the scheduler (scalars have shape []). */
export interface ScheduledInput {
  readonly shape: readonly number[];
  /** How messages name it: "argument 2". */
  readonly what: string;
}

export interface Schedule {
  /** The broadcast loop shape. */
  readonly loopShape: number[];
  /** Size of every core dimension name. */
  readonly coreSizes: ReadonlyMap<string, number>;
  /** Per input and output: the sizes of its core dimensions. */
  readonly inputCoreShapes: number[][];
  readonly outputCoreShapes: number[][];
}

/**
 * NumPy broadcasting: shapes are right-aligned; each dimension must be equal or 1.
 *
 * @example broadcastShapes([[3, 1], [4]]) // [3, 4]
 */
export function broadcastShapes(shapes: readonly (readonly number[])[], whats: readonly string[] = []): number[] {
  const rank = Math.max(0, ...shapes.map((s) => s.length));
  const out = new Array<number>(rank).fill(1);
  const what = (j: number) => whats[j] ?? `operand ${j + 1}`;
  for (let d = 0; d < rank; d++) {
    let from = -1; // the operand that set out[d]
    for (let i = 0; i < shapes.length; i++) {
      const s = shapes[i]!;
      const n = s[s.length - rank + d] ?? 1;
      if (n === 1) continue;
      if (out[d] === 1 || out[d] === n) {
        if (out[d] === 1) from = i;
        out[d] = n;
        continue;
      }
      const listing = shapes.map((sh, j) => `${what(j)} [${sh.join(', ')}]`).join(', ');
      // Each operand's own axis (shapes are right-aligned, so the same loop axis has other numbers in each).
      const axisOf = (j: number) => shapes[j]!.length - rank + d;
      throw new BroadcastError(
        `Cannot broadcast the loop dimensions together: ${listing}. Axis ${axisOf(from)} of ${what(from)} is ${out[d]} and axis ${axisOf(i)} of ${what(i)} is ${n} (shapes line up at their last axis); each must be equal or 1 (NumPy's broadcasting): make them match, or pass an array of size 1 on that axis, whose values then repeat.`,
      );
    }
  }
  return out;
}

function bind(sizes: Map<string, number>, dim: CoreDim, n: number, what: string, layout: Layout, origin: Map<string, string>): void {
  if (dim.kind === 'fixed') {
    if (n !== dim.size) {
      throw new BroadcastError(`${what} has core dimension ${n} where the layout \`${layout.text}\` fixes it at ${dim.size}.`);
    }
    return;
  }
  const known = sizes.get(dim.name);
  if (known === undefined) {
    sizes.set(dim.name, n);
    origin.set(dim.name, what);
  } else if (known !== n) {
    throw new BroadcastError(
      `Core dimension \`${dim.name}\` of the layout \`${layout.text}\` is ${known} in ${origin.get(dim.name)} but ${n} in ${what}.`,
    );
  }
}

/**
 * Schedules a call.
 *
 * @param layout - the parsed layout
 * @param inputs - shapes of the inputs
 * @param outs - shapes of the given `out` arrays (undefined where the output is to be allocated)
 * @param dims - sizes for core dimensions that appear only in outputs (`()->(n)` with `{ n: 16 }`)
 * @param extra - shapes that take part in broadcasting the loop dimensions only (a `where` mask)
 * @throws BroadcastError or LayoutError saying which operand and dimension disagree
 */
export function schedule(
  layout: Layout,
  inputs: readonly ScheduledInput[],
  outs: readonly (ScheduledInput | undefined)[],
  dims: Readonly<Record<string, number>> = {},
  extra: readonly ScheduledInput[] = [],
): Schedule {
  const sizes = new Map<string, number>();
  const origin = new Map<string, string>();
  const inputLoopShapes = inputs.map((input, i) => {
    const core = layout.inputs[i]!;
    if (input.shape.length < core.length) {
      throw new BroadcastError(
        `${capital(input.what)} has ${input.shape.length} dimension${input.shape.length === 1 ? '' : 's'} (shape [${input.shape.join(', ')}]) but the layout \`${layout.text}\` gives it core dimensions ${formatCoreDims(core)}, so it needs at least ${core.length}.`,
      );
    }
    const split = input.shape.length - core.length;
    core.forEach((dim, a) => bind(sizes, dim, input.shape[split + a]!, input.what, layout, origin));
    return input.shape.slice(0, split);
  });
  const outLoops = outs.map((out, o) => {
    if (!out) return undefined;
    const core = layout.outputs[o]!;
    const split = out.shape.length - core.length;
    if (split < 0) {
      throw new BroadcastError(`${capital(out.what)} has shape [${out.shape.join(', ')}], too few dimensions for core dimensions ${formatCoreDims(core)}.`);
    }
    core.forEach((dim, a) => bind(sizes, dim, out.shape[split + a]!, out.what, layout, origin));
    return out.shape.slice(0, split);
  });
  // As in NumPy, inputs (and a `where` mask) broadcast up to a given output's shape, but an output
  // is never broadcast itself: it must have the full loop shape.
  const given = outs.flatMap((out, o) => (out ? [{ loop: outLoops[o]!, what: out.what }] : []));
  const loopShape = broadcastShapes(
    [...inputLoopShapes, ...extra.map((e) => e.shape), ...given.map((g) => g.loop)],
    [...inputs.map((i) => i.what), ...extra.map((e) => e.what), ...given.map((g) => g.what)],
  );
  for (const { loop, what } of given) {
    if (loop.length !== loopShape.length || loop.some((n, d) => n !== loopShape[d])) {
      throw new BroadcastError(
        `${capital(what)} has loop dimensions [${loop.join(', ')}] but the operands broadcast to [${loopShape.join(', ')}]; an output is not broadcast, so it must have that shape.`,
      );
    }
  }

  for (const [name, n] of Object.entries(dims)) {
    if (!Number.isInteger(n) || n < 0) throw new LayoutError(`\`dims.${name}\` must be a non-negative integer, found ${String(n)}.`);
    const known = sizes.get(name);
    if (known !== undefined && known !== n) {
      throw new BroadcastError(`\`dims.${name}\` is ${n} but ${origin.get(name)} gives core dimension \`${name}\` the size ${known}.`);
    }
    if (![...layout.inputs, ...layout.outputs].some((op) => op.some((d) => d.kind === 'symbol' && d.name === name))) {
      throw new LayoutError(`\`dims.${name}\` names no core dimension of the layout \`${layout.text}\`.`);
    }
    sizes.set(name, n);
    origin.set(name, `\`dims.${name}\``);
  }

  const sizeOf = (dim: CoreDim, where: string): number => {
    if (dim.kind === 'fixed') return dim.size;
    const n = sizes.get(dim.name);
    if (n === undefined) {
      throw new LayoutError(
        `Core dimension \`${dim.name}\` of ${where} appears in no input of the layout \`${layout.text}\`, so its size is unknown: pass \`{ dims: { ${dim.name}: N } }\` or an \`out\` array.`,
      );
    }
    return n;
  };
  return {
    loopShape,
    coreSizes: sizes,
    inputCoreShapes: layout.inputs.map((core, i) => core.map((d) => sizeOf(d, `input ${i + 1}`))),
    outputCoreShapes: layout.outputs.map((core, o) => core.map((d) => sizeOf(d, `output ${o + 1}`))),
  };
}

/** Loop strides of an operand against the broadcast loop shape: 0 where it is broadcast. */
export function loopStridesFor(shape: readonly number[], strides: readonly number[], loopRank: number, coreRank: number): number[] {
  const loopDims = shape.length - coreRank;
  const out = new Array<number>(loopRank).fill(0);
  for (let d = 0; d < loopDims; d++) {
    const target = loopRank - loopDims + d;
    out[target] = shape[d] === 1 ? 0 : strides[d]!;
  }
  return out;
}

function capital(s: string): string {
  return s.charAt(0).toUpperCase() + s.slice(1);
}
