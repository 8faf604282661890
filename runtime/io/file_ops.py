"""File and tensor (de)serialisation ops: `read_file`, `write_file`, `serialize_tensor`,
`parse_tensor`. Graph ops (TF's `ReadFile`, `WriteFile`, `SerializeTensor`, `ParseTensor`),
so they run on every call of a `jf.function` and inside `Dataset.map`.
"""
from __future__ import annotations

import os
from typing import Any, Optional

import numpy as np

from jitflow.runtime.core import dtypes as _dt
from jitflow.runtime.core.errors import InvalidArgumentError, NotFoundError
from jitflow.runtime.ops.constant_op import convert_to_tensor
from jitflow.runtime.ops.infer import check_kind
from jitflow.runtime.ops.registry import apply, register
from jitflow.runtime.core.tensor import Tensor


def as_bytes(value: Any, what: str) -> bytes:
    """One string element as bytes (str is UTF-8 encoded, as TF does)."""
    if isinstance(value, np.ndarray):
        if value.ndim != 0:
            raise InvalidArgumentError(f"{what}: expected a scalar string; got shape {value.shape}")
        value = value[()]
    if isinstance(value, str):
        return value.encode("utf-8")
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value)
    raise TypeError(f"{what}: expected a string; got {type(value).__name__}")


def scalar_string_infer(what: str, out: _dt.DType = _dt.string, out_dims: Any = ()):
    def infer(specs, attrs):
        dims, dtype = specs[0]
        check_kind(dtype, "s", what)
        if dims is not None and dims != ():
            raise InvalidArgumentError(f"{what}: expected a scalar string tensor; got shape {list(dims)}")
        return [(out_dims, out)]
    return infer


def _read_file_kernel(filename):
    path = as_bytes(filename, "filename").decode("utf-8")
    try:
        with open(path, "rb") as f:
            data = f.read()
    except FileNotFoundError:
        raise NotFoundError(f"read_file: {path}; No such file or directory") from None
    out = np.empty((), dtype=object)
    out[()] = data
    return out


register("ReadFile", scalar_string_infer("filename"), cpu=_read_file_kernel, public_name="io.read_file",
         default_name="ReadFile", stateful=True)


def read_file(filename: Any, name: Optional[str] = None) -> Tensor:
    """The whole contents of a file as a scalar string tensor (TF's `tf.io.read_file`).

    >>> jf.io.read_file("/tmp/cat.jpg")          # doctest: +SKIP
    <jf.Tensor: shape=(), dtype=string, numpy=b'\\xff\\xd8...'>
    """
    return apply("ReadFile", [convert_to_tensor(filename, dtype=_dt.string)], name=name)[0]


def _write_file_infer(specs, attrs):
    for (dims, dtype), what in zip(specs, ("filename", "contents")):
        check_kind(dtype, "s", what)
        if dims is not None and dims != ():
            raise InvalidArgumentError(f"{what}: expected a scalar string tensor; got shape {list(dims)}")
    return []


def _write_file_kernel(filename, contents):
    path = as_bytes(filename, "filename").decode("utf-8")
    data = as_bytes(contents, "contents")
    parent = os.path.dirname(path)
    if parent:
        os.makedirs(parent, exist_ok=True)  # TF's WriteFile creates missing directories
    tmp = f"{path}.tmp{os.getpid()}"
    with open(tmp, "wb") as f:  # write then rename: a crash never leaves half a file
        f.write(data)
    os.replace(tmp, path)
    return ()


register("WriteFile", _write_file_infer, cpu=_write_file_kernel, public_name="io.write_file",
         default_name="WriteFile", stateful=True)


def write_file(filename: Any, contents: Any, name: Optional[str] = None) -> None:
    """Write a scalar string tensor to a file, creating parent directories (TF's `tf.io.write_file`).

    >>> jf.io.write_file("/tmp/x.bin", b"abc")   # doctest: +SKIP
    """
    apply("WriteFile", [convert_to_tensor(filename, dtype=_dt.string),
                        convert_to_tensor(contents, dtype=_dt.string)], name=name)


# -- SerializeTensor / ParseTensor: a TensorProto, TF's wire format ----------------------
def _tensor_proto_bytes(arr: np.ndarray) -> bytes:
    from tensorboard.compat.proto import tensor_pb2, tensor_shape_pb2

    dtype = _dt.as_dtype(arr.dtype)
    proto = tensor_pb2.TensorProto(dtype=dtype.tf_enum)
    proto.tensor_shape.CopyFrom(tensor_shape_pb2.TensorShapeProto(
        dim=[tensor_shape_pb2.TensorShapeProto.Dim(size=int(d)) for d in arr.shape]))
    if dtype.is_string:
        proto.string_val.extend(as_bytes(v, "tensor") for v in arr.reshape(-1))
    else:
        proto.tensor_content = np.ascontiguousarray(arr).tobytes()
    return proto.SerializeToString()


def _serialize_tensor_kernel(x):
    out = np.empty((), dtype=object)
    out[()] = _tensor_proto_bytes(np.asarray(x))
    return out


register("SerializeTensor", lambda specs, attrs: [((), _dt.string)], cpu=_serialize_tensor_kernel,
         public_name="io.serialize_tensor", default_name="SerializeTensor")


def serialize_tensor(tensor: Any, name: Optional[str] = None) -> Tensor:
    """A tensor as a serialized `TensorProto` (TF's `tf.io.serialize_tensor`; TF parses it).

    >>> s = jf.io.serialize_tensor(jf.constant([1.0, 2.0]))
    >>> jf.io.parse_tensor(s, jf.float32).numpy()          # doctest: +SKIP
    array([1., 2.], dtype=float32)
    """
    return apply("SerializeTensor", [convert_to_tensor(tensor)], name=name)[0]


def _parse_tensor_kernel(serialized, out_type):
    from tensorboard.compat.proto import tensor_pb2

    proto = tensor_pb2.TensorProto.FromString(as_bytes(serialized, "serialized"))
    if proto.dtype != out_type.tf_enum:
        got = next((d.name for d in _dt.ALL_DTYPES if d.tf_enum == proto.dtype), f"enum {proto.dtype}")
        raise InvalidArgumentError(f"parse_tensor: out_type is {out_type.name} but the serialized "
                                   f"tensor has type {got}")
    shape = tuple(d.size for d in proto.tensor_shape.dim)
    if out_type.is_string:
        arr = np.empty(len(proto.string_val), dtype=object)
        arr[:] = list(proto.string_val)
        return arr.reshape(shape)
    np_dtype = out_type.as_numpy_dtype
    if proto.tensor_content:
        return np.frombuffer(proto.tensor_content, dtype=np_dtype).reshape(shape).copy()
    # Small tensors may use the typed value fields instead of tensor_content.
    field = {"f": "float_val", "d": "double_val", "b": "bool_val"}.get(np.dtype(np_dtype).kind, "int_val")
    if np.dtype(np_dtype) == np.float64:
        field = "double_val"
    elif np.dtype(np_dtype) == np.int64:
        field = "int64_val"
    elif np.dtype(np_dtype) == np.float16:
        field = "half_val"
    values = np.asarray(getattr(proto, field), dtype=np_dtype)
    n = int(np.prod(shape))
    if values.size == n:
        return values.reshape(shape)
    if values.size == 1:  # TF stores a splat of one repeated value once
        return np.full(shape, values[0], dtype=np_dtype)
    if values.size == 0:
        return np.zeros(shape, dtype=np_dtype)
    raise InvalidArgumentError(f"parse_tensor: {values.size} values for shape {list(shape)}")


def _parse_tensor_infer(specs, attrs):
    check_kind(specs[0][1], "s", "serialized")
    return [(None, attrs["out_type"])]


register("ParseTensor", _parse_tensor_infer, cpu=_parse_tensor_kernel, public_name="io.parse_tensor",
         default_name="ParseTensor")


def parse_tensor(serialized: Any, out_type: Any, name: Optional[str] = None) -> Tensor:
    """Parse a serialized `TensorProto` (from `serialize_tensor`, jitflow's or TF's) into a tensor.

    >>> jf.io.parse_tensor(jf.io.serialize_tensor(jf.constant(3)), jf.int32).numpy()  # doctest: +SKIP
    3
    """
    return apply("ParseTensor", [convert_to_tensor(serialized, dtype=_dt.string)],
                 {"out_type": _dt.as_dtype(out_type)}, name=name)[0]

