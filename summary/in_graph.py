"""Summary calls inside a `jf.function`: graph ops that write every time the graph runs.

As in TF, the writer, the recording condition and (when no `step` was passed) the step
are resolved when the op *runs*, so one traced function writes to whichever writer is
the default at call time. The ops appear in the graph as `WriteScalarSummary` & co.
"""
from __future__ import annotations

from typing import Any, Dict

import numpy as np

from jitflow.runtime.core import dtypes as _dt
from jitflow.runtime.core.context import name_scope
from jitflow.runtime.ops.constant_op import convert_to_tensor
from jitflow.runtime.ops.registry import apply, register
from jitflow.runtime.core.tensor import Tensor

# kind -> TF op type
OP_TYPES = {"scalar": "WriteScalarSummary", "histogram": "WriteHistogramSummary",
            "text": "WriteSummary", "image": "WriteImageSummary", "write": "WriteRawSummary"}


def _infer(specs, attrs):
    return [((), _dt.bool_)]


def _kernel(data, *step, kind: str, tag: str, kwargs: Dict[str, Any]):
    from jitflow.summary import writer
    fn = getattr(writer, kind)
    # The tag was scoped at trace time; write it as is, whatever scope the caller is in now.
    with name_scope(""):
        written = fn(tag, data, step=int(np.asarray(step[0])) if step else None, **kwargs)
    return np.array(bool(written))


for _kind, _op in OP_TYPES.items():
    register(_op, _infer, cpu=_kernel, public_name=f"summary.{_kind}", default_name=_op, stateful=True)


def summary_op(kind: str, tag: str, data: Any, step: Any, **kwargs: Any) -> Tensor:
    """Add a summary-writing node to the graph being traced; returns its bool output."""
    inputs = [convert_to_tensor(data)]
    if step is not None:
        inputs.append(convert_to_tensor(step, dtype_hint=_dt.int64))
    return apply(OP_TYPES[kind], inputs, {"kind": kind, "tag": tag, "kwargs": kwargs}, name=OP_TYPES[kind])[0]
