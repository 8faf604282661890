"""Device code: the `numba.cuda.jit` kernels every CUDA op is assembled from.

Arrays reach these kernels flat (1-D, C-contiguous: every device array jitflow makes is
contiguous), with shapes and element strides passed as tuples, so one kernel serves
every rank; a stride of 0 broadcasts. Kernels are compiled lazily, on first launch per
signature, by numba. Block sizes are constants the kernels close over; under the CUDA
simulator (one Python thread per GPU thread) they are tiny so tests stay fast.

- `map1/map2/map3(fn)`: elementwise kernels around a scalar function (the CPU kernels'
  own `add_`, `tanh_`, ... wrapped with `cuda.jit(device=True)`), strided or flat.
- `copy_strided`: dst view ← src view (transpose, slice, broadcast, concat, pad).
- `row_reduce(combine)`: tree reduction in shared memory, one block per (row, chunk).
- `row_arg(greater)`, `row_softmax`: per-row tree reductions with an index / two passes.
- `matmul(acc)`: tiled matrix product through shared memory, batched over grid z.
- random fills on numba's xoroshiro128+ states, gather, atomic segment sum, row scatter.
"""
from __future__ import annotations

import functools
import math
from typing import Any, Callable, Tuple

import numba
from numba import cuda
from numba.cuda.random import (xoroshiro128p_normal_float64, xoroshiro128p_uniform_float64)

from jitflow.runtime.core import devices, lazyjit

# numba through jitflow's loader first: it registers jitflow's overloads (the float32 tanh
# the scalar kernels call) before any CUDA kernel built from those kernels compiles.
lazyjit.numba()

SIM = devices.simulated()
TPB = 64 if SIM else 256              # threads per block of 1-D kernels
RED = 2 if SIM else 256               # threads of a reduction block (a power of two)
TILE = 2 if SIM else 16               # matmul tile edge
MAX_BLOCKS = 16 if SIM else 16384     # 1-D kernels loop over the rest (grid-stride)
ROW_THREAD_COLS = 2 if SIM else 32    # rows this short are reduced one thread per row
RANDOM_THREADS = 8 if SIM else 16384  # generator states per random node


def grid(n: int) -> Tuple[int, int]:
    """(blocks, threads) for a grid-stride kernel over `n` items."""
    threads = min(TPB, max(n, 1))
    return min(MAX_BLOCKS, -(-n // threads)) or 1, threads


@cuda.jit(device=True)
def offset(i, shape, strides):
    """Element offset of flat index `i` of `shape` in an array with `strides` (in elements)."""
    off = 0
    for d in range(len(shape) - 1, -1, -1):
        n = shape[d]
        off += (i % n) * strides[d]
        i //= n
    return off


def identity_(a):
    return a


def select_(c, x, y):
    return x if c else y


_device_fns: dict = {}


def device_fn(fn: Callable) -> Any:
    """`fn` compiled for the device (once per Python function)."""
    found = _device_fns.get(fn)
    if found is None:
        found = _device_fns[fn] = cuda.jit(device=True)(fn)
    return found


# -- elementwise -------------------------------------------------------------------------------
@functools.lru_cache(maxsize=None)
def map1(fn: Callable) -> Any:
    f = device_fn(fn)

    @cuda.jit
    def kernel(out, a, a_off, a_st, shape):
        for i in range(cuda.grid(1), out.size, cuda.gridsize(1)):
            out[i] = f(a[a_off + offset(i, shape, a_st)])
    return kernel


@functools.lru_cache(maxsize=None)
def map1_flat(fn: Callable) -> Any:
    f = device_fn(fn)

    @cuda.jit
    def kernel(out, a):
        for i in range(cuda.grid(1), out.size, cuda.gridsize(1)):
            out[i] = f(a[i])
    return kernel


@functools.lru_cache(maxsize=None)
def map2(fn: Callable) -> Any:
    f = device_fn(fn)

    @cuda.jit
    def kernel(out, a, a_st, b, b_st, shape):
        for i in range(cuda.grid(1), out.size, cuda.gridsize(1)):
            out[i] = f(a[offset(i, shape, a_st)], b[offset(i, shape, b_st)])
    return kernel


@functools.lru_cache(maxsize=None)
def map2_flat(fn: Callable) -> Any:
    f = device_fn(fn)

    @cuda.jit
    def kernel(out, a, b):
        for i in range(cuda.grid(1), out.size, cuda.gridsize(1)):
            out[i] = f(a[i], b[i])
    return kernel


@functools.lru_cache(maxsize=None)
def map3(fn: Callable) -> Any:
    f = device_fn(fn)

    @cuda.jit
    def kernel(out, a, a_st, b, b_st, c, c_st, shape):
        for i in range(cuda.grid(1), out.size, cuda.gridsize(1)):
            out[i] = f(a[offset(i, shape, a_st)], b[offset(i, shape, b_st)], c[offset(i, shape, c_st)])
    return kernel


@cuda.jit
def copy_strided(dst, d_off, d_st, src, s_off, s_st, shape, n):
    for i in range(cuda.grid(1), n, cuda.gridsize(1)):
        dst[d_off + offset(i, shape, d_st)] = src[s_off + offset(i, shape, s_st)]


@cuda.jit
def fill(out, value):
    for i in range(cuda.grid(1), out.size, cuda.gridsize(1)):
        out[i] = value


@cuda.jit
def arange(out, start, delta):
    for i in range(cuda.grid(1), out.size, cuda.gridsize(1)):
        out[i] = start[0] + i * delta[0]


@cuda.jit
def mean_finish(out, total, count, integer):
    for i in range(cuda.grid(1), out.size, cuda.gridsize(1)):
        if integer:
            out[i] = int(total[i] / count)  # truncates toward zero, as TF
        else:
            out[i] = total[i] / count


# -- reductions --------------------------------------------------------------------------------
def all_(a, b):
    return a if b else 0


def any_(a, b):
    return 1 if b else a


@functools.lru_cache(maxsize=None)
def row_reduce(fn: Callable, acc: str) -> Any:
    """out[row * parts + part] = fn-fold of x[row, chunk `part`], by a tree in shared memory."""
    comb = device_fn(fn)
    acc_t = getattr(numba, acc)

    @cuda.jit
    def kernel(x, cols, chunk, init, out):
        t = cuda.threadIdx.x
        row = cuda.blockIdx.x
        part = cuda.blockIdx.y
        sh = cuda.shared.array(RED, acc_t)
        begin = part * chunk
        end = begin + chunk  # (no builtin min/max in kernels: numba 0.68's CUDA typing of them fails)
        if end > cols:
            end = cols
        base = row * cols
        a = init
        j = begin + t
        while j < end:
            a = comb(a, x[base + j])
            j += RED
        sh[t] = a
        cuda.syncthreads()
        s = RED // 2
        while s > 0:
            if t < s:
                sh[t] = comb(sh[t], sh[t + s])
            cuda.syncthreads()
            s //= 2
        if t == 0:
            out[row * cuda.gridDim.y + part] = sh[0]
    return kernel


@functools.lru_cache(maxsize=None)
def rows_by_thread(fn: Callable) -> Any:
    """One thread per row: for many short rows, where a block per row would idle."""
    comb = device_fn(fn)

    @cuda.jit
    def kernel(x, cols, init, out):
        for row in range(cuda.grid(1), out.size, cuda.gridsize(1)):
            a = init
            for j in range(cols):
                a = comb(a, x[row * cols + j])
            out[row] = a
    return kernel


@functools.lru_cache(maxsize=None)
def row_arg(greater: bool, acc: str) -> Any:
    """Index of the first max (min) of each row, NaN ignored unless it is the first value (as the CPU)."""
    acc_t = getattr(numba, acc)

    @cuda.jit
    def kernel(x, cols, out):
        t = cuda.threadIdx.x
        row = cuda.blockIdx.x
        sv = cuda.shared.array(RED, acc_t)
        si = cuda.shared.array(RED, numba.int64)
        base = row * cols
        best_i = cols  # none yet
        best_v = x[base]
        j = t
        while j < cols:
            v = x[base + j]
            if v == v and (best_i == cols or (v > best_v if greater else v < best_v)):
                best_v = v
                best_i = j
            j += RED
        sv[t] = best_v
        si[t] = best_i
        cuda.syncthreads()
        s = RED // 2
        while s > 0:
            if t < s:
                vi, vj = sv[t], sv[t + s]
                ii, ij = si[t], si[t + s]
                if ij != cols and (ii == cols or (vj > vi if greater else vj < vi) or (vj == vi and ij < ii)):
                    sv[t] = vj
                    si[t] = ij
            cuda.syncthreads()
            s //= 2
        if t == 0:
            first = x[base]
            out[row] = 0 if (first != first or si[0] == cols) else si[0]
    return kernel


@cuda.jit(device=True)
def _max_nan(a, b):
    if a != a:
        return a
    if b != b:
        return b
    return a if a >= b else b


@cuda.jit
def row_softmax(x, cols, out, log):
    t = cuda.threadIdx.x
    row = cuda.blockIdx.x
    sh = cuda.shared.array(RED, numba.float64)
    base = row * cols
    m = -math.inf
    j = t
    while j < cols:
        m = _max_nan(m, numba.float64(x[base + j]))
        j += RED
    sh[t] = m
    cuda.syncthreads()
    s = RED // 2
    while s > 0:
        if t < s:
            sh[t] = _max_nan(sh[t], sh[t + s])
        cuda.syncthreads()
        s //= 2
    m = sh[0]
    cuda.syncthreads()
    total = 0.0
    j = t
    while j < cols:
        total += math.exp(numba.float64(x[base + j]) - m)
        j += RED
    sh[t] = total
    cuda.syncthreads()
    s = RED // 2
    while s > 0:
        if t < s:
            sh[t] += sh[t + s]
        cuda.syncthreads()
        s //= 2
    total = sh[0]
    lse = m + math.log(total)
    j = t
    while j < cols:
        v = numba.float64(x[base + j])
        if log:
            out[base + j] = v - lse
        else:
            out[base + j] = math.exp(v - m) / total
        j += RED


# -- matmul ------------------------------------------------------------------------------------
@functools.lru_cache(maxsize=None)
def matmul(acc: str) -> Any:
    """out[z, i, j] = Σ_k a[z, i, k] b[z, k, j] with TILE×TILE tiles in shared memory.

    `a` and `b` are flat with element strides (batch, row, col), so transposes and a
    broadcast batch (stride 0) need no copy.
    """
    acc_t = getattr(numba, acc)

    @cuda.jit
    def kernel(a, a_st, b, b_st, out, m, n, k, batches, zero):
        ta = cuda.shared.array((TILE, TILE), acc_t)
        tb = cuda.shared.array((TILE, TILE), acc_t)
        tx = cuda.threadIdx.x
        ty = cuda.threadIdx.y
        row = cuda.blockIdx.y * TILE + ty
        col = cuda.blockIdx.x * TILE + tx
        for z in range(cuda.blockIdx.z, batches, cuda.gridDim.z):
            total = zero
            for k0 in range(0, k, TILE):
                kk = k0 + tx
                if row < m and kk < k:
                    ta[ty, tx] = a[z * a_st[0] + row * a_st[1] + kk * a_st[2]]
                else:
                    ta[ty, tx] = 0
                kk = k0 + ty
                if kk < k and col < n:
                    tb[ty, tx] = b[z * b_st[0] + kk * b_st[1] + col * b_st[2]]
                else:
                    tb[ty, tx] = 0
                cuda.syncthreads()
                for q in range(TILE):
                    total += ta[ty, q] * tb[q, tx]
                cuda.syncthreads()
            if row < m and col < n:
                out[(z * m + row) * n + col] = total
    return kernel


# -- random ------------------------------------------------------------------------------------
@cuda.jit
def random_normal(states, out, mean, stddev):
    tid = cuda.grid(1)
    n = states.shape[0]
    if tid < n:
        for i in range(tid, out.size, n):
            out[i] = mean[0] + stddev[0] * xoroshiro128p_normal_float64(states, tid)


@cuda.jit
def random_uniform(states, out, low, high, eps):
    tid = cuda.grid(1)
    n = states.shape[0]
    if tid < n:
        lo = numba.float64(low[0])
        hi = numba.float64(high[0])
        for i in range(tid, out.size, n):
            out[i] = lo + (hi - lo) * xoroshiro128p_uniform_float64(states, tid)
            if lo < hi and out[i] >= hi:  # rounding to the dtype reached `high`: keep it out
                scale = hi if hi > 0 else -hi
                if hi - lo > scale:
                    scale = hi - lo
                out[i] = hi - scale * eps


@cuda.jit
def random_uniform_int(states, out, low, high):
    tid = cuda.grid(1)
    n = states.shape[0]
    if tid < n:
        lo = numba.int64(low[0])
        hi = numba.int64(high[0])
        span = numba.float64(hi) - numba.float64(lo)
        for i in range(tid, out.size, n):
            v = lo + numba.int64(xoroshiro128p_uniform_float64(states, tid) * span)
            out[i] = v if v < hi else hi - 1


# -- gather / scatter ----------------------------------------------------------------------------
@cuda.jit
def gather(params, ids, out, axis_n, inner, n_ids):
    """out[o, j, r] = params[o, ids[j], r]; an index out of range gives 0 (TF's GPU kernel)."""
    for i in range(cuda.grid(1), out.size, cuda.gridsize(1)):
        r = i % inner
        j = (i // inner) % n_ids
        o = i // (inner * n_ids)
        idx = ids[j]
        if 0 <= idx < axis_n:
            out[i] = params[(o * axis_n + idx) * inner + r]
        else:
            out[i] = 0


@cuda.jit
def segment_sum(data, ids, out, n_seg, inner, n):
    """Atomic adds into `out` (zero-filled), one per input element; negative ids are dropped."""
    for i in range(cuda.grid(1), n, cuda.gridsize(1)):
        seg = ids[i // inner]
        if 0 <= seg < n_seg:
            cuda.atomic.add(out, seg * inner + i % inner, data[i])


@cuda.jit
def scatter_rows(out, ids, updates, rows, inner, n):
    for i in range(cuda.grid(1), n, cuda.gridsize(1)):
        r = ids[i // inner]
        if 0 <= r < rows:
            out[r * inner + i % inner] = updates[i]
