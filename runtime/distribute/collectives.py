"""MPI collectives for the workers: fused all-reduce, broadcast, and a watchdog against dead peers.

All-reduce: the arrays of one call are packed, per dtype, into contiguous buffers of at
most `bucket_bytes` (Horovod's tensor fusion) and each buffer is reduced in place with
one `MPI_Allreduce`; the results are views of those buffers. One large call moves the
same bytes as many small ones, with a fraction of the latency.

Liveness: a blocking MPI call whose peer died never returns (MPICH and Open MPI wait for
the peer, or for the launcher to kill the job). So the MPI calls run on one collective
thread, and the calling thread waits for them while watching the peers: a worker on the
same host that exited, or any collective that takes longer than `timeout` seconds,
raises `jf.errors.UnavailableError` / `DeadlineExceededError` naming the worker and the
collective. The communicator is then broken: later collectives raise at once, and the
process exits without `MPI_Finalize` (which would wait for the dead peer too).
"""
from __future__ import annotations

import functools

import atexit
import os
import queue
import signal
import socket
import sys
import threading
import time
from typing import Any, Callable, Dict, List, Optional, Tuple

import numpy as np

from jitflow.runtime.core.errors import DeadlineExceededError, UnavailableError
from jitflow.runtime.core.tensor import host_array
from jitflow.runtime.ops.registry import not_differentiable, register

DEFAULT_BUCKET_BYTES = 8 << 20
_POLL_S = 0.02


def _pid_alive(pid: int) -> bool:
    """False once `pid` has exited (a zombie, not yet reaped by the launcher, counts as exited)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            state = f.read().rsplit(b")", 1)[1].split()[0]
        return state not in (b"Z", b"X")
    except FileNotFoundError:
        return False
    except OSError:
        try:
            os.kill(pid, 0)
            return True
        except ProcessLookupError:
            return False
        except PermissionError:
            return True


class Communicator:
    """One MPI communicator of the job, used by `MultiWorkerMirroredStrategy`."""

    def __init__(self, comm: Any, mpi: Any, timeout: Optional[float], bucket_bytes: int = DEFAULT_BUCKET_BYTES) -> None:
        self.comm = comm
        self.mpi = mpi
        self.rank = comm.Get_rank()
        self.size = comm.Get_size()
        self.timeout = timeout
        self.bucket_bytes = int(bucket_bytes)
        self.broken: Optional[BaseException] = None
        self.calls = 0
        comm.Set_errhandler(mpi.ERRORS_RETURN)  # MPI errors become Python exceptions, not aborts
        self.host = socket.gethostname()
        self.peers: List[Tuple[str, int]] = comm.allgather((self.host, os.getpid()))
        self._jobs: "queue.Queue[Optional[Tuple[Callable[[], Any], Dict[str, Any], threading.Event]]]" = queue.Queue()
        self._thread = threading.Thread(target=self._serve, name="jitflow-mpi-collectives", daemon=True)
        self._thread.start()
        self._listen_for_launcher()

    def _listen_for_launcher(self) -> None:
        """MPICH's mpiexec tells the surviving processes of a job that one failed with SIGUSR1
        (whose default action kills them silently): turn it into the same clear error."""
        if "MPICH" not in self.mpi.Get_library_version() or threading.current_thread() is not threading.main_thread():
            return
        if signal.getsignal(signal.SIGUSR1) not in (signal.SIG_DFL, None):
            return  # the program handles it itself

        def on_peer_failure(signum: int, frame: Any) -> None:
            if self.broken is not None:
                return
            dead = self._dead_peers()
            for _ in range(25):  # the launcher may signal before the dead process is gone: name it if local
                if dead:
                    break
                time.sleep(0.02)
                dead = self._dead_peers()
            who = (", ".join(f"worker {r} (pid {self.peers[r][1]} on {self.peers[r][0]})" for r in dead)
                   if dead else "another worker")
            self._break(UnavailableError(
                f"worker {self.rank}: the MPI launcher reports that {who} of the job failed. The job stops here; "
                "restart it (from the last checkpoint) with all workers"))
        signal.signal(signal.SIGUSR1, on_peer_failure)

    # -- the collective thread and the watchdog -------------------------------------------------
    def _serve(self) -> None:
        while True:
            job = self._jobs.get()
            if job is None:
                return
            fn, box, done = job
            try:
                box["value"] = fn()
            except BaseException as e:  # noqa: B036 - handed to the waiting caller
                box["error"] = e
            done.set()

    def _dead_peers(self) -> List[int]:
        return [r for r, (host, pid) in enumerate(self.peers)
                if r != self.rank and host == self.host and not _pid_alive(pid)]

    def run(self, what: str, fn: Callable[[], Any]) -> Any:
        """Run the MPI call `fn` on the collective thread; wait for it while watching the peers."""
        self._check_usable(what)
        self.calls += 1
        return self._await(what, [self._submit(fn)])[0]

    def _check_usable(self, what: str) -> None:
        if self.broken is not None:
            raise UnavailableError(f"worker {self.rank}: {what}: the job is broken since an earlier collective "
                                   f"failed ({self.broken})")

    def _submit(self, fn: Callable[[], Any]) -> Tuple[Dict[str, Any], threading.Event]:
        box: Dict[str, Any] = {}
        done = threading.Event()
        self._jobs.put((fn, box, done))
        return box, done

    def _await(self, what: str, jobs: List[Tuple[Dict[str, Any], threading.Event]]) -> List[Any]:
        """Wait for `jobs` (in order) while watching the peers and the deadline."""
        start = time.monotonic()
        for _box, done in jobs:
            while not done.wait(_POLL_S):
                dead = self._dead_peers()
                if dead:
                    who = ", ".join(f"worker {r} (pid {self.peers[r][1]} on {self.peers[r][0]})" for r in dead)
                    self._break(UnavailableError(
                        f"worker {self.rank}: {what} (collective #{self.calls}) cannot complete: {who} exited "
                        "during training. The job stops here; restart it (from the last checkpoint) with all "
                        "workers"))
                elif self.timeout is not None and time.monotonic() - start > self.timeout:
                    self._break(DeadlineExceededError(
                        f"worker {self.rank}: {what} (collective #{self.calls}) did not complete within "
                        f"{self.timeout:g} s: a worker died, hangs, or makes different collective calls "
                        "(set collective_timeout= or JITFLOW_COLLECTIVE_TIMEOUT to wait longer)"))
        for box, _done in jobs:
            if "error" in box:
                raise box["error"]
        return [box.get("value") for box, _done in jobs]

    def _break(self, error: BaseException) -> None:
        self.broken = error
        _exit_without_finalize()
        raise error

    # -- the collectives -----------------------------------------------------------------------
    def allreduce(self, arrays: List[np.ndarray], what: str = "all-reduce") -> List[np.ndarray]:
        """Elementwise sums over the workers, packed into per-dtype buckets of contiguous memory.

        The buckets are pipelined: while the collective thread reduces one, this thread packs
        the next. A bucket of one array is reduced from that array into a new one (no packing).
        """
        self._check_usable(what)
        self.calls += 1
        arrays = [np.asarray(a, order="C") for a in arrays]  # (ascontiguousarray makes 0-d arrays 1-d)
        out: List[Optional[np.ndarray]] = [None] * len(arrays)
        jobs = []
        results = []
        for dtype, members in self._buckets(arrays):
            if len(members) == 1:
                source = arrays[members[0]]
                result = np.empty(source.size, dtype=dtype)
                jobs.append(self._submit(functools.partial(self.comm.Allreduce, source.reshape(-1), result,
                                                           op=self.mpi.SUM)))
            else:
                result = np.empty(sum(arrays[i].size for i in members), dtype=dtype)
                offset = 0
                for i in members:
                    n = arrays[i].size
                    result[offset:offset + n] = arrays[i].reshape(-1)
                    offset += n
                jobs.append(self._submit(functools.partial(self.comm.Allreduce, self.mpi.IN_PLACE, result,
                                                           op=self.mpi.SUM)))
            results.append((members, result))
        self._await(what, jobs)
        for members, result in results:
            offset = 0
            for i in members:
                n = arrays[i].size
                out[i] = result[offset:offset + n].reshape(arrays[i].shape)
                offset += n
        return out  # type: ignore[return-value]

    def _buckets(self, arrays: List[np.ndarray]) -> List[Tuple[np.dtype, List[int]]]:
        by_dtype: Dict[np.dtype, List[int]] = {}
        for i, a in enumerate(arrays):
            if a.dtype.kind not in "biuf":
                raise TypeError(f"all-reduce: expected numeric tensors; got dtype {a.dtype}")
            by_dtype.setdefault(a.dtype, []).append(i)
        buckets: List[Tuple[np.dtype, List[int]]] = []
        for dtype, members in by_dtype.items():
            current: List[int] = []
            size = 0
            for i in members:
                nbytes = arrays[i].nbytes
                if current and size + nbytes > self.bucket_bytes:
                    buckets.append((dtype, current))
                    current, size = [], 0
                current.append(i)
                size += nbytes
            if current:
                buckets.append((dtype, current))
        return buckets

    def broadcast(self, arrays: List[np.ndarray], root: int = 0, what: str = "broadcast") -> List[np.ndarray]:
        """Every worker gets `root`'s arrays (same shapes and dtypes on every worker)."""
        arrays = [np.array(a, copy=True, order="C") for a in arrays]
        buckets = self._buckets(arrays)

        def bcast_all() -> None:
            for dtype, members in buckets:
                buffer = np.concatenate([arrays[i].reshape(-1) for i in members]).astype(dtype, copy=False)
                self.comm.Bcast(buffer, root=root)
                offset = 0
                for i in members:
                    n = arrays[i].size
                    arrays[i] = buffer[offset:offset + n].reshape(arrays[i].shape)
                    offset += n
        self.run(what, bcast_all)
        return arrays

    def allgather_object(self, value: Any, what: str = "allgather") -> List[Any]:
        return self.run(what, lambda: self.comm.allgather(value))

    def allgather_arrays(self, array: np.ndarray, axis: int, what: str = "all-gather") -> np.ndarray:
        parts = self.allgather_object(np.asarray(array, order="C"), what)
        return np.concatenate(parts, axis=axis)

    def barrier(self, what: str = "barrier") -> None:
        self.run(what, self.comm.Barrier)


# -- exiting without MPI_Finalize once the job is broken ------------------------------------------
_exit_code: List[int] = []


def _exit_without_finalize() -> None:
    if not _exit_code:
        _exit_code.append(1)
        atexit.register(_hard_exit)  # registered last, so it runs before mpi4py's MPI_Finalize


def _hard_exit() -> None:
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    finally:
        os._exit(_exit_code[0] if _exit_code else 1)


# -- the graph ops: the same collectives inside a jf.function -------------------------------------
def _same_specs(specs, attrs):
    return [(dims, dtype) for dims, dtype in specs]


def _allreduce_kernel(*arrays, communicator):
    out = communicator.allreduce([np.asarray(host_array(a)) for a in arrays])
    return out[0] if len(out) == 1 else tuple(out)


def _allgather_infer(specs, attrs):
    dims, dtype = specs[0]
    return [(None if dims is None else tuple(None if i == attrs["axis"] else d for i, d in enumerate(dims)), dtype)]


def _allgather_kernel(array, communicator, axis):
    return communicator.allgather_arrays(np.asarray(host_array(array)), axis)


register("JfCollectiveAllReduce", _same_specs, cpu=_allreduce_kernel, public_name="distribute all-reduce",
         stateful=True, doc="Sum of each input over the MPI workers (MultiWorkerMirroredStrategy).")
register("JfCollectiveAllGather", _allgather_infer, cpu=_allgather_kernel, public_name="distribute all-gather",
         stateful=True, doc="Concatenation of the input over the MPI workers along `axis`.")
not_differentiable("JfCollectiveAllReduce", "JfCollectiveAllGather")
