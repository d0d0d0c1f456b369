/**
 * Where the wall time of a synchronised gpu call goes: raw WebGPU round trips through Dawn, timed
 * one by one, against the library's `reduce`/`accumulate` followed by `synchronize()`, with what
 * each of those issues to WebGPU counted per call.
 *
 * Raw round trips (each awaited before the next, medians of several samples):
 * - `empty-submit`: `queue.submit([])` of an empty command buffer, then `onSubmittedWorkDone()`;
 * - `submit-scopes`: the same inside three pushed error scopes, all three pops and the work done
 *   awaited (what a batch of chain.ts did); `submit-validation-scope`: inside one (what it does);
 * - `scopes-only`: three error scopes pushed and popped around nothing, the pops awaited;
 * - `dispatch`: one 1-workgroup dispatch of a trivial shader, then `onSubmittedWorkDone()`;
 * - `map-read`: a 256-byte copy into a MAP_READ buffer and its `mapAsync`/`unmap`;
 * - `immediate`: one `setImmediate` round (the event loop's own cost, Dawn's polling included).
 * While each waits, the event loop turns: the column `turns` counts our own `setImmediate`
 * rounds per call — dawn.node resolves its promises from `wgpuInstanceProcessEvents`, which it
 * calls from `setImmediate` for as long as any of its promises is pending (AsyncRunner.cpp).
 *
 * Library calls (`sum-N-synced` etc.): `await f.reduce(x)`, its result destroyed, then
 * `await synchronize()`; counted per call: submissions, command encoders, compute passes,
 * dispatches, error-scope push/pop pairs, `writeBuffer`s, `mapAsync`s, `onSubmittedWorkDone`s.
 *
 *   npx tsx bench/sync-probe.ts [--n 4096,1048576] [--samples 7] [--calls 200] [--host-calls 2000] [--gpu-warm-ms 1000]
 *   bash .gpu/run.sh node --import tsx bench/sync-probe.ts --n 4096,16777216   # GPU host
 */
import { readFileSync } from 'node:fs';
import { keepGpuBusy } from './lib/gpu-warm.js';
import { median } from './lib/timing.js';
import { timeKernels } from '../src/targets/gpu/runtime/kernel-timing.js';
import { acquireDevice, describeAdapter, setIdleReleaseMs } from '../src/targets/gpu/runtime/device.js';
import { deviceArray, synchronize, toDevice, vectorize } from '../src/index.js';

const argv = process.argv.slice(2);
const flag = (name: string): string | undefined => (argv.includes(name) ? argv[argv.indexOf(name) + 1] : undefined);
const SIZES = (flag('--n') ?? '4096,1048576').split(',').map(Number);
const SAMPLES = Number(flag('--samples') ?? 7);
const CALLS = Number(flag('--calls') ?? 200);

setIdleReleaseMs(Infinity);
const ctx = await acquireDevice();
const { device } = ctx;
console.log(`gpu: ${await describeAdapter()}; ${SAMPLES} samples of ${CALLS} calls; node ${process.version}`);

// --- Counting what reaches WebGPU -------------------------------------------------------------
const counts: Record<string, number> = {};
const bump = (k: string) => (counts[k] = (counts[k] ?? 0) + 1);
/**
 * The timeline of the call being timed, in µs from its start: when its last `submit` returned,
 * and when the last promise of each kind (popErrorScope, onSubmittedWorkDone, mapAsync) resolved.
 */
let callStart = 0;
const marks: Record<string, number> = {};
const sums: Record<string, number> = {};
const PROMISED = new Set(['popErrorScope', 'onSubmittedWorkDone', 'mapAsync']);
function countOn(target: object, methods: string[], prefix = ''): void {
  const proto = Object.getPrototypeOf(target) as Record<string, unknown>;
  for (const m of methods) {
    const original = proto[m] as (...a: unknown[]) => unknown;
    if (typeof original !== 'function') continue;
    proto[m] = function (this: unknown, ...a: unknown[]) {
      bump(prefix + m);
      if (m === 'submit') marks.submitting = performance.now() - callStart;
      const result = original.apply(this, a);
      if (m === 'submit') marks.submit = performance.now() - callStart;
      if (PROMISED.has(m)) void (result as Promise<unknown>).then(() => (marks[m] = performance.now() - callStart), () => {});
      return result;
    };
  }
}
countOn(device, ['createCommandEncoder', 'pushErrorScope', 'popErrorScope', 'createBindGroup', 'createBuffer']);
countOn(device.queue, ['submit', 'writeBuffer', 'onSubmittedWorkDone']);
{
  const enc = device.createCommandEncoder();
  countOn(enc, ['beginComputePass', 'copyBufferToBuffer', 'clearBuffer']);
  const pass = enc.beginComputePass();
  countOn(pass, ['dispatchWorkgroups', 'setBindGroup', 'setPipeline']);
  pass.end();
  enc.finish();
  const b = device.createBuffer({ size: 16, usage: GPUBufferUsage.MAP_READ });
  countOn(b, ['mapAsync']);
  b.destroy();
}
for (const k of Object.keys(counts)) delete counts[k];

// --- Timing ------------------------------------------------------------------------------------
let turns = 0;
let spinning = true;
function spin(): void {
  turns++;
  if (spinning) setImmediate(spin);
}

interface Probe {
  readonly name: string;
  /** One call, awaited. */
  readonly call: () => Promise<unknown>;
  readonly calls?: number;
}

/** The main thread's CPU time so far in ns (Linux), or NaN. */
function mainThreadNs(): number {
  try {
    return Number(readFileSync(`/proc/${process.pid}/task/${process.pid}/schedstat`, 'utf8').split(' ')[0]);
  } catch {
    return Number.NaN;
  }
}

/** `kernelUs`: the call's GPU time by timestamps (each dispatch its own pass), when known. */
async function time(p: Probe, kernelUs?: number): Promise<void> {
  const calls = p.calls ?? CALLS;
  for (let k = 0; k < Math.min(calls, 20); k++) await p.call();
  const walls: number[] = [];
  const turnCounts: number[] = [];
  const mains: number[] = [];
  const timelines: Record<string, number>[] = [];
  let perCall: Record<string, number> = {};
  for (let s = 0; s < SAMPLES; s++) {
    for (const k of Object.keys(counts)) delete counts[k];
    for (const k of Object.keys(sums)) delete sums[k];
    turns = 0;
    spinning = true;
    setImmediate(spin);
    const main0 = mainThreadNs();
    const t0 = performance.now();
    for (let k = 0; k < calls; k++) {
      for (const m of Object.keys(marks)) delete marks[m];
      callStart = performance.now();
      await p.call();
      marks.end = performance.now() - callStart;
      for (const [m, t] of Object.entries(marks)) sums[m] = (sums[m] ?? 0) + t;
    }
    walls.push(((performance.now() - t0) / calls) * 1e3);
    mains.push((mainThreadNs() - main0) / 1e3 / calls);
    timelines.push(Object.fromEntries(Object.entries(sums).map(([m, t]) => [m, (t / calls) * 1e3])));
    spinning = false;
    turnCounts.push(turns / calls);
    perCall = Object.fromEntries(Object.entries(counts).map(([k, v]) => [k, v / calls]));
    await new Promise((r) => setImmediate(r));
  }
  const what = Object.entries(perCall)
    .filter(([, v]) => v > 0)
    .map(([k, v]) => `${k} ${+v.toFixed(2)}`)
    .join(', ');
  // The sample of median wall time gives the timeline (its marks are means over its calls).
  const mid = Math.max(0, walls.indexOf(median(walls)));
  const line = Object.entries(timelines[mid] ?? {})
    .sort((a, b) => a[1] - b[1])
    .map(([m, t]) => `${m} ${t.toFixed(1)}`)
    .join(' → ');
  console.log(
    `${p.name.padEnd(24)} ${median(walls).toFixed(1).padStart(8)} µs/call (min ${Math.min(...walls).toFixed(1)}), main thread ${median(mains).toFixed(1)} µs, turns ${median(turnCounts).toFixed(1)}${kernelUs ? `, kernel ${kernelUs.toFixed(1)} µs` : ''}\n    per call: ${what}\n    timeline (µs from the call's start, mean of the median sample): ${line}`,
  );
}

const FILTERS: GPUErrorFilter[] = ['validation', 'out-of-memory', 'internal'];
const module = device.createShaderModule({ code: '@group(0) @binding(0) var<storage, read_write> b: array<u32>;\n@compute @workgroup_size(64) fn main(@builtin(global_invocation_id) g: vec3u) { if (g.x == 0u) { b[0] = b[0] + 1u; } }' });
const pipeline = await device.createComputePipelineAsync({ layout: 'auto', compute: { module, entryPoint: 'main' } });
const storage = device.createBuffer({ size: 256, usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC });
const group = device.createBindGroup({ layout: pipeline.getBindGroupLayout(0), entries: [{ binding: 0, resource: { buffer: storage } }] });
const readback = device.createBuffer({ size: 256, usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST });

const raw: Probe[] = [
  { name: 'immediate', call: () => new Promise((r) => setImmediate(r)) },
  {
    name: 'empty-submit',
    call: () => {
      device.queue.submit([device.createCommandEncoder().finish()]);
      return device.queue.onSubmittedWorkDone();
    },
  },
  {
    name: 'submit-scopes',
    call: () => {
      for (const f of FILTERS) device.pushErrorScope(f);
      device.queue.submit([device.createCommandEncoder().finish()]);
      const popped = FILTERS.map(() => device.popErrorScope());
      return Promise.all([...popped, device.queue.onSubmittedWorkDone()]);
    },
  },
  {
    name: 'submit-validation-scope',
    call: () => {
      device.pushErrorScope('validation');
      device.queue.submit([device.createCommandEncoder().finish()]);
      return Promise.all([device.popErrorScope(), device.queue.onSubmittedWorkDone()]);
    },
  },
  {
    name: 'scopes-only',
    call: () => {
      for (const f of FILTERS) device.pushErrorScope(f);
      return Promise.all(FILTERS.map(() => device.popErrorScope()));
    },
  },
  {
    name: 'dispatch',
    call: () => {
      const enc = device.createCommandEncoder();
      const pass = enc.beginComputePass();
      pass.setPipeline(pipeline);
      pass.setBindGroup(0, group);
      pass.dispatchWorkgroups(1);
      pass.end();
      device.queue.submit([enc.finish()]);
      return device.queue.onSubmittedWorkDone();
    },
  },
  {
    name: 'map-read',
    call: async () => {
      const enc = device.createCommandEncoder();
      enc.copyBufferToBuffer(storage, 0, readback, 0, 256);
      device.queue.submit([enc.finish()]);
      await readback.mapAsync(GPUMapMode.READ, 0, 256);
      readback.unmap();
    },
  },
];
for (const p of raw) await time(p);

// --- The library's synchronised calls ---------------------------------------------------------
const add = vectorize(['float32(float32, float32)'], { target: 'gpu', identity: 0, associative: true })((a: number, b: number) => a + b);
const saxpy = vectorize(['float32(float32, float32, float32)'], { target: 'gpu' })((a: number, x: number, y: number) => a * x + y);
/** The GPU time of one call's dispatches (timestamps; median of 5), or undefined without them. */
async function kernelTime(fn: () => Promise<unknown>): Promise<number | undefined> {
  if (!ctx.hasTimestamps) return undefined;
  const us: number[] = [];
  for (let r = 0; r < 5; r++) {
    const { kernelMs } = await timeKernels(async () => {
      const result = (await fn()) as { destroy?: () => void } | undefined;
      await synchronize();
      result?.destroy?.();
    });
    us.push(kernelMs.reduce((a, b) => a + b, 0) * 1e3);
  }
  return median(us);
}
/** Runs `fn` with the device's error scopes replaced by no-ops (pops resolve to null at once). */
async function withoutScopes(fn: () => Promise<void>): Promise<void> {
  const proto = Object.getPrototypeOf(device) as Record<string, unknown>;
  const [push, pop] = [proto.pushErrorScope, proto.popErrorScope];
  proto.pushErrorScope = () => {};
  proto.popErrorScope = () => Promise.resolve(null);
  try {
    await fn();
  } finally {
    [proto.pushErrorScope, proto.popErrorScope] = [push, pop];
  }
}
const fill = (n: number) => Float32Array.from({ length: n }, (_, i) => (i % 17) / 8);
/**
 * `--gpu-warm-ms T`: before each case of ≥ 2^20 elements, T ms of back-to-back 2^24-element SAXPY
 * passes (a GPU's clocks follow its recent load; bench/call-cost.ts does the same).
 */
const GPU_WARM_MS = Number(flag('--gpu-warm-ms') ?? 0);
async function libraryCases(round: string): Promise<void> {
  for (const n of SIZES) {
    const calls = Math.max(20, Math.min(CALLS, Math.round((CALLS * 65536) / n)));
    const x = await toDevice(fill(n));
    const rows = Math.round(Math.sqrt(n));
    const m = await toDevice({ data: fill(rows * rows), shape: [rows, rows] });
    const y = await toDevice(fill(n));
    const out = await deviceArray([n], 'float32');
    const synced = (fn: () => Promise<unknown>) => async () => {
      const r = (await fn()) as { destroy?: () => void } | undefined;
      r?.destroy?.();
      await synchronize();
    };
    const cases: [string, () => Promise<unknown>][] = [
      [`saxpy-${n}-synced`, async () => void (await saxpy(2, x, y, { out }))],
      [`sum-${n}-synced`, () => add.reduce(x)],
      [`rowsums-${rows}x${rows}-synced`, () => add.reduce(m, { axis: 1 })],
      [`cumsum-${n}-synced`, () => add.accumulate(x)],
    ];
    for (const [name, fn] of cases) {
      if (GPU_WARM_MS > 0 && n >= 1 << 20) await keepGpuBusy(GPU_WARM_MS, { saxpy, toDevice, deviceArray, synchronize });
      await time({ name: `${name}${round}`, calls, call: synced(fn) }, await kernelTime(fn));
    }
    // The same sum with error scopes made free (pushes ignored, pops resolved at once): what the
    // scopes cost a synchronised call (the probe's only change to the library's traffic).
    await withoutScopes(() => time({ name: `sum-${n}-synced-no-scopes${round}`, calls, call: synced(() => add.reduce(x)) }));
    for (const a of [x, m, y, out]) a.destroy();
  }
}
await libraryCases('');
// `--host-calls K`: the same again after K awaited 4,096-element host-array SAXPY calls (what
// bench/call-cost.ts runs before its synchronised rows): does earlier work change their cost?
const hostCalls = Number(flag('--host-calls') ?? 0);
if (hostCalls > 0) {
  const [hx, hy, hout] = [fill(4096), fill(4096), new Float32Array(4096)];
  const t0 = performance.now();
  for (let k = 0; k < hostCalls; k++) await saxpy(2, hx, hy, { out: hout });
  console.log(`${hostCalls} host-array SAXPY calls: ${(((performance.now() - t0) / hostCalls) * 1e3).toFixed(1)} µs each`);
  await libraryCases(' (after host calls)');
}
process.exit(0);
