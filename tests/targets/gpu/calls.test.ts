/**
 * Calls on the gpu target end to end: layouts (broadcasting, negative and odd strides, strided
 * outputs), sizes that cross dispatch and binding limits, device arrays and chains of calls,
 * packed small types, and how failures surface (index out of bounds, validation errors, lost
 * devices, refused types). Results are compared with the cpu target.
 */
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { DeviceError, KernelRuntimeError, TargetUnavailableError } from '../../../src/errors.js';
import { DeviceArray, deviceArray, guvectorize, synchronize, toDevice, vectorize } from '../../../src/index.js';
import type { NDArray } from '../../../src/ndarray.js';
import { acquireDevice, setIdleReleaseMs, shutdownDevice } from '../../../src/targets/gpu/runtime/device.js';
import { describeGpu } from '../../gpu-available.js';
import { hermiteUfuncs } from '../../../examples/hermite.js';
import { differences } from './compare-targets.js';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const iota = (n: number, scale = 1) => new Float32Array(n).map((_, i) => ((i * 7919) % 1000) * scale - 3);

type AnyUfunc = (...args: unknown[]) => Promise<any>;
function both<T = AnyUfunc>(make: (target: 'cpu' | 'gpu') => T): { cpu: T; gpu: T } {
  return { cpu: make('cpu'), gpu: make('gpu') };
}

afterAll(() => shutdownDevice());

describeGpu('layouts', { timeout: 60_000 }, () => {
  const affine = both((target) => vectorize(['float32(float32, float32)'], { target })((a: number, b: number) => a * 10 + b));

  it('broadcasts with negative strides, in the kernel (no materialised copies)', async () => {
    const m = { data: iota(12), shape: [3, 4], strides: [-4, -1], offset: 11 };
    const v = Float32Array.from([1, 2, 3, 4]);
    const [c, g] = await Promise.all([affine.cpu(m, v), affine.gpu(m, v)]);
    expect(g.shape).toEqual([3, 4]);
    expect(differences(c.data, g.data)).toEqual([]);
  });

  it('broadcasts [1] and [n, 1] against [m], and JS scalars', async () => {
    const col = { data: iota(5), shape: [5, 1] };
    const row = { data: iota(7, 0.5), shape: [7] };
    const [c, g] = await Promise.all([affine.cpu(col, row), affine.gpu(col, row)]);
    expect(g.shape).toEqual([5, 7]);
    expect(differences(c.data, g.data)).toEqual([]);
    const [c2, g2] = await Promise.all([affine.cpu(2.5, row), affine.gpu(2.5, row)]);
    expect(differences(c2.data, g2.data)).toEqual([]);
    expect(await affine.gpu(1, 2)).toBe(12);
  });

  it('rank-3 loops with transposed and sliced views', async () => {
    const base = iota(4 * 5 * 6);
    const t = { data: base, shape: [6, 5, 4], strides: [1, 6, 30] };
    const s = { data: base, shape: [6, 5, 4], strides: [20, 4, 1], offset: 0 };
    const [c, g] = await Promise.all([affine.cpu(t, s), affine.gpu(t, s)]);
    expect(differences(c.data, g.data)).toEqual([]);
  });

  it('writes only the elements of a strided output view; the others keep their values', async () => {
    const x = iota(50);
    const make = () => ({ data: new Float32Array(100).fill(7), shape: [50], strides: [2], offset: 0 });
    const [oc, og] = [make(), make()];
    await Promise.all([affine.cpu(x, 1, { out: oc }), affine.gpu(x, 1, { out: og })]);
    expect(differences(oc.data, og.data)).toEqual([]);
    expect(og.data[1]).toBe(7);
    // A sparse view (every tenth element) is gathered and scattered, not uploaded whole.
    const sparse = () => ({ data: new Float32Array(1000).fill(-1), shape: [100], strides: [10], offset: 3 });
    const [sc, sg] = [sparse(), sparse()];
    await Promise.all([affine.cpu(x.subarray(0, 100 / 2), 0, { out: { ...sc, shape: [50], strides: [20] } }), affine.gpu(x.subarray(0, 50), 0, { out: { ...sg, shape: [50], strides: [20] } })]);
    expect(differences(sc.data, sg.data)).toEqual([]);
  });

  it('guvectorize keeps the output elements a kernel does not write (staged rows start from memory)', async () => {
    const firstOnly = both((target) => guvectorize(['void(float32[:], float32[:])'], '(n)->(n)', { target })((x: Float32Array, out: Float32Array) => {
      out[0] = x[0]! + x[x.length - 1]!;
    }));
    const x = { data: iota(64 * 8), shape: [64, 8] };
    const make = () => ({ data: new Float32Array(64 * 8).fill(5), shape: [64, 8] });
    const [oc, og] = [make(), make()];
    await Promise.all([firstOnly.cpu(x, { out: oc }), firstOnly.gpu(x, { out: og })]);
    expect(differences(oc.data, og.data)).toEqual([]);
    expect(og.data[1]).toBe(5);
  });

  it('a reused output that the kernel overwrites whole, and seed 001\'s in-place form', async () => {
    const hermite = both((target) => hermiteUfuncs(target));
    const xs = iota(300, 0.004).map((v) => v + 1); // in [-2, 2), as the seed
    const reused = () => ({ data: new Float32Array(300 * 16).fill(NaN), shape: [300, 16] });
    const [oc, og] = [reused(), reused()];
    await Promise.all([hermite.cpu.fromScalar(xs, { out: oc }), hermite.gpu.fromScalar(xs, { out: og })]);
    const relative = (a: Float32Array, b: Float32Array) => a.reduce((w, v, i) => Math.max(w, Math.abs(v - b[i]!) / Math.max(1, Math.abs(v))), 0);
    expect(relative(oc.data, og.data)).toBeLessThan(2e-6); // no NaN left over: every element was written
    const rows = () => ({ data: new Float32Array(300 * 16).map((_, j) => (j % 16 === 1 ? xs[Math.floor(j / 16)]! : 7)), shape: [300, 16] });
    const [rc, rg] = [rows(), rows()];
    await Promise.all([hermite.cpu.inPlace(rc, { out: rc }), hermite.gpu.inPlace(rg, { out: rg })]);
    expect(relative(rc.data, rg.data)).toBeLessThan(2e-6); // the recurrence's doubles are f32 on the gpu
  });

  it('staged rows: whole workgroups (copied with constant trip counts) and a partial last one equal the cpu', async () => {
    const fill = both((target) => guvectorize(['void(float32, float32[:])'], '()->(n)', { target })((x: number, out: Float32Array) => {
      for (let i = 0; i < out.length; i++) out[i] = x * 3 + i;
    }));
    const reverse = both((target) => guvectorize(['void(float32[:], float32[:])'], '(n)->(n)', { target })((x: Float32Array, out: Float32Array) => {
      for (let i = 0; i < x.length; i++) out[i] = x[x.length - 1 - i]! * 2;
    }));
    const some = both((target) => guvectorize(['void(float32[:], float32[:])'], '(n)->(n)', { target })((x: Float32Array, out: Float32Array) => {
      for (let i = 0; i < x.length; i += 2) out[i] = x[i]! - 1;
    }));
    for (const rows of [64, 128, 256, 64 * 3 + 17, 128 * 2 + 5]) {
      const xs = iota(rows, 0.01);
      const [fc, fg] = (await Promise.all([fill.cpu(xs, { dims: { n: 7 } }), fill.gpu(xs, { dims: { n: 7 } })])) as NDArray<Float32Array>[];
      expect(differences(fc!.data, fg!.data), `fill, ${rows} rows`).toEqual([]);
      const x = { data: iota(rows * 6, 0.5), shape: [rows, 6] };
      const [rc, rg] = await Promise.all([reverse.cpu(x), reverse.gpu(x)]);
      expect(differences(rc.data, rg.data), `reverse, ${rows} rows`).toEqual([]);
      const kept = () => ({ data: new Float32Array(rows * 6).fill(9), shape: [rows, 6] });
      const [sc, sg] = [kept(), kept()];
      await Promise.all([some.cpu(x, { out: sc }), some.gpu(x, { out: sg })]);
      expect(differences(sc.data, sg.data), `every other element, ${rows} rows`).toEqual([]);
      expect(sg.data[1]).toBe(9);
    }
  });

  it('staged output rows stored as 4-element vectors (aligned views, rows of 4k) and element by element (others) equal the cpu, and nothing outside the view changes', async () => {
    const fill = both((target) => guvectorize(['void(float32, float32[:])'], '()->(n)', { target })((x: number, out: Float32Array) => {
      for (let i = 0; i < out.length; i++) out[i] = x * 3 + i;
    }));
    for (const n of [4, 8, 16, 6]) {
      for (const offset of [0, 4, 5]) {
        for (const rows of [128, 128 * 2 + 5, 3]) {
          const xs = iota(rows, 0.01);
          const wanted = (await fill.cpu(xs, { dims: { n } })) as NDArray<Float32Array>;
          const total = offset + rows * n + 7;
          const storage = await toDevice(new Float32Array(total).fill(-1));
          const view = storage.view([rows, n], [n, 1], offset);
          await fill.gpu(await toDevice(xs), { out: view });
          const got = (await storage.toHost()) as Float32Array;
          const expected = new Float32Array(total).fill(-1);
          expected.set(wanted.data, offset);
          expect(differences(got, expected), `n = ${n}, offset ${offset}, ${rows} rows`).toEqual([]);
        }
      }
    }
  });

  it('in-place (n)->(n) on a host array reads what the same invocation wrote', async () => {
    const scan = both((target) => guvectorize(['void(float32[:], float32[:])'], '(n)->(n)', { target })((x: Float32Array, out: Float32Array) => {
      for (let i = 1; i < x.length; i++) out[i] = out[i - 1]! + x[i]!;
    }));
    const make = () => ({ data: iota(37 * 9), shape: [37, 9] });
    const [c, g] = [make(), make()];
    await Promise.all([scan.cpu(c, { out: c }), scan.gpu(g, { out: g })]);
    expect(differences(c.data, g.data)).toEqual([]);
  });
});

describeGpu('sizes', { timeout: 60_000 }, () => {
  const inc = both((target) => vectorize(['float32(float32)'], { target })((a: number) => a + 1));

  it.each([0, 1, 2, 3, 63, 64, 65, 127, 128, 255, 256, 257, 1025, 1_000_001])('%i elements', async (n) => {
    const x = iota(n);
    const [c, g] = await Promise.all([inc.cpu(x), inc.gpu(x)]);
    expect(g.length).toBe(n);
    expect(differences(c, g)).toEqual([]);
  });

  it('65,535 workgroups of 256 and one more element (a 2-D grid): 16,777,217 elements', async () => {
    const n = 65535 * 256 + 1;
    const x = new Float32Array(n).map((_, i) => i % 4099);
    const g = (await inc.gpu(x)) as Float32Array;
    let bad = 0;
    for (let i = 0; i < n; i++) if (g[i] !== x[i]! + 1) bad++;
    expect(bad).toBe(0);
  }, 120_000);

  it('arrays over maxStorageBufferBindingSize are split over several bindings: 33,554,433 float32 (> 128 MiB)', async () => {
    const { limits } = await acquireDevice();
    const n = Math.max(33_554_433, limits.maxStorageBufferBindingSize / 4 + 1);
    const add = vectorize(['float32(float32, float32)'], { target: 'gpu' })((a: number, b: number) => a - b);
    const x = new Float32Array(n).map((_, i) => i % 65521);
    const y = new Float32Array(n).map((_, i) => i % 7);
    const g = (await add(x, y)) as Float32Array;
    let bad = 0;
    for (let i = 0; i < n; i++) if (g[i] !== x[i]! - y[i]!) bad++;
    expect(bad).toBe(0);
    expect(g[n - 1]).toBe(x[n - 1]! - y[n - 1]!);
  }, 180_000);

  it('staged guvectorize rows past 65,535 workgroups (of 128 rows: only outputs are staged)', async () => {
    const rows = 65535 * 128 + 1;
    const pair = guvectorize(['void(float32, float32[:])'], '()->(n)', { target: 'gpu' })((x: number, out: Float32Array) => {
      out[0] = x;
      out[1] = -x;
    });
    const x = new Float32Array(rows).map((_, i) => i % 8191);
    const g = (await pair(x, { dims: { n: 2 } })) as NDArray<Float32Array>;
    let bad = 0;
    for (let r = 0; r < rows; r++) if (g.data[2 * r] !== x[r] || g.data[2 * r + 1] !== -x[r]!) bad++;
    expect(bad).toBe(0);
  }, 120_000);
});

describeGpu('packed small types', { timeout: 60_000 }, () => {
  it('int8, uint16 and bool outputs of odd lengths, from several invocations into shared words', async () => {
    const split = both((target) => guvectorize(['void(float32[:], int8[:], uint16[:], bool[:])'], '(n)->(n),(n),(n)', { target })(
      (x: Float32Array, small: Int8Array, wide: Uint16Array, positive: Uint8Array) => {
        for (let i = 0; i < x.length; i++) {
          small[i] = x[i]!;
          wide[i] = x[i]! * 100;
          positive[i] = x[i]! > 0 ? 1 : 0;
        }
      },
    ));
    const x = { data: iota(7 * 5, 0.7), shape: [7, 5] };
    const [c, g] = await Promise.all([split.cpu(x), split.gpu(x)]);
    for (let k = 0; k < 3; k++) expect(differences(c[k].data, g[k].data)).toEqual([]);
    expect(g[0].data).toBeInstanceOf(Int8Array);
    expect(g[1].data).toBeInstanceOf(Uint16Array);
  });
});

describeGpu('device arrays', { timeout: 60_000 }, () => {
  it('a chain toDevice → f → g → toHost stays on the device between steps', async () => {
    const f = vectorize(['float32(float32)'], { target: 'gpu', boundsCheck: false })((x: number) => x * 2);
    const g = vectorize(['float32(float32, float32)'], { target: 'gpu', boundsCheck: false })((x: number, y: number) => x + y);
    const xs = iota(1000);
    const dx = await toDevice(xs);
    await f(dx); // compile both first, so the count below sees only the chain
    await g(dx, dx);
    const mapAsync = GPUBuffer.prototype.mapAsync;
    let maps = 0;
    GPUBuffer.prototype.mapAsync = function (this: GPUBuffer, ...args: Parameters<GPUBuffer['mapAsync']>) {
      maps++;
      return mapAsync.apply(this, args);
    };
    try {
      const dy = await f(dx);
      const dz = await g(dy, dx);
      expect(dy).toBeInstanceOf(DeviceArray);
      expect(dz).toBeInstanceOf(DeviceArray);
      expect(maps).toBe(0); // nothing came back to the host
      const z = (await (dz as DeviceArray).toHost()) as Float32Array;
      expect(maps).toBe(1);
      expect(differences(z, xs.map((x) => Math.fround(x * 2) + x))).toEqual([]);
    } finally {
      GPUBuffer.prototype.mapAsync = mapAsync;
    }
  });

  it('in place on a device array, and into a column-major view of one', async () => {
    const hermite = guvectorize(['void(float32, float32[:])'], '()->(n)', { target: 'gpu' })((x: number, out: Float32Array) => {
      out[0] = 1;
      out[1] = x;
      for (let i = 2; i < out.length; i++) out[i] = x * out[i - 1]! - (i - 1) * out[i - 2]!;
    });
    const rows = 1000;
    const x = iota(rows, 0.004);
    const rowMajor = (await (await hermite(await toDevice(x), { dims: { n: 8 } })).toHost()) as Float32Array;
    const storage = await deviceArray([8, rows], 'float32');
    const columnMajor = storage.view([rows, 8], [1, rows]);
    const same = await hermite(await toDevice(x), { out: columnMajor });
    expect(same).toBe(columnMajor);
    expect(differences(rowMajor, (await columnMajor.toHost()) as Float32Array)).toEqual([]);

    const double = guvectorize(['void(float32[:], float32[:])'], '(n)->(n)', { target: 'gpu' })((a: Float32Array, out: Float32Array) => {
      for (let i = 0; i < a.length; i++) out[i] = a[i]! * 2;
    });
    const d = await toDevice({ data: iota(12), shape: [3, 4] });
    await double(d, { out: d });
    expect(differences((await d.toHost()) as Float32Array, iota(12).map((v) => v * 2))).toEqual([]);
  });

  it('mixes host and device inputs; the output lives on the device', async () => {
    const mul = vectorize(['float32(float32, float32)'], { target: 'gpu' })((a: number, b: number) => a * b);
    const out = await mul(await toDevice(iota(10)), iota(10, 2));
    expect(out).toBeInstanceOf(DeviceArray);
    expect(differences((await out.toHost()) as Float32Array, iota(10).map((v, i) => Math.fround(v * iota(10, 2)[i]!)))).toEqual([]);
  });

  it('concurrent calls do not mix their data', async () => {
    const scale = vectorize(['float32(float32, float32)'], { target: 'gpu' })((a: number, s: number) => a * s);
    const results = await Promise.all([1, 2, 3, 4, 5, 6, 7, 8].map((s) => scale(iota(3000), s)));
    results.forEach((r, k) => expect(differences(r as Float32Array, iota(3000).map((v) => Math.fround(v * (k + 1))))).toEqual([]));
  });
});

describeGpu('failures', { timeout: 60_000 }, () => {
  afterEach(() => setIdleReleaseMs(200));

  const reader = (target: 'cpu' | 'gpu') =>
    guvectorize(['void(float32[:], int32, float32[:])'], '(n),()->()', { target })((x: Float32Array, i: number, out: Float32Array) => {
      out[0] = x[i]!;
    });

  it('an index out of bounds is a KernelRuntimeError with the cpu message', async () => {
    const x = { data: iota(8), shape: [2, 4] };
    const indices = Int32Array.from([1, 4]);
    const messages = await Promise.all([reader('cpu'), reader('gpu')].map((f) => f(x, indices).then(() => 'no error', (e: Error) => `${e.name}: ${e.message}`)));
    expect(messages[1]).toBe(messages[0]);
    expect(messages[1]).toMatchInlineSnapshot(`
      "KernelRuntimeError: Index [4] is out of bounds for \`x\` at tests/targets/gpu/calls.test.ts:289:16 (its shape is [4]). The outputs may be partially written.
        out[0] = x[i]!;
                 ^"
    `);
    await expect(reader('gpu')(x, Int32Array.from([-1, 0]))).rejects.toThrow('Index [-1] is out of bounds');
  });

  it('a fractional index is out of bounds, as on the cpu', async () => {
    const half = (target: 'cpu' | 'gpu') =>
      guvectorize(['void(float32[:], float32[:])'], '(n)->()', { target })((x: Float32Array, out: Float32Array) => {
        out[0] = x[x.length / 2]!;
      });
    const x = { data: iota(5), shape: [1, 5] };
    const messages = await Promise.all([half('cpu'), half('gpu')].map((f) => f(x).then(() => 'no error', (e: Error) => e.message)));
    expect(messages[1]).toBe(messages[0]);
    expect(messages[1]).toContain('Index [2.5] is out of bounds');
  });

  it('on device arrays, the error surfaces at toHost() of the result (or of anything computed from it)', async () => {
    const x = await toDevice({ data: iota(8), shape: [2, 4] });
    const out = await reader('gpu')(x, Int32Array.from([0, 9]));
    expect(out).toBeInstanceOf(DeviceArray);
    const next = await vectorize(['float32(float32)'], { target: 'gpu' })((v: number) => v + 1)(out);
    await expect((next as DeviceArray).toHost()).rejects.toThrow(KernelRuntimeError);
    await expect((out as DeviceArray).toHost()).rejects.toThrow('Index [9] is out of bounds for `x`');
  });

  it('a WebGPU validation error is a DeviceError of the call that caused it', async () => {
    const f = vectorize(['float32(float32)'], { target: 'gpu' })((v: number) => v * 3);
    const d = await toDevice(iota(16));
    d.buffer.destroy(); // behind the DeviceArray's back: the dispatch is now invalid
    await expect(f(iota(16))).resolves.toBeInstanceOf(Float32Array); // compiles f
    const chained = await f(d); // a chained call returns before the GPU has looked at it
    await expect(synchronize()).rejects.toThrow(DeviceError);
    await expect((chained as DeviceArray).toHost()).rejects.toThrow(/^gpu call #\d+ \(`\w+`\) failed: The GPU reported an error for gpu call #\d+ \(`\w+`\), so none of their work was done\. WebGPU validation error: /);
    await expect(f(iota(16))).resolves.toBeInstanceOf(Float32Array); // the next call is fine
    await expect(synchronize()).resolves.toBeUndefined(); // each error is reported once by synchronize()
  });

  it('after a device loss, the next call gets a new device', async () => {
    const f = vectorize(['float32(float32)'], { target: 'gpu' })((v: number) => v - 1);
    const before = await toDevice(iota(4));
    const { device } = await acquireDevice();
    device.destroy();
    await sleep(50);
    await expect(f(before)).rejects.toThrow(DeviceError);
    expect(differences((await f(iota(4))) as Float32Array, iota(4).map((v) => v - 1))).toEqual([]);
  });

  it('64-bit types in a signature are refused, naming the signature and the alternatives', async () => {
    const f = vectorize(['float64(float64, float64)'], { target: 'gpu' })((a: number, b: number) => a + b);
    await expect(f(Float64Array.from([1]), Float64Array.from([2]))).rejects.toThrowErrorMatchingInlineSnapshot(
      `[TargetUnavailableError: No signature of this ufunc that the 'gpu' target can run accepts the inputs (float64, float64): \`float64(float64, float64)\` fits them but needs float64, which the target does not have (WGSL has no 64-bit types). Declare a float32 or int32 signature, pass \`{ float64: 'float32' }\` to vectorize/guvectorize to run float64 signatures in float32, or use target 'cpu' or 'parallel'.]`,
    );
    const g = vectorize(['int64(int64)'], { target: 'gpu' })((a: bigint) => a);
    await expect(g(BigInt64Array.from([1n]))).rejects.toThrow(TargetUnavailableError);
  });
});
