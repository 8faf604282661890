"""What runs while tracing is on: small event records the exporters turn into files.

`Capture` is the runtime's instrumentation sink. The runtime calls it once per eager op
and once per graph run (with per-node timings from the plan's timed variant); each
becomes `OpEvent`s (a graph run's only when an exporter reads `FunctionRun.events`, so
that recording stays cheap). `jf.profiler.Trace` regions (training steps) are
`Region`s. All times are `perf_counter_ns`; `wall_ns()` converts to the epoch for exporters.

Ops that ran on a GPU also come with their kernel times from CUDA events (a graph run's
in `FunctionRun.device_ticks`, eager ones as `device_op` calls): those are the
`device_events`, on the GPU's own line in profiles and its device in step stats.
"""
from __future__ import annotations

import threading
import time
from array import array
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Tuple

import numpy as np

from jitflow.runtime.core import instrument
from jitflow.runtime.core.tensor import CPU0

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
        """One OpEvent per node run, built when an exporter first asks (see Capture.graph_run)."""
        if self._events is None:
            name, nodes, ticks = self.concrete.name, self.nodes, self.ticks
            self._events = []
            for i, outputs in enumerate(self.outputs):
                node = nodes[ticks[3 * i]]
                self._events.append(OpEvent(node.name, node.op.tf_op, ticks[3 * i + 1], ticks[3 * i + 2],
                                            self.thread_id, node.device or CPU0, list(outputs),
                                            tuple(t.name for t in node.inputs), name))
        return self._events

    @property
    def device_events(self) -> List[OpEvent]:
        """The GPU ops of this run, timed by CUDA events (thread_id 0: the device's stream)."""
        out = []
        for k, device, start, end in self.device_ticks or ():
            node = self.nodes[k]
            out.append(OpEvent(node.name, node.op.tf_op, start, end, 0, device, [],
                               tuple(t.name for t in node.inputs), self.concrete.name))
        return out


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
    """Collects events between `start()` and `stop()`; thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.runs: List[FunctionRun] = []
        self.eager: List[OpEvent] = []
        self.regions: List[Region] = []
        self.thread_names: Dict[int, str] = {}
        self.device: List[OpEvent] = []           # eager ops' GPU kernels (CUDA event times)
        self._nodes: List[Any] = []              # graph nodes seen, referenced by index from runs
        self._node_index: Dict[int, int] = {}    # id(node) → index in _nodes
        self._described: Dict[int, tuple] = {}    # node index → its latest output description
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
        index, shared = self._node_index, self._described
        ticks = array("q")
        outputs = []
        for node, t0, t1, value in timings:
            k = index.get(id(node))
            if k is None:
                k = self._add_node(node)
            outs = node.outputs
            if len(outs) == 1 and value.__class__ is np.ndarray:  # the common case
                described = shared.get(k)
                if described is None or described[0][1] != value.shape:
                    described = shared[k] = ((outs[0]._dtype.name, value.shape, value.nbytes),)
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
        run = FunctionRun(concrete, start_ns, end_ns, thread_id, ticks, outputs, self._nodes, parent,
                          device_ticks=device or None)
        with self._lock:
            self._name_thread(thread_id)
            self.runs.append(run)

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

    def region(self, region: Any, *timing: Any) -> None:
        """Record a region: a `Region`, or `instrument.region`'s (name, start, end, thread, args)."""
        if timing:
            start_ns, end_ns, thread_id, args = timing
            region = Region(region, start_ns, end_ns, thread_id, args.get("step_num"), dict(args))
        with self._lock:
            self._name_thread(region.thread_id)
            self.regions.append(region)

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
        return not (self.runs or self.eager or self.regions)


_active: Optional[Capture] = None
_active_lock = threading.Lock()


def start() -> Capture:
    """Begin capturing (replacing any capture in progress)."""
    global _active
    with _active_lock:
        _active = Capture()
        instrument.install(_active)
        return _active


def stop() -> Optional[Capture]:
    """Stop capturing and return what was captured (None if nothing was active)."""
    global _active
    with _active_lock:
        capture, _active = _active, None
        instrument.uninstall()
    if capture is not None:
        capture.stopped_ns = time.perf_counter_ns()
    return capture


def active() -> Optional[Capture]:
    return _active
