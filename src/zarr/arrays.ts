/**
 * Zarr v3 arrays as ufunc operands: open and create them through zarrita (which reads and writes
 * the format: metadata, codecs, chunk keys) over a confined, atomic filesystem store, and read or
 * write a box of one as an ndarray-like the ufunc takes.
 */
import * as zarr from 'zarrita';
import type { DType, TypedArray } from '../dtypes.js';
import { ChunkError } from '../cluster/errors.js';
import type { Range } from './chunk-grid.js';
import type { ChunkLease } from './chunk-buffers.js';
import { checkStorePath, ConfinedFileStore, type StoreGetOptions } from './store.js';

/** The Zarr data types a ufunc can take, by their Zarr names (the library's names are the same). */
const ZARR_DTYPES: readonly DType[] = ['bool', 'int8', 'int16', 'int32', 'int64', 'uint8', 'uint16', 'uint32', 'uint64', 'float32', 'float64'];

/** A Zarr array opened as a ufunc operand. */
export interface ZarrArray {
  /** The store's root directory (its real path). */
  readonly root: string;
  /** The array's path inside the store, e.g. `'temperature'` or `'run1/x'`. */
  readonly path: string;
  readonly shape: readonly number[];
  readonly chunkShape: readonly number[];
  readonly dtype: DType;
  /** zarrita's handle, for reading and writing the array yourself. */
  readonly array: zarr.Array<zarr.DataType, ConfinedFileStore>;
}

/** What `createZarr` makes. */
export interface CreateZarrOptions {
  readonly shape: readonly number[];
  readonly chunkShape: readonly number[];
  readonly dtype: DType;
  /**
   * zarrita's codec list (e.g. `[{ name: 'bytes', configuration: { endian: 'big' } }]`). zarrita
   * 0.7.5 decodes but does not encode `gzip`, `zlib` and `crc32c`: an array that a call writes
   * cannot use them. @default uncompressed little-endian bytes
   */
  readonly codecs?: zarr.CodecMetadata[];
  /** What unwritten chunks read as. @default 0 */
  readonly fillValue?: number | bigint | boolean;
}

const stores = new Map<string, ConfinedFileStore>();

/** One store object per root, so every array of a root shares its checks. */
export function storeAt(root: string): ConfinedFileStore {
  let store = stores.get(root);
  if (!store) {
    store = new ConfinedFileStore(root);
    stores.set(root, store);
    stores.set(store.root, store);
  }
  return store;
}

/**
 * Opens the Zarr v3 array at `path` in the filesystem store at `root`.
 *
 * @throws ChunkError when the path leaves the store or the array's dtype is not one a ufunc takes;
 *   zarrita's NotFoundError when there is no array there
 * @example
 * const x = await openZarr('./data.zarr', 'x');
 */
export async function openZarr(root: string, path: string): Promise<ZarrArray> {
  const store = storeAt(root);
  const rel = checkStorePath(path);
  const array = await zarr.open.v3(zarr.root(store).resolve(rel), { kind: 'array' });
  const metadata = await store.get(`/${rel ? `${rel}/` : ''}zarr.json`);
  noteRawChunks(array, metadata && JSON.parse(new TextDecoder().decode(metadata)));
  return wrap(store, rel, array);
}

/**
 * Creates (or replaces the metadata of) a Zarr v3 array at `path` in the store at `root`.
 *
 * @example
 * const y = await createZarr('./data.zarr', 'y', { shape: [1 << 20], chunkShape: [1 << 16], dtype: 'float32' });
 */
export async function createZarr(root: string, path: string, options: CreateZarrOptions): Promise<ZarrArray> {
  const store = storeAt(root);
  const rel = checkStorePath(path);
  if (!ZARR_DTYPES.includes(options.dtype)) throw new ChunkError(`A Zarr array of a ufunc has one of the dtypes ${ZARR_DTYPES.join(', ')}; found '${options.dtype}'.`);
  if (options.shape.length !== options.chunkShape.length || options.chunkShape.some((c) => !Number.isInteger(c) || c < 1)) {
    throw new ChunkError(`\`chunkShape\` [${options.chunkShape.join(', ')}] must have one positive integer per dimension of \`shape\` [${options.shape.join(', ')}].`);
  }
  // Spelled out (zarrita would write an empty list): other Zarr implementations need the bytes codec.
  const codecs = options.codecs ?? [{ name: 'bytes', configuration: { endian: 'little' } }];
  const array = await zarr.create(zarr.root(store).resolve(rel), {
    shape: [...options.shape],
    chunkShape: [...options.chunkShape],
    dtype: options.dtype as zarr.DataType,
    codecs,
    // Zarr v3 has no null fill value (zarr-python refuses an array with one, as zarrita writes by default).
    fillValue: (options.fillValue ?? (options.dtype === 'bool' ? false : 0)) as never,
  });
  noteRawChunks(array, { codecs, chunk_key_encoding: { name: 'default', configuration: { separator: '/' } } });
  return wrap(store, rel, array as zarr.Array<zarr.DataType, ConfinedFileStore>);
}

/**
 * The chunk keys' separator of arrays whose chunks are stored as their plain little-endian bytes
 * (the `bytes` codec alone, default chunk keys): a whole chunk is written as the bytes of the
 * kernel's output, without zarrita's copy into a chunk of its own. Other arrays are absent.
 */
const rawChunkSeparators = new WeakMap<object, string>();

/** Whether this machine's typed arrays are little-endian (the bytes codec's `endian` of our arrays). */
const LITTLE_ENDIAN = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;

function noteRawChunks(array: object, metadata: { codecs?: unknown; chunk_key_encoding?: unknown } | undefined): void {
  const codecs = metadata?.codecs as { name?: string; configuration?: { endian?: string } }[] | undefined;
  const keys = metadata?.chunk_key_encoding as { name?: string; configuration?: { separator?: string } } | undefined;
  const plainBytes = Array.isArray(codecs) && codecs.length === 1 && codecs[0]?.name === 'bytes' && codecs[0].configuration?.endian === 'little';
  const separator = keys?.name === 'default' ? (keys.configuration?.separator ?? '/') : undefined;
  if (LITTLE_ENDIAN && plainBytes && (separator === '/' || separator === '.')) rawChunkSeparators.set(array, separator);
}

function wrap(store: ConfinedFileStore, path: string, array: zarr.Array<zarr.DataType, ConfinedFileStore>): ZarrArray {
  const dtype = array.dtype as DType;
  if (!ZARR_DTYPES.includes(dtype)) throw new ChunkError(`The Zarr array '${path}' has dtype '${array.dtype}'; a ufunc takes ${ZARR_DTYPES.join(', ')}.`);
  return { root: store.root, path, shape: array.shape, chunkShape: array.chunks, dtype, array };
}

/** An ndarray-like (C order) as the ufunc takes and zarrita writes. */
export interface Box {
  readonly data: TypedArray;
  readonly shape: number[];
  readonly stride: number[];
  readonly dtype?: DType;
}

function selection(region: readonly (Range | undefined)[]): (zarr.Slice | null)[] {
  return region.map((r) => (r ? zarr.slice(r[0], r[1]) : null));
}

/**
 * The grid coordinates of the one chunk that `region` is the whole of (clipped at the array's
 * end), or undefined when it spans several chunks or part of one.
 */
function wholeChunk(a: ZarrArray, region: readonly (Range | undefined)[]): number[] | undefined {
  const coords: number[] = [];
  for (let d = 0; d < a.shape.length; d++) {
    const [start, stop] = region[d] ?? [0, a.shape[d]!];
    const c = a.chunkShape[d]!;
    if (start % c !== 0 || stop !== Math.min(start + c, a.shape[d]!)) return undefined;
    coords.push(start / c);
  }
  return coords;
}

/**
 * Reads a box of `a` (undefined ranges: the whole dimension). With `shared`, a box that is one
 * stored chunk lies in a `SharedArrayBuffer` where the chunk's codecs keep its bytes as they are
 * (plain little-endian bytes), so that another thread uses it without a copy.
 */
export async function readBox(a: ZarrArray, region: readonly (Range | undefined)[], options?: { readonly shared?: boolean; readonly lease?: ChunkLease }): Promise<Box> {
  const coords = a.dtype === 'bool' ? undefined : wholeChunk(a, region);
  if (coords) {
    // One chunk, read as zarrita decodes it (no copy into a second array): an edge chunk's box is
    // its leading corner, seen through the chunk's strides. zarrita hands its get options to the
    // store as they are: ConfinedFileStore's `shared` among them.
    const shared = options?.shared === true;
    const read: StoreGetOptions = { shared, ...(options?.lease && { lease: options.lease }) };
    const chunk = await a.array.getChunk(coords, read, { useSharedArrayBuffer: shared });
    const shape = region.map((r, d) => (r ? r[1] - r[0] : a.shape[d]!));
    return { data: chunk.data as TypedArray, shape, stride: chunk.stride };
  }
  const chunk = await zarr.get(a.array, selection(region));
  if (a.dtype === 'bool') {
    // zarrita's BoolArray wraps bytes of 0 and 1: the ufunc reads them as a bool array.
    const bools = chunk.data as unknown as zarr.BoolArray;
    return { data: new Uint8Array(bools.buffer, bools.byteOffset, bools.length), shape: chunk.shape, stride: chunk.stride, dtype: 'bool' };
  }
  return { data: chunk.data as TypedArray, shape: chunk.shape, stride: chunk.stride };
}

/** Whether `box` is C-contiguous with exactly `shape` (a whole, not an edge, chunk). */
function isWholeChunkBox(box: Box, shape: readonly number[]): boolean {
  let stride = 1;
  for (let d = shape.length - 1; d >= 0; d--) {
    if (box.shape[d] !== shape[d] || (shape[d]! > 1 && box.stride[d] !== stride)) return false;
    stride *= shape[d]!;
  }
  return box.shape.length === shape.length && box.data.length === stride;
}

/** Writes `box` into the region of `a` (its shape must be the region's). */
export async function writeBox(a: ZarrArray, region: readonly (Range | undefined)[], box: Box): Promise<void> {
  const separator = rawChunkSeparators.get(a.array);
  const coords = separator !== undefined && a.dtype !== 'bool' && a.shape.length > 0 ? wholeChunk(a, region) : undefined;
  if (coords && isWholeChunkBox(box, a.chunkShape)) {
    // The chunk's stored bytes are the box's own (little-endian, as this machine's typed arrays).
    const bytes = new Uint8Array(box.data.buffer, box.data.byteOffset, box.data.byteLength);
    await a.array.store.set(`/${a.path ? `${a.path}/` : ''}c${separator}${coords.join(separator)}`, bytes);
    return;
  }
  const data = a.dtype === 'bool' ? new zarr.BoolArray(box.data.buffer as ArrayBuffer, box.data.byteOffset, box.data.length) : box.data;
  await zarr.set(a.array as zarr.Array<zarr.DataType, ConfinedFileStore>, selection(region), { data, shape: box.shape, stride: box.stride } as never);
}

/**
 * A new C-order box of `shape` for `dtype`, of zeros; with `shared`, in a `SharedArrayBuffer`
 * (from `lease` where given: then of zeros only where `overwritten` is false — a buffer used again
 * holds an earlier chunk's values, which an output that every loop index writes whole does not need
 * cleared).
 */
export function allocateBox(dtype: DType, shape: readonly number[], shared = false, lease?: ChunkLease, overwritten = false): Box {
  const n = shape.reduce((a, b) => a * b, 1);
  const Ctor = { bool: Uint8Array, int8: Int8Array, int16: Int16Array, int32: Int32Array, int64: BigInt64Array, uint8: Uint8Array, uint8c: Uint8ClampedArray, uint16: Uint16Array, uint32: Uint32Array, uint64: BigUint64Array, float32: Float32Array, float64: Float64Array }[dtype];
  const stride: number[] = [];
  let s = 1;
  for (let d = shape.length - 1; d >= 0; d--) {
    stride[d] = s;
    s *= shape[d]!;
  }
  const bytes = n * Ctor.BYTES_PER_ELEMENT;
  const data = shared ? new (Ctor as new (buffer: SharedArrayBuffer) => TypedArray)((overwritten ? lease?.take(bytes) : lease?.takeZeroed(bytes)) ?? new SharedArrayBuffer(bytes)) : new Ctor(n);
  return { data: data as TypedArray, shape: [...shape], stride, ...(dtype === 'bool' && { dtype }) };
}
