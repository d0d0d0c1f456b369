/**
 * The function a user calls: the same code on every target. Every call returns a Promise; targets
 * that can block (cpu, parallel) also offer `.sync(…)`.
 */
import { traceCall } from './fusion/trace.js';

import { ArgumentError, TargetUnavailableError } from './errors.js';
import { isDetached } from './ndarray.js';
import { formatTargetNames, loadTarget, loadTargetSync, targetNames } from './targets/registry.js';
import type { TargetName } from './targets/registry.js';
import { cachedCall, cachedResult } from './plan-cache.js';
import { prepareCall } from './prepare-call.js';
import { runGuarded, runPrepared } from './run-call.js';
import { ENQUEUED } from './targets/target.js';
import type { UfuncDefinition } from './ufunc.js';
import { explainPlain, runPlainSync } from './plain-kernel.js';
import { describeTables, tablesOfEnv } from './compiler/tables.js';

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
  const run = (...args: unknown[]): Promise<unknown> => {
    const target = loadTargetSync(def.target);
    if (!target) return runOnceLoaded(args);
    try {
      const placed: Promise<unknown> | undefined = target.placeCall?.(args, def.nin, (placedArgs) => run(...placedArgs));
      if (placed) return placed;
      // A plain-JS ufunc (`disableJit`): never served from the plan cache; runPrepared calls the kernel as it is.
      if (def.disableJit) return runPrepared(prepareCall(def, args, target));
      // A call like an earlier planned one reuses its plan (plan-cache.ts); any other is planned.
      const cached = cachedCall(def, args, target);
      if (!cached) return runPrepared(prepareCall(def, args, target));
      // A small call on a host target runs here and now, without the guard's Promise layers: a
      // cached plan has no `signal`/`timeout`, and nothing can detach its arrays while it runs.
      if (target.runIfOnCallingThread?.(cached.plan)) return Promise.resolve(cachedResult(cached));
      const work = runGuarded(target, cached.plan);
      // Recorded on a device with nothing to wait for (a chained gpu call): its result, without another layer.
      return work === ENQUEUED ? Promise.resolve(cachedResult(cached)) : work.then(() => cachedResult(cached));
    } catch (e) {
      return Promise.reject(e);
    }
  };
  /** The first call of a target that loads on first use (gpu): the inputs are read after the wait, so taken now — a host array changed right after the call must not change it. */
  const runOnceLoaded = async (args: unknown[]): Promise<unknown> => {
    const snapshot = snapshotInputs(args, def.nin);
    await loadTarget(def.target);
    return run(...snapshot);
  };
  const sync = (...args: unknown[]) => {
    const traced = traceCall(def, 'call', args, run);
    if (traced) return traced;
    const target = loadTargetSync(def.target);
    if (!target?.runSync) {
      throw new TargetUnavailableError(`The '${def.target}' target has no synchronous call (its device cannot be waited for without a Promise): use \`await f(…)\`, or target ${formatTargetNames(targetNames('host'))}.`);
    }
    const cached = def.disableJit ? undefined : cachedCall(def, args, target);
    if (cached) {
      target.runSync(cached.plan);
      return cachedResult(cached);
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
    target.runSync(prepared.plan);
    return prepared.finish();
  };
  const explain = (...args: unknown[]): string => {
    const target = loadTargetSync(def.target);
    if (!target) return `The '${def.target}' target is not loaded yet: it runs on first use.`;
    const prepared = prepareCall(def, args, target);
    const tables = prepared.plain ? describeTables(tablesOfEnv(def.env), 'plain') : describeTables(prepared.plan.kernel.tables, def.target);
    const text = prepared.plain ? explainPlain(prepared.plan) : (target.explain?.(prepared.plan) ?? `Runs on the '${def.target}' target.`);
    return `${text}${tables ? ` ${tables}` : ''}`;
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
