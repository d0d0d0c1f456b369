/**
 * Values the device's compiler can prove — the constant zeros of `c ? 0 : -0`, a zero-filled local
 * array, a counter after a loop it unrolls — must not be folded with algebra that ignores NaN and
 * signed zero (docs/gpu.md: `NaN * 0` is never 0), and `Math.imul` of expressions must multiply
 * the expressions (issue 26). Each kernel is compared with the cpu, bit for bit (NaN equal to NaN).
 */
import { afterAll, expect, it } from 'vitest';
import { guvectorize, vectorize } from '../../../src/index.js';
import { shutdownDevice } from '../../../src/targets/gpu/runtime/device.js';
import { describeGpu } from '../../gpu-available.js';

afterAll(() => shutdownDevice());

const bits = (xs: ArrayLike<number>) => Array.from(xs, (v) => (Object.is(v, -0) ? '-0' : String(v)));
const SPECIAL = Float32Array.of(NaN, Infinity, -Infinity, -0, 0, -1, 1, 200_000);

type Row = { [i: number]: number; length: number };
const ROW_KERNELS: Record<string, (x: Row, out: Row) => void> = {
  'zero local over x': (x, out) => { const z = new Float32Array(4); for (let i = 0; i < x.length; i++) out[i] = z[1]! / x[i]!; },
  'zero local, fused': (x, out) => { const z = new Float32Array(2); for (let i = 0; i < x.length; i++) out[i] = x[i]! * z[0]! + z[1]!; },
  'zero local plus x': (x, out) => { const z = new Float32Array(4); for (let i = 0; i < x.length; i++) out[i] = z[i % 4]! + x[i]!; },
  'counter plus x': (x, out) => { for (let i = 0; i < x.length; i++) { let c = 0; for (let k = 0; k < 3; k++) c = c + 0; out[i] = c + x[i]!; } },
  'counter times x': (x, out) => { for (let i = 0; i < x.length; i++) { let c = 0; for (let k = 0; k < 3; k++) c += k; out[i] = x[i]! * (c - 3); } },
  'zero output row': (x, out) => { for (let i = 0; i < x.length; i++) out[i] = out[i]! * x[i]! + out[i]!; },
  'a comparison as a number': (x, out) => { for (let i = 0; i < x.length; i++) out[i] = x[i]! * (x.length < 0 ? 1 : 0); },
};

describeGpu('the device compiler cannot fold what JS would not', { timeout: 60_000 }, () => {
  it.each(Object.keys(ROW_KERNELS))('%s', async (name) => {
    const run = async (target: 'cpu' | 'gpu') =>
      bits((await guvectorize(['void(float32[:], float32[:])'], '(n)->(n)', { target })(ROW_KERNELS[name]!)(SPECIAL)) as Float32Array);
    expect(await run('gpu')).toEqual(await run('cpu'));
  });

  it('the two zeros of a select stay two (`x > 99999 ? 0 : -0`)', async () => {
    for (const k of [(x: number) => (x > 99999 ? 0 : -0), (x: number) => (x > 99999 ? -0 : 0), (x: number) => { if (x > 99999) return 0; return -0; }]) {
      const run = async (target: 'cpu' | 'gpu') => bits((await vectorize(['float32(float32)'], { target })(k)(SPECIAL)) as Float32Array);
      expect(await run('gpu')).toEqual(await run('cpu'));
    }
  });

  it('Math.imul of expressions multiplies the expressions', async () => {
    const a = Int32Array.of(1, 2, -7, 2147483647, 65536);
    const b = Int32Array.of(3, 4, 9, 2, 65536);
    const kernels = [
      (x: number, y: number) => Math.imul(x + 1, y),
      (x: number, y: number) => Math.imul(x, y | 0),
      (x: number, y: number) => Math.imul(x ^ 3, y - 1) + 1,
      (x: number, y: number) => Math.sign(x | y),
    ];
    for (const k of kernels) {
      const run = async (target: 'cpu' | 'gpu') => Array.from((await vectorize(['int32(int32, int32)'], { target })(k)(a, b)) as Int32Array);
      expect(await run('gpu'), k.toString()).toEqual(await run('cpu'));
    }
    const unsigned = (x: number, y: number) => Math.sign(x | y);
    const u = Uint32Array.of(0, 1, 4294967295);
    const runU = async (target: 'cpu' | 'gpu') => Array.from((await vectorize(['uint32(uint32, uint32)'], { target })(unsigned)(u, u)) as Uint32Array);
    expect(await runU('gpu')).toEqual(await runU('cpu'));
  });
});

describeGpu('Math functions of one argument that stand for it', { timeout: 60_000 }, () => {
  it('keep its parentheses (`x - Math.max(a >>> b)` did not compile: "mixing - and >> requires parenthesis")', async () => {
    const kernels = [
      (x: number) => x - Math.max(x >>> 1),
      (x: number) => x - Math.min(x << 1),
      (x: number) => x - Math.floor(x >>> 2),
      (x: number) => x - Math.abs(x >>> 3),
      (x: number) => x * Math.trunc(x & 5) - 1,
    ];
    const x = Uint32Array.of(0, 1, 7, 4294967295, 2147483648);
    for (const k of kernels) {
      const run = async (target: 'cpu' | 'gpu') => Array.from((await vectorize(['uint32(uint32)'], { target })(k)(x)) as Uint32Array);
      expect(await run('gpu'), k.toString()).toEqual(await run('cpu'));
    }
    const f = async (target: 'cpu' | 'gpu') => bits((await vectorize(['float32(float32, int32)'], { target })((a: number, b: number) => a - Math.fround(b >> 1))(SPECIAL, Int32Array.from(SPECIAL, (v, i) => i * 1000 - 3))) as Float32Array);
    expect(await f('gpu')).toEqual(await f('cpu'));
  });
});
