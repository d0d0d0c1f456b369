/**
 * A function of one byte is a table of 256 values. An element-wise kernel whose only operand that
 * varies per element is an 8-bit integer (the others scalars or broadcast, the same for the whole
 * call) can take at most 256 results in a call; where computing one costs more than looking it up
 * — float64 inside (2 lanes per vector), or a `Math` function computed out of line — `run` computes
 * the 256 results once (itself, on the bytes 0…255, by its own vector loop) and then looks each
 * element up: a load, a load and a store per element, whatever the kernel computes.
 *
 * The results are the kernel's own, bit for bit (the same code computes them), so this holds for
 * any kernel of that shape, provided that computing it on a byte the call does not hold is
 * harmless: the kernel must have no loop (one might not end on a value the data lacks) and draw
 * no random numbers (its values depend on the element's place). The table also needs a vector
 * loop (emit-simd.ts `simdShape`) to compute its values.
 */
import { type DType, DTYPES } from '../../../dtypes.js';
import type { TypedKernel } from '../../../compiler/ir.js';
import type { MemoryLayout } from '../memory-layout.js';
import { Op, SimdOp, ValType } from './encoder.js';
import type { FunctionEmitter } from './emit-scalar.js';
import type { SimdShape } from './emit-simd.js';

/** The fewest elements a call of `run` needs to build the table: 256 results cost at most 1/16 of the call. */
export const BYTE_TABLE_MIN_ELEMENTS = 4096;

const BYTES: ReadonlySet<DType> = new Set<DType>(['uint8', 'int8', 'uint8c']);

export interface ByteTable {
  /** The input operand that varies per element (an 8-bit integer). */
  readonly operand: number;
  /** The table's bytes in scratch: the bytes 0…255 (16), then the 256 results. */
  readonly scratchBytes: number;
}

/**
 * Whether `run` looks a kernel's results up in a table of 256, and which operand indexes it.
 *
 * @param shape the kernel's vector loop, or why it has none (then no table: see the module doc)
 */
export function byteTable(kernel: TypedKernel, kind: 'vectorize' | 'guvectorize', nin: number, layout: MemoryLayout, shape: SimdShape | string, outOfLine: boolean): ByteTable | undefined {
  if (kind !== 'vectorize' || typeof shape === 'string' || shape.loops || kernel.randomStream) return undefined;
  // 8- and 16-bit integer lanes compute 16 or 8 results per instruction: faster than a lookup.
  // 4 lanes of 32-bit arithmetic are too, unless a Math function takes many instructions.
  if (shape.intLanes || (shape.lanes === 4 && !outOfLine)) return undefined;
  let operand: number | undefined;
  for (let i = 0; i < nin; i++) {
    const step = layout.inner[i];
    if (step === 'scalar' || step === 'broadcast') continue;
    if (operand !== undefined || (step !== 'unit' && step !== 'origin') || !BYTES.has(kernel.params[i]!.type as DType)) return undefined;
    operand = i;
  }
  const out = layout.inner[nin];
  if (operand === undefined || (out !== 'unit' && out !== 'origin')) return undefined;
  return { operand, scratchBytes: 256 + 256 * DTYPES[kernel.returnType as DType].bytes };
}

/**
 * Emits, at the start of `run`: where the call has at least {@link BYTE_TABLE_MIN_ELEMENTS}
 * elements, the table (the bytes 0…255 at `at`, and `run` called on them with the same scalars,
 * writing the 256 results after them), then one lookup per element, and a return.
 *
 * @param at the local holding the table's address in scratch
 * @param operandValue pushes operand i's `run` argument (its value or address), as the call received it
 */
export function emitByteTable(
  e: FunctionEmitter, table: ByteTable, nin: number, operands: number, returnType: DType, run: number,
  at: number, pointer: readonly (number | undefined)[], count: number, k: number, operandValue: (i: number) => void,
): void {
  const results = e.local(ValType.i32);
  e.get(count).i32(BYTE_TABLE_MIN_ELEMENTS).op(Op.i32_ge_u);
  e.open('if');
  // the bytes 0…255, 16 at a time
  for (let chunk = 0; chunk < 16; chunk++) {
    e.get(at);
    e.simd(SimdOp.v128_const);
    for (let b = 0; b < 16; b++) e.code.byte(chunk * 16 + b);
    e.simd(SimdOp.v128_store).code.u32(0).u32(chunk * 16);
  }
  e.get(at).i32(256).op(Op.i32_add).set(results);
  for (let i = 0; i < operands; i++) {
    if (i === table.operand) e.get(at);
    else if (i === nin) e.get(results);
    else operandValue(i);
  }
  e.i32(256).get(e.scratch);
  e.code.byte(Op.call).u32(run);
  // out[k] = results[byte[k]]: UNROLL elements per step while that many remain, then one per step
  const shift = Math.log2(DTYPES[returnType].bytes);
  const bytePointer = pointer[table.operand]!;
  const outPointer = pointer[nin]!;
  for (const perStep of [UNROLL, 1]) {
    e.open('block');
    const exit = e.depth() - 1;
    e.open('loop');
    const top = e.depth() - 1;
    e.get(k).i32(perStep).op(Op.i32_add).get(count).op(Op.i32_gt_u).br(exit, true);
    for (let j = 0; j < perStep; j++) {
      e.get(outPointer);
      e.get(bytePointer).code.byte(Op.i32_load8_u).u32(0).u32(j);
      if (shift) e.i32(shift).op(Op.i32_shl);
      e.get(results).op(Op.i32_add);
      e.load(returnType);
      e.store(returnType, j << shift);
    }
    e.get(bytePointer).i32(perStep).op(Op.i32_add).set(bytePointer);
    e.get(outPointer).i32(perStep << shift).op(Op.i32_add).set(outPointer);
    e.get(k).i32(perStep).op(Op.i32_add).set(k);
    e.br(top);
    e.close();
    e.close();
  }
  e.op(Op.return);
  e.close();
}

/** Lookups per step of the loop: fewer pointer updates and branches per element. */
const UNROLL = 8;
