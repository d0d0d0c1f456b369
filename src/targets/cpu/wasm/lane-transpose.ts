/**
 * A square transpose of vectors in Wasm SIMD: n vectors of n elements (n = 16 / element bytes: 8
 * of 16 bits, 16 of 8 bits) become the n vectors of their columns. The row copies of narrow
 * integer lanes use it (emit-rows.ts RowCopy): 8 rows of 8 int16 elements into 8 slots of one
 * element of each row, one load and one store per vector instead of one lane access per element.
 *
 * log2(n) rounds of interleaving ("perfect shuffle"): each round pairs vector j with vector
 * j + n/2 and writes their interleaved low halves to 2j and their high halves to 2j + 1, element
 * by element. After one round the vector 2j holds rows j and j + n/2 alternating; after log2(n)
 * rounds vector c holds element c of rows 0, 1, …, n − 1. Interleaving halves is what x86's
 * punpckl/punpckh do: V8 emits one instruction per shuffle.
 */
import { ValType } from './encoder.js';
import type { FunctionEmitter } from './emit-scalar.js';

/** Sets the vector locals `to` to the transpose of the vector locals `from` (n each, elements of `bytes` bytes, n · bytes = 16). */
export function transposeSquare(e: FunctionEmitter, from: readonly number[], to: readonly number[], bytes: 1 | 2): void {
  const n = 16 / bytes;
  const half = (high: boolean) => Array.from({ length: n / 2 }, (_, k) => {
    const element = (high ? n / 2 : 0) + k;
    return [0, 16].flatMap((vector) => Array.from({ length: bytes }, (_, b) => vector + element * bytes + b));
  }).flat();
  const [low, high] = [half(false), half(true)];
  let current = [...from];
  for (let round = n; round > 1; round /= 2) {
    const last = round === 2;
    const next = last ? [...to] : Array.from({ length: n }, () => e.local(ValType.v128));
    for (let j = 0; j < n / 2; j++) {
      e.get(current[j]!).get(current[j + n / 2]!).shuffle(low).set(next[2 * j]!);
      e.get(current[j]!).get(current[j + n / 2]!).shuffle(high).set(next[2 * j + 1]!);
    }
    current = next;
  }
}
