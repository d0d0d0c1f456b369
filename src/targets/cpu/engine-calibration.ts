/**
 * Engine choice by measurement. `chooseEngine` (wasm/engine.ts) knows which engines *can* run a
 * call, and guesses which is faster from the kernel's shape and where its arrays lie. A guess from
 * the shape is wrong for some kernels (a Wasm loop that runs scalar can lose to V8's JIT; a per-row
 * kernel with one long row can win in Wasm by 3×), so where both engines can run a call, the guess
 * is checked: the first calls of each *call shape* large enough to time alternate the engines —
 * guess, other, other, guess (more while one is still warming up), each round in the reverse order
 * of the one before — each timed as a whole, and every later call of that shape runs the engine with
 * the lower best time per loop index. The reversal is for costs that fall on every second call: a
 * kernel whose fresh output is tens of MiB has V8 collect garbage (external memory pressure) every
 * two calls or so, and plain alternation gave every collection to one engine, whose best time then
 * never showed its speed. With more candidates the rounds keep that (each candidate's calls change
 * parity from one round to the next) without timing one twice in a row ({@link due}). Where the Wasm
 * engine has a second variant for the call — element-wise loops that elements leave at different
 * iterations (escape-time `while`, `break`, a `return` in a loop) run one element at a time, or in
 * masked SIMD lanes until a vector's last element leaves (element-loops.ts): faster for some
 * kernels, slower for others — on the calling thread that variant is a third candidate, timed in
 * the same rotation.
 *
 * A call shape is what the speed of the two engines depends on besides the size of the call: the
 * target (calling thread or workers), the memory layout class the code is specialised on (which
 * operands are contiguous, broadcast or scalars, the rank of the loop), which arrays lie outside Wasm
 * memory (they are copied for Wasm, not for JS) and the core sizes (a per-row kernel's rows of 3 and
 * of 1,000 vectorise differently). The size is not part of it: time is compared per loop index, and
 * only calls that touch at least {@link MIN_TIMED_ELEMENTS} elements are timed, so per-call costs do
 * not tilt the comparison; smaller calls take the measured winner once there is one, and the guess
 * before.
 *
 * What it costs: the first four to eight large calls of a shape each run whole on one engine, so two
 * to four of them run the slower one (with variants, two rounds of every candidate, then up to two
 * more of those still in contention), and then one call in 16, 64, 256, … re-checks the choice;
 * nothing is measured on small calls (a 1-element call looks nothing up). The best time of each engine counts: the first calls on an engine pay its warm-up
 * (compiling, JIT tiers, Wasm tier-up), later ones run warm.
 */
import type { TypedKernel } from '../../compiler/ir.js';
import { printKernel } from '../../compiler/print-ir.js';
import type { TypedArray } from '../../dtypes.js';
import type { CallPlan } from '../../plan.js';
import type { EngineChoice } from './wasm/engine.js';
import { isInWasmMemory } from './wasm/memory.js';
import { layoutKey, type MemoryLayout, prepareRunnerArgs } from './memory-layout.js';

/**
 * A candidate: the JS engine, the Wasm engine, or a variant of the Wasm engine's loop: loops in
 * masked lanes (see above), or a per-row kernel's float64 values in pairs of vectors, 4 rows per
 * vector instead of 2 (row-pairs.ts: faster where the row's 32-bit work is heavy, slower for some
 * light ones, whose 4-row copies into lanes cost more), or a per-row kernel's rows one after another
 * with its loops whose iterations are independent in lanes along the row (along-rows.ts: faster
 * where such loops are the work, slower where loops that carry a value would run scalar).
 */
export type Engine = 'js' | 'wasm' | 'wasm-masked' | 'wasm-pairs' | 'wasm-along';

/**
 * Calls that touch fewer elements than this ({@link touchedElements}) are not trials: too short to
 * time well, and too short for the slower engine to cost much.
 */
export const MIN_TIMED_ELEMENTS = 1 << 14;
/** A trial shorter than this is not recorded (a light kernel's call of a few µs times badly). */
const MIN_TRIAL_SECONDS = 20e-6;

/**
 * Trials rotate through the candidates (the guess first; see {@link due}): at least two rounds, and more (up to
 * four) while the two fastest are close ({@link UNDECIDED}) or a candidate is still getting faster —
 * its latest call under 0.8× its best before — as a Wasm kernel does until V8 has tiered it up (its
 * second call measured 25 ms where later ones take 0.6 ms: a one-row pairwise-distance call on the
 * 2-core VM). The rounds after the second time only the candidates still in contention: those
 * within {@link UNDECIDED} of the fastest, and any still getting faster. One clearly slower (JS at
 * twice the Wasm forms' time) would add a whole slow call to each round and tell nothing, while the
 * close ones need the rounds: a per-row kernel with four candidates took sixteen calls to decide.
 */
const MIN_ROUNDS = 2;
const MAX_ROUNDS = 4;
const STILL_WARMING = 0.8;
/**
 * Trials go on (up to four each) while the engines' best times are within this factor of each
 * other: one noisy trial then decides more often, and the slower engine's extra trials cost little.
 */
const UNDECIDED = 1.25;
/**
 * A candidate's first calls can take several times its warm time without getting faster from one
 * to the next: on the 16-core host the JS engine's first two trials took 1.3–2.8× its warm time on
 * per-row kernels (V8 optimises the runner during its first call, and again after a deoptimisation
 * in the second), so a one-long-row kernel ruled JS out at 2.1× Wasm's best where warm JS takes
 * 0.7× Wasm's time. A candidate within this factor of the fastest is timed at least
 * {@link WARM_TRIALS} times before it is ruled out.
 */
const COLD = 3;
const WARM_TRIALS = 3;
/**
 * After the choice, the losing engine and the winner are timed once more after 16 large calls of the
 * shape, then after 64, 256, …: a choice made while something else loaded the machine is corrected
 * (each engine's best time only improves), at a cost that vanishes as calls go on.
 */
const FIRST_RECHECK = 16;
const RECHECK_GROWTH = 4;

/**
 * Starts timing a trial on the calling thread; the function returned gives its seconds so far: with
 * `cpu`, the lower of the wall-clock time and the process's CPU time, where the platform tells the
 * latter (Node's `process.cpuUsage`; browsers do not), else the wall-clock time. On a machine shared with other work the wall clock
 * also counts the time the thread waited for a core, which falls on some trials and not others and
 * so on one engine more than the other (the 2-core VM under two busy loops: the same 6.3 ms of CPU
 * time took 13–24 ms); the CPU time does not. It counts every thread of the process, so where
 * others work meanwhile (V8 compiling or collecting, a pool job) it exceeds the wall time, which
 * then counts. For calls on the calling thread only: a pool job's CPU time is the sum of its threads'.
 * Reading the CPU time costs a few µs (2–9 on the 2-core VM), so it is read only for trials of
 * shapes whose last trial lasted {@link CPU_CLOCKED_SECONDS} or more ({@link Calibration.cpuClock}).
 */
export function startTrialClock(cpu: boolean): () => number {
  const wallStart = performance.now();
  const cpuStart = cpu ? cpuUsage?.() : undefined;
  return () => {
    const wall = (performance.now() - wallStart) / 1000;
    if (!cpuStart) return wall;
    const cpu = cpuUsage!(cpuStart);
    return Math.min(wall, (cpu.user + cpu.system) / 1e6);
  };
}

/** A trial at least this long reads the CPU time next time (see {@link startTrialClock}). */
const CPU_CLOCKED_SECONDS = 1e-3;

/** Microseconds of CPU time in user and kernel mode (Node's `process.cpuUsage`). */
interface CpuUsage {
  readonly user: number;
  readonly system: number;
}
const cpuUsage: ((since?: CpuUsage) => CpuUsage) | undefined = (() => {
  const proc = (globalThis as { process?: { cpuUsage?: (since?: CpuUsage) => CpuUsage } }).process;
  return typeof proc?.cpuUsage === 'function' ? proc.cpuUsage.bind(proc) : undefined;
})();

/** What was measured for one call shape. */
export interface Calibration {
  /** The engine `chooseEngine` guessed for this shape. */
  readonly guess: Engine;
  /** What is timed, in the order of each round: the guess, the other engine, and any variant. */
  readonly candidates: readonly Engine[];
  /** The candidates the rounds under way and after time (on the calling thread): all, then those still in contention. */
  contenders: readonly Engine[];
  /** The order of the round under way ({@link orderOf}), rounds completed, and trials recorded in the one under way (on the calling thread). */
  order: readonly Engine[];
  rounds: number;
  inRound: number;
  /** Seconds per loop index (element, or row) of each timed call, in order. */
  readonly trials: { readonly engine: Engine; readonly secondsPerIndex: number }[];
  /** Set once every trial has run. */
  winner?: Engine;
  /** A trial is running: calls meanwhile (awaited calls overlap) run the guess, untimed. */
  pending?: boolean;
  /** Large calls since the choice, and after how many the next re-check (a trial of each engine) runs. */
  callsSinceChoice: number;
  nextRecheck: number;
  /** The candidates of the re-check under way, in order (the losers first). */
  recheck: Engine[];
  /** The last trial lasted long enough that the next one reads the CPU time too ({@link startTrialClock}). */
  cpuClock?: boolean;
  /** Trials on the workers so far, each a call whose chunks every candidate took in turns ({@link recordTurns}). */
  turnCalls?: number;
}

/**
 * The calibrations of a kernel, by call shape, shared by every typed kernel of the same code: two
 * ufuncs of one function (one made with `fastmath` where it changes nothing, a ufunc made again)
 * run the same generated code, so they run the same measured choice rather than two choices each
 * within the noise of its own trials. The code is the kernel's typed IR as text (print-ir.ts: its
 * helpers, types and the `fastmath` marks, which are what the option changes); a kernel with lookup
 * tables keeps its own (their values may steer its loops). Computed once per typed kernel.
 */
let shapesByKernel = new WeakMap<TypedKernel, Map<string, Calibration>>();
const shapesByCode = new Map<string, WeakRef<Map<string, Calibration>>>();
const forgetCode = new FinalizationRegistry<string>((code) => {
  if (!shapesByCode.get(code)?.deref()) shapesByCode.delete(code);
});

function shapesOf(kernel: TypedKernel): Map<string, Calibration> {
  let shapes = shapesByKernel.get(kernel);
  if (shapes) return shapes;
  const code = codeOf(kernel);
  shapes = code === undefined ? undefined : shapesByCode.get(code)?.deref();
  if (!shapes) {
    shapes = new Map();
    if (code !== undefined) {
      shapesByCode.set(code, new WeakRef(shapes));
      forgetCode.register(shapes, code);
    }
  }
  shapesByKernel.set(kernel, shapes);
  return shapes;
}

/** A kernel's code as text, or undefined where it keeps calibrations of its own (see {@link shapesOf}). */
function codeOf(kernel: TypedKernel): string | undefined {
  if (!Array.isArray(kernel.body) || kernel.tables?.length) return undefined;
  return printKernel(kernel);
}

/**
 * Elements a call reads and writes: loop indices × the core elements of each array operand (1 for
 * an element-wise operand). Whether a call is large enough to time; the time itself is compared per
 * loop index, which within one call shape (core sizes included) is the same amount of work.
 */
export function touchedElements(plan: CallPlan, loop: number): number {
  let perIndex = 0;
  for (const o of plan.operands) {
    if (o.scalar !== undefined) continue;
    let size = 1;
    for (const n of o.coreShape) size *= n;
    perIndex += size;
  }
  return loop * Math.max(perIndex, 1);
}

/** The call shape of a plan (see the module comment); `where` names who runs it ('cpu', 'parallel'). */
export function callShapeKey(plan: CallPlan, layout: MemoryLayout, where: string): string {
  let foreign = '';
  let cores = '';
  for (const o of plan.operands) {
    foreign += o.scalar !== undefined ? 's' : isInWasmMemory(o.data as TypedArray) ? 'w' : 'f';
    if (o.coreShape.length) cores += `${o.coreShape.join('x')},`;
  }
  return `${where}|${layoutKey(layout)}|${foreign}|${cores}`;
}

function calibrationFor(kernel: TypedKernel, key: string, candidates: readonly Engine[]): Calibration {
  const byShape = shapesOf(kernel);
  let c = byShape.get(key);
  if (!c) byShape.set(key, (c = { guess: candidates[0]!, candidates, contenders: candidates, order: candidates, rounds: 0, inRound: 0, trials: [], callsSinceChoice: 0, nextRecheck: FIRST_RECHECK, recheck: [] }));
  return c;
}

const none = (): readonly Engine[] => [];

/** The candidates of a call: the guess, the other engine, then the variants offered. */
function candidatesOf(guess: Engine, variants: readonly Engine[]): readonly Engine[] {
  return [guess, guess === 'js' ? 'wasm' : 'js', ...variants];
}

/** The candidate whose trial is due next. */
function due(c: Calibration): Engine {
  return c.order[c.inRound]!;
}

/**
 * The order of the next round, after `c.rounds` rounds: each contender's calls alternate between
 * odd and even from one round to the next (a cost on every second call falls on all alike), and,
 * with more than two, none is timed twice in a row, where the second call could still run the code
 * of the first: V8 compiles a Wasm function's optimised tier in the background during its first
 * call (9 ms for the along-the-row softmax on the 2-core VM), and on a loaded machine a call right
 * after can start before that thread has had a core. Two contenders: every other round reversed (A B, B A: the one way to alternate parity). An odd
 * number: the same order every round (its length moves each call's parity). An even number over
 * two: the order moved on by one each round (A B C D, B C D A, …). Where the contenders just
 * changed, the order moves on by one more if it would start with the candidate timed last.
 */
function orderOf(c: Calibration): readonly Engine[] {
  const k = c.contenders.length;
  if (k === 2) return c.rounds % 2 === 0 ? c.contenders : [c.contenders[1]!, c.contenders[0]!];
  let shift = k % 2 === 1 ? 0 : c.rounds % k;
  if (k > 1 && c.contenders[shift] === c.trials.at(-1)?.engine) shift = (shift + 1) % k;
  return [...c.contenders.slice(shift), ...c.contenders.slice(0, shift)];
}

/** What was measured for a shape so far, if anything (for `explain`). */
export function calibrationOf(kernel: TypedKernel, key: string): Calibration | undefined {
  return shapesOf(kernel).get(key);
}

/** The engine a call runs on, and the calibration to record its time in when it is a trial. */
export interface EngineForCall {
  readonly engine: Engine;
  readonly trial?: Calibration;
}

/**
 * The engine for a call that both engines can run: the measured winner of its shape; else, for a
 * call large enough to time, the next engine to try (the call is then a trial: time it and
 * {@link recordTrial}); else the guess.
 *
 * @param kernel - the typed kernel
 * @param key - the call's shape ({@link callShapeKey})
 * @param guess - `chooseEngine`'s answer
 * @param touched - the elements the call touches ({@link touchedElements})
 * @param variants - candidates besides the two engines ('wasm-masked' where the Wasm loop has that
 *   variant), asked for when the shape's calibration starts
 */
export function engineForCall(kernel: TypedKernel, key: string, guess: Engine, touched: number, variants: () => readonly Engine[] = none): EngineForCall {
  const known = shapesOf(kernel).get(key);
  if (known?.winner) {
    if (touched < MIN_TIMED_ELEMENTS || known.pending) return { engine: known.winner };
    if (known.recheck.length === 0 && ++known.callsSinceChoice < known.nextRecheck) return { engine: known.winner };
    if (known.recheck.length === 0) known.recheck.push(...known.candidates.filter((e) => e !== known.winner), known.winner);
    known.pending = true;
    return { engine: known.recheck[0]!, trial: known };
  }
  if (touched < MIN_TIMED_ELEMENTS || known?.pending) return { engine: known?.winner ?? guess };
  const c = known ?? calibrationFor(kernel, key, candidatesOf(guess, variants()));
  c.pending = true;
  return { engine: due(c), trial: c };
}

/**
 * Ends a trial: records its time (undefined: the call failed, ran elsewhere or waited for others,
 * so its time says nothing) and, after the last trial, the winner: the engine with the lower best time.
 */
export function recordTrial(c: Calibration, engine: Engine, seconds: number | undefined, loop: number): void {
  c.pending = false;
  if (seconds !== undefined) c.cpuClock = seconds >= CPU_CLOCKED_SECONDS;
  if (c.winner) return recordRecheck(c, engine, seconds, loop);
  if (seconds === undefined || seconds < MIN_TRIAL_SECONDS) return;
  // The rotation holds: a call whose engine was not the one due (a Wasm call that ran JS) records nothing.
  if (engine !== due(c)) return;
  c.trials.push({ engine, secondsPerIndex: seconds / loop });
  observer?.(engine, seconds / loop);
  if (++c.inRound < c.contenders.length) return;
  c.rounds++;
  c.inRound = 0;
  if (c.rounds >= MIN_ROUNDS) {
    c.contenders = inContention(c);
    if (c.rounds >= MAX_ROUNDS || c.contenders.length === 1 || !(c.contenders.some((e) => stillWarming(c, e) || mayBeCold(c, e)) || undecided(c))) {
      c.winner = fastest(c);
      return;
    }
  }
  c.order = orderOf(c);
}

/**
 * The candidates that further rounds time: within {@link UNDECIDED} of the fastest best time, or
 * still getting faster; in the candidates' order.
 */
function inContention(c: Calibration): readonly Engine[] {
  const best = bestOf(c, fastest(c));
  return c.contenders.filter((e) => bestOf(c, e) < UNDECIDED * best || stillWarming(c, e) || mayBeCold(c, e));
}

/** Whether a candidate may not have shown its warm time yet: fewer than {@link WARM_TRIALS} trials, within {@link COLD} of the fastest. */
function mayBeCold(c: Calibration, engine: Engine): boolean {
  return count(c, engine) < WARM_TRIALS && bestOf(c, engine) < COLD * bestOf(c, fastest(c)) && engine !== fastest(c);
}

/**
 * The candidates of a trial on the workers (the parallel target), in the order they take the
 * call's chunks: every candidate runs chunks of the same call, so that all are timed at the same
 * moment, under the same load, over the same data — chunk by chunk on the thread that ran it,
 * which leaves out what the calling thread does (copying ordinary arrays, waiting its turn, being
 * woken), the same whichever engine the workers run. The first candidate moves on at each trial,
 * so that a call of a single chunk tries them one after another.
 */
export function turnsOf(c: Calibration): readonly Engine[] {
  const n = c.candidates.length;
  const first = (c.turnCalls ?? 0) % n;
  return [...c.candidates.slice(first), ...c.candidates.slice(0, first)];
}

/**
 * Ends a trial on the workers ({@link turnsOf}): records each candidate's seconds per loop index
 * in the call — all the seconds its chunks took, as the threads that ran them timed them, ÷ all
 * their loop indices: what the call costs on it, spread over the threads, with the contention it
 * causes itself (page faults, memory traffic of 16 threads) rather than its least slowed chunk (a
 * candidate that ran no chunk records nothing; `measured` undefined: the call failed). The choice is made as on the calling thread —
 * once every candidate has {@link MIN_ROUNDS} trials, more while two are close or one is still
 * warming up, up to {@link MAX_ROUNDS} — and re-checked as there: a re-check is one more such call.
 */
export function recordTurns(c: Calibration, measured: ReadonlyMap<Engine, number> | undefined): void {
  c.pending = false;
  c.turnCalls = (c.turnCalls ?? 0) + 1;
  if (!measured) return;
  for (const engine of c.candidates) {
    const seconds = measured.get(engine);
    if (seconds !== undefined && Number.isFinite(seconds)) c.trials.push({ engine, secondsPerIndex: seconds });
  }
  if (c.winner) {
    if (!c.candidates.every((e) => measured.has(e) && Number.isFinite(measured.get(e)!))) return; // re-checked at the next large call
    c.recheck = [];
    c.winner = fastest(c);
    c.callsSinceChoice = 0;
    c.nextRecheck *= RECHECK_GROWTH;
    return;
  }
  const rounds = Math.min(...c.candidates.map((e) => count(c, e)));
  if (rounds < MIN_ROUNDS) return;
  if (rounds < MAX_ROUNDS && (c.candidates.some((e) => stillWarming(c, e)) || undecided(c))) return;
  c.winner = fastest(c);
}

/** Records a re-check's trial; after its last, the choice again from every time measured. */
function recordRecheck(c: Calibration, engine: Engine, seconds: number | undefined, loop: number): void {
  if (c.recheck[0] !== engine) return;
  if (seconds === undefined || seconds < MIN_TRIAL_SECONDS) return; // the same engine is tried again next time
  c.recheck.shift();
  c.trials.push({ engine, secondsPerIndex: seconds / loop });
  observer?.(engine, seconds / loop);
  if (c.recheck.length > 0) return;
  c.winner = fastest(c);
  c.callsSinceChoice = 0;
  c.nextRecheck *= RECHECK_GROWTH;
}

/** The candidate with the lowest best time (the earlier in the rotation on a tie). */
function fastest(c: Calibration): Engine {
  return c.candidates.reduce((a, b) => (bestOf(c, b) < bestOf(c, a) ? b : a));
}

/** The lowest time per loop index measured for an engine (Infinity where none). */
function bestOf(c: Calibration, engine: Engine): number {
  return Math.min(...c.trials.filter((t) => t.engine === engine).map((t) => t.secondsPerIndex));
}

function count(c: Calibration, engine: Engine): number {
  return c.trials.filter((t) => t.engine === engine).length;
}

/** Whether the two fastest candidates' best times are too close for the few trials so far to tell them apart. */
function undecided(c: Calibration): boolean {
  const [first, second] = c.candidates.map((e) => bestOf(c, e)).sort((a, b) => a - b);
  return second! < UNDECIDED * first!;
}

/** Whether an engine's latest trial was well under its best before (it is still warming up). */
function stillWarming(c: Calibration, engine: Engine): boolean {
  const times = c.trials.filter((t) => t.engine === engine).map((t) => t.secondsPerIndex);
  return times.length >= 2 && times[times.length - 1]! < STILL_WARMING * Math.min(...times.slice(0, -1));
}

/** A call's engine, decided: by measurement where the guess may be checked, else the guess. */
export interface EngineDecision extends EngineForCall {
  /** The call's loop indices (what a trial's time is divided by). */
  readonly loop: number;
}

/**
 * The engine a call runs on, where `guess` is chooseEngine's answer for it: the guess itself where
 * it is not a guess (one engine only, or a forced mode), else {@link engineForCall}.
 *
 * @param plan - the call
 * @param elements - its loop size
 * @param where - who runs it: 'cpu' (the calling thread) or 'parallel' (the workers)
 * @param guess - chooseEngine's answer for the call as `where` runs it
 * @param variants - candidates besides the two engines, where `where` offers any
 */
export function decideEngine(plan: CallPlan, elements: number, where: string, guess: EngineChoice, variants?: () => readonly Engine[]): EngineDecision {
  if (!guess.guess) return { engine: guess.engine, loop: elements };
  const touched = touchedElements(plan, elements);
  return { ...engineForCall(plan.kernel, callShapeKey(plan, prepareRunnerArgs(plan).layout, where), guess.engine, touched, variants), loop: elements };
}

/**
 * chooseEngine's answer with what was measured for the call's shape, for `explain`: the measured
 * winner and its figures, or the guess and what is being measured.
 */
export function measuredChoice(plan: CallPlan, elements: number, where: string, guess: EngineChoice, variants: () => readonly Engine[] = none): EngineChoice {
  if (!guess.guess) return guess;
  const c = calibrationOf(plan.kernel, callShapeKey(plan, prepareRunnerArgs(plan).layout, where));
  const unit = plan.kind === 'vectorize' ? 'element' : 'row';
  const named = (c: Calibration) => CANDIDATES.filter((e) => c.candidates.includes(e));
  const figures = (c: Calibration) => named(c).map((e) => {
    const t = bestOf(c, e);
    return `${CANDIDATE_NAMES[e]} ${Number.isFinite(t) ? `${formatSeconds(t)} per ${unit}` : 'not yet timed'}`;
  }).join(', ');
  if (c?.winner) {
    const counts = named(c).map((e) => count(c, e));
    const timed = where === 'parallel'
      ? `the best of ${counts.slice(0, -1).join(', ')} and ${counts.at(-1)} calls of this call shape whose chunks the workers ran on each in turns, each call's chunks on an engine timed by the workers that ran them, their seconds ÷ their ${unit}s`
      : `the best of ${counts.slice(0, -1).join(', ')} and ${counts.at(-1)} timed calls of this call shape`;
    const reason = `chosen by measurement: ${figures(c)} (${timed}). The guess was ${guess.engine === 'wasm' ? 'WebAssembly' : 'JavaScript'}, because ${guess.reason}`;
    if (c.winner === 'wasm-masked') return { engine: 'wasm', maskedLoops: true, reason };
    if (c.winner === 'wasm-along') return { engine: 'wasm', alongRows: true, reason };
    return c.winner === 'wasm-pairs' ? { engine: 'wasm', floatPairs: true, reason } : { engine: c.winner, reason };
  }
  if (c && c.trials.length > 0) {
    return { ...guess, reason: `${guess.reason} (A guess until measured: ${c.trials.length} timed calls of this call shape so far, ${figures(c)}.)` };
  }
  const offered = variants();
  const variant = offered.map((v) => VARIANT_PHRASES[v]).filter((p) => p).join(', and ');
  const also = variant ? ` (and the Wasm engine ${variant})` : '';
  const note = where === 'parallel' && touchedElements(plan, elements) >= MIN_TIMED_ELEMENTS
    ? `A guess until measured: in the first ${MIN_ROUNDS} or more calls of this call shape that touch at least ${MIN_TIMED_ELEMENTS} elements, the workers run the chunks on the engines${also} in turns and time each, and later calls run the fastest.`
    : touchedElements(plan, elements) >= MIN_TIMED_ELEMENTS
    ? `A guess until measured: the first ${MIN_ROUNDS * (2 + offered.length)} or more calls of this call shape that touch at least ${MIN_TIMED_ELEMENTS} elements take the engines${also} in turn, and later calls run the fastest.`
    : `A guess: calls of this call shape that touch at least ${MIN_TIMED_ELEMENTS} elements are timed on both engines${also}, and the fastest then runs every call of the shape.`;
  return { ...guess, reason: `${guess.reason} (${note})` };
}

/** Set by benchmarks (`__testing.observeTrials`): sees every trial recorded on the calling thread. */
let observer: ((engine: Engine, secondsPerIndex: number) => void) | undefined;

export const __testing = {
  /** Calls `hook` with the engine and seconds per loop index of every trial recorded on the calling thread (undefined: none); returns the hook before. */
  observeTrials(hook: typeof observer): typeof observer {
    const before = observer;
    observer = hook;
    return before;
  },
  /** Forgets every calibration: ufuncs made after, and those made before, calibrate afresh (a benchmark judging users' first calls). */
  forgetCalibrations(): void {
    shapesByKernel = new WeakMap();
    shapesByCode.clear();
  },
};

/** The candidates in the order `explain` gives their figures. */
const CANDIDATES: readonly Engine[] = ['js', 'wasm', 'wasm-masked', 'wasm-pairs', 'wasm-along'];
/** Each candidate as `explain` names it. */
const CANDIDATE_NAMES: Record<Engine, string> = { js: 'JS', wasm: 'Wasm', 'wasm-masked': 'Wasm with loops in masked lanes', 'wasm-pairs': 'Wasm with float64 in pairs of vectors', 'wasm-along': 'Wasm along the row' };
/** Each variant of the Wasm engine as `explain` describes it before it is timed. */
const VARIANT_PHRASES: Partial<Record<Engine, string>> = {
  'wasm-masked': 'with its loops in masked lanes',
  'wasm-pairs': 'with float64 values in pairs of vectors, 4 rows per vector',
  'wasm-along': 'with rows one after another and loops in SIMD along the row',
};

/** 3 significant digits in ns, µs or ms. */
function formatSeconds(seconds: number): string {
  const [value, unit] = seconds >= 1e-3 ? [seconds * 1e3, 'ms'] : seconds >= 1e-6 ? [seconds * 1e6, 'µs'] : [seconds * 1e9, 'ns'];
  return `${value >= 100 ? value.toFixed(0) : value >= 10 ? value.toFixed(1) : value.toFixed(2)} ${unit}`;
}

