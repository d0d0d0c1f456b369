/**
 * From a trace to one kernel: which calls fuse, the loop each call selects (exactly as the
 * separate call would: same signature dispatch, same casting), the fused kernel's parameters, and
 * the key under which its compiled ufunc is cached. Or the reason the trace does not fuse.
 *
 * The front sees the result as an ordinary vectorize ufunc (`FusedDefinition`): its one signature
 * takes each parameter in the dtype its step's loop reads, so the front converts arrays and scalars
 * as the separate calls did, and `out`, `where`, `casting`, broadcasting, device arrays and every
 * target work as for any ufunc.
 */
import { makeCallable, type Ufunc } from '../callable.js';
import { type CallOptions, forcedTypes, splitArguments } from '../call-options.js';
import { numberCastClass } from '../cast-rules.js';
import { isArrayType, type TypedKernel, type ValueType } from '../compiler/ir.js';
import { convertConstant } from '../compiler/constant-folding.js';
import { runPasses } from '../compiler/passes/index.js';
import type { DType } from '../dtypes.js';
import { ArgumentError } from '../errors.js';
import { type Operand, toOperand } from '../ndarray.js';
import { type CoreDim, formatCoreDims, parseLayout } from '../signature-parser/index.js';
import type { Target } from '../targets/target.js';
import { UfuncDefinition, type UfuncOptions } from '../ufunc.js';
import { type ComposedStep, composeKernels, type StepInput } from '../compiler/compose.js';
import { drawsRandom } from '../compiler/random-stream.js';
import { type TracedCall, Tracer } from './trace.js';
import { type AroundGufunc, aroundGufunc, type Cores, coresAround, fusedGufunc, gufuncRefusal, kernelWithoutCoreSizes, paramType, type PlannedStep } from './around-gufunc.js';

/** The options the chain's last call takes from the fused call: they pick its loop. */
export interface LoopOptions {
  readonly dtype?: CallOptions['dtype'];
  readonly signature?: CallOptions['signature'];
  readonly casting?: CallOptions['casting'];
}

/** A trace that fuses: the fused ufunc's arguments and what the fused kernel computes. */
export interface FusedChain {
  readonly kind: 'fused';
  /** A key equal for traces that compile to the same kernel. */
  readonly key: string;
  /** Where each of the fused kernel's arguments comes from, in a trace of this shape. */
  readonly sources: readonly ParamSource[];
  /** The calls fused, in order (`saxpy(…) (call 1)`, …). */
  readonly calls: readonly string[];
  /** The fused kernel of a chain of element-wise calls, made on first use of the key. */
  readonly build?: () => { readonly kernel: TypedKernel; readonly params: readonly FusedParam[] };
  /** A chain around a guvectorize call: its kernel is made per call's core sizes. */
  readonly around?: AroundGufunc;
  readonly target: string;
  readonly boundsCheck: boolean;
  /** The index in the trace of a trailing `reduce` that runs as a second call over the fused result. */
  readonly reduce?: number;
}

/**
 * Where an argument of the fused kernel comes from: an argument of the fused function, or an
 * argument of a traced call (an array it closes over, or a scalar converted to the loop's dtype).
 */
export type ParamSource =
  | { readonly kind: 'input'; readonly index: number; readonly drop?: number }
  | { readonly kind: 'captured'; readonly call: number; readonly arg: number; readonly drop?: number }
  | { readonly kind: 'scalar'; readonly call: number; readonly arg: number; readonly dtype: DType };

/**
 * The fused kernel's arguments for a trace of the shape the chain was planned for.
 *
 * @param chain - the plan
 * @param calls - this call's trace
 * @param rawArgs - this call's arguments of the fused function
 * @returns the arguments, in the order of the fused kernel's parameters
 */
export function argumentsOf(chain: FusedChain, calls: readonly TracedCall[], rawArgs: readonly unknown[]): unknown[] {
  return chain.sources.map((s) => {
    if (s.kind === 'input') return s.drop ? withoutTrailingAxes(rawArgs[s.index], s.drop) : rawArgs[s.index];
    const value = calls[s.call]!.args[s.arg];
    if (s.kind === 'scalar') return convertConstant(value as number | bigint | boolean, s.dtype);
    return s.drop ? withoutTrailingAxes(value, s.drop) : value;
  });
}

/** A parameter of the fused kernel, as `explain` shows it. */
export interface FusedParam {
  readonly name: string;
  readonly dtype: DType;
  /** A scalar, or (around a gufunc) a core slice. */
  readonly type: ValueType;
  /** Around a gufunc: the core dimensions it is read over (none for a scalar or outside a gufunc chain). */
  readonly core: readonly CoreDim[];
  /** `argument 1`, `a captured array`, `the scalar 2` */
  readonly from: string;
}

/** A trace that does not fuse, and why (a sentence naming the call). */
export interface Unfusable {
  readonly kind: 'unfusable';
  readonly reason: string;
}

/** Which of a call's options may appear on a call inside a fused function (they pick its loop). */
const INNER_OPTIONS = new Set(['dtype', 'signature', 'casting']);

/**
 * Plans one trace: the loop of every call, the fused kernel's parameters and the cache key.
 *
 * @param calls - the trace's calls, in the order the function made them
 * @param result - what the function returned
 * @param rawArgs - the fused function's arguments (the arrays the tracers stand for)
 * @param loop - `dtype`, `signature`, `casting` of the fused call: the last call's loop
 * @param target - the target of the ufuncs (all must share it)
 * @returns the plan, or why the trace does not fuse
 * @throws the errors the separate calls would throw (no signature accepts the inputs, …)
 */
export function planChain(calls: readonly TracedCall[], result: unknown, rawArgs: readonly unknown[], loop: LoopOptions, target: Target): FusedChain | Unfusable {
  if (!(result instanceof Tracer)) {
    return { kind: 'unfusable', reason: `the function returned ${Array.isArray(result) ? 'an array of values' : 'something other than the result of a ufunc call'}; a fused function returns the result of its last ufunc call` };
  }
  if (result.value.kind === 'input') return { kind: 'unfusable', reason: `the function returned ${result.what} without calling a ufunc on it` };
  let last = calls[result.value.index]!;
  let reduce: TracedCall | undefined;
  if (last.method === 'reduce') {
    reduce = last;
    const x = last.args[0];
    if (!(x instanceof Tracer) || x.value.kind !== 'call') return { kind: 'unfusable', reason: `${last.what} reduces ${x instanceof Tracer ? x.what : 'a value'} that no fused call computed: nothing to fuse` };
    last = calls[x.value.index]!;
  }
  const used = usedCalls(calls, last);
  const elementwise = calls.filter((c) => c !== reduce);
  for (const call of elementwise) {
    if (call.method !== 'call') return { kind: 'unfusable', reason: `${call.what} is a method other than a trailing \`reduce\`; only a \`reduce\` of the fused result can end a fused function` };
    if (call.def.disableJit) return { kind: 'unfusable', reason: `${call.what} runs its kernel as plain JS (\`disableJit\` or UFUNC_DISABLE_JIT): nothing is compiled, so nothing fuses` };
    if (call.def.target !== target.name) return { kind: 'unfusable', reason: `${call.what} runs on the '${call.def.target}' target and ${last.what} on '${target.name}'; the calls of a fused function share one target` };
  }
  const gufuncs = elementwise.filter((c) => used.has(c) && c.def.kind === 'guvectorize');
  if (gufuncs.length === 0) return planCalls(elementwise, used, last, rawArgs, loop, target, reduce, undefined);
  if (gufuncs.length > 1) {
    return { kind: 'unfusable', reason: `${gufuncs[0]!.what} and ${gufuncs[1]!.what} are both guvectorize ufuncs; a fused kernel runs one gufunc's core loop, with element-wise steps before and after it (a second would need the first one's core results held between them)` };
  }
  const cores = coresAround(gufuncs[0]!, calls, last);
  return cores.kind === 'unfusable' ? cores : planCalls(elementwise, used, last, rawArgs, loop, target, reduce, cores);
}

/**
 * A key equal for traces that plan alike, computed without planning: per call its ufunc, method
 * and the shape of its arguments (which tracer, a scalar's class, a captured array's dtype and
 * identity pattern, an options object's loop options), the result, the dtypes of the fused
 * function's arrays and the fused call's loop options. Everything `planChain` decides from is in
 * it: a scalar's class says which dtypes it casts to (`numberCastClass`), so signature dispatch picks
 * the same loops; shapes and strides are not (the fused ufunc's call handles them).
 *
 * @example traceKey(trace.calls, result, args, { dtype: 'float64' })
 */
export function traceKey(calls: readonly TracedCall[], result: unknown, rawArgs: readonly unknown[], loop: LoopOptions): string {
  const captured = new Map<unknown, number>();
  let key = '';
  for (const call of calls) {
    key += `${call.def.id}.${call.method}(`;
    for (const a of call.args) key += `${argumentKey(a, captured)},`;
    key += ')';
  }
  key += `=>${result instanceof Tracer ? `${result.value.kind}${result.value.index}` : typeof result}|`;
  // Around a gufunc, which axes of size 1 an array has decides how it is read (broadcastAlongCore).
  const ones = calls.some((c) => c.def.kind === 'guvectorize') ? (a: unknown) => onesKey(a) : () => '';
  for (const a of rawArgs) key += `${arrayKey(a) ?? '-'}${ones(a)},`;
  for (const a of captured.keys()) key += ones(a);
  if (loop.dtype !== undefined || loop.signature !== undefined || loop.casting !== undefined) key += JSON.stringify([loop.dtype, loop.signature, loop.casting]);
  return key;
}

function argumentKey(a: unknown, captured: Map<unknown, number>): string {
  if (a instanceof Tracer) return `${a.value.kind === 'input' ? 'i' : 'c'}${a.value.index}`;
  if (typeof a === 'number') return `n${numberCastClass(a)}`;
  if (typeof a === 'boolean') return 'b';
  if (typeof a === 'bigint') return `B${a}`;
  const array = arrayKey(a);
  if (array !== undefined) {
    let k = captured.get(a);
    if (k === undefined) captured.set(a, (k = captured.size));
    return `a${k}:${array}`;
  }
  if (typeof a === 'object' && a !== null) {
    const o = a as CallOptions;
    return `o${Object.keys(o).join('.')}${JSON.stringify([o.dtype, o.signature, o.casting])}`;
  }
  return `?${typeof a}`;
}

/** An array's axes of size 1 (`.1.n`), for plans around a gufunc; '' for a non-array. */
function onesKey(a: unknown): string {
  if (arrayKey(a) === undefined) return '';
  const op = toOperand(a, 'an argument');
  return op.kind === 'scalar' ? '' : op.shape.map((d) => (d === 1 ? '.1' : '.n')).join('');
}

/** What planning reads of an array (its dtype and where it lives), or undefined for a non-array. */
function arrayKey(a: unknown): string | undefined {
  if (ArrayBuffer.isView(a)) return a.constructor.name;
  if (typeof a !== 'object' || a === null) return undefined;
  if ((a as { kind?: unknown }).kind === 'device') return `d${(a as { dtype: string }).dtype}`;
  const data = (a as { data?: unknown }).data;
  if (data === undefined || a instanceof Tracer) return undefined;
  return `n${(data as object)?.constructor?.name}${String((a as { dtype?: unknown }).dtype ?? '')}`;
}

/** The calls the result depends on. */
function usedCalls(calls: readonly TracedCall[], last: TracedCall): Set<TracedCall> {
  const used = new Set<TracedCall>();
  const visit = (call: TracedCall) => {
    if (used.has(call)) return;
    used.add(call);
    for (const a of call.args) if (a instanceof Tracer && a.value.kind === 'call') visit(calls[a.value.index]!);
  };
  visit(last);
  return used;
}

/**
 * Selects every call's loop in order (a call whose result is not used is checked as its separate
 * call would be, so it fails alike, and then left out of the kernel: it has no effect) and builds
 * the kernel's parameters and steps from the calls the result uses. With a guvectorize call among
 * them, each array parameter is read over the core dimensions of where its step runs (`cores`).
 */
function planCalls(calls: readonly TracedCall[], used: ReadonlySet<TracedCall>, last: TracedCall, rawArgs: readonly unknown[], loop: LoopOptions, target: Target, reduce: TracedCall | undefined, cores: Cores | undefined): FusedChain | Unfusable {
  const params: FusedParam[] = [];
  const sources: ParamSource[] = [];
  /** By array, then by how it is read (dtype, core dimensions, slice or scalar): its parameter. */
  const arrayParams = new Map<unknown, Map<string, number>>();
  const steps: PlannedStep[] = [];
  const stepOf = new Map<number, number>(); // trace call index → step index
  const resultDtypes = new Map<number, DType>(); // by trace call index
  const keyParts: string[] = [];
  let captured = 0;
  const fastmath = new Set<boolean>();
  const coreSizes = cores ? largestCoreSizes(calls, used, cores, rawArgs) : new Map<string, Map<string, number>>();
  if ('kind' in coreSizes) return coreSizes;
  for (const call of calls) {
    const { def } = call;
    const { inputs: rawInputs, outs, options } = splitArguments(call.args, def.nin, def.nout);
    if (outs) return { kind: 'unfusable', reason: `${call.what} writes a given \`out\`; inside a fused function, results pass from call to call and only the fused call takes \`out\`` };
    const extra = Object.keys(options).filter((k) => !INNER_OPTIONS.has(k) && options[k as keyof CallOptions] !== undefined);
    if (extra.length) return { kind: 'unfusable', reason: `${call.what} passes \`${extra[0]}\`; calls inside a fused function may pass only \`dtype\`, \`signature\` and \`casting\` (the fused call takes \`${extra[0]}\`)` };
    const isLast = call === last && !reduce;
    const own = isLast ? mergeLoopOptions(options, loop, call) : options;
    const operands = rawInputs.map((x, i): Operand => {
      if (x instanceof Tracer) {
        if (x.value.kind === 'call') return { kind: 'array', dtype: resultDtypes.get(x.value.index)!, data: new Float32Array(0), shape: [], strides: [], offset: 0, plain: true, original: undefined };
        return toOperand(rawArgs[x.value.index], `argument ${x.value.index + 1} of the fused function`);
      }
      return toOperand(x, `argument ${i + 1} of ${call.what}`);
    });
    const casting = own.casting ?? 'same_kind';
    const forced = forcedTypes(own, def.nin, def.nout, (sig) => def.operandTypes(sig));
    const spec = def.select(operands, { casting, forced, canStore: target.canStore });
    const types = def.operandTypes(spec.signature);
    if (def.acceptedTypes(spec).some((t, k) => t.dtype !== types[k]!.dtype)) {
      return { kind: 'unfusable', reason: `${call.what} runs a float64 signature in float32 (option \`float64: 'float32'\`), which converts its arrays outside the kernel` };
    }
    const gufunc = def.kind === 'guvectorize';
    const kernel = gufunc ? kernelWithoutCoreSizes(def, spec) : def.kernelFor(spec, types.map(() => [])).kernel;
    if (kernel) def.checkTarget(target, spec, kernel);
    resultDtypes.set(call.index, types[def.nin]!.dtype);
    if (!used.has(call)) continue;
    if (gufunc && kernel) {
      const refusal = gufuncRefusal(call, kernel, rawInputs, cores!);
      if (refusal) return { kind: 'unfusable', reason: refusal };
    }
    fastmath.add(def.fastmath);
    const inputs: StepInput[] = [];
    for (let i = 0; i < rawInputs.length; i++) {
      const x = rawInputs[i];
      const dtype = types[i]!.dtype;
      // (select() took the earlier result's dtype as an array's: the cast it allowed is the one the copy did.)
      if (x instanceof Tracer && x.value.kind === 'call') {
        inputs.push({ kind: 'step', index: stepOf.get(x.value.index)! });
        continue;
      }
      // How the fused kernel reads it: as the gufunc declares its input, or per element of the step's core dimensions.
      const op = operands[i]!;
      let core = cores ? (gufunc ? def.layout.inputs[i]! : cores.ofCall.get(call.index)!) : [];
      // An array of size 1 (or none) along every core dimension, which the separate calls broadcast
      // along them (shape [m, 1] against rows of n), is read once per core slice, those axes dropped.
      const here = cores && !gufunc ? coreSizes.get(cores.contextOf.get(call.index)!) : undefined;
      const drop = here && op.kind !== 'scalar' && core.some((d) => (here.get(formatCoreDims([d])) ?? 1) > 1) ? broadcastAlongCore(op.shape, core.length) : undefined;
      if (drop !== undefined) core = [];
      const type: ValueType = gufunc ? paramType(types[i]!) : core.length ? { kind: 'array', dtype, ndim: core.length } : dtype;
      if (op.kind === 'scalar') {
        params.push({ name: `s${params.length}`, dtype, type: gufunc ? type : dtype, core: gufunc ? core : [], from: `the scalar ${String(op.value)}` });
        sources.push({ kind: 'scalar', call: call.index, arg: i, dtype });
        inputs.push({ kind: 'param', index: params.length - 1 });
        continue;
      }
      if (op.kind === 'device' && op.dtype !== dtype) {
        throw new ArgumentError(`Argument ${i + 1} of ${call.what} is a ${op.dtype} DeviceArray but the loop \`${spec.signature.text}\` reads ${dtype}; device arrays are not converted: pass a ${dtype} one.`);
      }
      const raw = x instanceof Tracer ? rawArgs[x.value.index] : x;
      let reads = arrayParams.get(raw);
      if (!reads) arrayParams.set(raw, (reads = new Map()));
      const how = `${dtype}${formatCoreDims(core)}${isArrayType(type) ? '[]' : ''}`;
      let index = reads.get(how);
      if (index === undefined) {
        const from = x instanceof Tracer ? x.what : `a captured array (${++captured})`;
        const shapes = new Set([...reads.keys()].map((k) => k.replace(/^[a-z0-9]+|\[\]$/g, '')));
        shapes.add(formatCoreDims(core));
        if (shapes.size > 1) {
          return { kind: 'unfusable', reason: `${from} is read over the core dimensions ${[...shapes].join(' and ')} by different calls, which the separate calls broadcast differently (whole rows in one, elements in another); one kernel reads each array one way` };
        }
        params.push({ name: x instanceof Tracer && x.value.kind === 'input' ? `arg${x.value.index + 1}` : `captured${captured}`, dtype, type, core, from });
        const dropped = drop ? { drop } : {};
        sources.push(x instanceof Tracer ? { kind: 'input', index: (x.value as { index: number }).index, ...dropped } : { kind: 'captured', call: call.index, arg: i, ...dropped });
        index = params.length - 1;
        reads.set(how, index);
      }
      inputs.push({ kind: 'param', index });
    }
    stepOf.set(call.index, steps.length);
    const key = `${def.id}/${spec.key}(${inputs.map((s) => (s.kind === 'param' ? `p${s.index}` : `s${s.index}`)).join(',')})`;
    steps.push(gufunc ? { call, gufunc: { def, spec }, inputs, key } : { call, kernel: kernel!, inputs, key });
    keyParts.push(key);
  }
  if (steps.some((s) => s.kernel && drawsRandom(s.kernel))) return { kind: 'unfusable', reason: 'a kernel calls `Math.random()`, whose stream belongs to one call (its own seed and element numbering)' };
  if (fastmath.size > 1) return { kind: 'unfusable', reason: 'some of its ufuncs were made with `fastmath` and some without; one kernel computes `Math.exp` one way' };
  const boundsCheck = calls.some((c) => c.def.boundsCheck);
  const key = `${target.name}|${boundsCheck}|${params.map((p) => `${p.dtype}${cores ? formatCoreDims(p.core) : ''}`).join(',')}|${keyParts.join(';')}`;
  const common = { kind: 'fused' as const, key, sources, calls: steps.map((s) => s.call.what), target: target.name, boundsCheck, ...(reduce ? { reduce: reduce.index } : {}) };
  if (cores) return { ...common, around: aroundGufunc(steps, params, stepOf, cores, last) };
  const build = () => {
    const composed: ComposedStep[] = steps.map((s) => ({ kernel: s.kernel!, inputs: s.inputs }));
    return { kernel: runPasses(composeKernels(params, composed)), params };
  };
  return { ...common, build };
}

/**
 * Around a gufunc, the largest size each core dimension has among the arrays read over it, per
 * place (`in k`, `out`: an array's trailing axes, aligned with the core dimensions there); or why
 * the separate calls would broadcast the gufunc's output along a core dimension (an array after it
 * larger there than its output), which one kernel cannot.
 */
function largestCoreSizes(calls: readonly TracedCall[], used: ReadonlySet<TracedCall>, cores: Cores, rawArgs: readonly unknown[]): Map<string, Map<string, number>> | Unfusable {
  const sizes = new Map<string, Map<string, number>>();
  const note = (context: string, dims: readonly CoreDim[], raw: unknown) => {
    if (raw === undefined || arrayKey(raw) === undefined || dims.length === 0) return;
    const op = toOperand(raw, 'an argument');
    if (op.kind === 'scalar') return;
    let bySize = sizes.get(context);
    if (!bySize) sizes.set(context, (bySize = new Map()));
    dims.forEach((d, a) => {
      const name = formatCoreDims([d]);
      bySize.set(name, Math.max(bySize.get(name) ?? 1, op.shape[op.shape.length - dims.length + a] ?? 1));
    });
  };
  const rawOf = (x: unknown) => (x instanceof Tracer ? (x.value.kind === 'input' ? rawArgs[x.value.index] : undefined) : x);
  for (const call of calls) {
    if (!used.has(call)) continue;
    call.args.slice(0, call.def.nin).forEach((x, i) => {
      if (call === cores.gufunc) note(`in ${i}`, call.def.layout.inputs[i]!, rawOf(x));
      else note(cores.contextOf.get(call.index)!, cores.ofCall.get(call.index)!, rawOf(x));
    });
  }
  // The gufunc's output has the sizes of its inputs' dimensions of the same name.
  const output = new Map<string, number>();
  for (const [context, bySize] of sizes) if (context !== 'out') for (const [name, size] of bySize) output.set(name, Math.max(output.get(name) ?? 1, size));
  for (const [name, size] of sizes.get('out') ?? []) {
    if (size > 1 && output.get(name) === 1) {
      return { kind: 'unfusable', reason: `an array after ${cores.gufunc.what} has ${size} elements along its output's core dimension ${name}, which is 1: the separate calls broadcast the gufunc's result along it, one kernel cannot` };
    }
    if (!output.has(name)) output.set(name, size);
  }
  sizes.set('out', output);
  return sizes;
}

/**
 * How many trailing axes of an array read over `coreRank` core dimensions to drop when it has size 1
 * (or no axis) along all of them — it is then read as one value per core slice —, or undefined.
 */
function broadcastAlongCore(shape: readonly number[], coreRank: number): number | undefined {
  if (coreRank === 0) return undefined;
  const present = Math.min(coreRank, shape.length);
  return shape.slice(shape.length - present).every((d) => d === 1) ? present : undefined;
}

/** An array argument viewed without its last `drop` axes (each of size 1). */
function withoutTrailingAxes(x: unknown, drop: number): unknown {
  const op = toOperand(x, 'an argument');
  if (op.kind === 'scalar') return x;
  const shape = op.shape.slice(0, op.shape.length - drop);
  const strides = op.strides.slice(0, op.strides.length - drop);
  if (op.kind === 'device') return (op.array as unknown as { view(s: readonly number[], st: readonly number[], o: number): unknown }).view(shape, strides, op.offset);
  return { data: op.data, shape, strides, offset: op.offset, dtype: op.dtype };
}

/** The last call's own loop options and the fused call's: the fused call's win; both giving one is an error. */
function mergeLoopOptions(own: CallOptions, loop: LoopOptions, call: TracedCall): LoopOptions {
  for (const key of ['dtype', 'signature', 'casting'] as const) {
    if (own[key] !== undefined && loop[key] !== undefined) {
      throw new ArgumentError(`Both the fused call and ${call.what}, the call whose result it returns, pass \`${key}\`: pass it once.`);
    }
  }
  return { dtype: loop.dtype ?? own.dtype, signature: loop.signature ?? own.signature, casting: loop.casting ?? own.casting };
}

/**
 * The fused kernel as a vectorize ufunc the front runs like any other: one signature (each
 * parameter in the dtype its step reads, the last step's dtype returned), and the composed
 * kernel in place of a typed source.
 */
class FusedDefinition extends UfuncDefinition {
  constructor(
    private readonly fused: TypedKernel,
    private readonly fusedKey: string,
    target: string,
    boundsCheck: boolean,
  ) {
    const names = fused.params.map((_, i) => `p${i}`);
    // The front types this stand-in for the signature; kernelFor hands out the composed kernel instead.
    const placeholder = `function fused(${names.join(', ')}) { return 0; }`;
    const signature = `${fused.returnType}(${fused.params.map((p) => p.type).join(', ')})`;
    super('vectorize', placeholder, [signature], parseLayout(`${names.map(() => '()').join(',')}->()`), { target: target as NonNullable<UfuncOptions['target']>, boundsCheck });
  }

  override kernelFor(): { kernel: TypedKernel; key: string } {
    return { kernel: this.fused, key: this.fusedKey };
  }
}

let nextFused = 0;

/**
 * The fused ufunc of a planned chain.
 *
 * @param chain - from planChain
 * @returns a vectorize ufunc over the fused kernel's parameters
 * @example const { ufunc } = fusedUfunc(chain); await ufunc(...argumentsOf(chain, trace.calls, args));
 */
export function fusedUfunc(chain: FusedChain): { ufunc: Ufunc; kernel?: TypedKernel; params: readonly FusedParam[] } {
  if (chain.around) return { ufunc: fusedGufunc(chain.around, chain.target, chain.boundsCheck), params: chain.around.params };
  const { kernel, params } = chain.build!();
  const def = new FusedDefinition(kernel, `fused:${nextFused++}`, chain.target, chain.boundsCheck);
  return { ufunc: makeCallable(def, {}), kernel, params };
}
