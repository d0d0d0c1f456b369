/**
 * Which of a kernel's doubles the gpu computes how, in words (for `explain`). Every JS number is a
 * double, so `let t = 0.5` is a float64 local even in a float32 kernel; WGSL has no f64. The WGSL
 * code keeps a float64 local in i32 where it provably holds only integers (a loop counter:
 * compiler/passes/integral-doubles.ts), and computes every other one in f32 (emit-wgsl.ts `repOf`)
 * — where the cpu computes it in double. An escape-time loop can then count differently on the gpu.
 */
import { isArrayType, type HelperFunction, type Stmt, type TypedKernel, type Variable } from '../../../compiler/ir.js';
import { forEachStmt } from '../../../compiler/ir-walk.js';
import { findIntegralDoubles } from '../../../compiler/passes/integral-doubles.js';

/**
 * What `explain` says about a kernel's doubles on the gpu, or undefined when it has none.
 *
 * @param kernel - the typed kernel of the call
 * @returns one or two sentences naming the locals computed in f32 and those kept in i32
 * @example
 * describeDoubles(kernel); // 'Doubles computed in f32 (WGSL has no f64; the cpu computes them in double): `x`, `y`. …'
 */
export function describeDoubles(kernel: TypedKernel): string | undefined {
  const integral = findIntegralDoubles(kernel);
  const inF32: string[] = [];
  const inI32: string[] = [];
  const add = (list: string[], name: string) => {
    if (!list.includes(name)) list.push(name);
  };
  const visit = (variables: readonly Variable[], helper: HelperFunction | undefined) => {
    for (const v of variables) {
      const name = helper ? `\`${v.name}\` (in \`${helper.name}\`)` : `\`${v.name}\``;
      if (isArrayType(v.type)) {
        if (v.type.dtype === 'float64') add(inF32, `${name} (a Float64Array)`);
      } else if (v.type === 'float64') add(integral.hasVariable(v) ? inI32 : inF32, name);
    }
  };
  /** The variables of local typed arrays (`new Float64Array(k)`), declared by statements. */
  const localArrays = (body: readonly Stmt[]) => {
    const found: Variable[] = [];
    forEachStmt(body, (s) => {
      if (s.kind === 'local-array') found.push(s.variable);
    });
    return found;
  };
  visit([...kernel.locals, ...localArrays(kernel.body)], undefined);
  for (const h of kernel.helpers) visit([...h.params, ...h.locals, ...localArrays(h.body)], h);
  if (inF32.length === 0 && inI32.length === 0) return undefined;
  const sentences: string[] = [];
  if (inF32.length > 0) {
    sentences.push(
      `Float64 locals (JS numbers) computed in f32, as WGSL has no f64 (the cpu computes them in double, so results may differ in rounding; docs/gpu.md "Doubles in float32 kernels"): ${inF32.join(', ')}.`,
    );
  }
  if (inI32.length > 0) sentences.push(`Float64 locals kept exact in i32 (they only ever hold integers, as loop counters do): ${inI32.join(', ')}.`);
  return sentences.join(' ');
}
