/**
 * `fuse` with a trailing `reduce`: the fold runs inside the fused kernel (the element-wise kernel
 * computed where the fold reads each element), over the rows and in the order the separate
 * `reduce` folds them — sequential, or chunks of 4096 for an associative ufunc and long rows — so
 * the bits are the separate calls' on cpu and parallel; on the gpu (whose separate reduce of an
 * associative ufunc takes a tree) within the summation bounds. Any axis, keepdims, initial, where,
 * out, dtype; a reduce it cannot fold runs as a second call, and `explain` says which and why.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { type DeviceArray, fuse, type NDArray, type TargetName, toDevice, vectorize } from '../../src/index.js';
import { TARGETS } from '../targets.js';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Any = any;

function ufuncsOn(target: TargetName) {
  const gpu = target === 'gpu';
  const floats = (arity: number) => (gpu ? ['float32'] : ['float32', 'float64']).map((t) => `${t}(${Array(arity).fill(t).join(', ')})`);
  const add = vectorize([...floats(2), 'int32(int32, int32)'], { target, associative: true, identity: 0 })((a: number, b: number) => a + b) as Any;
  const sub = vectorize(floats(2), { target })((a: number, b: number) => a - b) as Any;
  const saxpy = vectorize(floats(3), { target })((a: number, x: number, y: number) => a * x + y) as Any;
  const gauss = vectorize(floats(1), { target })((x: number) => Math.exp(-x * x)) as Any;
  return { add, sub, saxpy, gauss };
}

const values = (r: unknown): number[] => (typeof r === 'number' ? [r] : Array.from((ArrayBuffer.isView(r) ? r : (r as NDArray).data) as Float32Array, Number));

/**
 * The fused fold's values against the separate reduce's: equal bits on cpu and parallel; on the gpu
 * within the float32 summation bound n·u·Σ|x| (the separate reduce's tree and the fold kernels'
 * order differ by rounding only), `scale` being Σ|x| per result element.
 */
function expectFolded(got: unknown, want: unknown, target: TargetName, n: number, scale: number): void {
  if (typeof want === 'object' && want !== null && !ArrayBuffer.isView(want)) expect((got as NDArray).shape).toEqual((want as NDArray).shape);
  const g = values(got);
  const w = values(want);
  expect(g.length).toBe(w.length);
  for (let i = 0; i < w.length; i++) {
    if (target !== 'gpu') {
      if (!Object.is(g[i], w[i])) expect.fail(`element ${i}: fused ${g[i]}, separate ${w[i]} (bits must be equal on ${target})`);
    } else if (!(Math.abs(g[i]! - w[i]!) <= 2 * n * 2 ** -24 * scale + 1e-30)) {
      expect.fail(`element ${i}: fused ${g[i]}, separate ${w[i]}, beyond the bound ${2 * n * 2 ** -24 * scale}`);
    }
  }
}

const f32 = (n: number, seed: number) => Float32Array.from({ length: n }, (_, i) => Math.sin(seed * 7 + i * 0.37) * 3);

describe.each(TARGETS)('fuse with a trailing reduce on %s', (target) => {
  const { add, sub, saxpy, gauss } = ufuncsOn(target);
  const m = 6;
  const n = 9001; // rows long enough for the associative fold's chunks (2 chunks of 4096, 809 left)
  const x = { data: f32(m * n, 1), shape: [m, n] };
  const y = f32(n, 2);
  const chain = (options: object) => async (x: Any, y: Any) => add.reduce(await gauss(await saxpy(2, x, y)), options);

  it.each([
    ['axis 1 (chunked rows)', { axis: 1 }],
    ['axis 0', { axis: 0 }],
    ['axis -1 with keepdims and initial', { axis: -1, keepdims: true, initial: 5 }],
    ['axis [0, 1] (merged)', { axis: [0, 1] }],
  ])('%s: folded in the kernel, the separate calls’ result', async (_, options) => {
    const separate = chain(options);
    const fused = fuse(separate);
    expect(await fused.explain(x, x)).toMatch(/folds inside the kernel, over axis/);
    expectFolded(await fused(x, x), await separate(x, x), target, m * n, m * n);
    // y broadcast along the rows: still one kernel for one axis
    if (!Array.isArray((options as { axis: unknown }).axis)) expectFolded(await fused(x, y), await separate(x, y), target, m * n, m * n);
  }, 60_000);

  it('where, out, and a non-associative ufunc (sequential rows)', async () => {
    const where = { data: Uint8Array.from({ length: n }, (_, i) => (i % 3 ? 1 : 0)), shape: [n], dtype: 'bool' as const };
    const masked = chain({ axis: 1, where });
    expect(await fuse(masked).explain(x, y)).toMatch(/masked by `where`, from 0, in order/);
    expectFolded(await fuse(masked)(x, y), await masked(x, y), target, n, n);
    const out = new Float32Array(m);
    const want = new Float32Array(m);
    expect(await fuse(chain({ axis: 1 }))(x, y, { out })).toBe(out);
    await add.reduce(await gauss(await saxpy(2, x, y)), { axis: 1, out: want });
    expectFolded(out, want, target, n, n);
    const minus = async (x: Any, y: Any) => sub.reduce(await gauss(await saxpy(2, x, y)), { axis: 1 });
    expect(await fuse(minus).explain(x, y)).toMatch(/over axis 1 of shape \[6, 9001\], in order/);
    expectFolded(await fuse(minus)(x, y), await minus(x, y), target, n, n);
  }, 60_000);

  it('runs as a second call (and says why) where it cannot fold', async () => {
    const everything = chain({ axis: null });
    const explained = await fuse(everything).explain(x, y); // y broadcast along axis 0: the axes do not merge
    expect(explained).toMatch(/runs as a second call over the fused result: an array of the element-wise part cannot be viewed with the folded axes \[0, 1\] merged into one/);
    expectFolded(await fuse(everything)(x, y), await everything(x, y), target, m * n, m * n);
    await expect(fuse(chain({ axis: 2 }))(x, y)).rejects.toThrow(/`axis` 2 is out of bounds/);
  }, 60_000);

  if (target === 'cpu') {
    it("explains the fold kernel's engine, not the element-wise kernel's", async () => {
      // 10 rows of 100: the fold kernel is a call of 10 rows, the element-wise part one of 1,000 elements.
      const rows = { data: f32(1000, 3), shape: [10, 100] };
      const explained = await fuse(async (a: Any, b: Any) => add.reduce(await sub(a, b), { axis: 1 })).explain(rows, rows);
      const engineLine = explained.split('\n').at(-1)!;
      expect(engineLine).toContain('a call of 10 elements');
      expect(sub.explain(rows, rows)).toContain('a call of 1000 elements');
    });
  }

  if (target === 'gpu') {
    it('takes DeviceArrays and returns one', async () => {
      const dx = await toDevice(x);
      const dy = await toDevice(y);
      const got = (await fuse(chain({ axis: 1 }))(dx, dy)) as DeviceArray;
      expect(got.kind).toBe('device');
      const want = (await chain({ axis: 1 })(dx, dy)) as DeviceArray;
      expectFolded(await got.toHost(), await want.toHost(), target, n, n);
    });
  } else {
    it('folds in a `dtype` the reduce is asked for', async () => {
      const wide = chain({ axis: 1, dtype: 'float64' });
      expectFolded(await fuse(wide)(x, y), await wide(x, y), target, n, n);
    });
  }
});

describe.each(TARGETS)('fused reduce ≡ separate reduce on %s (property)', (target) => {
  const { add, sub, saxpy, gauss } = ufuncsOn(target);
  it('over shapes, axes, keepdims, initial, where, broadcasting and ufuncs', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 5 }), fc.oneof(fc.integer({ min: 1, max: 40 }), fc.integer({ min: 8190, max: 8200 })), fc.constantFrom(0, 1, -1, null),
        fc.boolean(), fc.constantFrom(undefined, 0, 2.5), fc.boolean(), fc.boolean(), fc.boolean(), fc.nat(100),
        async (m, n, axis, keepdims, initial, masked, rowY, associative, seed) => {
          const x = { data: f32(m * n, seed), shape: [m, n] };
          const y = rowY ? f32(n, seed + 1) : { data: f32(m * n, seed + 2), shape: [m, n] };
          const where = masked ? { data: Uint8Array.from({ length: m * n }, (_, i) => ((i + seed) % 4 ? 1 : 0)), shape: [m, n], dtype: 'bool' as const } : undefined;
          const ufunc = associative ? add : sub;
          const options = { axis, keepdims, ...(initial === undefined ? {} : { initial }), ...(where ? { where } : {}) };
          const run = async (a: Any, b: Any) => ufunc.reduce(await gauss(await saxpy(-1.5, a, b)), options);
          let want: unknown;
          let wantError: unknown;
          try {
            want = await run(x, y);
          } catch (e) {
            wantError = e;
          }
          const fused = fuse(run);
          if (wantError) {
            await expect(fused(x, y)).rejects.toThrow((wantError as Error).constructor as new () => Error);
            return;
          }
          if (axis !== null || !rowY || m === 1) expect(await fused.explain(x, y)).toMatch(/folds inside the kernel/);
          expectFolded(await fused(x, y), want, target, m * n, m * n);
        },
      ),
      { numRuns: target === 'gpu' ? 8 : 40 },
    );
  }, 120_000);
});
