/** The gpu tree's order of operations (docs/methods.md), computed by plain loops, for tests. */

/**
 * The float32 sum of one row grouped as the gpu's tree groups it (docs/methods.md): blocks of
 * 1,024 consecutive elements, each folded as a balanced binary tree (absent elements past the end
 * left out); a run of consecutive blocks folds left to right (runs of a multiple of 4 blocks,
 * at least 4, sized for about 1,024 workgroups); the runs' partials fold
 * as one more row. `rows`: how many rows the call folds (it sets the runs' length).
 */
export function treeOrderSum(x: Float32Array, rows = 1): number {
  const f = (a: number, b: number) => Math.fround(a + b);
  const balanced = (t: Float32Array, lo: number, size: number): number | undefined => {
    if (lo >= t.length) return undefined;
    if (size === 1) return t[lo]!;
    const l = balanced(t, lo, size / 2);
    const r = balanced(t, lo + size / 2, size / 2);
    return r === undefined ? l : f(l!, r);
  };
  const rowFold = (row: Float32Array): number => {
    const blocks = Math.ceil(row.length / 1024);
    const wanted = Math.min(blocks, Math.max(1, Math.ceil(1024 / rows)));
    const perRun = Math.ceil(Math.max(Math.ceil(blocks / wanted), Math.min(blocks, 4)) / 4) * 4;
    const partials = new Float32Array(Math.ceil(blocks / perRun));
    for (let g = 0; g < partials.length; g++) {
      let acc = 0;
      for (let b = g * perRun; b < Math.min((g + 1) * perRun, blocks); b++) {
        const v = balanced(row.subarray(b * 1024, Math.min((b + 1) * 1024, row.length)), 0, 1024)!;
        acc = b === g * perRun ? v : f(acc, v);
      }
      partials[g] = acc;
    }
    return partials.length === 1 ? partials[0]! : rowFold(partials);
  };
  return rowFold(x);
}
