"""The panel says whether training was input-bound: real `jf.data` pipelines iterated under
summary writers (one whose map sleeps, one whose training step does), read back through
the panel's pages and JSON."""
from __future__ import annotations

import time
from pathlib import Path

import pytest

import jitflow as jf
from jitflow.summary import context as summary_context
from jitflow.webui import create_app

STEPS = 10
SLEEP = 0.03


def _slow(x):
    time.sleep(SLEEP)
    return x


def _train(logdir: Path, run: str, dataset, step_seconds: float) -> None:
    writer = jf.summary.create_file_writer(str(logdir / run))
    with writer.as_default():
        # Warm the step's ops up first (their first call compiles kernels), so the loop
        # below measures steady-state steps, as a real training run of many steps would.
        jf.summary.scalar("loss", jf.reduce_sum(jf.cast(jf.constant([1], jf.int64), jf.float32)), step=-1)
        for step, batch in enumerate(dataset):
            loss = jf.reduce_sum(jf.cast(batch, jf.float32))
            if step_seconds:
                time.sleep(step_seconds)   # the model's own work
            jf.summary.scalar("loss", loss, step=step)
    writer.close()


@pytest.fixture(scope="module")
def input_logdir(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("input_logdir")
    saved = (summary_context.tls.writer, summary_context.tls.step)
    try:
        # Input-bound: every element sleeps in a sequential map, the step itself is quick.
        slow = jf.data.Dataset.range(STEPS + 1).map(lambda x: jf.py_function(_slow, [x], jf.int64))
        _train(root, "input_bound", slow, 0.0)
        # Compute-bound: the pipeline is instant, the step sleeps.
        fast = jf.data.Dataset.range(STEPS + 1).batch(1).prefetch(jf.data.AUTOTUNE)
        _train(root, "compute_bound", fast, SLEEP)
        # A run with no pipeline at all.
        writer = jf.summary.create_file_writer(str(root / "no_data"))
        with writer.as_default():
            jf.summary.scalar("x", 1.0, step=0)
        writer.close()
    finally:
        summary_context.tls.writer, summary_context.tls.step = saved
    return root


@pytest.fixture
def client(input_logdir):
    return create_app(input_logdir, {"TESTING": True, "TENSORBOARD_PORT": None}).test_client()


def test_runs_overview_flags_the_input_bound_run(client):
    payload = client.get("/api/runs").get_json()
    by_run = {r["run"]: r for r in payload["runs"]}
    assert by_run["input_bound"]["input"]["verdict"] == "highly"
    assert by_run["input_bound"]["input"]["input_percent"] > 80
    assert "prefetch" in by_run["input_bound"]["input"]["advice"]
    assert by_run["compute_bound"]["input"]["verdict"] == "not"
    assert by_run["compute_bound"]["input"]["input_percent"] < 5
    assert by_run["no_data"]["input"]["iterators"] == 0 and by_run["no_data"]["input"]["verdict"] == "unknown"
    assert payload["totals"]["input_bound"] == 1
    html = client.get("/").get_data(as_text=True)
    assert "HIGHLY input-bound" in html and "/runs/input_bound/input" in html


def test_input_page_json_names_the_fixes(client):
    data = client.get("/api/runs/input_bound/input").get_json()
    assert data["verdict"] == "highly" and data["verdict_text"] == "HIGHLY input-bound"
    (it,) = data["iterators"]
    assert it["pipeline"] == "Iterator::Root::Map::Range" and it["finished"] is True
    assert it["elements"] == STEPS + 1
    # Each next() waited for one sleeping map call; the step between them took almost nothing.
    assert it["wait_seconds"] >= (STEPS - 1) * SLEEP * 0.9
    assert it["busy_seconds"] < it["wait_seconds"] / 4
    fixes = [a["fix"] for a in data["advice"]]
    assert fixes[:2] == ["prefetch", "num_parallel_calls"] and "cache" in fixes
    assert data["thresholds"] == {"highly_percent": 20.0, "moderately_percent": 5.0}

    calm = client.get("/api/runs/compute_bound/input").get_json()
    assert calm["verdict"] == "not" and calm["advice"] == []
    (it,) = calm["iterators"]
    assert it["pipeline"] == "Iterator::Root::Prefetch::BatchV2::Range"
    assert it["busy_seconds"] >= (STEPS - 1) * SLEEP * 0.9


def test_input_page_html(client):
    page = client.get("/runs/input_bound/input")
    assert page.status_code == 200
    html = page.get_data(as_text=True)
    assert 'data-verdict="highly"' in html and "What to try" in html
    assert 'data-fix="prefetch"' in html and "num_parallel_calls=jf.data.AUTOTUNE" in html
    assert "Iterator::Root::Map::Range" in html
    calm = client.get("/runs/compute_bound/input").get_data(as_text=True)
    assert 'data-verdict="not"' in calm and "What to try" not in calm
    empty = client.get("/runs/no_data/input").get_data(as_text=True)
    assert "No dataset iterators were recorded" in empty
    assert client.get("/api/runs/nope/input").status_code == 404


def test_bad_payloads_are_reported_not_fatal(tmp_path):
    from jitflow.summary import input_pipeline, protos
    writer = jf.summary.create_file_writer(str(tmp_path / "run"))
    good = {"id": 1, "pipeline": "Iterator::Root::Range", "stages": ["Range"], "created": 1.0, "elements": 3,
            "wait_seconds": 0.3, "busy_seconds": 0.1, "first_wait_seconds": 0.1, "finished": True}
    for payload in (b"{not json", b'{"version": 1, "iterators": [{"id": "x"}]}',
                    ('{"version": 1, "iterators": [%s]}' % __import__("json").dumps(good)).encode()):
        writer._write_event(protos.summary_event(input_pipeline.TAG, protos.string_tensor([payload], ()),
                                                 input_pipeline._metadata(), 0, 1.0))
    writer.close()
    client = create_app(tmp_path, {"TESTING": True, "TENSORBOARD_PORT": None}).test_client()
    data = client.get("/api/runs/run/input").get_json()
    assert len(data["errors"]) == 2 and "dropped" in data["errors"][0]
    assert data["iterators"][0]["input_percent"] == pytest.approx(200 / 3)


@pytest.mark.slow
def test_input_page_in_chromium(input_logdir, tmp_path_factory):
    import shutil
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        pytest.skip("chromium is not installed (Debian: apt-get install chromium chromium-driver)")
    sync_api = pytest.importorskip("playwright.sync_api")
    from jitflow.webui import serve_in_background
    with serve_in_background(input_logdir, TENSORBOARD_PORT=None) as panel, sync_api.sync_playwright() as p:
        context = p.chromium.launch_persistent_context(
            str(tmp_path_factory.mktemp("chromium_profile")), executable_path=chromium, headless=True,
            args=["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync"])
        try:
            page = context.new_page()
            problems = []
            page.on("console", lambda msg: msg.type == "error" and problems.append(msg.text))
            page.on("pageerror", lambda exc: problems.append(str(exc)))
            page.goto(panel.url)
            row = page.locator("#runs tbody tr", has_text="input_bound")
            assert row.locator(".input-verdict").inner_text() == "HIGHLY input-bound"
            row.locator("td.input-cell a").click()
            page.wait_for_url("**/runs/input_bound/input")
            assert page.locator("#input-verdict").get_attribute("data-verdict") == "highly"
            tips = page.locator("#input-advice li")
            assert tips.first.get_attribute("data-fix") == "prefetch" and tips.first.is_visible()
            assert "prefetch(jf.data.AUTOTUNE)" in tips.first.inner_text()
            page.goto(panel.url + "runs/compute_bound/input")
            assert page.locator("#input-verdict").get_attribute("data-verdict") == "not"
            assert page.locator("#input-advice").count() == 0
            assert not problems, problems
        finally:
            context.close()


def test_iterators_go_to_the_writer_of_their_time(tmp_path):
    ds = jf.data.Dataset.range(4)
    list(ds)                                   # before any writer: belongs to no run
    early = jf.summary.create_file_writer(str(tmp_path / "early"))
    list(ds.batch(2))                          # no default writer, after `early` opened: early's
    early.close()
    other = jf.summary.create_file_writer(str(tmp_path / "other"))
    with other.as_default():
        list(ds.map(lambda x: x + 1))          # made while `other` is the default
    other.close()
    client = create_app(tmp_path, {"TESTING": True, "TENSORBOARD_PORT": None}).test_client()
    pipelines = {run: [it["pipeline"] for it in client.get(f"/api/runs/{run}/input").get_json()["iterators"]]
                 for run in ("early", "other")}
    assert pipelines == {"early": ["Iterator::Root::BatchV2::Range"], "other": ["Iterator::Root::Map::Range"]}
