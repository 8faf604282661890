"""A capture → a profile run directory TensorBoard's Profile plugin and Perfetto open.

    <logdir>/plugins/profile/<YYYY_MM_DD_HH_MM_SS>/<host>.xplane.pb
    <logdir>/plugins/profile/<YYYY_MM_DD_HH_MM_SS>/<host>.trace.json.gz

Both files hold the same timeline, one row per thread: `jf.profiler.Trace` steps
outermost, then each function run (`__inference_f_3`), its name scopes, and its ops
(named `node:OpType`, TF's convention for framework ops), plus eager ops (with
`is_eager`, so xprof's op statistics say "Eager"). Two exports within one second get
`<timestamp>_1`, `_2`, ... run directories instead of overwriting each other.

A function on the compiled tier shows each fused segment as a `fusion` event with the
ops it fused under it (times attributed by `attribution`, marked `estimated`). Runtime
work (`jitflow.compile`, `jitflow.cache_load`, `jitflow.tier_up`, `numba.compile`) is on
a line of its own per thread, named `name:Type` so xprof's op statistics list it as its
own row. A step (`Trace(..., step_num=i)`, `instrument.region(..., step_num=i)`) carries
`group_id = i`, as do the events inside it: xprof's step detection reads exactly that (a
host step marker is an event named `train...`/`test...` with a `group_id`; other events
with that `group_id` are its compute, `IteratorGetNext...` events its input time).

Files are written to a temporary name and renamed, so a full disk never leaves a
truncated profile that TensorBoard would choke on.

Ops that ran on a GPU are on the host rows as their launches and, with their CUDA-event
times, on a plane of their own per GPU (`/device:GPU:0`, one "Stream" line), which the
Chrome trace shows as a separate process.
"""
from __future__ import annotations

import bisect
import datetime
import gzip
import json
import os
import socket
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional

from .capture import Capture, OpEvent, RuntimeEvent
from .xplane import PlaneBuilder, XSpace
from jitflow.runtime.training.atomic_files import atomic_write

HOST_PLANE = "/host:CPU"
GPU_LINE = "Stream #0(Compute)"


@dataclass
class Span:
    name: str
    category: str             # "step", "function", "scope", "op", "eager"
    start_ns: int             # perf_counter_ns
    end_ns: int
    thread_id: int
    args: Dict[str, Any] = field(default_factory=dict)
    display: str = ""
    line: str = ""            # "" the thread's own line; "runtime": its compile/cache line

RUNTIME_LINE = "jitflow runtime (compile, cache, tier-up)"
# Runtime events as `name:Type`, the shape xprof parses into an op statistics row.
_RUNTIME_TYPES = {"jitflow.compile": "JitflowCompile", "jitflow.cache_load": "JitflowCacheLoad",
                  "jitflow.tier_up": "JitflowTierUp", "numba.compile": "NumbaCompile",
                  "jitflow.plan_build": "JitflowPlanBuild", "jitflow.numba_load": "JitflowNumbaLoad"}


def _scope_spans(events: List[OpEvent], thread_id: int) -> List[Span]:
    """One span per maximal run of consecutive ops under the same name scope, per depth."""
    spans: List[Span] = []
    depth = 0
    while True:
        current: Optional[str] = None
        first = last = None
        found_any = False
        for e in events + [None]:  # sentinel flushes the last run
            parts = e.name.split("/") if e is not None else []
            scope = "/".join(parts[:depth + 1]) if len(parts) > depth + 1 else None
            if scope is not None:
                found_any = True
            if scope != current:
                if current is not None:
                    assert first is not None and last is not None  # set when the run began
                    spans.append(Span(current, "scope", first.start_ns, last.end_ns, thread_id,
                                      {"name_scope": current}, current.split("/")[-1]))
                current, first = scope, e
            last = e
        if not found_any:
            return spans
        depth += 1


def spans(capture: Capture) -> List[Span]:
    out: List[Span] = []
    for r in capture.regions:
        args = dict(r.args)
        if r.step_num is not None:
            args["step_num"] = r.step_num
        # An input-pipeline region counts as input time on xprof's pages, which recognise
        # TF's `IteratorGetNext` events by that name prefix.
        name = f"IteratorGetNext ({r.name})" if args.get("input_pipeline") else r.name
        out.append(Span(name, "step" if r.step_num is not None else "region", r.start_ns, r.end_ns,
                        r.thread_id, args))
    for run in capture.runs:
        out.append(Span(run.concrete.name, "function", run.start_ns, run.end_ns, run.thread_id,
                        {"function": run.concrete.function._qualname,
                         "tier": "compiled" if run.fusions else "interpreter"}))
        out.extend(_scope_spans(run.events, run.thread_id))
        for seg, start, end, _ in run.fusions:
            out.append(_fusion_span(seg, start, end, run))
        for e in run.events:
            out.append(_op_span(e, "op"))
    for e in capture.eager:
        out.append(_op_span(e, "eager"))
    for runtime_event in capture.runtime:
        out.append(_runtime_span(runtime_event))
    return sorted(out, key=lambda s: (s.thread_id, s.line, s.start_ns, -(s.end_ns - s.start_ns)))


def _fusion_span(seg: Any, start_ns: int, end_ns: int, run: Any) -> Span:
    """A compiled segment as measured: one event naming the ops it fused (as XLA's fusions)."""
    fused = seg.fused
    names = [n.name for n in fused]
    listed = ", ".join(names[:64]) + (f", ... ({len(names)} in all)" if len(names) > 64 else "")
    types = sorted({n.op.tf_op for n in fused})
    return Span(f"{run.concrete.name}/{seg.name}", "fusion", start_ns, end_ns, run.thread_id,
                {"segment": seg.name, "fused_ops": listed, "fused_op_types": ", ".join(types),
                 "num_fused_ops": len(names),
                 "function": run.concrete.name, "attribution": "estimated by cost, see docs/profiling.md"},
                f"fusion {seg.name} ({len(names)} ops)")


def _runtime_span(e: RuntimeEvent) -> Span:
    kind = _RUNTIME_TYPES.get(e.name, "JitflowRuntime")
    what = e.args.get("function") or e.args.get("kernel") or ""
    return Span(f"{e.name}:{kind}", "runtime", e.start_ns, e.end_ns, e.thread_id, dict(e.args),
                f"{e.name} {what}".strip(), line="runtime")


def _op_span(e: OpEvent, category: str) -> Span:
    # Named `node:OpType` in both files (no shorter display name): the type is what
    # one scans a timeline for, and xprof counts `name:Type` events as framework ops.
    args: Dict[str, Any] = {"tf_op": f"{e.name}:{e.op_type}", "long_name": e.name, "op_type": e.op_type,
                            "bytes": e.bytes}
    if e.outputs:
        args["outputs"] = ", ".join(f"{d}{list(s)}" for d, s, _ in e.outputs)
    if e.function:
        args["function"] = e.function
    if e.fusion:
        args["fusion"] = e.fusion
        args["estimated"] = 1
    if e.compile_ns:
        args["first_use_ns_excluded"] = e.compile_ns
    if category == "eager":
        args["is_eager"] = 1
    return Span(f"{e.name}:{e.op_type}", category, e.start_ns, e.end_ns, e.thread_id, args)


def device_spans(capture: Capture) -> Dict[str, List[Span]]:
    """GPU op spans by plane name (`/device:GPU:0`), from the capture's CUDA-event times."""
    out: Dict[str, List[Span]] = {}
    for e in capture.device_events():
        span = _op_span(e, "device")
        span.args["device"] = e.device
        out.setdefault("/device:" + e.device.rsplit("/device:", 1)[-1], []).append(span)
    return out


class _Steps:
    """Which step (if any) encloses a span: per thread, steps sorted by start, found by
    bisection (a long live capture has thousands of steps and a million spans)."""

    def __init__(self, steps: List[Span]) -> None:
        self._by_thread: Dict[int, tuple] = {}
        grouped: Dict[int, List[Span]] = {}
        for step in steps:
            grouped.setdefault(step.thread_id, []).append(step)
        for tid, spans_ in grouped.items():
            spans_.sort(key=lambda s: s.start_ns)
            self._by_thread[tid] = ([s.start_ns for s in spans_], spans_)

    def of(self, span: Span) -> Optional[int]:
        found = self._by_thread.get(span.thread_id)
        if found is None:
            return None
        starts, steps = found
        k = bisect.bisect_right(starts, span.start_ns) - 1
        for j in range(k, max(-1, k - 8), -1):  # the latest step that started before it and encloses it
            if span.start_ns <= steps[j].end_ns:  # (steps rarely nest: a few looks back suffice)
                return steps[j].args.get("step_num")
        return None


def build_xspace(capture: Capture, host: str) -> Any:
    all_spans = spans(capture)
    gpu = device_spans(capture)
    builder = PlaneBuilder(1, HOST_PLANE)
    steps = _Steps([s for s in all_spans if s.category == "step"])
    threads = sorted({(s.thread_id, s.line) for s in all_spans})
    origin = min([s.start_ns for s in all_spans] + [s.start_ns for g in gpu.values() for s in g],
                 default=capture.started_ns)
    lines = {}
    for i, (tid, kind) in enumerate(threads):
        name = capture.thread_names.get(tid, f"thread {tid}")
        lines[(tid, kind)] = builder.line(i + 1, f"{name}: {RUNTIME_LINE}" if kind else name,
                                          capture.wall_ns(origin))
    for span in all_spans:
        meta = builder.event_metadata(span.name, span.display or span.name)
        event = lines[(span.thread_id, span.line)].events.add(metadata_id=meta,
                                                              offset_ps=(span.start_ns - origin) * 1000,
                                                              duration_ps=max(0, span.end_ns - span.start_ns) * 1000)
        stats = dict(span.args)
        step = span.args.get("step_num") if span.category == "step" else steps.of(span)
        if step is not None:
            stats["group_id"] = step
        if span.category == "step":
            stats["_r"] = 1
        event.stats.extend(builder.stat(k, v) for k, v in stats.items())
    for line in lines.values():
        if line.events:
            last = max(e.offset_ps + e.duration_ps for e in line.events)
            line.duration_ps = last
    # The process's memory: its peak resident size over the capture's samples, as a plane stat.
    builder.plane.stats.append(builder.stat("peak_memory_rss_bytes", int(capture.peak_rss_bytes)))
    space = XSpace(hostnames=[host])
    space.planes.append(builder.plane)
    for i, (name, device) in enumerate(sorted(gpu.items())):
        plane = PlaneBuilder(i + 2, name)
        line = plane.line(1, GPU_LINE, capture.wall_ns(origin))
        for span in sorted(device, key=lambda s: s.start_ns):
            event = line.events.add(metadata_id=plane.event_metadata(span.name),
                                    offset_ps=(span.start_ns - origin) * 1000,
                                    duration_ps=max(0, span.end_ns - span.start_ns) * 1000)
            event.stats.extend(plane.stat(k, v) for k, v in span.args.items())
        line.duration_ps = max((e.offset_ps + e.duration_ps for e in line.events), default=0)
        space.planes.append(plane.plane)
    return space


def chrome_trace(capture: Capture) -> Dict[str, Any]:
    """Chrome trace-event JSON (µs timestamps): Perfetto and chrome://tracing open it.

    `ts` counts from the capture's start (`otherData.origin_unix_ns` is that instant):
    a float µs since the epoch (~1.8e15) keeps only 1/4 µs, enough to push an op's end
    past its scope's end, and Perfetto then drops the mis-nested slice.
    """
    all_spans = spans(capture)
    gpu = device_spans(capture)
    origin = min([capture.started_ns] + [s.start_ns for s in all_spans]
                 + [s.start_ns for g in gpu.values() for s in g])
    tids = {key: i + 1 for i, key in enumerate(sorted({(s.thread_id, s.line) for s in all_spans}))}
    events: List[Dict[str, Any]] = [{"name": "process_name", "ph": "M", "pid": 1, "tid": 0,
                                     "args": {"name": f"jitflow {HOST_PLANE}"}}]
    for (tid, kind), index in tids.items():
        name = capture.thread_names.get(tid, f"thread {tid}")
        events.append({"name": "thread_name", "ph": "M", "pid": 1, "tid": index,
                       "args": {"name": f"{name}: {RUNTIME_LINE}" if kind else name}})
    for span in all_spans:
        events.append({"name": span.display or span.name, "cat": span.category, "ph": "X",
                       "ts": (span.start_ns - origin) / 1000.0,
                       "dur": max(0, span.end_ns - span.start_ns) / 1000.0,
                       "pid": 1, "tid": tids[(span.thread_id, span.line)], "args": span.args})
    for span in all_spans:  # memory as a counter track: resident size at each step's end
        if span.category == "step" and "memory_rss_bytes" in span.args:
            events.append({"name": "process memory (RSS)", "ph": "C", "pid": 1, "tid": 0,
                           "ts": (span.end_ns - origin) / 1000.0,
                           "args": {"MiB": round(span.args["memory_rss_bytes"] / 2**20, 3)}})
    for pid, (name, device) in enumerate(sorted(gpu.items()), start=2):  # a process per GPU
        events.append({"name": "process_name", "ph": "M", "pid": pid, "tid": 0, "args": {"name": f"jitflow {name}"}})
        events.append({"name": "thread_name", "ph": "M", "pid": pid, "tid": 1, "args": {"name": GPU_LINE}})
        for span in device:
            events.append({"name": span.name, "cat": span.category, "ph": "X",
                           "ts": (span.start_ns - origin) / 1000.0, "dur": max(0, span.end_ns - span.start_ns) / 1000.0,
                           "pid": pid, "tid": 1, "args": span.args})
    return {"traceEvents": events, "displayTimeUnit": "ns",
            "otherData": {"origin_unix_ns": capture.wall_ns(origin), "producer": "jitflow",
                          "peak_memory_rss_bytes": int(capture.peak_rss_bytes)}}


def run_dir_name(when: Optional[datetime.datetime] = None) -> str:
    return (when or datetime.datetime.now()).strftime("%Y_%m_%d_%H_%M_%S")


def _new_run_dir(root: str) -> str:
    """Create and return `root/<timestamp>`, or `<timestamp>_<n>` if that one exists:
    exports within one second (a loop, a test) must not overwrite each other's files."""
    base = os.path.join(root, run_dir_name())
    for n in range(1000):
        run_dir = base if n == 0 else f"{base}_{n}"
        try:
            os.makedirs(run_dir)
            return run_dir
        except FileExistsError:
            continue
    raise FileExistsError(f"{base}_*: 1000 profile runs in one second")


def write_atomic(path: str, data: bytes) -> None:
    """Write `data` to `path` through a temporary file in the same directory, renamed over
    `path` only once it is complete and synced: a full disk or a kill leaves no truncated
    file where a reader looks (the checkpoint writer's `atomic_write`)."""
    atomic_write(path, data)


def write_files(capture: Capture, run_dir: str, host: str) -> List[str]:
    """`<run_dir>/<host>.xplane.pb` and `<host>.trace.json.gz`, each written atomically."""
    xplane = os.path.join(run_dir, f"{host}.xplane.pb")
    trace = os.path.join(run_dir, f"{host}.trace.json.gz")
    write_atomic(xplane, build_xspace(capture, host).SerializeToString())
    # One encode and one write: json.dump into a gzip text stream makes a write call per
    # token (tens of thousands for a 1,000-node trace) and took half of trace_export.
    write_atomic(trace, gzip.compress(json.dumps(chrome_trace(capture)).encode("utf-8"), compresslevel=6))
    return [xplane, trace]


def write(capture: Capture, logdir: str, host: Optional[str] = None) -> str:
    """Write both profile files under `logdir`; returns the run directory."""
    if not isinstance(logdir, (str, os.PathLike)) or not os.fspath(logdir):
        raise TypeError(f"profiler_outdir: expected a directory path; got {logdir!r}")
    host = host or socket.gethostname()
    run_dir = None
    try:
        run_dir = _new_run_dir(os.path.join(os.fspath(logdir), "plugins", "profile"))
        write_files(capture, run_dir, host)
    except OSError as e:
        if run_dir is not None:
            try:
                os.rmdir(run_dir)  # only if empty: never leave a run TensorBoard lists with no profile
            except OSError:
                pass
        raise OSError(f"profiler_outdir: cannot write the profile under {os.fspath(logdir)!r} ({e.strerror or e}); "
                      "pass a writable directory with free space") from e
    return run_dir
