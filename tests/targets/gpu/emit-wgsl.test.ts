/**
 * The generated WGSL, snapshot-tested per language feature (naga's `tests/snapshots.rs` does the
 * same for its backends). A change in a snapshot is a change in what the gpu runs: read the diff.
 * Where a WebGPU adapter is available, every snapshot is also compiled, so none is WGSL that
 * would only fail at run time.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { setLoopUnrolling } from '../../../src/targets/gpu/codegen/unroll.js';
import { acquireDevice, shutdownDevice } from '../../../src/targets/gpu/runtime/device.js';
import { gpuAvailable } from '../../gpu-available.js';
import { LAVAPIPE_LIMITS, planFor, vectorizeWgsl, wgslFor } from './shader-fixtures.js';
import { hermiteRow } from '../../kernels.js';

const f32 = (n = 8) => new Float32Array(n);
const i32 = (n = 8) => new Int32Array(n);
const u32 = (n = 8) => new Uint32Array(n);

/** A 2-D core slice as kernels see it. */
interface Matrix {
  [row: number]: Float32Array;
  readonly shape: readonly number[];
}

/** Every snapshot generated, compiled after the suite where a device exists. */
const generated: { name: string; code: string }[] = [];
function snapshot(name: string, code: string): void {
  generated.push({ name, code });
  expect(code).toMatchSnapshot();
}

describe('vectorize kernels', () => {
  it('float32 arithmetic and JS scalars (params)', () => {
    snapshot('saxpy', vectorizeWgsl((a: number, x: number, y: number) => a * x + y, 'float32(float32, float32, float32)', [2, f32(), f32()]));
  });

  it('float % is exact fmod; ** is Math.pow', () => {
    snapshot('fmod', vectorizeWgsl((a: number, b: number) => (a % b) + a ** b, 'float32(float32, float32)', [f32(), f32()]));
  });

  it('int32 division (a / b) | 0, %, shifts masked by 31, >>> on uint32', () => {
    snapshot('int32', vectorizeWgsl((a: number, b: number) => ((a / b) | 0) + (a % b) + (a << b) + (a >> b) + ((a >>> b) | 0), 'int32(int32, int32)', [i32(), i32()]));
  });

  it('uint32 arithmetic wraps, division by zero is 0', () => {
    snapshot('uint32', vectorizeWgsl((a: number, b: number) => ((a / b) >>> 0) + a * b - (a % b), 'uint32(uint32, uint32)', [u32(), u32()]));
  });

  it('comparisons, logical operators and ?: without effects', () => {
    snapshot('compare', vectorizeWgsl((a: number, b: number) => (a < b && a !== 0) || !(a >= b) ? a : -b, 'float32(float32, float32)', [f32(), f32()]));
  });

  it('conversions: float → int (ToInt32), int → small int, number → bool', () => {
    snapshot('casts', vectorizeWgsl((a: number, b: number) => ((a | 0) + (b >>> 0 > 7 ? 1 : 0)), 'int8(float32, float32)', [f32(), f32()]));
    snapshot('bool-out', vectorizeWgsl((a: number, b: number) => a !== b, 'bool(int16, uint8)', [new Int16Array(8), new Uint8Array(8)]));
  });

  it('uint8c: packed like uint8; stores clamp (js_f32_to_u8c for floats, clamp/min for integers), no wrapping', () => {
    snapshot('uint8c', vectorizeWgsl((a: number, b: number) => a * b, 'uint8c(float32, uint8c)', [f32(), new Uint8ClampedArray(8)]));
    snapshot('uint8c-int', vectorizeWgsl((a: number, b: number) => a + b, 'uint8c(int32, uint32)', [i32(), u32()]));
  });

  it('Math functions with JS semantics', () => {
    snapshot('math', vectorizeWgsl(
      (a: number, b: number) =>
        Math.round(a) + Math.sign(a) + Math.min(a, b, 1) + Math.max(a, b) + Math.sqrt(a) + Math.cbrt(a) + Math.exp(a) + Math.expm1(a) +
        Math.log(a) + Math.log2(a) + Math.log10(a) + Math.log1p(a) + Math.sin(a) + Math.cos(a) + Math.tan(a) + Math.asin(a) + Math.acos(a) +
        Math.atan(a) + Math.atan2(a, b) + Math.sinh(a) + Math.cosh(a) + Math.tanh(a) + Math.asinh(a) + Math.acosh(a) + Math.atanh(a) +
        Math.pow(a, b) + Math.hypot(a, b, 2) + Math.abs(a) + Math.floor(a) + Math.ceil(a) + Math.trunc(a) + Math.fround(a),
      'float32(float32, float32)', [f32(), f32()],
    ));
    snapshot('math-int', vectorizeWgsl((a: number, b: number) => Math.imul(a, b) + Math.clz32(a) + Math.abs(a) + Math.max(a, b) + Math.sign(b), 'int32(int32, int32)', [i32(), i32()]));
  });

  it('NaN, ±Infinity and −0 literals', () => {
    snapshot('specials', vectorizeWgsl((a: number) => (a > 0 ? Infinity : a < -1 ? -Infinity : a === 0 ? -0 : NaN), 'float32(float32)', [f32()]));
  });

  it('names that are WGSL keywords, reserved words or built-ins are renamed', () => {
    snapshot('reserved', vectorizeWgsl((loop: number, select: number) => {
      let max = loop;
      const $fn = select;
      const filter = max + $fn;
      return filter;
    }, 'float32(float32, float32)', [f32(), f32()]));
  });

  it('bounds checks off: no record, no flag', () => {
    snapshot('unchecked', vectorizeWgsl((a: number) => a + 1, 'float32(float32)', [f32()], { boundsCheck: false }));
  });
});

describe('guvectorize kernels', () => {
  const hermite = hermiteRow;
  // Each shows one feature of the loop form; the straight-line form of the same shapes is below.
  beforeAll(() => setLoopUnrolling(false));
  afterAll(() => setLoopUnrolling(true));

  it('row-major rows are staged through workgroup memory; loop counters are i32, `c` is f32', () => {
    snapshot('hermite-row-major', wgslFor(planFor('guvectorize', hermite, ['void(float32, float32[:])'], '()->(n)', [f32(1000), { dims: { n: 16 } }])));
  });

  it('a reused output that the kernel provably overwrites whole is staged like a fresh one', () => {
    const out = { data: f32(1000 * 16).fill(1), shape: [1000, 16] };
    snapshot('hermite-overwritten', wgslFor(planFor('guvectorize', hermite, ['void(float32, float32[:])'], '()->(n)', [f32(1000), { out }])));
  });

  it('in place, the reads before any write come from memory: seed 001\'s (n)->(n) form', () => {
    const rows = { data: f32(64 * 16).fill(1), shape: [64, 16] };
    function recurrence(x: number, out: Float32Array): void {
      out[0] = 1;
      out[1] = x;
      for (let i = 2; i < out.length; i++) out[i] = x * out[i - 1]! - (i - 1) * out[i - 2]!;
    }
    snapshot('hermite-in-place', wgslFor(planFor('guvectorize', (row: Float32Array, out: Float32Array) => {
      recurrence(row[1]!, out);
    }, ['void(float32[:], float32[:])'], '(n)->(n)', [rows, { out: rows }], { env: { recurrence } })));
  });

  it('a reused output the kernel may not write whole tracks written elements instead of reading its rows', () => {
    const out = { data: f32(1000 * 16).fill(1), shape: [1000, 16] };
    snapshot('tracked', wgslFor(planFor('guvectorize', (x: number, out: Float32Array) => {
      for (let i = 0; i < out.length; i++) if (x > i) out[i] = x - i;
    }, ['void(float32, float32[:])'], '()->(n)', [f32(1000), { out }])));
  });

  it('column-major outputs are written directly (already coalesced)', () => {
    const rows = 1000;
    const out = { data: f32(rows * 16), shape: [rows, 16], strides: [1, rows] };
    snapshot('hermite-column-major', wgslFor(planFor('guvectorize', hermite, ['void(float32, float32[:])'], '()->(n)', [f32(rows), { out }])));
  });

  it('in place: one binding and one tile for the same view', () => {
    const rows = { data: f32(64 * 16), shape: [64, 16] };
    snapshot('in-place', wgslFor(planFor('guvectorize', (x: Float32Array, out: Float32Array) => {
      for (let i = 0; i < x.length; i++) out[i] = x[i]! * 2;
    }, ['void(float32[:], float32[:])'], '(n)->(n)', [rows, { out: rows }])));
  });

  it('in place, reading one element per row: rows are not read in, written elements are tracked', () => {
    const rows = { data: f32(64 * 16).fill(1), shape: [64, 16] };
    snapshot('in-place-sparse', wgslFor(planFor('guvectorize', (row: Float32Array, out: Float32Array) => {
      const x = row[1]!;
      out[0] = 1;
      for (let i = 2; i < out.length; i++) out[i] = x * out[i - 1]!;
    }, ['void(float32[:], float32[:])'], '(n)->(n)', [rows, { out: rows }])));
  });

  it('2-D core arrays, float32 accumulator and a rank-2 loop', () => {
    const a = { data: f32(2 * 3 * 4 * 5), shape: [2, 3, 4, 5] };
    const b = { data: f32(5 * 6), shape: [5, 6] };
    snapshot('matmul', wgslFor(planFor('guvectorize', (x: Matrix, y: Matrix, c: Matrix) => {
      for (let i = 0; i < x.shape[0]!; i++) {
        for (let j = 0; j < c.shape[1]!; j++) {
          let s = 0;
          for (let k = 0; k < y.shape[0]!; k++) s += x[i]![k]! * y[k]![j]!;
          c[i]![j] = s;
        }
      }
    }, ['void(float32[:,:], float32[:,:], float32[:,:])'], '(m,n),(n,p)->(m,p)', [{ ...a, shape: [6, 4, 5] }, b])));
  });

  it('helpers specialised per array origin, local arrays passed by pointer, modulo indices in i32', () => {
    function deriv(x: Float64Array, d: Float64Array): void {
      const n = x.length;
      for (let i = 0; i < n; i++) d[i] = (x[(i + 1) % n]! - x[(i + n - 2) % n]!) * x[(i + n - 1) % n]! - x[i]! + 8;
    }
    snapshot('helpers-local-arrays', wgslFor(planFor('guvectorize', (x: Float64Array, out: Float64Array) => {
      const k = new Float64Array(x.length);
      const tmp = new Float64Array(x.length);
      deriv(x, k);
      for (let i = 0; i < x.length; i++) tmp[i] = x[i]! + 0.5 * k[i]!;
      deriv(tmp, k);
      for (let i = 0; i < x.length; i++) out[i] = x[i]! + 0.01 * k[i]!;
    }, ['void(float32[:], float32[:])'], '(n)->(n)', [{ data: f32(40 * 100), shape: [100, 40] }], { env: { deriv } })));
  });

  it('lazy ?: and && around loads that may fail their index check', () => {
    snapshot('lazy-effects', wgslFor(planFor('guvectorize', (a: Float32Array, i: number, out: Float32Array) => {
      out[0] = i < a.length ? a[i]! : -1;
      if (i >= 0 && a[i]! > 0) out[0] = 1;
    }, ['void(float32[:], int32, float32[:])'], '(n),()->()', [{ data: f32(20), shape: [2, 10] }, i32(2)])));
  });

  it('while, do-while, break and continue', () => {
    snapshot('loops', wgslFor(planFor('guvectorize', (a: Int32Array, out: Int32Array) => {
      let i = 0;
      let s = 0;
      while (true) {
        if (i >= a.length) break;
        i++;
        if (a[i - 1]! < 0) continue;
        s += a[i - 1]!;
      }
      do {
        s = s >> 1;
      } while (s > 100);
      out[0] = s;
    }, ['void(int32[:], int32[:])'], '(n)->()', [i32(16)])));
  });

  it('packed int8 and uint16 outputs', () => {
    snapshot('packed', wgslFor(planFor('guvectorize', (x: Float32Array, small: Int8Array, wide: Uint16Array) => {
      for (let i = 0; i < x.length; i++) {
        small[i] = x[i]!;
        wide[i] = x[i]! * 100;
      }
    }, ['void(float32[:], int8[:], uint16[:])'], '(n)->(n),(n)', [{ data: f32(64), shape: [8, 8] }])));
  });

  it('float indices are converted and checked', () => {
    snapshot('float-index', wgslFor(planFor('guvectorize', (x: Float32Array, out: Float32Array) => {
      out[0] = x[x.length / 2]!;
    }, ['void(float32[:], float32[:])'], '(n)->()', [{ data: f32(64), shape: [8, 8] }])));
  });
});

describe('straight-line code for small arrays of known length (codegen/unroll.ts)', () => {
  /** Lorenz-96's tendency, as bench/workloads.ts writes it. */
  function tendency(x: Float32Array, forcing: number, dxdt: Float32Array): void {
    const n = x.length;
    for (let i = 0; i < n; i++) dxdt[i] = (x[(i + 1) % n]! - x[(i + n - 2) % n]!) * x[(i + n - 1) % n]! - x[i]! + forcing;
  }
  function euler(x: Float32Array, dt: number, k: Float32Array, out: Float32Array): void {
    tendency(x, 8, k);
    for (let i = 0; i < x.length; i++) out[i] = x[i]! + dt * k[i]!;
  }
  const members = { data: f32(12 * 100), shape: [100, 12] };

  it('helpers inlined, loops over known lengths unrolled, local arrays in scalars, the private row indexed by literals', () => {
    const code = wgslFor(planFor('guvectorize', (x: Float32Array, dt: number, out: Float32Array) => {
      const k = new Float32Array(x.length);
      euler(x, dt, k, out);
    }, ['void(float32[:], float32, float32[:])'], '(n),()->(n)', [members, 0.01], { env: { euler, tendency } }));
    snapshot('straight-helpers-local-array', code);
    expect(code).not.toMatch(/\bfor \(var i|array<f32, 12>>|fn tendency|fn euler/);
    expect(code).toMatch(/var k_11: f32 = f32\(\);/);
  });

  it('Hermite ()->(n): both loops unrolled over the private row', () => {
    snapshot('straight-hermite', wgslFor(planFor('guvectorize', hermiteRow, ['void(float32, float32[:])'], '()->(n)', [f32(1000), { dims: { n: 16 } }])));
  });

  it('nested loops over 2-D tiles unrolled level by level', () => {
    const a = { data: f32(10 * 3 * 2), shape: [10, 3, 2] };
    const b = { data: f32(10 * 2 * 3), shape: [10, 2, 3] };
    snapshot('straight-nested', wgslFor(planFor('guvectorize', (x: Matrix, y: Matrix, c: Matrix) => {
      for (let i = 0; i < x.shape[0]!; i++) {
        for (let j = 0; j < y.shape[1]!; j++) {
          let s = 0;
          for (let k = 0; k < y.shape[0]!; k++) s += x[i]![k]! * y[k]![j]!;
          c[i]![j] = s;
        }
      }
    }, ['void(float32[:,:], float32[:,:], float32[:,:])'], '(m,n),(n,p)->(m,p)', [a, b])));
  });

  it('left as loops: an early exit, a counter changed in the body, too many iterations, no array indexed, a length known only at run time', () => {
    const wide = { data: f32(100 * 10), shape: [10, 100] };
    const code = wgslFor(planFor('guvectorize', (x: Float32Array, y: Float32Array, out: Float32Array) => {
      const k = new Float32Array(8);
      for (let i = 0; i < 8; i++) {
        if (x[i]! < 0) break;
        k[i] = x[i]!;
      }
      for (let i = 0; i < 8; i++) {
        k[i] = k[i]! + 1;
        i += k[i]! > 4 ? 1 : 0;
      }
      let s = 0;
      for (let i = 0; i < x.length; i++) s += x[i]!;
      for (let i = 0; i < 4; i++) s = s * 0.5;
      for (let i = 0; i < y.length; i++) s += y[i]!;
      out[0] = s + k[0]!;
    }, ['void(float32[:], float32[:], float32[:])'], '(n),(m)->()', [wide, { data: f32(10 * 7), shape: [10, 7], strides: [1, 10] }]));
    snapshot('straight-left-as-loops', code);
    expect(code.match(/for \(var i/g)?.length).toBe(5);
  });
});

describe('large and strided calls', () => {
  it('arrays over maxStorageBufferBindingSize are bound in chunks', () => {
    const small = { ...LAVAPIPE_LIMITS, maxStorageBufferBindingSize: 1024 };
    snapshot('chunked', wgslFor(planFor('vectorize', (x: number, y: number) => x + y, ['float32(float32, int8)'], '(),()->()', [f32(1000), new Int8Array(1000)]), small));
  });

  it('broadcasting (stride 0) and negative strides come from params; rank-2 loops decompose the index', () => {
    const m = { data: f32(12), shape: [3, 4], strides: [-4, -1], offset: 11 };
    snapshot('broadcast', wgslFor(planFor('vectorize', (x: number, y: number) => x * y, ['float32(float32, float32)'], '(),()->()', [m, f32(4)])));
    const t = { data: f32(12), shape: [3, 4], strides: [1, 3] };
    snapshot('rank-2', wgslFor(planFor('vectorize', (x: number, y: number) => x - y, ['float32(float32, float32)'], '(),()->()', [t, f32(12).subarray(0, 4)])));
  });
});

afterAll(async () => {
  if (!gpuAvailable) return;
  const { device } = await acquireDevice();
  const failures: string[] = [];
  for (const { name, code } of generated) {
    const info = await device.createShaderModule({ code }).getCompilationInfo();
    const errors = info.messages.filter((m) => m.type === 'error');
    if (errors.length) failures.push(`${name}: ${errors.map((m) => `${m.lineNum}:${m.linePos} ${m.message}`).join('; ')}`);
  }
  shutdownDevice();
  expect(failures).toEqual([]);
});
