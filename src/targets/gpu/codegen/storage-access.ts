/**
 * How generated code loads and stores the elements of one storage buffer.
 *
 * - 32-bit types are `array<f32|i32|u32>`, read and written directly.
 * - 8- and 16-bit types and bool are stored packed, byte-identical to the host typed array (bool
 *   one byte, 0 or 1), in `array<u32>` words: loads widen (sign-extending signed types), stores
 *   merge into the word. Two invocations may store into the same word (elements 0 and 1 of an
 *   int8 output belong to different invocations), so a writable packed buffer is
 *   `array<atomic<u32>>` and a store is an atomicAnd that clears the element's bits, then an
 *   atomicOr that sets them: other invocations touch other bits of the word, so the two steps do
 *   not need to be one.
 * - A buffer larger than `maxStorageBufferBindingSize` is bound as several chunks of 2^k words;
 *   accessors pick the chunk with a `switch` on the word index's high bits.
 */
import type { DType } from '../../../dtypes.js';
import type { WgslNamer } from './namer.js';
import { type BindingLayout, elementsPerWord } from './shader-layout.js';

/** The generated declarations and accessors of one binding. */
export interface StorageAccessors {
  /** `@group(0) @binding(n) var<storage, …> …;` lines. */
  readonly declarations: string;
  /** The declared names, one per chunk. */
  readonly names: readonly string[];
  /** Accessor functions (empty for a whole, unpacked buffer). */
  readonly functions: string;
  /** A load of element `element` (a u32 expression), as the dtype's rep (i32 for small types, bool for bool). */
  load(element: string): string;
  /** A statement storing `value` (in the dtype's rep) at `element`. */
  store(element: string, value: string): string;
  /** Bindings declared as 4-element vectors (shader-module.ts, wide tiles): a statement storing vector `value` at vector index `index`. */
  storeWide?(index: string, value: string): string;
}

/** The WGSL type of a 32-bit element, or `u32` for a packed word. */
function wordType(dtype: DType): 'f32' | 'i32' | 'u32' {
  if (elementsPerWord(dtype) > 1) return 'u32';
  return dtype === 'float32' ? 'f32' : dtype === 'int32' ? 'i32' : 'u32';
}

/**
 * Declarations and accessors for one binding.
 *
 * @param b its layout
 * @param hint a readable name (the kernel parameter it serves)
 * @param slots the @binding number of each chunk
 * @param namer the module's namer
 */
export function storageAccessors(b: BindingLayout, hint: string, slots: readonly number[], namer: WgslNamer): StorageAccessors {
  const packing = elementsPerWord(b.dtype);
  const word = wordType(b.dtype);
  const atomic = packing > 1 && b.writable;
  const element = atomic ? 'atomic<u32>' : word;
  const access = b.writable ? 'read_write' : 'read';
  const chunkNames = slots.map((_, c) => namer.fresh(slots.length === 1 ? `${hint}_data` : `${hint}_data${c}`));
  const declarations = slots
    .map((slot, c) => `@group(0) @binding(${slot}) var<storage, ${access}> ${chunkNames[c]}: array<${element}>;\n`)
    .join('');

  // Word-level access: a name with an index, or a switch over chunks.
  let functions = '';
  const chunked = slots.length > 1;
  const mask = `0x${((2 ** b.chunkShift - 1) >>> 0).toString(16)}u`;
  /** A switch over chunks; `body(name, index)` is the statement for one chunk. */
  const overChunks = (index: string, body: (name: string, local: string) => string) =>
    `  switch (${index} >> ${b.chunkShift}u) {\n` +
    chunkNames
      .map((n, c) => `    ${c === chunkNames.length - 1 ? 'default' : `case ${c}u`}: { ${body(n, `${index} & ${mask}`)} }\n`)
      .join('') +
    '  }\n';

  let readWord: (w: string) => string;
  let writeWord: ((w: string, v: string) => string) | undefined;
  let clearBits: ((w: string, m: string) => string) | undefined;
  let setBits: ((w: string, m: string) => string) | undefined;
  const ref = (name: string, w: string) => (atomic ? `atomicLoad(&${name}[${w}])` : `${name}[${w}]`);
  if (!chunked) {
    const name = chunkNames[0]!;
    readWord = (w) => ref(name, w);
    writeWord = (w, v) => `${name}[${w}] = ${v};`;
    clearBits = (w, m) => `atomicAnd(&${name}[${w}], ~(${m}));`;
    setBits = (w, m) => `atomicOr(&${name}[${w}], ${m});`;
  } else {
    const load = namer.fresh(`${hint}_word`);
    functions += `fn ${load}(w: u32) -> ${word} {\n${overChunks('w', (n, i) => `return ${ref(n, i)};`)}}\n`;
    readWord = (w) => `${load}(${w})`;
    if (b.writable && !atomic) {
      const store = namer.fresh(`${hint}_set_word`);
      functions += `fn ${store}(w: u32, v: ${word}) {\n${overChunks('w', (n, i) => `${n}[${i}] = v;`)}}\n`;
      writeWord = (w, v) => `${store}(${w}, ${v});`;
    }
    if (atomic) {
      const and = namer.fresh(`${hint}_and_word`);
      const or = namer.fresh(`${hint}_or_word`);
      functions += `fn ${and}(w: u32, m: u32) {\n${overChunks('w', (n, i) => `atomicAnd(&${n}[${i}], m);`)}}\n`;
      functions += `fn ${or}(w: u32, m: u32) {\n${overChunks('w', (n, i) => `atomicOr(&${n}[${i}], m);`)}}\n`;
      clearBits = (w, m) => `${and}(${w}, ~(${m}));`;
      setBits = (w, m) => `${or}(${w}, ${m});`;
    }
  }

  if (packing === 1) {
    return {
      declarations,
      names: chunkNames,
      functions,
      load: (e) => readWord(e),
      store: (e, v) => {
        if (!writeWord) throw new Error('internal: store into a read-only binding');
        return writeWord(e, v);
      },
    };
  }

  // Packed: element e is bits [shift, shift + width) of word e / packing.
  const width = 32 / packing;
  const signed = b.dtype === 'int8' || b.dtype === 'int16';
  const lane = packing === 4 ? '(e & 3u)' : '(e & 1u)';
  const wordOf = packing === 4 ? 'e >> 2u' : 'e >> 1u';
  const elementMask = packing === 4 ? '0xffu' : '0xffffu';
  const load = namer.fresh(`${hint}_load`);
  functions +=
    `fn ${load}(e: u32) -> i32 {\n  let w = ${readWord(wordOf)};\n` +
    (signed
      ? `  return bitcast<i32>(w << (${32 - width}u - ${width}u * ${lane})) >> ${32 - width}u;\n}\n`
      : `  return i32((w >> (${width}u * ${lane})) & ${elementMask});\n}\n`);
  let store: string | undefined;
  if (b.writable) {
    store = namer.fresh(`${hint}_store`);
    functions +=
      `fn ${store}(e: u32, v: i32) {\n  let shift = ${width}u * ${lane};\n` +
      `  ${clearBits!(wordOf, `${elementMask} << shift`)}\n` +
      `  ${setBits!(wordOf, `(u32(v) & ${elementMask}) << shift`)}\n}\n`;
  }
  const isBool = b.dtype === 'bool';
  return {
    declarations,
    names: chunkNames,
    functions,
    load: (e) => (isBool ? `(${load}(${e}) != 0i)` : `${load}(${e})`),
    store: (e, v) => {
      if (!store) throw new Error('internal: store into a read-only binding');
      return `${store}(${e}, ${isBool ? `select(0i, 1i, ${v})` : v});`;
    },
  };
}
