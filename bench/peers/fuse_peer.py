"""Peers of bench/fuse.ts: the chain v = mul(gauss(saxpy(2, x, y)), x) in float32, separate and fused.

    python3 fuse_peer.py numba SIZE REPS [ROW REDUCE_ROW]  # @vectorize three times vs one @njit loop (cpu and parallel);
                                                  # with ROW: also the gufunc chain and the chain ending in a sum
    python3 fuse_peer.py gpu SIZE CHAINS REPS WARMUP_S  # CuPy separate kernels and cupy.fuse; JAX jit
    python3 fuse_peer.py gpu-more SIZE ROW REDUCE_ROW CHAINS REPS WARMUP_S  # CuPy: the gufunc chain, the sum chain

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


def timed(fn, reps):
    fn()
    runs = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        runs.append(time.perf_counter() - t0)
    return runs


def numba_more(np, target, ufuncs, x, y, row, reduce_row, reps, results):
    """The gufunc chain mul(normalize(x), w) and the chain sum(gauss(saxpy(2, x, y)), axis=1): separate calls vs one @njit loop.
    `ufuncs`: numba_peer's saxpy, gauss and mul for this target."""
    saxpy, gauss, mul = ufuncs
    from numba import guvectorize, njit, prange

    @guvectorize(['void(float32[:], float32[:])'], '(n)->(n)', target=target)
    def normalize(v, out):
        s = 0.0
        for i in range(v.shape[0]):
            s += v[i] * v[i]
        r = np.sqrt(s)
        for i in range(v.shape[0]):
            out[i] = v[i] / r

    par = target == 'parallel'

    @njit(parallel=par)
    def gufunc_loop(xm, w):
        v = np.empty_like(xm)
        for r in prange(xm.shape[0]):
            s = 0.0
            for i in range(xm.shape[1]):
                s += xm[r, i] * xm[r, i]
            q = np.sqrt(s)
            for i in range(xm.shape[1]):
                v[r, i] = np.float32(xm[r, i] / q) * w[i]
        return v

    @njit(parallel=par)
    def sum_loop(xm, ym):
        v = np.empty(xm.shape[0], dtype=np.float32)
        for r in prange(xm.shape[0]):
            s = np.float32(0)
            for i in range(xm.shape[1]):
                t = np.float32(2) * xm[r, i] + ym[r, i]
                s += np.float32(np.exp(-t * t))
            v[r] = s
        return v

    xm, w = x.reshape(-1, row), y[:row].copy()
    xr, yr = x.reshape(-1, reduce_row), y.reshape(-1, reduce_row)
    want_g = mul(normalize(xm), w)
    want_s = np.add.reduce(gauss(saxpy(np.float32(2), xr, yr)), axis=1)
    for name, fn, want, got in (
        ('gufunc chain: @guvectorize + @vectorize', lambda: mul(normalize(xm), w), want_g, None),
        ('gufunc chain: one @njit loop', lambda: gufunc_loop(xm, w), want_g, None),
        ('sum chain (axis 1): @vectorize x2 + np.add.reduce', lambda: np.add.reduce(gauss(saxpy(np.float32(2), xr, yr)), axis=1), want_s, None),
        ('sum chain (axis 1): one @njit loop', lambda: sum_loop(xr, yr), want_s, None),
    ):
        got = fn()
        runs = timed(fn, reps)
        ok = np.allclose(np.asarray(got), want, rtol=1e-4, atol=1e-5)
        results[f'{target}: more: {name}'] = {'median_s': median(runs), 'runs_s': runs, 'check': 'ok' if ok else 'wrong results'}


def numba_peer(n, reps, row=None, reduce_row=None):
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
            runs = timed(fn, reps)
            report['results'][f'{target}: {name}'] = {'median_s': median(runs), 'runs_s': runs, 'check': check(np, got, x, y)}
        if row:
            numba_more(np, target, (saxpy, gauss, mul), x, y, row, reduce_row, reps, report['results'])
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


def gpu_more(n, row, reduce_row, chains, reps, warmup_s):
    """CuPy: the gufunc chain as array expressions (x / norm(x) * w), the sum chain as kernels + cupy.sum and as cupy.fuse with the reduction."""
    import numpy as np
    report = {'size': n, 'results': {}, 'skipped': {}}
    hx, hy = make_inputs(np, n)
    try:
        import cupy as cp
        xm, w = cp.asarray(hx.reshape(-1, row)), cp.asarray(hy[:row])
        xr, yr = cp.asarray(hx.reshape(-1, reduce_row)), cp.asarray(hy.reshape(-1, reduce_row))
        sync = lambda: cp.cuda.Device().synchronize()
        report['results'][f'gufunc chain, rows of {row}: x / sqrt(sum(x*x, axis=1)) * w'] = time_chains(sync, lambda: xm / cp.sqrt(cp.sum(xm * xm, axis=1, keepdims=True)) * w, chains, reps, warmup_s)

        @cp.fuse(kernel_name='sum_chain')
        def sum_chain(x, y):
            s = np.float32(2) * x + y
            return cp.sum(cp.exp(-s * s), axis=1)

        report['results'][f'sum chain, rows of {reduce_row}: 2 ops + cupy.sum'] = time_chains(sync, lambda: cp.sum(cp.exp(-(np.float32(2) * xr + yr) ** 2), axis=1), chains, reps, warmup_s)
        report['results'][f'sum chain, rows of {reduce_row}: cupy.fuse with the sum'] = time_chains(sync, lambda: sum_chain(xr, yr), chains, reps, warmup_s)
    except Exception as e:
        report['skipped']['cupy'] = f'{type(e).__name__}: {e}'
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
        more = [int(a) for a in sys.argv[4:6]]
        print(json.dumps(numba_peer(int(sys.argv[2]), int(sys.argv[3]), *more)))
    elif mode == 'gpu-more':
        print(json.dumps(gpu_more(*[int(a) for a in sys.argv[2:7]], float(sys.argv[7]))))
    else:
        print(json.dumps(gpu_peer(int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), float(sys.argv[5]))))
