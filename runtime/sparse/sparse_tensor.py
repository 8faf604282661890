"""`SparseTensor` and `SparseTensorSpec`: TF's COO sparse tensor as three dense tensors.

A SparseTensor is `indices` (int64 `[nnz, rank]`), `values` (`[nnz]`) and `dense_shape`
(int64 `[rank]`). It is a `CompositeTensor` with a type spec, so `jf.function` keys its
cache on `SparseTensorSpec(shape, dtype)` (retracing on a new dense shape, not on a new
number of non-zeros, as TF does) and feeds the three components; cond/while loops and
datasets carry it the same way.
"""
from __future__ import annotations

from typing import Any, Callable, Dict, List, NamedTuple, Optional, Sequence, Tuple

import numpy as np

from jitflow.runtime.core import dtypes as _dt
from jitflow.runtime.core.nest import CompositeTensor, TypeSpec
from jitflow.runtime.core.shapes import TensorShape, is_compatible, normalize, relax
from jitflow.runtime.core.tensor import EagerTensor, Tensor, TensorSpec
from jitflow.runtime.ops.constant_op import convert_to_tensor

Dims = Optional[Tuple[Optional[int], ...]]


class SparseTensorSpec(TypeSpec):
    """The type of a `SparseTensor`: its dense shape (dims may be None) and dtype (TF's name).

    >>> jf.SparseTensorSpec([None, 3], jf.int32)
    SparseTensorSpec(TensorShape([None, 3]), jf.int32)
    """

    __slots__ = ("_dims", "_dtype")

    def __init__(self, shape: Any = None, dtype: Any = _dt.float32) -> None:
        self._dims: Dims = normalize(shape)
        self._dtype: _dt.DType = _dt.as_dtype(dtype)

    @property
    def shape(self) -> TensorShape:
        return TensorShape(self._dims)

    @property
    def dtype(self) -> _dt.DType:
        return self._dtype

    @property
    def value_type(self) -> type:
        return SparseTensor

    def __repr__(self) -> str:
        return f"SparseTensorSpec({self.shape!r}, jf.{self._dtype.name})"

    def __eq__(self, other: Any) -> bool:
        return isinstance(other, SparseTensorSpec) and other._dims == self._dims and other._dtype is self._dtype

    def __hash__(self) -> int:
        return hash((SparseTensorSpec, self._dims, self._dtype))

    def is_compatible_with(self, other: Any) -> bool:
        """True when `other` (a spec or a SparseTensor) has this dtype and a shape that fits."""
        if isinstance(other, SparseTensor):
            other = other._type_spec
        return (isinstance(other, SparseTensorSpec) and other._dtype is self._dtype
                and is_compatible(self._dims, other._dims))

    def most_specific_common_supertype(self, others: Sequence[Any]) -> Optional["SparseTensorSpec"]:
        dims = self._dims
        for o in others:
            if not isinstance(o, SparseTensorSpec) or o._dtype is not self._dtype:
                return None
            dims = relax(dims, o._dims)
        return SparseTensorSpec(dims, self._dtype)

    @property
    def _rank(self) -> Optional[int]:
        return None if self._dims is None else len(self._dims)

    def _component_specs(self) -> List[TensorSpec]:
        """indices `[None, rank]`, values `[None]`, dense_shape `[rank]` (what TF feeds)."""
        rank = self._rank
        return [TensorSpec((None, rank), _dt.int64), TensorSpec((None,), self._dtype),
                TensorSpec((rank,), _dt.int64)]

    def _from_components(self, components: Sequence[Any]) -> "SparseTensor":
        indices, values, dense_shape = components
        return SparseTensor._make(indices, values, dense_shape, self._dims)


class SparseTensorValue(NamedTuple):
    """A sparse tensor as numpy arrays (TF's `tf.compat.v1.SparseTensorValue`).

    >>> v = jf.sparse.SparseTensorValue([[0]], [1.0], [3])
    """
    indices: Any
    values: Any
    dense_shape: Any


# `sp * x`, `sp / x`, `sp + x`, `-sp`: filled by `sparse_math`, which defines them with ops that
# import this module (so this module cannot import them).
OPERATORS: Dict[str, Callable[..., Any]] = {}


def _operator(name: str) -> Callable[..., Any]:
    op = OPERATORS.get(name)
    if op is None:
        raise TypeError(f"SparseTensor: the {name!r} operator needs jitflow.runtime.sparse loaded "
                        "(import jitflow as jf; use jf.sparse)")
    return op


class SparseTensor(CompositeTensor):
    """A sparse tensor: `values[i]` sits at `indices[i]` of a tensor of `dense_shape` (TF's `tf.sparse.SparseTensor`).

    Indices should be in row-major order (`jf.sparse.reorder` sorts them).

    >>> st = jf.sparse.SparseTensor(indices=[[0, 0], [1, 2]], values=[1, 2], dense_shape=[3, 4])
    >>> st.shape, st.dtype
    (TensorShape([3, 4]), jf.int32)
    >>> jf.sparse.to_dense(st).numpy().tolist()
    [[1, 0, 0, 0], [0, 0, 2, 0], [0, 0, 0, 0]]
    """

    def __init__(self, indices: Any, values: Any, dense_shape: Any) -> None:
        indices = convert_to_tensor(indices, dtype=_dt.int64)
        values = convert_to_tensor(values)
        dense_shape = convert_to_tensor(dense_shape, dtype=_dt.int64)
        self._init(indices, values, dense_shape, None)

    @classmethod
    def _make(cls, indices: Tensor, values: Tensor, dense_shape: Tensor, dims: Dims) -> "SparseTensor":
        st = cls.__new__(cls)
        st._init(indices, values, dense_shape, dims)
        return st

    def __mul__(self, other: Any) -> "SparseTensor":
        return _operator("mul")(self, other)

    def __truediv__(self, other: Any) -> "SparseTensor":
        return _operator("div")(self, other)

    def __add__(self, other: Any) -> Any:
        return _operator("add")(self, other)

    __radd__ = __add__

    def __neg__(self) -> "SparseTensor":
        return _operator("neg")(self)

    def _init(self, indices: Tensor, values: Tensor, dense_shape: Tensor, dims: Dims) -> None:
        for what, t, rank in (("indices", indices, 2), ("values", values, 1), ("dense_shape", dense_shape, 1)):
            if t._dims is not None and len(t._dims) != rank:
                raise ValueError(f"SparseTensor: {what} must be a rank-{rank} tensor; got shape {list(t._dims)}")
        if indices._dtype is not _dt.int64 or dense_shape._dtype is not _dt.int64:
            raise TypeError(f"SparseTensor: indices and dense_shape must be int64; got "
                            f"{indices._dtype.name} and {dense_shape._dtype.name}")
        n_i = indices._dims[0] if indices._dims else None
        n_v = values._dims[0] if values._dims else None
        if n_i is not None and n_v is not None and n_i != n_v:
            raise ValueError(f"SparseTensor: indices has {n_i} rows but values has {n_v} entries")
        r_i = indices._dims[1] if indices._dims else None
        r_s = dense_shape._dims[0] if dense_shape._dims else None
        if r_i is not None and r_s is not None and r_i != r_s:
            raise ValueError(f"SparseTensor: indices has {r_i} columns but dense_shape has {r_s} entries")
        self._indices = indices
        self._values = values
        self._dense_shape = dense_shape
        if dense_shape.__class__ is EagerTensor:  # the static shape is the constant value, as TF's
            dims = tuple(int(d) for d in np.asarray(dense_shape._value).reshape(-1))
        elif dims is None:
            known = r_s if r_s is not None else r_i
            dims = None if known is None else (None,) * known
        self._dims: Dims = dims

    # -- TF's attributes ------------------------------------------------------------------
    @property
    def indices(self) -> Tensor:
        """int64 `[nnz, rank]`: the coordinates of the non-zero values."""
        return self._indices

    @property
    def values(self) -> Tensor:
        """`[nnz]`: the values at `indices`."""
        return self._values

    @property
    def dense_shape(self) -> Tensor:
        """int64 `[rank]`: the shape of the dense tensor this represents."""
        return self._dense_shape

    @property
    def dtype(self) -> _dt.DType:
        return self._values._dtype

    @property
    def shape(self) -> TensorShape:
        """The static dense shape (known dims from a constant `dense_shape`)."""
        return TensorShape(self._dims)

    def get_shape(self) -> TensorShape:
        return self.shape

    @property
    def _type_spec(self) -> SparseTensorSpec:  # type: ignore[override]
        return SparseTensorSpec(self._dims, self.dtype)

    def with_values(self, new_values: Any) -> "SparseTensor":
        """The same indices and dense shape with `new_values` (same number of entries).

        >>> st = jf.sparse.SparseTensor([[0, 1]], [2.0], [2, 2])
        >>> st.with_values(st.values * 10).values.numpy().tolist()
        [20.0]
        """
        values = convert_to_tensor(new_values)
        return SparseTensor._make(self._indices, values, self._dense_shape, self._dims)

    def consumers(self) -> list:
        return []

    def __repr__(self) -> str:
        return f"SparseTensor(indices={self._indices}, values={self._values}, dense_shape={self._dense_shape})"

    __str__ = __repr__

    # -- CompositeTensor ------------------------------------------------------------------
    def _components(self) -> List[Tensor]:
        return [self._indices, self._values, self._dense_shape]

    def _from_components(self, components: List[Tensor]) -> "SparseTensor":
        indices, values, dense_shape = components
        return SparseTensor._make(indices, values, dense_shape, self._dims)

    def _component_invariants(self) -> List[Any]:
        rank = None if self._dims is None else len(self._dims)
        return [(None, rank), (None,), None]  # nnz may change from one iteration to the next

    def _numpy(self) -> SparseTensorValue:
        return SparseTensorValue(np.asarray(self._indices.numpy()), np.asarray(self._values.numpy()),
                                 np.asarray(self._dense_shape.numpy()))
