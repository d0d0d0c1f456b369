/**
 * `fuse(fn)`: a chain of ufunc calls run as one kernel. Calling the fused function traces `fn`
 * (trace.ts), plans the trace (plan.ts: the loop each call selects, the fused kernel's parameters),
 * composes the calls' typed kernels into one (compiler/compose.ts), and runs that kernel as a vectorize
 * ufunc on the calls' target — one pass over memory instead of one per call.
 */
import type { Ufunc, UfuncResult } from '../callable.js';
import { type CallOptions, CALL_OPTIONS, isOptionsObject } from '../call-options.js';
import type { TypedKernel } from '../compiler/ir.js';
import { printKernel } from '../compiler/print-ir.js';
import { ArgumentError, FusionError } from '../errors.js';
import { type DType, isTypedArray } from '../dtypes.js';
import { checkOptions, type OptionRules, rule } from '../options.js';
import { formatCoreDims } from '../signature-parser/index.js';
import { loadTarget, loadTargetSync } from '../targets/registry.js';
import type { Target } from '../targets/target.js';
import { argumentsOf, type FusedChain, type FusedParam, fusedUfunc, planChain, traceKey, type Unfusable } from './plan.js';
import { Trace, type TracedCall, Tracer } from './trace.js';
import { planReduce, type ReducePlan } from './fused-reduce.js';

/** Options of `fuse(fn, options)`. */
export interface FuseOptions {
  /**
   * What a call of the fused function does when `fn`'s calls cannot run as one kernel (a
   * guvectorize ufunc, a method other than a trailing `reduce`, ufuncs on different targets, …):
   * `'error'` throws a `FusionError` saying why; `'separate'` runs the calls one by one, as `fn`
   * would without `fuse`. @default 'error'
   */
  readonly unfusable?: 'error' | 'separate';
}

const FUSE_OPTIONS: OptionRules = { unfusable: rule.oneOf(['error', 'separate']) };

/** A function made by `fuse`: called like `fn` (plus a ufunc call's options), it runs one kernel. */
export interface FusedFunction {
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  (...args: any[]): Promise<UfuncResult>;
  /** The same call, done before returning (cpu and parallel targets; `fn` must not be async). */
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  sync(...args: any[]): UfuncResult;
  /**
   * What a call with these arguments would run, without running it (`fn` runs with stand-ins):
   * the calls fused and the fused kernel's parameters, or why they do not fuse; then the
   * target's own explanation of the fused call.
   */
  explain(...args: unknown[]): Promise<string>;
  /** The fused kernel's typed IR for these arguments (compiler/print-ir.ts), as `UFUNC_DUMP_IR` prints it. */
  explainIr(...args: unknown[]): Promise<string>;
}

/**
 * Fuses the ufunc calls of `fn` into one kernel. `fn` takes arrays (and any other values) and
 * returns the result of ufunc calls on them: vectorize ufuncs, with scalars and arrays it closes
 * over, and at most one trailing `reduce`. Each call of the fused function runs `fn` with
 * stand-ins for its arrays to learn the calls, compiles one kernel per class of dtypes and layouts
 * (cached), and runs it on the ufuncs' target. Results are bit for bit those of the separate calls
 * on cpu and parallel (each step still rounds to its declared dtype), and on the gpu within the
 * same bounds as the separate calls.
 *
 * @param fn - a function whose body calls ufuncs, with or without `await`
 * @param options - `unfusable`: `'error'` (a `FusionError` saying why) or `'separate'` (run the calls one by one)
 * @returns the fused function; its last argument may be a call's options (`out`, `where`, `dtype`,
 *   `signature`, `casting`, `signal`, `timeout`), which apply to the last call of the chain
 * @default options.unfusable 'error'
 * @throws ArgumentError for invalid options
 * @example
 * const chain = fuse(async (x, y) => mul(await gauss(await saxpy(2, x, y)), x));
 * const v = await chain(xs, ys); // one kernel: three calls' work in one pass over memory
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export function fuse(fn: (...args: any[]) => unknown, options: FuseOptions = {}): FusedFunction {
  if (typeof fn !== 'function') throw new ArgumentError(`\`fuse\` takes a function whose body calls ufuncs, found ${typeof fn}.`);
  checkOptions(options, FUSE_OPTIONS, '`fuse`');
  const separate = options.unfusable === 'separate';
  const compiled = new Map<string, Compiled>();
  /** Plans by trace key (plan.ts traceKey): a repeated call of a known shape neither plans nor compiles. */
  const planned = new Map<string, Planned>();
  const prepare = (trace: Trace, result: unknown, args: readonly unknown[], callOptions: CallOptions, target: Target): Planned => {
    const loop = splitLoopOptions(callOptions).loop;
    const key = `${target.name}|${traceKey(trace.calls, result, args, loop)}`;
    let p = planned.get(key);
    if (!p) {
      const chain = trace.calls.length === 0 ? NOTHING_TRACED : planChain(trace.calls, result, args, loop, target);
      if (chain.kind === 'unfusable') p = chain;
      else {
        let entry = compiled.get(chain.key);
        if (!entry) compiled.set(chain.key, (entry = fusedUfunc(chain)));
        p = { kind: 'fused', chain, ...entry };
      }
      if (planned.size >= MAX_PLANS) planned.delete(planned.keys().next().value!);
      planned.set(key, p);
    }
    return p;
  };
  /** Runs `fn` on stand-ins: the trace and what `fn` returned (awaited where `fn` is async). */
  const traceOf = (args: readonly unknown[]): { trace: Trace; result: unknown } | undefined => {
    const trace = new Trace(args.map(isArrayArgument));
    if (trace.inputs.every((t) => t === undefined)) return undefined;
    return { trace, result: fn(...(args.map((a, i) => trace.inputs[i] ?? a) as never[])) };
  };

  const call = async (...rawArgs: unknown[]): Promise<unknown> => {
    const { args, callOptions } = splitFusedArguments(fn, rawArgs);
    const traced = traceOf(args);
    if (!traced) return fn(...(args as never[])); // no arrays: nothing to trace
    const { trace } = traced;
    const result = isPromiseLike(traced.result) ? await traced.result : traced.result;
    const name = targetOf(trace, result);
    const target = loadTargetSync(name) ?? (await loadTarget(name));
    const p = refusedFor(prepare(trace, result, args, callOptions, target), trace, args, callOptions);
    if (p.kind === 'unfusable') {
      if (!separate) throw unfusableError(p);
      return runSeparately(trace, result, args, callOptions);
    }
    return runFused(p, trace, args, callOptions, false);
  };

  const sync = (...rawArgs: unknown[]): unknown => {
    const { args, callOptions } = splitFusedArguments(fn, rawArgs);
    const traced = traceOf(args);
    if (!traced) return fn(...(args as never[]));
    const { trace, result } = traced;
    if (isPromiseLike(result)) throw new FusionError('`.sync(…)` of a fused function needs a function that returns its result directly; this one returned a Promise (an `async` function): use `await fused(…)`.');
    const target = loadTargetSync(targetOf(trace, result));
    if (!target?.runSync) throw new FusionError(`The '${targetOf(trace, result)}' target has no synchronous call: use \`await fused(…)\`.`);
    const p = refusedFor(prepare(trace, result, args, callOptions, target), trace, args, callOptions);
    if (p.kind === 'unfusable') throw unfusableError(p, separate ? ' (`unfusable: \'separate\'` runs separate calls only with `await fused(…)`)' : '');
    return runFused(p, trace, args, callOptions, true);
  };

  /** Traces and plans a call without running it (for `explain`). */
  const planFor = async (rawArgs: unknown[]): Promise<{ p: Planned; trace: Trace; args: unknown[]; callOptions: CallOptions } | string> => {
    const { args, callOptions } = splitFusedArguments(fn, rawArgs);
    const traced = traceOf(args);
    if (!traced) return 'No argument is an array, so nothing is traced: the function runs as it is.';
    const { trace } = traced;
    const result = isPromiseLike(traced.result) ? await traced.result : traced.result;
    const target = await loadTarget(targetOf(trace, result));
    return { p: refusedFor(prepare(trace, result, args, callOptions, target), trace, args, callOptions), trace, args, callOptions };
  };

  const explain = async (...rawArgs: unknown[]): Promise<string> => {
    const planning = await planFor(rawArgs);
    if (typeof planning === 'string') return planning;
    const { p, trace } = planning;
    if (p.kind === 'unfusable') {
      return `Not fused: ${p.reason}. ${separate ? `It runs as ${trace.calls.length} separate call${trace.calls.length === 1 ? '' : 's'} (\`unfusable: 'separate'\`).` : 'A call throws a FusionError (`unfusable: \'separate\'` would run the calls one by one).'}`;
    }
    const { chain } = p;
    const params = p.params.map((q) => `${q.name}: ${q.dtype}${q.core.length ? ` ${formatCoreDims(q.core)}` : ''} (${q.from})`).join(', ');
    const around = chain.around ? `\nAround the guvectorize call ${chain.around.gufunc}, as one guvectorize kernel of layout \`${chain.around.layout}\`: the element-wise calls it reads run where it reads each element of its core slices, those after it where it writes each element of its output.` : '';
    const folded = chain.reduce !== undefined ? reducePlanOf(p, trace, planning.args, planning.callOptions) : undefined;
    const reduceCall = chain.reduce !== undefined ? trace.calls[chain.reduce]!.what : '';
    const reduce = !folded ? '' : folded.kind === 'fold'
      ? `\n${reduceCall} folds inside the kernel, ${folded.how}: the element-wise kernel runs where the fold reads each element.`
      : `\nThen ${reduceCall} runs as a second call over the fused result: ${folded.reason}.`;
    const passed = chain.reduce !== undefined ? [] : optionsArgument(planning.callOptions);
    // A folded reduce runs the fused fold kernel, not the element-wise one: its engine line.
    const target = folded?.kind === 'fold' ? folded.explain() : p.ufunc.explain(...argumentsOf(chain, trace.calls, planning.args), ...passed);
    return `Fused ${chain.calls.length} call${chain.calls.length === 1 ? '' : 's'} into one kernel on the '${chain.target}' target: ${chain.calls.join(' → ')}.\nIts parameters: ${params}.${around}${reduce}\n${target}`;
  };

  const explainIr = async (...rawArgs: unknown[]): Promise<string> => {
    const planning = await planFor(rawArgs);
    if (typeof planning === 'string') return planning;
    const { p } = planning;
    if (p.kind === 'unfusable') return `Not fused: ${p.reason}.`;
    return printKernel(p.kernel ?? p.chain.around!.kernelForArguments(argumentsOf(p.chain, planning.trace.calls, planning.args)));
  };

  Object.defineProperties(call, {
    sync: { value: sync },
    explain: { value: explain },
    explainIr: { value: explainIr },
    name: { value: fn.name ? `fused ${fn.name}` : 'fused' },
  });
  return call as unknown as FusedFunction;
}

/** Arrays get tracers; scalars and anything else pass to `fn` as they are. */
function isArrayArgument(x: unknown): boolean {
  if (isTypedArray(x)) return true;
  if (typeof x !== 'object' || x === null) return false;
  return (x as { kind?: unknown }).kind === 'device' || 'data' in x;
}

function isPromiseLike(x: unknown): x is PromiseLike<unknown> {
  return typeof x === 'object' && x !== null && !(x instanceof Tracer) && typeof (x as { then?: unknown }).then === 'function';
}

/** The fused function's arguments and its trailing options object (beyond `fn`'s parameters). */
function splitFusedArguments(fn: Function, rawArgs: readonly unknown[]): { args: unknown[]; callOptions: CallOptions } {
  const last = rawArgs[rawArgs.length - 1];
  const hasOptions = rawArgs.length > fn.length && fn.length > 0 && isOptionsObject(last) && !(last instanceof Tracer);
  if (!hasOptions) return { args: [...rawArgs], callOptions: {} };
  checkOptions(last, CALL_OPTIONS, 'a fused call');
  return { args: rawArgs.slice(0, -1), callOptions: last as CallOptions };
}

/** `dtype`, `signature` and `casting` pick the last call's loop; the rest go to the fused ufunc's call. */
function splitLoopOptions(options: CallOptions): { loop: Pick<CallOptions, 'dtype' | 'signature' | 'casting'>; rest: CallOptions } {
  const { dtype, signature, ...rest } = options;
  return { loop: { dtype, signature, casting: options.casting }, rest };
}

/** The options the fused ufunc's call takes, as its trailing argument (none when there are none). */
function optionsArgument(options: CallOptions): CallOptions[] {
  const { rest } = splitLoopOptions(options);
  return Object.keys(rest).length === 0 ? [] : [rest];
}

/** The target of a trace: that of the call the result comes from (plan.ts checks the others agree). */
function targetOf(trace: Trace, result: unknown): string {
  if (result instanceof Tracer && result.value.kind === 'call') return trace.calls[result.value.index]!.def.target;
  return trace.calls[trace.calls.length - 1]?.def.target ?? 'cpu';
}

const NOTHING_TRACED: Unfusable = { kind: 'unfusable', reason: 'the function called no ufunc on its array arguments' };

/** Plans kept per fused function (a new trace shape beyond this many forgets the oldest). */
const MAX_PLANS = 256;

/** A compiled fused kernel: its ufunc, its IR and its parameters. */
interface Compiled {
  readonly ufunc: Ufunc;
  /** Absent for a chain around a gufunc, whose kernel is made per call's core sizes. */
  readonly kernel?: TypedKernel;
  readonly params: readonly FusedParam[];
}

/** What a trace shape runs: a fused kernel, or why it does not fuse. */
type Planned = ({ readonly kind: 'fused'; readonly chain: FusedChain } & Compiled) | Unfusable;

/** A fused plan that this call's arrays or options keep from running as the fused kernel (around a gufunc): why, as an Unfusable. */
function refusedFor(p: Planned, trace: Trace, args: readonly unknown[], options: CallOptions): Planned {
  if (p.kind !== 'fused' || !p.chain.around) return p;
  const reason = p.chain.around.check(argumentsOf(p.chain, trace.calls, args), options);
  return reason ? { kind: 'unfusable', reason } : p;
}

function unfusableError(planned: Unfusable, note = ''): FusionError {
  return new FusionError(`These ufunc calls cannot run as one kernel: ${planned.reason}. Pass \`{ unfusable: 'separate' }\` to \`fuse\` to run them as separate calls${note}.`);
}

/** How the trailing reduce of a fused plan runs for this call: folded in the fused kernel, or as a second call. */
function reducePlanOf(p: Extract<Planned, { kind: 'fused' }>, trace: Trace, args: readonly unknown[], options: CallOptions): ReducePlan {
  const target = loadTargetSync(p.chain.target);
  if (!p.kernel || !target) return { kind: 'second-call', reason: 'it reduces the result of a guvectorize call' };
  return planReduce({ ufunc: p.ufunc, chain: p.chain, resultDtype: p.kernel.returnType as DType, calls: trace.calls, args, options, target });
}

/** Runs the fused ufunc (then a trailing reduce: folded in the kernel, or over its result). */
function runFused(p: Extract<Planned, { kind: 'fused' }>, trace: Trace, args: readonly unknown[], options: CallOptions, sync: boolean): unknown {
  const fusedArgs = argumentsOf(p.chain, trace.calls, args);
  if (p.chain.reduce === undefined) {
    const opts = optionsArgument(options);
    return sync ? p.ufunc.sync(...fusedArgs, ...opts) : p.ufunc(...fusedArgs, ...opts);
  }
  const reduce = trace.calls[p.chain.reduce]!;
  const reduceOptions = { ...((reduce.args[1] as object | undefined) ?? {}), ...options };
  if (sync) throw new FusionError(`${reduce.what}: a fused function that ends in \`reduce\` runs with \`await fused(…)\` only.`);
  const folded = reducePlanOf(p, trace, args, options);
  if (folded.kind === 'fold') return folded.run();
  return (async () => {
    const mapped = await p.ufunc(...fusedArgs);
    try {
      return await reduce.run(mapped, reduceOptions);
    } finally {
      (mapped as { destroy?: () => void }).destroy?.();
    }
  })();
}

/**
 * Runs the traced calls one by one, as `fn` would have without `fuse`: each call's tracers
 * replaced by the values computed so far; the fused call's options go to the last call.
 * Intermediate device arrays are destroyed once the result is computed.
 */
async function runSeparately(trace: Trace, result: unknown, args: readonly unknown[], options: CallOptions): Promise<unknown> {
  const values: unknown[] = [];
  const resolve = (x: unknown): unknown => {
    if (x instanceof Tracer) return x.value.kind === 'input' ? args[x.value.index] : values[x.value.index];
    if (Array.isArray(x)) return x.map(resolve);
    return x;
  };
  const last = result instanceof Tracer && result.value.kind === 'call' ? result.value.index : -1;
  for (const call of trace.calls) {
    let callArgs = call.args.map(resolve);
    if (call.index === last && Object.keys(options).length) callArgs = withOptions(call, callArgs, options);
    values[call.index] = await call.run(...callArgs);
  }
  const final = resolve(result);
  // Only arrays the calls allocated: a call given `out` returns the caller's own array.
  const kept = new Set([...(Array.isArray(final) ? final : [final]), ...args, ...trace.calls.flatMap((c) => c.args.flatMap(givenArrays))]);
  for (const v of values) if (!kept.has(v)) (v as { destroy?: () => void } | undefined)?.destroy?.();
  return final;
}

/** The arrays an argument holds (an options object's `out`, positional arrays). */
function givenArrays(x: unknown): unknown[] {
  if (Array.isArray(x)) return x.flatMap(givenArrays);
  if (isOptionsObject(x)) return givenArrays((x as CallOptions).out);
  return [x];
}

/** A call's arguments with the fused call's options merged into its options object. */
function withOptions(call: TracedCall, callArgs: unknown[], options: CallOptions): unknown[] {
  const nin = call.method === 'call' ? call.def.nin : 1;
  const own = callArgs.length > nin && isOptionsObject(callArgs[callArgs.length - 1]) ? (callArgs[callArgs.length - 1] as object) : undefined;
  return [...(own ? callArgs.slice(0, -1) : callArgs), { ...own, ...options }];
}
