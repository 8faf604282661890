"""TF ops jitflow has no single op for, replayed as a few jitflow ops (import only).

`Relu6` is min(relu(x), 6); `Selu` is scale · (x if x > 0 else alpha · elu(x)); `ResourceGather`
reads the variable, then gathers; `MaxPoolV2` is `MaxPool` with its sizes as constant inputs;
`SpaceToBatchND`/`BatchToSpaceND`, the pair TF wraps around a dilated convolution, are
pad/reshape/transpose (and a crop). jitflow's own graphs never hold these ops, so there is no
export side. `COMPOSITES[op](inputs, attrs, const, name)` returns the output tensors.
"""
from __future__ import annotations

from typing import Any, Callable, Dict, List, Tuple

import numpy as np

from jitflow.runtime.ops import array_ops as _A
from jitflow.runtime.ops import indexing_ops as _I
from jitflow.runtime.ops import registry
from jitflow.runtime.saved_model.tf_nn_ops import import_pool


def _scalar(value: float, like: Any) -> Any:
    return registry.apply("Const", [], {"value": np.asarray(value, like.dtype.as_numpy_dtype),
                                         "dtype": like.dtype})[0]


def _relu6(inputs, attrs, const, name):
    x = inputs[0]
    return registry.apply("Minimum", [registry.apply("Relu", [x])[0], _scalar(6.0, x)], name=name)


_SELU_ALPHA, _SELU_SCALE = 1.6732632423543772848170429916717, 1.0507009873554804934193349852946


def _selu(inputs, attrs, const, name):
    """scale · (x if x > 0 else alpha · (exp(x) − 1)), as TF's kernel; Elu gives exp(x) − 1 below 0."""
    x = inputs[0]
    negative = registry.apply("Mul", [_scalar(_SELU_ALPHA, x), registry.apply("Elu", [x])[0]])[0]
    positive = registry.apply("Greater", [x, _scalar(0.0, x)])[0]
    picked = registry.apply("SelectV2", [positive, x, negative])[0]
    return registry.apply("Mul", [_scalar(_SELU_SCALE, x), picked], name=name)


def _resource_gather(inputs, attrs, const, name):
    var, indices = inputs
    if int(attrs.get("batch_dims") or 0) != 0:
        raise ValueError(f"ResourceGather: attr batch_dims is {attrs['batch_dims']}; jitflow gathers with "
                         "batch_dims=0 only")
    shape = tuple(var.shape.as_list()) if hasattr(var, "shape") and var.shape.rank is not None else None
    value = registry.apply("ReadVariableOp", [var], {"dtype": attrs["dtype"], "_shape": shape})[0]
    return registry.apply("GatherV2", [value, indices], {"axis": 0}, name=name)


def _max_pool_v2(inputs, attrs, const, name):
    op, x, pool_attrs = import_pool("MaxPool")([inputs[0]], {
        **attrs, "ksize": tuple(int(v) for v in const(1)), "strides": tuple(int(v) for v in const(2))}, const)
    return registry.apply(op, x, pool_attrs, name=name)


def _block_args(op: str, x: Any, const) -> Tuple[List[int], List[List[int]], Tuple[int, int, int]]:
    """(block_shape, paddings or crops, static (H, W, C)) of a 4-D NHWC SpaceToBatchND/BatchToSpaceND."""
    block = [int(v) for v in np.atleast_1d(const(1))]
    pads = [[int(v) for v in row] for row in np.asarray(const(2)).reshape(-1, 2)]
    dims = x._dims
    if len(block) != 2 or len(pads) != 2 or dims is None or len(dims) != 4 or None in dims[1:]:
        raise ValueError(f"{op}: jitflow runs it on NHWC images with 2 block dimensions and a known height, width "
                         f"and channels; got block_shape {block} and an input of shape {dims}")
    return block, pads, (int(dims[1]), int(dims[2]), int(dims[3]))


def _space_to_batch(inputs, attrs, const, name):
    """TF's dilated convolution prologue: pad, then fold each (b0, b1) phase of the image into the batch
    (output batch index (i0·b1 + i1)·B + b, as TF's kernel)."""
    (b0, b1), pads, (h, w, c) = _block_args("SpaceToBatchND", inputs[0], const)
    x = _I.pad(inputs[0], [[0, 0], pads[0], pads[1], [0, 0]])
    hp, wp = h + sum(pads[0]), w + sum(pads[1])
    if hp % b0 or wp % b1:
        raise ValueError(f"SpaceToBatchND: the padded size {[hp, wp]} is not a multiple of block_shape {[b0, b1]}")
    x = _A.reshape(x, [-1, hp // b0, b0, wp // b1, b1, c])
    x = _A.transpose(x, [2, 4, 0, 1, 3, 5])
    return [_A.reshape(x, [-1, hp // b0, wp // b1, c], name=name)]


def _batch_to_space(inputs, attrs, const, name):
    """The inverse: unfold the phases from the batch into the image, then crop."""
    (b0, b1), crops, (h, w, c) = _block_args("BatchToSpaceND", inputs[0], const)
    x = _A.reshape(inputs[0], [b0, b1, -1, h, w, c])
    x = _A.transpose(x, [2, 3, 0, 4, 1, 5])
    x = _A.reshape(x, [-1, h * b0, w * b1, c])
    return [_A.getitem(x, (slice(None), slice(crops[0][0], h * b0 - crops[0][1]),
                           slice(crops[1][0], w * b1 - crops[1][1]), slice(None)))]


COMPOSITES: Dict[str, Callable[..., List[Any]]] = {
    "SpaceToBatchND": _space_to_batch,
    "BatchToSpaceND": _batch_to_space,
    "Relu6": _relu6,
    "Selu": _selu,
    "ResourceGather": _resource_gather,
    "MaxPoolV2": _max_pool_v2,
}

__all__ = ["COMPOSITES"]
