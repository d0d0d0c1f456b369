/**
 * `Math.random()` in kernels (docs/random.md): n float32 uniforms, and Monte Carlo π, on every
 * target, against what users do without it — a JS loop of `Math.random()` on the calling thread —
 * and Philox from NumPy (cpu) and CuPy (gpu) in the same run.
 *
 *   npx tsx bench/random.ts                  # 2^22 numbers on cpu/parallel, 2^26 on the gpu
 *   npx tsx bench/random.ts --quick          # 2^18 everywhere (lavapipe, a busy 2-core VM)
 *   npx tsx bench/random.ts --targets cpu,parallel --skip-peers
 *
 * Each ufunc call is checked against the stream's definition (compiler/random-stream.ts) on its
 * first elements. cpu/parallel: ordinary Float32Arrays into a preallocated `out`; gpu: device
 * arrays into a device `out`, each call awaited and synchronised. Medians of timed samples after
 * warm-up (bench/lib/timing.ts). Writes bench/results/random-<machine>[-quick].md.
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { availableTargets, type DeviceArray, deviceArray, shutdown, synchronize, type TargetName, toDevice, vectorize } from '../src/index.js';
import { drawFloat32, keyOfSeed } from '../src/compiler/random-stream.js';
import { acquireDevice, describeAdapter, setIdleReleaseMs } from '../src/targets/gpu/runtime/device.js';
import { quarterCircleHits } from '../examples/monte-carlo-pi.js';
import { describeMachine, machineMarkdown, machineSlug } from './lib/machine.js';
import { markdownTable } from './lib/markdown.js';
import { findPython } from './lib/python.js';
import { timeCalls } from './lib/timing.js';

const argv = process.argv.slice(2);
const quick = argv.includes('--quick');
const skipPeers = argv.includes('--skip-peers');
const flag = (name: string) => {
  const i = argv.indexOf(name);
  return i >= 0 ? argv[i + 1] : undefined;
};
const SAMPLES = Number(flag('--samples') ?? (quick ? 5 : 7));
const HOST_N = Number(flag('--host-size') ?? (quick ? 2 ** 18 : 2 ** 22));
const GPU_N = Number(flag('--gpu-size') ?? (quick ? 2 ** 18 : 2 ** 26));
const PI_POINTS = 1024; // per loop iteration of the π kernel
const available = await availableTargets();
const targets = (flag('--targets')?.split(',') as TargetName[] | undefined) ?? available;
const PEERS_DIR = fileURLToPath(new URL('./peers/', import.meta.url));
const SEED = 2026;
const KEY = keyOfSeed(SEED);

interface Row { target: string; n: number; contender: string; seconds: number; against?: number; check?: string }
const rows: Row[] = [];
const notes: string[] = [];

const uniformOn = (target: TargetName) => vectorize(['float32(float32)'], { target })((_x: number) => Math.fround(Math.random()));

/** Whether the first elements are the stream's (every target must give them). */
function checkStream(out: Float32Array): string {
  for (let i = 0; i < Math.min(out.length, 4096); i++) if (out[i] !== drawFloat32(KEY[0], KEY[1], i, 0)) return `element ${i} is not the stream's`;
  return 'the stream';
}

const timing = (call: () => unknown, settle?: () => Promise<unknown>) => timeCalls(call, { samples: SAMPLES, ...(settle ? { settle } : {}) }).then((t) => t.medianSeconds);

async function jsLoop(n: number): Promise<number> {
  const out = new Float32Array(n);
  const seconds = await timing(() => {
    for (let i = 0; i < n; i++) out[i] = Math.random();
  });
  rows.push({ target: 'calling thread', n, contender: 'JS loop: `out[i] = Math.random()`', seconds });
  return seconds;
}

async function hostTarget(target: 'cpu' | 'parallel', loop: number): Promise<void> {
  const uniform = uniformOn(target);
  const x = new Float32Array(HOST_N);
  const out = new Float32Array(HOST_N);
  await uniform(x, { out, seed: SEED });
  const check = checkStream(out);
  const seconds = await timing(() => uniform(x, { out, seed: SEED }));
  rows.push({ target, n: HOST_N, contender: 'ufunc `Math.fround(Math.random())` into `out`', seconds, against: seconds / loop, check });
  await monteCarlo(target, HOST_N);
}

async function monteCarlo(target: TargetName, points: number): Promise<void> {
  const hits = quarterCircleHits(target);
  const batches = new Int32Array(Math.max(1, points / PI_POINTS)).fill(PI_POINTS);
  const counts = (await hits(batches, { seed: SEED })) as Int32Array;
  const pi = (4 * counts.reduce((s, c) => s + c, 0)) / (batches.length * PI_POINTS);
  const seconds = await timing(() => hits(batches, { seed: SEED }));
  rows.push({ target, n: batches.length * PI_POINTS, contender: `Monte Carlo π (examples/monte-carlo-pi.ts), ${PI_POINTS} points per iteration`, seconds, check: `π ≈ ${pi.toFixed(4)}` });
}

async function gpuTarget(): Promise<void> {
  const uniform = uniformOn('gpu');
  const x = await toDevice(new Float32Array(GPU_N));
  const out = await deviceArray([GPU_N], 'float32');
  await uniform(x, { out, seed: SEED });
  const check = checkStream((await out.view([4096], [1], 0).toHost()) as Float32Array);
  const seconds = await timing(() => uniform(x, { out, seed: SEED }), () => synchronize());
  rows.push({ target: 'gpu', n: GPU_N, contender: 'ufunc on device arrays into `out`', seconds, check });
  for (const d of [x, out] as DeviceArray[]) d.destroy();
  await monteCarlo('gpu', GPU_N);
}

function peer(which: 'numpy' | 'cupy', n: number, target: string, loop?: number): void {
  const python = findPython(which === 'numpy' ? ['numpy'] : ['cupy']);
  if (!python.ok) return void notes.push(`${which}: ${python.reason}.`);
  const run = spawnSync(python.value, [`${PEERS_DIR}random_peer.py`, which, String(n), String(SAMPLES)], { encoding: 'utf8', timeout: 600_000 });
  if (run.status !== 0) return void notes.push(`${which}: random_peer.py failed: ${(run.stderr || run.stdout).trim().split('\n').slice(-1)[0]}`);
  const report = JSON.parse(run.stdout) as { version: string; results: Record<string, { median_s: number }> };
  for (const [contender, r] of Object.entries(report.results)) {
    rows.push({ target, n, contender: `${contender} (${which} ${report.version})`, seconds: r.median_s, ...(loop ? { against: r.median_s / loop } : {}) });
  }
}

let gpuSummary = { summary: 'not used' } as { summary: string; hardwareName?: string };
const loop = await jsLoop(HOST_N);
for (const target of targets) if (target === 'cpu' || target === 'parallel') await hostTarget(target, loop);
if (!skipPeers) peer('numpy', HOST_N, 'cpu (NumPy)', loop);
if (targets.includes('gpu') && available.includes('gpu')) {
  setIdleReleaseMs(Infinity);
  const { adapterInfo } = await acquireDevice();
  const software = adapterInfo.architecture === 'software' || /llvmpipe|lavapipe|swiftshader/i.test(`${adapterInfo.device} ${adapterInfo.description}`);
  gpuSummary = { summary: await describeAdapter(), ...(software ? {} : { hardwareName: adapterInfo.device || adapterInfo.description || adapterInfo.vendor }) };
  await gpuTarget();
  if (!skipPeers) peer('cupy', GPU_N, 'gpu (CuPy)');
}

const machine = describeMachine(gpuSummary);
const fmt = (s: number) => (s >= 0.1 ? `${(s * 1e3).toFixed(0)} ms` : `${(s * 1e3).toFixed(3)} ms`);
const table = markdownTable(
  [{ header: 'target' }, { header: 'numbers', align: 'right' }, { header: 'contender' }, { header: 'median', align: 'right' }, { header: 'per number', align: 'right' }, { header: 'vs JS loop', align: 'right' }, { header: 'check' }],
  rows.map((r) => [r.target, `2^${Math.log2(r.n).toFixed(0)}`, r.contender, fmt(r.seconds), `${((r.seconds / r.n) * 1e9).toFixed(2)} ns`, r.against === undefined ? '' : `${r.against.toFixed(2)}×`, r.check ?? '']),
);
const report = `# \`Math.random()\` in kernels: float32 uniforms and Monte Carlo π\n\n${machineMarkdown(machine)}\n- command: \`npx tsx bench/random.ts ${argv.join(' ')}\`\n- ${SAMPLES} samples, median; "vs JS loop": time ÷ the JS loop's (below 1 is faster); Monte Carlo π draws 2 numbers per point\n\n${table}\n\n${notes.map((n) => `- ${n}`).join('\n')}\n`;
console.log(`\n${report}`);
const dir = fileURLToPath(new URL('./results/', import.meta.url));
mkdirSync(dir, { recursive: true });
const file = `${dir}random-${machineSlug(machine)}${quick ? '-quick' : ''}.md`;
writeFileSync(file, report);
console.log(`wrote ${file}`);
await shutdown();
process.exit(0);
