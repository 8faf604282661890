"""One view of a real 2-worker MPI job: each worker announces its profiler server, one
`jitflow capture --workers-in` profiles both into one session (a host per worker, as
TensorBoard's Profile tab lists them), and the panel's Workers page shows both workers and
flags the one that differs: a straggler (it sleeps each step) or divergent shapes (it retraces)."""
import json
import os
import shutil
import subprocess
import sys
import time

import pytest

from jitflow import cli
from jitflow.tracer import job

pytest.importorskip("mpi4py", reason="MultiWorkerMirroredStrategy needs mpi4py: pip install 'jitflow[mpi]'")
HERE = os.path.dirname(os.path.abspath(__file__))
MPIEXEC = shutil.which("mpiexec", path=os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", ""))
pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(MPIEXEC is None, reason="no mpiexec: pip install 'jitflow[mpi]' brings MPICH's")]


def run_profiled_job(logdir, variant):
    """Start the job, capture 1.5 s of profile from both workers once both train, stop it."""
    out = open(logdir / "job.out", "w+")
    proc = subprocess.Popen([MPIEXEC, "-n", "2", sys.executable, os.path.join(HERE, "mpi_worker.py"), "profiled",
                             str(logdir), variant], stdout=out, stderr=subprocess.STDOUT,
                            env={**os.environ, "PYTHONUNBUFFERED": "1"})
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and proc.poll() is None:
            text = (logdir / "job.out").read_text()
            if "worker 0 training" in text and "worker 1 training" in text:
                break
            time.sleep(0.2)
        assert proc.poll() is None, (logdir / "job.out").read_text()
        addresses = job.worker_addresses(str(logdir), expected=2)
        assert cli.main(["capture", "--workers-in", str(logdir), "--logdir", str(logdir),
                         "--duration-ms", "1500"]) == 0
        (logdir / "stop").touch()
        assert proc.wait(timeout=120) == 0, (logdir / "job.out").read_text()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        out.close()
    return addresses


def panel(logdir):
    from jitflow.webui import create_app
    client = create_app(str(logdir)).test_client()
    payload = client.get("/api/workers").get_json()
    page = client.get("/workers")
    assert page.status_code == 200
    return payload, page.get_data(as_text=True)


def test_straggler_is_flagged(tmp_path):
    addresses = run_profiled_job(tmp_path, "straggler")
    announced = job.announcements(str(tmp_path))
    assert [a["rank"] for a in announced] == [0, 1] and addresses == ",".join(a["address"] for a in announced)
    # one session, one host file per worker, named by the port each worker announced
    (session,) = os.listdir(tmp_path / "plugins" / "profile")
    files = sorted(os.listdir(tmp_path / "plugins" / "profile" / session))
    assert sorted(f for f in files if f.endswith(".xplane.pb")) == sorted(
        f"127.0.0.1_{a['port']}.xplane.pb" for a in announced)
    payload, html = panel(tmp_path)
    (view,) = payload["jobs"]
    assert view["profile_session"] == session and [w["rank"] for w in view["workers"]] == [0, 1]
    w0, w1 = view["workers"]
    assert w0["step_time"]["steps"] > 3 and w1["step_time"]["steps"] > 3
    # both steps last as long (synchronous); worker 1 is busy (sleeping 30 ms), worker 0 waits for it
    assert w1["step_time"]["median_busy_s"] > 0.025 > w0["step_time"]["median_busy_s"]
    assert w0["step_time"]["median_wait_s"] > 0.02
    assert w1["flags"] == ["straggler"] and w0["flags"] == []
    assert [(f["rank"], f["flag"]) for f in payload["flags"]] == [(1, "straggler")]
    assert "straggler" in html and "worker_1" in html and "worker_0" in html
    # TensorBoard's own Profile plugin lists the session with one host per worker
    from servers import get, tensorboard

    def ready(base):
        return any(r.endswith(session) for r in json.loads(get(base, "/data/plugin/profile/runs")))
    with tensorboard(str(tmp_path), ready) as base:
        (run,) = [r for r in json.loads(get(base, "/data/plugin/profile/runs")) if r.endswith(session)]
        hosts = json.loads(get(base, "/data/plugin/profile/hosts", run=run, tag="trace_viewer"))
    assert sorted(h["hostname"] for h in hosts) == sorted(f"127.0.0.1_{a['port']}" for a in announced)


def test_divergent_shapes_are_flagged(tmp_path):
    run_profiled_job(tmp_path, "shapes")
    payload, html = panel(tmp_path)
    (view,) = payload["jobs"]
    w0, w1 = view["workers"]
    assert (w0["traces"], w0["retraces"]) == (1, 0)                   # fixed shapes: one trace
    assert w1["retraces"] >= 3 and w1["flags"] == ["divergent retraces"]   # rows 8, 9, 10, 11: a trace each
    assert [d["function"].rsplit(".", 1)[-1] for d in w1["differing_functions"]] == ["train_step"]
    assert any("shape (8, 3) → (9, 3)" in c for c in w1["retrace_changes"])
    assert [(f["rank"], f["flag"]) for f in payload["flags"]] == [(1, "divergent retraces")]
    assert "divergent retraces" in html
    json.dumps(payload)   # the API answer is plain JSON
