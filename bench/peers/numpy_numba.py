"""NumPy and Numba (@vectorize / @guvectorize, target 'cpu' and 'parallel') peers for the ufunc
benchmark. Prints one JSON object: the median wall-clock seconds of REPS runs after a warm-up run
for each peer, Numba's compile time separately, and a correctness check of every peer's output.

usage: numpy_numba.py WORKLOAD SIZE REPS
"""

import os
import time

import numpy as np

import workloads as w


def numba_kernels(workload, target, fastmath=False):
    """Builds the workload's Numba ufunc for `target` (for exp, with `fastmath` as given) and returns (run, run_seed) where
    `run(inputs, out)` computes into `out` and `run_seed(x, out)` is the Hermite kernel on the seed
    inputs (None for other workloads). Signatures are given, so Numba compiles eagerly here."""
    from numba import guvectorize, njit, vectorize

    if workload == "saxpy":

        @vectorize(["float32(float32, float32, float32)"], target=target)
        def saxpy(a, x, y):
            return a * x + y

        return (lambda inputs, out: saxpy(inputs["a"], inputs["x"], inputs["y"], out=out)), None

    if workload == "exp":

        @vectorize(["float32(float32)"], target=target, fastmath=fastmath)
        def exp(x):
            return np.exp(x)

        return (lambda inputs, out: exp(inputs["x"], out=out)), None

    if workload in ("hermite", "hermite-inplace"):

        def recurrence(x, out):
            n = out.shape[0]
            out[0] = 1
            out[1] = x
            for i in range(2, n):
                out[i] = x * out[i - 1] - (i - 1) * out[i - 2]
            c = 1.0
            for i in range(2, n):
                c *= i
                out[i] /= np.sqrt(c)

        recurrence = njit(recurrence)

        if workload == "hermite":
            # Numba 0.56 (Debian 12) refuses an output-only dimension: '()->(n)' fails with seed
            # 001's "undefined output symbols: n". The workaround, a length-n dummy input that
            # names n, works in every version, so the peer uses it everywhere.
            @guvectorize(["void(float32, float32[:], float32[:])"], "(),(n)->(n)", target=target)
            def hermite(x, size_n, out):
                recurrence(x, out)

            def run_rows(x, out):
                hermite(x, np.empty(out.shape[1], np.float32), out)

            return (lambda inputs, out: run_rows(inputs["x"], out)), run_rows

        # Seed 001's answer: the row is both input (x in column 1) and output.
        @guvectorize(["void(float32[:], float32[:])"], "(n)->(n)", target=target)
        def hermite_inplace(row, out):
            recurrence(row[1], out)

        def run_seed(x, out):
            rows = w.hermite_rows(x, out.shape[1])
            hermite_inplace(rows, rows)
            out[...] = rows

        return (lambda inputs, out: hermite_inplace(inputs["rows"], inputs["rows"])), run_seed

    if workload == "lorenz96":

        @njit
        def tendency(x, forcing, dxdt):
            n = x.shape[0]
            for i in range(n):
                dxdt[i] = (x[(i + 1) % n] - x[(i + n - 2) % n]) * x[(i + n - 1) % n] - x[i] + forcing

        # float64, Numba's default float type, as the blog in seed 003 used it.
        @guvectorize(["void(float64[:], float64, float64, float64[:])"], "(n),(),()->(n)", target=target)
        def rk4_step(x, forcing, dt, out):
            n = x.shape[0]
            k = np.empty(n)
            stage = np.empty(n)
            tendency(x, forcing, k)
            for i in range(n):
                out[i] = x[i] + dt / 6 * k[i]
                stage[i] = x[i] + dt / 2 * k[i]
            tendency(stage, forcing, k)
            for i in range(n):
                out[i] += dt / 3 * k[i]
                stage[i] = x[i] + dt / 2 * k[i]
            tendency(stage, forcing, k)
            for i in range(n):
                out[i] += dt / 3 * k[i]
                stage[i] = x[i] + dt * k[i]
            tendency(stage, forcing, k)
            for i in range(n):
                out[i] += dt / 6 * k[i]

        return (lambda inputs, out: rk4_step(inputs["x"], w.LORENZ_F, w.LORENZ_DT, out)), None

    if workload == "matmul4x4":

        @guvectorize(["void(float32[:,:], float32[:,:], float32[:,:])"], "(m,n),(n,p)->(m,p)", target=target)
        def matmul(a, b, c):
            for i in range(a.shape[0]):
                for j in range(b.shape[1]):
                    acc = np.float32(0)
                    for k in range(a.shape[1]):
                        acc += a[i, k] * b[k, j]
                    c[i, j] = acc

        return (lambda inputs, out: matmul(inputs["a"], inputs["b"], out)), None

    raise ValueError(workload)


def main():
    workload, size, reps = w.parse_args(__doc__)
    report = w.header(workload, size, reps)
    inputs = w.make_inputs(workload, size)
    expected = w.reference(workload, inputs)
    out = np.empty(w.output_shape(workload, size), dtype=w.output_dtype(workload))

    def measure(peer, run, run_seed=None, **extra):
        runs = w.time_runs(lambda: run(inputs, out), reps)
        verdict = w.check(w.output_of(workload, inputs, out), expected)
        if run_seed is not None and verdict == "ok":
            verdict = w.check_hermite_seed(run_seed)
        report["results"].append(w.result(peer, runs, verdict, dtype=str(out.dtype), **extra))

    numpy_seed = w.hermite_numpy if workload in ("hermite", "hermite-inplace") else None
    measure("numpy", w.numpy_peer(workload), numpy_seed)

    # Numba picks OpenMP where it finds it; its parallel ufunc loop measured 9x slower than the
    # 'workqueue' layer's on SAXPY (16,777,216 float32, 2 cores: 183 ms vs 21 ms; Debian's Numba
    # 0.56), slower than target='cpu'. The peer is Numba at its best, so workqueue unless the
    # caller chose a layer. Read when Numba first runs in parallel, so set before that.
    os.environ.setdefault("NUMBA_THREADING_LAYER", "workqueue")
    try:
        import numba
    except ImportError as error:
        for target in ("cpu", "parallel"):
            report["skipped"].append({"peer": f"numba-{target}", "reason": f"numba is not importable: {error}"})
        w.emit(report)
        return

    report["numba"] = numba.__version__
    report["threads"] = numba.config.NUMBA_NUM_THREADS
    for target in ("cpu", "parallel"):
        start = time.perf_counter()
        run, run_seed = numba_kernels(workload, target)
        compile_s = time.perf_counter() - start
        measure(f"numba-{target}", run, run_seed, compile_s=compile_s)
    if workload == "exp":
        # The peers of the ufunc's `fastmath: true` (issue 10): Numba with fastmath=True.
        for target in ("cpu", "parallel"):
            start = time.perf_counter()
            run, run_seed = numba_kernels(workload, target, fastmath=True)
            compile_s = time.perf_counter() - start
            measure(f"numba-{target}-fastmath", run, run_seed, compile_s=compile_s)
    report["threading_layer"] = numba.threading_layer()
    w.emit(report)


if __name__ == "__main__":
    main()
