"""The `jf.sparse` ops that convert and rearrange: to/from dense, reorder, reshape, slice,
transpose, retain, expand_dims, fill_empty_rows, map_values (arithmetic: `sparse_math.py`).

Each is one registered graph op (TF's op name) on the three components. Kernels work on
numpy arrays in COO form and return indices in row-major (canonical) order, as TF's do for
ordered inputs. They run eagerly and inside `jf.function` graphs (dataset `map` functions
included). `to_dense` has a gradient (for the values).
"""
from __future__ import annotations

from typing import Any, Optional, Sequence, Tuple

import numpy as np

from jitflow.runtime.core import dtypes as _dt
from jitflow.runtime.core.errors import InvalidArgumentError
from jitflow.runtime.core.tensor import EagerTensor, Tensor
from jitflow.runtime.ops.indexing_ops import gather
from jitflow.runtime.ops.math_composite_ops import gather_nd
from jitflow.runtime.ops import math_ops as M
from jitflow.runtime.ops.constant_op import convert_to_tensor
from jitflow.runtime.ops.registry import apply, gradient, not_differentiable, register
from jitflow.runtime.sparse.sparse_tensor import Dims, SparseTensor, SparseTensorSpec

_I64 = np.int64


def _check(sp: Any, what: str) -> SparseTensor:
    if not isinstance(sp, SparseTensor):
        raise TypeError(f"{what}: expected a jf.sparse.SparseTensor; got {type(sp).__name__} {sp!r}")
    return sp


def _shape_of(dense_shape: np.ndarray) -> Tuple[int, ...]:
    return tuple(int(d) for d in np.asarray(dense_shape).reshape(-1))


def _linear(indices: np.ndarray, shape: Tuple[int, ...], what: str) -> np.ndarray:
    """Row-major positions of `indices` in `shape`; InvalidArgumentError (TF's text) when out of bounds."""
    indices = np.asarray(indices, dtype=_I64).reshape(-1, len(shape))
    bad = np.nonzero(((indices < 0) | (indices >= np.asarray(shape, dtype=_I64))).any(axis=1))[0]
    if bad.size:
        i = int(bad[0])
        raise InvalidArgumentError(f"{what}: indices[{i}] = {indices[i].tolist()} is out of bounds: need "
                                   f"0 <= index < {list(shape)}")
    if not shape:
        return np.zeros(len(indices), dtype=_I64)
    return np.asarray(np.ravel_multi_index(tuple(indices.T), shape), dtype=_I64)


def _unravel(linear: np.ndarray, shape: Tuple[int, ...]) -> np.ndarray:
    if not shape:
        return np.zeros((len(linear), 0), dtype=_I64)
    return np.stack(np.unravel_index(linear, shape), axis=1).astype(_I64).reshape(-1, len(shape))


def _sparse_out(indices: Tensor, values: Tensor, dense_shape: Tensor, dims: Dims) -> SparseTensor:
    return SparseTensor._make(indices, values, dense_shape, dims)


def _rank_spec(dims: Dims) -> Optional[int]:
    return None if dims is None else len(dims)


# -- to_dense ------------------------------------------------------------------------------
def _to_dense_kernel(indices, dense_shape, values, default_value, validate_indices):
    shape = _shape_of(dense_shape)
    linear = _linear(indices, shape, "sparse.to_dense")
    if validate_indices and linear.size > 1:
        step = np.diff(linear)
        bad = np.nonzero(step <= 0)[0]
        if bad.size:
            i = int(bad[0]) + 1
            where = np.asarray(indices)[i].tolist()
            if step[i - 1] == 0:
                raise InvalidArgumentError(f"sparse.to_dense: indices[{i}] = {where} is repeated")
            raise InvalidArgumentError(f"sparse.to_dense: indices[{i}] = {where} is out of order. Many sparse ops "
                                       "require sorted indices. Use `jf.sparse.reorder` to create a correctly "
                                       "ordered copy.")
    values = np.asarray(values)
    out = np.empty(int(np.prod(shape)) if shape else 1, dtype=values.dtype)
    out[...] = np.asarray(default_value, dtype=values.dtype)
    out[linear] = values
    return out.reshape(shape)


def _to_dense_infer(specs, attrs):
    return [(attrs["_dims"], specs[2][1])]


register("SparseToDense", _to_dense_infer, cpu=_to_dense_kernel, public_name="sparse.to_dense",
         default_name="SparseToDense")


def to_dense(sp_input: Any, default_value: Any = None, validate_indices: bool = True,
             name: Optional[str] = None) -> Tensor:
    """The dense tensor: `default_value` (0, or b"" for strings) where `sp_input` has no value.

    >>> st = jf.sparse.SparseTensor([[0, 1], [1, 0]], [5.0, 6.0], [2, 2])
    >>> jf.sparse.to_dense(st, default_value=-1.0).numpy().tolist()
    [[-1.0, 5.0], [6.0, -1.0]]
    """
    sp = _check(sp_input, "sp_input")
    dtype = sp.dtype
    if default_value is None:
        default_value = b"" if dtype is _dt.string else 0
    default = convert_to_tensor(default_value, dtype=dtype)
    return apply("SparseToDense", [sp.indices, sp.dense_shape, sp.values, default],
                 {"validate_indices": bool(validate_indices), "_dims": sp._dims}, name=name)[0]


@gradient("SparseToDense")
def _to_dense_grad(rec, g):
    indices = rec.inputs[0]
    return [None, None, gather_nd(g, indices), M.reduce_sum(g) - M.reduce_sum(gather_nd(g, indices))]


# -- from_dense ----------------------------------------------------------------------------
def _from_dense_kernel(x):
    x = np.asarray(x)
    mask = x != (b"" if x.dtype == object else 0)
    count = int(np.count_nonzero(mask))  # (reshape(-1, 0) is ambiguous for a 0-d input)
    return np.argwhere(mask).astype(_I64).reshape(count, x.ndim), x[mask], np.asarray(x.shape, dtype=_I64)


def _from_dense_infer(specs, attrs):
    dims, dtype = specs[0]
    rank = _rank_spec(dims)
    return [((None, rank), _dt.int64), ((None,), dtype), ((rank,), _dt.int64)]


register("SparseFromDense", _from_dense_infer, cpu=_from_dense_kernel, public_name="sparse.from_dense",
         default_name="SparseFromDense")


def from_dense(tensor: Any, name: Optional[str] = None) -> SparseTensor:
    """A SparseTensor of the non-zero entries (non-empty strings) of `tensor`, in row-major order.

    >>> st = jf.sparse.from_dense([[0, 3], [4, 0]])
    >>> st.indices.numpy().tolist(), st.values.numpy().tolist()
    ([[0, 1], [1, 0]], [3, 4])
    """
    x = convert_to_tensor(tensor)
    indices, values, shape = apply("SparseFromDense", [x], name=name)
    return _sparse_out(indices, values, shape, x._dims)


# -- reorder, reshape, slice, transpose ---------------------------------------------------------
def _reorder_kernel(indices, values, dense_shape):
    shape = _shape_of(dense_shape)
    order = np.argsort(_linear(indices, shape, "sparse.reorder"), kind="stable")
    return np.asarray(indices, dtype=_I64).reshape(-1, len(shape))[order], np.asarray(values)[order]


def _reorder_infer(specs, attrs):
    return [(specs[0][0], _dt.int64), (specs[1][0], specs[1][1])]


register("SparseReorder", _reorder_infer, cpu=_reorder_kernel, public_name="sparse.reorder",
         default_name="SparseReorder")


def reorder(sp_input: Any, name: Optional[str] = None) -> SparseTensor:
    """The same sparse tensor with its indices in row-major order (what most sparse ops expect).

    >>> st = jf.sparse.reorder(jf.sparse.SparseTensor([[1, 0], [0, 1]], [1, 2], [2, 2]))
    >>> st.indices.numpy().tolist(), st.values.numpy().tolist()
    ([[0, 1], [1, 0]], [2, 1])
    """
    sp = _check(sp_input, "sp_input")
    indices, values = apply("SparseReorder", [sp.indices, sp.values, sp.dense_shape], name=name)
    return _sparse_out(indices, values, sp.dense_shape, sp._dims)


def _resolve_shape(old: Tuple[int, ...], new: Sequence[int], what: str) -> Tuple[int, ...]:
    total = int(np.prod(old)) if old else 1
    new = [int(d) for d in new]
    unknown = [i for i, d in enumerate(new) if d == -1]
    if len(unknown) > 1:
        raise InvalidArgumentError(f"{what}: at most one dimension can be -1; got {new}")
    known = int(np.prod([d for d in new if d != -1])) if new else 1
    if unknown:
        if known == 0 or total % known:
            raise InvalidArgumentError(f"{what}: cannot infer the -1 in {new} for a SparseTensor with {total} "
                                       "dense values")
        new[unknown[0]] = total // known
    if int(np.prod(new) if new else 1) != total:
        raise InvalidArgumentError(f"{what}: Input to reshape is a SparseTensor with {total} dense values, but "
                                   f"the requested shape has {int(np.prod(new))}")
    return tuple(new)


def _reshape_kernel(indices, dense_shape, new_shape):
    old = _shape_of(dense_shape)
    new = _resolve_shape(old, np.asarray(new_shape).reshape(-1).tolist(), "sparse.reshape")
    return _unravel(_linear(indices, old, "sparse.reshape"), new), np.asarray(new, dtype=_I64)


def _reshape_infer(specs, attrs):
    rank = specs[2][0][0] if specs[2][0] else None
    return [((None, rank), _dt.int64), ((rank,), _dt.int64)]


register("SparseReshape", _reshape_infer, cpu=_reshape_kernel, public_name="sparse.reshape",
         default_name="SparseReshape")


def reshape(sp_input: Any, shape: Any, name: Optional[str] = None) -> SparseTensor:
    """The same values in a sparse tensor of dense shape `shape` (one dim may be -1), row-major as `jf.reshape`.

    >>> st = jf.sparse.reshape(jf.sparse.SparseTensor([[0, 1], [1, 2]], [1, 2], [2, 3]), [3, -1])
    >>> st.indices.numpy().tolist(), st.shape
    ([[0, 1], [2, 1]], TensorShape([3, 2]))
    """
    sp = _check(sp_input, "sp_input")
    new = convert_to_tensor(shape, dtype=_dt.int64)
    indices, out_shape = apply("SparseReshape", [sp.indices, sp.dense_shape, new], name=name)
    dims: Dims = None
    if isinstance(new, EagerTensor) and sp._dims is not None and None not in sp._dims:
        dims = _resolve_shape(sp._dims, np.asarray(new._value).reshape(-1).tolist(), "shape")  # type: ignore[arg-type]
    elif out_shape._dims is not None and out_shape._dims[0] is not None:
        dims = (None,) * out_shape._dims[0]
    return _sparse_out(indices, sp.values, out_shape, dims)


def _slice_kernel(indices, values, dense_shape, start, size):
    shape = np.asarray(_shape_of(dense_shape), dtype=_I64)
    start = np.asarray(start, dtype=_I64).reshape(-1)
    size = np.asarray(size, dtype=_I64).reshape(-1)
    if start.size != shape.size or size.size != shape.size:
        raise InvalidArgumentError(f"sparse.slice: start and size need {shape.size} entries (the rank); got "
                                   f"{start.size} and {size.size}")
    out_shape = np.maximum(np.minimum(start + size, shape) - np.minimum(start, shape), 0)
    indices = np.asarray(indices, dtype=_I64).reshape(-1, shape.size)
    keep = ((indices >= start) & (indices < start + size)).all(axis=1)
    return indices[keep] - start, np.asarray(values)[keep], out_shape


def _slice_infer(specs, attrs):
    return [(specs[0][0], _dt.int64), (specs[1][0], specs[1][1]), (specs[2][0], _dt.int64)]


register("SparseSlice", _slice_infer, cpu=_slice_kernel, public_name="sparse.slice", default_name="SparseSlice")


def slice(sp_input: Any, start: Any, size: Any, name: Optional[str] = None) -> SparseTensor:  # noqa: A001
    """The entries in the box `[start, start + size)`, re-indexed from `start` (clipped to the dense shape).

    >>> st = jf.sparse.SparseTensor([[0, 0], [1, 2], [2, 3]], [1, 2, 3], [3, 4])
    >>> part = jf.sparse.slice(st, [1, 1], [2, 2])
    >>> part.indices.numpy().tolist(), part.dense_shape.numpy().tolist()
    ([[0, 1]], [2, 2])
    """
    sp = _check(sp_input, "sp_input")
    indices, values, shape = apply("SparseSlice", [sp.indices, sp.values, sp.dense_shape,
                                                   convert_to_tensor(start, dtype=_dt.int64),
                                                   convert_to_tensor(size, dtype=_dt.int64)], name=name)
    return _sparse_out(indices, values, shape, None if sp._dims is None else (None,) * len(sp._dims))


def transpose(sp_input: Any, perm: Any = None, name: Optional[str] = None) -> SparseTensor:
    """The sparse tensor with its dimensions permuted by `perm` (reversed by default), reordered.

    >>> jf.sparse.transpose(jf.sparse.SparseTensor([[0, 2]], [7], [2, 3])).indices.numpy().tolist()
    [[2, 0]]
    """
    sp = _check(sp_input, "sp_input")
    if sp._dims is None:
        raise ValueError("sp_input: transpose needs a SparseTensor of known rank")
    rank = len(sp._dims)
    order = list(range(rank))[::-1] if perm is None else [int(p) for p in perm]
    if sorted(order) != list(range(rank)):
        raise ValueError(f"perm: expected a permutation of {list(range(rank))}; got {order}")
    indices = gather(sp.indices, order, axis=1)
    shape = gather(sp.dense_shape, order)
    dims = tuple(sp._dims[p] for p in order)
    return reorder(_sparse_out(indices, sp.values, shape, dims), name=name)


# -- retain, expand_dims, fill_empty_rows, map_values ------------------------------------------
def _retain_kernel(indices, values, mask):
    mask = np.asarray(mask, dtype=bool).reshape(-1)
    values = np.asarray(values)
    if mask.shape[0] != values.shape[0]:
        raise InvalidArgumentError(f"sparse.retain: to_retain has {mask.shape[0]} entries; the SparseTensor "
                                   f"has {values.shape[0]} values")
    return np.asarray(indices, dtype=_I64).reshape(values.shape[0], -1)[mask], values[mask]


register("SparseRetain", lambda specs, attrs: [((None, specs[0][0][1] if specs[0][0] else None), _dt.int64),
                                                ((None,), specs[1][1])],
         cpu=_retain_kernel, public_name="sparse.retain", default_name="SparseRetain")


def retain(sp_input: Any, to_retain: Any) -> SparseTensor:
    """The entries whose `to_retain` flag (a bool vector, one per value) is True; same dense shape.

    >>> st = jf.sparse.SparseTensor([[0, 0], [1, 1], [2, 2]], [1, 2, 3], [3, 3])
    >>> jf.sparse.retain(st, [True, False, True]).values.numpy().tolist()
    [1, 3]
    """
    sp = _check(sp_input, "sp_input")
    indices, values = apply("SparseRetain", [sp.indices, sp.values, convert_to_tensor(to_retain, dtype=_dt.bool_)])
    return _sparse_out(indices, values, sp.dense_shape, sp._dims)


def _expand_dims_kernel(indices, dense_shape, axis):
    shape = np.asarray(dense_shape, dtype=_I64).reshape(-1)
    rank = shape.shape[0]
    if not -rank - 1 <= axis <= rank:
        raise InvalidArgumentError(f"sparse.expand_dims: axis {axis} is out of range for a rank-{rank} SparseTensor")
    a = axis % (rank + 1)
    indices = np.asarray(indices, dtype=_I64).reshape(-1, rank)
    return np.insert(indices, a, 0, axis=1), np.insert(shape, a, 1)


def _expand_dims_infer(specs, attrs):
    rank = specs[1][0][0] if specs[1][0] and specs[1][0][0] is not None else None
    rank = None if rank is None else rank + 1
    return [((None, rank), _dt.int64), ((rank,), _dt.int64)]


register("SparseExpandDims", _expand_dims_infer, cpu=_expand_dims_kernel, public_name="sparse.expand_dims",
         default_name="SparseExpandDims")


def expand_dims(sp_input: Any, axis: Optional[int] = None, name: Optional[str] = None) -> SparseTensor:
    """A size-1 dimension inserted at `axis` (-1: last; default 0), as `jf.expand_dims` does.

    >>> jf.sparse.expand_dims(jf.sparse.SparseTensor([[1]], [5], [3]), axis=-1).dense_shape.numpy().tolist()
    [3, 1]
    """
    sp = _check(sp_input, "sp_input")
    axis = 0 if axis is None else int(axis)
    indices, shape = apply("SparseExpandDims", [sp.indices, sp.dense_shape], {"axis": axis}, name=name)
    dims: Dims = None
    if sp._dims is not None:
        a = axis % (len(sp._dims) + 1)
        dims = sp._dims[:a] + (1,) + sp._dims[a:]
    return _sparse_out(indices, sp.values, shape, dims)


def _fill_empty_rows_kernel(indices, values, dense_shape, default_value):
    shape = _shape_of(dense_shape)
    if not shape:
        raise InvalidArgumentError("sparse.fill_empty_rows: the SparseTensor needs at least one dimension")
    indices = np.asarray(indices, dtype=_I64).reshape(-1, len(shape))
    values = np.asarray(values)
    _linear(indices, shape, "sparse.fill_empty_rows")
    empty = np.ones(shape[0], dtype=bool)
    empty[indices[:, 0]] = False
    missing = np.nonzero(empty)[0].astype(_I64)
    new_indices = np.zeros((missing.shape[0], len(shape)), dtype=_I64)
    new_indices[:, 0] = missing
    fill = np.empty(missing.shape[0], dtype=values.dtype)
    fill[...] = np.asarray(default_value, dtype=values.dtype)
    all_indices = np.concatenate([indices, new_indices])
    order = np.argsort(all_indices[:, 0], kind="stable")  # rows in order, each row's entries as given
    return all_indices[order], np.concatenate([values, fill])[order], empty


def _fill_empty_rows_infer(specs, attrs):
    rank = specs[0][0][1] if specs[0][0] else None
    return [((None, rank), _dt.int64), ((None,), specs[1][1]), ((None,), _dt.bool_)]


register("SparseFillEmptyRows", _fill_empty_rows_infer, cpu=_fill_empty_rows_kernel,
         public_name="sparse.fill_empty_rows", default_name="SparseFillEmptyRows")


def fill_empty_rows(sp_input: Any, default_value: Any, name: Optional[str] = None) -> Tuple[SparseTensor, Tensor]:
    """Give every empty row (first dimension) one entry `[row, 0, ...] = default_value`; also
    returns which rows were empty (TF's `tf.sparse.fill_empty_rows`, used before embedding lookups).

    >>> st = jf.sparse.SparseTensor([[0, 1], [2, 0]], [5, 6], [3, 2])
    >>> filled, empty = jf.sparse.fill_empty_rows(st, -1)
    >>> filled.indices.numpy().tolist(), filled.values.numpy().tolist(), empty.numpy().tolist()
    ([[0, 1], [1, 0], [2, 0]], [5, -1, 6], [False, True, False])
    """
    sp = _check(sp_input, "sp_input")
    default = convert_to_tensor(default_value, dtype=sp.dtype)
    indices, values, empty = apply("SparseFillEmptyRows", [sp.indices, sp.values, sp.dense_shape, default],
                                   name=name)
    return _sparse_out(indices, values, sp.dense_shape, sp._dims), empty


def map_values(op: Any, *args: Any, **kwargs: Any) -> SparseTensor:
    """`op` applied to the values of the SparseTensors among `args`/`kwargs` (which must share
    their indices), other arguments passed as they are; the result keeps those indices.

    >>> st = jf.sparse.SparseTensor([[0, 1], [1, 0]], [1.0, 4.0], [2, 2])
    >>> jf.sparse.map_values(jf.sqrt, st).values.numpy().tolist()
    [1.0, 2.0]
    """
    sparse = [a for a in list(args) + list(kwargs.values()) if isinstance(a, SparseTensor)]
    if not sparse:
        raise ValueError("map_values: no SparseTensor among the arguments")
    first = sparse[0]
    for other in sparse[1:]:
        if other.indices is not first.indices:
            same = (other.indices._dims == first.indices._dims and isinstance(other.indices, EagerTensor)
                    and isinstance(first.indices, EagerTensor)
                    and np.array_equal(np.asarray(other.indices._value), np.asarray(first.indices._value)))
            if not same:
                raise ValueError("map_values: the SparseTensor arguments must have the same indices")
    unwrap = lambda a: a.values if isinstance(a, SparseTensor) else a  # noqa: E731
    values = op(*[unwrap(a) for a in args], **{k: unwrap(v) for k, v in kwargs.items()})
    return first.with_values(values)


not_differentiable("SparseRetain", "SparseExpandDims", "SparseFillEmptyRows")
not_differentiable("SparseFromDense", "SparseReorder", "SparseReshape", "SparseSlice")


__all__ = ["SparseTensor", "SparseTensorSpec", "expand_dims", "fill_empty_rows", "from_dense", "gather_nd",
           "map_values", "reorder", "reshape", "retain", "slice", "to_dense", "transpose"]
