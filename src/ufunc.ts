/**
 * What vectorize and guvectorize share: a ufunc definition (kernel, signatures, layout, target),
 * signature dispatch, the per-signature typed kernels, and turning a call's arguments into a
 * `CallPlan` for the target — every check done before anything is written.
 */
import { loopStridesFor, schedule, type ScheduledInput } from './broadcast.js';
import type { TypedKernel, ValueType } from './compiler/ir.js';
import { type KernelEnv, convertConstant, typeKernel } from './compiler/lower.js';
import { type ParsedFunction, parseFunction } from './compiler/parse.js';
import { runPasses } from './compiler/passes/index.js';
import { canCastScalar, type DType, DTYPES, type TypedArray } from './dtypes.js';
import { type Casting, canCast, checkCasting, inputCasting, storeCast } from './casting.js';
import { CALL_OPTIONS, type CallOptions, forcedTypes, splitArguments } from './call-options.js';
import { axesLast, normaliseAxes, placeCoreAxes, requestedCoreAxes } from './core-axes.js';
import { fuseStore } from './fused-store.js';
import { ArgumentError, CallCancelledError, LayoutError, SignatureError, TargetUnavailableError } from './errors.js';
import { limitExceeded, limitsOf, shutdownEpoch, shutdownError, whenShutdown } from './cancellation.js';
import { cOrderStrides, sizeOf } from './layout.js';
import {
  type ArrayOperand, assertAttached, copyToContiguous, describe, type DeviceOperand, type NDArray, type Operand, orderOf, toOperand,
} from './ndarray.js';
import { checkOptions, type OptionRules, rule } from './options.js';
import type { CallPlan, FastEntry, OperandView } from './plan.js';
import { type ArgType, formatArgType, type Layout, parseLayout, parseSignature, type Signature } from './signature-parser/index.js';
import { DEFAULT_TARGET, formatTargetNames, targetEntry, type TargetName, targetNames, warmUpTarget } from './targets/registry.js';
import { ENQUEUED, type Target } from './targets/target.js';

/** Options of `vectorize(…)` and `guvectorize(…)`. */
export interface UfuncOptions {
  /** Where calls run: a name in the target registry. @default 'cpu' */
  readonly target?: TargetName;
  /** Helper functions and numeric constants the kernel may use by name. */
  readonly env?: KernelEnv;
  /** Check array indices in kernels against core dimensions (a `KernelRuntimeError` when outside). @default true */
  readonly boundsCheck?: boolean;
  /**
   * The identity of a two-input vectorize ufunc, used by `reduce` on empty axes (as NumPy's
   * `identity`; converted to the loop's dtype as NumPy does, so −1 is all ones on an unsigned loop),
   * or `'reorderable'` (Numba's): no identity, but `reduce` may fold several axes at once.
   */
  readonly identity?: number | bigint | boolean | 'reorderable';
  /**
   * What a target without float64 (gpu: WGSL has no 64-bit floats) does with a float64 signature
   * when no other signature fits the inputs: 'error' refuses it; 'float32' runs it in float32
   * (float64 inputs are rounded to float32, results computed in float32 and stored back as float64,
   * so they carry float32's precision, about 7 significant digits). @default 'error'
   */
  readonly float64?: 'error' | 'float32';
  /**
   * Declares the kernel associative (`f(f(a, b), c) = f(a, f(b, c))`, as for +, ×, min, max), so
   * `reduce` may split a long fold into chunks that run in parallel and combine the partial results
   * in a fixed order (the same on any number of workers). Floating-point addition is associative
   * only up to rounding: results then differ from the sequential fold by rounding (see docs/methods.md).
   * @default false
   */
  readonly associative?: boolean;
  /**
   * As Numba's `fastmath=True`, narrowed to what this library changes: on the cpu and parallel
   * targets, `Math.exp` of a float32 value is computed in float32 (SIMD lanes in the Wasm engine,
   * the same operations in the JS engine) instead of as V8's float64 `Math.exp` rounded to
   * float32. Results are then within 1 ulp of float32 of the correctly rounded e^x (not always
   * equal to `Math.fround(Math.exp(x))`), and the same on both engines and both targets. The gpu
   * target ignores it (WGSL's `exp` is the device's either way). docs/wasm-engine.md, "fastmath".
   * @default false
   */
  readonly fastmath?: boolean;
}

/** The options of `guvectorize(…)`: the target's name is checked against the registry. */
export const GUVECTORIZE_OPTIONS: OptionRules = {
  // An unknown name is a TargetUnavailableError listing the registered targets.
  target: (name) => (targetEntry(name), undefined),
  env: rule.object('an object of constants and helper functions'),
  boundsCheck: rule.boolean(),
  float64: rule.oneOf(['error', 'float32']),
  associative: rule.boolean(),
  fastmath: rule.boolean(),
};

/** The options of `vectorize(…)`: those of guvectorize, and the identity its `reduce` starts from. */
export const VECTORIZE_OPTIONS: OptionRules = {
  ...GUVECTORIZE_OPTIONS,
  identity: (v) => (v === 'reorderable' || rule.scalar()(v) === undefined ? undefined : "a number, a bigint, a boolean or 'reorderable'"),
};

export type { CallOptions };

export { CALL_OPTIONS };

export type UfuncKind = 'vectorize' | 'guvectorize';

interface Specialisation {
  readonly signature: Signature;
  /** The eagerly typed kernel, or undefined when its typing depends on core dimension sizes. */
  readonly kernel: TypedKernel | undefined;
  readonly byCoreDims: Map<string, TypedKernel>;
  readonly key: string;
  /**
   * The operand types callers see, where they differ from the kernel's: a float64 signature run in
   * float32 (option `float64: 'float32'`) accepts and returns float64 arrays.
   */
  readonly accepts?: readonly ArgType[];
}

/** How a call constrains the loop: casting rule, loop types forced by `dtype`/`signature`, what the target stores. */
export interface LoopRequest {
  readonly casting: Casting;
  readonly forced?: readonly (DType | undefined)[];
  readonly canStore?: (dtype: DType) => boolean;
  /** Why the target cannot store what `canStore` refuses (Target.storeLimit), for the message. */
  readonly storeLimit?: string;
}

let nextUfuncId = 0;

/** The shared machinery behind one vectorize or guvectorize ufunc. */
export class UfuncDefinition {
  readonly id = nextUfuncId++;
  readonly parsed: ParsedFunction;
  /** The kernel as the caller gave it (the ufunc methods call it as a helper of their fold kernels). */
  readonly fn: Function | string;
  readonly target: TargetName;
  readonly env: KernelEnv;
  readonly boundsCheck: boolean;
  /** The `fastmath` option (see UfuncOptions): marks every typed kernel of this ufunc. */
  readonly fastmath: boolean;
  private readonly specialisations: Specialisation[] = [];
  /** Lazily compiled vectorize signatures, by input dtype tuple. */
  private readonly lazy = new Map<string, Specialisation>();
  private readonly checkedFor = new Set<Specialisation>();
  /** Fast-path entries by argument kinds (fast-call.ts); null where such calls need the general path. */
  readonly fastEntries = new Map<number, FastEntry | null>();

  constructor(
    readonly kind: UfuncKind,
    fn: Function | string,
    signatures: readonly string[],
    readonly layout: Layout,
    readonly options: UfuncOptions,
  ) {
    checkOptions(options, kind === 'vectorize' ? VECTORIZE_OPTIONS : GUVECTORIZE_OPTIONS, `\`${kind}\``);
    this.target = targetEntry(options.target ?? DEFAULT_TARGET).name as TargetName;
    this.env = options.env ?? {};
    this.boundsCheck = options.boundsCheck ?? true;
    this.fastmath = options.fastmath === true;
    if (options.float64 !== undefined && options.float64 !== 'error' && options.float64 !== 'float32') {
      throw new ArgumentError(`\`float64\` must be 'error' or 'float32', found ${describe(options.float64)}.`);
    }
    this.fn = fn;
    this.parsed = parseFunction(fn);
    for (const text of signatures) {
      const signature = parseSignature(text);
      const key = `${this.id}:${this.specialisations.length}`;
      if (kind === 'vectorize' && signature.returnType === 'void' && text.trim().startsWith('(')) {
        // Argument types only (Numba's `'(float64, float64)'`): the result type is the kernel's own.
        this.checkSignature({ ...signature, returnType: 'float64' });
        const typed = this.specialise({ ...signature, returnType: 'float64' }, key, 'infer');
        const returnType = typed.kernel!.returnType as DType;
        this.specialisations.push({ ...typed, signature: { ...signature, returnType, text: `${returnType}${text.trim()}` } });
        continue;
      }
      this.checkSignature(signature);
      this.specialisations.push(this.specialise(signature, key));
    }
    // Once the definition is known good: the parallel target's workers start now, in the background.
    warmUpTarget(this.target);
  }

  get nin(): number {
    return this.layout.inputs.length;
  }

  get nout(): number {
    return this.layout.outputs.length;
  }

  /** The signatures the ufunc was made with, in order (none for a lazy vectorize). */
  get declaredSignatures(): readonly string[] {
    return this.specialisations.map((s) => s.signature.text);
  }

  get signatures(): readonly Signature[] {
    return [...this.specialisations, ...[...this.lazy.values()].filter((s) => !s.accepts)].map((s) => s.signature);
  }

  /** Argument types of a signature in operand order (inputs, then outputs). */
  operandTypes(signature: Signature): ArgType[] {
    if (this.kind === 'vectorize') {
      return [...signature.args, { kind: 'scalar', dtype: signature.returnType as DType }];
    }
    return [...signature.args];
  }

  private checkSignature(sig: Signature): void {
    const fail = (message: string): never => {
      throw new SignatureError(`Signature \`${sig.text}\`: ${message}`, sig.text);
    };
    if (this.kind === 'vectorize') {
      if (sig.returnType === 'void') fail('a vectorize kernel returns its result, so the signature needs a return type, e.g. `float32(float32, float32)`.');
      if (sig.args.length !== this.nin) fail(`it has ${sig.args.length} argument${sig.args.length === 1 ? '' : 's'} but the kernel takes ${this.nin}.`);
      const array = sig.args.findIndex((a) => a.kind === 'array');
      if (array >= 0) fail(`argument ${array + 1} is an array (\`${formatArgType(sig.args[array]!)}\`); vectorize kernels take scalars: use guvectorize for kernels over arrays.`);
      return;
    }
    if (sig.returnType !== 'void') fail(`a guvectorize kernel writes its outputs through array arguments, so the return type must be \`void\`, found \`${sig.returnType}\`.`);
    const n = this.nin + this.nout;
    if (sig.args.length !== n) {
      throw new LayoutError(
        `The layout \`${this.layout.text}\` has ${this.nin} input${this.nin === 1 ? '' : 's'} and ${this.nout} output${this.nout === 1 ? '' : 's'} (${n} operands) but the signature \`${sig.text}\` has ${sig.args.length} argument${sig.args.length === 1 ? '' : 's'}.`,
        this.layout.text,
      );
    }
    sig.args.forEach((arg, i) => {
      const core = i < this.nin ? this.layout.inputs[i]! : this.layout.outputs[i - this.nin]!;
      const what = i < this.nin ? `input ${i + 1}` : `output ${i - this.nin + 1}`;
      if (i >= this.nin && arg.kind === 'scalar') {
        fail(`${what} is the scalar \`${arg.dtype}\`, but a kernel can only write outputs that are arrays: declare it \`${arg.dtype}[:]\` (with layout \`()\`, write \`out[0]\`).`);
      }
      const ndim = arg.kind === 'array' ? arg.ndim : 0;
      const oneElement = ndim === 1 && core.length === 0;
      if (ndim !== core.length && !oneElement) {
        throw new LayoutError(
          `Argument ${i + 1} of \`${sig.text}\` is \`${formatArgType(arg)}\` (${ndim} dimension${ndim === 1 ? '' : 's'}) but the layout \`${this.layout.text}\` gives ${what} ${core.length} core dimension${core.length === 1 ? '' : 's'}.`,
          this.layout.text,
        );
      }
    });
  }

  private paramTypes(sig: Signature): ValueType[] {
    return sig.args.map((a) => (a.kind === 'array' ? { kind: 'array', dtype: a.dtype, ndim: a.ndim } : a.dtype));
  }

  private writable(): Set<number> {
    return new Set(this.kind === 'guvectorize' ? [...Array(this.nout).keys()].map((o) => this.nin + o) : []);
  }

  /** The kernel with this ufunc's `fastmath` option on it, for the fastmath pass (passes/fastmath.ts). */
  private marked(kernel: TypedKernel): TypedKernel {
    return this.fastmath ? { ...kernel, fastmath: true } : kernel;
  }

  /** Types the kernel for a signature now, so that type errors surface when the ufunc is made. */
  private specialise(signature: Signature, key: string, returnType?: 'infer' | DType): Specialisation {
    let consulted = false;
    const kernel = runPasses(this.marked(typeKernel(
      this.parsed,
      { params: this.paramTypes(signature), returnType: returnType ?? (this.kind === 'vectorize' ? (signature.returnType as DType) : 'void'), env: this.env },
      { writable: this.writable(), coreDims: () => ((consulted = true), 1) },
    )));
    return { signature, kernel: consulted ? undefined : kernel, byCoreDims: new Map(), key };
  }

  /** The typed kernel of a specialisation for this call's core dimension sizes. */
  kernelFor(spec: Specialisation, coreShapes: readonly (readonly number[])[]): { kernel: TypedKernel; key: string } {
    if (spec.kernel) return { kernel: spec.kernel, key: spec.key };
    const dimsKey = JSON.stringify(coreShapes);
    let kernel = spec.byCoreDims.get(dimsKey);
    if (!kernel) {
      kernel = runPasses(this.marked(typeKernel(
        this.parsed,
        { params: this.paramTypes(spec.signature), returnType: 'void', env: this.env },
        { writable: this.writable(), coreDims: (p, axis) => coreShapes[p]?.[axis] },
      )));
      spec.byCoreDims.set(dimsKey, kernel);
    }
    return { kernel, key: `${spec.key}:${dimsKey}` };
  }

  /**
   * Picks the loop for a call as NumPy does: the first signature the inputs cast to (safely, or by
   * the call's `casting` rule where `dtype`/`signature` forced the loop) among those with the forced
   * types and that the target can store; with no signatures (lazy vectorize) compiles one for the
   * argument dtypes. Outputs do not take part; they are cast from the loop's types afterwards.
   */
  select(inputs: readonly Operand[], request: LoopRequest = { casting: 'same_kind' }): Specialisation {
    const { casting, forced, canStore, storeLimit } = request;
    if (this.specialisations.length === 0) return this.lazySignature(inputs, request);
    const rule = forced ? casting : inputCasting(casting);
    const fits = (types: readonly ArgType[]) =>
      (!forced || types.every((t, k) => forced[k] === undefined || forced[k] === t.dtype)) &&
      inputs.every((op, i) => {
        const t = types[i]!.dtype;
        if (op.kind === 'scalar') return casting === 'unsafe' || canCastScalar(op.value, t);
        return canCast(op.dtype, t, rule) || (op.dtype === 'uint8' && t === 'bool' && casting === 'unsafe');
      });
    const unstorable: Specialisation[] = [];
    // A Uint8ClampedArray input prefers a loop that reads it as uint8c (whose outputs then clamp
    // too), before the first loop it merely casts to.
    const clampedInputs = inputs.flatMap((op, i) => (op.kind !== 'scalar' && op.dtype === 'uint8c' ? [i] : []));
    if (clampedInputs.length > 0) {
      for (const spec of this.specialisations) {
        const types = this.operandTypes(spec.signature);
        if (clampedInputs.every((i) => types[i]!.dtype === 'uint8c') && fits(types) && (!canStore || types.every((t) => canStore(t.dtype)))) return spec;
      }
    }
    for (const spec of this.specialisations) {
      const types = this.operandTypes(spec.signature);
      if (!fits(types)) continue;
      if (!canStore || types.every((t) => canStore(t.dtype))) return spec;
      unstorable.push(spec);
    }
    const [first] = unstorable;
    if (first && canStore) {
      const types = this.operandTypes(first.signature);
      const demotable = types.every((t) => canStore(t.dtype) || (t.dtype === 'float64' && canStore('float32')));
      if (this.options.float64 === 'float32' && demotable) return this.demoted(first);
      const missing = [...new Set(types.map((t) => t.dtype).filter((t) => !canStore(t)))].join(', ');
      throw new TargetUnavailableError(
        `No signature of this ufunc that the '${this.target}' target can run accepts the inputs (${describeInputs(inputs)}): \`${first.signature.text}\` fits them but needs ${missing}, which the target does not have${storeLimit ? ` (${storeLimit})` : ''}. Declare a float32 or int32 signature${missing === 'float64' ? ', pass `{ float64: \'float32\' }` to vectorize/guvectorize to run float64 signatures in float32,' : ''} or use target ${formatTargetNames(targetNames('host'))}.`,
      );
    }
    const forcedText = forced ? `; forced loop types: ${forced.map((t) => t ?? 'any').join(', ')} with casting '${casting}'` : '';
    throw new ArgumentError(
      `No signature of this ufunc accepts the inputs (${describeInputs(inputs)}${forcedText}). The signatures are:\n${this.specialisations
        .map((s) => `  ${s.signature.text}`)
        .join('\n')}\nInputs are cast only where no value changes (NumPy's safe casting), unless \`signature\` or \`dtype\` forces a loop: convert the data, add a signature, or force one with \`casting\`.`,
    );
  }

  /** A float64 signature's twin typed in float32, for targets without float64 (option `float64: 'float32'`). */
  private demoted(spec: Specialisation): Specialisation {
    const key = `${spec.key}:f32`;
    const known = this.lazy.get(key);
    if (known) return known;
    const f32 = (t: ArgType): ArgType => (t.dtype === 'float64' ? { ...t, dtype: 'float32' } : t);
    const sig = spec.signature;
    const signature: Signature = {
      text: `${sig.text} (run in float32)`,
      returnType: sig.returnType === 'float64' ? 'float32' : sig.returnType,
      args: sig.args.map(f32),
    };
    const twin = { ...this.specialise(signature, key), accepts: this.operandTypes(sig) };
    this.lazy.set(key, twin);
    return twin;
  }

  /** The operand types a call sees for a specialisation (inputs then outputs). */
  acceptedTypes(spec: Specialisation): readonly ArgType[] {
    return spec.accepts ?? this.operandTypes(spec.signature);
  }

  private lazySignature(inputs: readonly Operand[], request: LoopRequest): Specialisation {
    const arrayTypes = inputs.filter((op): op is ArrayOperand | DeviceOperand => op.kind !== 'scalar').map((op) => op.dtype);
    const forced = request.forced;
    const dtypes = inputs.map((op, i) => forced?.[i] ?? (op.kind === 'scalar' ? scalarDtype(op.value, arrayTypes) : op.dtype));
    inputs.forEach((op, i) => {
      if (op.kind !== 'scalar' && !canCast(op.dtype, dtypes[i]!, request.casting)) {
        throw new ArgumentError(`Cannot cast argument ${i + 1} from ${op.dtype} to the forced ${dtypes[i]} with casting '${request.casting}'.`);
      }
    });
    const returnType = forced?.[this.nin];
    const key = `${dtypes.join(',')}${returnType ? `->${returnType}` : ''}`;
    let spec = this.lazy.get(key);
    if (!spec) {
      const provisional: Signature = { text: `(${dtypes.join(', ')})`, returnType: returnType ?? 'float64', args: dtypes.map((dtype) => ({ kind: 'scalar', dtype })) };
      if (returnType && this.kind === 'vectorize') {
        // A forced result type is the loop's output, cast from what the kernel computes under the
        // call's casting rule, as NumPy casts a loop's result (`dtype: 'int8'` of a float kernel
        // is refused under 'same_kind', not truncated).
        const natural = this.specialise(provisional, `${this.id}:lazy:${key}:natural`, 'infer').kernel!.returnType as DType;
        if (!canCast(natural, returnType, request.casting)) {
          throw new ArgumentError(
            `The kernel computes a ${natural} result for inputs (${dtypes.join(', ')}), which cannot be cast to the forced ${returnType} with casting '${request.casting}' (NumPy's rule): pass \`casting: 'unsafe'\` to convert it anyway, or another \`dtype\`.`,
          );
        }
      }
      const typed = this.specialise(provisional, `${this.id}:lazy:${key}`, returnType ?? 'infer');
      const inferred = typed.kernel!.returnType as DType;
      const signature: Signature = { ...provisional, text: `${inferred}(${dtypes.join(', ')})`, returnType: inferred };
      spec = { ...typed, signature };
      this.lazy.set(key, spec);
    }
    return spec;
  }

  /** Checks, once per signature, that the target can run the kernel. */
  checkTarget(target: Target, spec: Specialisation, kernel: TypedKernel): void {
    if (this.checkedFor.has(spec) || !target.checkKernel) return;
    target.checkKernel(kernel, spec.signature.text);
    this.checkedFor.add(spec);
  }
}

/** The dtype a JS scalar takes in a lazily typed call (NEP 50: it adapts to the arrays it meets). */
function scalarDtype(value: number | bigint | boolean, arrays: readonly DType[]): DType {
  if (typeof value === 'boolean') return 'bool';
  if (typeof value === 'bigint') return 'int64';
  const float = arrays.find((t) => DTYPES[t].kind === 'f');
  if (float) return arrays.includes('float64') ? 'float64' : float;
  if (Number.isInteger(value) && arrays.length > 0) {
    const widest = arrays.reduce((a, b) => (DTYPES[b].bits > DTYPES[a].bits ? b : a));
    if (canCastScalar(value, widest)) return widest === 'bool' ? 'int32' : widest;
  }
  return 'float64';
}

/** How messages list a call's inputs: `float32, number 2`. */
function describeInputs(inputs: readonly Operand[]): string {
  return inputs.map((op) => (op.kind === 'scalar' ? `${typeof op.value} ${String(op.value)}` : op.dtype)).join(', ');
}

/** An operand viewed with some of its axes permuted (`perm[d]` is the original axis of new axis d). */
function permuted<T extends ArrayOperand | DeviceOperand>(op: T, perm: readonly number[]): T {
  return { ...op, shape: perm.map((d) => op.shape[d]!), strides: perm.map((d) => op.strides[d]!) };
}

/** A call turned into a plan, with what is needed to hand results back. */
export interface PreparedCall {
  readonly plan: CallPlan;
  readonly target: Target;
  /** Outputs to allocate on the device before running (gpu calls with device inputs). */
  readonly deviceOutputs: readonly { readonly output: number; readonly shape: readonly number[]; readonly dtype: DType }[];
  readonly finish: () => unknown;
  readonly setDeviceOutput: (o: number, array: unknown) => void;
}

/**
 * Checks a call's arguments and builds its plan. Throws before anything is written.
 */
export function prepareCall(def: UfuncDefinition, args: readonly unknown[], target: Target): PreparedCall {
  const { inputs: rawInputs, outs: rawOuts, options } = splitArguments(args, def.nin, def.nout);
  const casting = checkCasting(options.casting);
  let inputs = rawInputs.map((x, i) => toOperand(x, `argument ${i + 1}`));
  const outWhat = (o: number) => (def.nout === 1 ? '`out`' : `\`out[${o}]\``);
  let outs = def.layout.outputs.map((_, o) => {
    const x = rawOuts?.[o];
    if (x === undefined || x === null) return undefined;
    const op = toOperand(x, outWhat(o));
    if (op.kind === 'scalar') throw new ArgumentError(`${outWhat(o)} must be an array, found ${describe(x)}.`);
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
    const at = normaliseAxes(axes, op.shape.length, outWhat(o));
    const view = permuted(op, axesLast(op.shape.length, at));
    if (!keepdims) return view;
    if (at.some((d) => op.shape[d] !== 1)) throw new ArgumentError(`${outWhat(o)} has shape [${op.shape.join(', ')}], but with \`keepdims\` its axes ${at.join(', ')} must have size 1.`);
    return { ...view, shape: view.shape.slice(0, -at.length), strides: view.strides.slice(0, -at.length) };
  });

  const forced = forcedTypes(options, def.nin, def.nout, (sig) => def.operandTypes(sig));
  const spec = def.select(inputs, { casting, forced, canStore: target.canStore, storeLimit: target.storeLimit });
  const types = def.operandTypes(spec.signature);
  const accepted = def.acceptedTypes(spec);
  const anyDevice = [...inputs, ...outs].some((op) => op?.kind === 'device');
  if (anyDevice && target.memory !== 'device') {
    const i = [...inputs, ...outs].findIndex((op) => op?.kind === 'device');
    throw new ArgumentError(`Argument ${i + 1} is a DeviceArray, which lives on a device, but this ufunc's target is '${target.name}': call \`await x.toHost()\` first, or use target ${formatTargetNames(targetNames('device'))}.`);
  }
  // The dtype each output ends up with: a given out's own, else the forced or accepted one.
  const resultTypes = def.layout.outputs.map((_, o) => {
    const given = outs[o];
    return given ? given.dtype : forced?.[def.nin + o] ?? accepted[def.nin + o]!.dtype;
  });
  resultTypes.forEach((to, o) => {
    const from = types[def.nin + o]!.dtype;
    // A loop run in other types than its signature's (float64 run in float32) casts its outputs at
    // least as freely as 'same_kind' allows, and 'unsafe' when the call asks for it.
    if (!canCast(from, to, spec.accepts && casting !== 'unsafe' ? 'same_kind' : casting)) {
      throw new ArgumentError(`Cannot cast output ${o + 1} of the loop \`${spec.signature.text}\` from ${from} to ${to} with casting '${casting}'${casting === 'unsafe' ? '' : ": pass `casting: 'unsafe'` to allow it, or an output of another dtype"}.`);
    }
  });

  inputs.forEach((op, i) => {
    if (op.kind === 'scalar' && def.layout.inputs[i]!.length > 0) {
      throw new ArgumentError(`Argument ${i + 1} must be an array with core dimensions ${coreText(def, i)}, found ${describe(rawInputs[i])}.`);
    }
  });
  const sched = schedule(
    def.layout,
    inputs.map((op, i): ScheduledInput => ({ shape: op.kind === 'scalar' ? [] : op.shape, what: `argument ${i + 1}` })),
    outs.map((op, o): ScheduledInput | undefined => (op ? { shape: (op as ArrayOperand).shape, what: outWhat(o) } : undefined)),
    options.dims,
    mask ? [{ shape: mask.shape, what: '`where`' }] : [],
  );
  const loopRank = sched.loopShape.length;
  // Core shapes as the kernel sees them: `()` operands declared as arrays are one-element slices.
  const viewCoreShape = (k: number, shape: readonly number[]) => (types[k]!.kind === 'array' && shape.length === 0 ? [1] : [...shape]);
  const coreShapes = [...sched.inputCoreShapes, ...sched.outputCoreShapes].map((s, k) => viewCoreShape(k, s));
  const { kernel, key } = def.kernelFor(spec, coreShapes);
  def.checkTarget(target, spec, kernel);

  const inputViews = inputs.map((op, i): OperandView => {
    const t = types[i]!;
    const coreRank = def.layout.inputs[i]!.length;
    if (op.kind === 'scalar') {
      const value = convertConstant(op.value, t.dtype);
      const data = new DTYPES[t.dtype].arrayType(1);
      (data as unknown as unknown[])[0] = t.dtype === 'bool' ? (value ? 1 : 0) : value;
      return {
        dtype: t.dtype, data, offset: 0, loopStrides: new Array(loopRank).fill(0), coreShape: coreShapes[i]!, coreStrides: coreShapes[i]!.map(() => 0),
        ...(t.kind === 'scalar' ? { scalar: value } : {}),
      };
    }
    let arr: ArrayOperand | DeviceOperand = op;
    if (op.kind === 'device' && op.dtype !== t.dtype) {
      throw new ArgumentError(`Argument ${i + 1} is a ${op.dtype} DeviceArray but the loop \`${spec.signature.text}\` reads ${t.dtype}; device arrays are not converted: pass a ${t.dtype} one.`);
    }
    if (op.kind === 'array' && op.dtype !== t.dtype && !sameBytes(op.dtype, t.dtype)) {
      // Casts are done once up front, so kernels read their declared type directly.
      const data = copyToContiguous(op, t.dtype);
      arr = { ...op, data, dtype: t.dtype, strides: cOrderStrides(op.shape), offset: 0 };
    }
    return viewOf(arr, t.dtype, loopRank, coreRank, coreShapes[i]!);
  });

  /**
   * Outputs the kernel cannot write directly (another dtype, a clamping Uint8ClampedArray, a
   * `where` mask) get a temporary of the loop's dtype; `finish` stores it into the real output.
   */
  interface Staged { readonly temp: TypedArray; readonly dest: { data: TypedArray; dtype: DType; strides: number[]; offset: number }; readonly shape: number[] }
  const staged: (Staged | undefined)[] = [];
  /**
   * The same for calls on device arrays: the kernel writes a device temporary of the loop's dtype,
   * and `finish` stores it on the device (deviceStore: cast, masked) into the given DeviceArray or a
   * new one of the result dtype — nothing goes through host memory.
   */
  const deviceStaged: ({ readonly given: DeviceOperand | undefined; readonly shape: number[]; readonly resultType: DType; readonly allocShape: number[] } | undefined)[] = [];
  const deviceOutputs: { output: number; shape: number[]; dtype: DType }[] = [];
  const allocated: ({ data: TypedArray; shape: number[]; strides: number[] } | undefined)[] = [];
  const masked = mask !== undefined || maskAll;
  /** A vectorize call on device arrays whose `where`/cast is done in the kernel's store (fused-store.ts). */
  let fused: { readonly mask: 'none' | 'zero' | 'keep'; readonly resultType: DType; readonly given: DeviceOperand | undefined } | undefined;
  const outputViews = def.layout.outputs.map((core, o): OperandView => {
    const k = def.nin + o;
    const dtype = types[k]!.dtype;
    const given = outs[o];
    const fullShape = [...sched.loopShape, ...sched.outputCoreShapes[o]!];
    const needsStaging = masked || resultTypes[o] !== dtype;
    if (needsStaging && (anyDevice || given?.kind === 'device')) {
      if (given && given.kind !== 'device') {
        throw new ArgumentError(`Output ${o + 1}: a call on device arrays writes device outputs, so \`out\` must be a DeviceArray, found a host array; with \`where\` or a cast its store runs on the device.`);
      }
      if (def.kind === 'vectorize' && def.nout === 1 && !maskAll) {
        // In the kernel's own store (fused-store.ts): no device temporary, no second kernel.
        const resultType = resultTypes[o]!;
        fused = { mask: mask ? (given ? 'keep' : 'zero') : 'none', resultType, given: given as DeviceOperand | undefined };
        if (given) return viewOf(given as DeviceOperand, resultType, loopRank, core.length, coreShapes[k]!);
        deviceOutputs.push({ output: o, shape: fullShape, dtype: resultType });
        return { dtype: resultType, data: { kind: 'device' }, offset: 0, loopStrides: [], coreShape: coreShapes[k]!, coreStrides: [] };
      }
      // The temporary is in loop-then-core order; an allocated output is in the caller's layout (`axes`, `keepdims`), as on the host.
      const axes = requested[k];
      const keptCore = keepdims ? coreShapes[0]!.map(() => 1) : sched.outputCoreShapes[o]!;
      const allocShape = axes ? placeCoreAxes(sched.loopShape, keptCore, normaliseAxes(axes, loopRank + keptCore.length, `the axes of output ${o + 1}`)) : fullShape;
      deviceStaged[o] = { given: given as DeviceOperand | undefined, shape: fullShape, resultType: resultTypes[o]!, allocShape };
      deviceOutputs.push({ output: o, shape: fullShape, dtype });
      return { dtype, data: { kind: 'device' }, offset: 0, loopStrides: [], coreShape: coreShapes[k]!, coreStrides: [] };
    }
    let dest: ArrayOperand | DeviceOperand;
    if (given) dest = given as ArrayOperand | DeviceOperand;
    else {
      // Allocated in the caller's layout: with `axes`, core dimensions where they asked; with `keepdims`, size-1 axes too.
      const axes = requested[k];
      const keptCore = keepdims ? coreShapes[0]!.map(() => 1) : sched.outputCoreShapes[o]!;
      const finalShape = axes ? placeCoreAxes(sched.loopShape, keptCore, normaliseAxes(axes, loopRank + keptCore.length, `the axes of output ${o + 1}`)) : fullShape;
      if (anyDevice) {
        deviceOutputs.push({ output: o, shape: finalShape, dtype });
        return { dtype, data: { kind: 'device' }, offset: 0, loopStrides: [], coreShape: coreShapes[k]!, coreStrides: [] };
      }
      const type = resultTypes[o]!;
      const data = allocateOutput(needsStaging ? undefined : target, finalShape, type, def.nout === 1 ? 'the output' : `output ${o + 1}`);
      const strides = cOrderStrides(finalShape);
      allocated[o] = { data, shape: finalShape, strides };
      let view: ArrayOperand = { kind: 'array', data, dtype: type, shape: finalShape, strides, offset: 0, plain: false, original: undefined };
      if (axes) {
        const at = normaliseAxes(axes, finalShape.length, `the axes of output ${o + 1}`);
        view = permuted(view, axesLast(finalShape.length, at));
        if (keepdims) view = { ...view, shape: view.shape.slice(0, -at.length), strides: view.strides.slice(0, -at.length) };
      }
      dest = view;
    }
    if (needsStaging) {
      const arr = dest as ArrayOperand;
      const temp = allocateOutput(target, fullShape, dtype, def.nout === 1 ? 'the output' : `output ${o + 1}`);
      staged[o] = { temp, dest: { data: arr.data, dtype: arr.dtype, strides: [...arr.strides], offset: arr.offset }, shape: fullShape };
      const tempView: ArrayOperand = { kind: 'array', data: temp, dtype, shape: fullShape, strides: cOrderStrides(fullShape), offset: 0, plain: false, original: undefined };
      return viewOf(tempView, dtype, loopRank, core.length, coreShapes[k]!);
    }
    return viewOf(dest, dtype, loopRank, core.length, coreShapes[k]!);
  });

  // A fused store reads the mask, and a given out's old elements, as further inputs.
  const extraInputs: OperandView[] = [];
  if (fused && fused.mask !== 'none') extraInputs.push(viewOf(mask!, 'bool', loopRank, 0, []));
  if (fused?.mask === 'keep') extraInputs.push(viewOf(fused.given!, fused.resultType, loopRank, 0, []));
  const views = [...inputViews, ...extraInputs, ...outputViews];
  const nin = def.nin + extraInputs.length;
  separateOverlaps(views, nin);
  const limits = limitsOf(options);
  const plan: CallPlan = {
    kind: def.kind,
    kernel: fused ? fuseStore(kernel, fused.resultType, fused.mask) : kernel,
    kernelKey: fused ? `${key}:store>${fused.resultType}:${fused.mask}` : key,
    loopShape: sched.loopShape, operands: views, nin, boundsCheck: def.boundsCheck,
    ...(limits ? { limits } : {}),
    // Operands are inputs then outputs here (no fused-store inputs), in the layout's core order.
    ...(def.kind === 'guvectorize' && !fused
      ? { coreNames: [...def.layout.inputs, ...def.layout.outputs].map((core) => core.map((d) => (d.kind === 'symbol' ? d.name : undefined))) }
      : {}),
  };

  const allPlain = inputs.every((op) => op.kind !== 'array' || op.plain) && !requested.some((a) => a);
  const allScalar = inputs.every((op) => op.kind === 'scalar') && !mask;
  const deviceResults: unknown[] = [];
  const finish = (): unknown => {
    if (deviceStaged.some((d) => d)) return finishOnDevice();
    return finishHere();
  };
  const finishOnDevice = async (): Promise<unknown> => {
    for (let o = 0; o < deviceStaged.length; o++) {
      const st = deviceStaged[o];
      if (!st) continue;
      const temp = deviceResults[o] as { destroy(): void };
      const dest = st.given ? st.given.array : await target.allocateDeviceArray!(st.allocShape, st.resultType);
      // The store writes through a view of the output in the temporary's order (loop dimensions, then core ones).
      const axes = requested[def.nin + o];
      const into = !axes ? dest : st.given ? deviceView(st.given.array, st.given.shape, st.given.strides, st.given.offset) : coreLast(dest as DeviceOperand['array'], axes);
      const maskView = mask && {
        data: mask.data, dtype: 'bool', offset: mask.offset,
        // The mask covers loop dimensions: aligned to them, with size-1 axes over the core dimensions.
        shape: [...new Array<number>(loopRank - mask.shape.length).fill(1), ...mask.shape, ...new Array<number>(st.shape.length - loopRank).fill(1)],
        strides: [...new Array<number>(loopRank - mask.shape.length).fill(0), ...mask.strides, ...new Array<number>(st.shape.length - loopRank).fill(0)],
      };
      await deviceStore(target, temp, into, types[def.nin + o]!.dtype, st.resultType, maskAll ? false : maskView, st.given !== undefined);
      temp.destroy();
      deviceResults[o] = dest;
    }
    return finishHere();
  };
  const finishHere = () => {
    staged.forEach((st, o) => {
      if (!st || maskAll) return;
      // The mask covers loop dimensions; each masked-in loop index writes its whole core slice.
      const coreRank = st.shape.length - loopRank;
      const maskView = mask && {
        data: mask.data,
        offset: mask.offset,
        strides: [...loopStridesFor(mask.shape, mask.strides, loopRank, 0), ...new Array<number>(coreRank).fill(0)],
      };
      storeCast(st.temp, types[def.nin + o]!.dtype, st.dest, st.shape, maskView);
    });
    const results = def.layout.outputs.map((_, o) => {
      const given = outs[o];
      if (given) return given.kind === 'device' ? given.array : (given as ArrayOperand).original;
      if (deviceResults[o] !== undefined) return deviceResults[o];
      const { data, shape, strides } = allocated[o]!;
      const dtype = resultTypes[o]!;
      if (shape.length === 0 && allScalar) {
        const v = data[0]!;
        return dtype === 'bool' ? v !== 0 : v;
      }
      if (shape.length === 1 && allPlain) return data;
      const result: NDArray = { data, shape, strides, offset: 0, dtype, order: orderOf(shape, strides) };
      return result;
    });
    return def.nout === 1 ? results[0] : results;
  };
  /** A view of a device output with its core dimensions last (dropped with `keepdims`), as kernels write it. */
  const coreLast = (a: DeviceOperand['array'], axes: NonNullable<(typeof requested)[number]>): DeviceOperand['array'] => {
    const at = normaliseAxes(axes, a.shape.length, 'the axes of an output');
    const perm = axesLast(a.shape.length, at);
    const keep = keepdims ? perm.length - at.length : perm.length;
    return deviceView(a, perm.slice(0, keep).map((d) => a.shape[d]!), perm.slice(0, keep).map((d) => a.strides[d]!), a.offset);
  };
  const setDeviceOutput = (o: number, array: unknown) => {
    deviceResults[o] = array;
    let a = array as DeviceOperand['array'];
    const k = def.nin + o;
    const axes = requested[k];
    // (A staged output's temporary is already in loop-then-core order.)
    if (axes && !deviceStaged[o]) a = coreLast(a, axes);
    (views as OperandView[])[nin + o] = viewOf({ kind: 'device', array: a, dtype: a.dtype, shape: a.shape, strides: a.strides, offset: a.offset }, a.dtype, loopRank, def.layout.outputs[o]!.length, coreShapes[k]!);
  };
  return { plan, target, deviceOutputs, finish, setDeviceOutput };
}

/**
 * Allocates a host output, turning a size no typed array can have (a broadcast of huge loop
 * dimensions, `dims: { n: 2 ** 40 }`) or an allocation that fails into an `ArgumentError` that
 * says how large the output would be, instead of V8's bare `RangeError`.
 */
function allocateOutput(target: Target | undefined, shape: readonly number[], dtype: DType, what: string): TypedArray {
  const length = sizeOf(shape);
  const bytes = length * DTYPES[dtype].bytes;
  const tooLarge = (why: string, cause?: unknown) =>
    new ArgumentError(
      `${what[0]!.toUpperCase()}${what.slice(1)} would have shape [${shape.join(', ')}]: ${exactProduct(shape)} ${dtype} elements, ${why}. Check the arguments' shapes and \`dims\`.`,
      cause === undefined ? undefined : { cause },
    );
  if (!Number.isSafeInteger(bytes) || length > MAX_ARRAY_LENGTH) throw tooLarge(`more than a typed array can hold (${MAX_ARRAY_LENGTH} elements)`);
  try {
    return target?.allocateOutput?.(length, dtype) ?? new DTYPES[dtype].arrayType(length);
  } catch (e) {
    if (e instanceof RangeError) throw tooLarge(`which could not be allocated (${e.message})`, e);
    throw e;
  }
}

function exactProduct(shape: readonly number[]): string {
  return shape.reduce((p, n) => p * BigInt(n), 1n).toString();
}

/** The longest typed array V8 makes on 64-bit machines (2³² elements since V8 9; larger ones throw). */
const MAX_ARRAY_LENGTH = 2 ** 32;

function coreText(def: UfuncDefinition, i: number): string {
  return `(${def.layout.inputs[i]!.map((d) => (d.kind === 'symbol' ? d.name : d.size)).join(',')})`;
}

function viewOf(op: ArrayOperand | DeviceOperand, dtype: DType, loopRank: number, coreRank: number, coreShape: readonly number[]): OperandView {
  const split = op.shape.length - coreRank;
  const coreStrides = coreRank === 0 ? coreShape.map(() => 1) : op.strides.slice(split);
  return {
    dtype,
    data: op.kind === 'device' ? (op.array as unknown as OperandView['data']) : op.data,
    offset: op.offset,
    loopStrides: loopStridesFor(op.shape, op.strides, loopRank, coreRank),
    coreShape,
    coreStrides,
  };
}

/**
 * An output that shares memory with an input, other than as the very same view (the in-place
 * case kernels are written for), would be read after being written: copy that input first, as
 * NumPy does.
 */
function separateOverlaps(views: OperandView[], nin: number): void {
  for (let o = nin; o < views.length; o++) {
    const out = views[o]!;
    if (!ArrayBuffer.isView(out.data)) continue;
    for (let i = 0; i < nin; i++) {
      const input = views[i]!;
      if (!ArrayBuffer.isView(input.data) || input.scalar !== undefined || input.data.buffer !== out.data.buffer) continue;
      const same =
        input.data === out.data && input.offset === out.offset &&
        input.loopStrides.every((s, d) => s === out.loopStrides[d]) && input.coreStrides.every((s, a) => s === out.coreStrides[a]);
      if (same || !bytesOverlap(input, out)) continue;
      const a = input.data as TypedArray;
      views[i] = { ...input, data: a.slice() as TypedArray };
    }
  }
}

function bytesOverlap(a: OperandView, b: OperandView): boolean {
  const range = (v: OperandView) => {
    const d = v.data as TypedArray;
    return [d.byteOffset, d.byteOffset + d.byteLength];
  };
  const [a0, a1] = range(a);
  const [b0, b1] = range(b);
  return a0! < b1! && b0! < a1!;
}

/** Runs a prepared call on its target, asynchronously. */
export function runPrepared(call: PreparedCall): Promise<unknown> {
  // Without waiting where the target allows it: the call reads its host inputs before returning.
  try {
    const now = call.deviceOutputs.map(({ shape, dtype }) => call.target.allocateDeviceArrayNow?.(shape, dtype));
    if (now.every((a) => a !== undefined)) {
      now.forEach((a, k) => call.setDeviceOutput(call.deviceOutputs[k]!.output, a));
      return runGuarded(call.target, call.plan).then(() => call.finish());
    }
  } catch (e) {
    return Promise.reject(e);
  }
  return runPreparedAsync(call);
}

async function runPreparedAsync(call: PreparedCall): Promise<unknown> {
  if (call.deviceOutputs.length) {
    for (const { output, shape, dtype } of call.deviceOutputs) {
      call.setDeviceOutput(output, await call.target.allocateDeviceArray!(shape, dtype));
    }
  }
  await runGuarded(call.target, call.plan);
  return call.finish();
}

/**
 * Runs a plan on its target, asynchronously. An array whose buffer is detached (transferred)
 * while the call runs makes V8 throw a bare `TypeError` wherever the call next touches it (a
 * copy to or from the GPU, a copy back from shared memory): such failures, and outputs detached by
 * the time the call ends, become an `ArgumentError` naming the operand.
 *
 * @param target - the call's target
 * @param plan - the call's plan
 * @example
 * await runGuarded(target, plan);
 */
export async function runGuarded(target: Target, plan: CallPlan): Promise<void> {
  const stop = limitExceeded(plan.limits, target.name);
  if (stop) throw stop; // an already aborted signal: nothing runs
  const epoch = shutdownEpoch();
  try {
    const work = target.run(plan);
    // Recorded on the device with nothing to wait for (a chained gpu call): no shutdown race, whose
    // promises cost more than the rest of a small call and pile reactions onto the shutdown promise.
    if (work === ENQUEUED) return;
    if (target.memory === 'device') {
      // Work on a device cannot be stopped: the call is answered at `shutdown()` without it.
      const shut = Symbol('shutdown');
      if ((await Promise.race([work, whenShutdown().then(() => shut)])) === shut) {
        work.catch(() => {});
        throw shutdownError(target.name, undefined, 'device');
      }
    } else {
      await work;
    }
  } catch (e) {
    if (e instanceof TypeError || e instanceof RangeError) throwIfDetached(plan, 0);
    // `shutdown()` ran meanwhile: whatever the call failed with (a lost device, a stopped worker), that is why.
    if (epoch !== shutdownEpoch() && !(e instanceof CallCancelledError)) throw shutdownError(target.name, e, target.memory === 'device' ? 'device' : 'workers');
    throw e;
  }
  throwIfDetached(plan, plan.nin);
}

function throwIfDetached(plan: CallPlan, from: number): void {
  for (let k = from; k < plan.operands.length; k++) {
    const data = plan.operands[k]!.data;
    if (ArrayBuffer.isView(data)) {
      assertAttached(data, k < plan.nin ? `argument ${k + 1}` : plan.operands.length - plan.nin === 1 ? '`out`' : `\`out[${k - plan.nin}]\``, true);
    }
  }
}

/** The store ufuncs of device outputs with `where` or a cast, by (target, from, to, masked, keep). */
const deviceStores = new Map<string, UfuncDefinition>();

/**
 * Stores a device temporary into a device output on the device itself: converted from the loop's
 * dtype `from` to the output's `to` (the cast was allowed by the call's `casting` already), and,
 * with a mask, only where it is true; elsewhere the output keeps its elements (`keep`, a given
 * `out`) or gets zeros (an allocated output, as host outputs do).
 */
async function deviceStore(target: Target, temp: unknown, dest: unknown, from: DType, to: DType, mask: false | object | undefined, keep: boolean): Promise<void> {
  const masked = mask !== undefined;
  const key = `${target.name}:${from}>${to}:${masked}:${keep}`;
  let store = deviceStores.get(key);
  if (!store) {
    const kernel = !masked
      ? function store(v: number) {
          return v;
        }
      : keep
        ? function store(v: number, m: boolean, old: number) {
            if (m) {
              return v;
            }
            return old;
          }
        : function store(v: number, m: boolean) {
            if (m) {
              return v;
            }
            return 0;
          };
    const signature = !masked ? `${to}(${from})` : keep ? `${to}(${from}, bool, ${to})` : `${to}(${from}, bool)`;
    const layout = parseLayout(!masked ? '()->()' : keep ? '(),(),()->()' : '(),()->()');
    store = new UfuncDefinition('vectorize', kernel, [signature], layout, { target: target.name as TargetName });
    deviceStores.set(key, store);
  }
  const args = !masked ? [temp] : keep ? [temp, mask, dest] : [temp, mask];
  // A call with `casting` takes no fast path (callable.ts): the general path is the whole call.
  await runPrepared(prepareCall(store, [...args, { out: dest, casting: 'unsafe' }], target));
}

/** Whether a loop may read an input of dtype `stored` as `read` in place: bool, uint8 and uint8c are all bytes of 0…255 (bool: 0 or 1). */
function sameBytes(stored: DType, read: DType): boolean {
  return (stored === 'uint8' && read === 'bool') || (stored === 'uint8' && read === 'uint8c') || (stored === 'uint8c' && read === 'uint8');
}

/** A DeviceArray's view (DeviceArray.view) of other shape and strides, over the same buffer. */
function deviceView(a: DeviceOperand['array'], shape: readonly number[], strides: readonly number[], offset: number): DeviceOperand['array'] {
  return (a as unknown as { view(shape: readonly number[], strides: readonly number[], offset: number): DeviceOperand['array'] }).view(shape, strides, offset);
}
