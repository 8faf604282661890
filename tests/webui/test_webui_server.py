"""The panel as a real server: `serve_in_background`, and the `jitflow panel` command as a
subprocess (with and without TensorBoard), stopped by signals."""
from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import List

import pytest
from servers import free_port

from jitflow import cli
from jitflow.webui import serve_in_background

pytestmark = pytest.mark.slow


def _get(url: str, timeout: float = 5.0):
    with urllib.request.urlopen(url, timeout=timeout) as resp:
        return resp.status, resp.read().decode("utf-8")


def _wait_for(url: str, timeout: float, proc=None) -> str:
    deadline = time.time() + timeout
    last = None
    while time.time() < deadline:
        if proc is not None and proc.poll() is not None:
            raise AssertionError(f"process exited early with {proc.returncode}")
        try:
            status, body = _get(url, timeout=2)
            if status == 200:
                return body
        except (urllib.error.URLError, ConnectionError, OSError) as e:
            last = e
        time.sleep(0.2)
    raise AssertionError(f"{url} did not answer within {timeout}s: {last}")


def _jitflow_command() -> List[str]:
    script = Path(sys.executable).with_name("jitflow")      # the [project.scripts] entry point
    return [str(script)] if script.exists() else [sys.executable, "-m", "jitflow.cli"]


class _Lines:
    """Collects a process's stdout lines on a thread, so reads can time out."""

    def __init__(self, proc: subprocess.Popen) -> None:
        self.lines: List[str] = []
        self._thread = threading.Thread(target=self._pump, args=(proc,), daemon=True)
        self._thread.start()

    def _pump(self, proc) -> None:
        for line in proc.stdout:
            self.lines.append(line.rstrip("\n"))

    def wait_for(self, pattern: str, timeout: float = 60.0) -> re.Match:
        deadline = time.time() + timeout
        while time.time() < deadline:
            for line in list(self.lines):
                m = re.search(pattern, line)
                if m:
                    return m
            time.sleep(0.05)
        raise AssertionError(f"no line matching {pattern!r} in {self.lines}")


def _start_panel(logdir, *args: str) -> subprocess.Popen:
    return subprocess.Popen([*_jitflow_command(), "panel", "--logdir", str(logdir), *args],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


# -- serve_in_background --------------------------------------------------------------------
def test_serve_in_background_binds_localhost_and_stops(tmp_path, logdir):
    panel = serve_in_background(logdir)
    try:
        assert panel.host == "127.0.0.1" and panel.port > 0
        assert panel.url == f"http://127.0.0.1:{panel.port}/"
        assert panel._server.socket.getsockname()[0] == "127.0.0.1"
        status, body = _get(panel.url + "api/runs")
        assert status == 200 and "train" in {r["run"] for r in json.loads(body)["runs"]}
        status, page = _get(panel.url + "runs/train/functions")
        assert status == 200 and "Python int 10 → 20" in page
        rebound = urllib.request.Request(panel.url + "api/runs", headers={"Host": "evil.example"})
        with pytest.raises(urllib.error.HTTPError) as exc:
            urllib.request.urlopen(rebound, timeout=5)
        assert exc.value.code == 400
    finally:
        panel.stop()
    with pytest.raises(OSError):
        _get(panel.url, timeout=2)


def test_live_panel_shows_traces_written_after_it_started(tmp_path):
    import jitflow as jf

    @jf.function
    def step_fn(x):
        return x * 3

    with serve_in_background(tmp_path, TENSORBOARD_PORT=None) as panel:
        assert json.loads(_get(panel.url + "api/runs")[1])["runs"] == []
        w = jf.summary.create_file_writer(str(tmp_path / "live"))
        with w.as_default(step=0):
            step_fn(jf.constant(1))
            step_fn(jf.constant(1.0))
        w.flush()
        _, page = _get(panel.url + "runs/live/functions")
        assert "dtype int32 → float32" in page
        w.close()


# -- the command line -----------------------------------------------------------------------
def test_parser_defaults_and_flags():
    parser = cli.build_parser()
    args = parser.parse_args(["panel", "--logdir", "runs"])
    assert (args.host, args.port, args.tensorboard, args.tensorboard_port) == ("127.0.0.1", 6007, True, 6006)
    args = parser.parse_args(["panel", "--logdir", "runs", "--no-tensorboard", "--port", "0",
                              "--tensorboard-port", "7000", "--host", "0.0.0.0"])
    assert (args.host, args.port, args.tensorboard, args.tensorboard_port) == ("0.0.0.0", 0, False, 7000)
    assert args.func is cli.run_panel
    with pytest.raises(SystemExit):
        parser.parse_args(["panel", "--logdir", "runs", "--port", "70000"])
    with pytest.raises(SystemExit):
        parser.parse_args(["panel"])                       # --logdir is required


def test_version_and_no_command(capsys):
    import jitflow
    with pytest.raises(SystemExit) as exc:
        cli.main(["--version"])
    assert exc.value.code == 0
    assert capsys.readouterr().out.strip() == f"jitflow {jitflow.__version__}"
    assert cli.main([]) == 2
    assert "panel" in capsys.readouterr().err


def test_panel_reports_when_no_port_is_free(tmp_path, capsys, monkeypatch):
    from jitflow.webui import server
    monkeypatch.setattr(server, "port_is_free", lambda host, port: False)
    code = cli.main(["panel", "--logdir", str(tmp_path), "--port", "6007", "--no-tensorboard"])
    assert code == 1
    err = capsys.readouterr().err
    assert "cannot listen for the panel on 127.0.0.1: no free port on 127.0.0.1 in 6007..6026" in err


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_panel_command_without_tensorboard(logdir, sig):
    proc = _start_panel(logdir, "--port", "0", "--no-tensorboard")
    try:
        lines = _Lines(proc)
        url = lines.wait_for(r"jitflow panel: (http://127\.0\.0\.1:\d+/)").group(1)
        body = _wait_for(url + "runs/train/functions", 20, proc)
        assert "Python int 10 → 20" in body
        assert not any(line.startswith("TensorBoard:") for line in lines.lines)
        proc.send_signal(sig)
        assert proc.wait(timeout=20) == 0
        lines.wait_for("stopping", timeout=5)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    with pytest.raises(OSError):
        _get(url, timeout=2)


def _descendants(pid: int) -> List[int]:
    try:
        import psutil
    except ImportError:  # fall back to /proc: every process whose parent chain leads to pid
        parents = {}
        for entry in os.listdir("/proc"):
            if entry.isdigit():
                try:
                    with open(f"/proc/{entry}/stat") as fh:
                        parents[int(entry)] = int(fh.read().rsplit(")", 1)[1].split()[1])
                except OSError:
                    pass
        out, frontier = [], [pid]
        while frontier:
            p = frontier.pop()
            kids = [c for c, parent in parents.items() if parent == p]
            out += kids
            frontier += kids
        return out
    return [c.pid for c in psutil.Process(pid).children(recursive=True)]


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            state = fh.read().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state not in ("Z", "X")       # a zombie has exited (it only awaits reaping)


def test_panel_command_with_tensorboard(logdir):
    tb_port = free_port()
    proc = _start_panel(logdir, "--port", "0", "--tensorboard-port", str(tb_port))
    children: List[int] = []
    try:
        lines = _Lines(proc)
        panel_url = lines.wait_for(r"jitflow panel: (http://127\.0\.0\.1:\d+/)").group(1)
        tb_url = lines.wait_for(r"TensorBoard: +(http://\S+)").group(1)
        assert tb_url == f"http://127.0.0.1:{tb_port}/"
        page = _wait_for(panel_url, 20, proc)
        assert f"http://127.0.0.1:{tb_port}/?runFilter=%5Etrain%24#timeseries" in page
        _wait_for(tb_url, 60, proc)                                  # TensorBoard's own page
        runs = json.loads(_wait_for(tb_url + "data/runs", 30, proc))
        assert "train" in runs
        children = _descendants(proc.pid)
        assert children, "tensorboard should run as a child of the panel"
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=30) == 0
        deadline = time.time() + 10
        while time.time() < deadline and any(_alive(c) for c in children):
            time.sleep(0.1)
        assert not [c for c in children if _alive(c)], "tensorboard (or its data server) was orphaned"
        with pytest.raises(OSError):
            _get(tb_url, timeout=2)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        for c in children:                                           # never leave strays behind
            if _alive(c):
                os.kill(c, signal.SIGKILL)


def test_docstring_examples_run():
    import doctest
    import jitflow.webui.app
    import jitflow.webui.server
    for module in (jitflow.webui.app, jitflow.webui.server):
        result = doctest.testmod(module)
        assert result.attempted > 0 and result.failed == 0, module.__name__
