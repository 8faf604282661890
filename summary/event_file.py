"""One event file: naming, the `brain.Event:2` header, queueing and writing.

Callers hand in serialized Event payloads. They wait in memory until more than
`max_queue` of them wait; then the caller that added the last one frames them
all (record_writer) and hands them to the OS with one `write()` (TF's own
SummaryFileWriter does the same). So a process killed with SIGKILL loses at most
`max_queue` summaries per writing thread, and `flush()` returns once everything
added before it is in the OS. Records are written whole; a torn final record
(if the kill lands mid-write) is simply the end of the file to TensorBoard's
readers. Records that waited `flush_secs` are written by one process-wide
thread (see `lifecycle`, which also handles fork, GC and interpreter exit).

File names are unique within a process (a counter) and across processes (host,
PID), and an existing file is never opened for writing: a name that is taken
moves on to the next counter value.

A write error (disk full, a vanished bucket) fails the writer: it is raised to
the caller that triggered the write, and again on every later call, on
`flush()` and on `close()`; an error no caller saw is reported at exit.

A logdir may be an fsspec URL (`memory://`, `s3://`, `gs://`, ...). Object
stores upload in blocks, so there a flushed file shows up in pieces and whole
only at `close()`.
"""

from __future__ import annotations

import collections
import io
import itertools
import os
import socket
import threading
import time
import weakref
from typing import Any, BinaryIO, Sequence, cast

from jitflow.summary import lifecycle, protos, record_writer

# Big records (images, histograms) are written once this many bytes wait, even
# before `max_queue` of them do: bounds memory when max_queue is large.
_QUEUE_BYTES = 64 << 20
_NAME_TRIES = 1000

_file_counter = itertools.count()
_inherited_files: list = []  # a forked child's copies of the parent's buffered files


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
    """`events.out.tfevents.<10-digit secs>.<host>.<pid>.<n><suffix>`; `n` counts
    the files this process named, so two calls never give the same name."""
    return "events.out.tfevents.%010d.%s.%s.%s%s" % (
        time.time(), socket.gethostname(), os.getpid(), next(_file_counter), suffix)


def _reraise_as_logdir_error(logdir: str, what: str, e: Exception) -> None:
    detail = e.strerror if isinstance(e, OSError) and e.strerror else str(e)
    msg = f"cannot {what} summary log directory {logdir!r}: {detail}"
    if isinstance(e, OSError) and e.errno is not None:
        raise OSError(e.errno, msg) from e  # OSError(errno, ...) keeps the subclass
    raise OSError(msg) from e


def _open_new(fs: Any, logdir: str, suffix: str) -> tuple[str, BinaryIO]:
    # Exclusive creation: another writer's file (same host, PID and second after
    # a restart in a container, say) is never truncated; its name is skipped.
    for _ in range(_NAME_TRIES):
        file_path = join(logdir, event_file_name(suffix))
        if fs is None:
            try:
                return file_path, open(file_path, "xb", buffering=0)  # no buffer: see _Sink
            except FileExistsError:
                continue
        remote = fs._strip_protocol(file_path)
        if not fs.exists(remote):  # object stores have no O_EXCL; check, then create
            return file_path, fs.open(remote, "wb")
    raise FileExistsError(f"no free event file name in {logdir!r} after {_NAME_TRIES} tries")


def open_event_file(logdir: str, suffix: str) -> tuple[str, BinaryIO]:
    """Create `logdir` if needed and create a new event file in it (never an
    existing one) with the file-version header already written."""
    fs, path = filesystem(logdir)
    try:
        if fs is None:
            os.makedirs(path, exist_ok=True)
        else:
            fs.makedirs(path, exist_ok=True)
    except Exception as e:
        _reraise_as_logdir_error(logdir, "create", e)
    try:
        file_path, f = _open_new(fs, logdir, suffix)
    except Exception as e:
        _reraise_as_logdir_error(logdir, "write an event file in", e)
    try:
        # The header goes out first: the file is valid from the start.
        _write_all(f, record_writer.frame(protos.file_version_event(time.time()).SerializeToString()))
        f.flush()
    except Exception as e:
        f.close()
        _reraise_as_logdir_error(logdir, "write an event file in", e)
    return file_path, f


def _write_all(f: BinaryIO, data: bytes, progress: list | None = None) -> None:
    """Write all of `data` (unbuffered files may take part of it per call).

    `progress[0]` counts bytes written. An interrupt (KeyboardInterrupt) after
    part of the batch is written does not stop it: a torn record in mid-file
    would end the file for TensorBoard's readers; it is re-raised once done.
    """
    view, interrupt = memoryview(data), None
    if progress is None:
        progress = [0]
    while progress[0] < len(view):
        try:
            n = f.write(view[progress[0]:])
        except Exception:
            raise
        except BaseException as e:
            if progress[0] == 0:
                raise
            interrupt = e
            continue
        progress[0] += len(view) - progress[0] if n is None else n
    if interrupt is not None:
        raise interrupt


def _abandon(f: BinaryIO) -> None:
    """Drop a forked child's copy of the parent's file without writing to it."""
    if isinstance(f, io.FileIO):
        f.close()  # unbuffered: closing the child's descriptor writes nothing
        return
    try:
        cast(Any, f).closed = True  # fsspec files upload on close/GC unless marked closed
    except Exception:
        pass
    _inherited_files.append(f)  # never collected in the child


class _Sink:
    """The state of one event file, shared by its writer and `lifecycle`.

    Kept apart from `EventFileWriter` so that the file can be closed when the
    writer object is garbage-collected (a finalizer must not hold the writer).
    """

    _file: BinaryIO | None  # None once closed, and in a forked child until it writes

    def __init__(self, logdir: str, max_queue: int, flush_secs: float, suffix: str) -> None:
        self.logdir, self._suffix = logdir, suffix
        self._max_queue = max(0, int(max_queue))
        self._flush_secs = float(flush_secs)
        self._queue: collections.deque = collections.deque()
        self._lock = threading.Lock()  # held while writing or closing
        self._closed = False
        self._inherited = False  # forked child; opens its own file on the first write
        self._unusable = False  # closed, failed or inherited: the one flag `add` checks
        self._error: BaseException | None = None
        self._error_reported = False
        self._lost = 0  # summaries not written because of _error
        self._large_bytes = 0
        self.path, self._file = open_event_file(logdir, suffix)
        self._last_write = time.monotonic()
        lifecycle.register(self)

    def __reduce__(self) -> Any:
        raise TypeError(f"a summary writer ({self.path!r}) cannot be sent to another process; "
                        "create a writer in that process (or fork: children open their own file)")

    # --- caller side ---------------------------------------------------------------------

    def add(self, payload: bytes) -> None:
        """Queue one serialized Event; more than `max_queue` waiting are written now."""
        if self._unusable:
            self._slow_path()
        q = self._queue
        q.append(payload)
        if len(q) > self._max_queue or self._unusable:  # (or closed by another thread meanwhile)
            self._drain(payload)

    def add_large(self, payload: bytes) -> None:
        """`add` for big records (images, histograms): also bounds queued bytes."""
        self.add(payload)
        self._large_bytes += len(payload)
        if self._large_bytes > _QUEUE_BYTES:
            self._drain()

    def flush(self) -> None:
        """Return once everything added before this call is handed to the OS (and
        the file object flushed). A no-op after `close()`."""
        if self._closed:
            return
        with self._lock:
            if self._file is None and self._error is None:
                return  # closed meanwhile, or a forked child that has not written yet
            try:
                self._drain_locked()  # raises if the writer failed: the file is open below
                assert self._file is not None
                self._write_guarded(self._file.flush)
            except BaseException:
                self._mark_seen()
                raise

    def close(self) -> None:
        """Flush and close the file; later calls are no-ops. Raises the writer's
        error (once) if its writes failed."""
        with self._lock:
            if self._closed:
                return
            self._close_locked()
        if self._error is not None:
            self._raise_error()

    def _slow_path(self) -> None:
        with self._lock:
            if self._inherited and not self._closed and self._error is None:
                self._reopen_locked()
                return
        if self._error is not None:
            self._raise_error()
        raise RuntimeError(f"summary writer for {self.logdir!r} is closed; "
                           "open a new writer to write more")

    def _raise_error(self) -> None:
        assert self._error is not None  # called only once the writer has failed
        self._error_reported = True
        raise self._error.with_traceback(None)

    def _mark_seen(self) -> None:
        # An error that reached a caller needs no report at exit.
        if self._error is not None:
            self._error_reported = True

    def _drain(self, payload: bytes | None = None) -> None:
        with self._lock:
            if self._closed and self._error is None:
                self._withdraw(payload)
                return
            try:
                self._drain_locked()
            except BaseException:
                self._mark_seen()
                raise

    # --- under the lock ------------------------------------------------------------------

    def _withdraw(self, payload: bytes | None) -> None:
        # An add that raced with close(): close() wrote its record, or the
        # record is still queued and the add raises. Each racing add takes out
        # only its own, so no other thread's call is answered wrongly.
        try:
            self._queue.remove(payload)
        except ValueError:
            return
        self._lost += 1
        raise RuntimeError(f"summary writer for {self.logdir!r} was closed while this "
                           "summary was being added; it was not written")

    def _drain_locked(self) -> None:
        q = self._queue
        n = len(q)
        pop = q.popleft  # only drains pop, under the lock; appends may go on meanwhile
        items = [pop() for _ in range(n)]
        self._large_bytes = 0
        if self._error is not None:
            self._lost += n
            self._raise_error()
        if not n:
            return
        # Records wait only in an open writer: close drains first, a forked child reopens.
        assert self._file is not None
        progress = [0]
        try:
            data = record_writer.frame_many(items)
            written = self._file.write(data)  # unbuffered: usually all of it at once
            if written is not None and written < len(data):
                progress[0] = written
                _write_all(self._file, data, progress)
        except Exception as e:
            self._fail(e, items, progress[0])
        except BaseException:
            if progress[0] == 0:  # interrupted before anything was written: keep them
                q.extendleft(reversed(items))
            raise
        self._last_write = time.monotonic()

    def _write_guarded(self, write: Any) -> None:
        """Run a write (a flush); an I/O error fails the writer."""
        try:
            write()
        except Exception as e:
            self._fail(e)

    def _fail(self, e: Exception, items: Sequence[bytes] = (), nbytes: int = 0) -> None:
        """Fail the writer with I/O error `e` and raise it. The records of the
        batch not written whole (`nbytes` of it were) count as lost."""
        self._error = _named_error(self.path, e)
        self._lost += len(items) - _whole_records(items, nbytes)
        self._unusable = True
        lifecycle.failed(self)
        raise self._error.with_traceback(None) from None

    def _close_locked(self) -> None:
        if self._closed:
            return
        self._unusable = True  # adds from now on wait for the lock, then see "closed"
        try:
            if self._error is None and self._file is not None:
                self._drain_locked()
                self._write_guarded(self._file.flush)
        except Exception:
            pass  # recorded on the sink: close() raises it, exit reports it
        finally:
            self._closed = True
            if self._error is not None:
                self._lost += len(self._queue)
                self._queue.clear()
            # Otherwise what is left was added while closing: each such `add`
            # withdraws its own next and raises (see _withdraw).
            lifecycle.unregister(self)
            if self._file is not None:
                f, self._file = self._file, None
                try:
                    f.close()
                except Exception as e:  # e.g. an object store's final upload
                    if self._error is None:
                        self._error = _named_error(self.path, e)
                        lifecycle.failed(self)

    def _reopen_locked(self) -> None:
        self.path, self._file = open_event_file(self.logdir, self._suffix)
        self._inherited = self._unusable = False
        self._last_write = time.monotonic()
        lifecycle.register(self)

    # --- called by lifecycle ---------------------------------------------------------------

    def _timed_flush(self) -> None:
        with self._lock:
            if self._closed or self._inherited or self._error is not None:
                return
            assert self._file is not None  # open: not closed, failed or inherited
            try:
                self._drain_locked()
                self._write_guarded(self._file.flush)
            except Exception:
                pass  # the writer failed; its next call (or exit) reports it

    def _close_quietly(self) -> None:
        with self._lock:
            self._close_locked()

    def _after_fork_in_child(self) -> None:
        # The parent's queued records and file are the parent's to write.
        self._lock = threading.Lock()
        self._queue = collections.deque()
        if self._file is not None:
            _abandon(self._file)
            self._file = None
        if self._error is not None:
            self._error_reported = True  # the parent reports it
        if not self._closed:
            self._inherited = self._unusable = True
        lifecycle.unregister(self)


def _whole_records(payloads: Sequence[bytes], nbytes: int) -> int:
    """How many framed payloads fit whole in the first `nbytes` written."""
    count = 0
    for p in payloads:
        nbytes -= len(p) + 16  # 12 header + 4 CRC bytes per record
        if nbytes < 0:
            break
        count += 1
    return count


def _named_error(path: str, e: Exception) -> Exception:
    """The write error `e`, saying which file failed and what that means."""
    msg = (f"writing summary event file {path!r} failed, so the writer stopped (summaries "
           "added to it are not written): ")
    if isinstance(e, OSError) and e.errno is not None:
        err = OSError(e.errno, msg + (e.strerror or str(e)))  # keeps the subclass
    else:
        err = OSError(msg + f"{type(e).__name__}: {e}")
    err.__cause__ = e
    return err


class EventFileWriter:
    """Appends serialized `Event`s to a new event file in `logdir`.

    `add` appends to a deque (atomic under the GIL: the hot path takes no lock);
    once more than `max_queue` records wait, that call writes them all with one
    `write()`. Records that waited `flush_secs` are written by a process-wide
    thread. A writer that is garbage-collected without `close()` is closed then
    (its queued records written), so dropped writers leak neither threads nor
    file descriptors. In a forked child the first write opens a new event file
    (TensorBoard reads every event file of a run); the parent's queued records
    stay with the parent.

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
        self._sink = sink = _Sink(logdir, max_queue, flush_secs, filename_suffix)
        # The hot paths are the sink's own bound methods: no extra call per record.
        self.add, self.add_large = sink.add, sink.add_large
        weakref.finalize(self, lifecycle.retire, sink).atexit = False

    def __reduce__(self) -> Any:
        return self._sink.__reduce__()

    @property
    def path(self) -> str:
        """The event file being written (a forked child's own once it wrote)."""
        return self._sink.path

    @property
    def closed(self) -> bool:
        return self._sink._closed

    def flush(self) -> None:
        """Return once everything added before this call is in the OS (it survives
        the process being killed). Raises the writer's error if a write failed."""
        self._sink.flush()

    def close(self) -> None:
        """Flush and close the file; later calls are no-ops."""
        self._sink.close()
