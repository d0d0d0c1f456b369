/**
 * The definition of a ufunc, what vectorize and guvectorize share: options, kernel, signatures,
 * layout and target; signature dispatch (`select`), and the per-signature typed kernels
 * (`kernelFor`), typed and run through the compiler's passes once. Calls are planned from it by
 * prepare-call.ts and run by run-call.ts.
 */
import type { TypedKernel, ValueType } from './compiler/ir.js';
import { type KernelEnv, typeKernel } from './compiler/lower.js';
import { type ParsedFunction, parseFunction } from './compiler/parse.js';
import { runPasses } from './compiler/passes/index.js';
import { type DType, DTYPES } from './dtypes.js';
import { type Casting, canCast, canCastScalar, inputCasting } from './cast-rules.js';
import { CALL_OPTIONS, type CallOptions } from './call-options.js';
import { ArgumentError, KernelCompileError, LayoutError, SignatureError, TargetUnavailableError } from './errors.js';
import { type ArrayOperand, describe, type DeviceOperand, type Operand } from './ndarray.js';
import { checkOptions, type OptionRules, rule } from './options.js';
import type { PlanTemplate } from './plan.js';
import { type ArgType, formatArgType, type Layout, parseSignature, type Signature } from './signature-parser/index.js';
import { DEFAULT_TARGET, formatTargetNames, targetEntry, type TargetName, targetNames, warmUpTarget } from './targets/registry.js';
import type { Target } from './targets/target.js';
import { freezeTables } from './compiler/tables.js';

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
  /**
   * Runs the kernel as the plain JS function it is, on the calling thread, instead of compiling it
   * (Numba's `NUMBA_DISABLE_JIT=1`; the environment variable `UFUNC_DISABLE_JIT=1` turns it on for
   * every ufunc made while it is set). Array arguments are views that check every index, so
   * `console.log`, `debugger` and breakpoints work; results come back in the containers the target
   * gives (device arrays on the gpu). Arithmetic is JS's: float32 rounds and integers wrap only when
   * stored (docs/debugging.md lists the differences). For debugging, not for speed.
   * @default false, or true where `UFUNC_DISABLE_JIT` is set (to anything but `0` or empty)
   */
  readonly disableJit?: boolean;
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
  disableJit: rule.boolean(),
};

/** The options of `vectorize(…)`: those of guvectorize, and the identity its `reduce` starts from. */
export const VECTORIZE_OPTIONS: OptionRules = {
  ...GUVECTORIZE_OPTIONS,
  identity: (v) => (v === 'reorderable' || rule.scalar()(v) === undefined ? undefined : "a number, a bigint, a boolean or 'reorderable'"),
};

export type { CallOptions };

/**
 * Whether `UFUNC_DISABLE_JIT` is set (to anything but `0` or empty), as Numba reads
 * `NUMBA_DISABLE_JIT`: the default of the `disableJit` option of ufuncs made while it is. Never set
 * in a page (no `process`).
 */
export function jitDisabledByEnvironment(): boolean {
  const setting = typeof process === 'undefined' ? undefined : process.env?.UFUNC_DISABLE_JIT;
  return setting !== undefined && setting !== '' && setting !== '0';
}

/** The options a public factory makes its ufunc with: `disableJit` defaults to `UFUNC_DISABLE_JIT`. */
export function withJitSetting(options: UfuncOptions): UfuncOptions {
  return options.disableJit === undefined && jitDisabledByEnvironment() ? { ...options, disableJit: true } : options;
}

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
  /** The `disableJit` option (see UfuncOptions): calls run the plain function (plain-kernel.ts), nothing is compiled. */
  readonly disableJit: boolean;
  private readonly specialisations: Specialisation[] = [];
  /** Lazily compiled vectorize signatures, by input dtype tuple. */
  private readonly lazy = new Map<string, Specialisation>();
  private readonly checkedFor = new Set<Specialisation>();
  /** The plan cache's templates, by the key of their argument facts (plan-cache.ts). */
  readonly plans = new Map<number, PlanTemplate>();

  constructor(
    readonly kind: UfuncKind,
    fn: Function | string,
    signatures: readonly string[],
    readonly layout: Layout,
    readonly options: UfuncOptions,
  ) {
    checkOptions(options, kind === 'vectorize' ? VECTORIZE_OPTIONS : GUVECTORIZE_OPTIONS, `\`${kind}\``);
    this.target = targetEntry(options.target ?? DEFAULT_TARGET).name as TargetName;
    this.env = freezeTables(options.env ?? {});
    this.boundsCheck = options.boundsCheck ?? true;
    this.fastmath = options.fastmath === true;
    this.disableJit = options.disableJit === true;
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
        const returnType = resultType(typed);
        this.specialisations.push({ ...typed, signature: { ...signature, returnType, text: `${returnType}${text.trim()}` } });
        continue;
      }
      this.checkSignature(signature);
      this.specialisations.push(this.specialise(signature, key));
    }
    // Once the definition is known good: the parallel target's workers start now, in the background.
    if (!this.disableJit) warmUpTarget(this.target); // a plain-JS ufunc runs on the calling thread
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

  /** How many loops the ufunc has (declared, and compiled lazily so far): selections cached while it is unchanged stay right. */
  get loopCount(): number {
    return this.specialisations.length + this.lazy.size;
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
    if (this.disableJit) return this.untyped(signature, key, returnType);
    let consulted = false;
    const kernel = runPasses(this.marked(typeKernel(
      this.parsed,
      { params: this.paramTypes(signature), returnType: returnType ?? (this.kind === 'vectorize' ? (signature.returnType as DType) : 'void'), env: this.env },
      { writable: this.writable(), coreDims: () => ((consulted = true), 1) },
    )));
    return { signature, kernel: consulted ? undefined : kernel, byCoreDims: new Map(), key };
  }

  /**
   * A specialisation of a ufunc whose kernel runs as plain JS (`disableJit`): nothing is typed. Where
   * the signature leaves the result type to the kernel (a lazy vectorize), the compiler infers it
   * as it would for the compiled kernel, so results have the same dtype either way; a kernel the
   * compiler refuses (it calls `console.log`, say) returns float64, JS's number.
   */
  private untyped(signature: Signature, key: string, returnType?: 'infer' | DType): Specialisation {
    if (returnType !== 'infer') return { signature, kernel: undefined, byCoreDims: new Map(), key };
    let inferred: DType = 'float64';
    try {
      const params = this.paramTypes(signature);
      inferred = typeKernel(this.parsed, { params, returnType: 'infer', env: this.env }, { writable: this.writable(), coreDims: () => 1 }).returnType as DType;
    } catch (e) {
      if (!(e instanceof KernelCompileError)) throw e;
    }
    return { signature: { ...signature, returnType: inferred }, kernel: undefined, byCoreDims: new Map(), key };
  }

  /**
   * What a plan of a plain-JS call (`disableJit`) carries in place of a typed kernel: the
   * signature's parameter and result types, and no body. Only plain-kernel.ts runs such plans; no
   * target compiles them.
   */
  signatureKernel(spec: Specialisation): { kernel: TypedKernel; key: string } {
    const { signature } = spec;
    const names = this.parsed.params;
    const params = this.paramTypes(signature).map((type, id) => ({ id, name: names[id] ?? `arg${id}`, type }));
    const returnType = this.kind === 'vectorize' ? (signature.returnType as DType) : 'void';
    return { kernel: { name: this.parsed.name, params, returnType, body: [], locals: [], helpers: [], source: this.parsed.source }, key: `${spec.key}:plain` };
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
        const natural = resultType(this.specialise(provisional, `${this.id}:lazy:${key}:natural`, 'infer'));
        if (!canCast(natural, returnType, request.casting)) {
          throw new ArgumentError(
            `The kernel computes a ${natural} result for inputs (${dtypes.join(', ')}), which cannot be cast to the forced ${returnType} with casting '${request.casting}' (NumPy's rule): pass \`casting: 'unsafe'\` to convert it anyway, or another \`dtype\`.`,
          );
        }
      }
      const typed = this.specialise(provisional, `${this.id}:lazy:${key}`, returnType ?? 'infer');
      const inferred = resultType(typed);
      const signature: Signature = { ...provisional, text: `${inferred}(${dtypes.join(', ')})`, returnType: inferred };
      spec = { ...typed, signature };
      this.lazy.set(key, spec);
    }
    return spec;
  }

  /** Checks, once per signature, that the target can run the kernel. */
  checkTarget(target: Target, spec: Specialisation, kernel: TypedKernel): void {
    if (this.checkedFor.has(spec) || !target.checkKernel) return;
    target.checkKernel(kernel, spec.signature.text, this.options.float64);
    this.checkedFor.add(spec);
  }
}

/** The result type of a vectorize specialisation: its typed kernel's, or (plain JS, `disableJit`) its signature's. */
function resultType(spec: Specialisation): DType {
  return (spec.kernel?.returnType ?? spec.signature.returnType) as DType;
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

