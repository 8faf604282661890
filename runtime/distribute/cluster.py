"""Who the workers are: MPI ranks, optionally described by a `TF_CONFIG` for parity with TF.

Workers are started by `mpirun`/`mpiexec`/`srun`; MPI numbers them 0 … size − 1 and rank
0 is the chief. A `TF_CONFIG` environment variable (TF's JSON cluster description) is
accepted: its cluster must have as many tasks (`chief` + `worker`) as MPI has ranks, and
its `task`, when given, must be this rank (`chief` → 0, `worker` i → i, or i + 1 when
there is a chief). Parameter servers and evaluators do not exist in an all-reduce job.
"""
from __future__ import annotations

import json
import os
from typing import Any, Dict, List, Mapping, Optional


def import_mpi() -> Any:
    """mpi4py's `MPI` module, or an ImportError that says how to get it."""
    try:
        from mpi4py import MPI  # lazy: optional dependency (jitflow[mpi]); importing it initialises MPI
    except ImportError as e:
        raise ImportError("MultiWorkerMirroredStrategy needs mpi4py and an MPI library; install them with "
                          "`pip install 'jitflow[mpi]'` (mpi4py and MPICH from PyPI) and start the workers with "
                          f"mpiexec / mpirun / srun ({e})") from None
    return MPI


class ClusterResolver:
    """This worker's place in the job (TF's `tf.distribute.cluster_resolver.ClusterResolver` subset).

    >>> jf.distribute.ClusterResolver(rank=1, size=2).task_type, jf.distribute.ClusterResolver(rank=0, size=2).task_type
    ('worker', 'chief')
    """

    rpc_layer = "mpi"

    def __init__(self, rank: int, size: int, cluster: Optional[Dict[str, List[str]]] = None) -> None:
        self.rank = rank
        self.size = size
        self._cluster = cluster

    @property
    def task_type(self) -> str:
        return "chief" if self.rank == 0 else "worker"

    @property
    def task_id(self) -> int:
        return self.rank

    @property
    def num_workers(self) -> int:
        return self.size

    def cluster_spec(self) -> Dict[str, List[str]]:
        """The TF_CONFIG cluster if one was given, else one `mpi-rank-<r>` entry per worker."""
        if self._cluster is not None:
            return {k: list(v) for k, v in self._cluster.items()}
        return {"worker": [f"mpi-rank-{r}" for r in range(self.size)]}

    def __repr__(self) -> str:
        return f"<ClusterResolver {self.task_type}:{self.task_id} of {self.size} workers (MPI)>"


def parse_tf_config(text: str) -> Dict[str, Any]:
    try:
        config = json.loads(text)
    except ValueError as e:
        raise ValueError(f"TF_CONFIG: not valid JSON ({e}); expected e.g. "
                         '{"cluster": {"worker": ["host1:2222", "host2:2222"]}, "task": {"type": "worker", '
                         '"index": 0}}') from None
    if not isinstance(config, dict) or not isinstance(config.get("cluster", {}), dict):
        raise ValueError(f"TF_CONFIG: expected an object with a 'cluster' object; got {text!r}")
    return config


def resolve(rank: int, size: int, environ: Optional[Mapping[str, str]] = None) -> ClusterResolver:
    """Check a TF_CONFIG (if any) against the MPI world and describe this worker."""
    env: Mapping[str, str] = os.environ if environ is None else environ
    text = env.get("TF_CONFIG", "").strip()
    if not text:
        return ClusterResolver(rank, size)
    config = parse_tf_config(text)
    cluster = config.get("cluster") or {}
    unsupported = sorted(set(cluster) - {"chief", "worker"})
    if unsupported:
        raise ValueError(f"TF_CONFIG: cluster jobs {unsupported} are not supported by MultiWorkerMirroredStrategy "
                         "(an all-reduce job has only 'chief' and 'worker' tasks)")
    for job, tasks in cluster.items():
        if not isinstance(tasks, list):
            raise ValueError(f"TF_CONFIG: cluster[{job!r}] must be a list of addresses; got {tasks!r}")
    chiefs = len(cluster.get("chief", []))
    if chiefs > 1:
        raise ValueError(f"TF_CONFIG: at most one chief; got {chiefs}")
    tasks = chiefs + len(cluster.get("worker", []))
    if tasks != size:
        raise ValueError(f"TF_CONFIG describes {tasks} tasks (chief + workers) but MPI started {size} processes; "
                         f"start as many processes as TF_CONFIG lists (mpiexec -n {tasks}) or fix TF_CONFIG")
    task = config.get("task") or {}
    if task:
        kind, index = task.get("type"), task.get("index", 0)
        if kind not in ("chief", "worker") or not isinstance(index, int):
            raise ValueError(f"TF_CONFIG: task must be {{'type': 'chief'|'worker', 'index': int}}; got {task!r}")
        expected = 0 if kind == "chief" else index + chiefs
        if expected != rank:
            raise ValueError(f"TF_CONFIG: task {kind}:{index} is MPI rank {expected}, but this process is MPI rank "
                             f"{rank}; give each process its own TF_CONFIG (or none: MPI ranks suffice)")
    return ClusterResolver(rank, size, cluster)


__all__ = ["ClusterResolver"]
