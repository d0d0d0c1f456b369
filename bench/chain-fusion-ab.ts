/**
 * Automatic chain fusion (setGpuOptions({ fuseChains })) against the same awaited calls one by one:
 * three element-wise calls into preallocated device outputs, and one call alone, 200 times each
 * then one synchronize(), three alternated rounds of off and on.
 *
 *   npx tsx bench/chain-fusion-ab.ts [elements]     # default 2^16
 */
import { deviceArray, toDevice, vectorize, synchronize, shutdown } from '../src/index.js';
import { setChainFusion } from '../src/targets/gpu/runtime/chain-fusion.js';
const o = { target: 'gpu' } as const;
const saxpy = vectorize(['float32(float32, float32, float32)'], o)((a: number, x: number, y: number) => a * x + y);
const gauss = vectorize(['float32(float32)'], o)((x: number) => Math.exp(-x * x));
const mul = vectorize(['float32(float32, float32)'], o)((a: number, b: number) => a * b);
const n = Number(process.argv[2] ?? 65536);
const x = await toDevice(new Float32Array(n).fill(0.5)), y = await toDevice(new Float32Array(n).fill(0.25));
const [t, g, v] = await Promise.all([0, 1, 2].map(() => deviceArray([n], 'float32')));
const chain = async () => { await saxpy(2, x, y, { out: t }); await gauss(t, { out: g }); await mul(g, x, { out: v }); };
const neg = vectorize(['float32(float32)'], o)((a: number) => -a);
const one = async () => { await neg(x, { out: v }); };
async function time(f: () => Promise<void>, k = 200) { const t0 = performance.now(); for (let i = 0; i < k; i++) await f(); await synchronize(); return (performance.now() - t0) / k; }
for (const f of [chain, one]) for (let r = 0; r < 3; r++) for (const on of [false, true]) { setChainFusion(on); await time(f, 20); console.log(f === chain ? 'chain' : 'neg  ', on ? 'fusion on ' : 'fusion off', (await time(f)).toFixed(4), 'ms'); }
await shutdown(); process.exit(0);
