"""Issue 14 items 1, 2, 6, 7: TensorBoard as the panel's child.

- it never outlives the panel: not after SIGHUP (terminal closed), not after SIGKILL (the
  parent-death signal on Linux, and the watchdog pipe used elsewhere);
- a taken port is detected before a URL is printed, and the next free one is used, saying so;
- its output goes to LOGDIR/tensorboard.log, the terminal stays quiet;
- it has the Profile tab (tensorboard-plugin-profile is a dependency);
- with --no-tensorboard, no page links to a TensorBoard.
"""
from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from typing import List

import pytest
from servers import free_port

pytestmark = pytest.mark.slow


class _Output:
    """A process's stdout and stderr lines, collected on threads."""

    def __init__(self, proc: subprocess.Popen) -> None:
        self.out: List[str] = []
        self.err: List[str] = []
        for stream, sink in ((proc.stdout, self.out), (proc.stderr, self.err)):
            threading.Thread(target=self._pump, args=(stream, sink), daemon=True).start()

    @staticmethod
    def _pump(stream, sink) -> None:
        for line in stream:
            sink.append(line.rstrip("\n"))

    def wait_for(self, pattern: str, timeout: float = 90.0) -> re.Match:
        deadline = time.time() + timeout
        while time.time() < deadline:
            for line in self.out + self.err:
                m = re.search(pattern, line)
                if m:
                    return m
            time.sleep(0.05)
        raise AssertionError(f"no line matching {pattern!r} in {self.out} / {self.err}")


def _start(logdir, *args: str, env=None) -> subprocess.Popen:
    # Its own session, as a terminal would make it: a signal sent to it reaches nothing else.
    return subprocess.Popen([sys.executable, "-m", "jitflow", "panel", "--logdir", str(logdir), *args],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
                            env={**os.environ, **(env or {})})


def _fetch(url: str, timeout: float = 5.0) -> str:
    with urllib.request.urlopen(url, timeout=timeout) as resp:
        return resp.read().decode("utf-8", "replace")


def _wait_url(url: str, timeout: float, proc) -> str:
    deadline = time.time() + timeout
    while time.time() < deadline:
        assert proc.poll() is None, f"panel exited early with {proc.returncode}"
        try:
            return _fetch(url, timeout=3)
        except (urllib.error.URLError, ConnectionError, OSError):
            time.sleep(0.3)
    raise AssertionError(f"{url} did not answer within {timeout}s")


def _listening_pid(port: int) -> List[int]:
    """PIDs with a socket listening on 127.0.0.1:port (from /proc)."""
    psutil = pytest.importorskip("psutil")
    pids = []
    for conn in psutil.net_connections(kind="tcp"):
        if conn.status == psutil.CONN_LISTEN and conn.laddr and conn.laddr.port == port and conn.pid:
            pids.append(conn.pid)
    return pids


def _tensorboard_pids(panel_pid: int) -> List[int]:
    psutil = pytest.importorskip("psutil")
    return [c.pid for c in psutil.Process(panel_pid).children(recursive=True)]


def _gone(pids: List[int], timeout: float = 15.0) -> List[int]:
    """The pids still alive after `timeout` (zombies count as gone)."""
    psutil = pytest.importorskip("psutil")
    deadline = time.time() + timeout
    alive = pids
    while time.time() < deadline:
        alive = []
        for pid in pids:
            try:
                if psutil.Process(pid).status() != psutil.STATUS_ZOMBIE:
                    alive.append(pid)
            except psutil.NoSuchProcess:
                pass
        if not alive:
            return []
        time.sleep(0.2)
    return alive


def _cleanup(proc, pids) -> None:
    if proc.poll() is None:
        proc.kill()
        proc.wait()
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass


def test_sighup_stops_tensorboard_taken_port_is_skipped_and_terminal_stays_quiet(logdir):
    busy = socket.socket()
    busy.bind(("127.0.0.1", 0))
    busy.listen(1)
    taken = busy.getsockname()[1]
    proc = _start(logdir, "--port", "0", "--tensorboard-port", str(taken))
    output = _Output(proc)
    pids: List[int] = []
    try:
        tb_url = output.wait_for(r"TensorBoard: +(http://127\.0\.0\.1:(\d+)/)")
        port = int(tb_url.group(2))
        assert port != taken
        assert any(f"port {taken} is taken" in line and f"using {port}" in line for line in output.err), output.err
        # TensorBoard answers on the port printed, with the Profile tab among its plugins.
        listing = json.loads(_wait_url(tb_url.group(1) + "data/plugins_listing", 120, proc))
        assert "profile" in listing and "jitflow" in listing, sorted(listing)
        for page in ("", "data/runs", "data/environment", "data/plugins_listing", "nonexistent"):
            try:
                _fetch(tb_url.group(1) + page)
            except urllib.error.HTTPError:
                pass
        pids = _tensorboard_pids(proc.pid)
        assert pids
        time.sleep(1.0)
        proc.send_signal(signal.SIGHUP)
        assert proc.wait(timeout=30) == 0
        assert not _gone(pids), "TensorBoard outlived the panel after SIGHUP"
        # Quiet: the URLs, the logdir, the note about the port, and "stopping"; nothing per request.
        lines = output.out + output.err
        assert len(lines) <= 7 and not any("GET /" in line for line in lines), lines
        log = open(os.path.join(logdir, "tensorboard.log"), encoding="utf-8", errors="replace").read()
        assert "TensorBoard" in log and "Traceback" not in log, log[-3000:]
    finally:
        busy.close()
        _cleanup(proc, pids)


@pytest.mark.parametrize("watchdog", ["0", "1"], ids=["parent-death-signal", "watchdog-pipe"])
def test_sigkill_of_the_panel_takes_tensorboard_with_it(logdir, watchdog):
    if watchdog == "0" and not sys.platform.startswith("linux"):
        pytest.skip("PR_SET_PDEATHSIG is Linux-only; elsewhere the watchdog pipe is used")
    tb_port = free_port()
    proc = _start(logdir, "--port", "0", "--tensorboard-port", str(tb_port),
                  env={"JITFLOW_TENSORBOARD_WATCHDOG": watchdog})
    output = _Output(proc)
    pids: List[int] = []
    try:
        output.wait_for(r"TensorBoard: +http://127\.0\.0\.1:%d/" % tb_port)
        _wait_url(f"http://127.0.0.1:{tb_port}/data/runs", 120, proc)
        pids = _tensorboard_pids(proc.pid)
        assert _listening_pid(tb_port) and set(_listening_pid(tb_port)) <= set(pids)
        proc.kill()                                   # no handler runs: only the kernel or the pipe can help
        proc.wait()
        assert not _gone(pids), "TensorBoard outlived a SIGKILLed panel"
        with pytest.raises(OSError):
            _fetch(f"http://127.0.0.1:{tb_port}/", timeout=2)
    finally:
        _cleanup(proc, pids)


def test_no_tensorboard_means_no_tensorboard_links(logdir):
    proc = _start(logdir, "--port", "0", "--no-tensorboard")
    output = _Output(proc)
    try:
        url = output.wait_for(r"jitflow panel: (http://127\.0\.0\.1:\d+/)").group(1)
        for page in ("", "runs/train/functions", "runs/train/profiles"):
            body = _wait_url(url + page, 30, proc)
            assert "TensorBoard ↗" not in body and ":6006" not in body, page
        data = json.loads(_fetch(url + "api/runs"))
        assert all(r["links"]["tensorboard"] is None for r in data["runs"])
        assert not any(line.startswith("TensorBoard:") for line in output.out)
    finally:
        proc.terminate()
        proc.wait(timeout=30)
