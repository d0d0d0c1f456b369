/**
 * The plan cache, owned by the planner (prepare-call.ts). Where the planner decided that a call
 * reads every argument as it is — no input cast or copied, no output staged, no limits — it leaves
 * a template of its plan here, keyed by the facts about the arguments its decisions read. A later
 * call with the same facts gets that plan with its own arrays put in, without planning: the
 * planner's checks, broadcasting, dispatch and typing cost more than the rest of a small call.
 *
 * The facts a template stands for:
 * - **the key** (a number, so a lookup hashes no string): per input, the class of a JS number
 *   (what `canCastScalar` answers for it: cast-rules.ts `numberCastClass`), a typed array's kind
 *   or a device array's dtype; then the kind of a lone `{ out }`, or none. A call with any other
 *   argument or option is always planned. On a device target a vectorize call may be on typed
 *   arrays alone (host arrays: the target uploads them) or on device arrays alone (and numbers);
 *   the two kinds of keys start with different digits.
 * - **the layouts**: a vectorize call's arrays are 1-D, contiguous from their first element and of
 *   one length (any length: the loop's); a guvectorize call's (device arrays, one output) have the
 *   shapes, strides and offsets the planned call's had.
 * - **per call**: a host `out` shares no bytes with an input other than being that very input; a
 *   device output can be allocated without waiting.
 * Any call whose facts differ is planned, and may leave its template in place of the one it missed.
 */
import { viewOf } from './call-views.js';
import { NUMBER_CAST_CLASSES, numberCastClass } from './cast-rules.js';
import { convertConstant } from './compiler/constant-folding.js';
import { type DType, DTYPES, type TypedArray } from './dtypes.js';
import { cOrderStrides, sameAxes, type StridedLayout } from './layout.js';
import { isDetached } from './ndarray.js';
import type { CallPlan, OperandView, PlanTemplate } from './plan.js';
import { probes } from './probes.js';
import type { Target } from './targets/target.js';
import type { UfuncDefinition } from './ufunc.js';

export type { PlanTemplate } from './plan.js';

/** An operand view as a template keeps it: without its array. */
type TemplateView = Omit<OperandView, 'data'>;

/** A call served from the cache: its plan, its output array, and the result to hand back (undefined for numbers alone: see {@link cachedResult}). */
export interface CachedCall {
  readonly plan: CallPlan;
  readonly result: unknown;
  readonly out: TypedArray;
}

/** A cached call's result, after it ran: the output array, or for numbers alone its one value. */
export function cachedResult(call: CachedCall): unknown {
  if (call.result !== undefined) return call.result;
  const value = call.out[0];
  return call.plan.operands[call.plan.nin]!.dtype === 'bool' ? value !== 0 : value;
}

// The digits of a key, five bits each. A key's typed arrays and device arrays share digits 0 … 9:
// a key sees one kind of array only (the call's memory, see argumentMemory), and a device target's
// keys of typed arrays start with another leading digit than those of its device arrays.

/** Typed-array kinds, digits 0 … 9 (Uint8ClampedArray, whose stores clamp, is always planned). */
const ARRAY_KINDS: readonly Function[] = [
  Float32Array, Float64Array, Int32Array, Uint32Array, Int16Array, Uint16Array, Int8Array, Uint8Array, BigInt64Array, BigUint64Array,
];
/** Device array dtypes, digits 0 … 8. */
const DEVICE_KINDS: readonly string[] = ['float32', 'int32', 'uint32', 'int16', 'uint16', 'int8', 'uint8', 'bool', 'uint8c'];
/** Classes of JS numbers (cast-rules.ts `numberCastClass`: 15 of them), digits 10 … 24. */
const NUMBER_DIGIT = 10;
/** No `out`: digit 25. */
const NO_OUT = NUMBER_DIGIT + NUMBER_CAST_CLASSES;

/** A device array as the cache reads it (DeviceArrayLike's layout, and its dtype). */
interface DeviceArgument extends StridedLayout {
  readonly kind: 'device';
  readonly dtype: DType;
  readonly size: number;
}

/**
 * The digit of an array argument: a typed array's kind on a host target, a device array's dtype on
 * a device target; -1 for anything else, and (vectorize) for an array not 1-D from its start.
 */
function arrayDigit(x: unknown, memory: Target['memory'], elementwise: boolean): number {
  if (typeof x !== 'object' || x === null) return -1;
  if (memory === 'host') {
    const kind = ARRAY_KINDS.indexOf(x.constructor);
    // A detached array reads as empty: planned, and refused there.
    return kind >= 0 && (x as TypedArray).length === 0 && isDetached(x as TypedArray) ? -1 : kind;
  }
  if ((x as { kind?: unknown }).kind !== 'device') return -1;
  const d = x as DeviceArgument;
  if (elementwise && (d.shape.length !== 1 || d.offset !== 0 || (d.strides[0] !== 1 && d.size > 1))) return -1;
  return DEVICE_KINDS.indexOf(d.dtype);
}

/** An array argument's length (typed array) or size (device array). */
const lengthOf = (x: unknown): number => (x as TypedArray).length ?? (x as DeviceArgument).size;

/**
 * What follows a call's inputs: null for nothing, the `out` of an options object that holds only
 * `out` (an object), or undefined for anything else.
 */
function onlyOut(args: readonly unknown[], nin: number): object | null | undefined {
  if (args.length === nin) return null;
  if (args.length !== nin + 1) return undefined;
  const options = args[nin] as { out?: unknown } | null;
  if (typeof options !== 'object' || options === null || ArrayBuffer.isView(options)) return undefined;
  let count = 0;
  for (const _ in options) count++;
  const out = options.out;
  return count === 1 && typeof out === 'object' && out !== null ? out : undefined;
}

/**
 * Where the call's arrays live as far as the cache is concerned: the target's memory, except for a
 * vectorize call on a device target whose first array is a typed array (host arrays, which the
 * target uploads): 'host' (then every array of the call must be one, or it is planned).
 */
function argumentMemory(def: UfuncDefinition, args: readonly unknown[], target: Target): Target['memory'] {
  if (target.memory === 'host' || def.kind !== 'vectorize') return target.memory;
  for (let i = 0; i < def.nin; i++) {
    const x = args[i];
    if (typeof x !== 'number') return ArrayBuffer.isView(x) ? 'host' : 'device';
  }
  return 'device';
}

/**
 * The key of a call's arguments (five bits an argument), or undefined for a call the cache does not
 * take: a vectorize call of numbers and 1-D arrays of one length, or a one-output guvectorize call
 * on device arrays (and numbers), each with at most a lone `{ out }`.
 *
 * @param memory the call's, from {@link argumentMemory}
 */
function callKey(def: UfuncDefinition, args: readonly unknown[], target: Target, memory: Target['memory']): number | undefined {
  const nin = def.nin;
  const elementwise = def.kind === 'vectorize';
  if (nin > 8 || (!elementwise && (memory !== 'device' || def.nout !== 1))) return undefined;
  // Host arrays on a device target: keys of their own (see the digits above).
  let key = memory === target.memory ? 1 : 2;
  let length = -1;
  let anyArray = false;
  for (let i = 0; i < nin; i++) {
    const x = args[i];
    if (typeof x === 'number') {
      key = key * 32 + NUMBER_DIGIT + numberCastClass(x);
      continue;
    }
    const digit = arrayDigit(x, memory, elementwise);
    if (digit < 0) return undefined;
    anyArray = true;
    if (elementwise) {
      const n = lengthOf(x);
      if (length !== -1 && n !== length) return undefined;
      length = n;
    }
    key = key * 32 + digit;
  }
  // A device call of numbers alone is planned (the planner's device arrays decide its memory).
  if (!anyArray && memory === 'device') return undefined;
  const out = onlyOut(args, nin);
  if (out === null) return key * 32 + NO_OUT;
  if (out === undefined) return undefined;
  const digit = arrayDigit(out, memory, elementwise);
  if (digit < 0 || (elementwise && lengthOf(out) !== (length === -1 ? 1 : length))) return undefined;
  return key * 32 + digit;
}

/**
 * Leaves the planned call's template for later calls of the same facts; called by the planner
 * where it decided that nothing is staged, fused or limited and the call has no inputs of its own
 * (a random stream). Leaves none where an input was copied
 * (a cast, or an input overlapping `out` elsewhere) or the output is not the one the kernel writes.
 *
 * @param def the ufunc
 * @param args the call's arguments
 * @param target the call's target
 * @param plan the call's plan
 * @param allocated the output's shape where the call allocates it on a device
 */
export function rememberPlan(def: UfuncDefinition, args: readonly unknown[], target: Target, plan: CallPlan, allocated: readonly number[] | undefined): void {
  const memory = argumentMemory(def, args, target);
  const key = callKey(def, args, target, memory);
  if (key === undefined) return;
  const nin = def.nin;
  const { operands } = plan;
  if (plan.nin !== nin || operands.length !== nin + 1) return;
  const layouts: StridedLayout[] = [];
  for (let i = 0; i < nin; i++) {
    const x = args[i];
    const view = operands[i]!;
    if (typeof x === 'number') continue;
    if (view.data !== x) return; // converted, or copied away from an overlapping out
    if (memory === 'device') layouts[i] = layoutOf(x as DeviceArgument);
  }
  const outView = operands[nin]!;
  const given = args.length > nin ? (args[nin] as { out: unknown }).out : undefined;
  if (given !== undefined && outView.data !== given) return;
  // The views without the arrays of this call, which a template must not keep alive.
  const views = operands.map(withoutData);
  let output: PlanTemplate['output'];
  if (memory === 'device') {
    if (given) output = { ...layoutOf(given as DeviceArgument), dtype: outView.dtype };
    else {
      if (!allocated) return;
      const shape = [...allocated];
      output = { dtype: outView.dtype, shape, strides: cOrderStrides(shape), offset: 0 };
      // The view the run stage gives an array allocated so (call-finish.ts setDeviceOutput).
      const allocatedOperand = { kind: 'device', array: undefined as never, dtype: outView.dtype, shape, strides: output.strides, offset: 0 } as const;
      views[nin] = withoutData(viewOf(allocatedOperand, outView.dtype, plan.loopShape.length, def.layout.outputs[0]!.length, outView.coreShape));
    }
  }
  const template: PlanTemplate = {
    plan: {
      kind: plan.kind, kernel: plan.kernel, kernelKey: plan.kernelKey, nin: plan.nin, boundsCheck: plan.boundsCheck,
      ...(plan.coreNames ? { coreNames: plan.coreNames } : {}),
    },
    types: operands.map((v) => v.dtype),
    ...(def.kind === 'vectorize' ? {} : { loopShape: plan.loopShape, views, layouts, output }),
  };
  def.plans.set(key, template);
}

/** A copy of a device array's layout (the array may be reshaped or dropped; the template stays). */
function layoutOf(d: StridedLayout): StridedLayout {
  return { shape: [...d.shape], strides: [...d.strides], offset: d.offset };
}

/**
 * The plan of a call the cache holds a template for, or undefined where the call must be planned
 * (a first call of its facts, an `out` overlapping an input, a layout other than the planned one's,
 * no device output to be had without waiting, …).
 *
 * @param def the ufunc
 * @param args the call's arguments
 * @param target the ufunc's (loaded) target
 */
export function cachedCall(def: UfuncDefinition, args: readonly unknown[], target: Target): CachedCall | undefined {
  const memory = argumentMemory(def, args, target);
  const key = callKey(def, args, target, memory);
  if (key === undefined) return undefined;
  const template = def.plans.get(key);
  if (!template) return undefined;
  // (Numbers need no check: their class says that they cast to the loop's types as the planned call's did.)
  const call = template.views ? byLayouts(template, args, def.nin, target) : byElements(template, args, def.nin, target, memory);
  if (call) probes.cachedCall?.();
  return call;
}

const NO_DIMS: readonly number[] = [];
const UNIT: readonly number[] = [1];
const BROADCAST: readonly number[] = [0];

/**
 * The memory a scalar operand nominally lives in. Targets read scalars from `OperandView.scalar`;
 * the placeholder only has to be an array of its own — pointing a scalar at the output's memory
 * would make the parallel target see an input overlapping the output and run the whole call on
 * one thread.
 */
const placeholders = new Map<DType, TypedArray>();
function placeholderFor(dtype: DType): TypedArray {
  let p = placeholders.get(dtype);
  if (!p) placeholders.set(dtype, (p = new DTYPES[dtype].arrayType(1) as TypedArray));
  return p;
}

/** A vectorize call: 1-D arrays of one length, the loop as long; `memory` is where they live. */
function byElements(template: PlanTemplate, args: readonly unknown[], nin: number, target: Target, memory: Target['memory']): CachedCall | undefined {
  let length = 1;
  let anyArray = false;
  for (let i = 0; i < nin; i++) {
    const x = args[i];
    if (typeof x !== 'number') {
      length = lengthOf(x);
      anyArray = true;
    }
  }
  const outputType = template.types[nin]!;
  const given = args.length > nin ? (args[nin] as { out: TypedArray }).out : undefined;
  let out: TypedArray;
  if (memory === 'device') {
    const made = given ?? (target.allocateDeviceArrayNow?.([length], outputType) as unknown as TypedArray | undefined);
    if (!made) return undefined;
    out = made;
  } else {
    if (given) {
      for (let i = 0; i < nin; i++) {
        const x = args[i];
        if (typeof x !== 'number' && x !== given && bytesOverlap(x as TypedArray, given)) return undefined;
      }
    }
    out = given ?? target.allocateOutput?.(length, outputType) ?? (new DTYPES[outputType].arrayType(length) as TypedArray);
  }
  const operands: OperandView[] = [];
  for (let i = 0; i < nin; i++) {
    const x = args[i];
    const dtype = template.types[i]!;
    if (typeof x === 'number') {
      operands.push({ dtype, data: placeholderFor(dtype), offset: 0, loopStrides: BROADCAST, coreShape: NO_DIMS, coreStrides: NO_DIMS, scalar: convertConstant(x, dtype) });
    } else {
      operands.push({ dtype, data: x as TypedArray, offset: 0, loopStrides: UNIT, coreShape: NO_DIMS, coreStrides: NO_DIMS });
    }
  }
  operands.push({ dtype: outputType, data: out, offset: 0, loopStrides: UNIT, coreShape: NO_DIMS, coreStrides: NO_DIMS });
  // Written out rather than spread: spreading here cost more than the rest of a small call.
  const t = template.plan;
  const plan: CallPlan = { kind: t.kind, kernel: t.kernel, kernelKey: t.kernelKey, nin: t.nin, boundsCheck: t.boundsCheck, operands, loopShape: anyArray ? [length] : NO_DIMS };
  return { plan, result: given ?? (anyArray || memory === 'device' ? out : undefined), out };
}

/** A guvectorize call on device arrays laid out as the planned call's were. */
function byLayouts(template: PlanTemplate, args: readonly unknown[], nin: number, target: Target): CachedCall | undefined {
  const views = template.views!;
  const operands: OperandView[] = [];
  for (let i = 0; i < nin; i++) {
    const x = args[i];
    const view = views[i]!;
    if (typeof x === 'number') {
      // As the planner builds it: the value converted to the loop's type, in a one-element array.
      const value = convertConstant(x, view.dtype);
      const data = new DTYPES[view.dtype].arrayType(1);
      (data as unknown as unknown[])[0] = view.dtype === 'bool' ? (value ? 1 : 0) : value;
      operands.push(view.scalar !== undefined ? { ...view, data, scalar: value } : { ...view, data });
      continue;
    }
    if (!sameLayout(x as DeviceArgument, template.layouts![i]!)) return undefined;
    operands.push(withData(view, x));
  }
  const output = template.output!;
  let out: unknown;
  if (args.length > nin) {
    out = (args[nin] as { out: DeviceArgument }).out;
    if (!sameLayout(out as DeviceArgument, output)) return undefined;
  } else {
    out = target.allocateDeviceArrayNow?.(output.shape, output.dtype);
    if (!out) return undefined;
  }
  operands.push(withData(views[nin]!, out));
  const t = template.plan;
  // Written out rather than spread (per call).
  const plan: CallPlan = {
    kind: t.kind, kernel: t.kernel, kernelKey: t.kernelKey, loopShape: template.loopShape!, operands, nin: t.nin, boundsCheck: t.boundsCheck,
    ...(t.coreNames ? { coreNames: t.coreNames } : {}),
  };
  return { plan, result: out, out: out as TypedArray };
}

/** Whether a device array is laid out as the planned one was (its dtype is in the key). */
function sameLayout(x: StridedLayout, planned: StridedLayout): boolean {
  return x.offset === planned.offset && sameAxes(x.shape, planned.shape) && sameAxes(x.strides, planned.strides);
}

// A template serves later calls with a given `out` too: whether this call allocated its output
// (`fresh`) is not part of it.
function withoutData({ data: _, fresh: _fresh, ...view }: OperandView): TemplateView {
  return view;
}

function withData(view: TemplateView, data: unknown): OperandView {
  return {
    dtype: view.dtype, data: data as OperandView['data'], offset: view.offset,
    loopStrides: view.loopStrides, coreShape: view.coreShape, coreStrides: view.coreStrides,
  };
}

/**
 * Whether two views share bytes. Arrays in the Wasm engine's memory all share one buffer, so
 * comparing buffers alone would plan every call on them.
 */
function bytesOverlap(a: TypedArray, b: TypedArray): boolean {
  return a.buffer === b.buffer && a.byteOffset < b.byteOffset + b.byteLength && b.byteOffset < a.byteOffset + a.byteLength;
}
