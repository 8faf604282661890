"""Tracebacks and warnings that point at the user's code, not at jitflow's insides.

An error raised while a `jf.function` traces or runs passes through a dozen runtime
frames (binding, tracing, AutoGraph, the op registry) before it reaches the user. As
TF's traceback filtering does, `filtered` drops those frames, so the traceback ends at
the user's line and the error message says what went wrong:

    jf.debugging.disable_traceback_filtering()   # full tracebacks, for debugging jitflow itself

`user_stacklevel()` gives `warnings.warn` the stacklevel of the first frame outside
jitflow, so a warning is attributed to the user's line whatever path the call took (the
C direct path adds no frame, the Python one does).

Higher parts of jitflow (tracer, summary, facade) add their directories with
`register_internal_path`; the runtime never imports them.
"""
from __future__ import annotations

import os
import sys
import types
from typing import List, Optional, Tuple

__all__ = ["enable_traceback_filtering", "disable_traceback_filtering", "is_traceback_filtering_enabled",
           "register_internal_path", "filtered", "user_stacklevel"]

# Source directories whose frames are internal, and the pseudo-files of generated code.
_internal: Tuple[str, ...] = (os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep,  # runtime/
                              "<jitflow")
_enabled = os.environ.get("JITFLOW_TRACEBACK_FILTERING", "1").lower() not in ("0", "false", "no")


def register_internal_path(path: str) -> None:
    """Treat frames from files under directory `path` as jitflow-internal."""
    global _internal
    if not isinstance(path, str) or not path:
        raise TypeError(f"path: expected a directory path (str); got {path!r}")
    prefix = os.path.abspath(path).rstrip(os.sep) + os.sep
    if prefix not in _internal:
        _internal = _internal + (prefix,)


def enable_traceback_filtering() -> None:
    """Hide jitflow-internal frames from errors raised through `jf.function` (the default).

    >>> jf.debugging.enable_traceback_filtering()
    >>> jf.debugging.is_traceback_filtering_enabled()
    True
    """
    global _enabled
    _enabled = True


def disable_traceback_filtering() -> None:
    """Show full tracebacks, jitflow's own frames included (for debugging jitflow).

    >>> jf.debugging.disable_traceback_filtering()
    >>> jf.debugging.is_traceback_filtering_enabled()
    False
    >>> jf.debugging.enable_traceback_filtering()
    """
    global _enabled
    _enabled = False


def is_traceback_filtering_enabled() -> bool:
    """Whether errors from `jf.function` hide jitflow's frames (`JITFLOW_TRACEBACK_FILTERING=0` starts off).

    >>> jf.debugging.is_traceback_filtering_enabled()
    True
    """
    return _enabled


def _is_internal(filename: str) -> bool:
    return filename.startswith(_internal)


def filtered(exc: BaseException) -> BaseException:
    """`exc` with the internal frames removed from its traceback (when filtering is on and at
    least one user frame remains; a traceback entirely inside jitflow is left whole)."""
    if not _enabled:
        return exc
    kept: List[types.TracebackType] = []
    tb = exc.__traceback__
    while tb is not None:
        if not _is_internal(tb.tb_frame.f_code.co_filename):
            kept.append(tb)
        tb = tb.tb_next
    if not kept:
        return exc
    chain: Optional[types.TracebackType] = None
    for tb in reversed(kept):
        chain = types.TracebackType(chain, tb.tb_frame, tb.tb_lasti, tb.tb_lineno)
    return exc.with_traceback(chain)


def user_stacklevel(skip: int = 1) -> int:
    """The `stacklevel` for `warnings.warn`, called by the function `skip` frames up from
    here, that names the first frame outside jitflow."""
    frame: Optional[types.FrameType] = sys._getframe(skip)
    level = 1
    while frame is not None and _is_internal(frame.f_code.co_filename):
        frame = frame.f_back
        level += 1
    return level if frame is not None else 1
