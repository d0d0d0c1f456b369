/**
 * Seed 003: an ensemble of Lorenz-96 states, one RK4 step per member — a kernel that calls a
 * helper function and keeps small local arrays, which the seed's author could not compile for the
 * GPU with Numba (nested device functions, array creation).
 *
 *   npx tsx examples/lorenz96.ts [cpu|parallel|gpu]
 */
import { guvectorize, type NDArray, type TargetName, ready } from '../src/index.js';
import { isMain } from './util.js';

export const MEMBERS = 100_000;
export const VARIABLES = 40;
const F = 8;
const dt = 0.01;

/** dx_i/dt = (x_{i+1} − x_{i−2})·x_{i−1} − x_i + F, indices cyclic. */
function deriv(x: Float64Array, d: Float64Array): void {
  const n = x.length;
  for (let i = 0; i < n; i++) {
    d[i] = (x[(i + 1) % n]! - x[(i + n - 2) % n]!) * x[(i + n - 1) % n]! - x[i]! + F;
  }
}

export function lorenzUfunc(target: TargetName) {
  return guvectorize(['void(float32[:], float32[:])', 'void(float64[:], float64[:])'], '(n)->(n)', {
    target,
    env: { deriv, F, dt },
  })((x: Float64Array, out: Float64Array) => {
    const k1 = new Float64Array(x.length);
    const k2 = new Float64Array(x.length);
    const k3 = new Float64Array(x.length);
    const k4 = new Float64Array(x.length);
    const tmp = new Float64Array(x.length);
    deriv(x, k1);
    for (let i = 0; i < x.length; i++) tmp[i] = x[i]! + 0.5 * dt * k1[i]!;
    deriv(tmp, k2);
    for (let i = 0; i < x.length; i++) tmp[i] = x[i]! + 0.5 * dt * k2[i]!;
    deriv(tmp, k3);
    for (let i = 0; i < x.length; i++) tmp[i] = x[i]! + dt * k3[i]!;
    deriv(tmp, k4);
    for (let i = 0; i < x.length; i++) out[i] = x[i]! + (dt / 6) * (k1[i]! + 2 * k2[i]! + 2 * k3[i]! + k4[i]!);
  });
}

/** The same step written as a plain JS loop, the reference the example checks against. */
export function lorenzReference(x: Float32Array, members: number, n: number): Float32Array {
  const out = new Float32Array(x.length);
  const k = [0, 1, 2, 3].map(() => new Float64Array(n));
  const tmp = new Float64Array(n);
  const row = new Float64Array(n);
  for (let m = 0; m < members; m++) {
    for (let i = 0; i < n; i++) row[i] = x[m * n + i]!;
    deriv(row, k[0]!);
    for (let i = 0; i < n; i++) tmp[i] = row[i]! + 0.5 * dt * k[0]![i]!;
    deriv(tmp, k[1]!);
    for (let i = 0; i < n; i++) tmp[i] = row[i]! + 0.5 * dt * k[1]![i]!;
    deriv(tmp, k[2]!);
    for (let i = 0; i < n; i++) tmp[i] = row[i]! + dt * k[2]![i]!;
    deriv(tmp, k[3]!);
    for (let i = 0; i < n; i++) out[m * n + i] = row[i]! + (dt / 6) * (k[0]![i]! + 2 * k[1]![i]! + 2 * k[2]![i]! + k[3]![i]!);
  }
  return out;
}

/** An ensemble of states near the fixed point F, each member perturbed differently. */
export function ensemble(members: number, n: number): Float32Array {
  return new Float32Array(members * n).map((_, j) => F + (j % n === 0 ? 0.01 * ((j / n) % 97) : 0) + 0.1 * Math.sin(j));
}

export async function runLorenz(target: TargetName, members = MEMBERS): Promise<{ maxError: number; ms: number; result: NDArray }> {
  const step = lorenzUfunc(target);
  const x = ensemble(members, VARIABLES);
  await step({ data: x.subarray(0, 8 * VARIABLES), shape: [8, VARIABLES] }); // compile and warm up
  await ready(); // the parallel target's workers have started (they start when the ufunc is defined)
  const t0 = performance.now();
  const result = (await step({ data: x, shape: [members, VARIABLES] })) as NDArray;
  const ms = performance.now() - t0;
  const reference = lorenzReference(x, members, VARIABLES);
  let maxError = 0;
  for (let i = 0; i < reference.length; i++) maxError = Math.max(maxError, Math.abs(Number(result.data[i]) - reference[i]!));
  return { maxError, ms, result };
}

export async function main(target: TargetName = 'cpu'): Promise<void> {
  const { maxError, ms, result } = await runLorenz(target);
  const first = [...result.data.subarray(0, 3)].map((v) => Number(v).toFixed(5)).join(', ');
  console.log(`lorenz96 on ${target}: ${MEMBERS.toLocaleString('en')} members × ${VARIABLES}, one RK4 step in ${ms.toFixed(1)} ms; member 0 = [${first}, …]; max |Δ| vs plain JS = ${maxError.toExponential(2)}`);
}

if (isMain(import.meta.url)) await main((process.argv[2] as TargetName | undefined) ?? 'cpu');
