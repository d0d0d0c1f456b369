/**
 * Which engine runs a call, as `f.explain(…)` states it; and the Wasm memory allocator.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { engineMode, isInWasmMemory, setEngineMode } from '../../../../src/targets/cpu/wasm/index.js';
import { __testing as memoryTesting, release, reserve, wasmMemoryInUse } from '../../../../src/targets/cpu/wasm/memory.js';
import { ArgumentError, guvectorize, setParallelOptions, sharedArray, sharedNDArray, vectorize } from '../../../../src/index.js';
import { __testing as parallelTesting, DEFAULT_THRESHOLD } from '../../../../src/targets/parallel/index.js';

const initialMode = engineMode();
/** The explanation begins with `text` (a guessed engine's reason goes on to say what is measured). */
const startsWith = (text: string) => new RegExp(`^${text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}`);
afterEach(() => {
  setEngineMode(initialMode);
});

describe('engine choice', () => {
  it('runs Wasm on arrays in Wasm memory and says so', () => {
    setEngineMode('auto');
    const f = vectorize(['float32(float32, float32)'])((x: number, y: number) => x + y);
    const x = sharedArray(1000, 'float32');
    expect(isInWasmMemory(x)).toBe(true);
    expect(f.explain(x, x, { out: sharedArray(1000, 'float32') })).toMatch(startsWith('WebAssembly (SIMD, 4 lanes): every array is in Wasm memory.'));
  });

  it('runs even cheap kernels on foreign arrays as Wasm on the cpu target (copied in blocks), with the reason', () => {
    setEngineMode('auto');
    const f = vectorize(['float32(float32, float32)'])((x: number, y: number) => x + y);
    expect(f.explain(new Float32Array(10_000), new Float32Array(10_000))).toMatch(startsWith('WebAssembly (SIMD, 4 lanes): the arrays outside Wasm memory are copied in and out in blocks of 1024 KiB that stay in cache (no extra pass over memory).'));
    // Too small to pay the blocks' fixed cost: JS, unless the kernel does much per element.
    expect(f.explain(new Float32Array(300), new Float32Array(300))).toMatch(/^JavaScript: a call of 300 elements \(about \d+ operations\) on arrays outside Wasm memory is faster in generated JS/);
    expect(f.explain(sharedArray(300, 'float32'), sharedArray(300, 'float32'), { out: sharedArray(300, 'float32') })).toMatch(startsWith('WebAssembly (SIMD, 4 lanes): every array is in Wasm memory.'));
    const g = vectorize(['float64(float64)'])((x: number) => (x > 0 ? Math.sqrt(x) : -x));
    expect(g.explain(sharedArray(1000), { out: sharedArray(1000) })).toMatch(startsWith('WebAssembly (SIMD, 2 lanes × 2 vectors per step): every array is in Wasm memory.'));
    // exp runs in Wasm where its loop is SIMD (fdlibm's exp in f64x2 lanes beats V8's Math.exp);
    // where the loop would be scalar, V8's own Math.exp in JS is as fast, so JS runs it.
    const e = vectorize(['float64(float64)'])((x: number) => (x > 0 ? Math.exp(x) : -x));
    expect(e.explain(sharedArray(1000), { out: sharedArray(1000) })).toMatch(startsWith('WebAssembly (SIMD, 2 lanes): every array is in Wasm memory.'));
    const e32 = vectorize(['float32(float32)'])((x: number) => Math.exp(x));
    expect(e32.explain(sharedArray(1000, 'float32'), { out: sharedArray(1000, 'float32') })).toMatch(startsWith('WebAssembly (SIMD, 4 lanes): every array is in Wasm memory.'));
    expect(e32.explain(new Float32Array(10_000))).toMatch(/^WebAssembly \(SIMD, 4 lanes\): the arrays outside Wasm memory are copied in and out in blocks/);
    expect(e.explain({ data: sharedArray(2000), shape: [1000], strides: [2] }, { out: sharedArray(1000) })).toMatch(startsWith('JavaScript: the kernel calls Math.exp and its Wasm loop would run one element at a time (an operand is strided), where V8\'s own Math.exp in JS is as fast; Wasm computes exp faster only in SIMD lanes.'));
    const rowExp = guvectorize(['void(float32[:], float32[:])'], '(n)->(n)')((x: { [i: number]: number; length: number }, out: { [i: number]: number; length: number }) => {
      for (let i = 0; i < x.length; i++) out[i] = Math.exp(x[i]!);
    });
    expect(rowExp.explain({ data: sharedArray(4000, 'float32'), shape: [1000, 4] }, { out: { data: sharedArray(4000, 'float32'), shape: [1000, 4] } })).toMatch(/^WebAssembly \(SIMD, 4 rows per vector/);
    // So do the other ports of V8's algorithms (sin, cos, tan, …): Wasm in SIMD lanes, JS where the loop is scalar.
    const s = vectorize(['float32(float32)'])((x: number) => Math.sin(x) * Math.cos(x));
    expect(s.explain(sharedArray(1000, 'float32'), { out: sharedArray(1000, 'float32') })).toMatch(startsWith('WebAssembly (SIMD, 4 lanes): every array is in Wasm memory.'));
    expect(s.explain(new Float32Array(10_000))).toMatch(/^WebAssembly \(SIMD, 4 lanes\): the arrays outside Wasm memory are copied in and out in blocks/);
    expect(s.explain({ data: sharedArray(2000, 'float32'), shape: [1000], strides: [2] })).toMatch(startsWith(
      'JavaScript: the kernel calls Math.sin and its Wasm loop would run one element at a time (an operand is strided), where V8\'s own Math.sin in JS is as fast; Wasm computes sin faster only in SIMD lanes.',
    ));
    // And log, pow (also `**`), tanh, ….
    const l = vectorize(['float64(float64)'])((x: number) => Math.log(x) * x ** 1.5 + Math.tanh(x) + Math.exp(x));
    expect(l.explain(sharedArray(1000), { out: sharedArray(1000) })).toMatch(startsWith('WebAssembly (SIMD, 2 lanes): every array is in Wasm memory.'));
    expect(l.explain({ data: sharedArray(2000), shape: [1000], strides: [2] }, { out: sharedArray(1000) })).toMatch(startsWith(
      'JavaScript: the kernel calls Math.log and its Wasm loop would run one element at a time (an operand is strided), where V8\'s own Math.log in JS is as fast; Wasm computes log faster only in SIMD lanes.',
    ));
    // Other functions V8 computes (imported: a call out of Wasm per element) keep the kernel in JS.
    const a = vectorize(['float64(float64)'])((x: number) => Math.exp(x) + Math.asinh(x));
    expect(a.explain(sharedArray(1000), { out: sharedArray(1000) })).toMatch(startsWith("JavaScript: the kernel calls Math.asinh, which runs faster in JS (V8's own) than in this engine (a call out of Wasm per element)."));
    // float32 beside float64: 2 lanes (the float32 values in lanes 0 and 1), two vectors per step
    // so that the float32 operand moves 16 bytes at a time.
    const h = vectorize(['float64(float32)'])((x: number) => x * 2);
    expect(h.explain(sharedArray(1000, 'float32'), { out: sharedArray(1000) })).toMatch(startsWith('WebAssembly (SIMD, 2 lanes × 2 vectors per step): every array is in Wasm memory.'));
    expect(f.explain(new Float32Array(3), 1)).toBe('JavaScript: a call of 3 elements is faster in generated JS than entering Wasm.');
  });

  it('on the parallel target, stages shared arrays outside Wasm memory whole only for kernels with enough work per element', async () => {
    setEngineMode('auto');
    setParallelOptions({ threshold: 0 });
    // The workers read the staged copies, so they are whole arrays (not blocks): worth it only for enough work.
    const sab = (n: number) => new Float64Array(new SharedArrayBuffer(n * 8));
    const f = guvectorize(['void(float64, float64[:])'], '()->(n)', { target: 'parallel' })((x: number, out: { [i: number]: number; length: number }) => {
      for (let i = 0; i < out.length; i++) {
        let s = 0;
        for (let k = 0; k < 8; k++) s += Math.sqrt(x * i + k);
        out[i] = s;
      }
    });
    expect(f.explain(sab(1000), { out: { data: sab(16_000), shape: [1000, 16] } })).toMatch(/^On \d+ workers? \(and the calling thread in `f\.sync`; an awaited call leaves it free\), each running WebAssembly \(SIMD, 2 rows per vector[^)]*\): the kernel does enough work/);
    // One row of `out[i] = x * i + Math.sqrt(i)` is too little work to pay for the copies.
    const light = guvectorize(['void(float64, float64[:])'], '()->(n)', { target: 'parallel' })((x: number, out: { [i: number]: number; length: number }) => {
      for (let i = 0; i < out.length; i++) out[i] = x * i + Math.sqrt(i);
    });
    expect(light.explain(sab(1000), { out: { data: sab(16_000), shape: [1000, 16] } })).toMatch(/each running JavaScript: the kernel does little work per element/);
    // On the cpu target the same call is copied in blocks.
    const lightCpu = guvectorize(['void(float64, float64[:])'], '()->(n)')((x: number, out: { [i: number]: number; length: number }) => {
      for (let i = 0; i < out.length; i++) out[i] = x * i + Math.sqrt(i);
    });
    expect(lightCpu.explain(sab(1000), { out: { data: sab(16_000), shape: [1000, 16] } })).toMatch(/^WebAssembly \(SIMD, 2 rows per vector[^)]*\): the arrays outside Wasm memory are copied in and out in blocks/);
    setParallelOptions({ threshold: DEFAULT_THRESHOLD });
    await parallelTesting.resetPool();
  });

  it('refuses 64-bit integer kernels and unchecked kernels, saying why', () => {
    setEngineMode('wasm');
    const big = vectorize(['int64(int64)'])((x: number) => x * 2);
    expect(big.explain(new BigInt64Array(4))).toBe(
      'JavaScript: Wasm cannot run this kernel: `x` is a 64-bit integer, which kernels hold as a JS bigint; the Wasm engine computes in 32 and 64-bit floats and 32-bit integers only.',
    );
    const unchecked = vectorize(['float64(float64)'], { boundsCheck: false })((x: number) => x * 2);
    expect(unchecked.explain(sharedArray(400))).toMatch(/^JavaScript: bounds checks are off/);
    setEngineMode('js');
    expect(unchecked.explain(sharedArray(4))).toBe("JavaScript: the engine mode is 'js' (setEngineMode or UFUNC_ENGINE).");
  });

  it('refuses an unknown engine mode', () => {
    expect(() => setEngineMode('fast' as 'js')).toThrow(ArgumentError);
    expect(() => setEngineMode('fast' as 'js')).toThrow("The engine mode must be 'auto', 'js' or 'wasm', found \"fast\".");
  });
});

describe('a full Wasm memory', () => {
  afterEach(async () => {
    memoryTesting.limitMemory(undefined);
    memoryTesting.ignoreFreeBlocks(false);
    setParallelOptions({ threshold: DEFAULT_THRESHOLD });
    await parallelTesting.resetPool();
  });

  /** A kernel with a local array (scratch), over foreign arrays (copied in): both need Wasm memory. */
  const make = (target: 'cpu' | 'parallel') =>
    guvectorize(['void(float64[:], float64[:])'], '(n)->(n)', { target })((x: Float64Array, out: Float64Array) => {
      const t = new Float64Array(8);
      for (let i = 0; i < x.length; i++) {
        t[i & 7] = Math.sqrt(x[i]! + 1);
        out[i] = t[i & 7]! * x[i]!;
      }
    });

  it.each(['cpu', 'parallel'] as const)('runs the call on the JS engine on the %s target, with the same results, never a RangeError', async (target) => {
    const x = new Float64Array(64 * 300).map((_, i) => i / 7);
    setEngineMode('js');
    const expected = make('cpu').sync({ data: x, shape: [300, 64] }) as { data: Float64Array };
    setEngineMode('wasm');
    setParallelOptions({ threshold: 0 });
    // Room for nothing more than is in use now: staging the 150 kB input (and the kernel's local
    // array) cannot fit — not even in blocks the garbage collector freed before or during the call.
    memoryTesting.limitMemory(memoryTesting.top());
    memoryTesting.ignoreFreeBlocks(true);
    const f = make(target);
    const got = (await f({ data: x, shape: [300, 64] })) as { data: Float64Array };
    expect(Buffer.from(got.data.buffer, got.data.byteOffset, got.data.byteLength).equals(Buffer.from(expected.data.buffer))).toBe(true);
    const out = new Float64Array(64 * 300);
    f.sync({ data: x, shape: [300, 64] }, { out: { data: out, shape: [300, 64] } });
    expect(Buffer.from(out.buffer).equals(Buffer.from(expected.data.buffer))).toBe(true);
    expect(f.explain({ data: x, shape: [300, 64] })).toMatch(/JavaScript: the Wasm memory is full: no room for the kernel's local arrays/);
    // No local arrays: the kernel compiles, but the copies of the foreign arrays find no room.
    memoryTesting.limitMemory(undefined);
    memoryTesting.ignoreFreeBlocks(false);
    const g = vectorize(['float64(float64)'], { target })((v: number) => Math.sqrt(v) * 3);
    g.sync(new Float64Array(300)); // compiled while there is room
    memoryTesting.limitMemory(memoryTesting.top());
    memoryTesting.ignoreFreeBlocks(true);
    const y = await g(x);
    expect(y).toEqual(x.map((v) => Math.sqrt(v) * 3));
  }, 30_000);
});

describe('Wasm memory', () => {
  it('hands out aligned, zeroed, disjoint arrays and reuses freed blocks', () => {
    const a = sharedArray(5, 'float64');
    const b = sharedNDArray([3, 4], 'int16');
    expect(a.byteOffset % 16).toBe(0);
    expect(b.data.byteOffset % 16).toBe(0);
    expect([...a]).toEqual([0, 0, 0, 0, 0]);
    const aEnd = a.byteOffset + a.byteLength;
    const bEnd = b.data.byteOffset + b.data.byteLength;
    expect(aEnd <= b.data.byteOffset || bEnd <= a.byteOffset).toBe(true);
    const used = wasmMemoryInUse();
    const block = reserve(1000)!;
    expect(wasmMemoryInUse()).toBe(used + 1008);
    release(block, 1000);
    expect(wasmMemoryInUse()).toBe(used);
    expect(reserve(1000)).toBe(block);
    release(block, 1000);
  });

  it('grows for large arrays without detaching the ones handed out', () => {
    const small = sharedArray(4, 'float32');
    small[0] = 1.5;
    const large = sharedArray(8_000_000, 'float32');
    large[7_999_999] = 2;
    expect(small[0]).toBe(1.5);
    expect(isInWasmMemory(large)).toBe(true);
    expect(large[7_999_999]).toBe(2);
  });
});
