/**
 * The memos of repeated calls on device arrays (call-memos.ts): a call reuses the layout, pipeline
 * and params of an earlier call only when every fact that shapes them is the same — calls that
 * differ in one fact at a time (offset, strides, dtype, a buffer shared between operands, a scalar's
 * value) interleaved with the call they differ from, each checked against the same work in JS.
 */
import { afterAll, expect, it } from 'vitest';
import { type DeviceArray, deviceArray, synchronize, toDevice, vectorize } from '../../../src/index.js';
import { callMemoStats } from '../../../src/targets/gpu/runtime/call-memos.js';
import { describeGpu } from '../../gpu-available.js';

const target = 'gpu';
const axpb = vectorize(['float32(float32, float32, float32)', 'int32(int32, int32, int32)'], { target })(function axpb(a: number, x: number, b: number) {
  return a * x + b;
});

const N = 1000;
const hostX = Float32Array.from({ length: N + 8 }, (_, i) => Math.fround(Math.sin(i) * 3));
const hostB = Float32Array.from({ length: N + 8 }, (_, i) => Math.fround(Math.cos(i * 0.37)));

describeGpu('memos of repeated gpu calls', { timeout: 60_000 }, () => {
  afterAll(() => synchronize());

  it('reuses a call\'s layout only for calls laid out alike: offsets, strides, dtypes, shared buffers and scalars each make a difference', async () => {
    const x = await toDevice(hostX);
    const b = await toDevice(hostB);
    const out = await deviceArray([N], 'float32');
    const ints = await toDevice(Int32Array.from({ length: N }, (_, i) => i - 500));
    const intOut = await deviceArray([N], 'int32');
    const expectFloats = async (got: DeviceArray, want: (i: number) => number) => {
      const host = (await got.toHost()) as Float32Array;
      for (let i = 0; i < N; i++) if (!Object.is(host[i], Math.fround(want(i)))) expect.fail(`element ${i}: ${host[i]} vs ${Math.fround(want(i))}`);
    };
    const f = Math.fround;
    const cases: [string, () => Promise<void>][] = [
      ['plain', async () => {
        await axpb(2, x.view([N], [1], 0), b.view([N], [1], 0), { out });
        await expectFloats(out, (i) => f(2 * hostX[i]!) + hostB[i]!);
      }],
      ['x at offset 3', async () => {
        await axpb(2, x.view([N], [1], 3), b.view([N], [1], 0), { out });
        await expectFloats(out, (i) => f(2 * hostX[i + 3]!) + hostB[i]!);
      }],
      ['b reversed', async () => {
        await axpb(2, x.view([N], [1], 0), b.view([N], [-1], N - 1), { out });
        await expectFloats(out, (i) => f(2 * hostX[i]!) + hostB[N - 1 - i]!);
      }],
      ['x broadcast', async () => {
        await axpb(2, x.view([N], [0], 5), b.view([N], [1], 0), { out });
        await expectFloats(out, (i) => f(2 * hostX[5]!) + hostB[i]!);
      }],
      ['x and b the same buffer', async () => {
        await axpb(2, x.view([N], [1], 0), x.view([N], [1], 0), { out });
        await expectFloats(out, (i) => f(2 * hostX[i]!) + hostX[i]!);
      }],
      ['another scalar', async () => {
        await axpb(-0.5, x.view([N], [1], 0), b.view([N], [1], 0), { out });
        await expectFloats(out, (i) => f(-0.5 * hostX[i]!) + hostB[i]!);
      }],
      ['int32', async () => {
        await axpb(3, ints, ints, { out: intOut });
        const host = (await intOut.toHost()) as Int32Array;
        for (let i = 0; i < N; i++) expect(host[i]).toBe(4 * (i - 500));
      }],
    ];
    // Each case after every other, twice: a memo of one must never serve another.
    for (let round = 0; round < 2; round++) {
      for (const [, first] of cases) {
        for (const [name, second] of cases) {
          await first();
          await second().catch((e: unknown) => {
            throw new Error(`${name}: ${String(e)}`);
          });
        }
      }
    }
  });

  it('lays a repeated call out once, and once more for each other layout, each remembered beside the first', async () => {
    const x = await toDevice(hostX);
    const b = await toDevice(hostB);
    const out = await deviceArray([N], 'float32');
    const run = (offset: number, a = 2) => axpb(a, x.view([N], [1], offset), b.view([N], [1], 0), { out });
    await run(0);
    await run(0); // the first call of a pipeline may lay out twice (compiling); from here on it is known
    const before = callMemoStats.remembered;
    for (let k = 0; k < 5; k++) await run(0, k);
    expect(callMemoStats.remembered).toBe(before); // the same layout: reused, whatever the scalar
    await run(1);
    await run(1);
    expect(callMemoStats.remembered).toBe(before + 1); // another offset: laid out once, then reused
    await run(0);
    await run(1);
    expect(callMemoStats.remembered).toBe(before + 1); // both kept
    await synchronize();
  });
});
