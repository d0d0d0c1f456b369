/**
 * A call the pool could take runs on the calling thread where that measured faster for its kernel
 * (a very cheap kernel: the pool's dispatch and copies cost more than the work), and an awaited
 * call only where it is brief there (its event loop must keep running).
 */
import { describe, expect, it } from 'vitest';
import { ready, sharedArray, vectorize } from '../../../src/index.js';
import { INLINE_SECONDS, placeCall, recordPlacement } from '../../../src/targets/parallel/placement.js';
import type { TypedKernel } from '../../../src/compiler/ir.js';
import { callCounts } from '../../call-paths.js';

const fakeKernel = () => ({ returnType: 'float64', body: [], helpers: [] }) as unknown as TypedKernel;
const WORK = 1 << 20;
const WORKERS = 2;

/** Records calls of WORK taking `seconds` in a place (the first call recorded there is the untimed compile). */
function record(kernel: TypedKernel, place: 'thread' | 'pool', ...seconds: number[]): void {
  for (const s of seconds) recordPlacement(kernel, 'k', place, WORK, s);
}

describe('where a call the pool could take runs', () => {
  it('tries the pool, then the calling thread, and then runs where the best time was lower', () => {
    const kernel = fakeKernel();
    const place = (awaited = false) => placeCall(kernel, 'k', WORK, awaited, WORKERS, true).place;
    expect(place()).toBe('pool');
    record(kernel, 'pool', 0.5, 2e-3); // the first is the compile: not counted
    expect(place()).toBe('pool'); // one timed pool call is not enough
    record(kernel, 'pool', 1e-3);
    expect(place()).toBe('thread'); // a trial
    record(kernel, 'thread', 0.3, 0.9e-3);
    expect(place()).toBe('thread'); // a second trial
    record(kernel, 'thread', 0.6e-3);
    expect(placeCall(kernel, 'k', WORK, false, WORKERS, true)).toMatchObject({ place: 'thread', reason: expect.stringMatching(/measured faster here than on the workers: 0\.57 ns against 0\.95 ns per element/) });
    // a slower thread time does not change the best
    record(kernel, 'thread', 5e-3);
    expect(place()).toBe('thread');
  });

  it('keeps the pool where it measured faster, and re-checks the loser after 16, then 64 calls', () => {
    const kernel = fakeKernel();
    record(kernel, 'pool', 1, 1e-3, 1e-3);
    record(kernel, 'thread', 1, 2e-3, 2e-3);
    const places: string[] = [];
    for (let i = 0; i < 100; i++) places.push(placeCall(kernel, 'k', WORK, false, WORKERS, true).place);
    const rechecks = places.flatMap((p, i) => (p === 'thread' ? [i + 1] : []));
    expect(rechecks).toEqual([16, 80]);
    // explain (count false) never moves the schedule
    for (let i = 0; i < 200; i++) expect(placeCall(kernel, 'k', WORK, false, WORKERS, false).place).toBe('pool');
  });

  it('runs an awaited call on the calling thread only where that is brief', () => {
    const kernel = fakeKernel();
    // the pool's best, as if one of 2 workers did it all: 2 × 2 ms > INLINE_SECONDS, so no trial
    record(kernel, 'pool', 1, 2e-3, 2e-3);
    expect(2 * 2e-3).toBeGreaterThan(INLINE_SECONDS);
    for (let i = 0; i < 40; i++) expect(placeCall(kernel, 'k', WORK, true, WORKERS, true).place).toBe('pool');
    // f.sync has no such bound: it tries the calling thread
    expect(placeCall(kernel, 'k', WORK, false, WORKERS, true).place).toBe('thread');
    // measured there at 1.5 ms, against the pool's 2 ms: sync runs there
    record(kernel, 'thread', 1, 1.5e-3, 1.5e-3);
    expect(placeCall(kernel, 'k', WORK, false, WORKERS, false).place).toBe('thread');
    // 1.5 ms ≤ INLINE_SECONDS: awaited too
    expect(placeCall(kernel, 'k', WORK, true, WORKERS, false).place).toBe('thread');
    const slow = fakeKernel();
    record(slow, 'pool', 1, 4e-3, 4e-3);
    record(slow, 'thread', 1, 3.5e-3, 3.5e-3);
    expect(placeCall(slow, 'k', WORK, false, WORKERS, false).place).toBe('thread'); // sync: faster here
    expect(placeCall(slow, 'k', WORK, true, WORKERS, false).place).toBe('pool'); // awaited: 3.5 ms > INLINE_SECONDS
  });

  it('keeps awaited calls on the pool once one on the calling thread took longer than INLINE_SECONDS (a loaded machine)', () => {
    const kernel = fakeKernel();
    record(kernel, 'pool', 1, 2e-3, 2e-3);
    record(kernel, 'thread', 1, 0.5e-3, 0.5e-3);
    expect(placeCall(kernel, 'k', WORK, true, WORKERS, false).place).toBe('thread');
    // one call there took 8 ms: its best stays 0.5 ms, but the event loop waited 8
    record(kernel, 'thread', 8e-3);
    expect(8e-3).toBeGreaterThan(INLINE_SECONDS);
    for (let i = 0; i < 300; i++) expect(placeCall(kernel, 'k', WORK, true, WORKERS, true).place).toBe('pool');
    // f.sync keeps the faster place
    expect(placeCall(kernel, 'k', WORK, false, WORKERS, false).place).toBe('thread');
  });

  it('keeps call shapes apart', () => {
    const kernel = fakeKernel();
    record(kernel, 'pool', 1, 1e-3, 1e-3);
    record(kernel, 'thread', 1, 0.1e-3, 0.1e-3);
    expect(placeCall(kernel, 'k', WORK, false, WORKERS, false).place).toBe('thread');
    expect(placeCall(kernel, 'other', WORK, false, WORKERS, false).place).toBe('pool');
  });

  it('runs a kernel cheaper than the pool dispatch on the calling thread once measured, with the same results', async () => {
    // 65,536 bytes of `x + 1` in shared memory: 2× the threshold, microseconds of work.
    const n = 1 << 16;
    const xs = sharedArray(n, 'uint8');
    for (let i = 0; i < n; i++) xs[i] = i;
    const out = sharedArray(n, 'uint8');
    await ready();
    // The engine choice's trials on the pool first (up to 8 calls), then the placement's. On a
    // loaded machine (CI runs test files side by side on 2 cores) a trial may lose its core midway;
    // the re-checks (after 16, 64 … calls) time the calling thread again, and the best time of each
    // place only improves — but a few unlucky re-checks in a row can leave the pool ahead for 400
    // calls, so a new ufunc (its placement measured afresh) gets up to three tries.
    let inc = vectorize(['uint8(uint8)'], { target: 'parallel' })((x: number) => x + 1);
    let trials = callCounts(true);
    for (let attempt = 0; attempt < 3; attempt++) {
      inc = vectorize(['uint8(uint8)'], { target: 'parallel' })((x: number) => x + 1);
      callCounts(true);
      const onCallingThread = () => inc.explain(xs, { out }).startsWith('On the calling thread (it measured faster here');
      let settled = false;
      for (let k = 0; k < 400 && !(settled = k >= 16 && onCallingThread()); k++) inc.sync(xs, { out });
      trials = callCounts(true);
      if (settled) break;
    }
    expect(trials.pool).toBeGreaterThanOrEqual(3); // one compiling, two timed
    expect(trials.callingThread).toBeGreaterThanOrEqual(2);
    expect(inc.explain(xs, { out })).toMatch(/^On the calling thread \(it measured faster here than on the workers: [\d.]+ ns against [\d.]+ ns per element/);
    // A call may fall on a re-check of the pool (after 16, 64 … calls): then the next may not (the
    // re-checks grow 4× apart), and it runs on the calling thread.
    const runsHere = async (call: () => unknown) => {
      out.fill(0);
      await call();
      let counts = callCounts(true);
      if (counts.pool === 1) {
        out.fill(0);
        await call();
        counts = callCounts(true);
      }
      expect(counts).toEqual({ pool: 0, callingThread: 1, unsplittable: 0 });
    };
    await runsHere(() => inc.sync(xs, { out }));
    for (let i = 0; i < n; i++) if (out[i] !== ((i + 1) & 255)) expect.fail(`element ${i}: ${out[i]}`);
    // awaited calls too: 64 Ki bytes take microseconds here
    await runsHere(() => inc(xs, { out }));
    for (let i = 0; i < n; i++) if (out[i] !== ((i + 1) & 255)) expect.fail(`element ${i}: ${out[i]}`);
    // A loop of such awaited calls still gives the event loop turns (else it would chain microtasks
    // and run no timer or I/O callback until the loop ends).
    let turns = 0;
    const tick = () => {
      if (++turns < 1000) setImmediate(tick);
    };
    setImmediate(tick);
    for (let k = 0; k < 20; k++) await inc(xs, { out });
    const { callingThread } = callCounts(true);
    // Most run here; some may be the pool's re-checks, and on a loaded machine the slowest-call rule
    // (an awaited call stays here only while the slowest timed here fits INLINE_SECONDS) sends more there.
    expect(callingThread).toBeGreaterThanOrEqual(2);
    expect(turns).toBeGreaterThanOrEqual(callingThread - 1);
    turns = 1000; // stops the ticks
  });

  it('never runs an awaited call of a costly kernel on the calling thread', async () => {
    const iterate = vectorize(['float64(float64)'], { target: 'parallel' })((x: number) => {
      let s = 0;
      for (let i = 0; i < 200; i++) s += Math.sqrt(x + i);
      return s;
    });
    // 65,536 elements × 200 square roots: tens of ms on one thread, far above INLINE_SECONDS
    const xs = sharedArray(1 << 16, 'float64');
    await ready();
    callCounts(true);
    for (let k = 0; k < 8; k++) await iterate(xs);
    expect(callCounts(true)).toEqual({ pool: 8, callingThread: 0, unsplittable: 0 });
  });
});
