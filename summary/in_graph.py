"""Summary calls inside a `jf.function`: graph ops that write every time the graph runs.

Which writer, step and recording condition an op uses, as in TF:

- a writer made default *inside* the function (`with writer.as_default():` in
  its body) is captured when the function is traced, like TF captures the
  writer resource; the block is long gone when the graph runs, so without the
  capture the values would be lost;
- otherwise the writer is the one that is default when the op *runs*, so one
  traced function writes to whichever writer is the default at call time;
- the step is the `step` argument, else a default step set inside the function
  (`as_default(step=t)`, `set_step(t)`, possibly a symbolic tensor: it becomes
  an input of the op), else the default step at run time;
- a `record_if` entered inside the function is captured the same way.

The ops appear in the graph as `WriteScalarSummary` & co. and output a bool
tensor: whether the value was written.
"""
from __future__ import annotations

from typing import Any, Dict

import numpy as np

from jitflow.runtime.core import dtypes as _dt
from jitflow.runtime.core.context import name_scope
from jitflow.runtime.ops.constant_op import convert_to_tensor
from jitflow.runtime.ops.registry import apply, register
from jitflow.runtime.core.tensor import SymbolicTensor, Tensor
from jitflow.summary import context

# kind -> TF op type
OP_TYPES = {"scalar": "WriteScalarSummary", "histogram": "WriteHistogramSummary",
            "text": "WriteSummary", "image": "WriteImageSummary", "write": "WriteRawSummary",
            "audio": "WriteAudioSummary", "write_raw_pb": "WriteRawProtoSummary"}
_NO_RECORD = object()
# kind -> the eager front-end function the op runs (`writer.scalar`, ...). The writer module
# imports this one to build the ops, so it fills this table in when it loads.
FRONTS: Dict[str, Any] = {}


def _infer(specs, attrs):
    return [((), _dt.bool_)]


def _kernel(data, *extra, kind: str, tag: str, kwargs: Dict[str, Any], writer: Any = None,
            has_step: bool = False, record: Any = _NO_RECORD, has_record: bool = False):
    rest = list(extra)
    step = int(np.asarray(rest.pop(0))) if has_step else None
    if has_record:
        record = bool(np.asarray(rest.pop(0)))
    fn = FRONTS[kind]
    # The tag was scoped at trace time; write it as is, whatever scope the caller is in now.
    args = (data,) if kind == "write_raw_pb" else (tag, data)  # write_raw_pb has no tag of its own
    with name_scope(""), _captured(writer, record):
        written = fn(*args, step=step, **kwargs)
    return np.array(bool(written))


class _captured:
    """Re-enter, while the op runs, the writer scope and record_if that were
    entered inside the traced function."""

    __slots__ = ("writer", "record", "saved")

    def __init__(self, writer: Any, record: Any) -> None:
        self.writer, self.record = writer, record

    def __enter__(self) -> None:
        tls = context.tls
        self.saved = (tls.writer, tls.record)
        if self.writer is not None:
            tls.writer = self.writer
        if self.record is not _NO_RECORD:
            tls.record = self.record

    def __exit__(self, *exc: Any) -> None:
        context.tls.writer, context.tls.record = self.saved


for _kind, _op in OP_TYPES.items():
    register(_op, _infer, cpu=_kernel, public_name=f"summary.{_kind}", default_name=_op, stateful=True)


def summary_op(kind: str, tag: str, data: Any, step: Any, **kwargs: Any) -> Tensor:
    """Add a summary-writing node to the graph being traced; returns its bool output."""
    tls = context.tls
    for key, value in kwargs.items():
        if isinstance(value, SymbolicTensor):
            raise TypeError(f"{key}: inside a jf.function pass a Python value, not the symbolic tensor {value.name}")
    attrs: Dict[str, Any] = {"kind": kind, "tag": tag, "kwargs": kwargs}
    inputs = [convert_to_tensor(data)]
    if tls.writer_traced:
        attrs["writer"] = tls.writer
    if step is None:
        default = context.get_step()
        # A step set inside the function (symbolic, or any value while a captured
        # writer's block is open) is only known now: make it an input.
        if isinstance(default, SymbolicTensor) or (tls.writer_traced and default is not None):
            step = default
    if step is not None:
        attrs["has_step"] = True
        inputs.append(convert_to_tensor(step, dtype_hint=_dt.int64))
    if tls.record_traced:
        cond = tls.record
        if callable(cond) and not isinstance(cond, Tensor):
            cond = cond()
        if isinstance(cond, Tensor):
            attrs["has_record"] = True
            inputs.append(convert_to_tensor(cond))
        else:
            attrs["record"] = bool(cond)
    return apply(OP_TYPES[kind], inputs, attrs, name=OP_TYPES[kind])[0]
