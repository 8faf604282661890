"""Every `jf.function` trace, written to the default summary writer as it happens.

Each trace record becomes two summaries at the current step (or the function's trace
number when no step is set):
- `jitflow/trace/<function>`: the record as JSON under the `jitflow_trace` plugin, which
  the jitflow panel reads (through TensorBoard's own event loaders);
- `jitflow/retraces`: one readable Markdown line for TensorBoard's Text dashboard.
"""
from __future__ import annotations

import json
import re
from time import time as _now

from tensorboard.compat.proto import summary_pb2

from jitflow.runtime import trace_records as _records
from jitflow.runtime.context import init_scope
from jitflow.runtime.tensor import SymbolicTensor
from jitflow.summary import context, protos
from jitflow.summary.values import as_step

PLUGIN_NAME = "jitflow_trace"
TEXT_TAG = "jitflow/retraces"
TAG_PREFIX = "jitflow/trace/"


def _metadata() -> summary_pb2.SummaryMetadata:
    md = summary_pb2.SummaryMetadata()
    md.plugin_data.plugin_name = PLUGIN_NAME
    md.plugin_data.content = json.dumps({"version": 1}).encode()
    md.summary_description = "jitflow trace records (JSON); read by the jitflow panel"
    return md


def markdown(record: _records.TraceRecord) -> str:
    text = (f"**{record.function}** trace #{record.trace_number}: {record.reason} "
            f"({record.trace_seconds * 1e3:.2f} ms) at `{record.call_site}`")
    if record.advice:
        text += f" — {record.advice}"
    return text


def write_record(record: _records.TraceRecord) -> bool:
    """Write `record` to this thread's default writer; False if there is none."""
    writer = context.default_writer()
    if writer is None or not context.recording():
        return False
    step = context.get_step()
    # A step set inside a function being traced is symbolic: it has no value yet.
    step = record.trace_number if step is None or isinstance(step, SymbolicTensor) else as_step(step)
    payload = json.dumps(record.to_dict(), default=str).encode("utf-8")
    wall = _now()
    # Function names like `train.<locals>.step` hold characters tags may not: clean them
    # here, quietly (the record inside keeps the real name).
    tag = TAG_PREFIX + re.sub(r"[^-\w.]", "_", record.function.replace("<locals>", "locals"))
    with init_scope():  # records arrive while tracing; write them now, not as graph ops
        writer._write_event(protos.summary_event(tag, protos.string_tensor([payload], ()), _metadata(), step, wall))
        text_md = protos.plugin_metadata(protos.TEXT)
        writer._write_event(protos.summary_event(TEXT_TAG, protos.string_tensor([markdown(record).encode()], ()),
                                                 text_md, step, wall))
    return True


def _on_record(record: _records.TraceRecord) -> None:
    try:
        write_record(record)
    except RuntimeError:  # e.g. a default writer that was closed: never break the user's trace
        pass


_unsubscribe = _records.subscribe(_on_record)
