"""Gather, scatter and pad: the data movement behind `jf.TensorArray` and embedding lookups.

Four primitives with TF's op names and (for the cases supported) TF's semantics, each
with its gradient next to it, plus `one_hot`, which is composed (`equal` + `cast`):

- `GatherV2(params, indices)`: rows of `params` along `axis`, bounds-checked.
- `UnsortedSegmentSum(data, ids, n)`: sums rows of `data` into `n` segments; the
  gradient of gather, and gather is its gradient.
- `TensorScatterUpdate(tensor, indices, updates)`: a copy of `tensor` with rows
  replaced; indices of depth 1 (`[..., 1]`), which is what TensorArray writes need.
- `Pad(x, paddings)`: zeros around `x`; paddings may be computed at run time (a
  dynamically sized TensorArray grows with it).

Kernels never write into their inputs: tensors are immutable values.
"""
from __future__ import annotations

from typing import Any, List, Optional, Tuple

import numpy as np

from jitflow.runtime.core import dtypes as _dt
from jitflow.runtime.core.errors import InvalidArgumentError
from jitflow.runtime.core.shapes import format_dims, is_compatible
from jitflow.runtime.core.tensor import SymbolicTensor, Tensor
from jitflow.runtime.ops import array_ops as A
from jitflow.runtime.ops import math_ops as M
from jitflow.runtime.ops.constant_op import convert_to_tensor
from jitflow.runtime.ops.infer import check_kind, normalize_axis, same_dtype
from jitflow.runtime.ops.registry import apply, gradient, register


def _check_range(ids: np.ndarray, limit: int, what: str, allow_negative: bool = False) -> None:
    bad = (ids >= limit) if allow_negative else ((ids < 0) | (ids >= limit))
    if bad.any():
        at = tuple(int(i) for i in np.argwhere(bad)[0])
        raise InvalidArgumentError(f"{what}{list(at)} = {ids[at]} is not in [0, {limit})")


def _static_int(t: Tensor) -> Optional[int]:
    """The value of a scalar int tensor known before run time (eager or a graph constant)."""
    value = A._known_value(t)
    return None if value is None else int(value)


# -- GatherV2 ----------------------------------------------------------------------------
def _gather_infer(specs, attrs):
    (pd, pt), (idims, it) = specs
    check_kind(it, "i", "indices")
    if pd is None or idims is None:
        return [(None, pt)]
    if not pd:
        raise InvalidArgumentError("params must have rank >= 1; got a scalar")
    axis = normalize_axis(attrs["axis"], len(pd))
    return [(pd[:axis] + tuple(idims) + pd[axis + 1:], pt)]


def _gather_kernel(params, indices, axis):
    params, ids = np.asarray(params), np.asarray(indices)
    _check_range(ids, params.shape[axis], "jf.gather: indices")
    return np.take(params, ids, axis=axis)


register("GatherV2", _gather_infer, cpu=_gather_kernel, public_name="gather", default_name="GatherV2")


def gather(params, indices, validate_indices=None, axis=None, batch_dims=0, name=None):
    """`params` indexed by `indices` along `axis` (`tf.gather`); with `batch_dims` = b the first
    b dimensions of params and indices are batch dimensions, gathered from pairwise.

    >>> jf.gather(jf.constant([10, 20, 30]), [2, 0]).numpy()
    array([30, 10], dtype=int32)
    >>> jf.gather([[1, 2, 3], [4, 5, 6]], [[2, 0], [1, 1]], batch_dims=1).numpy()
    array([[3, 1],
           [5, 5]], dtype=int32)
    """
    p = convert_to_tensor(params)
    ids = convert_to_tensor(indices, dtype_hint=_dt.int32)
    batch_dims = int(batch_dims)
    axis = batch_dims if axis is None else int(axis)  # as TF: before a negative batch_dims is resolved
    if batch_dims < 0 and ids.ndim is not None:
        batch_dims += ids.ndim
    if p.ndim is not None:
        axis = normalize_axis(axis, p.ndim)
    if batch_dims:
        return _batched_gather(p, ids, axis, batch_dims, name)
    return apply("GatherV2", [p, ids], {"axis": int(axis)}, name=name)[0]


def _batched_gather(p: Tensor, ids: Tensor, axis: int, b: int, name: Optional[str]) -> Tensor:
    """gather with `b` batch dimensions, composed of one flat gather (so its gradient is gather's)."""
    if p.ndim is None or ids.ndim is None:
        raise ValueError("params, indices: gather with batch_dims needs tensors of known rank")
    if not 0 < b <= ids.ndim or b > axis:
        raise ValueError(f"batch_dims: expected 0 <= batch_dims <= rank(indices) ({ids.ndim}) and <= axis "
                         f"({axis}); got {b}")
    between = list(range(b, axis))  # params axes between the batch and the gathered one
    if between:  # move the gathered axis next to the batch axes
        p = A.transpose(p, list(range(b)) + [axis] + between + list(range(axis + 1, p.ndim)))
    shape = A.shape(p, out_type=ids.dtype)
    batch = M.reduce_prod(shape[:b])
    n = shape[b]
    flat_p = A.reshape(p, A.concat([A.reshape(M.multiply(batch, n), [1]), shape[b + 1:]], 0))
    offsets = M.multiply(A.range(batch, dtype=ids.dtype), n)
    flat_ids = M.add(A.reshape(ids, A.stack([batch, convert_to_tensor(-1, ids.dtype)])), A.expand_dims(offsets, 1))
    out = apply("GatherV2", [flat_p, A.reshape(flat_ids, A.shape(ids, out_type=ids.dtype))], {"axis": 0},
                name=name)[0]
    if between:  # [batch..., ids..., between..., rest...] -> [batch..., between..., ids..., rest...]
        k, m = ids.ndim - b, len(between)
        assert out.ndim is not None   # the ranks of p and ids are known (checked above)
        rest = out.ndim - b - k - m
        out = A.transpose(out, list(range(b)) + list(range(b + k, b + k + m)) + list(range(b, b + k))
                          + list(range(b + k + m, b + k + m + rest)))
    return out


# -- UnsortedSegmentSum ------------------------------------------------------------------
def _segment_sum_infer(specs, attrs):
    (dd, dt), (sd, st), (_, nt) = specs
    check_kind(dt, "fi", "data")
    check_kind(st, "i", "segment_ids")
    check_kind(nt, "i", "num_segments")
    if dd is None or sd is None:
        return [(None, dt)]
    if not is_compatible(sd, dd[:len(sd)]):
        raise InvalidArgumentError(f"segment_ids has shape {format_dims(sd)}, which is not a prefix of "
                                   f"data's shape {format_dims(dd)}")
    return [((attrs["_num"],) + dd[len(sd):], dt)]


def _segment_sum_kernel(data, segment_ids, num_segments, _num=None):
    data, ids, n = np.asarray(data), np.asarray(segment_ids), int(num_segments)
    _check_range(ids, n, "jf.math.unsorted_segment_sum: segment_ids", allow_negative=True)
    out = np.zeros((n,) + data.shape[ids.ndim:], dtype=data.dtype)
    keep = ids >= 0  # TF drops negative ids
    np.add.at(out, ids[keep], data[keep])
    return out


register("UnsortedSegmentSum", _segment_sum_infer, cpu=_segment_sum_kernel,
         public_name="math.unsorted_segment_sum")


def unsorted_segment_sum(data, segment_ids, num_segments, name=None):
    """Sum the rows of `data` whose `segment_ids` are equal; `num_segments` rows out.

    >>> jf.math.unsorted_segment_sum([1, 2, 3], [0, 1, 0], num_segments=2).numpy()
    array([4, 2], dtype=int32)
    """
    n = convert_to_tensor(num_segments, dtype_hint=_dt.int32)
    ids = convert_to_tensor(segment_ids, dtype_hint=_dt.int32)
    return apply("UnsortedSegmentSum", [convert_to_tensor(data), ids, n], {"_num": _static_int(n)},
                 name=name)[0]


# -- TensorScatterUpdate -----------------------------------------------------------------
def _scatter_infer(specs, attrs):
    (td, tt), (idims, it), (ud, ut) = specs
    check_kind(it, "i", "indices")
    same_dtype(tt, ut, ("tensor", "updates"))
    if idims is not None:
        if not idims or idims[-1] not in (1, None):
            raise InvalidArgumentError(f"indices must have shape [..., 1] (one row index each); got "
                                       f"{format_dims(idims)}")
        if td is not None and ud is not None and not is_compatible(tuple(idims[:-1]) + tuple(td[1:]), ud):
            raise InvalidArgumentError(
                f"updates has shape {format_dims(ud)}; with indices of shape {format_dims(idims)} and a "
                f"tensor of shape {format_dims(td)} it must be {format_dims(tuple(idims[:-1]) + tuple(td[1:]))}")
    return [(td, tt)]


def _scatter_kernel(tensor, indices, updates):
    out = np.array(tensor, copy=True)
    ids = np.asarray(indices)[..., 0]
    _check_range(ids, out.shape[0], "jf.tensor_scatter_nd_update: indices")
    out[ids] = updates
    return out


register("TensorScatterUpdate", _scatter_infer, cpu=_scatter_kernel,
         public_name="tensor_scatter_nd_update")


def tensor_scatter_nd_update(tensor, indices, updates, name=None):
    """A copy of `tensor` with rows `indices[..., 0]` replaced by `updates` (index depth 1).

    >>> jf.tensor_scatter_nd_update([0, 0, 0], [[1]], [9]).numpy()
    array([0, 9, 0], dtype=int32)
    """
    t = convert_to_tensor(tensor)
    ids = convert_to_tensor(indices, dtype_hint=_dt.int32)
    u = convert_to_tensor(updates, dtype_hint=t.dtype)
    return apply("TensorScatterUpdate", [t, ids, u], name=name)[0]


# -- Pad ---------------------------------------------------------------------------------
def _pad_infer(specs, attrs):
    (xd, xt), (pd, pt) = specs
    check_kind(pt, "i", "paddings")
    if xd is None:
        return [(None, xt)]
    if not is_compatible(pd, (len(xd), 2)):
        raise InvalidArgumentError(f"paddings must have shape ({len(xd)}, 2) for an input of rank "
                                   f"{len(xd)}; got {format_dims(pd)}")
    known = attrs["_paddings"] or [None] * len(xd)
    return [(tuple(None if d is None or p is None else d + p[0] + p[1] for d, p in zip(xd, known)), xt)]


def _pad_kernel(x, paddings, _paddings=None):
    x, p = np.asarray(x), np.asarray(paddings)
    if (p < 0).any():
        raise InvalidArgumentError(f"jf.pad: paddings must be >= 0; got {p.tolist()}")
    if x.ndim == 0:  # np.pad rejects the empty paddings of a scalar
        return x.copy()
    fill = b"" if x.dtype == object else 0
    return np.pad(x, p, mode="constant", constant_values=fill)


register("Pad", _pad_infer, cpu=_pad_kernel, public_name="pad")


def pad(tensor, paddings, name=None):
    """`tensor` with zeros added: `paddings[d] = [before, after]` for each dimension d.

    >>> jf.pad([[1, 2]], [[1, 0], [0, 1]]).numpy()
    array([[0, 0, 0],
           [1, 2, 0]], dtype=int32)
    """
    x = convert_to_tensor(tensor)
    p = convert_to_tensor(paddings, dtype_hint=_dt.int32)
    if x.ndim is not None and p.ndim is not None and p.shape != (x.ndim, 2):
        raise ValueError(f"paddings: expected shape ({x.ndim}, 2) for a tensor of rank {x.ndim}; "
                         f"got {format_dims(p._dims)}")
    known = A._known_value(p)
    static: Optional[List[Optional[Tuple[int, int]]]] = None
    if known is not None:
        static = [(int(a), int(b)) for a, b in known]
    elif isinstance(p, SymbolicTensor) and p.node.op.tf_op == "Pack":  # rows known one by one
        static = []
        for row in p.node.inputs:
            value = A._known_value(row)
            static.append(None if value is None else (int(value[0]), int(value[1])))
    return apply("Pad", [x, p], {"_paddings": static}, name=name)[0]


# -- one_hot (composed) ------------------------------------------------------------------
def one_hot(indices, depth, on_value=None, off_value=None, axis=None, dtype=None, name=None):
    """`depth`-long one-hot vectors for integer `indices` (out-of-range indices give all off).

    >>> one_hot([0, 2], 3).numpy()
    array([[1., 0., 0.],
           [0., 0., 1.]], dtype=float32)
    """
    ids = convert_to_tensor(indices, dtype_hint=_dt.int32)
    if not ids.dtype.is_integer:
        raise TypeError(f"indices: jf.one_hot needs an integer tensor; got dtype {ids.dtype.name}")
    if dtype is None:
        given = next((v for v in (on_value, off_value) if isinstance(v, Tensor)), None)
        dtype = given.dtype if given is not None else _dt.float32
    dtype = _dt.as_dtype(dtype)
    classes = A.range(depth, dtype=ids.dtype) if not isinstance(depth, Tensor) else A.range(A.cast(depth, ids.dtype))
    mask = M.equal(A.expand_dims(ids, -1), classes)
    if on_value is None and off_value is None:
        out = A.cast(mask, dtype)
    else:
        on = convert_to_tensor(1 if on_value is None else on_value, dtype)
        off = convert_to_tensor(0 if off_value is None else off_value, dtype)
        out = A.where(mask, on, off)
    if axis is not None and axis != -1:
        rank = out.ndim
        axis = normalize_axis(int(axis), rank)
        if axis != rank - 1:
            perm = list(range(axis)) + [rank - 1] + list(range(axis, rank - 1))
            out = A.transpose(out, perm)
    return out if name is None else A.identity(out, name=name)


# -- gradients ---------------------------------------------------------------------------
def _dim(t: Any, axis: int) -> Any:
    """Size of `t` along `axis`: an int when static, else a scalar tensor."""
    d = t._dims[axis] if t._dims is not None else None
    return d if d is not None else A.shape(t)[axis]


@gradient("GatherV2")
def _gather_grad(rec, g):
    params, indices = rec.inputs
    axis = rec.attrs["axis"]
    n = _dim(params, axis)
    if axis == 0:
        return [unsorted_segment_sum(g, indices, n), None]
    # Move the index dimensions of g to the front, sum into segments, move the axis back.
    q, rank_g = indices.ndim, g.ndim
    front = list(range(axis, axis + q)) + list(range(axis)) + list(range(axis + q, rank_g))
    summed = unsorted_segment_sum(A.transpose(g, front), indices, n)
    back = list(range(1, axis + 1)) + [0] + list(range(axis + 1, summed.ndim))
    return [A.transpose(summed, back), None]


@gradient("UnsortedSegmentSum")
def _segment_sum_grad(rec, g):
    _, ids, _ = rec.inputs
    rows = gather(g, M.maximum(ids, 0))
    keep = M.greater_equal(ids, 0)
    for _ in range(rows.ndim - ids.ndim):
        keep = A.expand_dims(keep, -1)
    return [A.where(keep, rows, A.zeros_like(rows)), None, None]


@gradient("TensorScatterUpdate")
def _scatter_grad(rec, g):
    _, indices, updates = rec.inputs
    return [tensor_scatter_nd_update(g, indices, A.zeros_like(updates)), None,
            gather(g, A.squeeze(indices, [-1]))]


@gradient("Pad")
def _pad_grad(rec, g):
    x, paddings = rec.inputs
    static = rec.attrs["_paddings"]
    key = []
    for d in range(x.ndim):
        known = static[d] if static is not None else None
        begin = known[0] if known is not None else paddings[d, 0]
        key.append(slice(begin, begin + _dim(x, d)))
    return [g[tuple(key)], None]


__all__ = ["gather", "unsorted_segment_sum", "tensor_scatter_nd_update", "pad", "one_hot"]
