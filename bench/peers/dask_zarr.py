"""Dask peer for bench/cluster.ts: the same kernel as a Numba @vectorize ufunc over the same Zarr v3
array, written the way Dask users write it:

    x = da.from_zarr(store, component=INPUT)            # Dask chunks = the Zarr chunks
    y = da.map_blocks(f, x, dtype=np.float32)            # f: the Numba ufunc
    y.to_zarr(store, component=OUTPUT, compressors=None) # plain bytes, as bench/cluster.ts writes

computed with Dask's threads scheduler on THREADS threads (NumPy releases the GIL in a ufunc's loop,
zarr-python reads and writes off the GIL). Each repetition writes a fresh output array, removed
after it outside the timing; the timing covers building the graph, reading, the kernel and writing
(not the imports, not Numba's compilation: `@vectorize` with a signature compiles when defined; a
warm-up over two chunks starts zarr-python's event loop and Dask's threads). Prints one JSON object: the median wall time of REPS runs, the runs,
the Numba ufunc's own time on one chunk (median of 5 calls), and the versions.

usage: dask_zarr.py STORE INPUT KIND THREADS REPS [STEPS]
       (KIND: compute | memory; STEPS: the compute kernel's iterations per element, 32 by default,
       as bench/cluster.ts --steps)
"""

import json
import os
import shutil
import statistics
import sys
import time

import numpy as np


def kernel(kind, steps):
    from numba import vectorize

    if kind == "compute":
        @vectorize(["float32(float32)"])
        def f(x):
            s = x
            for _ in range(steps):
                s = s * np.float32(0.999) + np.float32(0.5) / (np.float32(1) + s * s)
            return s
    else:
        @vectorize(["float32(float32)"])
        def f(x):
            return np.float32(2) * x + np.float32(1)
    return f


def main():
    if len(sys.argv) not in (6, 7):
        sys.exit(__doc__)
    root, name, kind, threads, reps = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
    steps = int(sys.argv[6]) if len(sys.argv) == 7 else 32
    try:
        import dask
        import dask.array as da
        import numba
        import zarr
    except Exception as error:
        print(json.dumps({"skipped": f"Dask, zarr-python or Numba unavailable: {error}"}))
        return
    if not zarr.__version__.startswith("3"):
        print(json.dumps({"skipped": f"zarr-python {zarr.__version__} reads Zarr v2 only; Zarr v3 needs zarr-python 3"}))
        return
    f = kernel(kind, steps)
    f(np.arange(8, dtype=np.float32))  # warm-up

    def run(rep, blocks=None):
        out = f"y-dask-{os.getpid()}-{rep}"
        start = time.perf_counter()
        x = da.from_zarr(root, component=name)
        if blocks is not None:
            x = x.blocks[:blocks]
        y = da.map_blocks(f, x, dtype=np.float32)
        y.to_zarr(root, component=out, mode="w", compressors=None)
        elapsed = (time.perf_counter() - start) * 1000
        shutil.rmtree(os.path.join(root, out))
        return elapsed

    with dask.config.set(scheduler="threads", num_workers=threads):
        x = da.from_zarr(root, component=name)
        chunks = x.numblocks[0]
        run("warm", blocks=2)  # zarr-python's event loop and thread pools start here
        times = [run(r) for r in range(reps)]
    # The Numba ufunc alone on one chunk (the values bench/cluster.ts's input holds), median of 5:
    # what the kernel costs against the reading and writing around it.
    one = (np.arange(x.chunks[0][0]) % 10007 / 1000).astype(np.float32)
    kernel_times = []
    for _ in range(5):
        start = time.perf_counter()
        f(one)
        kernel_times.append((time.perf_counter() - start) * 1000)
    print(json.dumps({
        "medianMs": statistics.median(times),
        "runs": times,
        "kernelMsPerChunk": statistics.median(kernel_times),
        "chunks": chunks,
        "dask": dask.__version__,
        "zarr": zarr.__version__,
        "numba": numba.__version__,
        "numpy": np.__version__,
    }))


if __name__ == "__main__":
    main()
