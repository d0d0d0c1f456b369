"""Peers of bench/fuse.ts: the chain v = mul(gauss(saxpy(2, x, y)), x) in float32, separate and fused.

    python3 fuse_peer.py numba SIZE REPS          # @vectorize three times vs one @njit loop (cpu and parallel)
    python3 fuse_peer.py gpu SIZE CHAINS REPS WARMUP_S  # CuPy separate kernels and cupy.fuse; JAX jit

Prints one JSON object: per contender the median seconds per chain and the runs. The GPU chains are
timed as bench/chain.ts times ours: CHAINS chains back to back into preallocated outputs, ended by
one synchronisation, after WARMUP_S seconds of the same work (an idle GPU lowers its clock).
"""
import json
import sys
import time


def gauss_of(xp):
    return lambda t: xp.exp(-t * t)


def make_inputs(np, n):
    i = np.arange(n, dtype=np.float64)
    x = (np.sin(i) * 3).astype(np.float32)
    y = np.cos(i * 0.37).astype(np.float32)
    return x, y


def median(xs):
    s = sorted(xs)
    m = len(s) // 2
    return s[m] if len(s) % 2 else (s[m - 1] + s[m]) / 2


def check(np, got, x, y):
    t = np.float32(2) * x + y
    want = np.exp(-t * t) * x
    return 'ok' if np.allclose(np.asarray(got), want, rtol=1e-5, atol=1e-6) else 'wrong results'


def numba_peer(n, reps):
    import numpy as np
    import numba
    from numba import njit, prange, vectorize

    x, y = make_inputs(np, n)
    report = {'numba': numba.__version__, 'numpy': np.__version__, 'threads': numba.config.NUMBA_NUM_THREADS, 'size': n, 'results': {}}
    for target in ('cpu', 'parallel'):
        @vectorize(['float32(float32, float32, float32)'], target=target)
        def saxpy(a, x, y):
            return a * x + y

        @vectorize(['float32(float32)'], target=target)
        def gauss(t):
            return np.exp(-t * t)

        @vectorize(['float32(float32, float32)'], target=target)
        def mul(a, b):
            return a * b

        def three():
            return mul(gauss(saxpy(np.float32(2), x, y)), x)

        if target == 'cpu':
            @njit(fastmath=False)
            def loop(x, y):
                v = np.empty_like(x)
                for i in range(x.shape[0]):
                    t = np.float32(2) * x[i] + y[i]
                    v[i] = np.exp(-t * t) * x[i]
                return v
        else:
            @njit(parallel=True, fastmath=False)
            def loop(x, y):
                v = np.empty_like(x)
                for i in prange(x.shape[0]):
                    t = np.float32(2) * x[i] + y[i]
                    v[i] = np.exp(-t * t) * x[i]
                return v

        for name, fn in (('vectorize x3', three), ('njit loop', lambda: loop(x, y))):
            got = fn()
            fn()
            runs = []
            for _ in range(reps):
                t0 = time.perf_counter()
                fn()
                runs.append(time.perf_counter() - t0)
            report['results'][f'{target}: {name}'] = {'median_s': median(runs), 'runs_s': runs, 'check': check(np, got, x, y)}
    return report


def gpu_peer(n, chains, reps, warmup_s):
    import numpy as np
    report = {'size': n, 'chains': chains, 'results': {}, 'skipped': {}}
    hx, hy = make_inputs(np, n)
    try:
        import cupy as cp
        report['cupy'] = cp.__version__
        report['device'] = cp.cuda.runtime.getDeviceProperties(0)['name'].decode()
        x, y = cp.asarray(hx), cp.asarray(hy)
        t, g, v = cp.empty_like(x), cp.empty_like(x), cp.empty_like(x)
        saxpy = cp.ElementwiseKernel('float32 a, float32 x, float32 y', 'float32 z', 'z = a * x + y', 'saxpy')
        gauss = cp.ElementwiseKernel('float32 t', 'float32 z', 'z = expf(-t * t)', 'gauss')
        mul = cp.ElementwiseKernel('float32 a, float32 b', 'float32 z', 'z = a * b', 'mul')

        def separate():
            saxpy(np.float32(2), x, y, t)
            gauss(t, g)
            mul(g, x, v)

        @cp.fuse(kernel_name='chain')
        def fused_chain(x, y):
            s = np.float32(2) * x + y
            return cp.exp(-s * s) * x

        def fused():
            fused_chain(x, y)

        for name, fn in (('cupy: 3 kernels', separate), ('cupy.fuse', fused)):
            report['results'][name] = time_chains(lambda: cp.cuda.Device().synchronize(), fn, chains, reps, warmup_s)
        separate()
        report['results']['cupy: 3 kernels']['check'] = check(np, cp.asnumpy(v), hx, hy)
        report['results']['cupy.fuse']['check'] = check(np, cp.asnumpy(fused_chain(x, y)), hx, hy)
    except Exception as e:  # no CuPy or no CUDA device: the table says why
        report['skipped']['cupy'] = f'{type(e).__name__}: {e}'
    try:
        import jax
        import jax.numpy as jnp
        report['jax'] = jax.__version__
        report['jax_device'] = str(jax.devices()[0])
        x, y = jnp.asarray(hx), jnp.asarray(hy)

        @jax.jit
        def chain(x, y):
            s = jnp.float32(2) * x + y
            return jnp.exp(-s * s) * x

        holder = {}

        def run():
            holder['v'] = chain(x, y)

        report['results']['jax.jit'] = time_chains(lambda: holder['v'].block_until_ready(), run, chains, reps, warmup_s)
        report['results']['jax.jit']['check'] = check(np, np.asarray(chain(x, y)), hx, hy)
    except Exception as e:
        report['skipped']['jax'] = f'{type(e).__name__}: {e}'
    return report


def time_chains(sync, fn, chains, reps, warmup_s):
    fn()
    sync()
    end = time.perf_counter() + warmup_s
    while time.perf_counter() < end:
        for _ in range(chains):
            fn()
        sync()
    runs = []
    for _ in range(reps):
        t0 = time.perf_counter()
        for _ in range(chains):
            fn()
        sync()
        runs.append((time.perf_counter() - t0) / chains)
    return {'median_s': median(runs), 'runs_s': runs}


if __name__ == '__main__':
    mode = sys.argv[1]
    if mode == 'numba':
        print(json.dumps(numba_peer(int(sys.argv[2]), int(sys.argv[3]))))
    else:
        print(json.dumps(gpu_peer(int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), float(sys.argv[5]))))
