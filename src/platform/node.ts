/**
 * The Node platform: `worker_threads` for the parallel target, Dawn's binding (the `webgpu`
 * package, an optional peer dependency loaded only when the gpu target is used) for WebGPU.
 * Installed by the package's Node entry (index.ts) as a side effect of importing it.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import os from 'node:os';
import { delimiter, join } from 'node:path';
import { TargetUnavailableError } from '../errors.js';
import { startNodeGpuWorker, startNodeWorker } from '../targets/parallel/spawn-node.js';
import { functionOrigin } from './function-origin.js';
import { DAWN_LIMIT_WARNING, withStderrLinesDropped } from './native-stderr.js';
import { type ContextStore, installPlatform, type Platform } from './platform.js';

type WebGpuModule = typeof import('webgpu');

// Module-level on purpose: dawn.node crashes the process if the `GPU` object is garbage-collected
// while a device made from it is alive (see targets/gpu/runtime/device.ts). Never reset once set.
let gpuInstance: GPU | undefined;

/** Dawn instances pinned to one GPU each (see requestAdapterFor); module-level for the same reason. */
const pinnedInstances = new Map<number, GPU>();
/** Pinned instances are made one at a time: each sets DRI_PRIME for the moment Vulkan reads it. */
let pinning: Promise<unknown> = Promise.resolve();
/** Dawn's flags for every instance. */
// Dawn rounds timestamp queries to 65.5 µs by default (a browser side-channel defence); in a
// Node process it only blurs kernel timings, which are often shorter than that.
const DAWN_FLAGS = ['disable-dawn-features=timestamp_quantization'];

/** The creation of {@link gpuInstance} under way: concurrent first requests share it. */
let gpuLoading: Promise<GPU> | undefined;

/**
 * The process's Dawn instance, created once. Concurrent first calls (two devices opened at once,
 * `setGpuOptions({ devices: 2 })` on one adapter) must share one creation: each making its own
 * instance left the first one unreferenced, and dawn.node aborted the process once it was
 * collected while its device lived (a pthread assertion, "std::system_error", a segfault).
 */
function loadGpu(): Promise<GPU> {
  if (gpuInstance) return Promise.resolve(gpuInstance);
  gpuLoading ??= (async () => {
    const gpu = (await loadWebGpu()).create(DAWN_FLAGS);
    const listed = firstAdapterRequest(gpu);
    gpuInstance = gpu;
    await listed.catch(() => undefined); // a failure is reported by the request that needs the adapter
    return gpu;
  })().finally(() => (gpuLoading = undefined));
  return gpuLoading;
}

/**
 * An instance's first adapter request. Dawn lists the GPUs then, and on lavapipe and AMD's drivers
 * prints two "artificially reduced" lines from native code as it does (see native-stderr.ts): the
 * list is made here, synchronously inside the call, with those two lines kept off stderr. Later
 * requests reuse the list and print nothing.
 */
function firstAdapterRequest(gpu: GPU): Promise<GPUAdapter | null> {
  return withStderrLinesDropped(DAWN_LIMIT_WARNING, () => gpu.requestAdapter());
}

/** PCI vendors whose display controllers are GPUs (NVIDIA, AMD, Intel), not a server's or a VM's console VGA. */
const GPU_VENDORS = ['0x10de', '0x1002', '0x8086'];

/**
 * The PCI addresses of the host's GPUs (display and 3D controllers of GPU vendors), in bus order:
 * what Mesa's device-select layer names them by. Empty where /sys cannot be read.
 */
function gpuBuses(): string[] {
  const root = '/sys/bus/pci/devices';
  const read = (bus: string, file: string) => readFileSync(join(root, bus, file), 'utf8').trim();
  try {
    return readdirSync(root)
      .filter((bus) => /^0x030[02]/.test(read(bus, 'class')) && GPU_VENDORS.includes(read(bus, 'vendor')))
      .sort();
  } catch {
    return [];
  }
}

/**
 * The `DRI_PRIME` value with which a Vulkan instance created now sees only GPU `slot` of the
 * host (Mesa's device-select layer; `pci-0000_00_06_0!`), or undefined where the host has fewer
 * than two GPUs or no GPU `slot`. Only the main thread's `process.env` reaches native code: a
 * worker's is its own copy, so a Dawn instance made in a worker is pinned by setting this in the
 * main thread around the worker's first `requestAdapter` ({@link withGpuSelected}: the gpu
 * target's worker per GPU, targets/gpu/runtime/device-workers.ts).
 *
 * @param slot 0 … GPUs − 1
 * @example
 * process.env.DRI_PRIME = gpuSelector(1) ?? process.env.DRI_PRIME;
 */
export function gpuSelector(slot: number): string | undefined {
  const buses = gpuBuses();
  return buses.length >= 2 && slot < buses.length ? `pci-${buses[slot]!.replace(/[:.]/g, '_')}!` : undefined;
}

/**
 * With several GPUs, device `slot` gets a Dawn instance of its own that sees only GPU `slot`:
 * Dawn keeps the first adapter of a name, two identical GPUs have the same name, and WebGPU's
 * adapter info has no bus, so one instance cannot reach the second card. Mesa's Vulkan
 * device-select layer (mesa-vulkan-drivers) shows a process only the GPU that `DRI_PRIME=pci-…!`
 * names, and reads it when an instance first enumerates adapters: it is set for that moment only.
 * Without several GPUs (lavapipe, one card), every slot asks the one instance again.
 */
async function requestAdapterFor(slot: number, count: number): Promise<GPUAdapter | null> {
  if (count <= 1 || gpuSelector(slot) === undefined) return (await loadGpu()).requestAdapter();
  const pinned = pinnedInstances.get(slot);
  if (pinned) return pinned.requestAdapter();
  const webgpu = await loadWebGpu();
  return withGpuSelected(slot, count, () => {
    const gpu = pinnedInstances.get(slot) ?? webgpu.create(DAWN_FLAGS);
    pinnedInstances.set(slot, gpu);
    return firstAdapterRequest(gpu);
  });
}

/**
 * Runs `open` with `DRI_PRIME` naming GPU `slot` (see {@link gpuSelector}), one `open` at a time:
 * for a Dawn instance's first adapter request, made in this thread or in a gpu worker (whose own
 * `process.env` native code does not read). Just runs `open` where there is nothing to choose.
 */
function withGpuSelected<T>(slot: number, count: number, open: () => Promise<T>): Promise<T> {
  const selector = count > 1 ? gpuSelector(slot) : undefined;
  if (selector === undefined) return open();
  const run = pinning.then(async () => {
    const before = process.env.DRI_PRIME;
    process.env.DRI_PRIME = selector;
    try {
      return await open();
    } finally {
      if (before === undefined) delete process.env.DRI_PRIME;
      else process.env.DRI_PRIME = before;
    }
  });
  pinning = run.catch(() => {});
  return run;
}

async function loadWebGpu(): Promise<WebGpuModule> {
  let webgpu: WebGpuModule;
  try {
    // Loaded on first use, not at import time: the package is an optional peer dependency, and a
    // machine where dawn.node cannot load must still be able to use the cpu and parallel targets.
    webgpu = await import('webgpu');
  } catch (e) {
    const missing = (e as { code?: string }).code === 'ERR_MODULE_NOT_FOUND' && /'webgpu'/.test(messageOf(e));
    throw new TargetUnavailableError(
      missing
        ? "The gpu target needs the `webgpu` package (Dawn's WebGPU for Node), an optional peer dependency that is not installed: " +
            "run `npm install webgpu`, pass your own device with `setDevice(device)`, or use target 'cpu' or 'parallel'."
        : `The \`webgpu\` package (Dawn's node binding) could not be loaded on ${process.platform}-${process.arch}: ` +
            `${messageOf(e)}. Reinstall it with \`npm install webgpu\`, pass your own device with \`setDevice(device)\`, or use target 'cpu' or 'parallel'.`,
      { cause: e },
    );
  }
  // Install GPUBufferUsage, GPUMapMode, … once: WebGPU code refers to them as globals.
  const globalScope = globalThis as Record<string, unknown>;
  for (const [name, value] of Object.entries(webgpu.globals)) {
    if (!(name in globalScope)) globalScope[name] = value;
  }
  return webgpu;
}

/**
 * Says why Dawn found no adapter, as far as can be told from outside: no Vulkan loader, no Vulkan
 * driver, or drivers that Dawn rejected (Debian 12's Mesa 22.3 is too old for Dawn).
 */
function diagnoseMissingAdapter(): string {
  const fallback = "use target 'cpu' or 'parallel'";
  const install = `On Debian 12, install Mesa >= 24 from bookworm-backports (packages mesa-vulkan-drivers and libvulkan1) for lavapipe, a CPU Vulkan driver, or ${fallback}`;
  if (process.platform !== 'linux') {
    return `WebGPU found no usable GPU on ${process.platform}. Use a machine with a GPU, or ${fallback}`;
  }
  if (!findVulkanLoader()) {
    return `the Vulkan loader (libvulkan.so.1) is not installed. ${install}`;
  }
  const override = process.env.VK_DRIVER_FILES ? 'VK_DRIVER_FILES' : process.env.VK_ICD_FILENAMES ? 'VK_ICD_FILENAMES' : undefined;
  if (override) {
    const named = (process.env[override] ?? '').split(delimiter).filter(Boolean);
    const existing = named.filter((p) => existsSync(p));
    if (existing.length === 0) {
      return `no Vulkan driver found: ${override}=${process.env[override]} names no existing driver manifest. Unset it or point it at one (lavapipe's is /usr/share/vulkan/icd.d/lvp_icd.json). ${install}`;
    }
    return `Dawn accepted none of the Vulkan drivers named by ${override} (${existing.join(', ')}); Dawn needs Mesa >= 24 for lavapipe. ${install}`;
  }
  const manifests = findDriverManifests();
  if (manifests.length === 0) return `no Vulkan driver found. ${install}`;
  return (
    `Vulkan drivers are installed (${manifests.join(', ')}) but Dawn accepted none of them ` +
    `(Debian 12's Mesa 22.3 is too old for Dawn, which needs Mesa >= 24). ${install}`
  );
}

function findVulkanLoader(): boolean {
  const dirs = [
    ...(process.env.LD_LIBRARY_PATH ?? '').split(delimiter).filter(Boolean),
    `/usr/lib/${process.arch === 'arm64' ? 'aarch64' : 'x86_64'}-linux-gnu`,
    '/usr/lib64',
    '/usr/lib',
    '/lib64',
    '/usr/local/lib',
  ];
  return dirs.some((dir) => existsSync(join(dir, 'libvulkan.so.1')));
}

function findDriverManifests(): string[] {
  const dataDirs = (process.env.XDG_DATA_DIRS ?? '/usr/local/share:/usr/share').split(delimiter).filter(Boolean);
  const dirs = ['/etc/vulkan/icd.d', ...dataDirs.map((d) => join(d, 'vulkan', 'icd.d'))];
  const found = new Set<string>();
  for (const dir of dirs) {
    try {
      for (const name of readdirSync(dir)) if (name.endsWith('.json')) found.add(name);
    } catch {
      // a directory that does not exist holds no drivers
    }
  }
  return [...found].sort();
}

function messageOf(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

/**
 * An AsyncLocalStorage that is enabled only while one of its runs is in progress. Once enabled,
 * Node installs promise hooks for the whole process, and every promise afterwards pays for them
 * (about 0.35 µs each here, several per gpu call: a chain of 4,096-element calls creates them by
 * the thousand); `disable()` when the last run has settled removes the hooks until the next run.
 */
function createContextStore<T>(): ContextStore<T> {
  const store = new AsyncLocalStorage<T>();
  let running = 0;
  const settled = () => {
    if (--running === 0) store.disable();
  };
  return {
    run<R>(value: T, fn: () => R): R {
      running++;
      let result: R;
      try {
        result = store.run(value, fn);
      } catch (error) {
        settled();
        throw error;
      }
      const thenable = result as { then?: unknown } | null | undefined;
      if (thenable !== null && typeof thenable === 'object' && typeof thenable.then === 'function') {
        (thenable as PromiseLike<unknown>).then(settled, settled);
      } else settled();
      return result;
    },
    getStore: () => store.getStore(),
    followsAsync: true,
  };
}

/** glibc's non-temporal threshold once read (null: not to be had here). */
let copyThreshold: number | null | undefined;

/**
 * glibc's `x86_non_temporal_threshold` as this process uses it: listed by the dynamic loader
 * (`ld.so --list-tunables`, glibc ≥ 2.33), which applies the same `GLIBC_TUNABLES` as this
 * process was started with. glibc derives it from the caches (three quarters of the shared cache);
 * 151 MiB on the 16-core GPU host, 181 MiB on a 2-core VM. Read once, on the first large host
 * call (a process start, ~2 ms).
 */
function hostCopyThreshold(): number | undefined {
  if (copyThreshold === undefined) copyThreshold = readNonTemporalThreshold() ?? null;
  return copyThreshold ?? undefined;
}

function readNonTemporalThreshold(): number | undefined {
  if (process.platform !== 'linux' || process.arch !== 'x64') return undefined;
  for (const loader of ['/lib64/ld-linux-x86-64.so.2', 'ld.so']) {
    try {
      const listed = execFileSync(loader, ['--list-tunables'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'], timeout: 2000 });
      const found = /glibc\.cpu\.x86_non_temporal_threshold:\s*0x([0-9a-f]+)/i.exec(listed);
      if (found) return parseInt(found[1]!, 16);
    } catch {
      // no such loader, or one without --list-tunables (musl, older glibc): try the next
    }
  }
  return undefined;
}

export const nodePlatform: Platform = {
  name: 'node',
  cores: () => os.availableParallelism(),
  parallelUnavailable: () => undefined,
  canBlock: () => true,
  startWorker: startNodeWorker,
  loadGpu,
  requestAdapterFor,
  gpuCount: () => Math.max(1, gpuBuses().length),
  withGpuSelected,
  startGpuWorker: startNodeGpuWorker,
  diagnoseMissingAdapter,
  createContextStore,
  functionOrigin,
  hostCopyThreshold,
};

installPlatform(nodePlatform);
