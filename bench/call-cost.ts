/**
 * What one small gpu call costs its caller, per call: SAXPY (`float32(float32, float32, float32)`)
 * on 1 and 4,096 elements,
 * - on device arrays into a device `out`, awaited one by one (`for (…) await f(2, dx, dy, { out })`)
 *   and not awaited (`for (…) f(…); await synchronize()`): not awaiting must never be slower;
 * - on host arrays into a host `out` (each call waits for the GPU and copies back), with the
 *   output copied out in the call's own submission (the default) and after it (`-readback-after`,
 *   the earlier path: a second submission once the call's work is done), alternated;
 * The first chain of the process is reported apart (compilation, V8's tiers, first submissions),
 * then medians of REPS chains in steady state. CPU time of the process per call is reported too:
 * on lavapipe the GPU is the CPU, but the host's own work shows under `node --cpu-prof`.
 *
 *   npx tsx bench/call-cost.ts             # 1,000 calls a chain
 *   npx tsx bench/call-cost.ts --quick     # 200 calls a chain, for lavapipe
 *   node --cpu-prof --cpu-prof-dir=/tmp/prof --import tsx bench/call-cost.ts --quick --only device-4096-awaited
 *
 * CuPy's side of the same loops, where CuPy is installed: bench/peers/cupy_call_cost.py.
 */
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { deviceArray, synchronize, toDevice, vectorize } from '../src/index.js';
import { acquireDevice, describeAdapter, setIdleReleaseMs } from '../src/targets/gpu/runtime/device.js';
import { setHostOutputReadback } from '../src/targets/gpu/runtime/dispatch.js';
import { median } from './lib/timing.js';

const argv = process.argv.slice(2);
const quick = argv.includes('--quick');
const only = argv.includes('--only') ? argv[argv.indexOf('--only') + 1]!.split(',') : undefined;
const CALLS = quick ? 200 : 1000;
const REPS = quick ? 5 : 9;

setIdleReleaseMs(Infinity);
const saxpy = vectorize(['float32(float32, float32, float32)'], { target: 'gpu' })((a: number, x: number, y: number) => a * x + y);
await acquireDevice();
console.log(`gpu: ${await describeAdapter()}; ${CALLS} calls a chain, ${REPS} chains`);

type Chain = () => Promise<void>;
interface Case {
  readonly name: string;
  readonly make: () => Promise<Chain>;
}
const fill = (n: number, k: number) => Float32Array.from({ length: n }, (_, i) => ((i * k) % 17) / 8);

function deviceCase(n: number, awaited: boolean): Case {
  return {
    name: `device-${n}-${awaited ? 'awaited' : 'not-awaited'}`,
    make: async () => {
      const [dx, dy] = await Promise.all([toDevice(fill(n, 3)), toDevice(fill(n, 5))]);
      const out = await deviceArray([n], 'float32');
      return awaited
        ? async () => {
            for (let k = 0; k < CALLS; k++) await saxpy(2, dx, dy, { out });
            await synchronize();
          }
        : async () => {
            for (let k = 0; k < CALLS; k++) void saxpy(2, dx, dy, { out });
            await synchronize();
          };
    },
  };
}

/** `readback`: the output copied out in the call's own submission (the default) or after it (the earlier path). */
function hostCase(n: number, readback: 'in-call' | 'after'): Case {
  return {
    name: `host-${n}-awaited${readback === 'after' ? '-readback-after' : ''}`,
    make: async () => {
      const [x, y, out] = [fill(n, 3), fill(n, 5), new Float32Array(n)];
      return async () => {
        const previous = setHostOutputReadback(readback);
        for (let k = 0; k < CALLS; k++) await saxpy(2, x, y, { out });
        setHostOutputReadback(previous);
      };
    },
  };
}

const CASES = [
  deviceCase(4096, true), deviceCase(4096, false), deviceCase(1, true), deviceCase(1, false),
  hostCase(1, 'in-call'), hostCase(1, 'after'), hostCase(4096, 'in-call'), hostCase(4096, 'after'), hostCase(1, 'in-call'), hostCase(1, 'after'),
];

interface Row {
  readonly name: string;
  readonly firstUs: number;
  readonly steadyUs: number;
  readonly cpuUs: number;
}
const rows: Row[] = [];
for (const c of CASES) {
  if (only && !only.includes(c.name)) continue;
  const chain = await c.make();
  const t0 = performance.now();
  await chain();
  const firstUs = ((performance.now() - t0) / CALLS) * 1e3;
  for (let w = 0; w < 2; w++) await chain();
  const walls: number[] = [];
  const cpus: number[] = [];
  for (let r = 0; r < REPS; r++) {
    const cpu0 = process.cpuUsage();
    const start = performance.now();
    await chain();
    walls.push(((performance.now() - start) / CALLS) * 1e3);
    const cpu = process.cpuUsage(cpu0);
    cpus.push((cpu.user + cpu.system) / CALLS);
  }
  const row = { name: c.name, firstUs, steadyUs: median(walls), cpuUs: median(cpus) };
  rows.push(row);
  console.log(`${row.name.padEnd(24)} first chain ${row.firstUs.toFixed(1).padStart(8)} µs/call   steady ${row.steadyUs.toFixed(1).padStart(8)} µs/call   process CPU ${row.cpuUs.toFixed(1).padStart(8)} µs/call`);
}

const pair = (n: number) => [rows.find((r) => r.name === `device-${n}-awaited`), rows.find((r) => r.name === `device-${n}-not-awaited`)] as const;
for (const n of [4096, 1]) {
  const [a, b] = pair(n);
  if (a && b) console.log(`not awaiting ÷ awaiting, ${n} elements: ${(b.steadyUs / a.steadyUs).toFixed(2)}× (must be ≤ 1)`);
}

if (!argv.includes('--skip-peers') && !quick) {
  const peers = fileURLToPath(new URL('./peers/', import.meta.url));
  const result = spawnSync('python3', [`${peers}cupy_call_cost.py`, String(CALLS), String(REPS)], { cwd: peers, encoding: 'utf8', timeout: 300_000 });
  console.log(result.status === 0 ? `CuPy: ${result.stdout.trim()}` : `CuPy: not run (${(result.error?.message ?? result.stderr ?? '').trim().split('\n').slice(-1)[0]})`);
}
process.exit(0);
