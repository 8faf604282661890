"""Clipping (TF's `tf.clip_by_value`, `clip_by_norm`, `clip_by_global_norm`, `global_norm`).

Composed of primitives as in TF's `clip_ops.py`, so their gradients (including TF's choice
at the boundaries: `maximum`/`minimum` pass the gradient through where x equals a bound)
come from the primitives' gradients.
"""
from __future__ import annotations

import math
from typing import List, Optional


from jitflow.runtime.core.context import name_scope
from jitflow.runtime.core.errors import InvalidArgumentError
from jitflow.runtime.core.shapes import format_dims
from jitflow.runtime.core.tensor import Tensor
from jitflow.runtime.ops import array_ops as A
from jitflow.runtime.ops import math_ops as M
from jitflow.runtime.ops.constant_op import convert_to_tensor


def clip_by_value(t, clip_value_min, clip_value_max, name=None):
    """`t` with every value limited to [clip_value_min, clip_value_max].

    >>> clip_by_value([-1.0, 0.5, 2.0], 0.0, 1.0).numpy()
    array([0. , 0.5, 1. ], dtype=float32)
    """
    with name_scope(name or "clip_by_value"):
        t = convert_to_tensor(t)
        lo = convert_to_tensor(clip_value_min, dtype_hint=t.dtype)
        hi = convert_to_tensor(clip_value_max, dtype_hint=t.dtype)
        if lo.dtype is not t.dtype or hi.dtype is not t.dtype:
            raise TypeError(f"clip_value_min/clip_value_max: expected dtype {t.dtype.name} like t; got "
                            f"{lo.dtype.name} and {hi.dtype.name}")
        out = M.minimum(M.maximum(t, lo), hi)
        if t._dims is not None and out._dims is not None and tuple(out._dims) != tuple(t._dims):
            raise InvalidArgumentError(f"clip_by_value: the bounds must broadcast to t's shape "
                                       f"{format_dims(t._dims)}; the result has shape {format_dims(out._dims)}")
        return out


def clip_by_norm(t, clip_norm, axes=None, name=None):
    """`t` scaled so that its L2 norm (over `axes`, default all) is at most `clip_norm`.

    >>> clip_by_norm([3.0, 4.0], 1.0).numpy()
    array([0.6, 0.8], dtype=float32)
    """
    with name_scope(name or "clip_by_norm"):
        t = convert_to_tensor(t)
        if not t.dtype.is_floating:
            raise TypeError(f"t: clip_by_norm needs a floating-point tensor; got dtype {t.dtype.name}")
        clip_norm = convert_to_tensor(clip_norm, dtype=t.dtype)
        l2sum = M.reduce_sum(M.square(t), axes, keepdims=True)
        pred = M.greater(l2sum, 0)
        # Where the norm is 0, use 1 so the sqrt's gradient stays finite (TF does the same).
        l2sum_safe = A.where(pred, l2sum, A.ones_like(l2sum))
        l2norm = A.where(pred, M.sqrt(l2sum_safe), l2sum)
        intermediate = M.multiply(t, clip_norm)
        return A.identity(M.divide(intermediate, M.maximum(l2norm, clip_norm)))


def global_norm(t_list, name=None):
    """sqrt(sum of squares of every value of every tensor in `t_list`); None entries are skipped.

    >>> global_norm([[3.0], [4.0]]).numpy()
    np.float32(5.0)
    """
    if isinstance(t_list, (Tensor, str)) or not hasattr(t_list, "__iter__"):
        raise TypeError(f"t_list: expected a list of tensors; got {type(t_list).__name__}")
    with name_scope(name or "global_norm"):
        tensors = [convert_to_tensor(t) for t in t_list if t is not None]
        if not tensors:
            raise ValueError("t_list: global_norm needs at least one tensor that is not None")
        half_squares = [M.reduce_sum(M.square(t)) for t in tensors]
        dtype = tensors[0].dtype
        total = half_squares[0]
        for h in half_squares[1:]:
            if h.dtype is not dtype:
                raise TypeError(f"t_list: all tensors must have one dtype; got {dtype.name} and {h.dtype.name}")
            total = M.add(total, h)
        return M.sqrt(total)


def clip_by_global_norm(t_list, clip_norm, use_norm=None, name=None):
    """Scale every tensor by clip_norm / max(global_norm, clip_norm); returns (list, global_norm).

    >>> clipped, norm = clip_by_global_norm([[3.0], [4.0]], 1.0)
    >>> [c.numpy().tolist() for c in clipped], norm.numpy()
    ([[0.6000000238418579], [0.800000011920929]], np.float32(5.0))
    """
    if isinstance(t_list, (Tensor, str)) or not hasattr(t_list, "__iter__"):
        raise TypeError(f"t_list: expected a list of tensors; got {type(t_list).__name__}")
    t_list = list(t_list)
    with name_scope(name or "clip_by_global_norm"):
        norm = global_norm(t_list) if use_norm is None else convert_to_tensor(use_norm)
        clip = convert_to_tensor(clip_norm, dtype=norm.dtype)
        # An inf or NaN global norm makes every value NaN, as in TF.
        scale = M.multiply(clip, M.minimum(M.divide(convert_to_tensor(1.0, dtype=norm.dtype), norm),
                                           M.divide(convert_to_tensor(1.0, dtype=norm.dtype), clip)))
        finite = M.is_finite(norm)
        nan = convert_to_tensor(math.nan, dtype=norm.dtype)
        scale = A.where(finite, scale, nan)
        out: List[Optional[Tensor]] = []
        for t in t_list:
            out.append(None if t is None else A.identity(M.multiply(convert_to_tensor(t), scale)))
        return out, norm


__all__ = ["clip_by_value", "clip_by_norm", "clip_by_global_norm", "global_norm"]
