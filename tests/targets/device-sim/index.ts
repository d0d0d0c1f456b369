/**
 * A device test target, to prove the target contract for targets with memory of their own:
 * everything it is lives in this folder, and it is added with one line
 * (`registerTarget(DEVICE_SIM_ENTRY)`), with no edit to the front or to other targets. Its
 * "device memory" is host typed arrays behind `SimArray` handles, which the front cannot read
 * (it sees `DeviceArrayLike`s only); it runs plans with the cpu compiler on those arrays, and,
 * like the gpu, stores no 64-bit types and has a resource to shut down.
 */
import { type DType, DTYPES, type TypedArray } from '../../../src/dtypes.js';
import { cOrderStrides, sizeOf } from '../../../src/layout.js';
import { type CallPlan, type DeviceArrayLike, isDeviceResident, loopSize, type OperandView } from '../../../src/plan.js';
import { cpuCompiler } from '../../../src/targets/cpu/index.js';
import { prepareRunnerArgs } from '../../../src/targets/cpu/memory-layout.js';
import { ExecutableCache } from '../../../src/targets/executables.js';
import type { TargetEntry } from '../../../src/targets/registry.js';
import type { Target } from '../../../src/targets/target.js';

/** What the target was asked to do, for the tests to check. */
export const simTrace = { runs: 0, allocated: 0, destroyed: 0, shutdowns: 0 };

/** An array in the simulated device's memory: a handle over a host buffer the front never touches. */
export class SimArray implements DeviceArrayLike {
  readonly kind = 'device';
  constructor(
    /** The simulated device memory (whole buffer; views share it). */
    readonly memory: TypedArray,
    readonly dtype: DType,
    readonly shape: readonly number[],
    readonly strides: readonly number[],
    readonly offset: number,
  ) {}

  static of(data: TypedArray, dtype: DType = dtypeOf(data)): SimArray {
    return new SimArray(data.slice() as TypedArray, dtype, [data.length], [1], 0);
  }

  get size(): number {
    return sizeOf(this.shape);
  }

  view(shape: readonly number[], strides: readonly number[], offset: number): SimArray {
    return new SimArray(this.memory, this.dtype, shape, strides, offset);
  }

  destroy(): void {
    simTrace.destroyed++;
  }

  /** The elements in C order, as a plain array (what a read-back gives). */
  toArray(): (number | bigint)[] {
    const out: (number | bigint)[] = [];
    const walk = (axis: number, at: number): void => {
      if (axis === this.shape.length) {
        out.push(this.memory[at]!);
        return;
      }
      for (let i = 0; i < this.shape[axis]!; i++) walk(axis + 1, at + i * this.strides[axis]!);
    };
    walk(0, this.offset);
    return out;
  }
}

function dtypeOf(data: TypedArray): DType {
  return (Object.keys(DTYPES) as DType[]).find((t) => DTYPES[t].arrayType === data.constructor && t !== 'bool' && t !== 'uint8c')!;
}

function allocate(shape: readonly number[], dtype: DType): SimArray {
  simTrace.allocated++;
  return new SimArray(new DTYPES[dtype].arrayType(sizeOf(shape)) as TypedArray, dtype, shape, cOrderStrides(shape), 0);
}

const executables = new ExecutableCache(cpuCompiler, { scopedByKernel: true });

/** The plan with each device operand read through its simulated memory: what the "device" runs. */
function onDevice(plan: CallPlan): CallPlan {
  const operands = plan.operands.map((o): OperandView => (isDeviceResident(o.data) ? { ...o, data: (o.data as unknown as SimArray).memory } : o));
  return { ...plan, operands };
}

export const deviceSimTarget: Target = {
  name: 'device-sim',
  memory: 'device',
  canStore: (dtype) => dtype !== 'float64' && dtype !== 'int64' && dtype !== 'uint64',
  storeLimit: 'the simulated device stores 32-bit types at most',
  run: async (plan) => {
    simTrace.runs++;
    if (loopSize(plan) === 0) return;
    const local = onDevice(plan);
    const { args, layout } = prepareRunnerArgs(local);
    executables.get(local, layout).runner(args, 0, loopSize(local));
  },
  allocateDeviceArray: async (shape, dtype) => allocate(shape, dtype),
  allocateDeviceArrayNow: (shape, dtype) => allocate(shape, dtype),
  shutdown: () => {
    simTrace.shutdowns++;
  },
};

/** The target's line in the registry. */
export const DEVICE_SIM_ENTRY: TargetEntry = { name: 'device-sim', memory: 'device', load: async () => deviceSimTarget };
