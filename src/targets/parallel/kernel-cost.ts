/**
 * What a kernel costs per unit of work, so that the parallel target sends a costly call to the
 * workers even where its element count is below the threshold.
 *
 * The threshold (index.ts) counts work in elements, which is right for the kernels it was measured
 * on (`a + b` and the like) and wrong for a kernel with a loop of 400 square roots per element: a
 * call of 38,000 such elements takes 35 ms on one core, far below the threshold in elements, and on
 * the calling thread it would block an awaited call's event loop for all of that time. So each call
 * is timed, and the lowest time per unit of work seen for a kernel (once two calls were timed) says what its next calls cost:
 * a call estimated at {@link POOL_SECONDS} or more goes to the workers, whatever its size.
 *
 * The first call of a kernel in each place is not counted: it compiles the kernel. A call timed on the workers is counted as if one thread had done it all in its wall time: that
 * underestimates the kernel (the threads shared the work), so a borderline kernel drifts back to the
 * calling thread, where it is timed exactly, rather than staying on the pool for good.
 *
 * Before any call of a kernel is timed, an element-wise kernel with a loop in it (an escape-time
 * loop, an iteration to convergence) is presumed costly: its cost per element is unbounded, and a
 * pool call that finds it cheap costs tens of microseconds once.
 */
import type { Stmt, TypedKernel } from '../../compiler/ir.js';

/**
 * A call estimated to take this long on one thread goes to the workers. The pool breaks even with
 * the calling thread at about 125 µs (`a + b` on 24,000 elements, sync, shared memory, 2-core VM);
 * twice that leaves room for the copies of arrays outside shared memory.
 */
export const POOL_SECONDS = 250e-6;

/** Calls with less work than this are neither timed nor estimated (a 1-element call stays as fast as it was). */
export const MIN_COSTED_WORK = 1024;

/** Where a call ran: on the calling thread, or on the pool's workers. */
export type CallPlace = 'thread' | 'pool';

/** What was measured of a kernel: the lowest seconds per unit of work, and how many calls were timed. */
interface Measured {
  secondsPerWork: number;
  calls: number;
}
/**
 * A kernel's cost is trusted from this many timed calls on: a call that compiled a new layout's
 * code (a strided view, a broadcast operand) is slow once, and the lowest of two leaves it out
 * unless both compiled.
 */
const TRUSTED_CALLS = 2;

const measured = new WeakMap<TypedKernel, Measured>();
/**
 * Kernels whose first call in each place has run: that call compiles the kernel (on the calling
 * thread, or in each worker) and says nothing of its cost, so it is not recorded.
 */
const compiledIn: Record<CallPlace, WeakSet<TypedKernel>> = { thread: new WeakSet(), pool: new WeakSet() };
/** Whether an element-wise kernel has a loop (computed once per kernel). */
const loops = new WeakMap<TypedKernel, boolean>();

/**
 * Records a call's time.
 *
 * @param kernel - the call's kernel
 * @param work - its work as the threshold counts it
 * @param seconds - its wall time (on the calling thread, or the pool's wall time for the whole job)
 * @param place - where it ran
 */
export function recordCallTime(kernel: TypedKernel, work: number, seconds: number, place: CallPlace): void {
  if (work < MIN_COSTED_WORK || !(seconds > 0)) return;
  if (!compiledIn[place].has(kernel)) {
    compiledIn[place].add(kernel);
    return;
  }
  const perWork = seconds / work;
  const known = measured.get(kernel);
  if (known === undefined) measured.set(kernel, { secondsPerWork: perWork, calls: 1 });
  else {
    known.calls++;
    if (perWork < known.secondsPerWork) known.secondsPerWork = perWork;
  }
}

/** A kernel's trusted cost per unit of work, or undefined. */
function costOf(kernel: TypedKernel): number | undefined {
  const known = measured.get(kernel);
  return known !== undefined && known.calls >= TRUSTED_CALLS ? known.secondsPerWork : undefined;
}

/**
 * Whether a call of `work` units is costly enough for the workers although below the threshold in
 * elements: by its kernel's measured cost, or before any measurement, by a loop in an element-wise kernel.
 */
export function isCostly(kernel: TypedKernel, work: number): boolean {
  if (work < MIN_COSTED_WORK) return false;
  const perWork = costOf(kernel);
  if (perWork !== undefined) return work * perWork >= POOL_SECONDS;
  return kernel.returnType !== 'void' && hasLoop(kernel);
}

/** The estimate `isCostly` went by, for `explain`: seconds on one thread, or undefined before any measurement. */
export function estimatedSeconds(kernel: TypedKernel, work: number): number | undefined {
  const perWork = costOf(kernel);
  return perWork === undefined ? undefined : work * perWork;
}

function hasLoop(kernel: TypedKernel): boolean {
  let known = loops.get(kernel);
  if (known === undefined) {
    known = anyLoop(kernel.body) || kernel.helpers.some((h) => anyLoop(h.body));
    loops.set(kernel, known);
  }
  return known;
}

function anyLoop(body: readonly Stmt[]): boolean {
  return body.some((s) => s.kind === 'loop' || (s.kind === 'if' && (anyLoop(s.then) || anyLoop(s.otherwise))));
}
