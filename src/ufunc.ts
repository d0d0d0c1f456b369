/**
 * What vectorize and guvectorize share: a ufunc definition (kernel, signatures, layout, target),
 * signature dispatch, the per-signature typed kernels, and turning a call's arguments into a
 * `CallPlan` for the target — every check done before anything is written.
 */
import { loopStridesFor, schedule, type ScheduledInput } from './broadcast.js';
import type { TypedKernel, ValueType } from './compiler/ir.js';
import { type KernelEnv, convertConstant, typeKernel } from './compiler/lower.js';
import { type ParsedFunction, parseFunction } from './compiler/parse.js';
import { canCastSafely, canCastScalar, type DType, DTYPES, type TypedArray } from './dtypes.js';
import { ArgumentError, LayoutError, SignatureError } from './errors.js';
import { cOrderStrides, sizeOf } from './layout.js';
import {
  type ArrayOperand, copyToContiguous, describe, type DeviceOperand, type NDArray, type Operand, toOperand,
} from './ndarray.js';
import { checkOptions, type OptionRules, rule } from './options.js';
import type { CallPlan, OperandView } from './plan.js';
import type { FastEntry } from './fast-call.js';
import { type ArgType, formatArgType, type Layout, parseSignature, type Signature } from './signature-parser/index.js';
import { DEFAULT_TARGET, formatTargetNames, targetEntry, targetNames } from './targets/registry.js';
import type { Target, TargetName } from './targets/target.js';

/** Options of `vectorize(…)` and `guvectorize(…)`. */
export interface UfuncOptions {
  /** Where calls run: a name in the target registry. @default 'cpu' */
  readonly target?: TargetName;
  /** Helper functions and numeric constants the kernel may use by name. */
  readonly env?: KernelEnv;
  /** Check array indices in kernels against core dimensions (a `KernelRuntimeError` when outside). @default true */
  readonly boundsCheck?: boolean;
  /** The identity of a two-input vectorize ufunc, used by `reduce` on empty axes (as NumPy's `identity`). */
  readonly identity?: number | bigint | boolean;
}

/** The options of `guvectorize(…)`: the target's name is checked against the registry. */
export const GUVECTORIZE_OPTIONS: OptionRules = {
  // An unknown name is a TargetUnavailableError listing the registered targets.
  target: (name) => (targetEntry(name), undefined),
  env: rule.object('an object of constants and helper functions'),
  boundsCheck: rule.boolean(),
};

/** The options of `vectorize(…)`: those of guvectorize, and the identity its `reduce` starts from. */
export const VECTORIZE_OPTIONS: OptionRules = { ...GUVECTORIZE_OPTIONS, identity: rule.scalar() };

/** Options a call may pass as its last argument. */
export interface CallOptions {
  /** Preallocated output(s); may be an input itself, for in-place kernels. */
  readonly out?: unknown;
  /** Sizes of core dimensions that appear only in outputs: `()->(n)` with `{ dims: { n: 16 } }`. */
  readonly dims?: Readonly<Record<string, number>>;
}

/** The options of a call. */
export const CALL_OPTIONS: OptionRules = {
  out: rule.any(),
  dims: rule.object('an object of core dimension sizes, e.g. `{ n: 16 }`'),
};

export type UfuncKind = 'vectorize' | 'guvectorize';

interface Specialisation {
  readonly signature: Signature;
  /** The eagerly typed kernel, or undefined when its typing depends on core dimension sizes. */
  readonly kernel: TypedKernel | undefined;
  readonly byCoreDims: Map<string, TypedKernel>;
  readonly key: string;
}

let nextUfuncId = 0;

/** The shared machinery behind one vectorize or guvectorize ufunc. */
export class UfuncDefinition {
  readonly id = nextUfuncId++;
  readonly parsed: ParsedFunction;
  readonly target: TargetName;
  readonly env: KernelEnv;
  readonly boundsCheck: boolean;
  private readonly specialisations: Specialisation[] = [];
  /** Lazily compiled vectorize signatures, by input dtype tuple. */
  private readonly lazy = new Map<string, Specialisation>();
  private readonly checkedFor = new Set<Specialisation>();
  /** Fast-path entries by argument kinds (fast-call.ts); null where such calls need the general path. */
  readonly fastEntries = new Map<number, FastEntry | null>();

  constructor(
    readonly kind: UfuncKind,
    fn: Function,
    signatures: readonly string[],
    readonly layout: Layout,
    readonly options: UfuncOptions,
  ) {
    checkOptions(options, kind === 'vectorize' ? VECTORIZE_OPTIONS : GUVECTORIZE_OPTIONS, `\`${kind}\``);
    this.target = targetEntry(options.target ?? DEFAULT_TARGET).name as TargetName;
    this.env = options.env ?? {};
    this.boundsCheck = options.boundsCheck ?? true;
    this.parsed = parseFunction(fn);
    for (const text of signatures) {
      const signature = parseSignature(text);
      this.checkSignature(signature);
      this.specialisations.push(this.specialise(signature, `${this.id}:${this.specialisations.length}`));
    }
  }

  get nin(): number {
    return this.layout.inputs.length;
  }

  get nout(): number {
    return this.layout.outputs.length;
  }

  get signatures(): readonly Signature[] {
    return [...this.specialisations, ...this.lazy.values()].map((s) => s.signature);
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

  /** Types the kernel for a signature now, so that type errors surface when the ufunc is made. */
  private specialise(signature: Signature, key: string, returnType?: 'infer'): Specialisation {
    let consulted = false;
    const kernel = typeKernel(
      this.parsed,
      { params: this.paramTypes(signature), returnType: returnType ?? (this.kind === 'vectorize' ? (signature.returnType as DType) : 'void'), env: this.env },
      { writable: this.writable(), coreDims: () => ((consulted = true), 1) },
    );
    return { signature, kernel: consulted ? undefined : kernel, byCoreDims: new Map(), key };
  }

  /** The typed kernel of a specialisation for this call's core dimension sizes. */
  kernelFor(spec: Specialisation, coreShapes: readonly (readonly number[])[]): { kernel: TypedKernel; key: string } {
    if (spec.kernel) return { kernel: spec.kernel, key: spec.key };
    const dimsKey = JSON.stringify(coreShapes);
    let kernel = spec.byCoreDims.get(dimsKey);
    if (!kernel) {
      kernel = typeKernel(
        this.parsed,
        { params: this.paramTypes(spec.signature), returnType: 'void', env: this.env },
        { writable: this.writable(), coreDims: (p, axis) => coreShapes[p]?.[axis] },
      );
      spec.byCoreDims.set(dimsKey, kernel);
    }
    return { kernel, key: `${spec.key}:${dimsKey}` };
  }

  /**
   * Picks the first signature whose inputs every argument casts to safely (NumPy's rule), or with no
   * signatures (lazy vectorize) compiles one for the argument dtypes.
   */
  select(inputs: readonly Operand[], outs: readonly (Operand | undefined)[]): Specialisation {
    if (this.specialisations.length === 0) return this.lazySignature(inputs);
    for (const spec of this.specialisations) {
      const types = this.operandTypes(spec.signature);
      const inputsFit = inputs.every((op, i) => {
        const t = types[i]!;
        return op.kind === 'scalar' ? canCastScalar(op.value, t.dtype) : canCastSafely(op.dtype, t.dtype);
      });
      const outsFit = outs.every((op, o) => !op || op.kind === 'scalar' || op.dtype === types[this.nin + o]!.dtype);
      if (inputsFit && outsFit) return spec;
    }
    const found = inputs.map((op) => (op.kind === 'scalar' ? `${typeof op.value} ${String(op.value)}` : op.dtype)).join(', ');
    const outFound = outs.some((o) => o) ? `; out: ${outs.map((o) => (o && o.kind !== 'scalar' ? o.dtype : '—')).join(', ')}` : '';
    throw new ArgumentError(
      `No signature of this ufunc accepts the inputs (${found}${outFound}). The signatures are:\n${this.specialisations
        .map((s) => `  ${s.signature.text}`)
        .join('\n')}\nInputs are cast only where no value changes (NumPy's safe casting; outputs must match exactly): convert the data or add a signature.`,
    );
  }

  private lazySignature(inputs: readonly Operand[]): Specialisation {
    const arrayTypes = inputs.filter((op): op is ArrayOperand | DeviceOperand => op.kind !== 'scalar').map((op) => op.dtype);
    const dtypes = inputs.map((op) => (op.kind === 'scalar' ? scalarDtype(op.value, arrayTypes) : op.dtype));
    const key = dtypes.join(',');
    let spec = this.lazy.get(key);
    if (!spec) {
      const provisional: Signature = { text: `(${dtypes.join(', ')})`, returnType: 'float64', args: dtypes.map((dtype) => ({ kind: 'scalar', dtype })) };
      const typed = this.specialise(provisional, `${this.id}:lazy:${key}`, 'infer');
      const returnType = typed.kernel!.returnType as DType;
      const signature: Signature = { ...provisional, text: `${returnType}(${dtypes.join(', ')})`, returnType };
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

/** Splits a trailing options object off the arguments. */
export function splitArguments(args: readonly unknown[], nin: number): { inputs: unknown[]; options: CallOptions } {
  const last = args[args.length - 1];
  const isOptions =
    args.length === nin + 1 &&
    typeof last === 'object' && last !== null && !ArrayBuffer.isView(last) && !('data' in last) && (last as { kind?: unknown }).kind !== 'device';
  const inputs = isOptions ? args.slice(0, -1) : [...args];
  const options = (isOptions ? last : {}) as CallOptions;
  if (isOptions) checkOptions(options, CALL_OPTIONS, 'a call');
  if (inputs.length !== nin) {
    throw new ArgumentError(`This ufunc takes ${nin} input${nin === 1 ? '' : 's'}, found ${inputs.length} argument${inputs.length === 1 ? '' : 's'}${args.length === nin + 1 && !isOptions ? ` (the last one, ${describe(last)}, is not an options object)` : ''}.`);
  }
  return { inputs, options };
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
  const { inputs: rawInputs, options } = splitArguments(args, def.nin);
  const inputs = rawInputs.map((x, i) => toOperand(x, `argument ${i + 1}`));
  const rawOuts = options.out === undefined ? [] : def.nout === 1 && !(Array.isArray(options.out) && options.out.length === 1) ? [options.out] : (options.out as unknown[]);
  if (options.out !== undefined && (!Array.isArray(rawOuts) || rawOuts.length !== def.nout)) {
    throw new ArgumentError(`\`out\` must be ${def.nout === 1 ? 'one array' : `an array of ${def.nout} arrays`} (this ufunc has ${def.nout} output${def.nout === 1 ? '' : 's'}), found ${describe(options.out)}.`);
  }
  const outs = def.layout.outputs.map((_, o) => {
    const x = rawOuts[o];
    if (x === undefined) return undefined;
    const op = toOperand(x, def.nout === 1 ? '`out`' : `\`out[${o}]\``);
    if (op.kind === 'scalar') throw new ArgumentError(`\`out\` must be an array, found ${describe(x)}.`);
    return op;
  });

  const spec = def.select(inputs, outs);
  const types = def.operandTypes(spec.signature);
  const anyDevice = [...inputs, ...outs].some((op) => op?.kind === 'device');
  if (anyDevice && target.memory !== 'device') {
    const i = [...inputs, ...outs].findIndex((op) => op?.kind === 'device');
    throw new ArgumentError(`Argument ${i + 1} is a DeviceArray, which lives on a device, but this ufunc's target is '${target.name}': call \`await x.toHost()\` first, or use target ${formatTargetNames(targetNames('device'))}.`);
  }

  inputs.forEach((op, i) => {
    if (op.kind === 'scalar' && def.layout.inputs[i]!.length > 0) {
      throw new ArgumentError(`Argument ${i + 1} must be an array with core dimensions ${coreText(def, i)}, found ${describe(rawInputs[i])}.`);
    }
  });
  const sched = schedule(
    def.layout,
    inputs.map((op, i): ScheduledInput => ({ shape: op.kind === 'scalar' ? [] : op.shape, what: `argument ${i + 1}` })),
    outs.map((op, o): ScheduledInput | undefined => (op ? { shape: (op as ArrayOperand).shape, what: def.nout === 1 ? '`out`' : `\`out[${o}]\`` } : undefined)),
    options.dims,
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
    if (op.kind === 'array' && op.dtype !== t.dtype && !(op.dtype === 'uint8' && t.dtype === 'bool')) {
      // Safe casts are done once up front, so kernels read their declared type directly.
      const data = copyToContiguous(op, t.dtype);
      arr = { ...op, data, dtype: t.dtype, strides: cOrderStrides(op.shape), offset: 0 };
    }
    return viewOf(arr, t.dtype, loopRank, coreRank, coreShapes[i]!);
  });

  const deviceOutputs: { output: number; shape: number[]; dtype: DType }[] = [];
  const allocated: (TypedArray | undefined)[] = [];
  const outputViews = def.layout.outputs.map((core, o): OperandView => {
    const k = def.nin + o;
    const dtype = types[k]!.dtype;
    const given = outs[o];
    if (given) return viewOf(given as ArrayOperand | DeviceOperand, dtype, loopRank, core.length, coreShapes[k]!);
    const shape = [...sched.loopShape, ...sched.outputCoreShapes[o]!];
    if (anyDevice) {
      deviceOutputs.push({ output: o, shape, dtype });
      return { dtype, data: { kind: 'device' }, offset: 0, loopStrides: [], coreShape: coreShapes[k]!, coreStrides: [] };
    }
    const data = target.allocateOutput?.(sizeOf(shape), dtype) ?? new DTYPES[dtype].arrayType(sizeOf(shape));
    allocated[o] = data;
    return viewOf({ kind: 'array', data, dtype, shape, strides: cOrderStrides(shape), offset: 0, plain: false, original: undefined }, dtype, loopRank, core.length, coreShapes[k]!);
  });

  const views = [...inputViews, ...outputViews];
  separateOverlaps(views, def.nin);
  const plan: CallPlan = { kind: def.kind, kernel, kernelKey: key, loopShape: sched.loopShape, operands: views, nin: def.nin, boundsCheck: def.boundsCheck };

  const allPlain = inputs.every((op) => op.kind !== 'array' || op.plain);
  const allScalar = inputs.every((op) => op.kind === 'scalar');
  const deviceResults: unknown[] = [];
  const finish = () => {
    const results = def.layout.outputs.map((_, o) => {
      const given = outs[o];
      if (given) return given.kind === 'device' ? given.array : (given as ArrayOperand).original;
      if (deviceResults[o] !== undefined) return deviceResults[o];
      const data = allocated[o]!;
      const dtype = types[def.nin + o]!.dtype;
      const shape = [...sched.loopShape, ...sched.outputCoreShapes[o]!];
      if (shape.length === 0 && allScalar) {
        const v = data[0]!;
        return dtype === 'bool' ? v !== 0 : v;
      }
      if (shape.length === 1 && allPlain) return data;
      const result: NDArray = { data, shape, strides: cOrderStrides(shape), offset: 0, dtype };
      return result;
    });
    return def.nout === 1 ? results[0] : results;
  };
  const setDeviceOutput = (o: number, array: unknown) => {
    deviceResults[o] = array;
    const a = array as DeviceOperand['array'];
    const k = def.nin + o;
    (views as OperandView[])[k] = viewOf({ kind: 'device', array: a, dtype: a.dtype, shape: a.shape, strides: a.strides, offset: a.offset }, a.dtype, loopRank, def.layout.outputs[o]!.length, coreShapes[k]!);
  };
  return { plan, target, deviceOutputs, finish, setDeviceOutput };
}

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
      return call.target.run(call.plan).then(() => call.finish());
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
  await call.target.run(call.plan);
  return call.finish();
}
