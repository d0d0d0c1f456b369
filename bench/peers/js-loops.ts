/**
 * The hand-written peer: each workload's kernel written out by hand as one loop over flat typed
 * arrays, the way a JS programmer would without this library. Same algorithm and same order of
 * operations as the kernels in bench/workloads.ts, no algorithmic shortcuts (no hoisted Hermite
 * normalisation, no unrolled matrices), so that the cpu target's ratio to these loops measures
 * what the library costs, not a different algorithm.
 *
 * One difference is inherent: float32 loops here compute in float64 and round once per store,
 * where the cpu target rounds each operation to float32 (`Math.fround`), as Numba does.
 */

export function saxpyLoop(a: number, x: Float32Array, y: Float32Array, z: Float32Array): void {
  for (let i = 0; i < z.length; i++) z[i] = a * x[i] + y[i];
}

export function expLoop(x: Float32Array, y: Float32Array): void {
  for (let i = 0; i < y.length; i++) y[i] = Math.exp(x[i]);
}

/** Row r of `table` (rows × n, row-major) gets the normalised recurrence at x[r]. */
export function hermiteLoop(x: Float32Array, table: Float32Array, n: number): void {
  for (let r = 0; r < x.length; r++) hermiteRow(x[r], table, r * n, n);
}

/** In place, as in seed 001's answer: row r holds x in column 1 and is overwritten by the recurrence. */
export function hermiteInPlaceLoop(rows: Float32Array, n: number): void {
  for (let start = 0; start < rows.length; start += n) hermiteRow(rows[start + 1], rows, start, n);
}

function hermiteRow(x: number, out: Float32Array, start: number, n: number): void {
  out[start] = 1;
  out[start + 1] = x;
  for (let i = 2; i < n; i++) out[start + i] = x * out[start + i - 1] - (i - 1) * out[start + i - 2];
  let c = 1;
  for (let i = 2; i < n; i++) {
    c *= i;
    out[start + i] /= Math.sqrt(c);
  }
}

/** One RK4 step of Lorenz-96 for each member (a row of n in `x`), into the same row of `out`. */
export function lorenz96Loop(x: Float64Array, forcing: number, dt: number, out: Float64Array, n: number): void {
  const k = new Float64Array(n);
  const stage = new Float64Array(n);
  for (let start = 0; start < x.length; start += n) {
    lorenz96Tendency(x, start, forcing, k, n);
    for (let i = 0; i < n; i++) {
      out[start + i] = x[start + i] + (dt / 6) * k[i];
      stage[i] = x[start + i] + (dt / 2) * k[i];
    }
    lorenz96Tendency(stage, 0, forcing, k, n);
    for (let i = 0; i < n; i++) {
      out[start + i] += (dt / 3) * k[i];
      stage[i] = x[start + i] + (dt / 2) * k[i];
    }
    lorenz96Tendency(stage, 0, forcing, k, n);
    for (let i = 0; i < n; i++) {
      out[start + i] += (dt / 3) * k[i];
      stage[i] = x[start + i] + dt * k[i];
    }
    lorenz96Tendency(stage, 0, forcing, k, n);
    for (let i = 0; i < n; i++) out[start + i] += (dt / 6) * k[i];
  }
}

/** dx_i/dt = (x_{i+1} − x_{i−2}) x_{i−1} − x_i + F, indices mod n, for the member at `start`. */
function lorenz96Tendency(x: Float64Array, start: number, forcing: number, dxdt: Float64Array, n: number): void {
  for (let i = 0; i < n; i++) {
    dxdt[i] =
      (x[start + ((i + 1) % n)] - x[start + ((i + n - 2) % n)]) * x[start + ((i + n - 1) % n)] -
      x[start + i] +
      forcing;
  }
}

/** c[m] = a[m] · b[m] for a batch of m × m matrices stored row-major one after another. */
export function matmulLoop(a: Float32Array, b: Float32Array, c: Float32Array, m: number): void {
  const size = m * m;
  for (let start = 0; start < c.length; start += size) {
    for (let i = 0; i < m; i++) {
      for (let j = 0; j < m; j++) {
        let sum = 0;
        for (let k = 0; k < m; k++) sum += a[start + i * m + k] * b[start + k * m + j];
        c[start + i * m + j] = sum;
      }
    }
  }
}
