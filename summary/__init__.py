"""TensorBoard summaries: TF2-style functions and a PyTorch-style SummaryWriter.

Example:
    >>> import tempfile, jitflow.summary as s
    >>> logdir = tempfile.mkdtemp()
    >>> w = s.create_file_writer(logdir)
    >>> with w.as_default():
    ...     for step in range(3):
    ...         s.experimental.set_step(step)
    ...         _ = s.scalar("loss", 1.0 / (step + 1))
    >>> w.close()
    >>> with s.SummaryWriter(logdir + "/torch") as tw:
    ...     tw.add_scalar("loss", 0.5, global_step=0)

Modules: `record_writer` (TFRecord framing, CRC-32C), `event_file` (file naming,
header, queueing, writing), `lifecycle` (the shared flusher
thread, fork, garbage collection and exit), `protos` (proto builders), `wire` (hand-encoded
scalar events), `writer` (TF2-style API), `torch_writer` (PyTorch-style API),
`plugins` (PR curves, meshes, hparams, custom scalars, audio, video,
projector), `hparams` (TensorBoard's hparams API on jitflow's writer).
"""

from jitflow.summary import experimental, hparams
from jitflow.summary import trace_records as _trace_records  # noqa: F401 -- for its effect: writes trace records
from jitflow.summary import input_pipeline as _input_pipeline  # noqa: F401 -- for its effect: input wait times
from jitflow.summary.trace import trace_export, trace_off, trace_on
from jitflow.summary.global_writer import GlobalSummaryWriter
from jitflow.summary.torch_writer import SummaryWriter
from jitflow.summary.writer import (
    NoopSummaryWriter,
    SummaryFileWriter,
    audio,
    create_file_writer,
    create_noop_writer,
    flush,
    graph,
    has_default_writer,
    histogram,
    image,
    record_if,
    scalar,
    should_record_summaries,
    summary_scope,
    text,
    write,
    write_raw_pb,
)

__all__ = [
    "SummaryWriter",
    "GlobalSummaryWriter",
    "SummaryFileWriter",
    "NoopSummaryWriter",
    "create_file_writer",
    "create_noop_writer",
    "scalar",
    "histogram",
    "text",
    "image",
    "audio",
    "graph",
    "write_raw_pb",
    "summary_scope",
    "has_default_writer",
    "hparams",
    "write",
    "flush",
    "record_if",
    "should_record_summaries",
    "experimental",
    "trace_on",
    "trace_export",
    "trace_off",
]
