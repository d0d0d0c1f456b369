/**
 * uint8c, the dtype of a `Uint8ClampedArray` (stdlib's name; scijs's `uint8_clamped`): a signature
 * may say it, and every store into a uint8c value clamps to 0…255 and rounds half to even (NaN → 0),
 * on every target and engine. Expected values are computed here independently, by writing the
 * same numbers into a real Uint8ClampedArray (the JS engine's own ToUint8Clamp), never by the
 * library.
 */
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import {
  ArgumentError, DeviceArray, deviceArray, guvectorize, parseSignature, SignatureError, toDevice, vectorize, type NDArray,
} from '../src/index.js';
import { engineMode, setEngineMode, type EngineMode } from '../src/targets/cpu/wasm/index.js';
import { TARGETS } from './targets.js';

/** What a Uint8ClampedArray stores for each number: the independent reference. */
const clamped = (xs: readonly number[]) => [...Uint8ClampedArray.from(xs)];

/** Edge values: negatives, the .5 ties on both sides of even, 255.5 and beyond, NaN, ±Infinity, −0. */
const EDGES = [-1, -0.5, -0, 0, 0.25, 0.5, 0.75, 1.5, 2.5, 3.5, 126.5, 127.5, 128.5, 254.4, 254.5, 254.6, 255, 255.5, 256, 1e10, -1e10, NaN, Infinity, -Infinity, 3.7, 100];

const initialMode = engineMode();
afterAll(() => setEngineMode(initialMode));

/** cpu and parallel run under both engines; the gpu has its own code. */
const CASES: [string, EngineMode][] = TARGETS.flatMap((t): [string, EngineMode][] => (t === 'gpu' ? [[t, 'auto']] : [[t, 'js'], [t, 'wasm']]));

describe.each(CASES)('uint8c on %s (engine %s)', (target, mode) => {
  const withMode = async <T>(f: () => Promise<T>): Promise<T> => {
    setEngineMode(mode);
    try {
      return await f();
    } finally {
      setEngineMode(initialMode);
    }
  };
  const t = target as 'cpu' | 'parallel' | 'gpu';

  it('a uint8c(float32) loop clamps and rounds half to even, NaN to 0', async () => {
    const toPixel = vectorize(['uint8c(float32)'], { target: t })((x: number) => x);
    const xs = Float32Array.from(EDGES);
    const r = await withMode(() => toPixel(xs));
    expect(r).toBeInstanceOf(Uint8ClampedArray);
    expect([...r]).toEqual(clamped([...xs]));
    if (t === 'cpu') {
      // the engine asked for is the one that ran (Wasm has its own clamping code: f64.nearest, then min/max)
      setEngineMode(mode);
      expect(toPixel.explain(xs)).toMatch(mode === 'wasm' ? /^WebAssembly/ : /^JavaScript/);
      setEngineMode(initialMode);
    }
    // arithmetic before the store is float32's; the store alone clamps: 200 * 1.5 → 255, not 44
    const scale = vectorize(['uint8c(float32, float32)'], { target: t })((x: number, k: number) => x * k);
    const ys = Float32Array.from([200, 100, -3, 1 / 3, 1, 5 / 3, 171, 84.333, 85]);
    const k = 1.5;
    expect([...(await withMode(() => scale(ys, k)))]).toEqual(clamped([...ys].map((y) => Math.fround(y * k))));
  });

  it('a conversion from integers clamps (no wrapping)', async () => {
    const fromInt = vectorize(['uint8c(int32)'], { target: t })((x: number) => x);
    const xs = Int32Array.from([-2147483648, -256, -1, 0, 1, 254, 255, 256, 511, 1000, 2147483647]);
    expect([...(await withMode(() => fromInt(xs)))]).toEqual(clamped([...xs]));
    const fromU32 = vectorize(['uint8c(uint32)'], { target: t })((x: number) => x);
    const us = Uint32Array.from([0, 7, 255, 256, 4294967295, 2147483648]);
    expect([...(await withMode(() => fromU32(us)))]).toEqual(clamped([...us]));
  });

  it('arithmetic on uint8c values promotes like uint8; only the store clamps', async () => {
    const add = vectorize(['uint8c(uint8c, uint8c)'], { target: t })((a: number, b: number) => a + b);
    const sub = vectorize(['uint8c(uint8c, uint8c)'], { target: t })((a: number, b: number) => a - b);
    const avg = vectorize(['uint8c(uint8c, uint8c)'], { target: t })((a: number, b: number) => (a + b) / 2);
    const a = Uint8ClampedArray.from([200, 10, 255, 0, 128, 3]);
    const b = Uint8ClampedArray.from([100, 20, 255, 0, 127, 2]);
    const av = [...a];
    const bv = [...b];
    const sum = await withMode(() => add(a, b));
    expect(sum).toBeInstanceOf(Uint8ClampedArray);
    expect([...sum]).toEqual(clamped(av.map((x, i) => x + bv[i]!)));
    expect([...(await withMode(() => sub(a, b)))]).toEqual(clamped(av.map((x, i) => x - bv[i]!)));
    // int32 operands: `/` is a float division (JS), the store rounds 127.5 → 128 and 2.5 → 2
    expect([...(await withMode(() => avg(a, b)))]).toEqual(clamped(av.map((x, i) => (x + bv[i]!) / 2)));
  });

  it('guvectorize with a uint8c[:] output, a uint8c local array and a strided uint8c out', async () => {
    const brighten = guvectorize(['void(float32[:], float32, uint8c[:])'], '(n),()->(n)', { target: t })((x: Float32Array, k: number, out: Uint8ClampedArray) => {
      for (let i = 0; i < x.length; i++) out[i] = x[i]! * k;
    });
    const xs = Float32Array.from([10, 100, 170, 171, -4, 0.5, 1.5, 84.5]);
    const k = 1.5;
    const expected = clamped([...xs].map((x) => Math.fround(x * k)));
    const r = await withMode(() => brighten(xs, k));
    expect(r).toBeInstanceOf(Uint8ClampedArray);
    expect([...(r as Uint8ClampedArray)]).toEqual(expected);
    {
      // every other element of a stdlib-style view
      const data = new Uint8ClampedArray(16).fill(9);
      const out = { data, shape: [8], strides: [2], offset: 0, dtype: 'uint8c' as const };
      await withMode(() => brighten(xs, k, out));
      expect([...data].filter((_, i) => i % 2 === 0)).toEqual(expected);
      expect([...data].filter((_, i) => i % 2 === 1)).toEqual(new Array(8).fill(9));
    }
    // a local `new Uint8ClampedArray(K)` clamps its stores too
    const viaLocal = guvectorize(['void(float32[:], float32[:])'], '(n)->(n)', { target: t })((x: Float32Array, out: Float32Array) => {
      const tmp = new Uint8ClampedArray(4);
      for (let i = 0; i < 4; i++) tmp[i] = x[i]!;
      for (let i = 0; i < 4; i++) out[i] = tmp[i]!;
    });
    const ins = Float32Array.from([300, -2, 2.5, 3.5]);
    expect([...((await withMode(() => viaLocal(ins))) as Float32Array)]).toEqual(clamped([...ins]));
  });

  it('picks a uint8c loop for Uint8ClampedArray inputs, the uint8 loop for Uint8Arrays', async () => {
    const add = vectorize(['uint8(uint8, uint8)', 'uint8c(uint8c, uint8c)'], { target: t })((a: number, b: number) => a + b);
    const clampedSum = await withMode(() => add(Uint8ClampedArray.from([200, 1]), Uint8ClampedArray.from([100, 2])));
    expect(clampedSum).toBeInstanceOf(Uint8ClampedArray);
    expect([...clampedSum]).toEqual([255, 3]);
    const wrapped = await withMode(() => add(Uint8Array.from([200, 1]), Uint8Array.from([100, 2])));
    expect(wrapped).toBeInstanceOf(Uint8Array);
    // np.add(np.uint8(200), np.uint8(100)) wraps to 44
    expect([...wrapped]).toEqual([44, 3]);
    // scijs's uint8_clamped and stdlib's uint8c arrays are uint8c inputs too; so is a Uint8Array that says uint8c
    const scijs = { data: Uint8ClampedArray.from([250, 5]), shape: [2], stride: [1], offset: 0, dtype: 'uint8_clamped' as const };
    const stdlib = { data: Uint8Array.from([250, 5]), shape: [2], strides: [1], offset: 0, dtype: 'uint8c' as const, order: 'row-major' };
    expect([...((await withMode(() => add(scijs, stdlib))) as NDArray).data]).toEqual([255, 10]);
    expect(((await withMode(() => add(scijs, stdlib))) as NDArray).dtype).toBe('uint8c');
    // a loop list without uint8c reads a Uint8ClampedArray as uint8 (safe cast, no copy needed)
    const inc = vectorize(['int32(int32)'], { target: t })((x: number) => x + 1);
    expect([...(await withMode(() => inc(Uint8ClampedArray.from([255, 0]))))]).toEqual([256, 1]);
    const same = vectorize(['uint8(uint8)'], { target: t })((x: number) => x + 60);
    expect([...(await withMode(() => same(Uint8ClampedArray.from([200, 1]))))]).toEqual([(200 + 60) & 255, 61]);
  });

  it('casts loop outputs into uint8c outs under same_kind (and uint8 ↔ uint8c under equiv), not under no', async () => {
    const half = vectorize(['float32(float32)'], { target: t })((x: number) => x / 2);
    const out = new Uint8ClampedArray(5);
    const xs = Float32Array.from([-8, 1, 3, 5, 1000]);
    await withMode(() => half(xs, { out }));
    expect([...out]).toEqual(clamped([...xs].map((x) => x / 2)));
    const ident = vectorize(['uint8(uint8)'], { target: t })((x: number) => x);
    const o2 = new Uint8ClampedArray(2);
    await withMode(() => ident(Uint8Array.from([7, 250]), { out: o2, casting: 'equiv' }));
    expect([...o2]).toEqual([7, 250]);
    await expect(withMode(() => ident(Uint8Array.from([7, 250]), { out: o2, casting: 'no' }))).rejects.toThrowError(/from uint8 to uint8c with casting 'no'/);
    await expect(withMode(() => half(xs, { out, casting: 'safe' }))).rejects.toThrowError(ArgumentError);
    // `where` keeps the old pixels where the mask is false
    const keep = Uint8ClampedArray.from([1, 2, 3, 4, 5]);
    await withMode(() => half(xs, { out: keep, where: { data: Uint8Array.from([1, 0, 1, 0, 1]), shape: [5], dtype: 'bool' } }));
    expect([...keep]).toEqual([0, 2, 2, 4, 255]);
  });

  it('folds with reduce and accumulate, clamping every partial result', async () => {
    const add = vectorize(['uint8c(uint8c, uint8c)'], { target: t })((a: number, b: number) => a + b);
    const xs = Uint8ClampedArray.from([200, 100, 50, 7]);
    // each step stores into uint8c: 200 + 100 → 255, 255 + 50 → 255, …
    let acc = xs[0]!;
    const steps = [acc];
    for (let i = 1; i < xs.length; i++) steps.push((acc = clamped([acc + xs[i]!])[0]!));
    expect(await withMode(() => add.reduce(xs))).toBe(acc);
    expect([...((await withMode(() => add.accumulate(xs))) as Uint8ClampedArray)]).toEqual(steps);
    // `at`, unbuffered: index 0 twice, each time clamped
    const pixels = Uint8ClampedArray.from([250, 10, 0]);
    await withMode(() => add.at(pixels, Int32Array.from([0, 0, 1]), Uint8ClampedArray.from([3, 4, 100])));
    expect([...pixels]).toEqual(clamped([clamped([250 + 3])[0]! + 4, 10 + 100, 0]));
  });

  it('property: any float32, scaled, stores as a Uint8ClampedArray would', async () => {
    const scale = vectorize(['uint8c(float32, float32)'], { target: t })((x: number, k: number) => x * k + 0.5);
    const float = fc.float({ noDefaultInfinity: false, noNaN: false, min: -1e6, max: 1e6 });
    await fc.assert(
      fc.asyncProperty(fc.array(fc.oneof(float, fc.float({ noNaN: false })), { minLength: 1, maxLength: 40 }), fc.constantFrom(1, 0.5, 1.5, 255, -1), async (values, k) => {
        const xs = Float32Array.from(values);
        const expected = clamped([...xs].map((x) => Math.fround(Math.fround(x * k) + 0.5)));
        expect([...(await withMode(() => scale(xs, k)))]).toEqual(expected);
      }),
      { numRuns: t === 'gpu' ? 15 : 40 },
    );
  });
});

describe('uint8c signatures and arrays', () => {
  it('parses uint8c and scijs\'s uint8_clamped, and names uint8c among the dtypes', () => {
    expect(parseSignature('uint8c(float32)')).toMatchObject({ returnType: 'uint8c', args: [{ kind: 'scalar', dtype: 'float32' }] });
    expect(parseSignature('void(float32[:], uint8_clamped[:])').args[1]).toEqual({ kind: 'array', dtype: 'uint8c', ndim: 1 });
    expect(() => parseSignature('uint8cc(float32)')).toThrowError(SignatureError);
    expect(() => parseSignature('uint8cc(float32)')).toThrowError(/uint8, uint8c, uint16/);
  });

  it('refuses a uint8c label on data that is not bytes', async () => {
    const f = vectorize(['uint8c(float32)'])((x: number) => x);
    await expect(f(Float32Array.from([1]), { out: { data: new Uint16Array(1), shape: [1], dtype: 'uint8c' } })).rejects.toThrowError(/says dtype uint8c but its data is a Uint16Array/);
  });

  it('folds uint8c constants as a Uint8ClampedArray stores them', async () => {
    for (const c of [254.5, 255.5, -0.5, 0.5, 1.5, 2.5, 1000]) {
      // the constant is returned from a float64 kernel value: typing converts it at compile time
      const f = vectorize(['uint8c(int32)'])(new Function('x', `return ${c};`) as (x: number) => number);
      expect([...(await f(Int32Array.from([0])))]).toEqual(clamped([c]));
    }
  });
});

describe.runIf(TARGETS.includes('gpu'))('uint8c device arrays on the gpu', () => {
  const xs = Float32Array.from(EDGES);

  it('toDevice of a Uint8ClampedArray is uint8c and comes back as one', async () => {
    const d = await toDevice(Uint8ClampedArray.from([0, 128, 255]));
    expect(d.dtype).toBe('uint8c');
    const back = await d.toHost();
    expect(back).toBeInstanceOf(Uint8ClampedArray);
    expect([...back]).toEqual([0, 128, 255]);
    d.destroy();
  });

  it('a uint8c loop writes a uint8c DeviceArray, clamped on the device', async () => {
    const toPixel = vectorize(['uint8c(float32)'], { target: 'gpu' })((x: number) => x * 2);
    const dx = await toDevice(xs);
    const r = (await toPixel(dx)) as DeviceArray;
    expect(r.dtype).toBe('uint8c');
    expect([...(await r.toHost())]).toEqual(clamped([...xs].map((x) => Math.fround(x * 2))));
    // into a given uint8c DeviceArray
    const out = await deviceArray([xs.length], 'uint8c');
    await toPixel(dx, { out });
    expect([...(await out.toHost())]).toEqual(clamped([...xs].map((x) => Math.fround(x * 2))));
    dx.destroy();
    r.destroy();
    out.destroy();
  });

  it('a float32 loop stored into a uint8c DeviceArray clamps in the device store (cast under same_kind)', async () => {
    const half = vectorize(['float32(float32)'], { target: 'gpu' })((x: number) => x / 2);
    const dx = await toDevice(xs);
    const out = await deviceArray([xs.length], 'uint8c');
    await half(dx, { out });
    expect([...(await out.toHost())]).toEqual(clamped([...xs].map((x) => Math.fround(x / 2))));
    // with a mask: elsewhere the old values stay
    const old = await toDevice(new Uint8ClampedArray(xs.length).fill(77));
    const mask = Uint8Array.from(xs, (_, i) => i % 3);
    await half(dx, { out: old, where: { data: mask, shape: [xs.length], dtype: 'bool' } });
    const expected = clamped([...xs].map((x) => Math.fround(x / 2))).map((v, i) => (mask[i] ? v : 77));
    expect([...(await old.toHost())]).toEqual(expected);
    // an int32 loop too: clamps rather than wrapping
    const twice = vectorize(['int32(int32)'], { target: 'gpu' })((x: number) => x * 2);
    const ints = Int32Array.from([-5, 100, 127, 128, 1000, 2147483647]);
    const di = await toDevice(ints);
    const o3 = await deviceArray([ints.length], 'uint8c');
    await twice(di, { out: o3 });
    expect([...(await o3.toHost())]).toEqual(clamped([...ints].map((v) => (v * 2) | 0)));
    for (const a of [dx, out, old, di, o3]) a.destroy();
  });

  it('a masked, cast store in the kernel (fused) converts to the loop type first, then into the out', async () => {
    // int32(float32): x * 1.5 truncates to int32 in the loop, then clamps into uint8c: 1 → 1.5 → 1 (not 2)
    const f = vectorize(['int32(float32)'], { target: 'gpu' })((x: number) => x * 1.5);
    const ys = Float32Array.from([1, 3, 200, -3, 0.5, 169.9, 170.2, 1e9]);
    const loop = [...ys].map((y) => Math.fround(y * 1.5) | 0);
    const dy = await toDevice(ys);
    const out = await toDevice(new Uint8ClampedArray(ys.length).fill(9));
    const where = Uint8Array.from([1, 1, 1, 1, 0, 1, 1, 1]);
    await f(dy, { out, where: { data: where, shape: [ys.length], dtype: 'bool' } });
    expect([...(await out.toHost())]).toEqual(clamped(loop).map((v, i) => (where[i] ? v : 9)));
    // allocated (zeros where masked out), and an int16 out (wraps, as NumPy's int32 → int16 cast)
    const r = (await f(dy, { where: { data: where, shape: [ys.length], dtype: 'bool' }, dtype: 'int32' })) as DeviceArray;
    expect([...(await r.toHost())]).toEqual(loop.map((v, i) => (where[i] ? v : 0)));
    const o16 = await deviceArray([ys.length], 'int16');
    await f(dy, { out: o16 });
    expect([...(await o16.toHost())]).toEqual([...Int16Array.from(loop)]);
    for (const a of [dy, out, r, o16]) a.destroy();
  });

  it('reduces and accumulates uint8c DeviceArrays on the device', async () => {
    const add = vectorize(['uint8c(uint8c, uint8c)'], { target: 'gpu' })((a: number, b: number) => a + b);
    const rows = Uint8ClampedArray.from([100, 100, 100, 1, 2, 3]);
    const d = await toDevice({ data: rows, shape: [2, 3] });
    const sums = (await add.reduce(d, { axis: 1 })) as DeviceArray;
    expect(sums.dtype).toBe('uint8c');
    // per row, stored after each step: min(255, 100 + 100) = 200, min(255, 200 + 100) = 255; 1 + 2 + 3 = 6
    expect([...(await sums.toHost())]).toEqual([clamped([clamped([100 + 100])[0]! + 100])[0], 6]);
    const cum = (await add.accumulate(d, { axis: 1 })) as DeviceArray;
    expect([...(await cum.toHost())]).toEqual([100, 200, 255, 1, 3, 6]);
    for (const a of [d, sums, cum]) a.destroy();
  });
});
