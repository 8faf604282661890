"""Per-worker log directories: one TensorBoard run per worker, side by side.

Summaries of a multi-worker job go to `<logdir>/worker_<rank>`, so TensorBoard shows one
run per worker under the job's logdir (and the chief may also write the job's own run to
`<logdir>`). URLs (`gs://`, `s3://`, `memory://` …) stay URLs: the writers take fsspec paths.
"""
from __future__ import annotations

import os
import posixpath
from typing import Any, Optional

from jitflow.runtime.distribute import strategy as _strategy
from jitflow.runtime.distribute.current import get_strategy


def worker_logdir(logdir: Any, rank: Optional[int] = None) -> str:
    """`<logdir>/worker_<rank>` for this worker (rank from the current strategy when not given).

    >>> jf.distribute.worker_logdir("logs/run1", rank=1)
    'logs/run1/worker_1'
    >>> jf.distribute.worker_logdir("s3://bucket/run1", rank=0)
    's3://bucket/run1/worker_0'
    """
    path = os.fspath(logdir)
    if not isinstance(path, str) or not path:
        raise ValueError(f"logdir: expected a non-empty path or URL; got {logdir!r}")
    if rank is None:
        live = _strategy._live_multi_worker
        rank = live[0]._worker_rank if live else get_strategy()._worker_rank
    if not isinstance(rank, int) or isinstance(rank, bool) or rank < 0:
        raise ValueError(f"rank: expected a worker index >= 0; got {rank!r}")
    join = posixpath.join if "://" in path else os.path.join
    return join(path, f"worker_{rank}")


def is_chief() -> bool:
    """True on the worker that writes checkpoints and the job's own summaries (rank 0; always
    True without a multi-worker strategy).

    >>> jf.distribute.is_chief()
    True
    """
    live = _strategy._live_multi_worker
    return live[0]._is_chief if live else get_strategy()._is_chief


__all__ = ["worker_logdir", "is_chief"]
