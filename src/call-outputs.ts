/**
 * The outputs stage of planning a call (prepare-call.ts): each output's view for the kernel — the
 * given `out`, an output allocated in the caller's layout, or, where the kernel cannot write the
 * output directly (another dtype, a clamping Uint8ClampedArray, a `where` mask), a temporary of
 * the loop's dtype that the finish stage stores (call-finish.ts); on device arrays, the staging
 * happens on the device, in the kernel's own store where it can (fused-store.ts).
 */
import type { Schedule } from './broadcast.js';
import type { CallOperands } from './call-operands.js';
import { deviceView, permuted, viewOf } from './call-views.js';
import { axesLast, normaliseAxes, placeCoreAxes } from './core-axes.js';
import { type DType, DTYPES, type TypedArray } from './dtypes.js';
import { ArgumentError } from './errors.js';
import { cOrderStrides, sizeOf } from './layout.js';
import type { ArrayOperand, DeviceOperand } from './ndarray.js';
import type { OperandView } from './plan.js';
import type { ArgType } from './signature-parser/index.js';
import type { Target } from './targets/target.js';
import type { UfuncDefinition } from './ufunc.js';

/** What the outputs stage decided, beside the views: what the finish stage does with each output. */
export interface CallOutputs {
  /** Per output, its view for the kernel. */
  readonly views: OperandView[];
  /** Host outputs the kernel writes through a temporary, stored by `finish`. */
  readonly staged: readonly (HostStaged | undefined)[];
  /** Device outputs written through a device temporary, stored on the device by `finish`. */
  readonly deviceStaged: readonly (DeviceStaged | undefined)[];
  /** Outputs to allocate on the device before running. */
  readonly deviceOutputs: { output: number; shape: number[]; dtype: DType }[];
  /** Host outputs the call allocated, in the caller's layout. */
  readonly allocated: readonly (Allocated | undefined)[];
  /** A vectorize call on device arrays whose `where`/cast is done in the kernel's store (fused-store.ts). */
  readonly fused: FusedStore | undefined;
}

export interface HostStaged {
  readonly temp: TypedArray;
  readonly dest: { data: TypedArray; dtype: DType; strides: number[]; offset: number };
  readonly shape: number[];
}
export interface DeviceStaged {
  readonly given: DeviceOperand | undefined;
  readonly shape: number[];
  readonly resultType: DType;
  readonly allocShape: number[];
}
export interface Allocated {
  readonly data: TypedArray;
  readonly shape: number[];
  readonly strides: number[];
}
export interface FusedStore {
  readonly mask: 'none' | 'zero' | 'keep';
  readonly resultType: DType;
  readonly given: DeviceOperand | undefined;
}

/** What the planner decided before the outputs: the stages after it read these. */
export interface CallLoop {
  readonly def: UfuncDefinition;
  readonly target: Target;
  readonly ops: CallOperands;
  /** The loop's operand types (inputs then outputs). */
  readonly types: readonly ArgType[];
  /** The dtype each output ends up with. */
  readonly resultTypes: readonly DType[];
  /** Core shapes as the kernel sees them, inputs then outputs. */
  readonly coreShapes: readonly (readonly number[])[];
}

/** What the outputs stage reads of the earlier stages. */
export interface OutputsInput extends CallLoop {
  readonly sched: Schedule;
  /** Whether any operand is a device array. */
  readonly anyDevice: boolean;
}

/** Plans every output of a call. Allocates the host outputs and temporaries it needs; writes nothing. */
export function planOutputs({ def, target, ops, types, resultTypes, sched, coreShapes, anyDevice }: OutputsInput): CallOutputs {
  const { outs, mask, maskAll, requested, keepdims } = ops;
  const loopRank = sched.loopShape.length;
  const staged: (HostStaged | undefined)[] = [];
  const deviceStaged: (DeviceStaged | undefined)[] = [];
  const deviceOutputs: { output: number; shape: number[]; dtype: DType }[] = [];
  const allocated: (Allocated | undefined)[] = [];
  const masked = mask !== undefined || maskAll;
  let fused: FusedStore | undefined;
  const onDevice = (dtype: DType, k: number): OperandView => ({ dtype, data: { kind: 'device' }, offset: 0, loopStrides: [], coreShape: coreShapes[k]!, coreStrides: [] });
  /** The shape an allocated output has in the caller's layout: core dimensions where `axes` asked, size-1 axes with `keepdims`. */
  const callerShape = (o: number, k: number, fullShape: number[]): number[] => {
    const axes = requested[k];
    const keptCore = keepdims ? coreShapes[0]!.map(() => 1) : sched.outputCoreShapes[o]!;
    return axes ? placeCoreAxes(sched.loopShape, keptCore, normaliseAxes(axes, loopRank + keptCore.length, `the axes of output ${o + 1}`)) : fullShape;
  };
  const views = def.layout.outputs.map((core, o): OperandView => {
    const k = def.nin + o;
    const dtype = types[k]!.dtype;
    const given = outs[o];
    const fullShape = [...sched.loopShape, ...sched.outputCoreShapes[o]!];
    const needsStaging = masked || resultTypes[o] !== dtype;
    if (needsStaging && (anyDevice || given?.kind === 'device')) {
      if (given && given.kind !== 'device') {
        throw new ArgumentError(`Output ${o + 1}: a call on device arrays writes device outputs, so \`out\` must be a DeviceArray, found a host array; with \`where\` or a cast its store runs on the device.`);
      }
      // (Not for a plain-JS kernel, `disableJit`: there is no compiled store to put the cast in.)
      if (def.kind === 'vectorize' && def.nout === 1 && !maskAll && !def.disableJit) {
        // In the kernel's own store (fused-store.ts): no device temporary, no second kernel.
        const resultType = resultTypes[o]!;
        fused = { mask: mask ? (given ? 'keep' : 'zero') : 'none', resultType, given: given as DeviceOperand | undefined };
        if (given) return viewOf(given as DeviceOperand, resultType, loopRank, core.length, coreShapes[k]!);
        deviceOutputs.push({ output: o, shape: fullShape, dtype: resultType });
        return onDevice(resultType, k);
      }
      // The temporary is in loop-then-core order; an allocated output is in the caller's layout (`axes`, `keepdims`), as on the host.
      deviceStaged[o] = { given: given as DeviceOperand | undefined, shape: fullShape, resultType: resultTypes[o]!, allocShape: callerShape(o, k, fullShape) };
      deviceOutputs.push({ output: o, shape: fullShape, dtype });
      return onDevice(dtype, k);
    }
    let dest: ArrayOperand | DeviceOperand;
    if (given) dest = given;
    else {
      const axes = requested[k];
      const finalShape = callerShape(o, k, fullShape);
      if (anyDevice) {
        deviceOutputs.push({ output: o, shape: finalShape, dtype });
        return onDevice(dtype, k);
      }
      const type = resultTypes[o]!;
      const data = allocateOutput(needsStaging ? undefined : target, finalShape, type, def.nout === 1 ? 'the output' : `output ${o + 1}`);
      const strides = cOrderStrides(finalShape);
      allocated[o] = { data, shape: finalShape, strides };
      let view: ArrayOperand = { kind: 'array', data, dtype: type, shape: finalShape, strides, offset: 0, plain: false, original: undefined };
      if (axes) {
        const at = normaliseAxes(axes, finalShape.length, `the axes of output ${o + 1}`);
        view = permuted(view, axesLast(finalShape.length, at));
        if (keepdims) view = { ...view, shape: view.shape.slice(0, -at.length), strides: view.strides.slice(0, -at.length) };
      }
      dest = view;
    }
    if (needsStaging) {
      const arr = dest as ArrayOperand;
      const temp = allocateOutput(target, fullShape, dtype, def.nout === 1 ? 'the output' : `output ${o + 1}`);
      staged[o] = { temp, dest: { data: arr.data, dtype: arr.dtype, strides: [...arr.strides], offset: arr.offset }, shape: fullShape };
      const tempView: ArrayOperand = { kind: 'array', data: temp, dtype, shape: fullShape, strides: cOrderStrides(fullShape), offset: 0, plain: false, original: undefined };
      return viewOf(tempView, dtype, loopRank, core.length, coreShapes[k]!);
    }
    const view = viewOf(dest, dtype, loopRank, core.length, coreShapes[k]!);
    return given ? view : { ...view, fresh: true };
  });
  return { views, staged, deviceStaged, deviceOutputs, allocated, fused };
}

/** A view of a device output with its core dimensions last (dropped with `keepdims`), as kernels write it. */
export function coreLast(a: DeviceOperand['array'], axes: readonly number[], keepdims: boolean): DeviceOperand['array'] {
  const at = normaliseAxes(axes, a.shape.length, 'the axes of an output');
  const perm = axesLast(a.shape.length, at);
  const keep = keepdims ? perm.length - at.length : perm.length;
  return deviceView(a, perm.slice(0, keep).map((d) => a.shape[d]!), perm.slice(0, keep).map((d) => a.strides[d]!), a.offset);
}

/**
 * Allocates a host output, turning a size no typed array can have (a broadcast of huge loop
 * dimensions, `dims: { n: 2 ** 40 }`) or an allocation that fails into an `ArgumentError` that
 * says how large the output would be, instead of V8's bare `RangeError`.
 */
function allocateOutput(target: Target | undefined, shape: readonly number[], dtype: DType, what: string): TypedArray {
  const length = sizeOf(shape);
  const bytes = length * DTYPES[dtype].bytes;
  const tooLarge = (why: string, cause?: unknown) =>
    new ArgumentError(
      `${what[0]!.toUpperCase()}${what.slice(1)} would have shape [${shape.join(', ')}]: ${exactProduct(shape)} ${dtype} elements, ${why}. Check the arguments' shapes and \`dims\`.`,
      cause === undefined ? undefined : { cause },
    );
  if (!Number.isSafeInteger(bytes) || length > MAX_ARRAY_LENGTH) throw tooLarge(`more than a typed array can hold (${MAX_ARRAY_LENGTH} elements)`);
  try {
    return target?.allocateOutput?.(length, dtype) ?? new DTYPES[dtype].arrayType(length);
  } catch (e) {
    if (e instanceof RangeError) throw tooLarge(`which could not be allocated (${e.message})`, e);
    throw e;
  }
}

function exactProduct(shape: readonly number[]): string {
  return shape.reduce((p, n) => p * BigInt(n), 1n).toString();
}

/** The longest typed array V8 makes on 64-bit machines (2³² elements since V8 9; larger ones throw). */
const MAX_ARRAY_LENGTH = 2 ** 32;
