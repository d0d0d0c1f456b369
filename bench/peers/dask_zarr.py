"""Dask peer for bench/cluster.ts: the same kernel as a Numba @vectorize ufunc, run by
dask.array.map_blocks over the chunks of the same Zarr v3 store, on a distributed LocalCluster of
WORKERS processes (one thread each), each chunk read, computed and written in one task. Prints one
JSON object: the median wall time of REPS computations after one warm-up.

The store's arrays are Zarr v3 with the plain `bytes` codec (bench/cluster.ts makes them so);
zarr-python 3 is not in Debian, so chunks are read and written as the raw little-endian files they
are (`x/c/<i>`), atomically (a temporary file renamed over the chunk), as the ufunc workers do.

usage: dask_zarr.py STORE KIND WORKERS REPS      (KIND: compute | memory)
"""

import json
import os
import statistics
import sys
import time

import numpy as np


def main():
    if len(sys.argv) != 5:
        sys.exit(__doc__)
    root, kind, workers, reps = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    try:
        import dask
        import dask.array as da
        from distributed import Client, LocalCluster
        from numba import vectorize
    except Exception as error:
        print(json.dumps({"skipped": f"Dask/Numba unavailable: {error}"}))
        return
    meta = json.load(open(os.path.join(root, "x", "zarr.json")))
    codecs = [c["name"] for c in meta.get("codecs", [])]
    if codecs != ["bytes"] or meta["data_type"] != "float32":
        print(json.dumps({"skipped": f"the peer reads raw float32 chunks; found codecs {codecs}"}))
        return
    n = meta["shape"][0]
    chunk = meta["chunk_grid"]["configuration"]["chunk_shape"][0]
    sep = meta.get("chunk_key_encoding", {}).get("configuration", {}).get("separator", "/")

    if kind == "compute":
        @vectorize(["float32(float32)"])
        def f(x):
            s = x
            for _ in range(32):
                s = s * np.float32(0.999) + np.float32(0.5) / (np.float32(1) + s * s)
            return s
    else:
        @vectorize(["float32(float32)"])
        def f(x):
            return np.float32(2) * x + np.float32(1)

    def key(name, i):
        return os.path.join(root, name, "c", str(i)) if sep == "/" else os.path.join(root, name, f"c{sep}{i}")

    def read(i, length):
        return np.fromfile(key("x", i), dtype="<f4", count=length)

    def write(block, i):
        out = np.zeros(chunk, dtype="<f4")
        out[: block.shape[0]] = block
        path = key("y", i)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        tmp = f"{path}.{os.getpid()}.partial"
        out.tofile(tmp)
        os.replace(tmp, path)
        return block.shape[0]

    lengths = [min(chunk, n - i * chunk) for i in range((n + chunk - 1) // chunk)]
    x = da.concatenate([da.from_delayed(dask.delayed(read)(i, L), shape=(L,), dtype=np.float32) for i, L in enumerate(lengths)])
    y = x.map_blocks(f, dtype=np.float32)
    tasks = [dask.delayed(write)(b, i) for i, b in enumerate(y.to_delayed())]

    with LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None) as cluster, Client(cluster) as client:
        dask.compute(*tasks)  # warm-up: Numba compiles in each worker
        times = []
        for _ in range(reps):
            start = time.perf_counter()
            dask.compute(*tasks)
            times.append((time.perf_counter() - start) * 1000)
    print(json.dumps({"medianMs": statistics.median(times), "runs": times, "dask": dask.__version__}))


if __name__ == "__main__":
    main()
