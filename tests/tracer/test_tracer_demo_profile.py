"""The demo's exported profile shows the steady-state distribution: several steps after
the tier-up, no op charged with a compile, no single op above half of a step."""
from __future__ import annotations

import glob
import json
import os

import pytest

from jitflow import demo
from tracer_testutil import chrome_trace, complete_events, profile_runs


@pytest.fixture(scope="module")
def demo_profile(tmp_path_factory):
    logdir = str(tmp_path_factory.mktemp("demo"))
    demo.train(logdir, steps=16)
    (run_dir,) = profile_runs(logdir)
    return run_dir


def test_demo_profiles_steady_steps_with_no_dominant_op(demo_profile):
    events = complete_events(chrome_trace(demo_profile))
    steps = [e for e in events if e["cat"] == "step"]
    assert [e["args"]["step_num"] for e in steps] == [10, 11, 12]
    for step in steps:
        end = step["ts"] + step["dur"]
        ops = [e for e in events if e["cat"] == "op" and step["ts"] <= e["ts"] and e["ts"] + e["dur"] <= end]
        assert ops, "the step's ops are in the profile"
        worst = max(ops, key=lambda e: e["dur"])
        assert worst["dur"] < 0.5 * step["dur"], (worst["name"], worst["dur"], step["dur"])
    functions = [e for e in events if e["cat"] == "function"]
    assert functions and all(e["args"]["tier"] == "compiled" for e in functions)
    # Nothing in these steps was compiled on first use; if anything was, it is its own event.
    assert all(e["args"].get("first_use_ns_excluded", 0) == 0 or e["cat"] == "op" for e in events)


def test_xprof_overview_of_the_demo_profile(demo_profile):
    raw = pytest.importorskip("xprof.convert.raw_to_tool_data")
    (path,) = glob.glob(os.path.join(demo_profile, "*.xplane.pb"))
    data, _ = raw.xspace_to_tool_data([path], "overview_page", {})
    table = next(t for t in json.loads(data) if any(c["id"] == "stepTimeMs" for c in t["cols"]))
    cols = [c["id"] for c in table["cols"]]
    rows = [dict(zip(cols, (c.get("v") for c in r["c"]))) for r in table["rows"]]
    assert [r["stepnum"] for r in rows] == ["10", "11", "12"] and all(r["stepTimeMs"] > 0 for r in rows)
    data, _ = raw.xspace_to_tool_data([path], "framework_op_stats", {})
    stats = json.loads(data)[0]
    cols = [c["id"] for c in stats["cols"]]
    ops = [dict(zip(cols, (c.get("v") for c in r["c"]))) for r in stats["rows"]]
    total = sum(r["stepTimeMs"] for r in rows) * 1000.0  # µs
    for op in ops:
        if op["type"] != "IDLE" and not op["type"].startswith(("Jitflow", "Numba")):  # runtime rows
            assert op["total_self_time"] < 0.5 * total, op
