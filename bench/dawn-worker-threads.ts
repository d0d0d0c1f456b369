/**
 * Whether dawn.node (the `webgpu` package) works in worker threads, and which ways for a worker to
 * end take the whole process down: what a worker thread per GPU would have to live with. Each
 * scenario runs `--runs` times, each time in a process of its own (a crash is an exit status);
 * in each, the main thread holds a device of its own, starts workers that each open a device and
 * run compute passes and mapped round trips, and after the workers end checks that its own device
 * still computes.
 *
 *   npx tsx bench/dawn-worker-threads.ts --runs 10            # lavapipe
 *   bash .gpu/run.sh node --import tsx bench/dawn-worker-threads.ts --runs 5   # GPU host
 *
 * Prints a table and writes bench/results/dawn-worker-threads-<adapter>.md.
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import { markdownTable } from './lib/markdown.js';

/** What each scenario's workers do, and how the main thread ends them. */
const SCENARIOS = {
  'two workers and the main thread compute at once': { worker: 'work', workers: 2 },
  'a worker ends without destroying its device (nothing pending)': { worker: 'leave', workers: 1 },
  'a worker throws, nothing pending': { worker: 'throw-idle', workers: 1 },
  'a worker throws while a mapAsync is pending': { worker: 'throw-pending', workers: 1 },
  'a worker calls process.exit while a mapAsync is pending': { worker: 'exit-pending', workers: 1 },
  'a worker destroys its device, awaits its pending mapAsync, then throws': { worker: 'destroy-then-throw', workers: 1 },
  'the main thread terminates a worker that is idle (device alive)': { worker: 'idle', workers: 1, terminate: true },
  'the main thread terminates a worker mid-work': { worker: 'work-forever', workers: 1, terminate: true },
} as const satisfies Record<string, { worker: string; workers: number; terminate?: boolean }>;
type Scenario = keyof typeof SCENARIOS;

/**
 * The worker, plain JavaScript (a worker does not inherit tsx): opens a device, signals 'ready',
 * then does what `mode` says. `roundTrip` uploads through a mapped buffer, doubles on the GPU and
 * reads back through a mapped buffer, checking the result.
 */
const WORKER_SOURCE = `
const { workerData, parentPort } = require('node:worker_threads');
(async () => {
  const { create, globals } = await import(workerData.webgpu);
  Object.assign(globalThis, globals);
  globalThis.keepInstance = create([]);
  const device = await (await globalThis.keepInstance.requestAdapter()).requestDevice();
  const n = 1 << 20;
  const module = device.createShaderModule({ code: '@group(0) @binding(0) var<storage, read_write> a: array<f32>; @compute @workgroup_size(64) fn main(@builtin(global_invocation_id) id: vec3u) { if (id.x < arrayLength(&a)) { a[id.x] = a[id.x] * 2.0; } }' });
  const pipeline = device.createComputePipeline({ layout: 'auto', compute: { module, entryPoint: 'main' } });
  const roundTrip = async (r) => {
    const store = device.createBuffer({ size: n * 4, usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST });
    const up = device.createBuffer({ size: n * 4, usage: GPUBufferUsage.MAP_WRITE | GPUBufferUsage.COPY_SRC, mappedAtCreation: true });
    new Float32Array(up.getMappedRange()).fill(r);
    up.unmap();
    const down = device.createBuffer({ size: n * 4, usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST });
    const encoder = device.createCommandEncoder();
    encoder.copyBufferToBuffer(up, 0, store, 0, n * 4);
    const pass = encoder.beginComputePass();
    pass.setPipeline(pipeline);
    pass.setBindGroup(0, device.createBindGroup({ layout: pipeline.getBindGroupLayout(0), entries: [{ binding: 0, resource: { buffer: store } }] }));
    pass.dispatchWorkgroups(n / 64);
    pass.end();
    encoder.copyBufferToBuffer(store, 0, down, 0, n * 4);
    device.queue.submit([encoder.finish()]);
    const mapped = down.mapAsync(GPUMapMode.READ);
    return { mapped, done: mapped.then(() => { const ok = new Float32Array(down.getMappedRange())[n - 1] === 2 * r; down.unmap(); up.destroy(); down.destroy(); store.destroy(); if (!ok) throw new Error('wrong result'); }) };
  };
  for (let r = 0; r < 3; r++) await (await roundTrip(r)).done;
  parentPort.postMessage('ready');
  const mode = workerData.mode;
  if (mode === 'work') { for (let r = 0; r < 20; r++) await (await roundTrip(r)).done; device.destroy(); parentPort.postMessage('done'); }
  else if (mode === 'leave') parentPort.postMessage('done');
  else if (mode === 'throw-idle') throw new Error('the worker fails');
  else if (mode === 'throw-pending') { void (await roundTrip(1)).done.catch(() => {}); throw new Error('the worker fails'); }
  else if (mode === 'exit-pending') { void (await roundTrip(1)).done.catch(() => {}); process.exit(3); }
  else if (mode === 'destroy-then-throw') { const { mapped } = await roundTrip(1); device.destroy(); await mapped.catch(() => {}); throw new Error('the worker fails'); }
  else if (mode === 'work-forever') for (let r = 0; ; r++) await (await roundTrip(r)).done;
  // 'idle': stays, its device alive, until terminated
})();
`;

const args = process.argv.slice(2);
const option = (name: string) => (args.includes(name) ? args[args.indexOf(name) + 1] : undefined);

if (option('--scenario') !== undefined) await runScenario(option('--scenario') as Scenario);
else runAll();

/** One run of one scenario in this process: exits 0 when the main thread's device still computes after the workers. */
async function runScenario(name: Scenario): Promise<void> {
  const scenario: { worker: string; workers: number; terminate?: boolean } = SCENARIOS[name];
  const { create, globals } = await import('webgpu');
  Object.assign(globalThis, globals);
  const gpu = create([]);
  const adapter = (await gpu.requestAdapter())!;
  console.log(`adapter: ${adapter.info.vendor} ${adapter.info.description}`);
  const device = await adapter.requestDevice();
  const workers = Array.from({ length: scenario.workers }, () => new Worker(WORKER_SOURCE, { eval: true, workerData: { mode: scenario.worker, webgpu: import.meta.resolve('webgpu') } }));
  const ended = workers.map((w) => new Promise<string>((resolve) => {
    w.on('error', (e) => console.log(`worker error: ${e.message}`));
    w.on('exit', (code) => resolve(`exit ${code}`));
  }));
  await Promise.all(workers.map((w) => new Promise((resolve) => w.once('message', resolve))));
  const mainWork = scenario.worker === 'work' ? checkDevice(device, 20) : Promise.resolve(true);
  if (scenario.terminate) {
    await new Promise((resolve) => setTimeout(resolve, 20));
    await Promise.all(workers.map((w) => w.terminate()));
  }
  const exits = await Promise.all(ended);
  const ok = (await mainWork) && (await checkDevice(device, 5));
  console.log(`workers: ${exits.join(', ')}; the main thread's device ${ok ? 'computes' : 'gave WRONG results'} after`);
  device.destroy();
  void gpu;
  process.exitCode = ok ? 0 : 1;
}

/** `reps` mapped round trips on the main thread's device; whether every one came back right. */
async function checkDevice(device: GPUDevice, reps: number): Promise<boolean> {
  const n = 1 << 18;
  let ok = true;
  for (let r = 0; r < reps; r++) {
    const up = device.createBuffer({ size: n * 4, usage: GPUBufferUsage.MAP_WRITE | GPUBufferUsage.COPY_SRC, mappedAtCreation: true });
    new Float32Array(up.getMappedRange()).fill(r + 0.5);
    up.unmap();
    const down = device.createBuffer({ size: n * 4, usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST });
    const encoder = device.createCommandEncoder();
    encoder.copyBufferToBuffer(up, 0, down, 0, n * 4);
    device.queue.submit([encoder.finish()]);
    await down.mapAsync(GPUMapMode.READ);
    ok &&= new Float32Array(down.getMappedRange())[n - 1] === r + 0.5;
    down.unmap();
    up.destroy();
    down.destroy();
  }
  return ok;
}

/** Every scenario, `--runs` processes each; the table of how they ended. */
function runAll(): void {
  const runs = Number(option('--runs') ?? 10);
  const file = fileURLToPath(import.meta.url);
  let adapter = '';
  const rows = (Object.keys(SCENARIOS) as Scenario[]).map((name) => {
    const outcomes = new Map<string, number>();
    for (let i = 0; i < runs; i++) {
      const child = spawnSync(process.execPath, [...process.execArgv, file, '--scenario', name], { encoding: 'utf8', timeout: 60_000 });
      const text = `${child.stdout}\n${child.stderr}`;
      adapter ||= /adapter: (.*)/.exec(text)?.[1] ?? '';
      const outcome =
        child.status === 0 ? 'survived, main device computes'
        : child.error ? `no end within 60 s (${child.error.message})`
        : `died: ${child.signal ?? `exit ${child.status}`}${cause(text)}`;
      outcomes.set(outcome, (outcomes.get(outcome) ?? 0) + 1);
    }
    console.error(`${name}: ${[...outcomes].map(([o, c]) => `${c}× ${o}`).join('; ')}`);
    return [name, [...outcomes].map(([o, c]) => `${c}/${runs} ${o}`).join('; ')];
  });
  const report = [
    '# dawn.node in worker threads: what works, what ends the process',
    '',
    `${new Date().toISOString().slice(0, 10)}, ${adapter || 'adapter unknown'}, webgpu (dawn.node) on ${process.platform}-${process.arch}, Node ${process.version}. Each run a process of its own: the main thread holds a device, the workers each open one (their own Dawn instance) and run compute passes and mapped round trips.`,
    '',
    markdownTable([{ header: 'scenario', align: 'left' }, { header: 'outcome', align: 'left' }], rows),
    '',
    `Command: \`npx tsx bench/dawn-worker-threads.ts ${args.join(' ')}\`.`,
  ].join('\n');
  console.log(report);
  const dir = fileURLToPath(new URL('./results/', import.meta.url));
  mkdirSync(dir, { recursive: true });
  writeFileSync(`${dir}dawn-worker-threads-${(adapter.split(' ')[0] || 'unknown').replace(/[^a-z0-9]+/gi, '-').toLowerCase()}.md`, `${report}\n`);
}

/** The line of a dead process's output that says what killed it. */
function cause(text: string): string {
  const line = text.split('\n').find((l) => /Promise not resolved|FATAL ERROR|Segmentation|Assertion|futex|terminate called/.test(l));
  // An abort's message has no newline: the next output may follow it on the same line.
  return line ? ` (${line.replace(/^.*third_party\/dawn\//, '').replace(/worker error:.*$/, '').trim().slice(0, 120)})` : '';
}
