/**
 * Ufunc calls over Zarr v3 arrays on this machine: chunk by chunk, the same result as one call over
 * the whole arrays, with broadcasting, `where`, per-row layouts and scalars; and the errors when
 * chunks do not fit the layout or a path leaves the store.
 */
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import * as zarr from 'zarrita';
import { describe, expect, it } from 'vitest';
import { guvectorize, vectorize } from '../../src/api.js';
import { ChunkError, createZarr, mapChunks, openZarr } from '../../src/zarr/index.js';
import { ConfinedFileStore } from '../../src/zarr/store.js';

const newStore = (): string => mkdtempSync(path.join(tmpdir(), 'ufunc-zarr-'));

async function filled(root: string, name: string, shape: number[], chunkShape: number[], dtype: 'float32' | 'float64' | 'int32', f: (i: number) => number) {
  const a = await createZarr(root, name, { shape, chunkShape, dtype });
  const n = shape.reduce((p, q) => p * q, 1);
  const Ctor = { float32: Float32Array, float64: Float64Array, int32: Int32Array }[dtype];
  const data = new Ctor(n).map((_, i) => f(i));
  const stride = shape.map((_, d) => shape.slice(d + 1).reduce((p, q) => p * q, 1));
  await zarr.set(a.array as never, null, { data, shape, stride } as never);
  return { array: a, data };
}

async function readAll(root: string, name: string) {
  const a = await openZarr(root, name);
  return (await zarr.get(a.array as never, null)) as { data: ArrayLike<number>; shape: number[] };
}

describe('mapChunks on this machine', () => {
  it('gives the bits of one call over the whole arrays, chunk edges included', async () => {
    const root = newStore();
    const f = vectorize(['float32(float32, float32)'])((x, y) => Math.exp(x) * y + 1);
    const { array: x, data: xs } = await filled(root, 'x', [1000], [128], 'float32', (i) => Math.sin(i) * 3);
    const { array: y, data: ys } = await filled(root, 'y', [1000], [300], 'float32', (i) => i / 7);
    const out = await createZarr(root, 'out', { shape: [1000], chunkShape: [128], dtype: 'float32' });
    const progress: number[] = [];
    await mapChunks(f, [x, y], out, { onProgress: (done) => progress.push(done) });
    const whole = await f(xs, ys);
    expect(Array.from((await readAll(root, 'out')).data)).toEqual(Array.from(whole));
    expect(progress).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
  });

  it('broadcasts a row and a scalar over a 2-D array, on parallel', async () => {
    const root = newStore();
    const f = vectorize(['float64(float64, float64, float64)'], { target: 'parallel' })((a, x, y) => a * x + y);
    const { array: x, data: xs } = await filled(root, 'x', [50, 40], [16, 40], 'float64', (i) => i * 0.5);
    const { array: row, data: rs } = await filled(root, 'row', [1, 40], [1, 8], 'float64', (i) => 100 * i);
    const out = await createZarr(root, 'out', { shape: [50, 40], chunkShape: [16, 10], dtype: 'float64' });
    await mapChunks(f, [3, x, row], out, { concurrency: 3 });
    const got = (await readAll(root, 'out')).data;
    for (let i = 0; i < 50; i++) for (let j = 0; j < 40; j++) expect(got[i * 40 + j]).toBe(3 * xs[i * 40 + j]! + rs[j]!);
  });

  it('reads chunks aligned with the outputs as they are, edge chunks through their strides', async () => {
    const root = newStore();
    const f = vectorize(['float64(float64, float64)'])((x, y) => x * 3 - y);
    const { array: x, data: xs } = await filled(root, 'x', [50, 40], [16, 16], 'float64', (i) => i * 0.5);
    const { array: y, data: ys } = await filled(root, 'y', [50, 40], [16, 16], 'float64', (i) => (i % 7) - 3);
    const out = await createZarr(root, 'out', { shape: [50, 40], chunkShape: [16, 16], dtype: 'float64' });
    await mapChunks(f, [x, y], out);
    const got = (await readAll(root, 'out')).data;
    for (let i = 0; i < 2000; i++) expect(got[i]).toBe(xs[i]! * 3 - ys[i]!);
  });

  it('runs a per-row gufunc with whole rows in each chunk', async () => {
    const root = newStore();
    const norm = guvectorize(['void(float32[:], float32[:])'], '(n)->(n)')((x, out) => {
      let s = 0;
      for (let i = 0; i < x.length; i++) s += x[i]! * x[i]!;
      const r = Math.sqrt(s);
      for (let i = 0; i < x.length; i++) out[i] = x[i]! / r;
    });
    const { array: x, data: xs } = await filled(root, 'x', [37, 6], [5, 6], 'float32', (i) => (i % 11) + 1);
    const out = await createZarr(root, 'out', { shape: [37, 6], chunkShape: [8, 6], dtype: 'float32' });
    await mapChunks(norm, [x], out);
    const whole = await norm({ data: xs, shape: [37, 6] });
    expect(Array.from((await readAll(root, 'out')).data)).toEqual(Array.from(whole.data));
  });

  it('keeps what an output held where `where` is false', async () => {
    const root = newStore();
    const f = vectorize(['int32(int32)'])((x) => x * 10);
    const { array: x } = await filled(root, 'x', [20], [6], 'int32', (i) => i);
    const { array: out } = await filled(root, 'out', [20], [6], 'int32', () => -1);
    const mask = await createZarr(root, 'mask', { shape: [20], chunkShape: [7], dtype: 'bool' });
    await zarr.set(mask.array as never, null, { data: new zarr.BoolArray(Array.from({ length: 20 }, (_, i) => i % 3 === 0)), shape: [20], stride: [1] } as never);
    await mapChunks(f, [x], out, { where: mask });
    expect(Array.from((await readAll(root, 'out')).data)).toEqual(Array.from({ length: 20 }, (_, i) => (i % 3 === 0 ? i * 10 : -1)));
  });

  it('refuses chunks that split a core dimension, saying how to chunk', async () => {
    const root = newStore();
    const norm = guvectorize(['void(float32[:], float32[:])'], '(n)->(n)')((x, out) => {
      for (let i = 0; i < x.length; i++) out[i] = x[i]!;
    });
    const { array: x } = await filled(root, 'x', [10, 6], [5, 6], 'float32', (i) => i);
    const out = await createZarr(root, 'out', { shape: [10, 6], chunkShape: [5, 3], dtype: 'float32' });
    await expect(mapChunks(norm, [x], out)).rejects.toThrowErrorMatchingInlineSnapshot(`[ChunkError: Output 1's chunks [5, 3] split its core dimension 2 (size 6): a chunk must hold whole rows of the layout \`(n)->(n)\`. Chunk it as [5, 6].]`);
    await expect(mapChunks(norm, [x], out)).rejects.toBeInstanceOf(ChunkError);
  });

  it('refuses inputs that do not broadcast', async () => {
    const root = newStore();
    const f = vectorize(['float32(float32, float32)'])((x, y) => x + y);
    const { array: x } = await filled(root, 'x', [10], [5], 'float32', (i) => i);
    const { array: y } = await filled(root, 'y', [7], [5], 'float32', (i) => i);
    const out = await createZarr(root, 'out', { shape: [10], chunkShape: [5], dtype: 'float32' });
    await expect(mapChunks(f, [x, y], out)).rejects.toThrowErrorMatchingInlineSnapshot(`[ChunkError: Input 2's loop shape [7] does not broadcast to the outputs' [10] (dimension 1: 7 against 10).]`);
  });

  it('writes the chunk files zarrita writes, whole chunks as their plain bytes and the rest through zarrita', async () => {
    const root = newStore();
    const f = vectorize(['float64(float64)', 'int64(int64)'])((x) => x * 3 - 1);
    // Whole and edge chunks; '/' and '.' chunk keys; big-endian bytes (zarrita's own encoding only).
    const cases = [
      { name: 'slash', dtype: 'float64', keys: '/' },
      { name: 'dot', dtype: 'float64', keys: '.' },
      { name: 'wide', dtype: 'int64', keys: '/' },
      { name: 'big', dtype: 'float64', keys: '/', codecs: [{ name: 'bytes', configuration: { endian: 'big' } }] },
    ] as const;
    for (const c of cases) {
      const shape = [37, 20];
      const chunkShape = [8, 20];
      const n = shape[0]! * shape[1]!;
      const big = c.dtype === 'int64';
      const xs = big ? BigInt64Array.from({ length: n }, (_, i) => BigInt(i * 7 - 100)) : Float64Array.from({ length: n }, (_, i) => i / 3);
      const make = async (name: string) => {
        const store = new ConfinedFileStore(root);
        await zarr.create(zarr.root(store).resolve(name), { shape, chunkShape, dtype: c.dtype, fillValue: 0 as never, chunkSeparator: c.keys, codecs: 'codecs' in c ? [...c.codecs] : [{ name: 'bytes', configuration: { endian: 'little' } }] });
        return openZarr(root, name);
      };
      const x = await make(`${c.name}-x`);
      await zarr.set(x.array as never, null, { data: xs, shape, stride: [20, 1] } as never);
      const ours = await make(`${c.name}-ours`);
      await mapChunks(f, [x], ours);
      const theirs = await make(`${c.name}-zarrita`);
      const expected = await f(xs);
      await zarr.set(theirs.array as never, null, { data: expected, shape, stride: [20, 1] } as never);
      const files = (name: string) => readdirSync(path.join(root, name), { recursive: true, withFileTypes: true }).filter((e) => e.isFile() && e.name !== 'zarr.json').map((e) => path.relative(path.join(root, name), path.join(e.parentPath, e.name))).sort();
      expect(files(`${c.name}-ours`), c.name).toEqual(files(`${c.name}-zarrita`));
      expect(files(`${c.name}-ours`).length, c.name).toBe(5);
      for (const file of files(`${c.name}-ours`)) {
        expect(readFileSync(path.join(root, `${c.name}-ours`, file)).equals(readFileSync(path.join(root, `${c.name}-zarrita`, file))), `${c.name} ${file}`).toBe(true);
      }
      expect(Array.from((await readAll(root, `${c.name}-ours`)).data)).toEqual(Array.from(expected as ArrayLike<number>));
    }
  });

  it('creates arrays other Zarr v3 readers open: a fill value (zarr-python refuses null), unwritten chunks read as it', async () => {
    const root = newStore();
    for (const dtype of ['float32', 'int64', 'bool'] as const) {
      await createZarr(root, dtype, { shape: [10], chunkShape: [4], dtype });
      const metadata = JSON.parse(readFileSync(path.join(root, dtype, 'zarr.json'), 'utf8')) as { fill_value: unknown };
      expect(metadata.fill_value, dtype).toBe(dtype === 'bool' ? false : 0);
      expect(Array.from((await readAll(root, dtype)).data as ArrayLike<unknown>), dtype).toEqual(new Array(10).fill(dtype === 'bool' ? false : dtype === 'int64' ? 0n : 0));
    }
  });

  it('names the chunk whose kernel threw', async () => {
    const root = newStore();
    const f = guvectorize(['void(float32[:], float32[:])'], '(n)->(n)')((x, out) => {
      for (let i = 0; i < x.length; i++) out[i] = x[i + 1]!;
    });
    const { array: x } = await filled(root, 'x', [10, 4], [5, 4], 'float32', (i) => i);
    const out = await createZarr(root, 'out', { shape: [10, 4], chunkShape: [5, 4], dtype: 'float32' });
    await expect(mapChunks(f, [x], out, { concurrency: 1 })).rejects.toThrow(/^Chunk \[0\]: Index \[4\] is out of bounds/);
  });
});

describe('the store', () => {
  it('refuses paths that leave it, and links that point out', async () => {
    const root = newStore();
    await expect(openZarr(root, '../etc')).rejects.toThrow(/segment '\.\.'/);
    await expect(createZarr(root, 'a/../../b', { shape: [1], chunkShape: [1], dtype: 'float32' })).rejects.toBeInstanceOf(ChunkError);
    const outside = newStore();
    mkdirSync(path.join(root, 'inner'));
    symlinkSync(outside, path.join(root, 'inner', 'escape'));
    const store = new ConfinedFileStore(root);
    await expect(store.set('/inner/escape/zarr.json', new Uint8Array([1]))).rejects.toThrow(/leads outside the store/);
    expect(readdirSync(outside)).toEqual([]);
  });

  it('removes the temporary files of writes that never finished, and nothing else', async () => {
    const root = newStore();
    const store = new ConfinedFileStore(root);
    await store.set('/y/c/0/1', new Uint8Array([1]));
    writeFileSync(path.join(root, 'y', 'c', '0', '2.123.abcdef.partial'), 'torn');
    writeFileSync(path.join(root, 'y', 'c', '3.9.fedcba.partial'), 'torn');
    expect(await store.removeUnfinishedWrites('y/c')).toBe(2);
    expect(readdirSync(path.join(root, 'y', 'c'), { recursive: true }).sort()).toEqual(['0', '0/1']);
  });

  it('writes atomically: no partial file is left behind', async () => {
    const root = newStore();
    const store = new ConfinedFileStore(root);
    await store.set('/a/c/0', new Uint8Array([1, 2, 3]));
    await store.set('/a/c/0', new Uint8Array([4, 5]));
    expect(Array.from((await store.get('/a/c/0'))!)).toEqual([4, 5]);
    expect(readdirSync(path.join(root, 'a', 'c'))).toEqual(['0']);
  });
});
