"""Peers of bench/random.ts: n float32 uniforms from Philox, NumPy on the CPU and CuPy on the GPU.

    python3 random_peer.py numpy SIZE REPS     # numpy.random.Generator(Philox).random(out=…, dtype=float32)
    python3 random_peer.py cupy SIZE REPS      # cupy.random.Generator(Philox4x3210).random(out=…, dtype=float32)

Prints one JSON object: per contender the median seconds per call after two warm-up calls (CuPy:
each call synchronised, as an awaited ufunc call on a device array is).
"""
import json
import sys
import time


def median(xs):
    s = sorted(xs)
    m = len(s) // 2
    return s[m] if len(s) % 2 else (s[m - 1] + s[m]) / 2


def timed(call, reps, sync=lambda: None):
    for _ in range(2):
        call()
        sync()
    runs = []
    for _ in range(reps):
        t = time.perf_counter()
        call()
        sync()
        runs.append(time.perf_counter() - t)
    return {'median_s': median(runs), 'runs': runs}


def main():
    which, n, reps = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    if which == 'numpy':
        import numpy as np
        rng = np.random.Generator(np.random.Philox(2026))
        out = np.empty(n, dtype=np.float32)
        result = timed(lambda: rng.random(out=out, dtype=np.float32), reps)
        print(json.dumps({'version': np.__version__, 'results': {'NumPy Generator(Philox).random float32': result}}))
    else:
        import cupy as cp
        rng = cp.random.Generator(cp.random.Philox4x3210(2026))
        out = cp.empty(n, dtype=cp.float32)
        result = timed(lambda: rng.random(out=out, dtype=cp.float32), reps, cp.cuda.Device().synchronize)
        print(json.dumps({'version': cp.__version__, 'results': {'CuPy Generator(Philox4x3210).random float32': result}}))


main()
