/**
 * Analysis: how a kernel reads each array parameter — not at all, at a few constant indices, or
 * through its rows (an index computed at run time, or the whole array handed to a helper). The gpu
 * stages rows through workgroup memory only for parameters read as rows (coalescing.ts); any
 * backend that stages or prefetches may ask the same.
 */
import type { Stmt, TypedKernel, Variable } from '../ir.js';
import { isArrayType } from '../ir.js';
import { forEachExpr } from '../ir-walk.js';

/** How a kernel reads an array parameter: not at all, at a few constant indices, or through its rows. */
export type ReadPattern = 'none' | 'elements' | 'rows';

/**
 * How the kernel reads parameter `index` (an array): `rows` when an index is computed (a loop
 * counter) or the array goes to a helper (helpers are not analysed), `elements` when every read
 * has constant indices, `none` when it is never read.
 */
export function howKernelReads(kernel: TypedKernel, index: number): ReadPattern {
  const param: Variable = kernel.params[index]!;
  if (!isArrayType(param.type)) return 'rows';
  let pattern: ReadPattern = 'none';
  const body: readonly Stmt[] = kernel.body;
  forEachExpr(body, (e) => {
    if (e.kind === 'index' && e.array === param) {
      if (e.indices.some((i) => i.kind !== 'const')) pattern = 'rows';
      else if (pattern === 'none') pattern = 'elements';
    }
    if (e.kind === 'call' && e.args.some((a) => a.kind === 'array-ref' && a.array === param)) pattern = 'rows';
  });
  return pattern;
}
