"""Serving the panel: a real HTTP server on a thread, and TensorBoard as a child process.

`serve_in_background` is for a live panel inside a training process (and for tests);
`jitflow panel` (jitflow/cli.py) uses both pieces and stops them on SIGINT/SIGTERM.
"""
from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import threading
from typing import Any, List, Optional

from werkzeug.serving import BaseWSGIServer, WSGIRequestHandler, make_server

from . import hosts

from .app import create_app

DEFAULT_HOST = "127.0.0.1"   # never all interfaces unless asked


def allowed_hosts(host: str, extra=()) -> frozenset:
    """Host names (besides IP literals) a server bound to `host` answers (webui/hosts.py)."""
    return hosts.allowed_names(host, extra)


def _url(host: str, port: int) -> str:
    host = hosts.display_host(host)
    if ":" in host:
        host = f"[{host}]"
    return f"http://{host}:{port}/"


def port_is_free(host: str, port: int) -> bool:
    """Whether a server could listen on (host, port) now."""
    try:
        _listen(host, port).close()
        return True
    except OSError:
        return False


def pick_port(host: str, port: int, tries: int = 20) -> int:
    """`port` if it is free on `host`, else the next free one of the `tries` after it (0: any
    free port). Raises OSError naming the range when none is free."""
    if port == 0:
        sock = _listen(host, 0)
        try:
            return sock.getsockname()[1]
        finally:
            sock.close()
    for candidate in range(port, min(port + tries, 65536)):
        if port_is_free(host, candidate):
            return candidate
    raise OSError(f"no free port on {host} in {port}..{min(port + tries, 65536) - 1}")


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

    `port=0` picks a free port; config keys (e.g. TENSORBOARD_PORT=6006) go to the app.
    Requests must name an IP address, localhost, or (beyond loopback) this machine's name
    (ALLOWED_HOSTS, webui/hosts.py).

    Example:
        >>> import tempfile, urllib.request
        >>> panel = serve_in_background(tempfile.mkdtemp())
        >>> urllib.request.urlopen(panel.url + "api/runs").status
        200
        >>> panel.stop()
    """
    config.setdefault("ALLOWED_HOSTS", allowed_hosts(host))
    return PanelServer(create_app(logdir, config), host=host, port=port).start()


def tensorboard_command() -> List[str]:
    """`python -m tensorboard.main` with this very interpreter: TensorBoard then sees the same
    packages as the panel (its Profile plugin, the jitflow tab). The `tensorboard` script
    beside it may name another interpreter in its #! line (a copied or moved virtualenv)."""
    return [sys.executable, "-m", "tensorboard.main"]


class TensorBoardProcess:
    """`tensorboard --logdir DIR --host HOST --port PORT`, started so that it never outlives
    this process, and quiet.

    - It runs in its own session, so a terminal's Ctrl-C reaches only the panel, which then
      stops TensorBoard in order (`stop()`: SIGTERM to the group, SIGKILL after a timeout).
    - It starts through `tensorboard_child`, which makes it die with this process however
      this process ends (SIGHUP from a closed terminal, SIGKILL): a parent-death signal on
      Linux, a watchdog reading a pipe elsewhere.
    - Its output (a line per request, plugin chatter) goes to `log_path` (default
      `<logdir>/tensorboard.log`); `new_errors()` returns the error lines written since the
      last call, for the panel to show.
    """

    def __init__(self, logdir: str, host: str = DEFAULT_HOST, port: int = 6006,
                 extra_args: Optional[List[str]] = None, log_path: Optional[str] = None, **popen: Any) -> None:
        self.host, self.port = host, port
        self.command = [*tensorboard_command(), "--logdir", os.fspath(logdir),
                        "--host", host, "--port", str(port), *(extra_args or [])]
        self.log_path = log_path or _log_path(os.fspath(logdir))
        self._log_offset = 0
        if os.name == "posix":
            popen.setdefault("start_new_session", True)
        else:  # pragma: no cover - Windows
            # Windows-only constant; mypy checks against the host platform's stubs.
            popen.setdefault("creationflags", subprocess.CREATE_NEW_PROCESS_GROUP)  # type: ignore[attr-defined]
        wrapper = [sys.executable, "-m", "jitflow.webui.tensorboard_child", str(os.getpid()), "--"]
        with open(self.log_path, "ab") as log:
            self._log_offset = log.tell()
            # stdin: the watchdog's pipe (only this process holds its write end).
            self.process = subprocess.Popen(wrapper + self.command, stdin=subprocess.PIPE, stdout=log,
                                            stderr=subprocess.STDOUT, **popen)

    @property
    def url(self) -> str:
        return _url(self.host, self.port)

    @property
    def pid(self) -> int:
        return self.process.pid

    def poll(self) -> Optional[int]:
        return self.process.poll()

    def new_errors(self) -> List[str]:
        """Error lines TensorBoard wrote to its log since the last call (absl E/F lines,
        `ERROR`, and Python tracebacks' last line)."""
        try:
            with open(self.log_path, "rb") as log:
                log.seek(self._log_offset)
                chunk = log.read()
        except OSError:
            return []
        end = chunk.rfind(b"\n") + 1    # whole lines only
        self._log_offset += end
        lines = chunk[:end].decode("utf-8", "replace").splitlines()
        return [line for line in lines if _ERROR_LINE.search(line)]

    def log_tail(self, lines: int = 15) -> str:
        try:
            with open(self.log_path, "rb") as log:
                return "\n".join(log.read().decode("utf-8", "replace").splitlines()[-lines:])
        except OSError:
            return ""

    def stop(self, timeout: float = 10.0) -> Optional[int]:
        """SIGTERM to the whole group, SIGKILL after `timeout`; returns the exit code."""
        proc = self.process
        if proc.stdin is not None:
            try:
                proc.stdin.close()
            except OSError:
                pass
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


# absl's "E1123 12:00:00.000 ..." / "F..." lines, logging's "ERROR:", and exception lines.
_ERROR_LINE = re.compile(r"^(?:[EF]\d{4} |ERROR\b|CRITICAL\b|FATAL\b|\w*(?:Error|Exception): )")
LOG_NAME = "tensorboard.log"


def _log_path(logdir: str) -> str:
    """`<logdir>/tensorboard.log`, or one in the temp directory when the logdir is not writable."""
    try:
        os.makedirs(logdir, exist_ok=True)
        path = os.path.join(logdir, LOG_NAME)
        with open(path, "ab"):
            pass
        return path
    except OSError:
        import tempfile
        fd, path = tempfile.mkstemp(prefix="jitflow-tensorboard-", suffix=".log")
        os.close(fd)
        return path
