/**
 * The process-wide WebGPU device of the gpu target: created lazily, shared by every call, released
 * when the library has been idle for a while, and replaced after a device loss.
 *
 * Lifetimes, and why they are what they are:
 * - The `GPU` object returned by `create()` stays referenced from this module for the rest of the
 *   process once created. dawn.node crashes the process (inside `InstanceBase::ProcessEvents`) if
 *   that object is garbage-collected while a device made from it, or anything made from that
 *   device, is still alive — and callers may keep buffers of a released device around.
 * - A device is "held" while work runs on it (`withDevice`, `holdDevice`) and while a
 *   `DeviceArray` lives on it. When the last hold is released and `idleReleaseMs` pass without a
 *   new one, the device is destroyed: an idle device keeps its memory and driver threads, and
 *   with Dawn it has been seen to keep a core busy and the process alive (on lavapipe neither
 *   happens; we do not rely on that). The timer is `unref()`ed so it never keeps the process
 *   alive itself.
 * - Each device gets a new `generation`. Anything bound to an older generation (a buffer, a
 *   `DeviceArray`) is dead: its data went with its device.
 * - Several devices (`setGpuOptions({ devices })`, multi-device.ts): each is a *slot* with its own
 *   device, holds and idle timer, replaced on its own. Code that asks for "the device" gets the
 *   slot of the async context it runs in ({@link onDevice}); outside any, slot 0 — so everything
 *   written for one device runs unchanged on any of them, each call on its own device's queue.
 */
import { ArgumentError, DeviceError, TargetUnavailableError } from '../../../errors.js';
import { type ContextStore, IdleWait, platform } from '../../../platform/platform.js';
import { deviceCount } from './gpu-options.js';
import type { GPUDevice, GPUSupportedLimits, WebGpuDevice } from './webgpu-types.js';

/** What the adapter says about itself; shown in reports and error messages. */
export interface GpuAdapterInfo {
  readonly vendor: string;
  readonly architecture: string;
  readonly device: string;
  readonly description: string;
}

/** The live device and what callers need to know about it. */
export interface GpuContext {
  readonly device: GPUDevice;
  readonly adapterInfo: GpuAdapterInfo;
  /**
   * The device's limits: the adapter's own for everything in `REQUESTED_LIMITS`. A plain copy
   * ({@link plainLimits}): calls read several limits each.
   */
  readonly limits: GPUSupportedLimits;
  /** Whether the device has the `timestamp-query` feature (kernel timings in benchmarks). */
  readonly hasTimestamps: boolean;
  /**
   * Whether the device has the `subgroups` feature (WGSL `enable subgroups;`): the tree folds of
   * tree-fold.ts then combine lanes with subgroup shuffles instead of workgroup memory and barriers.
   */
  readonly hasSubgroups: boolean;
  /** 1 for the first device of the process, +1 for each replacement (after a loss or a release). */
  readonly generation: number;
  /** Passed in with {@link setDevice}: the caller owns it, so it is never destroyed or released here. */
  readonly userSupplied?: boolean;
  /** Which of the process's devices this is: 0, or 1… when several are used (`setGpuOptions({ devices })`). */
  readonly slot: number;
}

/** A claim on the device that keeps it from being released while idle; see {@link holdDevice}. */
export interface DeviceHold {
  /** Gives the claim back. Idempotent: a second call does nothing. */
  release(): void;
}

/**
 * The limits asked for at the adapter's own value: WebGPU's defaults are far below what real
 * hardware offers (128 MiB storage bindings vs 2 GiB on an H200), and asking for more than the
 * adapter offers fails `requestDevice`.
 */
const REQUESTED_LIMITS = [
  'maxStorageBufferBindingSize',
  'maxBufferSize',
  'maxComputeWorkgroupsPerDimension',
  'maxStorageBuffersPerShaderStage',
  'maxComputeWorkgroupStorageSize',
  'maxComputeInvocationsPerWorkgroup',
  'maxComputeWorkgroupSizeX',
  'maxComputeWorkgroupSizeY',
  'maxComputeWorkgroupSizeZ',
] as const;

const DEFAULT_IDLE_RELEASE_MS = 200;
/** setTimeout fires at once for delays beyond this (with a warning); treat them as "never". */
const MAX_TIMER_MS = 2 ** 31 - 1;

/** One device and its bookkeeping; replaced as a whole, so stale holds cannot touch a newer one. */
interface LiveDevice {
  readonly ctx: GpuContext;
  holds: number;
  /** Releases the device after `idleReleaseMs` without holds. */
  readonly idle: IdleWait;
}

/** The live device of each slot (index = slot), and each slot's creation under way. */
const live: (LiveDevice | undefined)[] = [];
const pendingAcquire: (Promise<GpuContext> | undefined)[] = [];
/** Which slot the async context runs on (see {@link onDevice}); none set means slot 0. */
let slotStore: ContextStore<number> | undefined;
let cachedFailure: TargetUnavailableError | undefined;
let lastGeneration = 0;
let idleReleaseMs = DEFAULT_IDLE_RELEASE_MS;
/** The device passed to setDevice, and why it can no longer be used once it was lost. */
let userDevice: GPUDevice | undefined;
let userDeviceLost: string | undefined;
/** Why each ended generation ended and which device it was, for the messages of callers that still use it. */
const endedGenerations = new Map<number, { reason: string; label: string }>();

/**
 * Returns the process-wide WebGPU device, creating it on first use (or after a release or a loss).
 * Concurrent calls share one creation. A failure to get an adapter is remembered, so later calls
 * fail at once with the same message until {@link resetDevice}.
 *
 * The device is released when idle: wrap the work of a call in {@link withDevice} (or a
 * {@link holdDevice} / `release()` pair) so it is not destroyed under you.
 *
 * @returns the live device's context
 * @throws TargetUnavailableError when `webgpu` cannot load or there is no usable adapter; the
 *   message says what is missing and how to get it
 * @example
 * const ctx = await acquireDevice();
 * console.log(ctx.adapterInfo.description, ctx.limits.maxStorageBufferBindingSize);
 */
export async function acquireDevice(): Promise<GpuContext> {
  const slot = currentSlot();
  const record = live[slot];
  if (record) {
    armIdleTimer(record);
    return record.ctx;
  }
  if (cachedFailure) {
    throw new TargetUnavailableError(cachedFailure.message, { cause: cachedFailure });
  }
  return (pendingAcquire[slot] ??= createDevice(slot).finally(() => {
    pendingAcquire[slot] = undefined;
  }));
}

/**
 * The slot that device work in this async context runs on: the one {@link onDevice} set, else 0.
 *
 * @example
 * onDevice(1, () => currentSlot()); // 1
 */
export function currentSlot(): number {
  return slotStore?.getStore() ?? 0;
}

/**
 * Whether the async context chose a slot with {@link onDevice} (a call then stays on it).
 */
export function slotChosen(): boolean {
  return slotStore?.getStore() !== undefined;
}

/**
 * Runs `fn` with every device lookup inside it (and in the async work it starts) on `slot`'s device.
 *
 * @param slot 0 … devices − 1
 * @param fn the work
 * @returns what `fn` returns
 * @example
 * await onDevice(1, () => saxpy(2, xs, ys)); // the call runs on the second device
 */
export function onDevice<T>(slot: number, fn: () => T): T {
  if (slotStore?.getStore() === slot) return fn();
  slotStore ??= platform().createContextStore<number>();
  return slotStore.run(slot, fn);
}

async function createDevice(slot: number): Promise<GpuContext> {
  if (userDevice && slot === 0) return adoptUserDevice(userDevice);
  try {
    // One device: the process's WebGPU, as always. Several: the platform pins each slot to a GPU
    // of its own where the host has several, else asks the one adapter again for each.
    const count = deviceCount();
    const adapter = count <= 1 ? await (await platform().loadGpu()).requestAdapter() : await platform().requestAdapterFor(slot, count);
    if (!adapter) throw new TargetUnavailableError(`no WebGPU adapter: ${platform().diagnoseMissingAdapter()}`);
    const requiredLimits: Record<string, number> = {};
    for (const name of REQUESTED_LIMITS) {
      const value = adapter.limits[name];
      if (typeof value === 'number') requiredLimits[name] = value;
    }
    const hasTimestamps = adapter.features.has('timestamp-query');
    const hasSubgroups = adapter.features.has('subgroups');
    const requiredFeatures: GPUFeatureName[] = [];
    if (hasTimestamps) requiredFeatures.push('timestamp-query');
    if (hasSubgroups) requiredFeatures.push('subgroups' as GPUFeatureName);
    let device: GPUDevice;
    try {
      device = await adapter.requestDevice({ requiredLimits, requiredFeatures });
    } catch (e) {
      throw new TargetUnavailableError(
        `the WebGPU adapter '${adapter.info.description || adapter.info.vendor}' refused to create a device: ${messageOf(e)}`,
        { cause: e },
      );
    }
    const ctx: GpuContext = {
      device,
      adapterInfo: {
        vendor: adapter.info.vendor,
        architecture: adapter.info.architecture,
        device: adapter.info.device,
        description: adapter.info.description,
      },
      limits: plainLimits(device.limits),
      hasTimestamps,
      hasSubgroups,
      generation: ++lastGeneration,
      slot,
    };
    return goLive(ctx);
  } catch (e) {
    if (e instanceof TargetUnavailableError) {
      cachedFailure = e;
      throw e;
    }
    throw new DeviceError(`creating the WebGPU device failed: ${messageOf(e)}`, { cause: e });
  }
}

function goLive(ctx: GpuContext): GpuContext {
  const record: LiveDevice = {
    ctx,
    holds: 0,
    idle: new IdleWait(() => {
      if (record.holds === 0) dropDevice(record, `it was released after ${idleReleaseMs} ms idle`, true);
    }),
  };
  lastAdapters[ctx.slot] = ctx.adapterInfo;
  live[ctx.slot] = record;
  void ctx.device.lost.then((info) => {
    const why = `it was lost (${info.reason}: ${info.message || 'no message'})`;
    if (ctx.userSupplied && userDevice === ctx.device) userDeviceLost = why;
    // A device we destroyed ourselves was already dropped (with its own reason) before destroy().
    if (live[ctx.slot] === record) {
      dropDevice(record, why, false);
      lostHandlers.forEach((handler) => handler(ctx.slot));
    }
  });
  armIdleTimer(record);
  return ctx;
}

function adoptUserDevice(device: GPUDevice): GpuContext {
  if (userDeviceLost) {
    throw new DeviceError(`The device passed with setDevice() can no longer be used because ${userDeviceLost}; pass a new one with setDevice(device).`);
  }
  // `adapterInfo` is on GPUDevice in current browsers and Dawn; older ones lack it.
  const info = (device as { adapterInfo?: Partial<GpuAdapterInfo> }).adapterInfo ?? {};
  return goLive({
    device,
    adapterInfo: {
      vendor: info.vendor ?? '',
      architecture: info.architecture ?? '',
      device: info.device ?? '',
      description: info.description || 'a device passed with setDevice()',
    },
    limits: plainLimits(device.limits),
    hasTimestamps: device.features.has('timestamp-query'),
    hasSubgroups: device.features.has('subgroups'),
    generation: ++lastGeneration,
    userSupplied: true,
    slot: 0,
  });
}

/**
 * Makes the gpu target use `device`, a `GPUDevice` you created (from `navigator.gpu` in a page, from
 * the `webgpu` package or another binding in Node), instead of creating its own. The library never
 * destroys it and never releases it when idle; device arrays made before on another device become
 * unusable. Pass `undefined` to go back to the library's own device.
 *
 * @param device a WebGPU device, or undefined
 * @throws ArgumentError when `device` is not a GPUDevice
 * @example
 * const adapter = await navigator.gpu.requestAdapter();
 * setDevice(await adapter!.requestDevice());
 * const f = vectorize(['float32(float32)'], { target: 'gpu' })((x) => 2 * x);
 */
export function setDevice(device: WebGpuDevice | undefined): void {
  if (device !== undefined) {
    const candidate = device as Partial<WebGpuDevice> | null;
    if (candidate === null || typeof candidate !== 'object' || typeof candidate.createBuffer !== 'function' || typeof candidate.queue !== 'object') {
      throw new ArgumentError(`setDevice: expected a GPUDevice (from adapter.requestDevice()) or undefined, found ${candidate === null ? 'null' : typeof candidate}.`);
    }
  }
  const first = live[0];
  if (first) dropDevice(first, device ? 'it was replaced with setDevice()' : 'setDevice(undefined) went back to the library\'s own device', !first.ctx.userSupplied);
  // The structural WebGpuDevice is what a caller can name; the device itself is a full GPUDevice.
  userDevice = device as GPUDevice | undefined;
  userDeviceLost = undefined;
  cachedFailure = undefined;
}

/**
 * The live device now, without waiting: undefined when there is none yet (or it was released or
 * lost). Calls use it to record their work in the same turn of the event loop as the call.
 *
 * @example
 * const ctx = liveDevice() ?? (await acquireDevice());
 */
export function liveDevice(): GpuContext | undefined {
  const record = live[currentSlot()];
  if (!record) return undefined;
  if (record.holds === 0) armIdleTimer(record);
  return record.ctx;
}

/** The adapter each slot's latest device came from, for naming a slot whose device is gone. */
const lastAdapters: GpuAdapterInfo[] = [];

/**
 * {@link deviceLabel} of a slot's device, live or not: `GPU device 1 (llvmpipe …)`.
 *
 * @param slot the slot
 */
export function slotLabel(slot: number): string {
  const record = live[slot];
  if (record) return deviceLabel(record.ctx);
  const info = lastAdapters[slot];
  const name = info ? info.description || info.device || info.vendor : '';
  return name ? `GPU device ${slot} (${name})` : `GPU device ${slot}`;
}

/** Called with the slot of a device that was lost (not dropped by the library). */
const lostHandlers: ((slot: number) => void)[] = [];

/**
 * Registers `handler` to hear of each device loss (multi-device.ts stops splitting calls onto it).
 *
 * @param handler called with the lost device's slot
 */
export function onDeviceLost(handler: (slot: number) => void): void {
  lostHandlers.push(handler);
}

/**
 * A device's name for messages: `GPU device 1 (llvmpipe …)`, or `the GPU device (…)` when the
 * process uses one.
 *
 * @param ctx the device
 */
export function deviceLabel(ctx: Pick<GpuContext, 'slot' | 'adapterInfo'>): string {
  lastAdapters[ctx.slot] = ctx.adapterInfo;
  const a = ctx.adapterInfo;
  const name = a.description || a.device || a.vendor;
  const what = ctx.slot === 0 && live.length <= 1 ? 'the GPU device' : `GPU device ${ctx.slot}`;
  return name ? `${what} (${name})` : what;
}

/**
 * Destroys the live device (if any) now and forgets a remembered failure, so the next
 * {@link acquireDevice} starts from scratch: after installing a driver, in tests, or to retry.
 *
 * @example
 * resetDevice();
 * const ok = await isGpuAvailable(); // asks Dawn again
 */
export function resetDevice(): void {
  cachedFailure = undefined;
  for (const record of live) if (record) dropDevice(record, 'it was reset with resetDevice()', !record.ctx.userSupplied);
  resetHandlers.forEach((handler) => handler());
}

/** Called by {@link resetDevice}: forget what was learnt about the devices. */
const resetHandlers: (() => void)[] = [];

/**
 * Registers `handler` to run on {@link resetDevice} (multi-device.ts uses lost devices again).
 *
 * @param handler the handler
 */
export function onDeviceReset(handler: () => void): void {
  resetHandlers.push(handler);
}

/**
 * Destroys the live device now, whatever still holds it. Device arrays on it become unusable
 * (their data is gone). The next {@link acquireDevice} creates a new device.
 *
 * @example
 * process.once('beforeExit', shutdownDevice);
 */
export function shutdownDevice(): void {
  for (const record of live) if (record) dropDevice(record, 'it was shut down with shutdownDevice()', !record.ctx.userSupplied);
}

/**
 * Destroys the live device because a call ran past its limit (`timeout`, `signal`): WebGPU cannot
 * stop one dispatch, so the device goes, with the stuck work, and the next call gets a new one.
 *
 * @param reason - why, for the messages of whatever still uses the device, e.g. "a call ran past its timeout"
 * @example
 * abandonDevice('a call ran past its `timeout` of 100 ms');
 */
export function abandonDevice(reason: string, every = false): void {
  // Not destroyed: `destroy()` waits for the device's queue, so on a driver that cannot preempt
  // a kernel (lavapipe runs shaders on CPU threads) it would block this thread for as long as the
  // kernel runs — forever, for one that never ends. The device is dropped instead: nothing new
  // goes to it, and its work ends when it ends (a GPU driver's watchdog stops one that hangs).
  for (const record of every ? [...live] : [live[currentSlot()]]) {
    if (!record) continue;
    dropDevice(record, reason, false);
    const { device } = record.ctx;
    device.queue.onSubmittedWorkDone().then(
      () => device.destroy(),
      () => {},
    );
  }
}

function dropDevice(record: LiveDevice, reason: string, destroy: boolean): void {
  if (live[record.ctx.slot] !== record) return;
  live[record.ctx.slot] = undefined;
  record.idle.cancel();
  endedGenerations.set(record.ctx.generation, { reason, label: deviceLabel(record.ctx) });
  // Keep the map small: only recent generations can plausibly still be referenced.
  for (const generation of endedGenerations.keys()) {
    if (generation < record.ctx.generation - 64) endedGenerations.delete(generation);
  }
  if (destroy) record.ctx.device.destroy();
}

/**
 * Sets how long the device may sit idle (no holds) before it is destroyed.
 *
 * @param ms milliseconds; `0` releases at the next turn of the event loop, `Infinity` (or
 *   anything beyond a timer's 2³¹−1 ms) never
 * @default 200
 * @example
 * setIdleReleaseMs(Infinity); // a long-running server that calls the gpu target often
 */
export function setIdleReleaseMs(ms: number): void {
  if (!(ms >= 0)) throw new ArgumentError(`setIdleReleaseMs: expected a number of milliseconds >= 0, got ${ms}`);
  idleReleaseMs = ms;
  for (const record of live) {
    if (!record) continue;
    record.idle.cancel();
    armIdleTimer(record);
  }
}

/** How long a device may sit idle now ({@link setIdleReleaseMs}); the gpu workers' devices follow it. */
export function currentIdleReleaseMs(): number {
  return idleReleaseMs;
}

/**
 * (Re)starts the idle wait of a device without holds. A device the caller passed in is theirs to
 * keep: never released here. While holds are taken the wait is left as it is: when it ends, the
 * release checks the holds, and the last hold's release starts it again.
 */
function armIdleTimer(record: LiveDevice): void {
  if (idleReleaseMs > MAX_TIMER_MS || record.ctx.userSupplied) {
    record.idle.cancel();
    return;
  }
  if (record.holds === 0) record.idle.touch(idleReleaseMs);
}

/**
 * Claims the device so that it is not released while idle, until `release()` is called. Each
 * live `DeviceArray` holds one; a call's work holds one from its first upload to its last
 * download. Prefer {@link withDevice}, which cannot forget to release.
 *
 * @param ctx a context from {@link acquireDevice}
 * @returns the claim; `release()` is idempotent
 * @throws DeviceError when `ctx` is no longer the live device
 * @example
 * const hold = holdDevice(ctx);
 * try { await work(ctx); } finally { hold.release(); }
 */
export function holdDevice(ctx: GpuContext): DeviceHold {
  assertDeviceAlive(ctx, 'this work');
  const record = live[ctx.slot]!;
  record.holds++;
  armIdleTimer(record);
  let released = false;
  return {
    release() {
      if (released) return;
      released = true;
      // A hold on a device that has since been dropped must not count against its successor.
      if (live[record.ctx.slot] !== record) return;
      record.holds--;
      armIdleTimer(record);
    },
  };
}

/**
 * Runs `fn` with the device acquired and held; the hold is released when `fn` settles, and the
 * idle timer starts from there.
 *
 * @param fn the work; it should await its own completion (`mapAsync`, `onSubmittedWorkDone`)
 * @returns what `fn` returns
 * @example
 * const sum = await withDevice(async (ctx) => runMyKernel(ctx, data));
 */
export async function withDevice<T>(fn: (ctx: GpuContext) => T | Promise<T>): Promise<T> {
  let ctx = await acquireDevice();
  // Lost between creation and here (a loss is reported asynchronously): take its successor.
  if (!isDeviceAlive(ctx)) ctx = await acquireDevice();
  const hold = holdDevice(ctx);
  try {
    return await fn(ctx);
  } finally {
    hold.release();
  }
}

/**
 * Whether `ctx` is still the live device (not lost, released, reset or shut down).
 *
 * @example
 * if (!isDeviceAlive(ctx)) ctx = await acquireDevice();
 */
export function isDeviceAlive(ctx: GpuContext): boolean {
  return live[ctx.slot]?.ctx === ctx;
}

/**
 * Throws a DeviceError that says what happened to the device of generation `generation`, unless it
 * is the live one.
 *
 * @param ctxOrGeneration a context, or the generation number a resource was created on
 * @param what names the thing being used, for the message, e.g. "this DeviceArray"
 * @example
 * assertDeviceAlive(array.generation, 'this DeviceArray');
 */
export function assertDeviceAlive(ctxOrGeneration: GpuContext | number, what: string): void {
  const generation = typeof ctxOrGeneration === 'number' ? ctxOrGeneration : ctxOrGeneration.generation;
  if (live.some((record) => record?.ctx.generation === generation)) return;
  const ended = endedGenerations.get(generation);
  // One device: "GPU device generation 3"; several: "GPU device 1 (llvmpipe …), generation 3".
  const device = ended && !ended.label.startsWith('the ') ? `${ended.label}, generation ${generation}` : `GPU device generation ${generation}`;
  const current = live[typeof ctxOrGeneration === 'number' ? 0 : ctxOrGeneration.slot];
  const now = current ? `; the current device is generation ${current.ctx.generation}` : '';
  throw new DeviceError(
    `${what} belongs to ${device}, which is gone because ${ended?.reason ?? 'it no longer exists'}${now}. ` +
      `Its data went with it: copy the data to the device again (toDevice) and rerun the call.`,
  );
}

const ERROR_FILTERS: readonly GPUErrorFilter[] = ['validation', 'out-of-memory', 'internal'];

/** Marks the async context of a `runScoped` section, so nested sections reuse the outer scopes. */
let scopedSectionStore: ContextStore<GPUDevice> | undefined;
function scopedSection(): ContextStore<GPUDevice> {
  return (scopedSectionStore ??= platform().createContextStore<GPUDevice>());
}
/** Sections open per device, for hosts whose context store cannot follow awaits (a page). */
const openSections = new WeakMap<GPUDevice, number>();
/** Per device, the end of the last scoped section: error scopes are a per-device stack, not per call. */
const scopeQueues = new WeakMap<GPUDevice, Promise<void>>();
/** Per device, the scoped sections running or waiting for their turn (see {@link scopedSectionsPending}). */
const pendingSections = new WeakMap<GPUDevice, number>();

/**
 * How many {@link runScoped} sections are running or queued on the device. Work that issues to the
 * queue at once, without a section of its own (the lean read-back of `toHost()`), does so only when
 * this is 0: a section queued earlier (an upload, say) would otherwise issue its work after it.
 *
 * @param device the device
 * @returns the count
 */
export function scopedSectionsPending(device: GPUDevice): number {
  return pendingSections.get(device) ?? 0;
}

/**
 * Runs `fn` inside WebGPU error scopes for validation, out-of-memory and internal errors, and turns
 * a captured error into a DeviceError. Needed because WebGPU errors do not throw: an invalid
 * dispatch or bind group just skips the work, and the output silently keeps its old contents.
 * The device is held while `fn` runs.
 *
 * Error scopes are one stack per device, so sections on one device run one after another (a
 * section pushed while another awaits would catch the other's errors, or pop its scopes). Keep `fn`
 * to encoding and submitting; await completion (`mapAsync`, `onSubmittedWorkDone`) after
 * `runScoped` returns, so other calls are not queued behind your GPU time. A `runScoped` nested in
 * another on the same device runs `fn` directly under the outer scopes. Do not make `fn` wait for
 * a promise that itself waits for another, unrelated `runScoped` on the same device: that deadlocks.
 *
 * @param ctx the device to watch
 * @param fn the work; may be async
 * @returns what `fn` returns
 * @throws DeviceError with the WebGPU message when the device reported an error during `fn`, or
 *   when the device is gone (before or during `fn`); an error thrown by `fn` itself propagates
 *   unchanged
 * @example
 * await runScoped(ctx, () => ctx.device.queue.submit([encoder.finish()]));
 */
export async function runScoped<T>(ctx: GpuContext, fn: () => T | Promise<T>): Promise<T> {
  const { device } = ctx;
  const store = scopedSection();
  // Where the store cannot follow awaits (a page has no AsyncLocalStorage), a section opened while
  // another is open on this device is taken as nested in it: waiting for the other would deadlock
  // a real nesting. Concurrent gpu calls in a page then share error scopes.
  if (store.getStore() === device || (!store.followsAsync && (openSections.get(device) ?? 0) > 0)) return fn();
  const hold = holdDevice(ctx);
  pendingSections.set(device, (pendingSections.get(device) ?? 0) + 1);
  try {
    const previous = scopeQueues.get(device) ?? Promise.resolve();
    let leave!: () => void;
    scopeQueues.set(device, new Promise<void>((resolve) => (leave = resolve)));
    await previous;

    let outcome: { ok: true; value: T } | { ok: false; error: unknown };
    let popped: Promise<GPUError | null>[];
    try {
      for (const filter of ERROR_FILTERS) device.pushErrorScope(filter);
      try {
        openSections.set(device, (openSections.get(device) ?? 0) + 1);
        try {
          outcome = { ok: true, value: await store.run(device, fn) };
        } finally {
          openSections.set(device, openSections.get(device)! - 1);
        }
      } catch (error) {
        outcome = { ok: false, error };
      }
      // Issue the pops (in reverse push order) before the next section may push its own scopes.
      popped = ERROR_FILTERS.map(() => device.popErrorScope()).reverse();
    } finally {
      leave();
      pendingSections.set(device, pendingSections.get(device)! - 1);
    }

    const captured: string[] = [];
    (await Promise.allSettled(popped)).forEach((result, i) => {
      if (result.status === 'rejected') captured.push(`${ERROR_FILTERS[i]} error scope failed: ${messageOf(result.reason)}`);
      else if (result.value) captured.push(`${ERROR_FILTERS[i]} error: ${result.value.message.trim()}`);
    });
    if (!outcome.ok) throw outcome.error;
    // A lost device reports nothing and does nothing, so check it is still there.
    assertDeviceAlive(ctx, 'this GPU work');
    if (captured.length > 0) {
      throw new DeviceError(`the GPU reported an error; the work was not done. WebGPU ${captured.join('; ')}`);
    }
    return outcome.value;
  } finally {
    hold.release();
  }
}

/**
 * Whether the gpu target can run here: tries to create the device (once; the answer is cached
 * until {@link resetDevice}).
 *
 * @returns true when a WebGPU device could be created
 * @example
 * const target = (await isGpuAvailable()) ? 'gpu' : 'parallel';
 */
export async function isGpuAvailable(): Promise<boolean> {
  try {
    await acquireDevice();
    return true;
  } catch (e) {
    if (e instanceof TargetUnavailableError) return false;
    throw e;
  }
}

/**
 * One line about the adapter for reports and benchmark headers, or why there is none.
 *
 * @returns e.g. `"mesa software: llvmpipe: Mesa 25.0.7 (LLVM 15.0.6), timestamps yes, max storage binding 128 MiB"`
 * @example
 * console.log(`gpu: ${await describeAdapter()}`);
 */
export async function describeAdapter(): Promise<string> {
  try {
    const { adapterInfo: a, hasTimestamps, limits } = await acquireDevice();
    const name = [a.vendor, a.architecture].filter(Boolean).join(' ') || 'unknown adapter';
    const detail = a.description || a.device;
    return (
      `${name}${detail ? `: ${detail}` : ''}, timestamps ${hasTimestamps ? 'yes' : 'no'}, ` +
      `max storage binding ${formatBytes(limits.maxStorageBufferBindingSize)}, max buffer ${formatBytes(limits.maxBufferSize)}`
    );
  } catch (e) {
    if (e instanceof TargetUnavailableError) return `unavailable: ${e.message}`;
    throw e;
  }
}

function formatBytes(n: number): string {
  if (n >= 2 ** 30) return `${(n / 2 ** 30).toFixed(n % 2 ** 30 === 0 ? 0 : 2)} GiB`;
  if (n >= 2 ** 20) return `${(n / 2 ** 20).toFixed(n % 2 ** 20 === 0 ? 0 : 2)} MiB`;
  return `${n} B`;
}

/**
 * A plain, frozen copy of a device's limits: each read of a property of the GPUSupportedLimits
 * object itself calls into native code (about 0.1 µs in Dawn's Node binding), and a gpu call reads
 * several (binding sizes, workgroup counts). The limits of a device never change.
 */
function plainLimits(limits: GPUSupportedLimits): GPUSupportedLimits {
  const copy: Record<string, number> = {};
  // The limits are getters on the prototype (Dawn, browsers), or own properties (a plain object).
  for (let o: object | null = limits; o && o !== Object.prototype; o = Object.getPrototypeOf(o)) {
    for (const name of Object.getOwnPropertyNames(o)) {
      const value: unknown = name in copy ? undefined : (limits as unknown as Record<string, unknown>)[name];
      if (typeof value === 'number') copy[name] = value;
    }
  }
  return Object.freeze(copy) as unknown as GPUSupportedLimits;
}

function messageOf(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}
