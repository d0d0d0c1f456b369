/**
 * Coalescing for per-row kernels (guvectorize): stage rows through workgroup memory.
 *
 * One invocation per row that reads and writes its own contiguous row touches one word in each
 * memory transaction of its warp: with rows of 16 floats, 32 neighbouring invocations store 32
 * words 64 bytes apart, so most of every transaction is wasted (a profile measured 25% store
 * efficiency; on an H200 the row-major Hermite kernel runs 5× slower than a column-major one).
 *
 * Instead, a workgroup of W invocations handles W consecutive rows, which are one contiguous span
 * of W·n elements when rows are adjacent (loop stride = n, core stride 1). The workgroup
 * cooperatively copies that span into a `var<workgroup>` tile (invocation i copies elements i,
 * i + W, … — neighbouring invocations touch neighbouring words), each invocation runs the kernel
 * on its row in the tile, and the workgroup copies the tile back the same way. Rows are `pitch`
 * words apart in the tile, one more than n when n is even, so that invocations reading element j
 * of their rows hit different banks.
 *
 * An output's rows are not read in (that would double the traffic of a kernel that only writes):
 * a fresh output (known to hold zeros) starts from a zeroed tile (WebGPU zero-initialises
 * workgroup memory); any other output keeps a written flag per element, so that a read of an
 * element the kernel has not written yet goes to memory, and only written elements go back.
 * When the kernel provably writes every element before reading it (compiler/passes/output-coverage.ts), a zeroed
 * tile serves any output. Either way the result is the direct kernel's, element for element.
 * Outputs that are also inputs (in place) are read in when the kernel reads them through.
 *
 * Operands that do not qualify (strided rows, 8/16-bit types, tiles that do not fit
 * `maxComputeWorkgroupStorageSize`) are read and written directly.
 */
import type { DType } from '../../../dtypes.js';
import { isCContiguous, type LoopOperandLayout, sizeOf } from '../../../layout.js';
import type { ReadPattern } from '../../../compiler/passes/operand-reads.js';
import type { TileLayout } from './shader-layout.js';
import { elementsPerWord } from './shader-layout.js';

/** Invocations per workgroup when nothing is staged. */
export const DIRECT_WORKGROUP_SIZE = 256;
/**
 * Rows per workgroup when staging, largest first (the largest whose tiles fit is taken). Tiles that
 * only collect outputs take 128 rows; tiles that are read in, or whose unwritten elements are read
 * from memory (in place, tracked), take 64: on an H100 (raw WGSL, 4,194,304 rows × 16, median of
 * 20 timestamps) the `()->(n)` Hermite kernel ran 0.172 ms at 128 rows against 0.196 ms at 64 and
 * 0.211 ms at 256, while the in-place one that reads its rows in ran 0.24 ms at 64 and 0.60 ms at 128.
 */
const OUTPUT_WORKGROUP_SIZES = [128, 64, 32] as const;
const READ_WORKGROUP_SIZES = [64, 32] as const;

/** What the staging decision needs to know about one array operand of a call. */
export interface StagingCandidate extends Omit<LoopOperandLayout, 'loopStrides'> {
  readonly operand: number;
  readonly binding: number;
  readonly dtype: DType;
  /** Its stride along the (rank-1, merged) loop. */
  readonly loopStride: number;
  readonly isOutput: boolean;
  /** How the kernel reads the parameter (operand-reads.ts). */
  readonly read: ReadPattern;
  /** For outputs: the buffer is known to hold zeros (a fresh allocation). */
  readonly pristine: boolean;
  /** The kernel writes the whole row before reading what it has not written (compiler/passes/output-coverage.ts). */
  readonly writesRowFirst: boolean;
}

export interface StagingPlan {
  readonly tiles: readonly TileLayout[];
  /** Per operand: its tile, if staged. */
  readonly tileOf: readonly (number | undefined)[];
  readonly workgroupSize: number;
}

/**
 * Decides which operands go through workgroup tiles.
 *
 * @param operandCount operands of the call
 * @param candidates the array operands of a guvectorize call with a rank-1 loop (others are never staged)
 * @param maxWorkgroupBytes the device's `maxComputeWorkgroupStorageSize`
 * @returns the tiles, each operand's tile, and the workgroup size
 */
export function planStaging(operandCount: number, candidates: readonly StagingCandidate[], maxWorkgroupBytes: number): StagingPlan {
  const none: StagingPlan = { tiles: [], tileOf: new Array(operandCount).fill(undefined), workgroupSize: DIRECT_WORKGROUP_SIZE };
  const byBinding = new Map<number, StagingCandidate[]>();
  for (const c of candidates) byBinding.set(c.binding, [...(byBinding.get(c.binding) ?? []), c]);

  const groups: { tile: TileLayout; operands: number[]; words: number; readsMemory: boolean }[] = [];
  for (const [binding, users] of byBinding) {
    const first = users[0]!;
    const size = sizeOf(first.coreShape);
    const qualifies = (c: StagingCandidate) =>
      elementsPerWord(c.dtype) === 1 && size >= 2 && c.loopStride === size && isCContiguous(c.coreShape, c.coreStrides);
    // Operands sharing a buffer share a tile only as the very same view (the in-place case).
    const sameView = users.every((c) => c.offset === first.offset && c.coreStrides.join() === first.coreStrides.join() && c.coreShape.join() === first.coreShape.join());
    if (!sameView || !users.every(qualifies)) continue;
    const store = users.some((c) => c.isOutput);
    // Rows are read in only when the kernel reads them through (a loop, a helper): for a few
    // fixed elements (`row[1]`) reading them directly moves less than reading the rows.
    const readsRows = users.some((c) => !c.isOutput && c.read === 'rows');
    if (!store && !readsRows) continue;
    const init = readsRows ? 'load' : users.every((c) => c.pristine) || first.writesRowFirst ? 'zero' : 'track';
    const pitch = size % 2 === 0 ? size + 1 : size;
    // A tracked tile has a written flag per word.
    const words = init === 'track' ? 2 * pitch : pitch;
    // Reads that do not come from the tile alone: rows read in, inputs read from memory, tracked outputs.
    const readsMemory = init !== 'zero' || users.some((c) => !c.isOutput);
    const wide = init === 'zero' && store && users.every((c) => c.isOutput) && size % 4 === 0 && first.offset % 4 === 0;
    groups.push({ tile: { binding, dtype: first.dtype, coreShape: [...first.coreShape], pitch, init, store, wide }, operands: users.map((c) => c.operand), words, readsMemory });
  }
  if (groups.length === 0) return none;

  // The largest workgroup whose tiles fit; drop the biggest tiles while none does.
  groups.sort((a, b) => a.words - b.words);
  for (let kept = groups.length; kept > 0; kept--) {
    const words = groups.slice(0, kept).reduce((n, g) => n + g.words, 0);
    const sizes = groups.slice(0, kept).some((g) => g.readsMemory) ? READ_WORKGROUP_SIZES : OUTPUT_WORKGROUP_SIZES;
    const workgroupSize = sizes.find((w) => w * words * 4 <= maxWorkgroupBytes);
    if (workgroupSize === undefined) continue;
    const tileOf: (number | undefined)[] = new Array(operandCount).fill(undefined);
    const tiles = groups.slice(0, kept).map((g, t) => {
      g.operands.forEach((o) => (tileOf[o] = t));
      return g.tile;
    });
    return { tiles, tileOf, workgroupSize };
  }
  return none;
}

/** WGSL for the tiles: their declarations, and the cooperative copies around the kernel. */
export interface TileCode {
  readonly declarations: string;
  /** Statements of `main` (indented two spaces) before the barrier that precedes the kernel. */
  readonly loads: string;
  /** Statements of `main` after the barrier that follows the kernel. */
  readonly stores: string;
}

/**
 * Emits the tile declarations and copy loops.
 *
 * @param tiles the tiles
 * @param names per tile: the tile variable, the block's first element (a u32 `let` in main), and
 *   the binding's load/store accessors
 * @param workgroupSize rows per workgroup
 * @param rows the name of main's `let` that holds the number of rows this workgroup owns
 * @param lane the name of the invocation index within the workgroup
 * @param element a fresh name for the copy loops' counter
 * @param counter a fresh name for the whole-workgroup loops' counter
 * @param held a fresh name for the registers loads go through
 * @param unrollStores whether stores of whole workgroups use the constant trip count (only when
 *   no tile reads memory besides its own copy-in)
 */
export function emitTileCode(
  tiles: readonly TileLayout[],
  names: readonly {
    tile: string; written: string; block: string; load(e: string): string; store(e: string, v: string): string;
    /** For a wide tile whose binding is declared as vectors: a store of vector `q` (a u32 expression). */
    storeWide?(q: string, v: string): string;
  }[],
  workgroupSize: number,
  rows: string,
  lane: string,
  element: string,
  counter: string,
  held: string,
  unrollStores: boolean,
): TileCode {
  let declarations = '';
  let loads = '';
  let stores = '';
  tiles.forEach((t, i) => {
    const n = names[i]!;
    const size = sizeOf(t.coreShape);
    const type = t.dtype === 'float32' ? 'f32' : t.dtype === 'int32' ? 'i32' : 'u32';
    declarations += `var<workgroup> ${n.tile}: array<${type}, ${workgroupSize * t.pitch}>;\n`;
    if (t.init === 'track') declarations += `var<workgroup> ${n.written}: array<u32, ${workgroupSize * t.pitch}>;\n`;
    const e = element;
    const index = `(${e} / ${size}u) * ${t.pitch}u + ${e} % ${size}u`;
    const slot = `${n.tile}[${index}]`;
    // A full workgroup (every one but the last) copies with a constant trip count, which the
    // driver's compiler unrolls: all of an invocation's loads are in flight at once (H100, rows
    // read in: 0.50 → 0.24 ms), and, where nothing else is read from memory, stores issue back to
    // back (Hermite `()->(n)`: 0.172 → 0.144 ms). Not the stores of kernels that also read the
    // rows' memory (in place, tracked tiles): there the unrolled stores measured 2–2.5× slower.
    const k = counter;
    const full = (body: string) => `for (var ${k} = 0u; ${k} < ${size}u; ${k}++) { let ${e} = ${lane} + ${k} * ${workgroupSize}u; ${body} }`;
    const partial = (body: string) => `for (var ${e} = ${lane}; ${e} < ${rows} * ${size}u; ${e} += ${workgroupSize}u) { ${body} }`;
    const either = (fast: string, body: string) => `  if (${rows} == ${workgroupSize}u) {\n    ${fast}\n  } else {\n    ${partial(body)}\n  }\n`;
    if (t.init === 'load') {
      const load = n.load(`${n.block} + ${e}`);
      // Loads first, into registers, then the tile: no load waits behind a workgroup-memory store.
      const fast = `var ${held}: array<${type}, ${size}>;\n    for (var ${k} = 0u; ${k} < ${size}u; ${k}++) { ${held}[${k}] = ${n.load(`${n.block} + ${lane} + ${k} * ${workgroupSize}u`)}; }\n    ${full(`${slot} = ${held}[${k}];`)}`;
      loads += either(fast, `${slot} = ${load};`);
    }
    if (t.store && n.storeWide) {
      // Four elements of one row a step: e = 4q is row e / size, columns e % size … + 3 of the tile.
      const q = 'q';
      const at = `(${e} / ${size}u) * ${t.pitch}u + ${e} % ${size}u`;
      const vector = `vec4<${type}>(${[0, 1, 2, 3].map((c) => `${n.tile}[t${c ? ` + ${c}u` : ''}]`).join(', ')})`;
      const body = `let ${e} = 4u * ${q}; let t = ${at}; ${n.storeWide(`${n.block} / 4u + ${q}`, vector)}`;
      const quads = size / 4;
      const counted = `for (var ${q} = ${lane}; ${q} < ${rows} * ${quads}u; ${q} += ${workgroupSize}u) { ${body} }`;
      stores += unrollStores
        ? `  if (${rows} == ${workgroupSize}u) {\n    for (var ${k} = 0u; ${k} < ${quads}u; ${k}++) { let ${q} = ${lane} + ${k} * ${workgroupSize}u; ${body} }\n  } else {\n    ${counted}\n  }\n`
        : `  ${counted}\n`;
    } else if (t.store) {
      const store = n.store(`${n.block} + ${e}`, slot);
      const body = t.init === 'track' ? `if (${n.written}[${index}] != 0u) { ${store} }` : store;
      stores += unrollStores ? either(full(body), body) : `  ${partial(body)}\n`;
    }
  });
  return { declarations, loads, stores };
}
