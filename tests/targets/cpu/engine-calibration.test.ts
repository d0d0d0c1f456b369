/**
 * Engine choice by measurement (src/targets/cpu/engine-calibration.ts): the order of the trials, the
 * winner from the times recorded, what small calls and overlapping calls do, and what `explain` says
 * through the public API on the cpu and parallel targets.
 */
import { afterAll, describe, expect, it } from 'vitest';
import type { TypedKernel } from '../../../src/compiler/ir.js';
import { __testing as calibrationTesting, type Engine, engineForCall, MIN_TIMED_ELEMENTS, recordTrial, recordTurns, startTrialClock, turnsOf } from '../../../src/targets/cpu/engine-calibration.js';
import { engineMode, setEngineMode } from '../../../src/targets/cpu/wasm/index.js';
import { guvectorize, ready, sharedArray, vectorize } from '../../../src/index.js';
import { __testing as parallelTesting } from '../../../src/targets/parallel/index.js';

const initialMode = engineMode();
afterAll(async () => {
  setEngineMode(initialMode);
  await parallelTesting.resetPool();
});

describe('calibration of one call shape', () => {
  const kernel = () => ({}) as TypedKernel; // only its identity is used
  const big = MIN_TIMED_ELEMENTS;

  it('tries the guess, the other engine, the other, the guess; then runs the one with the lower best time', () => {
    const k = kernel();
    const seen: string[] = [];
    const times: Record<string, number[]> = { js: [6, 5], wasm: [1.5, 4] }; // seconds for `big` units
    for (let i = 0; i < 4; i++) {
      const d = engineForCall(k, 'shape', 'js', big);
      expect(d.trial).toBeDefined();
      seen.push(d.engine);
      recordTrial(d.trial!, d.engine, times[d.engine]!.shift()!, big);
    }
    expect(seen).toEqual(['js', 'wasm', 'wasm', 'js']);
    // Best of each: JS 5, Wasm 1.5 (its second call was slow: the better one counts).
    expect(engineForCall(k, 'shape', 'js', big)).toEqual({ engine: 'wasm' });
    expect(engineForCall(k, 'shape', 'js', 10)).toEqual({ engine: 'wasm' }); // small calls take the winner too
    // Another shape of the same kernel is measured apart.
    expect(engineForCall(k, 'other shape', 'wasm', big).engine).toBe('wasm');
  });

  it('gives a cost that falls on every second call (a garbage collection every two calls) to both engines', () => {
    const k = kernel();
    // Wasm takes 1.8 and JS 2 per call, and every second call pays 1 more. Plain alternation (JS,
    // Wasm, JS, Wasm, …) would give every extra to Wasm (best 2.8) and choose JS.
    let call = 0;
    const base: Record<string, number> = { js: 2, wasm: 1.8 };
    for (;;) {
      const d = engineForCall(k, 's', 'js', big);
      if (!d.trial) break;
      call++;
      recordTrial(d.trial, d.engine, base[d.engine]! + (call % 2 === 0 ? 1 : 0), big);
    }
    expect(engineForCall(k, 's', 'js', big)).toEqual({ engine: 'wasm' });
  });

  it('with three or four candidates, gives every one calls of both parities (a cost on every second call) and never times one twice in a row', () => {
    for (const variants of [['wasm-masked'], ['wasm-pairs', 'wasm-along']] as const) {
      const k = kernel();
      const seen: Engine[] = [];
      const least = new Map<Engine, number>();
      for (;;) {
        const d = engineForCall(k, 's', 'js', big, () => variants);
        if (!d.trial) break;
        seen.push(d.engine);
        const seconds = 2 + (seen.length % 2 === 0 ? 1 : 0); // all alike, and every second call pays 1 more
        least.set(d.engine, Math.min(least.get(d.engine) ?? Infinity, seconds));
        recordTrial(d.trial, d.engine, seconds, big);
      }
      expect([...least.values()]).toEqual(Array(2 + variants.length).fill(2));
      expect(seen.some((e, i) => e === seen[i - 1])).toBe(false);
    }
  });

  it('tries both engines again while one is still getting faster (a Wasm kernel before V8 tiers it up), up to four calls each', () => {
    const k = kernel();
    const times: Record<string, number[]> = { js: [2, 2, 2, 2], wasm: [10, 3, 1.5, 1.5] };
    const seen: string[] = [];
    for (;;) {
      const d = engineForCall(k, 's', 'js', big);
      if (!d.trial) break;
      seen.push(d.engine);
      recordTrial(d.trial, d.engine, times[d.engine]!.shift()!, big);
    }
    // After four calls Wasm, 1.5× JS's best, had just dropped from 10 to 3: one more pair, where it
    // came under JS (1.5 against 2); JS, then 1.33× Wasm's best and not getting faster, is out.
    expect(seen).toEqual(['js', 'wasm', 'wasm', 'js', 'js', 'wasm']);
    expect(engineForCall(k, 's', 'js', big)).toEqual({ engine: 'wasm' });
    // An engine that keeps getting faster is tried at most four times.
    const k2 = kernel();
    const falling: Record<string, number[]> = { js: [8, 4, 3, 2.2], wasm: [3, 3, 3, 3] };
    let calls = 0;
    for (;;) {
      const d = engineForCall(k2, 's', 'js', big);
      if (!d.trial) break;
      calls++;
      recordTrial(d.trial, d.engine, falling[d.engine]!.shift()!, big);
    }
    expect(calls).toBe(8);
    expect(engineForCall(k2, 's', 'js', big)).toEqual({ engine: 'js' });
  });

  it('tries both engines up to four calls each while their best times are within 1.25× of each other', () => {
    const k = kernel();
    // A noisy first pair makes the faster engine (Wasm, 2) look slower; the later trials show it.
    const times: Record<string, number[]> = { js: [2.4, 2.4, 2.4, 2.4], wasm: [2.7, 2.6, 2, 2] };
    let calls = 0;
    for (;;) {
      const d = engineForCall(k, 's', 'js', big);
      if (!d.trial) break;
      calls++;
      recordTrial(d.trial, d.engine, times[d.engine]!.shift()!, big);
    }
    expect(calls).toBe(8);
    expect(engineForCall(k, 's', 'js', big)).toEqual({ engine: 'wasm' });
    // Apart by more than 3×: decided after two each.
    const k2 = kernel();
    const apart: Record<string, number[]> = { js: [7, 7], wasm: [2.3, 2.3] };
    calls = 0;
    for (;;) {
      const d = engineForCall(k2, 's', 'js', big);
      if (!d.trial) break;
      calls++;
      recordTrial(d.trial, d.engine, apart[d.engine]!.shift()!, big);
    }
    expect(calls).toBe(4);
    expect(engineForCall(k2, 's', 'js', big)).toEqual({ engine: 'wasm' });
  });

  it('times a candidate within 3× of the fastest a third time before ruling it out (its first calls may be cold: JS takes two or three to reach its warm time)', () => {
    const k = kernel();
    // JS's first two calls cold (2.1× Wasm's best), its third warm and the fastest.
    const times: Record<string, number[]> = { js: [9, 9.5, 3], wasm: [12, 4.3, 4.2] };
    const seen: string[] = [];
    for (let calls = 0; calls < 20; calls++) {
      const d = engineForCall(k, 's', 'js', big);
      if (!d.trial) break;
      seen.push(d.engine);
      recordTrial(d.trial, d.engine, times[d.engine]!.shift()!, big);
    }
    expect(seen).toEqual(['js', 'wasm', 'wasm', 'js', 'js', 'wasm']);
    expect(engineForCall(k, 's', 'js', big)).toEqual({ engine: 'js' });
  });

  it('after two rounds, times only the candidates within 1.25× of the fastest (or still getting faster), up to four rounds', () => {
    const k = kernel();
    // Two Wasm forms close to each other and to the guess, JS twice as slow: the per-row kernels
    // with four candidates (rows in lanes, pairs, along the row).
    const times: Record<string, number[]> = { wasm: [4.5, 4.6, 4.4, 4.5], js: [12, 12], 'wasm-pairs': [4, 3.9, 3.9, 4], 'wasm-along': [4.2, 3.8, 3.8, 3.7] };
    const seen: string[] = [];
    const observed: string[] = [];
    const before = calibrationTesting.observeTrials((engine) => observed.push(engine));
    try {
      for (;;) {
        const d = engineForCall(k, 's', 'wasm', big, () => ['wasm-pairs', 'wasm-along']);
        if (!d.trial) break;
        seen.push(d.engine);
        recordTrial(d.trial, d.engine, times[d.engine]!.shift()!, big);
      }
    } finally {
      calibrationTesting.observeTrials(before);
    }
    expect(seen).toEqual([
      // Four: the order moves on by one each round (each one's calls change parity), none twice in a row.
      'wasm', 'js', 'wasm-pairs', 'wasm-along', 'js', 'wasm-pairs', 'wasm-along', 'wasm',
      // JS (12 against 3.8) is out; the three close ones go on, in one order (three calls move the
      // parity), moved on by one so as not to time Wasm twice in a row.
      'wasm-pairs', 'wasm-along', 'wasm', 'wasm-pairs', 'wasm-along', 'wasm',
    ]);
    expect(observed).toEqual(seen);
    expect(engineForCall(k, 's', 'wasm', big)).toEqual({ engine: 'wasm-along' });
    // Once a single candidate is left in contention, it is the choice: two rounds here.
    const k2 = kernel();
    const apart: Record<string, number[]> = { wasm: [2, 2], js: [9, 9], 'wasm-pairs': [7, 7] };
    let calls = 0;
    for (;;) {
      const d = engineForCall(k2, 's', 'wasm', big, () => ['wasm-pairs']);
      if (!d.trial) break;
      calls++;
      recordTrial(d.trial, d.engine, apart[d.engine]!.shift()!, big);
    }
    expect(calls).toBe(6);
    expect(engineForCall(k2, 's', 'wasm', big)).toEqual({ engine: 'wasm' });
  });

  it('takes a variant offered as a third candidate in the rotation, and re-checks every loser', () => {
    const k = kernel();
    const times: Record<string, number[]> = { js: [7, 7, 7], wasm: [8, 8, 8], 'wasm-masked': [2, 2, 9] };
    const seen: string[] = [];
    let asked = 0;
    const variants = () => (asked++, ['wasm-masked'] as const);
    for (;;) {
      const d = engineForCall(k, 's', 'wasm', big, variants);
      if (!d.trial) break;
      seen.push(d.engine);
      recordTrial(d.trial, d.engine, times[d.engine]!.shift()!, big);
    }
    expect(asked).toBe(1); // once, when the shape's calibration starts
    // Three: the same order each round (three calls move each one's parity), none twice in a row.
    expect(seen).toEqual(['wasm', 'js', 'wasm-masked', 'wasm', 'js', 'wasm-masked']);
    expect(engineForCall(k, 's', 'wasm', big, variants)).toEqual({ engine: 'wasm-masked' }); // large call 2 since the choice (the loop's last was 1)
    for (let i = 3; i < 16; i++) expect(engineForCall(k, 's', 'wasm', big, variants).trial).toBeUndefined();
    // The re-check: both losers, then the winner (whose slow call does not undo its best).
    const recheck: string[] = [];
    for (let i = 0; i < 3; i++) {
      const d = engineForCall(k, 's', 'wasm', big, variants);
      recheck.push(d.engine);
      recordTrial(d.trial!, d.engine, times[d.engine]!.shift()!, big);
    }
    expect(recheck).toEqual(['wasm', 'js', 'wasm-masked']);
    expect(engineForCall(k, 's', 'wasm', big, variants)).toEqual({ engine: 'wasm-masked' });
  });

  it('re-checks the choice after 16 large calls, then 64 later, and corrects a choice made under load', () => {
    const k = kernel();
    // Measured while the machine was busy: Wasm looked faster.
    const noisy: Record<string, number[]> = { js: [10, 10], wasm: [3, 3] };
    for (let i = 0; i < 4; i++) {
      const d = engineForCall(k, 's', 'js', big);
      recordTrial(d.trial!, d.engine, noisy[d.engine]!.shift()!, big);
    }
    expect(engineForCall(k, 's', 'js', big)).toEqual({ engine: 'wasm' }); // large call 1 since the choice
    for (let i = 2; i < 16; i++) expect(engineForCall(k, 's', 'js', big)).toEqual({ engine: 'wasm' });
    expect(engineForCall(k, 's', 'js', 10)).toEqual({ engine: 'wasm' }); // small calls do not count
    // The 16th large call re-checks: the loser first, then the winner, on a quiet machine.
    const first = engineForCall(k, 's', 'js', big);
    expect(first.engine).toBe('js');
    recordTrial(first.trial!, 'js', 1, big);
    const second = engineForCall(k, 's', 'js', big);
    expect(second.engine).toBe('wasm');
    recordTrial(second.trial!, 'wasm', 2.8, big);
    expect(engineForCall(k, 's', 'js', big)).toEqual({ engine: 'js' });
    // The next re-check comes 64 large calls later.
    for (let i = 2; i < 64; i++) expect(engineForCall(k, 's', 'js', big).trial).toBeUndefined();
    expect(engineForCall(k, 's', 'js', big).trial).toBeDefined();
  });

  it('compares time per unit of work, so calls of different sizes can be trials of one shape', () => {
    const k = kernel();
    const sizes = [big, 8 * big, 2 * big, big];
    const perUnit: Record<string, number> = { js: 1e-6, wasm: 4e-6 };
    for (const work of sizes) {
      const d = engineForCall(k, 's', 'wasm', work);
      recordTrial(d.trial!, d.engine, perUnit[d.engine]! * work, work);
    }
    expect(engineForCall(k, 's', 'wasm', big)).toEqual({ engine: 'js' });
  });

  it('times no call smaller than MIN_TIMED_ELEMENTS, and keeps the guess for it', () => {
    const k = kernel();
    expect(engineForCall(k, 's', 'js', big - 1)).toEqual({ engine: 'js' });
    expect(engineForCall(k, 's', 'wasm', 1)).toEqual({ engine: 'wasm' });
  });

  it('runs calls that overlap a trial untimed on the guess, and forgets a trial that recorded no time', () => {
    const k = kernel();
    const first = engineForCall(k, 's', 'js', big);
    expect(first.trial).toBeDefined();
    expect(engineForCall(k, 's', 'js', big)).toEqual({ engine: 'js' }); // while the first runs
    recordTrial(first.trial!, first.engine, undefined, big); // it failed: no time
    const again = engineForCall(k, 's', 'js', big);
    expect(again).toMatchObject({ engine: 'js' });
    expect(again.trial?.trials).toEqual([]);
  });
});

describe('calibration on the workers: every candidate takes chunks of each trial call in turns', () => {
  const kernel = () => ({}) as TypedKernel;
  const big = MIN_TIMED_ELEMENTS;
  const variants = (): readonly Engine[] => ['wasm-pairs'];
  /** One trial call: the candidates in turn order, and the chunk times `times` gives them recorded. */
  const trialCall = (k: TypedKernel, times: Partial<Record<Engine, number>>, offered = variants) => {
    const d = engineForCall(k, 'shape', 'wasm', big, offered);
    if (!d.trial) return undefined;
    const order = turnsOf(d.trial);
    recordTurns(d.trial, new Map(order.filter((e) => times[e] !== undefined).map((e) => [e, times[e]!])));
    return order;
  };

  it('times every candidate in each trial call, the first in turn moving on each call; chooses after two calls when the best is clear', () => {
    const k = kernel();
    const orders = [trialCall(k, { wasm: 2e-9, js: 6e-9, 'wasm-pairs': 1e-9 }), trialCall(k, { wasm: 2e-9, js: 5e-9, 'wasm-pairs': 1.1e-9 })];
    expect(orders).toEqual([['wasm', 'js', 'wasm-pairs'], ['js', 'wasm-pairs', 'wasm']]);
    expect(engineForCall(k, 'shape', 'wasm', big, variants)).toEqual({ engine: 'wasm-pairs' });
  });

  it('goes on while the two fastest are within 1.25×, up to four calls, and takes the least time of each', () => {
    const k = kernel();
    let calls = 0;
    const times = [{ wasm: 2e-9, js: 2.2e-9 }, { wasm: 2.1e-9, js: 2.3e-9 }, { wasm: 2.4e-9, js: 1.9e-9 }, { wasm: 2e-9, js: 2.2e-9 }, { wasm: 1e-9, js: 9e-9 }];
    while (trialCall(k, times[calls]!, () => [])) calls++;
    expect(calls).toBe(4);
    expect(engineForCall(k, 'shape', 'wasm', big, () => [])).toEqual({ engine: 'js' }); // 1.9 against 2.0
  });

  it('counts a call only for the candidates whose chunks it timed; a call of one chunk times one, and the next call starts with the next', () => {
    const k = kernel();
    const seen: Engine[] = [];
    for (let i = 0; i < 6; i++) {
      const d = engineForCall(k, 'shape', 'js', big);
      const first = turnsOf(d.trial!)[0]!;
      seen.push(first);
      recordTurns(d.trial!, new Map([[first, first === 'js' ? 3e-9 : 1e-9]]));
      if (!d.trial!.pending && d.trial!.winner) break;
    }
    expect(seen).toEqual(['js', 'wasm', 'js', 'wasm']);
    expect(engineForCall(k, 'shape', 'js', big)).toEqual({ engine: 'wasm' });
  });

  it('records nothing for a failed call, and re-checks the choice with one more call of turns after 16 large calls', () => {
    const k = kernel();
    const d = engineForCall(k, 'shape', 'js', big);
    recordTurns(d.trial!, undefined);
    expect(d.trial!.trials).toEqual([]);
    trialCall(k, { js: 1e-9, wasm: 3e-9 }, () => []);
    trialCall(k, { js: 1e-9, wasm: 3e-9 }, () => []);
    expect(engineForCall(k, 'shape', 'js', big)).toEqual({ engine: 'js' });
    for (let i = 1; i < 15; i++) expect(engineForCall(k, 'shape', 'js', big).trial).toBeUndefined();
    // The 16th large call since the choice: every candidate again, in one call; the load that slowed Wasm has gone.
    expect(trialCall(k, { js: 1e-9, wasm: 0.5e-9 }, () => [])).toHaveLength(2);
    expect(engineForCall(k, 'shape', 'js', big)).toEqual({ engine: 'wasm' });
  });
});

describe('the trial clock', () => {
  it('counts the time the thread computes, not the time it waits for a core (Node: the lower of wall and CPU time)', () => {
    // A thread that does not run (here: blocked, as when other processes hold the cores) adds
    // wall-clock time but no CPU time: a trial's time leaves it out.
    const blocked = startTrialClock(true);
    Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 50);
    expect(blocked()).toBeLessThan(0.025); // other threads of the process (V8's) may run meanwhile
    // Computing counts: once the wall clock and the process's CPU time have both passed 20 ms, so
    // has the trial's time, and it never exceeds the wall time. (The process's CPU time counts its
    // other threads too, so it can pass 20 ms before the wall clock does.)
    const busy = startTrialClock(true);
    const start = performance.now();
    const cpuStart = process.cpuUsage();
    const cpuMs = () => {
      const cpu = process.cpuUsage(cpuStart);
      return (cpu.user + cpu.system) / 1000;
    };
    let x = 0;
    while (performance.now() - start < 20 || cpuMs() < 20) x += Math.sqrt(x + 1);
    expect(x).toBeGreaterThan(0);
    const seconds = busy();
    expect(seconds).toBeGreaterThanOrEqual(0.02);
    expect(seconds).toBeLessThanOrEqual((performance.now() - start) / 1000 + 1e-4);
    // Without `cpu` (a shape whose trials are short: reading the CPU time costs µs), the wall clock.
    const wall = startTrialClock(false);
    Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 30);
    expect(wall()).toBeGreaterThanOrEqual(0.029);
  });

  it('reads the CPU time for a shape once a trial of it lasted 1 ms or more', () => {
    const k = {} as TypedKernel;
    const big = MIN_TIMED_ELEMENTS;
    const first = engineForCall(k, 's', 'js', big);
    expect(first.trial!.cpuClock).toBeUndefined();
    recordTrial(first.trial!, first.engine, 2e-3, big);
    const second = engineForCall(k, 's', 'js', big);
    expect(second.trial!.cpuClock).toBe(true);
    recordTrial(second.trial!, second.engine, 0.5e-3, big);
    expect(engineForCall(k, 's', 'js', big).trial!.cpuClock).toBe(false);
  });
});

describe('explain, through the public API', () => {
  it('states the guess and that it is not measured for small calls, and the figures once measured', async () => {
    setEngineMode('auto');
    const f = vectorize(['float64(float64)'])((x: number) => {
      let s = 0;
      for (let i = 0; i < 4; i++) s += Math.sqrt(x + i);
      return s;
    });
    const small = new Float64Array(1000).fill(2);
    expect(f.explain(small)).toMatch(/\(A guess: calls of this call shape that touch at least 16384 elements are timed on both engines/);
    // Large enough that each call lasts well over the 20 µs a trial needs to count.
    const xs = new Float64Array(16 * MIN_TIMED_ELEMENTS).map((_, i) => i);
    expect(f.explain(xs)).toMatch(/\(A guess until measured: the first 4 or more calls of this call shape/);
    const results = [];
    for (let i = 0; i < 10; i++) results.push(await f(xs));
    expect(f.explain(xs)).toMatch(/^(WebAssembly \([^)]*\)|JavaScript): chosen by measurement: JS [\d.]+ [nµm]s per element, Wasm [\d.]+ [nµm]s per element \(the best of \d and \d timed calls of this call shape\)\. The guess was /);
    // Whichever engine ran each call, the results are the same (the engines are bit-identical).
    for (const r of results) expect(r).toEqual(results[0]);
    // The small call's shape is the same layout with every array outside Wasm memory: the winner applies.
    expect(f.explain(small)).toMatch(/chosen by measurement/);
    // Arrays in Wasm memory are another call shape (nothing is copied for Wasm there).
    expect(f.explain(sharedArray(1000), { out: sharedArray(1000) })).toMatch(/A guess/);
  }, 60_000);

  it('times a Wasm loop that elements leave at different iterations also in masked lanes, with the same results whichever runs', async () => {
    setEngineMode('auto');
    // An escape-time loop: each element leaves at its own iteration.
    const f = vectorize(['int32(float64)'])((c: number) => {
      let z = 0;
      let n = 0;
      while (n < 40 && z * z < 4) {
        z = z * z + c;
        n++;
      }
      return n;
    });
    const xs = new Float64Array(4 * MIN_TIMED_ELEMENTS).map((_, i) => -2 + (((i * 7919) % 4096) / 4096) * 2.5);
    expect(f.explain(xs)).toMatch(/WebAssembly \(scalar: elements leave a loop at different iterations .*take the engines \(and the Wasm engine with its loops in masked lanes\) in turn/);
    const results = [];
    for (let i = 0; i < 14; i++) results.push(await f(xs));
    expect(f.explain(xs)).toMatch(/chosen by measurement: JS [\d.]+ [nµm]s per element, Wasm [\d.]+ [nµm]s per element, Wasm with loops in masked lanes [\d.]+ [nµm]s per element \(the best of \d, \d and \d timed calls of this call shape\)/);
    // If the masked variant won, `explain` shows the loop in lanes.
    if (/^WebAssembly/.test(f.explain(xs))) expect(f.explain(xs)).toMatch(/^WebAssembly \((SIMD, \d lanes|scalar)/);
    for (const r of results) expect(r).toEqual(results[0]);
    setEngineMode('js');
    expect(await f(xs)).toEqual(results[0]);
    // A kernel whose loops every element runs alike has no such variant.
    setEngineMode('auto');
    const g = vectorize(['float64(float64)'])((x: number) => {
      let s = 0;
      for (let i = 0; i < 4; i++) s += x * i;
      return s;
    });
    expect(g.explain(xs)).not.toMatch(/masked/);
  }, 60_000);

  it('times a per-row kernel whose float32 rows keep a true double also with it in pairs of vectors (4 rows per vector), with the same results whichever runs', async () => {
    setEngineMode('auto');
    const f = guvectorize(['void(float32[:], float32[:], float32[:])'], '(n),(n)->()')((a: Float32Array, b: Float32Array, out: Float32Array) => {
      let acc = 0;
      for (let i = 0; i < a.length; i++) acc += a[i]! * b[i]!;
      out[0] = acc;
    });
    const data = new Float32Array(16 * MIN_TIMED_ELEMENTS).map((_, i) => Math.fround(Math.sin(i) * 3));
    const rows = { data, shape: [MIN_TIMED_ELEMENTS / 4, 64] };
    expect(f.explain(rows, rows)).toMatch(/take the engines \(and the Wasm engine with float64 values in pairs of vectors, 4 rows per vector\) in turn/);
    const results = [];
    for (let i = 0; i < 14; i++) results.push(await f(rows, rows));
    expect(f.explain(rows, rows)).toMatch(/chosen by measurement: JS [\d.]+ [nµm]s per row, Wasm [\d.]+ [nµm]s per row, Wasm with float64 in pairs of vectors [\d.]+ [nµm]s per row \(the best of \d, \d and \d timed calls of this call shape\)/);
    // Whichever won, `explain` shows how its loop runs: the pairs' 4 rows per vector, or 2.
    expect(f.explain(rows, rows)).toMatch(/^(JavaScript|WebAssembly \(SIMD, (2 rows per vector ×|4 rows per vector \(float64 values in pairs of 2-lane vectors\)))/);
    for (const r of results) expect(r).toEqual(results[0]);
    setEngineMode('js');
    expect(await f(rows, rows)).toEqual(results[0]);
    // A per-row kernel of float64 rows has no such variant.
    setEngineMode('auto');
    const g = guvectorize(['void(float64[:], float64[:])'], '(n)->()')((x: Float64Array, out: Float64Array) => {
      let s = 0;
      for (let i = 0; i < x.length; i++) s += x[i]!;
      out[0] = s;
    });
    expect(g.explain({ data: new Float64Array(16 * MIN_TIMED_ELEMENTS), shape: [MIN_TIMED_ELEMENTS / 4, 64] })).not.toMatch(/pairs/);
  }, 60_000);

  it('on the parallel target, times each candidate on the chunks the workers ran of each trial call (float64 pairs among them), chooses from those times, and says so', async () => {
    setEngineMode('auto');
    const dot = () =>
      guvectorize(['void(float32[:], float32[:], float32[:])'], '(n),(n)->()', { target: 'parallel' })((a: Float32Array, b: Float32Array, out: Float32Array) => {
        let acc = 0;
        for (let i = 0; i < a.length; i++) acc += a[i]! * b[i]!;
        out[0] = acc;
      });
    const data = new Float32Array(64 * MIN_TIMED_ELEMENTS).map((_, i) => Math.fround(Math.sin(i) * 3));
    const rows = { data, shape: [MIN_TIMED_ELEMENTS, 64] };
    const expected = await guvectorize(['void(float32[:], float32[:], float32[:])'], '(n),(n)->()')((a: Float32Array, b: Float32Array, out: Float32Array) => {
      let acc = 0;
      for (let i = 0; i < a.length; i++) acc += a[i]! * b[i]!;
      out[0] = acc;
    })(rows, rows);
    await ready();
    const placement = parallelTesting.measuredPlacement(false);
    const measured: number[][] = [];
    try {
      for (const fastest of ['wasm-pairs', 'js', 'wasm'] as const) {
        calibrationTesting.forgetCalibrations(); // each ufunc of the same code would share the first's
        const f = dot();
        expect(f.explain(rows, rows)).toMatch(/the workers run the chunks on the engines \(and the Wasm engine with float64 values in pairs of vectors, 4 rows per vector\) in turns and time each/);
        // The workers' own times, replaced by ones that make `fastest` win.
        parallelTesting.turnTimes((engines, times) => {
          measured.push([...times]);
          return engines.map((e) => (e === fastest ? 1e-9 : 3e-9));
        });
        for (let i = 0; i < 3; i++) expect(await f(rows, rows)).toEqual(expected); // chunks of three engines in one call: the same results
        parallelTesting.turnTimes(undefined);
        const explained = f.explain(rows, rows);
        expect(explained).toMatch(/chosen by measurement: JS [13]\.00 ns per row, Wasm [13]\.00 ns per row, Wasm with float64 in pairs of vectors [13]\.00 ns per row \(the best of 2, 2 and 2 calls of this call shape whose chunks the workers ran on each in turns, each call's chunks on an engine timed by the workers that ran them, their seconds ÷ their rows\)/);
        const engine = { 'wasm-pairs': /each running WebAssembly \(SIMD, 4 rows per vector \(float64 values in pairs/, js: /each running JavaScript: /, wasm: /each running WebAssembly \(SIMD, 2 rows per vector/ }[fastest];
        expect(explained).toMatch(engine);
        expect(await f(rows, rows)).toEqual(expected);
      }
    } finally {
      parallelTesting.turnTimes(undefined);
      parallelTesting.measuredPlacement(placement);
    }
    // Every candidate ran chunks of every trial call, and the workers timed them.
    expect(measured).toHaveLength(6);
    for (const times of measured) {
      expect(times).toHaveLength(3);
      for (const t of times) expect(t).toBeGreaterThan(0);
      for (const t of times) expect(t).toBeLessThan(1);
    }
  }, 60_000);

  it('on the parallel target, a kernel error in a trial call fails with the cpu target\'s error, whichever candidate ran the failing chunk', async () => {
    setEngineMode('auto');
    const writeAt = (target: 'cpu' | 'parallel') =>
      guvectorize(['void(int32, int32[:])'], '()->(n)', { target })((i: number, out: Int32Array) => {
        out[i] = i;
      });
    const indices = new Int32Array(4 * MIN_TIMED_ELEMENTS).map((_, r) => r % 4);
    indices[indices.length - 1] = 200;
    const expected = await writeAt('cpu')(indices, { dims: { n: 4 } }).then(() => new Error('no error'), (e: unknown) => e as Error);
    expect(expected.message).toMatch(/Index \[200\] is out of bounds for `out` at tests\/targets\/cpu\/engine-calibration\.test\.ts:\d+:\d+/);
    await ready();
    const placement = parallelTesting.measuredPlacement(false);
    const trials: string[] = [];
    parallelTesting.turnTimes((engines, times) => (trials.push(engines.join(',')), times));
    try {
      const parallel = writeAt('parallel');
      // A failed trial records nothing, so each of these is a trial, the first candidate moving on: each engine runs the last chunk once.
      for (let i = 0; i < 2; i++) {
        const error = await parallel(indices, { dims: { n: 4 } }).then(() => new Error('no error'), (e: unknown) => e as Error);
        expect(error.constructor).toBe(expected.constructor);
        expect(error.message).toBe(expected.message);
      }
      indices[indices.length - 1] = 3;
      await parallel(indices, { dims: { n: 4 } });
      expect(trials).toEqual(['js,wasm']); // the third call, which succeeded, was a trial too
    } finally {
      parallelTesting.turnTimes(undefined);
      parallelTesting.measuredPlacement(placement);
    }
  }, 60_000);

  it('shares one calibration between ufuncs of the same code (fastmath where it changes nothing), not where fastmath changes the code', async () => {
    setEngineMode('auto');
    calibrationTesting.forgetCalibrations();
    const poly = (options?: object) => vectorize(['float64(float64)'], options)((x: number) => ((x * 0.5 + 1) * x - 2) * x + 3);
    const plain = poly();
    const fast = poly({ fastmath: true }); // changes nothing: no float32 Math.exp
    const xs = new Float64Array(4 * MIN_TIMED_ELEMENTS).map((_, i) => i / 1000);
    const figures = (explained: string) => /chosen by measurement: (.*?)\. The guess/.exec(explained)?.[1];
    for (let i = 0; i < 16 && /A guess until measured/.test(plain.explain(xs)); i++) await plain(xs);
    expect(figures(plain.explain(xs))).toBeDefined();
    // Measured by `plain`'s calls only: the same figures, so the same engine, for the fastmath ufunc,
    // and for a ufunc of the same kernel made later.
    expect(figures(fast.explain(xs))).toBe(figures(plain.explain(xs)));
    expect(fast.explain(xs)).toMatch(/fastmath is on but changes nothing here/);
    expect(figures(poly().explain(xs))).toBe(figures(plain.explain(xs)));
    // fastmath changes float32 exp: other code, its own calibration.
    const sigmoid = (options?: object) => vectorize(['float32(float32)'], options)((x: number) => 1 / (1 + Math.exp(-x)));
    const sigmoidPlain = sigmoid();
    const x32 = new Float32Array(4 * MIN_TIMED_ELEMENTS).map((_, i) => Math.fround(i / 10000 - 3));
    for (let i = 0; i < 16 && /A guess until measured/.test(sigmoidPlain.explain(x32)); i++) await sigmoidPlain(x32);
    expect(sigmoidPlain.explain(x32)).toMatch(/chosen by measurement/);
    expect(sigmoid({ fastmath: true }).explain(x32)).toMatch(/A guess until measured/);
    // After forgetting, every ufunc calibrates afresh.
    calibrationTesting.forgetCalibrations();
    expect(plain.explain(xs)).toMatch(/A guess until measured/);
    expect(fast.explain(xs)).toMatch(/A guess until measured/);
  }, 60_000);

  it('measures per-row kernels per core size, and the parallel target apart from the cpu', async () => {
    setEngineMode('auto');
    const rowSum = (target: 'cpu' | 'parallel') =>
      guvectorize(['void(float32[:], float32[:])'], '(n)->()', { target })((x: Float32Array, out: Float32Array) => {
        let s = 0;
        for (let i = 0; i < x.length; i++) s += x[i]! * x[i]!;
        out[0] = s;
      });
    const cpu = rowSum('cpu');
    const rows = { data: new Float32Array(16 * MIN_TIMED_ELEMENTS).fill(0.5), shape: [MIN_TIMED_ELEMENTS / 4, 64] };
    // Three candidates (its float64 sum also in pairs of vectors): up to four rounds of three.
    for (let i = 0; i < 14; i++) await cpu(rows);
    expect(cpu.explain(rows)).toMatch(/chosen by measurement: JS [\d.]+ [nµm]s per row/);
    const longRows = { data: rows.data, shape: [MIN_TIMED_ELEMENTS / 16, 256] };
    expect(cpu.explain(longRows)).toMatch(/A guess until measured/);
    const parallel = rowSum('parallel');
    await ready();
    // The workers' engine choice is what is tested: no call moves to the calling thread where that
    // measured faster once the choice is made (parallel/placement.ts, tested apart).
    const placement = parallelTesting.measuredPlacement(false);
    try {
      const big = { data: new Float32Array(64 * MIN_TIMED_ELEMENTS).fill(0.5), shape: [MIN_TIMED_ELEMENTS, 64] };
      expect(parallel.explain(big)).toMatch(/^On \d+ workers?.*A guess until measured/);
      const results = [];
      for (let i = 0; i < 10; i++) results.push(await parallel(big));
      expect(parallel.explain(big)).toMatch(/^On \d+ workers?.*, each running (WebAssembly \(.*\)|JavaScript): chosen by measurement/);
      for (const r of results) expect(r).toEqual(results[0]);
    } finally {
      parallelTesting.measuredPlacement(placement);
    }
  }, 60_000);
});
