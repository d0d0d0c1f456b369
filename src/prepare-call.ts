/**
 * The planner: a call's arguments turned into a `CallPlan` for its target, every check done before
 * anything is written. Its stages, one module each: the operands (call-operands.ts), the loop —
 * signature dispatch (ufunc.ts), output dtypes and casts, broadcasting (broadcast.ts) and the typed
 * kernel —, the inputs' views (cast up front where the loop reads another dtype), the outputs
 * (call-outputs.ts) and the finish (call-finish.ts). The run stage is run-call.ts.
 */
import { schedule, type ScheduledInput } from './broadcast.js';
import { finishing } from './call-finish.js';
import { type CallOperands, outWhat, readOperands } from './call-operands.js';
import { planOutputs } from './call-outputs.js';
import { viewOf } from './call-views.js';
import { canCast } from './cast-rules.js';
import { forcedTypes } from './call-options.js';
import { limitsOf } from './cancellation.js';
import { convertConstant } from './compiler/constant-folding.js';
import { drawsRandom, freshKey, keyOfSeed, withRandomStream } from './compiler/random-stream.js';
import { type DType, DTYPES, type TypedArray } from './dtypes.js';
import { ArgumentError } from './errors.js';
import { fuseStore } from './fused-store.js';
import { rememberPlan } from './plan-cache.js';
import { cOrderStrides } from './layout.js';
import { type ArrayOperand, copyToContiguous, describe, type DeviceOperand } from './ndarray.js';
import type { CallPlan, OperandView } from './plan.js';
import { type PreparedCall, runPrepared } from './run-call.js';
import type { ArgType } from './signature-parser/index.js';
import { formatTargetNames, targetNames } from './targets/registry.js';
import type { Target } from './targets/target.js';
import type { UfuncDefinition } from './ufunc.js';

export type { PreparedCall } from './run-call.js';

/**
 * Checks a call's arguments and builds its plan. Throws before anything is written.
 */
export function prepareCall(def: UfuncDefinition, args: readonly unknown[], target: Target): PreparedCall {
  const ops = readOperands(def, args);
  const { inputs, outs, options, casting, mask } = ops;

  // The loop: the first signature the inputs cast to (as forced by `dtype`/`signature`), on what the target stores.
  const forced = forcedTypes(options, def.nin, def.nout, (sig) => def.operandTypes(sig));
  const spec = def.select(inputs, { casting, forced, canStore: target.canStore, storeLimit: target.storeLimit });
  const types = def.operandTypes(spec.signature);
  const accepted = def.acceptedTypes(spec);
  const anyDevice = [...inputs, ...outs].some((op) => op?.kind === 'device');
  if (anyDevice && target.memory !== 'device') {
    const i = [...inputs, ...outs].findIndex((op) => op?.kind === 'device');
    throw new ArgumentError(`Argument ${i + 1} is a DeviceArray, which lives on a device, but this ufunc's target is '${target.name}': call \`await x.toHost()\` first, or use target ${formatTargetNames(targetNames('device'))}.`);
  }
  // The dtype each output ends up with: a given out's own, else the forced or accepted one.
  const resultTypes = def.layout.outputs.map((_, o) => {
    const given = outs[o];
    return given ? given.dtype : forced?.[def.nin + o] ?? accepted[def.nin + o]!.dtype;
  });
  resultTypes.forEach((to, o) => {
    const from = types[def.nin + o]!.dtype;
    // A loop run in other types than its signature's (float64 run in float32) casts its outputs at
    // least as freely as 'same_kind' allows, and 'unsafe' when the call asks for it.
    if (!canCast(from, to, spec.accepts && casting !== 'unsafe' ? 'same_kind' : casting)) {
      throw new ArgumentError(`Cannot cast output ${o + 1} of the loop \`${spec.signature.text}\` from ${from} to ${to} with casting '${casting}'${casting === 'unsafe' ? '' : ": pass `casting: 'unsafe'` to allow it, or an output of another dtype"}.`);
    }
  });

  // Broadcasting: the loop shape and the core dimension sizes.
  inputs.forEach((op, i) => {
    if (op.kind === 'scalar' && def.layout.inputs[i]!.length > 0) {
      throw new ArgumentError(`Argument ${i + 1} must be an array with core dimensions ${coreText(def, i)}, found ${describe(ops.rawInputs[i])}.`);
    }
  });
  const sched = schedule(
    def.layout,
    inputs.map((op, i): ScheduledInput => ({ shape: op.kind === 'scalar' ? [] : op.shape, what: `argument ${i + 1}` })),
    outs.map((op, o): ScheduledInput | undefined => (op ? { shape: op.shape, what: outWhat(def, o) } : undefined)),
    options.dims,
    mask ? [{ shape: mask.shape, what: '`where`' }] : [],
  );
  const loopRank = sched.loopShape.length;
  // Core shapes as the kernel sees them: `()` operands declared as arrays are one-element slices.
  const viewCoreShape = (k: number, shape: readonly number[]) => (types[k]!.kind === 'array' && shape.length === 0 ? [1] : [...shape]);
  const coreShapes = [...sched.inputCoreShapes, ...sched.outputCoreShapes].map((s, k) => viewCoreShape(k, s));
  // A plain-JS call (`disableJit`) types nothing: its plan carries the signature's types only.
  const { kernel, key } = def.disableJit ? def.signatureKernel(spec) : def.kernelFor(spec, coreShapes);
  if (!def.disableJit) def.checkTarget(target, spec, kernel);

  const inputViews = inputs.map((op, i) => inputView(def, ops, i, types[i]!, spec.signature.text, loopRank, coreShapes[i]!));
  const outputs = planOutputs({ def, target, ops, types, resultTypes, sched, coreShapes, anyDevice });
  const { fused } = outputs;

  // A fused store reads the mask, and a given out's old elements, as further inputs.
  const extraInputs: OperandView[] = [];
  if (fused && fused.mask !== 'none') extraInputs.push(viewOf(mask!, 'bool', loopRank, 0, []));
  if (fused?.mask === 'keep') extraInputs.push(viewOf(fused.given!, fused.resultType, loopRank, 0, []));
  // A kernel that draws random numbers takes its stream (key, first iteration) as three more scalar inputs.
  let planKernel = fused ? fuseStore(kernel, fused.resultType, fused.mask) : kernel;
  if (drawsRandom(kernel)) {
    planKernel = withRandomStream(planKernel, def.nin + extraInputs.length);
    const key = options.seed !== undefined ? keyOfSeed(options.seed) : freshKey();
    for (const word of [...key, 0]) extraInputs.push(scalarView('uint32', word, loopRank));
  }
  const views = [...inputViews, ...extraInputs, ...outputs.views];
  const nin = def.nin + extraInputs.length;
  separateOverlaps(views, nin);
  const limits = limitsOf(options);
  const plan: CallPlan = {
    kind: def.kind,
    kernel: planKernel,
    kernelKey: fused ? `${key}:store>${fused.resultType}:${fused.mask}` : key,
    loopShape: sched.loopShape, operands: views, nin, boundsCheck: def.boundsCheck,
    ...(limits ? { limits } : {}),
    ...(def.disableJit ? { plainRandomKey: options.seed !== undefined ? keyOfSeed(options.seed) : freshKey() } : {}),
    // Operands are inputs then outputs here (no fused-store inputs), in the layout's core order.
    ...(def.kind === 'guvectorize' && !fused
      ? { coreNames: [...def.layout.inputs, ...def.layout.outputs].map((core) => core.map((d) => (d.kind === 'symbol' ? d.name : undefined))) }
      : {}),
  };
  // Nothing staged, fused or limited, no inputs of the call's own (a random stream's key is fresh
  // per call): later calls of the same argument facts may reuse this plan.
  const staged = outputs.staged.some((s) => s) || outputs.deviceStaged.some((s) => s);
  if (!limits && !fused && !staged && !mask && extraInputs.length === 0 && !def.disableJit) {
    rememberPlan(def, args, target, plan, outputs.deviceOutputs[0]?.shape);
  }
  const { finish, setDeviceOutput } = finishing({
    def, target, ops, outputs, types, resultTypes, loopRank, coreShapes, views, nin,
    runStore: (store) => runPrepared(prepareCall(store.def, store.args, target)),
  });
  const plain = def.disableJit ? { fn: def.fn, env: def.env, params: def.parsed.params } : undefined;
  return { plan, target, deviceOutputs: outputs.deviceOutputs, finish, setDeviceOutput, ...(plain ? { plain } : {}) };
}

/** A scalar input: its value, and a one-element array holding it (for targets that read memory). */
function scalarView(dtype: DType, value: number | bigint | boolean, loopRank: number, coreShape: readonly number[] = []): OperandView {
  const data = new DTYPES[dtype].arrayType(1);
  (data as unknown as unknown[])[0] = dtype === 'bool' ? (value ? 1 : 0) : value;
  return { dtype, data, offset: 0, loopStrides: new Array(loopRank).fill(0), coreShape, coreStrides: coreShape.map(() => 0), scalar: value };
}

/** Input `i`'s view for the kernel: a scalar in a one-element array, an array (converted once, up front, where the loop reads another dtype). */
function inputView(def: UfuncDefinition, ops: CallOperands, i: number, t: ArgType, loop: string, loopRank: number, coreShape: readonly number[]): OperandView {
  const op = ops.inputs[i]!;
  const coreRank = def.layout.inputs[i]!.length;
  if (op.kind === 'scalar') {
    const value = convertConstant(op.value, t.dtype);
    const view = scalarView(t.dtype, value, loopRank, coreShape);
    if (t.kind === 'scalar') return view;
    const { scalar: _scalar, ...array } = view; // a one-element array parameter reads memory
    return array;
  }
  let arr: ArrayOperand | DeviceOperand = op;
  if (op.kind === 'device' && op.dtype !== t.dtype) {
    throw new ArgumentError(`Argument ${i + 1} is a ${op.dtype} DeviceArray but the loop \`${loop}\` reads ${t.dtype}; device arrays are not converted: pass a ${t.dtype} one.`);
  }
  if (op.kind === 'array' && op.dtype !== t.dtype && !sameBytes(op.dtype, t.dtype)) {
    // Casts are done once up front, so kernels read their declared type directly.
    const data = copyToContiguous(op, t.dtype);
    arr = { ...op, data, dtype: t.dtype, strides: cOrderStrides(op.shape), offset: 0 };
  }
  return viewOf(arr, t.dtype, loopRank, coreRank, coreShape);
}

/** Whether a loop may read an input of dtype `stored` as `read` in place: bool, uint8 and uint8c are all bytes of 0…255 (bool: 0 or 1). */
function sameBytes(stored: DType, read: DType): boolean {
  return (stored === 'uint8' && read === 'bool') || (stored === 'uint8' && read === 'uint8c') || (stored === 'uint8c' && read === 'uint8');
}

function coreText(def: UfuncDefinition, i: number): string {
  return `(${def.layout.inputs[i]!.map((d) => (d.kind === 'symbol' ? d.name : d.size)).join(',')})`;
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


