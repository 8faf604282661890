"""What runs while tracing is on: small event records the exporters turn into files.

`Capture` is the runtime's instrumentation sink. The runtime calls it once per eager op
and once per graph run (with per-node timings from the plan's timed variant); each
becomes `OpEvent`s (a graph run's only when an exporter reads `FunctionRun.events`, so
that recording stays cheap). `jf.profiler.Trace` regions (training steps) are
`Region`s. All times are `perf_counter_ns`; `wall_ns()` converts to the epoch for exporters.

A function on the compiled tier is recorded as it runs: one record per fused segment
(and per Python step). `FunctionRun.events` expands a segment into its fused ops with
times attributed by `attribution.split`; `FunctionRun.fusions` keeps the measured
segments. Work the runtime does for itself (`jitflow.compile`, `jitflow.cache_load`,
`jitflow.tier_up`, numba compiling a kernel on first use: `numba.compile`) is a
`RuntimeEvent`; `stop()` moves an op's start past any such event nested in it, so first-use
cost is never charged to the op.

Several captures can record at once (a `trace_on` per thread, `jf.profiler.start`, a
capture requested over gRPC by TensorBoard): `start()` registers one, the runtime's sink
fans out to all of them, `stop(capture)` ends exactly that one. A capture started with
`thread_id` records only that thread's ops, steps, functions and runtime events (a
background tier-up shows in process-wide captures: `jf.profiler`, live capture).

Ops that ran on a GPU also come with their kernel times from CUDA events (a graph run's
in `FunctionRun.device_ticks`, eager ones as `device_op` calls): those are the
`device_events`, on the GPU's own line in profiles and its device in step stats.
"""
from __future__ import annotations

import bisect
import os
import threading
import time
from array import array
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Tuple

import numpy as np

from jitflow.runtime.core import instrument, lazyjit
from jitflow.runtime.core.tensor import CPU0

from . import attribution

Output = Tuple[str, Tuple[int, ...], int]  # (dtype name, shape, bytes)


@dataclass
class OpEvent:
    name: str                 # scoped node name, or the op's public name for eager ops
    op_type: str              # TF op type
    start_ns: int
    end_ns: int
    thread_id: int
    device: str = CPU0
    outputs: List[Output] = field(default_factory=list)
    inputs: Tuple[str, ...] = ()
    function: Optional[str] = None   # concrete function name; None for eager ops
    fusion: Optional[str] = None     # the compiled segment this op's time was attributed from
    compile_ns: int = 0              # first-use work (compiling) moved out of this op's time

    @property
    def duration_ns(self) -> int:
        return max(0, self.end_ns - self.start_ns)

    @property
    def bytes(self) -> int:
        return sum(o[2] for o in self.outputs)


@dataclass
class FunctionRun:
    concrete: Any             # the ConcreteFunction that ran
    start_ns: int
    end_ns: int
    thread_id: int
    ticks: "array[int]"       # (index into `nodes`, start_ns, end_ns) per node run, flat
    outputs: List[tuple]      # per node run: ((dtype name, shape, bytes), ...)
    nodes: List[Any]          # the capture's node table
    parent: Optional[str] = None     # name of the calling function's node, for nested calls
    device_ticks: Optional[List[tuple]] = None   # (index into `nodes`, device, start_ns, end_ns) per GPU op
    _events: Optional[List[OpEvent]] = field(default=None, repr=False, compare=False)

    @property
    def events(self) -> List[OpEvent]:
        """One OpEvent per node run, built when an exporter first asks (see Capture.graph_run).
        A compiled segment's record becomes one event per fused node (`attribution`)."""
        if self._events is None:
            name, nodes, ticks = self.concrete.name, self.nodes, self.ticks
            self._events = []
            for i, outputs in enumerate(self.outputs):
                node = nodes[ticks[3 * i]]
                fused = getattr(node, "fused", None)
                if fused is not None:
                    for n, t0, t1 in attribution.split(fused, ticks[3 * i + 1], ticks[3 * i + 2]):
                        self._events.append(OpEvent(n.name, n.op.tf_op, t0, t1, self.thread_id, CPU0,
                                                    _static_outputs(n), tuple(t.name for t in n.inputs), name,
                                                    fusion=node.name))
                    continue
                self._events.append(OpEvent(node.name, node.op.tf_op, ticks[3 * i + 1], ticks[3 * i + 2],
                                            self.thread_id, node.device or CPU0, list(outputs),
                                            tuple(t.name for t in node.inputs), name))
        return self._events

    @property
    def fusions(self) -> List[tuple]:
        """The compiled segments that ran: (segment, start_ns, end_ns, outputs), as measured."""
        out = []
        for i, outputs in enumerate(self.outputs):
            node = self.nodes[self.ticks[3 * i]]
            if getattr(node, "fused", None) is not None:
                out.append((node, self.ticks[3 * i + 1], self.ticks[3 * i + 2], outputs))
        return out

    @property
    def device_events(self) -> List[OpEvent]:
        """The GPU ops of this run, timed by CUDA events (thread_id 0: the device's stream)."""
        out = []
        for k, device, start, end in self.device_ticks or ():
            node = self.nodes[k]
            out.append(OpEvent(node.name, node.op.tf_op, start, end, 0, device, [],
                               tuple(t.name for t in node.inputs), self.concrete.name))
        return out


def _static_outputs(node: Any) -> List[Output]:
    """A fused node's outputs from its graph shapes (its values never leave the segment)."""
    out = []
    for t in node.outputs:
        dims = getattr(t, "_dims", None)
        if dims is None or any(not isinstance(d, int) or d < 0 for d in dims):
            continue
        dtype = t._dtype
        try:
            nbytes = int(np.dtype(dtype.as_numpy_dtype).itemsize)
        except Exception:
            continue
        for d in dims:
            nbytes *= d
        out.append((dtype.name, tuple(dims), nbytes))
    return out


_PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


def resident_bytes() -> int:
    """The process's resident memory now (Linux /proc; 0 where it cannot be read)."""
    try:
        with open("/proc/self/statm", "rb") as f:
            return int(f.read().split()[1]) * _PAGE
    except (OSError, ValueError, IndexError):
        return 0


@dataclass
class RuntimeEvent:
    """Work the runtime did for itself: compiling, loading compiled code, changing tier."""
    name: str
    start_ns: int
    end_ns: int
    thread_id: int
    args: Dict[str, Any] = field(default_factory=dict)


@dataclass
class Region:
    name: str
    start_ns: int
    end_ns: int
    thread_id: int
    step_num: Optional[int] = None
    args: Dict[str, Any] = field(default_factory=dict)


def describe_output(value: Any, dtype: Any) -> Output:
    if hasattr(value, "__cuda_array_interface__") or hasattr(value, "__cuda_ndarray__"):  # a device array
        return (dtype.name, tuple(value.shape), int(value.nbytes))
    try:
        arr = value if isinstance(value, np.ndarray) else np.asarray(value)
        return (dtype.name, tuple(arr.shape), int(arr.nbytes))
    except Exception:  # a resource or an opaque value
        return (getattr(dtype, "name", "unknown"), (), 0)


class Capture:
    """Collects events between `start()` and `stop()`; thread-safe.

    `thread_id`: record only what that thread runs (a per-thread `trace_on`); None: all.
    `level` (TF's host tracer level): 0 keeps steps, regions and runtime events only;
    1 and above also every function run and op.
    """

    def __init__(self, thread_id: Optional[int] = None, level: int = 2) -> None:
        self.thread_id = thread_id
        self.level = level
        self._lock = threading.Lock()
        self.runtime: List[RuntimeEvent] = []
        self._runs: List[FunctionRun] = []
        self._functions: List[Any] = []          # concrete functions seen, referenced by index from records
        self._fn_index: Dict[int, int] = {}
        self._pending: List[tuple] = []          # every graph run as recorded; `runs` turns them into FunctionRuns
        self.eager: List[OpEvent] = []
        self.regions: List[Region] = []
        self.thread_names: Dict[int, str] = {}
        self.device: List[OpEvent] = []           # eager ops' GPU kernels (CUDA event times)
        self._nodes: List[Any] = []              # graph nodes seen, referenced by index from runs
        self._node_index: Dict[int, int] = {}    # id(node) → index in _nodes
        self._described: Dict[int, tuple] = {}    # node index → its latest output description
        self.peak_rss_bytes = resident_bytes()  # the highest of the samples: start, each step's end, stop
        self.started_ns = time.perf_counter_ns()
        self._wall_offset = time.time_ns() - self.started_ns
        self.stopped_ns: Optional[int] = None

    def wall_ns(self, perf_ns: int) -> int:
        return perf_ns + self._wall_offset

    def _name_thread(self, thread_id: int) -> None:
        if thread_id not in self.thread_names:
            current = threading.current_thread()
            self.thread_names[thread_id] = current.name if current.ident == thread_id else f"thread {thread_id}"

    # -- the runtime's sink protocol ---------------------------------------------------
    def eager_op(self, op: Any, start_ns: int, end_ns: int, thread_id: int, result: Any) -> None:
        if self.level < 1 or (self.thread_id is not None and thread_id != self.thread_id):
            return
        outputs = []
        if result is not None:
            values = result if isinstance(result, tuple) else (result,)
            outputs = [describe_output(v, getattr(np.asarray(v), "dtype", None)) for v in values
                       if isinstance(v, (np.ndarray, np.generic))]
        event = OpEvent(op.public_name, op.tf_op, start_ns, end_ns, thread_id, outputs=outputs)
        with self._lock:
            self._name_thread(thread_id)
            self.eager.append(event)

    def graph_run(self, concrete: Any, timings: list, start_ns: int, end_ns: int, thread_id: int,
                  parent: Optional[str] = None) -> None:
        # Per node run: three ints in an array and a shared output description. No new
        # object the garbage collector tracks survives per node, so a long trace does not
        # trigger its full collections (slow over numba's large heap), which used to take
        # most of a traced call. Shapes and sizes are kept, never the values.
        if self.level < 1 or (self.thread_id is not None and thread_id != self.thread_id):
            return
        index, shared = self._node_index, self._described
        ticks = array("q")
        outputs = []
        for node, t0, t1, value in timings:
            k = index.get(id(node))
            if k is None:
                k = self._add_node(node)
            outs = node.outputs
            cls = value.__class__
            if len(outs) == 1 and cls is np.ndarray:  # the common case
                described = shared.get(k)
                if described is None or described[0][1] != value.shape:
                    described = shared[k] = ((outs[0]._dtype.name, value.shape, value.nbytes),)
            elif len(outs) == 1 and (cls is float or cls is int):  # a compiled segment's scalar
                described = shared.get(k)
                if described is None or described[0][1] != ():
                    described = shared[k] = (describe_output(value, outs[0]._dtype),)
            elif len(outs) == 1:
                described = (describe_output(value, outs[0]._dtype),)
            else:
                described = tuple(describe_output(v, t._dtype) for v, t in zip(value if outs else (), outs))
            ticks.extend((k, t0, t1))
            outputs.append(described)
        device = getattr(timings, "device", None)  # GPU ops' (node, device, start, end), if any ran
        if device:
            device = [(index.get(id(node)) if id(node) in index else self._add_node(node), dev, t0, t1)
                      for node, dev, t0, t1 in device]
        if thread_id not in self.thread_names:
            with self._lock:
                self._name_thread(thread_id)
        # A plain tuple now (list.append is atomic), the FunctionRun when an exporter asks:
        # building the dataclass per call was a third of the tracing cost of a compiled call.
        f = self._fn_index.get(id(concrete))
        if f is None:
            f = self._add_function(concrete)
        # Ints, an array and tuples of atomic values only: once the collector has seen this
        # record it stops tracking it, so a long trace does not slow its collections.
        self._pending.append((f, start_ns, end_ns, thread_id, ticks, tuple(outputs), parent, device or None))

    @property
    def runs(self) -> List[FunctionRun]:
        """Every function run recorded so far, in order."""
        if len(self._pending) > len(self._runs):  # only ever appended to: a slice is a safe snapshot
            with self._lock:
                nodes, functions = self._nodes, self._functions
                self._runs.extend(FunctionRun(functions[f], s, e, t, ticks, list(outs), nodes, parent,
                                              device_ticks=device)
                                  for f, s, e, t, ticks, outs, parent, device in self._pending[len(self._runs):])
        return self._runs

    def _add_function(self, concrete: Any) -> int:
        with self._lock:
            f = self._fn_index.get(id(concrete))
            if f is None:
                f = self._fn_index[id(concrete)] = len(self._functions)
                self._functions.append(concrete)  # kept alive here, so its id is not reused
            return f

    def _add_node(self, node: Any) -> int:
        with self._lock:  # two threads meeting a new node must not get one index for two nodes
            k = self._node_index.get(id(node))
            if k is None:
                k = self._node_index[id(node)] = len(self._nodes)
                self._nodes.append(node)  # kept alive here, so its id is not reused
            return k

    def device_op(self, name: str, op_type: str, device: str, start_ns: int, end_ns: int,
                  function: Optional[str] = None) -> None:
        """An eager op's kernel on a GPU, timed by CUDA events."""
        event = OpEvent(name, op_type, start_ns, end_ns, 0, device, function=function)
        with self._lock:
            self.device.append(event)

    def device_events(self) -> List[OpEvent]:
        """Every GPU op seen (graph runs' and eager), by start time."""
        events = list(self.device)
        for run in self.runs:
            if run.device_ticks:
                events.extend(run.device_events)
        return sorted(events, key=lambda e: e.start_ns)

    def region(self, name: str, start_ns: int, end_ns: int, thread_id: int, args: Dict[str, Any]) -> None:
        """A marked region (`instrument.region`, `jf.profiler.Trace`); `step_num` makes it a step."""
        if self.thread_id is not None and thread_id != self.thread_id:
            return
        args = dict(args)
        step = args.pop("step_num", None)
        if step is not None:  # a step: sample the process's memory at its end (one small read)
            rss = resident_bytes()
            args["memory_rss_bytes"] = rss
            self.peak_rss_bytes = max(self.peak_rss_bytes, rss)
        region = Region(name, start_ns, end_ns, thread_id, int(step) if step is not None else None,
                        {k: v for k, v in args.items() if not k.startswith("_")})
        with self._lock:
            self._name_thread(thread_id)
            self.regions.append(region)

    def runtime_event(self, name: str, start_ns: int, end_ns: int, thread_id: int, args: Dict[str, Any]) -> None:
        if self.thread_id is not None and thread_id != self.thread_id:
            return  # a per-thread trace shows its own thread's compiles, not a background tier-up's
        with self._lock:
            self._name_thread(thread_id)
            self.runtime.append(RuntimeEvent(name, start_ns, end_ns, thread_id, dict(args)))

    def finalize(self) -> None:
        """Move each op's start past first-use work nested in it (a kernel compiled on its
        first call, a timed plan generated): that time is a runtime event of its own."""
        by_thread: Dict[int, List[RuntimeEvent]] = {}
        for e in self.runtime:
            if e.end_ns > e.start_ns:
                by_thread.setdefault(e.thread_id, []).append(e)
        if not by_thread:
            return
        starts = {}
        for tid, events in by_thread.items():
            events.sort(key=lambda e: e.start_ns)
            starts[tid] = [e.start_ns for e in events]
        for op in self.all_events():
            thread_events = by_thread.get(op.thread_id)
            if not thread_events:
                continue
            k = bisect.bisect_left(starts[op.thread_id], op.start_ns)
            while k < len(thread_events) and thread_events[k].start_ns < op.end_ns:
                e = thread_events[k]
                if e.end_ns <= op.end_ns and e.end_ns > op.start_ns:
                    op.compile_ns += e.end_ns - max(op.start_ns, e.start_ns)
                    op.start_ns = e.end_ns
                k += 1

    # -- views for exporters ------------------------------------------------------------
    def functions(self) -> List[Any]:
        """Distinct concrete functions that ran, in order of first run."""
        seen: Dict[int, Any] = {}
        for run in self.runs:
            seen.setdefault(id(run.concrete), run.concrete)
        return list(seen.values())

    def all_events(self) -> List[OpEvent]:
        events = list(self.eager)
        for run in self.runs:
            events.extend(run.events)
        return sorted(events, key=lambda e: e.start_ns)

    @property
    def empty(self) -> bool:
        return not (self._pending or self.eager or self.regions or self.runtime)


class _Tee:
    """The runtime's sink while several captures record: each event goes to all of them."""

    def __init__(self, captures: Tuple[Capture, ...]) -> None:
        self.captures = captures

    def eager_op(self, *args: Any) -> None:
        for c in self.captures:
            c.eager_op(*args)

    def graph_run(self, *args: Any, **kwargs: Any) -> None:
        for c in self.captures:
            c.graph_run(*args, **kwargs)

    def device_op(self, *args: Any, **kwargs: Any) -> None:
        for c in self.captures:
            c.device_op(*args, **kwargs)

    def region(self, *args: Any) -> None:
        for c in self.captures:
            c.region(*args)

    def runtime_event(self, *args: Any) -> None:
        for c in self.captures:
            c.runtime_event(*args)


class _NumbaCompiles:
    """numba's `numba:compile` events (a kernel compiled on its first call) as runtime events."""

    def __init__(self) -> None:
        lazyjit.numba()  # never beside a background import of numba (see lazyjit.numba)
        import numba.core.event as numba_event
        self._event = numba_event
        self._open: Dict[int, List[int]] = {}
        listener = self

        class _Listener(numba_event.Listener):
            def on_start(self, event: Any) -> None:
                listener._open.setdefault(threading.get_ident(), []).append(time.perf_counter_ns())

            def on_end(self, event: Any) -> None:
                stack = listener._open.get(threading.get_ident())
                if not stack:
                    return
                start = stack.pop()
                data = event.data if isinstance(event.data, dict) else {}
                dispatcher = data.get("dispatcher")
                name = getattr(getattr(dispatcher, "py_func", None), "__qualname__", None) or str(dispatcher)
                if instrument.enabled:
                    instrument.runtime_event("numba.compile", start, time.perf_counter_ns(), kernel=name,
                                             signature=str(data.get("args", "")))

        self.listener = _Listener()
        self.installed = False

    def install(self) -> None:
        if not self.installed:
            self._event.register("numba:compile", self.listener)
            self.installed = True

    def uninstall(self) -> None:
        if self.installed:
            self._event.unregister("numba:compile", self.listener)
            self.installed = False
            self._open.clear()


_sessions: List[Capture] = []
_exact: Dict[int, bool] = {}        # id(capture) -> wants exact per-op timing
_sessions_lock = threading.RLock()
_numba: Optional[_NumbaCompiles] = None


def _install() -> None:
    global _numba
    if not _sessions:
        instrument.uninstall()
        instrument.exact_ops = False
        if _numba is not None:
            _numba.uninstall()
        return
    instrument.exact_ops = any(_exact.get(id(c), False) for c in _sessions)
    instrument.install(_sessions[0] if len(_sessions) == 1 else _Tee(tuple(_sessions)))
    if _numba is None:
        _numba = _NumbaCompiles()
    _numba.install()


def start(thread_id: Optional[int] = None, exact_ops: bool = False, level: int = 2) -> Capture:
    """Begin a capture (alongside any others); `thread_id` limits it to one thread.
    `exact_ops`: time every op on its own through the interpreter while it records.
    `level`: TF's host tracer level (see `Capture`)."""
    capture = Capture(thread_id, level)
    with _sessions_lock:
        _sessions.append(capture)
        _exact[id(capture)] = bool(exact_ops)
        _install()
    return capture


def stop(capture: Optional[Capture] = None) -> Optional[Capture]:
    """End `capture` (default: `active()`) and return it, or None if it was not recording."""
    with _sessions_lock:
        if capture is None:
            capture = active()
        if capture is None or capture not in _sessions:
            return None
        _sessions.remove(capture)
        _exact.pop(id(capture), None)
        _install()
    capture.stopped_ns = time.perf_counter_ns()
    capture.peak_rss_bytes = max(capture.peak_rss_bytes, resident_bytes())
    capture.finalize()
    return capture


def for_thread(thread_id: Optional[int] = None) -> Optional[Capture]:
    """The capture recording only `thread_id` (default: the calling thread), if any."""
    tid = threading.get_ident() if thread_id is None else thread_id
    for c in list(_sessions):
        if c.thread_id == tid:
            return c
    return None


def active() -> Optional[Capture]:
    """The calling thread's own capture, else the latest process-wide one, else None."""
    mine = for_thread()
    if mine is not None:
        return mine
    for c in reversed(list(_sessions)):
        if c.thread_id is None:
            return c
    return None


def recording() -> List[Capture]:
    """Every capture recording now."""
    return list(_sessions)
