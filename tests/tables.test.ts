/**
 * Lookup tables: typed arrays in `env` (compiler/tables.ts). A kernel reads one as it reads a
 * one-dimensional array — `LUT[i]`, `LUT.length`, passed to a helper — with the same bounds
 * checks, on every target and engine; it never writes one (a KernelCompileError); the contents are
 * those the table had when the ufunc was made. Expected values are computed here from the tables
 * themselves, never by the library.
 */
import { afterAll, describe, expect, it } from 'vitest';
import {
  deviceArray, fuse, getGpuOptions, guvectorize, setGpuOptions, KernelCompileError, KernelRuntimeError, TargetUnavailableError, toDevice, vectorize, type DeviceArray,
} from '../src/index.js';
import { engineMode, setEngineMode, type EngineMode } from '../src/targets/cpu/wasm/index.js';
import { acquireDevice, shutdownDevice } from '../src/targets/gpu/runtime/device.js';
import { streamingStats } from './call-paths.js';
import { chainFusionStats, fusedKernelsCompiled, setChainFusion } from '../src/targets/gpu/runtime/chain-fusion.js';
import { TARGETS } from './targets.js';
import { gpuAvailable } from './gpu-available.js';

const initialMode = engineMode();
const DEFAULT_LIMIT = getGpuOptions().memoryLimit;
afterAll(async () => {
  setEngineMode(initialMode);
  if (gpuAvailable) await shutdownDevice();
});

/** cpu and parallel under both engine modes (the Wasm mode runs table kernels on the JS engine); the gpu has its own code. */
const CASES: [string, EngineMode][] = TARGETS.flatMap((t): [string, EngineMode][] => (t === 'gpu' ? [[t, 'auto']] : [[t, 'js'], [t, 'wasm']]));

/** A result's elements, from a host array or a device array. */
const host = async (r: unknown): Promise<number[]> => Array.from(((r as Partial<DeviceArray>).toHost ? await (r as DeviceArray).toHost() : r) as ArrayLike<number>);

describe.each(CASES)('lookup tables on %s (engine %s)', (target, mode) => {
  const t = target as 'cpu' | 'parallel' | 'gpu';
  const run = async <T>(f: () => Promise<T> | T): Promise<T> => {
    setEngineMode(mode);
    try {
      return await f();
    } finally {
      setEngineMode(initialMode);
    }
  };

  it('reads elements and .length (float32, with NaN, ±Infinity and −0 kept bit for bit)', async () => {
    const LUT = Float32Array.of(1.5, -2.25, NaN, Infinity, -Infinity, -0, 3.4028234663852886e38, 1e-45);
    const f = vectorize(['float32(int32)'], { target: t, env: { LUT } })('(i) => LUT[i] + LUT.length * 0');
    const g = vectorize(['int32(int32)'], { target: t, env: { LUT } })((i: number) => LUT.length - i);
    const idx = Int32Array.from({ length: 40 }, (_, k) => (k * 5) % LUT.length);
    // −0 + 0 is +0, as in JS; toEqual tells −0 from +0.
    expect(await host(await run(() => f(idx)))).toEqual([...idx].map((i) => Math.fround(LUT[i]! + 0)));
    expect(await host(await run(() => g(Int32Array.of(0, 3, 8))))).toEqual([8, 5, 0]);
  });

  it('reads integer tables of every width (sign kept)', async () => {
    const tables = {
      I8: Int8Array.of(-128, -1, 0, 127), U8: Uint8Array.of(0, 1, 200, 255), C8: Uint8ClampedArray.of(0, 17, 128, 255),
      I16: Int16Array.of(-32768, -2, 5, 32767), U16: Uint16Array.of(0, 1, 40000, 65535), I32: Int32Array.of(-2147483648, -7, 9, 2147483647),
      U32: Uint32Array.of(0, 1, 3000000000, 4294967295),
    };
    const f = vectorize(['float64(int32)', 'float32(int32)'], { target: t, env: tables })(
      '(i) => I8[i] + U8[i] + C8[i] + I16[i] + U16[i] + I32[i] / 2 + U32[i] / 4',
    );
    const idx = Int32Array.of(0, 1, 2, 3, 3, 0);
    const expected = [...idx].map((i) => {
      const v = tables.I8[i]! + tables.U8[i]! + tables.C8[i]! + tables.I16[i]! + tables.U16[i]! + tables.I32[i]! / 2 + tables.U32[i]! / 4;
      return t === 'gpu' ? Math.fround(v) : v;
    });
    const r = await host(await run(() => f(idx, { dtype: t === 'gpu' ? 'float32' : 'float64' })));
    // The gpu computes in f32 (docs/gpu.md): compare within float32's rounding of the terms.
    r.forEach((v, k) => (t === 'gpu' ? expect(v).toBeCloseTo(expected[k]!, -3) : expect(v).toBe(expected[k])));
  });

  it('the README example: a gamma curve for 8-bit pixels', async () => {
    const GAMMA = Float32Array.from({ length: 256 }, (_, v) => 255 * (v / 255) ** (1 / 2.2));
    const correct = vectorize(['uint8c(uint8)'], { target: t, env: { GAMMA } })((v: number) => GAMMA[v]!);
    const pixels = Uint8Array.from({ length: 1000 }, (_, k) => (k * 101) % 256);
    const r = await run(() => correct(pixels));
    expect(r).toBeInstanceOf(Uint8ClampedArray);
    expect([...(r as Uint8ClampedArray)]).toEqual([...Uint8ClampedArray.from(pixels, (v) => GAMMA[v]!)]);
  });

  it('passes a table to a helper, and reads it in a guvectorize loop', async () => {
    const W = Float32Array.of(0.25, 0.5, 0.25);
    const at = (a: Float32Array, i: number) => a[i]!;
    const smooth = guvectorize(['void(float32[:], float32[:])'], '(n)->(n)', { target: t, env: { W, at } })((x: Float32Array, out: Float32Array) => {
      for (let i = 0; i < x.length; i++) {
        let s = 0;
        for (let k = 0; k < W.length; k++) {
          const j = Math.min(Math.max(i + k - 1, 0), x.length - 1);
          s += at(W, k) * x[j]!;
        }
        out[i] = s;
      }
    });
    const x = Float32Array.from({ length: 24 }, (_, k) => (k * 37) % 11);
    const expected = [...x].map((_, i) => {
      let s = 0;
      for (let k = 0; k < 3; k++) s += W[k]! * x[Math.min(Math.max(i + k - 1, 0), 23)]!;
      return Math.fround(s);
    });
    expect(await host(await run(() => smooth(x)))).toEqual(expected);
  });

  it('an index outside the table is the error an index outside an array is', async () => {
    const LUT = Float32Array.of(1, 2, 3);
    const f = vectorize(['float32(int32)'], { target: t, env: { LUT } })('(i) => LUT[i]');
    const g = guvectorize(['void(int32, float32[:], float32[:])'], '(),(n)->()', { target: t })('(i, LUT, out) => { out[0] = LUT[i]; }');
    for (const i of [3, -1]) {
      const tableError = await run(() => f(Int32Array.of(0, i))).then(() => undefined, (e: unknown) => e);
      const arrayError = await run(() => g(Int32Array.of(0, i), LUT)).then(() => undefined, (e: unknown) => e);
      expect(tableError).toBeInstanceOf(KernelRuntimeError);
      expect(arrayError).toBeInstanceOf(KernelRuntimeError);
      expect((tableError as Error).message).toContain(`Index [${i}] is out of bounds for \`LUT\``);
      expect((tableError as Error).message).toContain('(its shape is [3])');
      expect((arrayError as Error).message).toContain(`Index [${i}] is out of bounds for \`LUT\``);
    }
  });

  it('keeps the contents the table had when the ufunc was made', async () => {
    const LUT = Float32Array.of(10, 20, 30);
    const f = vectorize(['float32(int32)'], { target: t, env: { LUT } })('(i) => LUT[i]');
    LUT[0] = -1; // before the first call
    expect(await host(await run(() => f(Int32Array.of(0, 1, 2))))).toEqual([10, 20, 30]);
    LUT[1] = -2; // after it (the kernel is compiled)
    expect(await host(await run(() => f(Int32Array.of(0, 1, 2))))).toEqual([10, 20, 30]);
    // A new ufunc takes the table as it is now.
    const g = vectorize(['float32(int32)'], { target: t, env: { LUT } })('(i) => LUT[i]');
    expect(await host(await run(() => g(Int32Array.of(0, 1, 2))))).toEqual([-1, -2, 30]);
  });

  it('an empty table has length 0, and every index is outside it', async () => {
    const LUT = new Float32Array(0);
    const f = vectorize(['float32(int32)'], { target: t, env: { LUT } })('(i) => i < LUT.length ? LUT[i] : -1');
    expect(await host(await run(() => f(Int32Array.of(0, 5))))).toEqual([-1, -1]);
    const g = vectorize(['float32(int32)'], { target: t, env: { LUT } })('(i) => LUT[i]');
    await expect(run(() => g(Int32Array.of(0)))).rejects.toThrow(KernelRuntimeError);
  });

  it('fuse() composes kernels that read tables, two of them of the same name', async () => {
    const T = Int32Array.of(3, -5, 8);
    const shift = vectorize(['int32(int32)'], { target: t, env: { T } })('(i) => (i + T[i % 3] + 64) % 64');
    const look = vectorize(['float32(int32)'], { target: t, env: { T: Float32Array.from({ length: 64 }, (_, k) => k / 8) } })('(i) => T[i] * 2');
    const chain = fuse(async (x) => look(await shift(x)));
    const x = Int32Array.from({ length: 200 }, (_, k) => (k * 13) % 64);
    const expected = [...x].map((i) => (((i + T[i % 3]! + 64) % 64) / 8) * 2);
    expect(await host(await run(() => chain(x)))).toEqual(expected);
  });

  it('explain names the tables', () => {
    if (t === 'gpu') return; // gpu ufuncs explain after the target is loaded: see the gpu suite below
    const LUT = Float32Array.of(1, 2, 3);
    const f = vectorize(['float32(int32)'], { target: t, env: { LUT } })('(i) => LUT[i]');
    setEngineMode(mode);
    try {
      const text = f.explain(Int32Array.of(0));
      expect(text).toMatch(/^(On the calling thread .*)?JavaScript/);
      // Asked for Wasm, the engine choice says why the kernel runs on the JS engine.
      if (mode === 'wasm') expect(text).toContain('it reads the lookup table `LUT` from `env`');
      expect(text).toContain('Lookup tables (copied from `env` when the ufunc was made');
      expect(text).toContain('`LUT` (float32, 3 elements)');
    } finally {
      setEngineMode(initialMode);
    }
  });
});

describe('lookup tables and Math.random()', () => {
  it('a random index into a table gives the same values on every target for a seed', async () => {
    const LUT = Float32Array.of(10, 20, 30, 40);
    const results = await Promise.all(TARGETS.map(async (target) => {
      const f = vectorize(['float32(float32)'], { target, env: { LUT } })('(x) => x + LUT[Math.floor(Math.random() * LUT.length)]');
      return [...((await f(new Float32Array(64), { seed: 7 })) as Float32Array)];
    }));
    for (const r of results) expect(r).toEqual(results[0]);
    expect(new Set(results[0]).size).toBeGreaterThan(1);
    for (const v of results[0]!) expect([10, 20, 30, 40]).toContain(v);
  });
});

describe('lookup tables: what kernels may not do', () => {
  const LUT = Float32Array.of(1, 2, 3);

  it('a write is a KernelCompileError on every target', () => {
    for (const target of TARGETS) {
      expect(() => vectorize(['float32(int32)'], { target, env: { LUT } })('(i) => { LUT[i] = 0; return i; }')).toThrow(KernelCompileError);
    }
    expect(() => vectorize(['float32(int32)'], { env: { LUT } })('(i) => { LUT[i] = 0; return i; }')).toThrowErrorMatchingSnapshot();
    expect(() => vectorize(['float32(int32)'], { env: { LUT } })('(i) => { LUT[i] += 1; return i; }')).toThrowErrorMatchingSnapshot();
    expect(() => vectorize(['float32(int32)'], { env: { LUT } })('(i) => { LUT = 0; return i; }')).toThrowErrorMatchingSnapshot();
    expect(() => vectorize(['float32(int32)'], { env: { LUT } })('(i) => { LUT[i]++; return i; }')).toThrow(KernelCompileError);
  });

  it('a helper that writes its parameter may not be passed a table', () => {
    const clear = (a: Float32Array) => {
      a[0] = 0;
    };
    expect(() => vectorize(['float32(int32)'], { env: { LUT, clear } })((i: number) => {
      clear(LUT);
      return i;
    })).toThrowErrorMatchingSnapshot();
  });

  it('a local of the same name shadows the table, and may be written', () => {
    const f = vectorize(['float32(int32)'], { env: { LUT } })('(i) => { const LUT = new Float32Array(2); LUT[0] = i; return LUT[0] + LUT.length; }');
    expect([...f.sync(Int32Array.of(5))]).toEqual([7]);
  });

  it('views other than typed arrays are refused, saying what env may hold', () => {
    const view = new DataView(new ArrayBuffer(8));
    expect(() => vectorize(['float32(int32)'], { env: { LUT: view } })('(i) => LUT.getFloat32(i)')).toThrow(KernelCompileError);
    expect(() => vectorize(['float32(int32)'], { env: { LUT: view } })('(i) => LUT[i]')).toThrowErrorMatchingSnapshot();
    expect(() => vectorize(['float32(int32)'], { env: { LUT: [1, 2, 3] } })('(i) => LUT[i]')).toThrowErrorMatchingSnapshot();
  });

  it('64-bit integer tables run on cpu and parallel', async () => {
    const BIG = BigInt64Array.of(-(2n ** 62n), 5n, 2n ** 62n);
    for (const target of TARGETS.filter((x) => x !== 'gpu')) {
      const f = vectorize(['int64(int32)'], { target, env: { BIG } })('(i) => BIG[i] + 1n');
      expect([...((await f(Int32Array.of(0, 1, 2))) as BigInt64Array)]).toEqual([-(2n ** 62n) + 1n, 6n, 2n ** 62n + 1n]);
    }
  });
});

describe('lookup tables in plain-JS calls (disableJit)', () => {
  it('read the frozen table through a checked, read-only view', () => {
    const LUT = Float32Array.of(1, 2, 3);
    const f = vectorize(['float32(int32)'], { disableJit: true, env: { LUT } })('(i) => LUT[i] * 2 + LUT.length');
    LUT[0] = 100;
    expect([...f.sync(Int32Array.of(0, 1, 2))]).toEqual([5, 7, 9]);
    expect(() => f.sync(Int32Array.of(3))).toThrow(KernelRuntimeError);
    expect(() => f.sync(Int32Array.of(3))).toThrow(/Index 3 is outside `LUT`, whose length is 3/);
    const w = vectorize(['float32(int32)'], { disableJit: true, env: { LUT } })('(i) => { LUT[i] = 0; return i; }');
    expect(() => w.sync(Int32Array.of(0))).toThrow(/`LUT` is a lookup table from `env`, which kernels only read/);
    expect(f.explain(Int32Array.of(0))).toContain('Lookup tables (copied from `env` when the ufunc was made; read through views that check every index): `LUT` (float32, 3 elements).');
  });
});

describe.each(TARGETS)('lookup tables in the methods of a plain-JS ufunc (disableJit) on %s', (target) => {
  // The methods' folds call the kernel through a helper of their own: it must read the same checked
  // views as a call (a kernel given as text bound the raw copy there: reduce read NaN past the end).
  const LUT = Float32Array.of(10, 20, 30);
  const make = (source: string) => vectorize(['float32(float32, float32)'], { target, disableJit: true, identity: 0, env: { LUT } })(source);

  it('read the table through a checked view in reduce, accumulate, reduceat and at', async () => {
    const pick = make('(a, b) => a + LUT[b]');
    expect(await pick.reduce(Float32Array.of(0, 1, 2))).toBe(0 + 20 + 30);
    expect([...((await pick.accumulate(Float32Array.of(0, 1, 2))) as Float32Array)]).toEqual([0, 20, 50]);
    const past = Float32Array.of(0, 1, 3);
    const outside = /Index 3 is outside `LUT`, whose length is 3/;
    await expect(pick.reduce(past)).rejects.toThrow(KernelRuntimeError);
    await expect(pick.reduce(past)).rejects.toThrow(outside);
    await expect(pick.accumulate(past)).rejects.toThrow(outside);
    await expect(pick.reduceat(past, Int32Array.of(0, 1))).rejects.toThrow(outside);
    await expect(pick.at(Float32Array.of(0, 0), Int32Array.of(0), Float32Array.of(3))).rejects.toThrow(outside);
  });

  it('refuse a write to the table in reduce, and leave the table as it was', async () => {
    const write = make('(a, b) => { LUT[0] = 99; return a + b; }');
    await expect(write.reduce(Float32Array.of(1, 2))).rejects.toThrow(/`LUT` is a lookup table from `env`, which kernels only read/);
    expect(await make('(a, b) => a + LUT[0] * b').reduce(Float32Array.of(0, 1))).toBe(10);
  });
});

describe('lookup tables on the parallel target\'s workers', () => {
  it('each worker reads the table, and reports an index outside it', async () => {
    const LUT = Float32Array.from({ length: 1000 }, (_, k) => Math.sqrt(k));
    const f = vectorize(['float32(int32)'], { target: 'parallel', env: { LUT } })('(i) => LUT[i % 1000] * 2');
    const n = 1 << 20;
    const x = Int32Array.from({ length: n }, (_, k) => (k * 7919) % n);
    expect(f.explain(x)).toMatch(/^On \d+ workers/);
    const r = (await f(x)) as Float32Array;
    for (let k = 0; k < n; k += 997) expect(r[k]).toBe(Math.fround(LUT[x[k]! % 1000]! * 2));
    const g = vectorize(['float32(int32)'], { target: 'parallel', env: { LUT } })('(i) => LUT[i]');
    await expect(g(x)).rejects.toThrow(/Index \[\d+\] is out of bounds for `LUT`/);
  });
});

describe.runIf(gpuAvailable)('lookup tables on the gpu', () => {
  it('a float64 table is float64 data: refused unless float64: "float32", then read in float32', async () => {
    const F64 = Float64Array.of(0.1, 1 / 3, 1e300, -2.5);
    const refused = vectorize(['float32(int32)'], { target: 'gpu', env: { F64 } })('(i) => F64[i]');
    await expect(refused(Int32Array.of(0))).rejects.toThrow(TargetUnavailableError);
    await expect(refused(Int32Array.of(0))).rejects.toThrowErrorMatchingSnapshot();
    const demoted = vectorize(['float32(int32)'], { target: 'gpu', float64: 'float32', env: { F64 } })('(i) => F64[i]');
    expect([...((await demoted(Int32Array.of(0, 1, 2, 3))) as Float32Array)]).toEqual([...Float32Array.from(F64)]);
    // On the cpu the same kernel reads the doubles (then rounds the result to float32).
    const cpu = vectorize(['float64(int32)'], { target: 'cpu', env: { F64 } })('(i) => F64[i]');
    expect([...(cpu.sync(Int32Array.of(0, 1, 2, 3)) as Float64Array)]).toEqual([...F64]);
  });

  it('a 64-bit integer table is refused, saying what to pass instead', async () => {
    const BIG = BigInt64Array.of(1n);
    const f = vectorize(['int32(int32)'], { target: 'gpu', env: { BIG } })('(i) => (BIG[i] > BIG[0] ? 1 : 0)');
    await expect(f(Int32Array.of(0))).rejects.toThrow(TargetUnavailableError);
  });

  it('a table larger than a WGSL constant array could be is read at full speed, in chains and reductions', async () => {
    const N = 65_536;
    const SQRT = Float32Array.from({ length: N }, (_, k) => Math.sqrt(k));
    const idx = Int32Array.from({ length: 10_000 }, (_, k) => (k * 7919) % N);
    const make = (target: 'cpu' | 'gpu') => vectorize(['float32(int32)'], { target, env: { SQRT } })('(i) => SQRT[i]');
    const expected = [...idx].map((i) => SQRT[i]!);
    expect([...((await make('gpu')(idx)) as Float32Array)]).toEqual(expected);
    // A chain on device arrays (fused once its calls repeat): both steps read their own table.
    const OFFS = Int32Array.of(3, -5, 8);
    const shift = vectorize(['int32(int32)'], { target: 'gpu', env: { OFFS, N } })('(i) => (i + OFFS[i % 3] + N) % N');
    const look = make('gpu');
    const d = await toDevice(idx);
    for (let round = 0; round < 3; round++) {
      const r = await look(await shift(d));
      expect([...(await (r as DeviceArray).toHost())]).toEqual([...idx].map((i) => SQRT[(i + OFFS[i % 3]! + N) % N]!));
    }
    // A reduction whose kernel reads a table (not a tree fold: it binds no tables).
    const W = Int32Array.of(2);
    const add = vectorize(['int32(int32, int32)'], { target: 'gpu', identity: 0, associative: true, env: { W } })('(a, b) => a + b * W[0]');
    const xs = Int32Array.from({ length: 1000 }, (_, k) => k % 7);
    let s = xs[0]!;
    for (let k = 1; k < xs.length; k++) s += xs[k]! * 2;
    expect(await add.reduce(xs)).toBe(s);
    expect([...(await ((await add.reduce(await toDevice(xs))) as DeviceArray).toHost())]).toEqual([s]);
  });

  it('a recorded chain of table kernels on device arrays fuses into one kernel that reads both tables', async () => {
    // Automatic chain fusion (on by default, setGpuOptions({ fuseChains })): the two
    // calls run as one kernel binding both tables once the fused kernel has compiled.
    setChainFusion(true);
    const T = Int32Array.of(3, -5, 8);
    const shift = vectorize(['int32(int32)'], { target: 'gpu', env: { T } })('(i) => (i + T[i % 3] + 64) % 64');
    const look = vectorize(['float32(int32)'], { target: 'gpu', env: { T: Float32Array.from({ length: 64 }, (_, k) => k / 8) } })('(i) => T[i] * 2');
    const x = await toDevice(Int32Array.from({ length: 500 }, (_, k) => (k * 13) % 64));
    const hostX = (await x.toHost()) as Int32Array;
    const expected = [...hostX].map((i) => (((i + T[i % 3]! + 64) % 64) / 8) * 2);
    const s = await deviceArray([500], 'int32');
    const r = await deviceArray([500], 'float32');
    const fusedBefore = chainFusionStats.fusedDispatches;
    try {
      for (let round = 0; round < 5; round++) {
        await shift(x, { out: s });
        await look(s, { out: r });
        expect([...((await r.toHost()) as Float32Array)]).toEqual(expected);
        await fusedKernelsCompiled();
      }
    } finally {
      setChainFusion(true); // the default
    }
    expect(chainFusionStats.fusedDispatches).toBeGreaterThan(fusedBefore);
  });

  it('uploads a table once per device, however many calls and chunks read it', async () => {
    const ctx = await acquireDevice();
    const created: string[] = [];
    const createBuffer = ctx.device.createBuffer.bind(ctx.device);
    (ctx.device as { createBuffer: typeof createBuffer }).createBuffer = (d) => {
      if (d.label?.startsWith('ufunc lookup table')) created.push(d.label);
      return createBuffer(d);
    };
    try {
      const ONCE = Float32Array.from({ length: 300 }, (_, k) => k * 0.5);
      const f = vectorize(['float32(int32)'], { target: 'gpu', env: { ONCE } })('(i) => ONCE[i % 300]');
      const x = Int32Array.from({ length: 40_000 }, (_, k) => (k * 31) % 1000);
      const expected = [...x].map((i) => ONCE[i % 300]!);
      for (let k = 0; k < 3; k++) expect([...((await f(x)) as Float32Array)]).toEqual(expected);
      // Streamed in chunks (host arrays over the memory limit): every chunk binds the same buffer.
      const chunksBefore = streamingStats().chunks;
      setGpuOptions({ memoryLimit: 64 * 1024 });
      try {
        expect([...((await f(x)) as Float32Array)]).toEqual(expected);
      } finally {
        setGpuOptions({ memoryLimit: DEFAULT_LIMIT });
      }
      expect(streamingStats().chunks - chunksBefore).toBeGreaterThan(1);
      expect(created).toEqual(['ufunc lookup table ONCE']);
    } finally {
      delete (ctx.device as { createBuffer?: unknown }).createBuffer;
    }
  });

  it('explain names the tables', async () => {
    const LUT = Float32Array.of(1, 2, 3);
    const f = vectorize(['float32(int32)'], { target: 'gpu', env: { LUT } })('(i) => LUT[i]');
    await f(Int32Array.of(0)); // loads the target
    expect(f.explain(Int32Array.of(0))).toContain('Lookup tables (copied from `env` when the ufunc was made; uploaded once per device as a read-only storage buffer): `LUT` (float32, 3 elements).');
  });
});
