"""CuPy peer for the gpu chain benchmark (bench/chain.ts): wall time per call of a chain of CALLS
calls on device-resident data, ended by a synchronisation, and the kernel time of one call (CUDA
events), each the median of REPS chains after a warm-up chain. Prints one JSON object.

CHAIN is one of: saxpy-out, saxpy-fresh, exp-out, hermite-out, lorenz96-out, matmul4x4-out
(-out: into a preallocated output; saxpy-fresh: a new output each call, the previous one dropped,
as Python code does; CuPy's memory pool hands its memory to the next call).

usage: cupy_chain.py CHAIN SIZE CALLS REPS [WARMUP_SECONDS]

WARMUP_SECONDS (default 1): chains run this long before measuring, so the GPU's clock is up (the
driver lowers it while the GPU idles); bench/chain.ts does the same for ufunc.
"""

import json
import statistics
import sys
import time

import numpy as np

import cupy_peer as peer
import workloads as w


def main():
    if len(sys.argv) not in (5, 6):
        sys.exit(__doc__)
    chain, size, calls, reps = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
    warmup_s = float(sys.argv[5]) if len(sys.argv) == 6 else 1.0
    report = {"chain": chain, "size": size, "calls": calls, "reps": reps}
    try:
        import cupy as cp

        report["cupy"] = cp.__version__
        report["device"] = cp.cuda.runtime.getDeviceProperties(0)["name"].decode()
    except Exception as error:  # no cupy, no driver or no device
        report["skipped"] = f"CuPy unavailable: {error}"
        print(json.dumps(report))
        return

    workload = chain.rsplit("-", 1)[0]
    inputs = w.make_inputs(workload, size)
    if workload == "lorenz96":
        inputs["x"] = inputs["x"].astype(np.float32)
    device = {k: (cp.asarray(v) if isinstance(v, np.ndarray) else v) for k, v in inputs.items()}
    d_out = cp.empty(w.output_shape(workload, size), cp.float32)
    launch, _ = peer.cupy_kernel(cp, workload, size)
    stream = cp.cuda.get_current_stream()

    if chain == "saxpy-fresh":
        saxpy = cp.ElementwiseKernel("float32 a, float32 x, float32 y", "float32 z", "z = a * x + y", "saxpy_fresh")
        call = lambda: saxpy(device["a"], device["x"], device["y"])
    else:
        call = lambda: launch(device, d_out)

    def one_chain():
        start = time.perf_counter()
        z = None
        for _ in range(calls):
            z = call()  # the previous z is dropped here, as in a Python loop
        stream.synchronize()
        return (time.perf_counter() - start) / calls

    one_chain()  # compile, warm the memory pool
    warm_end = time.perf_counter() + warmup_s
    while time.perf_counter() < warm_end:  # the GPU's clock up
        one_chain()
    walls = [one_chain() for _ in range(reps)]
    kernels = [peer.event_seconds(cp, call) for _ in range(max(reps, 5))]
    report["wall_per_call_s"] = statistics.median(walls)
    report["walls_s"] = walls
    report["kernel_s"] = statistics.median(kernels)
    print(json.dumps(report))


if __name__ == "__main__":
    main()
