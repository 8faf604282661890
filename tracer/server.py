"""A profiler server in the training process: TensorBoard's CAPTURE PROFILE talks to it.

    jf.profiler.experimental.server.start(6009)      # in the training script
    # TensorBoard > Profile > CAPTURE PROFILE > "localhost:6009", or
    # jitflow capture grpc://localhost:6009 --logdir runs --duration-ms 2000

It implements `tensorflow.ProfilerService` over gRPC (`grpcio`), the protocol of
TensorFlow's profiler server and of xprof's capture client:

* `Profile(ProfileRequest)`: waits until `opts.start_timestamp_ns` (the client's delay),
  records every thread for `duration_ms` at `opts.host_tracer_level`, writes
  `<repository_root>/<session_id>/<host>.xplane.pb` and `.trace.json.gz` (atomically)
  and answers a `ProfileResponse` (`empty_trace` when nothing ran; the XSpace itself
  when the request sets `emit_xspace`);
* `Terminate(session_id)`: ends the capture in progress now (what was recorded is kept);
* `Monitor`: a one-line summary of the process (captures served, peak memory).

One capture at a time: a second `Profile` while one runs is answered RESOURCE_EXHAUSTED
with when the first one ends. Bad requests (a duration of 0 or over `MAX_DURATION_MS`, no
`repository_root`, an unwritable directory) are answered INVALID_ARGUMENT /
PERMISSION_DENIED / RESOURCE_EXHAUSTED with a message naming the field, before or
instead of recording; the training process and its data are never affected. The server
listens on 127.0.0.1 unless `host=` says otherwise.
"""
from __future__ import annotations

import errno
import os
import re
import resource
import socket
import threading
import time
from concurrent import futures
from typing import Any, Optional

from . import capture as _capture
from . import job as _job
from . import profile as _profile
from . import service_protos as sp

MAX_DURATION_MS = 60 * 60 * 1000  # one hour: a longer trace would not fit in memory anyway

_server: Optional["ProfilerServer"] = None
_server_lock = threading.Lock()


def _file_host(request: Any, port: int) -> str:
    """The profile's file name: the host the client dialled (xprof lists one host per
    file), plus this server's port so that workers sharing a host get a file each."""
    host = request.host_name or (request.opts.override_hostname if request.HasField("opts") else "")
    host = host or socket.gethostname()
    host = host.removeprefix("grpc://")
    if not re.search(r":\d+$", host):
        host = f"{host}:{port}"
    return re.sub(r"[^A-Za-z0-9._-]", "_", host)


class ProfilerServer:
    """A running `tensorflow.ProfilerService`; `stop()` shuts it down."""

    def __init__(self, port: int, host: str = "127.0.0.1", max_workers: int = 4) -> None:
        import grpc
        self._grpc = grpc
        self.host = host
        self._busy = threading.Lock()
        self._current: Optional[dict] = None      # the capture in progress: session, end time, stop event
        self.captures_served = 0
        handlers = {
            name: grpc.unary_unary_rpc_method_handler(getattr(self, f"_{name.lower()}"),
                                                      request_deserializer=req.FromString,
                                                      response_serializer=lambda m: m.SerializeToString())
            for name, (req, _) in sp.METHODS.items()}
        # so_reuseport off: gRPC's default would let a second process bind the same port and
        # receive half of the captures meant for the first.
        self._server = grpc.server(futures.ThreadPoolExecutor(max_workers=max_workers,
                                                              thread_name_prefix="jitflow-profiler-server"),
                                   options=[("grpc.so_reuseport", 0)])
        self._server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(sp.SERVICE, handlers),))
        address = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
        try:
            bound = self._server.add_insecure_port(address)
        except RuntimeError as e:
            bound = 0
            reason = str(e)
        else:
            reason = "the port is in use or not available"
        if not bound:
            raise OSError(errno.EADDRINUSE, f"port: cannot listen on {address} ({reason}); pass a free port")
        self.port = bound
        self._server.start()

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"

    def stop(self, grace: Optional[float] = 1.0) -> None:
        """Stop serving; a capture in progress ends and is written first."""
        current = self._current
        if current is not None:
            current["stop"].set()
        self._server.stop(grace).wait()

    # -- RPCs --------------------------------------------------------------------------
    def _profile(self, request: Any, context: Any) -> Any:
        codes = self._grpc.StatusCode
        duration = int(request.duration_ms)
        if duration <= 0 or duration > MAX_DURATION_MS:
            context.abort(codes.INVALID_ARGUMENT, f"duration_ms: expected 1 to {MAX_DURATION_MS} ms; got {duration}")
        if not request.repository_root and not request.emit_xspace:
            context.abort(codes.INVALID_ARGUMENT, "repository_root: expected the directory to write the profile to "
                                                  "(<logdir>/plugins/profile); got an empty string")
        if not self._busy.acquire(blocking=False):
            current = self._current or {}
            left = max(0, int((current.get("end", time.time()) - time.time()) * 1000))
            context.abort(codes.RESOURCE_EXHAUSTED,
                          f"a capture is already running on this jitflow process (session "
                          f"{current.get('session', '?')!r}, about {left} ms left); try again when it has ended")
        try:
            return self._record(request, context, duration)
        finally:
            self._current = None
            self._busy.release()

    def _record(self, request: Any, context: Any, duration: int) -> Any:
        codes = self._grpc.StatusCode
        session = request.session_id or _profile.run_dir_name()
        if "/" in session or "\\" in session or session in (".", ".."):
            context.abort(codes.INVALID_ARGUMENT, f"session_id: expected a folder name; got {session!r}")
        run_dir = os.path.join(request.repository_root, session) if request.repository_root else None
        if run_dir is not None:
            try:  # before recording: an unwritable directory is reported at once
                os.makedirs(run_dir, exist_ok=True)
                probe = os.path.join(run_dir, f".jitflow-write-test-{os.getpid()}")
                with open(probe, "wb"):
                    pass
                os.remove(probe)
            except OSError as e:
                code = codes.PERMISSION_DENIED if e.errno in (errno.EACCES, errno.EPERM, errno.EROFS) \
                    else codes.INVALID_ARGUMENT
                context.abort(code, f"repository_root: cannot write the profile to {run_dir!r} on the jitflow "
                                    f"process's host ({e.strerror or e})")
        opts = request.opts if request.HasField("opts") else sp.ProfileOptions()
        level = int(opts.host_tracer_level) if opts.version >= 1 or opts.host_tracer_level else 2
        level = min(max(level, 0), 3)
        wait = (int(opts.start_timestamp_ns) - time.time_ns()) / 1e9 if opts.start_timestamp_ns else 0.0
        stop = threading.Event()
        self._current = {"session": session, "end": time.time() + max(0.0, wait) + duration / 1000.0, "stop": stop}
        if 0 < wait and stop.wait(min(wait, MAX_DURATION_MS / 1000.0)):
            return sp.ProfileResponse(empty_trace=True)
        recording = _capture.start(level=level)
        try:
            stop.wait(duration / 1000.0)
        finally:
            captured = _capture.stop(recording)
        assert captured is not None  # stopping the recording this call started returns it
        self.captures_served += 1
        response = sp.ProfileResponse(empty_trace=captured.empty)
        host = _file_host(request, self.port)
        if request.emit_xspace:
            response.xspace = _profile.build_xspace(captured, host).SerializeToString()
        if run_dir is not None:
            try:
                _profile.write_files(captured, run_dir, host)
            except OSError as e:
                code = codes.RESOURCE_EXHAUSTED if e.errno in (errno.ENOSPC, errno.EDQUOT) else codes.INTERNAL
                context.abort(code, f"repository_root: writing the profile to {run_dir!r} failed ({e.strerror or e}); "
                                    "nothing was left half-written")
        return response

    def _terminate(self, request: Any, context: Any) -> Any:
        current = self._current
        if current is not None and (not request.session_id or request.session_id == current["session"]):
            current["stop"].set()
        return sp.TerminateResponse()

    def _monitor(self, request: Any, context: Any) -> Any:
        peak_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        current = self._current
        state = f"capturing session {current['session']!r}" if current else "idle"
        return sp.MonitorResponse(data=f"jitflow profiler server on {self.address} (pid {os.getpid()}): {state}; "
                                       f"{self.captures_served} capture(s) served; peak memory "
                                       f"{peak_kib / 1024:.1f} MiB; {len(_capture.recording())} recording now")


def start(port: int, host: str = "127.0.0.1") -> ProfilerServer:
    """Start the profiler server of this process on `host:port` (TF's
    `tf.profiler.experimental.server.start`). Returns the server; `stop()` ends it.

    >>> server = jf.profiler.experimental.server.start(6009)   # doctest: +SKIP
    """
    global _server
    if isinstance(port, bool) or not isinstance(port, int) or not 0 <= port <= 65535:
        raise ValueError(f"port: expected an int from 1 to 65535 (0 picks a free port); got {port!r}")
    if not isinstance(host, str) or not host:
        raise TypeError(f"host: expected an interface address such as '127.0.0.1'; got {host!r}")
    with _server_lock:
        if _server is not None:
            raise RuntimeError(f"server: a profiler server already runs in this process on {_server.address}; "
                               "call jf.profiler.experimental.server.stop() first")
        _server = ProfilerServer(port, host)
        return _server


def start_worker(logdir: str, base_port: int = 0, host: str = "127.0.0.1") -> ProfilerServer:
    """Start this worker's profiler server on `base_port + rank` (a free port when `base_port`
    is 0) and announce it in `<logdir>/worker_<rank>/profiler_server.json`, so that one
    `jitflow capture --workers-in LOGDIR` profiles every worker of the job (tracer/job.py).

    >>> server = jf.profiler.experimental.server.start_worker("runs", base_port=6009)   # doctest: +SKIP
    """
    if not isinstance(logdir, (str, os.PathLike)) or not os.fspath(logdir):
        raise TypeError(f"logdir: expected the job's log directory; got {logdir!r}")
    if isinstance(base_port, bool) or not isinstance(base_port, int) or not 0 <= base_port <= 65535:
        raise ValueError(f"base_port: expected 0 (a free port per worker) or the port of worker 0; got {base_port!r}")
    rank, size = _job.rank_and_size()
    port = base_port + rank if base_port else 0
    if port > 65535:
        raise ValueError(f"base_port: worker {rank} would listen on {port}, above 65535; got base_port={base_port}")
    srv = start(port, host)
    _job.announce(logdir, srv.port, host, rank, size)
    return srv


def stop() -> None:
    """Stop this process's profiler server (no-op when none runs)."""
    global _server
    with _server_lock:
        server, _server = _server, None
    if server is not None:
        server.stop()


def running() -> Optional[ProfilerServer]:
    return _server


__all__ = ["start", "start_worker", "stop", "running", "ProfilerServer", "MAX_DURATION_MS"]
