"""PyTorch / tensorboardX-style `SummaryWriter`.

Same calls and the same on-disk form as `torch.utils.tensorboard.SummaryWriter`:
scalars as old-style `simple_value` (tensor scalars with `new_style=True`),
histograms as `HistogramProto`, images as PNG `Summary.Image`, text under
`<tag>/text_summary`, and `add_scalars` writing one sub-run directory per key.
Differences: writing after `close()` raises RuntimeError (PyTorch silently
reopens), non-integer steps raise instead of being truncated, and tags with
characters outside `[-/\\w.]` are cleaned with a warning.
"""

from __future__ import annotations

import os
import socket
import threading
from datetime import datetime
from time import time as _now
from typing import Any, Mapping

from jitflow.summary import bucketing, imaging, protos, wire
from jitflow.summary.event_file import EventFileWriter, join
from jitflow.summary.graphs import _graph_def_of
from jitflow.summary.png import encode_png
from jitflow.summary.values import as_float, as_numpy, as_step, as_wall_time, clean_tag, describe

_fast_scalar_event = wire.fast_scalar_event
_simple_entries: dict[Any, tuple] = {}  # tag -> wire.scalar_entry(simple_value_parts)
_CACHE_LIMIT = 10000


def _new_simple_entry(tag: Any) -> tuple:
    entry = wire.scalar_entry(wire.simple_value_parts(clean_tag(tag, "tag")))
    if len(_simple_entries) >= _CACHE_LIMIT:
        _simple_entries.clear()
    _simple_entries[tag] = entry
    return entry


def default_log_dir(comment: str = "") -> str:
    """`runs/<Mon><DD>_<HH>-<MM>-<SS>_<hostname><comment>`, as PyTorch names runs."""
    stamp = datetime.now().strftime("%b%d_%H-%M-%S")
    return os.path.join("runs", stamp + "_" + socket.gethostname() + comment)


def _each(writers: list, method: str) -> None:
    """Call `method` on every writer; raise the first error after all were tried."""
    first = None
    for fw in writers:
        try:
            getattr(fw, method)()
        except Exception as e:
            first = first or e
    if first is not None:
        raise first


def _opt_step(step: Any) -> int | None:
    return None if step is None else as_step(step, "global_step")


def _wall(walltime: Any) -> float:
    return _now() if walltime is None else as_wall_time(walltime)


class SummaryWriter:
    """Writes event files for TensorBoard, with PyTorch's `SummaryWriter` calls.

    Example:
        >>> import tempfile, numpy as np
        >>> from jitflow.summary import SummaryWriter
        >>> with SummaryWriter(tempfile.mkdtemp()) as w:
        ...     for step in range(3):
        ...         w.add_scalar("loss", 1.0 / (step + 1), step)
        ...     w.add_histogram("weights", np.random.randn(100), 0)
        ...     w.add_scalars("lr", {"head": 0.1, "body": 0.01}, 0)
    """

    def __init__(self, log_dir: str | os.PathLike | None = None, comment: str = "",
                 purge_step: int | None = None, max_queue: int = 10, flush_secs: float = 120,
                 filename_suffix: str = "") -> None:
        if not log_dir:
            log_dir = default_log_dir(comment)
        elif not isinstance(log_dir, (str, os.PathLike)):
            raise TypeError(f"log_dir: expected a path (str or os.PathLike), got {describe(log_dir)}")
        if isinstance(max_queue, bool) or not isinstance(max_queue, int) or max_queue < 0:
            raise ValueError(f"max_queue: expected an int >= 0, got {describe(max_queue)}")
        if isinstance(flush_secs, bool) or not isinstance(flush_secs, (int, float)) or not flush_secs > 0:
            raise ValueError(f"flush_secs: expected a number > 0, got {describe(flush_secs)}")
        if not isinstance(filename_suffix, str):
            raise TypeError(f"filename_suffix: expected a str, got {describe(filename_suffix)}")
        self.log_dir = os.fspath(log_dir)
        self.purge_step = purge_step
        self.max_queue, self.flush_secs, self.filename_suffix = max_queue, flush_secs, filename_suffix
        purge = _opt_step(purge_step)
        self.file_writer = EventFileWriter(self.log_dir, max_queue, flush_secs, filename_suffix)
        self._add = self.file_writer.add
        self._sub_writers: dict[str, EventFileWriter] = {}  # add_scalars runs
        self._sub_lock = threading.Lock()
        if purge is not None:
            # TensorBoard drops data loaded earlier with step >= purge_step.
            self._add(protos.session_start_event(purge, _now()).SerializeToString())

    def __repr__(self) -> str:
        return f"<SummaryWriter {self.log_dir!r}>"

    def get_logdir(self) -> str:
        """The directory event files are written to."""
        return self.log_dir

    def __enter__(self) -> "SummaryWriter":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    # --- scalars --------------------------------------------------------------------

    def add_scalar(self, tag: str, scalar_value: Any, global_step: Any = None,
                   walltime: float | None = None, new_style: bool = False,
                   double_precision: bool = False) -> None:
        """Add one scalar point (old-style `simple_value`; a `scalars`-plugin tensor
        with `new_style=True`, float64 if also `double_precision=True`). `scalar_value`
        may be a number or a one-element array."""
        if new_style:
            value = as_float(scalar_value, "scalar_value", squeeze=True)
            ev = protos.new_style_scalar_event(clean_tag(tag, "tag"), value, _opt_step(global_step),
                                               _wall(walltime), double_precision)
            self._add(ev.SerializeToString())
            return
        # The hot path, as in writer.SummaryFileWriter._scalar.
        try:
            entry = _simple_entries[tag]
        except (KeyError, TypeError):
            entry = _new_simple_entry(tag)
        t = type(scalar_value)
        if t is not float and t is not int:
            scalar_value = as_float(scalar_value, "scalar_value", squeeze=True)
        if global_step is not None and (type(global_step) is not int or not 0 <= global_step < 2097152):
            global_step = as_step(global_step, "global_step")
        if walltime is None:
            self._add(_fast_scalar_event(entry, scalar_value, global_step, _now()))
        else:
            self._add(wire.scalar_event(entry[:2], scalar_value, global_step, as_wall_time(walltime)))

    def add_scalars(self, main_tag: str, tag_scalar_dict: Mapping[str, Any], global_step: Any = None,
                    walltime: float | None = None) -> None:
        """Add several scalars at once, each to its own run
        `<log_dir>/<main_tag>_<key>` under the tag `main_tag` (as PyTorch does),
        so TensorBoard draws them in one chart."""
        if not isinstance(main_tag, str):
            raise TypeError(f"main_tag: expected a str, got {describe(main_tag)}")
        if not isinstance(tag_scalar_dict, Mapping):
            raise TypeError("tag_scalar_dict: expected a dict of tag -> scalar, "
                            f"got {describe(tag_scalar_dict)}")
        step, wt = _opt_step(global_step), _wall(walltime)
        tag = clean_tag(main_tag, "main_tag")
        events = []
        for key, value in tag_scalar_dict.items():
            if not isinstance(key, str):
                raise TypeError(f"tag_scalar_dict: expected str keys, got {describe(key)}")
            v = as_float(value, f"tag_scalar_dict[{key!r}]", squeeze=True)
            events.append((join(self.log_dir, main_tag.replace("/", "_") + "_" + key),
                           wire.scalar_event(wire.simple_value_parts(tag), v, step, wt)))
        self._check_open()
        for run_dir, payload in events:
            fw = self._sub_writers.get(run_dir)
            if fw is None:
                with self._sub_lock:  # two threads must not open two files for one run
                    fw = self._sub_writers.get(run_dir)
                    if fw is None:
                        fw = self._sub_writers[run_dir] = EventFileWriter(
                            run_dir, self.max_queue, self.flush_secs, self.filename_suffix)
            fw.add(payload)

    # --- other summaries ----------------------------------------------------------------

    def add_histogram(self, tag: str, values: Any, global_step: Any = None, bins: Any = "tensorflow",
                      walltime: float | None = None, max_bins: int | None = None) -> None:
        """Add a histogram of `values`; `bins` is "tensorflow" (PyTorch's default
        exponential buckets) or anything `numpy.histogram` takes."""
        a = as_numpy(values, "values")
        if a.dtype.kind not in "biuf":
            raise TypeError(f"values: expected real numbers, got {describe(a)}")
        fields = bucketing.torch_histogram(a, bins, max_bins)
        ev = protos.histo_event(clean_tag(tag, "tag"), protos.histogram_proto(**fields),
                                _opt_step(global_step), _wall(walltime))
        self.file_writer.add_large(ev.SerializeToString())

    def add_text(self, tag: str, text_string: str, global_step: Any = None,
                 walltime: float | None = None) -> None:
        """Add Markdown text, under the tag `<tag>/text_summary` as PyTorch does."""
        if isinstance(text_string, str):
            data = text_string.encode("utf-8")
        elif isinstance(text_string, bytes):
            data = text_string
        else:
            raise TypeError(f"text_string: expected a str, got {describe(text_string)}")
        ev = protos.text_event(clean_tag(tag, "tag") + "/text_summary", [data], (1,),
                               _opt_step(global_step), _wall(walltime))
        self.file_writer.add_large(ev.SerializeToString())

    def add_image(self, tag: str, img_tensor: Any, global_step: Any = None,
                  walltime: float | None = None, dataformats: str = "CHW") -> None:
        """Add one image (uint8, or float in [0, 1]) laid out as `dataformats`
        ("CHW", "HWC", "HW")."""
        img = imaging.torch_image(img_tensor, dataformats)
        self._add_png(tag, img, global_step, walltime)

    def add_images(self, tag: str, img_tensor: Any, global_step: Any = None,
                   walltime: float | None = None, dataformats: str = "NCHW") -> None:
        """Add a batch of images ("NCHW" or "NHWC"), tiled 8 per row in one picture."""
        if not (isinstance(dataformats, str) and len(dataformats) == 4):
            raise ValueError(f"dataformats: expected 'NCHW' or 'NHWC' for a batch, got {dataformats!r}")
        img = imaging.torch_image(img_tensor, dataformats)
        self._add_png(tag, img, global_step, walltime)

    def _add_png(self, tag: str, hwc: Any, global_step: Any, walltime: Any) -> None:
        h, w, c = hwc.shape
        ev = protos.old_image_event(clean_tag(tag, "tag"), h, w, c, encode_png(hwc),
                                    _opt_step(global_step), _wall(walltime))
        self.file_writer.add_large(ev.SerializeToString())

    def add_graph(self, model: Any, input_to_model: Any = None, verbose: bool = False,
                  use_strict_trace: bool = True) -> None:
        """Add a run graph: a GraphDef proto or its bytes (jitflow functions
        once the runtime lands)."""
        data = _graph_def_of(model, input_to_model)
        self.file_writer.add_large(protos.graph_event(data, _now()).SerializeToString())

    # --- lifetime ---------------------------------------------------------------------------

    def _check_open(self) -> None:
        if self.file_writer.closed:
            raise RuntimeError(f"summary writer for {self.log_dir!r} is closed; "
                               "open a new writer to write more")

    def flush(self) -> None:
        """Block until everything added so far is in the event files (handed to
        the OS: it survives the process being killed)."""
        _each([self.file_writer, *self._sub_writers.values()], "flush")

    def close(self) -> None:
        """Flush and close all event files; adding afterwards raises RuntimeError.
        Every file is closed even if one fails; the first error is raised."""
        _each([self.file_writer, *self._sub_writers.values()], "close")
