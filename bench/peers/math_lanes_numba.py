"""Numba's time for bench/math-lanes-ab.ts's kernels (the same code and inputs, 1,048,576 elements,
preallocated out, @vectorize on target='cpu'): CPU time per call (time.process_time over bursts of
>= 20 ms, warm), the median and the least of N samples; prints one line per kernel.

    /usr/bin/python3 bench/peers/math_lanes_numba.py [samples]
"""
import math
import sys
import time

import numpy as np
from numba import vectorize

N = 1 << 20


@vectorize(['float64(float64, float64, float64)'])
def lennard_jones(r, epsilon, sigma):
    sr6 = (sigma / r) ** 6
    return 4 * epsilon * (sr6 * sr6 - sr6)


@vectorize(['float32(float32)'])
def srgb_to_linear(c):
    return c / np.float32(12.92) if c <= np.float32(0.04045) else ((c + np.float32(0.055)) / np.float32(1.055)) ** np.float32(2.4)


@vectorize(['float64(float64, float64, float64)'])
def annuity_pv(p, r, n):
    return (p * (1 - (1 + r) ** -n)) / r


@vectorize(['float64(float64)'])
def softplus(x):
    return math.log1p(math.exp(-abs(x))) + max(x, 0.0)


@vectorize(['float64(float64, float64, float64)'])
def normal_pdf(x, mu, sigma):
    z = (x - mu) / sigma
    return math.exp(-0.5 * z * z) / (sigma * math.sqrt(2 * math.pi))


@vectorize(['float64(float64, float64)'])
def log_ratio(a, b):
    return math.log(a / b)


@vectorize(['float64(float64)'])
def log1p_f64(x):
    return math.log1p(x)


@vectorize(['float64(float64)'])
def cube(x):
    return x ** 3


def time_call(call, samples):
    for _ in range(3):
        call()
    per_call = []
    for _ in range(samples):
        t0 = time.process_time()
        n = 0
        while True:
            call()
            n += 1
            t = time.process_time()
            if t - t0 >= 0.02:
                break
        per_call.append((t - t0) / n)
    per_call.sort()
    return per_call[len(per_call) // 2], per_call[0]


def main():
    samples = int(sys.argv[1]) if len(sys.argv) > 1 else 9
    rng = np.random.default_rng(1)
    u = lambda lo, hi, dtype=np.float64: (lo + (hi - lo) * rng.random(N)).astype(dtype)
    out64 = np.empty(N)
    out32 = np.empty(N, np.float32)
    cases = [
        ('lennard-jones', lambda a: lennard_jones(a[0], 1.0, 1.0, out=out64), [u(0.9, 3)]),
        ('srgb-to-linear', lambda a: srgb_to_linear(a[0], out=out32), [u(0, 1, np.float32)]),
        ('annuity-pv', lambda a: annuity_pv(a[0], a[1], a[2], out=out64), [u(10, 1000), u(0.001, 0.1), u(1, 360)]),
        ('softplus', lambda a: softplus(a[0], out=out64), [u(-20, 20)]),
        ('normal-pdf', lambda a: normal_pdf(a[0], 0.5, 1.5, out=out64), [u(-5, 5)]),
        ('log-ratio', lambda a: log_ratio(a[0], a[1], out=out64), [u(50, 150), u(50, 150)]),
        ('cube-f64', lambda a: cube(a[0], out=out64), [u(-10, 10)]),
        ('log1p-f64', lambda a: log1p_f64(a[0], out=out64), [u(-0.9, 10)]),
    ]
    for name, call, args in cases:
        med, least = time_call(lambda: call(args), samples)
        print(f'{name}  numba median {med * 1e3:.2f} ms  least {least * 1e3:.2f} ms', flush=True)


main()
