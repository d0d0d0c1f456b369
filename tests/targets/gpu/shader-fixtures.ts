/**
 * Generates the WGSL a gpu call would compile, without a GPU: the plan comes from the front (with
 * a stand-in target), host operands are placed as the runtime places them, and the layout uses
 * lavapipe-like limits unless told otherwise.
 */
import { guvectorize } from '../../../src/guvectorize/index.js';
import { parseLayout } from '../../../src/signature-parser/index.js';
import type { CallPlan } from '../../../src/plan.js';
import { layoutCall, type LayoutLimits } from '../../../src/targets/gpu/codegen/call-layout.js';
import { checkGpuKernel } from '../../../src/targets/gpu/codegen/check-kernel.js';
import { placeHostOperand, isAllZero } from '../../../src/targets/gpu/runtime/host-operands.js';
import { generateShader } from '../../../src/targets/gpu/codegen/shader-module.js';
import type { Target } from '../../../src/targets/target.js';
import { prepareCall } from '../../../src/prepare-call.js';
import { UfuncDefinition, type UfuncOptions } from '../../../src/ufunc.js';
import type { TypedArray } from '../../../src/dtypes.js';

export const LAVAPIPE_LIMITS: LayoutLimits = {
  maxStorageBufferBindingSize: 128 * 2 ** 20,
  maxStorageBuffersPerShaderStage: 16,
  maxComputeWorkgroupStorageSize: 32768,
  maxComputeWorkgroupsPerDimension: 65535,
};

const planningTarget: Target = {
  name: 'gpu',
  memory: 'device',
  checkKernel: checkGpuKernel,
  run: async () => {},
};

/** The plan the front makes for `args` on a ufunc defined by these parts. */
export function planFor(
  kind: 'vectorize' | 'guvectorize',
  kernel: Function,
  signatures: string[],
  layout: string,
  args: unknown[],
  options: UfuncOptions = {},
): CallPlan {
  const def = new UfuncDefinition(kind, kernel, signatures, parseLayout(layout), { target: 'gpu', ...options });
  return prepareCall(def, args, planningTarget).plan;
}

/** The WGSL of a call whose operands are all host arrays or scalars. */
export function wgslFor(plan: CallPlan, limits: LayoutLimits = LAVAPIPE_LIMITS): string {
  const storages = new Map<TypedArray, object>();
  const views = plan.operands.map((o, j) => {
    if (o.scalar !== undefined) {
      return { dtype: o.dtype, storage: undefined, storageBytes: 0, offset: 0, loopStrides: o.loopStrides, coreShape: o.coreShape, coreStrides: o.coreStrides, scalar: o.scalar, pristine: false };
    }
    const p = placeHostOperand(o, plan.loopShape, j < plan.nin ? 'input' : 'output');
    const storage = storages.get(p.data) ?? {};
    storages.set(p.data, storage);
    return {
      dtype: o.dtype, storage, storageBytes: p.length * p.data.BYTES_PER_ELEMENT, offset: p.offset, loopStrides: p.loopStrides,
      coreShape: o.coreShape, coreStrides: p.coreStrides, pristine: j >= plan.nin && isAllZero(p),
    };
  });
  return generateShader(plan.kernel, layoutCall(plan, views, limits).layout).code;
}

/** A vectorize call's WGSL, for snapshot tests of one language feature. */
export function vectorizeWgsl(kernel: Function, signature: string, args: unknown[], options: UfuncOptions = {}): string {
  const arity = args.length;
  return wgslFor(planFor('vectorize', kernel, [signature], `${Array(arity).fill('()').join(',')}->()`, args, options));
}

export { guvectorize };
