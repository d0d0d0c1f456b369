/**
 * Several GPU devices in one process (`setGpuOptions({ devices: n | 'all' })`).
 *
 * The mechanism is the simplest that keeps each GPU busy: one `GPUDevice` per GPU in this process,
 * each with its own queue, and every call's work recorded on one of them. Everything the runtime
 * keeps per device (pools, pipelines, batches, error scopes) was already keyed by `GPUDevice`, so a
 * call runs on device k by running in k's async context (`onDevice`, device.ts) — no worker
 * threads, no copies between processes: host arrays go straight from the caller's memory to each
 * device. (WebGPU work is asynchronous: one thread records for every device while the GPUs run.)
 *
 * - **Host arrays**: a call splits its outermost loop dimension into one consecutive block per
 *   device, runs the blocks at once (each streamed through its device when it exceeds the memory
 *   limit), and resolves when all have written their results home.
 * - **Sharded arrays** (`toDevice(x, { shard: true })`): a call on them runs once per shard on the
 *   shard's device, with the other arguments as they are, and returns sharded results.
 * - **A lost device**: the call that was using it fails with a DeviceError naming it; later calls
 *   on host arrays split over the devices that remain (until `resetDevice()`).
 */
import { ArgumentError, DeviceError } from '../../../errors.js';
import { type CallPlan, isDeviceResident } from '../../../plan.js';
import { currentSlot, onDevice, onDeviceLost, onDeviceReset, slotChosen, slotLabel } from './device.js';
import { deviceCount } from './gpu-options.js';
import { isSharded, ShardedArray, splitRows } from './sharded-array.js';
import { sliceLoop, withOverlapsCopied } from './streaming.js';

/** Slots whose device was lost: left out of later splits (a GPU that fell off the bus stays off). */
const lostSlots = new Set<number>();
onDeviceLost((slot) => {
  if (deviceCount() > 1) lostSlots.add(slot);
});
onDeviceReset(() => lostSlots.clear());

/**
 * The devices work is spread over now: 0 … devices − 1 without those lost. When every one was
 * lost, all of them again (each gets a new device, or says why it cannot).
 *
 * @example
 * setGpuOptions({ devices: 2 }); usableSlots(); // [0, 1]
 */
export function usableSlots(): number[] {
  const all = Array.from({ length: deviceCount() }, (_, k) => k);
  const left = all.filter((k) => !lostSlots.has(k));
  return left.length > 0 ? left : all;
}

/**
 * The devices a call on host arrays is split over, or undefined to run it on the current device:
 * one device configured, a call already placed on a device (a shard's), device arrays among its
 * operands (they decide the device), or fewer than two indices in the outermost loop dimension.
 *
 * @param plan the call
 */
export function splitSlots(plan: CallPlan): number[] | undefined {
  if (deviceCount() <= 1 || slotChosen() || plan.loopShape.length === 0 || plan.loopShape[0]! < 2) return undefined;
  if (plan.operands.some((o) => o.scalar === undefined && isDeviceResident(o.data))) return undefined;
  const slots = usableSlots();
  return slots.length > 1 ? slots.slice(0, plan.loopShape[0]) : undefined;
}

/**
 * Runs a call on host arrays across `slots`: its outermost loop dimension cut into one block per
 * device, all at once. Rejects with the first failure once every block has settled (outputs may
 * then be partly written, as with any failed call).
 *
 * @param plan the call
 * @param slots the devices, from {@link splitSlots}
 * @param runOne runs one block on device `slot` (the current device, or that GPU's worker thread)
 */
export async function runAcross(plan: CallPlan, slots: readonly number[], runOne: (part: CallPlan, slot: number) => Promise<void>): Promise<void> {
  // Each block writes its results home when done, while others may still read their inputs.
  const separated = withOverlapsCopied(plan);
  let start = 0;
  const blocks = splitRows(separated.loopShape[0]!, slots.length).map((rows, k) => {
    const part = sliceLoop(separated, 0, start, rows);
    start += rows;
    return onDevice(slots[k]!, () => runOne(part, slots[k]!)).catch(namingDevice(slots[k]!));
  });
  const settled = await Promise.allSettled(blocks);
  const failed = settled.find((r): r is PromiseRejectedResult => r.status === 'rejected');
  if (failed) throw failed.reason;
}

/**
 * Rethrows a failure of the work on `slot`, a DeviceError that does not say which device it was
 * (WebGPU's own rejections name none) made into one that does.
 */
function namingDevice(slot: number): (e: unknown) => never {
  return (e) => {
    if (!(e instanceof DeviceError) || e.message.includes(`GPU device ${slot} `)) throw e;
    throw new DeviceError(`${slotLabel(slot)}: ${e.message}`, { cause: e });
  };
}

/** The device arrays a call names, sharded or not: its inputs, its outputs (positional or `out`). */
interface DeviceArgs {
  sharded: ShardedArray[];
  /** The device of its (unsharded) device arrays, and whether they are on more than one. */
  slot?: number;
  mixed?: boolean;
}

/**
 * Where a call on device arrays must run, when that is not simply the current device: per shard
 * for sharded arguments, or on the device of its device arrays. Returns undefined for every other
 * call (the usual path then runs it).
 *
 * @param args the call's arguments (inputs, then perhaps outputs, then perhaps `{ out, … }`)
 * @param nin the number of inputs
 * @param call runs the call with other arguments, as the ufunc does
 * @returns the call's result, or undefined
 * @throws ArgumentError (rejected) for sharded arguments that do not line up, or device arrays of
 *   two devices
 */
export function placeCall(args: readonly unknown[], nin: number, call: (args: unknown[]) => Promise<unknown>): Promise<unknown> | undefined {
  if (onCurrentDevice(args, nin)) return undefined;
  const found = deviceArgs(args, nin);
  if (!found) return undefined;
  try {
    if (found.sharded.length > 0) return runPerShard(args, nin, found.sharded, call);
    if (found.mixed) throw new ArgumentError('the call\'s device arrays are on different devices: a call runs on one device (copy them to one with toDevice(x, { device }), or shard them all)');
    return found.slot === currentSlot() ? undefined : onDevice(found.slot!, () => call([...args]));
  } catch (e) {
    return Promise.reject(e);
  }
}

/**
 * Whether the call names no sharded array and only device arrays of the current device (or none):
 * the usual call, which the usual path runs. Looked at on every call, so without allocating.
 */
function onCurrentDevice(args: readonly unknown[], nin: number): boolean {
  const slot = currentSlot();
  for (let i = 0; i < args.length; i++) if (!plainOn(args[i], slot)) return false;
  const out = outOf(args, nin);
  if (!Array.isArray(out)) return plainOn(out, slot);
  for (let i = 0; i < out.length; i++) if (!plainOn(out[i], slot)) return false;
  return true;
}

/** Whether `x` is neither a sharded array nor a device array of another device than `slot`. */
function plainOn(x: unknown, slot: number): boolean {
  if (typeof x !== 'object' || x === null || ArrayBuffer.isView(x)) return true;
  const kind = (x as { kind?: unknown }).kind;
  if (kind === 'sharded') return false;
  return kind !== 'device' || ((x as { deviceIndex?: number }).deviceIndex ?? 0) === slot;
}

function deviceArgs(args: readonly unknown[], nin: number): DeviceArgs | undefined {
  let found: DeviceArgs | undefined;
  const note = (x: unknown) => {
    if (typeof x !== 'object' || x === null) return;
    const kind = (x as { kind?: unknown }).kind;
    if (kind === 'sharded') (found ??= { sharded: [] }).sharded.push(x as ShardedArray);
    else if (kind === 'device') {
      const slot = (x as { deviceIndex?: number }).deviceIndex ?? 0;
      found ??= { sharded: [] };
      if (found.slot !== undefined && found.slot !== slot) found.mixed = true;
      found.slot ??= slot;
    }
  };
  for (const x of args) note(x);
  const out = outOf(args, nin);
  if (Array.isArray(out)) out.forEach(note);
  else note(out);
  return found;
}

/** The `out` option, when the call has an options object after its inputs (and outputs). */
function outOf(args: readonly unknown[], nin: number): unknown {
  const options = args.length > nin ? args[args.length - 1] : undefined;
  const isOptions = typeof options === 'object' && options !== null && !ArrayBuffer.isView(options) && !('kind' in options) && !('data' in options);
  return isOptions ? (options as { out?: unknown }).out : undefined;
}

async function runPerShard(args: readonly unknown[], nin: number, sharded: readonly ShardedArray[], call: (args: unknown[]) => Promise<unknown>): Promise<unknown> {
  const [first] = sharded;
  for (const s of sharded) {
    if (s.rows.join() !== first!.rows.join() || s.devices.join() !== first!.devices.join()) {
      throw new ArgumentError(
        `sharded arguments must be cut alike: one has rows [${first!.rows.join(', ')}] on devices [${first!.devices.join(', ')}], another rows [${s.rows.join(', ')}] on devices [${s.devices.join(', ')}]`,
      );
    }
  }
  args.forEach((x, i) => checkUnsharded(x, i < nin ? `argument ${i + 1}` : '`out`', first!));
  const out = outOf(args, nin);
  const positional = args.slice(nin).filter(isSharded);
  const shardOf = (x: unknown, k: number) => (isSharded(x) ? x.shards[k] : x);
  const shardArgs = (k: number): unknown[] =>
    args.map((x, i) => {
      if (isSharded(x)) return x.shards[k];
      if (out === undefined || i !== args.length - 1 || i < nin) return x;
      return { ...(x as object), out: Array.isArray(out) ? out.map((o) => shardOf(o, k)) : shardOf(out, k) };
    });
  const results = await Promise.allSettled(first!.shards.map((shard, k) => onDevice(shard.deviceIndex, () => call(shardArgs(k))).catch(namingDevice(shard.deviceIndex))));
  const failed = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
  if (failed) throw failed.reason;
  // The outputs passed, as passed; else one ShardedArray per output from the shards' results.
  if (out !== undefined) return out;
  if (positional.length > 0) return positional.length === 1 ? positional[0] : positional;
  const values = results.map((r) => (r as PromiseFulfilledResult<unknown>).value);
  if (!Array.isArray(values[0])) return new ShardedArray(values as never);
  return (values[0] as unknown[]).map((_, o) => new ShardedArray(values.map((v) => (v as unknown[])[o]) as never));
}

/**
 * Refuses an unsharded array that spans the sharded dimension (each shard's call would see all of
 * it), and a device array (it lives on one device only).
 */
function checkUnsharded(x: unknown, where: string, like: ShardedArray): void {
  if (typeof x !== 'object' || x === null || isSharded(x) || Array.isArray(x)) return;
  if ((x as { kind?: unknown }).kind === 'device') {
    throw new ArgumentError(`${where} is a DeviceArray on device ${(x as { deviceIndex: number }).deviceIndex}, but the call runs on sharded arrays across devices [${like.devices.join(', ')}]: shard it too (toDevice(x, { shard: true })) or pass it from the host`);
  }
  const shape = ArrayBuffer.isView(x) ? [(x as unknown as { length: number }).length] : (x as { shape?: readonly number[] }).shape;
  if (shape && shape.length === like.ndim && shape[0] === like.shape[0] && like.shape[0] !== 1 && like.shards.length > 1) {
    throw new ArgumentError(`${where} (shape [${shape.join(', ')}]) spans the sharded dimension of the call's sharded arrays (${like.shape[0]} rows): shard it too (toDevice(x, { shard: true }))`);
  }
}
