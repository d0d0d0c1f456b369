/**
 * The finish stage of a call (after run-call.ts): staged outputs stored into the real ones (on the
 * host: converted and masked, storeCast; on a device: by a store call on the device, device-store.ts),
 * then the results in the form the call's arguments ask for — a typed array for 1-D calls on plain
 * typed arrays, an `NDArray` otherwise, a scalar for scalar inputs, device arrays for device calls.
 */
import { loopStridesFor } from './broadcast.js';
import { type CallLoop, coreLast, type CallOutputs } from './call-outputs.js';
import { deviceView, viewOf } from './call-views.js';
import { storeCast } from './casting.js';
import { type DeviceStoreCall, deviceStoreCall } from './device-store.js';
import { type ArrayOperand, type DeviceOperand, type NDArray, orderOf } from './ndarray.js';
import type { OperandView } from './plan.js';

/** What the finish stage reads of the earlier stages. */
export interface FinishInput extends CallLoop {
  readonly outputs: CallOutputs;
  readonly loopRank: number;
  /** The plan's operands (device outputs are put in when allocated) and its number of inputs. */
  readonly views: OperandView[];
  readonly nin: number;
  /** Runs a store call (the planner and the runner, which this stage does not import). */
  readonly runStore: (store: DeviceStoreCall) => Promise<unknown>;
}

/** The call's last steps: `finish` hands back its results; `setDeviceOutput` puts an allocated device output into the plan. */
export interface Finish {
  readonly finish: () => unknown;
  readonly setDeviceOutput: (o: number, array: unknown) => void;
}

export function finishing({ def, target, ops, outputs, types, resultTypes, loopRank, coreShapes, views, nin, runStore }: FinishInput): Finish {
  const { inputs, outs, mask, maskAll, requested, keepdims } = ops;
  const { staged, deviceStaged, allocated } = outputs;
  const allPlain = inputs.every((op) => op.kind !== 'array' || op.plain) && !requested.some((a) => a);
  const allScalar = inputs.every((op) => op.kind === 'scalar') && !mask;
  const deviceResults: unknown[] = [];

  const finishOnDevice = async (): Promise<unknown> => {
    for (let o = 0; o < deviceStaged.length; o++) {
      const st = deviceStaged[o];
      if (!st) continue;
      const temp = deviceResults[o] as DeviceOperand['array'];
      const dest = st.given ? st.given.array : await target.allocateDeviceArray!(st.allocShape, st.resultType);
      // The store writes through a view of the output in the temporary's order (loop dimensions, then core ones).
      const axes = requested[def.nin + o];
      const into = !axes ? dest : st.given ? deviceView(st.given.array, st.given.shape, st.given.strides, st.given.offset) : coreLast(dest as DeviceOperand['array'], axes, keepdims);
      const maskView = mask && {
        data: mask.data, dtype: 'bool', offset: mask.offset,
        // The mask covers loop dimensions: aligned to them, with size-1 axes over the core dimensions.
        shape: [...new Array<number>(loopRank - mask.shape.length).fill(1), ...mask.shape, ...new Array<number>(st.shape.length - loopRank).fill(1)],
        strides: [...new Array<number>(loopRank - mask.shape.length).fill(0), ...mask.strides, ...new Array<number>(st.shape.length - loopRank).fill(0)],
      };
      await runStore(deviceStoreCall(target, temp, into, types[def.nin + o]!.dtype, st.resultType, maskAll ? false : maskView, st.given !== undefined));
      temp.destroy();
      deviceResults[o] = dest;
    }
    return finishHere();
  };

  const finishHere = () => {
    staged.forEach((st, o) => {
      if (!st || maskAll) return;
      // The mask covers loop dimensions; each masked-in loop index writes its whole core slice.
      const coreRank = st.shape.length - loopRank;
      const maskView = mask && {
        data: mask.data,
        offset: mask.offset,
        strides: [...loopStridesFor(mask.shape, mask.strides, loopRank, 0), ...new Array<number>(coreRank).fill(0)],
      };
      storeCast(st.temp, types[def.nin + o]!.dtype, st.dest, st.shape, maskView);
    });
    const results = def.layout.outputs.map((_, o) => {
      const given = outs[o];
      if (given) return given.kind === 'device' ? given.array : (given as ArrayOperand).original;
      if (deviceResults[o] !== undefined) return deviceResults[o];
      const { data, shape, strides } = allocated[o]!;
      const dtype = resultTypes[o]!;
      if (shape.length === 0 && allScalar) {
        const v = data[0]!;
        return dtype === 'bool' ? v !== 0 : v;
      }
      if (shape.length === 1 && allPlain) return data;
      const result: NDArray = { data, shape, strides, offset: 0, dtype, order: orderOf(shape, strides) };
      return result;
    });
    return def.nout === 1 ? results[0] : results;
  };

  const finish = (): unknown => (deviceStaged.some((d) => d) ? finishOnDevice() : finishHere());

  const setDeviceOutput = (o: number, array: unknown) => {
    deviceResults[o] = array;
    let a = array as DeviceOperand['array'];
    const k = def.nin + o;
    const axes = requested[k];
    // (A staged output's temporary is already in loop-then-core order.)
    if (axes && !deviceStaged[o]) a = coreLast(a, axes, keepdims);
    views[nin + o] = viewOf({ kind: 'device', array: a, dtype: a.dtype, shape: a.shape, strides: a.strides, offset: a.offset }, a.dtype, loopRank, def.layout.outputs[o]!.length, coreShapes[k]!);
  };
  return { finish, setDeviceOutput };
}
