"""Constants and conversion of Python/numpy values to tensors, with TF's dtype rules.

Python int → int32 (int64 when it does not fit), float → float32, bool → bool, str →
string; numpy arrays keep their dtype. Inside a trace a constant is a `Const` node.
"""
from __future__ import annotations

from typing import Any, Optional, cast

import numpy as np

from jitflow.runtime.core import context, devices
from jitflow.runtime.core import graph as _graph
from jitflow.runtime.core import dtypes as _dt
from jitflow.runtime.core.shapes import format_dims, known_dims, normalize
from jitflow.runtime.core.tensor import EagerTensor, SymbolicTensor, Tensor
from jitflow.runtime.ops import registry
from jitflow.runtime.ops.registry import apply, register


class TensorConvertible:
    """Objects that convert themselves to tensors (variables): implement `_as_tensor()`."""

    __slots__ = ()

    def _as_tensor(self, dtype: Optional[_dt.DType] = None) -> Tensor:  # pragma: no cover
        raise NotImplementedError


def _const_infer(specs, attrs):
    return [(attrs["value"].shape, attrs["dtype"])]


def _const_kernel(value, dtype):
    return value


def _bind_const(kernel, attrs, in_dtypes):
    value = attrs["value"]
    return lambda: value


register("Const", _const_infer, cpu=_const_kernel, public_name="constant", bind=_bind_const)


def _placeholder_infer(specs, attrs):
    return [(attrs["shape"], attrs["dtype"])]


def _placeholder_kernel(dtype, shape):
    raise RuntimeError("a Placeholder is fed at call time and never executed")


register("Placeholder", _placeholder_infer, cpu=_placeholder_kernel, public_name="placeholder")


def _encode_strings(arr: np.ndarray) -> np.ndarray:
    flat = [s.encode("utf-8") if isinstance(s, str) else bytes(s) for s in arr.reshape(-1).tolist()]
    out = np.empty(len(flat), dtype=object)
    out[:] = flat
    return out.reshape(arr.shape)


def _all_text(value: Any) -> bool:
    """True if every leaf of a nested list/tuple is a str or bytes."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, (list, tuple)):
            stack.extend(item)
        elif not isinstance(item, (str, bytes, np.str_, np.bytes_)):
            return False
    return True


def _preview(value: Any, limit: int = 80) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[:limit] + "..."


def _infer_numpy(value: Any) -> np.ndarray:
    """`value` as a numpy array with TF's default dtypes for Python values."""
    if isinstance(value, np.ndarray):
        arr = value
    elif isinstance(value, np.generic):  # before float: np.float64 is a Python float too
        arr = np.asarray(value)
    elif isinstance(value, bool):
        return np.array(value)
    elif isinstance(value, int):
        return np.array(value, dtype=_dt.python_scalar_dtype(value).as_numpy_dtype)
    elif isinstance(value, float):
        return np.array(value, dtype=np.float32)
    elif isinstance(value, complex):
        return np.array(value, dtype=np.complex128)
    elif isinstance(value, (str, bytes)):
        arr = np.empty((), dtype=object)
        arr[()] = value.encode("utf-8") if isinstance(value, str) else value
        return arr
    elif isinstance(value, np.generic):
        arr = np.asarray(value)
    elif isinstance(value, (list, tuple)):
        try:
            arr = np.asarray(value)
            if arr.dtype.kind in ("S", "U"):  # fixed-width numpy strings drop trailing NULs
                arr = np.array(value, dtype=object)
        except ValueError:
            raise ValueError(f"value: cannot convert a non-rectangular (ragged) nested list to a "
                             f"jf.Tensor; every inner list must have the same length; got {value!r}") from None
        if arr.dtype.kind in "USO" and not _all_text(value):
            # numpy turns [1, "a"] into strings; TF refuses to mix numbers and strings.
            raise ValueError("Can't convert Python sequence with mixed types to Tensor: value mixes "
                             f"strings with numbers or other objects: {_preview(value)}")
        if arr.dtype.kind == "i" and not isinstance(value, np.ndarray):
            arr = arr.astype(np.int32) if (arr.size == 0 or (arr.min() >= -2**31 and arr.max() < 2**31)) else arr
        elif arr.dtype.kind == "f" and arr.dtype != np.float32:
            arr = arr.astype(np.float32)
        if arr.size == 0 and arr.dtype == np.float64:
            arr = arr.astype(np.float32)
    elif hasattr(value, "__array__"):
        arr = np.asarray(value)
    else:
        raise TypeError(f"value: cannot convert an object of type {type(value).__name__} to a "
                        "jf.Tensor; expected a tensor, a numpy array, a Python number, str, bool, "
                        "or a (nested) list of those")
    kind = arr.dtype.kind
    if kind in ("U", "S"):
        return _encode_strings(arr)
    if kind == "O":
        if all(isinstance(x, (bytes, str)) for x in arr.reshape(-1).tolist()):
            return _encode_strings(arr)
        raise TypeError("value: a list of mixed or non-numeric objects cannot be converted to a "
                        "jf.Tensor; use a nested list of numbers or strings")
    if kind not in "biufc":
        raise TypeError(f"value: numpy dtype {arr.dtype} has no jitflow equivalent; expected one "
                        f"of {', '.join(d.name for d in _dt.ALL_DTYPES)}")
    try:
        _dt.as_dtype(arr.dtype)
    except TypeError:
        raise TypeError(f"value: numpy dtype {arr.dtype} has no jitflow equivalent") from None
    return arr


def _with_dtype(value: Any, dtype: _dt.DType) -> np.ndarray:
    """`value` converted to `dtype`, refusing lossy Python float → int conversions (as TF)."""
    if dtype.is_string:
        arr = _infer_numpy(value)
        if arr.size == 0 and arr.dtype != object:  # `[]` infers float32
            return np.empty(arr.shape, dtype=object)
        if arr.dtype != object:
            raise TypeError(f"Cannot convert {value!r} to a tensor of dtype string")
        return arr
    if isinstance(value, (float, int, bool)) and not isinstance(value, np.generic):
        if dtype.is_integer and isinstance(value, float) and not float(value).is_integer():
            raise TypeError(f"Cannot convert {value!r} to a tensor of dtype {dtype.name} "
                            "(it is not an integer)")
        if dtype.is_integer and not isinstance(value, bool):
            ivalue = int(value)
            info = np.iinfo(dtype.as_numpy_dtype)
            if not info.min <= ivalue <= info.max:
                raise TypeError(f"Cannot convert {value!r} to a tensor of dtype {dtype.name} "
                                f"(out of range [{info.min}, {info.max}])")
        if dtype.is_bool and not isinstance(value, bool):
            raise TypeError(f"Cannot convert {value!r} to a tensor of dtype bool")
        return np.array(value, dtype=dtype.as_numpy_dtype)
    arr = _infer_numpy(value)
    if arr.dtype == object:
        raise TypeError(f"Cannot convert a string value to a tensor of dtype {dtype.name}")
    if arr.dtype != dtype.as_numpy_dtype:
        src = arr.dtype.kind
        if src == "f" and dtype.is_integer and not isinstance(value, np.ndarray):
            if not np.all(np.mod(arr, 1) == 0):
                raise TypeError(f"Cannot convert {value!r} to a tensor of dtype {dtype.name} "
                                "(values are not integers)")
        if src in "iuf" and dtype.is_integer and not isinstance(value, np.ndarray) and arr.size:
            info = np.iinfo(dtype.as_numpy_dtype)
            if arr.min() < info.min or arr.max() > info.max:  # as for scalars: no silent wrap-around
                raise TypeError(f"Cannot convert {value!r} to a tensor of dtype {dtype.name} "
                                f"(out of range [{info.min}, {info.max}])")
        arr = arr.astype(dtype.as_numpy_dtype)
    return arr


def to_numpy(value: Any, dtype: Optional[_dt.DType] = None) -> np.ndarray:
    """A fresh numpy array for `value` (never aliases the caller's array)."""
    arr = _with_dtype(value, dtype) if dtype is not None else _infer_numpy(value)
    if arr is value:
        arr = arr.copy()
    return arr


def graph_constant(value: np.ndarray, dtype: _dt.DType, name: str = "Const") -> SymbolicTensor:
    return cast(SymbolicTensor, apply("Const", [], {"value": value, "dtype": dtype}, name=name)[0])  # built in a graph


def constant(value: Any, dtype: Any = None, shape: Any = None, name: Optional[str] = None) -> Tensor:
    """A constant tensor (TF's `tf.constant`).

    >>> constant([[1, 2], [3, 4]]).dtype
    jf.int32
    >>> constant(0.0, shape=[2])
    <jf.Tensor: shape=(2,), dtype=float32, numpy=array([0., 0.], dtype=float32)>
    """
    dt = _dt.as_dtype(dtype) if dtype is not None else None
    if isinstance(value, Tensor):
        if isinstance(value, SymbolicTensor):
            raise TypeError(f"value: jf.constant needs a concrete value, got the symbolic tensor {value.name}")
        arr = cast(EagerTensor, value)._host()  # a tensor that is not symbolic
        if dt is not None and dt is not value._dtype:
            raise TypeError(f"value has dtype {value._dtype.name}, which does not match dtype={dt.name}; "
                            "use jf.cast to convert between dtypes")
    else:
        arr = to_numpy(value, dt)
    if shape is not None:
        dims = normalize(shape)
        if dims is None or any(d is None for d in dims):
            raise ValueError(f"shape: jf.constant needs a fully known shape; got {format_dims(dims)}")
        shape_ = known_dims(dims)  # checked just above
        if arr.size == 1:
            arr = np.full(shape_, arr.reshape(()), dtype=arr.dtype)
        elif arr.size == int(np.prod(shape_)):
            arr = arr.reshape(shape_)
        else:
            raise TypeError(f"value: {arr.size} elements cannot be reshaped to shape {format_dims(dims)}")
    if dt is not None:
        out_dtype = dt
    else:
        out_dtype = _dt.string if arr.dtype == object else _dt.as_dtype(arr.dtype)
    if context._state.graph is not None:
        return graph_constant(arr, out_dtype, name or "Const")
    return _new(EagerTensor(arr, out_dtype))


def _new(tensor: EagerTensor) -> EagerTensor:
    """A new eager tensor, moved to the device of an enclosing `jf.device` scope (a GPU)."""
    if devices.active and context._state.device is not None and registry.place_new is not None:
        return registry.place_new(tensor)
    return tensor


def convert_to_tensor(value: Any, dtype: Any = None, name: Optional[str] = None,
                      dtype_hint: Any = None) -> Tensor:
    """Convert tensors, variables, numpy arrays, Python values and `__array__` objects.

    `dtype` is a requirement (mismatching tensors raise TypeError); `dtype_hint` is used
    only for Python values that have no dtype of their own.

    >>> jf.convert_to_tensor([1.0, 2.0]).dtype
    jf.float32
    """
    if isinstance(value, Tensor):
        if dtype is not None and value._dtype is not _dt.as_dtype(dtype):
            raise TypeError(f"Tensor conversion requested dtype {_dt.as_dtype(dtype).name} for a "
                            f"tensor of dtype {value._dtype.name}; use jf.cast to convert")
        return value
    if isinstance(value, TensorConvertible):
        return value._as_tensor(_dt.as_dtype(dtype) if dtype is not None else None)
    if isinstance(value, (list, tuple)) and any(isinstance(v, (Tensor, TensorConvertible)) for v in value):
        # `jf.stack` of the converted items (array_ops, which defines Pack, builds on this module)
        return apply("Pack", [convert_to_tensor(v, dtype, dtype_hint=dtype_hint) for v in value], {"axis": 0})[0]
    if dtype is None and dtype_hint is not None and _is_python_scalar(value):
        hint = _dt.as_dtype(dtype_hint)
        try:
            return constant(value, hint, name=name)
        except TypeError:
            pass
    return constant(value, dtype, name=name)


def _is_python_scalar(value: Any) -> bool:
    return isinstance(value, (int, float, bool, complex, np.generic)) or (
        isinstance(value, (list, tuple)) and all(_is_python_scalar(v) for v in value))


_graph.hooks.placeholder_op = registry.OPS["Placeholder"]
_graph.hooks.graph_constant = graph_constant


def binary_operands(x: Any, y: Any):
    """Convert operands; a Python value takes the dtype of the tensor beside it."""
    if isinstance(x, TensorConvertible):  # a variable: `2 * v` must see v's dtype first
        x = convert_to_tensor(x)
    if isinstance(y, TensorConvertible):
        y = convert_to_tensor(y)
    if isinstance(x, Tensor):
        y = convert_to_tensor(y, dtype_hint=x._dtype) if not isinstance(y, Tensor) else y
    elif isinstance(y, Tensor):
        x = convert_to_tensor(x, dtype_hint=y._dtype)
    else:
        x = convert_to_tensor(x)
        y = convert_to_tensor(y, dtype_hint=x._dtype)
    return x, y
