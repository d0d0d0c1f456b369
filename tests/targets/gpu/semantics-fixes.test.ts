/**
 * gpu results that used to differ from the cpu's silently, or calls that failed with a raw or a
 * "bug in ufunc" error (issue 13, items 5 to 8): `!=` with NaN, constants the gpu held in f32
 * (now folded exactly when compiling, or refused when f32 cannot hold them), signed zeros, a
 * helper named `main`, and 8/16-bit per-row outputs at byte offsets that are not word-aligned.
 */
import fc from 'fast-check';
import { afterAll, expect, it } from 'vitest';
import { guvectorize, KernelCompileError, vectorize } from '../../../src/index.js';
import { shutdownDevice } from '../../../src/targets/gpu/runtime/device.js';
import { describeGpu } from '../../gpu-available.js';

afterAll(() => shutdownDevice());

/** The cpu's and the gpu's results of one kernel on the same input, as plain arrays. */
async function onBoth(kernel: Function, signature: string, input: ArrayLike<number> & object, env: Record<string, unknown> = {}) {
  const run = async (target: 'cpu' | 'gpu') =>
    Array.from((await vectorize([signature], { target, env: env as never })(kernel as never)(input)) as ArrayLike<number>);
  return { cpu: await run('cpu'), gpu: await run('gpu') };
}

describeGpu('gpu results equal to the cpu’s', { timeout: 60_000 }, () => {
  it('`!==` and `!=` are true when either side is NaN', async () => {
    const ne = vectorize(['int32(float32, float32)'], { target: 'gpu' })((a: number, b: number) => (a !== b ? 1 : 0));
    const a = Float32Array.from([NaN, 2, NaN, 1, 0]);
    const b = Float32Array.from([2, NaN, NaN, 1, -0]);
    expect(Array.from(await ne(a, b))).toEqual([1, 1, 1, 0, 0]);
    const neLoose = vectorize(['int32(float32)'], { target: 'gpu' })((a: number) => (a != 2 ? 1 : 0));
    expect(Array.from(await neLoose(Float32Array.from([NaN, 2, 3])))).toEqual([1, 0, 1]);
  });

  it('computes constant expressions exactly when compiling', async () => {
    const ints = Int32Array.from([0, 5, -1, 2147483647, -2147483648]);
    for (const kernel of [(x: number) => (x + (-1 >>> 0)) | 0, (x: number) => (x + -2147483648 / -1) | 0, (x: number) => (x - 3 * 1431655765) >>> 0]) {
      const { cpu, gpu } = await onBoth(kernel, 'int32(int32)', ints);
      expect(gpu).toEqual(cpu);
    }
    const { cpu, gpu } = await onBoth((x: number) => x + (-1 >>> 0), 'uint32(uint32)', Uint32Array.from([0, 1, 7]));
    expect(gpu).toEqual(cpu);
  });

  it('keeps signed zeros of constants and negated integers', async () => {
    const ones = Float32Array.from([1, -1]);
    for (const kernel of [
      (_x: number) => -0,
      (x: number) => { const z = -0; return 1 / z + x; },
      (x: number) => { let i = 0; i = -i; return 1 / i; },
    ]) {
      const { cpu, gpu } = await onBoth(kernel, 'float32(float32)', ones);
      expect(gpu.map((v) => Object.is(v, -0) ? '-0' : v)).toEqual(cpu.map((v) => Object.is(v, -0) ? '-0' : v));
    }
  });

  it('refuses a double constant that f32 cannot hold, with where and why', async () => {
    const B = 1e39;
    const minusB = vectorize(['float32(float32)'], { target: 'gpu', env: { B } })((x: number) => { const b = B; return x - b; });
    const refused = minusB(Float32Array.from([Infinity]));
    await expect(refused).rejects.toThrow(KernelCompileError);
    await expect(minusB(Float32Array.from([1]))).rejects.toThrow(/The constant 1e\+39 at tests\/targets\/gpu\/semantics-fixes\.test\.ts:56:\d+ is a double \(float64\) value, which the gpu target computes in f32 .* it would be Infinity/);
    const tiny = vectorize(['float32(float32)'], { target: 'gpu' })((x: number) => { const eps = 1e-50; return x + eps; });
    await expect(tiny(Float32Array.from([1]))).rejects.toThrow(/it would be 0, not 1e-50/);
    // A float32 constant is rounded on the cpu too: the same on both.
    const { cpu, gpu } = await onBoth((x: number) => x - 1e39, 'float32(float32)', Float32Array.from([Infinity, 1]));
    expect(gpu).toEqual(cpu);
  });

  it('compares exactly as the cpu for any float32 pair (property)', async () => {
    const ops = {
      ne: vectorize(['int32(float32, float32)'], { target: 'gpu' })((a: number, b: number) => (a !== b ? 1 : 0)),
      eq: vectorize(['int32(float32, float32)'], { target: 'gpu' })((a: number, b: number) => (a === b ? 1 : 0)),
      lt: vectorize(['int32(float32, float32)'], { target: 'gpu' })((a: number, b: number) => (a < b ? 1 : 0)),
      ge: vectorize(['int32(float32, float32)'], { target: 'gpu' })((a: number, b: number) => (a >= b ? 1 : 0)),
    };
    const special = fc.constantFrom(NaN, Infinity, -Infinity, 0, -0, 1, -1, 3.5);
    const value = fc.oneof(special, fc.float({ noDefaultInfinity: false, noNaN: false }));
    await fc.assert(
      fc.asyncProperty(fc.array(fc.tuple(value, value), { minLength: 1, maxLength: 64 }), async (pairs) => {
        const a = Float32Array.from(pairs, (p) => p[0]);
        const b = Float32Array.from(pairs, (p) => p[1]);
        const expected = {
          ne: pairs.map((_, i) => (a[i] !== b[i] ? 1 : 0)), eq: pairs.map((_, i) => (a[i] === b[i] ? 1 : 0)),
          lt: pairs.map((_, i) => (a[i]! < b[i]! ? 1 : 0)), ge: pairs.map((_, i) => (a[i]! >= b[i]! ? 1 : 0)),
        };
        for (const [name, op] of Object.entries(ops)) expect(Array.from(await op(a, b)), name).toEqual(expected[name as keyof typeof expected]);
      }),
      { numRuns: 25 },
    );
  });

  it('folds integer constant expressions exactly (property)', async () => {
    const xs = Int32Array.from([0, 1, -1, 123456789, 2147483647, -2147483648]);
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: -(2 ** 32) + 1, max: 2 ** 32 - 1 }), fc.constantFrom(1, -1, 3, -7, 4), async (c, d) => {
        // A new kernel per constant: the constant is part of the kernel's source.
        const kernel = new Function('x', `return (x + ${c} / ${d}) | 0;`) as (x: number) => number;
        const { cpu, gpu } = await onBoth(kernel, 'int32(int32)', xs);
        expect(gpu).toEqual(cpu);
      }),
      { numRuns: 10 },
    );
  });

  it('adds a fractional constant to an integer exactly where the sum is converted to an integer', async () => {
    const ints = Int32Array.from([0, 1, -1, 5, -5, 2147483647, -2147483648, 1342177275, -1342177276, 123456789]);
    const uints = Uint32Array.from([0, 1, 5, 2147483647, 2147483648, 4294967295, 3000000000]);
    for (const c of ['4026531826 / 3', '0.5', '-0.5', '-2147483648.5', '4294967294.5', '1e-3']) {
      for (const form of ['(x + C) | 0', '(x - C) | 0', '(C + x) | 0', '(C - x) >>> 0']) {
        const kernel = new Function('x', `return ${form.replace('C', `(${c})`)};`) as (x: number) => number;
        for (const [signature, input] of [['int32(int32)', ints], ['uint32(uint32)', uints], ['int8(int32)', ints]] as const) {
          const { cpu, gpu } = await onBoth(kernel, signature, input);
          expect(gpu, `${signature} ${form} with C = ${c}`).toEqual(cpu);
        }
      }
    }
    // A store into an integer array converts the same way.
    const { cpu, gpu } = await onBoth((x: number) => x + 0.5, 'int16(int32)', ints);
    expect(gpu).toEqual(cpu);
    // Within 2^-18 of an integer, the cpu's double sum may round to the integer: refused.
    const near = vectorize(['int32(int32)'], { target: 'gpu' })((x: number) => (x + 3.0000001) | 0);
    await expect(near(ints)).rejects.toThrow(/The constant 3\.0000001 at tests\/targets\/gpu\/semantics-fixes\.test\.ts:119:\d+ is added to or subtracted from an integer .* fraction is at least 2\^-18 from an integer/);
  });

  it('keeps JS’s answers for products with a constant zero, sums with zero and repeated operands', async () => {
    // Without care the driver applies real-number algebra (WGSL §15.7.2 lets it): lavapipe folded
    // `0 * x` to +0, `x + 0` to x (−0 stayed −0), `x - x` to 0 and `(x + y) - y` to x.
    const show = (v: number) => (Object.is(v, -0) ? '-0' : String(v));
    const xs = Float32Array.from([0, -0, 1, -1, Infinity, -Infinity, NaN, 2.5, 1e-40, 3e38, 1e-8, 16777216]);
    const ys = Float32Array.from([1, 1e-40, -0, 3e38, 2, Infinity, 1, 1e8, 0, 3e38, 1, 1]);
    const bodies = [
      'return 0 * x;', 'return x * 0;', 'return -0 * x;', 'return x + 0;', 'return 0 - x;', 'return (x + 1) - 1;', 'return x - x;',
      'let z = x; return x - z;', 'return x * y - x * y;', 'return (x + y) - y;', 'return y + (x - y);', 'return (x - y) + y;',
      'return x + (-x);', 'let t = x + y; return (t - x) - y;', 'return x + y < x ? 1 : 0;', 'return (x + y) + 1 - 1;',
    ];
    for (const body of bodies) {
      const kernel = new Function('x', 'y', body) as (x: number, y: number) => number;
      const run = async (target: 'cpu' | 'gpu') =>
        Array.from((await vectorize(['float32(float32, float32)'], { target })(kernel as never)(xs, ys)) as Float32Array).map(show);
      expect(await run('gpu'), body).toEqual(await run('cpu'));
    }
  });

  it('compiles a helper named `main` (the entry point’s name is reserved)', async () => {
    const main = (x: number) => x + 1;
    const { cpu, gpu } = await onBoth((x: number) => main(x) * 2, 'float32(float32)', Float32Array.from([1, 2]), { main });
    expect(gpu).toEqual([4, 6]);
    expect(gpu).toEqual(cpu);
  });

  it.each([
    { dtype: 'uint8', make: () => new Uint8Array(8) },
    { dtype: 'int16', make: () => new Int16Array(8) },
    { dtype: 'uint8', make: () => new Uint8Array(9) },
  ] as const)('writes $dtype per-row outputs at an odd offset', async ({ dtype, make }) => {
    const inc = guvectorize([`void(${dtype}[:], ${dtype}[:])`], '(n)->(n)', { target: 'gpu' })((a: Uint8Array, o: Uint8Array) => {
      for (let i = 0; i < a.length; i++) o[i] = a[i]! + 1;
    });
    const backing = make();
    const out = backing.subarray(1, 4);
    const input = backing.constructor === Uint8Array ? Uint8Array.from([1, 2, 3]) : Int16Array.from([1, 2, 3]);
    await inc(input, { out });
    expect(Array.from(backing)).toEqual([0, 2, 3, 4, ...new Array(backing.length - 4).fill(0)]);
  });
});
