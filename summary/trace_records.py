"""Every `jf.function` trace, written to the default summary writer as it happens.

Each trace record becomes two summaries at the current step (or the function's trace
number when no step is set):
- `jitflow/trace/<function>`: the record as JSON under the `jitflow_trace` plugin, which
  the jitflow panel reads (through TensorBoard's own event loaders);
- `jitflow/retraces`: one readable Markdown line for TensorBoard's Text dashboard.

Records made while no writer is the default (a function traced before
`writer.as_default()`, as in most scripts that build the model first) wait in a bounded
buffer (`BUFFER_SIZE`, oldest dropped first) and go to the first writer that becomes a
default; `pending()` says how many wait.

What changes after a trace is written as `jitflow/stats` (plugin `jitflow_stats`) each
time a writer that received records flushes or closes, when a compile finishes, and every
`STATS_INTERVAL` seconds while such a writer is open (a daemon thread, so a live panel sees
the counts grow during a long `with writer.as_default():` block): every function's real
call count (read from the function's call counter, so calling costs nothing extra) and the
compile time of each graph compiled since (compiles often finish on a background thread,
long after the record was written). Only what changed is written. The panel merges it into
the records.
"""
from __future__ import annotations

import json
import re
import threading
import weakref
from collections import deque
from time import time as _now
from typing import Deque, Dict, Optional, Tuple

from tensorboard.compat.proto import summary_pb2

from jitflow.runtime.tracing import trace_records as _records
from jitflow.runtime.core.context import init_scope
from jitflow.runtime.core.tensor import SymbolicTensor
from jitflow.summary import context, protos
from jitflow.summary.periodic import PeriodicRefresher
from jitflow.summary.values import as_step

PLUGIN_NAME = "jitflow_trace"
STATS_PLUGIN = "jitflow_stats"
TEXT_TAG = "jitflow/retraces"
TAG_PREFIX = "jitflow/trace/"
STATS_TAG = "jitflow/stats"
BUFFER_SIZE = 1000      # records kept while no writer is the default
STATS_INTERVAL = 5.0    # seconds between refreshes of jitflow/stats for open writers


def _metadata(plugin: str = PLUGIN_NAME, what: str = "trace records") -> summary_pb2.SummaryMetadata:
    md = summary_pb2.SummaryMetadata()
    md.plugin_data.plugin_name = plugin
    md.plugin_data.content = json.dumps({"version": 1}).encode()
    md.summary_description = f"jitflow {what} (JSON); read by the jitflow panel"
    return md


def markdown(record: _records.TraceRecord) -> str:
    text = (f"**{record.function}** trace #{record.trace_number}: {record.reason} "
            f"({record.trace_seconds * 1e3:.2f} ms) at `{record.call_site}`")
    if record.advice:
        text += f" — {record.advice}"
    return text


class _WriterState:
    """What one writer has been given: the functions whose records it holds, and the call
    counts and compile times already written to it (each flush writes only what changed)."""

    def __init__(self) -> None:
        self.functions: Dict[int, str] = {}       # function_id -> name
        self.graphs: Dict[str, int] = {}          # graph_name -> function_id
        self.calls_written: Dict[int, int] = {}   # function_id -> count last written
        self.compiles_written: set = set()        # graph names whose compile time is written


_lock = threading.RLock()
_pending: Deque[Tuple[_records.TraceRecord, Optional[int]]] = deque(maxlen=BUFFER_SIZE)
_dropped = 0
_writers: "weakref.WeakKeyDictionary[object, _WriterState]" = weakref.WeakKeyDictionary()
_compiles: Dict[str, float] = {}               # graph_name -> compile seconds


def pending() -> int:
    """Records waiting for a default writer."""
    return len(_pending)


def clear_pending() -> int:
    """Forget the records waiting for a default writer (e.g. between tests); returns how many."""
    global _dropped
    with _lock:
        n = len(_pending)
        _pending.clear()
        _dropped = 0
    return n


def _state(writer) -> _WriterState:
    state = _writers.get(writer)
    if state is None:
        state = _writers[writer] = _WriterState()
    return state


def _step_value(step) -> Optional[int]:
    """The default step as an int; None when unset or symbolic (a step set inside a function
    being traced has no value yet), so the record falls back to its trace number."""
    if step is None or isinstance(step, SymbolicTensor):
        return None
    return as_step(step)


def _write(writer, record: _records.TraceRecord, step: Optional[int]) -> None:
    step = record.trace_number if step is None else int(step)
    payload = json.dumps(record.to_dict(), default=str).encode("utf-8")
    wall = _now()
    # Function names like `train.<locals>.step` hold characters tags may not: clean them
    # here, quietly (the record inside keeps the real name).
    tag = TAG_PREFIX + re.sub(r"[^-\w.]", "_", record.function.replace("<locals>", "locals"))
    with init_scope():  # records arrive while tracing; write them now, not as graph ops
        writer._write_event(protos.summary_event(tag, protos.string_tensor([payload], ()), _metadata(), step, wall))
        text_md = protos.plugin_metadata(protos.TEXT)
        writer._write_event(protos.summary_event(TEXT_TAG, protos.string_tensor([markdown(record).encode()], ()),
                                                 text_md, step, wall))
    with _lock:
        state = _state(writer)
        state.functions[record.function_id] = record.function
        state.graphs[record.graph_name] = record.function_id
    _refresher.ensure_started()


def write_record(record: _records.TraceRecord) -> bool:
    """Write `record` to this thread's default writer; False if there is none."""
    writer = context.default_writer()
    if writer is None or not context.recording() or not hasattr(writer, "_write_event"):
        return False
    _write(writer, record, _step_value(context.get_step()))
    return True


def _on_record(record: _records.TraceRecord) -> None:
    global _dropped
    try:
        if write_record(record):
            return
    except RuntimeError:  # e.g. a default writer that was closed: never break the user's trace
        return
    if context.default_writer() is None:
        with _lock:
            if len(_pending) == _pending.maxlen:
                _dropped += 1
            _pending.append((record, _step_value(context.get_step())))


def _on_default(writer) -> None:
    """A writer became a default: it receives the records that waited for one."""
    global _dropped
    if not _pending or not hasattr(writer, "_write_event"):
        return
    with _lock:
        waiting = list(_pending)
        _pending.clear()
        dropped, _dropped = _dropped, 0
    try:
        for record, step in waiting:
            _write(writer, record, step)
    except RuntimeError:   # a closed writer: keep them for the next one
        with _lock:
            _pending.extendleft(reversed(waiting))
            _dropped += dropped
        return
    if dropped:
        import warnings
        warnings.warn(f"jitflow: {dropped} trace records made before any summary writer was the default "
                      f"were dropped (only the last {BUFFER_SIZE} are kept)", RuntimeWarning, stacklevel=2)


def _on_compile(graph_name: str, seconds: float) -> None:
    """A graph compiled (often on a background thread): its writers get the time now, so the
    logdir is up to date while training runs."""
    with _lock:
        _compiles[graph_name] = seconds
        writers = [w for w, state in _writers.items() if graph_name in state.graphs]
    for writer in writers:
        if _is_open(writer):
            _on_flush(writer)


def stats_payload(writer) -> Optional[dict]:
    """Call counts and compile times of the functions whose records `writer` holds that
    changed since they were last written to it; None when nothing changed. (The panel
    keeps the highest count seen per function, so only changes need writing.)"""
    with _lock:
        state = _writers.get(writer)
        if state is None or not state.functions:
            return None
        counts = _records.call_counts()
        calls = [{"function": name, "function_id": fid, "calls": counts[fid]}
                 for fid, name in sorted(state.functions.items())
                 if fid in counts and counts[fid] != state.calls_written.get(fid)]
        compiles = [{"graph_name": g, "compile_seconds": _compiles[g]} for g in sorted(state.graphs)
                    if g in _compiles and g not in state.compiles_written]
        if not calls and not compiles:
            return None
        return {"version": 1, "calls": calls, "compiles": compiles}


def write_stats(writer) -> bool:
    """Write `jitflow/stats` to `writer` if anything changed since the last time; True if written."""
    payload = stats_payload(writer)
    if payload is None:
        return False
    step = _step_value(context.get_step())
    event = protos.summary_event(STATS_TAG, protos.string_tensor([json.dumps(payload).encode()], ()),
                                 _metadata(STATS_PLUGIN, "call counts and compile times"),
                                 0 if step is None else step, _now())
    with init_scope():
        writer._write_event(event)
    with _lock:
        state = _writers[writer]
        state.calls_written.update((c["function_id"], c["calls"]) for c in payload["calls"])
        state.compiles_written.update(c["graph_name"] for c in payload["compiles"])
    return True




def _is_open(writer) -> bool:
    events = getattr(writer, "_events", None)
    return events is None or not getattr(events, "closed", False)


def _refresh_once() -> None:
    with _lock:
        writers = list(_writers.keys())
    for writer in writers:
        if _is_open(writer):
            try:
                write_stats(writer)
            except Exception:  # noqa: BLE001 - a failing writer reports its error to its own caller
                pass


_refresher = PeriodicRefresher("jitflow-trace-stats", lambda: STATS_INTERVAL, lambda: _refresh_once())


def _on_flush(writer) -> None:
    try:
        write_stats(writer)
    except RuntimeError:   # closed under us: the counts are a courtesy, never an error
        pass


# Traces made before this module loaded (jitflow imports the summary package on first use
# of `jf.summary`) wait for the first default writer like later ones.
_pending.extend((record, None) for record in _records.records()[-BUFFER_SIZE:])
_unsubscribe = _records.subscribe(_on_record)
_unsubscribe_compiles = _records.registry.subscribe_compiles(_on_compile)
context.on_default(_on_default)
context.on_flush(_on_flush)
