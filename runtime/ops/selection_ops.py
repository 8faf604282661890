"""Ops whose output size depends on the data (`where(condition)`, `boolean_mask`, `unique`),
`searchsorted`, and scatter-adds (`tensor_scatter_nd_add`, `scatter_nd`).

Shapes known only at run time are `None` dimensions in a trace, as in TF.
"""
from __future__ import annotations

from typing import Any, Dict, List

import numpy as np

from jitflow.runtime.core import dtypes as _dt
from jitflow.runtime.core.context import name_scope
from jitflow.runtime.core.errors import InvalidArgumentError
from jitflow.runtime.core.shapes import format_dims
from jitflow.runtime.ops import array_ops as A
from jitflow.runtime.ops.constant_op import convert_to_tensor
from jitflow.runtime.ops.infer import Spec, check_kind, same_dtype
from jitflow.runtime.ops.math_composite_ops import gather_nd
from jitflow.runtime.ops.registry import apply, register


# -- where(condition): the coordinates of the true elements -----------------------------------
def _where_infer(specs: List[Spec], attrs: Dict[str, Any]) -> List[Spec]:
    dims, dtype = specs[0]
    return [((None, None if dims is None else len(dims)), _dt.int64)]


def _where_kernel(condition):
    return np.argwhere(np.asarray(condition)).astype(np.int64)


register("Where", _where_infer, cpu=_where_kernel, reference=_where_kernel, public_name="where",
         default_name="Where")


def where(condition, x=None, y=None, name=None):
    """With x and y: elementwise choice (`jf.where`); with only `condition`: the int64
    coordinates of its true (non-zero) elements, one row each (`tf.where(condition)`).

    >>> jf.where([True, False, True]).numpy()
    array([[0],
           [2]])
    >>> jf.where([True, False], [1, 2], [10, 20]).numpy()
    array([ 1, 20], dtype=int32)
    """
    if x is None and y is None:
        c = convert_to_tensor(condition)
        if not c.dtype.is_bool:
            c = apply("NotEqual", [c, A.zeros_like(c)])[0]
        return apply("Where", [c], name=name)[0]
    if x is None or y is None:
        raise ValueError("x and y: give both (elementwise choice) or neither (coordinates of true elements)")
    return A.where(condition, x, y, name=name)


def boolean_mask(tensor, mask, axis=None, name="boolean_mask"):
    """The elements (or slices along `axis`) of `tensor` where `mask` is True (`tf.boolean_mask`).

    >>> jf.boolean_mask([1, 2, 3, 4], [True, False, True, False]).numpy()
    array([1, 3], dtype=int32)
    """
    with name_scope(name):
        t = convert_to_tensor(tensor)
        m = convert_to_tensor(mask)
        if not m.dtype.is_bool:
            raise TypeError(f"mask must be a bool tensor; got dtype {m.dtype.name}")
        axis = 0 if axis is None else int(axis)
        if m.ndim is None or t.ndim is None:
            raise ValueError("tensor, mask: boolean_mask needs tensors of known rank")
        if m.ndim == 0:
            raise ValueError("mask cannot be scalar.")
        if not t.shape[axis:axis + m.ndim].is_compatible_with(m.shape):
            raise ValueError(f"Shapes {t.shape[axis:axis + m.ndim]} and {m.shape} are incompatible")
        if axis:
            perm = list(range(axis, axis + m.ndim)) + list(range(axis)) + list(range(axis + m.ndim, t.ndim))
            moved = A.transpose(t, perm)
            picked = gather_nd(moved, where(m))
            back = list(range(1, axis + 1)) + [0] + list(range(axis + 1, picked.ndim))
            return A.transpose(picked, back)
        return gather_nd(t, where(m))


# -- unique ------------------------------------------------------------------------------------
def _unique_infer(specs: List[Spec], attrs: Dict[str, Any]) -> List[Spec]:
    dims, dtype = specs[0]
    if dims is not None and len(dims) != 1:
        raise InvalidArgumentError(f"unique expects a 1-D tensor; got shape {format_dims(dims)}")
    return [((None,), dtype), (dims, attrs["out_idx"])]


def _unique_kernel(x, out_idx):
    x = np.asarray(x)
    _, first, inverse = np.unique(x, return_index=True, return_inverse=True)
    order = np.argsort(first, kind="stable")  # TF keeps the order of first occurrence
    rank = np.empty_like(order)
    rank[order] = np.arange(len(order))
    return x[np.sort(first)], rank[inverse.reshape(-1)].astype(out_idx.as_numpy_dtype)


register("Unique", _unique_infer, cpu=_unique_kernel, reference=_unique_kernel, public_name="unique",
         default_name="Unique")


def unique(x, out_idx=_dt.int32, name=None):
    """The distinct values of a 1-D tensor in order of first occurrence, and for each element the
    index of its value among them (`tf.unique`).

    >>> y, idx = jf.unique([1, 1, 2, 4, 4, 4, 7, 8, 8])
    >>> y.numpy(), idx.numpy()
    (array([1, 2, 4, 7, 8], dtype=int32), array([0, 0, 1, 2, 2, 2, 3, 4, 4], dtype=int32))
    """
    values, idx = apply("Unique", [convert_to_tensor(x)], {"out_idx": _dt.as_dtype(out_idx)}, name=name)
    return values, idx


# -- searchsorted ------------------------------------------------------------------------------
def _searchsorted_infer(specs: List[Spec], attrs: Dict[str, Any]) -> List[Spec]:
    (sd, st), (vd, vt) = specs
    same_dtype(st, vt, ("sorted_sequence", "values"))
    check_kind(st, "fi", "sorted_sequence")
    return [(vd, attrs["out_type"])]


def _searchsorted_kernel(sorted_sequence, values, side, out_type):
    s, v = np.asarray(sorted_sequence), np.asarray(values)
    if s.ndim == 1 and v.ndim == 1:
        return np.searchsorted(s, v, side=side).astype(out_type.as_numpy_dtype)
    if s.shape[:-1] != v.shape[:-1]:
        raise InvalidArgumentError(f"sorted_sequence {s.shape} and values {v.shape} must have the same leading "
                                   "dimensions")
    s2, v2 = s.reshape(-1, s.shape[-1]), v.reshape(-1, v.shape[-1])
    out = np.stack([np.searchsorted(a, b, side=side) for a, b in zip(s2, v2)]) if len(s2) else np.zeros(v2.shape)
    return out.reshape(v.shape).astype(out_type.as_numpy_dtype)


register("SearchSorted", _searchsorted_infer, cpu=_searchsorted_kernel, reference=_searchsorted_kernel,
         public_name="searchsorted", default_name="SearchSorted")


def searchsorted(sorted_sequence, values, side="left", out_type=_dt.int32, name=None):
    """Where each of `values` would go in the sorted last axis of `sorted_sequence` (`tf.searchsorted`).

    >>> jf.searchsorted([1.0, 3.0, 5.0], [2.0, 6.0, 3.0], side="right").numpy()
    array([1, 3, 2], dtype=int32)
    """
    if side not in ("left", "right"):
        raise ValueError(f"side: expected 'left' or 'right'; got {side!r}")
    s = convert_to_tensor(sorted_sequence)
    v = convert_to_tensor(values, dtype_hint=s.dtype)
    return apply("SearchSorted", [s, v], {"side": side, "out_type": _dt.as_dtype(out_type)}, name=name)[0]


# -- scatter-add -------------------------------------------------------------------------------
def _scatter_add_infer(specs: List[Spec], attrs: Dict[str, Any]) -> List[Spec]:
    (td, tt), (idd, it), (ud, ut) = specs
    check_kind(it, "i", "indices")
    same_dtype(tt, ut, ("tensor", "updates"))
    return [(td, tt)]


def _scatter_add_kernel(tensor, indices, updates):
    out = np.array(tensor, copy=True)
    idx = np.asarray(indices)
    depth = idx.shape[-1]
    flat = idx.reshape(-1, depth)
    for k in range(depth):
        if flat.size and (flat[:, k].min() < 0 or flat[:, k].max() >= out.shape[k]):
            raise InvalidArgumentError(f"indices[..., {k}] must be in [0, {out.shape[k]}); got {flat[:, k].tolist()}")
    np.add.at(out, tuple(flat[:, k] for k in range(depth)),
              np.asarray(updates).reshape((flat.shape[0],) + out.shape[depth:]))
    return out


register("TensorScatterAdd", _scatter_add_infer, cpu=_scatter_add_kernel, reference=_scatter_add_kernel,
         public_name="tensor_scatter_nd_add", default_name="TensorScatterAdd")


def tensor_scatter_nd_add(tensor, indices, updates, name=None):
    """`tensor` with `updates` added at `indices` (duplicates add up) (`tf.tensor_scatter_nd_add`).

    >>> jf.tensor_scatter_nd_add([1, 2, 3, 4], [[1], [3], [1]], [10, 20, 30]).numpy()
    array([ 1, 42,  3, 24], dtype=int32)
    """
    t = convert_to_tensor(tensor)
    return apply("TensorScatterAdd", [t, convert_to_tensor(indices, dtype_hint=_dt.int32),
                                      convert_to_tensor(updates, dtype_hint=t.dtype)], name=name)[0]


def scatter_nd(indices, updates, shape, name=None):
    """A zero tensor of `shape` with `updates` added at `indices` (`tf.scatter_nd`).

    >>> jf.scatter_nd([[4], [3], [1], [7]], [9, 10, 11, 12], [8]).numpy()
    array([ 0, 11,  0, 10,  9,  0,  0, 12], dtype=int32)
    """
    u = convert_to_tensor(updates)
    return tensor_scatter_nd_add(A.zeros(A._check_dims(shape), u.dtype), indices, u, name=name)




# -- sorted segments and bincount --------------------------------------------------------------
def _segment_sum_infer(specs: List[Spec], attrs: Dict[str, Any]) -> List[Spec]:
    (dd, dt), (sd, st) = specs
    check_kind(dt, "fic", "data")
    check_kind(st, "i", "segment_ids")
    if sd is not None and len(sd) != 1:
        raise InvalidArgumentError(f"segment_ids must be a vector; got shape {format_dims(sd)}")
    return [(None if dd is None else (None,) + tuple(dd[1:]), dt)]


def _segment_sum_kernel(data, segment_ids):
    data, ids = np.asarray(data), np.asarray(segment_ids)
    if ids.shape[0] != data.shape[0]:
        raise InvalidArgumentError(f"segment_ids should be the same size as dimension 0 of data: "
                                   f"{ids.shape[0]} != {data.shape[0]}")
    if ids.size and (np.any(np.diff(ids) < 0) or ids[0] < 0):
        raise InvalidArgumentError(f"segment ids are not increasing: {ids.tolist()}")
    n = int(ids[-1]) + 1 if ids.size else 0
    out = np.zeros((n,) + data.shape[1:], dtype=data.dtype)
    np.add.at(out, ids, data)
    return out


register("SegmentSum", _segment_sum_infer, cpu=_segment_sum_kernel, reference=_segment_sum_kernel,
         public_name="math.segment_sum", default_name="SegmentSum")


def segment_sum(data, segment_ids, name=None):
    """Sums of the rows of `data` with the same id, ids sorted; empty segments give 0 (`tf.math.segment_sum`).

    >>> jf.math.segment_sum([[1, 2], [3, 4], [5, 6]], [0, 0, 2]).numpy()
    array([[4, 6],
           [0, 0],
           [5, 6]], dtype=int32)
    """
    return apply("SegmentSum", [convert_to_tensor(data), convert_to_tensor(segment_ids, dtype_hint=_dt.int32)],
                 name=name)[0]


def segment_mean(data, segment_ids, name=None):
    """Means of the rows of `data` with the same id, ids sorted; empty segments give 0 (`tf.math.segment_mean`).

    >>> jf.math.segment_mean([1.0, 3.0, 5.0], [0, 0, 1]).numpy()
    array([2., 5.], dtype=float32)
    """
    with name_scope(name or "SegmentMean"):
        d = convert_to_tensor(data)
        ids = convert_to_tensor(segment_ids, dtype_hint=_dt.int32)
        total = segment_sum(d, ids)
        counts = segment_sum(A.ones_like(ids), ids)
        counts = A.reshape(A.cast(counts, d.dtype), A.concat([A.shape(counts), A.ones([max(d.ndim - 1, 0)],
                                                                                      _dt.int32)], 0))
        safe = A.where(counts > 0, counts, A.ones_like(counts))
        return total / safe


def _bincount_infer(specs: List[Spec], attrs: Dict[str, Any]) -> List[Spec]:
    check_kind(specs[0][1], "i", "arr")
    out = attrs["dtype"] if len(specs) == 1 else specs[1][1]
    return [((None,), out)]


def _bincount_kernel(arr, *weights, minlength, maxlength, dtype):
    a = np.asarray(arr).reshape(-1)
    if a.size and a.min() < 0:
        raise InvalidArgumentError(f"arr must be non-negative; got {a.min()}")
    w = np.asarray(weights[0]).reshape(-1) if weights else None
    if maxlength is not None:
        keep = a < maxlength
        a, w = a[keep], (w[keep] if w is not None else None)
    out = np.bincount(a, weights=w, minlength=minlength or 0)
    if maxlength is not None:
        out = out[:maxlength]
    return out.astype(dtype.as_numpy_dtype if w is None else np.asarray(weights[0]).dtype)


register("Bincount", _bincount_infer, cpu=_bincount_kernel, reference=_bincount_kernel,
         public_name="math.bincount", default_name="Bincount")


def bincount(arr, weights=None, minlength=None, maxlength=None, dtype=_dt.int32, name=None):
    """How often each value 0, 1, ... occurs in `arr` (summing `weights` instead when given)
    (`tf.math.bincount`).

    >>> jf.math.bincount([1, 1, 2, 4]).numpy()
    array([0, 2, 1, 0, 1], dtype=int32)
    """
    a = convert_to_tensor(arr)
    inputs = [a] if weights is None else [a, convert_to_tensor(weights)]
    return apply("Bincount", inputs, {"minlength": None if minlength is None else int(minlength),
                                      "maxlength": None if maxlength is None else int(maxlength),
                                      "dtype": _dt.as_dtype(dtype)}, name=name)[0]


__all__ = ["where", "boolean_mask", "unique", "searchsorted", "tensor_scatter_nd_add", "scatter_nd", "segment_sum",
           "segment_mean", "bincount"]
