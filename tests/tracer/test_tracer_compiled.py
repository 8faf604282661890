"""Profiles of the tier that runs: compiled segments as fusion events with attributed ops,
exact per-op timing on request, compile / cache-load / first-use work as events of their own."""
from __future__ import annotations

import glob
import json
import os

import numpy as np
import pytest

import jitflow as jf
from jitflow.tracer import attribution, capture
from tracer_testutil import chrome_trace, complete_events, node_stats, profile_runs, read_tag

X = np.linspace(-1.0, 1.0, 64, dtype=np.float32)


def _chain(x):
    with jf.name_scope("block"):
        for _ in range(4):
            x = jf.tanh(x * 0.5 + 0.1)
    return jf.reduce_sum(x)


def _export(logdir: str, body, **trace_options):
    writer = jf.summary.create_file_writer(logdir)
    jf.summary.trace_on(graph=True, profiler=True, profiler_outdir=logdir, **trace_options)
    body()
    with writer.as_default():
        assert jf.summary.trace_export("t", step=0)
    writer.close()
    (run_dir,) = profile_runs(logdir)
    meta, _, _ = read_tag(logdir, "t")
    return run_dir, meta


def test_traced_compiled_function_stays_compiled(tmp_path):
    f = jf.function(_chain, jit_compile=True)
    x = jf.constant(X)
    expected = f(x).numpy()
    assert f.get_concrete_function(x).tier == "compiled"
    got = {}
    run_dir, meta = _export(str(tmp_path), lambda: got.update(v=f(x).numpy()))
    assert got["v"] == expected
    events = complete_events(chrome_trace(run_dir))
    (function,) = [e for e in events if e["cat"] == "function"]
    assert function["args"]["tier"] == "compiled"
    fusions = [e for e in events if e["cat"] == "fusion"]
    assert fusions, "a compiled segment must be one event"
    ops = [e for e in events if e["cat"] == "op"]
    for fusion in fusions:
        fused = fusion["args"]["fused_ops"].split(", ")
        assert "block/Tanh" in fused and fusion["args"]["num_fused_ops"] == len(fused)
        inside = [e for e in ops if e["args"].get("fusion") == fusion["args"]["segment"]]
        assert sorted(e["args"]["long_name"] for e in inside) == sorted(fused)
        assert all(e["args"]["estimated"] == 1 for e in inside)
        start, end = fusion["ts"], fusion["ts"] + fusion["dur"]
        assert all(start - 1e-3 <= e["ts"] and e["ts"] + e["dur"] <= end + 1e-3 for e in inside)
        assert abs(sum(e["dur"] for e in inside) - fusion["dur"]) < 1e-2  # µs: the split is exact to the ns
    # The graph view's step stats name the fused nodes: compute-time colouring still works.
    assert {"block/Tanh", "block/Tanh_3", "Sum"} <= {ns.node_name for ns in node_stats(meta)}


def test_exact_ops_times_every_op_on_the_interpreter(tmp_path):
    f = jf.function(_chain, jit_compile=True)
    x = jf.constant(X)
    f(x)
    run_dir, _ = _export(str(tmp_path), lambda: f(x), exact_ops=True)
    events = complete_events(chrome_trace(run_dir))
    assert not [e for e in events if e["cat"] == "fusion"]
    (function,) = [e for e in events if e["cat"] == "function"]
    assert function["args"]["tier"] == "interpreter"
    ops = [e for e in events if e["cat"] == "op"]
    assert ops and not any("estimated" in e["args"] for e in ops)
    assert f.get_concrete_function(x).tier == "compiled"  # only the traced call ran op by op


def test_compile_is_its_own_event_never_an_ops(tmp_path):
    f = jf.function(lambda x: _chain(x) * 3.0, jit_compile=True)
    x = jf.constant(X)
    run_dir, meta = _export(str(tmp_path), lambda: [f(x) for _ in range(3)])
    events = complete_events(chrome_trace(run_dir))
    runtime = [e for e in events if e["cat"] == "runtime"]
    kinds = {e["name"].split(" ")[0] for e in runtime}
    assert kinds & {"jitflow.compile", "jitflow.cache_load"} and "jitflow.tier_up" in kinds
    compile_event = next(e for e in runtime if e["name"].split(" ")[0] in ("jitflow.compile", "jitflow.cache_load"))
    assert compile_event["args"]["segments"] >= 1 and compile_event["args"]["fused_ops"] >= 8
    trace = chrome_trace(run_dir)
    threads = {e["tid"]: e["args"]["name"] for e in trace["traceEvents"] if e["name"] == "thread_name"}
    assert "jitflow runtime" in threads[compile_event["tid"]]
    for e in events:
        if e["cat"] in ("op", "fusion"):  # no op or segment overlaps the compile
            after = e["ts"] >= compile_event["ts"] + compile_event["dur"] - 1e-3
            assert after or e["ts"] + e["dur"] <= compile_event["ts"] + 1e-3


def test_first_use_compile_inside_an_op_is_moved_out_of_it(tmp_path):
    """A kernel numba compiles on its first call (here: inside a py_function) is a
    `numba.compile` event; the op's time starts when the compile has ended."""
    numba = pytest.importorskip("numba")

    def fresh(values):
        @numba.njit(cache=False)
        def twice(a):
            return a * np.float32(2.0)
        return twice(np.asarray(values, dtype=np.float32))

    @jf.function(jit_compile=False)
    def g(x):
        return jf.py_function(fresh, [x], jf.float32)

    x = jf.constant(X)
    run_dir, meta = _export(str(tmp_path), lambda: g(x))
    events = complete_events(chrome_trace(run_dir))
    compiles = [e for e in events if e["name"].startswith("numba.compile")]
    assert compiles and "twice" in compiles[0]["args"]["kernel"]
    (op,) = [e for e in events if e["cat"] == "op" and e["args"]["op_type"] in ("EagerPyFunc", "PyFunc")]
    assert op["args"]["first_use_ns_excluded"] > 0
    assert op["ts"] >= compiles[0]["ts"] + compiles[0]["dur"] - 1e-3
    # The compile took far longer than the kernel: the op is not charged with it.
    assert op["dur"] < compiles[0]["dur"]


def test_xprof_op_stats_list_fused_ops_and_runtime_rows(tmp_path):
    raw = pytest.importorskip("xprof.convert.raw_to_tool_data")
    f = jf.function(lambda x: _chain(x) + 1.0, jit_compile=True)
    x = jf.constant(X)

    def body():
        for step in range(3):
            with jf.profiler.experimental.Trace("train", step_num=step, _r=1):
                f(x)
    run_dir, _ = _export(str(tmp_path), body)
    (path,) = glob.glob(os.path.join(run_dir, "*.xplane.pb"))
    data, _ = raw.xspace_to_tool_data([path], "framework_op_stats", {})
    table = json.loads(data)[0]
    cols = [c["id"] for c in table["cols"]]
    rows = [dict(zip(cols, (c.get("v") for c in r["c"]))) for r in table["rows"]]
    types = {r["type"] for r in rows}
    assert {"Tanh", "Mul", "AddV2"} <= types
    assert types & {"JitflowCompile", "JitflowCacheLoad"}
    data, _ = raw.xspace_to_tool_data([path], "overview_page", {})
    steps = next(t for t in json.loads(data) if any(c["id"] == "stepTimeMs" for c in t["cols"]))
    assert len(steps["rows"]) == 3


def test_attribution_rule():
    f = jf.function(lambda a, b: jf.tanh(jf.matmul(a, b)) + 1.0)
    a = jf.constant(np.ones((4, 8), np.float32))
    b = jf.constant(np.ones((8, 2), np.float32))
    nodes = {n.op.tf_op: n for n in f.get_concrete_function(a, b).graph.nodes}
    assert attribution.cost(nodes["MatMul"]) == 2 * 4 * 2 * 8
    assert attribution.cost(nodes["Tanh"]) == 8 * 8
    assert attribution.cost(nodes["AddV2"]) == 8
    parts = attribution.split([nodes["MatMul"], nodes["Tanh"], nodes["AddV2"]], 1000, 1200)
    assert [p[1] for p in parts] == [1000, 1000 + round(200 * 128 / 200), 1000 + round(200 * 192 / 200)]
    assert parts[-1][2] == 1200 and all(p[1] <= p[2] for p in parts)


def test_host_tracer_level_zero_keeps_steps_only(tmp_path):
    f = jf.function(_chain, jit_compile=True)
    x = jf.constant(X)
    f(x)
    with jf.profiler.experimental.Profile(str(tmp_path), jf.profiler.experimental.ProfilerOptions(
            host_tracer_level=0)) as prof:
        with jf.profiler.experimental.Trace("train", step_num=0):
            f(x)
    cats = {e["cat"] for e in complete_events(chrome_trace(prof.run_dir))}
    assert "step" in cats and cats <= {"step", "runtime"}  # no function, op or fusion events
    with pytest.raises(ValueError, match="host_tracer_level: expected an int from 0 to 3"):
        jf.profiler.experimental.ProfilerOptions(host_tracer_level=7)
    assert capture.active() is None


def test_memory_per_step_and_peak(tmp_path):
    from tracer_testutil import xspace
    f = jf.function(_chain, jit_compile=True)
    x = jf.constant(X)
    f(x)
    with jf.profiler.experimental.Profile(str(tmp_path)) as prof:
        for step in range(2):
            with jf.profiler.experimental.Trace("train", step_num=step):
                f(x)
    trace = chrome_trace(prof.run_dir)
    counters = [e for e in trace["traceEvents"] if e.get("ph") == "C"]
    assert len(counters) == 2 and all(e["args"]["MiB"] > 1 for e in counters)
    assert trace["otherData"]["peak_memory_rss_bytes"] >= (max(e["args"]["MiB"] for e in counters) - 0.001) * 2**20
    (plane,) = xspace(prof.run_dir).planes
    names = {k: m.name for k, m in plane.stat_metadata.items()}
    (peak,) = [s for s in plane.stats if names[s.metadata_id] == "peak_memory_rss_bytes"]
    assert peak.int64_value == trace["otherData"]["peak_memory_rss_bytes"]


def test_runtime_library_regions_are_step_markers(tmp_path):
    """What a Keras-style `fit` or a `jf.data` iterator (below the tracer) uses to mark steps."""
    from jitflow.runtime.core import instrument
    from tracer_testutil import xspace
    f = jf.function(_chain, jit_compile=True)
    x = jf.constant(X)
    f(x)
    with jf.profiler.experimental.Profile(str(tmp_path)) as prof:
        with instrument.region("train", step_num=5, epoch=1):
            with instrument.region("next_batch", input_pipeline=True):
                pass
            f(x)
    events = complete_events(chrome_trace(prof.run_dir))
    (step,) = [e for e in events if e["cat"] == "step"]
    assert step["name"] == "train" and step["args"]["step_num"] == 5 and step["args"]["epoch"] == 1
    assert any(e["name"] == "IteratorGetNext (next_batch)" for e in events)
    (plane,) = xspace(prof.run_dir).planes
    stat_names = {k: m.name for k, m in plane.stat_metadata.items()}
    groups = {s.int64_value for line in plane.lines for e in line.events for s in e.stats
              if stat_names[s.metadata_id] == "group_id"}
    assert groups == {5}
