"""Cross-entropy with logits (TF's `tf.nn.*_cross_entropy_with_logits`), composed of primitives.

Written with `log_softmax`, `one_hot` and a sum, so their gradients (softmax − labels)
come from the primitives' gradients, eagerly and inside `jf.function`.
"""
from __future__ import annotations

from jitflow.runtime.core import dtypes as _dt
from jitflow.runtime.core.errors import InvalidArgumentError
from jitflow.runtime.core.shapes import format_dims, is_compatible
from jitflow.runtime.core.tensor import EagerTensor
from jitflow.runtime.ops import array_ops as A
from jitflow.runtime.ops import math_ops as M
from jitflow.runtime.ops.constant_op import convert_to_tensor
from jitflow.runtime.ops.indexing_ops import one_hot


def softmax_cross_entropy_with_logits(labels, logits, axis=-1, name=None):
    """−Σ labels · log_softmax(logits) along `axis`; one loss per example.

    >>> softmax_cross_entropy_with_logits([[0., 1.]], [[0., 0.]]).numpy()
    array([0.6931472], dtype=float32)
    """
    logits = convert_to_tensor(logits)
    labels = convert_to_tensor(labels, dtype_hint=logits.dtype)
    if labels.dtype is not logits.dtype:
        raise TypeError(f"labels has dtype {labels.dtype.name} but logits has dtype {logits.dtype.name}; "
                        "cast the labels (jf.cast)")
    if not is_compatible(labels._dims, logits._dims):
        raise InvalidArgumentError(f"labels has shape {format_dims(labels._dims)} but logits has shape "
                                   f"{format_dims(logits._dims)}; they must be equal")
    out = M.negative(M.reduce_sum(M.multiply(labels, M.log_softmax(logits, axis=axis)), axis=axis))
    return out if name is None else A.identity(out, name=name)


def sparse_softmax_cross_entropy_with_logits(labels, logits, name=None):
    """−log_softmax(logits)[label] for integer class `labels` (shape = logits' shape minus the last).

    Labels outside [0, classes) raise eagerly; inside a `jf.function` they are not checked
    (and give a loss of 0).

    >>> sparse_softmax_cross_entropy_with_logits([1], [[0., 0.]]).numpy()
    array([0.6931472], dtype=float32)
    """
    logits = convert_to_tensor(logits)
    labels = convert_to_tensor(labels, dtype_hint=_dt.int32)
    if not labels.dtype.is_integer:
        raise TypeError(f"labels: expected an integer tensor of class ids; got dtype {labels.dtype.name}")
    if logits.ndim is not None and labels.ndim is not None and (
            labels.ndim != logits.ndim - 1 or not is_compatible(labels._dims, logits._dims[:-1])):
        raise InvalidArgumentError(f"labels has shape {format_dims(labels._dims)} but logits has shape "
                                   f"{format_dims(logits._dims)}; labels must have logits' shape without "
                                   "its last dimension")
    classes = logits._dims[-1] if logits._dims is not None and logits._dims[-1] is not None else None
    if isinstance(labels, EagerTensor) and classes is not None:
        values = labels._host()
        bad = (values < 0) | (values >= classes)
        if bad.any():
            raise InvalidArgumentError(f"labels: received a label value of {values[bad].flat[0]}, "
                                       f"which is outside the valid range [0, {classes})")
    depth = classes if classes is not None else A.shape(logits)[-1]
    target = one_hot(labels, depth, dtype=logits.dtype)
    out = M.negative(M.reduce_sum(M.multiply(target, M.log_softmax(logits)), axis=-1))
    return out if name is None else A.identity(out, name=name)


__all__ = ["softmax_cross_entropy_with_logits", "sparse_softmax_cross_entropy_with_logits"]
