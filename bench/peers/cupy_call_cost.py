"""CuPy peer of bench/call-cost.ts: per-call wall time of SAXPY on 1 and 4,096 float32 elements,
on device arrays into `out` (each call followed by nothing: CuPy calls do not wait; a chain ends
with stream.synchronize()), and on host arrays (asarray, kernel, get into a host out). First chain
and median of REPS chains after two warm-up chains, microseconds per call. Prints one line per case.

usage: cupy_call_cost.py CALLS REPS
"""

import statistics
import sys
import time

import numpy as np


def main():
    calls, reps = int(sys.argv[1]), int(sys.argv[2])
    try:
        import cupy as cp
    except Exception as error:  # no cupy, no driver or no device
        print(f"CuPy unavailable: {error}")
        return
    saxpy = cp.ElementwiseKernel("float32 a, float32 x, float32 y", "float32 z", "z = a * x + y", "saxpy_call_cost")
    stream = cp.cuda.get_current_stream()
    a = np.float32(2)
    lines = []
    for n in (4096, 1):
        x = (np.arange(n, dtype=np.float32) * 3 % 17) / 8
        y = (np.arange(n, dtype=np.float32) * 5 % 17) / 8
        dx, dy, dz = cp.asarray(x), cp.asarray(y), cp.empty(n, cp.float32)

        def device_chain():
            for _ in range(calls):
                saxpy(a, dx, dy, dz)
            stream.synchronize()

        host_out = np.empty(n, np.float32)

        def host_chain():
            for _ in range(calls):
                saxpy(a, cp.asarray(x), cp.asarray(y), dz)
                dz.get(out=host_out)

        for name, chain in ((f"device-{n}", device_chain), (f"host-{n}", host_chain)):
            start = time.perf_counter()
            chain()
            first = (time.perf_counter() - start) / calls * 1e6
            chain()
            chain()
            walls = []
            for _ in range(reps):
                start = time.perf_counter()
                chain()
                walls.append((time.perf_counter() - start) / calls * 1e6)
            lines.append(f"{name}: first chain {first:.1f} µs/call, steady {statistics.median(walls):.1f} µs/call")
    print(f"CuPy {cp.__version__} on {cp.cuda.runtime.getDeviceProperties(0)['name'].decode()}: " + "; ".join(lines))


if __name__ == "__main__":
    main()
