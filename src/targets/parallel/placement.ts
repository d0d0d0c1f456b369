/**
 * Whether splitting a call pays, by measurement: a call large enough for the pool (the threshold,
 * index.ts) still runs on the calling thread where that measured faster for its kernel and call
 * shape.
 *
 * The threshold counts elements, and for a very cheap kernel an element is worth almost nothing: a
 * table lookup of one byte (0.33 ns per element) spends less on 4M elements than the pool spends
 * dispatching the job and copying ordinary arrays into shared memory and back, so splitting it was
 * slower than not. Where the pool could take a call, its first calls of each shape go to the pool
 * and the next ones to the calling thread, each timed whole (wall time, what the caller waits for);
 * later calls run where the lower best time per unit of work was measured, and one call in 16, 64,
 * 256, … runs the other place again, so that a choice made under load is corrected.
 *
 * An awaited call may run on the calling thread only where that takes at most
 * {@link INLINE_SECONDS} (its event loop must not stop for longer; issue 20 asks ≤ 5 ms): by its
 * slowest measured time there (once one took longer, awaited calls of that shape stay on the pool),
 * or, before that was measured, by the pool's time as if one of its workers
 * had done all the work. `f.sync` has no such bound.
 *
 * A call shape is which operands lie in shared memory (the pool copies the others) and the work's
 * size to within a factor of 4 (the pool's fixed cost weighs more on small calls).
 */
import type { TypedKernel } from '../../compiler/ir.js';
import type { TypedArray } from '../../dtypes.js';
import type { CallPlan } from '../../plan.js';
import { isShared } from '../../shared-memory.js';

export type Place = 'thread' | 'pool';

/**
 * The longest an awaited call may run on the calling thread: under the 5 ms the event loop may be
 * blocked, with room for the estimate's error (a call's time varies around its best).
 */
export const INLINE_SECONDS = 3e-3;

/**
 * Timed calls of each place before the choice, after a first call in each that is not timed: it
 * compiles the kernel there (the calling thread's Wasm code for ordinary arrays differs from the
 * workers'), 25 ms for a table-lookup kernel where each later call takes 1 ms. (An awaited call
 * holds its event loop for that compile once, as any first call on the calling thread does.)
 */
const TRIALS = 2;
const FIRST_RECHECK = 16;
const RECHECK_GROWTH = 4;

interface Placement {
  /** The lowest wall seconds per unit of work measured in each place, and how many calls were timed. */
  readonly best: Record<Place, number>;
  readonly timed: Record<Place, number>;
  /**
   * The calling thread's slowest timed call, per unit of work: an awaited call runs there only while
   * this stays within {@link INLINE_SECONDS} too (under load a call takes several times its best, and
   * the event loop waits for all of it).
   */
  worstThread: number;
  /** Calls run in each place, the first of which compiled the kernel there and is not timed. */
  readonly ran: Record<Place, number>;
  /** Calls since both places were trusted, and after how many the next re-check runs the other place. */
  callsSinceChoice: number;
  nextRecheck: number;
}

const placements = new WeakMap<TypedKernel, Map<string, Placement>>();

/** The call shape (see the module comment). */
export function placementKey(plan: CallPlan, work: number): string {
  let shared = '';
  for (const o of plan.operands) shared += o.scalar !== undefined ? 's' : isShared(o.data as TypedArray) ? 'm' : 'o';
  return `${shared}|${Math.floor(Math.log2(Math.max(work, 1)) / 2)}`;
}

function placementOf(kernel: TypedKernel, key: string, create: boolean): Placement | undefined {
  let byShape = placements.get(kernel);
  if (!byShape) {
    if (!create) return undefined;
    placements.set(kernel, (byShape = new Map()));
  }
  let p = byShape.get(key);
  if (!p && create) {
    byShape.set(key, (p = { best: { thread: Infinity, pool: Infinity }, timed: { thread: 0, pool: 0 }, worstThread: 0, ran: { thread: 0, pool: 0 }, callsSinceChoice: 0, nextRecheck: FIRST_RECHECK }));
  }
  return p;
}

/** Where a call the pool could take runs, and why (for `explain`). */
export interface PlaceDecision {
  readonly place: Place;
  /** Set where the calling thread was chosen: the reason, in words. */
  readonly reason?: string;
  /**
   * A re-check of the place that lost: it runs on the engine measured there, never as a trial of
   * the other engine (which can take 100× as long: a byte-table kernel in JS).
   */
  readonly recheck?: true;
}

/**
 * Where a call that the pool could take runs.
 *
 * @param kernel - the call's kernel
 * @param key - its shape ({@link placementKey})
 * @param work - its work, as the threshold counts it
 * @param awaited - an awaited call (bounded by {@link INLINE_SECONDS} on the calling thread), else `f.sync`
 * @param workers - the pool's workers
 * @param count - whether this is a call (it counts toward re-checks), not `explain`
 */
export function placeCall(kernel: TypedKernel, key: string, work: number, awaited: boolean, workers: number, count: boolean): PlaceDecision {
  const p = placementOf(kernel, key, false);
  if (!p || p.timed.pool < TRIALS) return { place: 'pool' };
  // Before the calling thread was timed, the pool's time with one worker doing it all bounds it.
  const threadSeconds = work * (p.timed.thread > 0 ? Math.max(p.best.thread, p.worstThread) : p.best.pool * workers);
  const inlineAllowed = !awaited || threadSeconds <= INLINE_SECONDS;
  if (p.timed.thread < TRIALS) return inlineAllowed ? { place: 'thread', reason: 'it is a trial of the calling thread against the workers' } : { place: 'pool' };
  const winner: Place = p.best.thread <= p.best.pool && inlineAllowed ? 'thread' : 'pool';
  if (count && ++p.callsSinceChoice >= p.nextRecheck) {
    const other: Place = winner === 'thread' ? 'pool' : 'thread';
    if (other === 'pool' || inlineAllowed) {
      p.callsSinceChoice = 0;
      p.nextRecheck *= RECHECK_GROWTH;
      return other === 'pool' ? { place: 'pool', recheck: true } : { place: 'thread', reason: 'it is a re-check of the calling thread against the workers', recheck: true };
    }
  }
  if (winner === 'pool') return { place: 'pool' };
  const ns = (s: number) => (s * 1e9).toPrecision(2);
  return {
    place: 'thread',
    reason: `it measured faster here than on the workers: ${ns(p.best.thread)} ns against ${ns(p.best.pool)} ns per element of work, the best of each for calls of this size and memory`,
  };
}

/**
 * Records the wall time of a call that the pool could have taken, where it ran (a pool call only
 * where the pool was idle when it began: behind other jobs its time counts theirs too).
 */
export function recordPlacement(kernel: TypedKernel, key: string, place: Place, work: number, seconds: number): void {
  if (!(seconds > 0) || work <= 0) return;
  const p = placementOf(kernel, key, true)!;
  if (p.ran[place]++ === 0) return;
  p.timed[place]++;
  p.best[place] = Math.min(p.best[place], seconds / work);
  if (place === 'thread') p.worstThread = Math.max(p.worstThread, seconds / work);
}
