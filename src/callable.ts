/**
 * The function a user calls: the same code on every target. Every call returns a Promise; targets
 * that can block (cpu, parallel) also offer `.sync(…)`.
 */
import { TargetUnavailableError } from './errors.js';
import { loadTarget, loadTargetSync } from './targets/registry.js';
import type { TargetName } from './targets/target.js';
import { prepareCall, runPrepared, type UfuncDefinition } from './ufunc.js';

/**
 * A result: a typed array (1-D results of plain typed-array inputs), an `NDArray`, a scalar (0-D
 * results of scalar inputs), a `DeviceArray` (gpu calls on device arrays), or an array of these
 * for several outputs. Typed loosely so results can be used without casts.
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type UfuncResult = any;

export interface Ufunc {
  /** Calls the kernel over the arguments; the last argument may be `{ out, dims }`. */
  (...args: unknown[]): Promise<UfuncResult>;
  /** The same call, done before returning (cpu and parallel targets). */
  sync(...args: unknown[]): UfuncResult;
  readonly target: TargetName;
  /** The signatures, as compiled so far (lazy vectorize adds one per new input dtype tuple). */
  readonly signatures: readonly string[];
  readonly nin: number;
  readonly nout: number;
  /** The layout, e.g. `(n)->(n)`; vectorize ufuncs have `(),()->()`. */
  readonly layout: string;
}

export function makeCallable<T extends object>(def: UfuncDefinition, methods: T): Ufunc & T {
  const call = async (...args: unknown[]) => runPrepared(prepareCall(def, args, await loadTarget(def.target)));
  const sync = (...args: unknown[]) => {
    const target = loadTargetSync(def.target);
    if (!target?.runSync) {
      throw new TargetUnavailableError(`The '${def.target}' target has no synchronous call (a GPU cannot be waited for without a Promise): use \`await f(…)\`, or target 'cpu' or 'parallel'.`);
    }
    const prepared = prepareCall(def, args, target);
    target.runSync(prepared.plan);
    return prepared.finish();
  };
  Object.defineProperties(call, {
    sync: { value: sync },
    target: { value: def.target, enumerable: true },
    signatures: { get: () => def.signatures.map((s) => s.text), enumerable: true },
    nin: { value: def.nin, enumerable: true },
    nout: { value: def.nout, enumerable: true },
    layout: { value: def.layout.text, enumerable: true },
    name: { value: def.parsed.name },
  });
  return Object.assign(call, methods) as unknown as Ufunc & T;
}
