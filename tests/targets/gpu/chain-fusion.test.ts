/**
 * Automatic fusion of recorded gpu calls (chain-fusion.ts): consecutive element-wise calls whose
 * output feeds the next run as one kernel that writes every output the user holds — with the
 * results of the calls recorded one by one (fusion switched off), bit for bit, and a test per
 * hazard: aliasing views, in place, broadcasting, dtypes, a destroyed output, a host write in
 * between, errors naming the calls.
 */
import { afterAll, afterEach, beforeAll, expect, it } from 'vitest';
import { DeviceError } from '../../../src/errors.js';
import { type DeviceArray, deviceArray, synchronize, toDevice, vectorize } from '../../../src/index.js';
import { chainFusionStats, fusedKernelsCompiled, setChainFusion } from '../../../src/targets/gpu/runtime/chain-fusion.js';
import { chainShapeStats } from '../../../src/targets/gpu/runtime/fused-chain-plan.js';
import { describeGpu } from '../../gpu-available.js';

const target = 'gpu';
const saxpy = vectorize(['float32(float32, float32, float32)'], { target })(function saxpy(a: number, x: number, y: number) {
  return a * x + y;
});
const gauss = vectorize(['float32(float32)'], { target })(function gauss(t: number) {
  return Math.exp(-t * t);
});
const mul = vectorize(['float32(float32, float32)'], { target })(function mul(a: number, b: number) {
  return a * b;
});
const toInt = vectorize(['int32(float32)'], { target })(function toInt(t: number) {
  return t * 1000;
});
const quarter = vectorize(['float32(int32)'], { target })(function quarter(k: number) {
  return k / 4;
});
const twice = vectorize(['float32(float32)', 'int32(int32)'], { target })(function twice(k: number) {
  return k * 2 + 1;
});

const N = 3000;
const hostX = Float32Array.from({ length: N }, (_, i) => Math.sin(i) * 2);
const hostY = Float32Array.from({ length: N }, (_, i) => Math.cos(i * 0.37));

/**
 * Runs `chain` with fusion off, then with fusion on three times (the second compiles the fused
 * kernel in the background, the third runs it), and returns the arrays `read` gives each time.
 */
async function offAndOn(chain: () => Promise<DeviceArray[]>): Promise<{ off: Float32Array[][]; on: Float32Array[][]; fused: number }> {
  const read = async (arrays: DeviceArray[]) => Promise.all(arrays.map(async (a) => Float32Array.from((await a.toHost()) as ArrayLike<number>)));
  setChainFusion(false);
  const off = [await read(await chain())];
  setChainFusion(true);
  await read(await chain());
  await read(await chain());
  await fusedKernelsCompiled();
  const before = chainFusionStats.fusedDispatches;
  const on = [await read(await chain())];
  return { off, on, fused: chainFusionStats.fusedDispatches - before };
}

function expectSameBits(on: Float32Array[][], off: Float32Array[][]): void {
  expect(on.length).toBe(off.length);
  on.forEach((arrays, r) => arrays.forEach((a, k) => {
    const b = off[r]![k]!;
    expect(a.length).toBe(b.length);
    for (let i = 0; i < a.length; i++) if (!Object.is(a[i], b[i])) expect.fail(`run ${r}, array ${k}, element ${i}: fused ${a[i]}, separate ${b[i]}`);
  }));
}

describeGpu('automatic fusion of recorded gpu calls', { timeout: 60_000 }, () => {
  beforeAll(() => setChainFusion(true)); // the default; offAndOn turns it off and on
  afterAll(() => setChainFusion(true));
  afterEach(async () => {
    setChainFusion(true);
    await synchronize().catch(() => {});
  });

  it('runs three awaited calls into `out` as one kernel that writes all three outputs', async () => {
    const x = await toDevice(hostX);
    const y = await toDevice(hostY);
    const [t, g, v] = await Promise.all([0, 1, 2].map(() => deviceArray([N], 'float32')));
    const { off, on, fused } = await offAndOn(async () => {
      await saxpy(2, x, y, { out: t });
      await gauss(t!, { out: g });
      await mul(g!, x, { out: v });
      return [t!, g!, v!];
    });
    expect(fused).toBe(1);
    expectSameBits(on, off);
  });

  it('fuses calls with fresh outputs, and every output the user holds is written', async () => {
    const x = await toDevice(hostX);
    const y = await toDevice(hostY);
    const { off, on, fused } = await offAndOn(async () => {
      const t = (await saxpy(2, x, y)) as DeviceArray;
      const g = (await gauss(t)) as DeviceArray;
      return [t, g, (await mul(g, x)) as DeviceArray];
    });
    expect(fused).toBe(1);
    expectSameBits(on, off);
  });

  it('does not write an output destroyed before the chain is recorded', async () => {
    const x = await toDevice(hostX);
    const y = await toDevice(hostY);
    const { off, on, fused } = await offAndOn(async () => {
      const t = (await saxpy(2, x, y)) as DeviceArray;
      const g = (await gauss(t)) as DeviceArray;
      t.destroy();
      const v = (await mul(g, x)) as DeviceArray;
      g.destroy(); // after the call that reads it, before the chain is recorded: only v is stored
      return [v];
    });
    expect(fused).toBe(1);
    expectSameBits(on, off);
    expect(chainFusionStats.lastStores).toBe(1);
  });

  it('fuses in-place calls (each element read before it is written) and converts between dtypes as stores did', async () => {
    const x = await toDevice(hostX);
    const y = await toDevice(hostY);
    const k = await deviceArray([N], 'int32');
    const q = await deviceArray([N], 'float32');
    const { off, on, fused } = await offAndOn(async () => {
      const z = await toDevice(hostY);
      await saxpy(0.5, x, z, { out: z });
      await gauss(z, { out: z });
      await toInt(z, { out: k });
      await quarter(k, { out: q });
      return [z, q];
    });
    expect(fused).toBe(1);
    expectSameBits(on, off);
    void y;
  });

  it('does not fuse a call that reads a held output through another view, or over another loop shape', async () => {
    const x = await toDevice(hostX);
    const y = await toDevice(hostY);
    const shifted = await offAndOn(async () => {
      const t = (await saxpy(2, x, y)) as DeviceArray;
      const later = t.view([N - 1], [1], 1); // element i reads t[i + 1], which another thread writes
      const head = x.view([N - 1], [1], 0);
      return [t, (await mul(later, head)) as DeviceArray];
    });
    expect(shifted.fused).toBe(0);
    expectSameBits(shifted.on, shifted.off);
    const rows = await toDevice({ data: Float32Array.from({ length: 4 * N }, (_, i) => i % 7), shape: [4, N] });
    const broadcast = await offAndOn(async () => {
      const t = (await saxpy(2, x, y)) as DeviceArray;
      return [t, (await mul(t, rows)) as DeviceArray]; // [N] against [4, N]: another iteration space
    });
    expect(broadcast.fused).toBe(0);
    expectSameBits(broadcast.on, broadcast.off);
    const within = await offAndOn(async () => {
      const t = (await saxpy(2, x, y)) as DeviceArray;
      const first = x.view([N], [0], 0); // x[0] broadcast along the loop: the same iteration space
      return [t, (await mul(t, first)) as DeviceArray];
    });
    expect(within.fused).toBe(1);
    expectSameBits(within.on, within.off);
  });

  it('works a chain out once per shape: the same calls again reuse it, other wiring, views, dtypes or a destroyed output do not', async () => {
    const x = await toDevice(hostX);
    const y = await toDevice(hostY);
    const [t, g, v] = await Promise.all([0, 1, 2].map(() => deviceArray([N], 'float32')));
    const chain = (a: number, last: DeviceArray) => async () => {
      await saxpy(a, x, y, { out: t });
      await gauss(t!, { out: g });
      await mul(g!, last, { out: v });
      return [t!, g!, v!];
    };
    const first = await offAndOn(chain(2, x));
    expect(first.fused).toBe(1);
    expectSameBits(first.on, first.off);
    // The same calls again, another scalar: the shape is reused (the scalar is a param), not worked out again.
    const built = chainShapeStats.built;
    const again = await offAndOn(chain(3, x));
    expect(again.fused).toBe(1);
    expectSameBits(again.on, again.off);
    expect(chainShapeStats.built).toBe(built);
    // The same calls with the same layouts, but mul reads y where it read x: another shape.
    const rewired = await offAndOn(chain(2, y));
    expect(rewired.fused).toBe(1);
    expectSameBits(rewired.on, rewired.off);
    expect(chainShapeStats.built).toBe(built + 1);
    // t as a view at another offset of a larger array: other call signatures, another shape.
    const wide = await deviceArray([N + 1], 'float32');
    const shifted = wide.view([N], [1], 1);
    const viewed = await offAndOn(async () => {
      await saxpy(2, x, y, { out: shifted });
      await gauss(shifted, { out: g });
      await mul(g!, x, { out: v });
      return [shifted, g!, v!];
    });
    expect(viewed.fused).toBe(1);
    expectSameBits(viewed.on, viewed.off);
    expect(chainShapeStats.built).toBe(built + 2);
    // One ufunc over float32, then over int32 arrays: each dtype its own shape, its own bits.
    const k = await toDevice(Int32Array.from({ length: N }, (_, i) => i * 7 - 1000));
    const [k1, k2, f1, f2] = await Promise.all([deviceArray([N], 'int32'), deviceArray([N], 'int32'), deviceArray([N], 'float32'), deviceArray([N], 'float32')]);
    const ints = await offAndOn(async () => {
      await twice(k, { out: k1 });
      await twice(k1, { out: k2 });
      return [k2];
    });
    const floats = await offAndOn(async () => {
      await twice(x, { out: f1 });
      await twice(f1, { out: f2 });
      return [f1, f2];
    });
    expect([ints.fused, floats.fused]).toEqual([1, 1]);
    expectSameBits(ints.on, ints.off);
    expectSameBits(floats.on, floats.off);
    expect(chainShapeStats.built).toBe(built + 4);
    // The first chain's calls (the same signatures), g destroyed before the chain is recorded: the
    // shape it had does not serve (it stores g); t and v are written as before.
    const want = first.off[0]!;
    await saxpy(2, x, y, { out: t });
    await gauss(t!, { out: g });
    await mul(g!, x, { out: v });
    g!.destroy();
    await synchronize();
    expect(chainFusionStats.lastStores).toBe(2);
    expect(chainShapeStats.built).toBe(built + 5);
    expectSameBits([[Float32Array.from((await t!.toHost()) as Float32Array), Float32Array.from((await v!.toHost()) as Float32Array)]], [[want[0]!, want[2]!]]);
  });

  it('a fused chain of kernels that check no index has no bounds checks; one of a kernel that does keeps its checks', async () => {
    const shaders: string[] = [];
    const createShaderModule = GPUDevice.prototype.createShaderModule;
    GPUDevice.prototype.createShaderModule = function (this: GPUDevice, d: GPUShaderModuleDescriptor) {
      if (d.label?.includes(' > ')) shaders.push(d.code);
      return createShaderModule.call(this, d);
    } as typeof createShaderModule;
    try {
      const x = await toDevice(hostX);
      const [t, g] = await Promise.all([0, 1].map(() => deviceArray([N], 'float32')));
      const plain = await offAndOn(async () => {
        await saxpy(5, x, x, { out: t });
        await gauss(t!, { out: g });
        return [t!, g!];
      });
      expect(plain.fused).toBe(1);
      expectSameBits(plain.on, plain.off);
      expect(shaders.length).toBe(1);
      expect(shaders[0]).not.toMatch(/oob|report_oob/);
      const T = Float32Array.of(0.5, 1.5, 2.5);
      const pick = vectorize(['float32(int32)'], { target, env: { T } })('(i) => T[i]');
      const k = await toDevice(Int32Array.from({ length: N }, (_, i) => i % 3));
      const [p, q] = await Promise.all([0, 1].map(() => deviceArray([N], 'float32')));
      const table = await offAndOn(async () => {
        await pick(k, { out: p });
        await gauss(p!, { out: q });
        return [p!, q!];
      });
      expect(table.fused).toBe(1);
      expectSameBits(table.on, table.off);
      expect(shaders.length).toBe(2);
      expect(shaders[1]).toMatch(/report_oob/);
      // Its check still reports: an index past the table, from the fused kernel.
      await toDevice(Int32Array.from({ length: N }, (_, i) => (i === 7 ? 3 : 0))).then(async (bad) => {
        await pick(bad, { out: p });
        await gauss(p!, { out: q });
        await expect(synchronize()).rejects.toThrow(/gpu call #\d+ \(`\S+ > gauss\d*`\) failed: .*index/i);
      });
    } finally {
      GPUDevice.prototype.createShaderModule = createShaderModule;
    }
  });

  it('records held calls before a host write to an array they read', async () => {
    const y = await toDevice(hostY);
    const { off, on } = await offAndOn(async () => {
      const x = await toDevice(hostX);
      const t = (await saxpy(2, x, y)) as DeviceArray;
      const g = (await gauss(t)) as DeviceArray;
      await x.set(new Float32Array(N).fill(100)); // after the calls that read the old x
      return [t, g, (await mul(g, x)) as DeviceArray];
    });
    expectSameBits(on, off);
  });

  it('explain says whether a call is held, and why it joins the held chain or not', async () => {
    const x = await toDevice(hostX);
    const y = await toDevice(hostY);
    const t = await deviceArray([N], 'float32');
    await saxpy(2, x, y, { out: t });
    await gauss(t, { out: t });
    await synchronize();
    expect(gauss.explain(hostX)).toMatch(/Recorded at once, not fused with other calls: an operand is a host array/);
    await saxpy(2, x, y, { out: t }); // held
    expect(gauss.explain(t, { out: t })).toMatch(/It joins the held chain of 1 call \(`saxpy\d*`\): they run as one kernel\./);
    expect(gauss.explain(x, { out: t.view([N], [-1], N - 1) })).toMatch(/It starts a new chain \(it writes memory a held call \(`saxpy\d*`\) writes through another view/);
    expect(gauss.explain(y)).toMatch(/It starts a new chain \(it reads no output of the held calls\)/);
    setChainFusion(false);
    expect(gauss.explain(t)).toMatch(/Automatic fusion is off/);
  });

  it('reports an error of a fused dispatch naming its calls, and refuses a destroyed input at the call', async () => {
    const x = await toDevice(hostX);
    const y = await toDevice(hostY);
    const [t, g, v] = await Promise.all([0, 1, 2].map(() => deviceArray([N], 'float32')));
    const chain = async () => {
      await saxpy(2, x, y, { out: t });
      await gauss(t!, { out: g });
      await mul(g!, x, { out: v });
    };
    await chain();
    await chain();
    await fusedKernelsCompiled();
    const submit = GPUQueue.prototype.submit;
    GPUQueue.prototype.submit = function (this: GPUQueue, buffers: Iterable<GPUCommandBuffer>) {
      GPUQueue.prototype.submit = submit;
      const list = [...buffers];
      submit.call(this, list);
      return submit.call(this, list); // submitted twice: WebGPU reports a validation error
    } as typeof submit;
    await chain();
    await expect(synchronize()).rejects.toThrow(/gpu call #\d+ \(`saxpy\d* > gauss\d* > mul\d*`\)/); // (esbuild may rename the kernels saxpy2, …)
    const z = await toDevice(hostX);
    z.destroy();
    await expect(saxpy(2, z, y, { out: t })).rejects.toThrow(DeviceError);
  });
});

describeGpu('automatic fusion is on by default', () => {
  it('is on by default and turned off by setGpuOptions({ fuseChains: false })', async () => {
    const { getGpuOptions, setGpuOptions, ArgumentError } = await import('../../../src/index.js');
    expect(getGpuOptions().fuseChains).toBe(true);
    const neg = vectorize(['float32(float32)'], { target: 'gpu' })((a: number) => -a);
    const x = await toDevice(Float32Array.of(1, 2, 3));
    const y = await neg(x);
    await neg(y, { out: y }); // the first call of its layout runs at once (its pipeline compiles)
    const held = chainFusionStats.held;
    await neg(y, { out: y }); // a repeated one is held
    expect(chainFusionStats.held).toBe(held + 1);
    setGpuOptions({ fuseChains: false });
    try {
      expect(neg.explain(x)).toMatch(/Automatic fusion is off \(setGpuOptions\(\{ fuseChains: true \}\) turns it on\)/);
      await neg(y, { out: y });
      expect(chainFusionStats.held).toBe(held + 1);
    } finally {
      setGpuOptions({ fuseChains: true });
    }
    expect(Array.from((await y.toHost()) as Float32Array)).toEqual([1, 2, 3]); // negated four times
    expect(() => setGpuOptions({ fuseChains: 'yes' as never })).toThrow(ArgumentError);
  });
});
