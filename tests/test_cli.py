"""The `jitflow` command line: demo, inspect, --version, and the demo's served panel end to end."""
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from servers import free_port
from tensorboard.backend.event_processing import plugin_event_accumulator as pea

ROOT = Path(__file__).resolve().parents[1]
JITFLOW = [sys.executable, "-m", "jitflow.cli"]
ARTIFACTS = ROOT / "artifacts" / "cli"
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def _jitflow(*args, timeout=300, cwd=None):
    return subprocess.run(JITFLOW + list(args), capture_output=True, text=True, timeout=timeout, cwd=cwd)


def test_version_and_help():
    from jitflow import __version__
    out = _jitflow("--version")
    assert out.returncode == 0 and out.stdout.strip() == f"jitflow {__version__}"
    bare = _jitflow()
    assert bare.returncode == 2 and "demo" in bare.stderr and "inspect" in bare.stderr
    bad = _jitflow("demo", "--steps", "0")
    assert bad.returncode == 2 and "--steps" in bad.stderr and "at least 1" in bad.stderr
    missing = _jitflow("inspect", "/nonexistent/logdir")
    assert missing.returncode == 2 and "not a directory" in missing.stderr


@pytest.fixture(scope="module")
def demo_runs(tmp_path_factory):
    """Two `jitflow demo` runs into the same --logdir."""
    parent = tmp_path_factory.mktemp("demo") / "runs" / "demo"
    steps = 24
    runs = []
    for _ in range(2):
        out = _jitflow("demo", "--logdir", str(parent), "--steps", str(steps), "--no-serve")
        assert out.returncode == 0, out.stderr
        assert f"trained {steps} steps" in out.stdout
        runs.append(Path(out.stdout.split("run:", 1)[1].split()[0]))
    return parent, runs, steps


@pytest.fixture(scope="module")
def demo_logdir(demo_runs):
    parent, runs, steps = demo_runs
    return runs[0], steps


def test_each_demo_run_gets_its_own_timestamped_run_directory(demo_runs):
    import re

    from jitflow.webui import create_app
    parent, runs, steps = demo_runs
    assert runs[0] != runs[1] and {r.parent for r in runs} == {parent}
    assert all(re.fullmatch(r"\d{8}-\d{6}(-\d+)?", r.name) for r in runs), runs
    data = create_app(parent).test_client().get("/api/runs").get_json()
    assert sorted(r["run"] for r in data["runs"]) == sorted(r.name for r in runs)   # never "."
    for run in data["runs"]:
        assert (run["traces"], run["retraces"]) == (3, 1), run
        fns = create_app(parent).test_client().get(run["links"]["functions"].replace("/runs/", "/api/runs/", 1))
        (fn,) = fns.get_json()["functions"]
        assert fn["calls"] == steps                                # real calls, not calls at the last trace
    for run in runs:                                               # one graph per run
        acc = pea.EventAccumulator(str(run))
        acc.Reload()
        assert acc.Graph() is not None and not list(run.glob("*/*tfevents*"))


def test_python_dash_m_jitflow_runs_the_command():
    from jitflow import __version__
    out = subprocess.run([sys.executable, "-m", "jitflow", "--version"], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and out.stdout.strip() == f"jitflow {__version__}"


def test_demo_writes_everything_the_main_job_promises(demo_logdir):
    logdir, steps = demo_logdir
    acc = pea.EventAccumulator(str(logdir), size_guidance={"tensors": 0})
    acc.Reload()
    tags = set(acc.Tags()["tensors"])
    assert [e.step for e in acc.Tensors("loss")] == list(range(steps))
    assert [e.step for e in acc.Tensors("accuracy")] == list(range(steps))
    assert any(acc.SummaryMetadata(t).plugin_data.plugin_name == "histograms" for t in tags)
    assert acc.Graph() is not None and len(acc.Graph().node) > 10
    assert acc.PluginTagToContent("graph_run_metadata") == {"train_step": b"1"}
    from tensorboard.compat.proto import config_pb2
    meta = config_pb2.RunMetadata.FromString(acc.Tensors("train_step")[0].tensor_proto.string_val[0])
    assert meta.step_stats.dev_stats and meta.step_stats.dev_stats[0].node_stats
    assert list((logdir / "plugins" / "profile").glob("*/*.xplane.pb"))
    import json
    from tensorboard.util import tensor_util
    record_tags = [t for t in tags if t.startswith("jitflow/trace/")]
    reasons = [json.loads(tensor_util.make_ndarray(e.tensor_proto).item())["reason"]
               for t in record_tags for e in acc.Tensors(t)]
    assert "arg 'lr': Python float 0.01 → float32 tensor of shape ()" in reasons


def test_inspect_summarises_the_demo_logdir(demo_logdir):
    logdir, steps = demo_logdir
    out = _jitflow("inspect", str(logdir))
    assert out.returncode == 0, out.stderr
    assert "loss" in out.stdout and "accuracy" in out.stdout
    assert "arg 'lr': Python float 0.01 → float32 tensor of shape ()" in out.stdout
    assert "top ops" in out.stdout and "MatMul" in out.stdout


def _children(pid):
    psutil = pytest.importorskip("psutil")
    try:
        return psutil.Process(pid).children(recursive=True)
    except psutil.NoSuchProcess:
        return []


@pytest.mark.slow
def test_demo_serves_panel_and_tensorboard_and_stops_cleanly(tmp_path):
    if CHROMIUM is None:
        pytest.skip("chromium is not installed (Debian: apt-get install chromium chromium-driver)")
    sync_api = pytest.importorskip("playwright.sync_api")
    psutil = pytest.importorskip("psutil")
    panel_port, tb_port = free_port(), free_port()
    proc = subprocess.Popen(JITFLOW + ["demo", "--logdir", str(tmp_path / "runs"), "--steps", "20",
                                       "--port", str(panel_port), "--tensorboard-port", str(tb_port)],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    children = []
    try:
        lines = []
        deadline = time.time() + 240
        while time.time() < deadline and not any(line.startswith("TensorBoard:") for line in lines):
            line = proc.stdout.readline()
            if not line:
                break
            lines.append(line.strip())
        assert any(line.startswith(f"jitflow panel: http://127.0.0.1:{panel_port}") for line in lines), lines
        run = next(line.split()[-1] for line in lines if line.startswith("run:"))
        children = _children(proc.pid)
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        with sync_api.sync_playwright() as p:
            context = p.chromium.launch_persistent_context(
                str(tmp_path / "profile"), executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS,
                viewport={"width": 1366, "height": 900})
            try:
                page = context.new_page()
                page.goto(f"http://127.0.0.1:{panel_port}/runs/{Path(run).name}/functions")
                page.wait_for_load_state("load")
                assert "arg 'lr': Python float 0.01 → float32 tensor of shape ()" in page.inner_text("body")
                page.screenshot(path=str(ARTIFACTS / "demo_panel_functions.png"), full_page=True)
                tb = context.new_page()
                deadline = time.time() + 60
                while time.time() < deadline:
                    try:
                        tb.goto(f"http://127.0.0.1:{tb_port}/#scalars", timeout=15000)
                        break
                    except Exception:
                        time.sleep(1)
                tb.get_by_text("loss", exact=True).first.wait_for(timeout=60000)
                tb.wait_for_timeout(3000)  # let the charts draw before the screenshot
                tb.screenshot(path=str(ARTIFACTS / "demo_tensorboard_scalars.png"), full_page=True)
            finally:
                context.close()
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            code = proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            code = None
    assert code == 0
    time.sleep(1)
    leftover = [c.pid for c in children if c.is_running() and c.status() != psutil.STATUS_ZOMBIE]
    assert children and not leftover, f"children left running: {leftover}"
