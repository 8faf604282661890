"""TF math and array functions written in terms of primitive ops (gradients come for free).

`add_n`, `divide_no_nan`, `multiply_no_nan`, `is_nan`, `is_inf`, `logical_xor`,
`count_nonzero`, `log_sigmoid`, `xlogy`, `tensordot`, `reverse`, `gather_nd`, `norm`:
each follows the TF function's documented semantics, composed like TF composes them.
"""
from __future__ import annotations

import string
from typing import Any

import numpy as np

from jitflow.runtime.core import dtypes as _dt
from jitflow.runtime.core.context import name_scope
from jitflow.runtime.core.errors import InvalidArgumentError
from jitflow.runtime.core.tensor import Tensor
from jitflow.runtime.ops import array_extra_ops as AX
from jitflow.runtime.ops import array_ops as A
from jitflow.runtime.ops import math_extra_ops as E
from jitflow.runtime.ops import math_ops as M
from jitflow.runtime.ops.constant_op import binary_operands, convert_to_tensor
from jitflow.runtime.ops.indexing_ops import gather
from jitflow.runtime.ops.infer import check_kind
from jitflow.runtime.ops.nn_conv_ops import softplus
from jitflow.runtime.ops.registry import apply, register


def add_n(inputs, name=None):
    """The elementwise sum of a list of tensors of one shape and dtype (`tf.math.add_n`).

    >>> jf.add_n([jf.constant([1, 2]), jf.constant([10, 20]), jf.constant([100, 200])]).numpy()
    array([111, 222], dtype=int32)
    """
    if isinstance(inputs, (Tensor,)) or not isinstance(inputs, (list, tuple)) or not inputs:
        raise ValueError(f"inputs: expected a non-empty list of tensors; got {inputs!r}")
    with name_scope(name or "AddN"):
        tensors = [convert_to_tensor(t) for t in inputs]
        first = tensors[0]
        for k, t in enumerate(tensors[1:], 1):
            if t.dtype is not first.dtype:
                raise TypeError(f"inputs[{k}] has dtype {t.dtype.name}; inputs[0] has {first.dtype.name}")
            if not t.shape.is_compatible_with(first.shape):
                raise InvalidArgumentError(f"inputs[{k}] has shape {t.shape}; inputs[0] has {first.shape} "
                                           "(add_n does not broadcast)")
        total = first
        for t in tensors[1:]:
            total = M.add(total, t)
        return total if len(tensors) > 1 else A.identity(total)


def divide_no_nan(x, y, name=None):
    """x / y, and 0 where y is 0 (even if x is 0, inf or NaN) (`tf.math.divide_no_nan`).

    >>> jf.math.divide_no_nan([3.0, 1.0], [0.0, 4.0]).numpy()
    array([0.  , 0.25], dtype=float32)
    """
    with name_scope(name or "div_no_nan"):
        x, y = binary_operands(x, y)
        check_kind(x.dtype, "fc", "x")
        zero = M.equal(y, A.zeros_like(y))
        safe = A.where(zero, A.ones_like(y), y)
        return A.where(zero, A.zeros_like(M.divide(x, safe)), M.divide(x, safe))


def multiply_no_nan(x, y, name=None):
    """x * y, and 0 where y is 0 (even if x is inf or NaN) (`tf.math.multiply_no_nan`).

    >>> jf.math.multiply_no_nan([float("inf"), 2.0], [0.0, 3.0]).numpy()
    array([0., 6.], dtype=float32)
    """
    with name_scope(name or "mul_no_nan"):
        x, y = binary_operands(x, y)
        check_kind(x.dtype, "fc", "x")
        zero = M.equal(y, A.zeros_like(y))
        return M.multiply(A.where(zero, A.zeros_like(x), x), y)  # 0 · 0 where y is 0: no inf · 0


def is_nan(x, name=None):
    """True where x is NaN (`tf.math.is_nan`).

    >>> jf.math.is_nan([1.0, float("nan")]).numpy()
    array([False,  True])
    """
    x = convert_to_tensor(x)
    check_kind(x.dtype, "f", "x")
    return M.not_equal(x, x, name=name)


def is_inf(x, name=None):
    """True where x is +inf or -inf (`tf.math.is_inf`).

    >>> jf.math.is_inf([1.0, float("-inf"), float("nan")]).numpy()
    array([False,  True, False])
    """
    x = convert_to_tensor(x)
    check_kind(x.dtype, "f", "x")
    return M.logical_and(M.logical_not(M.is_finite(x)), M.equal(x, x), name=name)


def logical_xor(x, y, name=None):
    """x XOR y elementwise on bools (`tf.math.logical_xor`).

    >>> jf.math.logical_xor([True, True], [True, False]).numpy()
    array([False,  True])
    """
    x, y = binary_operands(x, y)
    return M.logical_and(M.logical_or(x, y), M.logical_not(M.logical_and(x, y)), name=name)


def count_nonzero(input, axis=None, keepdims=False, dtype=_dt.int64, name=None):  # noqa: A002
    """The number of non-zero elements over `axis` (`tf.math.count_nonzero`; int64 by default).

    >>> jf.math.count_nonzero([[0, 1], [2, 0]]).numpy()
    np.int64(2)
    """
    with name_scope(name or "count_nonzero"):
        x = convert_to_tensor(input)
        nonzero = M.not_equal(x, A.zeros_like(x)) if not x.dtype.is_bool else x
        return M.reduce_sum(A.cast(nonzero, _dt.as_dtype(dtype)), axis=axis, keepdims=keepdims)


def log_sigmoid(x, name=None):
    """log(sigmoid(x)) = -softplus(-x), stable for large |x| (`tf.math.log_sigmoid`).

    >>> jf.math.log_sigmoid([0.0, -100.0]).numpy()
    array([  -0.6931472, -100.       ], dtype=float32)
    """
    x = convert_to_tensor(x)
    check_kind(x.dtype, "f", "x")
    return M.negative(softplus(M.negative(x)), name=name)


def xlogy(x, y, name=None):
    """x * log(y), and 0 where x is 0 (`tf.math.xlogy`).

    >>> jf.math.xlogy([0.0, 2.0], [0.0, 3.0]).numpy()
    array([0.       , 2.1972246], dtype=float32)
    """
    with name_scope(name or "xlogy"):
        x, y = binary_operands(x, y)
        check_kind(x.dtype, "fc", "x")
        zero = M.equal(x, A.zeros_like(x))
        safe_y = A.where(zero, A.ones_like(y), y)
        return A.where(zero, A.zeros_like(x), M.multiply(x, M.log(safe_y)))


def _axes_pair(axes: Any, rank_a: int, rank_b: int):
    if isinstance(axes, Tensor):
        axes = axes.numpy().tolist()
    if isinstance(axes, (int, np.integer)):
        n = int(axes)
        if not 0 <= n <= min(rank_a, rank_b):
            raise ValueError(f"axes: {n} is out of range for tensors of rank {rank_a} and {rank_b}")
        return list(range(rank_a - n, rank_a)), list(range(n))
    if isinstance(axes, (list, tuple)) and len(axes) == 2:
        a_axes, b_axes = ([x] if isinstance(x, (int, np.integer)) else list(x) for x in axes)
        if len(a_axes) != len(b_axes):
            raise ValueError(f"axes: both lists must have one entry per contracted axis; got {axes!r}")
        return [int(x) % rank_a for x in a_axes], [int(x) % rank_b for x in b_axes]
    raise ValueError(f"axes: expected an int or a pair of axis lists; got {axes!r}")


def tensordot(a, b, axes, name=None):
    """Sum of products over `axes` of a and b (`tf.tensordot`): an int N contracts a's last N
    axes with b's first N; a pair of lists names the axes of each.

    >>> jf.tensordot([[1.0, 2.0], [3.0, 4.0]], [[1.0], [1.0]], axes=1).numpy()
    array([[3.],
           [7.]], dtype=float32)
    >>> jf.tensordot([1.0, 2.0], [3.0, 4.0], axes=0).numpy()
    array([[3., 4.],
           [6., 8.]], dtype=float32)
    """
    a, b = binary_operands(a, b)
    if a.ndim is None or b.ndim is None:
        raise ValueError("a, b: tensordot needs tensors of known rank")
    a_axes, b_axes = _axes_pair(axes, a.ndim, b.ndim)
    letters = iter(string.ascii_letters)
    a_subs = [next(letters) for _ in range(a.ndim)]
    b_subs = [next(letters) for _ in range(b.ndim)]
    for i, j in zip(a_axes, b_axes):
        b_subs[j] = a_subs[i]
    out = [c for k, c in enumerate(a_subs) if k not in a_axes] + [c for k, c in enumerate(b_subs) if k not in b_axes]
    return AX.einsum(f"{''.join(a_subs)},{''.join(b_subs)}->{''.join(out)}", a, b, name=name)


def reverse(tensor, axis, name=None):
    """`tensor` with the order of its elements reversed along each of `axis` (`tf.reverse`).

    >>> jf.reverse([[1, 2, 3], [4, 5, 6]], axis=[1]).numpy()
    array([[3, 2, 1],
           [6, 5, 4]], dtype=int32)
    """
    x = convert_to_tensor(tensor)
    axes = A._static_ints(axis, "axis")
    if axes is None or x.ndim is None:
        raise ValueError("axis: reverse needs axes known at trace time and a tensor of known rank")
    for a in axes:
        if not -max(x.ndim, 1) <= a < max(x.ndim, 1):
            raise InvalidArgumentError(f"axis: {a} is out of range for a tensor of rank {x.ndim} "
                                       f"(expected {-x.ndim} <= axis < {x.ndim})")
    axes = [int(a) % x.ndim for a in axes] if x.ndim else []
    if len(set(axes)) != len(axes):
        raise InvalidArgumentError(f"axis: {list(axis)} names an axis twice")
    with name_scope(name or "ReverseV2"):
        return x[tuple(slice(None, None, -1) if k in axes else slice(None) for k in range(x.ndim))]


def _gather_nd_infer(specs, attrs):
    (pd, dtype), (idims, idtype) = specs
    check_kind(idtype, "i", "indices")
    if pd is None or idims is None or idims[-1] is None:
        return [(None, dtype)]
    return [(idims[:-1] + pd[idims[-1]:], dtype)]


def _gather_nd_kernel(params, indices):
    params, indices = np.asarray(params), np.asarray(indices)
    depth = indices.shape[-1]
    flat = indices.reshape(-1, depth)
    bad = np.nonzero(((flat < 0) | (flat >= np.asarray(params.shape[:depth]))).any(axis=1))[0]
    if bad.size:
        i = int(bad[0])
        raise InvalidArgumentError(f"gather_nd: indices[{i}] = {flat[i].tolist()} does not index into param "
                                   f"shape {list(params.shape)}")
    return params[tuple(np.moveaxis(indices, -1, 0))]


register("GatherNd", _gather_nd_infer, cpu=_gather_nd_kernel, reference=_gather_nd_kernel, public_name="gather_nd",
         default_name="GatherNd")


def gather_nd(params, indices, batch_dims=0, name=None):
    """Slices of `params` at the index tuples in the last axis of `indices` (`tf.gather_nd`).

    >>> jf.gather_nd([[1, 2], [3, 4]], [[1, 0], [0, 1]]).numpy()
    array([3, 2], dtype=int32)
    >>> jf.gather_nd([[1, 2], [3, 4]], [[1]]).numpy()
    array([[3, 4]], dtype=int32)
    """
    if batch_dims != 0:
        raise ValueError(f"batch_dims: only 0 is supported; got {batch_dims}")
    p = convert_to_tensor(params)
    idx = convert_to_tensor(indices)
    check_kind(idx.dtype, "i", "indices")
    depth = idx.shape.as_list()[-1] if idx.ndim else None
    if depth is None or p.ndim is None or depth > p.ndim:
        raise ValueError(f"indices: the last axis (index depth) must be known and <= rank of params "
                         f"({p.ndim}); got indices of shape {idx.shape}")
    if depth < 1 and p.ndim > 0:
        raise ValueError(f"indices: the index depth (last axis) must be >= 1; got indices of shape {idx.shape}")
    return apply("GatherNd", [p, idx], name=name)[0]


def norm(tensor, ord="euclidean", axis=None, keepdims=None, name=None):  # noqa: A002 - TF's names
    """The vector or matrix norm (`tf.norm`): 'euclidean'/'fro' (2-norm of the flattened values
    or over `axis`), 1, 2 (vectors), np.inf.

    >>> float(jf.norm([3.0, 4.0]))
    5.0
    >>> jf.norm([[1.0, -2.0], [3.0, 4.0]], ord=1, axis=1).numpy()
    array([3., 7.], dtype=float32)
    """
    with name_scope(name or "norm"):
        x = convert_to_tensor(tensor)
        check_kind(x.dtype, "fc", "tensor")
        keep = bool(keepdims)
        magnitude = M.abs(x)
        axes = None if axis is None else ([axis] if isinstance(axis, int) else list(axis))
        if ord in ("euclidean", "fro") or (ord == 2 and (axes is None or len(axes) == 1)):
            if ord == "fro" and axes is not None and len(axes) != 2:
                raise ValueError(f"ord: 'fro' needs a pair of axes; got axis={axis!r}")
            return M.sqrt(M.reduce_sum(M.square(magnitude), axis=axes, keepdims=keep))
        if axes is not None and len(axes) != 1:
            raise ValueError(f"ord: {ord!r} over two axes (a matrix norm) is not supported; use 'euclidean'/'fro'")
        if ord == 1:
            return M.reduce_sum(magnitude, axis=axes, keepdims=keep)
        if ord == np.inf:
            return M.reduce_max(magnitude, axis=axes, keepdims=keep)
        if isinstance(ord, (int, float)) and ord > 0:
            p = convert_to_tensor(float(ord), dtype=magnitude.dtype)
            return M.pow(M.reduce_sum(M.pow(magnitude, p), axis=axes, keepdims=keep), M.divide(1.0, p))
        raise ValueError(f"ord: expected 'euclidean', 'fro', 1, 2, np.inf or a positive number; got {ord!r}")


def identity_n(input, name=None):  # noqa: A002 - TF's name
    """A list of identities of the tensors in `input` (`tf.identity_n`).

    >>> [t.numpy() for t in jf.identity_n([1, 2.5])]
    [np.int32(1), np.float32(2.5)]
    """
    return [A.identity(convert_to_tensor(t)) for t in input]


def embedding_lookup(params, ids, max_norm=None, name=None):
    """Rows of `params` at `ids` (`tf.nn.embedding_lookup`, one params tensor; `max_norm` clips rows).

    >>> jf.nn.embedding_lookup([[0.0, 1.0], [2.0, 3.0], [4.0, 5.0]], [2, 0]).numpy()
    array([[4., 5.],
           [0., 1.]], dtype=float32)
    """
    with name_scope(name or "embedding_lookup"):
        rows = gather(convert_to_tensor(params), ids)
        if max_norm is None:
            return rows
        norms = M.sqrt(M.reduce_sum(M.square(rows), axis=-1, keepdims=True))
        limit = convert_to_tensor(max_norm, dtype=rows.dtype)
        return A.where(M.greater(norms, limit), M.multiply(rows, M.divide(limit, norms)), rows)


def polyval(coeffs, x, name=None):
    """coeffs[0]·x^(n-1) + ... + coeffs[n-1], by Horner's rule (`tf.math.polyval`).

    >>> float(jf.math.polyval([1.0, 2.0, 3.0], 2.0))
    11.0
    """
    with name_scope(name or "polyval"):
        t = convert_to_tensor(x)
        if not isinstance(coeffs, (list, tuple)):
            raise ValueError(f"coeffs: expected a list of coefficients; got {coeffs!r}")
        if not coeffs:
            return A.zeros_like(t)
        total = convert_to_tensor(coeffs[0], dtype_hint=t.dtype)
        for c in coeffs[1:]:
            total = M.add(M.multiply(total, t), convert_to_tensor(c, dtype_hint=t.dtype))
        return total


def rint(x, name=None):
    """The nearest integer, halves to even (`tf.math.rint`; same as `jf.math.round`).

    >>> jf.math.rint([0.5, 1.5, -1.7]).numpy()
    array([ 0.,  2., -2.], dtype=float32)
    """
    return E.round(x, name=name)


__all__ = ["identity_n", "embedding_lookup", "polyval", "rint", "add_n", "divide_no_nan", "multiply_no_nan",
           "is_nan", "is_inf", "logical_xor", "count_nonzero", "log_sigmoid", "xlogy", "tensordot",
           "reverse", "gather_nd", "norm"]
