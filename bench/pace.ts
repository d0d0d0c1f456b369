/**
 * Issue 24's cases, ufunc against CuPy in one run: device reductions and scans, awaited small calls
 * (the first 1,000 calls of the process and steady state), three element-wise calls awaited and
 * not awaited, SAXPY on host arrays, and `toHost()` of 256 MiB into a new array.
 *
 *   npx tsx bench/pace.ts            # full sizes (the GPU machine)
 *   npx tsx bench/pace.ts --quick    # small sizes, for lavapipe
 *   npx tsx bench/pace.ts --quick --host-only --host-log2=22   # only the host-array cases, 2^22
 *
 * The host-array cases include an A/B of how a call uploads its large host inputs: through pooled
 * mapped staging buffers (the default) and through one `queue.writeBuffer` per input (the earlier
 * path), in the same process.
 *
 * The small-call case runs first, so that its first 1,000 calls are the first of the process
 * (compilation, V8's tiers and the first submissions included, as a user's short loop pays them).
 * Device cases are timed to `synchronize()` (CuPy: `stream.synchronize()`); kernel times are the
 * GPU's timestamps of the call's compute passes. Prints a table and writes it to
 * bench/results/pace-<gpu>[-quick].md. CuPy's side is bench/peers/cupy_pace.py.
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { type DeviceArray, deviceArray, guvectorize, synchronize, toDevice, vectorize } from '../src/index.js';
import { acquireDevice, describeAdapter, setIdleReleaseMs } from '../src/targets/gpu/runtime/device.js';
import { setHostUploadPath } from '../src/targets/gpu/runtime/dispatch.js';
import { timeKernels } from '../src/targets/gpu/runtime/kernel-timing.js';
import { markdownTable } from './lib/markdown.js';
import { median } from './lib/timing.js';

const argv = process.argv.slice(2);
const quick = argv.includes('--quick');
/** Only the host-array cases (`--host-only`), at 2^k elements with `--host-log2=k`. */
const hostOnly = argv.includes('--host-only');
const hostLog2 = Number(argv.find((a) => a.startsWith('--host-log2='))?.split('=')[1] ?? (quick ? 20 : 24));
const REPS = quick ? 5 : 15;
const SUM_N = quick ? 1 << 20 : 1 << 24;
const ROWS = quick ? 1024 : 4096;
const SMALL_N = 4096;
const SMALL_CALLS = 1000;
const THREE_N = 1 << 16;
const HOST_N = 2 ** hostLog2;
const COPY_BYTES = quick ? 16 << 20 : 256 << 20;
const WARMUP_MS = quick ? 0 : 1000;

setIdleReleaseMs(Infinity);
const saxpy = vectorize(['float32(float32, float32, float32)'], { target: 'gpu' })((a: number, x: number, y: number) => a * x + y);
const expf = vectorize(['float32(float32)'], { target: 'gpu' })((x: number) => Math.exp(x));
const mul = vectorize(['float32(float32, float32)'], { target: 'gpu' })((x: number, y: number) => x * y);
const neg = vectorize(['float32(float32)'], { target: 'gpu' })((x: number) => -x);
const add = vectorize(['float32(float32, float32)'], { target: 'gpu', identity: 0, associative: true })((a: number, b: number) => a + b);

/** element i is float32((i % 1000) * 0.001), as bench/peers/reduce_peer.py. */
function data(n: number): Float32Array {
  const a = new Float32Array(n);
  for (let i = 0; i < n; i++) a[i] = (i % 1000) * 0.001;
  return a;
}

interface Result {
  readonly name: string;
  readonly ms: number;
  readonly kernelMs?: number;
  readonly note?: string;
}
const results: Result[] = [];
const log = (r: Result) => {
  results.push(r);
  console.log(`${r.name.padEnd(44)} ${r.ms.toFixed(4).padStart(10)} ms${r.kernelMs !== undefined ? `  kernel ${r.kernelMs.toFixed(4)} ms` : ''}${r.note ? `  ${r.note}` : ''}`);
};

// ------------------------------------------------ small calls: first, so they are the process's first
const sx = await toDevice(data(SMALL_N));
const sy = await toDevice(data(SMALL_N));
const sz = await deviceArray([SMALL_N], 'float32');
if (!hostOnly) {
  const t0 = performance.now();
  await saxpy(2, sx, sy, { out: sz });
  const t1 = performance.now();
  for (let k = 1; k < SMALL_CALLS; k++) await saxpy(2, sx, sy, { out: sz });
  await synchronize();
  const t2 = performance.now();
  log({ name: 'small SAXPY 4,096 awaited, first 1,000 calls', ms: (t2 - t0) / SMALL_CALLS, note: `first call ${(t1 - t0).toFixed(1)} ms (compiles), the next 999 ${(((t2 - t1) / (SMALL_CALLS - 1)) * 1e3).toFixed(1)} µs each` });
}
const ctx = await acquireDevice();
const adapter = await describeAdapter();
console.log(`gpu: ${adapter}${quick ? ' (--quick sizes)' : ''}`);

async function warm(fn: () => Promise<unknown>): Promise<void> {
  const end = performance.now() + WARMUP_MS;
  do await fn();
  while (performance.now() < end);
}
/** Median wall ms of `fn` (awaited, then synchronize()), after warm-up. */
async function wall(fn: () => Promise<unknown>, per = 1): Promise<number> {
  const once = async () => {
    const t0 = performance.now();
    await fn();
    await synchronize();
    return (performance.now() - t0) / per;
  };
  await once();
  await warm(once);
  const runs: number[] = [];
  for (let r = 0; r < REPS; r++) runs.push(await once());
  return median(runs);
}
/** Median wall ms of `a` and of `b` (each awaited, then synchronize()), in alternating rounds after warm-up. */
async function interleaved(a: () => Promise<unknown>, b: () => Promise<unknown>): Promise<[number, number]> {
  const once = async (fn: () => Promise<unknown>) => {
    const t0 = performance.now();
    await fn();
    await synchronize();
    return performance.now() - t0;
  };
  await warm(async () => {
    await once(a);
    await once(b);
  });
  const runs: [number[], number[]] = [[], []];
  for (let r = 0; r < REPS; r++) {
    runs[0].push(await once(a));
    runs[1].push(await once(b));
  }
  return [median(runs[0]), median(runs[1])];
}
/** Runs `call` with calls uploading their host inputs through `queue.writeBuffer` (the earlier path). */
async function viaWriteBuffer(call: () => Promise<unknown>): Promise<void> {
  setHostUploadPath('writeBuffer');
  try {
    await call();
  } finally {
    setHostUploadPath('staged');
  }
}
async function kernel(fn: () => Promise<unknown>): Promise<number | undefined> {
  if (!ctx.hasTimestamps) return undefined;
  const ms: number[] = [];
  for (let r = 0; r < 5; r++) {
    const { kernelMs } = await timeKernels(async () => {
      await fn();
      await synchronize();
    });
    ms.push(kernelMs.reduce((a, b) => a + b, 0));
  }
  return median(ms);
}

if (!hostOnly) log({
  name: 'small SAXPY 4,096 awaited, steady',
  ms: await wall(async () => {
    for (let k = 0; k < SMALL_CALLS; k++) await saxpy(2, sx, sy, { out: sz });
  }, SMALL_CALLS),
});
if (!hostOnly) log({ name: 'synchronize() after one small call', ms: await wall(() => saxpy(2, sx, sy, { out: sz })) });
if (!hostOnly) {
  // Dawn's own floor: an empty submission and its completion, no ufunc code.
  const { device } = ctx;
  const roundTrip = async () => {
    device.queue.submit([device.createCommandEncoder().finish()]);
    await device.queue.onSubmittedWorkDone();
  };
  log({ name: 'raw WebGPU: empty submit + onSubmittedWorkDone', ms: await wall(roundTrip) });
  // What a batch's submission adds to that (chain.ts): error scopes around the submit, a params write.
  const filters: GPUErrorFilter[] = ['validation', 'out-of-memory', 'internal'];
  const scoped = async () => {
    for (const f of filters) device.pushErrorScope(f);
    device.queue.submit([device.createCommandEncoder().finish()]);
    const popped = filters.map(() => device.popErrorScope());
    await Promise.all([...popped, device.queue.onSubmittedWorkDone()]);
  };
  log({ name: 'raw WebGPU: the same in 3 error scopes', ms: await wall(scoped) });
  const paramsBuffer = device.createBuffer({ size: 256, usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_DST });
  const words = new Uint32Array(64);
  const written = async () => {
    for (const f of filters) device.pushErrorScope(f);
    device.queue.writeBuffer(paramsBuffer, 0, words);
    const poppedWrite = filters.map(() => device.popErrorScope());
    await Promise.all([...poppedWrite, scoped()]);
  };
  log({ name: 'raw WebGPU: the same after a scoped writeBuffer', ms: await wall(written) });
  paramsBuffer.destroy();
}
if (!hostOnly) {
  const a = await toDevice(data(THREE_N));
  const t1 = await deviceArray([THREE_N], 'float32');
  const t2 = await deviceArray([THREE_N], 'float32');
  const t3 = await deviceArray([THREE_N], 'float32');
  const chains = 100;
  log({
    name: 'three calls 2^16 awaited, per chain',
    ms: await wall(async () => {
      for (let k = 0; k < chains; k++) {
        await saxpy(2, a, a, { out: t1 });
        await expf(t1, { out: t2 });
        await mul(t2, a, { out: t3 });
      }
    }, chains),
  });
  log({
    name: 'three calls 2^16 not awaited, per chain',
    ms: await wall(async () => {
      const pending: Promise<unknown>[] = [];
      for (let k = 0; k < chains; k++) pending.push(saxpy(2, a, a, { out: t1 }), expf(t1, { out: t2 }), mul(t2, a, { out: t3 }));
      await Promise.all(pending);
    }, chains),
  });
  for (const d of [a, t1, t2, t3]) d.destroy();
}

// ------------------------------------------------ reductions and scans on the device
if (!hostOnly) {
  const flat = await toDevice(data(SUM_N));
  const matrix = await toDevice({ data: data(ROWS * ROWS), shape: [ROWS, ROWS] });
  const out = await deviceArray([SUM_N], 'float32');
  const released = async (p: Promise<unknown>) => ((await p) as DeviceArray).destroy();
  const pass = () => neg(flat, { out });
  log({ name: `element-wise pass (neg) ${SUM_N}`, ms: await wall(pass), kernelMs: await kernel(pass) });
  const sum = () => released(add.reduce(flat));
  const value = (await ((await add.reduce(flat)) as DeviceArray).toHost())[0];
  log({ name: `sum of ${SUM_N} float32`, ms: await wall(sum), kernelMs: await kernel(sum), note: `value ${value}` });
  const rows = () => released(add.reduce(matrix, { axis: 1 }));
  log({ name: `row sums ${ROWS}²`, ms: await wall(rows), kernelMs: await kernel(rows) });
  const cols = () => released(add.reduce(matrix, { axis: 0 }));
  log({ name: `column sums ${ROWS}²`, ms: await wall(cols), kernelMs: await kernel(cols) });
  const hostFlat = data(SUM_N);
  log({ name: `sum of ${SUM_N} float32, host array`, ms: await wall(() => add.reduce(hostFlat)) });
  const cumsum = () => released(add.accumulate(flat));
  log({ name: `cumsum of ${SUM_N} float32`, ms: await wall(cumsum), kernelMs: await kernel(cumsum) });
  for (const d of [flat, matrix, out]) d.destroy();
}

// ------------------------------------------------ host arrays
{
  const hx = data(HOST_N);
  const hy = data(HOST_N);
  const hz = new Float32Array(HOST_N);
  log({ name: `SAXPY ${HOST_N} host arrays, new result`, ms: await wall(() => saxpy(2, hx, hy)) });
  // What a first-time user writes, A/B against the earlier upload path in alternating rounds.
  const [intoOut, intoOutWritten] = await interleaved(
    () => saxpy(2, hx, hy, { out: hz }),
    () => viaWriteBuffer(() => saxpy(2, hx, hy, { out: hz })),
  );
  log({ name: `SAXPY ${HOST_N} host arrays, into \`out\``, ms: intoOut });
  log({ name: `SAXPY ${HOST_N} host arrays, into \`out\` (writeBuffer path)`, ms: intoOutWritten });
  // A sparse view (every third element), gathered on the host: straight into the staging memory.
  const every3 = { data: data(3 * HOST_N), shape: [HOST_N], strides: [3] };
  log({ name: `SAXPY ${HOST_N} host arrays, x every 3rd element, into \`out\``, ms: await wall(() => saxpy(2, every3, hy, { out: hz })) });
  // A sparse output: results scattered into every third element, straight out of the read-back staging memory.
  const out3 = { data: new Float32Array(3 * HOST_N), shape: [HOST_N], strides: [3] };
  log({ name: `SAXPY ${HOST_N} host arrays, into every 3rd element of \`out\``, ms: await wall(() => saxpy(2, hx, hy, { out: out3 })) });
  // The inputs' upload alone, A/B against the earlier path (one `queue.writeBuffer` per input), in
  // alternating rounds: a kernel of one invocation that reads one element of each of two host
  // rows of HOST_N elements (the call uploads both rows whole), into a device `out`.
  const firsts = guvectorize(['void(float32[:], float32[:], float32[:])'], '(n),(n)->()', { target: 'gpu' })(
    (x: Float32Array, y: Float32Array, out: Float32Array) => {
      out[0] = x[0]! + y[0]!;
    },
  );
  const one = await deviceArray([], 'float32');
  const upload = () => firsts(hx, hy, { out: one });
  const [upStaged, upWritten] = await interleaved(upload, () => viaWriteBuffer(upload));
  const rate = (ms: number) => `${((2 * HOST_N * 4) / ms / 1e6).toFixed(2)} GB/s`;
  log({ name: `upload of 2 × ${HOST_N} float32 in a call`, ms: upStaged, note: rate(upStaged) });
  log({ name: `upload of 2 × ${HOST_N} float32 in a call (writeBuffer path)`, ms: upWritten, note: rate(upWritten) });
  one.destroy();
  // The same inputs into SAXPY: host inputs into a device `out`, less the same call on device inputs.
  const dx = await toDevice(hx);
  const dy = await toDevice(hy);
  const dz = await deviceArray([HOST_N], 'float32');
  const onDevice = await wall(() => saxpy(2, dx, dy, { out: dz }));
  log({ name: `SAXPY ${HOST_N} device inputs, device out`, ms: onDevice });
  // No rate where the difference is within the noise (not above the device-input call's time).
  const uploadRate = (ms: number) => (ms > onDevice ? `inputs up at ${((2 * HOST_N * 4) / (ms - onDevice) / 1e6).toFixed(2)} GB/s` : 'inputs up: within the noise');
  // Rounds alternate between the paths, so that load that comes and goes weighs on both alike.
  const [staged, written] = await interleaved(
    () => saxpy(2, hx, hy, { out: dz }),
    () => viaWriteBuffer(() => saxpy(2, hx, hy, { out: dz })),
  );
  log({ name: `SAXPY ${HOST_N} host inputs, device out`, ms: staged, note: uploadRate(staged) });
  log({ name: `SAXPY ${HOST_N} host inputs, device out (writeBuffer path)`, ms: written, note: uploadRate(written) });
  for (const d of [dx, dy, dz]) d.destroy();
  const big = await toDevice(new Float32Array(COPY_BYTES / 4));
  const ms = await wall(() => big.toHost());
  log({ name: `toHost() ${COPY_BYTES >> 20} MiB into a new array`, ms, note: `${(COPY_BYTES / ms / 1e6).toFixed(2)} GB/s` });
  big.destroy();
}

// ------------------------------------------------ CuPy, the same cases
const peerScript = fileURLToPath(new URL('./peers/cupy_pace.py', import.meta.url));
const peerArgs = [peerScript, quick ? 'quick' : 'full', `--host-log2=${hostLog2}`, ...(hostOnly ? ['--host-only'] : [])];
const peer = spawnSync('python3', peerArgs, { encoding: 'utf8', timeout: 600_000 });
let cupy: Record<string, number | string> = {};
let cupyNote = '';
try {
  cupy = JSON.parse(peer.stdout) as Record<string, number>;
} catch {
  cupyNote = `CuPy: ${(peer.stderr || peer.stdout || String(peer.error)).trim().split('\n').slice(-1)[0]}`;
}
const table = markdownTable(
  [{ header: 'case' }, ...['ufunc ms', 'ufunc kernel ms', 'CuPy ms', 'ratio'].map((header) => ({ header, align: 'right' as const })), { header: 'note' }],
  results.map((r) => {
    const c = cupy[r.name] as number | undefined;
    return [r.name, r.ms.toPrecision(4), r.kernelMs?.toPrecision(4) ?? '', c ? c.toPrecision(4) : '', c ? `${(r.ms / c).toFixed(2)}×` : '', r.note ?? ''];
  }),
);
const doc = `# issue 24 cases (bench/pace.ts)\n\n- gpu: ${adapter}\n- ${new Date().toISOString()}, node ${process.version}${cupy.version ? `, CuPy ${cupy.version} (${cupy.device})` : ''}\n- wall: median of ${REPS} after ${WARMUP_MS} ms of the same; device cases timed to \`synchronize()\`\n${cupyNote ? `- ${cupyNote}\n` : ''}\n${table}\n`;
console.log(doc);
const dir = fileURLToPath(new URL('./results/', import.meta.url));
mkdirSync(dir, { recursive: true });
const slug = (typeof cupy.device === 'string' ? cupy.device : ctx.adapterInfo.description.split(':')[0] || ctx.adapterInfo.vendor || 'gpu')
  .toLowerCase()
  .replace(/[^a-z0-9]+/g, '-')
  .replace(/^-|-$/g, '');
writeFileSync(`${dir}pace-${slug}${quick ? '-quick' : ''}${hostOnly ? '-host' : ''}.md`, doc);
if (process.env.OUT) writeFileSync(`${process.env.OUT}/pace.md`, doc);
process.exit(0);
