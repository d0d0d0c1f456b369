/**
 * Compute pipelines, compiled once per (device, kernel key, shader layout) and cached.
 *
 * Bind group layouts are explicit: `layout: 'auto'` drops bindings the shader does not use, and a
 * bind group that names them then fails (docs: /work/shared/gpu/README.md, "Auto layouts drop
 * unused bindings").
 */
import type { TypedKernel } from '../../compiler/ir.js';
import { KernelCompileError, UfuncError } from '../../errors.js';
import { type GpuContext, runScoped } from './device.js';
import { generateShader } from './shader-module.js';
import { bindingNumbers, layoutKey, type ShaderLayout } from './shader-layout.js';

/** A compiled kernel, ready to bind and dispatch. */
export interface CompiledKernel {
  readonly pipeline: GPUComputePipeline;
  readonly bindGroupLayout: GPUBindGroupLayout;
  /** Bounds-check sites, for error messages. */
  readonly sites: readonly string[];
  /** The WGSL it was compiled from. */
  readonly code: string;
}

// Per device, weakly: a released device's pipelines go with it.
const caches = new WeakMap<GPUDevice, Map<string, Promise<CompiledKernel>>>();

/**
 * The pipeline for a kernel and layout on this device, compiled on first use. Concurrent calls
 * share one compilation.
 *
 * @param ctx the device
 * @param kernel the typed kernel
 * @param kernelKey its cache identity (CallPlan.kernelKey)
 * @param layout the shader layout
 * @returns the compiled kernel
 * @throws KernelCompileError when the generated WGSL does not compile (a bug in ufunc: the message
 *   has the compiler's diagnostics and the offending line)
 */
export function compiledKernel(ctx: GpuContext, kernel: TypedKernel, kernelKey: string, layout: ShaderLayout): Promise<CompiledKernel> {
  let cache = caches.get(ctx.device);
  if (!cache) {
    cache = new Map();
    caches.set(ctx.device, cache);
  }
  const key = `${kernelKey}#${layoutKey(layout)}`;
  let compiled = cache.get(key);
  if (!compiled) {
    compiled = compile(ctx, kernel, layout);
    cache.set(key, compiled);
    // A failed compilation is not cached: the next call tries again (and fails the same way).
    compiled.catch(() => cache!.delete(key));
  }
  return compiled;
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
      throw new KernelCompileError(
        `The gpu target generated WGSL for \`${kernel.name}\` that does not compile (a bug in ufunc; please report it with this message):\n${detail}`,
      );
    }
    const numbers = bindingNumbers(layout);
    const entries: GPUBindGroupLayoutEntry[] = [
      { binding: numbers.params, visibility: GPUShaderStage.COMPUTE, buffer: { type: 'read-only-storage' } },
    ];
    if (numbers.oob !== undefined) entries.push({ binding: numbers.oob, visibility: GPUShaderStage.COMPUTE, buffer: { type: 'storage' } });
    layout.bindings.forEach((b, i) => {
      for (const binding of numbers.chunks[i]!) {
        entries.push({ binding, visibility: GPUShaderStage.COMPUTE, buffer: { type: b.writable ? 'storage' : 'read-only-storage' } });
      }
    });
    const bindGroupLayout = device.createBindGroupLayout({ entries });
    try {
      const pipeline = await device.createComputePipelineAsync({
        layout: device.createPipelineLayout({ bindGroupLayouts: [bindGroupLayout] }),
        compute: { module, entryPoint: 'main' },
      });
      return { pipeline, bindGroupLayout, sites, code };
    } catch (e) {
      if (e instanceof UfuncError) throw e;
      throw new KernelCompileError(
        `The gpu target could not create a pipeline for \`${kernel.name}\` (a bug in ufunc, or a limit of this GPU): ${e instanceof Error ? e.message : String(e)}`,
      );
    }
  });
}
