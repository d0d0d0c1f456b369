"""What a fresh output array costs NumPy (bench/fresh-output.ts runs this): CPU ms of `np.empty(n)`
written once, and of saxpy `2 * x + y` into a fresh array and into a given one, with NumPy's
huge-page advice for large allocations (its default on Linux: madvise(MADV_HUGEPAGE) from 4 MiB)
on and off. Prints one JSON line."""
import json
import sys
import time

import numpy as np

n = int(sys.argv[1])
samples = int(sys.argv[2])
x = np.random.rand(n)
y = np.random.rand(n)
out = np.empty(n)
# numpy._core since NumPy 2 (numpy.core warns there), numpy.core before.
multiarray = (np._core if hasattr(np, "_core") else np.core).multiarray


def cpu_ms(f):
    for _ in range(3):
        f()
    times = []
    for _ in range(samples):
        start = time.process_time()
        f()
        times.append(time.process_time() - start)
    times.sort()
    return times[len(times) // 2] * 1e3


report = {"numpy": np.__version__}
for advice in (True, False):
    multiarray._set_madvise_hugepage(advice)
    key = "hugepage" if advice else "no_hugepage"
    report[key] = {
        "fresh_fill_ms": cpu_ms(lambda: np.empty(n).fill(1.0)),
        "saxpy_fresh_ms": cpu_ms(lambda: 2 * x + y),
    }
multiarray._set_madvise_hugepage(True)
report["saxpy_given_out_ms"] = cpu_ms(lambda: np.add(np.multiply(2, x, out=out), y, out=out))
print(json.dumps(report))
