"""One event file: naming, the `brain.Event:2` header, and a background writer.

Callers hand in serialized Event payloads. Once `max_queue` of them wait (TF's
meaning of the word: that many summaries may wait before they are written), a
daemon thread drains them, frames them (record_writer), writes them with one
`write()` and flushes to the OS. The queue is bounded (callers block when the
disk falls behind). So a process killed with SIGKILL loses only what was still
queued; every `flush()` waits until the thread has written everything added
before it. Records are written whole, and a torn final record (if the kill lands
mid-write) is simply the end of the file to TensorBoard's readers.

An error in the thread (disk full, a vanished bucket) is raised on the caller's
next call. `close()` flushes; interpreter exit closes every open writer.

A logdir may be an fsspec URL (`memory://`, `s3://`, `gs://`, ...). Object
stores upload in blocks, so there a flushed file shows up in pieces and whole
only at `close()`.
"""

from __future__ import annotations

import atexit
import collections
import itertools
import os
import socket
import sys
import threading
import time
import weakref
from typing import Any, BinaryIO

from jitflow.summary import protos, record_writer

# Bounds on what may wait in the queue before callers block: plenty for bursts,
# small enough to bound memory (and what a killed process can lose).
_QUEUE_RECORDS = 4096
_QUEUE_BYTES = 64 << 20

_file_counter = itertools.count()
_live: "weakref.WeakSet[EventFileWriter]" = weakref.WeakSet()


def _is_url(path: str) -> bool:
    head, sep, _ = path.partition("://")
    return bool(sep) and head.isidentifier()


def filesystem(logdir: str) -> tuple[Any, str]:
    """(fsspec filesystem or None for local paths, path on it)."""
    if not _is_url(logdir):
        return None, logdir
    try:
        import fsspec
    except ImportError:
        raise ValueError(f"logdir {logdir!r} is a URL; writing there needs fsspec "
                         "(pip install fsspec), which is not installed") from None
    return fsspec.core.url_to_fs(logdir)


def join(logdir: str, name: str) -> str:
    """Path of `name` inside `logdir` (URLs always use '/')."""
    return logdir.rstrip("/") + "/" + name if _is_url(logdir) else os.path.join(logdir, name)


def event_file_name(suffix: str = "") -> str:
    """`events.out.tfevents.<10-digit secs>.<host>.<pid>.<n><suffix>`."""
    return "events.out.tfevents.%010d.%s.%s.%s%s" % (
        time.time(), socket.gethostname(), os.getpid(), next(_file_counter), suffix)


def _reraise_as_logdir_error(logdir: str, what: str, e: Exception) -> None:
    detail = e.strerror if isinstance(e, OSError) and e.strerror else str(e)
    msg = f"cannot {what} summary log directory {logdir!r}: {detail}"
    if isinstance(e, OSError) and e.errno is not None:
        raise OSError(e.errno, msg) from e  # OSError(errno, ...) keeps the subclass
    raise OSError(msg) from e


def open_event_file(logdir: str, suffix: str) -> tuple[str, BinaryIO]:
    """Create `logdir` if needed and open a new event file in it for writing."""
    fs, path = filesystem(logdir)
    try:
        if fs is None:
            os.makedirs(path, exist_ok=True)
        else:
            fs.makedirs(path, exist_ok=True)
    except Exception as e:
        _reraise_as_logdir_error(logdir, "create", e)
    file_path = join(logdir, event_file_name(suffix))
    try:
        f = open(file_path, "wb") if fs is None else fs.open(join(path, os.path.basename(file_path)), "wb")
    except Exception as e:
        _reraise_as_logdir_error(logdir, "write an event file in", e)
    return file_path, f


class _Marker:
    """Queued behind records: the writer thread flushes the file, then sets `done`
    (`stop` also ends the thread)."""

    __slots__ = ("done", "stop")

    def __init__(self, stop: bool = False) -> None:
        self.done = threading.Event()
        self.stop = stop


class EventFileWriter:
    """Appends serialized `Event`s to a new event file in `logdir`.

    Callers append to a deque (atomic under the GIL, so the hot path takes no
    lock) and wake the writer thread once `max_queue` records wait; the thread
    drains the deque, frames the records and writes them with one `write()`.
    `flush()` and `close()` queue a marker and wait for the thread to reach it.

    Example:
        >>> import tempfile
        >>> from jitflow.summary import protos
        >>> w = EventFileWriter(tempfile.mkdtemp())
        >>> w.add(protos.scalar_event("loss", 0.5, step=1, wall_time=1.0).SerializeToString())
        >>> w.close()
    """

    def __init__(self, logdir: str, max_queue: int = 10, flush_secs: float = 120.0,
                 filename_suffix: str = "") -> None:
        self.logdir = logdir
        self.path, self._file = open_event_file(logdir, filename_suffix)
        # The header goes out synchronously: the file is valid from the start.
        header = protos.file_version_event(time.time()).SerializeToString()
        self._file.write(record_writer.frame(header))
        self._file.flush()

        self._max_queue = max(1, int(max_queue))
        self._flush_secs = float(flush_secs)
        self._queue: collections.deque = collections.deque()  # records and _Markers
        self._wake = threading.Event()
        self._woken = False  # set by the caller that set _wake, so others skip it
        self._lock = threading.Lock()  # slow paths only: markers, room, close
        self._room = threading.Condition(self._lock)
        self._markers = 0  # _Markers queued and not yet handled
        self._large_bytes = 0  # bytes added by add_large since the last wait
        self._closed = False
        self._unusable = False  # closed or failed: the one flag `add` checks
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, daemon=True,
                                        name=f"jitflow-summary:{os.path.basename(self.path)}")
        self._thread.start()
        _live.add(self)

    # --- caller side ---------------------------------------------------------------

    @property
    def closed(self) -> bool:
        return self._closed

    def add(self, payload: bytes) -> None:
        """Queue one serialized Event (the hot path: no lock, one append)."""
        if self._unusable:
            self._raise_unusable()
        q = self._queue
        q.append(payload)
        n = len(q)
        if n >= self._max_queue:
            if not self._woken:
                self._woken = True
                self._wake.set()
            if n > _QUEUE_RECORDS:
                self._wait_for_room()

    def add_large(self, payload: bytes) -> None:
        """`add` for big records (images, histograms): also bounds queued bytes."""
        self.add(payload)
        with self._lock:
            self._large_bytes += len(payload)
            full = self._large_bytes > _QUEUE_BYTES
            if full:
                self._large_bytes = 0
        if full:
            self.flush()

    def flush(self) -> None:
        """Return once everything added before this call is written to the file
        and the file object is flushed. A no-op after `close()`."""
        if self._closed:
            return
        self._check_error()
        self._wait_for(self._put_marker(_Marker()))
        self._check_error()

    def close(self) -> None:
        """Flush, stop the thread and close the file; later calls are no-ops."""
        with self._lock:
            if self._closed:
                return
            self._closed = self._unusable = True
        if self._thread.is_alive():
            self._put_marker(_Marker(stop=True))
            self._thread.join()
        _live.discard(self)
        try:
            if self._error is None and self._queue:
                # Records that raced with close() (added after its marker).
                self._file.write(record_writer.frame_many(
                    [r for r in self._queue if type(r) is bytes]))
            self._file.close()
        finally:
            self._check_error()

    def _put_marker(self, marker: _Marker) -> _Marker:
        with self._lock:
            self._markers += 1  # counted before it is queued (see _drain)
        self._queue.append(marker)
        self._woken = True
        self._wake.set()
        return marker

    def _wait_for(self, marker: _Marker) -> None:
        while not marker.done.wait(0.05):
            if self._error is not None or not self._thread.is_alive():
                return

    def _wait_for_room(self) -> None:
        # Backpressure: the disk (or the thread) is behind; wait for a drain.
        with self._lock:
            while len(self._queue) > _QUEUE_RECORDS and self._error is None and self._thread.is_alive():
                self._room.wait(0.05)
        self._check_error()

    def _check_error(self) -> None:
        if self._error is not None:
            raise self._error.with_traceback(None)

    def _raise_unusable(self) -> None:
        self._check_error()
        raise RuntimeError(f"summary writer for {self.logdir!r} is closed; "
                           "open a new writer to write more")

    # --- writer thread -------------------------------------------------------------

    def _run(self) -> None:
        try:
            self._loop()
        except BaseException as e:  # surfaced on the caller's next call
            self._error = e
            self._unusable = True
            with self._lock:
                self._room.notify_all()

    def _loop(self) -> None:
        q = self._queue
        next_flush = time.monotonic() + self._flush_secs
        while True:
            now = time.monotonic()
            if now < next_flush:  # woken by max_queue or a marker, or flush_millis passed
                self._wake.wait(next_flush - now)
            if time.monotonic() >= next_flush:
                next_flush = time.monotonic() + self._flush_secs
            self._wake.clear()
            self._woken = False
            items = [q.popleft() for _ in range(len(q))]  # only this thread pops
            if len(q) < _QUEUE_RECORDS:
                with self._lock:
                    self._room.notify_all()
            # A marker is counted before it is queued, so one drained above is seen here.
            if not self._markers:
                self._write(items)
                continue
            records: list = []
            for item in items:
                if type(item) is bytes:
                    records.append(item)
                    continue
                self._write(records)
                records = []
                with self._lock:
                    self._markers -= 1
                item.done.set()
                if item.stop:
                    return
            self._write(records)

    def _write(self, records: list) -> None:
        if records:
            self._file.write(record_writer.frame_many(records))
            self._file.flush()


@atexit.register
def _close_all_at_exit() -> None:
    # Interpreter exit flushes: close every writer the program left open.
    for w in list(_live):
        try:
            w.close()
        except Exception as e:  # never let one broken writer hide the others
            print(f"jitflow.summary: error closing {w.path!r} at exit: {e!r}", file=sys.stderr)
