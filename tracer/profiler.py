"""`jf.profiler` and `jf.profiler.experimental`: TensorFlow's profiler API for jitflow.

    with jf.profiler.experimental.Profile("runs/prof"):
        for step in range(3):
            with jf.profiler.experimental.Trace("train", step_num=step, _r=1):
                train_step(x, y)

`start(logdir, options)` / `stop()` record every thread of the process; the profile goes
to `logdir/plugins/profile/<timestamp>/<host>.xplane.pb` (+ `.trace.json.gz`), where
TensorBoard's Profile tab finds it. `Trace(name, step_num=i)` marks a step as xprof
expects (see `profile`). `server.start(port)` lets TensorBoard capture a running process
(`jitflow.tracer.server`); `client.trace(...)` is the capture client.
"""
from __future__ import annotations

import os
import warnings
from dataclasses import dataclass
from typing import Any, Optional

from jitflow.runtime.core import instrument

from . import capture as _capture
from . import profile as _profile

_logdir: Optional[str] = None
_session: Optional[_capture.Capture] = None


@dataclass
class ProfilerOptions:
    """TF's `tf.profiler.experimental.ProfilerOptions`, plus jitflow's `exact_ops`.

    host_tracer_level: 0 records nothing but steps, regions and runtime events; 1 to 3
        (default 2) also every function run and op. device_tracer_level / python_tracer_level
        are accepted for TF compatibility (GPU kernels are timed whenever ops are).
    delay_ms: start recording this long after `start()`.
    exact_ops: time every op on its own through the per-op interpreter instead of the
        compiled tier's fused segments (exact, slower; see docs/profiling.md).
    """

    host_tracer_level: int = 2
    python_tracer_level: int = 0
    device_tracer_level: int = 1
    delay_ms: Optional[int] = None
    exact_ops: bool = False

    def __post_init__(self) -> None:
        for name in ("host_tracer_level", "python_tracer_level", "device_tracer_level"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= 3:
                raise ValueError(f"{name}: expected an int from 0 to 3; got {value!r}")
        if self.delay_ms is not None and (isinstance(self.delay_ms, bool) or not isinstance(self.delay_ms, int)
                                          or self.delay_ms < 0):
            raise ValueError(f"delay_ms: expected None or an int >= 0; got {self.delay_ms!r}")


def _check_logdir(logdir: Any) -> str:
    if not isinstance(logdir, (str, os.PathLike)) or not isinstance(os.fspath(logdir), str) or not os.fspath(logdir):
        raise TypeError(f"logdir: expected a directory path (str or os.PathLike); got {logdir!r}")
    return os.fspath(logdir)


def start(logdir: str | os.PathLike, options: Optional[ProfilerOptions] = None) -> None:
    """Start profiling every thread; `stop()` writes the profile under `logdir/plugins/profile/`.

    Runs alongside a `jf.summary.trace_on()` trace or a capture TensorBoard requested:
    each gets every event. Only one `start()` at a time (as in TensorFlow).

    >>> import tempfile, jitflow as jf
    >>> jf.profiler.experimental.start(tempfile.mkdtemp())
    >>> _ = jf.constant(1.0) + 1.0
    >>> jf.profiler.experimental.stop() is not None
    True
    """
    global _logdir, _session
    if _logdir is not None:
        raise RuntimeError(f"profiler: already profiling into {_logdir!r}; call jf.profiler.stop() first")
    if options is not None and not isinstance(options, ProfilerOptions):
        raise TypeError(f"options: expected a jf.profiler.experimental.ProfilerOptions; got {options!r}")
    logdir = _check_logdir(logdir)
    options = options or ProfilerOptions()
    if options.delay_ms:
        import time
        time.sleep(options.delay_ms / 1000.0)
    _logdir = logdir
    _session = _capture.start(exact_ops=options.exact_ops, level=options.host_tracer_level)


def stop(save: bool = True) -> Optional[str]:
    """Stop profiling and write the profile; returns the run directory (None if not saved).

    >>> import tempfile
    >>> jf.profiler.start(tempfile.mkdtemp())
    >>> _ = jf.reduce_sum(jf.ones([4]))
    >>> "plugins/profile" in jf.profiler.stop()
    True
    """
    global _logdir, _session
    if _logdir is None:
        warnings.warn("jf.profiler.stop(): the profiler is not running; nothing was written", stacklevel=2)
        return None
    logdir, _logdir = _logdir, None
    session, _session = _session, None
    captured = _capture.stop(session)
    if captured is None:
        return None
    if save:
        return _profile.write(captured, logdir)
    return None


class Profile:
    """Context manager form of `start(logdir, options)` / `stop()`.

    >>> import tempfile
    >>> with jf.profiler.Profile(tempfile.mkdtemp()) as profile:
    ...     _ = jf.reduce_sum(jf.ones([4]))
    >>> "plugins/profile" in profile.run_dir
    True
    """

    def __init__(self, logdir: str, options: Optional[ProfilerOptions] = None) -> None:
        self.logdir = logdir
        self.options = options
        self.run_dir: Optional[str] = None

    def __enter__(self) -> "Profile":
        start(self.logdir, self.options)
        return self

    def __exit__(self, *exc: Any) -> None:
        self.run_dir = stop()


class Trace(instrument.region):
    """Marks a region (e.g. one training step) in the profile; free when nothing records.

    `Trace("train", step_num=3, _r=1)` (TF's arguments) appears as an event named `train`
    enclosing what ran inside it; with `step_num` it is a step on xprof's Overview Page
    and Input Pipeline Analyzer. Other keyword arguments become the event's stats
    (names starting with `_` are TF's markers and are not shown).

    >>> with jf.profiler.experimental.Trace("train", step_num=0, _r=1):
    ...     pass
    """

    __slots__ = ()

    def __init__(self, name: str, **kwargs: Any) -> None:
        if not isinstance(name, str):
            raise TypeError(f"name: expected a str; got {name!r}")
        step = kwargs.get("step_num")
        if step is not None and (isinstance(step, bool) or not isinstance(step, int)):
            try:
                kwargs["step_num"] = int(step)
            except (TypeError, ValueError):
                raise TypeError(f"step_num: expected an int; got {step!r}") from None
        super().__init__(name, **kwargs)


__all__ = ["start", "stop", "Profile", "Trace", "ProfilerOptions"]
