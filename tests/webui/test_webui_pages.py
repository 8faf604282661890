"""Every page and its JSON twin, through Flask's test client."""
from __future__ import annotations

import re
from urllib.parse import quote

import pytest
from markupsafe import escape

from webui_testutil import XSS_FN

TRAIN_REASONS = ("arg 'x': Python int 1 → 2", "arg 'x': dtype int32 → float32",
                 "arg 'num_steps': Python int 10 → 20", "arg 'x': shape (1,) → (2,)")


# -- runs overview --------------------------------------------------------------------------
def test_runs_api_lists_every_run_inside_the_logdir(client):
    data = client.get("/api/runs").get_json()
    runs = {r["run"]: r for r in data["runs"]}
    assert set(runs) == {".", "train", "eval/xss", "broken", "garbage"}
    train = runs["train"]
    assert train["scalar_tags"] == ["loss"]
    assert (train["functions"], train["traces"], train["retraces"], train["warnings"]) == (4, 13, 9, 1)
    assert train["profiles"] == 3 and train["last_step"] == 6
    assert train["errors"] == []
    assert train["links"]["functions"] == "/runs/train/functions"
    assert train["links"]["tensorboard"] == "http://localhost:6006/?runFilter=%5Etrain%24#timeseries"
    assert runs["."]["scalar_tags"] == ["root_metric"] and runs["."]["last_step"] == 2
    assert data["totals"]["warnings"] == 1 + runs["broken"]["warnings"]


def test_runs_page_shows_counts_and_links(client):
    page = client.get("/").get_data(as_text=True)
    assert "<h1>Runs</h1>" in page
    assert 'href="/runs/train/functions"' in page
    assert 'href="/runs/eval/xss/functions"' in page
    assert 'href="/runs/~root~/functions"' in page          # the root run "." survives browsers
    assert "http://localhost:6006/?runFilter=%5Etrain%24#timeseries" in page
    assert "<code>loss</code>" in page


def test_tensorboard_links_follow_config(logdir):
    from jitflow.webui import create_app
    hidden = create_app(logdir, {"TENSORBOARD_PORT": None}).test_client()
    assert hidden.get("/api/runs").get_json()["runs"][0]["links"]["tensorboard"] is None
    assert "TensorBoard ↗" not in hidden.get("/").get_data(as_text=True)
    custom = create_app(logdir, {"TENSORBOARD_URL": "http://tb.example:9000"}).test_client()
    assert custom.get("/api/runs/train").get_json()["links"]["tensorboard"].startswith("http://tb.example:9000/?")
    other_port = create_app(logdir, {"TENSORBOARD_PORT": 7777}).test_client()
    assert "http://localhost:7777/" in other_port.get("/").get_data(as_text=True)


def test_run_api_and_run_page_redirect(client):
    data = client.get("/api/runs/train").get_json()
    assert data["run"] == "train"
    assert data["tags_by_plugin"]["jitflow_trace"] == ["jitflow/trace/f", "jitflow/trace/train",
                                                       "jitflow/trace/noisy", "jitflow/trace/model"]
    assert data["tags_by_plugin"]["scalars"] == ["loss"]
    resp = client.get("/runs/train/")
    assert resp.status_code == 302 and resp.headers["Location"].endswith("/runs/train/functions")
    assert client.get("/runs/~root~/").status_code == 302
    assert client.get("/api/runs/~root~").get_json()["run"] == "."


# -- functions ------------------------------------------------------------------------------
def test_functions_api_sorted_by_cost_with_reasons_and_advice(client):
    data = client.get("/api/runs/train/functions").get_json()
    fns = data["functions"]
    costs = [fn["cost_seconds"] for fn in fns]
    assert costs == sorted(costs, reverse=True)
    by_name = {fn["function"]: fn for fn in fns}
    assert set(by_name) == {"f", "train", "noisy", "model"}
    f = by_name["f"]
    # every call, the two cache hits after the last trace included (the writer's jitflow/stats)
    assert (f["calls"], f["traces"], f["retraces"], f["warning"]) == (6, 4, 3, False)
    assert by_name["noisy"]["traces"] == 6 and by_name["noisy"]["warning"] is True
    texts = {c["text"] for fn in fns for t in fn["retrace_list"] for c in t["changes"]}
    for reason in TRAIN_REASONS:
        assert reason in texts
    advice = {t["reason"]: t["advice"] for t in by_name["train"]["retrace_list"]}
    assert "Pass it as a tensor" in advice["arg 'num_steps': Python int 10 → 20"]
    assert "input_signature" in {t["reason"]: t["advice"] for t in f["retrace_list"]}["arg 'x': dtype int32 → float32"]
    assert by_name["model"]["retrace_list"] == []
    assert f["trace_seconds"] > 0 and re.fullmatch(r".*webui_testutil\.py:\d+", f["sources"][0])


def test_functions_page_lists_each_retrace(client):
    resp = client.get("/runs/train/functions")
    assert resp.status_code == 200
    page = resp.get_data(as_text=True)
    for reason in TRAIN_REASONS:
        assert escape(reason) in page
    assert "≥5 traces" in page                                      # noisy is flagged
    assert '<svg class="timeline"' in page
    assert "Pass it as a tensor (jf.constant(...))" in page
    order = [fn["function"] for fn in client.get("/api/runs/train/functions").get_json()["functions"]]
    positions = [page.index(f'<a href="#fn-{i}">{name}</a>') for i, name in enumerate(order, 1)]
    assert positions == sorted(positions)                           # costliest first, as the API


def test_function_detail_page_and_traces_api(client):
    page = client.get("/runs/train/functions/train").get_data(as_text=True)
    assert "<h1>train</h1>" in page
    assert '<svg class="timeline"' in page and '<svg class="bars"' in page
    assert escape("arg 'num_steps': Python int 10 → 20") in page
    data = client.get("/api/runs/train/functions/train/traces").get_json()
    assert [t["trace_number"] for t in data["traces"]] == [1, 2]
    assert [t["reason_kind"] for t in data["traces"]] == ["first_call", "retrace"]
    assert data["function"]["calls"] == 2
    assert data["traces"][1]["changes"][0] == {
        "path": "arg 'num_steps'", "kind": "value", "old": "10", "new": "20", "detail": "Python int",
        "text": "arg 'num_steps': Python int 10 → 20"}
    assert data["traces"][0]["call_site"].endswith("in write_logdir")


def test_functions_of_a_run_without_traces(client):
    page = client.get("/runs/~root~/functions").get_data(as_text=True)
    assert "No trace records in this run" in page
    assert client.get("/api/runs/~root~/functions").get_json()["functions"] == []


@pytest.mark.parametrize("url", ["/runs/train/functions/nope", "/api/runs/train/functions/nope/traces"])
def test_unknown_function_is_404(client, url):
    resp = client.get(url)
    assert resp.status_code == 404
    if url.startswith("/api/"):
        assert "nope" in resp.get_json()["error"]


def test_function_names_with_slashes_route(client):
    url = "/api/runs/eval/xss/functions/" + quote(XSS_FN, safe="/") + "/traces"
    data = client.get(url).get_json()
    assert data["function"]["function"] == XSS_FN
    assert client.get("/runs/eval/xss/functions/" + quote(XSS_FN, safe="/")).status_code == 200


# -- op profiles ----------------------------------------------------------------------------
def test_profiles_api_lists_exported_traces(client):
    data = client.get("/api/runs/train/profiles").get_json()
    got = [(p["tag"], p["step"], p["has_step_stats"]) for p in data["profiles"]]
    assert got == [("graph_only", 6, False), ("step_trace", 3, True), ("step_trace", 5, True)]
    assert data["profiles"][1]["links"]["html"] == "/runs/train/profiles/step_trace?step=3"


def test_profiles_page(client):
    page = client.get("/runs/train/profiles").get_data(as_text=True)
    assert 'href="/runs/train/profiles/step_trace?step=5"' in page
    assert "graphs only (no step stats)" in page
    assert "No exported traces" in client.get("/runs/eval/xss/profiles").get_data(as_text=True)


def test_profile_api_by_op_and_by_scope(client):
    data = client.get("/api/runs/train/profiles/step_trace").get_json()
    assert data["profile"]["step"] == 5 and data["steps"] == [3, 5]          # latest step by default
    ops = {r["name"]: r for r in data["by_op"]}
    assert {"MatMul", "AddV2", "Tanh", "Mul", "Sum"} <= set(ops)
    assert ops["MatMul"]["count"] == 2 and ops["Tanh"]["count"] == 2
    scopes = {r["name"]: r for r in data["by_scope"]}
    dense1 = next(name for name in scopes if name.endswith("dense1"))
    assert scopes[dense1]["count"] == 6                                      # MatMul, add, Tanh × 2 calls
    assert sum(r["share"] for r in data["by_op"]) == pytest.approx(1.0)
    assert sum(r["total_us"] for r in data["by_scope"]) == pytest.approx(data["total_us"])
    for r in data["by_op"]:
        assert r["mean_us"] == pytest.approx(r["total_us"] / r["count"])
    totals = [r["total_us"] for r in data["by_op"]]
    assert totals == sorted(totals, reverse=True)
    assert client.get("/api/runs/train/profiles/step_trace?step=3").get_json()["profile"]["step"] == 3


@pytest.mark.parametrize("key,field", [("name", "name"), ("count", "count"), ("total", "total_us"),
                                       ("mean", "mean_us"), ("share", "share")])
@pytest.mark.parametrize("order", ["asc", "desc"])
def test_profile_sorting_is_server_side(client, key, field, order):
    data = client.get(f"/api/runs/train/profiles/step_trace?sort={key}&order={order}").get_json()
    for table in ("by_op", "by_scope"):
        values = [r[field] for r in data[table]]
        assert values == sorted(values, reverse=(order == "desc")), (table, key, order)
    page = client.get(f"/runs/train/profiles/step_trace?sort={key}&order={order}").get_data(as_text=True)
    expected = f"sorted {order}" if key == "name" else f"num sorted {order}"
    assert page.count(f'<th class="{expected}" data-sort="{key}">') == 2            # both tables


def test_profile_page_tables_and_chart(client):
    page = client.get("/runs/train/profiles/step_trace?sort=count&order=asc").get_data(as_text=True)
    assert "By op type" in page and "By name scope" in page and "Slowest nodes" in page
    assert '<svg class="bars"' in page
    assert "<code>MatMul</code>" in page
    # The header links toggle the order of the current sort key and keep the other parameters.
    assert 'href="/runs/train/profiles/step_trace?order=desc&amp;sort=count"' in page
    page = client.get("/runs/train/profiles/step_trace?step=3").get_data(as_text=True)
    assert 'href="/runs/train/profiles/step_trace?step=5"' in page             # step switcher


@pytest.mark.parametrize("url,status", [
    ("/runs/train/profiles/nope", 404), ("/api/runs/train/profiles/nope", 404),
    ("/api/runs/train/profiles/step_trace?step=4", 404), ("/api/runs/train/profiles/step_trace?step=x", 400),
    ("/runs/train/profiles/graph_only", 200),
])
def test_profile_errors(client, url, status):
    resp = client.get(url)
    assert resp.status_code == status
    if url.startswith("/api/"):
        assert resp.get_json()["status"] == status


def test_graph_only_profile_has_no_step_stats(client):
    data = client.get("/api/runs/train/profiles/graph_only").get_json()
    assert data["node_executions"] == 0 and data["by_op"] == []
    assert "has no step stats" in client.get("/runs/train/profiles/graph_only").get_data(as_text=True)


# -- static, errors, live reload ------------------------------------------------------------
def test_static_assets_served(client):
    css = client.get("/static/style.css")
    assert css.status_code == 200 and "text/css" in css.content_type and ".topbar" in css.get_data(as_text=True)
    js = client.get("/static/panel.js")
    assert js.status_code == 200 and "sortTable" in js.get_data(as_text=True)
    for page in ("/", "/runs/train/functions", "/runs/train/profiles/step_trace"):
        body = client.get(page).get_data(as_text=True)
        assert "/static/style.css" in body and "/static/panel.js" in body
        assert "http://" not in body.split("<body>")[0].replace("http://localhost:6006", "")  # no CDN


def test_unknown_pages_are_404_html_and_json(client):
    resp = client.get("/nope")
    assert resp.status_code == 404 and "text/html" in resp.content_type
    resp = client.get("/api/nope")
    assert resp.status_code == 404 and resp.get_json()["status"] == 404


def test_new_events_appear_without_restart(tmp_path):
    import jitflow as jf
    from jitflow.webui import create_app

    @jf.function
    def live(x):
        return x + 1

    client = create_app(tmp_path).test_client()
    assert client.get("/api/runs").get_json()["runs"] == []
    w = jf.summary.create_file_writer(str(tmp_path / "live"))
    with w.as_default(step=0):
        live(1)
    w.flush()
    fns = client.get("/api/runs/live/functions").get_json()["functions"]
    assert [(fn["function"], fn["traces"])
            for fn in fns] == [("test_new_events_appear_without_restart.<locals>.live", 1)]
    with w.as_default(step=1):
        live(2)
        jf.summary.scalar("loss", 0.5, step=1)
    w.flush()
    data = client.get("/api/runs/live/functions").get_json()
    assert data["functions"][0]["traces"] == 2
    assert data["summary"]["scalar_tags"] == ["loss"]
    assert "Python int 1 → 2" in client.get("/runs/live/functions").get_data(as_text=True)
    w.close()
