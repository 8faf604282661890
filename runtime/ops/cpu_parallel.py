"""Intra-op parallelism of the CPU kernels: one kernel's work split over a few threads.

TensorFlow runs a convolution on every core (its intra-op thread pool); a kernel here
does the same by cutting its work into contiguous chunks (images of a batch, groups of
them) and running each chunk's numba function on its own thread. Those functions are
compiled `nogil=True`, so plain Python threads run them truly in parallel, each calling a
single-threaded BLAS on its own rows: no second thread pool (OpenBLAS's, numba's OpenMP)
spinning next to this one, which is what made threaded BLAS slow on a shared machine.

Chunks are contiguous and their boundaries depend only on the sizes (kernels choose them),
so which thread runs a chunk never changes a result. A kernel called from inside a
worker (a kernel in a kernel) runs serially rather than waiting on its own pool.

The number of threads is `JITFLOW_INTRA_OP_THREADS` when set, else the CPUs this process
may use; `set_intra_op_threads(n)` changes it (1: everything on the calling thread).
"""
from __future__ import annotations

import os
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Callable, List, Optional

_lock = threading.Lock()
_local = threading.local()
_pool: Optional[ThreadPoolExecutor] = None
_threads: Optional[int] = None


def _usable_cpus() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


def _from_environment() -> int:
    value = os.environ.get("JITFLOW_INTRA_OP_THREADS", "").strip()
    if not value:
        return _usable_cpus()
    try:
        n = int(value)
    except ValueError:
        raise ValueError(f"JITFLOW_INTRA_OP_THREADS: expected a positive integer; got {value!r}") from None
    if n < 1:
        raise ValueError(f"JITFLOW_INTRA_OP_THREADS: expected a positive integer; got {value!r}")
    return n


def intra_op_threads() -> int:
    """How many threads one kernel may use (the calling thread included)."""
    global _threads
    if _threads is None:
        _threads = _from_environment()
    return _threads


def set_intra_op_threads(n: int) -> None:
    """Use at most `n` threads per kernel (0: back to the default)."""
    global _threads, _pool
    if not isinstance(n, int) or isinstance(n, bool) or n < 0:
        raise ValueError(f"n: expected a non-negative integer (0 for the default); got {n!r}")
    with _lock:
        _threads = n or _from_environment()
        old, _pool = _pool, None
    if old is not None:
        old.shutdown(wait=False)


def _executor() -> ThreadPoolExecutor:
    global _pool
    pool = _pool
    if pool is None:
        with _lock:
            if _pool is None:
                _pool = ThreadPoolExecutor(max(1, intra_op_threads() - 1), thread_name_prefix="jitflow-intra-op")
            pool = _pool
    return pool


def _in_worker(fn: Callable[[int, int], None], lo: int, hi: int) -> None:
    _local.busy = True
    try:
        fn(lo, hi)
    finally:
        _local.busy = False


def workers(n_items: int) -> int:
    """The number of chunks `run` would cut `n_items` items into."""
    if getattr(_local, "busy", False):
        return 1
    return max(1, min(intra_op_threads(), n_items))


def run(fn: Callable[[int, int], None], n_items: int, chunks: int = 0) -> None:
    """Call `fn(lo, hi)` for contiguous chunks covering `range(n_items)`, the chunks in parallel.

    `chunks` (default: `workers(n_items)`) is how many; the first runs on the calling
    thread. Every chunk has finished when this returns, also when one raised (the first
    error is re-raised), so the caller's buffers are never written after it returns.
    """
    t = min(chunks or workers(n_items), n_items)
    if t <= 1:
        fn(0, n_items)
        return
    bounds = [n_items * k // t for k in range(t + 1)]
    pool = _executor()
    futures: List[Future] = [pool.submit(_in_worker, fn, bounds[k], bounds[k + 1]) for k in range(1, t)]
    error: Optional[BaseException] = None
    try:
        _in_worker(fn, bounds[0], bounds[1])
    except BaseException as e:  # still wait for the others: they write into the caller's buffers
        error = e
    for f in futures:
        e = f.exception()
        if error is None and e is not None:
            error = e
    if error is not None:
        raise error


def _after_fork() -> None:  # the pool's threads do not exist in a forked child
    global _pool
    _pool = None


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork)
