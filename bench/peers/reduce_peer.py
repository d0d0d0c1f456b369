"""The reduce benchmark's peers: NumPy (and CuPy on a GPU machine) summing float32 the way their
users write it. Usage: reduce_peer.py {numpy,cupy} REPS. Prints one JSON object: per case the
median seconds of REPS timed calls after two warm-up calls, and the value for a check.

Cases (the same data as bench/reduce.ts: element i is float32((i % 1000) * 0.001)):
  sum:   x.sum() of 2**24 float32 (NumPy: pairwise summation in float32)
  rows:  x.sum(axis=1) of a 4096 x 4096 float32 matrix (row sums)
  cumsum: x.cumsum() of the 2**24 float32
CuPy's times include a device synchronisation; its data is on the device already (the device
numbers of bench/reduce.ts are the comparable ones).
"""
import json
import sys
import time

import numpy as np


def main():
    lib, reps = sys.argv[1], int(sys.argv[2])
    if lib == "cupy":
        import cupy as xp

        sync = xp.cuda.Device().synchronize
    else:
        xp = np
        sync = lambda: None  # noqa: E731
    flat = (np.arange(2**24) % 1000 * 0.001).astype(np.float32)
    mat = (np.arange(4096 * 4096) % 1000 * 0.001).astype(np.float32).reshape(4096, 4096)
    x, m = xp.asarray(flat), xp.asarray(mat)
    out = {"peer": lib, "version": xp.__version__, "reps": reps}
    for name, call in (("sum", lambda: x.sum()), ("rows", lambda: m.sum(axis=1)), ("cumsum", lambda: x.cumsum())):
        for _ in range(2):
            r = call()
            sync()
        times = []
        for _ in range(reps):
            t = time.perf_counter()
            r = call()
            sync()
            times.append(time.perf_counter() - t)
        times.sort()
        value = float(r) if name == "sum" else float(r[-1]) if name == "cumsum" else float(r[0])
        out[name] = {"median_s": times[len(times) // 2], "runs_s": times, "value": value}
    print(json.dumps(out))


if __name__ == "__main__":
    main()
