"""Input-pipeline wait times, written to the logdir for the panel's "input-bound?" verdict.

The runtime counts, per dataset iterator, the time spent waiting in `next()` and the time
the program worked between two `next()` calls (`jitflow.runtime.core.input_stats`). This
module writes those counters as `jitflow/input_pipeline` summaries (plugin
`jitflow_input_pipeline`, one JSON payload per write: every iterator that advanced since
the last write) to the writer that was the default when the iterator was created (or,
for an iterator created while no writer was the default, to the first writer opened
before it that flushes afterwards). Writes happen when a writer flushes or closes and every
`REFRESH_SECONDS` while iterators advance, so a live panel follows a long training loop.
"""
from __future__ import annotations

import json
import threading
import weakref
from time import time as _now
from typing import Any, Dict, List, Optional

from tensorboard.compat.proto import summary_pb2

from jitflow.runtime.core import input_stats
from jitflow.runtime.core.context import init_scope
from jitflow.runtime.core.tensor import SymbolicTensor
from jitflow.summary import context, protos
from jitflow.summary.periodic import PeriodicRefresher
from jitflow.summary.values import as_step

PLUGIN_NAME = "jitflow_input_pipeline"
TAG = "jitflow/input_pipeline"
REFRESH_SECONDS = 5.0

_lock = threading.RLock()
# writer -> {iterator id: elements count last written}; iterators not yet given to a writer.
_assigned: "weakref.WeakKeyDictionary[Any, Dict[int, int]]" = weakref.WeakKeyDictionary()
_unassigned: "weakref.WeakValueDictionary[int, input_stats.IteratorStats]" = weakref.WeakValueDictionary()
_stats: "weakref.WeakValueDictionary[int, input_stats.IteratorStats]" = weakref.WeakValueDictionary()


def _metadata() -> summary_pb2.SummaryMetadata:
    md = summary_pb2.SummaryMetadata()
    md.plugin_data.plugin_name = PLUGIN_NAME
    md.plugin_data.content = json.dumps({"version": 1}).encode()
    md.summary_description = "jitflow input-pipeline wait times (JSON); read by the jitflow panel"
    return md


def _on_new_iterator(stats: input_stats.IteratorStats) -> None:
    writer = context.default_writer()
    with _lock:
        _stats[stats.id] = stats
        if writer is not None and hasattr(writer, "_write_event"):
            _assigned.setdefault(writer, {})[stats.id] = -1
        else:
            _unassigned[stats.id] = stats
    _refresher.ensure_started()


def payload(writer: Any) -> Optional[dict]:
    """The iterators of `writer` that advanced since they were last written to it (None: none did)."""
    opened = getattr(writer, "_opened_at", 0.0)
    with _lock:
        # Iterators made while no writer was the default: this writer takes those made since
        # it was opened (earlier ones belong to no run of it: another script part, another test).
        for sid, stats in list(_unassigned.items()):
            if stats.created >= opened:
                del _unassigned[sid]
                _assigned.setdefault(writer, {})[sid] = -1
        written = _assigned.get(writer)
        if not written:
            return None
        changed = []
        for sid, last in list(written.items()):
            live = _stats.get(sid)
            if live is None:
                del written[sid]
                continue
            progress = live.elements + (1 if live.finished else 0)
            if progress != last:
                changed.append((live, progress))
    if not changed:
        return None
    return {"version": 1, "iterators": [s.to_dict() for s, _ in changed],
            "_progress": {s.id: p for s, p in changed}}


def write(writer: Any) -> bool:
    """Write the changed iterators' counters to `writer`; True when something was written."""
    data = payload(writer)
    if data is None:
        return False
    progress = data.pop("_progress")
    step = context.get_step()
    step_value = 0 if step is None or isinstance(step, SymbolicTensor) else as_step(step)
    event = protos.summary_event(TAG, protos.string_tensor([json.dumps(data).encode()], ()), _metadata(),
                                 step_value, _now())
    with init_scope():
        writer._write_event(event)
    with _lock:
        written = _assigned.setdefault(writer, {})
        written.update(progress)
    return True


def _is_open(writer: Any) -> bool:
    events = getattr(writer, "_events", None)
    return events is None or not getattr(events, "closed", False)


def _on_flush(writer: Any) -> None:
    if not hasattr(writer, "_write_event"):
        return
    try:
        write(writer)
    except Exception:  # noqa: BLE001 - flush hooks must not raise; the writer reports its own errors
        pass


def _refresh_once() -> None:
    with _lock:
        writers: List[Any] = list(_assigned.keys())
    for writer in writers:
        if _is_open(writer):
            try:
                write(writer)
            except Exception:  # noqa: BLE001 - a failing writer reports its own errors to its caller
                pass


_refresher = PeriodicRefresher("jitflow-input-stats", lambda: REFRESH_SECONDS, lambda: _refresh_once())

# Iterators made before this module loaded (jitflow loads the summary package on first use
# of `jf.summary`) go to the first writer that flushes, like later ones made with no writer.
for _early in input_stats.recent():
    _stats[_early.id] = _early
    _unassigned[_early.id] = _early
input_stats.on_new(_on_new_iterator)
context.on_flush(_on_flush)
