/**
 * Out-of-bounds reports from the gpu. A failed index check in the shader skips the access, marks
 * the invocation failed (no further stores, loops exit) and, for the first failure of the call,
 * records the site, the indices and the array's shape in a small storage buffer (`OobRecord` in
 * shader-module.ts). After the call the record is read back and turned into the same
 * KernelRuntimeError the cpu target throws.
 *
 * Which failure is reported: the cpu stops at the first element in loop order; the gpu reports the
 * first invocation that claimed the record, which may be another failing element.
 */
import type { KernelRuntimeError } from '../../../errors.js';
import { type IndexCheckSite, indexError } from '../../../compiler/source-excerpt.js';

/**
 * Reads a bounds-check record.
 *
 * @param record the record's bytes as read back (48 bytes)
 * @param sites the shader's check sites (compiler/source-excerpt.ts)
 * @returns the error to throw, or undefined when no check failed
 * @example
 * const error = oobError(bytes, shader.sites);
 * if (error) throw error;
 */
export function oobError(record: ArrayBuffer, sites: readonly IndexCheckSite[]): KernelRuntimeError | undefined {
  const words = new Uint32Array(record, 0, 12);
  const count = words[0]!;
  if (count === 0) return undefined;
  const site = words[1]!;
  const axes = Math.min(words[2]!, 4);
  const floatAxes = words[3]!;
  const indexBits = words.subarray(4, 8);
  const dims = [...words.subarray(8, 8 + axes)];
  const ints = new Int32Array(indexBits.buffer, indexBits.byteOffset, 4);
  const floats = new Float32Array(indexBits.buffer, indexBits.byteOffset, 4);
  const index = Array.from({ length: axes }, (_, a) => ((floatAxes >> a) & 1 ? floats[a]! : ints[a]!));
  return indexError(sites, site, index, dims);
}
