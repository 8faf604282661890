"""Data types: TensorFlow's names and conversion rules over numpy dtypes.

jitflow stores every tensor as a numpy array; a `DType` pairs the TensorFlow name
(`float32`, `string`, ...) and `types_pb2` enum (for GraphDef export) with the numpy
dtype used for storage. Strings are numpy object arrays of `bytes`, as TF's `.numpy()`
returns them.
"""
from __future__ import annotations

from typing import Any

import numpy as np


class DType:
    """A tensor element type, e.g. `jf.float32`. Compare with `==`; hashable.

    >>> jf.float32.name
    'float32'
    >>> jf.as_dtype(np.int64) == jf.int64
    True
    """

    __slots__ = ("name", "as_numpy_dtype", "tf_enum", "is_floating", "is_integer",
                 "is_bool", "is_string", "is_unsigned", "is_complex", "size")

    def __init__(self, name: str, numpy_dtype: Any, tf_enum: int, kind: str) -> None:
        self.name = name
        self.as_numpy_dtype = np.dtype(numpy_dtype)
        self.tf_enum = tf_enum
        self.is_floating = kind == "f"
        self.is_integer = kind in ("i", "u")
        self.is_unsigned = kind == "u"
        self.is_bool = kind == "b"
        self.is_string = kind == "s"
        self.is_complex = kind == "c"
        self.size = 0 if kind == "s" else self.as_numpy_dtype.itemsize

    @property
    def is_numeric(self) -> bool:
        return self.is_floating or self.is_integer

    @property
    def min(self):
        info = np.finfo if self.is_floating else np.iinfo
        return info(self.as_numpy_dtype).min

    @property
    def max(self):
        info = np.finfo if self.is_floating else np.iinfo
        return info(self.as_numpy_dtype).max

    def __repr__(self) -> str:
        return f"jf.{self.name}"

    def __str__(self) -> str:
        return f"<dtype: {self.name!r}>"  # TF's str(tf.float32)

    def __reduce__(self):
        return (as_dtype, (self.name,))


# Enum values are tensorflow/core/framework/types.proto's DataType.
float16 = DType("float16", np.float16, 19, "f")
float32 = DType("float32", np.float32, 1, "f")
float64 = DType("float64", np.float64, 2, "f")
int8 = DType("int8", np.int8, 6, "i")
int16 = DType("int16", np.int16, 5, "i")
int32 = DType("int32", np.int32, 3, "i")
int64 = DType("int64", np.int64, 9, "i")
uint8 = DType("uint8", np.uint8, 4, "u")
bool_ = DType("bool", np.bool_, 10, "b")
string = DType("string", object, 7, "s")
complex64 = DType("complex64", np.complex64, 8, "c")
complex128 = DType("complex128", np.complex128, 18, "c")
# Variables inside graphs flow as resource handles (never as user tensors).
resource = DType("resource", object, 20, "r")
# A dataset-valued element (a `window`'s) is TF's DT_VARIANT; it never reaches a kernel.
variant = DType("variant", object, 21, "v")

half = float16
double = float64

ALL_DTYPES = (float16, float32, float64, int8, int16, int32, int64, uint8, bool_, string, complex64, complex128)
_BY_NAME = {d.name: d for d in ALL_DTYPES + (resource, variant)}
_BY_NAME.update({"half": float16, "float": float32, "double": float64})
_BY_NUMPY = {d.as_numpy_dtype: d for d in ALL_DTYPES if not d.is_string}
_BY_NUMPY[np.dtype(object)] = string
_BY_PYTYPE = {bool: bool_, int: int32, float: float32, str: string, bytes: string, complex: complex128}


def as_dtype(value: Any) -> DType:
    """Convert a DType, name, numpy dtype or Python type to a `DType`.

    >>> as_dtype("float32") is float32
    True
    """
    if isinstance(value, DType):
        return value
    if isinstance(value, str):
        found = _BY_NAME.get(value)
        if found is not None:
            return found
    elif value in _BY_PYTYPE:
        return _BY_PYTYPE[value]
    else:
        try:
            npd = np.dtype(value)
        except TypeError:
            npd = None
        if npd is not None:
            if npd.kind in ("U", "S"):
                return string
            found = _BY_NUMPY.get(npd)
            if found is not None:
                return found
    names = ", ".join(d.name for d in ALL_DTYPES)
    raise TypeError(f"dtype: expected one of {names} (a jf.DType, its name or a numpy dtype); "
                    f"got {value!r}")


def of_numpy(arr: np.ndarray) -> DType:
    """The DType of a numpy array jitflow already stores (fast path, no validation)."""
    return _BY_NUMPY[arr.dtype]


def python_scalar_dtype(value: Any) -> DType:
    """TF's inference for Python values: int → int32 (int64 if it does not fit), float → float32."""
    if isinstance(value, bool):
        return bool_
    if isinstance(value, int):
        return int32 if -2**31 <= value < 2**31 else int64
    if isinstance(value, float):
        return float32
    if isinstance(value, (str, bytes)):
        return string
    if isinstance(value, complex):
        return complex128  # TF's default for Python complex numbers
    raise TypeError(f"value: expected a Python bool, int, float or str; got {type(value).__name__}")


__all__ = ["DType", "as_dtype", "float16", "float32", "float64", "half", "double", "int8", "int16", "int32",
           "int64", "uint8", "bool", "string"]


def __getattr__(name: str) -> Any:
    """`jf.dtypes.bool` (TF's name) without shadowing the builtin `bool` inside this module."""
    if name == "bool":
        return bool_
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
