"""Live capture: TensorBoard's CAPTURE PROFILE route, the client and the CLI against real
training processes running `jf.profiler.experimental.server.start(port)`.

The route is the one the button calls (`/data/plugin/profile/capture_profile`); xprof's
own C++ client then makes the gRPC `Profile` call to the worker, which writes the
session; TensorBoard's profile plugin must list it with its tools, and its Overview
Page must show non-zero step times.
"""
from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
import threading
import time
import urllib.parse

import pytest

import jitflow as jf
from jitflow.tracer import client, server

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from servers import fetch, free_port, get, tensorboard  # noqa: E402

pytest.importorskip("grpc")
SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "train_with_server.py")


class Worker:
    """`train_with_server.py` as a subprocess; `close()` ends it and checks it trained on."""

    def __init__(self, seconds: float = 120.0) -> None:
        self.port = free_port()
        self.proc = subprocess.Popen([sys.executable, SCRIPT, str(self.port), "--seconds", str(seconds)],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     text=True)
        line = self.proc.stdout.readline()
        if not line.startswith("READY"):
            self.proc.kill()
            pytest.fail(f"the training script did not start: {line!r} {self.proc.stderr.read()[-2000:]}")
        self.address = f"localhost:{self.port}"

    def close(self) -> int:
        """Stop training; returns the number of steps it ran (it must exit cleanly)."""
        try:
            out, err = self.proc.communicate("", timeout=60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            raise
        assert self.proc.returncode == 0, err[-2000:]
        return int(out.strip().split()[-1])


@pytest.fixture
def worker():
    w = Worker()
    yield w
    if w.proc.poll() is None:
        w.proc.kill()
        w.proc.wait()


def _data(base: str, **params) -> object:
    """A profile tool's data: xprof converts the XSpace on first request, slowly on a busy machine."""
    url = f"{base}/data/plugin/profile/data?{urllib.parse.urlencode(params)}"
    return json.loads(fetch(url, timeout=120))


def _plugin_ready(base: str) -> bool:
    return isinstance(json.loads(get(base, "/data/plugin/profile/runs")), list)


def _capture(base: str, service_addr: str, duration_ms: int = 1500, **extra) -> dict:
    params = {"service_addr": service_addr, "is_tpu_name": "false", "duration": duration_ms, "num_retry": 2,
              "host_tracer_level": 2, "device_tracer_level": 1, "python_tracer_level": 0, "delay": 0, **extra}
    import urllib.error
    import urllib.request
    url = f"{base}/data/plugin/profile/capture_profile?{urllib.parse.urlencode(params)}"
    try:
        with urllib.request.urlopen(url, timeout=120) as response:
            body, encoding = response.read(), response.headers.get("Content-Encoding")
    except urllib.error.HTTPError as e:
        body, encoding = e.read(), e.headers.get("Content-Encoding")
    return json.loads(gzip.decompress(body) if encoding == "gzip" else body)


def _rows(table: dict) -> list:
    cols = [c["id"] for c in table["cols"]]
    return [dict(zip(cols, (c.get("v") for c in r["c"]))) for r in table["rows"]]


def _new_run(base: str, before: set) -> str:
    deadline = time.time() + 30
    while time.time() < deadline:
        runs = set(json.loads(get(base, "/data/plugin/profile/runs")))
        if runs - before:
            (run,) = runs - before
            return run
        time.sleep(0.5)
    pytest.fail("the captured session never appeared among the profile runs")


def test_capture_profile_button_route_profiles_a_training_process(tmp_path, worker):
    logdir = str(tmp_path / "logs")
    os.makedirs(logdir)
    with tensorboard(logdir, _plugin_ready) as base:
        before = set(json.loads(get(base, "/data/plugin/profile/runs")))
        answer = _capture(base, worker.address, duration_ms=1000)
        assert "error" not in answer, answer
        run = _new_run(base, before)
        tools = json.loads(get(base, "/data/plugin/profile/run_tools", run=run))
        assert {"trace_viewer", "trace_viewer@"} & set(tools)
        assert {"framework_op_stats", "overview_page", "input_pipeline_analyzer"} <= set(tools)
        hosts = [h["hostname"] for h in json.loads(get(base, "/data/plugin/profile/hosts", run=run,
                                                          tag="overview_page"))]
        assert hosts == [f"localhost_{worker.port}"]
        host = hosts[0]

        trace = _data(base, run=run, tag="trace_viewer", host=host)
        names = {e["name"] for e in trace["traceEvents"] if e.get("ph") == "X"}
        assert "train" in names and any(n.startswith("__inference_train_step") for n in names)
        assert any(n.endswith(":MatMul") for n in names)

        overview = _data(base, run=run, tag="overview_page", host=host)
        steps = next(t for t in overview if any(c["id"] == "stepTimeMs" for c in t["cols"]))
        step_rows = _rows(steps)
        assert len(step_rows) >= 3 and all(r["stepTimeMs"] > 0 for r in step_rows)
        assert float(steps["p"]["steptime_ms_average"]) > 0

        stats = _data(base, run=run, tag="framework_op_stats", host=host)
        ops = {(r["type"], r["operation"]) for r in _rows(stats[0])}
        assert ("MatMul", "mlp/hidden/MatMul") in ops
        pipeline = _data(base, run=run, tag="input_pipeline_analyzer", host=host)
        assert "Input" in json.dumps(pipeline) or "input" in json.dumps(pipeline)
    assert worker.close() > 0  # training went on through the capture


def test_two_workers_captured_into_one_session(tmp_path):
    workers = [Worker(), Worker()]
    try:
        logdir = str(tmp_path / "logs")
        os.makedirs(logdir)
        with tensorboard(logdir, _plugin_ready) as base:
            before = set(json.loads(get(base, "/data/plugin/profile/runs")))
            answer = _capture(base, ",".join(w.address for w in workers), duration_ms=1000)
            assert "error" not in answer, answer
            run = _new_run(base, before)
            hosts = {h["hostname"] for h in json.loads(get(base, "/data/plugin/profile/hosts", run=run,
                                                             tag="trace_viewer"))}
            assert {f"localhost_{w.port}" for w in workers} <= hosts
        session = os.path.join(logdir, "plugins", "profile", run)
        assert sorted(f for f in os.listdir(session) if f.endswith(".xplane.pb")) == sorted(
            f"localhost_{w.port}.xplane.pb" for w in workers)
    finally:
        for w in workers:
            assert w.close() > 0


def test_client_trace_and_cli_capture(tmp_path, worker):
    run_dir = jf.profiler.experimental.client.trace(f"grpc://{worker.address}", str(tmp_path / "a"), 500)
    assert sorted(os.listdir(run_dir)) == [f"localhost_{worker.port}.trace.json.gz",
                                           f"localhost_{worker.port}.xplane.pb"]
    assert "1 capture(s) served" in jf.profiler.experimental.client.monitor(worker.address)
    cli = subprocess.run([sys.executable, "-m", "jitflow.cli", "capture", f"grpc://{worker.address}",
                          "--logdir", str(tmp_path / "b"), "--duration-ms", "500"],
                         capture_output=True, text=True, timeout=120)
    assert cli.returncode == 0, cli.stderr
    (session,) = os.listdir(tmp_path / "b" / "plugins" / "profile")
    assert session in cli.stdout
    assert os.path.exists(tmp_path / "b" / "plugins" / "profile" / session / f"localhost_{worker.port}.xplane.pb")
    bad = subprocess.run([sys.executable, "-m", "jitflow.cli", "capture", f"grpc://localhost:{free_port()}",
                          "--logdir", str(tmp_path / "c"), "--duration-ms", "500", "--num-retry", "0"],
                         capture_output=True, text=True, timeout=120)
    assert bad.returncode != 0 and "no profiler server answers" in bad.stderr
    assert worker.close() > 0


# -- bad input: clear errors, the serving process unharmed ------------------------------------------
@pytest.fixture
def local_server():
    srv = server.start(0)
    yield srv
    server.stop()


def test_busy_server_refuses_a_second_capture(tmp_path, local_server):
    addr = f"localhost:{local_server.port}"
    results = {}
    first = threading.Thread(target=lambda: results.update(first=client.trace(addr, str(tmp_path / "a"), 3000)))
    first.start()
    deadline = time.time() + 10
    while local_server._current is None and time.time() < deadline:
        time.sleep(0.01)
    with pytest.raises(client.CaptureError, match="a capture is already running"):
        client.trace(addr, str(tmp_path / "b"), 500)
    first.join()
    assert os.path.exists(os.path.join(results["first"], f"localhost_{local_server.port}.xplane.pb"))
    assert not os.path.exists(tmp_path / "b" / "plugins" / "profile" / "x")


def test_unreachable_address_is_a_clear_error(tmp_path):
    with pytest.raises(client.CaptureError, match=r"no profiler server answers at localhost:\d+"):
        client.trace(f"grpc://localhost:{free_port()}", str(tmp_path), 200, num_tracing_attempts=1)
    with pytest.raises(ValueError, match="service_addr: expected host:port"):
        client.trace("grpc://localhost", str(tmp_path), 200)


@pytest.mark.parametrize("duration", [0, -5, server.MAX_DURATION_MS + 1, 1.5, True])
def test_bad_durations_are_refused_by_client_and_server(tmp_path, local_server, duration):
    with pytest.raises(ValueError, match="duration_ms: expected an int from 1 to"):
        client.trace(f"localhost:{local_server.port}", str(tmp_path), duration)
    if isinstance(duration, int) and not isinstance(duration, bool) and duration >= 0:
        import grpc
        from jitflow.tracer import service_protos as sp
        with grpc.insecure_channel(f"localhost:{local_server.port}") as channel:
            stub = channel.unary_unary(sp.method_path("Profile"), request_serializer=lambda m: m.SerializeToString(),
                                       response_deserializer=sp.ProfileResponse.FromString)
            with pytest.raises(grpc.RpcError) as info:
                stub(sp.ProfileRequest(duration_ms=duration, repository_root=str(tmp_path)), timeout=10)
        assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert "duration_ms: expected 1 to" in info.value.details()


def test_capture_route_reports_bad_requests(tmp_path, local_server):
    logdir = str(tmp_path / "logs")
    os.makedirs(logdir)
    with tensorboard(logdir, _plugin_ready) as base:
        answer = _capture(base, f"localhost:{local_server.port}", duration_ms=0)
        assert "duration_ms" in answer.get("error", ""), answer  # xprof's client refuses it itself
        answer = _capture(base, f"localhost:{local_server.port}", duration_ms=server.MAX_DURATION_MS + 1)
        assert answer.get("error"), answer  # the server refused (xprof's client words the error itself)
        assert local_server.captures_served == 0
        answer = _capture(base, f"localhost:{free_port()}", duration_ms=200, num_retry=0)
        assert answer.get("error"), answer
    assert server.running() is local_server  # the serving process is unharmed


def test_unwritable_logdir_is_refused_before_recording(tmp_path, local_server):
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    with pytest.raises(OSError, match="logdir: cannot write profiles under"):
        client.trace(f"localhost:{local_server.port}", str(blocker / "logs"), 200)
    assert local_server.captures_served == 0
    # The server checks too (a client that does not): PERMISSION_DENIED / INVALID_ARGUMENT, nothing recorded.
    import grpc
    from jitflow.tracer import service_protos as sp
    with grpc.insecure_channel(f"localhost:{local_server.port}") as channel:
        stub = channel.unary_unary(sp.method_path("Profile"), request_serializer=lambda m: m.SerializeToString(),
                                   response_deserializer=sp.ProfileResponse.FromString)
        with pytest.raises(grpc.RpcError) as info:
            stub(sp.ProfileRequest(duration_ms=100, repository_root=str(blocker / "x"), session_id="s"), timeout=10)
    assert "repository_root: cannot write the profile" in info.value.details()
    assert local_server.captures_served == 0


def test_server_start_argument_errors(local_server):
    with pytest.raises(RuntimeError, match="already runs in this process"):
        server.start(0)
    with pytest.raises(ValueError, match="port: expected an int"):
        server.start(70000)
    with pytest.raises(OSError, match="port: cannot listen on 127.0.0.1"):
        server.ProfilerServer(local_server.port)  # taken by the running server


def test_terminate_ends_a_capture_early(tmp_path, local_server):
    import grpc
    from jitflow.tracer import service_protos as sp
    addr = f"localhost:{local_server.port}"
    started = time.time()
    done = {}
    t = threading.Thread(target=lambda: done.update(run=client.trace(addr, str(tmp_path), 30_000)))
    t.start()
    deadline = time.time() + 10
    while local_server._current is None and time.time() < deadline:
        time.sleep(0.01)
    with grpc.insecure_channel(addr) as channel:
        channel.unary_unary(sp.method_path("Terminate"), request_serializer=lambda m: m.SerializeToString(),
                            response_deserializer=sp.TerminateResponse.FromString)(sp.TerminateRequest(), timeout=10)
    t.join(20)
    assert not t.is_alive() and time.time() - started < 20
    assert os.path.exists(os.path.join(done["run"], f"localhost_{local_server.port}.xplane.pb"))
