"""CuPy peer for the ufunc benchmark, for the GPU machine. Kernels are timed with CUDA events
(median of REPS after a warm-up launch), two ways: one launch between two events with a
synchronize between launches (isolated), and BACK_TO_BACK launches recorded one after another
between two events, the time divided by BACK_TO_BACK (back to back: as the kernels of a chain
run; bench/gpu.ts times its dispatches the same two ways); host->device and device->host copies of the inputs and
the output are timed separately, from and into ordinary (pageable) NumPy arrays. Prints one JSON
object. float64 workloads run in float32 here, as the WebGPU target must (WGSL has no f64).

usage: cupy_peer.py WORKLOAD SIZE REPS
"""

import statistics
import time

import numpy as np

import workloads as w

BLOCK = 256
# Launches per back-to-back reading (bench/gpu.ts BACK_TO_BACK: the same on both sides).
BACK_TO_BACK = 20

# One thread per row, staged through shared memory so that the block writes its rows as one
# contiguous, coalesced span: one thread storing its own 64-byte row gets 25% store efficiency
# (seed 001's nvprof numbers). The +1 column of padding avoids shared-memory bank conflicts.
HERMITE_SOURCE = r"""
#define N {n}
#define BLOCK {block}
__device__ void recurrence(float x, float* row) {{
    row[0] = 1.0f;
    row[1] = x;
    for (int i = 2; i < N; i++) row[i] = x * row[i - 1] - (i - 1) * row[i - 2];
    float c = 1.0f;
    for (int i = 2; i < N; i++) {{ c *= i; row[i] /= sqrtf(c); }}
}}
// row r's x is x[r * x_stride + x_first]: x[r] for a vector of x, x[r * N + 1] for in-place rows
extern "C" __global__ void hermite(const float* x, int x_stride, int x_first, float* out, int rows) {{
    __shared__ float tile[BLOCK * (N + 1)];
    long long first = (long long)blockIdx.x * BLOCK;
    long long r = first + threadIdx.x;
    if (r < rows) recurrence(x[r * x_stride + x_first], tile + threadIdx.x * (N + 1));
    __syncthreads();
    int count = (int)min((long long)BLOCK, rows - first) * N;
    for (int k = threadIdx.x; k < count; k += BLOCK) out[first * N + k] = tile[(k / N) * (N + 1) + k % N];
}}
"""

LORENZ_SOURCE = r"""
#define N {n}
__device__ void tendency(const float* x, float forcing, float* dxdt) {{
    for (int i = 0; i < N; i++)
        dxdt[i] = (x[(i + 1) % N] - x[(i + N - 2) % N]) * x[(i + N - 1) % N] - x[i] + forcing;
}}
extern "C" __global__ void rk4_step(const float* xs, float forcing, float dt, float* outs, int members) {{
    int m = blockIdx.x * blockDim.x + threadIdx.x;
    if (m >= members) return;
    const float* x = xs + (long long)m * N;
    float* out = outs + (long long)m * N;
    float k[N], stage[N];
    tendency(x, forcing, k);
    for (int i = 0; i < N; i++) {{ out[i] = x[i] + dt / 6 * k[i]; stage[i] = x[i] + dt / 2 * k[i]; }}
    tendency(stage, forcing, k);
    for (int i = 0; i < N; i++) {{ out[i] += dt / 3 * k[i]; stage[i] = x[i] + dt / 2 * k[i]; }}
    tendency(stage, forcing, k);
    for (int i = 0; i < N; i++) {{ out[i] += dt / 3 * k[i]; stage[i] = x[i] + dt * k[i]; }}
    tendency(stage, forcing, k);
    for (int i = 0; i < N; i++) out[i] += dt / 6 * k[i];
}}
"""


def cupy_kernel(cp, workload, size):
    """`launch(device_inputs, device_out)` for the workload, and the Hermite seed check's
    `run_seed(x, out)` (None for other workloads)."""
    blocks = (size + BLOCK - 1) // BLOCK
    if workload == "saxpy":
        saxpy = cp.ElementwiseKernel("float32 a, float32 x, float32 y", "float32 z", "z = a * x + y", "saxpy")
        return (lambda d, out: saxpy(d["a"], d["x"], d["y"], out)), None
    if workload == "exp":
        return (lambda d, out: cp.exp(d["x"], out=out)), None
    if workload in ("hermite", "hermite-inplace"):
        kernel = cp.RawKernel(HERMITE_SOURCE.format(n=w.HERMITE_N, block=BLOCK), "hermite")
        seed_kernel = cp.RawKernel(HERMITE_SOURCE.format(n=4, block=BLOCK), "hermite")

        def run_seed(x, out):
            d_out = cp.empty(out.shape, cp.float32)
            seed_kernel((1,), (BLOCK,), (cp.asarray(x), np.int32(1), np.int32(0), d_out, np.int32(x.shape[0])))
            out[...] = d_out.get()

        if workload == "hermite":
            x_of, x_stride, x_first = (lambda d: d["x"]), 1, 0
        else:
            x_of, x_stride, x_first = (lambda d: d["rows"]), w.HERMITE_N, 1
        args = lambda d, out: (x_of(d), np.int32(x_stride), np.int32(x_first), out, np.int32(size))
        return (lambda d, out: kernel((blocks,), (BLOCK,), args(d, out))), run_seed
    if workload == "lorenz96":
        kernel = cp.RawKernel(LORENZ_SOURCE.format(n=w.LORENZ_N), "rk4_step")
        forcing, dt = np.float32(w.LORENZ_F), np.float32(w.LORENZ_DT)
        return (lambda d, out: kernel((blocks,), (BLOCK,), (d["x"], forcing, dt, out, np.int32(size)))), None
    if workload == "matmul4x4":
        return (lambda d, out: cp.matmul(d["a"], d["b"], out=out)), None
    raise ValueError(workload)


def event_seconds(cp, run):
    start, end = cp.cuda.Event(), cp.cuda.Event()
    start.record()
    run()
    end.record()
    end.synchronize()
    return cp.cuda.get_elapsed_time(start, end) / 1e3


def back_to_back_seconds(cp, run, n):
    """GPU time of n launches recorded back to back, from the event before the first to the event
    after the last, divided by n."""
    start, end = cp.cuda.Event(), cp.cuda.Event()
    start.record()
    for _ in range(n):
        run()
    end.record()
    end.synchronize()
    return cp.cuda.get_elapsed_time(start, end) / 1e3 / n


def main():
    workload, size, reps = w.parse_args(__doc__)
    report = w.header(workload, size, reps)
    try:
        import cupy as cp

        report["cupy"] = cp.__version__
        report["device"] = cp.cuda.runtime.getDeviceProperties(0)["name"].decode()
    except Exception as error:  # no cupy, no driver or no device: all mean "no CuPy peer here"
        report["skipped"].append({"peer": "cupy", "reason": f"CuPy unavailable: {error}"})
        w.emit(report)
        return

    inputs = w.make_inputs(workload, size)
    if workload == "lorenz96":
        inputs["x"] = inputs["x"].astype(np.float32)
    expected = w.reference(workload, inputs)
    host_arrays = {name: value for name, value in inputs.items() if isinstance(value, np.ndarray)}
    device = {name: cp.empty_like(value) for name, value in host_arrays.items()}
    device.update({name: value for name, value in inputs.items() if name not in host_arrays})
    d_out = device["rows"] if workload == "hermite-inplace" else cp.empty(w.output_shape(workload, size), cp.float32)
    host_out = np.empty(d_out.shape, np.float32)

    def upload():
        for name, value in host_arrays.items():
            device[name].set(value)

    h2d = [event_seconds(cp, upload) for _ in range(reps)]
    launch, run_seed = cupy_kernel(cp, workload, size)
    start = time.perf_counter()
    launch(device, d_out)  # the first launch compiles the kernel (NVRTC) and loads it
    cp.cuda.get_current_stream().synchronize()
    first_launch_s = time.perf_counter() - start
    # Sustained work first: an idle GPU's driver lowers its clock (bench/chain.ts, GPU_WARMUP_MS).
    warm_end = time.perf_counter() + 1.0
    while time.perf_counter() < warm_end:
        for _ in range(8):
            launch(device, d_out)
        cp.cuda.get_current_stream().synchronize()
    kernel_runs = [event_seconds(cp, lambda: launch(device, d_out)) for _ in range(reps)]
    back_to_back = [back_to_back_seconds(cp, lambda: launch(device, d_out), BACK_TO_BACK) for _ in range(reps)]
    d2h = [event_seconds(cp, lambda: d_out.get(out=host_out)) for _ in range(reps)]
    # Into a new array, the way most CuPy code reads results back: `cp.asnumpy` (synchronous).
    cp.asnumpy(d_out)
    d2h_fresh = []
    for _ in range(reps):
        start = time.perf_counter()
        cp.asnumpy(d_out)
        d2h_fresh.append(time.perf_counter() - start)

    verdict = w.check(host_out, expected)
    if run_seed is not None and verdict == "ok":
        verdict = w.check_hermite_seed(run_seed)
    report["results"].append(
        w.result(
            "cupy",
            kernel_runs,
            verdict,
            dtype="float32",
            compile_s=first_launch_s,
            back_to_back_s=statistics.median(back_to_back),
            back_to_back_launches=BACK_TO_BACK,
            h2d_s=statistics.median(h2d),
            h2d_bytes=sum(value.nbytes for value in host_arrays.values()),
            d2h_s=statistics.median(d2h),
            d2h_fresh_s=statistics.median(d2h_fresh),
            d2h_bytes=host_out.nbytes,
        )
    )
    w.emit(report)


if __name__ == "__main__":
    main()
