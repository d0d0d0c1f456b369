/**
 * Kernels with helpers and local arrays on the gpu: the code generator's straight-line form
 * (helpers inlined, constant-trip loops unrolled, local arrays in scalars: codegen/unroll.ts)
 * against the same kernels generated without it, and CuPy's kernel of the same work, in one run.
 * Workloads (bench/workloads.ts): Lorenz-96 RK4 (a helper called four times, two local rows of
 * 40), Hermite `()->(n)` (a helper looping over its output row), batched 4×4 matmul (nested loops).
 *
 *   npx tsx bench/local-arrays.ts            # full sizes (the GPU machine)
 *   npx tsx bench/local-arrays.ts --quick    # small sizes, for lavapipe
 *
 * Per workload and form: wall per call of a chain of calls on device arrays into `out` ended by a
 * read-back of one element, and one call's kernel time (timestamp queries; CuPy: CUDA events),
 * medians over rounds that alternate the two forms, after GPU_WARMUP_MS of each (the clock up).
 * Both forms' outputs are compared bit for bit, and against the hand-written JS loop. Prints a
 * table and writes it to bench/results/local-arrays-<gpu>[-quick].md.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { type DeviceArray, deviceArray, toDevice, type Ufunc } from '../src/index.js';
import { acquireDevice, describeAdapter, setIdleReleaseMs } from '../src/targets/gpu/runtime/device.js';
import { timeKernels } from '../src/targets/gpu/runtime/kernel-timing.js';
import { setLoopUnrolling } from '../src/targets/gpu/codegen/unroll.js';
import { type PeerChain, runCupyChain } from './lib/cupy-chain.js';
import { markdownTable } from './lib/markdown.js';
import { median } from './lib/timing.js';
import { allocateLocal, type HostArray, workloadNamed, type WorkloadName } from './workloads.js';

const argv = process.argv.slice(2);
const quick = argv.includes('--quick');
const ROUNDS = quick ? 2 : 3;
const REPS = quick ? 3 : 5;
const CALLS = quick ? 5 : 20;
const GPU_WARMUP_MS = quick ? 0 : 1000;
const CASES: { workload: WorkloadName; size: number; title: string }[] = [
  { workload: 'lorenz96', size: quick ? 2_000 : 100_000, title: 'Lorenz-96 RK4 step, 40 float32' },
  { workload: 'hermite', size: quick ? 1 << 14 : 4_194_304, title: 'Hermite `()->(n)`, n = 16' },
  { workload: 'matmul4x4', size: quick ? 1 << 14 : 1_000_000, title: 'matmul 4×4 batch' },
];

setIdleReleaseMs(Infinity);
const ctx = await acquireDevice();
const adapter = await describeAdapter();
console.log(`gpu: ${adapter}${quick ? ' (--quick sizes)' : ''}`);

interface Form {
  readonly ufunc: Ufunc;
  readonly walls: number[];
  readonly kernels: number[];
  output?: Float32Array;
}

/** Measures one round of one form: its chains' wall per call and kernel times, into `form`. */
async function round(form: Form, inputs: readonly (number | DeviceArray)[], out: DeviceArray): Promise<void> {
  const call = () => form.ufunc(...inputs, { out });
  const chain = async () => {
    const t0 = performance.now();
    for (let k = 0; k < CALLS; k++) await call();
    await out.view([1], [1], 0).toHost();
    return (performance.now() - t0) / CALLS;
  };
  await chain();
  form.output ??= (await out.toHost()) as Float32Array;
  const warmEnd = performance.now() + GPU_WARMUP_MS;
  while (performance.now() < warmEnd) await chain();
  for (let r = 0; r < REPS; r++) form.walls.push(await chain());
  if (ctx.hasTimestamps) {
    const { kernelMs } = await timeKernels(async () => {
      for (let r = 0; r < REPS; r++) {
        await call();
        await out.view([1], [1], 0).toHost();
      }
    });
    form.kernels.push(...kernelMs);
  }
}

function cupy(workload: WorkloadName, size: number): PeerChain {
  if (argv.includes('--skip-peers')) return { skipped: 'skipped (--skip-peers)' };
  return runCupyChain(`${workload}-out`, size, CALLS, REPS * ROUNDS, GPU_WARMUP_MS / 1e3);
}

function verdict(got: Float32Array, expected: Float32Array): string {
  for (let i = 0; i < expected.length; i++) {
    const e = expected[i]!;
    if (!(Math.abs(got[i]! - e) <= 1e-4 * Math.max(1, Math.abs(e)))) return `wrong at ${i}: ${got[i]} instead of ${e}`;
  }
  return 'ok';
}

const fmt = (ms: number | undefined) => (ms === undefined || Number.isNaN(ms) ? '—' : ms >= 1 ? `${ms.toFixed(2)} ms` : ms >= 0.1 ? `${ms.toFixed(3)} ms` : `${(ms * 1e3).toFixed(1)} µs`);
const rows: string[][] = [];
let peerDevice = '';
let peerGpu: string | undefined;
for (const c of CASES) {
  const workload = workloadNamed(c.workload);
  const problem = workload.makeProblem(c.size, 'float32', allocateLocal);
  const inputs = await Promise.all(problem.inputs.map((x) => (typeof x === 'number' ? x : toDevice({ data: x.data as Float32Array, shape: x.shape }))));
  const out = await deviceArray(problem.out.shape, 'float32');
  // Each form is its own ufunc (pipelines are cached per kernel), generated with the switch as set.
  const forms = [false, true].map((on): Form => {
    setLoopUnrolling(on);
    return { ufunc: workload.makeUfunc('gpu', 'float32'), walls: [], kernels: [] };
  });
  for (let r = 0; r < ROUNDS; r++) {
    for (const [k, form] of forms.entries()) {
      setLoopUnrolling(k === 1); // the first call of a round-0 form compiles its pipeline
      await round(form, inputs, out);
    }
  }
  setLoopUnrolling(true);
  workload.runLoop(problem);
  const expected = (problem.out as HostArray).data as Float32Array;
  const [before, after] = forms as [Form, Form];
  const same = before.output!.every((v, i) => Object.is(v, after.output![i]));
  const peer = cupy(c.workload, c.size);
  if (peer.device) {
    peerDevice = `CuPy ${peer.cupy} on ${peer.device}`;
    peerGpu = peer.device;
  }
  const [wallBefore, wallAfter] = [median(before.walls), median(after.walls)];
  const peerWall = peer.wall_per_call_s === undefined ? undefined : peer.wall_per_call_s * 1e3;
  const row = [
    `${c.title}, ${c.size.toLocaleString('en')}`,
    fmt(wallBefore), fmt(before.kernels.length ? median(before.kernels) : undefined),
    fmt(wallAfter), fmt(after.kernels.length ? median(after.kernels) : undefined),
    fmt(peerWall), fmt(peer.kernel_s === undefined ? undefined : peer.kernel_s * 1e3),
    `${(wallAfter / wallBefore).toFixed(2)}×`,
    peerWall === undefined ? (peer.skipped ?? '—') : `${(wallAfter / peerWall).toFixed(2)}×`,
    `${verdict(after.output!, expected)}; ${same ? 'bit-identical to the loop form' : 'differs from the loop form'}`,
  ];
  rows.push(row);
  console.log(row.join(' | '));
  for (const x of inputs) if (typeof x !== 'number') x.destroy();
  out.destroy();
}

const report = [
  '# Kernels with helpers and local arrays: straight-line code against loops, and CuPy, in one run',
  '',
  `- adapter: ${adapter}${peerDevice ? `; ${peerDevice}` : ''}`,
  `- node ${process.version}, ${new Date().toISOString().slice(0, 10)}${quick ? ', --quick sizes' : ''}`,
  `- wall: per call of a chain of ${CALLS} calls into \`out\` ended by a one-element read-back; kernel: timestamp queries (CuPy: CUDA events); medians of ${ROUNDS} alternating rounds × ${REPS} after ${GPU_WARMUP_MS} ms of each form`,
  '- loops: the generator without codegen/unroll.ts (`setLoopUnrolling(false)`); straight: with it (the default)',
  '- reproduce: `npx tsx bench/local-arrays.ts`',
  '',
  markdownTable(
    [
      { header: 'workload' },
      ...['loops wall', 'loops kernel', 'straight wall', 'straight kernel', 'CuPy wall', 'CuPy kernel', 'straight ÷ loops', 'straight ÷ CuPy'].map((header) => ({ header, align: 'right' as const })),
      { header: 'check' },
    ],
    rows,
  ),
  '',
].join('\n');
const slug = (peerGpu ?? (ctx.adapterInfo.description.split(':')[0] || ctx.adapterInfo.vendor || 'gpu'))
  .toLowerCase()
  .replace(/[^a-z0-9]+/g, '-')
  .replace(/^-|-$/g, '');
const dir = fileURLToPath(new URL('./results/', import.meta.url));
mkdirSync(dir, { recursive: true });
const file = `${dir}local-arrays-${slug}${quick ? '-quick' : ''}.md`;
writeFileSync(file, report);
console.log(`\n${report}\nwritten to ${file}`);
process.exit(0);
