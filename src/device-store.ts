/**
 * The store of a staged device output (call-finish.ts): a call on device arrays whose output needs
 * a cast or a `where` mask, and whose kernel cannot store it itself (fused-store.ts), writes a
 * device temporary of the loop's dtype; this store ufunc then converts it into the output on the
 * device — nothing goes through host memory. It is an ordinary vectorize definition on the call's
 * own target, run as a call of its own.
 */
import type { DType } from './dtypes.js';
import { parseLayout } from './signature-parser/index.js';
import type { TargetName } from './targets/registry.js';
import type { Target } from './targets/target.js';
import { UfuncDefinition } from './ufunc.js';

/** A store as a call: the ufunc and its arguments. */
export interface DeviceStoreCall {
  readonly def: UfuncDefinition;
  readonly args: readonly unknown[];
}

/** The store ufuncs, by (target, from, to, masked, keep). */
const deviceStores = new Map<string, UfuncDefinition>();

/**
 * The call that stores a device temporary into a device output: converted from the loop's dtype
 * `from` to the output's `to` (the cast was allowed by the call's `casting` already), and, with a
 * mask, only where it is true; elsewhere the output keeps its elements (`keep`, a given `out`) or
 * gets zeros (an allocated output, as host outputs do). `mask` false: the mask is all false (no store).
 */
export function deviceStoreCall(target: Target, temp: unknown, dest: unknown, from: DType, to: DType, mask: false | object | undefined, keep: boolean): DeviceStoreCall {
  const masked = mask !== undefined;
  const key = `${target.name}:${from}>${to}:${masked}:${keep}`;
  let def = deviceStores.get(key);
  if (!def) {
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
    def = new UfuncDefinition('vectorize', kernel, [signature], layout, { target: target.name as TargetName });
    deviceStores.set(key, def);
  }
  const inputs = !masked ? [temp] : keep ? [temp, mask, dest] : [temp, mask];
  // A call with `casting` is never served by the plan cache (plan-cache.ts): it is planned each time.
  return { def, args: [...inputs, { out: dest, casting: 'unsafe' }] };
}
