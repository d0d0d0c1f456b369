/**
 * The device fast path for guvectorize calls (per-row kernels such as Hermite `()->(n)` or a
 * Lorenz-96 step): a call on device arrays (and JS numbers) whose arguments have the same dtypes,
 * shapes, strides and offsets as an earlier call's, with or without one `out`, reuses that call's
 * plan with the new arrays put in. The general path (prepare-call.ts `prepareCall`: splitting the
 * arguments, picking the loop, broadcasting, the core-dimension check, typing the kernel for the
 * core sizes) cost 15–20 µs of host time per call; everything it decides depends only on what the
 * key and the shape comparison below cover, so a call that matches would get the same plan, and a
 * call that does not match (or could fail any check) takes the general path and its errors.
 *
 * vectorize calls on 1-D device arrays have their own fast path (fast-call.ts `deviceFastKey`).
 */
import { convertConstant } from './compiler/lower.js';
import { canCastScalar, DTYPES, type DType, type TypedArray } from './dtypes.js';
import { deviceKind, numberClass, onlyOut } from './fast-call.js';
import { sameAxes } from './layout.js';
import type { CallPlan, OperandView } from './plan.js';
import type { Target } from './targets/target.js';
import type { PreparedCall } from './run-call.js';
import type { UfuncDefinition } from './ufunc.js';

/** A device array as this path reads it (the gpu target's DeviceArray). */
interface DeviceArgument {
  readonly kind: 'device';
  readonly dtype: string;
  readonly shape: readonly number[];
  readonly strides: readonly number[];
  readonly offset: number;
}

/** What a call of the same kind and shapes reuses. */
interface RowsEntry {
  /** The plan of the learned call, without its operands. */
  readonly plan: Omit<CallPlan, 'operands'>;
  /** Its operand views (inputs, then the output); `data` is replaced per call. */
  readonly views: readonly OperandView[];
  /** Per input: the shape, strides and offset it had (undefined for a JS number). */
  readonly inputs: readonly (DeviceArgument | undefined)[];
  /** The output's shape, strides, offset and dtype (given, or as allocated). */
  readonly output: DeviceArgument;
}

/** Calls served by this path so far (for tests and benchmarks to see that it is taken). */
export let deviceRowsCalls = 0;

/** Entries per ufunc, by argument kinds ({@link rowsKey}); the latest learned shapes per kind. */
const entries = new WeakMap<UfuncDefinition, Map<number, RowsEntry>>();

/**
 * A number for the kinds of a guvectorize call's arguments — per input a device dtype or a class
 * of JS number (numbers of one class are accepted by the same loops), then whether `out` is given
 * and its dtype — or undefined for a call this path does not take: other arguments, options other
 * than a lone `out`, several outputs. Keys start from 3 (fast-call.ts uses 1 and 2 in another map).
 */
function rowsKey(def: UfuncDefinition, args: readonly unknown[]): number | undefined {
  const nin = def.nin;
  if (def.kind !== 'guvectorize' || def.nout !== 1 || nin > 8) return undefined;
  let key = 3;
  let anyDevice = false;
  for (let i = 0; i < nin; i++) {
    const x = args[i];
    if (typeof x === 'number') {
      key = key * 32 + 16 + numberClass(x);
      continue;
    }
    const kind = deviceKind(x);
    if (kind < 0) return undefined;
    anyDevice = true;
    key = key * 32 + kind;
  }
  if (!anyDevice) return undefined;
  // Only a lone `{ out }`: a positional output, `dims`, `axes`, `where`, … take the general path.
  const out = onlyOut(args, nin);
  if (out === null) return key * 32;
  const kind = deviceKind(out);
  return kind < 0 ? undefined : key * 32 + 16 + kind;
}

/** Whether a device array is laid out as the learned one was (dtype is in the key). */
function sameLayout(x: DeviceArgument, learned: DeviceArgument): boolean {
  return x.offset === learned.offset && sameAxes(x.shape, learned.shape) && sameAxes(x.strides, learned.strides);
}

/**
 * The plan of a guvectorize call on the fast path, or undefined where the call needs the general
 * path (a first call of its kind or shapes, no live device to allocate an output on at once, …).
 *
 * @param def the ufunc
 * @param args the call's arguments
 * @param target the ufunc's (loaded) target
 * @returns the plan, the result to return and the output array
 */
export function deviceRowsCall(
  def: UfuncDefinition,
  args: readonly unknown[],
  target: Target,
): { plan: CallPlan; result: TypedArray; out: TypedArray } | undefined {
  if (target.memory !== 'device' || def.kind !== 'guvectorize') return undefined;
  const key = rowsKey(def, args);
  if (key === undefined) return undefined;
  const entry = entries.get(def)?.get(key);
  if (!entry) return undefined;
  const nin = def.nin;
  const operands: OperandView[] = [];
  for (let i = 0; i < nin; i++) {
    const x = args[i];
    const view = entry.views[i]!;
    if (typeof x === 'number') {
      if (!canCastScalar(x, view.dtype)) return undefined;
      // As the general path builds it: the value converted to the loop's type, in a one-element array.
      const value = convertConstant(x, view.dtype);
      const data = new DTYPES[view.dtype].arrayType(1);
      (data as unknown as unknown[])[0] = view.dtype === 'bool' ? (value ? 1 : 0) : value;
      operands.push(view.scalar !== undefined ? { ...view, data, scalar: value } : { ...view, data });
      continue;
    }
    if (!sameLayout(x as DeviceArgument, entry.inputs[i]!)) return undefined;
    operands.push(withData(view, x));
  }
  let out: object;
  if (args.length > nin) {
    out = (args[nin] as { out: DeviceArgument }).out;
    if (!sameLayout(out as DeviceArgument, entry.output)) return undefined;
  } else {
    const made = target.allocateDeviceArrayNow?.(entry.output.shape, entry.output.dtype as DType);
    if (!made) return undefined;
    out = made;
  }
  operands.push(withData(entry.views[nin]!, out));
  const t = entry.plan;
  // Written out rather than spread (per call).
  const plan: CallPlan = {
    kind: t.kind, kernel: t.kernel, kernelKey: t.kernelKey, loopShape: t.loopShape, operands, nin: t.nin, boundsCheck: t.boundsCheck,
    ...(t.coreNames ? { coreNames: t.coreNames } : {}),
  };
  deviceRowsCalls++;
  // Typed as fast-call.ts's results are: the caller returns `result`, here the DeviceArray.
  return { plan, result: out as TypedArray, out: out as TypedArray };
}

function withData(view: OperandView, data: unknown): OperandView {
  return {
    dtype: view.dtype, data: data as OperandView['data'], offset: view.offset,
    loopStrides: view.loopStrides, coreShape: view.coreShape, coreStrides: view.coreStrides,
  };
}

/**
 * After a general guvectorize call on device arrays has been checked and started, remembers its
 * plan for later calls of the same kinds and shapes — only where the general path read every
 * array as it is (no conversion, no staged output, no limits) and the output is a device array
 * laid out as the call's plan says. Replaces what an earlier call of the same kinds left.
 *
 * @param def the ufunc
 * @param args the call's arguments
 * @param prepared the general path's call, after `runPrepared` set its allocated outputs
 */
export function learnDeviceRows(def: UfuncDefinition, args: readonly unknown[], prepared: PreparedCall): void {
  if (prepared.target.memory !== 'device') return;
  const key = rowsKey(def, args);
  if (key === undefined) return;
  const { plan } = prepared;
  const nin = def.nin;
  if (plan.limits || plan.nin !== nin || plan.operands.length !== nin + 1) return;
  const inputs: (DeviceArgument | undefined)[] = [];
  for (let i = 0; i < nin; i++) {
    const x = args[i];
    const view = plan.operands[i]!;
    if (typeof x === 'number') {
      inputs.push(undefined);
      continue;
    }
    const d = x as DeviceArgument;
    if (view.data !== (d as unknown) || d.dtype !== view.dtype) return;
    inputs.push({ kind: 'device', dtype: d.dtype, shape: [...d.shape], strides: [...d.strides], offset: d.offset });
  }
  const outView = plan.operands[nin]!;
  const out = (args.length > nin ? (args[nin] as { out: DeviceArgument }).out : outView.data) as DeviceArgument;
  // The kernel must write the output itself (no staged cast): the view holds the very array.
  if (outView.data !== (out as unknown) || typeof out.shape !== 'object' || out.dtype !== outView.dtype) return;
  let map = entries.get(def);
  if (!map) entries.set(def, (map = new Map()));
  map.set(key, {
    plan: {
      kind: plan.kind, kernel: plan.kernel, kernelKey: plan.kernelKey, loopShape: plan.loopShape, nin: plan.nin, boundsCheck: plan.boundsCheck,
      ...(plan.coreNames ? { coreNames: plan.coreNames } : {}),
    },
    views: plan.operands.map((v) => ({ ...v })),
    inputs,
    output: { kind: 'device', dtype: out.dtype, shape: [...out.shape], strides: [...out.strides], offset: out.offset },
  });
}
