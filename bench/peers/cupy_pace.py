"""CuPy's side of bench/pace.ts (issue 24's cases), the same cases under the same names.
usage: cupy_pace.py {full,quick} [--host-only] [--host-log2=K] (as pace.ts's flags). Prints one JSON object: case name -> median ms (and version, device).

Small calls run first, as in pace.ts, so that their first 1,000 are the process's first CuPy calls
(the kernel's compilation, or its load from CuPy's cache, included). Device cases end with
stream.synchronize(); host cases are what a CuPy user writes: asarray, the kernel, get().
"""

import json
import statistics
import sys
import time

import numpy as np


def main():
    quick = sys.argv[1] == "quick"
    reps = 5 if quick else 15
    warmup_s = 0 if quick else 1.0
    sum_n = 1 << 20 if quick else 1 << 24
    rows_n = 1024 if quick else 4096
    host_only = "--host-only" in sys.argv
    log2 = [a.split("=")[1] for a in sys.argv if a.startswith("--host-log2=")]
    host_n = 1 << int(log2[0]) if log2 else 1 << 20 if quick else 1 << 24
    copy_bytes = (16 if quick else 256) << 20
    import cupy as cp

    out = {"version": cp.__version__, "device": cp.cuda.runtime.getDeviceProperties(0)["name"].decode()}
    stream = cp.cuda.get_current_stream()
    a = np.float32(2)
    saxpy = cp.ElementwiseKernel("float32 a, float32 x, float32 y", "float32 z", "z = a * x + y", "pace_saxpy")
    data = lambda n: (np.arange(n) % 1000 * 0.001).astype(np.float32)  # noqa: E731

    def timed(name, fn, per=1):
        def once():
            t = time.perf_counter()
            fn()
            stream.synchronize()
            return (time.perf_counter() - t) / per * 1e3

        once()
        end = time.perf_counter() + warmup_s
        while time.perf_counter() < end:
            once()
        out[name] = statistics.median([once() for _ in range(reps)])

    if not host_only:
        device_cases(cp, out, timed, saxpy, data, stream, sum_n, rows_n)

    hx, hy, hz = data(host_n), data(host_n), np.empty(host_n, np.float32)
    timed(f"SAXPY {host_n} host arrays, new result", lambda: saxpy(a, cp.asarray(hx), cp.asarray(hy)).get())
    timed(f"SAXPY {host_n} host arrays, into `out`", lambda: saxpy(a, cp.asarray(hx), cp.asarray(hy)).get(out=hz))
    every3 = data(3 * host_n)[::3]
    timed(f"SAXPY {host_n} host arrays, x every 3rd element, into `out`", lambda: saxpy(a, cp.asarray(every3), cp.asarray(hy)).get(out=hz))
    # get(out=) takes a contiguous array only: a strided view is assigned what get() returns.
    out3 = np.empty(3 * host_n, np.float32)[::3]

    def into_every3():
        out3[...] = saxpy(a, cp.asarray(hx), cp.asarray(hy)).get()

    timed(f"SAXPY {host_n} host arrays, into every 3rd element of `out`", into_every3)
    timed(f"upload of 2 × {host_n} float32 in a call", lambda: (cp.asarray(hx), cp.asarray(hy)))
    dx, dy, dz = cp.asarray(hx), cp.asarray(hy), cp.empty(host_n, cp.float32)
    timed(f"SAXPY {host_n} device inputs, device out", lambda: saxpy(a, dx, dy, dz))
    timed(f"SAXPY {host_n} host inputs, device out", lambda: saxpy(a, cp.asarray(hx), cp.asarray(hy), dz))
    del dx, dy, dz
    big = cp.zeros(copy_bytes // 4, cp.float32)
    timed(f"toHost() {copy_bytes >> 20} MiB into a new array", lambda: cp.asnumpy(big))
    print(json.dumps(out))


def device_cases(cp, out, timed, saxpy, data, stream, sum_n, rows_n):
    """The cases on device arrays (all but the host-array ones), small calls first."""
    sx, sy, sz = cp.asarray(data(4096)), cp.asarray(data(4096)), cp.empty(4096, cp.float32)
    a = np.float32(2)
    t = time.perf_counter()
    for _ in range(1000):
        saxpy(a, sx, sy, sz)
    stream.synchronize()
    out["small SAXPY 4,096 awaited, first 1,000 calls"] = (time.perf_counter() - t) / 1000 * 1e3

    def small():
        for _ in range(1000):
            saxpy(a, sx, sy, sz)

    timed("small SAXPY 4,096 awaited, steady", small, 1000)
    timed("synchronize() after one small call", lambda: saxpy(a, sx, sy, sz))
    timed("raw WebGPU: empty submit + onSubmittedWorkDone", lambda: None)  # CuPy: an empty stream.synchronize()
    x3 = cp.asarray(data(1 << 16))
    t1, t2, t3 = (cp.empty(1 << 16, cp.float32) for _ in range(3))

    def three():
        for _ in range(100):
            saxpy(a, x3, x3, t1)
            cp.exp(t1, out=t2)
            cp.multiply(t2, x3, out=t3)

    timed("three calls 2^16 awaited, per chain", three, 100)
    out["three calls 2^16 not awaited, per chain"] = out["three calls 2^16 awaited, per chain"]

    flat = cp.asarray(data(sum_n))
    mat = cp.asarray(data(rows_n * rows_n)).reshape(rows_n, rows_n)
    res = cp.empty(sum_n, cp.float32)
    timed(f"element-wise pass (neg) {sum_n}", lambda: cp.negative(flat, out=res))
    timed(f"sum of {sum_n} float32", lambda: flat.sum())
    timed(f"row sums {rows_n}²", lambda: mat.sum(axis=1))
    timed(f"column sums {rows_n}²", lambda: mat.sum(axis=0))
    host_flat = data(sum_n)
    timed(f"sum of {sum_n} float32, host array", lambda: float(cp.asarray(host_flat).sum()))
    timed(f"cumsum of {sum_n} float32", lambda: flat.cumsum())
    del flat, mat, res


if __name__ == "__main__":
    main()
