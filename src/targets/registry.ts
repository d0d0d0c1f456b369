/**
 * The one table of targets: a line a target. The front finds targets here by the name the user
 * gave and never names one itself, so adding a target is a folder (with a `Target`, see
 * target.ts) and one line below.
 *
 * cpu and parallel load with the library (they serve synchronous calls); gpu loads on first use,
 * so that programs that never use it never load WebGPU.
 */
import { TargetUnavailableError } from '../errors.js';
import { platform } from '../platform/platform.js';
import { cpuTarget } from './cpu/index.js';
import { parallelTarget, poolReady, warmUpPool } from './parallel/index.js';
import type { Target } from './target.js';

/** One line of the table. */
export interface TargetEntry {
  readonly name: string;
  /** As the target's own `memory` says; known before the target is loaded, for messages. */
  readonly memory: Target['memory'];
  /** The target: at once, or a Promise where it loads on first use. */
  readonly load: () => Target | Promise<Target>;
  /** Whether it can run on this machine. @default always */
  readonly available?: () => Promise<boolean>;
  /**
   * Starts in the background what the target's calls need (the parallel target: its workers), when
   * a ufunc on it is defined; never throws (the first call reports a failure). @default nothing
   */
  readonly warmUp?: () => void;
  /** Resolves when what `warmUp` starts is ready (at once where it cannot run here). @default at once */
  readonly ready?: () => Promise<void>;
}

const BUILT_IN = [
  { name: 'cpu', memory: 'host', load: () => cpuTarget },
  {
    name: 'parallel', memory: 'host', load: () => parallelTarget,
    // Workers over shared memory: a page has them only when cross-origin isolated.
    available: async () => platform().parallelUnavailable() === undefined,
    warmUp: warmUpPool,
    ready: poolReady,
  },
  {
    name: 'gpu', memory: 'device', load: () => import('./gpu/index.js').then((m) => m.gpuTarget),
    available: () => import('./gpu/runtime/device.js').then((m) => m.isGpuAvailable()).catch(() => false),
  },
] as const satisfies readonly TargetEntry[];

/** The names of the built-in targets, from their lines above (the registry may hold others: a test target, say). */
export type TargetName = (typeof BUILT_IN)[number]['name'];

/**
 * The built-in targets whose data lives on a device: their calls wait on it, so they have no
 * synchronous call (`f.sync`), and the types of their ufuncs leave it out.
 */
export type DeviceTargetName = Extract<(typeof BUILT_IN)[number], { memory: 'device' }>['name'];

const TABLE: TargetEntry[] = [...BUILT_IN];

/** The target a ufunc runs on when its options name none. */
export const DEFAULT_TARGET = 'cpu';

const loaded = new Map<string, Target>();

/**
 * Adds a line to the table at run time: how the test suite plugs in its test target, and how a
 * program could plug in a target of its own.
 *
 * @param entry - the target's name, memory and loader
 * @throws TargetUnavailableError when a target of that name exists already
 * @example registerTarget({ name: 'traced', memory: 'host', load: () => tracedTarget });
 */
export function registerTarget(entry: TargetEntry): void {
  if (TABLE.some((e) => e.name === entry.name)) throw new TargetUnavailableError(`A target named '${entry.name}' is registered already.`);
  TABLE.push(entry);
}

/** The names of the registered targets, in table order; `memory` keeps only those of that kind. */
export function targetNames(memory?: Target['memory']): string[] {
  return TABLE.filter((e) => memory === undefined || e.memory === memory).map((e) => e.name);
}

/** The names as messages list them: `'cpu' or 'parallel'`. */
export function formatTargetNames(names: readonly string[], conjunction = 'or'): string {
  const quoted = names.map((n) => `'${n}'`);
  return quoted.length <= 1 ? quoted.join('') : `${quoted.slice(0, -1).join(', ')} ${conjunction} ${quoted[quoted.length - 1]}`;
}

/**
 * The table's line for a target name.
 *
 * @throws TargetUnavailableError for a name not in the table, listing those that are
 */
export function targetEntry(name: unknown): TargetEntry {
  const entry = TABLE.find((e) => e.name === name);
  if (entry) return entry;
  throw new TargetUnavailableError(`Unknown target \`${String(name)}\`; the targets are ${TABLE.map((e) => `'${e.name}'`).join(', ')}.`);
}

/** The target, loaded if need be. */
export async function loadTarget(name: string): Promise<Target> {
  return loaded.get(name) ?? remember(targetEntry(name), await targetEntry(name).load());
}

/** The target if it can be had without waiting (cpu, parallel, or gpu once loaded). */
export function loadTargetSync(name: string): Target | undefined {
  const known = loaded.get(name);
  if (known) return known;
  const entry = targetEntry(name);
  const target = entry.load();
  if (!(target instanceof Promise)) return remember(entry, target);
  target.then((t) => remember(entry, t)).catch(() => {}); // the next async call reports a failure
  return undefined;
}

function remember(entry: TargetEntry, target: Target): Target {
  if (target.name !== entry.name || target.memory !== entry.memory) {
    throw new TargetUnavailableError(`The target registered as '${entry.name}' (${entry.memory} memory) loaded as '${target.name}' (${target.memory} memory).`);
  }
  loaded.set(entry.name, target);
  return target;
}

/**
 * Runs every target's `shutdown` hook (workers, devices), for `shutdown()`. A target that loads
 * on first use and was never used has nothing to stop.
 *
 * @returns once every hook is done
 */
export async function shutdownTargets(): Promise<void> {
  const targets = TABLE.map((e) => loadTargetSync(e.name));
  await Promise.all(targets.map((t) => t?.shutdown?.()));
}

/**
 * The targets that can run here: cpu always, parallel where workers can share memory (Node, or a
 * cross-origin isolated page), gpu when a WebGPU adapter is found
 * (and any target registered at run time that says it can).
 *
 * @returns their names, in the table's order
 * @example const targets = await availableTargets(); // ['cpu', 'parallel', 'gpu']
 */
export async function availableTargets(): Promise<TargetName[]> {
  const usable = await Promise.all(TABLE.map(async (e) => (e.available ? e.available() : true)));
  return TABLE.filter((_, i) => usable[i]).map((e) => e.name as TargetName);
}

/** Starts, in the background, what calls on a target need (see {@link TargetEntry.warmUp}). */
export function warmUpTarget(name: string): void {
  targetEntry(name).warmUp?.();
}

/**
 * Waits until the targets are ready to run calls at full speed: the parallel target's worker
 * threads have started (they start in the background when a ufunc on `parallel` is defined, and
 * take a few tens of milliseconds — seconds when run from TypeScript source through a loader).
 * Calls made before that are correct and are not blocked by the start, only waited for; await
 * `ready()` before timing a first call.
 *
 * @param target - the target to wait for; @default every target that starts something
 * @returns a Promise that resolves when they are ready (at once for targets with nothing to start)
 * @throws TargetUnavailableError for a target name not registered
 * @example
 * const f = vectorize(['float64(float64)'], { target: 'parallel' })((x) => Math.sqrt(x));
 * await ready();            // the workers are up
 * const t0 = performance.now(); await f(xs); console.log(performance.now() - t0);
 */
export async function ready(target?: TargetName): Promise<void> {
  const entries = target === undefined ? TABLE : [targetEntry(target)];
  await Promise.all(entries.map((e) => e.ready?.()));
}
