/**
 * Tracing: how `fuse` learns which ufunc calls a function makes. The fused function runs the
 * user's function with a `Tracer` in place of each array argument; a ufunc called with a tracer
 * (callable.ts asks `traceCall` first) records the call and returns a new tracer instead of
 * running. What comes back is the recorded graph: inputs, calls, and the tracer returned.
 *
 * Tracing is cheap (a few object allocations a call), so it runs on every call of the fused
 * function: values the function computes from scalars or closures are current on each call, and
 * only compiling waits for a new class of dtypes and layouts (fuse.ts caches kernels by that).
 */
import { FusionError } from '../errors.js';
import type { UfuncDefinition } from '../ufunc.js';

/** A recorded call: a ufunc called as a function (`call`) or through one of its methods. */
export interface TracedCall {
  /** Its position in the trace, from 0. */
  readonly index: number;
  readonly def: UfuncDefinition;
  /** `call` for `f(…)`, else the method's name (`reduce`, `accumulate`, …). */
  readonly method: string;
  /** The arguments as given: tracers, scalars, arrays, options objects. */
  readonly args: readonly unknown[];
  /** Runs the call for real (with tracers replaced by values): the ufunc or method itself. */
  readonly run: (...args: unknown[]) => Promise<unknown>;
  /** `saxpy(…)` or `add.reduce(…)`, with its position: for messages. */
  readonly what: string;
}

/** The value a tracer stands for: an argument of the fused function or the result of a recorded call. */
export type TracedValue = { readonly kind: 'input'; readonly index: number } | { readonly kind: 'call'; readonly index: number };

/**
 * Stands for an array while the function given to `fuse` is traced. It can be passed to ufuncs
 * and returned; anything else (arithmetic, indexing, reading `data`) is a `FusionError`.
 */
export class Tracer {
  constructor(
    /** The trace it belongs to. */
    readonly trace: Trace,
    readonly value: TracedValue,
  ) {}

  /** What it stands for, in messages: `argument 2` or `the result of gauss(…) (call 2)`. */
  get what(): string {
    return this.value.kind === 'input' ? `argument ${this.value.index + 1}` : `the result of ${this.trace.calls[this.value.index]!.what}`;
  }

  // `'data' in x` also keeps a tracer from being taken for a call's options object (call-options.ts).
  get data(): never {
    throw new FusionError(`Inside a function given to \`fuse\`, ${this.what} stands for an array that does not exist yet: only ufunc calls may use it (its elements, \`data\` and \`shape\` are not available while tracing).`);
  }

  get shape(): never {
    return this.data;
  }

  get length(): never {
    return this.data;
  }

  [Symbol.toPrimitive](): never {
    throw new FusionError(`Inside a function given to \`fuse\`, ${this.what} was used in JavaScript arithmetic or a comparison: traced arrays only go into ufunc calls. Write the arithmetic as a vectorize ufunc (e.g. \`vectorize(['float32(float32, float32)'])((a, b) => a * b)\`), which then fuses with the rest.`);
  }
}

/** The calls one run of a fused function made, in the order it made them. */
export class Trace {
  readonly calls: TracedCall[] = [];
  /** The tracers given to the function, one per array argument (undefined for the others). */
  readonly inputs: readonly (Tracer | undefined)[];

  constructor(isArray: readonly boolean[]) {
    this.inputs = isArray.map((array, index) => (array ? new Tracer(this, { kind: 'input', index }) : undefined));
  }

  /** Records a call whose arguments hold this trace's tracers; returns the tracer of its result. */
  record(def: UfuncDefinition, method: string, args: readonly unknown[], run: TracedCall['run']): Tracer {
    for (const a of args) {
      if (a instanceof Tracer && a.trace !== this) {
        throw new FusionError(`A traced array of another \`fuse\` call (${a.what}) reached ${describeCall(def, method)}: a fused function's arrays stay inside the call that traced them.`);
      }
    }
    this.calls.push(new RecordedCall(this.calls.length, def, method, args, run));
    return new Tracer(this, { kind: 'call', index: this.calls.length - 1 });
  }
}

/** A TracedCall; its `what` is built only when a message needs it. */
class RecordedCall implements TracedCall {
  constructor(
    readonly index: number,
    readonly def: UfuncDefinition,
    readonly method: string,
    readonly args: readonly unknown[],
    readonly run: TracedCall['run'],
  ) {}

  get what(): string {
    return `${describeCall(this.def, this.method)} (call ${this.index + 1})`;
  }
}

function describeCall(def: UfuncDefinition, method: string): string {
  const name = def.parsed.name || 'ufunc';
  return method === 'call' ? `\`${name}(…)\`` : `\`${name}.${method}(…)\``;
}

/**
 * Records the call when a tracer is among its arguments (the ufunc is then being traced by
 * `fuse`); undefined otherwise, and the call runs as usual.
 *
 * @param def - the ufunc called
 * @param method - `call`, or the method's name
 * @param args - the call's arguments
 * @param run - the ufunc or method, to run the call for real if it does not fuse
 * @returns the tracer of the call's result, or undefined when no argument is a tracer
 * @example const traced = traceCall(def, 'call', args, call); if (traced) return traced;
 */
export function traceCall(def: UfuncDefinition, method: string, args: readonly unknown[], run: TracedCall['run']): Tracer | undefined {
  for (let i = 0; i < args.length; i++) {
    const a = args[i];
    if (a instanceof Tracer) return a.trace.record(def, method, args, run);
  }
  return undefined;
}
