"""How long a program waits for its input pipeline: the counters every `jf.data` iterator keeps.

Each Python iterator over a dataset (`for batch in ds`, `iter(ds)`, Keras `fit`) gets one
`IteratorStats`. Every `next()` adds the time spent inside it (waiting for the pipeline)
to `wait_ns`, and the time since the previous `next()` returned (the program's own work
on the previous element: the training step) to `busy_ns`. The share of step time spent
waiting is `wait / (wait + busy)`, what TensorBoard's Input Pipeline Analyzer calls the
input time, from which the panel says whether a run was input-bound. The first `next()`
(`first_wait_ns`: threads starting, the first compile) is kept apart as start-up time.

The counters are always on (two clock reads per element, nothing when no dataset is
iterated); they live here, at the bottom of the runtime, so that the summary layer can
write them to the logdir (`jitflow.summary.input_pipeline`) without importing `jf.data`.
Only the last `MAX_TRACKED` iterators are kept.
"""
from __future__ import annotations

import itertools
import threading
import time
from collections import deque
from typing import Any, Callable, Deque, List, Sequence

MAX_TRACKED = 256

_lock = threading.Lock()
_recent: Deque["IteratorStats"] = deque(maxlen=MAX_TRACKED)
_ids = itertools.count(1)
_on_new: List[Callable[["IteratorStats"], None]] = []


class IteratorStats:
    """Wait and busy time of one iterator; `pipeline` is its dataset chain in TF's iterator
    naming (`Iterator::Root::Prefetch::BatchV2::ParallelMapV2::TFRecord`), `stages` every
    transformation kind in it (what the advice looks at)."""

    __slots__ = ("id", "pipeline", "stages", "created", "elements", "wait_ns", "busy_ns", "first_wait_ns",
                 "finished", "_last_end", "__weakref__")

    def __init__(self, pipeline: str, stages: Sequence[str]) -> None:
        self.id = next(_ids)
        self.pipeline = pipeline
        self.stages = tuple(stages)
        self.created = time.time()
        self.elements = 0
        self.wait_ns = 0
        self.busy_ns = 0
        self.first_wait_ns = 0   # the first next(): pipeline start-up (threads, first compile)
        self.finished = False
        self._last_end = 0

    def record(self, start_ns: int, end_ns: int, produced: bool) -> None:
        """One `next()` that ran from `start_ns` to `end_ns` (`produced`: False at the end)."""
        if self._last_end:
            self.busy_ns += start_ns - self._last_end
        else:
            self.first_wait_ns = end_ns - start_ns
        self.wait_ns += end_ns - start_ns
        self._last_end = end_ns
        if produced:
            self.elements += 1
        else:
            self.finished = True

    def to_dict(self) -> dict:
        return {"id": self.id, "pipeline": self.pipeline, "stages": list(self.stages), "created": self.created,
                "elements": self.elements, "wait_seconds": self.wait_ns / 1e9, "busy_seconds": self.busy_ns / 1e9,
                "first_wait_seconds": self.first_wait_ns / 1e9, "finished": self.finished}


def track(pipeline: str, stages: Sequence[str]) -> IteratorStats:
    """A new iterator's counters, announced to the `on_new` callbacks (the summary layer)."""
    stats = IteratorStats(pipeline, stages)
    with _lock:
        _recent.append(stats)
        callbacks = list(_on_new)
    for cb in callbacks:
        try:
            cb(stats)
        except Exception:  # noqa: BLE001 - a reporting hook must never break iteration
            pass
    return stats


def on_new(callback: Callable[[IteratorStats], Any]) -> None:
    """Call `callback(stats)` for each new iterator (in the thread that creates it)."""
    with _lock:
        _on_new.append(callback)


def recent() -> List[IteratorStats]:
    with _lock:
        return list(_recent)
