"""CuPy peer of bench/multigpu.ts: SAXPY and the Hermite ()->(16) table on one and on two CUDA
devices, the way a CuPy user spreads work over GPUs: each device gets a consecutive half of the
rows (`with cp.cuda.Device(k)`), launches are issued to both before waiting on either. Timed like
the ufunc side: wall time, median of REPS after a warm-up; device-resident rows are BACK_TO_BACK
launches on each device, then a synchronize of every device, divided by BACK_TO_BACK, after WARMUP_S
of the same launches; host rows
are one call from NumPy arrays into a NumPy output (upload, kernel, download per device, the
devices' transfers issued from one thread on their own streams). Prints one JSON object.

usage: cupy_multigpu.py SAXPY_N HERMITE_ROWS REPS BACK_TO_BACK [resident-only]
(resident-only: the device-resident rows alone, as bench/multigpu.ts --resident-only)
"""

import json
import statistics
import sys
import time

import numpy as np

from cupy_peer import BLOCK, HERMITE_SOURCE

HERMITE_N = 16
WARMUP_S = 1.0


def split(n, parts):
    base, extra = divmod(n, parts)
    bounds, start = [], 0
    for k in range(parts):
        rows = base + (1 if k < extra else 0)
        bounds.append((start, start + rows))
        start += rows
    return bounds


def median_wall(run, reps):
    run()
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        run()
        times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1e3


def main():
    saxpy_n, rows, reps, back_to_back = (int(a) for a in sys.argv[1:5])
    resident_only = sys.argv[5:6] == ["resident-only"]
    import cupy as cp

    count = cp.cuda.runtime.getDeviceCount()
    report = {
        "device": cp.cuda.runtime.getDeviceProperties(0)["name"].decode(),
        "devices": count,
        "saxpy_resident_ms": [],
        "hermite_resident_ms": [],
        "saxpy_host_ms": [],
        "hermite_host_ms": [],
    }
    rng = np.random.default_rng(1)
    xs = rng.standard_normal(saxpy_n, dtype=np.float32)
    ys = rng.standard_normal(saxpy_n, dtype=np.float32)
    zs = np.empty_like(xs)
    hx = rng.standard_normal(rows, dtype=np.float32)
    table = np.empty((rows, HERMITE_N), np.float32)
    a = np.float32(2)

    for devices in (1, 2):
        if devices > count:
            for key in ("saxpy_resident_ms", "hermite_resident_ms", "saxpy_host_ms", "hermite_host_ms"):
                report[key].append(None)
            continue
        saxpy_parts = split(saxpy_n, devices)
        row_parts = split(rows, devices)
        kernels, state = [], []
        for k in range(devices):
            with cp.cuda.Device(k):
                saxpy = cp.ElementwiseKernel("float32 a, float32 x, float32 y", "float32 z", "z = a * x + y", "saxpy")
                hermite = cp.RawKernel(HERMITE_SOURCE.format(n=HERMITE_N, block=BLOCK), "hermite")
                lo, hi = saxpy_parts[k]
                rlo, rhi = row_parts[k]
                state.append({
                    "x": cp.asarray(xs[lo:hi]), "y": cp.asarray(ys[lo:hi]), "z": cp.empty(hi - lo, cp.float32),
                    "hx": cp.asarray(hx[rlo:rhi]), "table": cp.empty((rhi - rlo, HERMITE_N), cp.float32),
                    "stream": cp.cuda.Stream(non_blocking=True),
                })
                kernels.append((saxpy, hermite))

        def launch_saxpy(k):
            s = state[k]
            kernels[k][0](a, s["x"], s["y"], s["z"])

        def launch_hermite(k):
            s = state[k]
            n = s["hx"].shape[0]
            kernels[k][1](((n + BLOCK - 1) // BLOCK,), (BLOCK,), (s["hx"], np.int32(1), np.int32(0), s["table"], np.int32(n)))

        def resident(launch):
            def run():
                for k in range(devices):
                    with cp.cuda.Device(k):
                        for _ in range(back_to_back):
                            launch(k)
                for k in range(devices):
                    with cp.cuda.Device(k):
                        cp.cuda.Device(k).synchronize()
            # As the ufunc side: sustained work first, so that the GPUs' clocks are up.
            warm_end = time.perf_counter() + WARMUP_S
            while time.perf_counter() < warm_end:
                run()
            return median_wall(run, reps) / back_to_back

        def from_host_saxpy():
            for k in range(devices):
                lo, hi = saxpy_parts[k]
                with cp.cuda.Device(k), state[k]["stream"]:
                    s = state[k]
                    s["x"].set(xs[lo:hi])
                    s["y"].set(ys[lo:hi])
                    launch_saxpy(k)
                    s["z"].get(out=zs[lo:hi])
            for k in range(devices):
                state[k]["stream"].synchronize()

        def from_host_hermite():
            for k in range(devices):
                lo, hi = row_parts[k]
                with cp.cuda.Device(k), state[k]["stream"]:
                    s = state[k]
                    s["hx"].set(hx[lo:hi])
                    launch_hermite(k)
                    s["table"].get(out=table[lo:hi])
            for k in range(devices):
                state[k]["stream"].synchronize()

        report["saxpy_resident_ms"].append(resident(launch_saxpy))
        report["hermite_resident_ms"].append(resident(launch_hermite))
        if resident_only:
            del state, kernels
            cp.get_default_memory_pool().free_all_blocks()
            continue
        report["saxpy_host_ms"].append(median_wall(from_host_saxpy, reps))
        report["hermite_host_ms"].append(median_wall(from_host_hermite, reps))
        if not np.allclose(zs, a * xs + ys, rtol=1e-6, atol=1e-6):
            report["check"] = f"saxpy on {devices} devices differs from NumPy"
        del state, kernels
        cp.get_default_memory_pool().free_all_blocks()
    print(json.dumps(report))


if __name__ == "__main__":
    main()
