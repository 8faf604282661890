"""Gradients of the selection ops (`runtime/ops/selection_ops.py`)."""
from __future__ import annotations

from jitflow.runtime.autodiff.tape import gradient, not_differentiable
from jitflow.runtime.ops.indexing_ops import gather
from jitflow.runtime.ops.array_ops import zeros_like
from jitflow.runtime.ops.math_composite_ops import gather_nd
from jitflow.runtime.ops.selection_ops import tensor_scatter_nd_add

not_differentiable("Where", "Unique", "SearchSorted", "Bincount")


@gradient("TensorScatterAdd")
def _tensor_scatter_add(rec, g):
    # out = tensor + scatter(updates): the tensor gets g; each update the g at its index.
    _, indices, _ = rec.inputs
    return [g, None, gather_nd(g, indices)]


@gradient("GatherNd")
def _gather_nd(rec, g):
    # each output slice came from params at its index vector: it goes back there (repeats add up)
    params, indices = rec.inputs
    return [tensor_scatter_nd_add(zeros_like(params), indices, g), None]


@gradient("SegmentSum")
def _segment_sum(rec, g):
    # each row of data went into the segment of its id: it gets that segment's gradient
    return [gather(g, rec.inputs[1]), None]
