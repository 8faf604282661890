"""`jf.profiler`: profile without a summary writer, and mark regions such as training steps.

    with jf.profiler.Profile("runs/prof"):
        for step in range(3):
            with jf.profiler.Trace("train", step_num=step):
                train_step(x, y)
"""
from __future__ import annotations

import os
import threading
import time
import warnings
from typing import Any, Optional

from . import capture as _capture
from . import profile as _profile

_logdir: Optional[str] = None


def start(logdir: str | os.PathLike) -> None:
    """Start profiling; `stop()` writes the profile under `logdir/plugins/profile/`."""
    global _logdir
    if _logdir is not None:
        raise RuntimeError(f"profiler: already profiling into {_logdir!r}; call jf.profiler.stop() first")
    if not isinstance(logdir, (str, os.PathLike)) or not isinstance(os.fspath(logdir), str) or not os.fspath(logdir):
        raise TypeError(f"logdir: expected a directory path (str or os.PathLike); got {logdir!r}")
    if _capture.active() is not None:  # starting would silently drop that trace's events
        raise RuntimeError("profiler: a trace started by jf.summary.trace_on() is being recorded; call "
                           "jf.summary.trace_export() or trace_off() before jf.profiler.start()")
    _logdir = os.fspath(logdir)
    _capture.start()


def stop(save: bool = True) -> Optional[str]:
    """Stop profiling and write the profile; returns the run directory (None if not saved)."""
    global _logdir
    if _logdir is None:
        warnings.warn("jf.profiler.stop(): the profiler is not running; nothing was written", stacklevel=2)
        return None
    logdir, _logdir = _logdir, None
    captured = _capture.stop()
    if captured is None:  # jf.summary.trace_export/trace_off ended the shared capture meanwhile
        warnings.warn("jf.profiler.stop(): the recording was already ended by jf.summary.trace_export() or "
                      f"trace_off(); nothing was written to {logdir!r}", stacklevel=2)
        return None
    if save:
        return _profile.write(captured, logdir)
    return None


class Profile:
    """Context manager form of `start(logdir)` / `stop()`."""

    def __init__(self, logdir: str) -> None:
        self.logdir = logdir
        self.run_dir: Optional[str] = None

    def __enter__(self) -> "Profile":
        start(self.logdir)
        return self

    def __exit__(self, *exc: Any) -> None:
        self.run_dir = stop()


class Trace:
    """Marks a region (e.g. one training step) in the profile; free when nothing captures.

    `Trace("train", step_num=3)` appears as an event named `train` enclosing the ops that
    ran inside it, with `step_num` for the Profile plugin's step view.
    """

    def __init__(self, name: str, step_num: Optional[int] = None, **kwargs: Any) -> None:
        if not isinstance(name, str):
            raise TypeError(f"name: expected a str; got {name!r}")
        self.name = name
        self.step_num = step_num
        self.args = kwargs
        self._start = 0

    def __enter__(self) -> "Trace":
        if _capture.active() is not None:
            self._start = time.perf_counter_ns()
        return self

    def __exit__(self, *exc: Any) -> None:
        active = _capture.active()
        if active is not None and self._start:
            active.region(_capture.Region(self.name, self._start, time.perf_counter_ns(),
                                          threading.get_ident(), self.step_num,
                                          {k: v for k, v in self.args.items() if not k.startswith("_")}))


__all__ = ["start", "stop", "Profile", "Trace"]
