"""The `jf.sparse` arithmetic: add, elementwise with a dense tensor (`sp * x`, `sp / x`),
reduce_sum, concat, sparse_dense_matmul (with its gradient for the values and the dense
operand, what training through sparse features needs). Conventions as in `sparse_ops.py`.
"""
from __future__ import annotations

from typing import Any, List, Optional, Sequence, Tuple

import numpy as np

from jitflow.runtime.core import dtypes as _dt
from jitflow.runtime.core.errors import InvalidArgumentError
from jitflow.runtime.core.tensor import Tensor
from jitflow.runtime.ops import array_ops as A
from jitflow.runtime.ops import math_ops as M
from jitflow.runtime.ops.constant_op import convert_to_tensor
from jitflow.runtime.ops.indexing_ops import gather
from jitflow.runtime.ops.registry import apply, gradient, not_differentiable, register
from jitflow.runtime.sparse.sparse_ops import _I64, _check, _linear, _shape_of, _sparse_out, _unravel, from_dense
from jitflow.runtime.ops.sparse_shapes import concat_shape
from jitflow.runtime.sparse.sparse_tensor import OPERATORS, Dims, SparseTensor


# -- add -------------------------------------------------------------------------------------
def _add_kernel(a_indices, a_values, a_shape, b_indices, b_values, b_shape, thresh):
    shape = _shape_of(a_shape)
    if shape != _shape_of(b_shape):
        raise InvalidArgumentError(f"sparse.add: Operands' shapes do not match: A.shape = {list(shape)} vs "
                                   f"B.shape = {list(_shape_of(b_shape))}")
    la = _linear(a_indices, shape, "sparse.add (a)")
    lb = _linear(b_indices, shape, "sparse.add (b)")
    a_values, b_values = np.asarray(a_values), np.asarray(b_values)
    linear = np.concatenate([la, lb])
    values = np.concatenate([a_values, b_values])
    order = np.argsort(linear, kind="stable")
    linear, values = linear[order], values[order]
    first = np.ones(len(linear), dtype=bool)
    first[1:] = linear[1:] != linear[:-1]
    starts = np.nonzero(first)[0]
    summed = np.add.reduceat(values, starts, dtype=values.dtype) if len(values) else values  # numpy widens ints
    both = np.diff(np.append(starts, len(values))) > 1
    keep = ~both | (np.abs(summed) >= thresh)  # TF keeps a sum when thresh <= |sum|; single entries always
    return _unravel(linear[starts][keep], shape), summed[keep], np.asarray(shape, dtype=_I64)


def _add_infer(specs, attrs):
    return [(specs[0][0] and (None, specs[0][0][1]), _dt.int64), ((None,), specs[1][1]), (specs[2][0], _dt.int64)]


register("SparseAdd", _add_infer, cpu=_add_kernel, public_name="sparse.add", default_name="SparseAdd")


def _dense_add_kernel(indices, values, dense_shape, dense):
    dense = np.asarray(dense)
    shape = _shape_of(dense_shape)
    out = np.array(np.broadcast_to(dense, shape), dtype=np.result_type(dense, np.asarray(values)), order="C")
    np.add.at(out.reshape(-1), _linear(indices, shape, "sparse.add"), values)
    return out


def _dense_add_infer(specs, attrs):
    return [(attrs["_dims"], specs[1][1])]


register("SparseTensorDenseAdd", _dense_add_infer, cpu=_dense_add_kernel, public_name="sparse.add",
         default_name="SparseTensorDenseAdd")


def add(a: Any, b: Any, threshold: Any = 0, name: Optional[str] = None) -> Any:
    """`a + b`: sparse + sparse is sparse (a sum whose magnitude is below `threshold` is dropped),
    sparse + dense (either order) is dense, as TF's `tf.sparse.add`.

    >>> a = jf.sparse.SparseTensor([[0, 0], [1, 1]], [1.0, 2.0], [2, 2])
    >>> b = jf.sparse.SparseTensor([[1, 1]], [3.0], [2, 2])
    >>> jf.sparse.add(a, b).values.numpy().tolist()
    [1.0, 5.0]
    >>> jf.sparse.add(a, jf.ones([2, 2])).numpy().tolist()
    [[2.0, 1.0], [1.0, 3.0]]
    """
    if not isinstance(a, SparseTensor):
        a, b = b, a
    a = _check(a, "a")
    if isinstance(b, SparseTensor):
        if b.dtype is not a.dtype:
            raise TypeError(f"b: expected a SparseTensor of dtype {a.dtype.name} (a's); got {b.dtype.name}")
        thresh = np.asarray(threshold.numpy() if hasattr(threshold, "numpy") else threshold).item()
        indices, values, shape = apply("SparseAdd", [a.indices, a.values, a.dense_shape,
                                                     b.indices, b.values, b.dense_shape],
                                       {"thresh": thresh}, name=name)
        dims = a._dims if a._dims is not None else b._dims
        return _sparse_out(indices, values, shape, dims)
    dense = convert_to_tensor(b, dtype=a.dtype)
    return apply("SparseTensorDenseAdd", [a.indices, a.values, a.dense_shape, dense],
                 {"_dims": a._dims}, name=name)[0]


# -- elementwise with a dense tensor (SparseTensor * dense, / dense) -------------------------
def _cwise_kernel(indices, values, dense_shape, dense, mode):
    shape = _shape_of(dense_shape)
    dense = np.asarray(dense)
    if dense.ndim > len(shape):
        raise InvalidArgumentError(f"SparseTensor {mode}: the dense operand (shape {list(dense.shape)}) must "
                                   f"broadcast to the sparse shape {list(shape)}")
    picked = np.broadcast_to(dense, shape).reshape(-1)[_linear(indices, shape, f"SparseTensor {mode}")]
    values = np.asarray(values)
    return (values * picked if mode == "mul" else values / picked).astype(values.dtype, copy=False)


def _cwise_infer(specs, attrs):
    return [(specs[1][0], specs[1][1])]


register("SparseDenseCwiseOp", _cwise_infer, cpu=_cwise_kernel, public_name="sparse.cwise",
         default_name="SparseDenseCwiseMul")


def cwise(sp: SparseTensor, other: Any, mode: str) -> SparseTensor:
    """`sp * dense` / `sp / dense`: a SparseTensor (the dense operand broadcast to `sp`'s positions)."""
    if isinstance(other, SparseTensor):
        raise TypeError(f"SparseTensor {mode}: the other operand must be dense (TF's rule); got a SparseTensor")
    dense = convert_to_tensor(other, dtype=sp.dtype)
    values = apply("SparseDenseCwiseOp", [sp.indices, sp.values, sp.dense_shape, dense], {"mode": mode})[0]
    return sp.with_values(values)


OPERATORS.update(mul=lambda sp, other: cwise(sp, other, "mul"), div=lambda sp, other: cwise(sp, other, "div"),
                 add=lambda sp, other: add(sp, other), neg=lambda sp: sp.with_values(M.negative(sp.values)))


# -- reduce_sum ------------------------------------------------------------------------------
def _axes(axis: Any, rank: int, what: str) -> Tuple[int, ...]:
    if axis is None:
        return tuple(range(rank))
    items = [axis] if np.ndim(axis) == 0 else list(np.asarray(axis).reshape(-1))
    out = []
    for a in items:
        a = int(a)
        if not -rank <= a < rank:
            raise InvalidArgumentError(f"{what}: axis {a} is out of range for a rank-{rank} SparseTensor")
        out.append(a % rank)
    return tuple(sorted(set(out)))


def _reduce_sum_kernel(indices, values, dense_shape, axis, keepdims):
    shape = _shape_of(dense_shape)
    axes = _axes(axis, len(shape), "sparse.reduce_sum")
    kept = [d for d in range(len(shape)) if d not in axes]
    out_shape = tuple(shape[d] for d in kept)
    values = np.asarray(values)
    out = np.zeros(int(np.prod(out_shape)) if out_shape else 1, dtype=values.dtype)
    linear = _linear(indices, shape, "sparse.reduce_sum")
    full = _unravel(linear, shape)
    target = np.ravel_multi_index(tuple(full[:, kept].T), out_shape) if kept else np.zeros(len(linear), dtype=_I64)
    np.add.at(out, target, values)
    out = out.reshape(out_shape)
    if keepdims:
        out = out.reshape(tuple(1 if d in axes else shape[d] for d in range(len(shape))))
    return out


def _reduce_sum_infer(specs, attrs):
    dims = attrs["_dims"]
    if dims is None:
        return [(None, specs[1][1])]
    axes = _axes(attrs["axis"], len(dims), "axis")
    if attrs["keepdims"]:
        return [(tuple(1 if d in axes else n for d, n in enumerate(dims)), specs[1][1])]
    return [(tuple(n for d, n in enumerate(dims) if d not in axes), specs[1][1])]


register("SparseReduceSum", _reduce_sum_infer, cpu=_reduce_sum_kernel, public_name="sparse.reduce_sum",
         default_name="SparseReduceSum")


def reduce_sum(sp_input: Any, axis: Any = None, keepdims: Optional[bool] = None, output_is_sparse: bool = False,
               name: Optional[str] = None) -> Any:
    """The sum over `axis` (all by default) as a dense tensor (`output_is_sparse=True`: a SparseTensor).

    >>> st = jf.sparse.SparseTensor([[0, 0], [0, 2], [1, 1]], [1, 2, 3], [2, 3])
    >>> jf.sparse.reduce_sum(st).numpy(), jf.sparse.reduce_sum(st, axis=1).numpy().tolist()
    (np.int32(6), [3, 3])
    """
    sp = _check(sp_input, "sp_input")
    axis = axis.numpy() if hasattr(axis, "numpy") else axis
    axis_attr = None if axis is None else tuple(int(a) for a in np.asarray(axis).reshape(-1))
    out = apply("SparseReduceSum", [sp.indices, sp.values, sp.dense_shape],
                {"axis": axis_attr, "keepdims": bool(keepdims), "_dims": sp._dims}, name=name)[0]
    return from_dense(out) if output_is_sparse else out


# -- concat ----------------------------------------------------------------------------------
def _concat_kernel(*parts, concat_dim, expand_nonconcat_dims):
    groups = [parts[i:i + 3] for i in range(0, len(parts), 3)]
    shapes = [_shape_of(s) for _, _, s in groups]
    axis, out_shape = concat_shape(shapes, concat_dim, expand_nonconcat_dims)
    rank = len(out_shape)
    offset = 0
    all_indices, all_values = [], []
    for (ind, val, _), s in zip(groups, shapes):
        ind = np.array(ind, dtype=_I64).reshape(-1, rank)
        _linear(ind, s, "sparse.concat")
        ind[:, axis] += offset
        offset += s[axis]
        all_indices.append(ind)
        all_values.append(np.asarray(val))
    indices = np.concatenate(all_indices)
    values = np.concatenate(all_values)
    order = np.argsort(_linear(indices, tuple(out_shape), "sparse.concat"), kind="stable")
    return indices[order], values[order], np.asarray(out_shape, dtype=_I64)


def _concat_infer(specs, attrs):
    return [(specs[0][0], _dt.int64), ((None,), specs[1][1]), (specs[2][0], _dt.int64)]


register("SparseConcat", _concat_infer, cpu=_concat_kernel, public_name="sparse.concat", default_name="SparseConcat")


def concat(axis: int, sp_inputs: Sequence[Any], expand_nonconcat_dims: bool = False,
           name: Optional[str] = None) -> SparseTensor:
    """Concatenate SparseTensors along `axis` (other dims equal, or the largest with
    `expand_nonconcat_dims=True`); the result is in row-major order.

    >>> a = jf.sparse.SparseTensor([[0, 2], [1, 0]], [1, 2], [2, 3])
    >>> b = jf.sparse.SparseTensor([[0, 1]], [3], [2, 4])
    >>> c = jf.sparse.concat(1, [a, b])
    >>> c.indices.numpy().tolist(), c.values.numpy().tolist(), c.shape
    ([[0, 2], [0, 4], [1, 0]], [1, 3, 2], TensorShape([2, 7]))
    """
    inputs = [_check(s, f"sp_inputs[{i}]") for i, s in enumerate(sp_inputs)]
    if not inputs:
        raise ValueError("sp_inputs: expected at least one SparseTensor; got none")
    if len({s.dtype for s in inputs}) > 1:
        raise TypeError(f"sp_inputs: all must have one dtype; got {[s.dtype.name for s in inputs]}")
    flat = [t for s in inputs for t in (s.indices, s.values, s.dense_shape)]
    indices, values, shape = apply("SparseConcat", flat, {"concat_dim": int(axis),
                                                          "expand_nonconcat_dims": bool(expand_nonconcat_dims)},
                                   name=name)
    return _sparse_out(indices, values, shape, _concat_dims([s._dims for s in inputs], int(axis),
                                                            bool(expand_nonconcat_dims)))


def _concat_dims(all_dims: List[Dims], axis: int, expand: bool) -> Dims:
    if any(d is None or None in d for d in all_dims):
        ranks = {len(d) for d in all_dims if d is not None}
        return (None,) * ranks.pop() if len(ranks) == 1 else None
    known: List[Tuple[int, ...]] = [tuple(int(n or 0) for n in d) for d in all_dims if d is not None]  # all, here
    rank = len(known[0])
    a = axis % rank
    out = []
    for d in range(rank):
        col = [dims[d] for dims in known]
        out.append(sum(col) if d == a else (max(col) if expand else col[0]))
    return tuple(out)


# -- sparse_dense_matmul ---------------------------------------------------------------------
def _matmul_kernel(a_indices, a_values, a_shape, b, adjoint_a, adjoint_b):
    shape = _shape_of(a_shape)
    if len(shape) != 2:
        raise InvalidArgumentError(f"sparse_dense_matmul: sp_a must be a matrix; got dense shape {list(shape)}")
    _linear(a_indices, shape, "sparse_dense_matmul")
    b = np.asarray(b)
    if b.ndim != 2:
        raise InvalidArgumentError(f"sparse_dense_matmul: b must be a matrix; got shape {list(b.shape)}")
    indices = np.asarray(a_indices, dtype=_I64).reshape(-1, 2)
    values = np.asarray(a_values)
    rows, cols = indices[:, 0], indices[:, 1]
    m, k = shape
    if adjoint_a:
        rows, cols, m, k = cols, rows, k, m
        values = np.conj(values) if np.iscomplexobj(values) else values  # (np.conj makes bools int8)
    if adjoint_b:
        b = (np.conj(b) if np.iscomplexobj(b) else b).T
    if b.shape[0] != k:
        raise InvalidArgumentError(f"sparse_dense_matmul: Cannot multiply A and B because inner dimension does "
                                   f"not match: {k} vs. {b.shape[0]}")
    out = np.zeros((m, b.shape[1]), dtype=np.result_type(values, b))
    np.add.at(out, rows, values[:, None] * b[cols])
    return out


def _matmul_infer(specs, attrs):
    dims = attrs["_dims"]
    bd = specs[3][0]
    m = None if dims is None else dims[1 if attrs["adjoint_a"] else 0]
    n = None if bd is None else bd[0 if attrs["adjoint_b"] else 1]
    return [((m, n), specs[3][1])]


register("SparseTensorDenseMatMul", _matmul_infer, cpu=_matmul_kernel, public_name="sparse.sparse_dense_matmul",
         default_name="SparseTensorDenseMatMul")


def sparse_dense_matmul(sp_a: Any, b: Any, adjoint_a: bool = False, adjoint_b: bool = False,
                        name: Optional[str] = None) -> Tensor:
    """The dense product `sp_a @ b` of a sparse and a dense matrix (TF's `tf.sparse.sparse_dense_matmul`).

    >>> sp = jf.sparse.SparseTensor([[0, 1], [1, 0]], [2.0, 3.0], [2, 2])
    >>> jf.sparse.sparse_dense_matmul(sp, [[1.0, 0.0], [0.0, 1.0]]).numpy().tolist()
    [[0.0, 2.0], [3.0, 0.0]]
    """
    if isinstance(b, SparseTensor) and not isinstance(sp_a, SparseTensor):  # dense @ sparse: (b^T a^T)^T
        out = sparse_dense_matmul(b, sp_a, adjoint_a=not adjoint_b, adjoint_b=not adjoint_a)
        return A.transpose(out)
    sp = _check(sp_a, "sp_a")
    dense = convert_to_tensor(b, dtype=sp.dtype)
    return apply("SparseTensorDenseMatMul", [sp.indices, sp.values, sp.dense_shape, dense],
                 {"adjoint_a": bool(adjoint_a), "adjoint_b": bool(adjoint_b), "_dims": sp._dims}, name=name)[0]


@gradient("SparseTensorDenseMatMul")
def _matmul_grad(rec, g):
    indices, values, shape, b = rec.inputs
    adj_a, adj_b = rec.attrs["adjoint_a"], rec.attrs["adjoint_b"]
    sp = _sparse_out(indices, values, shape, rec.attrs["_dims"])
    grad_b = sparse_dense_matmul(sp, g, adjoint_a=not adj_a)  # A'^T g, the gradient of B' = adj_b ? b^T : b
    if adj_b:
        grad_b = A.transpose(grad_b)
    b_eff = A.transpose(b) if adj_b else b  # [k, n]
    rows = gather(indices, 1 if adj_a else 0, axis=1)
    cols = gather(indices, 0 if adj_a else 1, axis=1)
    grad_values = M.reduce_sum(M.multiply(gather(g, rows), gather(b_eff, cols)), axis=1)
    return [None, grad_values, None, grad_b]


not_differentiable("SparseAdd", "SparseTensorDenseAdd", "SparseDenseCwiseOp", "SparseReduceSum", "SparseConcat")

__all__ = ["add", "concat", "reduce_sum", "sparse_dense_matmul"]
