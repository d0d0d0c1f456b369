"""The corpus's kernels (bench/corpus/kernels.ts) written for Numba the way its users write them:
@vectorize / @guvectorize with explicit signatures, target 'cpu' and 'parallel', math from the
`math` module, helpers as @njit functions, outputs allocated by the call (`f(x)`, not `out=`).

usage: corpus_numba.py SPEC.json REPS

SPEC.json is a list of {"name", "inputs"} where each input is {"dtype", "shape", "low", "high"}
(an array drawn uniformly, integers inclusive) or {"scalar", "dtype"}. Prints one JSON object:
per kernel, the median seconds of REPS calls after a warm-up call, for each target, and the
compile time (signatures are given, so Numba compiles when the decorator runs).
"""

import json
import math
import os
import statistics
import sys
import time

import numpy as np

# Numba's OpenMP layer measured far slower than 'workqueue' for ufunc loops on the 2-core VM (see
# numpy_numba.py); the peer is Numba at its best, so workqueue unless the caller chose a layer.
os.environ.setdefault("NUMBA_THREADING_LAYER", "workqueue")

import numba  # noqa: E402
from numba import guvectorize, njit, vectorize  # noqa: E402


@njit
def cnd(x):
    a1 = 0.31938153
    a2 = -0.356563782
    a3 = 1.781477937
    a4 = -1.821255978
    a5 = 1.330274429
    k = 1.0 / (1.0 + 0.2316419 * abs(x))
    w = 1.0 - (0.3989422804014327 * math.exp(-0.5 * x * x)) * (k * (a1 + k * (a2 + k * (a3 + k * (a4 + k * a5)))))
    return 1.0 - w if x < 0 else w


@njit
def lennard_jones(r, epsilon, sigma):
    sr6 = (sigma / r) ** 6
    return 4.0 * epsilon * (sr6 * sr6 - sr6)


@njit
def srgb_to_linear(c):
    return c / np.float32(12.92) if c <= np.float32(0.04045) else ((c + np.float32(0.055)) / np.float32(1.055)) ** np.float32(2.4)


def build(name, target):
    """The kernel `name` as a Numba ufunc for `target`."""
    if name == "sigmoid":
        @vectorize(["float32(float32)"], target=target)
        def f(x):
            return 1 / (1 + math.exp(-x))
        return f
    if name == "softmax":
        @guvectorize(["void(float32[:], float32[:])"], "(n)->(n)", target=target)
        def f(x, out):
            m = x[0]
            for i in range(1, x.shape[0]):
                m = max(m, x[i])
            s = 0.0
            for i in range(x.shape[0]):
                out[i] = math.exp(x[i] - m)
                s += out[i]
            for i in range(x.shape[0]):
                out[i] = out[i] / s
        return f
    if name == "row-dot":
        @guvectorize(["void(float32[:], float32[:], float32[:])"], "(n),(n)->()", target=target)
        def f(a, b, out):
            acc = np.float32(0)
            for i in range(a.shape[0]):
                acc += a[i] * b[i]
            out[0] = acc
        return f
    if name == "poly5":
        @vectorize(["float64(float64)"], target=target)
        def f(x):
            return ((((0.5 * x - 1.25) * x + 2.0) * x - 0.75) * x + 3.5) * x - 1.0
        return f
    if name == "gamma-u8":
        @vectorize(["uint8(uint8)"], target=target)
        def f(p):
            return min(255, math.floor(255 * (p / 255) ** 0.4545))
        return f
    if name == "black-scholes":
        @vectorize(["float64(float64, float64, float64, float64, float64)"], target=target)
        def f(S, X, T, R, V):
            sqrtT = math.sqrt(T)
            d1 = (math.log(S / X) + (R + 0.5 * V * V) * T) / (V * sqrtT)
            d2 = d1 - V * sqrtT
            return S * cnd(d1) - X * math.exp(-R * T) * cnd(d2)
        return f
    if name == "haversine":
        @vectorize(["float32(float32, float32, float32, float32)"], target=target)
        def f(lat1, lon1, lat2, lon2):
            dlat = math.sin((lat2 - lat1) / 2)
            dlon = math.sin((lon2 - lon1) / 2)
            a = dlat * dlat + math.cos(lat1) * math.cos(lat2) * dlon * dlon
            return 2 * 6371 * math.asin(math.sqrt(a))
        return f
    if name == "logsumexp":
        @guvectorize(["void(float64[:], float64[:])"], "(n)->()", target=target)
        def f(x, out):
            m = x[0]
            for i in range(1, x.shape[0]):
                m = max(m, x[i])
            s = 0.0
            for i in range(x.shape[0]):
                s += math.exp(x[i] - m)
            out[0] = m + math.log(s)
        return f
    if name == "mandelbrot":
        @vectorize(["int32(float32, float32)"], target=target)
        def f(cr, ci):
            zr = np.float32(0)
            zi = np.float32(0)
            for i in range(100):
                t = zr * zr - zi * zi + cr
                zi = 2 * zr * zi + ci
                zr = t
                if zr * zr + zi * zi >= 4:
                    return i
            return 100
        return f
    if name == "saturating-add-i16":
        @vectorize(["int16(int16, int16)"], target=target)
        def f(a, b):
            return max(-32768, min(32767, np.int32(a) + np.int32(b)))
        return f
    if name == "gelu-tanh":
        @vectorize(["float32(float32)"], target=target)
        def f(x):
            return 0.5 * x * (1 + math.tanh(0.7978845608 * (x + 0.044715 * x * x * x)))
        return f
    if name == "rel-diff":
        @vectorize(["float64(float64, float64)"], target=target)
        def f(x, y):
            return 2 * (x - y) / (x + y)
        return f
    if name == "add-scalar-rows":
        @guvectorize(["void(int32[:], int32, int32[:])"], "(n),()->(n)", target=target)
        def f(x, y, res):
            for i in range(x.shape[0]):
                res[i] = x[i] + y
        return f
    if name == "move-mean":
        @guvectorize(["void(float64[:], int32, float64[:])"], "(n),()->(n)", target=target)
        def f(a, w, out):
            asum = 0.0
            count = 0
            for i in range(w):
                asum += a[i]
                count += 1
                out[i] = asum / count
            for i in range(w, a.shape[0]):
                asum += a[i] - a[i - w]
                out[i] = asum / count
        return f
    if name == "np-vectorize-myfunc":
        @vectorize(["float64(float64, float64)"], target=target)
        def f(a, b):
            return a - b if a > b else a + b
        return f
    if name == "relu":
        @vectorize(["float32(float32)"], target=target)
        def f(x):
            return x if x > 0 else np.float32(0)
        return f
    if name == "elu":
        @vectorize(["float32(float32)"], target=target)
        def f(x):
            return x if x > 0 else math.exp(x) - 1
        return f
    if name == "softplus":
        @vectorize(["float64(float64)"], target=target)
        def f(x):
            return math.log1p(math.exp(-abs(x))) + max(x, 0.0)
        return f
    if name == "rgb-to-gray":
        @guvectorize(["void(uint8[:], uint8[:])"], "(c)->()", target=target)
        def f(rgb, out):
            out[0] = 0.299 * rgb[0] + 0.587 * rgb[1] + 0.114 * rgb[2]
        return f
    if name == "brightness-contrast-u8":
        @vectorize(["uint8(uint8)"], target=target)
        def f(p):
            return min(255, max(0, round(1.2 * p - 20)))
        return f
    if name == "threshold-u8":
        @vectorize(["uint8(uint8, uint8)"], target=target)
        def f(p, t):
            return 255 if p > t else 0
        return f
    if name == "alpha-blend-u8":
        @vectorize(["uint8(uint8, uint8, float32)"], target=target)
        def f(a, b, alpha):
            return a * alpha + b * (1 - alpha)
        return f
    if name == "srgb-to-linear":
        @vectorize(["float32(float32)"], target=target)
        def f(c):
            return srgb_to_linear(c)
        return f
    if name == "box-blur-rows":
        @guvectorize(["void(float32[:], float32[:])"], "(n)->(n)", target=target)
        def f(x, out):
            n = x.shape[0]
            out[0] = (x[0] + x[1]) / 2
            for i in range(1, n - 1):
                out[i] = (x[i - 1] + x[i] + x[i + 1]) / 3
            out[n - 1] = (x[n - 2] + x[n - 1]) / 2
        return f
    if name == "annuity-pv":
        @vectorize(["float64(float64, float64, float64)"], target=target)
        def f(payment, rate, periods):
            return payment * (1 - (1 + rate) ** -periods) / rate
        return f
    if name == "log-returns":
        @guvectorize(["void(float64[:], float64[:])"], "(n)->(n)", target=target)
        def f(p, out):
            out[0] = 0
            for i in range(1, p.shape[0]):
                out[i] = math.log(p[i] / p[i - 1])
        return f
    if name == "lennard-jones":
        @vectorize(["float64(float64, float64, float64)"], target=target)
        def f(r, epsilon, sigma):
            return lennard_jones(r, epsilon, sigma)
        return f
    if name == "pairwise-distance":
        @guvectorize(["void(float64[:,:], float64[:,:], float64[:,:])"], "(n,d),(m,d)->(n,m)", target=target)
        def f(x, y, out):
            for i in range(x.shape[0]):
                for j in range(y.shape[0]):
                    acc = 0.0
                    for k in range(x.shape[1]):
                        t = x[i, k] - y[j, k]
                        acc += t * t
                    out[i, j] = math.sqrt(acc)
        return f
    if name == "normal-pdf":
        @vectorize(["float64(float64, float64, float64)"], target=target)
        def f(x, mu, sigma):
            z = (x - mu) / sigma
            return math.exp(-0.5 * z * z) / (sigma * math.sqrt(2 * math.pi))
        return f
    if name == "polar-angle":
        @vectorize(["float32(float32, float32)"], target=target)
        def f(x, y):
            return math.atan2(y, x) * math.hypot(x, y)
        return f
    if name == "saxpy-f64":
        @vectorize(["float64(float64, float64, float64)"], target=target)
        def f(a, x, y):
            return a * x + y
        return f
    raise ValueError(f"no Numba kernel named {name}")


def make_input(recipe, rng):
    if "scalar" in recipe:
        return np.dtype(recipe["dtype"]).type(recipe["scalar"])
    dtype = np.dtype(recipe["dtype"])
    shape = tuple(recipe["shape"])
    if dtype.kind in "iu":
        return rng.integers(recipe["low"], recipe["high"], size=shape, endpoint=True).astype(dtype)
    return rng.uniform(recipe["low"], recipe["high"], size=shape).astype(dtype)


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    with open(sys.argv[1]) as f:
        spec = json.load(f)
    reps = int(sys.argv[2])
    rng = np.random.default_rng(12345)
    report = {
        "numba": numba.__version__,
        "numpy": np.__version__,
        "threads": numba.config.NUMBA_NUM_THREADS,
        "kernels": [],
    }
    for entry in spec:
        inputs = [make_input(r, rng) for r in entry["inputs"]]
        row = {"name": entry["name"]}
        for target in ("cpu", "parallel"):
            start = time.perf_counter()
            f = build(entry["name"], target)
            row[f"{target}_compile_s"] = time.perf_counter() - start
            f(*inputs)  # warm-up: page faults, threads started
            f(*inputs)
            runs = []
            for _ in range(reps):
                t0 = time.perf_counter()
                f(*inputs)
                runs.append(time.perf_counter() - t0)
            row[f"{target}_s"] = statistics.median(runs)
        report["kernels"].append(row)
    report["threading_layer"] = numba.threading_layer()
    print(json.dumps(report))


if __name__ == "__main__":
    main()
