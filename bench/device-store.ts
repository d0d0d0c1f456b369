/**
 * What `where` and output casts cost on device arrays (gpu), for a vectorize ufunc: its kernel
 * stores into the output with the cast and the mask itself (fused-store.ts; until 2026-11-24 a
 * device temporary and a second store kernel, as guvectorize calls still do). Measured against the
 * same call without them, and against one kernel written by hand that does the masked, converting
 * store itself, in the same run. Wall time of the public call, each sample ended by
 * `synchronize()`; per case the median of 9 rounds (`--rounds`), each round timing every case once
 * in turn, after warm-up.
 *
 *   npx tsx bench/device-store.ts              # 2^16 and 2^20 elements
 *   npx tsx bench/device-store.ts --sizes 22   # other sizes (log2)
 *
 * Prints a table and writes bench/results/device-store-<adapter>.md.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { type DeviceArray, deviceArray, synchronize, toDevice, vectorize } from '../src/index.js';
import { acquireDevice, describeAdapter } from '../src/targets/gpu/runtime/device.js';
import { markdownTable } from './lib/markdown.js';
import { median, timeCalls } from './lib/timing.js';

const argv = process.argv.slice(2);
const sizesArg = argv.indexOf('--sizes');
const roundsArg = argv.indexOf('--rounds');
const ROUNDS = roundsArg >= 0 ? Number(argv[roundsArg + 1]) : 9;
const SIZES = (sizesArg >= 0 ? argv[sizesArg + 1]!.split(',').map(Number) : [16, 20]).map((k) => 2 ** k);

// The user's kernel (int32 loop), and the hand-fused forms of its masked and converting stores.
const affine = vectorize(['int32(int32)'], { target: 'gpu' })((x: number) => x * 3 + 1);
const fusedMasked = vectorize(['int32(int32, bool, int32)'], { target: 'gpu' })((x: number, m: boolean, old: number) => (m ? x * 3 + 1 : old));
const fusedCast = vectorize(['int16(int32)'], { target: 'gpu' })((x: number) => x * 3 + 1);
const fusedBoth = vectorize(['int16(int32, bool, int16)'], { target: 'gpu' })((x: number, m: boolean, old: number) => (m ? x * 3 + 1 : old));

interface Row { case: string; n: number; ms: number; ratio: number }

async function main(): Promise<void> {
  const adapter = await describeAdapter();
  console.log(`adapter: ${adapter}`);
  const rows: Row[] = [];
  for (const n of SIZES) {
    const xs = Int32Array.from({ length: n }, (_, i) => (i * 7919) % 100_003 - 50_000);
    const maskData = Uint8Array.from({ length: n }, (_, i) => (i % 3 === 0 ? 0 : 1));
    const mask = { data: maskData, shape: [n], dtype: 'bool' as const };
    const dx = await toDevice(xs);
    const dMask = await toDevice(mask);
    const out32 = await deviceArray([n], 'int32');
    const out16 = await deviceArray([n], 'int16');
    const cases: { name: string; call: () => Promise<unknown> }[] = [
      { name: 'plain: `affine(x, { out })`', call: () => affine(dx, { out: out32 }) },
      { name: 'cast: int16 `out`', call: () => affine(dx, { out: out16 }) },
      { name: 'cast fused by hand: an `int16(int32)` kernel', call: () => fusedCast(dx, { out: out16 }) },
      { name: 'where: host mask (uploaded)', call: () => affine(dx, { out: out32, where: mask }) },
      { name: 'where fused by hand, host mask (uploaded)', call: () => fusedMasked(dx, mask, out32, { out: out32 }) },
      { name: 'where fused by hand, device mask', call: () => fusedMasked(dx, dMask, out32, { out: out32 }) },
      { name: 'where + cast', call: () => affine(dx, { out: out16, where: mask }) },
      { name: 'where + cast fused by hand, host mask', call: () => fusedBoth(dx, mask, out16, { out: out16 }) },
    ];
    // Rounds that take one sample of every case in turn, so that the load of a shared machine falls
    // on all cases alike; the median over rounds per case.
    const calls = new Map<string, number>();
    for (const c of cases) calls.set(c.name, (await timeCalls(c.call, { warmup: 2, samples: 5, minSampleSeconds: 0.02, settle: synchronize })).callsPerSample);
    const samples = new Map<string, number[]>(cases.map((c) => [c.name, []]));
    for (let round = 0; round < ROUNDS; round++) {
      for (const c of cases) {
        const k = calls.get(c.name)!;
        const start = process.hrtime.bigint();
        for (let i = 0; i < k; i++) await c.call();
        await synchronize();
        samples.get(c.name)!.push(Number(process.hrtime.bigint() - start) / 1e6 / k);
      }
    }
    const timed = cases.map((c) => ({ name: c.name, ms: median(samples.get(c.name)!) }));
    // The answer must be the same each way (a benchmark of wrong results measures nothing).
    await affine(dx, { out: out16, where: mask });
    const a = await out16.toHost();
    await fusedBoth(dx, mask, out16, { out: out16 });
    const b = await out16.toHost();
    if (a.some((v, i) => v !== b[i])) throw new Error('the store kernel and the hand-fused kernel disagree');
    const base = timed[0]!.ms;
    for (const c of timed) {
      rows.push({ case: c.name, n, ms: c.ms, ratio: c.ms / base });
      console.log(`${String(n).padStart(8)}  ${c.name.padEnd(48)} ${c.ms.toFixed(3).padStart(9)} ms  ×${(c.ms / base).toFixed(2)}`);
    }
    for (const d of [dx, dMask, out32, out16] as DeviceArray[]) d.destroy();
  }
  const { adapterInfo } = await acquireDevice();
  const slug = (adapterInfo.description || adapterInfo.device || adapterInfo.vendor || 'gpu').split(/[:(]/)[0]!.trim().toLowerCase().replace(/[^a-z0-9]+/g, '-');
  const table = markdownTable([{ header: 'elements', align: 'right' }, { header: 'case' }, { header: 'median ms per call', align: 'right' }, { header: '× plain', align: 'right' }], rows.map((r) => [r.n.toLocaleString('en'), r.case, r.ms.toFixed(3), r.ratio.toFixed(2)]));
  const text = `# \`where\` and output casts on device arrays\n\nAdapter: ${adapter}. ${new Date().toISOString()}. \`npx tsx bench/device-store.ts\`; per case the median of ${ROUNDS} rounds that time every case in turn (after warm-up), each sample ended by \`synchronize()\`.\n\n${table}\n`;
  const dir = fileURLToPath(new URL('./results/', import.meta.url));
  mkdirSync(dir, { recursive: true });
  const file = `${dir}device-store-${slug}.md`;
  writeFileSync(file, text);
  console.log(`wrote ${file}`);
}

await main();
