"""Nested Python structures of TensorSpecs and values <-> TF's `StructuredValue` proto.

A saved function's input signature (`((args...), {kwargs})`) and its outputs are stored
this way, as TF stores them, so `saved_model_cli` and `tf.saved_model.load` read them.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from jitflow.runtime.core import dtypes as _dt
from jitflow.runtime.core.tensor import TensorSpec
from jitflow.runtime.saved_model.protos import struct_pb2, tensor_shape_pb2


def shape_proto(dims: Any) -> "tensor_shape_pb2.TensorShapeProto":
    if dims is None:
        return tensor_shape_pb2.TensorShapeProto(unknown_rank=True)
    return tensor_shape_pb2.TensorShapeProto(
        dim=[tensor_shape_pb2.TensorShapeProto.Dim(size=-1 if d is None else int(d)) for d in dims])


def dims_of(proto: "tensor_shape_pb2.TensorShapeProto"):
    if proto.unknown_rank:
        return None
    return tuple(None if d.size < 0 else int(d.size) for d in proto.dim)


def spec_dims(spec: TensorSpec):
    shape = spec.shape
    return None if shape.rank is None else tuple(shape.as_list())


def encode(value: Any) -> "struct_pb2.StructuredValue":
    """`value` as a StructuredValue; raises TypeError naming what cannot be saved."""
    sv = struct_pb2.StructuredValue()
    if value is None:
        sv.none_value.SetInParent()
    elif isinstance(value, TensorSpec):
        sv.tensor_spec_value.name = value.name or ""
        sv.tensor_spec_value.shape.CopyFrom(shape_proto(spec_dims(value)))
        sv.tensor_spec_value.dtype = value.dtype.tf_enum
    elif isinstance(value, bool):
        sv.bool_value = value
    elif isinstance(value, (int, np.integer)):
        sv.int64_value = int(value)
    elif isinstance(value, (float, np.floating)):
        sv.float64_value = float(value)
    elif isinstance(value, str):
        sv.string_value = value
    elif isinstance(value, _dt.DType):
        sv.tensor_dtype_value = value.tf_enum
    elif isinstance(value, tuple) and hasattr(value, "_fields"):
        sv.named_tuple_value.name = type(value).__name__
        for k, v in zip(value._fields, value):
            sv.named_tuple_value.values.add(key=k).value.CopyFrom(encode(v))
    elif isinstance(value, tuple):
        sv.tuple_value.SetInParent()
        for v in value:
            sv.tuple_value.values.append(encode(v))
    elif isinstance(value, list):
        sv.list_value.SetInParent()
        for v in value:
            sv.list_value.values.append(encode(v))
    elif isinstance(value, dict):
        sv.dict_value.SetInParent()
        for k in value:
            if not isinstance(k, str):
                raise TypeError(f"a saved structure's dict keys must be strings; got {k!r}")
            sv.dict_value.fields[k].CopyFrom(encode(value[k]))
    else:
        raise TypeError(f"cannot save a {type(value).__name__} ({value!r:.60}) in a function signature; "
                        "SavedModels hold tensors, None, bool/int/float/str and lists/tuples/dicts of them")
    return sv


_DTYPES = {d.tf_enum: d for d in list(_dt.ALL_DTYPES) + [_dt.resource]}


def dtype_of(enum: int) -> _dt.DType:
    found = _DTYPES.get(enum)
    if found is None:
        raise ValueError(f"TF dtype enum {enum} has no jitflow dtype")
    return found


def decode(sv: "struct_pb2.StructuredValue") -> Any:
    kind = sv.WhichOneof("kind")
    if kind in (None, "none_value"):
        return None
    if kind == "tensor_spec_value":
        s = sv.tensor_spec_value
        return TensorSpec(dims_of(s.shape), dtype_of(s.dtype), name=s.name or None)
    if kind == "bounded_tensor_spec_value":
        s = sv.bounded_tensor_spec_value
        return TensorSpec(dims_of(s.shape), dtype_of(s.dtype), name=s.name or None)
    if kind in ("bool_value", "int64_value", "float64_value", "string_value"):
        return getattr(sv, kind)
    if kind == "tensor_dtype_value":
        return dtype_of(sv.tensor_dtype_value)
    if kind == "tuple_value":
        return tuple(decode(v) for v in sv.tuple_value.values)
    if kind == "list_value":
        return [decode(v) for v in sv.list_value.values]
    if kind == "dict_value":
        return {k: decode(v) for k, v in sorted(sv.dict_value.fields.items())}
    if kind == "named_tuple_value":
        return {p.key: decode(p.value) for p in sv.named_tuple_value.values}
    if kind == "tensor_shape_value":
        return dims_of(sv.tensor_shape_value)
    raise ValueError(f"a saved structure holds a {kind}, which jitflow does not load")


def flatten(value: Any) -> list:
    """The leaves of a structure, dicts in sorted key order (TF's nest order)."""
    if isinstance(value, dict):
        return [leaf for k in sorted(value) for leaf in flatten(value[k])]
    if isinstance(value, (list, tuple)):
        return [leaf for v in value for leaf in flatten(v)]
    return [value]


def pack(template: Any, leaves: list) -> Any:
    """`template`'s structure with its TensorSpec leaves replaced, in order, by `leaves`."""
    it = iter(leaves)

    def walk(t: Any) -> Any:
        if isinstance(t, dict):
            out = {k: walk(t[k]) for k in sorted(t)}
            return {k: out[k] for k in t}
        if isinstance(t, (list, tuple)):
            items = [walk(v) for v in t]
            return items if isinstance(t, list) else tuple(items)
        if isinstance(t, TensorSpec):
            return next(it)
        return t
    return walk(template)
