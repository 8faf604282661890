"""A real `tensorboard --logdir` serves what trace_export wrote: Graphs and Profile plugins.

One server for the module, on 127.0.0.1 and a free port, killed in the fixture's
finalizer. The logs are seed 001's DemoModule trace plus an eager op and a
`jf.profiler.Trace` step, exported with `profiler=True`.
"""
from __future__ import annotations

import json
import os
import socket

import pytest
from google.protobuf import text_format
from tensorboard.compat.proto import config_pb2, graph_pb2

import jitflow as jf
from servers import fetch, get, tensorboard
from tracer_testutil import make_demo_module, profile_runs

pytestmark = pytest.mark.slow

RUN = "demo"
TAG = "demomodule"


def _write_logs(logdir: str) -> str:
    """Seed 001's trace (profiler_outdir in trace_export); returns the profile run dir."""
    jf.summary.trace_off()
    DemoModule = make_demo_module()
    run_logdir = os.path.join(logdir, RUN)
    writer = jf.summary.create_file_writer(run_logdir)
    jf.summary.trace_on(graph=True, profiler=True)
    demo = DemoModule(init_value=jf.constant(0.0))
    with jf.profiler.Trace("train", step_num=0):
        demo.addprint(jf.constant(5.0))
        jf.tanh(jf.constant([0.5, 1.0]))
    with writer.as_default():
        assert jf.summary.trace_export(name=TAG, step=0, profiler_outdir=run_logdir)
    writer.close()
    (run_dir,) = profile_runs(run_logdir)
    return run_dir


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    logdir = str(tmp_path_factory.mktemp("tb_trace_logs"))
    run_dir = _write_logs(logdir)
    profile_run = f"{RUN}/{os.path.basename(run_dir)}"

    def ready(base: str) -> bool:
        return TAG in json.loads(fetch(base + "/data/plugin/graphs/info")).get(RUN, {}).get("tags", {})
    with tensorboard(logdir, ready) as base:
        yield base, profile_run



def test_graphs_info_lists_the_tag_with_op_graph_and_profile(server):
    base, _ = server
    info = json.loads(get(base, "/data/plugin/graphs/info"))
    tag = info[RUN]["tags"][TAG]
    assert tag["op_graph"] is True and tag["profile"] is True


def test_graph_endpoint_returns_the_scoped_graph(server):
    base, _ = server
    graph = text_format.Parse(get(base, "/data/plugin/graphs/graph", run=RUN, tag=TAG).decode(),
                              graph_pb2.GraphDef())
    ops = {n.name: n.op for n in graph.node}
    assert ops["demo_module/AssignAddVariableOp"] == "AssignAddVariableOp"
    assert ops["demo_module/PrintV2"] == "PrintV2"


def test_run_metadata_endpoint_returns_step_stats_for_graph_nodes(server):
    base, _ = server
    body = get(base, "/data/plugin/graphs/run_metadata", run=RUN, tag=TAG).decode()
    meta = text_format.Parse(body, config_pb2.RunMetadata())
    ran = {ns.node_name for dev in meta.step_stats.dev_stats for ns in dev.node_stats}
    assert {"demo_module/AssignAddVariableOp", "demo_module/PrintV2"} <= ran
    graph = text_format.Parse(get(base, "/data/plugin/graphs/graph", run=RUN, tag=TAG).decode(),
                              graph_pb2.GraphDef())
    assert ran <= {n.name for n in graph.node}


def test_profile_plugin_lists_the_run_tools_and_host(server):
    base, profile_run = server
    runs = json.loads(get(base, "/data/plugin/profile/runs"))
    assert profile_run in runs
    tools = json.loads(get(base, "/data/plugin/profile/run_tools", run=profile_run))
    assert {"trace_viewer", "trace_viewer@"} & set(tools)
    assert "framework_op_stats" in tools
    hosts = json.loads(get(base, "/data/plugin/profile/hosts", run=profile_run, tag="trace_viewer"))
    assert hosts == [{"hostname": socket.gethostname()}]


def test_profile_trace_viewer_data_contains_the_ops(server):
    base, profile_run = server
    data = json.loads(get(base, "/data/plugin/profile/data", run=profile_run, tag="trace_viewer",
                          host=socket.gethostname()))
    xs = [e for e in data["traceEvents"] if e.get("ph") == "X"]
    names = {e["name"] for e in xs}
    assert {"demo_module/AssignAddVariableOp:AssignAddVariableOp", "demo_module/PrintV2:PrintV2",
            "tanh:Tanh", "demo_module", "train"} <= names
    assert all(e["dur"] >= 0 for e in xs)
    (step,) = [e for e in xs if e["name"] == "train"]
    assert step["args"]["step_num"] == "0"
    ops = [e for e in xs if e["name"].endswith((":AssignAddVariableOp", ":PrintV2", ":Tanh"))]
    assert all(step["ts"] <= e["ts"] and e["ts"] + e["dur"] <= step["ts"] + step["dur"] + 1e-3 for e in ops)
