/**
 * Does a process survive two devices streaming through staging pools too small for their chunks?
 * The segmentation fault on two H200s (bench/results/multigpu-nvidia-h200x2-saxpy2e30-segfault.md:
 * SAXPY 2^30 streamed on two devices under 2 GiB each, the first call of the run streaming on two
 * devices) had two suspects, both fixed since: a Dawn instance left unreferenced (two concurrent
 * first requests each made one; collected, it takes its device's native state with it), and staging
 * buffers destroyed while their mapping was pending (dawn.node rejects the aborted mapping from a
 * later turn of the event loop; runtime/buffers.ts, `retire`, now waits for the mapping). Here each
 * run is a fresh process on lavapipe with two devices on its one adapter, each from a Dawn instance
 * of its own as on a host with two GPUs (`--one-instance`: one for both, as the library does on one
 * adapter; `--dropped-instance`: device 1's instance not kept, the first suspect): SAXPY over host
 * arrays streamed in many chunks under a 12 MiB memory limit, ten calls with a garbage collection
 * after each, the staging pools limited to `--pool-kib` (0: they keep nothing, so every buffer
 * given back is destroyed, most while being mapped again; 48 MiB: a full pool gives up its least
 * recently used buffers), results checked against the cpu target. Prints, per setting, how many
 * runs ended well, and how the others ended (bench/results/streamed-churn-llvmpipe.md).
 *
 *   npx tsx bench/streamed-churn.ts --runs 10                  # pools of 0 and 48 MiB
 *   npx tsx bench/streamed-churn.ts --runs 10 --pool-kib 0
 *   npx tsx bench/streamed-churn.ts --runs 10 --one-instance    # both devices from one Dawn instance
 *   npx tsx bench/streamed-churn.ts --runs 3 --dropped-instance # device 1's instance left to the collector
 */
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const args = process.argv.slice(2);
const option = (name: string) => (args.includes(name) ? args[args.indexOf(name) + 1] : undefined);

if (args[0] === '--child') {
  const { setGpuOptions, vectorize } = await import('../src/index.js');
  const { setStagingPoolLimit } = await import('../src/targets/gpu/runtime/buffers.js');
  const { setIdleReleaseMs, shutdownDevice } = await import('../src/targets/gpu/runtime/device.js');
  const pool = Number(args[1]) * 1024;
  if (args[2] !== 'one') {
    // A Dawn instance per device, as on a host with two GPUs (each pinned to its GPU there, and
    // kept: node.ts): on lavapipe's one adapter the library opens both devices from one instance.
    // `dropped`: device 1's instance is not kept, as before 2026-11-27 (two concurrent first
    // requests each made an instance and one was left unreferenced).
    const { platform } = await import('../src/platform/platform.js');
    const webgpu = await import('webgpu');
    Object.assign(globalThis, webgpu.globals);
    const instances: GPU[] = [];
    const host = platform() as { requestAdapterFor: (slot: number, count: number) => Promise<GPUAdapter | null> };
    const instance = (slot: number) => (args[2] === 'dropped' && slot > 0 ? webgpu.create([]) : (instances[slot] ??= webgpu.create([])));
    host.requestAdapterFor = (slot) => instance(slot).requestAdapter();
  }
  const n = 6 * 2 ** 20; // 24 MiB an array: ~1.3 MiB inputs a chunk under a 12 MiB limit, staged
  const x = Float32Array.from({ length: n }, (_, i) => (i % 1000) / 8);
  const y = Float32Array.from({ length: n }, (_, i) => (i % 77) - 30);
  const kernel = (a: number, u: number, v: number) => a * u + v;
  const expected = (await vectorize(['float32(float32, float32, float32)'], { target: 'cpu' })(kernel)(2, x, y)) as Float32Array;
  const saxpy = vectorize(['float32(float32, float32, float32)'], { target: 'gpu' })(kernel);
  setIdleReleaseMs(Infinity);
  setGpuOptions({ devices: 2, memoryLimit: 12 * 2 ** 20 });
  setStagingPoolLimit(pool);
  let wrong = 0;
  for (let call = 0; call < 10; call++) {
    const got = (await saxpy(2, x, y)) as Float32Array;
    (globalThis as { gc?: () => void }).gc?.(); // collections between calls, as a long run has
    if (got.some((v, i) => v !== expected[i])) wrong++;
  }
  console.log(JSON.stringify({ wrong }));
  await shutdownDevice();
} else {
  const runs = Number(option('--runs') ?? 10);
  const pools = (option('--pool-kib') ?? `0,${48 * 1024}`).split(',').map(Number);
  const INSTANCES = args.includes('--one-instance') ? 'one' : args.includes('--dropped-instance') ? 'dropped' : 'kept';
  for (const pool of pools) {
    const ends: string[] = [];
    for (let r = 0; r < runs; r++) {
      const child = spawnSync(process.execPath, ['--expose-gc', ...process.execArgv, fileURLToPath(import.meta.url), '--child', String(pool), INSTANCES], { encoding: 'utf8', timeout: 120_000 });
      const line = child.stdout.split('\n').find((l) => l.startsWith('{'));
      const wrong = line ? (JSON.parse(line) as { wrong: number }).wrong : undefined;
      ends.push(child.status === 0 && wrong === 0 ? 'ok' : child.signal ? `signal ${child.signal}` : wrong ? `${wrong} wrong results` : `exit ${child.status}: ${child.stderr.trim().split('\n').slice(-2).join(' | ')}`);
      console.error(`pool ${pool} KiB, run ${r + 1}: ${ends.at(-1)}`);
    }
    const ok = ends.filter((e) => e === 'ok').length;
    console.log(`staging pools of ${pool} KiB: ${ok} of ${runs} runs ended well${ok < runs ? `; ${ends.filter((e) => e !== 'ok').join('; ')}` : ''}`);
  }
}
