/**
 * Lookup tables: typed arrays passed in `env` (`{ env: { LUT: Float32Array.of(…) } }`).
 *
 * A kernel reads a table as it reads any one-dimensional array (`LUT[i]`, `LUT.length`, passed to
 * a helper), with the same bounds checks; it never writes one (a store is a KernelCompileError).
 * The contents are those the table had when the ufunc was made: `freezeTables` copies every table
 * of `env` then, so a later write to the caller's array changes nothing, on any target — as
 * Numba freezes global arrays into the kernels that read them.
 *
 * Each back end places a table once per compiled kernel: the JS engine decodes it into a typed
 * array beside the generated runner (so workers of the parallel target, which are sent the
 * runner's source, get it too); the gpu target binds it as a read-only storage buffer, uploaded
 * once per device (targets/gpu/runtime/table-buffers.ts). The Wasm engine does not place tables:
 * the engine choice runs such kernels on the JS engine (targets/cpu/wasm/support.ts).
 */
import type { DType, TypedArray } from '../dtypes.js';
import type { KernelTable } from './ir.js';
export type { KernelTable } from './ir.js';

const TABLE_DTYPES: Readonly<Record<string, DType>> = {
  Float32Array: 'float32', Float64Array: 'float64', Int32Array: 'int32', Uint32Array: 'uint32',
  Int16Array: 'int16', Uint16Array: 'uint16', Int8Array: 'int8', Uint8Array: 'uint8', Uint8ClampedArray: 'uint8c',
  BigInt64Array: 'int64', BigUint64Array: 'uint64',
};

/** The dtype of a typed array that may be a table, or undefined for any other value (DataView, Float16Array, …). */
export function tableDType(value: unknown): DType | undefined {
  if (!ArrayBuffer.isView(value) || value instanceof DataView) return undefined;
  const name = Object.getPrototypeOf(value)?.constructor?.name as string | undefined;
  return name !== undefined && Object.prototype.hasOwnProperty.call(TABLE_DTYPES, name) ? TABLE_DTYPES[name] : undefined;
}

/**
 * `env` with each of its typed arrays replaced by a copy: the tables as they are now.
 *
 * @param env - the ufunc's `env` option
 * @returns the same object when it holds no typed array, else a copy with the tables copied
 * @example const frozen = freezeTables({ LUT: lut, scale: 2 }); lut[0] = 9; // frozen.LUT[0] is unchanged
 */
export function freezeTables<E extends Readonly<Record<string, unknown>>>(env: E): E {
  if (!Object.values(env).some((v) => tableDType(v) !== undefined)) return env;
  const copy: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(env)) copy[key] = tableDType(value) !== undefined ? (value as TypedArray).slice() : value;
  return copy as E;
}

/**
 * The lookup tables a kernel reads, in words, for `explain`; undefined when it reads none.
 *
 * @example describeTables(kernel.tables, 'gpu'); // "Lookup tables (copied from `env` when the ufunc was made): `LUT` (float32, 6 elements); …"
 */
export function describeTables(tables: readonly KernelTable[] | undefined, target: string): string | undefined {
  if (!tables?.length) return undefined;
  const list = tables.map((t) => `\`${t.variable.name}\` (${(t.variable.type as { dtype: DType }).dtype}, ${t.data.length} element${t.data.length === 1 ? '' : 's'})`).join(', ');
  const where = target === 'gpu' ? 'uploaded once per device as a read-only storage buffer'
    : target === 'parallel' ? 'embedded in the kernel each worker compiles'
    : target === 'plain' ? 'read through views that check every index'
    : 'embedded in the compiled kernel';
  return `Lookup tables (copied from \`env\` when the ufunc was made; ${where}): ${list}.`;
}

/** The tables of `env` as a kernel reading all of them would hold them (for a plain-JS call's `explain`, which types no kernel). */
export function tablesOfEnv(env: Readonly<Record<string, unknown>>): KernelTable[] {
  return Object.entries(env).flatMap(([name, data]) => {
    const dtype = tableDType(data);
    return dtype === undefined ? [] : [{ variable: { id: 0, name, type: { kind: 'array', dtype, ndim: 1 } }, data: data as TypedArray }];
  });
}

/** A table's bytes as base64 text (for generated source), without Node's Buffer (browsers too). */
export function tableBase64(data: TypedArray): string {
  const bytes = new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
  let text = '';
  const CHUNK = 0x8000;
  for (let i = 0; i < bytes.length; i += CHUNK) text += String.fromCharCode(...bytes.subarray(i, i + CHUNK));
  return btoa(text);
}

/** The bytes of {@link tableBase64}'s text, in a fresh buffer (aligned for any element type). */
export function tableBytes(base64: string): ArrayBuffer {
  const text = atob(base64);
  const bytes = new Uint8Array(text.length);
  for (let i = 0; i < text.length; i++) bytes[i] = text.charCodeAt(i);
  return bytes.buffer;
}

/**
 * A table as the gpu reads it: one u32 word per element holding its 32-bit value (floats' bits,
 * integers sign-extended). A float64 table reaches the gpu only under `float64: 'float32'`, and is
 * then rounded to float32 as float64 inputs are.
 *
 * @example tableWords(Int8Array.of(-1), 'int8'); // Uint32Array [4294967295]
 */
export function tableWords(data: TypedArray, dtype: DType): Uint32Array {
  if (dtype === 'float32' || dtype === 'float64') return new Uint32Array(Float32Array.from(data as Float32Array | Float64Array).buffer);
  if (dtype === 'int64' || dtype === 'uint64') throw new Error(`internal: a ${dtype} table has no 32-bit words (checkGpuKernel refuses it)`);
  return Uint32Array.from(data as ArrayLike<number>, (v) => v >>> 0);
}
