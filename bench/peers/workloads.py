"""The benchmark's workloads as NumPy sees them: inputs, a float64 reference, result checks and
timing. Shared by the NumPy/Numba peer (numpy_numba.py) and the CuPy peer (cupy_peer.py); the
TypeScript side defines the same workloads in bench/workloads.ts.

Every peer script is run as `SCRIPT WORKLOAD SIZE REPS` and prints one JSON object on stdout.
SIZE counts the workload's items: elements (saxpy, exp), rows of 16 (hermite, hermite-inplace),
ensemble members of 40 (lorenz96) or 4x4 matrices (matmul4x4).
"""

import json
import math
import platform
import statistics
import sys
import time

import numpy as np

WORKLOADS = ("saxpy", "exp", "hermite", "hermite-inplace", "lorenz96", "matmul4x4")

HERMITE_N = 16
LORENZ_N = 40
LORENZ_F = 8.0
LORENZ_DT = 0.01
SAXPY_A = 2.0

# SEEDS.md: the recurrence for x = 0..4 with N = 4 columns, as printed in seed 001.
HERMITE_SEED_TABLE = np.array(
    [
        [1.0, 0.0, -0.70710677, -0.0],
        [1.0, 1.0, 0.0, -0.8164966],
        [1.0, 2.0, 2.1213202, 0.8164966],
        [1.0, 3.0, 5.656854, 7.3484693],
        [1.0, 4.0, 10.606602, 21.22891],
    ],
    dtype=np.float32,
)


def parse_args(script_doc):
    if len(sys.argv) != 4 or sys.argv[1] not in WORKLOADS:
        sys.exit(f"{script_doc.strip()}\n\nusage: {sys.argv[0]} {{{','.join(WORKLOADS)}}} SIZE REPS")
    return sys.argv[1], int(sys.argv[2]), int(sys.argv[3])


def make_inputs(workload, size):
    """The workload's input arrays, the same distributions as bench/workloads.ts (not the same
    values: each language draws its own)."""
    rng = np.random.default_rng(12345)

    def uniform(low, high, shape, dtype=np.float32):
        return rng.uniform(low, high, shape).astype(dtype)

    if workload == "saxpy":
        return {"a": np.float32(SAXPY_A), "x": uniform(-1, 1, size), "y": uniform(-1, 1, size)}
    if workload == "exp":
        return {"x": uniform(-10, 10, size)}
    if workload == "hermite":
        return {"x": uniform(-2, 2, size)}
    if workload == "hermite-inplace":
        return {"rows": hermite_rows(uniform(-2, 2, size), HERMITE_N)}
    if workload == "lorenz96":
        return {"x": LORENZ_F + uniform(-1, 1, (size, LORENZ_N), np.float64)}
    if workload == "matmul4x4":
        return {"a": uniform(-1, 1, (size, 4, 4)), "b": uniform(-1, 1, (size, 4, 4))}
    raise ValueError(workload)


def hermite_rows(x, n):
    """The in-place layout of seed 001: each row starts as ones with x in column 1."""
    rows = np.ones((x.shape[0], n), dtype=np.float32)
    rows[:, 1] = x
    return rows


def output_shape(workload, size):
    return {
        "saxpy": (size,),
        "exp": (size,),
        "hermite": (size, HERMITE_N),
        "hermite-inplace": (size, HERMITE_N),
        "lorenz96": (size, LORENZ_N),
        "matmul4x4": (size, 4, 4),
    }[workload]


def output_dtype(workload):
    return np.float64 if workload == "lorenz96" else np.float32


def reference(workload, inputs):
    """The expected output, computed in float64 with plain NumPy."""
    if workload == "saxpy":
        return np.float64(inputs["a"]) * inputs["x"] + inputs["y"]
    if workload == "exp":
        return np.exp(inputs["x"].astype(np.float64))
    if workload == "hermite":
        return hermite_numpy(inputs["x"].astype(np.float64), np.empty((inputs["x"].shape[0], HERMITE_N)))
    if workload == "hermite-inplace":
        return hermite_numpy(inputs["rows"][:, 1].astype(np.float64), np.empty(inputs["rows"].shape))
    if workload == "lorenz96":
        out = np.empty_like(inputs["x"], dtype=np.float64)
        return lorenz96_rk4_numpy(inputs["x"].astype(np.float64), LORENZ_F, LORENZ_DT, out)
    if workload == "matmul4x4":
        return np.matmul(inputs["a"].astype(np.float64), inputs["b"].astype(np.float64))
    raise ValueError(workload)


# Tolerances against the float64 reference: float32 results carry rounding from each operation
# (the Hermite recurrence compounds it over 16 steps); float64 peers must agree almost exactly.
def tolerance(dtype):
    return {"rtol": 1e-4, "atol": 1e-4} if dtype == np.float32 else {"rtol": 1e-12, "atol": 1e-12}


def check(got, expected):
    """'ok' when `got` matches `expected` within the tolerance of got's dtype, else what is wrong."""
    got = np.asarray(got)
    if got.shape != expected.shape:
        return f"shape {got.shape}, expected {expected.shape}"
    if np.allclose(got, expected, **tolerance(got.dtype)):
        return "ok"
    worst = np.nanmax(np.abs(got.astype(np.float64) - expected))
    return f"max abs error {worst:.3g}"


def check_hermite_seed(run_rows):
    """Runs a peer's Hermite kernel on the seed inputs x = 0..4 with N = 4 columns and compares
    with the table printed in seed 001. `run_rows(x, out)` fills `out` (5 x 4)."""
    out = np.zeros((5, 4), dtype=np.float32)
    run_rows(np.arange(5, dtype=np.float32), out)
    if np.allclose(out, HERMITE_SEED_TABLE, rtol=1e-6, atol=1e-6):
        return "ok"
    return f"seed table mismatch: {out.tolist()}"


def hermite_numpy(x, out):
    """Seed 001's `foo`, column by column, writing into `out` (rows x n)."""
    n = out.shape[1]
    out[:, 0] = 1
    out[:, 1] = x
    for i in range(2, n):
        np.multiply(x, out[:, i - 1], out=out[:, i])
        out[:, i] -= (i - 1) * out[:, i - 2]
    c = 1.0
    for i in range(2, n):
        c *= i
        out[:, i] /= math.sqrt(c)
    return out


def lorenz96_tendency_numpy(x, forcing):
    # dx_i/dt = (x_{i+1} - x_{i-2}) x_{i-1} - x_i + F, indices mod n, for every member at once
    return (np.roll(x, -1, axis=1) - np.roll(x, 2, axis=1)) * np.roll(x, 1, axis=1) - x + forcing


def lorenz96_rk4_numpy(x, forcing, dt, out):
    """One classic RK4 step, accumulating into `out` in the same order as every other peer."""
    k = lorenz96_tendency_numpy(x, forcing)
    out[...] = x + dt / 6 * k
    k = lorenz96_tendency_numpy(x + dt / 2 * k, forcing)
    out += dt / 3 * k
    k = lorenz96_tendency_numpy(x + dt / 2 * k, forcing)
    out += dt / 3 * k
    k = lorenz96_tendency_numpy(x + dt * k, forcing)
    out += dt / 6 * k
    return out


def numpy_peer(workload):
    """NumPy's idiomatic version of the workload: `run(inputs, out)`, writing into `out`."""
    if workload == "saxpy":

        def saxpy(inputs, out):
            np.multiply(inputs["x"], inputs["a"], out=out)
            np.add(out, inputs["y"], out=out)

        return saxpy
    if workload == "exp":
        return lambda inputs, out: np.exp(inputs["x"], out=out)
    if workload == "hermite":
        return lambda inputs, out: hermite_numpy(inputs["x"], out)
    if workload == "hermite-inplace":
        # x is column 1 of the rows themselves, which the recurrence writes back unchanged
        return lambda inputs, out: hermite_numpy(inputs["rows"][:, 1], inputs["rows"])
    if workload == "lorenz96":
        return lambda inputs, out: lorenz96_rk4_numpy(inputs["x"], LORENZ_F, LORENZ_DT, out)
    if workload == "matmul4x4":
        return lambda inputs, out: np.matmul(inputs["a"], inputs["b"], out=out)
    raise ValueError(workload)


def output_of(workload, inputs, out):
    """Where a run leaves its result: in-place Hermite writes back into its input rows."""
    return inputs["rows"] if workload == "hermite-inplace" else out


def time_runs(run, reps):
    """Wall-clock seconds of `reps` calls of `run`, after one warm-up call."""
    run()
    runs = []
    for _ in range(reps):
        start = time.perf_counter()
        run()
        runs.append(time.perf_counter() - start)
    return runs


def result(peer, runs, check_text, **extra):
    return {"peer": peer, "median_s": statistics.median(runs), "runs_s": runs, "check": check_text, **extra}


def header(workload, size, reps):
    return {
        "workload": workload,
        "size": size,
        "reps": reps,
        "python": platform.python_version(),
        "numpy": np.__version__,
        "results": [],
        "skipped": [],
    }


def emit(report):
    json.dump(report, sys.stdout)
    sys.stdout.write("\n")
