"""`MultiWorkerMirroredStrategy`: synchronous data parallelism over processes, through MPI.

Start one process per worker with `mpiexec -n 4 python train.py` (or `mpirun -H a,b ...`,
or Slurm's `srun`); every process runs the same program. Each worker is one replica on
its default device; `num_replicas_in_sync` is the number of workers. What keeps the
workers in step:

* variables created in `scope()` are broadcast from the chief (rank 0) when the scope
  closes (and before a `run` if new ones appeared, e.g. optimizer slots), so every worker
  starts from the chief's weights;
* `apply_gradients` inside `run` sums the gradients of all workers with fused MPI
  all-reduces (`collectives.Communicator`), and every worker applies the same update;
* checkpoints are written by the chief only; the other workers keep their save counters
  in step and write nothing;
* a worker that raises takes the job down (MPI_Abort after printing its traceback), and
  a worker that dies makes the others raise `jf.errors.UnavailableError` (see
  `collectives`), so no worker is left waiting in a collective.
"""
from __future__ import annotations

import os
import sys
import threading
import traceback
from typing import Any, List, Optional

from jitflow.runtime.core import devices as _devices
from jitflow.runtime.core.tensor import Tensor
from jitflow.runtime.distribute import cluster as _cluster
from jitflow.runtime.distribute import strategy as _strategy
from jitflow.runtime.distribute.collectives import DEFAULT_BUCKET_BYTES, Communicator
from jitflow.runtime.ops.registry import apply
from jitflow.runtime.state.variables import Variable
from jitflow.runtime.core.context import init_scope

_created_lock = threading.Lock()
DEFAULT_TIMEOUT_S = 600.0


def _timeout_from(value: Optional[float]) -> Optional[float]:
    if value is None:
        env = os.environ.get("JITFLOW_COLLECTIVE_TIMEOUT", "")
        if not env:
            return DEFAULT_TIMEOUT_S
        try:
            value = float(env)
        except ValueError:
            raise ValueError(f"JITFLOW_COLLECTIVE_TIMEOUT: expected seconds; got {env!r}") from None
    if not value > 0:
        raise ValueError(f"collective_timeout: expected seconds > 0; got {value!r}")
    return float(value)


class MultiWorkerMirroredStrategy(_strategy.Strategy):
    """One replica per MPI process, gradients all-reduced with MPI (TF's `MultiWorkerMirroredStrategy`).

    >>> strategy = jf.distribute.MultiWorkerMirroredStrategy()   # doctest: +SKIP
    >>> strategy.num_replicas_in_sync, strategy.cluster_resolver.task_id   # doctest: +SKIP
    (2, 0)

    (run under `mpiexec -n 2`: the same program in two processes.)

    Create it once per process, at the start of the program (as in TF); `collective_timeout`
    (seconds, default `JITFLOW_COLLECTIVE_TIMEOUT` or 600) bounds every collective, and
    `bucket_bytes` the size of one fused all-reduce buffer; `overlap_backward` starts the
    all-reduce of each bucket of gradients during `tape.gradient`, as soon as they are final
    (see `overlap`), instead of in `apply_gradients`.
    """

    def __init__(self, communication_options: Any = None, cluster_resolver: Any = None,
                 collective_timeout: Optional[float] = None, bucket_bytes: int = DEFAULT_BUCKET_BYTES,
                 overlap_backward: bool = True) -> None:
        timeout = _timeout_from(collective_timeout)
        if not isinstance(bucket_bytes, int) or bucket_bytes <= 0:
            raise ValueError(f"bucket_bytes: expected a positive int; got {bucket_bytes!r}")
        with _created_lock:
            if _strategy._live_multi_worker:
                raise RuntimeError(
                    "MultiWorkerMirroredStrategy was already created in this process "
                    f"({_strategy._live_multi_worker[0]!r}); create it once at the start of the program and reuse "
                    "it (jf.distribute.get_strategy() inside its scope returns it)")
            mpi = _cluster.import_mpi()
            comm = mpi.COMM_WORLD
            rank, size = comm.Get_rank(), comm.Get_size()
            problem = ""
            try:
                resolver = _cluster.resolve(rank, size) if cluster_resolver is None else cluster_resolver
                if cluster_resolver is not None and (resolver.task_id != rank or resolver.num_workers != size):
                    raise ValueError(f"cluster_resolver: describes task {resolver.task_id} of "
                                     f"{resolver.num_workers}, but MPI says this is rank {rank} of {size}")
            except ValueError as e:
                problem = str(e)
            # Every worker learns of a bad setup on any worker, so none goes on to wait for it.
            problems = [(r, p) for r, p in enumerate(comm.allgather(problem)) if p]
            if problems:
                raise ValueError("; ".join(f"worker {r}: {p}" for r, p in problems))
            gpus = _devices.list_logical_devices("GPU")
            device = gpus[0].name if gpus else "/device:CPU:0"
            super().__init__([device], collective_timeout=timeout)
            self._comm = Communicator(comm, mpi, timeout, bucket_bytes)
            self._overlap = bool(overlap_backward)
            self._resolver = resolver
            self._pending: List[Variable] = []
            self._check_same_setup(bucket_bytes)
            _strategy._live_multi_worker.append(self)
            _install_excepthook(self)

    def _check_same_setup(self, bucket_bytes: int) -> None:
        mine = {"world": self._comm.size, "devices": len(self._devices), "bucket_bytes": bucket_bytes,
                "overlap_backward": self._overlap}
        every = self._comm.allgather_object(mine, "checking the workers agree")
        differ = [r for r, theirs in enumerate(every) if theirs != mine]
        if differ:
            raise ValueError(f"worker {self._comm.rank}: the workers were set up differently: "
                             + "; ".join(f"worker {r}: {every[r]}" for r in range(len(every))))

    # -- what it is -----------------------------------------------------------------------------
    @property
    def _num_workers(self) -> int:
        return self._comm.size

    @property
    def _worker_rank(self) -> int:  # type: ignore[override]
        return self._comm.rank

    @property
    def _first_replica_id(self) -> int:  # type: ignore[override]
        return self._comm.rank * len(self._devices)

    @property
    def cluster_resolver(self) -> _cluster.ClusterResolver:
        return self._resolver

    @property
    def _is_chief(self) -> bool:
        return self._comm.rank == 0

    @property
    def communicator(self) -> Communicator:
        return self._comm

    # -- keeping variables in step -----------------------------------------------------------------
    def _track(self, var: Variable) -> None:
        super()._track(var)
        self._pending.append(var)

    def _on_scope_exit(self) -> None:
        self._sync_variables()

    def _before_run(self) -> None:
        if self._pending:
            self._sync_variables()

    def _sync_variables(self) -> None:
        """Broadcast the chief's values of the variables created since the last sync."""
        pending = [v for v in self._pending if v._value is not None]
        self._pending = [v for v in self._pending if v._value is None]
        described = [(v.name, tuple(v.shape.as_list()), v.dtype.name) for v in pending]
        every = self._comm.allgather_object(described, "checking the variables agree")
        for r, theirs in enumerate(every):
            if theirs != described:
                mine_names, their_names = [d[0] for d in described], [d[0] for d in theirs]
                raise ValueError(f"worker {self._comm.rank}: workers created different variables in the strategy's "
                                 f"scope: this worker {mine_names}, worker {r} {their_names}; every worker must "
                                 "build the same model")
        if not pending:
            return
        values = self._comm.broadcast([v.numpy() for v in pending], root=0, what="broadcasting the variables")
        with init_scope():
            for var, value in zip(pending, values):
                var.assign(value, read_value=False)

    # -- across workers --------------------------------------------------------------------------------
    def _cross_worker(self, tensors: List[Tensor]) -> List[Tensor]:
        if not tensors:
            return tensors
        return list(apply("JfCollectiveAllReduce", tensors, {"communicator": self._comm}))

    def _cross_worker_gather(self, tensor: Tensor, axis: int) -> Tensor:
        return apply("JfCollectiveAllGather", [tensor], {"communicator": self._comm, "axis": axis})[0]

    def __repr__(self) -> str:
        return (f"<jf.distribute.MultiWorkerMirroredStrategy worker {self._comm.rank} of {self._comm.size} "
                f"on {self._devices[0]}>")


def _install_excepthook(strategy: MultiWorkerMirroredStrategy) -> None:
    """An uncaught exception on one worker ends the whole job instead of leaving the others waiting."""
    previous = sys.excepthook

    def hook(kind, value, tb) -> None:
        comm = strategy._comm
        text = "".join(traceback.format_exception(kind, value, tb))
        sys.stderr.write(f"[jitflow worker {comm.rank} of {comm.size}] {text}")
        if comm.broken is None:
            sys.stderr.write(f"[jitflow worker {comm.rank}] aborting the job (MPI_Abort) so that no other worker "
                             "waits for this one\n")
        sys.stderr.flush()
        if comm.broken is not None:
            os._exit(1)
        try:
            comm.comm.Abort(1)
        finally:
            previous(kind, value, tb)
    sys.excepthook = hook


__all__ = ["MultiWorkerMirroredStrategy"]
