"""Pure functions that build the protos TensorBoard reads.

Everything here takes plain Python / numpy values (already validated by the
writer front ends) and returns `tensorboard.compat.proto` messages; nothing
touches files or global state. `wire.py` hand-encodes the hottest of these
(scalar events) and its tests compare bytes against the builders below.

TF2 layout of a summary event: `Event{wall_time, step, summary{value{tag,
tensor, metadata{plugin_data{plugin_name, content}, summary_description,
data_class}}}}`. PyTorch's `SummaryWriter` uses the older `Value` fields
(`simple_value`, `histo`, `image`), which TensorBoard converts on load.
"""

from __future__ import annotations

from typing import Iterable, Sequence

import numpy as np
from tensorboard.compat.proto import event_pb2, summary_pb2, tensor_pb2, tensor_shape_pb2, types_pb2
from tensorboard.plugins.audio import metadata as audio_md
from tensorboard.plugins.histogram import metadata as histogram_md
from tensorboard.plugins.image import metadata as image_md
from tensorboard.plugins.scalar import metadata as scalar_md
from tensorboard.plugins.text import metadata as text_md
from tensorboard.util import tensor_util

FILE_VERSION = "brain.Event:2"
WRITER_NAME = "jitflow.summary"

# Plugin name -> data class TensorBoard's dataclass_compat would assign on load;
# setting it at write time makes the files read the same without migration.
_DATA_CLASS = {
    scalar_md.PLUGIN_NAME: summary_pb2.DATA_CLASS_SCALAR,
    histogram_md.PLUGIN_NAME: summary_pb2.DATA_CLASS_TENSOR,
    text_md.PLUGIN_NAME: summary_pb2.DATA_CLASS_TENSOR,
    image_md.PLUGIN_NAME: summary_pb2.DATA_CLASS_BLOB_SEQUENCE,
}
_METADATA_FN = {
    scalar_md.PLUGIN_NAME: scalar_md.create_summary_metadata,
    histogram_md.PLUGIN_NAME: histogram_md.create_summary_metadata,
    text_md.PLUGIN_NAME: text_md.create_summary_metadata,
    image_md.PLUGIN_NAME: image_md.create_summary_metadata,
}
SCALARS, HISTOGRAMS, TEXT, IMAGES = (
    scalar_md.PLUGIN_NAME, histogram_md.PLUGIN_NAME, text_md.PLUGIN_NAME, image_md.PLUGIN_NAME)


# --- metadata -------------------------------------------------------------------

def plugin_metadata(plugin_name: str, description: str | None = None) -> summary_pb2.SummaryMetadata:
    """SummaryMetadata for one of the built-in plugins (`scalars`, `histograms`,
    `text`, `images`), with the plugin's own content proto and data class."""
    md = _METADATA_FN[plugin_name](display_name=None, description=description)
    md.data_class = _DATA_CLASS[plugin_name]
    return md


# --- tensors --------------------------------------------------------------------

def _shape(dims: Iterable[int]) -> tensor_shape_pb2.TensorShapeProto:
    return tensor_shape_pb2.TensorShapeProto(
        dim=[tensor_shape_pb2.TensorShapeProto.Dim(size=int(d)) for d in dims])


def scalar_tensor(value: float) -> tensor_pb2.TensorProto:
    """Rank-0 float32 tensor, as TF2's `tf.summary.scalar` writes it."""
    with np.errstate(over="ignore"):  # out-of-range values become +-inf, as in TF
        v = float(np.float32(value))
    return tensor_pb2.TensorProto(dtype=types_pb2.DT_FLOAT, tensor_shape=_shape(()), float_val=[v])


def float64_tensor(array: np.ndarray) -> tensor_pb2.TensorProto:
    """A float64 tensor (histogram buckets are k x 3 of these)."""
    a = np.asarray(array, dtype=np.float64)
    return tensor_pb2.TensorProto(dtype=types_pb2.DT_DOUBLE, tensor_shape=_shape(a.shape),
                                  tensor_content=a.astype("<f8").tobytes())


def string_tensor(strings: Sequence[bytes], shape: Sequence[int] | None = None) -> tensor_pb2.TensorProto:
    """A DT_STRING tensor; `shape` defaults to a vector of len(strings)."""
    shape = (len(strings),) if shape is None else tuple(shape)
    return tensor_pb2.TensorProto(dtype=types_pb2.DT_STRING, tensor_shape=_shape(shape),
                                  string_val=list(strings))


def any_tensor(array) -> tensor_pb2.TensorProto:
    """Any numeric, bool or string numpy array (used by the raw `write`)."""
    return tensor_util.make_tensor_proto(array)


# --- events ---------------------------------------------------------------------

def event(wall_time: float, step: int | None = None, **fields) -> event_pb2.Event:
    """An Event; `step=None` leaves the field unset (PyTorch's global_step=None)."""
    ev = event_pb2.Event(wall_time=wall_time, **fields)
    if step is not None:
        ev.step = step
    return ev


def file_version_event(wall_time: float) -> event_pb2.Event:
    """The first record of every event file."""
    return event_pb2.Event(wall_time=wall_time, file_version=FILE_VERSION,
                           source_metadata=event_pb2.SourceMetadata(writer=WRITER_NAME))


def summary_event(tag: str, tensor: tensor_pb2.TensorProto,
                  metadata: summary_pb2.SummaryMetadata | None,
                  step: int | None, wall_time: float) -> event_pb2.Event:
    """One tensor summary value wrapped in an Event (the TF2 format)."""
    value = summary_pb2.Summary.Value(tag=tag, tensor=tensor)
    if metadata is not None:
        value.metadata.CopyFrom(metadata)
    return event(wall_time, step, summary=summary_pb2.Summary(value=[value]))


def scalar_event(tag: str, value: float, step: int, wall_time: float,
                 description: str | None = None) -> event_pb2.Event:
    """TF2 scalar: rank-0 float32 tensor, plugin `scalars`."""
    return summary_event(tag, scalar_tensor(value), plugin_metadata(SCALARS, description),
                         step, wall_time)


def histogram_event(tag: str, buckets: np.ndarray, step: int, wall_time: float,
                    description: str | None = None) -> event_pb2.Event:
    """TF2 histogram: k x 3 float64 tensor of (left, right, count), plugin `histograms`."""
    return summary_event(tag, float64_tensor(buckets), plugin_metadata(HISTOGRAMS, description),
                         step, wall_time)


def text_event(tag: str, strings: Sequence[bytes], shape: Sequence[int], step: int | None,
               wall_time: float, description: str | None = None) -> event_pb2.Event:
    """Text: a string tensor of any shape, plugin `text`."""
    return summary_event(tag, string_tensor(strings, shape), plugin_metadata(TEXT, description),
                         step, wall_time)


def image_event(tag: str, width: int, height: int, pngs: Sequence[bytes], step: int,
                wall_time: float, description: str | None = None) -> event_pb2.Event:
    """TF2 image: string vector [width, height, png, png, ...], plugin `images`."""
    strings = [str(width).encode(), str(height).encode(), *pngs]
    return summary_event(tag, string_tensor(strings), plugin_metadata(IMAGES, description),
                         step, wall_time)


def audio_event(tag: str, wavs: Sequence[bytes], step: int, wall_time: float,
                description: str | None = None) -> event_pb2.Event:
    """TF2 audio: [k, 2] string tensor of (WAV bytes, label), plugin `audio`.

    Written exactly as TF writes it, without a data class: TensorBoard's loader
    then projects out the labels and marks it a blob sequence (setting the data
    class here would skip that, and the dashboard would take labels for clips)."""
    md = audio_md.create_summary_metadata(display_name=None, description=description,
                                          encoding=audio_md.Encoding.Value("WAV"))
    strings = [b for wav in wavs for b in (wav, b"")]
    return summary_event(tag, string_tensor(strings, (len(wavs), 2)), md, step, wall_time)


def graph_event(graph_def: bytes, wall_time: float, step: int = 0) -> event_pb2.Event:
    """A run graph: serialized GraphDef in `Event.graph_def` (graphs plugin)."""
    return event(wall_time, step, graph_def=graph_def)


def session_start_event(step: int, wall_time: float) -> event_pb2.Event:
    """SessionLog START at `step`: TensorBoard then drops earlier-loaded data with
    step >= `step` (PyTorch's `purge_step`)."""
    return event(wall_time, step,
                 session_log=event_pb2.SessionLog(status=event_pb2.SessionLog.START))


# --- PyTorch / tensorboardX style values -------------------------------------------

def simple_value_event(tag: str, value: float, step: int | None, wall_time: float) -> event_pb2.Event:
    """Old-style scalar (`Value.simple_value`), as `torch.utils.tensorboard` writes."""
    return event(wall_time, step, summary=summary_pb2.Summary(
        value=[summary_pb2.Summary.Value(tag=tag, simple_value=value)]))


def new_style_scalar_event(tag: str, value: float, step: int | None, wall_time: float,
                           double_precision: bool = False) -> event_pb2.Event:
    """PyTorch's `new_style=True` scalar: a tensor value with plugin `scalars`."""
    if double_precision:
        tensor = tensor_pb2.TensorProto(dtype=types_pb2.DT_DOUBLE, double_val=[value])
    else:
        tensor = tensor_pb2.TensorProto(dtype=types_pb2.DT_FLOAT, float_val=[value])
    md = summary_pb2.SummaryMetadata(
        plugin_data=summary_pb2.SummaryMetadata.PluginData(plugin_name=SCALARS))
    return summary_event(tag, tensor, md, step, wall_time)


def histo_event(tag: str, histo: summary_pb2.HistogramProto, step: int | None,
                wall_time: float) -> event_pb2.Event:
    """Old-style histogram (`Value.histo`)."""
    return event(wall_time, step, summary=summary_pb2.Summary(
        value=[summary_pb2.Summary.Value(tag=tag, histo=histo)]))


def histogram_proto(vmin: float, vmax: float, num: int, total: float, sum_squares: float,
                    bucket_limit: Sequence[float], bucket: Sequence[float]) -> summary_pb2.HistogramProto:
    return summary_pb2.HistogramProto(min=vmin, max=vmax, num=num, sum=total,
                                      sum_squares=sum_squares, bucket_limit=list(bucket_limit),
                                      bucket=list(bucket))


def old_image_event(tag: str, height: int, width: int, channels: int, png: bytes,
                    step: int | None, wall_time: float) -> event_pb2.Event:
    """Old-style image (`Value.image`, PNG), as PyTorch writes."""
    image = summary_pb2.Summary.Image(height=height, width=width, colorspace=channels,
                                      encoded_image_string=png)
    return event(wall_time, step, summary=summary_pb2.Summary(
        value=[summary_pb2.Summary.Value(tag=tag, image=image)]))
