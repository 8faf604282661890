"""What happens to event files around the program: time, fork, GC and exit.

`event_file` writes records in the caller's thread; everything that must
happen *without* a caller lives here, for all open event files of the process:

* one daemon thread ("jitflow-summary-flusher") writes records that waited
  `flush_secs`, and closes files whose writer was garbage-collected while
  another thread was using it. One thread for every writer of the process, so
  writers left unclosed cost neither a thread nor (once collected) a descriptor;
* `os.register_at_fork`: a forked child forgets the parent's queued records and
  file (the parent writes those) and opens its own event file on its first write;
* interpreter exit (and the end of a `multiprocessing` child, which exits with
  `os._exit` and so skips `atexit`) closes every open file and, when summaries
  were lost without any caller having seen the error, says so loudly on stderr
  and makes the exit status non-zero.

The files are duck-typed "sinks" (see `event_file._Sink`): this module calls
their `_timed_flush()`, `_close_quietly()`, `_after_fork_in_child()` and reads
`path`, `_lost`, `_error`, `_error_reported`, `_queue`, `_last_write`,
`_flush_secs`, `_closed`, `_inherited`.
"""

from __future__ import annotations

import atexit
import collections
import os
import sys
import threading
import time
from typing import Any

# CPython's own exit status when data could not be flushed at exit.
EXIT_STATUS_LOST_DATA = 120

_live: set = set()  # open sinks (strong references: the flusher and exit need them)
_failed: list = []  # sinks whose writes failed (their errors may still be unreported)
_retired: collections.deque = collections.deque()  # collected while their lock was held
_wake = threading.Event()
_flusher: threading.Thread | None = None
_flusher_lock = threading.Lock()
_mp_hooks_pid: int | None = None
_IDLE_WAKE = 3600.0


def register(sink: Any) -> None:
    """Track an open sink: timed flushes, fork, exit. Starts the flusher if needed."""
    _live.add(sink)
    _ensure_flusher()
    _ensure_multiprocessing_exit_hooks()
    _wake.set()  # its flush_secs may be shorter than the flusher's current sleep


def unregister(sink: Any) -> None:
    _live.discard(sink)


def failed(sink: Any) -> None:
    """Remember a sink whose write failed, for the report at exit."""
    _failed.append(sink)


def retire(sink: Any) -> None:
    """Close a sink whose writer object was garbage-collected.

    Closing takes the sink's lock; when it is held (possibly by the very thread
    in which the collector runs) the flusher closes it instead, so a finalizer
    never waits on a lock.
    """
    if sink._closed:
        return
    if sink._lock.acquire(blocking=False):
        try:
            sink._close_locked()
        except Exception:
            pass  # recorded on the sink; reported at exit
        finally:
            sink._lock.release()
    else:
        _retired.append(sink)
        try:
            _ensure_flusher()
        except RuntimeError:  # interpreter shutdown: no new threads; exit closes it
            return
        _wake.set()


# --- the flusher thread --------------------------------------------------------------

def _ensure_flusher() -> None:
    global _flusher
    if _flusher is not None and _flusher.is_alive():
        return
    with _flusher_lock:
        if _flusher is None or not _flusher.is_alive():
            _flusher = threading.Thread(target=_flusher_loop, daemon=True,
                                        name="jitflow-summary-flusher")
            _flusher.start()


def _flusher_loop() -> None:
    while True:
        _wake.wait(_flush_due_sinks())
        _wake.clear()
        while _retired:
            sink = _retired.popleft()
            try:
                sink._close_quietly()
            except Exception:  # pragma: no cover - recorded on the sink
                pass


def _flush_due_sinks() -> float:
    """Write what waited `flush_secs`; return seconds until the next check."""
    now = time.monotonic()
    wake = now + _IDLE_WAKE
    for sink in list(_live):
        if sink._closed or sink._inherited:
            continue
        due = sink._last_write + sink._flush_secs
        if sink._queue and due <= now:
            sink._timed_flush()
            due = now + sink._flush_secs
        elif not sink._queue:
            # Idle: a record added now must not wait longer than flush_secs.
            due = now + sink._flush_secs
        wake = min(wake, due)
    return max(0.0, wake - time.monotonic())


# --- fork ----------------------------------------------------------------------------

def _after_fork_in_child() -> None:
    global _flusher, _wake, _flusher_lock
    # Parent threads (the flusher among them) do not exist here; their locks may be held.
    _flusher, _wake, _flusher_lock = None, threading.Event(), threading.Lock()
    _retired.clear()
    for sink in list(_live):
        sink._after_fork_in_child()
    # The parent reports its own failures.
    for sink in _failed:
        sink._error_reported = True
    _failed.clear()


if hasattr(os, "register_at_fork"):  # POSIX; elsewhere there is no fork
    os.register_at_fork(after_in_child=_after_fork_in_child)


def _ensure_multiprocessing_exit_hooks() -> None:
    """In a `multiprocessing` child, close files and report losses when it ends.

    Such a child ends with `os._exit`, so `atexit` never runs there; its
    `multiprocessing.util` finalizers do. The registry is cleared when the child
    starts, so the hooks are added on the child's first open (once per process).
    """
    global _mp_hooks_pid
    if _mp_hooks_pid == os.getpid() or "multiprocessing" not in sys.modules:
        return
    import multiprocessing
    import multiprocessing.util

    if multiprocessing.parent_process() is None:
        return
    _mp_hooks_pid = os.getpid()
    multiprocessing.util.Finalize(None, _close_all, exitpriority=100)
    # Lowest priority: runs after every other finalizer, then ends the child with status 1.
    multiprocessing.util.Finalize(None, _exit_status_in_child, exitpriority=-(1 << 30))


def _exit_status_in_child() -> None:
    if _report_lost():
        raise SystemExit(1)


# --- exit ----------------------------------------------------------------------------

def _close_all() -> None:
    for sink in list(_live):
        try:
            sink._close_quietly()
        except Exception:  # pragma: no cover - recorded on the sink
            pass


def _report_lost() -> bool:
    """Print a loud report of failures no caller has seen; True if there were any."""
    unseen = [s for s in _failed if not s._error_reported]
    if not unseen:
        return False
    lost = sum(s._lost for s in unseen)
    lines = [f"jitflow.summary: SUMMARY DATA LOST: {lost} summaries could not be written "
             "and no caller saw the error:"]
    for s in unseen:
        cause = s._error.__cause__ or s._error
        detail = getattr(cause, "strerror", None) or f"{type(cause).__name__}: {cause}"
        lines.append(f"  {s.path}: {detail} ({s._lost} not written)")
        s._error_reported = True
    lines.append("jitflow.summary: call flush() or close() on summary writers to see such "
                 "errors where they happen; the exit status is set to non-zero.")
    try:
        sys.stderr.write("\n".join(lines) + "\n")
        sys.stderr.flush()
    except Exception:  # pragma: no cover - stderr gone: the status still says it
        pass
    return True


class _FailingFlushAtFinalization:
    """sys.stdout wrapper whose flush fails once the interpreter is finalizing.

    Exceptions in atexit handlers never change the exit status; a failed flush
    of sys.stdout during finalization does (CPython then exits with 120, its
    status for "data could not be written at exit"). Writes pass through.
    """

    def __init__(self, stream: Any) -> None:
        self._stream = stream

    def write(self, data: str) -> int:
        return self._stream.write(data)

    def flush(self) -> None:
        self._stream.flush()
        if sys.is_finalizing():
            raise OSError("jitflow.summary: summary data was lost (see the report above)")

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


@atexit.register
def _close_all_at_exit() -> None:
    # Interpreter exit writes what is queued: close every writer left open.
    _close_all()
    if _report_lost():
        out = sys.stdout
        if out is not None and not getattr(out, "closed", False):
            sys.stdout = _FailingFlushAtFinalization(out)
