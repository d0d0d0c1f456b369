/**
 * NumPy's call surface for a ufunc call: outputs positional or as `out`, and the options `where`,
 * `dtype`, `signature`, `casting`, `axes`, `axis`, `keepdims` (and this library's `dims`). Here the
 * arguments are split and the options checked; the planner (prepare-call.ts) applies them.
 */
import { type Casting, CASTING_RULES } from './cast-rules.js';
import { checkCasting } from './casting.js';
import { checkOptions, type OptionRules, rule } from './options.js';
import { type DType } from './dtypes.js';
import { ArgumentError } from './errors.js';
import { describe } from './ndarray.js';
import { resolveTypeName } from './signature-parser/types.js';
import { seedProblem } from './compiler/random-stream.js';
import { parseSignature } from './signature-parser/index.js';

/** Options a call may pass as its last argument (NumPy's ufunc keyword arguments). */
export interface CallOptions {
  /**
   * Preallocated output(s): one array, or (several outputs) an array of arrays, `null` where one is
   * to be allocated. Outputs may also be passed positionally after the inputs: `copy(a, b)`. The
   * inputs broadcast to the output's shape; an output is cast from the loop's dtype under `casting`.
   */
  readonly out?: unknown;
  /** Sizes of core dimensions that appear only in outputs: `()->(n)` with `{ dims: { n: 16 } }`. */
  readonly dims?: Readonly<Record<string, number>>;
  /**
   * A boolean mask (a `{ data: Uint8Array, dtype: 'bool' }` array, a bare `Uint8Array`, or a boolean)
   * broadcast over the loop dimensions: outputs are written only where it is true; elsewhere a
   * given `out` keeps its values and an allocated one holds zeros. @default true
   */
  readonly where?: unknown;
  /** The dtype of the outputs; picks the first loop with that output type. */
  readonly dtype?: DType | string;
  /**
   * The loop to use: a signature string (`'float32(float32, float32)'`) or one dtype (or `null`)
   * per input and output. Inputs are cast to it under `casting`.
   */
  readonly signature?: string | readonly (DType | string | null)[];
  /** How far values may be converted between the arguments and the loop (NumPy's rule). @default 'same_kind' */
  readonly casting?: Casting;
  /** Guvectorize: which axes of each operand are its core dimensions, e.g. `[[0], [0]]`. @default the last ones */
  readonly axes?: readonly (readonly number[] | number)[];
  /** Guvectorize with one shared core dimension: the axis it lies on in every operand that has it. */
  readonly axis?: number;
  /** Guvectorize reducing its inputs' core dimensions: keep them in the outputs with size 1. @default false */
  readonly keepdims?: boolean;
  /**
   * Stops the call when aborted: it rejects with a `CallAbortedError`. The parallel target
   * terminates the workers still running it (and starts new ones); the gpu target destroys its
   * device (device arrays on it are lost; the next call gets a new one); the cpu target can only
   * refuse to start (it runs the kernel on the calling thread). See docs/reliability.md.
   */
  readonly signal?: AbortSignal;
  /** Milliseconds the call may take; after that it stops as for `signal`, with a `CallTimeoutError`. */
  readonly timeout?: number;
  /**
   * The seed of the call's `Math.random()` stream (docs/random.md): the same seed gives the same
   * numbers on every target. Without it each call draws a fresh seed. An integer from 0 to
   * `Number.MAX_SAFE_INTEGER`, or a bigint from `0n` to `2n ** 64n - 1n`.
   */
  readonly seed?: number | bigint;
}

/** The options of a call, with the rule each value must follow (the rest is checked where it is used). */
export const CALL_OPTIONS: OptionRules = {
  out: rule.any(),
  dims: rule.object('an object of core dimension sizes, e.g. `{ n: 16 }`'),
  where: rule.any(),
  dtype: rule.any(),
  signature: rule.any(),
  casting: rule.oneOf(CASTING_RULES),
  axes: rule.any(),
  axis: rule.axis(false),
  keepdims: rule.boolean(),
  signal: (v) => (isAbortSignal(v) ? undefined : 'an AbortSignal (e.g. `AbortSignal.timeout(1000)` or an `AbortController`’s `signal`)'),
  timeout: (v) => (typeof v === 'number' && v > 0 ? undefined : 'a number of milliseconds greater than 0 (`Infinity` for none)'),
  seed: seedProblem,
};

function isAbortSignal(v: unknown): v is AbortSignal {
  return typeof AbortSignal !== 'undefined' && v instanceof AbortSignal;
}

/** Whether a trailing argument is an options object rather than an array. */
export function isOptionsObject(x: unknown): boolean {
  return (
    typeof x === 'object' && x !== null && !Array.isArray(x) && !ArrayBuffer.isView(x) && !('data' in x) &&
    (x as { kind?: unknown }).kind !== 'device'
  );
}

/**
 * Splits a call's arguments into inputs, positional outputs and the options object.
 *
 * @throws ArgumentError for a wrong count, an unknown option, or `out` given twice
 * @example splitArguments([a, b, out], 2, 1) // { inputs: [a, b], outs: [out], options: {} }
 */
export function splitArguments(args: readonly unknown[], nin: number, nout: number): { inputs: unknown[]; outs: unknown[] | undefined; options: CallOptions } {
  const last = args[args.length - 1];
  const hasOptions = args.length > nin && isOptionsObject(last);
  const rest = hasOptions ? args.slice(0, -1) : [...args];
  const options = (hasOptions ? last : {}) as CallOptions;
  if (hasOptions) checkOptions(options, CALL_OPTIONS, 'a call');
  if (rest.length < nin || rest.length > nin + nout) {
    const extra = rest.length > nin + nout ? ` (the last one, ${describe(rest[rest.length - 1])}, is neither an input, an output nor an options object)` : '';
    throw new ArgumentError(
      `This ufunc takes ${nin} input${nin === 1 ? '' : 's'} (then up to ${nout} output${nout === 1 ? '' : 's'} and an options object), found ${rest.length} argument${rest.length === 1 ? '' : 's'}${extra}.`,
    );
  }
  const positional = rest.slice(nin);
  if (positional.length && options.out !== undefined) {
    throw new ArgumentError('`out` was given both positionally (after the inputs) and as an option: pass it one way.');
  }
  let outs: unknown[] | undefined = positional.length ? positional : undefined;
  if (options.out !== undefined) {
    const several = Array.isArray(options.out);
    outs = nout === 1 && !(several && (options.out as unknown[]).length === 1) ? [options.out] : several ? [...(options.out as unknown[])] : undefined;
    if (!outs || outs.length !== nout) {
      throw new ArgumentError(`\`out\` must be ${nout === 1 ? 'one array' : `an array of ${nout} arrays (null where one is to be allocated)`} (this ufunc has ${nout} output${nout === 1 ? '' : 's'}), found ${describe(options.out)}.`);
    }
  }
  return { inputs: rest.slice(0, nin), outs, options };
}

/** A loop forced by `dtype` or `signature`: one dtype (or undefined: free) per input and output. */
export function forcedTypes(options: CallOptions, nin: number, nout: number, operandTypes?: (sig: ReturnType<typeof parseSignature>) => { dtype: DType }[]): (DType | undefined)[] | undefined {
  if (options.dtype !== undefined && options.signature !== undefined) {
    throw new ArgumentError('Pass `dtype` or `signature`, not both: `dtype` fixes only the outputs\' type, `signature` the whole loop.');
  }
  const dtypeOf = (x: unknown, what: string): DType => {
    const t = typeof x === 'string' ? resolveTypeName(x) : undefined;
    if (!t) throw new ArgumentError(`${what} must be a dtype name such as 'float32' or 'int32', found ${typeof x === 'string' ? `'${x}'` : describe(x)}.`);
    return t;
  };
  if (options.dtype !== undefined) {
    const t = dtypeOf(options.dtype, '`dtype`');
    return [...new Array<undefined>(nin).fill(undefined), ...new Array<DType>(nout).fill(t)];
  }
  const sig = options.signature;
  if (sig === undefined) return undefined;
  if (typeof sig === 'string') {
    const parsed = parseSignature(sig);
    const types = operandTypes!(parsed).map((t) => t.dtype);
    if (types.length !== nin + nout) {
      throw new ArgumentError(`\`signature\` \`${sig}\` names ${types.length} operand${types.length === 1 ? '' : 's'}, but this ufunc has ${nin} input${nin === 1 ? '' : 's'} and ${nout} output${nout === 1 ? '' : 's'}.`);
    }
    return types;
  }
  if (!Array.isArray(sig) || sig.length !== nin + nout) {
    throw new ArgumentError(`\`signature\` must be a signature string or ${nin + nout} dtype names (null for any), one per input and output, found ${describe(sig)}.`);
  }
  return sig.map((x, k) => (x === null || x === undefined ? undefined : dtypeOf(x, `\`signature[${k}]\``)));
}

export { checkCasting };
