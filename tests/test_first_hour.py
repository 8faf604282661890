"""Issue 14 (the first hour): what a new user meets in the panel's numbers, the examples'
traces, warnings and tracebacks. Each test failed before its fix."""
from __future__ import annotations

import os
import time
import traceback
import warnings

import pytest

import jitflow as jf
from jitflow.summary import trace_records as summary_records
from jitflow.webui import create_app

RUNTIME_DIR = os.path.dirname(os.path.abspath(jf.runtime.__file__)) + os.sep


def _functions(logdir, run="."):
    token = "~root~" if run == "." else run
    data = create_app(logdir).test_client().get(f"/api/runs/{token}/functions").get_json()
    assert data["errors"] == [], data["errors"]
    return {f["function"]: f for f in data["functions"]}


def test_requires_the_profile_plugin_without_extras():
    from importlib.metadata import requires
    plain = [r for r in requires("jitflow") if "extra ==" not in r]
    assert any(r.startswith("tensorboard-plugin-profile") for r in plain), plain


def test_traces_before_any_default_writer_reach_the_first_default_writer(tmp_path, monkeypatch):
    from jitflow.summary import context
    monkeypatch.setattr(context, "global_writer", None)       # whatever earlier tests left behind
    monkeypatch.setattr(context.tls, "writer", None)

    @jf.function
    def early(x):
        return x * 3.0

    early(jf.constant(1.0))                     # no writer exists yet
    early(jf.constant([1.0, 2.0]))              # a retrace, still no writer
    assert summary_records.pending() >= 2
    writer = jf.summary.create_file_writer(str(tmp_path))
    with writer.as_default():
        early(jf.constant(2.0))
    writer.close()
    fn = _functions(tmp_path)["test_traces_before_any_default_writer_reach_the_first_default_writer.<locals>.early"]
    assert (fn["traces"], fn["retraces"], fn["calls"]) == (2, 1, 3)
    assert summary_records.pending() == 0


def test_call_counts_are_real_and_kept_up_to_date(tmp_path):
    @jf.function
    def step(x):
        return x + 1.0

    writer = jf.summary.create_file_writer(str(tmp_path))
    x = jf.constant([1.0, 2.0])
    with writer.as_default():
        for _ in range(200):
            step(x)
    fn = _functions(tmp_path)["test_call_counts_are_real_and_kept_up_to_date.<locals>.step"]
    assert fn["calls"] == 200                   # written when the as_default block flushed
    for _ in range(50):
        step(x)
    writer.flush()
    fn = _functions(tmp_path)["test_call_counts_are_real_and_kept_up_to_date.<locals>.step"]
    assert (fn["calls"], fn["traces"]) == (250, 1)
    writer.close()


def test_compile_time_is_recorded(tmp_path):
    @jf.function(jit_compile=True)
    def compiled(x):
        return x * 2.0 + 1.0

    writer = jf.summary.create_file_writer(str(tmp_path))
    with writer.as_default():
        compiled(jf.constant([1.0, 2.0]))
    writer.close()
    fn = _functions(tmp_path)["test_compile_time_is_recorded.<locals>.compiled"]
    assert fn["compile_seconds"] is not None and fn["compile_seconds"] > 0
    assert fn["cost_seconds"] == pytest.approx(fn["trace_seconds"] + fn["compile_seconds"])
    data = create_app(tmp_path).test_client().get(
        "/api/runs/~root~/functions/test_compile_time_is_recorded.<locals>.compiled/traces").get_json()
    assert data["traces"][0]["compile_seconds"] == fn["compile_seconds"]


def test_variable_creation_trace_is_not_a_retrace_and_not_a_second_concrete_function(tmp_path):
    state = {}

    @jf.function
    def make(x):
        if "v" not in state:
            state["v"] = jf.Variable(1.0)
        return x * state["v"]

    writer = jf.summary.create_file_writer(str(tmp_path))
    with writer.as_default():
        make(jf.constant(1.0))
        make(jf.constant(2.0))
    writer.close()
    (fn,) = _functions(tmp_path).values()
    assert (fn["traces"], fn["retraces"]) == (2, 0)
    assert len(make.list_concrete_functions()) == 1


def test_reduce_retracing_functions_are_not_advised_to_use_it():
    @jf.function(reduce_retracing=True)
    def relaxed(x):
        return jf.reduce_sum(x)

    @jf.function
    def plain(x):
        return jf.reduce_sum(x)

    for fn in (relaxed, plain):
        fn(jf.ones([2]))
        fn(jf.ones([3]))
    advice = {r.function.rsplit(".", 1)[1]: r.advice for r in jf.trace_records.records()
              if r.reason_kind == "retrace" and "reduce_retracing_functions" in r.function}
    assert "Use jf.function(reduce_retracing=True)" in advice["plain"]
    assert "Use jf.function(reduce_retracing=True)" not in advice["relaxed"]
    assert "already" in advice["relaxed"]


def test_functions_table_says_how_it_is_sorted_and_sorts_by_request(tmp_path):
    @jf.function
    def often(x):
        return x + 1.0

    @jf.function
    def shapes(x):
        return x + 1.0

    writer = jf.summary.create_file_writer(str(tmp_path))
    with writer.as_default():
        for _ in range(5):
            often(jf.constant(1.0))
        for n in range(1, 4):
            shapes(jf.ones([n]))
    writer.close()
    client = create_app(tmp_path).test_client()
    page = client.get("/runs/~root~/functions").get_data(as_text=True)
    assert "Sorted by cost (tracing + compiling), highest first" in page
    by_calls = client.get("/api/runs/~root~/functions?sort=calls").get_json()
    assert [f["calls"] for f in by_calls["functions"]] == [5, 3] and by_calls["sort"] == "calls"
    by_traces = client.get("/api/runs/~root~/functions?sort=traces").get_json()
    assert [f["traces"] for f in by_traces["functions"]] == [3, 1]


def test_retrace_warning_names_the_users_line():
    @jf.function
    def noisy(x):
        return x + 1.0

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for n in range(1, 8):
            noisy(jf.ones([n]))
    retrace = [w for w in caught if issubclass(w.category, jf.runtime.RetraceWarning)]
    assert retrace and all(w.filename == __file__ for w in retrace), [(w.filename, w.lineno) for w in retrace]


def test_errors_inside_traced_functions_end_at_the_users_line():
    @jf.function
    def bad(x):
        return jf.matmul(x, x)          # (2, 3) @ (2, 3): inner dimensions differ

    with pytest.raises(jf.errors.InvalidArgumentError) as info:
        bad(jf.ones([2, 3]))
    message = str(info.value)
    assert message.startswith("jf.matmul: ") and "matmul: matmul" not in message and "jf.matmul: matmul:" not in message
    frames = traceback.extract_tb(info.value.__traceback__)
    internal = [f for f in frames if f.filename.startswith(RUNTIME_DIR)]
    assert len(internal) <= 1, [(f.filename, f.name) for f in frames]   # the filter's own frame, as in TF
    assert frames[-1].filename == __file__ and frames[-1].name == "bad"
    with pytest.raises(jf.errors.InvalidArgumentError) as info:
        bad.get_concrete_function(jf.TensorSpec([2, 3], jf.float32))
    frames = traceback.extract_tb(info.value.__traceback__)
    assert len([f for f in frames if f.filename.startswith(RUNTIME_DIR)]) <= 1
    assert frames[-1].filename == __file__ and frames[-1].name == "bad"
    jf.debugging.disable_traceback_filtering()
    try:
        with pytest.raises(jf.errors.InvalidArgumentError) as full:
            bad(jf.ones([2, 3]))
        assert len([f for f in traceback.extract_tb(full.value.__traceback__)
                    if f.filename.startswith(RUNTIME_DIR)]) > 3
    finally:
        jf.debugging.enable_traceback_filtering()


def test_report_speaks_plain_english(tmp_path):
    import io

    from jitflow.report import report

    @jf.function
    def once(x):
        return x + 1.0

    writer = jf.summary.create_file_writer(str(tmp_path / "r"))
    with writer.as_default():
        once(jf.constant(1.0))
    writer.close()
    out = io.StringIO()
    report(str(tmp_path), out)
    text = out.getvalue()
    assert "1 trace," in text and "1 traces" not in text and "1 call," in text
    assert "last step None" not in text


def test_call_counts_reach_the_logdir_during_a_long_as_default_block(tmp_path, monkeypatch):
    monkeypatch.setattr(summary_records, "STATS_INTERVAL", 0.2)

    @jf.function
    def live(x):
        return x - 1.0

    writer = jf.summary.create_file_writer(str(tmp_path), flush_millis=100)
    name = "test_call_counts_reach_the_logdir_during_a_long_as_default_block.<locals>.live"
    with writer.as_default():
        for _ in range(30):
            live(jf.constant(1.0))
        # no flush, no close, no new trace: the refresher thread writes the counts
        deadline = time.time() + 20
        while time.time() < deadline and (_functions(tmp_path).get(name) or {}).get("calls") != 30:
            time.sleep(0.2)                # the event file's own periodic flush brings it to disk
        assert _functions(tmp_path)[name]["calls"] == 30
    writer.close()


def test_the_pre_writer_buffer_is_bounded_and_says_what_it_dropped(tmp_path, monkeypatch):
    from collections import deque

    from jitflow.summary import context
    monkeypatch.setattr(context, "global_writer", None)
    monkeypatch.setattr(context.tls, "writer", None)
    monkeypatch.setattr(summary_records, "_pending", deque(maxlen=3))

    @jf.function
    def shapes(x):
        return x * 2.0

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", jf.runtime.RetraceWarning)
        for n in range(1, 6):                           # 5 traces, room for 3
            shapes(jf.ones([n]))
    writer = jf.summary.create_file_writer(str(tmp_path))
    with pytest.warns(RuntimeWarning, match="2 trace records .* dropped"):
        with writer.as_default():
            pass
    writer.close()
    fn = _functions(tmp_path)["test_the_pre_writer_buffer_is_bounded_and_says_what_it_dropped.<locals>.shapes"]
    assert fn["traces"] == 3                            # the newest three
