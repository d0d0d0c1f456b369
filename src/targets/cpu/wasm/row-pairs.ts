/**
 * Per-row kernels of 32-bit rows that keep true doubles, 4 rows per vector: each float64 value
 * of a row is held as a pair of f64x2 vectors (rows 0–1 and rows 2–3 of the block), every other
 * value in one 128-bit vector of 4 lanes (emit-rows.ts, RowSimdEmitter).
 *
 * A row kernel with one float64 value per row (`acc += a[i] * b[i]` of float32 rows, `0.299 *
 * r` of uint8 pixels) otherwise runs 2 rows per vector, its 32-bit values in lanes 0–1 of their
 * vectors: half of every float32 load, multiply and comparison wasted. In pairs, the 32-bit work
 * runs once for 4 rows, and only the float64 operations run twice, once per half — the same
 * operations in the same order per row, so the results stay the JS engine's bit for bit.
 *
 * A float64 expression is emitted once per half (`RowSimdEmitter.inHalves`): a 32-bit value it
 * reads (a float32 element converted to float64, a condition of a `select`) is computed whole for
 * the 4 rows in the first half and kept for the second; conversions between the two shapes take
 * a half's lanes out of a 4-lane vector (`f64x2.promote_low_f32x4` after a shuffle for rows 2–3)
 * or join two halves' results into one (`f32x4.demote_f64x2_zero` per half, then a shuffle).
 *
 * Not in pairs (such kernels run 2 rows per vector, as before): float64 arrays (their slots would
 * take two vectors: nothing saved) and float64 scalars per row. A helper returning float64 is
 * inlined once, in the first half, its result kept in a pair of vectors for the second.
 *
 * Pairs are a variant, not the rule: a 4-row block's copies into lanes cost more per element than
 * 2 rows' (a 4×4 transpose), which light kernels (a dot product) do not win back. A layout asks
 * for them (`MemoryLayout.floatPairs`) where calibration times the variant beside the 2-row form
 * (engine-calibration.ts).
 */
import type { DType } from '../../../dtypes.js';
import type { Expr, Stmt, TypedKernel } from '../../../compiler/ir.js';
import { isArrayType } from '../../../compiler/ir.js';
import { forEachExpr, forEachStmt } from '../../../compiler/ir-walk.js';
import type { MemoryLayout } from '../memory-layout.js';

/** Result bytes of `i8x16.shuffle(v, v)` moving 32-bit lanes 2–3 into lanes 0–1 (rows 2–3 of a 4-lane vector). */
export const HIGH_LANES_LOW = [8, 9, 10, 11, 12, 13, 14, 15, 8, 9, 10, 11, 12, 13, 14, 15];
/** `i8x16.shuffle(a, b)` joining 32-bit lanes 0–1 of each half's result into 4 lanes (rows 0–1, then 2–3). */
export const JOIN_LOW_LANES = [0, 1, 2, 3, 4, 5, 6, 7, 16, 17, 18, 19, 20, 21, 22, 23];
/** `i8x16.shuffle(a, b)` joining two halves' masks of 64-bit lanes into one of 4 32-bit lanes. */
export const JOIN_MASKS = [0, 1, 2, 3, 8, 9, 10, 11, 16, 17, 18, 19, 24, 25, 26, 27];

/**
 * Why a kernel that runs 2 rows per vector cannot hold its float64 values in pairs of vectors
 * instead (see the file comment), or undefined where it can.
 */
export function pairsRefusal(kernel: TypedKernel, layout: MemoryLayout): string | undefined {
  for (const p of kernel.params) {
    if (isArrayType(p.type) && p.type.dtype === 'float64') return `\`${p.name}\` is a float64 array`;
  }
  const perRow = kernel.params.find((p, i) => !isArrayType(p.type) && p.type === 'float64' && layout.inner[i] !== 'scalar' && layout.inner[i] !== 'broadcast');
  if (perRow) return `\`${perRow.name}\` is a float64 scalar per row`;
  let refusal: string | undefined;
  const visit = (body: readonly Stmt[]) => {
    forEachStmt(body, (s) => {
      if (s.kind === 'local-array' && (s.variable.type as { dtype: DType }).dtype === 'float64') refusal ??= `the local array \`${s.variable.name}\` is float64`;
    });
    forEachExpr(body, (e: Expr) => {
      // Every other Math function takes and gives one type (the IR converts its arguments).
      if (e.kind === 'math' && e.fn !== 'fround' && e.type !== 'float64' && e.args.some((a) => a.type === 'float64')) refusal ??= `Math.${e.fn} mixes float64 and ${e.type}`;
    });
  };
  visit(kernel.body);
  for (const h of kernel.helpers) visit(h.body);
  return refusal;
}
