import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { guvectorize, vectorize } from '../../src/api.js';
import { writeBox, allocateBox, readBox } from '../../src/zarr/arrays.js';
import { chunkCoords } from '../../src/zarr/chunk-grid.js';
import { ChunkBuffers } from '../../src/zarr/chunk-buffers.js';
import { createZarr } from '../../src/zarr/index.js';
import { gridOf, runChunk } from '../../src/zarr/run-chunk.js';

describe('ChunkBuffers', () => {
  it('gives a chunk’s buffers to the next chunk of the same size once released, and zeroed outputs', () => {
    const buffers = new ChunkBuffers();
    const first = buffers.lease();
    const a = first.take(64);
    const b = first.takeZeroed(64);
    new Uint8Array(a).fill(7);
    new Uint8Array(b).fill(9);
    expect(buffers.lease().take(64)).not.toBe(a); // still held by the first chunk
    first.release();
    const second = buffers.lease();
    const reused = [second.take(64), second.takeZeroed(64)];
    expect(reused).toContain(a);
    expect(reused).toContain(b);
    expect([...new Uint8Array(reused[1]!)].every((x) => x === 0)).toBe(true);
    expect(second.take(32).byteLength).toBe(32); // another size: a buffer of its own
  });

  it('zeroes outputs of every length, in words or bytes', () => {
    const buffers = new ChunkBuffers();
    for (const bytes of [6, 12, 40]) {
      const lease = buffers.lease();
      new Uint8Array(lease.take(bytes)).fill(255);
      lease.release();
      const zeroed = buffers.lease().takeZeroed(bytes);
      expect(Array.from(new Uint8Array(zeroed))).toEqual(new Array(bytes).fill(0));
    }
  });

  it('runs chunks on reused buffers as on new ones, outputs a kernel leaves unwritten included', async () => {
    const root = mkdtempSync(path.join(tmpdir(), 'ufunc-chunk-buffers-'));
    // Writes only the first half of its output row: the rest must read 0, as in a new array.
    const half = guvectorize(['void(float32[:], float32[:])'], '(n)->(n)')((x: Float32Array, out: Float32Array) => {
      for (let i = 0; i < x.length / 2; i++) out[i] = x[i]! + 1;
    });
    const x = await createZarr(root, 'x', { shape: [6, 4], chunkShape: [2, 4], dtype: 'float32' });
    const data = allocateBox('float32', [6, 4]);
    (data.data as Float32Array).forEach((_, i, d) => (d[i] = i + 100));
    await writeBox(x, [[0, 6], [0, 4]], data);
    const y = await createZarr(root, 'y', { shape: [6, 4], chunkShape: [2, 4], dtype: 'float32' });
    const call = { ufunc: half, inputs: [x], outputs: [y] };
    const grid = gridOf(call);
    const buffers = new ChunkBuffers();
    // The first chunk leaves its buffers full of non-zero values for the next ones.
    for (let i = 0; i < grid.count; i++) await runChunk(call, grid, chunkCoords(grid, i), { shared: true, buffers });
    const out = Array.from((await readBox(y, [[0, 6], [0, 4]])).data as Float32Array);
    expect(out).toEqual([101, 102, 0, 0, 105, 106, 0, 0, 109, 110, 0, 0, 113, 114, 0, 0, 117, 118, 0, 0, 121, 122, 0, 0]);
  });

  it('gives a vectorize kernel’s outputs buffers not cleared (it writes them whole), and the same bytes', async () => {
    const root = mkdtempSync(path.join(tmpdir(), 'ufunc-chunk-buffers-'));
    const twice = vectorize(['float32(float32)'])((v: number) => 2 * v);
    const x = await createZarr(root, 'x', { shape: [12], chunkShape: [4], dtype: 'float32' });
    const data = allocateBox('float32', [12]);
    (data.data as Float32Array).forEach((_, i, d) => (d[i] = i - 3));
    await writeBox(x, [[0, 12]], data);
    const y = await createZarr(root, 'y', { shape: [12], chunkShape: [4], dtype: 'float32' });
    const call = { ufunc: twice, inputs: [x], outputs: [y] };
    const grid = gridOf(call);
    const buffers = new ChunkBuffers();
    const dirty = buffers.lease();
    for (let i = 0; i < 4; i++) new Float32Array(dirty.take(16)).fill(NaN);
    dirty.release();
    for (let i = 0; i < grid.count; i++) await runChunk(call, grid, chunkCoords(grid, i), { shared: true, buffers });
    expect(Array.from((await readBox(y, [[0, 12]])).data as Float32Array)).toEqual([-6, -4, -2, 0, 2, 4, 6, 8, 10, 12, 14, 16]);
  });
});
