/**
 * Property: a random program of element-wise calls on device arrays — results fed to later calls,
 * outputs into fresh arrays, into earlier arrays (in place or not), through reversed or shifted
 * views, arrays destroyed along the way, reads in between — leaves every array the program still
 * holds with the same bits whether the calls fuse automatically or are recorded one by one.
 */
import fc from 'fast-check';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { type DeviceArray, synchronize, toDevice, vectorize } from '../../../src/index.js';
import { chainFusionStats, fusedKernelsCompiled, setChainFusion } from '../../../src/targets/gpu/runtime/chain-fusion.js';
import { describeGpu } from '../../gpu-available.js';

const target = 'gpu';
const unary = [
  vectorize(['float32(float32)'], { target })((t: number) => Math.exp(-t * t)),
  vectorize(['float32(float32)'], { target })((t: number) => (t > 0.5 ? t * 3 - 1 : -t)),
  vectorize(['int32(float32)'], { target })((t: number) => t * 1000),
  vectorize(['float32(int32)'], { target })((k: number) => k / 8),
];
const binary = [
  vectorize(['float32(float32, float32)'], { target })((a: number, b: number) => a * b + 0.25),
  vectorize(['float32(float32, float32)', 'float32(int32, float32)'], { target })((a: number, b: number) => Math.max(a, b) - a),
];

const N = 257;

/** One step: a ufunc, its argument arrays (by index among those made so far) and where it writes. */
const step = fc.record({
  binary: fc.boolean(),
  ufunc: fc.nat(3),
  a: fc.nat(20),
  b: fc.nat(20),
  /** fresh: a new array; into: an earlier float32 array of the same length, as it is; reversed: that array reversed */
  out: fc.constantFrom('fresh', 'fresh', 'into', 'reversed'),
  into: fc.nat(20),
  destroyAfter: fc.boolean(),
  readAfter: fc.boolean(),
});

describeGpu('automatic fusion, randomly', { timeout: 120_000 }, () => {
  beforeAll(() => setChainFusion(true)); // the default
  afterAll(() => setChainFusion(true));
  it('gives every held array the bits of the calls recorded one by one', async () => {
    const before = chainFusionStats.fusedDispatches;
    await fc.assert(
      fc.asyncProperty(fc.array(step, { minLength: 2, maxLength: 7 }), async (steps) => {
        const run = async (): Promise<Float32Array[]> => {
          const arrays: DeviceArray[] = [
            await toDevice(Float32Array.from({ length: N }, (_, i) => Math.sin(i) * 2)),
            await toDevice(Float32Array.from({ length: N }, (_, i) => Math.cos(i * 0.3))),
          ];
          const live = new Set(arrays);
          const pick = (k: number, dtype?: string) => {
            const candidates = arrays.filter((x) => live.has(x) && (dtype === undefined || x.dtype === dtype));
            return candidates[k % candidates.length];
          };
          for (const s of steps) {
            const list = s.binary ? binary : unary;
            const ufunc = list[s.ufunc % list.length]! as unknown as (...args: unknown[]) => Promise<unknown>;
            // Mostly the latest result, so that calls feed each other (what fuses).
            const latest = arrays[arrays.length - 1]!;
            const a = s.a % 3 !== 0 && live.has(latest) ? latest : pick(s.a);
            const b = pick(s.b, 'float32');
            if (!a || !b) continue;
            const args = s.binary ? [a, b] : [a];
            let result: DeviceArray;
            try {
              const into = s.out === 'fresh' ? undefined : pick(s.into, 'float32');
              // (A reversed view shares the array's memory: the array itself is what the program holds.)
              if (into && s.out === 'reversed') result = ((await ufunc(...args, { out: into.view([N], [-1], N - 1) })), into);
              else if (into) result = (await ufunc(...args, { out: into })) as DeviceArray;
              else result = (await ufunc(...args)) as DeviceArray;
            } catch {
              continue; // a loop the arrays do not fit (int32 into a float32 out, …): refused alike both ways
            }
            if (!arrays.includes(result)) {
              arrays.push(result);
              live.add(result);
            }
            if (s.readAfter) await a.toHost();
            if (s.destroyAfter && arrays.length > 3) {
              const victim = arrays[2]!;
              if (live.has(victim) && victim !== result) {
                victim.destroy();
                live.delete(victim);
              }
            }
          }
          const out: Float32Array[] = [];
          for (const x of arrays) if (live.has(x)) out.push(Float32Array.from((await x.toHost()) as ArrayLike<number>));
          for (const x of live) x.destroy();
          return out;
        };
        setChainFusion(false);
        const separate = await run();
        setChainFusion(true);
        await run(); // compiles the fused kernels (in the background)
        await fusedKernelsCompiled();
        const fused = await run();
        await synchronize();
        expect(fused.length).toBe(separate.length);
        fused.forEach((x, k) => {
          for (let i = 0; i < N; i++) if (!Object.is(x[i], separate[k]![i])) expect.fail(`array ${k}, element ${i}: fused ${x[i]}, separate ${separate[k]![i]}`);
        });
      }),
      { numRuns: 25 },
    );
    expect(chainFusionStats.fusedDispatches).toBeGreaterThan(before); // the programs did fuse
    setChainFusion(true);
  });
});
