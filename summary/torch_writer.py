"""PyTorch / tensorboardX-style `SummaryWriter`.

Same calls and the same on-disk form as `torch.utils.tensorboard.SummaryWriter`:
scalars as old-style `simple_value` (tensor scalars with `new_style=True`),
histograms as `HistogramProto`, images as PNG `Summary.Image`, text under
`<tag>/text_summary`, and `add_scalars` writing one sub-run directory per key.
Every `add_*` method of PyTorch's writer is here; the dashboards' data comes
from `jitflow.summary.plugins` (PR curves, meshes, hparams, custom scalars,
audio, video, projector). Tags are kept exactly as given, as PyTorch does.
Differences: writing after `close()` raises RuntimeError (PyTorch silently
reopens); steps that are not whole numbers, `add_scalars` keys that would
leave log_dir, and labels that do not match the boxes raise instead of being
truncated, followed or dropped.
"""

from __future__ import annotations

import os
import socket
import threading
from datetime import datetime
from time import time as _now
from typing import Any, Mapping

import numpy as np
from tensorboard.compat.proto import summary_pb2

from jitflow.summary import bucketing, imaging, protos, torch_models, wire
from jitflow.summary.event_file import EventFileWriter, join
from jitflow.summary.graphs import _graph_def_of
from jitflow.summary.plugins import custom_scalars, hparams, media, mesh, pr_curve, projector
from jitflow.summary.values import (as_float, as_numpy, as_step, as_wall_time, check_int_fits_float,
                                    check_run_name, describe, torch_tag)

_fast_scalar_event = wire.fast_scalar_event
_simple_entries: dict[Any, tuple] = {}  # tag -> wire.scalar_entry(simple_value_parts)
_CACHE_LIMIT = 10000


def _new_simple_entry(tag: Any) -> tuple:
    entry = wire.scalar_entry(wire.simple_value_parts(torch_tag(tag)))
    if len(_simple_entries) >= _CACHE_LIMIT:
        _simple_entries.clear()
    _simple_entries[tag] = entry
    return entry


def default_log_dir(comment: str = "") -> str:
    """`runs/<Mon><DD>_<HH>-<MM>-<SS>_<hostname><comment>`, as PyTorch names runs."""
    stamp = datetime.now().strftime("%b%d_%H-%M-%S")
    return os.path.join("runs", stamp + "_" + socket.gethostname() + comment)


class _NoDiskFile:
    """The event file of a `SummaryWriter(write_to_disk=False)`: takes records, keeps none."""

    closed = False

    def add(self, record: bytes) -> None:
        if self.closed:
            raise RuntimeError("summary writer is closed; open a new writer to write more")

    add_large = add

    def flush(self) -> None:
        pass

    def close(self) -> None:
        self.closed = True


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
    """PyTorch stores `int(global_step)`; whole-number floats (3.0) are accepted
    too, fractional ones raise rather than collide with the step below."""
    if step is None:
        return None
    if isinstance(step, (float, np.floating)) and not isinstance(step, bool):
        if not float(step).is_integer():
            raise TypeError(f"global_step: expected an integer (or a whole-number float), got {describe(step)}")
        step = int(step)
    return as_step(step, "global_step")


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
                 filename_suffix: str = "", write_to_disk: bool = True) -> None:
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
        # tensorboardX's switch: `write_to_disk=False` validates and encodes every call as usual
        # but writes nothing (no directory, no event file), e.g. on the non-chief workers.
        self.write_to_disk = bool(write_to_disk)
        purge = _opt_step(purge_step)
        self._file = (EventFileWriter(self.log_dir, max_queue, flush_secs, filename_suffix)
                            if self.write_to_disk else _NoDiskFile())
        self._add = self._file.add
        self._sub_writers: dict[str, EventFileWriter | _NoDiskFile] = {}  # add_scalars runs
        self._sub_lock = threading.Lock()
        if purge is not None:
            # TensorBoard drops data loaded earlier with step >= purge_step.
            self._add(protos.session_start_event(purge, _now()).SerializeToString())

    def __repr__(self) -> str:
        return f"<SummaryWriter {self.log_dir!r}>"

    @property
    def file_writer(self) -> Any:
        """The main run's event file; None once the writer is closed (as PyTorch's writer)."""
        return None if self._file.closed else self._file

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
        may be a number, a one-element array or tensor; `global_step` an int or a
        whole-number float.

        Example:
            >>> import tempfile; from jitflow.summary import SummaryWriter
            >>> with SummaryWriter(tempfile.mkdtemp()) as w:
            ...     w.add_scalar("loss", 0.25, 10)
        """
        if new_style:
            value = as_float(scalar_value, "scalar_value", squeeze=True)
            ev = protos.new_style_scalar_event(torch_tag(tag), value, _opt_step(global_step),
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
            global_step = _opt_step(global_step)
        try:
            if walltime is None:
                self._add(_fast_scalar_event(entry, scalar_value, global_step, _now()))
            else:
                self._add(wire.scalar_event(entry[:2], scalar_value, global_step, as_wall_time(walltime)))
        except OverflowError:  # a Python int beyond float64 (10**400): say so, write nothing
            check_int_fits_float(scalar_value, "scalar_value")
            raise

    def add_scalars(self, main_tag: str, tag_scalar_dict: Mapping[str, Any], global_step: Any = None,
                    walltime: float | None = None) -> None:
        """Add several scalars at once, each to its own run
        `<log_dir>/<main_tag>_<key>` under the tag `main_tag` (as PyTorch does),
        so TensorBoard draws them in one chart. Keys that would put the run
        outside log_dir (`..` components) are refused.

        Example:
            >>> import tempfile; from jitflow.summary import SummaryWriter
            >>> with SummaryWriter(tempfile.mkdtemp()) as w:
            ...     w.add_scalars("loss", {"train": 0.3, "val": 0.4}, 1)
        """
        if not isinstance(main_tag, str):
            raise TypeError(f"main_tag: expected a str, got {describe(main_tag)}")
        if not isinstance(tag_scalar_dict, Mapping):
            raise TypeError("tag_scalar_dict: expected a dict of tag -> scalar, "
                            f"got {describe(tag_scalar_dict)}")
        step, wt = _opt_step(global_step), _wall(walltime)
        tag = torch_tag(main_tag, "main_tag")
        events = []
        for key, value in tag_scalar_dict.items():
            if not isinstance(key, str):
                raise TypeError(f"tag_scalar_dict: expected str keys, got {describe(key)}")
            v = as_float(value, f"tag_scalar_dict[{key!r}]", squeeze=True)
            run = check_run_name(main_tag.replace("/", "_") + "_" + key, f"tag_scalar_dict key {key!r}")
            try:
                payload = wire.scalar_event(wire.simple_value_parts(tag), v, step, wt)
            except OverflowError:
                if isinstance(v, int):  # as_float keeps a Python int as it is
                    check_int_fits_float(v, f"tag_scalar_dict[{key!r}]")
                raise
            events.append((join(self.log_dir, run), payload))
        self._check_open()
        for run_dir, payload in events:
            self._sub_writer(run_dir).add(payload)

    def _sub_writer(self, run_dir: str) -> EventFileWriter | _NoDiskFile:
        fw = self._sub_writers.get(run_dir)
        if fw is None:
            with self._sub_lock:  # two threads must not open two files for one run
                fw = self._sub_writers.get(run_dir)
                if fw is None:
                    fw = self._sub_writers[run_dir] = (EventFileWriter(
                        run_dir, self.max_queue, self.flush_secs, self.filename_suffix)
                        if self.write_to_disk else _NoDiskFile())
        return fw

    # --- histograms -------------------------------------------------------------------

    def add_histogram(self, tag: str, values: Any, global_step: Any = None, bins: Any = "tensorflow",
                      walltime: float | None = None, max_bins: int | None = None) -> None:
        """Add a histogram of `values`; `bins` is "tensorflow" (PyTorch's default
        exponential buckets) or anything `numpy.histogram` takes.

        Example:
            >>> import numpy as np, tempfile; from jitflow.summary import SummaryWriter
            >>> with SummaryWriter(tempfile.mkdtemp()) as w:
            ...     w.add_histogram("w", np.random.randn(100), 0, bins="auto")
        """
        a = as_numpy(values, "values")
        if a.dtype.kind not in "biuf":
            raise TypeError(f"values: expected real numbers, got {describe(a)}")
        if max_bins is not None and (isinstance(max_bins, bool) or not isinstance(max_bins, int) or max_bins < 1):
            raise ValueError(f"max_bins: expected an int >= 1 or None, got {describe(max_bins)}")
        fields = bucketing.torch_histogram(a, bins, max_bins)
        self._write([summary_pb2.Summary.Value(tag=torch_tag(tag), histo=protos.histogram_proto(**fields))],
                    global_step, walltime)

    def add_histogram_raw(self, tag: str, min: float, max: float, num: int, sum: float, sum_squares: float,
                          bucket_limits: Any, bucket_counts: Any, global_step: Any = None,
                          walltime: float | None = None) -> None:
        """Add a histogram computed elsewhere: `bucket_limits[i]` is the right edge
        of bucket i, which holds `bucket_counts[i]` values.

        Example:
            >>> import tempfile; from jitflow.summary import SummaryWriter
            >>> with SummaryWriter(tempfile.mkdtemp()) as w:
            ...     w.add_histogram_raw("h", min=0, max=3, num=4, sum=6, sum_squares=14,
            ...                         bucket_limits=[1, 2, 3], bucket_counts=[1, 2, 1], global_step=0)
        """
        limits = as_numpy(bucket_limits, "bucket_limits").astype(np.float64).reshape(-1)
        counts = as_numpy(bucket_counts, "bucket_counts").astype(np.float64).reshape(-1)
        if limits.size != counts.size or limits.size == 0:
            raise ValueError(f"bucket_limits and bucket_counts: expected the same non-zero length, "
                             f"got {limits.size} and {counts.size}")
        if np.any(np.diff(limits) < 0):
            raise ValueError("bucket_limits: expected increasing right edges")
        if np.any(counts < 0):
            raise ValueError("bucket_counts: expected counts >= 0")
        stats = {n: as_float(v, n) for n, v in
                 [("min", min), ("max", max), ("sum", sum), ("sum_squares", sum_squares)]}
        proto = protos.histogram_proto(stats["min"], stats["max"], as_step(num, "num"), stats["sum"],
                                       stats["sum_squares"], limits.tolist(), counts.tolist())
        self._write([summary_pb2.Summary.Value(tag=torch_tag(tag), histo=proto)], global_step, walltime)

    # --- text ----------------------------------------------------------------------------

    def add_text(self, tag: str, text_string: str, global_step: Any = None,
                 walltime: float | None = None) -> None:
        """Add Markdown text, under the tag `<tag>/text_summary` as PyTorch does.

        Example:
            >>> import tempfile; from jitflow.summary import SummaryWriter
            >>> with SummaryWriter(tempfile.mkdtemp()) as w:
            ...     w.add_text("notes", "**lr** halved", 3)
        """
        if isinstance(text_string, str):
            data = text_string.encode("utf-8")
        elif isinstance(text_string, bytes):
            data = text_string
        else:
            raise TypeError(f"text_string: expected a str, got {describe(text_string)}")
        ev = protos.text_event(torch_tag(tag) + "/text_summary", [data], (1,),
                               _opt_step(global_step), _wall(walltime))
        self._file.add_large(ev.SerializeToString())

    # --- images, figures, video, audio -----------------------------------------------------

    def add_image(self, tag: str, img_tensor: Any, global_step: Any = None,
                  walltime: float | None = None, dataformats: str = "CHW") -> None:
        """Add one image (uint8, or float in [0, 1]) laid out as `dataformats`
        ("CHW", "HWC", "HW", ...).

        Example:
            >>> import numpy as np, tempfile; from jitflow.summary import SummaryWriter
            >>> with SummaryWriter(tempfile.mkdtemp()) as w:
            ...     w.add_image("img", np.random.rand(3, 8, 8), 0)
        """
        img = imaging.torch_image(img_tensor, dataformats)
        self._write([media.png_image_value(torch_tag(tag), img)], global_step, walltime)

    def add_images(self, tag: str, img_tensor: Any, global_step: Any = None,
                   walltime: float | None = None, dataformats: str = "NCHW") -> None:
        """Add a batch of images ("NCHW", "NHWC", ..., or a list of "CHW"/"HWC"
        images), tiled 8 per row in one picture.

        Example:
            >>> import numpy as np, tempfile; from jitflow.summary import SummaryWriter
            >>> with SummaryWriter(tempfile.mkdtemp()) as w:
            ...     w.add_images("batch", np.random.rand(4, 3, 8, 8), 0)
        """
        if isinstance(img_tensor, (list, tuple)):
            fmt = dataformats.upper() if isinstance(dataformats, str) else dataformats
            if fmt not in ("CHW", "HWC", "NCHW", "NHWC"):
                raise ValueError(f"dataformats: a list of images needs 'CHW' or 'HWC', got {dataformats!r}")
            arrays = [as_numpy(x, f"img_tensor[{i}]") for i, x in enumerate(img_tensor)]
            if not arrays or len({a.shape for a in arrays}) != 1:
                raise ValueError("img_tensor: expected a non-empty list of images of one shape, got shapes "
                                 f"{[a.shape for a in arrays]}")
            img_tensor, dataformats = np.stack(arrays), "N" + fmt[-3:]
        if not (isinstance(dataformats, str) and len(dataformats) == 4):
            raise ValueError(f"dataformats: expected 'NCHW' or 'NHWC' for a batch, got {dataformats!r}")
        img = imaging.torch_image(img_tensor, dataformats)
        self._write([media.png_image_value(torch_tag(tag), img)], global_step, walltime)

    def add_image_with_boxes(self, tag: str, img_tensor: Any, box_tensor: Any, global_step: Any = None,
                             walltime: float | None = None, rescale: float = 1, dataformats: str = "CHW",
                             labels: Any = None) -> None:
        """Add an image with red boxes `box_tensor` ([N, 4]: xmin, ymin, xmax, ymax
        in pixels) and optional `labels` (one str per box) drawn on it.

        Example:
            >>> import numpy as np, tempfile; from jitflow.summary import SummaryWriter
            >>> with SummaryWriter(tempfile.mkdtemp()) as w:
            ...     w.add_image_with_boxes("det", np.zeros((3, 32, 32)), [[2, 2, 20, 20]], 0, labels=["cat"])
        """
        img = imaging.torch_image(img_tensor, dataformats)
        drawn = media.draw_boxes(img, box_tensor, labels, media.check_rescale(rescale))
        self._write([media.png_image_value(torch_tag(tag), drawn)], global_step, walltime)

    def add_figure(self, tag: str, figure: Any, global_step: Any = None, close: bool = True,
                   walltime: float | None = None) -> None:
        """Add a matplotlib figure (or a list of them, tiled) as an image; the
        figure is closed afterwards unless `close=False`. matplotlib is imported
        only here.

        Example:
            >>> import tempfile, matplotlib.figure; from jitflow.summary import SummaryWriter
            >>> fig = matplotlib.figure.Figure(); _ = fig.add_subplot().plot([1, 3, 2])
            >>> with SummaryWriter(tempfile.mkdtemp()) as w:
            ...     w.add_figure("plot", fig, 0)
        """
        if isinstance(figure, (list, tuple)):
            if not figure:
                raise ValueError("figure: expected a figure or a non-empty list of figures, got []")
            self.add_images(tag, [media.figure_to_chw(f, close) for f in figure], global_step, walltime,
                            dataformats="CHW")
        else:
            self.add_image(tag, media.figure_to_chw(figure, close), global_step, walltime, dataformats="CHW")

    def add_video(self, tag: str, vid_tensor: Any, global_step: Any = None, fps: float = 4,
                  walltime: float | None = None, dataformats: str = "NTCHW") -> None:
        """Add videos ([N, T, C, H, W], uint8 or float in [0, 1]) as one animated
        GIF, the N videos tiled in a grid (encoded with Pillow).

        Example:
            >>> import numpy as np, tempfile; from jitflow.summary import SummaryWriter
            >>> with SummaryWriter(tempfile.mkdtemp()) as w:
            ...     w.add_video("clip", np.random.rand(1, 5, 3, 16, 16), 0, fps=5)
        """
        frames = media.video_frames(vid_tensor, dataformats)
        self._write([media.video_value(torch_tag(tag), frames, media.check_fps(fps))], global_step, walltime)

    def add_audio(self, tag: str, snd_tensor: Any, global_step: Any = None, sample_rate: int = 44100,
                  walltime: float | None = None) -> None:
        """Add a sound clip: samples in [-1, 1], shape [frames] or [frames, channels]
        (1 or 2), stored as 16-bit WAV.

        Example:
            >>> import numpy as np, tempfile; from jitflow.summary import SummaryWriter
            >>> with SummaryWriter(tempfile.mkdtemp()) as w:
            ...     w.add_audio("tone", np.sin(np.arange(8000) / 10), 0, sample_rate=8000)
        """
        samples = media.audio_samples(snd_tensor)
        self._write([media.audio_value(torch_tag(tag), samples, media.check_sample_rate(sample_rate))],
                    global_step, walltime)

    # --- graphs, embeddings ------------------------------------------------------------------

    def add_graph(self, model: Any, input_to_model: Any = None, verbose: bool = False,
                  use_strict_trace: bool = True) -> None:
        """Add a run graph: a `jf.function` (traced, or traced now with
        `input_to_model`), a concrete function, a jitflow Graph, a GraphDef proto
        or its bytes; or a `torch.nn.Module` traced by torch's own tracer when
        torch is installed.

        Example:
            >>> import tempfile, jitflow as jf; from jitflow.summary import SummaryWriter
            >>> f = jf.function(lambda x: x * 2.0)
            >>> with SummaryWriter(tempfile.mkdtemp()) as w:
            ...     w.add_graph(f, jf.constant([1.0]))
        """
        if torch_models.is_torch_module(model):
            data = torch_models.graph_def_bytes(model, input_to_model, verbose, use_strict_trace)
        else:
            data = _graph_def_of(model, input_to_model)
        self._file.add_large(protos.graph_event(data, _now()).SerializeToString())

    def add_embedding(self, mat: Any, metadata: Any = None, label_img: Any = None, global_step: Any = None,
                      tag: str = "default", metadata_header: Any = None) -> None:
        """Add points for the Projector: `mat` [N, D], optional `metadata` (N labels,
        or N rows of columns named by `metadata_header`) and `label_img` [N, C, H, W].
        Written as files under log_dir and listed in `projector_config.pbtxt`.

        Example:
            >>> import numpy as np, tempfile; from jitflow.summary import SummaryWriter
            >>> with SummaryWriter(tempfile.mkdtemp()) as w:
            ...     w.add_embedding(np.random.randn(10, 4), metadata=list("abcdefghij"), global_step=0)
        """
        step = 0 if global_step is None else as_step(global_step, "global_step")
        if step < 0:
            raise ValueError(f"global_step: expected an int >= 0, got {step}")
        self._check_open()
        if not self.write_to_disk:
            return
        projector.write_embedding(self.log_dir, mat, metadata, label_img, step, torch_tag(tag), metadata_header)

    # --- PR curves, custom scalars, meshes, hparams ------------------------------------------

    def add_pr_curve(self, tag: str, labels: Any, predictions: Any, global_step: Any = None,
                     num_thresholds: int = 127, weights: Any = None, walltime: float | None = None) -> None:
        """Add a precision-recall curve from ground-truth `labels` (0/1 or bool)
        and `predictions` in [0, 1] (at most 127 thresholds, as PyTorch).

        Example:
            >>> import numpy as np, tempfile; from jitflow.summary import SummaryWriter
            >>> with SummaryWriter(tempfile.mkdtemp()) as w:
            ...     w.add_pr_curve("pr", np.random.randint(2, size=50), np.random.rand(50), 0)
        """
        n = pr_curve.check_num_thresholds(num_thresholds)
        data = pr_curve.compute_curve(labels, predictions, n, weights)
        self._write([pr_curve.pr_curve_value(torch_tag(tag), data, n)], global_step, walltime)

    def add_pr_curve_raw(self, tag: str, true_positive_counts: Any, false_positive_counts: Any,
                         true_negative_counts: Any, false_negative_counts: Any, precision: Any, recall: Any,
                         global_step: Any = None, num_thresholds: int = 127, weights: Any = None,
                         walltime: float | None = None) -> None:
        """Add a precision-recall curve from counts computed elsewhere (each a
        vector of `num_thresholds` values; `weights` is unused, as in PyTorch).

        Example:
            >>> import tempfile; from jitflow.summary import SummaryWriter
            >>> with SummaryWriter(tempfile.mkdtemp()) as w:
            ...     w.add_pr_curve_raw("pr", [3, 2], [2, 0], [0, 2], [0, 1], [0.6, 1.0], [1.0, 0.67], 0,
            ...                        num_thresholds=2)
        """
        n = pr_curve.check_num_thresholds(num_thresholds)
        if n != num_thresholds:
            raise ValueError(f"num_thresholds: expected at most {pr_curve.MAX_THRESHOLDS} for raw counts, "
                             f"got {num_thresholds}")
        data = pr_curve.raw_curve(n, true_positive_counts=true_positive_counts,
                                  false_positive_counts=false_positive_counts,
                                  true_negative_counts=true_negative_counts,
                                  false_negative_counts=false_negative_counts, precision=precision, recall=recall)
        self._write([pr_curve.pr_curve_value(torch_tag(tag), data, n)], global_step, walltime)

    def add_custom_scalars(self, layout: Mapping[str, Mapping[str, Any]]) -> None:
        """Lay out the Custom Scalars dashboard: `{category: {title: ["Multiline",
        [tag regexes]] or ["Margin", [value, lower, upper]]}}`.

        Example:
            >>> import tempfile; from jitflow.summary import SummaryWriter
            >>> with SummaryWriter(tempfile.mkdtemp()) as w:
            ...     w.add_custom_scalars({"loss": {"both": ["Multiline", ["loss/train", "loss/val"]]}})
        """
        value = custom_scalars.layout_value(custom_scalars.layout_proto(layout))
        self._write([value], None, None)

    def add_custom_scalars_multilinechart(self, tags: list[str], category: str = "default",
                                          title: str = "untitled") -> None:
        """One Custom Scalars chart with a line per tag (regex)."""
        self.add_custom_scalars({category: {title: ["Multiline", tags]}})

    def add_custom_scalars_marginchart(self, tags: list[str], category: str = "default",
                                       title: str = "untitled") -> None:
        """One Custom Scalars margin chart: `tags` = [value, lower, upper]."""
        self.add_custom_scalars({category: {title: ["Margin", tags]}})

    def add_mesh(self, tag: str, vertices: Any, colors: Any = None, faces: Any = None, config_dict: Any = None,
                 global_step: Any = None, walltime: float | None = None) -> None:
        """Add a mesh or point cloud: `vertices` [B, N, 3], optional `colors`
        [B, N, 3] (0-255) and `faces` [B, F, 3] (vertex indices); `config_dict`
        is the Three.js camera/lights/material config.

        Example:
            >>> import numpy as np, tempfile; from jitflow.summary import SummaryWriter
            >>> v = np.array([[[0, 0, 0], [1, 0, 0], [0, 1, 0]]], np.float32)
            >>> with SummaryWriter(tempfile.mkdtemp()) as w:
            ...     w.add_mesh("tri", v, faces=np.array([[[0, 1, 2]]]), global_step=0)
        """
        self._write(mesh.mesh_values(torch_tag(tag), vertices, colors, faces, config_dict), global_step, walltime)

    def add_hparams(self, hparam_dict: Mapping[str, Any], metric_dict: Mapping[str, Any],
                    hparam_domain_discrete: Mapping[str, list] | None = None, run_name: str | None = None,
                    global_step: Any = None, *, name: str | None = None) -> None:
        """Add one trial to the HParams dashboard: its hyperparameters and final
        metrics, in the sub-run `<log_dir>/<run_name>` (default: the time, as
        PyTorch; `name=` is tensorboardX's spelling).

        Example:
            >>> import tempfile; from jitflow.summary import SummaryWriter
            >>> with SummaryWriter(tempfile.mkdtemp()) as w:
            ...     w.add_hparams({"lr": 0.1, "opt": "adam"}, {"hparam/accuracy": 0.9})
        """
        if run_name is not None and name is not None:
            raise ValueError("run_name and name: pass only one (name is tensorboardX's spelling of run_name)")
        run_name = run_name if run_name is not None else name
        values, metrics = hparams.hparams_values(hparam_dict, metric_dict, hparam_domain_discrete)
        run = check_run_name(str(_now()) if not run_name else run_name, "run_name")
        step = _opt_step(global_step)
        self._check_open()
        with SummaryWriter(join(self.log_dir, run), write_to_disk=self.write_to_disk, max_queue=self.max_queue,
                           flush_secs=self.flush_secs,
                           filename_suffix=self.filename_suffix) as w:
            w._write(values, None, None)
            for k, v in metrics.items():
                w.add_scalar(k, v, step)

    # --- raw --------------------------------------------------------------------------------

    def _write(self, values: list, global_step: Any, walltime: Any) -> None:
        """One Event holding `values` (validated Summary.Value protos)."""
        ev = protos.event(_wall(walltime), _opt_step(global_step), summary=summary_pb2.Summary(value=values))
        self._file.add_large(ev.SerializeToString())

    # --- lifetime ---------------------------------------------------------------------------

    def _check_open(self) -> None:
        if self._file.closed:
            raise RuntimeError(f"summary writer for {self.log_dir!r} is closed; "
                               "open a new writer to write more")

    def flush(self) -> None:
        """Block until everything added so far is in the event files (handed to
        the OS: it survives the process being killed)."""
        _each([self._file, *self._sub_writers.values()], "flush")

    def close(self) -> None:
        """Flush and close all event files; adding afterwards raises RuntimeError.
        Every file is closed even if one fails; the first error is raised."""
        _each([self._file, *self._sub_writers.values()], "close")
