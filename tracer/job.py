"""One profiler server per worker of a multi-worker job, announced in the job's logdir.

Every worker of a `MultiWorkerMirroredStrategy` job calls

    jf.profiler.experimental.server.start_worker(logdir)              # or base_port=6009

(`server.start_worker`) which starts this process's profiler server (`server.start`) on `base_port + rank` (or on
a free port when `base_port` is 0) and writes where it listens to
`<logdir>/worker_<rank>/profiler_server.json`. A single capture then reaches every worker:

    jitflow capture --workers-in LOGDIR --logdir LOGDIR --duration-ms 2000

(or TensorBoard's CAPTURE PROFILE with the comma-separated list `worker_addresses(logdir)`
returns), and writes one session with a `<host>_<port>.xplane.pb` per worker; the panel's
Workers page matches each file to its worker through the same announcements.

The rank comes from the process's `MultiWorkerMirroredStrategy`, else from the launcher's
environment (MPICH/Intel MPI `PMI_RANK`, Open MPI `OMPI_COMM_WORLD_RANK`, Slurm
`SLURM_PROCID`), else 0.
"""
from __future__ import annotations

import json
import os
import re
import socket
import time
from typing import Any, Dict, List, Optional, Tuple

from jitflow.runtime.training.atomic_files import atomic_write

ANNOUNCEMENT = "profiler_server.json"
_WORKER_DIR = re.compile(r"^worker_(\d+)$")
_RANK_VARIABLES = ("PMI_RANK", "OMPI_COMM_WORLD_RANK", "SLURM_PROCID")
_SIZE_VARIABLES = ("PMI_SIZE", "OMPI_COMM_WORLD_SIZE", "SLURM_NTASKS")


def rank_and_size() -> Tuple[int, int]:
    from jitflow.runtime.distribute import strategy as _strategy  # lazy: only jobs that profile workers load it
    if _strategy._live_multi_worker:
        live = _strategy._live_multi_worker[0]
        return live._worker_rank, live._num_workers
    for rank_name, size_name in zip(_RANK_VARIABLES, _SIZE_VARIABLES):
        if os.environ.get(rank_name, "").isdigit():
            size = os.environ.get(size_name, "")
            return int(os.environ[rank_name]), int(size) if size.isdigit() else 0
    return 0, 1


def announce(logdir: str, port: int, host: str, rank: int, size: int) -> str:
    """Write `<logdir>/worker_<rank>/profiler_server.json` (atomically); returns its path."""
    reach = socket.gethostname() if host in ("0.0.0.0", "::", "") else host
    record = {"rank": rank, "num_workers": size, "address": f"{reach}:{port}", "host": socket.gethostname(),
              "port": port, "pid": os.getpid(), "started": time.time()}
    directory = os.path.join(os.fspath(logdir), f"worker_{rank}")
    os.makedirs(directory, exist_ok=True)
    path = os.path.join(directory, ANNOUNCEMENT)
    atomic_write(path, json.dumps(record, indent=1).encode())
    return path


def announcements(logdir: str) -> List[Dict[str, Any]]:
    """The profiler servers announced under `logdir` (`worker_<rank>/profiler_server.json`), by rank.
    Unreadable or malformed files are skipped."""
    found: Dict[int, Dict[str, Any]] = {}
    try:
        names = os.listdir(logdir)
    except OSError:
        return []
    for name in names:
        match = _WORKER_DIR.match(name)
        if not match:
            continue
        try:
            with open(os.path.join(logdir, name, ANNOUNCEMENT)) as f:
                record = json.load(f)
        except (OSError, ValueError):
            continue
        if (isinstance(record, dict) and isinstance(record.get("address"), str)
                and isinstance(record.get("port"), int) and record.get("rank") == int(match.group(1))):
            found[int(match.group(1))] = record
    return [found[r] for r in sorted(found)]


def worker_addresses(logdir: str, expected: Optional[int] = None) -> str:
    """The comma-separated `host:port` list of the announced workers (what `jitflow capture`
    and TensorBoard's CAPTURE PROFILE take). `expected`: fail unless that many announced."""
    records = announcements(logdir)
    if not records:
        raise ValueError(f"logdir: no worker announced a profiler server under {logdir!r} (each worker calls "
                         "jf.profiler.experimental.server.start_worker(logdir))")
    if expected is not None and len(records) != expected:
        raise ValueError(f"logdir: expected {expected} workers' profiler servers under {logdir!r}; found "
                         f"{[r['rank'] for r in records]}")
    return ",".join(r["address"] for r in records)


__all__ = ["announce", "announcements", "worker_addresses", "rank_and_size"]
