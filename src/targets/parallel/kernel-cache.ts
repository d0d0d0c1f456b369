/**
 * What workers keep between calls, seen from the calling thread: runner sources (a generated
 * runner, keyed as the cpu target keys its runners) and argument sets (the arrays, offsets, shapes
 * and strides a runner reads). Each has an id; a worker is sent an entry's contents once and from
 * then on only its id, through the control block. Both caches are bounded, and an evicted id is
 * forgotten by the workers too, so they do not keep dropped shared memory alive.
 */
import type { TypedArray } from '../../dtypes.js';
import { sameAxes } from '../../layout.js';
import type { CallPlan } from '../../plan.js';
import type { MemoryLayout, RunnerArgs } from '../cpu/memory-layout.js';
import { type CompiledRunner, cpuCompiler } from '../cpu/index.js';
import { ExecutableCache } from '../executables.js';
import type { KernelCompiler } from '../target.js';
import { type ArgumentSetMessage, scalarKindOf, type WasmRunnerPart } from './protocol.js';
import { type WasmKernel, wasmKernelIfRoom } from '../cpu/wasm/engine.js';
import { reserve, wasmMemory } from '../cpu/wasm/memory.js';
import { wasmRunner } from '../cpu/wasm/runner.js';

const NOTHING_EVICTED: readonly number[] = [];

/** A generated runner: its source for workers and its instance for the calling thread. */
export interface RunnerSource extends CompiledRunner {
  readonly id: number;
  /** For a Wasm kernel: what worker `index` is sent to instantiate it (`source` is then empty). */
  readonly wasm?: (index: number) => WasmRunnerPart;
}

/** Runners kept at most; a program with more kernels × layouts regenerates the oldest. */
const MAX_RUNNERS = 256;
let nextRunnerId = 1;
/** The parallel target compiles as the cpu does, and numbers each runner for the workers. */
const parallelCompiler: KernelCompiler<MemoryLayout, RunnerSource> = {
  layoutKey: cpuCompiler.layoutKey,
  compile: (spec, layout) => ({ id: nextRunnerId++, ...cpuCompiler.compile(spec, layout, undefined) }),
};
let evicted: number[] = [];
const runners = new ExecutableCache(parallelCompiler, { maxEntries: MAX_RUNNERS, onEvict: (r) => evicted.push(r.id) });
/** One scope for every kernel: the bound is on what the workers hold in all. */
const EVERY_KERNEL = {};

/**
 * The runner of a plan's kernel for a memory layout, generated on first use.
 *
 * @returns the runner, and the ids of runners evicted to make room (workers must forget them)
 */
export function runnerSourceFor(plan: CallPlan, layout: MemoryLayout): { runner: RunnerSource; evicted: readonly number[] } {
  const runner = runners.get(plan, layout, EVERY_KERNEL);
  if (evicted.length === 0) return { runner, evicted: NOTHING_EVICTED };
  const dropped = evicted;
  evicted = [];
  return { runner, evicted: dropped };
}

/** An argument set as workers hold it. */
export interface ArgumentSet {
  readonly id: number;
  readonly message: ArgumentSetMessage;
  /** Bytes of the shared buffers it references (counted per set, so shared buffers count twice). */
  readonly bytes: number;
}

/** Whether a set holds exactly these runner arguments (the same memory, indexed the same way). */
function holds(set: ArgumentSetMessage, plan: CallPlan, args: RunnerArgs): boolean {
  const { operands } = plan;
  if (operands.length !== set.data.length || !sameAxes(set.loopShape, args.loopShape)) return false;
  for (let k = 0; k < operands.length; k++) {
    const o = operands[k]!;
    const kind = o.scalar === undefined ? null : scalarKindOf(o.dtype);
    if (kind !== set.scalarKinds[k]) return false;
    if (kind !== null) continue;
    const a = set.data[k] as TypedArray;
    const b = args.data[k] as TypedArray;
    // Staged operands are new views of a reused arena on every call: compare what they view.
    if (a !== b && (a.buffer !== b.buffer || a.byteOffset !== b.byteOffset || a.length !== b.length || a.constructor !== b.constructor)) return false;
    if (set.offset[k] !== args.offset[k] || !sameAxes(set.loopStrides[k]!, args.loopStrides[k]!)) return false;
    if (!sameAxes(set.coreShape[k]!, args.coreShape[k]!) || !sameAxes(set.coreStrides[k]!, args.coreStrides[k]!)) return false;
  }
  return true;
}

/**
 * Argument sets by content. Scalar values are not part of a set (they travel in the control block
 * on every call), so `saxpy(a, x, y)` with a new `a` each time reuses one set. Looked up on every
 * call, so by comparing fields, most recent first, rather than by building a key.
 */
export class ArgumentSets {
  /** Most recently used first. */
  private sets: ArgumentSet[] = [];
  private nextId = 1;

  constructor(
    /** Sets kept at most. */
    private readonly maxSets = 32,
    /** Shared memory the kept sets may reference, beyond the set in use. */
    private readonly maxBytes = 512 * 1024 * 1024,
  ) {}

  /**
   * The set for a call's runner arguments (whose data is all shared memory, or ignored for scalars).
   *
   * @returns the set, and the ids of sets evicted to stay within bounds (workers must forget them)
   */
  lookup(plan: CallPlan, args: RunnerArgs): { set: ArgumentSet; evicted: readonly number[] } {
    for (let i = 0; i < this.sets.length; i++) {
      const set = this.sets[i]!;
      if (!holds(set.message, plan, args)) continue;
      if (i > 0) {
        this.sets.splice(i, 1);
        this.sets.unshift(set);
      }
      return { set, evicted: NOTHING_EVICTED };
    }
    const buffers = new Set<ArrayBufferLike>();
    const { operands } = plan;
    const message: ArgumentSetMessage = {
      type: 'args',
      id: this.nextId++,
      data: operands.map((o, k) => {
        if (o.scalar !== undefined) return null;
        buffers.add((args.data[k] as TypedArray).buffer);
        return args.data[k]!;
      }),
      offset: [...args.offset],
      loopShape: [...args.loopShape],
      loopStrides: args.loopStrides.map((s) => [...s]),
      coreShape: args.coreShape.map((s) => [...s]),
      coreStrides: args.coreStrides.map((s) => [...s]),
      scalarKinds: operands.map((o) => (o.scalar === undefined ? null : scalarKindOf(o.dtype))),
    };
    let bytes = 0;
    for (const b of buffers) bytes += b.byteLength;
    const set: ArgumentSet = { id: message.id, message, bytes };
    this.sets.unshift(set);
    return { set, evicted: this.evict() };
  }

  /** Empties the cache. @returns every id it held */
  clear(): number[] {
    const ids = this.sets.map((s) => s.id);
    this.sets = [];
    return ids;
  }

  /** Drops the least recently used sets (never the newest, in use) until within bounds. */
  private evict(): number[] {
    let bytes = 0;
    for (let i = 1; i < this.sets.length; i++) bytes += this.sets[i]!.bytes;
    const evicted: number[] = [];
    while (this.sets.length > 1 && (this.sets.length > this.maxSets || bytes > this.maxBytes)) {
      const set = this.sets.pop()!;
      bytes -= set.bytes;
      evicted.push(set.id);
    }
    return evicted;
  }
}

/** Wasm kernels as the workers know them, with each worker's scratch area for local arrays. */
const wasmRunners = new WeakMap<WasmKernel, { source: RunnerSource; scratch: number[] }>();

/**
 * The Wasm runner of a plan's kernel for a memory layout (compiled on first use, as the cpu
 * target's), numbered like JS runners and posted to each worker once: the compiled module and the
 * shared Wasm memory, which the worker instantiates. Wasm runners are not evicted: a worker keeps
 * an instance per kernel and layout (a few kB) for the process's life.
 *
 * @param workers - the pool's size: a scratch area is reserved for each worker
 * @returns undefined when the Wasm memory has no room for the kernel's local arrays (then the JS
 *   runner runs the call)
 */
export function wasmRunnerSourceFor(plan: CallPlan, layout: MemoryLayout, workers: number): RunnerSource | undefined {
  const kernel = wasmKernelIfRoom(plan, layout);
  if (!kernel) return undefined;
  let entry = wasmRunners.get(kernel);
  if (!entry) {
    const scratch: number[] = [];
    const { module, wasmModule, spec } = kernel;
    const source: RunnerSource = {
      id: nextRunnerId++,
      source: '',
      sites: module.sites,
      runner: wasmRunner(spec, kernel.run, kernel.scratch),
      wasm: (index) => ({ module: wasmModule, memory: wasmMemory(), imports: module.imports, spec, scratch: scratch[index]! }),
    };
    wasmRunners.set(kernel, (entry = { source, scratch }));
  }
  const bytes = kernel.module.scratchBytes;
  while (entry.scratch.length < workers) {
    const at = bytes ? reserve(bytes) : 0;
    if (at === undefined) return undefined;
    entry.scratch.push(at);
  }
  return entry.source;
}
