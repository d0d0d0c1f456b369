/**
 * Automatic chain fusion (`setGpuOptions({ fuseChains })`) on and off, against CuPy: the chain
 * `v = mul(gauss(saxpy(2, x, y)), x)` in float32 as three awaited calls into preallocated device
 * outputs t, g, v — the calls users write — CHAINS chains back to back then one `synchronize()`,
 * per chain. In each round fusion off, fusion on and `fuse(fn)` into `out` are timed one after the
 * other (the order turning from round to round); ratios are the median of the per-round ratios.
 * CuPy's three ElementwiseKernels and `cupy.fuse` (bench/peers/fuse_peer.py) run in the same
 * command, timed the same way.
 *
 * Besides wall time per chain: host time (until the chains are recorded, before the wait), CPU
 * time of the process (`process.cpuUsage`: every thread, the driver's too), and the submissions
 * and dispatches per chain, counted on the device's queue and passes.
 *
 *   npx tsx bench/chain-fusion-ab.ts                 # 2^16, 2^24, 2^26; 7 rounds; with CuPy
 *   npx tsx bench/chain-fusion-ab.ts --quick         # lavapipe: 2^12 and 2^16, 5 rounds, no warm-up
 *   npx tsx bench/chain-fusion-ab.ts --sizes 65536 --rounds 9 --skip-peers
 *
 * Writes bench/results/chain-fusion-ab-<machine>[-quick].md. Goals (issue 22): fusion on ≤ 0.65×
 * CuPy's three calls at 2^26, ≤ 1.0× at 2^16.
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { type DeviceArray, deviceArray, fuse, shutdown, synchronize, toDevice, vectorize } from '../src/index.js';
import { chainFusionStats, fusedKernelsCompiled, setChainFusion } from '../src/targets/gpu/runtime/chain-fusion.js';
import { acquireDevice, describeAdapter, type GpuContext, setIdleReleaseMs } from '../src/targets/gpu/runtime/device.js';
import { describeMachine, machineMarkdown, machineSlug } from './lib/machine.js';
import { markdownTable } from './lib/markdown.js';
import { findPython } from './lib/python.js';
import { median } from './lib/timing.js';

const argv = process.argv.slice(2);
const quick = argv.includes('--quick');
const skipPeers = argv.includes('--skip-peers') || quick;
const flag = (name: string) => {
  const i = argv.indexOf(name);
  return i >= 0 ? argv[i + 1] : undefined;
};
const SIZES = (flag('--sizes') ?? (quick ? `${2 ** 12},${2 ** 16}` : `${2 ** 16},${2 ** 24},${2 ** 26}`)).split(',').map(Number);
const ROUNDS = Number(flag('--rounds') ?? (quick ? 5 : 7));
const WARMUP_MS = Number(flag('--warmup-ms') ?? (quick ? 0 : 1000));
/** Chains per sample: enough to amortise the wait at the end, few enough at large sizes. */
const chainsFor = (n: number) => Number(flag('--chains') ?? (n >= 2 ** 24 ? 20 : quick ? 50 : 200));
const PEERS_DIR = fileURLToPath(new URL('./peers/', import.meta.url));

const o = { target: 'gpu' } as const;
const saxpy = vectorize(['float32(float32, float32, float32)'], o)((a: number, x: number, y: number) => a * x + y);
const gauss = vectorize(['float32(float32)'], o)((t: number) => Math.exp(-t * t));
const mul = vectorize(['float32(float32, float32)'], o)((a: number, b: number) => a * b);
const fused = fuse(async (x, y) => mul(await gauss(await saxpy(2, x, y)), x));

/** Submissions and dispatches on the device so far (counted by wrapping its queue and passes). */
const counts = { submits: 0, dispatches: 0 };
function countWork(ctx: GpuContext): void {
  const device = ctx.device as unknown as Record<string, (...a: unknown[]) => unknown> & { queue: Record<string, (...a: unknown[]) => unknown> };
  const submit = device.queue.submit!.bind(device.queue);
  device.queue.submit = (...a) => (counts.submits++, submit(...a));
  const createEncoder = device.createCommandEncoder!.bind(device);
  device.createCommandEncoder = (...a) => {
    const encoder = createEncoder(...a) as Record<string, (...b: unknown[]) => unknown>;
    const beginPass = encoder.beginComputePass!.bind(encoder);
    encoder.beginComputePass = (...b) => {
      const pass = beginPass(...b) as Record<string, (...c: unknown[]) => unknown>;
      const dispatch = pass.dispatchWorkgroups!.bind(pass);
      pass.dispatchWorkgroups = (...c) => (counts.dispatches++, dispatch(...c));
      return pass;
    };
    return encoder;
  };
}

interface Sample {
  readonly wall: number;
  readonly host: number;
  readonly cpu: number;
  readonly submits: number;
  readonly dispatches: number;
}

/** `chains` chains back to back, then `synchronize()`: per chain. */
async function sample(chain: () => Promise<void>, chains: number): Promise<Sample> {
  const { submits, dispatches } = counts;
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  for (let k = 0; k < chains; k++) await chain();
  const t1 = performance.now();
  await synchronize();
  const t2 = performance.now();
  const cpu = process.cpuUsage(cpu0);
  return {
    wall: (t2 - t0) / 1e3 / chains,
    host: (t1 - t0) / 1e3 / chains,
    cpu: (cpu.user + cpu.system) / 1e6 / chains,
    submits: (counts.submits - submits) / chains,
    dispatches: (counts.dispatches - dispatches) / chains,
  };
}

type Mode = 'off' | 'on' | 'fuse';
const MODES: readonly Mode[] = ['off', 'on', 'fuse'];
const LABEL: Record<Mode, string> = {
  off: '3 awaited calls into `out`, fusion off',
  on: 'the same 3 calls, fusion on (fused automatically)',
  fuse: '`fuse(fn)` into `out` (writes v only)',
};

interface Row {
  readonly size: number;
  readonly contender: string;
  readonly seconds: number;
  readonly samples?: readonly Sample[];
  readonly ratio?: string;
  readonly check?: string;
}
const rows: Row[] = [];
const notes: string[] = [];

function bits(a: Float32Array, b: Float32Array): string {
  for (let i = 0; i < a.length; i++) if (!Object.is(a[i], b[i])) return `differs at ${i}: ${a[i]} vs ${b[i]}`;
  return 'bit-identical';
}

async function measure(n: number): Promise<{ off: number }> {
  const chains = chainsFor(n);
  const hx = Float32Array.from({ length: n }, (_, i) => Math.sin(i) * 3);
  const hy = Float32Array.from({ length: n }, (_, i) => Math.cos(i * 0.37));
  const x = await toDevice(hx);
  const y = await toDevice(hy);
  const [t, g, v] = (await Promise.all([0, 1, 2].map(() => deviceArray([n], 'float32')))) as DeviceArray[];
  const three = async () => {
    await saxpy(2, x, y, { out: t });
    await gauss(t!, { out: g });
    await mul(g!, x, { out: v });
  };
  const once = async () => {
    await fused(x, y, { out: v });
  };
  const run = (mode: Mode) => {
    setChainFusion(mode === 'on');
    return sample(mode === 'fuse' ? once : three, chains);
  };
  // Each mode compiled (the fused kernel compiles in the background the first time), then warm.
  for (const mode of MODES) {
    await run(mode);
    await fusedKernelsCompiled();
    await run(mode);
  }
  const warmEnd = performance.now() + WARMUP_MS;
  while (performance.now() < warmEnd) for (const mode of MODES) await run(mode);

  const fusedBefore = chainFusionStats.fusedDispatches;
  const samples: Record<Mode, Sample[]> = { off: [], on: [], fuse: [] };
  for (let r = 0; r < ROUNDS; r++) {
    const order = r % 2 === 0 ? MODES : [...MODES].reverse();
    for (const mode of order) samples[mode].push(await run(mode));
  }
  const fusedOn = chainFusionStats.fusedDispatches - fusedBefore;

  // The results, fusion off against on: the same bits in every output.
  const read = async () => Promise.all([t, g, v].map(async (a) => Float32Array.from((await a!.toHost()) as Float32Array)));
  setChainFusion(false);
  await three();
  const want = await read();
  setChainFusion(true);
  await three();
  const got = await read();
  setChainFusion(false);
  const check = [0, 1, 2].map((k) => bits(got[k]!, want[k]!)).find((c) => c !== 'bit-identical') ?? 'bit-identical (t, g, v)';

  const ratio = (a: Mode, b: Mode) => median(samples[a].map((s, r) => s.wall / samples[b][r]!.wall));
  const wall = (mode: Mode) => median(samples[mode].map((s) => s.wall));
  for (const mode of MODES) {
    rows.push({
      size: n,
      contender: LABEL[mode],
      seconds: wall(mode),
      samples: samples[mode],
      ...(mode === 'off' ? {} : { ratio: `${ratio(mode, 'off').toFixed(2)}× off` }),
      ...(mode === 'on' ? { check: fusedOn > 0 ? check : `NOT FUSED (${fusedOn} fused dispatches)` } : {}),
    });
  }
  console.log(`2^${Math.log2(n)}: off ${fmtMs(wall('off'))}, on ${fmtMs(wall('on'))} (${ratio('on', 'off').toFixed(2)}×), fuse ${fmtMs(wall('fuse'))}; ${check}`);
  for (const a of [x, y, t, g, v]) a!.destroy();
  return { off: wall('off') };
}

/** CuPy's three kernels and `cupy.fuse`, timed as ours (fuse_peer.py), and our fusion-on figure against them. */
function peers(n: number, ours: { on: number; off: number }): void {
  const python = findPython(['numpy', 'cupy'], ['numpy']);
  if (!python.ok) {
    notes.push(`CuPy at 2^${Math.log2(n)}: ${python.reason}.`);
    return;
  }
  const run = spawnSync(python.value, [`${PEERS_DIR}fuse_peer.py`, 'gpu', String(n), String(chainsFor(n)), String(ROUNDS), String(WARMUP_MS / 1e3)], {
    encoding: 'utf8',
    timeout: 300_000,
  });
  if (run.status !== 0) {
    notes.push(`CuPy at 2^${Math.log2(n)}: fuse_peer.py failed: ${(run.stderr || run.stdout).trim().split('\n').slice(-2).join(' ')}`);
    return;
  }
  const report = JSON.parse(run.stdout) as { cupy?: string; results: Record<string, { median_s: number; check?: string }>; skipped: Record<string, string> };
  for (const [peer, why] of Object.entries(report.skipped)) notes.push(`${peer} at 2^${Math.log2(n)}: ${why}`);
  const three = report.results['cupy: 3 kernels'];
  const cfuse = report.results['cupy.fuse'];
  const jit = report.results['jax.jit'];
  if (three) {
    rows.push({ size: n, contender: `CuPy ${report.cupy}: 3 kernels into \`out\``, seconds: three.median_s, check: three.check });
    const goal = n >= 2 ** 26 ? ' (goal ≤ 0.65×)' : n <= 2 ** 16 ? ' (goal ≤ 1.0×)' : '';
    rows.push({ size: n, contender: 'ours, fusion on ÷ CuPy 3 kernels', seconds: NaN, ratio: `${(ours.on / three.median_s).toFixed(2)}×${goal}` });
    rows.push({ size: n, contender: 'ours, fusion off ÷ CuPy 3 kernels', seconds: NaN, ratio: `${(ours.off / three.median_s).toFixed(2)}×` });
  }
  if (cfuse) rows.push({ size: n, contender: '`cupy.fuse` (writes v only)', seconds: cfuse.median_s, check: cfuse.check });
  if (jit) rows.push({ size: n, contender: 'JAX `jit` (writes v only)', seconds: jit.median_s, check: jit.check });
}

const fmtMs = (s: number) => (Number.isFinite(s) ? `${(s * 1e3).toFixed(4)} ms` : '—');
const fmtUs = (s: number) => `${(s * 1e6).toFixed(1)}`;

setIdleReleaseMs(Infinity);
const ctx = await acquireDevice();
countWork(ctx);
const software = ctx.adapterInfo.architecture === 'software' || /llvmpipe|lavapipe|swiftshader/i.test(`${ctx.adapterInfo.device} ${ctx.adapterInfo.description}`);
const gpuSummary = { summary: await describeAdapter(), ...(software ? {} : { hardwareName: ctx.adapterInfo.device || ctx.adapterInfo.description || ctx.adapterInfo.vendor }) };
for (const n of SIZES) {
  const start = rows.length;
  await measure(n);
  const on = rows[start + 1]!.seconds;
  const off = rows[start]!.seconds;
  if (!skipPeers) peers(n, { on, off });
}

const machine = describeMachine(gpuSummary);
// The commit of this checkout, not of a repository around a copy without .git (the GPU host runs copies).
const root = fileURLToPath(new URL('..', import.meta.url)).replace(/\/$/, '');
const top = spawnSync('git', ['rev-parse', '--show-toplevel'], { cwd: root, encoding: 'utf8' }).stdout?.trim();
const commit = top === root ? spawnSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: root, encoding: 'utf8' }).stdout.trim() : 'unknown (not a git checkout)';
const med = (r: Row, f: (s: Sample) => number, fmt: (x: number) => string) => (r.samples ? fmt(median(r.samples.map(f))) : '');
const table = markdownTable(
  [
    { header: 'size', align: 'right' }, { header: 'contender' }, { header: 'wall per chain', align: 'right' }, { header: 'ratio', align: 'right' },
    { header: 'host µs', align: 'right' }, { header: 'CPU µs', align: 'right' }, { header: 'submits', align: 'right' }, { header: 'dispatches', align: 'right' }, { header: 'check' },
  ],
  rows.map((r) => [
    `2^${Math.log2(r.size)}`, r.contender, fmtMs(r.seconds), r.ratio ?? '',
    med(r, (s) => s.host, fmtUs), med(r, (s) => s.cpu, fmtUs), med(r, (s) => s.submits, (x) => x.toFixed(3)), med(r, (s) => s.dispatches, (x) => x.toFixed(2)), r.check ?? '',
  ]),
);
const runsLine = rows.filter((r) => r.samples).map((r) => `- 2^${Math.log2(r.size)} ${r.contender}: ${r.samples!.map((s) => (s.wall * 1e3).toFixed(4)).join(', ')} ms`).join('\n');
const report =
  `# Automatic chain fusion on and off, against CuPy: v = mul(gauss(saxpy(2, x, y)), x), float32\n\n${machineMarkdown(machine)}\n` +
  `- command: \`npx tsx bench/chain-fusion-ab.ts ${argv.join(' ')}\` at commit ${commit}\n` +
  `- ${ROUNDS} rounds of off, on and \`fuse\` (order turning), after ${WARMUP_MS} ms of warm-up; per sample ${SIZES.map((n) => `${chainsFor(n)} chains at 2^${Math.log2(n)}`).join(', ')}, then one \`synchronize()\`; medians per chain. ` +
  `Host: until the chains are recorded; CPU: the process's user + system time (every thread); submits and dispatches counted on the device.\n\n${table}\n\n` +
  `Wall per chain, each round (ms):\n\n${runsLine}\n${notes.length ? `\n${notes.map((n) => `- ${n}`).join('\n')}\n` : ''}`;
console.log(`\n${report}`);
const dir = fileURLToPath(new URL('./results/', import.meta.url));
mkdirSync(dir, { recursive: true });
const file = `${dir}chain-fusion-ab-${machineSlug(machine)}${quick ? '-quick' : ''}.md`;
writeFileSync(file, report);
console.log(`wrote ${file}`);
await shutdown();
process.exit(0);
