/**
 * The chain `v = mul(gauss(saxpy(2, x, y)), x)` in float32 on every target: three separate calls,
 * the same calls fused by `fuse`, and (gpu) the three calls fused automatically, against Numba (three `@vectorize` calls vs one `@njit` loop) on
 * the CPU and CuPy (three kernels vs `cupy.fuse`) and JAX (`jit`) on the GPU, in the same run.
 * Then two chains beyond element-wise calls, separate calls against `fuse` (and the peers):
 * a gufunc chain `mul(normalize(x), w)` (`(n)->(n)` rows of 256, then element-wise over them) and
 * a chain ending in a reduce, `add.reduce(gauss(saxpy(2, x, y)), { axis })` over rows of 4,096
 * (`axis: 1`) and over everything (`axis: null`, the chunked fold).
 *
 *   npx tsx bench/fuse.ts                    # full sizes: 2^23 on cpu/parallel, 2^26 and 2^16 on the gpu
 *   npx tsx bench/fuse.ts --quick            # small sizes (lavapipe, a busy 2-core VM)
 *   npx tsx bench/fuse.ts --targets cpu,parallel --reps 9 --skip-peers
 *
 * cpu and parallel: ordinary Float32Arrays, the calls as users write them (`await` each, fresh
 * outputs) and into preallocated outputs; median of REPS timed calls after two warm-up calls.
 * gpu: device arrays, CHAINS chains back to back into preallocated outputs ended by one read-back
 * of one element (as bench/chain.ts), after WARMUP_MS of the same work; the peers do the same
 * (peers/fuse_peer.py). Each fused result is checked bit for bit against the separate calls
 * (cpu/parallel) or within 4 float32 ulps (gpu). Writes bench/results/fuse-<machine>[-quick].md.
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { availableTargets, type DeviceArray, deviceArray, fuse, guvectorize, shutdown, type TargetName, toDevice, vectorize } from '../src/index.js';
import { acquireDevice, describeAdapter, setIdleReleaseMs } from '../src/targets/gpu/runtime/device.js';
import { chainFusionStats, fusedKernelsCompiled, setChainFusion } from '../src/targets/gpu/runtime/chain-fusion.js';
import { describeMachine, machineMarkdown, machineSlug } from './lib/machine.js';
import { markdownTable } from './lib/markdown.js';
import { findPython } from './lib/python.js';
import { median } from './lib/timing.js';

const argv = process.argv.slice(2);
const quick = argv.includes('--quick');
const skipPeers = argv.includes('--skip-peers');
const flag = (name: string) => {
  const i = argv.indexOf(name);
  return i >= 0 ? argv[i + 1] : undefined;
};
const REPS = Number(flag('--reps') ?? (quick ? 5 : 7));
const HOST_N = Number(flag('--host-size') ?? (quick ? 2 ** 20 : 2 ** 23));
const GPU_SIZES = (flag('--gpu-sizes') ?? (quick ? `${2 ** 18},${2 ** 16}` : `${2 ** 26},${2 ** 16}`)).split(',').map(Number);
const GPU_WARMUP_MS = Number(flag('--warmup-ms') ?? (quick ? 0 : 1000));
const available = await availableTargets();
const targets = (flag('--targets')?.split(',') as TargetName[] | undefined) ?? available;
const PEERS_DIR = fileURLToPath(new URL('./peers/', import.meta.url));
/** Which chains to run: `arith` (the three-call chain), `gufunc`, `reduce`. */
const CHAINS = new Set((flag('--chains') ?? 'arith,gufunc,reduce').split(','));
/** Core sizes of the gufunc and reduce chains: rows of 256 (normalize) and of 4,096 (the reduce over axis 1). */
const ROW = 256;
const REDUCE_ROW = 4096;

/** The three ufuncs of the chain on one target, the chain fused, and the chain as separate calls. */
function chainOn(target: TargetName) {
  const saxpy = vectorize(['float32(float32, float32, float32)'], { target })((a: number, x: number, y: number) => a * x + y);
  const gauss = vectorize(['float32(float32)'], { target })((t: number) => Math.exp(-t * t));
  const mul = vectorize(['float32(float32, float32)'], { target })((a: number, b: number) => a * b);
  const fused = fuse(async (x, y) => mul(await gauss(await saxpy(2, x, y)), x));
  return { saxpy, gauss, mul, fused };
}

function inputs(n: number): { x: Float32Array; y: Float32Array } {
  const x = new Float32Array(n);
  const y = new Float32Array(n);
  for (let i = 0; i < n; i++) {
    x[i] = Math.sin(i) * 3;
    y[i] = Math.cos(i * 0.37);
  }
  return { x, y };
}

/** 'ok', or the first element where the fused result differs (bits on host targets, 4 ulps on the gpu). */
function compare(got: Float32Array, want: Float32Array, exact: boolean): string {
  for (let i = 0; i < want.length; i++) {
    const g = got[i]!;
    const w = want[i]!;
    const ok = exact ? Object.is(g, w) : Object.is(g, w) || Math.abs(g - w) <= 4 * 2 ** -23 * Math.max(Math.abs(w), 2 ** -126);
    if (!ok) return `differs at ${i}: ${g} vs ${w}`;
  }
  return exact ? 'bit-identical' : 'within 4 ulps';
}

const fmtMs = (s: number) => (Number.isFinite(s) ? `${(s * 1e3).toFixed(s < 1e-3 ? 4 : 2)} ms` : '—');
const fmtRatio = (r: number) => (Number.isFinite(r) ? `${r.toFixed(2)}×` : '—');
const pow2 = (n: number) => (Number.isInteger(Math.log2(n)) ? `2^${Math.log2(n)}` : n.toLocaleString('en'));

interface Row {
  readonly target: string;
  readonly size: number;
  readonly contender: string;
  readonly seconds: number;
  /** The row this one is divided by, and the quotient. */
  readonly against?: string;
  readonly ratio?: number;
  readonly check?: string;
}
const rows: Row[] = [];
const notes: string[] = [];

// ---------------------------------------------------------------- cpu and parallel

async function hostTarget(target: 'cpu' | 'parallel'): Promise<void> {
  const { saxpy, gauss, mul, fused } = chainOn(target);
  const { x, y } = inputs(HOST_N);
  const t = new Float32Array(HOST_N);
  const g = new Float32Array(HOST_N);
  const v = new Float32Array(HOST_N);
  const three = async () => mul(await gauss(await saxpy(2, x, y)), x);
  const threeOut = async () => {
    await saxpy(2, x, y, { out: t });
    await gauss(t, { out: g });
    return mul(g, x, { out: v });
  };
  const check = compare((await fused(x, y)) as Float32Array, (await three()) as Float32Array, true);
  const fusedCall = () => fused(x, y);
  const fusedOut = () => fused(x, y, { out: v });
  const [a, b, ab] = await interleaved(three, fusedCall);
  const [c, d, cd] = await interleaved(threeOut, fusedOut);
  rows.push({ target, size: HOST_N, contender: '3 calls (await each, fresh outputs)', seconds: a });
  rows.push({ target, size: HOST_N, contender: '`fuse`', seconds: b, against: '3 calls', ratio: ab, check });
  rows.push({ target, size: HOST_N, contender: '3 calls into `out`', seconds: c });
  rows.push({ target, size: HOST_N, contender: '`fuse` into `out`', seconds: d, against: '3 calls into `out`', ratio: cd, check });
  console.log(`${target}: 3 calls ${fmtMs(a)}, fuse ${fmtMs(b)} (${fmtRatio(ab)}); into out ${fmtMs(c)} vs ${fmtMs(d)} (${fmtRatio(cd)}); ${check}`);
  console.log(`  ${(await fused.explain(x, y)).split('\n').pop()}`);
}

/** The gufunc chain and the reduce chain's ufuncs on a target. */
function moreOn(target: TargetName) {
  const normalize = guvectorize(['void(float32[:], float32[:])'], '(n)->(n)', { target })(function normalize(x: Float32Array, out: Float32Array) {
    let s = 0;
    for (let i = 0; i < x.length; i++) s += x[i]! * x[i]!;
    const r = Math.sqrt(s);
    for (let i = 0; i < x.length; i++) out[i] = x[i]! / r;
  });
  const add = vectorize(['float32(float32, float32)'], { target, associative: true, identity: 0 })((a: number, b: number) => a + b);
  const { saxpy, gauss, mul } = chainOn(target);
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  const gufuncChain = async (x: any, w: any) => mul(await normalize(x), w);
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  const reduceChain = (axis: number | null) => async (x: any, y: any) => add.reduce(await gauss(await saxpy(2, x, y)), { axis });
  return { gufuncChain, reduceChain };
}

const values = (r: unknown): Float32Array => (typeof r === 'number' ? Float32Array.of(r) : ArrayBuffer.isView(r) ? (r as Float32Array) : ((r as { data: Float32Array }).data));

/** The gufunc chain and the reduce chain on a host target: separate calls (fresh outputs, `await` each) against `fuse`. */
async function hostMore(target: 'cpu' | 'parallel'): Promise<void> {
  const { gufuncChain, reduceChain } = moreOn(target);
  const { x, y } = inputs(HOST_N);
  const matrix = (data: Float32Array, cols: number) => ({ data, shape: [HOST_N / cols, cols] });
  if (CHAINS.has('gufunc')) {
    const xm = matrix(x, ROW);
    const w = y.subarray(0, ROW);
    const fused = fuse(gufuncChain);
    const check = compare(values(await fused(xm, w)), values(await gufuncChain(xm, w)), true);
    const [a, b, ab] = await interleaved(() => gufuncChain(xm, w), () => fused(xm, w));
    rows.push({ target, size: HOST_N, contender: `gufunc chain \`mul(normalize(x), w)\`, rows of ${ROW}: 2 calls`, seconds: a });
    rows.push({ target, size: HOST_N, contender: 'gufunc chain: `fuse`', seconds: b, against: '2 calls', ratio: ab, check });
    console.log(`${target} gufunc chain: 2 calls ${fmtMs(a)}, fuse ${fmtMs(b)} (${fmtRatio(ab)}); ${check}`);
  }
  if (CHAINS.has('reduce')) {
    for (const axis of [1, null]) {
      const xm = matrix(x, REDUCE_ROW);
      const ym = matrix(y, REDUCE_ROW);
      const separate = reduceChain(axis);
      const fused = fuse(separate);
      const check = compare(values(await fused(xm, ym)), values(await separate(xm, ym)), true);
      const [a, b, ab] = await interleaved(() => separate(xm, ym), () => fused(xm, ym));
      const what = axis === null ? 'everything (`axis: null`)' : `rows of ${REDUCE_ROW} (\`axis: 1\`)`;
      rows.push({ target, size: HOST_N, contender: `\`add.reduce(gauss(saxpy(2, x, y)))\` over ${what}: 2 calls + reduce`, seconds: a });
      rows.push({ target, size: HOST_N, contender: 'the same, `fuse` (reduce folded in the kernel)', seconds: b, against: 'separate', ratio: ab, check });
      console.log(`${target} reduce chain, axis ${axis}: separate ${fmtMs(a)}, fuse ${fmtMs(b)} (${fmtRatio(ab)}); ${check}`);
    }
  }
}

/**
 * A and B timed in alternation, one call each per round after two warm-up rounds: on a shared
 * machine, load that comes and goes hits both alike. Returns the medians of A and of B and the
 * median of the per-round ratios B/A.
 */
async function interleaved(a: () => Promise<unknown>, b: () => Promise<unknown>): Promise<[number, number, number]> {
  const once = async (call: () => Promise<unknown>) => {
    const t0 = performance.now();
    await call();
    return (performance.now() - t0) / 1e3;
  };
  for (let w = 0; w < 2; w++) {
    await a();
    await b();
  }
  const as: number[] = [];
  const bs: number[] = [];
  for (let r = 0; r < REPS; r++) {
    as.push(await once(a));
    bs.push(await once(b));
  }
  return [median(as), median(bs), median(as.map((t, r) => bs[r]! / t))];
}

function numbaPeer(): void {
  const python = findPython(['numpy', 'numba']);
  if (!python.ok) {
    notes.push(`Numba: ${python.reason}.`);
    return;
  }
  const more = CHAINS.has('gufunc') || CHAINS.has('reduce') ? [String(ROW), String(REDUCE_ROW)] : [];
  const run = spawnSync(python.value, [`${PEERS_DIR}fuse_peer.py`, 'numba', String(HOST_N), String(REPS), ...more], { encoding: 'utf8', timeout: 600_000 });
  if (run.status !== 0) {
    notes.push(`Numba: fuse_peer.py failed: ${(run.stderr || run.stdout).trim().split('\n').slice(-2).join(' ')}`);
    return;
  }
  const report = JSON.parse(run.stdout) as { numba: string; threads: number; results: Record<string, { median_s: number; check: string }> };
  notes.push(`Numba ${report.numba}, ${report.threads} threads.`);
  for (const target of ['cpu', 'parallel'] as const) {
    for (const [name, r] of Object.entries(report.results)) {
      if (name.startsWith(`${target}: more: `)) rows.push({ target, size: HOST_N, contender: `Numba: ${name.slice(target.length + 8)}`, seconds: r.median_s, check: r.check });
    }
    const three = report.results[`${target}: vectorize x3`]!;
    const loop = report.results[`${target}: njit loop`]!;
    rows.push({ target, size: HOST_N, contender: `Numba: \`@vectorize\` ×3 (target '${target}')`, seconds: three.median_s, check: three.check });
    rows.push({ target, size: HOST_N, contender: `Numba: one \`@njit\`${target === 'parallel' ? ' `prange`' : ''} loop`, seconds: loop.median_s, against: 'Numba ×3', ratio: loop.median_s / three.median_s, check: loop.check });
  }
}

// ---------------------------------------------------------------- gpu

async function gpuTarget(n: number, chains: number): Promise<void> {
  const { saxpy, gauss, mul, fused } = chainOn('gpu');
  const host = inputs(n);
  const x = await toDevice(host.x);
  const y = await toDevice(host.y);
  const [t, g, v] = await Promise.all([0, 1, 2].map(() => deviceArray([n], 'float32')));
  const threeAwaited = async () => {
    await saxpy(2, x, y, { out: t });
    await gauss(t, { out: g });
    await mul(g, x, { out: v });
  };
  const fusedOut = async () => {
    await fused(x, y, { out: v });
  };
  const readOne = () => v!.view([1], [1], 0).toHost();
  const measure = async (chain: () => Promise<void>): Promise<number> => {
    const once = async () => {
      const t0 = performance.now();
      for (let k = 0; k < chains; k++) await chain();
      await readOne();
      return (performance.now() - t0) / 1e3 / chains;
    };
    await once();
    await fusedKernelsCompiled(); // a fused kernel compiles in the background the first time
    await once();
    return medianAfterWarmup(once);
  };
  setChainFusion(false);
  await threeAwaited();
  const want = (await v!.toHost()) as Float32Array;
  await fusedOut();
  const check = compare((await v!.toHost()) as Float32Array, want, false);
  const a = await measure(threeAwaited);
  setChainFusion(true);
  const fusedBefore = chainFusionStats.fusedDispatches;
  const c = await measure(threeAwaited);
  const autoFused = chainFusionStats.fusedDispatches > fusedBefore;
  await threeAwaited();
  const autoCheck = compare((await v!.toHost()) as Float32Array, want, false);
  const b = await measure(fusedOut);
  rows.push({ target: 'gpu', size: n, contender: '3 calls into `out` (await each), fusion off', seconds: a });
  rows.push({ target: 'gpu', size: n, contender: 'the same 3 calls, fused automatically', seconds: c, against: '3 calls', ratio: c / a, check: autoFused ? autoCheck : `not fused (${autoCheck})` });
  rows.push({ target: 'gpu', size: n, contender: '`fuse` into `out`', seconds: b, against: '3 calls', ratio: b / a, check });
  console.log(`gpu ${pow2(n)}: 3 calls ${fmtMs(a)}, automatic ${fmtMs(c)} (${fmtRatio(c / a)}), fuse ${fmtMs(b)} (${fmtRatio(b / a)}); ${check}`);
  for (const d of [x, y, t, g, v] as DeviceArray[]) d.destroy();
  if (!skipPeers) gpuPeers(n, chains, a, b, c);
}

/** Runs `once` for GPU_WARMUP_MS, then REPS times: the median of those. */
async function medianAfterWarmup(once: () => Promise<number>): Promise<number> {
  const warmEnd = performance.now() + GPU_WARMUP_MS;
  while (performance.now() < warmEnd) await once();
  const runs: number[] = [];
  for (let r = 0; r < REPS; r++) runs.push(await once());
  return median(runs);
}

/** The gufunc chain and the reduce chain on the gpu, on device arrays: separate calls against `fuse`, chains back to back ended by one read-back. */
async function gpuMore(n: number, chains: number): Promise<void> {
  const { gufuncChain, reduceChain } = moreOn('gpu');
  const host = inputs(n);
  const x = await toDevice({ data: host.x, shape: [n / ROW, ROW] });
  const w = await toDevice(host.y.slice(0, ROW));
  const xr = await toDevice({ data: host.x, shape: [n / REDUCE_ROW, REDUCE_ROW] });
  const yr = await toDevice({ data: host.y, shape: [n / REDUCE_ROW, REDUCE_ROW] });
  const time = async (chain: () => Promise<unknown>): Promise<number> => {
    const once = async () => {
      const t0 = performance.now();
      let last: unknown;
      for (let k = 0; k < chains; k++) {
        (last as DeviceArray | undefined)?.destroy?.();
        last = await chain();
      }
      const r = last as DeviceArray;
      await r.view([1], [1], 0).toHost();
      r.destroy();
      return (performance.now() - t0) / 1e3 / chains;
    };
    await once();
    await once();
    return medianAfterWarmup(once);
  };
  const hostOf = async (r: unknown) => {
    const v = values(await (r as DeviceArray).toHost());
    (r as DeviceArray).destroy();
    return v;
  };
  if (CHAINS.has('gufunc')) {
    const fused = fuse(gufuncChain);
    const check = compare(await hostOf(await fused(x, w)), await hostOf(await gufuncChain(x, w)), false);
    const a = await time(() => gufuncChain(x, w));
    const b = await time(() => fused(x, w));
    rows.push({ target: 'gpu', size: n, contender: `gufunc chain \`mul(normalize(x), w)\`, rows of ${ROW}: 2 calls`, seconds: a });
    rows.push({ target: 'gpu', size: n, contender: 'gufunc chain: `fuse`', seconds: b, against: '2 calls', ratio: b / a, check });
    console.log(`gpu ${pow2(n)} gufunc chain: 2 calls ${fmtMs(a)}, fuse ${fmtMs(b)} (${fmtRatio(b / a)}); ${check}`);
  }
  if (CHAINS.has('reduce')) {
    const separate = reduceChain(1);
    const fused = fuse(separate);
    const want = await hostOf(await separate(xr, yr));
    const got = await hostOf(await fused(xr, yr));
    // The separate reduce of device arrays folds as a tree, the fused one in the fold kernels' order: the float32 summation bound.
    const bound = 2 * REDUCE_ROW * 2 ** -24 * REDUCE_ROW;
    const worst = want.reduce((m, v, i) => Math.max(m, Math.abs(v - got[i]!)), 0);
    const check = worst <= bound ? `within the summation bound (max diff ${worst.toExponential(2)})` : `differs by ${worst} > ${bound}`;
    const a = await time(() => separate(xr, yr));
    const b = await time(() => fused(xr, yr));
    rows.push({ target: 'gpu', size: n, contender: `\`add.reduce(gauss(saxpy(2, x, y)))\` over rows of ${REDUCE_ROW} (\`axis: 1\`): 2 calls + reduce (tree)`, seconds: a });
    rows.push({ target: 'gpu', size: n, contender: 'the same, `fuse` (reduce folded in the kernel)', seconds: b, against: 'separate', ratio: b / a, check });
    console.log(`gpu ${pow2(n)} reduce chain: separate ${fmtMs(a)}, fuse ${fmtMs(b)} (${fmtRatio(b / a)}); ${check}`);
  }
  for (const d of [x, w, xr, yr]) d.destroy();
  if (!skipPeers) gpuMorePeers(n, chains);
}

function gpuMorePeers(n: number, chains: number): void {
  const python = findPython(['numpy', 'cupy'], ['numpy']);
  if (!python.ok) {
    notes.push(`CuPy (gufunc and reduce chains) at ${pow2(n)}: ${python.reason}.`);
    return;
  }
  const run = spawnSync(python.value, [`${PEERS_DIR}fuse_peer.py`, 'gpu-more', String(n), String(ROW), String(REDUCE_ROW), String(chains), String(REPS), String(GPU_WARMUP_MS / 1e3)], { encoding: 'utf8', timeout: 300_000 });
  if (run.status !== 0) {
    notes.push(`CuPy (gufunc and reduce chains) at ${pow2(n)}: fuse_peer.py failed: ${(run.stderr || run.stdout).trim().split('\n').slice(-2).join(' ')}`);
    return;
  }
  const report = JSON.parse(run.stdout) as { results: Record<string, { median_s: number; check?: string }>; skipped: Record<string, string> };
  for (const [peer, why] of Object.entries(report.skipped)) notes.push(`${peer} at ${pow2(n)}: ${why}`);
  for (const [name, r] of Object.entries(report.results)) rows.push({ target: 'gpu', size: n, contender: `CuPy: ${name}`, seconds: r.median_s, check: r.check });
}

function gpuPeers(n: number, chains: number, threeCalls: number, fusedCall: number, autoCall: number): void {
  const python = findPython(['numpy', 'cupy'], ['numpy']);
  if (!python.ok) {
    notes.push(`CuPy/JAX at ${pow2(n)}: ${python.reason}.`);
    return;
  }
  const run = spawnSync(python.value, [`${PEERS_DIR}fuse_peer.py`, 'gpu', String(n), String(chains), String(REPS), String(GPU_WARMUP_MS / 1e3)], { encoding: 'utf8', timeout: 300_000 });
  if (run.status !== 0) {
    notes.push(`CuPy/JAX at ${pow2(n)}: fuse_peer.py failed: ${(run.stderr || run.stdout).trim().split('\n').slice(-2).join(' ')}`);
    return;
  }
  const report = JSON.parse(run.stdout) as { cupy?: string; jax?: string; device?: string; results: Record<string, { median_s: number; check?: string }>; skipped: Record<string, string> };
  for (const [peer, why] of Object.entries(report.skipped)) notes.push(`${peer} at ${pow2(n)}: ${why}`);
  const three = report.results['cupy: 3 kernels'];
  const cfuse = report.results['cupy.fuse'];
  const jit = report.results['jax.jit'];
  if (three) rows.push({ target: 'gpu', size: n, contender: `CuPy ${report.cupy}: 3 kernels into \`out\``, seconds: three.median_s, check: three.check });
  if (cfuse) rows.push({ target: 'gpu', size: n, contender: '`cupy.fuse`', seconds: cfuse.median_s, against: 'CuPy 3 kernels', ratio: three ? cfuse.median_s / three.median_s : NaN, check: cfuse.check });
  if (jit) rows.push({ target: 'gpu', size: n, contender: `JAX ${report.jax}: \`jit\``, seconds: jit.median_s, check: jit.check });
  if (cfuse) rows.push({ target: 'gpu', size: n, contender: 'ours: `fuse` ÷ `cupy.fuse`', seconds: NaN, against: '`cupy.fuse`', ratio: fusedCall / cfuse.median_s });
  if (three) rows.push({ target: 'gpu', size: n, contender: 'ours: 3 calls ÷ CuPy 3 kernels', seconds: NaN, against: 'CuPy 3 kernels', ratio: threeCalls / three.median_s });
  if (three) rows.push({ target: 'gpu', size: n, contender: 'ours: 3 calls fused automatically ÷ CuPy 3 kernels', seconds: NaN, against: 'CuPy 3 kernels', ratio: autoCall / three.median_s });
}

// ---------------------------------------------------------------- the run

let gpuSummary = { summary: 'not used' } as { summary: string; hardwareName?: string };
for (const target of targets) {
  if ((target === 'cpu' || target === 'parallel') && CHAINS.has('arith')) await hostTarget(target);
  if ((target === 'cpu' || target === 'parallel') && (CHAINS.has('gufunc') || CHAINS.has('reduce'))) await hostMore(target);
}
if (!skipPeers && (targets.includes('cpu') || targets.includes('parallel'))) numbaPeer();
if (targets.includes('gpu') && available.includes('gpu')) {
  setIdleReleaseMs(Infinity);
  const { adapterInfo } = await acquireDevice();
  const software = adapterInfo.architecture === 'software' || /llvmpipe|lavapipe|swiftshader/i.test(`${adapterInfo.device} ${adapterInfo.description}`);
  gpuSummary = { summary: await describeAdapter(), ...(software ? {} : { hardwareName: adapterInfo.device || adapterInfo.description || adapterInfo.vendor }) };
  for (const n of GPU_SIZES) {
    if (CHAINS.has('arith')) await gpuTarget(n, n >= 2 ** 24 ? 20 : quick ? 20 : 200);
    if ((CHAINS.has('gufunc') || CHAINS.has('reduce')) && n % REDUCE_ROW === 0) await gpuMore(n, n >= 2 ** 24 ? 20 : quick ? 10 : 200);
  }
}

const machine = describeMachine(gpuSummary);
const table = markdownTable(
  [{ header: 'target' }, { header: 'size', align: 'right' }, { header: 'contender' }, { header: 'median', align: 'right' }, { header: 'ratio', align: 'right' }, { header: 'check' }],
  rows.map((r) => [r.target, pow2(r.size), r.contender, fmtMs(r.seconds), r.ratio === undefined ? '' : `${fmtRatio(r.ratio)} ${r.against}`, r.check ?? '']),
);
const report = `# \`fuse\`: v = mul(gauss(saxpy(2, x, y)), x); a gufunc chain; a chain ending in a reduce — float32\n\n${machineMarkdown(machine)}\n- command: \`npx tsx bench/fuse.ts ${argv.join(' ')}\`\n- ${REPS} samples (median; ratios: the median of per-round ratios, A and B timed in alternation); gpu: chains of calls ended by one read-back, per chain\n\n${table}\n\n${notes.map((n) => `- ${n}`).join('\n')}\n`;
console.log(`\n${report}`);
const dir = fileURLToPath(new URL('./results/', import.meta.url));
mkdirSync(dir, { recursive: true });
const file = `${dir}fuse-${machineSlug(machine)}${quick ? '-quick' : ''}.md`;
writeFileSync(file, report);
console.log(`wrote ${file}`);
await shutdown();
