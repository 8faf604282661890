"""trace_on / trace_export: the RunMetadata summary read back with TensorBoard's loaders.

Covers issue 4's acceptance: the seed 001 DemoModule example in both argument
placements, scoped graph node names, step stats that name graph nodes (also merged
`graph_<i>/` graphs and nested calls), timings consistent with the call's wall time,
output bytes, the reset after export, bad input, and tracing off costing nothing.
"""
from __future__ import annotations

import os
import socket
import time

import numpy as np
import pytest
from tensorboard.compat.proto import types_pb2
from tensorboard.plugins.graph import graph_util

import jitflow as jf
from jitflow.runtime.execution import executor
from jitflow.runtime.core import instrument
from jitflow.tracer import capture
from tracer_testutil import (RUN_DIR_RE, make_demo_module, node_stats, profile_runs, read_tag,
                             tensor_tags)

ITEMSIZE = {types_pb2.DT_FLOAT: 4, types_pb2.DT_DOUBLE: 8, types_pb2.DT_INT32: 4,
            types_pb2.DT_INT64: 8, types_pb2.DT_BOOL: 1}


def merged_node_names(meta) -> set:
    """The node names TensorBoard's graph view shows (its own merge of function graphs)."""
    merged = graph_util.merge_graph_defs([fg.pre_optimization_graph for fg in meta.function_graphs])
    return {n.name for n in merged.node}


def nodes_by_name(meta) -> dict:
    merged = graph_util.merge_graph_defs([fg.pre_optimization_graph for fg in meta.function_graphs])
    return {n.name: n for n in merged.node}


# -- the seed ------------------------------------------------------------------------------
@pytest.mark.parametrize("placement", ["trace_export", "trace_on"])
def test_seed_001_demo_module(tmp_path, capsys, placement):
    """Seed 001 as written (`profiler_outdir` in trace_export) and TF 2.21's placement."""
    DemoModule = make_demo_module()
    logdir = str(tmp_path / "demomodule" / "20260101-000000")
    writer = jf.summary.create_file_writer(logdir)
    if placement == "trace_on":
        jf.summary.trace_on(graph=True, profiler=True, profiler_outdir=logdir)
    else:
        jf.summary.trace_on(graph=True, profiler=True)
    demo = DemoModule(init_value=jf.constant(0.0))
    result = demo.addprint(jf.constant(5.0))
    with writer.as_default():
        if placement == "trace_on":
            written = jf.summary.trace_export(name="demomodule", step=0)
        else:
            written = jf.summary.trace_export(name="demomodule", step=0, profiler_outdir=logdir)
    writer.close()

    assert capsys.readouterr().out == "5\n"
    assert float(result.numpy()) == 5.0
    assert written is True
    assert not instrument.enabled and capture.active() is None

    meta, plugin, events = read_tag(logdir, "demomodule")
    assert plugin.plugin_name == "graph_run_metadata" and plugin.content == b"1"
    assert [e.step for e in events] == [0]
    assert len(meta.function_graphs) == 1
    graph = meta.function_graphs[0].pre_optimization_graph
    ops = {n.name: n.op for n in graph.node}
    assert ops["demo_module/AssignAddVariableOp"] == "AssignAddVariableOp"
    assert ops["demo_module/PrintV2"] == "PrintV2"
    assert all("_output_shapes" in n.attr for n in graph.node if n.op not in ("AssignAddVariableOp", "PrintV2"))
    stats = node_stats(meta)
    ran = {ns.node_name for ns in stats}
    assert {"demo_module/AssignAddVariableOp", "demo_module/PrintV2"} <= ran <= set(ops)
    assert [d.device for d in meta.step_stats.dev_stats] == ["/job:localhost/replica:0/task:0/device:CPU:0"]

    (run_dir,) = profile_runs(logdir)
    assert RUN_DIR_RE.match(os.path.basename(run_dir))
    assert sorted(os.listdir(run_dir)) == sorted(f"{h}.{ext}" for h in [socket.gethostname()]
                                                 for ext in ("trace.json.gz", "xplane.pb"))


# -- step stats against the graph and the clock --------------------------------------------
@jf.function
def scoped(x, y):
    with jf.name_scope("block"):
        h = jf.tanh(x) * 2.0                 # float32 (3, 4)
        with jf.name_scope("head"):
            idx = jf.argmax(h, axis=1)       # int64 (3,)
            total = jf.reduce_sum(h)         # float32 ()
    w = y * y                                # float64 (2, 5)
    return total, idx, w


def _run_scoped():
    x = jf.constant(np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4))
    y = jf.constant(np.ones((2, 5)))
    return x, y


def test_step_stats_name_graph_nodes_and_fit_in_the_call(tmp_path):
    x, y = _run_scoped()
    scoped(x, y)  # trace and warm up outside the trace
    writer = jf.summary.create_file_writer(str(tmp_path))
    jf.summary.trace_on(graph=True)
    wall0, perf0 = time.time_ns(), time.perf_counter_ns()
    scoped(x, y)
    perf1, wall1 = time.perf_counter_ns(), time.time_ns()
    with writer.as_default():
        assert jf.summary.trace_export("scoped", step=3)
    writer.close()

    meta, plugin, events = read_tag(str(tmp_path), "scoped")
    assert events[0].step == 3
    names = merged_node_names(meta)
    stats = node_stats(meta)
    ran = {ns.node_name for ns in stats}
    assert ran <= names
    assert {"block/Tanh", "block/mul", "block/head/ArgMax", "block/head/Sum", "mul"} <= ran
    assert len(stats) == len(ran)  # one NodeExecStats per node run

    call_ns = perf1 - perf0
    assert 0 < sum(ns.all_end_rel_nanos for ns in stats) <= call_ns
    slack_us = 50  # the two clocks are read at slightly different instants
    for ns in stats:
        assert 0 <= ns.op_start_rel_micros <= ns.op_end_rel_micros <= ns.all_end_rel_micros
        assert ns.all_end_rel_micros == ns.all_end_rel_nanos // 1000
        assert ns.all_start_micros == ns.all_start_nanos // 1000
        assert wall0 // 1000 - slack_us <= ns.all_start_micros
        assert ns.all_start_micros + ns.all_end_rel_micros <= wall1 // 1000 + slack_us
        assert ns.timeline_label.startswith(ns.node_name)


def test_outputs_carry_dtype_shape_and_allocated_bytes(tmp_path):
    x, y = _run_scoped()
    writer = jf.summary.create_file_writer(str(tmp_path))
    jf.summary.trace_on(graph=True)
    scoped(x, y)
    with writer.as_default():
        jf.summary.trace_export("bytes", step=0)
    meta, _, _ = read_tag(str(tmp_path), "bytes")
    nodes = nodes_by_name(meta)
    by_name = {ns.node_name: ns for ns in node_stats(meta)}
    expected = {"block/Tanh": (types_pb2.DT_FLOAT, [3, 4]), "block/head/ArgMax": (types_pb2.DT_INT64, [3]),
                "block/head/Sum": (types_pb2.DT_FLOAT, []), "mul": (types_pb2.DT_DOUBLE, [2, 5])}
    for name, (dtype, shape) in expected.items():
        (out,) = by_name[name].output
        desc = out.tensor_description
        assert (out.slot, desc.dtype, [d.size for d in desc.shape.dim]) == (0, dtype, shape), name
        nbytes = ITEMSIZE[dtype] * int(np.prod(shape))
        assert desc.allocation_description.allocated_bytes == nbytes, name
        assert desc.allocation_description.requested_bytes == nbytes, name
        assert sum(m.total_bytes for m in by_name[name].memory) == nbytes, name
        # The shape agrees with the graph's own `_output_shapes` for that node.
        (graph_shape,) = nodes[name].attr["_output_shapes"].list.shape
        assert [d.size for d in graph_shape.dim] == shape, name


@jf.function
def first_fn(x):
    with jf.name_scope("first"):
        return jf.exp(x) + 1.0


@jf.function
def second_fn(x):
    with jf.name_scope("second"):
        return jf.sin(x) - 1.0


def test_two_functions_get_tensorboards_graph_prefixes(tmp_path):
    x = jf.constant([0.5, 1.5])
    writer = jf.summary.create_file_writer(str(tmp_path))
    jf.summary.trace_on(graph=True)
    first_fn(x)
    second_fn(x)
    first_fn(x)  # a second run of a graph already seen adds stats, not a graph
    with writer.as_default():
        jf.summary.trace_export("two", step=0)
    meta, _, _ = read_tag(str(tmp_path), "two")
    assert len(meta.function_graphs) == 2
    names = merged_node_names(meta)
    assert {"graph_1/first/Exp", "graph_2/second/Sin"} <= names
    ran = [ns.node_name for ns in node_stats(meta)]
    assert set(ran) <= names
    assert ran.count("graph_1/first/Exp") == 2 and ran.count("graph_2/second/Sin") == 1
    assert all(n.startswith(("graph_1/", "graph_2/")) for n in ran)


@jf.function
def callee(x):
    with jf.name_scope("callee"):
        return jf.tanh(x) * 3.0


@jf.function
def caller(x):
    with jf.name_scope("caller"):
        return callee(x) + 1.0


def test_function_calling_a_function(tmp_path):
    x = jf.constant([0.1, 0.2, 0.3])
    writer = jf.summary.create_file_writer(str(tmp_path))
    jf.summary.trace_on(graph=True)
    caller(x)
    with writer.as_default():
        jf.summary.trace_export("nested", step=0)
    meta, _, _ = read_tag(str(tmp_path), "nested")
    assert len(meta.function_graphs) == 2  # the caller's graph and the callee's
    graphs = [fg.pre_optimization_graph for fg in meta.function_graphs]
    outer = next(g for g in graphs if any(n.op == "StatefulPartitionedCall" for n in g.node))
    call = next(n for n in outer.node if n.op == "StatefulPartitionedCall")
    assert call.name == "caller/StatefulPartitionedCall"
    assert call.attr["f"].func.name in {f.signature.name for f in outer.library.function}

    names = merged_node_names(meta)
    stats = {ns.node_name: ns for ns in node_stats(meta)}
    assert set(stats) <= names
    call_stats = next(ns for name, ns in stats.items() if name.endswith("/caller/StatefulPartitionedCall"))
    inner = [ns for name, ns in stats.items() if "/callee/" in name]
    assert {n.rsplit("/", 1)[1] for n in stats if "/callee/" in n} == {"Tanh", "mul"}
    call_end = call_stats.all_start_nanos + call_stats.all_end_rel_nanos
    for ns in inner:  # the callee's ops ran inside the call node
        assert call_stats.all_start_nanos <= ns.all_start_nanos
        assert ns.all_start_nanos + ns.all_end_rel_nanos <= call_end


# -- export resets; tracing off ---------------------------------------------------------------
def test_export_resets_and_a_second_export_warns(tmp_path):
    x = jf.constant([1.0, 2.0])
    writer = jf.summary.create_file_writer(str(tmp_path))
    jf.summary.trace_on(graph=True)
    first_fn(x)
    with writer.as_default():
        assert jf.summary.trace_export("one", step=0)
        assert not instrument.enabled and capture.active() is None
        with pytest.warns(UserWarning, match="trace_on"):
            assert jf.summary.trace_export("again", step=1) is False
        jf.summary.trace_on(graph=True)
        second_fn(x)
        assert jf.summary.trace_export("fresh", step=2)
    writer.close()
    assert sorted(_exported(str(tmp_path))) == ["fresh", "one"]
    meta, _, _ = read_tag(str(tmp_path), "fresh")
    (graph,) = [fg.pre_optimization_graph for fg in meta.function_graphs]
    assert any(n.name == "second/Sin" for n in graph.node)
    assert not any(n.name.startswith("first/") for n in graph.node)  # the first export took those


def test_tracing_off_records_nothing_and_takes_no_timed_path(tmp_path, monkeypatch):
    assert instrument.enabled is False and instrument.sink() is None and capture.active() is None
    calls = {"run_timed": 0, "run_eager_op": 0}

    def counting(name, original):
        def wrapper(*args, **kwargs):
            calls[name] += 1
            return original(*args, **kwargs)
        return wrapper
    monkeypatch.setattr(executor.Plan, "run_timed", counting("run_timed", executor.Plan.run_timed))
    monkeypatch.setattr(instrument, "run_eager_op", counting("run_eager_op", instrument.run_eager_op))

    @jf.function
    def quiet(x):
        return jf.tanh(x) * 2.0
    x = jf.constant([1.0, 2.0])
    for _ in range(3):
        quiet(x)
        second_fn(x)
    jf.tanh(x)  # an eager op
    assert calls == {"run_timed": 0, "run_eager_op": 0}  # only the flag was checked
    assert capture.active() is None

    writer = jf.summary.create_file_writer(str(tmp_path))
    jf.summary.trace_on(graph=True, profiler=True)
    assert instrument.enabled is True and capture.active() is not None
    second_fn(x)
    jf.tanh(x)
    assert calls == {"run_timed": 1, "run_eager_op": 1}
    cap = capture.active()
    assert [r.concrete.function._qualname for r in cap.runs] == ["second_fn"]  # nothing from before
    assert [e.name for e in cap.eager] == ["tanh"]
    jf.summary.trace_off()
    assert instrument.enabled is False and instrument.sink() is None
    quiet(x)
    jf.tanh(x)
    assert calls == {"run_timed": 1, "run_eager_op": 1}
    with writer.as_default(), pytest.warns(UserWarning, match="trace_on"):
        assert jf.summary.trace_export("off", step=0) is False
    # (trace records of functions traced before the writer was the default do arrive: issue 14)
    assert _exported(str(tmp_path)) == [] and profile_runs(str(tmp_path)) == []


def _exported(logdir: str) -> list:
    """Tensor tags other than the trace records every jf.function trace writes (jitflow/...)."""
    return [t for t in tensor_tags(logdir) if not t.startswith("jitflow/")]


# -- bad input ------------------------------------------------------------------------------------
def test_export_without_trace_on_warns_and_writes_nothing(tmp_path):
    writer = jf.summary.create_file_writer(str(tmp_path))
    with writer.as_default(), pytest.warns(UserWarning, match=r"trace_on\(\) first"):
        assert jf.summary.trace_export("nothing", step=0, profiler_outdir=str(tmp_path)) is False
    writer.close()
    assert tensor_tags(str(tmp_path)) == []
    assert profile_runs(str(tmp_path)) == []


@pytest.mark.parametrize("placement", ["trace_export", "trace_on"])
def test_unwritable_profiler_outdir_is_a_clear_error(tmp_path, placement):
    blocker = tmp_path / "a_file"
    blocker.write_text("not a directory")
    bad = str(blocker / "logs")  # its parent is a regular file: unwritable even for root
    logdir = str(tmp_path / "run")
    writer = jf.summary.create_file_writer(logdir)
    jf.summary.trace_on(graph=True, profiler=True, profiler_outdir=bad if placement == "trace_on" else None)
    first_fn(jf.constant([1.0]))
    with writer.as_default(), pytest.raises(OSError) as info:
        jf.summary.trace_export("t", step=0, profiler_outdir=bad if placement == "trace_export" else None)
    message = str(info.value)
    assert "profiler_outdir" in message and bad in message
    writer.close()
    assert _exported(logdir) == []  # the error came before anything was exported
    assert not blocker.is_dir() and blocker.read_text() == "not a directory"


@pytest.mark.parametrize("call", ["trace_on", "trace_export"])
def test_profiler_outdir_of_the_wrong_type_names_the_argument(tmp_path, call):
    writer = jf.summary.create_file_writer(str(tmp_path))
    with pytest.raises(TypeError, match=r"profiler_outdir: expected a directory path .* got 42"):
        if call == "trace_on":
            jf.summary.trace_on(profiler=True, profiler_outdir=42)
        else:
            jf.summary.trace_on(profiler=True)
            with writer.as_default():
                jf.summary.trace_export("t", step=0, profiler_outdir=42)
    if call == "trace_on":
        assert capture.active() is None  # refused before it started recording


def test_trace_on_twice_warns_and_keeps_recording(tmp_path):
    x = jf.constant([1.0, 2.0])
    writer = jf.summary.create_file_writer(str(tmp_path))
    jf.summary.trace_on(graph=True)
    first_fn(x)
    with pytest.warns(UserWarning, match="already being recorded"):
        jf.summary.trace_on(graph=True)
    second_fn(x)
    with writer.as_default():
        assert jf.summary.trace_export("twice", step=0)
    meta, _, _ = read_tag(str(tmp_path), "twice")
    ran = {ns.node_name for ns in node_stats(meta)}
    assert {"graph_1/first/Exp", "graph_2/second/Sin"} <= ran  # both runs kept


def test_export_without_default_writer_warns_and_writes_nothing(tmp_path):
    jf.summary.trace_on(graph=True, profiler=True)
    first_fn(jf.constant([1.0]))
    with pytest.warns(UserWarning, match="no default summary writer"):
        assert jf.summary.trace_export("t", step=0, profiler_outdir=str(tmp_path)) is False
    assert capture.active() is None and not instrument.enabled
    assert os.listdir(tmp_path) == []


def test_export_without_a_step_is_a_value_error_and_keeps_the_trace(tmp_path):
    writer = jf.summary.create_file_writer(str(tmp_path))
    jf.summary.trace_on(graph=True)
    first_fn(jf.constant([1.0]))
    with writer.as_default():
        with pytest.raises(ValueError, match="step"):
            jf.summary.trace_export("t")
        assert capture.active() is not None  # nothing lost: retry with a step
        jf.summary.experimental.set_step(7)
        assert jf.summary.trace_export("t")
    meta, _, events = read_tag(str(tmp_path), "t")
    assert events[0].step == 7
    assert "first/Exp" in {ns.node_name for ns in node_stats(meta)}
