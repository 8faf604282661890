"""The runtime's only hook for profilers: a flag and a sink.

The tracer (`jitflow.tracer`) installs a sink while `trace_on()` is active; the runtime
checks `enabled` once per eager op and once per graph run, so tracing costs nothing
when it is off. Keeping the hook here (not in the tracer) lets dependencies flow one
way: runtime ← tracer.
"""
from __future__ import annotations

import threading
import time
from typing import Any, Optional, Protocol


class Sink(Protocol):
    def eager_op(self, op: Any, start_ns: int, end_ns: int, thread_id: int, result: Any) -> None: ...
    def graph_run(self, concrete: Any, timings: list, start_ns: int, end_ns: int, thread_id: int) -> None: ...
    # Optional: def region(self, name: str, start_ns: int, end_ns: int, thread_id: int, args: dict) -> None
    # Optional: def runtime_event(self, name: str, start_ns: int, end_ns: int, thread_id: int, args: dict) -> None


enabled: bool = False
_sink: Optional[Sink] = None
# While tracing, a compiled function stays on the tier that runs and is timed per fused
# segment. A profiler that wants every op timed on its own sets this: traced calls then
# run the per-op interpreter plan instead (the exact, slower program).
exact_ops: bool = False


def install(sink: Sink) -> None:
    global enabled, _sink
    _sink = sink
    enabled = True


def uninstall() -> None:
    global enabled, _sink
    enabled = False
    _sink = None


def sink() -> Optional[Sink]:
    return _sink


def runtime_event(name: str, start_ns: int, end_ns: int, **args: Any) -> None:
    """Report work the runtime did for itself (compiling a graph, loading it from the disk
    cache, switching a function to the compiled tier), so that profiles show it as its own
    event instead of inside the op or call that happened to trigger it. Callers check
    `enabled` first; sinks without `runtime_event` ignore it."""
    s = _sink
    on_event = getattr(s, "runtime_event", None) if s is not None else None
    if on_event is not None:
        on_event(name, start_ns, end_ns, threading.get_ident(), args)


def run_eager_op(op: Any, kernel: Any, operands: list, attrs: dict, out_specs: list) -> Any:
    start = time.perf_counter_ns()
    result = kernel(*operands, **attrs)
    end = time.perf_counter_ns()
    s = _sink
    if s is not None:
        s.eager_op(op, start, end, threading.get_ident(), result)
    return result


class region:
    """Marks a region (a training step, an input-pipeline stage) for whatever profiler listens.

    Runtime libraries above the core (Keras-style `fit`, `jf.data` iterators) cannot import
    the tracer, which sits above the runtime; they mark their steps here instead, and the
    installed sink turns each region into a trace event (a step marker when `step_num` is
    given). Free when nothing is installed: one flag test on enter and on exit.

        with instrument.region("train", step_num=step):
            train_step(x, y)
    """

    __slots__ = ("name", "args", "_start")

    def __init__(self, name: str, **args: Any) -> None:
        self.name = name
        self.args = args
        self._start = 0

    def __enter__(self) -> "region":
        if enabled:
            self._start = time.perf_counter_ns()
        return self

    def __exit__(self, *exc: Any) -> None:
        s = _sink
        if s is not None and self._start:
            on_region = getattr(s, "region", None)
            if on_region is not None:
                on_region(self.name, self._start, time.perf_counter_ns(), threading.get_ident(), self.args)
