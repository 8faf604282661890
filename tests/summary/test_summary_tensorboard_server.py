"""A real `tensorboard --logdir` reads what both writers wrote, over HTTP."""

from __future__ import annotations

import json
import math
import os
import time

import numpy as np
import pytest
from tensorboard.compat.proto import graph_pb2

import jitflow.summary as s
import servers
from servers import fetch, tensorboard

pytestmark = pytest.mark.slow


def _write_logs(logdir: str) -> dict:
    w = s.create_file_writer(os.path.join(logdir, "tf"))
    with w.as_default():
        for step in range(5):
            s.scalar("loss", 1.0 / (step + 1), step=step)
        s.scalar("bad", math.nan, step=0)
        s.histogram("weights", np.arange(100.0), step=3, buckets=10)
        s.text("notes", "hello *world*", step=4)
        g = graph_pb2.GraphDef()
        g.node.add(name="dense/x", op="Placeholder")
        g.node.add(name="dense/tanh", op="Tanh", input=["dense/x"])
        s.graph(g)
    w.close()
    with s.SummaryWriter(os.path.join(logdir, "torch")) as tw:
        for step in range(4):
            tw.add_scalar("acc", 0.25 * step, step)
            tw.add_scalar("acc_new", 0.5 * step, step, new_style=True)
        tw.add_histogram("h", np.linspace(-1, 1, 50), 2)
        tw.add_text("t", "torch text", 1)
        tw.add_scalars("pair", {"a": 1.0, "b": 2.0}, 0)
    return {"graph": g}


def get(base: str, path: str, **params):
    body = servers.get(base, path, **params)
    return body if path.endswith("graph") else json.loads(body)


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    logdir = str(tmp_path_factory.mktemp("tb_logs"))
    written = _write_logs(logdir)

    def ready(base: str) -> bool:
        return {"tf", "torch", "torch/pair_a", "torch/pair_b"} <= set(json.loads(fetch(base + "/data/runs", 2)))
    with tensorboard(logdir, ready) as base:
        yield base, written



def test_runs(server):
    base, _ = server
    assert set(get(base, "/data/runs")) == {"tf", "torch", "torch/pair_a", "torch/pair_b"}


def test_scalars(server):
    base, _ = server
    pts = get(base, "/data/plugin/scalars/scalars", run="tf", tag="loss")
    assert [p[1] for p in pts] == [0, 1, 2, 3, 4]
    assert [p[2] for p in pts] == pytest.approx([1.0, 0.5, 1 / 3, 0.25, 0.2], rel=1e-6)
    assert all(abs(p[0] - time.time()) < 600 for p in pts)
    (nan_pt,) = get(base, "/data/plugin/scalars/scalars", run="tf", tag="bad")
    assert nan_pt[2] == "NaN" or (isinstance(nan_pt[2], float) and math.isnan(nan_pt[2]))
    # Old-style simple_value and new-style tensors both reach the scalars plugin.
    old = get(base, "/data/plugin/scalars/scalars", run="torch", tag="acc")
    new = get(base, "/data/plugin/scalars/scalars", run="torch", tag="acc_new")
    assert [(p[1], p[2]) for p in old] == [(i, 0.25 * i) for i in range(4)]
    assert [(p[1], p[2]) for p in new] == [(i, 0.5 * i) for i in range(4)]
    (pair_a,) = get(base, "/data/plugin/scalars/scalars", run="torch/pair_a", tag="pair")
    assert pair_a[1:] == [0, 1.0]


def test_histograms(server):
    base, _ = server
    ((wall, step, buckets),) = get(base, "/data/plugin/histograms/histograms", run="tf", tag="weights")
    assert step == 3 and len(buckets) == 10
    assert sum(b[2] for b in buckets) == 100
    assert buckets[0][0] == 0.0 and buckets[-1][1] == 99.0
    ((_, step, buckets),) = get(base, "/data/plugin/histograms/histograms", run="torch", tag="h")
    assert step == 2 and sum(b[2] for b in buckets) == 50


def test_text(server):
    base, _ = server
    (entry,) = get(base, "/data/plugin/text/text", run="tf", tag="notes")
    assert entry["step"] == 4 and "hello <em>world</em>" in entry["text"]
    (entry,) = get(base, "/data/plugin/text/text", run="torch", tag="t/text_summary")
    assert entry["step"] == 1 and "torch text" in entry["text"]


def test_graph(server):
    base, written = server
    text = get(base, "/data/plugin/graphs/graph", run="tf", conceptual="false").decode()
    from google.protobuf import text_format

    graph = text_format.Parse(text, graph_pb2.GraphDef())
    assert graph == written["graph"]
