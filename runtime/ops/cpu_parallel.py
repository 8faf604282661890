"""Intra-op parallelism of the CPU kernels: one kernel's work split over a few threads.

TensorFlow runs a convolution on every core (its intra-op thread pool); a kernel here
does the same by cutting its work into contiguous pieces (images of a batch, blocks or
chains of them) that the calling thread and a small pool claim in turn (`run`), each
piece one call of a numba function. Those functions are
compiled `nogil=True`, so plain Python threads run them truly in parallel, each calling a
single-threaded BLAS on its own rows: no second thread pool (OpenBLAS's, numba's OpenMP)
spinning next to this one, which is what made threaded BLAS slow on a shared machine.

Where the pieces fall depends on timing, so kernels make their results independent of it:
each image's output is computed by the same arithmetic whichever piece holds it, and sums
over the batch go through chains fixed by the sizes (`conv_cpu.chain_bounds`), added in
order. A kernel called from inside a piece (a kernel in a kernel) runs serially rather
than waiting on its own pool.

The number of threads is `JITFLOW_INTRA_OP_THREADS` when set, else the CPUs this process
may use; `set_intra_op_threads(n)` changes it (1: everything on the calling thread).
"""
from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Callable, Optional, Tuple

_lock = threading.Lock()
_local = threading.local()
_pool: Optional[ThreadPoolExecutor] = None
_pool_size = 0
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
    """Use at most `n` threads per kernel (0: back to the default). The pool's threads are kept
    (idle) when fewer are wanted, so switching back and forth is cheap."""
    global _threads
    if not isinstance(n, int) or isinstance(n, bool) or n < 0:
        raise ValueError(f"n: expected a non-negative integer (0 for the default); got {n!r}")
    _threads = n or _from_environment()


def _executor(workers: int) -> ThreadPoolExecutor:
    global _pool, _pool_size
    pool = _pool
    if pool is None or _pool_size < workers:
        with _lock:
            if _pool is None or _pool_size < workers:
                old, _pool = _pool, ThreadPoolExecutor(workers, thread_name_prefix="jitflow-intra-op")
                _pool_size = workers
                if old is not None:
                    old.shutdown(wait=False)
            pool = _pool
    return pool


class _Job:
    """One kernel call's items, which threads claim in pieces until none is left.

    Pieces shrink as the work runs out (a thread claims its share of what is left, halved:
    "guided" scheduling). A thread the OS deschedules on a loaded machine delays only the
    piece it holds, and the last pieces, the ones others may have to wait for, are small.
    """

    def __init__(self, fn: Callable[[int, int], None], n_items: int, threads: int) -> None:
        self.fn, self.n_items, self.threads = fn, n_items, threads
        self._start = 0
        self._finished = 0
        self._lock = threading.Lock()
        self.done = threading.Event()
        self.error: Optional[BaseException] = None

    def _claim(self) -> Optional[Tuple[int, int]]:
        with self._lock:
            lo = self._start
            if lo >= self.n_items:
                return None
            hi = lo + max(1, (self.n_items - lo) // (2 * self.threads))
            self._start = hi
            return lo, hi

    def drain(self) -> None:
        busy, _local.busy = getattr(_local, "busy", False), True
        try:
            while True:
                piece = self._claim()
                if piece is None:
                    return
                try:
                    self.fn(*piece)
                except BaseException as e:  # kept for the caller; the other pieces still run
                    if self.error is None:
                        self.error = e
                with self._lock:
                    self._finished += piece[1] - piece[0]
                    if self._finished == self.n_items:
                        self.done.set()
        finally:
            _local.busy = busy


def workers(n_items: int) -> int:
    """How many threads `run` would use for `n_items` items."""
    if getattr(_local, "busy", False):
        return 1
    return max(1, min(intra_op_threads(), n_items))


def run(fn: Callable[[int, int], None], n_items: int) -> None:
    """Call `fn(lo, hi)` on contiguous pieces covering `range(n_items)`, on up to
    `intra_op_threads()` threads (the calling thread one of them).

    Every piece has finished when this returns, also when one raised (the first error is
    re-raised), so the caller's buffers are never written after it returns. A worker
    that starts late finds nothing left and is not waited for.
    """
    t = workers(n_items)
    if t <= 1:
        fn(0, n_items)
        return
    job = _Job(fn, n_items, t)
    pool = _executor(t - 1)
    for _ in range(t - 1):
        pool.submit(job.drain)
    job.drain()
    job.done.wait()
    if job.error is not None:
        raise job.error


def _after_fork() -> None:  # the pool's threads do not exist in a forked child
    global _pool, _pool_size
    _pool, _pool_size = None, 0


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork)
