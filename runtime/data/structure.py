"""Nested element structures (tuples, dicts, namedtuples of tensors), flattened as TF does.

Inside a pipeline an element is a flat tuple of numpy arrays; the dataset keeps a template
(the nesting with `TensorSpec` leaves) to pack it back for users and map functions. Dicts
flatten in sorted key order and Python lists count as one tensor in inputs, both TF's rules.

A `SparseTensor` leaf (template leaf: `SparseTensorSpec`) flattens to its three
components (indices, values, dense_shape), so most transformations carry it untouched;
`slots` tells the few that must treat it as one value (batch, unbatch, slicing) where it is.
"""
from __future__ import annotations

from typing import Any, List, Sequence, Tuple

import numpy as np

from jitflow.runtime.core import dtypes as _dt
from jitflow.runtime.ops.constant_op import convert_to_tensor
from jitflow.runtime.core.tensor import EagerTensor, Tensor, TensorSpec
from jitflow.runtime.sparse import sparse_tensor as _sp

SPARSE_WIDTH = 3  # indices, values, dense_shape


def _is_namedtuple(x: Any) -> bool:
    return isinstance(x, tuple) and hasattr(x, "_fields")


def flatten(structure: Any, lists_are_structure: bool = False) -> List[Any]:
    """The leaves of `structure`, depth first (dict keys sorted)."""
    out: List[Any] = []

    def walk(x: Any) -> None:
        if isinstance(x, _sp.SparseTensor):
            out.extend(x._components())
        elif isinstance(x, _sp.SparseTensorSpec):
            out.extend(x._component_specs())
        elif isinstance(x, tuple) or (lists_are_structure and isinstance(x, list)):
            for v in x:
                walk(v)
        elif isinstance(x, dict):
            for k in sorted(x):
                walk(x[k])
        else:
            out.append(x)
    walk(structure)
    return out


def map_structure(fn: Any, structure: Any, lists_are_structure: bool = False) -> Any:
    """`structure` with every leaf replaced by `fn(leaf)`; lists become tuples when structural."""
    if _is_namedtuple(structure):
        return type(structure)(*(map_structure(fn, v, lists_are_structure) for v in structure))
    if isinstance(structure, tuple) or (lists_are_structure and isinstance(structure, list)):
        return tuple(map_structure(fn, v, lists_are_structure) for v in structure)
    if isinstance(structure, dict):
        return {k: map_structure(fn, structure[k], lists_are_structure) for k in structure}
    return fn(structure)


def pack(template: Any, leaves: Sequence[Any]) -> Any:
    """Fill `template`'s leaves (in flatten order) with `leaves`.

    A `SparseTensorSpec` takes three leaves: tensors make a SparseTensor, numpy arrays its
    dense array (what TF's `as_numpy_iterator` gives), TensorSpecs keep the spec."""
    it = iter(leaves)

    def build(t: Any) -> Any:
        if isinstance(t, _sp.SparseTensorSpec):
            parts = [next(it) for _ in range(SPARSE_WIDTH)]
            if isinstance(parts[0], TensorSpec):
                return t
            if isinstance(parts[0], Tensor):
                return t._from_components(parts)
            return sparse_to_dense_array(*parts)
        if _is_namedtuple(t):
            return type(t)(*(build(v) for v in t))
        if isinstance(t, tuple):
            return tuple(build(v) for v in t)
        if isinstance(t, dict):
            built = {k: build(t[k]) for k in sorted(t)}
            return {k: built[k] for k in t}
        return next(it)
    return build(template)


def to_arrays(value: Any, what: str) -> Tuple[Any, List[np.ndarray], List[_dt.DType]]:
    """(template of TensorSpecs, flat arrays, flat dtypes) for a user-given nested value."""
    count = [0]

    def convert(leaf: Any) -> Any:
        i = count[0]
        count[0] += 1
        if isinstance(leaf, _sp.SparseTensor):
            for part in leaf._components():
                _eager(part, i, what)
            return leaf
        try:
            t = convert_to_tensor(leaf)
        except (TypeError, ValueError) as e:
            raise TypeError(f"{what}: component {i} cannot become a tensor: {e}") from None
        return _eager(t, i, what)

    converted = map_structure(convert, value)
    arrays, dtypes = [], []
    for t in flatten(converted):
        arrays.append(t._host() if hasattr(t, "_host") else np.asarray(t._value))
        dtypes.append(t._dtype)
    return map_structure(spec_of, converted), arrays, dtypes


def _eager(t: Any, i: int, what: str) -> Any:
    if not isinstance(t, EagerTensor):
        raise TypeError(f"{what}: component {i} is a symbolic tensor ({t!r}); datasets are built "
                        "from concrete values (build them outside jf.function)")
    return t


def spec_of(value: Any) -> Any:
    """The template leaf for a tensor or SparseTensor value (its exact shape)."""
    if isinstance(value, _sp.SparseTensor):
        return value._type_spec
    return TensorSpec(value._dims, value._dtype)


def slots(template: Any) -> List[Tuple[Any, int]]:
    """(leaf spec, position of its first flat component) for each leaf of `template`."""
    out: List[Tuple[Any, int]] = []
    start = 0

    def walk(x: Any) -> None:
        nonlocal start
        if isinstance(x, tuple):
            for v in x:
                walk(v)
        elif isinstance(x, dict):
            for k in sorted(x):
                walk(x[k])
        else:
            out.append((x, start))
            start += SPARSE_WIDTH if isinstance(x, _sp.SparseTensorSpec) else 1
    walk(template)
    return out


def is_sparse(spec: Any) -> bool:
    return isinstance(spec, _sp.SparseTensorSpec)


def sparse_to_dense_array(indices: np.ndarray, values: np.ndarray, dense_shape: np.ndarray) -> np.ndarray:
    shape = tuple(int(d) for d in np.asarray(dense_shape).reshape(-1))
    values = np.asarray(values)
    out = np.zeros(shape, dtype=values.dtype) if values.dtype != object else np.full(shape, b"", dtype=object)
    if values.size:
        out[tuple(np.asarray(indices).T)] = values
    return out


def spec_leaves(template: Any) -> List[TensorSpec]:
    return flatten(template)


def with_dims(spec: TensorSpec, dims: Any) -> TensorSpec:
    return TensorSpec(dims, spec._dtype)


def to_tensors(template: Any, flat: Sequence[np.ndarray], dtypes: Sequence[_dt.DType]) -> Any:
    """The user-facing element: `template` filled with eager tensors (datasets for window elements)."""
    return pack(template, [a[()] if d is _dt.variant else EagerTensor(a, d) for a, d in zip(flat, dtypes)])


def has_datasets(template: Any) -> bool:
    """True when some element component is a dataset (a window)."""
    return any(s._dtype is _dt.variant for s in flatten(template))


def to_numpy(template: Any, flat: Sequence[np.ndarray]) -> Any:
    """The element as numpy values (0-d arrays become numpy scalars, strings bytes), as TF does."""
    return pack(template, [a[()] if a.ndim == 0 else a for a in flat])


def leaf_as_array(value: Any, dtype: _dt.DType, what: str) -> np.ndarray:
    """One produced value (a tensor or Python/numpy value) as an array of `dtype`."""
    if isinstance(value, Tensor):
        if value._dtype is not dtype:
            raise TypeError(f"{what}: expected dtype {dtype.name}; got {value._dtype.name}")
        return _host(value, what)
    return _host(convert_to_tensor(value, dtype=dtype), what)


def _host(t: Tensor, what: str) -> np.ndarray:
    if isinstance(t, EagerTensor):
        return t._host()
    raise TypeError(f"{what}: expected a value; got the symbolic tensor {getattr(t, 'name', t)!r}, which has "
                    "a value only while its graph runs")
