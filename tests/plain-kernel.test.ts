/**
 * Plain-JS execution (`disableJit`, `UFUNC_DISABLE_JIT=1`): kernels run as the functions they are,
 * on the calling thread, on every target, with results in the containers the target gives.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import {
  DeviceArray, fuse, FusionError, guvectorize, KernelCompileError, KernelRuntimeError, toDevice, vectorize, type NDArray,
} from '../src/index.js';
import { runDebugExample } from '../examples/debug.js';
import { FLOAT64_TARGETS, TARGETS } from './targets.js';

afterEach(() => {
  vi.restoreAllMocks();
});

describe.each(TARGETS)('disableJit on %s', (target) => {
  const logging = (x: number) => {
    console.log('x is', x);
    return x * 2;
  };

  it('runs a kernel that calls console.log, which the compiler refuses', async () => {
    expect(() => vectorize(['float32(float32)'], { target })(logging)).toThrow(KernelCompileError);
    const log = vi.spyOn(console, 'log').mockImplementation(() => {});
    const twice = vectorize(['float32(float32)'], { target, disableJit: true })(logging);
    const z = await twice(Float32Array.of(1, 2, 3));
    expect(z).toBeInstanceOf(Float32Array);
    expect([...z]).toEqual([2, 4, 6]);
    expect(log.mock.calls).toEqual([['x is', 1], ['x is', 2], ['x is', 3]]);
  });

  it('gives the results of the compiled kernel, broadcast and in the same containers', async () => {
    const kernel = (a: number, x: number, y: number) => a * x + y;
    const compiled = vectorize(['float32(float32, float32, float32)'], { target })(kernel);
    const plain = vectorize(['float32(float32, float32, float32)'], { target, disableJit: true })(kernel);
    const col = { data: Float32Array.of(1, 2, 3), shape: [3, 1] };
    const row = Float32Array.of(0.5, 0.25);
    const expected = (await compiled(2, col, row)) as NDArray;
    const got = (await plain(2, col, row)) as NDArray;
    expect(got.shape).toEqual([3, 2]);
    expect(got.data).toBeInstanceOf(Float32Array);
    expect([...got.data]).toEqual([...expected.data]);
  });

  it('runs guvectorize row by row over views: out.length, a[i][j], a.shape', async () => {
    const rowSums = guvectorize(['void(float32[:,:], float32[:])'], '(m,n)->(m)', { target, disableJit: true })((a: Float32Array[], out: Float32Array) => {
      const shape = (a as unknown as { shape: number[] }).shape;
      for (let i = 0; i < out.length; i++) {
        let s = 0;
        for (let j = 0; j < shape[1]!; j++) s += a[i]![j]!;
        out[i] = s;
      }
    });
    const a = { data: Float32Array.from({ length: 12 }, (_, k) => k), shape: [2, 2, 3] };
    const sums = (await rowSums(a)) as NDArray;
    expect(sums.shape).toEqual([2, 2]);
    expect([...sums.data]).toEqual([3, 12, 21, 30]);
  });

  it('checks every index, even with boundsCheck off, and names the array', async () => {
    const overrun = guvectorize(['void(float32[:], float32[:])'], '(n)->(n)', { target, disableJit: true, boundsCheck: false })((x: Float32Array, out: Float32Array) => {
      for (let i = 0; i <= x.length; i++) out[i] = x[i]!;
    });
    await expect(overrun(Float32Array.of(1, 2))).rejects.toThrowErrorMatchingSnapshot();
    await expect(overrun(Float32Array.of(1, 2))).rejects.toBeInstanceOf(KernelRuntimeError);
  });

  it('refuses a write to an input', async () => {
    const scribble = guvectorize(['void(float32[:], float32[:])'], '(n)->()', { target, disableJit: true })((x: Float32Array, out: Float32Array) => {
      x[0] = 5;
      out[0] = x[0];
    });
    await expect(scribble(Float32Array.of(1, 2))).rejects.toThrowErrorMatchingSnapshot();
  });

  it('says how it runs', () => {
    const plain = vectorize(['float32(float32)'], { target, disableJit: true })(logging);
    if (target === 'gpu') return; // explain needs the target loaded: the first call loads it
    expect(plain.explain(Float32Array.of(1, 2, 3))).toMatchSnapshot();
  });

  it('runs examples/debug.ts: the log of each row, the out-of-bounds read named, then the means', async () => {
    const { lines, means } = await runDebugExample(target);
    expect(lines).toEqual([
      'KernelRuntimeError: Index 2 is outside `x`, whose length is 2, in the row at loop index [0] (the kernel runs as plain JS, `disableJit`, where every index is checked; the stack shows the line).',
      'row [1, 2] sum 3',
      'row [3, 4] sum 7',
    ]);
    expect(means).toEqual([1.5, 3.5]);
  });

  it('runs reduce, accumulate and outer through the plain kernel too', async () => {
    const log = vi.spyOn(console, 'log').mockImplementation(() => {});
    const add = vectorize(['float32(float32, float32)'], { target, disableJit: true, identity: 0 })((a: number, b: number) => {
      console.log(a, b);
      return a + b;
    });
    expect(await add.reduce(Float32Array.of(1, 2, 3, 4))).toBe(10);
    expect(log).toHaveBeenCalledTimes(3);
    expect([...((await add.accumulate(Float32Array.of(1, 2, 3))) as Float32Array)]).toEqual([1, 3, 6]);
    // outer runs one broadcast call of the kernel: plain JS too (it gave NaN when it reached the target's compiled code).
    const table = (await add.outer(Float32Array.of(1, 2), Float32Array.of(10, 20, 30))) as NDArray;
    expect(table.shape).toEqual([2, 3]);
    expect([...table.data]).toEqual([11, 21, 31, 12, 22, 32]);
    expect(log).toHaveBeenCalledTimes(3 + 2 + 6);
  });
});

describe.each(FLOAT64_TARGETS)('disableJit on %s, 64-bit and bool types', (target) => {
  it('reads int64 as bigints and bool as booleans, and stores as the compiled kernel does', async () => {
    const pick = vectorize(['int64(bool, int64, float64)'], { target, disableJit: true })((c: boolean, n: bigint, x: number) => {
      if (typeof c !== 'boolean' || typeof n !== 'bigint') throw new Error(`read ${typeof c}, ${typeof n}`);
      return c ? n * 2n : x; // a number into int64 truncates; NaN → 0
    });
    const z = await pick({ data: Uint8Array.of(1, 0, 0), shape: [3], dtype: 'bool' }, BigInt64Array.of(5n, 6n, 7n), Float64Array.of(0, -2.7, NaN));
    expect([...(z as NDArray).data]).toEqual([10n, -2n, 0n]);
  });
});

describe('disableJit: where plain JS differs from compiled kernels (docs/debugging.md)', () => {
  it('rounds float32 only on stores', async () => {
    const kernel = (x: number) => x + 1 - 1;
    const compiled = vectorize(['float32(float32)'])(kernel);
    const plain = vectorize(['float32(float32)'], { disableJit: true })(kernel);
    const x = Float32Array.of(1e-8);
    expect((await compiled(x))[0]).toBe(0); // fround(fround(1 + x) - 1)
    expect((await plain(x))[0]).toBe(Math.fround(1 + x[0]! - 1)); // in double, rounded once: about 1e-8
  });

  it('wraps int32 only on stores', async () => {
    const kernel = (a: number) => (a * 2) / 2;
    const compiled = vectorize(['int32(int32)'])(kernel);
    const plain = vectorize(['int32(int32)'], { disableJit: true })(kernel);
    const a = Int32Array.of(2 ** 30);
    expect((await compiled(a))[0]).toBe(-(2 ** 30)); // a * 2 wraps to −2³¹
    expect((await plain(a))[0]).toBe(2 ** 30);
  });
});

describe('disableJit: the switch and the kernel', () => {
  it('is on for ufuncs made while UFUNC_DISABLE_JIT is set; the option wins', async () => {
    const log = vi.spyOn(console, 'log').mockImplementation(() => {});
    const kernel = (x: number) => {
      console.log(x);
      return -x;
    };
    vi.stubEnv('UFUNC_DISABLE_JIT', '1');
    try {
      const plain = vectorize(['float64(float64)'])(kernel);
      expect([...(await plain(Float64Array.of(1, 2)))]).toEqual([-1, -2]);
      expect(log).toHaveBeenCalledTimes(2);
      expect(() => vectorize(['float64(float64)'], { disableJit: false })(kernel)).toThrow(KernelCompileError);
      vi.stubEnv('UFUNC_DISABLE_JIT', '0');
      expect(() => vectorize(['float64(float64)'])(kernel)).toThrow(KernelCompileError);
    } finally {
      vi.unstubAllEnvs();
    }
  });

  it('sees the names of env: source text evaluated with them, a function with them as globals while it runs', async () => {
    const text = vectorize(['float64(float64)'], { env: { SCALE: 3 }, disableJit: true })('(x) => x * SCALE');
    expect([...(await text(Float64Array.of(1, 2)))]).toEqual([3, 6]);
    const fn = new Function('x', 'return x * OFFSET_FROM_ENV;') as (x: number) => number;
    const plain = vectorize(['float64(float64)'], { env: { OFFSET_FROM_ENV: 10 }, disableJit: true })(fn);
    expect([...(await plain(Float64Array.of(1, 2)))]).toEqual([10, 20]);
    expect('OFFSET_FROM_ENV' in globalThis).toBe(false);
  });

  it('runs .sync on host targets, and infers a lazy vectorize result as the compiler does', () => {
    const add = vectorize([], { disableJit: true })((a: number, b: number) => a + b);
    const z = add.sync(Int32Array.of(1, 2), Int32Array.of(3, 4));
    expect(z).toBeInstanceOf(vectorize([])((a: number, b: number) => a + b).sync(Int32Array.of(1), Int32Array.of(3)).constructor);
    expect([...z]).toEqual([4, 6]);
    const logged = vectorize([], { disableJit: true })((a: number) => {
      console.log(a);
      return a;
    });
    vi.spyOn(console, 'log').mockImplementation(() => {});
    expect(logged.sync(Int32Array.of(7))).toBeInstanceOf(Float64Array); // refused by the compiler: JS's number
  });

  it('is not fused: fuse says why, and runs the calls one by one when asked', async () => {
    const double = vectorize(['float64(float64)'], { disableJit: true })((x: number) => x * 2);
    const inc = vectorize(['float64(float64)'])((x: number) => x + 1);
    const chained = fuse((x) => inc(double(x) as never));
    await expect(chained(Float64Array.of(1, 2))).rejects.toThrowError(FusionError);
    await expect(chained(Float64Array.of(1, 2))).rejects.toThrowError(/runs its kernel as plain JS \(`disableJit` or UFUNC_DISABLE_JIT\): nothing is compiled, so nothing fuses/);
    const separate = fuse((x) => inc(double(x) as never), { unfusable: 'separate' });
    expect([...((await separate(Float64Array.of(1, 2))) as Float64Array)]).toEqual([3, 5]);
  });

  it('prints a view with console.log as its elements', async () => {
    const { inspect } = await import('node:util');
    let shown = '';
    const show = guvectorize(['void(float32[:], float32[:])'], '(n)->()', { disableJit: true })((x: Float32Array, out: Float32Array) => {
      shown = inspect(x);
      out[0] = x.length;
    });
    await show(Float32Array.of(1.5, 2));
    expect(shown).toBe('float32[2] [ 1.5, 2 ]');
  });
});

describe.each(TARGETS.filter((t) => t === 'gpu'))('disableJit on %s with device arrays', (target) => {
  it('reads device inputs and returns a device array', async () => {
    const kernel = (x: number, y: number) => x * y + 1;
    const plain = vectorize(['float32(float32, float32)'], { target, disableJit: true })(kernel);
    const x = await toDevice(Float32Array.of(1, 2, 3, 4, 5));
    const y = await toDevice(Float32Array.of(2, 2, 2, 2, 2));
    const z = await plain(x, y);
    expect(z).toBeInstanceOf(DeviceArray);
    expect([...(await (z as DeviceArray).toHost())]).toEqual([3, 5, 7, 9, 11]);
    const strided = (x as DeviceArray).view([2], [2], 1); // 2, 4
    const into = await toDevice(new Float32Array(4));
    await plain(strided, 3, { out: (into as DeviceArray).view([2], [2], 0) });
    expect([...(await (into as DeviceArray).toHost())]).toEqual([7, 0, 13, 0]);
  });

  it('keeps the writes of two outputs interleaved in one device array, and reads an overlapping input as it was before the call', async () => {
    const split = guvectorize(['void(float32, float32[:], float32[:])'], '()->(),()', { target, disableJit: true })((x: number, lo: Float32Array, hi: Float32Array) => {
      lo[0] = x - 1;
      hi[0] = x + 1;
    });
    const both = (await toDevice(new Float32Array(6))) as DeviceArray;
    await split(await toDevice(Float32Array.of(10, 20, 30)), { out: [both.view([3], [2], 0), both.view([3], [2], 1)] });
    expect([...(await both.toHost())]).toEqual([9, 11, 19, 21, 29, 31]);
    // The same call compiled gives the same memory.
    const compiled = guvectorize(['void(float32, float32[:], float32[:])'], '()->(),()', { target })((x: number, lo: Float32Array, hi: Float32Array) => {
      lo[0] = x - 1;
      hi[0] = x + 1;
    });
    const again = (await toDevice(new Float32Array(6))) as DeviceArray;
    await compiled(await toDevice(Float32Array.of(10, 20, 30)), { out: [again.view([3], [2], 0), again.view([3], [2], 1)] });
    expect([...(await again.toHost())]).toEqual([9, 11, 19, 21, 29, 31]);
    // An input shifted over its output: every element read as it was before the call, as compiled.
    const next = vectorize(['float32(float32)'], { target, disableJit: true })((x: number) => x * 2);
    const shifted = (await toDevice(Float32Array.of(1, 2, 3, 4))) as DeviceArray;
    await next(shifted.view([3], [1], 1), { out: shifted.view([3], [1], 0) });
    expect([...(await shifted.toHost())]).toEqual([4, 6, 8, 4]);
  });

  it('writes uint8 outputs at an odd offset without touching their neighbours', async () => {
    const plain = vectorize(['uint8(uint8)'], { target, disableJit: true })((x: number) => x + 100);
    const out = await toDevice(Uint8Array.of(1, 2, 3, 4, 5, 6, 7));
    await plain(await toDevice(Uint8Array.of(10, 20)), { out: (out as DeviceArray).view([2], [1], 3) });
    expect([...(await (out as DeviceArray).toHost())]).toEqual([1, 2, 3, 110, 120, 6, 7]);
  });
});
