/**
 * A lookup table in `env` against the same data passed as an input array (the workaround before
 * tables: a `(),(n)->()` gufunc taking the table as an argument), on the cpu and gpu targets.
 * Device inputs on the gpu, so the kernels are what is timed (the argument table is already on the
 * device too: the fairest case for the workaround). Rounds alternate the contenders; medians of
 * the rounds of wall time per call. Results are checked equal before timing.
 *
 *   npx tsx bench/lookup-tables.ts [n = 2^22] [table = 4096] [rounds = 7]   (--quick: 2^16, 256, 5)
 */
import { guvectorize, synchronize, toDevice, vectorize, type DeviceArray } from '../src/index.js';
import { describeAdapter, setIdleReleaseMs } from '../src/targets/gpu/runtime/device.js';
import { median } from './lib/timing.js';

setIdleReleaseMs(Infinity);
const quick = process.argv.includes('--quick');
const args = process.argv.slice(2).filter((a) => !a.startsWith('--')).map(Number);
const N = args[0] ?? (quick ? 2 ** 16 : 2 ** 22);
const M = args[1] ?? (quick ? 256 : 4096);
const ROUNDS = args[2] ?? (quick ? 5 : 7);

const LUT = Float32Array.from({ length: M }, (_, k) => Math.sqrt(k));
const idx = Int32Array.from({ length: N }, (_, k) => (k * 7919) % M);
const contenders = (target: 'cpu' | 'gpu') => ({
  table: vectorize(['float32(int32)'], { target, env: { LUT } })('(i) => LUT[i] * 2'),
  argument: guvectorize(['void(int32, float32[:], float32[:])'], '(),(n)->()', { target })('(i, L, out) => { out[0] = L[i] * 2; }'),
});

const toHost = async (r: unknown) => ((r as DeviceArray).toHost ? (await (r as DeviceArray).toHost()) as Float32Array : (r as Float32Array));
const settle = async (r: unknown) => {
  await synchronize();
  if ((r as DeviceArray).destroy) (r as DeviceArray).destroy();
};

for (const target of ['cpu', 'gpu'] as const) {
  const { table, argument } = contenders(target);
  const x = target === 'gpu' ? await toDevice(idx) : idx;
  const L = target === 'gpu' ? await toDevice(LUT) : LUT;
  const a = await toHost(await table(x));
  const b = await toHost(await argument(x, L));
  for (let k = 0; k < N; k++) if (!Object.is(a[k], b[k])) throw new Error(`${target}: element ${k}: table ${a[k]}, argument ${b[k]}`);
  const times: Record<string, number[]> = { table: [], argument: [] };
  for (let r = 0; r < ROUNDS; r++) {
    for (const [name, run] of [['table', () => table(x)], ['argument', () => argument(x, L)]] as const) {
      const t = performance.now();
      await settle(await run());
      times[name]!.push(performance.now() - t);
    }
  }
  const where = target === 'gpu' ? await describeAdapter() : 'cpu target';
  const t = median(times.table!);
  const g = median(times.argument!);
  console.log(`${where}: ${N} lookups in ${M} float32, ${ROUNDS} rounds: table ${t.toFixed(2)} ms, argument ${g.toFixed(2)} ms (table/argument ${(t / g).toFixed(2)})`);
}
process.exit(0);
