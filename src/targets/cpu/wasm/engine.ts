/**
 * The Wasm engine: runs a call plan's loop as WebAssembly, where it can and where that is faster,
 * and otherwise says why not so the JS engine runs it. The choice is made per kernel (can it be
 * compiled at all) and per call (where is the data, how much work per byte).
 */
import type { DType, TypedArray } from '../../../dtypes.js';
import { DTYPES } from '../../../dtypes.js';
import { ArgumentError } from '../../../errors.js';
import type { Expr, MathFunction, Stmt, TypedKernel } from '../../../compiler/ir.js';
import { forEachExpr } from '../../../compiler/ir-walk.js';
import { WASM_MATH } from './math-support.js';
import type { CallPlan } from '../../../plan.js';
import { ExecutableCache } from '../../executables.js';
import { layoutKey, type MemoryLayout, prepareRunnerArgs } from '../memory-layout.js';
import { buffer, isInWasmMemory, release, reserve, wasmMemory } from './memory.js';
import { type CompiledModule, compileKernelModule } from './module.js';
import { ROW_SCRATCH_BYTES, rowPlan } from './emit-rows.js';
import { alongRowLoops } from './along-rows.js';
import { findLoopCounters } from './loop-counters.js';
import { hasMaskedVariant, vectorizeShape } from './element-loops.js';
import { BYTE_TABLE_MIN_ELEMENTS } from './byte-table.js';
import { MATH_PORTS } from './math-ports.js';
import { type BlockKernel, blockStagingBytes, runInBlocks } from './block-staging.js';
import { drive, type DriveSpec, instantiateKernel, type WasmRun } from './runner.js';
import { wasmRefusal } from './support.js';
import { type WasmMemory, type WasmModule, WebAssemblyApi } from './wasm-api.js';

/** A compiled and instantiated kernel for one memory layout. */
export interface WasmKernel {
  readonly run: WasmRun;
  readonly module: CompiledModule;
  /** The compiled module (posted to the parallel target's workers, which instantiate it). */
  readonly wasmModule: WasmModule;
  /** How a call's runner arguments become `run`'s parameters. */
  readonly spec: DriveSpec;
  /** Address of this instance's scratch area for local arrays. */
  readonly scratch: number;
}

/**
 * The Wasm memory cannot grow far enough for a call (its staged copies, or a kernel's local
 * arrays). Never reaches users: the call then runs on the JS engine, with the same results.
 */
export class WasmMemoryFull extends Error {
  override readonly name = 'WasmMemoryFull';
}

/**
 * Which engine runs a call, and why. `guess`: both engines can run the call and the choice is a
 * guess from the kernel's shape and where its arrays are, which measurement may overrule
 * (engine-calibration.ts); absent where only one engine can run it or the mode forces one.
 */
export interface EngineChoice {
  readonly engine: 'wasm' | 'js';
  readonly reason: string;
  readonly guess?: true;
  /** The Wasm engine runs its loops that elements leave at different iterations in masked lanes (measured faster: engine-calibration.ts). */
  readonly maskedLoops?: true;
  /** The Wasm engine runs a per-row kernel's float64 values in pairs of vectors, 4 rows per vector (measured faster: engine-calibration.ts). */
  readonly floatPairs?: true;
  /** The Wasm engine runs a per-row kernel's rows one after another, its independent loops in SIMD along the row (measured faster: engine-calibration.ts). */
  readonly alongRows?: true;
}

/** A choice that measurement may overrule, where the mode leaves the choice to the library. */
function guessed(choice: EngineChoice): EngineChoice {
  return mode === 'auto' ? { ...choice, guess: true } : choice;
}

/**
 * Below this many elements the JS engine is used: entering Wasm costs a few µs per call. Elements
 * are loop indices × the largest core (a per-row call of one row of 1,000 × 1,000 is not small).
 */
const SMALL_CALL = 256;

/** Whether a call is too small to enter Wasm (see SMALL_CALL); cheap, for every call. */
function isSmallCall(plan: CallPlan, elements: number): boolean {
  if (elements >= SMALL_CALL) return false;
  let core = 1;
  for (const o of plan.operands) {
    let size = 1;
    for (const n of o.coreShape) size *= n;
    if (size > core) core = size;
  }
  return elements * core < SMALL_CALL;
}
/** Below this much work (loop indices × the kernel's work estimate) on foreign arrays, the JS engine is used (see chooseEngine). */
const SMALL_FOREIGN_WORK = 6144;

/**
 * How the engine is chosen: `auto` (Wasm where it can run the kernel and pays off), `js` (never
 * Wasm), `wasm` (Wasm wherever it can run the kernel, whatever the cost: tests use it to run
 * every suite on the Wasm engine). The environment variable `UFUNC_ENGINE` sets the default.
 */
export type EngineMode = 'auto' | 'js' | 'wasm';

const envMode = (globalThis as { process?: { env?: Record<string, string | undefined> } }).process?.env?.UFUNC_ENGINE;
let mode: EngineMode = envMode === 'js' || envMode === 'wasm' ? envMode : 'auto';

/**
 * Sets how the cpu and parallel targets choose between the Wasm and the JS engine. Both give
 * bit-identical results; only speed differs.
 *
 * @param next - `auto` (the default), `js` or `wasm` (Wasm wherever it can run the kernel)
 * @returns the mode before
 * @example const before = setEngineMode('js'); … setEngineMode(before);
 */
export function setEngineMode(next: EngineMode): EngineMode {
  if (next !== 'auto' && next !== 'js' && next !== 'wasm') {
    throw new ArgumentError(`The engine mode must be 'auto', 'js' or 'wasm', found ${JSON.stringify(next)}.`);
  }
  const was = mode;
  mode = next;
  return was;
}

/** The current engine mode. */
export function engineMode(): EngineMode {
  return mode;
}

/**
 * What the engine choice reads of a kernel, whatever the call's layout: each worked out on first
 * use and kept as long as the kernel (the choice runs per call). What depends on the layout too is
 * kept in the executables cache (below).
 */
interface KernelFacts {
  /** Why Wasm cannot run the kernel (support.ts), or null where it can. */
  refusal: string | null | undefined;
  slowMath: SlowMath | undefined;
  /** {@link workEstimate} of the kernel's body. */
  work: number | undefined;
}

const kernelFacts = new WeakMap<TypedKernel, KernelFacts>();

function factsOf(kernel: TypedKernel): KernelFacts {
  let facts = kernelFacts.get(kernel);
  if (!facts) kernelFacts.set(kernel, (facts = { refusal: undefined, slowMath: undefined, work: undefined }));
  return facts;
}

function kernelRefusal(kernel: TypedKernel): string | undefined {
  const facts = factsOf(kernel);
  if (facts.refusal === undefined) facts.refusal = wasmRefusal(kernel) ?? null;
  return facts.refusal ?? undefined;
}

/** See {@link slowMathOf}. */
interface SlowMath {
  readonly other: MathFunction | undefined;
  readonly ported: MathFunction | undefined;
}

/**
 * The Math functions of a kernel (helpers included) that do not run in Wasm everywhere
 * (math-support.ts): the first one the engine leaves to JS (`other`: imported, a call out of Wasm
 * per element, slower than JS), and the first one with a port of V8's algorithm worth running
 * only in lanes (`ported`: exp, sin, log, pow, …, math-ports.ts; see {@link portRunsScalar}),
 * `fastmath`'s float32 exp aside.
 */
function slowMathOf(kernel: TypedKernel): SlowMath {
  const facts = factsOf(kernel);
  let found = facts.slowMath;
  if (found === undefined) {
    const f = { other: undefined as MathFunction | undefined, ported: undefined as MathFunction | undefined };
    const seen = new Set<readonly Stmt[]>();
    const visit = (body: readonly Stmt[]): void => {
      if (seen.has(body)) return;
      seen.add(body);
      forEachExpr(body, (e: Expr) => {
        if (e.kind === 'math' && WASM_MATH[e.fn].engine !== 'wasm' && !isFastExp(kernel, e)) {
          if (WASM_MATH[e.fn].engine === 'lanes' && MATH_PORTS[e.fn]?.arity === e.args.length) f.ported ??= e.fn;
          else f.other ??= e.fn;
        } else if (e.kind === 'call') visit(e.helper.body);
      });
    };
    visit(kernel.body);
    facts.slowMath = found = f;
  }
  return found;
}

/**
 * Per kernel and memory layout, why its Wasm loop would run scalar, or null where it runs SIMD
 * lanes: what compiling would decide (emit-simd.ts, emit-rows.ts), worked out without compiling.
 */
const scalarLoops = new ExecutableCache<MemoryLayout, string | null>({
  layoutKey,
  compile(spec, layout) {
    const lanes = spec.kind === 'vectorize' ? vectorizeShape(spec.kernel, layout) : rowPlan(spec.kernel, layout);
    return typeof lanes === 'string' ? lanes : null;
  },
}, { scopedByKernel: true });

/**
 * Why a call's loop would run scalar Wasm (one element or row at a time), or undefined where it
 * runs SIMD lanes: the kernel's vectorisation (emit-simd.ts, emit-rows.ts) for this call's memory
 * layout, cached per layout. `Math.exp` is worth running in Wasm only in SIMD lanes: measured on
 * 10 M elements in Wasm memory (2-core EPYC, bench/wasm-engine.ts and a direct A/B), fdlibm's exp
 * in f64x2 lanes took 26 ms (float32) and 30 ms (float64) against 74 and 69 ms for V8's Math.exp
 * in the JS engine (16-core Xeon: 74–86 ms against 243–249 ms); the scalar port, one element at a time (a strided operand), tied with JS
 * (5 M elements: 36.7 vs 37.6 ms float32, 35.7 vs 36.2 ms float64) and was slower on the 16-core
 * Xeon (the former lane-by-lane SIMD path: 220 vs 145 ms), so those calls stay JS.
 */
function portRunsScalar(plan: CallPlan): string | undefined {
  const { layout } = prepareRunnerArgs(plan);
  return scalarLoops.get(plan, layout) ?? undefined;
}

/** Per kernel and memory layout: whether its Wasm loop has the masked-lanes variant ({@link maskedLoopsVariant}). */
const maskedVariants = new ExecutableCache<MemoryLayout, boolean>({
  layoutKey,
  compile: (spec, layout) => spec.kind === 'vectorize' && hasMaskedVariant(spec.kernel, layout),
}, { scopedByKernel: true });

/**
 * Whether a call's Wasm loop runs one element at a time only because elements leave a loop at
 * different iterations, and so has a variant with those loops in masked SIMD lanes
 * (element-loops.ts) that calibration times beside the engines: which is faster depends on the
 * kernel (how heavy an iteration is against the lanes' masking, how far apart the elements' exits are).
 */
export function maskedLoopsVariant(plan: CallPlan): boolean {
  return maskedVariants.get(plan, prepareRunnerArgs(plan).layout);
}

/** Per kernel and memory layout: whether its Wasm row loop has the float64-pairs variant ({@link floatPairsVariant}). */
const pairsVariants = new ExecutableCache<MemoryLayout, boolean>({
  layoutKey,
  compile: (spec, layout) => {
    if (spec.kind !== 'guvectorize') return false;
    const plan = rowPlan(spec.kernel, { ...layout, floatPairs: true });
    return typeof plan !== 'string' && plan.pairs === true;
  },
}, { scopedByKernel: true });

/**
 * Whether a call's Wasm row loop runs 2 rows per vector only because rows keep true doubles, and
 * so has a variant holding them in pairs of vectors, 4 rows per vector (row-pairs.ts), that
 * calibration times beside the engines.
 */
export function floatPairsVariant(plan: CallPlan): boolean {
  return pairsVariants.get(plan, prepareRunnerArgs(plan).layout);
}

/** Per kernel and memory layout: whether its Wasm row loop has the along-the-row variant ({@link alongRowsVariant}). */
const alongVariants = new ExecutableCache<MemoryLayout, boolean>({
  layoutKey,
  compile: (spec, layout) => spec.kind === 'guvectorize' && typeof alongRowLoops(spec.kernel, layout, findLoopCounters(spec.kernel)) !== 'string',
}, { scopedByKernel: true });

/**
 * Whether a per-row kernel has a loop whose iterations are independent, and so a variant that
 * runs rows one after another with that loop in SIMD lanes along the row (along-rows.ts), that
 * calibration times beside the engines.
 */
export function alongRowsVariant(plan: CallPlan): boolean {
  return alongVariants.get(plan, prepareRunnerArgs(plan).layout);
}

/** The Wasm loop's variants a call may run: the default, or one calibration chose ({@link EngineChoice}). */
export type WasmVariant = 'wasm' | 'wasm-masked' | 'wasm-pairs' | 'wasm-along';

/** The layout a Wasm call compiles for: the call's, with loops in masked lanes, float64 in pairs or loops along the row where asked. */
export function wasmLayoutOf(layout: MemoryLayout, variant: WasmVariant): MemoryLayout {
  if (variant === 'wasm-masked') return { ...layout, maskedLoops: true };
  if (variant === 'wasm-along') return { ...layout, alongRows: true };
  return variant === 'wasm-pairs' ? { ...layout, floatPairs: true } : layout;
}

/** The Wasm variant an engine choice names. */
export function variantOf(choice: EngineChoice): WasmVariant {
  return choice.maskedLoops ? 'wasm-masked' : choice.floatPairs ? 'wasm-pairs' : choice.alongRows ? 'wasm-along' : 'wasm';
}

/** Whether an expression is a float32 `Math.exp` that `fastmath` computes inline in float32 (fast-exp.ts). */
function isFastExp(kernel: TypedKernel, e: Expr): boolean {
  return e.kind === 'math' && e.fastmath === true;
}

/**
 * What `fastmath` changes in a kernel, as a sentence for `explain` (empty when it changes nothing):
 * the same on both engines, so that results do not depend on which one runs.
 */
export function fastmathNote(kernel: TypedKernel): string {
  if (!kernel.fastmath) return '';
  let exp = false;
  const seen = new Set<readonly Stmt[]>();
  const visit = (body: readonly Stmt[]): void => {
    if (seen.has(body)) return;
    seen.add(body);
    forEachExpr(body, (e: Expr) => {
      if (isFastExp(kernel, e)) exp = true;
      else if (e.kind === 'call') visit(e.helper.body);
    });
  };
  visit(kernel.body);
  return exp
    ? ' fastmath is on: Math.exp of float32 values is computed in float32 (within 1 ulp of the correctly rounded result, the same on the JS and Wasm engines), not as V8\'s Math.exp rounded to float32.'
    : ' fastmath is on but changes nothing here (it changes only Math.exp of float32 values).';
}

/** {@link workEstimate} of a kernel's body, computed once per kernel (engine choice runs per call). */
function kernelWork(kernel: TypedKernel): number {
  const facts = factsOf(kernel);
  return (facts.work ??= workEstimate(kernel.body, kernel));
}

/** Work per element, roughly: expression nodes, loops counted eight times. */
function workEstimate(body: readonly Stmt[], kernel: TypedKernel): number {
  let n = 0;
  const expr = (e: unknown): void => {
    if (!e || typeof e !== 'object') return;
    const x = e as { kind?: string };
    if (x.kind === 'math') n += 8; // a call out of Wasm, or a long instruction sequence
    n++;
    for (const v of Object.values(e)) if (v && typeof v === 'object' && 'kind' in (v as object)) expr(v);
    for (const v of Object.values(e)) if (Array.isArray(v)) v.forEach(expr);
  };
  const stmts = (list: readonly Stmt[], weight: number): void => {
    for (const s of list) {
      if (s.kind === 'loop') {
        stmts(s.init, weight);
        stmts(s.body, weight * 8);
        stmts(s.update, weight * 8);
        if (s.cond) n += weight * 8;
      } else if (s.kind === 'if') {
        expr(s.cond);
        stmts(s.then, weight);
        stmts(s.otherwise, weight);
      } else if (s.kind === 'call') {
        const h = s.call.helper;
        stmts(h.body, weight);
      } else {
        const before = n;
        expr(s);
        n = before + (n - before) * weight;
      }
    }
  };
  stmts(body, 1);
  void kernel;
  return n;
}

/**
 * Which engine runs a plan, and why. Wasm needs: the engine on, bounds checks on (Wasm checks
 * every index; JS without checks reads `undefined` out of bounds, which Wasm cannot mimic), no
 * 64-bit integers, and either data already in Wasm memory, or foreign arrays copied in blocks
 * through the cache (`inBlocks`: a whole call on the calling thread, block-staging.ts), or enough
 * work per element to pay for copying whole arrays in and out (the parallel target's staging).
 */
export function chooseEngine(plan: CallPlan, elements: number, copiedAnyway?: (data: TypedArray) => boolean, inBlocks = false): EngineChoice {
  if (mode === 'js') return { engine: 'js', reason: "the engine mode is 'js' (setEngineMode or UFUNC_ENGINE)." };
  if (!plan.boundsCheck) return { engine: 'js', reason: 'bounds checks are off: Wasm checks every index, so only the JS engine gives the unchecked behaviour asked for.' };
  if (mode !== 'wasm' && isSmallCall(plan, elements)) {
    return { engine: 'js', reason: `a call of ${elements} elements is faster in generated JS than entering Wasm.` };
  }
  const refusal = kernelRefusal(plan.kernel);
  if (refusal) return { engine: 'js', reason: `Wasm cannot run this kernel: ${refusal}` };
  const slow = slowMathOf(plan.kernel);
  if (slow.other && mode !== 'wasm') {
    return guessed({ engine: 'js', reason: `the kernel calls Math.${slow.other}, which runs faster in JS (V8's own) than in this engine (a call out of Wasm per element).` });
  }
  if (slow.ported && mode !== 'wasm') {
    const scalar = portRunsScalar(plan);
    const fn = slow.ported;
    if (scalar) return guessed({ engine: 'js', reason: `the kernel calls Math.${fn} and its Wasm loop would run one element at a time (${scalar}), where V8's own Math.${fn} in JS is as fast; Wasm computes ${fn} faster only in SIMD lanes.` });
  }
  let foreignBytes = 0;
  let elementBytes = 0;
  let copied = false;
  for (const o of plan.operands) {
    if (o.scalar !== undefined) continue;
    const data = o.data as TypedArray;
    const core = o.coreShape.reduce((a, b) => a * b, 1);
    elementBytes += core * DTYPES[o.dtype].bytes;
    if (isInWasmMemory(data)) continue;
    if (copiedAnyway?.(data)) copied = true;
    else foreignBytes += data.byteLength;
  }
  if (foreignBytes === 0) {
    return guessed({ engine: 'wasm', reason: copied ? 'the arrays outside shared memory are copied for the workers either way, so into Wasm memory; the others are in Wasm memory.' : 'every array is in Wasm memory.' });
  }
  if (inBlocks) {
    // Copied through the cache in blocks, foreign arrays cost the Wasm engine about one memcpy per
    // byte (~20 GB/s), less than any JS loop's pass over them: Wasm wins whatever the kernel, once
    // the call is large enough to pay the blocks' fixed cost (~3 µs: SAXPY on 256 elements took
    // 3.1 µs against 1.3 µs in JS, even at 1,024, ahead from 4,096; 2-core EPYC).
    const work = kernelWork(plan.kernel);
    if (elements * work < SMALL_FOREIGN_WORK && mode !== 'wasm') {
      return guessed({ engine: 'js', reason: `a call of ${elements} elements (about ${elements * work} operations) on arrays outside Wasm memory is faster in generated JS than copying them for Wasm.` });
    }
    // One loop index (a single row, however large) cannot be cut into blocks: staged whole (runWasm).
    if (elements === 1) return guessed({ engine: 'wasm', reason: 'the arrays outside Wasm memory are copied in and out whole (a call of one loop index is not cut into blocks).' });
    return guessed({ engine: 'wasm', reason: `the arrays outside Wasm memory are copied in and out in blocks of ${blockStagingBytes() / 1024} KiB that stay in cache (no extra pass over memory).` });
  }
  if (mode === 'wasm') return { engine: 'wasm', reason: "the engine mode is 'wasm': arrays outside Wasm memory are copied in and out." };
  if (foreignBytes > 2 ** 31) return { engine: 'js', reason: `the arrays not in Wasm memory (${foreignBytes} bytes) are too large to copy into it.` };
  const work = kernelWork(plan.kernel);
  // Copying in and out costs about as much as a JS loop doing ~2 operations per byte moved: below
  // that, the JS loop on the data where it lies is as fast (measured with the SAXPY workload).
  if (work < elementBytes * 2) {
    return guessed({ engine: 'js', reason: `the kernel does little work per element (about ${work} operations for ${elementBytes} bytes) and the arrays are outside Wasm memory: copying them in would cost more than Wasm saves (allocate them with sharedArray to use Wasm).` });
  }
  return guessed({ engine: 'wasm', reason: `the kernel does enough work per element (about ${work} operations for ${elementBytes} bytes) to pay for copying the arrays outside Wasm memory in and out.` });
}

/**
 * Whether the JS engine runs a plan whatever `chooseEngine` or a measurement says: the first rules of
 * {@link chooseEngine}, without building a reason, for the small calls decided at once (this runs on
 * every call, where a string per call is a measurable part of a 1-element call).
 */
export function surelyJs(plan: CallPlan, elements: number): boolean {
  return mode === 'js' || !plan.boundsCheck || (mode !== 'wasm' && isSmallCall(plan, elements));
}

/**
 * A plan's engine as a sentence, for `f.explain(…)`: which engine, why, and for Wasm whether the
 * loop is vectorised (and if not, why not). Compiles the kernel if it was not yet.
 *
 * @param choice - the engine and why, where the caller decided (by measurement); else chooseEngine's
 */
export function explainPlan(plan: CallPlan, elements: number, choice: EngineChoice = chooseEngine(plan, elements, undefined, true)): string {
  if (choice.engine === 'js') return `JavaScript: ${choice.reason}${fastmathNote(plan.kernel)}`;
  const layout = wasmLayoutOf(prepareRunnerArgs(plan).layout, variantOf(choice));
  let kernel: WasmKernel;
  try {
    kernel = wasmKernelFor(plan, layout);
  } catch (error) {
    if (error instanceof WasmMemoryFull) return `JavaScript: ${error.message}${fastmathNote(plan.kernel)}`;
    throw error;
  }
  const checks = [...kernel.module.indexChecks.values()];
  const checked = checks.filter((c) => c).length;
  const elided = plan.kind === 'guvectorize' && checked < checks.length
    ? ` Bounds checks: ${checked} of ${checks.length} array index axes; the others are in bounds by their loops.`
    : '';
  return `WebAssembly (${wasmVariant(plan, kernel.module)}): ${choice.reason}${elided}${fastmathNote(plan.kernel)}`;
}

/**
 * How a compiled kernel's loop runs, in words: SIMD (elements or rows per vector, and vectors per
 * step) or scalar, and why scalar (`lanes` is then the reason).
 */
export function wasmVariant(plan: CallPlan, module: Pick<CompiledModule, 'lanes' | 'vectors' | 'byteTable' | 'exactLocals' | 'pairedDoubles' | 'intLanes' | 'alongRows' | 'exponentOfCall'>): string {
  const form = loopForm(plan, module);
  return module.exponentOfCall ? `${form}; ${module.exponentOfCall}` : form;
}

/** {@link wasmVariant} but for pow's exponent of the call. */
function loopForm(plan: CallPlan, module: Pick<CompiledModule, 'lanes' | 'vectors' | 'byteTable' | 'exactLocals' | 'pairedDoubles' | 'intLanes' | 'alongRows'>): string {
  const { lanes, vectors, byteTable, exactLocals, pairedDoubles, intLanes, alongRows } = module;
  if (alongRows) return `rows one after another, ${alongRows}; a loop whose output overlaps a row it reads other than in place runs scalar`;
  if (typeof lanes !== 'number') return `scalar: ${lanes}`;
  const table = byteTable ? `; a call of ≥ ${BYTE_TABLE_MIN_ELEMENTS.toLocaleString('en-US')} elements computes the kernel's 256 results (a function of one byte) and looks each element up` : '';
  if (plan.kind === 'vectorize') return (vectors === 1 ? `SIMD, ${lanes} lanes` : `SIMD, ${lanes} lanes × ${vectors} vectors per step`) + table;
  const side = vectors === 1 ? '' : ` × ${vectors} vectors of rows side by side per step, the last rows ${lanes} at a time`;
  const exact = (exactLocals ? ` (float64 locals that only ever hold 32-bit values held so: ${exactLocals})` : '')
    + (pairedDoubles ? ' (float64 values in pairs of 2-lane vectors)' : '');
  const narrow = intLanes ? ` ${intLanes}` : '';
  return `SIMD, ${lanes} rows per vector${narrow}${exact}${side}; a call whose outputs overlap another operand other than in place, or whose rows exceed ${ROW_SCRATCH_BYTES / 1024} KiB of lanes, runs the scalar loop`;
}

/** {@link wasmKernelFor}, or undefined when the Wasm memory has no room for the kernel's local arrays. */
export function wasmKernelIfRoom(plan: CallPlan, layout: MemoryLayout): WasmKernel | undefined {
  try {
    return wasmKernelFor(plan, layout);
  } catch (error) {
    if (error instanceof WasmMemoryFull) return undefined;
    throw error;
  }
}

/**
 * What the Wasm engine compiles a kernel for: a call's memory layout and, for guvectorize, the
 * layout's names of its core axes (`CallPlan.coreNames`: an index bounded by an axis named alike
 * needs no bounds check).
 */
interface WasmLayout {
  readonly memory: MemoryLayout;
  readonly coreNames: CallPlan['coreNames'];
}

/**
 * A number where it fits (looked up on every Wasm call): the memory layout's key, then the core
 * axis names' number (0: none).
 */
function wasmLayoutKey({ memory, coreNames }: WasmLayout): number | string {
  const key = layoutKey(memory);
  const names = coreNames ? coreNamesNumber(coreNames) : 0;
  return typeof key === 'number' && key < 2 ** 40 && names < 2 ** 10 ? key * 2 ** 10 + names : `${key}|${names}`;
}

/** Core axis names by their text, numbered from 1 in order of first use. */
const coreNamesByText = new Map<string, number>();
/** The same by array: a cached plan hands out the same array on every call. */
const coreNamesByArray = new WeakMap<NonNullable<CallPlan['coreNames']>, number>();

function coreNamesNumber(names: NonNullable<CallPlan['coreNames']>): number {
  let n = coreNamesByArray.get(names);
  if (n === undefined) {
    const text = JSON.stringify(names);
    n = coreNamesByText.get(text);
    if (n === undefined) coreNamesByText.set(text, (n = coreNamesByText.size + 1));
    coreNamesByArray.set(names, n);
  }
  return n;
}

/**
 * Kernels compiled and instantiated against the shared Wasm memory, per kernel and layout: the
 * cpu target runs them, and the parallel target posts their modules to its workers.
 */
const sharedKernels = new ExecutableCache<WasmLayout, WasmKernel, CallPlan>({
  layoutKey: wasmLayoutKey,
  compile: (_spec, layout, plan) => compileSharedKernel(plan, layout),
}, { scopedByKernel: true });

/**
 * Kernels compiled against the calling thread's private memory, where foreign arrays are staged in
 * blocks (block-staging.ts), per kernel and layout.
 */
const privateKernels = new ExecutableCache<WasmLayout, BlockKernel, CallPlan>({
  layoutKey: wasmLayoutKey,
  compile: (_spec, layout, plan) => compilePrivateKernel(plan, layout),
}, { scopedByKernel: true });

/** The compiled kernel for a plan's layout, built on first use. */
export function wasmKernelFor(plan: CallPlan, layout: MemoryLayout): WasmKernel {
  return sharedKernels.get(plan, { memory: layout, coreNames: plan.coreNames }, undefined, plan);
}

function compileSharedKernel(plan: CallPlan, { memory: layout, coreNames }: WasmLayout): WasmKernel {
  const module = compileKernelModule(plan.kernel, plan.kind, plan.nin, layout, coreNames);
  const wasmModule = new WebAssemblyApi.Module(module.bytes);
  const run = instantiateKernel(wasmModule, module.imports, module.sites, wasmMemory());
  const scratch = module.scratchBytes ? reserve(module.scratchBytes) : 0;
  if (scratch === undefined) throw new WasmMemoryFull(`the Wasm memory is full: no room for the kernel's local arrays (${module.scratchBytes} bytes).`);
  const spec: DriveSpec = {
    inner: layout.inner,
    coreUnit: layout.coreUnit,
    ndims: plan.operands.map((_, i) => {
      const t = plan.kernel.params[i]?.type;
      return typeof t === 'object' ? t.ndim : 0;
    }),
    bytes: plan.operands.map((o) => DTYPES[o.dtype as DType].bytes),
  };
  return { run, module, wasmModule, spec, scratch };
}

/**
 * The kernel for a plan's layout compiled against the calling thread's private memory, where
 * foreign arrays are staged in blocks (block-staging.ts); built on first use.
 */
function privateKernelFor(plan: CallPlan, layout: MemoryLayout): BlockKernel {
  return privateKernels.get(plan, { memory: layout, coreNames: plan.coreNames }, undefined, plan);
}

function compilePrivateKernel(plan: CallPlan, wasmLayout: WasmLayout): BlockKernel {
  const { memory: layout, coreNames } = wasmLayout;
  const shared = wasmKernelFor(plan, layout);
  const module = compileKernelModule(plan.kernel, plan.kind, plan.nin, layout, coreNames, 'private');
  const wasmModule = new WebAssemblyApi.Module(module.bytes);
  // Instantiated over the private memory of the moment, again where a larger one replaced it.
  let memory: WasmMemory | undefined;
  let run: WasmRun | undefined;
  return {
    spec: shared.spec,
    scratchBytes: module.scratchBytes,
    runIn(privateMemory) {
      if (privateMemory !== memory) {
        run = instantiateKernel(wasmModule, module.imports, module.sites, privateMemory);
        memory = privateMemory;
      }
      return run!;
    },
  };
}

/** Foreign arrays copied into Wasm memory for one call: by buffer, the byte range the call uses. */
interface Staged {
  readonly source: Uint8Array;
  readonly address: number;
  readonly firstByte: number;
  readonly copyBack: boolean;
  readonly copiedIn: boolean;
}

/**
 * Runs `[start, end)` of a plan's loop space as Wasm, copying arrays outside Wasm memory in and
 * out. Operands that view the same buffer are copied as one range, so aliasing (an input that is
 * also the output, overlapping slices) behaves as in place.
 *
 * @param variant - the loop's variant: loops that elements leave at different iterations in
 *   masked lanes ({@link maskedLoopsVariant}), or float64 in pairs of vectors ({@link floatPairsVariant}); the same results
 * @returns false, having run nothing, when the Wasm memory cannot hold the call's copies or the
 *   kernel's local arrays: the caller then runs the JS engine (same results), so a full memory
 *   never reaches users as an error.
 */
export function runWasm(plan: CallPlan, start = 0, end?: number, variant: WasmVariant = 'wasm'): boolean {
  const prepared = prepareRunnerArgs(plan);
  const args = prepared.args;
  const layout = wasmLayoutOf(prepared.layout, variant);
  const kernel = wasmKernelIfRoom(plan, layout);
  if (!kernel) return false;
  const ops = plan.operands;
  const stop = end ?? args.loopShape.reduce((a, b) => a * b, 1);
  let foreign = false;
  for (let i = 0; i < ops.length; i++) if (ops[i]!.scalar === undefined && !isInWasmMemory(ops[i]!.data as TypedArray)) foreign = true;
  if (!foreign) {
    const addresses = new Array<number>(ops.length);
    for (let i = 0; i < ops.length; i++) {
      const o = ops[i]!;
      if (o.scalar === undefined) addresses[i] = (o.data as TypedArray).byteOffset + o.offset * DTYPES[o.dtype].bytes;
    }
    drive(kernel.spec, args, kernel.run, kernel.scratch, addresses, start, stop);
    return true;
  }
  // The whole loop: in cache-sized blocks (block-staging.ts), so the copies cost no extra pass over DRAM.
  if (start === 0 && end === undefined && runInBlocks(plan, args, privateKernelFor(plan, layout))) return true;
  // Otherwise (a part of the loop, an empty core, no room for the blocks): group foreign operands
  // by buffer and stage each buffer's used range whole.
  const ranges = new Map<ArrayBufferLike, { lo: number; hi: number; input: boolean; output: boolean }>();
  plan.operands.forEach((o, i) => {
    if (o.scalar !== undefined) return;
    const data = o.data as TypedArray;
    if (isInWasmMemory(data)) return;
    const r = ranges.get(data.buffer) ?? { lo: Infinity, hi: -Infinity, input: false, output: false };
    r.lo = Math.min(r.lo, data.byteOffset);
    r.hi = Math.max(r.hi, data.byteOffset + data.byteLength);
    // An output that the call overwrites whole, element by element, need not be copied in;
    // any other output keeps what the call does not write (gaps of a strided view, say), and
    // guvectorize outputs may be read.
    const overwritten = i >= plan.nin && plan.kind === 'vectorize' && plan.loopShape.length === 1 && o.loopStrides[0] === 1 && o.offset === 0 && plan.loopShape[0] === data.length;
    if (!overwritten) r.input = true;
    if (i >= plan.nin) r.output = true;
    ranges.set(data.buffer, r);
  });
  const staged = new Map<ArrayBufferLike, Staged>();
  for (const [buf, r] of ranges) {
    const bytes = r.hi - r.lo;
    const address = reserve(bytes);
    if (address === undefined) {
      // Nothing ran and nothing was copied: give back what was reserved; the JS engine runs the call.
      for (const s of staged.values()) release(s.address, s.source.length);
      return false;
    }
    staged.set(buf, { source: new Uint8Array(buf, r.lo, bytes), address, firstByte: r.lo, copyBack: r.output, copiedIn: r.input });
  }
  let failed = true;
  try {
    for (const s of staged.values()) if (s.copiedIn) new Uint8Array(buffer(), s.address, s.source.length).set(s.source);
    const addresses = new Array<number>(plan.operands.length);
    plan.operands.forEach((o, i) => {
      if (o.scalar !== undefined) return;
      const data = o.data as TypedArray;
      const s = staged.get(data.buffer);
      const base = s ? s.address + (data.byteOffset - s.firstByte) : data.byteOffset;
      addresses[i] = base + o.offset * DTYPES[o.dtype].bytes;
    });
    drive(kernel.spec, args, kernel.run, kernel.scratch, addresses, start, stop);
    failed = false;
  } finally {
    for (const s of staged.values()) {
      // After a failure, ranges never copied in hold stale memory: leave those outputs unwritten.
      if (s.copyBack && (!failed || s.copiedIn)) s.source.set(new Uint8Array(buffer(), s.address, s.source.length));
      release(s.address, s.source.length);
    }
  }
  return true;
}

