"""Serving the panel: a real HTTP server on a thread, and TensorBoard as a child process.

`serve_in_background` is for a live panel inside a training process (and for tests);
`jitflow panel` (jitflow/cli.py) uses both pieces and stops them on SIGINT/SIGTERM.
"""
from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
from typing import Any, List, Optional

from werkzeug.serving import BaseWSGIServer, WSGIRequestHandler, make_server

DEFAULT_HOST = "127.0.0.1"   # never all interfaces unless asked


def trusted_hosts(host: str) -> Optional[List[str]]:
    """Host headers to accept when serving on `host`: on IPv4 loopback only loopback names,
    so a web page cannot reach the panel through DNS rebinding; else any (None). (Werkzeug
    cannot match bracketed IPv6 literals, so `--host ::1` is not restricted.)"""
    if host in ("127.0.0.1", "localhost"):
        return ["127.0.0.1", "localhost"]
    return None


def _url(host: str, port: int) -> str:
    if host in ("", "0.0.0.0"):
        host = "127.0.0.1"
    elif host == "::":
        host = "::1"
    if ":" in host:
        host = f"[{host}]"
    return f"http://{host}:{port}/"


def _listen(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET   # as werkzeug picks it
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        if os.name == "posix":
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(128)
    except BaseException:
        sock.close()
        raise
    return sock


class _QuietHandler(WSGIRequestHandler):
    """No access log line per request: a panel inside a training loop should not chatter."""

    def log_request(self, *args: Any, **kwargs: Any) -> None:
        pass


class PanelServer:
    """A WSGI app served by werkzeug on a daemon thread. `stop()` shuts it down."""

    def __init__(self, app, host: str = DEFAULT_HOST, port: int = 0, quiet: bool = True) -> None:
        self.app = app
        sock = _listen(host, port)   # ours, so a busy port raises OSError (werkzeug would sys.exit)
        try:
            self._server: BaseWSGIServer = make_server(
                host, port, app, threaded=True, request_handler=_QuietHandler if quiet else None,
                fd=sock.fileno())
        finally:
            sock.close()             # werkzeug serves a duplicate of it
        self.host = host
        self.port = self._server.port
        self._thread = threading.Thread(target=self._server.serve_forever, name=f"jitflow-panel:{self.port}",
                                        daemon=True)
        self._stopped = False

    @property
    def url(self) -> str:
        return _url(self.host, self.port)

    def start(self) -> "PanelServer":
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._stopped:
            return
        self._stopped = True
        if self._thread.is_alive():
            self._server.shutdown()
            self._thread.join(timeout=10)
        self._server.server_close()

    def __enter__(self) -> "PanelServer":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    def __repr__(self) -> str:
        return f"PanelServer(url={self.url!r}, running={self._thread.is_alive()})"


def serve_in_background(logdir: str | os.PathLike, port: int = 0, host: str = DEFAULT_HOST,
                        **config: Any) -> PanelServer:
    """Serve the panel for `logdir` on a background thread; returns the running server.

    `port=0` picks a free port; config keys (e.g. TENSORBOARD_PORT=6006) go to the app. On
    a loopback host, requests must name a loopback host too (TRUSTED_HOSTS).

    Example:
        >>> import tempfile, urllib.request
        >>> panel = serve_in_background(tempfile.mkdtemp())
        >>> urllib.request.urlopen(panel.url + "api/runs").status
        200
        >>> panel.stop()
    """
    from . import create_app
    config.setdefault("TRUSTED_HOSTS", trusted_hosts(host))
    return PanelServer(create_app(logdir, config), host=host, port=port).start()


def tensorboard_command() -> List[str]:
    """The `tensorboard` script of this environment, or `python -m tensorboard.main`."""
    script = os.path.join(os.path.dirname(sys.executable), "tensorboard")
    if os.name == "posix" and os.access(script, os.X_OK):
        return [script]
    return [sys.executable, "-m", "tensorboard.main"]


class TensorBoardProcess:
    """`tensorboard --logdir DIR --host HOST --port PORT` in its own process group, so that
    stopping it also stops what it started (its data server) and a terminal's Ctrl-C
    reaches only the panel, which then stops TensorBoard in order."""

    def __init__(self, logdir: str, host: str = DEFAULT_HOST, port: int = 6006,
                 extra_args: Optional[List[str]] = None, **popen: Any) -> None:
        self.host, self.port = host, port
        self.command = [*tensorboard_command(), "--logdir", os.fspath(logdir),
                        "--host", host, "--port", str(port), *(extra_args or [])]
        if os.name == "posix":
            popen.setdefault("start_new_session", True)
        else:  # pragma: no cover - Windows
            popen.setdefault("creationflags", subprocess.CREATE_NEW_PROCESS_GROUP)
        self.process = subprocess.Popen(self.command, stdin=subprocess.DEVNULL, **popen)

    @property
    def url(self) -> str:
        return _url(self.host, self.port)

    @property
    def pid(self) -> int:
        return self.process.pid

    def poll(self) -> Optional[int]:
        return self.process.poll()

    def stop(self, timeout: float = 10.0) -> Optional[int]:
        """SIGTERM to the whole group, SIGKILL after `timeout`; returns the exit code."""
        proc = self.process
        if os.name != "posix":  # pragma: no cover
            if proc.poll() is None:
                proc.terminate()
            try:
                return proc.wait(timeout)
            except subprocess.TimeoutExpired:
                proc.kill()
                return proc.wait()
        pgid = proc.pid   # start_new_session: the child leads its own group
        self._signal_group(pgid, signal.SIGTERM)
        try:
            code = proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self._signal_group(pgid, signal.SIGKILL)
            code = proc.wait()
        # Whatever the group still holds (e.g. a data server that ignored SIGTERM) goes too.
        self._signal_group(pgid, signal.SIGKILL)
        return code

    @staticmethod
    def _signal_group(pgid: int, sig: int) -> None:
        try:
            os.killpg(pgid, sig)
        except (ProcessLookupError, PermissionError):
            pass
