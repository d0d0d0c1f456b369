/**
 * The function a user calls: the same code on every target. Every call returns a Promise; targets
 * that can block (cpu, parallel) also offer `.sync(…)`.
 */
import { traceCall } from './fusion/trace.js';

import { ArgumentError, TargetUnavailableError } from './errors.js';
import { isDetached } from './ndarray.js';
import { formatTargetNames, loadTarget, loadTargetSync, targetNames } from './targets/registry.js';
import type { TargetName } from './targets/registry.js';
import { canCastScalar, DTYPES } from './dtypes.js';
import { deviceFastKey, type FastEntry, fastDtypesMatch, fastKey, fastPlan } from './fast-call.js';
import { deviceRowsCall, learnDeviceRows } from './fast-device-rows.js';
import type { Target } from './targets/target.js';
import { prepareCall, type PreparedCall } from './prepare-call.js';
import { runGuarded, runPrepared } from './run-call.js';
import type { UfuncDefinition } from './ufunc.js';
import { explainPlain, runPlainSync } from './plain-kernel.js';

/**
 * A result: a typed array (1-D results of plain typed-array inputs), an `NDArray`, a scalar (0-D
 * results of scalar inputs), a `DeviceArray` (gpu calls on device arrays), or an array of these
 * for several outputs. Typed loosely so results can be used without casts.
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type UfuncResult = any;

/**
 * A ufunc of any target: called with `await`. A ufunc typed for the gpu is one of these and not a
 * {@link Ufunc}, which adds `sync`; take an `AsyncUfunc` where a gpu ufunc must be accepted too.
 */
export interface AsyncUfunc {
  /** Calls the kernel over the arguments; the last argument may be `{ out, dims }`. */
  // `any[]`, not `unknown[]`: a ufunc typed from literal signatures (signature-types.ts) must still
  // be assignable to this loose type.
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  (...args: any[]): Promise<UfuncResult>;
  readonly target: TargetName;
  /** The signatures, as compiled so far (lazy vectorize adds one per new input dtype tuple). */
  readonly signatures: readonly string[];
  readonly nin: number;
  readonly nout: number;
  /** The layout, e.g. `(n)->(n)`; vectorize ufuncs have `(),()->()`. */
  readonly layout: string;
  /**
   * Says how a call with these arguments would run — which engine (WebAssembly or generated JS
   * on cpu and parallel) and why — without running it.
   *
   * @example f.explain(xs) // "WebAssembly (scalar): every array is in Wasm memory."
   */
  explain(...args: unknown[]): string;
}

/** A ufunc whose calls can also be made synchronously (`f.sync`, cpu and parallel targets). */
export interface Ufunc extends AsyncUfunc {
  /** The same call, done before returning (cpu and parallel targets; on the gpu it throws). */
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  sync(...args: any[]): UfuncResult;
}

/**
 * The definition behind a ufunc, for modules that must see what it was made of (a serialisable
 * descriptor: src/cluster/descriptor.ts). Not part of the public API.
 */
export const UFUNC_DEFINITION: unique symbol = Symbol('ufunc.definition');

/** The definition of `f`, or undefined when `f` is not a ufunc made by this library. */
export function definitionOf(f: unknown): UfuncDefinition | undefined {
  return typeof f === 'function' ? (f as { [UFUNC_DEFINITION]?: UfuncDefinition })[UFUNC_DEFINITION] : undefined;
}

/**
 * A call on the fast path (fast-call.ts), or undefined where the call needs the general path. The
 * first call of a kind takes the general path, which checks everything, and records what later
 * calls of that kind can reuse.
 */
function fastCall(def: UfuncDefinition, args: unknown[], target: Target): ReturnType<typeof fastPlan> | undefined {
  if (target.memory !== 'host') return undefined; // the fast path knows host arrays only
  const key = fastKey(def, args);
  if (key === undefined) return undefined;
  const entry = def.fastEntries.get(key);
  if (!entry) return undefined;
  for (let i = 0; i < def.nin; i++) {
    const x = args[i];
    if (typeof x === 'number' && !canCastScalar(x, entry.inputTypes[i]!)) return undefined;
  }
  return fastPlan(entry, args, def.nin, target.allocateOutput);
}

/**
 * The fast path of a device target (gpu): a call like an earlier one on 1-D device arrays, whose
 * output is the given `out` or one allocated without waiting. Undefined where the general path is
 * needed (a first call of its kind, no live device yet, arrays sharing a buffer, …).
 */
function deviceFastCall(def: UfuncDefinition, args: unknown[], target: Target): ReturnType<typeof fastPlan> | undefined {
  if (target.memory !== 'device' || !target.allocateDeviceArrayNow) return undefined;
  const key = deviceFastKey(def, args);
  if (key === undefined) return undefined;
  const entry = def.fastEntries.get(key);
  if (!entry) return undefined;
  let size = 0;
  for (let i = 0; i < def.nin; i++) {
    const x = args[i];
    if (typeof x === 'number') {
      if (!canCastScalar(x, entry.inputTypes[i]!)) return undefined;
    } else {
      if ((x as { dtype: string }).dtype !== entry.inputTypes[i]) return undefined;
      size = (x as { size: number }).size;
    }
  }
  if (args.length > def.nin) {
    if ((args[def.nin] as { out: { dtype: string } }).out.dtype !== entry.outputType) return undefined;
    return fastPlan(entry, args, def.nin);
  }
  const out = target.allocateDeviceArrayNow([size], entry.outputType);
  if (!out) return undefined;
  return fastPlan(entry, [...args.slice(0, def.nin), { out }], def.nin);
}

/** What later calls of the same kind can reuse from a general call's plan. */
function fastEntryOf({ plan }: PreparedCall): FastEntry {
  return {
    plan: { kind: plan.kind, kernel: plan.kernel, kernelKey: plan.kernelKey, nin: plan.nin, boundsCheck: plan.boundsCheck },
    inputTypes: plan.operands.slice(0, plan.nin).map((o) => o.dtype),
    outputType: plan.operands[plan.nin]!.dtype,
  };
}

/** After a general call on device arrays, remembers whether calls of the same kind may take the device fast path. */
function learnDeviceFastPath(def: UfuncDefinition, args: unknown[], prepared: PreparedCall): void {
  if (prepared.target.memory !== 'device') return;
  const key = deviceFastKey(def, args);
  if (key === undefined || def.fastEntries.has(key)) return;
  const { plan } = prepared;
  const entry = fastEntryOf(prepared);
  // Only where the general path read every array as it is (no conversion) and wrote one output.
  const same = plan.operands.length === def.nin + 1 && args.slice(0, def.nin).every((x, i) => typeof x === 'number' || (x as { dtype: string }).dtype === entry.inputTypes[i]);
  const outSame = args.length === def.nin || (args[def.nin] as { out: { dtype: string } }).out.dtype === entry.outputType;
  def.fastEntries.set(key, same && outSame ? entry : null);
}

/** The result of a fast call: the output array, or for scalar inputs its one value. */
function fastResult(fast: NonNullable<ReturnType<typeof fastPlan>>): unknown {
  if (fast.result) return fast.result;
  const value = fast.out[0];
  return fast.plan.operands[fast.plan.nin]!.dtype === 'bool' ? value !== 0 : value;
}

/** After a general call, remembers whether calls of the same kind may take the fast path. */
function learnFastPath(def: UfuncDefinition, args: unknown[], prepared: PreparedCall): void {
  const key = fastKey(def, args);
  if (key === undefined || def.fastEntries.has(key)) return;
  const entry = fastEntryOf(prepared);
  // A kernel that draws takes its stream's key as inputs the fast path does not make (a fresh seed per call).
  if (prepared.plan.kernel.randomStream) return void def.fastEntries.set(key, null);
  const outMatches = args.length === def.nin || DTYPES[entry.outputType].arrayType === (args[def.nin] as { out: object }).out.constructor;
  def.fastEntries.set(key, fastDtypesMatch(entry, args, def.nin) && outMatches ? entry : null);
}

/** Copies of the typed arrays among the inputs (plain, or the `data` of an ndarray-like). */
function snapshotInputs(args: unknown[], nin: number): unknown[] {
  return args.map((x, i) => {
    if (i >= nin || typeof x !== 'object' || x === null) return x;
    // A detached array cannot be copied: left as it is, for the call's checks to refuse.
    if (ArrayBuffer.isView(x) && !(x instanceof DataView)) return isDetached(x) ? x : (x as unknown as { slice(): unknown }).slice();
    const data = (x as { data?: unknown }).data;
    if (Object.getPrototypeOf(x) === Object.prototype && ArrayBuffer.isView(data) && !(data instanceof DataView) && !isDetached(data)) {
      return { ...x, data: (data as unknown as { slice(): unknown }).slice() };
    }
    return x;
  });
}

export function makeCallable<T extends object>(def: UfuncDefinition, methods: T): Ufunc & T {
  // Called by a function that `fuse` is tracing (a tracer among the arguments): recorded, not run.
  const call = (...args: unknown[]): Promise<unknown> => (traceCall(def, 'call', args, run) as unknown as Promise<unknown>) ?? run(...args);
  const run = async (...args: unknown[]): Promise<unknown> => {
    let target = loadTargetSync(def.target);
    if (!target) {
      // The first call of a target that loads on first use (gpu): the inputs are read after the
      // wait, so take them now — a host array changed right after the call must not change it.
      args = snapshotInputs(args, def.nin);
      target = await loadTarget(def.target);
    }
    const placed: Promise<unknown> | undefined = target.placeCall?.(args, def.nin, (placedArgs) => run(...placedArgs));
    if (placed) return placed;
    // A plain-JS ufunc (`disableJit`): no fast path; runPrepared calls the kernel as it is.
    if (def.disableJit) return runPrepared(prepareCall(def, args, target));
    const fast = fastCall(def, args, target) ?? deviceFastCall(def, args, target) ?? deviceRowsCall(def, args, target);
    if (fast) {
      // A small call on a host target runs here and now, without the guard's Promise layers: the
      // fast path has no `signal`/`timeout`, and nothing can detach its arrays while it runs.
      if (!target.runIfOnCallingThread?.(fast.plan)) await runGuarded(target, fast.plan);
      return fastResult(fast);
    }
    const prepared = prepareCall(def, args, target);
    learnFastPath(def, args, prepared);
    learnDeviceFastPath(def, args, prepared);
    const running = runPrepared(prepared);
    // After runPrepared, which puts allocated device outputs into the plan.
    learnDeviceRows(def, args, prepared);
    return running;
  };
  const sync = (...args: unknown[]) => {
    const traced = traceCall(def, 'call', args, run);
    if (traced) return traced;
    const target = loadTargetSync(def.target);
    if (!target?.runSync) {
      throw new TargetUnavailableError(`The '${def.target}' target has no synchronous call (its device cannot be waited for without a Promise): use \`await f(…)\`, or target ${formatTargetNames(targetNames('host'))}.`);
    }
    const fast = def.disableJit ? undefined : fastCall(def, args, target);
    if (fast) {
      target.runSync(fast.plan);
      return fastResult(fast);
    }
    const prepared = prepareCall(def, args, target);
    if (prepared.plan.limits) {
      throw new ArgumentError(
        '`signal` and `timeout` apply to calls that return a Promise (`await f(…)`): a synchronous call blocks the very thread that would have to stop it.',
      );
    }
    if (prepared.plain) {
      runPlainSync(prepared.plan, prepared.plain);
      return prepared.finish();
    }
    learnFastPath(def, args, prepared);
    target.runSync(prepared.plan);
    return prepared.finish();
  };
  const explain = (...args: unknown[]): string => {
    const target = loadTargetSync(def.target);
    if (!target) return `The '${def.target}' target is not loaded yet: it runs on first use.`;
    const prepared = prepareCall(def, args, target);
    if (prepared.plain) return explainPlain(prepared.plan);
    return target.explain?.(prepared.plan) ?? `Runs on the '${def.target}' target.`;
  };
  Object.defineProperties(call, {
    sync: { value: sync },
    explain: { value: explain },
    target: { value: def.target, enumerable: true },
    signatures: { get: () => def.signatures.map((s) => s.text), enumerable: true },
    nin: { value: def.nin, enumerable: true },
    nout: { value: def.nout, enumerable: true },
    layout: { value: def.layout.text, enumerable: true },
    name: { value: def.parsed.name },
    [UFUNC_DEFINITION]: { value: def },
  });
  return Object.assign(call, traceableMethods(def, methods)) as unknown as Ufunc & T;
}

/** The methods, each recorded instead of run when `fuse` is tracing the function that calls it. */
function traceableMethods<T extends object>(def: UfuncDefinition, methods: T): T {
  const wrapped: Record<string, unknown> = {};
  for (const [name, method] of Object.entries(methods)) {
    if (typeof method !== 'function') {
      wrapped[name] = method;
      continue;
    }
    const run = method as (...args: unknown[]) => Promise<unknown>;
    wrapped[name] = (...args: unknown[]) => traceCall(def, name, args, run) ?? run(...args);
  }
  return wrapped as T;
}
