/**
 * Compute pipelines, compiled once per (device, kernel key, shader layout) and cached.
 *
 * Bind group layouts are explicit: `layout: 'auto'` drops bindings the shader does not use, and a
 * bind group that names them then fails (docs: /work/shared/gpu/README.md, "Auto layouts drop
 * unused bindings").
 */
import type { TypedKernel } from '../../../compiler/ir.js';
import type { IndexCheckSite } from '../../../compiler/source-excerpt.js';
import { KernelCompileError, UfuncError } from '../../../errors.js';
import { ExecutableCache } from '../../executables.js';
import type { KernelCompiler, KernelToCompile } from '../../target.js';
import { type GpuContext, runScoped } from './device.js';
import { ENTRY_POINT } from '../codegen/namer.js';
import { generateShader } from '../codegen/shader-module.js';
import { bindingNumbers, layoutKey, type ShaderLayout } from '../codegen/shader-layout.js';

/** A compiled kernel, ready to bind and dispatch. */
export interface CompiledKernel {
  readonly pipeline: GPUComputePipeline;
  readonly bindGroupLayout: GPUBindGroupLayout;
  /** Bounds-check sites, for error messages. */
  readonly sites: readonly IndexCheckSite[];
  /** The WGSL it was compiled from. */
  readonly code: string;
  /**
   * Bind groups made for this pipeline, by the identities of the buffers (and ranges) they bind:
   * a call whose operands repeat reuses one instead of creating it again (30 µs on lavapipe).
   * Params and bounds-check record are bound with dynamic offsets, so they do not make groups differ.
   */
  readonly bindGroups: Map<string, GPUBindGroup>;
  /** The group the latest call bound, with its buffers: a call that repeats them looks nothing up. */
  lastBindGroup?: { readonly storages: readonly GPUBuffer[]; readonly group: GPUBindGroup };
}

/** How the gpu compiles: one compute pipeline per kernel and shader layout, on one device. */
export const gpuCompiler: KernelCompiler<ShaderLayout, Promise<CompiledKernel>, GpuContext> = {
  layoutKey,
  compile(spec, layout, ctx) {
    const compiled = compile(ctx, spec.kernel, layout);
    compiled.then(
      (k) => readyKernels(ctx.device).set(`${spec.kernelKey}#${layoutKey(layout)}`, k),
      // A failed compilation is not cached: the next call tries again (and fails the same way).
      () => pipelines.delete(spec, layout, ctx.device),
    );
    return compiled;
  },
};

// Per device, weakly: a released device's pipelines go with it.
const pipelines = new ExecutableCache(gpuCompiler);

/**
 * The pipeline for a kernel and layout on this device, compiled on first use. Concurrent calls
 * share one compilation.
 *
 * @param ctx the device
 * @param spec the kernel and its cache identity (a CallPlan serves)
 * @param layout the shader layout
 * @returns the compiled kernel
 * @throws KernelCompileError when the generated WGSL does not compile (a bug in ufunc: the message
 *   has the compiler's diagnostics and the offending line)
 */
export function compiledKernel(ctx: GpuContext, spec: KernelToCompile, layout: ShaderLayout): Promise<CompiledKernel> {
  return pipelines.get(spec, layout, ctx.device, ctx);
}

// The compiled kernels that are ready, for calls that must not wait a turn of the event loop.
const ready = new WeakMap<GPUDevice, Map<string, CompiledKernel>>();
function readyKernels(device: GPUDevice): Map<string, CompiledKernel> {
  let map = ready.get(device);
  if (!map) ready.set(device, (map = new Map()));
  return map;
}

/**
 * The compiled kernel for a cache key (`kernelKey#layoutKey`) if it is ready now, without waiting.
 *
 * @param ctx the device
 * @param key as {@link compiledKernel} builds it
 */
export function readyKernel(ctx: GpuContext, key: string): CompiledKernel | undefined {
  return ready.get(ctx.device)?.get(key);
}

async function compile(ctx: GpuContext, kernel: TypedKernel, layout: ShaderLayout): Promise<CompiledKernel> {
  const { code, sites } = generateShader(kernel, layout);
  const { device } = ctx;
  return runScoped(ctx, async () => {
    const module = device.createShaderModule({ code, label: `ufunc kernel ${kernel.name}` });
    const info = await module.getCompilationInfo();
    const errors = info.messages.filter((m) => m.type === 'error');
    if (errors.length) {
      const lines = code.split('\n');
      const detail = errors.map((m) => `${m.lineNum}:${m.linePos}: ${m.message}\n    ${lines[m.lineNum - 1]?.trim() ?? ''}`).join('\n');
      // WGSL compilers bound how deeply expressions and statements nest (Tint: 128 levels); a
      // kernel within the kernel language's own bound can exceed theirs. Not a bug: the kernel's shape.
      if (errors.some((m) => /recursive depth|nesting depth/.test(m.message))) {
        throw new KernelCompileError(
          `The kernel \`${kernel.name}\` nests expressions or statements more deeply than the device's WGSL compiler allows (${errors[0]!.message}): split deep expressions with \`const\` locals, or deep \`if\`/loop nests with helper functions, or use target 'cpu' or 'parallel'.`,
        );
      }
      throw new KernelCompileError(
        `The gpu target generated WGSL for \`${kernel.name}\` that does not compile (a bug in ufunc; please report it with this message):\n${detail}`,
      );
    }
    const numbers = bindingNumbers(layout, kernel.tables?.length ?? 0);
    const entries: GPUBindGroupLayoutEntry[] = [
      // Dynamic offsets: every call of a batch has its slot in one params buffer and one
      // bounds-check buffer (chain.ts), and a bind group serves any slot.
      { binding: numbers.params, visibility: GPUShaderStage.COMPUTE, buffer: { type: 'read-only-storage', hasDynamicOffset: true } },
    ];
    if (numbers.oob !== undefined) entries.push({ binding: numbers.oob, visibility: GPUShaderStage.COMPUTE, buffer: { type: 'storage', hasDynamicOffset: true } });
    layout.bindings.forEach((b, i) => {
      for (const binding of numbers.chunks[i]!) {
        entries.push({ binding, visibility: GPUShaderStage.COMPUTE, buffer: { type: b.writable ? 'storage' : 'read-only-storage' } });
      }
    });
    for (const binding of numbers.tables) entries.push({ binding, visibility: GPUShaderStage.COMPUTE, buffer: { type: 'read-only-storage' } });
    const bindGroupLayout = device.createBindGroupLayout({ entries });
    try {
      const pipeline = await device.createComputePipelineAsync({
        layout: device.createPipelineLayout({ bindGroupLayouts: [bindGroupLayout] }),
        compute: { module, entryPoint: ENTRY_POINT },
      });
      return { pipeline, bindGroupLayout, sites, code, bindGroups: new Map() };
    } catch (e) {
      if (e instanceof UfuncError) throw e;
      throw new KernelCompileError(
        `The gpu target could not create a pipeline for \`${kernel.name}\` (a bug in ufunc, or a limit of this GPU): ${e instanceof Error ? e.message : String(e)}`,
      );
    }
  });
}
