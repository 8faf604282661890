"""The pure parts: the logdir reader, the page models and the chart geometry."""
from __future__ import annotations

import shutil

import pytest
from tensorboard.compat.proto import config_pb2

import jitflow as jf
from jitflow.webui import charts, model
from jitflow.webui.logdir import ROOT_RUN, Logdir, _grew


def _record(fn="f", n=1, kind="first_call", cost=0.01, end=100.0, calls=None, fid=1, changes=()):
    return {"function": fn, "function_id": fid, "trace_number": n, "reason_kind": kind,
            "reason": "; ".join(c["text"] for c in changes) or kind, "changes": list(changes),
            "trace_seconds": cost, "compile_seconds": None, "timestamp": end, "wall_time": end,
            "calls_so_far": n if calls is None else calls, "step": 0}


# -- logdir ---------------------------------------------------------------------------------
def test_discovery_names_runs_like_tensorboard(logdir):
    names = Logdir(logdir).run_names()
    assert names == sorted([ROOT_RUN, "broken", "eval/xss", "garbage", "train"])


def test_missing_logdir_has_no_runs(tmp_path):
    assert Logdir(tmp_path / "not-yet").runs() == []


def test_reload_is_cached_until_files_change(tmp_path, logdir):
    shutil.copytree(logdir / "train", tmp_path / "train")
    lg = Logdir(tmp_path)
    first = lg.run("train")
    assert lg.run("train") is first                                  # unchanged files: same snapshot
    event_file = next(p for p in (tmp_path / "train").iterdir() if "tfevents" in p.name)
    event_file.touch()
    event_file.write_bytes(event_file.read_bytes())
    second = lg.run("train")
    assert second is not first and len(second.records) == len(first.records)


def test_runs_that_disappear_are_forgotten(tmp_path, logdir):
    shutil.copytree(logdir / "train", tmp_path / "a")
    lg = Logdir(tmp_path)
    assert [r.name for r in lg.runs()] == ["a"]
    shutil.rmtree(tmp_path / "a")
    assert lg.runs() == [] and lg.run("a") is None


def test_incremental_reload_follows_a_growing_file(tmp_path):
    @jf.function
    def grow(x):
        return x

    lg = Logdir(tmp_path)
    w = jf.summary.create_file_writer(str(tmp_path))
    with w.as_default(step=0):
        grow(1)
    w.flush()
    assert [r["trace_number"] for r in lg.run(ROOT_RUN).records] == [1]
    with w.as_default(step=1):
        grow(2)
        grow(3)
    w.flush()
    assert [r["trace_number"] for r in lg.run(ROOT_RUN).records] == [1, 2, 3]
    w.close()


def test_grew_accepts_only_appends_to_the_newest_file():
    old = (("a", 10, 1), ("b", 10, 1))
    assert _grew(old, (("a", 10, 1), ("b", 20, 2)))
    assert _grew(old, (("a", 10, 1), ("b", 10, 1), ("c", 5, 3)))
    assert not _grew(old, (("a", 11, 2), ("b", 10, 1)))             # an older file changed
    assert not _grew(old, (("a", 10, 1), ("b", 5, 2)))              # shrank: rewritten
    assert not _grew(old, (("b", 10, 1),))                          # a file went away
    assert not _grew((), (("a", 1, 1),))


def test_step_restarts_do_not_purge_records(tmp_path):
    # A second function object of the same name restarts trace numbers (the default step) at 1;
    # TensorBoard's orphan purging would drop the earlier records.
    def make():
        @jf.function
        def same_name(x):
            return x
        return same_name

    w = jf.summary.create_file_writer(str(tmp_path))
    with w.as_default():
        first = make()
        first(1)
        first(2)
        make()(3)
    w.close()
    records = Logdir(tmp_path).run(ROOT_RUN).records
    assert [r["step"] for r in records] == [1, 2, 1]
    summary = model.functions(records)[0]
    assert summary["traces"] == 3 and summary["objects"] == 2
    assert summary["calls"] == 3                                    # 2 calls of the first object + 1


# -- functions model ------------------------------------------------------------------------
def test_functions_group_count_and_sort_by_cost():
    change = {"path": "arg 'x'", "kind": "dtype", "old": "int32", "new": "float32", "detail": "",
              "text": "arg 'x': dtype int32 → float32"}
    records = [_record("cheap", 1, cost=0.001), _record("dear", 1, cost=0.5, fid=2),
               _record("dear", 2, "retrace", cost=0.25, fid=2, changes=[change]),
               _record("dear", 3, "get_concrete_function", cost=0.1, fid=2)]
    fns = model.functions(records)
    assert [f["function"] for f in fns] == ["dear", "cheap"]
    dear = fns[0]
    assert (dear["traces"], dear["retraces"], dear["calls"]) == (3, 1, 3)
    assert dear["cost_seconds"] == pytest.approx(0.85) and dear["retrace_seconds"] == pytest.approx(0.25)
    assert dear["top_reason"] == "dtype changed (1×)"
    assert dear["retrace_list"][0]["changes"][0]["text"] == "arg 'x': dtype int32 → float32"
    assert dear["warning"] is False
    assert model.functions([_record("w", n) for n in range(1, 6)])[0]["warning"] is True


def test_calls_unknown_without_counts():
    assert model.functions([_record(calls=0)])[0]["calls"] is None


def test_wall_seconds_counts_nested_traces_once():
    outer = _record("outer", cost=1.0, end=10.0)          # [9, 10]
    inner = _record("inner", cost=0.5, end=9.8)           # nested inside outer
    later = _record("later", cost=0.25, end=20.0)         # [19.75, 20]
    assert model.wall_seconds([outer, inner, later]) == pytest.approx(1.25)
    assert model.wall_seconds([]) == 0.0


# -- op profile -----------------------------------------------------------------------------
def _meta() -> config_pb2.RunMetadata:
    meta = config_pb2.RunMetadata()
    for names in (["a/MatMul", "a/Add"], ["Relu"]):
        g = meta.function_graphs.add().pre_optimization_graph
        for name in names:
            g.node.add(name=name, op=name.rsplit("/", 1)[-1])
    dev = meta.step_stats.dev_stats.add(device="/cpu:0")
    for name, us in (("graph_1/a/MatMul", 30), ("graph_1/a/MatMul", 15), ("graph_1/a/Add", 15),
                     ("graph_2/Relu", 40), ("graph_2/x", 0)):
        ns = dev.node_stats.add(node_name=name, all_end_rel_micros=us, all_end_rel_nanos=us * 1000)
        ns.timeline_label = f"{name} = Identity(y:0)"
    return meta


def test_op_profile_tables():
    p = model.op_profile(_meta())
    assert p["total_us"] == 100 and p["node_executions"] == 5 and p["graphs"] == 2
    ops = {r["name"]: r for r in p["by_op"]}
    assert ops["MatMul"] == {"name": "MatMul", "count": 2, "total_us": 45.0, "mean_us": 22.5, "share": 0.45}
    assert ops["Identity"]["count"] == 1                      # not in a graph: op from the timeline label
    scopes = {r["name"]: r["total_us"] for r in p["by_scope"]}
    assert scopes == {"graph_1/a": 60.0, "graph_2": 40.0}
    assert [r["name"] for r in p["top_nodes"]][:2] == ["graph_1/a/MatMul", "graph_2/Relu"]
    assert p["top_nodes"][0]["op"] == "MatMul"


def test_op_profile_sorting():
    p = model.op_profile(_meta(), sort="name", order="asc")
    assert [r["name"] for r in p["by_op"]] == ["Add", "Identity", "MatMul", "Relu"]
    p = model.op_profile(_meta(), sort="count", order="desc")
    assert p["by_op"][0]["name"] == "MatMul"
    p = model.op_profile(_meta(), sort="bogus", order="bogus")
    assert (p["sort"], p["order"]) == ("total", "desc")
    assert [r["total_us"] for r in p["by_op"]] == sorted((r["total_us"] for r in p["by_op"]), reverse=True)


def test_empty_run_metadata():
    p = model.op_profile(config_pb2.RunMetadata())
    assert p["total_us"] == 0 and p["by_op"] == [] and p["top_nodes"] == []


# -- charts ---------------------------------------------------------------------------------
@pytest.mark.parametrize("seconds,text", [(None, "—"), (0, "0 s"), (0.000123, "123 µs"), (0.00456, "4.56 ms"),
                                          (0.0421, "42.1 ms"), (3.2, "3.20 s")])
def test_format_seconds(seconds, text):
    assert charts.format_seconds(seconds) == text


def test_nice_ticks():
    assert charts.nice_ticks(1.0) == pytest.approx([0, 0.2, 0.4, 0.6, 0.8, 1.0])
    assert charts.nice_ticks(7.0) == pytest.approx([0, 2, 4, 6])
    assert charts.nice_ticks(0) == [0.0]


def test_timeline_geometry():
    views = [model.trace_view(r)
             for r in (_record(end=10.0, cost=1.0), _record(n=2, kind="retrace", end=12.0, cost=0.5))]
    chart = charts.timeline([{"label": "f", "href": "/x", "traces": views}], width=700, label_width=100)
    marks = chart["rows"][0]["marks"]
    plot = 700 - 100 - 16                                       # 3 s span from t=9 to t=12
    assert marks[0]["x"] == 100 and marks[0]["w"] == pytest.approx(plot / 3, abs=0.01)
    assert marks[1]["x"] == pytest.approx(100 + plot * 2.5 / 3, abs=0.01)
    assert [m["cls"] for m in marks] == ["k-first", "k-retrace"]
    assert marks[1]["title"].startswith("#2 retrace")
    assert chart["ticks"][0]["label"] == "0"


def test_bars_geometry():
    chart = charts.bars([{"label": "a", "value": 2.0, "text": "2"}, {"label": "b", "value": 1.0, "text": "1"}],
                        width=500, label_width=100)
    assert chart["bars"][0]["w"] == pytest.approx(2 * chart["bars"][1]["w"])
    assert charts.bars([])["bars"] == []
