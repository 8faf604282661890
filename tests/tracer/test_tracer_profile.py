"""Profiles: the Chrome trace JSON and the XSpace, with eager ops, steps and name scopes.

The Chrome trace is read with `json`; the XSpace with jitflow's message classes for its
structure and, when xprof is installed, with xprof's own converter (what the Profile
plugin runs) for the trace viewer and op statistics.
"""
from __future__ import annotations

import glob
import json
import os
import socket
import threading
import time

import numpy as np
import pytest

import jitflow as jf
from jitflow.tracer import capture, profile
from tracer_testutil import (RUN_DIR_RE, chrome_trace, complete_events, encloses, node_stats, profile_runs,
                             read_tag, xspace)


@jf.function
def layered(x):
    with jf.name_scope("outer"):
        a = jf.exp(x)
        with jf.name_scope("inner"):
            b = jf.tanh(a) * 2.0
            c = b + 1.0
        d = c - a
    return jf.reduce_sum(d)


X = np.linspace(-1.0, 1.0, 8, dtype=np.float32)


def _export_profile(logdir: str, body, name: str = "prof"):
    """trace_on(profiler) → body() → trace_export; returns (run dir, RunMetadata)."""
    writer = jf.summary.create_file_writer(logdir)
    jf.summary.trace_on(graph=True, profiler=True, profiler_outdir=logdir)
    body()
    with writer.as_default():
        assert jf.summary.trace_export(name, step=0)
    writer.close()
    (run_dir,) = profile_runs(logdir)
    meta, _, _ = read_tag(logdir, name)
    return run_dir, meta


# -- Chrome trace --------------------------------------------------------------------------------
def test_chrome_trace_format_and_units(tmp_path):
    x = jf.constant(X)
    layered(x)  # trace outside the capture
    times = {}

    def body():
        t0 = time.perf_counter_ns()
        layered(x)
        times["call_ns"] = time.perf_counter_ns() - t0
    run_dir, meta = _export_profile(str(tmp_path), body)
    trace = chrome_trace(run_dir)
    json.dumps(trace)  # plain JSON types only
    assert trace["displayTimeUnit"] in ("ms", "ns")
    meta_events = [e for e in trace["traceEvents"] if e["ph"] == "M"]
    process = [e for e in meta_events if e["name"] == "process_name"]
    threads = {e["tid"]: e["args"]["name"] for e in meta_events if e["name"] == "thread_name"}
    assert len(process) == 1 and process[0]["args"]["name"]
    xs = complete_events(trace)
    assert xs and {e["tid"] for e in xs} <= set(threads)
    for e in xs:
        assert isinstance(e["ts"], (int, float)) and isinstance(e["dur"], (int, float))
        assert e["dur"] >= 0 and e["ts"] >= 0 and e["pid"] == process[0]["pid"]
    assert threads[xs[0]["tid"]] == "MainThread"

    # µs: each op's dur × 1000 is the node's duration in ns from the step stats.
    by_name = {ns.node_name: ns for ns in node_stats(meta)}
    ops = [e for e in xs if e["cat"] == "op"]
    assert {e["args"]["long_name"] for e in ops} == set(by_name)
    for e in ops:
        assert e["name"] == f"{e['args']['long_name']}:{e['args']['op_type']}"
        assert round(e["dur"] * 1000) == by_name[e["args"]["long_name"]].all_end_rel_nanos
    (fn,) = [e for e in xs if e["cat"] == "function"]
    assert 0 < fn["dur"] * 1000 <= times["call_ns"]
    # `otherData.origin_unix_ns` + ts gives wall time: the op starts the step stats report.
    origin = trace["otherData"]["origin_unix_ns"]
    for e in ops:
        wall_ns = origin + round(e["ts"] * 1000)
        assert abs(wall_ns - by_name[e["args"]["long_name"]].all_start_nanos) <= 1000


def test_name_scope_spans_nest_ops_exactly(tmp_path):
    x = jf.constant(X)
    layered(x)
    run_dir, _ = _export_profile(str(tmp_path), lambda: [layered(x) for _ in range(3)])
    xs = complete_events(chrome_trace(run_dir))
    scopes = [e for e in xs if e["cat"] == "scope"]
    functions = [e for e in xs if e["cat"] == "function"]
    ops = [e for e in xs if e["cat"] == "op"]
    assert len(functions) == 3
    assert sorted({e["args"]["name_scope"] for e in scopes}) == ["outer", "outer/inner"]
    assert {e["name"] for e in scopes} == {"outer", "inner"}
    for op in ops:
        long_name = op["args"]["long_name"]
        parents = [s for s in scopes if long_name.startswith(s["args"]["name_scope"] + "/")]
        expected = long_name.count("/")  # one enclosing span per scope level
        enclosing = [s for s in parents if encloses(s, op)]
        assert len(enclosing) == expected, (long_name, enclosing)
        assert sum(encloses(f, op) for f in functions) == 1, long_name
        # and no scope the op is not in encloses it
        assert not any(encloses(s, op) for s in scopes if s not in parents), long_name
    for s in scopes:  # scopes sit inside one function run; inner inside outer
        assert sum(encloses(f, s) for f in functions) == 1
        if s["args"]["name_scope"] == "outer/inner":
            assert any(encloses(o, s) for o in scopes if o["args"]["name_scope"] == "outer")


def test_eager_ops_are_in_the_profile(tmp_path):
    x = jf.constant(X.reshape(2, 4))
    run_dir, meta = _export_profile(str(tmp_path), lambda: (jf.tanh(x), jf.matmul(x, jf.transpose(x)),
                                                           layered(jf.constant(X))))
    xs = complete_events(chrome_trace(run_dir))
    eager = {e["name"]: e for e in xs if e["cat"] == "eager"}
    assert {"tanh:Tanh", "transpose:Transpose", "matmul:MatMul"} <= set(eager)
    assert eager["matmul:MatMul"]["args"]["outputs"] == "float32[2, 2]"
    assert eager["matmul:MatMul"]["args"]["bytes"] == 16 and eager["tanh:Tanh"]["args"]["bytes"] == 32
    assert all(e["args"]["is_eager"] == 1 for e in eager.values())
    # Eager ops have no graph node, so the graph's step stats leave them out.
    assert not any(ns.node_name in ("tanh", "matmul") for ns in node_stats(meta))

    space = xspace(run_dir)
    (plane,) = space.planes
    names = {m.name for m in plane.event_metadata.values()}
    assert {"tanh:Tanh", "matmul:MatMul", "outer/Exp:Exp"} <= names


# -- jf.profiler ----------------------------------------------------------------------------------
def test_profiler_trace_steps_enclose_their_ops(tmp_path):
    x = jf.constant(X)
    layered(x)
    with jf.profiler.Trace("outside", step_num=99):  # nothing captures: free, recorded nowhere
        layered(x)
    with jf.profiler.Profile(tmp_path) as prof:
        for step in range(3):
            with jf.profiler.Trace("train", step_num=step):
                layered(x)
                jf.tanh(x)
    assert prof.run_dir is not None and RUN_DIR_RE.match(os.path.basename(prof.run_dir))
    assert profile_runs(str(tmp_path)) == [prof.run_dir]
    xs = complete_events(chrome_trace(prof.run_dir))
    steps = sorted((e for e in xs if e["cat"] == "step"), key=lambda e: e["ts"])
    assert [(e["name"], e["args"]["step_num"]) for e in steps] == [("train", 0), ("train", 1), ("train", 2)]
    inside = [e for e in xs if e["cat"] in ("function", "scope", "op", "eager")]
    assert len([e for e in inside if e["cat"] == "function"]) == 3
    assert len([e for e in inside if e["cat"] == "eager"]) == 3
    for e in inside:
        assert sum(encloses(s, e) for s in steps) == 1, e["name"]

    # In the XSpace every op carries its step's number as group_id.
    (plane,) = xspace(prof.run_dir).planes
    stat_names = {k: m.name for k, m in plane.stat_metadata.items()}
    event_names = {k: m.name for k, m in plane.event_metadata.items()}
    groups = {}
    for line in plane.lines:
        for ev in line.events:
            stats = {stat_names[s.metadata_id]: s for s in ev.stats}
            if event_names[ev.metadata_id] == "train":
                assert "step_num" in stats
            elif event_names[ev.metadata_id].endswith(":Tanh"):
                groups.setdefault(stats["group_id"].int64_value, 0)
                groups[stats["group_id"].int64_value] += 1
    assert groups == {0: 2, 1: 2, 2: 2}  # the graph's Tanh and the eager one, per step


def test_profiler_start_stop(tmp_path):
    x = jf.constant(X)
    jf.profiler.start(str(tmp_path))
    with pytest.raises(RuntimeError, match="already profiling"):
        jf.profiler.start(str(tmp_path))
    layered(x)
    run_dir = jf.profiler.stop()
    assert capture.active() is None
    assert sorted(os.listdir(run_dir)) == [f"{socket.gethostname()}.trace.json.gz",
                                           f"{socket.gethostname()}.xplane.pb"]
    with pytest.warns(UserWarning, match="not running"):
        assert jf.profiler.stop() is None
    with pytest.raises(TypeError, match="logdir: expected a directory path"):
        jf.profiler.start(3)


def test_profiler_and_a_summary_trace_record_side_by_side(tmp_path):
    """jf.profiler.start while trace_on records: each capture gets every event it covers."""
    jf.summary.trace_on(graph=True)
    recording = capture.active()
    jf.profiler.start(str(tmp_path / "prof"))
    layered(jf.constant(X))
    run_dir = jf.profiler.stop()
    assert capture.active() is recording and recording.runs
    writer = jf.summary.create_file_writer(str(tmp_path / "tb"))
    with writer.as_default():
        assert jf.summary.trace_export("shared", step=0)
    writer.close()
    names = {e["name"] for e in complete_events(chrome_trace(run_dir))}
    assert "outer/Exp:Exp" in names
    meta, _, _ = read_tag(str(tmp_path / "tb"), "shared")
    assert "outer/Exp" in {ns.node_name for ns in node_stats(meta)}


def test_exports_in_the_same_second_do_not_overwrite(tmp_path, monkeypatch):
    monkeypatch.setattr(profile, "run_dir_name", lambda when=None: "2026_01_02_03_04_05")
    x = jf.constant(X)
    for _ in range(3):
        with jf.profiler.Profile(str(tmp_path)):
            layered(x)
    runs = [os.path.basename(r) for r in profile_runs(str(tmp_path))]
    assert runs == ["2026_01_02_03_04_05", "2026_01_02_03_04_05_1", "2026_01_02_03_04_05_2"]
    assert all(RUN_DIR_RE.match(r) for r in runs)
    assert all(len(glob.glob(os.path.join(str(tmp_path), "plugins", "profile", r, "*"))) == 2 for r in runs)


# -- XSpace ---------------------------------------------------------------------------------------
def test_xspace_structure(tmp_path):
    x = jf.constant(X)
    layered(x)
    wall0 = time.time_ns()
    run_dir, meta = _export_profile(str(tmp_path), lambda: layered(x))
    wall1 = time.time_ns()
    space = xspace(run_dir)
    assert list(space.hostnames) == [socket.gethostname()]
    (plane,) = space.planes
    assert plane.name == "/host:CPU"
    assert all(k == m.id for k, m in plane.event_metadata.items())
    assert all(k == m.id for k, m in plane.stat_metadata.items())
    (line,) = plane.lines
    assert line.name == "MainThread" and wall0 <= line.timestamp_ns <= wall1
    by_name = {ns.node_name: ns for ns in node_stats(meta)}
    seen = set()
    for ev in line.events:
        assert ev.metadata_id in plane.event_metadata and ev.offset_ps >= 0
        assert ev.offset_ps + ev.duration_ps <= line.duration_ps
        name = plane.event_metadata[ev.metadata_id].name
        node = name.rsplit(":", 1)[0]
        if ":" in name and node in by_name:
            seen.add(node)
            assert ev.duration_ps == by_name[node].all_end_rel_nanos * 1000
            assert line.timestamp_ns + ev.offset_ps // 1000 == by_name[node].all_start_nanos
    assert seen == set(by_name)


def test_xprof_reads_the_xspace(tmp_path):
    """What the Profile plugin runs on the file: its trace viewer and op statistics."""
    try:
        from xprof.convert import raw_to_tool_data
    except Exception as e:  # noqa: BLE001 - any broken install counts as missing
        pytest.skip(f"xprof (tensorboard-plugin-profile) is not importable: {e}")
    x = jf.constant(X)
    layered(x)

    def body():
        with jf.profiler.Trace("train", step_num=0):  # xprof's op stats group ops by step
            layered(x)
            jf.tanh(x)
    run_dir, meta = _export_profile(str(tmp_path), body)
    (path,) = glob.glob(os.path.join(run_dir, "*.xplane.pb"))
    data, _ = raw_to_tool_data.xspace_to_tool_data([path], "trace_viewer", {})
    events = json.loads(data)["traceEvents"]
    xs = [e for e in events if e.get("ph") == "X"]
    names = {e["name"] for e in xs}
    assert {f"{ns.node_name}:{ns.timeline_label.split(' = ')[1].split('(')[0]}" for ns in node_stats(meta)} <= names
    assert {"tanh:Tanh", "outer", "inner", "train"} <= names
    threads = [e for e in events if e.get("name") == "thread_name"]
    assert [t["args"]["name"] for t in threads] == ["MainThread"]
    exp = next(e for e in xs if e["name"] == "outer/Exp:Exp")
    assert exp["args"]["tf_op"] == "outer/Exp:Exp"
    assert round(exp["dur"] * 1000) == next(ns for ns in node_stats(meta)
                                            if ns.node_name == "outer/Exp").all_end_rel_nanos

    data, _ = raw_to_tool_data.xspace_to_tool_data([path], "framework_op_stats", {})
    table = json.loads(data)[0]
    cols = [c["id"] for c in table["cols"]]
    rows = [dict(zip(cols, (c.get("v") for c in r["c"]))) for r in table["rows"]]
    modes = {(r["type"], r["operation"]): r["eager"] for r in rows}
    assert modes[("Tanh", "tanh")] == "Eager"
    assert modes[("Tanh", "outer/inner/Tanh")] == "Function"
    assert modes[("Exp", "outer/Exp")] == "Function"


def test_one_row_per_thread(tmp_path):
    x = jf.constant(X)
    layered(x)

    with jf.profiler.Profile(str(tmp_path)) as prof:  # the profiler records every thread
        layered(x)
        worker = threading.Thread(target=lambda: (layered(x), jf.tanh(x)), name="worker")
        worker.start()
        worker.join()
    run_dir = prof.run_dir
    trace = chrome_trace(run_dir)
    threads = {e["tid"]: e["args"]["name"] for e in trace["traceEvents"] if e["name"] == "thread_name"}
    assert {"MainThread", "worker"} <= set(threads.values())
    by_thread = {}
    for e in complete_events(trace):
        by_thread.setdefault(threads[e["tid"]], set()).add(e["cat"])
    assert {"function", "op"} <= by_thread["MainThread"] and {"function", "op", "eager"} <= by_thread["worker"]
    (plane,) = xspace(run_dir).planes
    assert {"MainThread", "worker"} <= {line.name for line in plane.lines}
    assert len({line.id for line in plane.lines}) == len(plane.lines)


def test_trace_export_does_not_end_the_profilers_recording(tmp_path):
    jf.profiler.start(str(tmp_path / "prof"))
    jf.summary.trace_on(graph=True)
    layered(jf.constant(X))
    writer = jf.summary.create_file_writer(str(tmp_path / "tb"))
    with writer.as_default():
        assert jf.summary.trace_export("shared", step=0)
    writer.close()
    layered(jf.constant(X))
    run_dir = jf.profiler.stop()
    assert run_dir is not None and profile_runs(str(tmp_path / "prof")) == [run_dir]
    functions = [e for e in complete_events(chrome_trace(run_dir)) if e["cat"] == "function"]
    assert len(functions) == 2  # both calls: the summary trace took nothing away
