/**
 * Chains of gpu calls on device-resident data, as a user writes them, against CuPy doing the same
 * in the same run: wall time per call of a chain of calls ended by one synchronisation (a read-back
 * of one element, which waits for every call before it), and the kernel time of one call (GPU
 * timestamp queries; CuPy: CUDA events). Kernel times alone are not the user's speed.
 *
 *   npx tsx bench/chain.ts                   # full sizes (the GPU machine)
 *   npx tsx bench/chain.ts --quick           # small sizes, for lavapipe
 *   npx tsx bench/chain.ts --only saxpy-small --calls 1000
 *
 * Prints a table and writes it to bench/results/chain-<gpu>.md (`-quick` for --quick runs). Without
 * CuPy (no python3 that imports it, or no CUDA device) the CuPy columns say why.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { type DeviceArray, deviceArray, toDevice, type Ufunc } from '../src/index.js';
import { acquireDevice, describeAdapter, setIdleReleaseMs } from '../src/targets/gpu/runtime/device.js';
import { timeKernels } from '../src/targets/gpu/runtime/kernel-timing.js';
import { bufferPoolStats } from '../src/targets/gpu/runtime/buffer-pool.js';
import { type PeerChain, runCupyChain } from './lib/cupy-chain.js';
import { markdownTable } from './lib/markdown.js';
import { median } from './lib/timing.js';
import { allocateLocal, type HostArray, workloadNamed, type WorkloadName } from './workloads.js';

const argv = process.argv.slice(2);
const quick = argv.includes('--quick');
const flag = (name: string) => {
  const i = argv.indexOf(name);
  return i >= 0 ? argv[i + 1] : undefined;
};
const only = flag('--only')?.split(',');
const REPS = Number(flag('--reps') ?? (quick ? 5 : 7));

/** One chain: which workload, how its output is had, its size and the number of calls. */
interface Chain {
  readonly name: string;
  readonly title: string;
  readonly workload: WorkloadName;
  /** out: into one preallocated device array; fresh: a new output per call, the previous destroy()ed; dropped: … left to the GC. */
  readonly output: 'out' | 'fresh' | 'dropped';
  readonly size: number;
  readonly calls: number;
  /** The CuPy chain that does the same (cupy_chain.py). */
  readonly peer: string;
  /** Elements the call reads or writes (the goal for large calls applies from 2^24). */
  readonly elements: number;
}

const SAXPY_N = quick ? 1 << 18 : 1 << 26;
const EXP_N = quick ? 1 << 18 : 1 << 24;
const HERMITE_ROWS = quick ? 1 << 14 : 4_194_304;
const LORENZ_MEMBERS = quick ? 2_000 : 100_000;
const MATMUL_BATCH = quick ? 1 << 14 : 1_000_000;
const LARGE_CALLS = quick ? 10 : 20;
const SMALL_CALLS = Number(flag('--calls') ?? 1000);
/** Sustained work before each measurement, so the GPU's clock is up (see measure()). */
const GPU_WARMUP_MS = Number(flag('--warmup-ms') ?? (quick ? 0 : 1000));

const CHAINS: Chain[] = [
  { name: 'saxpy-out', title: `SAXPY ${fmtCount(SAXPY_N)} float32 into \`out\``, workload: 'saxpy', output: 'out', size: SAXPY_N, calls: LARGE_CALLS, peer: 'saxpy-out', elements: 3 * SAXPY_N },
  { name: 'saxpy-fresh', title: `SAXPY ${fmtCount(SAXPY_N)}, a fresh output each call (previous \`destroy()\`ed)`, workload: 'saxpy', output: 'fresh', size: SAXPY_N, calls: LARGE_CALLS, peer: 'saxpy-fresh', elements: 3 * SAXPY_N },
  { name: 'saxpy-small', title: `SAXPY 4,096 float32 × ${SMALL_CALLS.toLocaleString('en')} calls into \`out\``, workload: 'saxpy', output: 'out', size: 4096, calls: SMALL_CALLS, peer: 'saxpy-out', elements: 3 * 4096 },
  { name: 'exp-out', title: `\`exp\` ${fmtCount(EXP_N)} float32 into \`out\``, workload: 'exp', output: 'out', size: EXP_N, calls: LARGE_CALLS, peer: 'exp-out', elements: 2 * EXP_N },
  { name: 'hermite-out', title: `Hermite \`()->(n)\` ${HERMITE_ROWS.toLocaleString('en')} × 16 into \`out\``, workload: 'hermite', output: 'out', size: HERMITE_ROWS, calls: LARGE_CALLS, peer: 'hermite-out', elements: 17 * HERMITE_ROWS },
  { name: 'lorenz96-out', title: `Lorenz-96 RK4 step, ${LORENZ_MEMBERS.toLocaleString('en')} × 40 float32, into \`out\``, workload: 'lorenz96', output: 'out', size: LORENZ_MEMBERS, calls: LARGE_CALLS, peer: 'lorenz96-out', elements: 80 * LORENZ_MEMBERS },
  { name: 'matmul4x4-out', title: `matmul 4×4, a batch of ${MATMUL_BATCH.toLocaleString('en')}, into \`out\``, workload: 'matmul4x4', output: 'out', size: MATMUL_BATCH, calls: LARGE_CALLS, peer: 'matmul4x4-out', elements: 48 * MATMUL_BATCH },
  // Last: the outputs it drops are finalised by the GC during whatever runs after it (the small-call chain measured 26–34 µs per call behind it).
  { name: 'saxpy-dropped', title: `SAXPY ${fmtCount(SAXPY_N)}, a fresh output each call (previous dropped, left to the GC)`, workload: 'saxpy', output: 'dropped', size: SAXPY_N, calls: LARGE_CALLS, peer: 'saxpy-fresh', elements: 3 * SAXPY_N },
];

function fmtCount(n: number): string {
  const log = Math.log2(n);
  return Number.isInteger(log) ? `2^${log}` : n.toLocaleString('en');
}

setIdleReleaseMs(Infinity); // one device for the whole run
const ctx = await acquireDevice();
const adapter = await describeAdapter();
console.log(`gpu: ${adapter}${quick ? ' (--quick sizes)' : ''}`);

// ---------------------------------------------------------------- CuPy

// ---------------------------------------------------------------- ufunc

interface Measured {
  readonly wallPerCallMs: number;
  readonly kernelMs: number | undefined;
  readonly check: string;
}

async function measure(chain: Chain, ufunc: Ufunc): Promise<Measured> {
  const workload = workloadNamed(chain.workload);
  const problem = workload.makeProblem(chain.size, 'float32', allocateLocal);
  const inputs = await Promise.all(problem.inputs.map((x) => (typeof x === 'number' ? x : toDevice({ data: x.data as Float32Array, shape: x.shape }))));
  const out = await deviceArray(problem.out.shape, 'float32');
  let previous: DeviceArray | undefined;
  const call = async (): Promise<DeviceArray> => {
    if (chain.output === 'out') {
      await ufunc(...inputs, { out });
      return out;
    }
    const z = (await ufunc(...inputs)) as DeviceArray;
    if (chain.output === 'fresh') previous?.destroy();
    previous = z;
    return z;
  };
  /** One chain; per-call wall time in ms. The read-back of one element waits for every call. */
  const runChain = async (): Promise<{ ms: number; last: DeviceArray }> => {
    const t0 = performance.now();
    let last: DeviceArray = out;
    for (let k = 0; k < chain.calls; k++) last = await call();
    await last.view([1], [1], 0).toHost();
    return { ms: (performance.now() - t0) / chain.calls, last };
  };

  // Warm-up (compiles, fills the buffer pool), and the check against the hand-written loop.
  const { last } = await runChain();
  const got = (await last.toHost()) as Float32Array;
  workload.runLoop(problem);
  const check = compare(got, (problem.out as HostArray).data as Float32Array);

  // The GPU's clock: after the host work above (making and checking the data, about a second)
  // the GPU has been idle and its driver has lowered the SM clock (on the H100, 345–900 MHz instead
  // of 1,980; nvidia-smi says "idle"), and it rises again only under sustained work. Measured
  // cold, SAXPY 2^26's kernel took 0.56–0.81 ms instead of 0.37 (H100, nvidia-smi logging the
  // clock alongside). So chains run for GPU_WARMUP_MS first, as CuPy's chains do (cupy_chain.py).
  // (Outputs dropped to the GC pile up in device memory until collected: at most 3 chains of them.)
  const warmEnd = performance.now() + GPU_WARMUP_MS;
  for (let w = 0; performance.now() < warmEnd && (chain.output !== 'dropped' || w < 3); w++) await runChain();
  const walls: number[] = [];
  for (let r = 0; r < REPS; r++) walls.push((await runChain()).ms);
  let kernelMs: number | undefined;
  if (ctx.hasTimestamps) {
    const { kernelMs: runs } = await timeKernels(async () => {
      for (let r = 0; r < Math.max(REPS, 5); r++) {
        await call();
        await out.view([1], [1], 0).toHost();
      }
    });
    kernelMs = median(runs);
  }
  previous?.destroy();
  for (const x of inputs) if (typeof x !== 'number') x.destroy();
  out.destroy();
  return { wallPerCallMs: median(walls), kernelMs, check };
}

function compare(got: Float32Array, expected: Float32Array): string {
  const step = Math.max(1, Math.floor(expected.length / 100_003));
  for (let i = 0; i < expected.length; i += step) {
    const e = expected[i]!;
    if (!(Math.abs(got[i]! - e) <= 1e-4 * Math.max(1, Math.abs(e)))) return `wrong at ${i}: ${got[i]} instead of ${e}`;
  }
  return 'ok';
}

// ---------------------------------------------------------------- the run

interface Row {
  readonly chain: Chain;
  readonly ours: Measured;
  readonly peer: PeerChain;
}
const rows: Row[] = [];
const ufuncs = new Map<WorkloadName, Ufunc>();
for (const chain of CHAINS) {
  if (only && !only.includes(chain.name)) continue;
  let ufunc = ufuncs.get(chain.workload);
  if (!ufunc) ufuncs.set(chain.workload, (ufunc = workloadNamed(chain.workload).makeUfunc('gpu', 'float32')));
  let ours: Measured;
  const poolBefore = bufferPoolStats(ctx);
  try {
    ours = await measure(chain, ufunc);
  } catch (e) {
    // One chain that fails (out of memory, say) is reported, and the others still run.
    console.log(`${chain.name}: failed: ${e instanceof Error ? `${e.name}: ${e.message}` : String(e)}`);
    rows.push({ chain, ours: { wallPerCallMs: NaN, kernelMs: undefined, check: `failed: ${e instanceof Error ? e.name : 'error'}` }, peer: { skipped: 'not run' } });
    continue;
  }
  const peer = argv.includes('--skip-peers') ? { skipped: 'CuPy skipped (--skip-peers)' } : runCupyChain(chain.peer, chain.size, chain.calls, REPS, GPU_WARMUP_MS / 1e3);
  rows.push({ chain, ours, peer });
  const peerText = peer.wall_per_call_s === undefined ? (peer.skipped ?? '—') : `CuPy ${fmtMs(peer.wall_per_call_s * 1e3)} per call, kernel ${fmtMs(peer.kernel_s! * 1e3)}`;
  const pool = bufferPoolStats(ctx);
  const poolText = `buffer pool: ${pool.created - poolBefore.created} created, ${pool.reused - poolBefore.reused} reused`;
  console.log(`${chain.name}: ${fmtMs(ours.wallPerCallMs)} per call, kernel ${ours.kernelMs === undefined ? '—' : fmtMs(ours.kernelMs)} (${ours.check}; ${poolText}); ${peerText}`);
}

function fmtMs(ms: number): string {
  return ms >= 1 ? `${ms.toFixed(2)} ms` : ms >= 0.1 ? `${ms.toFixed(3)} ms` : `${(ms * 1e3).toFixed(1)} µs`;
}

const outOf = (name: string) => rows.find((r) => r.chain.name === name)?.ours.wallPerCallMs;
const table = rows.map(({ chain, ours, peer }) => {
  const peerWall = peer.wall_per_call_s === undefined ? undefined : peer.wall_per_call_s * 1e3;
  const ratio = peerWall === undefined ? undefined : ours.wallPerCallMs / peerWall;
  let goal = '';
  let met: boolean | undefined;
  if (chain.name === 'saxpy-small') {
    goal = '≤ 25 µs per call';
    met = ours.wallPerCallMs <= 0.025;
  } else if (chain.output !== 'out') {
    const base = outOf('saxpy-out');
    goal = '≤ 1.1× the same chain into `out`';
    met = base === undefined ? undefined : ours.wallPerCallMs <= 1.1 * base;
    if (base !== undefined) goal += ` (${(ours.wallPerCallMs / base).toFixed(2)}×)`;
  } else if (chain.elements >= 2 ** 24) {
    goal = '≤ 1.15× CuPy';
    met = ratio === undefined ? undefined : ratio <= 1.15;
  }
  return [
    chain.title,
    String(chain.calls),
    fmtMs(ours.wallPerCallMs),
    ours.kernelMs === undefined ? '—' : fmtMs(ours.kernelMs),
    peerWall === undefined ? '—' : fmtMs(peerWall),
    peer.kernel_s === undefined ? '—' : fmtMs(peer.kernel_s * 1e3),
    ratio === undefined ? '—' : `${ratio.toFixed(2)}×`,
    goal,
    met === undefined ? '—' : met ? 'yes' : 'no',
    ours.check,
  ];
});
const peerInfo = rows.find((r) => r.peer.device)?.peer;
const skipped = [...new Set(rows.map((r) => r.peer.skipped).filter(Boolean))];
const report = [
  '# gpu call chains: ufunc against CuPy, in one run',
  '',
  `- adapter: ${adapter}${peerInfo?.device ? ` (${peerInfo.device})` : ''}`,
  `- node ${process.version}, ${new Date().toISOString().slice(0, 10)}${quick ? ', --quick sizes' : ''}`,
  peerInfo ? `- CuPy ${peerInfo.cupy} on ${peerInfo.device}` : `- CuPy: ${skipped.join('; ') || 'not run'}`,
  `- wall per call: a chain of \`calls\` calls on device-resident data ended by a read-back of one element (CuPy: \`stream.synchronize()\`), divided by \`calls\`; median of ${REPS} chains after ${GPU_WARMUP_MS} ms of the same chains (both sides), so that the GPU's clock is up`,
  `- kernel: one call's compute pass on the GPU's clock (timestamp queries; CuPy: CUDA events), median of ${Math.max(REPS, 5)}`,
  '- ratio: ufunc wall ÷ CuPy wall (< 1 is faster than CuPy)',
  '- reproduce: `npx tsx bench/chain.ts` (see bench/README.md, "On the GPU machine")',
  '',
  markdownTable(
    [
      { header: 'chain' },
      { header: 'calls', align: 'right' },
      { header: 'ufunc wall/call', align: 'right' },
      { header: 'ufunc kernel', align: 'right' },
      { header: 'CuPy wall/call', align: 'right' },
      { header: 'CuPy kernel', align: 'right' },
      { header: 'ratio', align: 'right' },
      { header: 'goal' },
      { header: 'met' },
      { header: 'check' },
    ],
    table,
  ),
  '',
].join('\n');
console.log(`\n${report}`);
if (!only) {
  const gpuName = (peerInfo?.device ?? ctx.adapterInfo.description.split(':')[0] ?? ctx.adapterInfo.vendor ?? 'gpu')
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-|-$/g, '');
  const dir = fileURLToPath(new URL('./results/', import.meta.url));
  mkdirSync(dir, { recursive: true });
  const file = `${dir}chain-${gpuName}${quick ? '-quick' : ''}.md`;
  writeFileSync(file, report);
  console.log(`wrote ${file}`);
}
process.exit(0);
