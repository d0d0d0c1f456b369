/**
 * The I/O of chunk jobs without the library (bench/cluster-overhead.ts's "raw I/O" rows): one process
 * of W reads its share of a Zarr array's chunk files and writes each back as a worker writes an
 * output chunk — the whole file in one read, then a temporary file written in one write and renamed
 * over the chunk's name — holding `held` chunks at once, each in a buffer used again from chunk to
 * chunk (as a worker's are: src/zarr/chunk-buffers.ts). No queue, no kernel, no checks: what the
 * disk and the page cache give W processes doing what W workers' reads and writes do.
 *
 *   node bench/lib/raw-chunk-io.mjs IN_DIR OUT_DIR COUNT INDEX OF HELD
 *
 * Chunks INDEX, INDEX + OF, … below COUNT of IN_DIR (files named 0, 1, …) go to OUT_DIR. It prints
 * `ready` once started and waits for a line on stdin before it begins, so that the caller times the
 * I/O of all W processes together, not their start; `done MS` when finished, MS the CPU time (user +
 * system, all its threads) it spent on the chunks.
 */
import { open, rename } from 'node:fs/promises';
import { createInterface } from 'node:readline';
import path from 'node:path';

const [inDir, outDir, count, index, of, held] = [process.argv[2], process.argv[3], ...process.argv.slice(4, 8).map(Number)];
const mine = [];
for (let c = index; c < count; c += of) mine.push(c);

async function copyChunk(c, lane) {
  const input = await open(path.join(inDir, String(c)), 'r');
  let bytes;
  try {
    const { size } = await input.stat();
    if (lane.buffer?.byteLength !== size) lane.buffer = new Uint8Array(size);
    bytes = lane.buffer;
    for (let filled = 0; filled < size; ) {
      const { bytesRead } = await input.read(bytes, filled, size - filled, filled);
      if (bytesRead === 0) break;
      filled += bytesRead;
    }
  } finally {
    await input.close();
  }
  const file = path.join(outDir, String(c));
  const temp = `${file}.${process.pid}.partial`;
  const output = await open(temp, 'wx');
  try {
    for (let written = 0; written < bytes.byteLength; ) written += (await output.write(bytes, written, bytes.byteLength - written)).bytesWritten;
  } finally {
    await output.close();
  }
  await rename(temp, file);
}

console.log('ready');
const lines = createInterface({ input: process.stdin });
await new Promise((resolve) => lines.once('line', resolve));
const cpu = process.cpuUsage();
let next = 0;
await Promise.all(Array.from({ length: Math.max(1, held) }, async () => {
  const lane = { buffer: undefined };
  while (next < mine.length) await copyChunk(mine[next++], lane);
}));
const spent = process.cpuUsage(cpu);
console.log(`done ${(spent.user + spent.system) / 1000}`);
lines.close();
