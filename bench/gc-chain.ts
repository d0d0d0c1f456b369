/**
 * Chains whose outputs are dropped without destroy() (left to the garbage collector), against the
 * same chains with each previous output destroy()ed and with `using`: wall time per call, buffers
 * created, and the process's peak resident memory (on lavapipe, device memory is host memory).
 *
 *   npx tsx bench/gc-chain.ts [--mib 64] [--calls 10] [--chains 4]
 *
 * Each chain is `calls` calls of SAXPY on `mib` MiB float32 outputs, each call reading the previous
 * output (x = saxpy(2, x, y)), ended by a one-element read-back (the loop yields to the event loop
 * only there). Run each way in its own process for its own peak of device memory held
 * (`--order dropped`).
 */
import { type DeviceArray, synchronize, toDevice, vectorize } from '../src/index.js';
import { bufferPoolStats, setBufferPoolLimit } from '../src/targets/gpu/runtime/buffer-pool.js';
import { acquireDevice, describeAdapter, setIdleReleaseMs } from '../src/targets/gpu/runtime/device.js';
import { median } from './lib/timing.js';

const argv = process.argv.slice(2);
const flag = (name: string, fallback: number) => {
  const i = argv.indexOf(name);
  return i >= 0 ? Number(argv[i + 1]) : fallback;
};
const MIB = flag('--mib', 64);
const CALLS = flag('--calls', 10);
const CHAINS = flag('--chains', 4);
const n = (MIB * 2 ** 20) / 4;
if (argv.includes('--pool-limit-mib')) setBufferPoolLimit(flag('--pool-limit-mib', 1024) * 2 ** 20);

setIdleReleaseMs(Infinity);
const ctx = await acquireDevice();
console.log(`gpu: ${await describeAdapter()}; ${CHAINS} chains of ${CALLS} calls, outputs of ${MIB} MiB`);
const saxpy = vectorize(['float32(float32, float32, float32)'], { target: 'gpu' })((a: number, x: number, y: number) => a * x + y);
const y = await toDevice(new Float32Array(n).fill(1));

async function run(mode: 'destroy' | 'using' | 'dropped'): Promise<void> {
  const before = bufferPoolStats(ctx);
  const perCall: number[] = [];
  let peakRss = 0;
  for (let c = 0; c < CHAINS; c++) {
    let x = (await saxpy(0, y, 0)) as DeviceArray; // x = 0 + ... = zeros: the chain computes 2x + 1 each step
    const t0 = performance.now();
    for (let k = 0; k < CALLS; k++) {
      if (mode === 'using') {
        using previous = x;
        x = (await saxpy(2, previous, y)) as DeviceArray;
      } else {
        const next = (await saxpy(2, x, y)) as DeviceArray;
        if (mode === 'destroy') x.destroy();
        x = next;
      }
    }
    const last = (await x.view([1], [1], 0).toHost())[0]!;
    perCall.push((performance.now() - t0) / CALLS);
    if (last !== 2 ** CALLS - 1) throw new Error(`wrong result ${last}`);
    peakRss = Math.max(peakRss, process.memoryUsage().rss);
    if (mode !== 'dropped') x.destroy();
  }
  await synchronize();
  const after = bufferPoolStats(ctx);
  console.log(
    `${mode.padEnd(8)} ${median(perCall).toFixed(2).padStart(8)} ms/call (chains ${perCall.map((t) => t.toFixed(1)).join(' ')}), ` +
      `buffers created ${after.created - before.created}, reused ${after.reused - before.reused}, yields ${after.yields - before.yields}, ` +
      `device memory held by the pool at most ${(after.peakHeldBytes / 2 ** 20).toFixed(0)} MiB (over the process), peak RSS ${(peakRss / 2 ** 20).toFixed(0)} MiB`,
  );
}

const order = (argv.includes('--order') ? argv[argv.indexOf('--order') + 1]! : 'destroy,using,dropped').split(',') as ('destroy' | 'using' | 'dropped')[];
for (const mode of order) await run(mode);
y.destroy();
process.exit(0);
