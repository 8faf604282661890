"""`trace_on` / `trace_export` / `trace_off`: graphs, per-op timing and profiles to a logdir.

Accepts `profiler_outdir` in either call: the seeds pass it to `trace_export` (TF 2.0),
current TensorFlow to `trace_on`. Tracing state is per thread: each thread's
`trace_on` records only what that thread runs, and its `trace_export` writes only that,
so several threads can trace at once without mixing their graphs. Unlike TF 2.x, the exported `RunMetadata` carries step
stats, so TensorBoard's graph view can colour nodes by compute time and memory.
"""
from __future__ import annotations

import os
import threading
import warnings
from time import time as _now
from typing import Any, Optional

from tensorboard.compat.proto import summary_pb2

from jitflow.runtime.core.context import _state as _rt_state
from jitflow.summary import context, protos
from jitflow.summary.values import as_step, clean_tag
from jitflow.tracer import capture as _capture
from jitflow.tracer import profile as _profile
from jitflow.tracer import run_metadata as _run_metadata

RUN_METADATA_PLUGIN = "graph_run_metadata"   # graph + step stats (TensorBoard Graphs)
GRAPH_ONLY_PLUGIN = "graph_run_metadata_graph"

_tls = threading.local()  # this thread's trace_on options (graph, profiler, profiler_outdir)


def _options() -> dict:
    options = getattr(_tls, "options", None)
    if options is None:
        options = _tls.options = {"graph": True, "profiler": False, "profiler_outdir": None}
    return options


def _outdir(value: Any) -> Optional[str]:
    """`profiler_outdir` as a str path (None stays None); checked in the call that got it,
    so a wrong type is reported there rather than at export time."""
    if value is None:
        return None
    if not isinstance(value, (str, os.PathLike)) or isinstance(os.fspath(value), bytes) or not os.fspath(value):
        raise TypeError(f"profiler_outdir: expected a directory path (str or os.PathLike); got {value!r}")
    return os.fspath(value)


def _in_function(api: str, verb: str) -> bool:
    """TF's rule: tracing is started and exported eagerly; inside a function
    trace the call warns and does nothing."""
    if _rt_state.graph is None:
        return False
    warnings.warn(f"{api}: cannot {verb} a trace inside a jf.function; call it outside the function",
                  stacklevel=3)
    return True


def trace_on(graph: bool = True, profiler: bool = False, profiler_outdir: Optional[str] = None,
             exact_ops: bool = False) -> None:
    """Start recording the graphs and per-op timing of everything this thread runs.

    Compiled functions stay compiled and are timed per fused segment (see
    docs/profiling.md); `exact_ops=True` runs them op by op on the interpreter instead,
    so every op has its own measured time (slower, and not the program that runs
    untraced).

    Example:
        >>> import tempfile, jitflow as jf
        >>> w = jf.summary.create_file_writer(tempfile.mkdtemp())
        >>> jf.summary.trace_on(graph=True, profiler=False)
        >>> _ = jf.function(lambda x: x * 2)(jf.constant(1.0))
        >>> with w.as_default():
        ...     jf.summary.trace_export("double", step=0)
        True
    """
    if _in_function("trace_on", "enable"):
        return
    outdir = _outdir(profiler_outdir)
    if _capture.for_thread() is not None:
        warnings.warn("trace_on: a trace is already being recorded by this thread; it continues (call trace_export or "
                      "trace_off to end it)", stacklevel=2)
    else:
        _capture.start(thread_id=threading.get_ident(), exact_ops=bool(exact_ops))
    _options().update(graph=bool(graph), profiler=bool(profiler), profiler_outdir=outdir)


def trace_off() -> None:
    """Stop this thread's recording and discard what was recorded.

    >>> jf.summary.trace_on(graph=True)
    >>> jf.summary.trace_off()
    """
    _capture.stop(_capture.for_thread())


def trace_export(name: str, step: Any = None, profiler_outdir: Optional[str] = None) -> bool:
    """Write what was recorded since `trace_on` and stop recording.

    To the default writer: a `graph_run_metadata` summary named `name` (a RunMetadata
    with every function graph that ran and per-node step stats). With `profiler=True`
    also `<profiler_outdir>/plugins/profile/<timestamp>/<host>.xplane.pb` and
    `<host>.trace.json.gz` (default outdir: the writer's logdir). Returns True when
    the summary was written. An unwritable `profiler_outdir` raises an OSError naming
    it before the summary is written (the trace is ended either way, as in TF).

    >>> import tempfile
    >>> w = jf.summary.create_file_writer(tempfile.mkdtemp())
    >>> @jf.function
    ... def f(x):
    ...     return x * 2
    >>> jf.summary.trace_on(graph=True)
    >>> _ = f(jf.constant(1.0))
    >>> with w.as_default():
    ...     jf.summary.trace_export('f', step=0)
    True
    """
    if _in_function("trace_export", "export"):
        return False
    profiler_outdir = _outdir(profiler_outdir)
    captured = _capture.for_thread()
    options = _options()
    if captured is None:
        warnings.warn("trace_export: no trace is being recorded (call jf.summary.trace_on() first); "
                      "nothing was written", stacklevel=2)
        return False
    writer = context.default_writer()
    if writer is None:
        _capture.stop(captured)
        warnings.warn("trace_export: there is no default summary writer (use `with writer.as_default():`); "
                      "the trace was discarded and nothing was written", stacklevel=2)
        return False
    if step is None:
        step = context.get_step()
        if step is None:
            raise ValueError("step: trace_export needs a step; pass step=... or set a default step with "
                             "jf.summary.experimental.set_step(...)")
    step = as_step(step)
    tag = clean_tag(name, "name")
    outdir = None
    if options["profiler"]:
        outdir = profiler_outdir or options["profiler_outdir"] or getattr(writer, "logdir", None)
        if outdir is None:
            raise ValueError("profiler_outdir: no directory to write the profile to; pass profiler_outdir=")
    _capture.stop(captured)
    if outdir is not None:
        # The profile first: if its directory is unwritable the error comes before
        # anything was written, not after a summary that points at a missing profile.
        _profile.write(captured, outdir)
    written = False
    if options["graph"] or options["profiler"]:
        meta = _run_metadata.build(captured, include_graphs=True)
        plugin = RUN_METADATA_PLUGIN if options["profiler"] or meta.step_stats.dev_stats else GRAPH_ONLY_PLUGIN
        md = summary_pb2.SummaryMetadata()
        md.plugin_data.plugin_name = plugin
        md.plugin_data.content = b"1"
        tensor = protos.string_tensor([meta.SerializeToString()], ())
        written = writer._write_event(protos.summary_event(tag, tensor, md, step, _now()))
    return written
