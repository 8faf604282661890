"""The capture client: ask running jitflow (or TensorFlow) processes for a profile.

    jf.profiler.experimental.client.trace("grpc://localhost:6009", "runs", 2000)
    jitflow capture grpc://localhost:6009 --logdir runs --duration-ms 2000

What TensorBoard's CAPTURE PROFILE button does through xprof's client: one
`tensorflow.ProfilerService/Profile` call per worker, all with the same session id, so
the workers' `<host>.xplane.pb` files land in one `<logdir>/plugins/profile/<session>/`
folder and TensorBoard lists them as the hosts of one run.
"""
from __future__ import annotations

import datetime
import os
import threading
import time
from typing import Any, List, Optional

from . import profile as _profile
from . import service_protos as sp
from .server import MAX_DURATION_MS

_RETRIED = ("UNAVAILABLE",)


class CaptureError(RuntimeError):
    """A worker could not be profiled; the message says which and why."""


def _addresses(service_addr: Any, worker_list: Any) -> List[str]:
    if not isinstance(service_addr, str) or not service_addr.strip():
        raise ValueError(f"service_addr: expected 'grpc://host:port' (or 'host:port'); got {service_addr!r}")
    if worker_list is not None and not isinstance(worker_list, str):
        raise TypeError(f"worker_list: expected a comma-separated str of host:port; got {worker_list!r}")
    raw = worker_list if worker_list and worker_list.strip() else service_addr
    out = []
    for part in raw.split(","):
        addr = part.strip().removeprefix("grpc://").rstrip("/")
        if not addr:
            continue
        host, sep, port = addr.rpartition(":")
        if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
            raise ValueError(f"service_addr: expected host:port with a port from 1 to 65535; got {part.strip()!r}")
        out.append(addr)
    if not out:
        raise ValueError(f"service_addr: no address in {raw!r}")
    return out


def _check_logdir(logdir: Any) -> str:
    if not isinstance(logdir, (str, os.PathLike)) or not isinstance(os.fspath(logdir), str) or not os.fspath(logdir):
        raise TypeError(f"logdir: expected a directory path (str or os.PathLike); got {logdir!r}")
    root = os.path.abspath(os.path.join(os.fspath(logdir), "plugins", "profile"))
    try:
        os.makedirs(root, exist_ok=True)
        probe = os.path.join(root, f".jitflow-write-test-{os.getpid()}")
        with open(probe, "wb"):
            pass
        os.remove(probe)
    except OSError as e:
        raise OSError(e.errno, f"logdir: cannot write profiles under {root!r} ({e.strerror or e}); "
                               "pass a writable directory") from e
    return root


def _call(addr: str, request: Any, timeout_s: float, attempts: int) -> Any:
    import grpc
    last: Optional[BaseException] = None
    for attempt in range(attempts):
        with grpc.insecure_channel(addr) as channel:
            stub = channel.unary_unary(sp.method_path("Profile"), request_serializer=lambda m: m.SerializeToString(),
                                       response_deserializer=sp.ProfileResponse.FromString)
            try:
                return stub(request, timeout=timeout_s, wait_for_ready=False)
            except grpc.RpcError as e:
                last = e
                if e.code().name not in _RETRIED or attempt + 1 == attempts:
                    break
                time.sleep(min(1.0, 0.2 * (attempt + 1)))
    code = last.code().name if hasattr(last, "code") else "UNKNOWN"  # type: ignore[union-attr]  # hasattr checked
    details = last.details() if hasattr(last, "details") else str(last)  # type: ignore[union-attr]  # hasattr checked
    if code == "UNAVAILABLE":
        raise CaptureError(f"service_addr: no profiler server answers at {addr} after {attempts} attempt(s) "
                           f"({details}); start one in the training process with "
                           "jf.profiler.experimental.server.start(port)")
    if code == "DEADLINE_EXCEEDED":
        raise CaptureError(f"service_addr: {addr} did not finish the capture within {timeout_s:.0f} s")
    raise CaptureError(f"{addr}: {code}: {details}")


def trace(service_addr: str, logdir: str, duration_ms: int, worker_list: str = "",
          num_tracing_attempts: int = 3, options: Any = None) -> str:
    """Capture `duration_ms` of profile from the server(s) at `service_addr` (TF's
    `tf.profiler.experimental.client.trace`); returns the session directory.

    `service_addr` / `worker_list`: `grpc://host:port`, comma-separated for several
    workers (all profiled at once, one `.xplane.pb` each in one session). `options`: a
    `jf.profiler.experimental.ProfilerOptions` (host tracer level, delay_ms).

    >>> jf.profiler.experimental.client.trace("grpc://localhost:6009", "runs", 2000)  # doctest: +SKIP
    """
    if isinstance(duration_ms, bool) or not isinstance(duration_ms, int) or not 0 < duration_ms <= MAX_DURATION_MS:
        raise ValueError(f"duration_ms: expected an int from 1 to {MAX_DURATION_MS}; got {duration_ms!r}")
    if isinstance(num_tracing_attempts, bool) or not isinstance(num_tracing_attempts, int) or num_tracing_attempts < 1:
        raise ValueError(f"num_tracing_attempts: expected an int >= 1; got {num_tracing_attempts!r}")
    addresses = _addresses(service_addr, worker_list)
    root = _check_logdir(logdir)
    session = _profile.run_dir_name(datetime.datetime.now())
    level = getattr(options, "host_tracer_level", 2)
    delay_ms = getattr(options, "delay_ms", None) or 0
    start_ns = time.time_ns() + int(delay_ms) * 1_000_000 if delay_ms else 0
    results: dict = {}

    def one(addr: str) -> None:
        request = sp.ProfileRequest(
            duration_ms=duration_ms, max_events=1_000_000, repository_root=root, session_id=session,
            host_name=addr, tools=["trace_viewer", "overview_page", "input_pipeline", "tensorflow_stats", "xplane.pb"],
            opts=sp.ProfileOptions(version=1, host_tracer_level=level,
                                   device_tracer_level=getattr(options, "device_tracer_level", 1),
                                   python_tracer_level=getattr(options, "python_tracer_level", 0),
                                   start_timestamp_ns=start_ns, duration_ms=duration_ms))
        try:
            results[addr] = _call(addr, request, duration_ms / 1000.0 + delay_ms / 1000.0 + 60.0,
                                  num_tracing_attempts)
        except BaseException as e:  # reported below, after every worker has answered
            results[addr] = e

    threads = [threading.Thread(target=one, args=(a,), name=f"jitflow-capture-{a}") for a in addresses]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    errors = [r for r in results.values() if isinstance(r, BaseException)]
    if errors:
        if len(errors) == 1 and len(addresses) == 1:
            raise errors[0]
        raise CaptureError("; ".join(str(e) for e in errors))
    return os.path.join(root, session)


def monitor(service_addr: str, duration_ms: int = 1000, level: int = 1) -> str:
    """A one-line status of the profiler server at `service_addr` (TF's `client.monitor`)."""
    import grpc
    (addr,) = _addresses(service_addr, None)[:1]
    with grpc.insecure_channel(addr) as channel:
        stub = channel.unary_unary(sp.method_path("Monitor"), request_serializer=lambda m: m.SerializeToString(),
                                   response_deserializer=sp.MonitorResponse.FromString)
        try:
            return stub(sp.MonitorRequest(duration_ms=duration_ms, monitoring_level=level), timeout=10).data
        except grpc.RpcError as e:
            raise CaptureError(f"service_addr: {addr}: {e.code().name}: {e.details()}") from None


__all__ = ["trace", "monitor", "CaptureError"]
