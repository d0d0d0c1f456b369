/**
 * Loads and stores of SIMD lanes from and to contiguous elements of memory: element-wise vector
 * loops (module.ts) and loops along a row (along-rows.ts) move their operands with them.
 */
import { type DType, DTYPES } from '../../../dtypes.js';
import { Op, SimdOp, ValType } from './encoder.js';
import { type FunctionEmitter, sizeShift, type WasmArray } from './emit-scalar.js';

/**
 * Pushes the address of element `i + offset` of a 1-D contiguous array, `i` the i32 in local
 * `counter`, and returns what the load or store's memarg adds to it (a memarg offset is never
 * negative: a negative offset is added to the address instead).
 */
export function elementAddress(e: FunctionEmitter, a: WasmArray, counter: number, offset: number): number {
  const size = DTYPES[a.dtype].bytes;
  e.get(a.base).get(counter);
  if (size > 1) e.i32(Math.log2(size)).op(Op.i32_shl);
  e.op(Op.i32_add);
  if (offset >= 0) return offset * size;
  e.i32(offset * size).op(Op.i32_add);
  return 0;
}

/** Whether the lanes of a narrow integer type load sign-extended. */
const SIGNED_NARROW = new Set<DType>(['int8', 'int16']);

/**
 * Loads `lanes` elements of `dtype` from the address on the stack plus `offset` bytes into lanes
 * of their lane type (emit-simd.ts): 8- and 16-bit integers extended to int32.
 */
export function loadLanes(e: FunctionEmitter, dtype: DType, lanes: 16 | 8 | 4 | 2, offset: number): void {
  const bytes = DTYPES[dtype].bytes;
  const memarg = (align: number) => e.code.u32(align).u32(offset);
  const signed = SIGNED_NARROW.has(dtype);
  switch (bytes * lanes) {
    case 16:
      e.simd(SimdOp.v128_load);
      memarg(sizeShift(dtype));
      return;
    case 8:
      // 8-bit integers in 16-bit lanes, 16-bit integers in 32-bit lanes, 32-bit values in lanes 0–1.
      if (bytes === 1) e.simd(signed ? SimdOp.v128_load8x8_s : SimdOp.v128_load8x8_u);
      else if (bytes === 2) e.simd(signed ? SimdOp.v128_load16x4_s : SimdOp.v128_load16x4_u);
      else e.simd(SimdOp.v128_load64_zero);
      memarg(Math.min(bytes, 2));
      return;
    case 4:
      e.simd(SimdOp.v128_load32_zero);
      memarg(0);
      break;
    default: {
      // Two bytes: 2 lanes of 8-bit integers.
      const zero = e.local(ValType.v128);
      e.get(zero);
      e.simd(SimdOp.v128_load16_lane);
      memarg(0);
      e.code.byte(0);
      break;
    }
  }
  if (bytes === 1) e.simd(signed ? SimdOp.i16x8_extend_low_i8x16_s : SimdOp.i16x8_extend_low_i8x16_u);
  e.simd(signed ? SimdOp.i32x4_extend_low_i16x8_s : SimdOp.i32x4_extend_low_i16x8_u);
}

/**
 * Stores the lanes on the stack (after the address) as `lanes` elements of `dtype` at the address
 * plus `offset` bytes: narrow integers are each lane's value (already in their range: the kernel's
 * result was converted to `dtype`), narrowed from int32 lanes by saturation, which keeps it, and
 * from 16-bit lanes as their low bytes.
 */
export function storeLanes(e: FunctionEmitter, dtype: DType, lanes: 16 | 8 | 4 | 2, offset: number): void {
  const bytes = DTYPES[dtype].bytes;
  const memarg = (align: number) => e.code.u32(align).u32(offset);
  if (bytes * lanes === 16) {
    e.simd(SimdOp.v128_store);
    memarg(sizeShift(dtype));
    return;
  }
  const laneBytes = 16 / lanes === 8 ? 4 : 16 / lanes; // 32-bit values in 2-lane code sit in 32-bit lanes 0–1
  if (bytes < laneBytes && laneBytes === 4) {
    // int32 lanes: the value is in the type's range, so saturating narrowing keeps it — one or two
    // instructions (packssdw/packusdw, packsswb/packuswb), where a byte shuffle costs V8 its mask too.
    const v = e.local(ValType.v128);
    const signed = SIGNED_NARROW.has(dtype);
    e.tee(v).get(v).simd(signed || bytes === 1 ? SimdOp.i16x8_narrow_i32x4_s : SimdOp.i16x8_narrow_i32x4_u);
    if (bytes === 1) e.tee(v).get(v).simd(signed ? SimdOp.i8x16_narrow_i16x8_s : SimdOp.i8x16_narrow_i16x8_u);
  } else if (bytes < laneBytes) {
    // The low `bytes` of each lane, packed at the bottom of the vector.
    const v = e.local(ValType.v128);
    const picks = Array.from({ length: lanes }, (_, l) => Array.from({ length: bytes }, (_, b) => laneBytes * l + b)).flat();
    e.tee(v).get(v).shuffle([...picks, ...Array<number>(16 - picks.length).fill(0)]);
  }
  const op = { 8: SimdOp.v128_store64_lane, 4: SimdOp.v128_store32_lane, 2: SimdOp.v128_store16_lane }[bytes * lanes]!;
  e.simd(op);
  memarg(0);
  e.code.byte(0);
}
