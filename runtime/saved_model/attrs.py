"""jitflow node attrs <-> TF `AttrValue` protos.

jitflow keeps an op's static arguments as Python values in `Node.attrs` (`axis=(1,)`,
`keepdims=True`, `dtype=jf.float32`, `value=<ndarray>`); a SavedModel stores them as
`AttrValue`s under the same names. Each Python kind maps to one AttrValue field, so the
round trip is exact: None is an empty AttrValue, a tuple with None in it a shape, a nested
tuple JSON text (its name listed in `_jf_nested`), everything else the obvious field.
"""
from __future__ import annotations

import json
from typing import Any, Dict, Optional

import numpy as np

from jitflow.runtime.core import dtypes as _dt
from jitflow.runtime.saved_model.protos import attr_value_pb2, tensor_pb2
from jitflow.runtime.saved_model.structure import dims_of, dtype_of, shape_proto

NESTED = "_jf_nested"
# Attrs that name sub-graphs (functions) rather than hold values.
SUBGRAPH_ATTRS = {"If": ("then_branch", "else_branch"), "While": ("cond", "body"),
                   "StatelessIf": ("then_branch", "else_branch"), "StatelessWhile": ("cond", "body"),
                   "StatefulPartitionedCall": ("f",), "PartitionedCall": ("f",)}


def tensor_proto(value: Any, dtype: Optional[_dt.DType] = None) -> "tensor_pb2.TensorProto":
    """The whole value (never truncated: a SavedModel must run)."""
    arr = np.asarray(value) if not (dtype is not None and dtype.is_string) else np.asarray(value, dtype=object)
    if dtype is None:
        dtype = _dt.string if arr.dtype.kind in ("O", "U", "S") else _dt.as_dtype(arr.dtype)
    proto = tensor_pb2.TensorProto(dtype=dtype.tf_enum, tensor_shape=shape_proto(arr.shape))
    if dtype.is_string:
        proto.string_val.extend(v if isinstance(v, bytes) else str(v).encode("utf-8") for v in arr.reshape(-1))
    else:
        proto.tensor_content = np.ascontiguousarray(arr, dtype=dtype.as_numpy_dtype.newbyteorder("<")).tobytes()
    return proto


_VAL_FIELDS = {1: "float_val", 2: "double_val", 3: "int_val", 4: "int_val", 5: "int_val", 6: "int_val",
               9: "int64_val", 10: "bool_val", 19: "half_val"}


def tensor_value(proto: "tensor_pb2.TensorProto") -> np.ndarray:
    """A TensorProto's value (as TF fills it: raw content, or typed values broadcast from the last)."""
    dtype = dtype_of(proto.dtype)
    dims = dims_of(proto.tensor_shape) or ()
    if any(d is None for d in dims):
        raise ValueError(f"a constant has the partly unknown shape {dims}")
    count = int(np.prod(dims, dtype=np.int64))
    if dtype.is_string:
        values = list(proto.string_val)
        out = np.empty(count, dtype=object)
        for i in range(count):
            out[i] = values[i] if i < len(values) else (values[-1] if values else b"")
        return out.reshape(dims)
    npd = dtype.as_numpy_dtype
    if proto.tensor_content:
        if len(proto.tensor_content) != count * npd.itemsize:
            raise ValueError(f"a constant of shape {dims} holds {len(proto.tensor_content)} bytes, not "
                             f"{count * npd.itemsize}")
        return np.frombuffer(proto.tensor_content, npd.newbyteorder("<")).astype(npd).reshape(dims)
    field = _VAL_FIELDS.get(proto.dtype)
    values = list(getattr(proto, field)) if field else []
    if field == "half_val":
        values = list(np.array(values, np.uint16).view(np.float16))
    if not values:
        return np.zeros(dims, npd)
    if len(values) < count:
        values = values + [values[-1]] * (count - len(values))
    return np.array(values[:count]).astype(npd).reshape(dims)


def _is_nested(value: Any) -> bool:
    return isinstance(value, (tuple, list)) and any(isinstance(v, (tuple, list)) for v in value)


def encode(value: Any) -> Optional["attr_value_pb2.AttrValue"]:
    """`value` as an AttrValue, or None if no AttrValue field can hold it."""
    A, L = attr_value_pb2.AttrValue, attr_value_pb2.AttrValue.ListValue
    if value is None:
        return A()
    if isinstance(value, (bool, np.bool_)):
        return A(b=bool(value))
    if isinstance(value, (int, np.integer)):
        return A(i=int(value))
    if isinstance(value, (float, np.floating)):
        return A(f=float(value))
    if isinstance(value, str):
        return A(s=value.encode("utf-8"))
    if isinstance(value, bytes):
        return A(s=value)
    if isinstance(value, _dt.DType):
        return A(type=value.tf_enum)
    if isinstance(value, np.ndarray):
        return A(tensor=tensor_proto(value))
    if isinstance(value, (tuple, list)):
        items = list(value)
        if _is_nested(items):
            try:
                return A(s=json.dumps(items, allow_nan=True).encode("utf-8"))
            except (ValueError, TypeError):
                return None
        if not items:
            return A(list=L())
        if all(isinstance(v, _dt.DType) for v in items):
            return A(list=L(type=[v.tf_enum for v in items]))
        if all(isinstance(v, (bool, np.bool_)) for v in items):
            return A(list=L(b=items))
        if all(isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in items):
            return A(list=L(i=[int(v) for v in items]))
        if all(v is None or (isinstance(v, (int, np.integer)) and not isinstance(v, bool)) for v in items):
            return A(shape=shape_proto(tuple(items)))
        if all(isinstance(v, (float, np.floating, int)) for v in items):
            return A(list=L(f=[float(v) for v in items]))
        if all(isinstance(v, str) for v in items):
            return A(list=L(s=[v.encode("utf-8") for v in items]))
    return None


def decode(attr: "attr_value_pb2.AttrValue") -> Any:
    kind = attr.WhichOneof("value")
    if kind is None:
        return None
    if kind == "s":
        try:
            return attr.s.decode("utf-8")
        except UnicodeDecodeError:
            return attr.s
    if kind in ("i", "f", "b"):
        return getattr(attr, kind)
    if kind == "type":
        return dtype_of(attr.type)
    if kind == "shape":
        return dims_of(attr.shape)
    if kind == "tensor":
        return tensor_value(attr.tensor)
    if kind == "func":
        return attr.func.name
    if kind == "list":
        lv = attr.list
        for field in ("i", "f", "b"):
            if len(getattr(lv, field)):
                return tuple(getattr(lv, field))
        if len(lv.s):
            return tuple(s.decode("utf-8", "replace") for s in lv.s)
        if len(lv.type):
            return tuple(dtype_of(t) for t in lv.type)
        if len(lv.shape):
            return tuple(dims_of(s) for s in lv.shape)
        return ()
    raise ValueError(f"an attr holds a {kind}, which jitflow does not load")


def encode_all(op: str, node_name: str, attrs: Dict[str, Any], skip=()) -> Dict[str, "attr_value_pb2.AttrValue"]:
    """Every attr of a node; a public attr that cannot be saved raises, naming node, op and attr."""
    out, nested = {}, []
    for key, value in attrs.items():
        if key in skip:
            continue
        proto = encode(value)
        if proto is None:
            if key.startswith("_"):
                continue  # metadata jitflow recomputes when the op is added again
            raise ValueError(f"cannot save node {node_name!r} ({op}): its attr {key!r} holds a "
                             f"{type(value).__name__}, which a SavedModel cannot store")
        if _is_nested(value):
            nested.append(key)
        out[key] = proto
    if nested:
        out[NESTED] = attr_value_pb2.AttrValue(list=attr_value_pb2.AttrValue.ListValue(
            s=[k.encode() for k in nested]))
    return out


def decode_all(attrs) -> Dict[str, Any]:
    out = {k: decode(v) for k, v in attrs.items() if k != NESTED}
    if NESTED in attrs:
        for key in attrs[NESTED].list.s:
            key = key.decode()
            out[key] = _to_tuples(json.loads(out[key]))
    return out


def _to_tuples(value: Any) -> Any:
    return tuple(_to_tuples(v) for v in value) if isinstance(value, list) else value
