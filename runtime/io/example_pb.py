"""`tf.train.Example` and friends: real protobuf messages with TensorFlow's schema.

TensorBoard ships no `example_pb2`, and TF is never a dependency, so the two `.proto`
files (`tensorflow/core/example/feature.proto`, `example.proto`) are declared here as
descriptors and turned into message classes by protobuf itself. Same package, names,
field numbers and packing as TF's, so `SerializeToString()` produces TF's bytes and
either side parses the other's.

The classes are built on first use (`jf.train.Example` resolves through `__getattr__`),
in a private descriptor pool so that a process that also imports TensorFlow (which
registers the same file names in the default pool) has no conflict.
"""
from __future__ import annotations

import threading
from typing import Any, Dict

_NAMES = ("BytesList", "FloatList", "Int64List", "Feature", "Features", "FeatureList", "FeatureLists",
          "Example", "SequenceExample")
_classes: Dict[str, Any] = {}
_lock = threading.Lock()


def _build() -> Dict[str, Any]:
    from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

    F = descriptor_pb2.FieldDescriptorProto
    pool = descriptor_pool.DescriptorPool()

    def field(msg, name, number, ftype, label=F.LABEL_OPTIONAL, type_name=None, packed=None, oneof=None):
        f = msg.field.add(name=name, number=number, type=ftype, label=label,
                          json_name=_camel(name))
        if type_name:
            f.type_name = type_name
        if packed is not None:
            f.options.packed = packed
        if oneof is not None:
            f.oneof_index = oneof
        return f

    def map_field(msg, name, entry, value_type):
        e = msg.nested_type.add(name=entry)
        e.options.map_entry = True
        field(e, "key", 1, F.TYPE_STRING)
        field(e, "value", 2, F.TYPE_MESSAGE, type_name=value_type)
        field(msg, name, 1, F.TYPE_MESSAGE, F.LABEL_REPEATED, f"{msg_full(msg)}.{entry}")

    def msg_full(msg):
        return f".tensorflow.{msg.name}"

    feature = descriptor_pb2.FileDescriptorProto(name="tensorflow/core/example/feature.proto",
                                                 package="tensorflow", syntax="proto3")
    m = feature.message_type.add(name="BytesList")
    field(m, "value", 1, F.TYPE_BYTES, F.LABEL_REPEATED)
    m = feature.message_type.add(name="FloatList")
    field(m, "value", 1, F.TYPE_FLOAT, F.LABEL_REPEATED, packed=True)
    m = feature.message_type.add(name="Int64List")
    field(m, "value", 1, F.TYPE_INT64, F.LABEL_REPEATED, packed=True)
    m = feature.message_type.add(name="Feature")
    m.oneof_decl.add(name="kind")
    field(m, "bytes_list", 1, F.TYPE_MESSAGE, type_name=".tensorflow.BytesList", oneof=0)
    field(m, "float_list", 2, F.TYPE_MESSAGE, type_name=".tensorflow.FloatList", oneof=0)
    field(m, "int64_list", 3, F.TYPE_MESSAGE, type_name=".tensorflow.Int64List", oneof=0)
    m = feature.message_type.add(name="Features")
    map_field(m, "feature", "FeatureEntry", ".tensorflow.Feature")
    m = feature.message_type.add(name="FeatureList")
    field(m, "feature", 1, F.TYPE_MESSAGE, F.LABEL_REPEATED, ".tensorflow.Feature")
    m = feature.message_type.add(name="FeatureLists")
    map_field(m, "feature_list", "FeatureListEntry", ".tensorflow.FeatureList")

    example = descriptor_pb2.FileDescriptorProto(name="tensorflow/core/example/example.proto",
                                                 package="tensorflow", syntax="proto3",
                                                 dependency=["tensorflow/core/example/feature.proto"])
    m = example.message_type.add(name="Example")
    field(m, "features", 1, F.TYPE_MESSAGE, type_name=".tensorflow.Features")
    m = example.message_type.add(name="SequenceExample")
    field(m, "context", 1, F.TYPE_MESSAGE, type_name=".tensorflow.Features")
    field(m, "feature_lists", 2, F.TYPE_MESSAGE, type_name=".tensorflow.FeatureLists")

    pool.Add(feature)
    pool.Add(example)
    return {n: message_factory.GetMessageClass(pool.FindMessageTypeByName(f"tensorflow.{n}"))
            for n in _NAMES}


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(p.title() for p in rest)


def message_class(name: str) -> Any:
    """The message class `tensorflow.<name>` (built once, thread-safely)."""
    if not _classes:
        with _lock:
            if not _classes:
                _classes.update(_build())
    try:
        return _classes[name]
    except KeyError:
        raise AttributeError(f"no message {name!r}; expected one of {', '.join(_NAMES)}") from None


def __getattr__(name: str) -> Any:  # `example_pb.Example` builds the classes on first use
    if name in _NAMES:
        return message_class(name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = list(_NAMES)
