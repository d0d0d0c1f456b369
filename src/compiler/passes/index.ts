/**
 * The compiler's middle: named passes over the typed IR, one a file, run in the order of the list
 * below on every kernel after typing (lower.ts) and before any backend sees it — so every target
 * compiles the same, already-transformed IR (the shape of taichi.js's `compileKernel`).
 *
 * Two kinds live in this folder:
 * - **transforms** (`TRANSFORMS`) take a typed kernel and give one back; `runPasses` runs them;
 * - **analyses** answer a question about a kernel for any backend that asks, and change nothing:
 *   `findIntegralDoubles` (integral-doubles.ts: which doubles hold integers),
 *   `analyseCoverage` (output-coverage.ts: whether a row is written whole before it is read),
 *   `howKernelReads` (operand-reads.ts: how each array parameter is read),
 *   `findInBoundsAccesses` (bounds.ts: which array accesses are in bounds by construction, so a
 *   backend that checks indices may leave their checks out).
 *
 * Set `UFUNC_DUMP_IR=1` to print each kernel's IR after typing and after each transform, on
 * stderr (`UFUNC_DUMP_IR=constant-propagation` prints only after the passes named, separated by
 * commas). docs/architecture.md says how to add a pass.
 */
import type { TypedKernel } from '../ir.js';
import { printKernel } from '../print-ir.js';
import { propagateConstants } from './constant-propagation.js';
import { markFastMath } from './fastmath.js';

/** A transform over the typed IR. */
export interface Pass {
  /** Its name, as the dump and `UFUNC_DUMP_IR` know it (its file's name). */
  readonly name: string;
  readonly run: (kernel: TypedKernel) => TypedKernel;
}

/** The transforms, in the order they run. */
export const TRANSFORMS: readonly Pass[] = [
  { name: 'constant-propagation', run: propagateConstants },
  { name: 'fastmath', run: markFastMath },
];

export { findIntegralDoubles, IntegralDoubles } from './integral-doubles.js';
export { analyseCoverage } from './output-coverage.js';
export { howKernelReads, type ReadPattern } from './operand-reads.js';
export { type ArrayAccessNode, type BoundsOptions, findInBoundsAccesses, InBoundsAccesses } from './bounds.js';

/**
 * Runs every transform over a typed kernel, dumping the IR where `UFUNC_DUMP_IR` asks.
 *
 * @param kernel - as typing produced it
 * @param passes - the transforms to run @default TRANSFORMS
 * @returns the kernel every backend compiles
 * @example const kernel = runPasses(typeKernel(parsed, spec));
 */
export function runPasses(kernel: TypedKernel, passes: readonly Pass[] = TRANSFORMS): TypedKernel {
  const dump = dumpFilter();
  if (dump?.('typing')) writeDump(kernel, 'typing');
  for (const pass of passes) {
    kernel = pass.run(kernel);
    if (dump?.(pass.name)) writeDump(kernel, pass.name);
  }
  return kernel;
}

/** Which stages to dump, from `UFUNC_DUMP_IR`: undefined for none. */
function dumpFilter(): ((stage: string) => boolean) | undefined {
  const setting = typeof process === 'undefined' ? undefined : process.env?.UFUNC_DUMP_IR;
  if (!setting || setting === '0') return undefined;
  if (setting === '1' || setting === 'all') return () => true;
  const stages = new Set(setting.split(',').map((s) => s.trim()));
  return (stage) => stages.has(stage);
}

function writeDump(kernel: TypedKernel, stage: string): void {
  process.stderr.write(`// ufunc IR of \`${kernel.name}\` after ${stage}\n${printKernel(kernel)}\n`);
}
