/**
 * The benchmark's workloads, each as a ufunc kernel, a hand-written loop and a recipe for its
 * data. bench/peers/workloads.py defines the same workloads for the Python peers: same sizes,
 * same distributions, same arithmetic.
 */
import { guvectorize, type Ufunc, vectorize } from '../src/index.js';
import { expLoop, hermiteInPlaceLoop, hermiteLoop, lorenz96Loop, matmulLoop, saxpyLoop } from './peers/js-loops.js';

export type Target = 'cpu' | 'parallel' | 'gpu';
export type FloatType = 'float32' | 'float64';
export type FloatArray = Float32Array | Float64Array;

/** An array argument: flat row-major data and its shape. */
export interface HostArray {
  readonly data: FloatArray;
  readonly shape: readonly number[];
}

/** One problem instance: a call's inputs (kernel parameter order) and its preallocated output. */
export interface Problem {
  readonly size: number;
  readonly dtype: FloatType;
  readonly inputs: readonly (number | HostArray)[];
  /** For an in-place workload, the same object as an input. */
  readonly out: HostArray;
}

/** Allocates a zeroed array, e.g. on a SharedArrayBuffer so the parallel target need not copy it. */
export type Allocate = (length: number, dtype: FloatType) => FloatArray;

/** Ordinary (not shared) memory. */
export const allocateLocal: Allocate = (length, dtype) => (dtype === 'float64' ? new Float64Array(length) : new Float32Array(length));

export type WorkloadName = 'saxpy' | 'exp' | 'hermite' | 'hermite-inplace' | 'lorenz96' | 'matmul4x4';

export interface Workload {
  readonly name: WorkloadName;
  readonly title: string;
  /** The signature and layout, as the report shows them. */
  readonly declaration: string;
  /** What size counts, in the plural, e.g. 'rows of 16'. */
  readonly items: string;
  readonly fullSize: number;
  /** Output values per item: elements/s counts output values. */
  readonly valuesPerItem: number;
  /** Floats read and written per item, each declared input and output counted once (scalars not). */
  readonly floatsPerItem: number;
  /** The float type on `target` ('js' for the hand-written loop and the CPU peers). */
  dtypeOn(target: Target | 'js'): FloatType;
  makeUfunc(target: Target, dtype: FloatType): Ufunc;
  makeProblem(size: number, dtype: FloatType, allocate: Allocate): Problem;
  runLoop(problem: Problem): void;
}

const HERMITE_N = 16;
const LORENZ_N = 40;
const LORENZ_F = 8;
const LORENZ_DT = 0.01;
const SAXPY_A = 2;

/** A writable array as kernels and helpers see it (a core slice or a local array). */
interface Vector {
  [index: number]: number;
  readonly length: number;
}

/** A 2-D core slice, indexed `m[i][j]`. */
interface Matrix {
  [row: number]: Vector;
  readonly shape: readonly number[];
}

/** Mulberry32: a small seeded generator, so every run and every target gets the same data. */
function uniformFill(array: FloatArray, low: number, high: number, seed: number): FloatArray {
  let state = seed >>> 0;
  for (let i = 0; i < array.length; i++) {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    array[i] = low + ((((t ^ (t >>> 14)) >>> 0) / 4294967296) * (high - low));
  }
  return array;
}

const float32Only = (): FloatType => 'float32';
const vectorOf = (data: FloatArray): HostArray => ({ data, shape: [data.length] });
const dataOf = (argument: number | HostArray | undefined): FloatArray => (argument as HostArray).data;

// Kernel helpers, passed to the library in `env`. Their parameters are typed for this file only;
// the library reads the source and types them from each call.

/**
 * Seed 001's normalised recurrence: out[i] = x·out[i−1] − (i−1)·out[i−2], then out[i] /= √(i!).
 * `c` is a double on the cpu and an f32 on the gpu, as in the CuPy peer (bench/gpu.ts uses it too).
 */
export function hermiteRow(x: number, out: Vector): void {
  out[0] = 1;
  out[1] = x;
  for (let i = 2; i < out.length; i++) out[i] = x * out[i - 1] - (i - 1) * out[i - 2];
  let c = 1.0;
  for (let i = 2; i < out.length; i++) {
    c *= i;
    out[i] /= Math.sqrt(c);
  }
}

/** dx_i/dt = (x_{i+1} − x_{i−2}) x_{i−1} − x_i + F, indices mod n. */
export function lorenz96Tendency(x: Vector, forcing: number, dxdt: Vector): void {
  const n = x.length;
  for (let i = 0; i < n; i++) {
    dxdt[i] = (x[(i + 1) % n] - x[(i + n - 2) % n]) * x[(i + n - 1) % n] - x[i] + forcing;
  }
}

/** One classic RK4 step, accumulated into `out` stage by stage so two scratch rows suffice. */
export function rk4Step(x: Vector, forcing: number, dt: number, k: Vector, stage: Vector, out: Vector): void {
  const n = x.length;
  lorenz96Tendency(x, forcing, k);
  for (let i = 0; i < n; i++) {
    out[i] = x[i] + (dt / 6) * k[i];
    stage[i] = x[i] + (dt / 2) * k[i];
  }
  lorenz96Tendency(stage, forcing, k);
  for (let i = 0; i < n; i++) {
    out[i] += (dt / 3) * k[i];
    stage[i] = x[i] + (dt / 2) * k[i];
  }
  lorenz96Tendency(stage, forcing, k);
  for (let i = 0; i < n; i++) {
    out[i] += (dt / 3) * k[i];
    stage[i] = x[i] + dt * k[i];
  }
  lorenz96Tendency(stage, forcing, k);
  for (let i = 0; i < n; i++) out[i] += (dt / 6) * k[i];
}

// The scratch rows' type must be spelled in the kernel (WGSL has no f64), hence two kernels.
const lorenz96Float64 = (x: Vector, forcing: number, dt: number, out: Vector): void => {
  const k = new Float64Array(x.length);
  const stage = new Float64Array(x.length);
  rk4Step(x, forcing, dt, k, stage, out);
};
export const lorenz96Float32 = (x: Vector, forcing: number, dt: number, out: Vector): void => {
  const k = new Float32Array(x.length);
  const stage = new Float32Array(x.length);
  rk4Step(x, forcing, dt, k, stage, out);
};

const saxpy: Workload = {
  name: 'saxpy',
  title: 'SAXPY z = a·x + y',
  declaration: "vectorize('float32(float32, float32, float32)')",
  items: 'elements',
  fullSize: 16_777_216,
  valuesPerItem: 1,
  floatsPerItem: 3,
  dtypeOn: float32Only,
  makeUfunc: (target) => vectorize(['float32(float32, float32, float32)'], { target })((a: number, x: number, y: number) => a * x + y),
  makeProblem(size, dtype, allocate) {
    const x = uniformFill(allocate(size, dtype), -1, 1, 1);
    const y = uniformFill(allocate(size, dtype), -1, 1, 2);
    return { size, dtype, inputs: [SAXPY_A, vectorOf(x), vectorOf(y)], out: vectorOf(allocate(size, dtype)) };
  },
  runLoop: ({ inputs, out }) => saxpyLoop(SAXPY_A, dataOf(inputs[1]) as Float32Array, dataOf(inputs[2]) as Float32Array, out.data as Float32Array),
};

const exp: Workload = {
  name: 'exp',
  title: 'exp y = eˣ',
  declaration: "vectorize('float32(float32)')",
  items: 'elements',
  fullSize: 10_000_000,
  valuesPerItem: 1,
  floatsPerItem: 2,
  dtypeOn: float32Only,
  makeUfunc: (target) => vectorize(['float32(float32)'], { target })((x: number) => Math.exp(x)),
  makeProblem(size, dtype, allocate) {
    const x = uniformFill(allocate(size, dtype), -10, 10, 3);
    return { size, dtype, inputs: [vectorOf(x)], out: vectorOf(allocate(size, dtype)) };
  },
  runLoop: ({ inputs, out }) => expLoop(dataOf(inputs[0]) as Float32Array, out.data as Float32Array),
};

const hermite: Workload = {
  name: 'hermite',
  title: 'Hermite recurrence ()->(n), n = 16',
  declaration: "guvectorize('void(float32, float32[:])', '()->(n)')",
  items: 'rows of 16',
  fullSize: 4_194_304,
  valuesPerItem: HERMITE_N,
  floatsPerItem: 1 + HERMITE_N,
  dtypeOn: float32Only,
  makeUfunc: (target) =>
    guvectorize(['void(float32, float32[:])'], '()->(n)', { target, env: { hermiteRow } })((x: number, out: Vector) => {
      hermiteRow(x, out);
    }),
  makeProblem(size, dtype, allocate) {
    const x = uniformFill(allocate(size, dtype), -2, 2, 4);
    return { size, dtype, inputs: [vectorOf(x)], out: { data: allocate(size * HERMITE_N, dtype), shape: [size, HERMITE_N] } };
  },
  runLoop: ({ inputs, out }) => hermiteLoop(dataOf(inputs[0]) as Float32Array, out.data as Float32Array, HERMITE_N),
};

const hermiteInPlace: Workload = {
  name: 'hermite-inplace',
  title: 'Hermite recurrence in place (n)->(n), n = 16',
  declaration: "guvectorize('void(float32[:], float32[:])', '(n)->(n)'), out = input",
  items: 'rows of 16',
  fullSize: 4_194_304,
  valuesPerItem: HERMITE_N,
  floatsPerItem: 2 * HERMITE_N,
  dtypeOn: float32Only,
  makeUfunc: (target) =>
    guvectorize(['void(float32[:], float32[:])'], '(n)->(n)', { target, env: { hermiteRow } })((row: Vector, out: Vector) => {
      hermiteRow(row[1], out);
    }),
  makeProblem(size, dtype, allocate) {
    // Seed 001's in-place layout: each row starts as ones with x in column 1.
    const x = uniformFill(new Float32Array(size), -2, 2, 4);
    const rows = allocate(size * HERMITE_N, dtype).fill(1);
    for (let r = 0; r < size; r++) rows[r * HERMITE_N + 1] = x[r];
    const table: HostArray = { data: rows, shape: [size, HERMITE_N] };
    return { size, dtype, inputs: [table], out: table };
  },
  runLoop: ({ out }) => hermiteInPlaceLoop(out.data as Float32Array, HERMITE_N),
};

const lorenz96: Workload = {
  name: 'lorenz96',
  title: 'Lorenz-96 RK4 step, 40 variables, F = 8, dt = 0.01',
  declaration: "guvectorize('void(float64[:], float64, float64, float64[:])', '(n),(),()->(n)')",
  items: 'members of 40',
  fullSize: 100_000,
  valuesPerItem: LORENZ_N,
  floatsPerItem: 2 * LORENZ_N,
  // float64 is Numba's default and what seed 003's model used; the gpu target has only float32.
  dtypeOn: (target) => (target === 'gpu' ? 'float32' : 'float64'),
  makeUfunc: (target, dtype) =>
    guvectorize([`void(${dtype}[:], ${dtype}, ${dtype}, ${dtype}[:])`], '(n),(),()->(n)', {
      target,
      env: { rk4Step, lorenz96Tendency },
    })(dtype === 'float64' ? lorenz96Float64 : lorenz96Float32),
  makeProblem(size, dtype, allocate) {
    const x = uniformFill(allocate(size * LORENZ_N, dtype), LORENZ_F - 1, LORENZ_F + 1, 5);
    return {
      size,
      dtype,
      inputs: [{ data: x, shape: [size, LORENZ_N] }, LORENZ_F, LORENZ_DT],
      out: { data: allocate(size * LORENZ_N, dtype), shape: [size, LORENZ_N] },
    };
  },
  runLoop: ({ inputs, out }) => lorenz96Loop(dataOf(inputs[0]) as Float64Array, LORENZ_F, LORENZ_DT, out.data as Float64Array, LORENZ_N),
};

const matmul4x4: Workload = {
  name: 'matmul4x4',
  title: 'batched 4×4 matmul (m,n),(n,p)->(m,p)',
  declaration: "guvectorize('void(float32[:,:], float32[:,:], float32[:,:])', '(m,n),(n,p)->(m,p)')",
  items: '4×4 matrices',
  fullSize: 1_000_000,
  valuesPerItem: 16,
  floatsPerItem: 3 * 16,
  dtypeOn: float32Only,
  makeUfunc: (target) =>
    guvectorize(['void(float32[:,:], float32[:,:], float32[:,:])'], '(m,n),(n,p)->(m,p)', { target })(
      (a: Matrix, b: Matrix, c: Matrix) => {
        for (let i = 0; i < a.shape[0]; i++) {
          for (let j = 0; j < b.shape[1]; j++) {
            let sum = 0;
            for (let k = 0; k < a.shape[1]; k++) sum += a[i][k] * b[k][j];
            c[i][j] = sum;
          }
        }
      },
    ),
  makeProblem(size, dtype, allocate) {
    const shape = [size, 4, 4];
    const a = uniformFill(allocate(size * 16, dtype), -1, 1, 6);
    const b = uniformFill(allocate(size * 16, dtype), -1, 1, 7);
    return { size, dtype, inputs: [{ data: a, shape }, { data: b, shape }], out: { data: allocate(size * 16, dtype), shape } };
  },
  runLoop: ({ inputs, out }) => matmulLoop(dataOf(inputs[0]) as Float32Array, dataOf(inputs[1]) as Float32Array, out.data as Float32Array, 4),
};

export const WORKLOADS: readonly Workload[] = [saxpy, exp, hermite, hermiteInPlace, lorenz96, matmul4x4];

export function workloadNamed(name: WorkloadName): Workload {
  return WORKLOADS.find((w) => w.name === name)!;
}

/** Bytes a call of `size` items reads and writes. */
export function bytesMoved(workload: Workload, size: number, dtype: FloatType): number {
  return size * workload.floatsPerItem * (dtype === 'float64' ? 8 : 4);
}

/** The arguments of a call: 1-D arrays as bare typed arrays, others as `{ data, shape }`. */
export function callArguments(problem: Problem): unknown[] {
  const asArgument = (a: number | HostArray): unknown => (typeof a === 'number' ? a : a.shape.length === 1 ? a.data : a);
  return [...problem.inputs.map(asArgument), { out: asArgument(problem.out) }];
}
