import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { DeviceError, TargetUnavailableError } from '../../../src/errors.js';
import { downloadBuffer, uploadToBuffer } from '../../../src/targets/gpu/runtime/buffers.js';
import {
  acquireDevice,
  assertDeviceAlive,
  describeAdapter,
  holdDevice,
  isDeviceAlive,
  isGpuAvailable,
  resetDevice,
  runScoped,
  setIdleReleaseMs,
  shutdownDevice,
  withDevice,
  type GpuContext,
} from '../../../src/targets/gpu/runtime/device.js';
import { describeGpu } from '../../gpu-available.js';

const childScript = fileURLToPath(new URL('./fixtures/gpu-child.ts', import.meta.url));

/** Runs the fixture in a fresh node process; returns its parsed JSON line, exit status and wall time. */
function runChild(mode: string, env: Record<string, string | undefined> = {}) {
  const childEnv = { ...process.env, ...env };
  for (const [name, value] of Object.entries(childEnv)) if (value === undefined) delete childEnv[name];
  const started = performance.now();
  const child = spawnSync(process.execPath, ['--import', 'tsx', childScript, mode], {
    env: childEnv,
    encoding: 'utf8',
    timeout: 15_000, // a child that does not exit by itself is killed, and the test fails
  });
  const ms = performance.now() - started;
  const line = child.stdout.split('\n').find((l) => l.startsWith('{'));
  return { status: child.status, signal: child.signal, ms, json: line ? JSON.parse(line) : undefined, stderr: child.stderr };
}

const SQUARE_PLUS_ONE = `
  @group(0) @binding(0) var<storage, read_write> xs: array<u32>;
  @compute @workgroup_size(64) fn main(@builtin(global_invocation_id) id: vec3u) {
    if (id.x < arrayLength(&xs)) { xs[id.x] = xs[id.x] * xs[id.x] + 1u; }
  }`;

/** Encodes xs[i] = xs[i]² + 1 over `buffer` with an explicit layout, dispatching `workgroups`. */
function encodeSquarePlusOne(ctx: GpuContext, buffer: GPUBuffer, workgroups: number): GPUCommandBuffer {
  const { device } = ctx;
  const bindGroupLayout = device.createBindGroupLayout({
    entries: [{ binding: 0, visibility: GPUShaderStage.COMPUTE, buffer: { type: 'storage' } }],
  });
  const pipeline = device.createComputePipeline({
    layout: device.createPipelineLayout({ bindGroupLayouts: [bindGroupLayout] }),
    compute: { module: device.createShaderModule({ code: SQUARE_PLUS_ONE }), entryPoint: 'main' },
  });
  const bindGroup = device.createBindGroup({ layout: bindGroupLayout, entries: [{ binding: 0, resource: { buffer } }] });
  const encoder = device.createCommandEncoder();
  const pass = encoder.beginComputePass();
  pass.setPipeline(pipeline);
  pass.setBindGroup(0, bindGroup);
  pass.dispatchWorkgroups(workgroups);
  pass.end();
  return encoder.finish();
}

const STORAGE_RW = () => GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

afterEach(() => setIdleReleaseMs(200));

describeGpu('acquireDevice', () => {
  it('creates one device with the adapter’s limits and shares it', async () => {
    const ctx = await acquireDevice();
    expect(await acquireDevice()).toBe(ctx);
    expect(ctx.generation).toBeGreaterThanOrEqual(1);
    expect(typeof ctx.adapterInfo.vendor).toBe('string');
    expect(ctx.limits.maxComputeWorkgroupsPerDimension).toBeGreaterThanOrEqual(65535);
    // Asked for the adapter's own value, above WebGPU's default of 128 MiB where the adapter has more.
    expect(ctx.limits.maxStorageBufferBindingSize).toBeGreaterThanOrEqual(128 * 2 ** 20);
    expect(ctx.limits.maxBufferSize).toBeGreaterThanOrEqual(256 * 2 ** 20);
    expect(await isGpuAvailable()).toBe(true);
    expect(await describeAdapter()).toMatch(/timestamps (yes|no), max storage binding/);
  });

  it('shares one creation between concurrent callers', async () => {
    shutdownDevice();
    const [a, b, c] = await Promise.all([acquireDevice(), acquireDevice(), acquireDevice()]);
    expect(a).toBe(b);
    expect(b).toBe(c);
  });
});

describeGpu('runScoped', () => {
  it('runs a hand-written compute shader', async () => {
    const result = await withDevice(async (ctx) => {
      const buffer = uploadToBuffer(ctx, new Uint32Array([0, 1, 2, 3, 65535, 100_000]), STORAGE_RW());
      await runScoped(ctx, () => ctx.device.queue.submit([encodeSquarePlusOne(ctx, buffer, 1)]));
      return downloadBuffer(ctx, buffer, 0, 24, new Uint32Array(6));
    });
    // 100000² + 1 wraps modulo 2³² like WGSL's u32 multiplication.
    expect([...result]).toEqual([1, 2, 5, 10, 4294836226, (100_000 * 100_000 + 1) % 2 ** 32]);
  });

  it('turns a dispatch over the limit into a DeviceError and leaves the data untouched', async () => {
    await withDevice(async (ctx) => {
      const buffer = uploadToBuffer(ctx, new Uint32Array([7, 8]), STORAGE_RW());
      const tooMany = ctx.limits.maxComputeWorkgroupsPerDimension + 1;
      const failure = runScoped(ctx, () => ctx.device.queue.submit([encodeSquarePlusOne(ctx, buffer, tooMany)]));
      await expect(failure).rejects.toBeInstanceOf(DeviceError);
      await expect(failure).rejects.toThrow(/validation error: .*65536/s);
      expect([...(await downloadBuffer(ctx, buffer, 0, 8, new Uint32Array(2)))]).toEqual([7, 8]);
    });
  });

  it('reports a bind group that does not match its layout', async () => {
    await withDevice(async (ctx) => {
      // A uniform buffer where the layout wants a storage buffer.
      const uniform = ctx.device.createBuffer({ size: 16, usage: GPUBufferUsage.UNIFORM });
      const failure = runScoped(ctx, () => ctx.device.queue.submit([encodeSquarePlusOne(ctx, uniform, 1)]));
      await expect(failure).rejects.toThrow(DeviceError);
      await expect(failure).rejects.toThrow(/WebGPU validation error: .*usage/is);
    });
  });

  it('keeps the errors of concurrent sections apart', async () => {
    await withDevice(async (ctx) => {
      const good = uploadToBuffer(ctx, new Uint32Array([3]), STORAGE_RW());
      const bad = uploadToBuffer(ctx, new Uint32Array([3]), STORAGE_RW());
      const tooMany = ctx.limits.maxComputeWorkgroupsPerDimension + 1;
      const results = await Promise.allSettled([
        runScoped(ctx, async () => {
          await sleep(20); // the bad section runs while this one waits
          ctx.device.queue.submit([encodeSquarePlusOne(ctx, good, 1)]);
          return 'good';
        }),
        runScoped(ctx, () => ctx.device.queue.submit([encodeSquarePlusOne(ctx, bad, tooMany)])),
      ]);
      expect(results[0]).toEqual({ status: 'fulfilled', value: 'good' });
      expect(results[1].status).toBe('rejected');
      expect([...(await downloadBuffer(ctx, good, 0, 4, new Uint32Array(1)))]).toEqual([10]);
    });
  });

  it('passes an error thrown by the work through unchanged and still pops its scopes', async () => {
    const ctx = await acquireDevice();
    const own = new RangeError('from the work');
    await expect(runScoped(ctx, () => { throw own; })).rejects.toBe(own);
    // The stack is balanced: a following section still sees only its own (absent) errors.
    await expect(runScoped(ctx, () => 42)).resolves.toBe(42);
  });

  it('fails work during which the device went away, instead of returning nothing done', async () => {
    const ctx = await acquireDevice();
    await expect(runScoped(ctx, () => shutdownDevice())).rejects.toThrow(/gone because it was shut down/);
    const next = await acquireDevice();
    // A loss (here: destroyed behind the library's back) reports no error scope; it is still caught.
    await expect(runScoped(next, () => next.device.destroy())).rejects.toThrow(/gone because it was lost \(destroyed/);
  });

  it('nests: an inner section runs under the outer scopes', async () => {
    const ctx = await acquireDevice();
    await expect(runScoped(ctx, async () => (await runScoped(ctx, () => 1)) + 1)).resolves.toBe(2);
  });
});

describeGpu('device lifetime', () => {
  it('releases an idle device and makes a new generation on the next acquire', async () => {
    setIdleReleaseMs(30);
    const first = await acquireDevice();
    await sleep(150);
    expect(isDeviceAlive(first)).toBe(false);
    const second = await acquireDevice();
    expect(second.generation).toBe(first.generation + 1);
    expect(() => assertDeviceAlive(first, 'this buffer')).toThrow(
      new RegExp(`generation ${first.generation}, which is gone because it was released after 30 ms idle`),
    );
  });

  it('keeps a held device, and releases it once the hold is given back', async () => {
    setIdleReleaseMs(30);
    const ctx = await acquireDevice();
    const hold = holdDevice(ctx);
    await sleep(120);
    expect(isDeviceAlive(ctx)).toBe(true);
    hold.release();
    hold.release(); // idempotent: must not release someone else's hold
    await sleep(120);
    expect(isDeviceAlive(ctx)).toBe(false);
  });

  it('replaces a lost device', async () => {
    const ctx = await acquireDevice();
    // Destroying it behind the library's back is how a loss looks from here.
    ctx.device.destroy();
    await ctx.device.lost;
    await sleep(0);
    expect(isDeviceAlive(ctx)).toBe(false);
    const next = await acquireDevice();
    expect(next.generation).toBeGreaterThan(ctx.generation);
    expect(() => assertDeviceAlive(ctx, 'this DeviceArray')).toThrow(DeviceError);
    expect(() => assertDeviceAlive(ctx, 'this DeviceArray')).toThrow(/which is gone because it was lost \(destroyed/);
  });

  it('refuses work on a shut-down device', async () => {
    const ctx = await acquireDevice();
    shutdownDevice();
    await expect(runScoped(ctx, () => 1)).rejects.toThrow(/gone because it was shut down with shutdownDevice\(\)/);
    expect(() => holdDevice(ctx)).toThrow(DeviceError);
    resetDevice();
    expect((await acquireDevice()).generation).toBe(ctx.generation + 1);
  });

  it('lets a script that used the gpu exit by itself', () => {
    const run = runChild('compute');
    expect(run.json).toEqual({ result: [1, 2, 5, 10, 17] });
    expect(run.status).toBe(0);
    expect(run.ms).toBeLessThan(10_000);
  }, 30_000);

  it('lets a script exit while a DeviceArray it never destroyed is alive', () => {
    const run = runChild('compute-keep-array');
    expect(run.json).toEqual({ result: [26, 37], kept: [1.5, 2.5] });
    expect(run.status).toBe(0);
    expect(run.ms).toBeLessThan(10_000);
  }, 30_000);
});

describe.skipIf(process.platform !== 'linux')('without a Vulkan driver', () => {
  for (const variable of ['VK_DRIVER_FILES', 'VK_ICD_FILENAMES']) {
    it(`throws TargetUnavailableError saying what is missing (${variable}), then fails fast`, () => {
      const run = runChild('acquire-twice', { VK_DRIVER_FILES: undefined, VK_ICD_FILENAMES: undefined, [variable]: '/nonexistent.json' });
      expect(run.status).toBe(0);
      const [first, second] = run.json.errors as { name: string; message: string; ms: number }[];
      expect(first!.name).toBe(TargetUnavailableError.name);
      expect(first!.message).toBe(
        `no WebGPU adapter: no Vulkan driver found: ${variable}=/nonexistent.json names no existing driver manifest. ` +
          "Unset it or point it at one (lavapipe's is /usr/share/vulkan/icd.d/lvp_icd.json). " +
          "On Debian 12, install Mesa >= 24 from bookworm-backports (packages mesa-vulkan-drivers and libvulkan1) for lavapipe, a CPU Vulkan driver, or use target 'cpu' or 'parallel'",
      );
      // The failure is remembered: the second call does not ask Dawn again.
      expect(second!.message).toBe(first!.message);
      expect(second!.ms).toBeLessThan(5);
    }, 30_000);
  }
});
