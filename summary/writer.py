"""TF2-style summary API: `create_file_writer`, `as_default`, `scalar`, ...

The front end only validates and delegates: `protos` builds messages, `wire`
hand-encodes the scalar hot path, `event_file` writes. Which writer and step a
call uses is decided in `context` (thread-local blocks, process-wide defaults).

Example:
    >>> import tempfile, jitflow.summary as s
    >>> w = s.create_file_writer(tempfile.mkdtemp())
    >>> with w.as_default(step=0):
    ...     s.scalar("loss", 0.25)
    <jf.Tensor: shape=(), dtype=bool, numpy=True>
    >>> s.scalar("loss", 0.25, step=1)  # no default writer outside the block
    <jf.Tensor: shape=(), dtype=bool, numpy=False>
"""

from __future__ import annotations

import contextlib
import os
from time import time as _now
from typing import Any, Iterator

from google.protobuf.message import DecodeError
from tensorboard.compat.proto import summary_pb2

import numpy as np

from jitflow.runtime.core.context import _state as _rt_state
from jitflow.runtime.core.context import name_scope
from jitflow.runtime.core import dtypes as _dtypes
from jitflow.runtime.core.tensor import EagerTensor, SymbolicTensor, Tensor
from jitflow.summary import bucketing, context, imaging, in_graph, protos, wire
from jitflow.summary.event_file import EventFileWriter
from jitflow.summary.graphs import _graph_def_of
from jitflow.summary.plugins import media
from jitflow.summary.png import encode_png
from jitflow.summary.values import (as_float, as_numpy, as_step, as_strings, check_default_step,
                                    check_int_fits_float,
                                    clean_tag, describe)

_tls = context.tls
_UNSET = context._UNSET
_fast_scalar_event = wire.fast_scalar_event

# name -> wire.scalar_entry(...), and (name, description) -> the same for
# described scalars; bounded so that per-step tag names cannot grow them forever.
_scalar_entries: dict[Any, tuple] = {}
_described_entries: dict[Any, tuple] = {}
_CACHE_LIMIT = 10000


def _new_scalar_entry(name: Any, description: Any) -> tuple:
    tag = clean_tag(name)
    _check_description(description)
    md = protos.plugin_metadata(protos.SCALARS, description).SerializeToString()
    entry = wire.scalar_entry(wire.scalar_parts(tag, md))
    cache, key = (_scalar_entries, name) if description is None else (_described_entries, (name, description))
    if len(cache) >= _CACHE_LIMIT:
        cache.clear()
    cache[key] = entry
    return entry


def _scoped(name: Any) -> Any:
    """TF2 prefixes summary tags with the active name scope (`train/loss`)."""
    scope = _rt_state.graph.scope if _rt_state.graph is not None else _rt_state.eager_scope
    return scope + name if scope and isinstance(name, str) else name


def _target(name: Any, step: Any, description: Any) -> tuple[SummaryFileWriter, int, str] | None:
    """(writer, step, cleaned scoped tag) for an eager summary call, or None: don't write."""
    target = _resolve(step)
    if target is None:
        return None
    _check_description(description)
    return target[0], target[1], clean_tag(_scoped(name))


def _no_step_error() -> ValueError:
    return ValueError("step: no step given and no default step set; pass step=... or call "
                      "jitflow.summary.experimental.set_step(step) (or as_default(step=...))")


def _check_description(description: Any) -> None:
    if description is not None and not isinstance(description, str):
        raise TypeError(f"description: expected a str or None, got {describe(description)}")


class SummaryFileWriter:
    """Writes summaries to a new event file in `logdir`; made by `create_file_writer`.

    Example:
        >>> import tempfile, jitflow.summary as s
        >>> w = s.create_file_writer(tempfile.mkdtemp())
        >>> with w.as_default():
        ...     s.scalar("acc", 0.9, step=3)
        <jf.Tensor: shape=(), dtype=bool, numpy=True>
        >>> w.close()
    """

    def __init__(self, logdir: str | os.PathLike, max_queue: int = 10, flush_millis: float = 120000,
                 filename_suffix: str = ".v2", name: str | None = None) -> None:
        if not isinstance(logdir, (str, os.PathLike)):
            raise TypeError(f"logdir: expected a path (str or os.PathLike), got {describe(logdir)}")
        logdir = os.fspath(logdir)
        if isinstance(max_queue, bool) or not isinstance(max_queue, int) or max_queue < 0:
            raise ValueError(f"max_queue: expected an int >= 0, got {describe(max_queue)}")
        if (isinstance(flush_millis, bool) or not isinstance(flush_millis, (int, float))
                or not flush_millis > 0):
            raise ValueError(f"flush_millis: expected a number > 0, got {describe(flush_millis)}")
        if not isinstance(filename_suffix, str):
            raise TypeError(f"filename_suffix: expected a str, got {describe(filename_suffix)}")
        self.name = name
        self._args = (logdir, max_queue, flush_millis / 1000.0, filename_suffix)
        self._open()

    def _open(self) -> None:
        self._events = EventFileWriter(*self._args)
        self._add = self._events.add
        self._opened_at = _now()  # what came before a writer is not attributed to it (input_pipeline)

    def __repr__(self) -> str:
        state = "closed" if self._events.closed else "open"
        return f"<SummaryFileWriter {self._events.path!r} ({state})>"

    @property
    def logdir(self) -> str:
        return self._args[0]

    @property
    def path(self) -> str:
        """The event file this writer writes."""
        return self._events.path

    def _check_open(self) -> None:
        if self._events.closed:
            raise RuntimeError(f"summary writer {self._events.path!r} is already closed")

    def as_default(self, step: Any = None) -> contextlib.AbstractContextManager:
        """Make this the default writer (and `step` the default step) for summary
        calls in this thread inside the block; flushes on normal exit, as TF does."""
        self._check_open()
        if step is not None:
            check_default_step(step)  # fail now, not at the first summary call
        return self._scope(step)

    @contextlib.contextmanager
    def _scope(self, step: Any) -> Iterator["SummaryFileWriter"]:
        with context.writer_scope(self, step):
            yield self
            self.flush()

    def set_as_default(self, step: Any = None) -> None:
        """Make this the process-wide default writer (threads' own `as_default`
        blocks still win), and `step`, when given, the process-wide step."""
        self._check_open()
        if step is not None:
            as_step(step)
        context.set_global_writer(self, step)

    def init(self) -> None:
        """Open the writer again after `close()` (a new event file); no-op if open."""
        if self._events.closed:
            self._open()

    def flush(self) -> None:
        """Block until everything written so far is in the event file (handed to
        the OS: it survives the process being killed). Raises the writer's
        error if a write failed."""
        if not self._events.closed:
            context.notify_flush(self)   # e.g. up-to-date call counts of traced functions
        self._events.flush()

    def close(self) -> None:
        """Flush and close the event file. Writing afterwards raises RuntimeError;
        a failed write is raised here (once) if no earlier call raised it."""
        if not self._events.closed:
            context.notify_flush(self)
        self._events.close()

    # --- writing (called by the module functions) ----------------------------------------

    def _scalar(self, name: Any, data: Any, step: Any, description: Any) -> bool:
        # The hot path: a cache hit, two type checks and one struct.pack.
        try:
            entry = (_scalar_entries[name] if description is None
                     else _described_entries[(name, description)])
        except (KeyError, TypeError):
            entry = _new_scalar_entry(name, description)
        t = type(data)
        if t is not float and t is not int:
            data = as_float(data, "data")
        if type(step) is not int or not 0 <= step < 2097152:
            step = as_step(step)  # converts, or checks the int64 range
        try:
            self._add(_fast_scalar_event(entry, data, step, _now()))
        except OverflowError:  # a Python int beyond float64 (10**400): say so, write nothing
            check_int_fits_float(data, "data")
            raise
        return True

    def _write_event(self, event: Any) -> bool:
        self._events.add_large(event.SerializeToString())
        return True


class NoopSummaryWriter:
    """A writer that writes nothing (`create_noop_writer`). As in TF, entering
    `as_default()` leaves the current default writer in place.

    >>> w = jf.summary.create_noop_writer()
    >>> with w.as_default():
    ...     jf.summary.scalar('loss', 1.0, step=0)
    <jf.Tensor: shape=(), dtype=bool, numpy=False>
    """

    def as_default(self, step: Any = None) -> contextlib.AbstractContextManager:
        return contextlib.nullcontext(self)

    def set_as_default(self, step: Any = None) -> None:
        pass

    def init(self) -> None:
        pass

    def flush(self) -> None:
        pass

    def close(self) -> None:
        pass


def create_file_writer(logdir: str | os.PathLike | None, max_queue: int | None = 10,
                       flush_millis: float | None = 120000, filename_suffix: str | None = ".v2",
                       name: str | None = None, experimental_trackable: bool = False,
                       experimental_mesh: Any = None) -> SummaryFileWriter | NoopSummaryWriter:
    """A summary writer for `logdir` (created if missing; local path or fsspec URL).

    At most `max_queue` summaries wait in memory (so at most that many per
    writing thread are lost if the process is killed); the call that adds one
    more writes them all, as TF does. Waiting ones are written within
    `flush_millis` by a thread all writers share. A writer that is garbage-
    collected unclosed is closed; in a forked child it writes to a new event
    file of its own. Write errors are raised on the next call, by `flush()` and
    `close()`, and reported at exit (see docs/guarantees.md). As in TF,
    `logdir=None` gives a no-op writer.
    As in TF, `logdir=None` gives a no-op writer and None for the other
    arguments means their defaults. `experimental_trackable` is accepted
    (jitflow writers hold no graph resource to track); `experimental_mesh`
    (DTensor) must be None.

    Example:
        >>> import tempfile, jitflow.summary as s
        >>> w = s.create_file_writer(tempfile.mkdtemp())
        >>> w.set_as_default(step=0)
        >>> s.scalar("loss", 1.0)
        <jf.Tensor: shape=(), dtype=bool, numpy=True>
        >>> w.close()
    """
    if experimental_mesh is not None:
        raise ValueError("experimental_mesh: jitflow has no DTensor meshes; expected None, "
                         f"got {describe(experimental_mesh)}")
    if not isinstance(experimental_trackable, bool):
        raise TypeError(f"experimental_trackable: expected a bool, got {describe(experimental_trackable)}")
    if logdir is None:
        return NoopSummaryWriter()
    return SummaryFileWriter(logdir, 10 if max_queue is None else max_queue,
                             120000 if flush_millis is None else flush_millis,
                             ".v2" if filename_suffix is None else filename_suffix, name)


def create_noop_writer() -> NoopSummaryWriter:
    """A writer that does nothing, for code that wants a writer object.

    >>> w = jf.summary.create_noop_writer()
    >>> with w.as_default():
    ...     pass  # summaries written here go nowhere
    >>> w.flush(); w.close()
    """
    return NoopSummaryWriter()


# --- summary ops ------------------------------------------------------------------------

def _resolve(step: Any, needs_step: bool = True) -> tuple[SummaryFileWriter, int] | None:
    """(writer, step) for a summary call, or None when nothing should be written."""
    w = context.default_writer()
    if w is None or not context.recording():
        return None
    if not needs_step:
        return w, 0
    if step is None:
        step = context.get_step()
        if step is None:
            raise _no_step_error()
    return w, as_step(step)


# As in TF, the summary ops return a bool tensor (whether the value was written), eagerly as
# inside a function. Eager tensors are immutable, so two shared ones serve every call.
_WRITTEN = EagerTensor(np.array(True), _dtypes.bool_)
_NOT_WRITTEN = EagerTensor(np.array(False), _dtypes.bool_)


def scalar(name: str, data: Any, step: Any = None, description: str | None = None) -> Tensor:
    """Write a scalar (rank-0 float32 tensor, `scalars` plugin) to the default writer.

    Returns True when written, False when there is no default writer or
    `record_if` is off. NaN and inf are written as they are.

    Example:
        >>> import tempfile, jitflow.summary as s
        >>> with s.create_file_writer(tempfile.mkdtemp()).as_default():
        ...     s.scalar("loss", 0.5, step=1)
        <jf.Tensor: shape=(), dtype=bool, numpy=True>
    """
    if _rt_state.graph is not None:
        return in_graph.summary_op("scalar", _scoped(name), data, step, description=description)
    if _rt_state.eager_scope:
        name = _scoped(name)
    tls = _tls
    w = tls.writer
    if w is None:
        w = context.global_writer
        if w is None:
            return _NOT_WRITTEN
    if tls.record is not True and not context.recording():
        return _NOT_WRITTEN
    if step is None:
        step = tls.step
        if step is _UNSET:
            step = context.global_step
        if step is None or type(step) is SymbolicTensor:  # rare: let get_step judge a symbolic step
            step = context.get_step()
            if step is None:
                raise _no_step_error()
    return _WRITTEN if w._scalar(name, data, step, description) else _NOT_WRITTEN


def histogram(name: str, data: Any, step: Any = None, buckets: int | None = None,
              description: str | None = None) -> bool | Tensor:
    """Write a histogram of `data`'s elements: `buckets` (default 30) equal-width
    buckets as a k x 3 float64 tensor (left, right, count), `histograms` plugin.

    Example:
        >>> import numpy as np, tempfile, jitflow.summary as s
        >>> with s.create_file_writer(tempfile.mkdtemp()).as_default():
        ...     s.histogram("weights", np.random.randn(1000), step=0)
        <jf.Tensor: shape=(), dtype=bool, numpy=True>
    """
    if _rt_state.graph is not None:
        return in_graph.summary_op("histogram", _scoped(name), data, step, buckets=buckets, description=description)
    if buckets is None:
        buckets = bucketing.DEFAULT_BUCKET_COUNT
    elif isinstance(buckets, bool) or not hasattr(buckets, "__index__"):
        raise TypeError(f"buckets: expected an int, got {describe(buckets)}")
    elif int(buckets) < 0:
        raise ValueError(f"buckets: expected an int >= 0, got {int(buckets)}")
    target = _target(name, step, description)
    if target is None:
        return False
    w, step, tag = target
    a = as_numpy(data, "data")
    if a.dtype.kind not in "biuf":
        raise TypeError(f"data: expected real numbers, got {describe(a)}")
    table = bucketing.tf_buckets(a, int(buckets))
    return w._write_event(protos.histogram_event(tag, table, step, _now(), description))


def text(name: str, data: Any, step: Any = None, description: str | None = None) -> bool | Tensor:
    """Write text (a str, bytes, or an array of them; Markdown), `text` plugin.

    Example:
        >>> import tempfile, jitflow.summary as s
        >>> with s.create_file_writer(tempfile.mkdtemp()).as_default():
        ...     s.text("notes", "**lr** lowered", step=10)
        <jf.Tensor: shape=(), dtype=bool, numpy=True>
    """
    if _rt_state.graph is not None:
        return in_graph.summary_op("text", _scoped(name), data, step, description=description)
    target = _target(name, step, description)
    if target is None:
        return False
    w, step, tag = target
    strings, shape = as_strings(data, "data")
    return w._write_event(protos.text_event(tag, strings, shape, step, _now(), description))


def image(name: str, data: Any, step: Any = None, max_outputs: int = 3,
          description: str | None = None) -> bool | Tensor:
    """Write up to `max_outputs` images of a [k, height, width, channels] batch
    (uint8, or float in [0, 1]; 1-4 channels) as PNGs, `images` plugin.

    Example:
        >>> import numpy as np, tempfile, jitflow.summary as s
        >>> with s.create_file_writer(tempfile.mkdtemp()).as_default():
        ...     s.image("samples", np.random.rand(2, 8, 8, 3), step=0)
        <jf.Tensor: shape=(), dtype=bool, numpy=True>
    """
    if _rt_state.graph is not None:
        return in_graph.summary_op("image", _scoped(name), data, step, max_outputs=max_outputs, description=description)
    target = _target(name, step, description)
    if target is None:
        return False
    w, step, tag = target
    if isinstance(max_outputs, bool) or not hasattr(max_outputs, "__index__") or int(max_outputs) < 0:
        raise ValueError(f"max_outputs: expected an int >= 0, got {describe(max_outputs)}")
    images = imaging.tf_images(data, "data")
    pngs = [encode_png(img) for img in images[:int(max_outputs)]]
    return w._write_event(protos.image_event(tag, images.shape[2], images.shape[1], pngs,
                                             step, _now(), description))


def audio(name: str, data: Any, sample_rate: Any, step: Any = None, max_outputs: int = 3,
          encoding: str | None = None, description: str | None = None) -> bool | Tensor:
    """Write up to `max_outputs` clips of a [k, frames, channels] batch of float
    samples in [-1, 1] as 16-bit WAV (`audio` plugin, a [k, 2] string tensor of
    (wav, label) as TF writes).

    Example:
        >>> import numpy as np, tempfile, jitflow.summary as s
        >>> tone = np.sin(np.arange(8000) / 10.0).reshape(1, -1, 1)
        >>> with s.create_file_writer(tempfile.mkdtemp()).as_default():
        ...     s.audio("tone", tone, sample_rate=8000, step=0)
        <jf.Tensor: shape=(), dtype=bool, numpy=True>
    """
    if _rt_state.graph is not None:
        return in_graph.summary_op("audio", _scoped(name), data, step, sample_rate=sample_rate,
                                   max_outputs=max_outputs, encoding=encoding, description=description)
    if encoding not in (None, "wav"):
        raise ValueError(f"encoding: expected 'wav' or None, got {encoding!r}")
    if isinstance(max_outputs, bool) or not hasattr(max_outputs, "__index__") or int(max_outputs) < 0:
        raise ValueError(f"max_outputs: expected an int >= 0, got {describe(max_outputs)}")
    rate = media.check_sample_rate(as_float(sample_rate, "sample_rate"))
    a = as_numpy(data, "data")
    if a.ndim != 3:
        raise ValueError(f"data: expected a rank-3 [k, frames, channels] batch, got {describe(a)}")
    target = _target(name, step, description)
    if target is None:
        return False
    w, step, tag = target
    clips = [media.encode_wav(media.audio_samples(clip, "data"), rate) for clip in a[:int(max_outputs)]]
    return w._write_event(protos.audio_event(tag, clips, step, _now(), description))


def write_raw_pb(tensor: Any, step: Any = None, name: str | None = None) -> bool | Tensor:
    """Write a serialized `Summary` proto (bytes, or a list of them) as it is,
    each at `step` (TF's `tf.summary.experimental.write_raw_pb`).

    Example:
        >>> import tempfile, jitflow.summary as s
        >>> from tensorboard.compat.proto import summary_pb2
        >>> pb = summary_pb2.Summary(value=[summary_pb2.Summary.Value(tag="x", simple_value=1.0)])
        >>> with s.create_file_writer(tempfile.mkdtemp()).as_default():
        ...     s.write_raw_pb(pb.SerializeToString(), step=0)
        <jf.Tensor: shape=(), dtype=bool, numpy=True>
    """
    if _rt_state.graph is not None:
        return in_graph.summary_op("write_raw_pb", name or "raw_pb", tensor, step)
    a = as_numpy(tensor, "tensor") if not isinstance(tensor, (bytes, bytearray)) else np.array(bytes(tensor), object)
    if a.dtype.kind not in "SO":
        raise TypeError(f"tensor: expected serialized Summary protos (bytes), got {describe(a)}")
    summaries = []
    for i, raw in enumerate(a.reshape(-1).tolist()):
        try:
            summaries.append(summary_pb2.Summary.FromString(bytes(raw)))
        except (DecodeError, TypeError) as e:
            raise ValueError(f"tensor: element {i} does not parse as a serialized Summary proto ({e})") from None
    target = _resolve(step)
    if target is None:
        return False
    w, step = target
    for summary in summaries:
        w._write_event(protos.event(_now(), step, summary=summary))
    return True


@contextlib.contextmanager
def summary_scope(name: str | None, default_name: str | None = None,
                  values: Any = None) -> Iterator[tuple[str, str]]:
    """A name scope for writing a summary: yields `(tag, scope)`, the tag being
    the current scope prefix plus `name` (or `default_name`), as in TF.

    Example:
        >>> import jitflow.summary as s
        >>> with s.summary_scope("loss") as (tag, scope):
        ...     tag, scope
        ('loss', 'loss/')
    """
    name = name or default_name
    if not isinstance(name, str) or not name:
        raise ValueError(f"name: expected a non-empty str (or a default_name), got {name!r}")
    tag = clean_tag(_scoped(name))
    with name_scope(clean_tag(name)) as scope:
        yield tag, scope


def has_default_writer() -> bool:
    """Whether a default writer is set here (`as_default` / `set_as_default`).

    >>> import tempfile
    >>> with jf.summary.create_file_writer(tempfile.mkdtemp()).as_default():
    ...     jf.summary.has_default_writer()
    True
    """
    return context.default_writer() is not None


def graph(graph_data: Any) -> bool:
    """Write a run graph (TensorBoard's Graphs tab) to the default writer.

    `graph_data` is a GraphDef proto or its serialized bytes (jitflow graphs
    and concrete functions once the runtime lands). No step is needed.

    Example:
        >>> import tempfile, jitflow.summary as s
        >>> from tensorboard.compat.proto import graph_pb2
        >>> g = graph_pb2.GraphDef(); _ = g.node.add(name="x", op="Placeholder")
        >>> with s.create_file_writer(tempfile.mkdtemp()).as_default():
        ...     s.graph(g)
        True
    """
    data = _graph_def_of(graph_data)
    target = _resolve(None, needs_step=False)
    if target is None:
        return False
    return target[0]._write_event(protos.graph_event(data, _now()))


def write(tag: str, tensor: Any, step: Any = None, metadata: Any = None, name: str | None = None) -> bool | Tensor:
    """Write a raw tensor summary: `tensor` is an array-like (or a zero-argument
    callable returning one, only called when recording); `metadata` is a
    SummaryMetadata proto, its bytes, or None.

    Example:
        >>> import numpy as np, tempfile, jitflow.summary as s
        >>> with s.create_file_writer(tempfile.mkdtemp()).as_default():
        ...     s.write("raw", np.arange(3.0), step=0)
        <jf.Tensor: shape=(), dtype=bool, numpy=True>
    """
    # As in TF, `tag` is used as given (not prefixed by the name scope): it usually
    # comes from `summary_scope`, which has applied the scope already.
    if _rt_state.graph is not None:
        data = tensor() if callable(tensor) else tensor
        return in_graph.summary_op("write", tag, data, step, metadata=metadata)
    target = _resolve(step)
    if target is None:
        return False
    w, step = target
    tag = clean_tag(tag, "tag")
    if metadata is None:
        md = None
    elif isinstance(metadata, summary_pb2.SummaryMetadata):
        md = metadata
    elif isinstance(metadata, (bytes, bytearray)):
        try:
            md = summary_pb2.SummaryMetadata.FromString(bytes(metadata))
        except DecodeError as e:
            raise ValueError(f"metadata: bytes do not parse as a SummaryMetadata proto ({e})") from None
    else:
        raise TypeError("metadata: expected a SummaryMetadata proto, bytes or None, "
                        f"got {describe(metadata)}")
    if callable(tensor):
        tensor = tensor()
    a = as_numpy(tensor, "tensor")
    try:
        tp = protos.any_tensor(a)
    except Exception as e:
        raise TypeError(f"tensor: cannot store {describe(a)} as a TensorProto ({e})") from None
    return w._write_event(protos.summary_event(tag, tp, md, step, _now()))


def flush(writer: Any = None) -> None:
    """Flush `writer`, or the default writer (nothing if there is none).

    >>> import tempfile
    >>> w = jf.summary.create_file_writer(tempfile.mkdtemp())
    >>> with w.as_default():
    ...     _ = jf.summary.scalar('loss', 0.5, step=1)
    ...     jf.summary.flush()
    """
    w = writer if writer is not None else context.default_writer()
    if w is not None:
        w.flush()


def should_record_summaries() -> bool:
    """True when a summary call here would write: a default writer exists and
    the `record_if` condition holds.

    >>> import tempfile
    >>> with jf.summary.create_file_writer(tempfile.mkdtemp()).as_default():
    ...     with jf.summary.record_if(False):
    ...         jf.summary.should_record_summaries()
    False
    """
    return context.default_writer() is not None and context.recording()


record_if = context.record_if


def _returns_bool_tensor(front: Any) -> Any:
    def op(*args: Any, **kwargs: Any) -> Any:
        written = front(*args, **kwargs)
        if written is True:
            return _WRITTEN
        if written is False:
            return _NOT_WRITTEN
        return written  # inside a function: the graph op's own bool tensor
    op.__name__, op.__qualname__, op.__doc__ = front.__name__, front.__qualname__, front.__doc__
    op.__module__, op.__wrapped__ = front.__module__, front  # type: ignore[attr-defined]
    return op


histogram = _returns_bool_tensor(histogram)
text = _returns_bool_tensor(text)
image = _returns_bool_tensor(image)
audio = _returns_bool_tensor(audio)
write = _returns_bool_tensor(write)
write_raw_pb = _returns_bool_tensor(write_raw_pb)

# The graph ops of `in_graph` run these front-end functions when a traced function runs.
in_graph.FRONTS.update({kind: globals()[kind] for kind in in_graph.OP_TYPES})
