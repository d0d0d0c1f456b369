/**
 * NumPy's overlap rule for device arrays: an output that shares memory with an input other than as
 * the very same view (the in-place case kernels are written for) would be read after being written
 * by other invocations, in an order the GPU chooses. Such an input is copied first, on the device,
 * as the front copies host inputs (ufunc.ts, separateOverlaps).
 */
import { DTYPES } from '../../../dtypes.js';
import { reachOf } from '../../../layout.js';
import type { CallPlan, OperandView } from '../../../plan.js';
import type { DeviceArray } from './device-array.js';

const isDevice = (o: OperandView): boolean => o.scalar === undefined && (o.data as { kind?: string }).kind === 'device';

/** The elements an operand reaches in its storage, or undefined for none. */
function reach(plan: CallPlan, o: OperandView) {
  return reachOf([...plan.loopShape, ...o.coreShape], [...o.loopStrides, ...o.coreStrides], o.offset);
}

function sameView(a: OperandView, b: OperandView): boolean {
  return a.offset === b.offset && a.loopStrides.every((s, d) => s === b.loopStrides[d]) && a.coreStrides.every((s, d) => s === b.coreStrides[d]);
}

/** The indices of device inputs that overlap a device output of the call otherwise than in place. */
export function overlappingInputs(plan: CallPlan): number[] {
  const found: number[] = [];
  for (let i = 0; i < plan.nin; i++) {
    const input = plan.operands[i]!;
    if (!isDevice(input)) continue;
    const buffer = (input.data as unknown as DeviceArray).buffer;
    for (let o = plan.nin; o < plan.operands.length; o++) {
      const out = plan.operands[o]!;
      if (!isDevice(out) || (out.data as unknown as DeviceArray).buffer !== buffer || sameView(input, out)) continue;
      const a = reach(plan, input);
      const b = reach(plan, out);
      if (a && b && a.low <= b.high && b.low <= a.high) {
        found.push(i);
        break;
      }
    }
  }
  return found;
}

/**
 * The plan with each overlapping input read from a copy of its whole storage (so its offset and
 * strides stay as they are). `copy` copies a 1-D device array (a gpu ufunc call, queued before
 * the call that reads it).
 */
export async function withInputsCopied(plan: CallPlan, inputs: readonly number[], copy: (whole: DeviceArray) => Promise<DeviceArray>): Promise<CallPlan> {
  const operands = [...plan.operands];
  for (const i of inputs) {
    const array = operands[i]!.data as unknown as DeviceArray;
    const capacity = Math.floor((Math.ceil(array.byteLength / 4) * 4) / DTYPES[array.dtype].bytes);
    const whole = array.view([capacity], [1], 0);
    operands[i] = { ...operands[i]!, data: (await copy(whole)) as unknown as OperandView['data'] };
  }
  return { ...plan, operands };
}
