"""Readers and helpers for the tracer tests.

Everything written is read back without jitflow's own code where a reference exists:
event files through TensorBoard's `EventAccumulator`, the Chrome trace with `json`,
the XSpace with the message classes (its bytes must parse) and, when installed, xprof.
"""
from __future__ import annotations

import glob
import gzip
import json
import os
import re
from typing import Any, Dict, List

from tensorboard.backend.event_processing.plugin_event_accumulator import EventAccumulator
from tensorboard.compat.proto import config_pb2

from jitflow.tracer import xplane
from seed_modules import make_demo_module  # noqa: F401 - re-exported for the tracer tests

RUN_DIR_RE = re.compile(r"^\d{4}_\d{2}_\d{2}_\d{2}_\d{2}_\d{2}(_\d+)?$")


def read_tag(logdir: str, tag: str, index: int = 0):
    """(RunMetadata of the `index`-th event, plugin name, events) of `tag`, via TensorBoard's accumulator."""
    acc = EventAccumulator(str(logdir), size_guidance={"tensors": 0})
    acc.Reload()
    assert tag in acc.Tags()["tensors"], f"tag {tag!r} not in {acc.Tags()}"
    events = acc.Tensors(tag)
    meta = config_pb2.RunMetadata.FromString(events[index].tensor_proto.string_val[0])
    return meta, acc.SummaryMetadata(tag).plugin_data, events


def tensor_tags(logdir: str) -> List[str]:
    acc = EventAccumulator(str(logdir), size_guidance={"tensors": 0})
    acc.Reload()
    return acc.Tags()["tensors"]


def graph_node_names(meta) -> set:
    """Node names as TensorBoard's graph view sees them (`graph_<i>/` when merged)."""
    graphs = [fg.pre_optimization_graph for fg in meta.function_graphs]
    if len(graphs) == 1:
        return {n.name for n in graphs[0].node}
    return {f"graph_{i + 1}/{n.name}" for i, g in enumerate(graphs) for n in g.node}


def node_stats(meta) -> list:
    return [ns for dev in meta.step_stats.dev_stats for ns in dev.node_stats]


def profile_runs(logdir: str) -> List[str]:
    root = os.path.join(str(logdir), "plugins", "profile")
    return sorted(os.path.join(root, d) for d in os.listdir(root)) if os.path.isdir(root) else []


def chrome_trace(run_dir: str) -> Dict[str, Any]:
    (path,) = glob.glob(os.path.join(run_dir, "*.trace.json.gz"))
    with gzip.open(path, "rt", encoding="utf-8") as f:
        return json.load(f)


def xspace(run_dir: str):
    (path,) = glob.glob(os.path.join(run_dir, "*.xplane.pb"))
    with open(path, "rb") as f:
        return xplane.XSpace.FromString(f.read())


def complete_events(trace: Dict[str, Any]) -> List[Dict[str, Any]]:
    return [e for e in trace["traceEvents"] if e["ph"] == "X"]


def encloses(outer: Dict[str, Any], inner: Dict[str, Any]) -> bool:
    """Same track and [ts, ts+dur] of `inner` inside `outer`'s (1 ns slack for float sums)."""
    eps = 1e-3
    return (outer["tid"] == inner["tid"] and outer["ts"] <= inner["ts"] + eps
            and inner["ts"] + inner["dur"] <= outer["ts"] + outer["dur"] + eps)
