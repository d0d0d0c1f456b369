/**
 * The first stage of planning a call (prepare-call.ts): its arguments read as operands — inputs,
 * given outputs, the `where` mask — with the options checked, and, for guvectorize's
 * `axes`/`axis`/`keepdims`, every operand viewed with its core dimensions last.
 */
import { type CallOptions, splitArguments } from './call-options.js';
import type { Casting } from './cast-rules.js';
import { checkCasting } from './casting.js';
import { axesLast, normaliseAxes, requestedCoreAxes } from './core-axes.js';
import { ArgumentError } from './errors.js';
import { type ArrayOperand, describe, type DeviceOperand, type Operand, toOperand } from './ndarray.js';
import { permuted } from './call-views.js';
import type { UfuncDefinition } from './ufunc.js';

/** A call's arguments as operands, and the options that shape its loop. */
export interface CallOperands {
  /** The inputs as the caller passed them, for messages. */
  readonly rawInputs: readonly unknown[];
  /** The inputs, core dimensions last. */
  readonly inputs: readonly Operand[];
  /** The given outputs (undefined where the call allocates one), core dimensions last. */
  readonly outs: readonly (ArrayOperand | DeviceOperand | undefined)[];
  readonly options: CallOptions;
  readonly casting: Casting;
  /** The `where` mask over the loop dimensions; undefined for none (or a true scalar). */
  readonly mask: ArrayOperand | undefined;
  /** `where: false`: no element is computed. */
  readonly maskAll: boolean;
  /** Per operand, the axes `axes`/`axis` put its core dimensions on (undefined: last). */
  readonly requested: readonly (readonly number[] | undefined)[];
  readonly keepdims: boolean;
}

/** How messages name output `o`. */
export function outWhat(def: UfuncDefinition, o: number): string {
  return def.nout === 1 ? '`out`' : `\`out[${o}]\``;
}

/** Reads a call's arguments. Throws an ArgumentError for any it cannot take. */
export function readOperands(def: UfuncDefinition, args: readonly unknown[]): CallOperands {
  const { inputs: rawInputs, outs: rawOuts, options } = splitArguments(args, def.nin, def.nout);
  const casting = checkCasting(options.casting);
  let inputs = rawInputs.map((x, i) => toOperand(x, `argument ${i + 1}`));
  let outs = def.layout.outputs.map((_, o) => {
    const x = rawOuts?.[o];
    if (x === undefined || x === null) return undefined;
    const op = toOperand(x, outWhat(def, o));
    if (op.kind === 'scalar') throw new ArgumentError(`${outWhat(def, o)} must be an array, found ${describe(x)}.`);
    return op;
  });

  // `where`: a boolean mask over the loop dimensions (a true scalar is no mask at all).
  let mask: ArrayOperand | undefined;
  let maskAll = false;
  if (options.where !== undefined && options.where !== true) {
    const w = toOperand(options.where, '`where`');
    if (w.kind === 'scalar') {
      if (w.value !== false) throw new ArgumentError(`\`where\` must be a boolean array or a boolean, found ${describe(options.where)}.`);
      maskAll = true;
    } else if (w.kind === 'device' || !(w.dtype === 'bool' || w.dtype === 'uint8')) {
      throw new ArgumentError(`\`where\` must be a boolean mask in host memory ({ data: Uint8Array, dtype: 'bool' } or a Uint8Array), found ${w.kind === 'device' ? 'a DeviceArray' : `an array of ${w.dtype}`}.`);
    } else mask = w;
  }

  // `axes`/`axis`/`keepdims` (guvectorize): view every operand with its core dimensions last.
  const cores = [...def.layout.inputs, ...def.layout.outputs];
  const requested = requestedCoreAxes(options, def.nin, cores.map((c) => c.length), cores.map((c) => c.flatMap((d) => (d.kind === 'symbol' ? [d.name] : []))), def.kind);
  const keepdims = options.keepdims === true;
  inputs = inputs.map((op, i) => {
    const axes = requested[i];
    if (!axes || op.kind === 'scalar') return op;
    return permuted(op, axesLast(op.shape.length, normaliseAxes(axes, op.shape.length, `argument ${i + 1}`)));
  });
  outs = outs.map((op, o) => {
    const axes = requested[def.nin + o];
    if (!axes || !op) return op;
    const at = normaliseAxes(axes, op.shape.length, outWhat(def, o));
    const view = permuted(op, axesLast(op.shape.length, at));
    if (!keepdims) return view;
    if (at.some((d) => op.shape[d] !== 1)) throw new ArgumentError(`${outWhat(def, o)} has shape [${op.shape.join(', ')}], but with \`keepdims\` its axes ${at.join(', ')} must have size 1.`);
    return { ...view, shape: view.shape.slice(0, -at.length), strides: view.strides.slice(0, -at.length) };
  });
  return { rawInputs, inputs, outs, options, casting, mask, maskAll, requested, keepdims };
}
