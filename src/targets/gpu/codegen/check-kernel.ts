/**
 * What the gpu target refuses, checked when a signature is first used (before any device is
 * touched): 64-bit types WGSL does not have, and arrays of more dimensions than the bounds-check
 * record holds.
 *
 * Not refused: float64 *locals* (`let c = 1`, `new Float64Array(k)`). Every JS number is a double,
 * so such locals appear in float32 kernels; the gpu computes them in f32, or in i32 where they
 * provably hold integers (see compiler/passes/integral-doubles.ts). docs/gpu.md documents the difference.
 */
import type { Expr, Stmt, TypedKernel, ValueType } from '../../../compiler/ir.js';
import { isArrayType } from '../../../compiler/ir.js';
import { type DType, isBigInt } from '../../../dtypes.js';
import { type SourceLocation, TargetUnavailableError } from '../../../errors.js';
import { placeInFile, textPosition } from '../../../compiler/source-excerpt.js';
import { forEachExpr } from '../../../compiler/ir-walk.js';

/** Array dimensions a gpu kernel may index (the bounds-check record keeps up to this many indices). */
export const MAX_GPU_ARRAY_DIMS = 4;

const REFUSALS: Partial<Record<DType, string>> = {
  float64: 'float64 is not available on the gpu target (WGSL has no 64-bit floats): declare float32',
  int64: 'int64 is not available on the gpu target (WGSL has no 64-bit integers): declare int32',
  uint64: 'uint64 is not available on the gpu target (WGSL has no 64-bit integers): declare uint32',
};

/**
 * Refuses a kernel the gpu target cannot run.
 *
 * @param kernel the typed kernel
 * @param signature its signature's text, for the message
 * @param float64 the ufunc's `float64` option: 'float32' lets a float64 lookup table be read in
 *   float32 (rounded once, when uploaded), as float64 signatures then run; else it is refused
 * @throws TargetUnavailableError naming the signature, the type and the alternatives
 * @example
 * checkGpuKernel(kernel, 'float64(float64)');
 * // TargetUnavailableError: Signature `float64(float64)`: float64 is not available on the gpu target
 * // (WGSL has no 64-bit floats): declare float32, or use target 'cpu' or 'parallel'.
 */
export function checkGpuKernel(kernel: TypedKernel, signature: string, float64: 'error' | 'float32' = 'error'): void {
  const refuse = (what: string, at?: SourceLocation): never => {
    const error = new TargetUnavailableError(`Signature \`${signature}\`: ${what}, or use target 'cpu' or 'parallel'.`);
    if (at) placeInFile(error, textPosition(at));
    throw error;
  };
  const signatureTypes: ValueType[] = [...kernel.params.map((p) => p.type), ...(kernel.returnType === 'void' ? [] : [kernel.returnType])];
  for (const t of signatureTypes) {
    const dtype = isArrayType(t) ? t.dtype : t;
    const refusal = REFUSALS[dtype];
    if (refusal) refuse(refusal);
    if (isArrayType(t) && t.ndim > MAX_GPU_ARRAY_DIMS) {
      refuse(`arrays of more than ${MAX_GPU_ARRAY_DIMS} dimensions are not supported on the gpu target (found ${t.ndim})`);
    }
  }
  // Lookup tables are float64 data as float64 arrays are: refused unless `float64: 'float32'`.
  for (const t of kernel.tables ?? []) {
    const dtype = (t.variable.type as { dtype: DType }).dtype;
    if (dtype === 'float64' && float64 !== 'float32') {
      refuse(`the lookup table \`${t.variable.name}\` is a Float64Array, and WGSL has no 64-bit floats: pass a Float32Array (\`Float32Array.from(${t.variable.name})\`), or pass \`{ float64: 'float32' }\` to vectorize/guvectorize to read it in float32`);
    }
    if (isBigInt(dtype)) refuse(`the lookup table \`${t.variable.name}\` holds 64-bit integers (${dtype}), which WGSL does not have: pass an Int32Array or a Uint32Array`);
  }
  // 64-bit integers inside the kernel (bigint literals) have no f32 stand-in, unlike doubles.
  const visit = (body: readonly Stmt[], where: string) =>
    forEachExpr(body, (e: Expr) => {
      if (e.type === 'int64' || e.type === 'uint64') {
        refuse(`${where} uses a 64-bit integer (${e.type}) at kernel line ${e.loc.line}:${e.loc.column}, which WGSL does not have: use int32 or uint32`, e.loc);
      }
    });
  visit(kernel.body, 'the kernel');
  for (const h of kernel.helpers) visit(h.body, `the helper \`${h.name}\``);
}
