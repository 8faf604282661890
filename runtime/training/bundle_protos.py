"""TensorFlow's tensor-bundle protos (`tensor_bundle.proto`, `tensor_slice.proto`), built at import.

TensorBoard ships most TF protos under `tensorboard.compat.proto`, but not these two, which
describe a checkpoint's `.index` entries. Rather than hand-encoding bytes, the messages are
declared here field for field (TF's names and field numbers, in a package of their own so
they never clash with TensorFlow's when both are loaded) and built with
protobuf's own descriptor machinery, so encoding, decoding and unknown-field handling are
protobuf's.
"""
from __future__ import annotations

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
from tensorboard.compat.proto import tensor_shape_pb2, types_pb2, versions_pb2

_F = descriptor_pb2.FieldDescriptorProto


def _field(msg, name: str, number: int, ftype: int, label: int = _F.LABEL_OPTIONAL,
           type_name: str = "", oneof: int = -1) -> None:
    f = msg.field.add(name=name, number=number, type=ftype, label=label)
    if type_name:
        f.type_name = type_name
    if oneof >= 0:
        f.oneof_index = oneof


def _build():
    pool = descriptor_pool.Default()
    name = "jitflow/tensorflow/core/protobuf/tensor_bundle.proto"
    try:
        file_desc = pool.FindFileByName(name)
    except KeyError:
        fdp = descriptor_pb2.FileDescriptorProto(name=name, package="jitflow_bundle", syntax="proto3")
        fdp.dependency.extend([tensor_shape_pb2.DESCRIPTOR.name, types_pb2.DESCRIPTOR.name,
                               versions_pb2.DESCRIPTOR.name])
        tsp = fdp.message_type.add(name="TensorSliceProto")
        ext = tsp.nested_type.add(name="Extent")
        ext.oneof_decl.add(name="has_length")
        _field(ext, "start", 1, _F.TYPE_INT64)
        _field(ext, "length", 2, _F.TYPE_INT64, oneof=0)
        _field(tsp, "extent", 1, _F.TYPE_MESSAGE, _F.LABEL_REPEATED, ".jitflow_bundle.TensorSliceProto.Extent")
        hdr = fdp.message_type.add(name="BundleHeaderProto")
        endian = hdr.enum_type.add(name="Endianness")
        endian.value.add(name="LITTLE", number=0)
        endian.value.add(name="BIG", number=1)
        _field(hdr, "num_shards", 1, _F.TYPE_INT32)
        _field(hdr, "endianness", 2, _F.TYPE_ENUM, type_name=".jitflow_bundle.BundleHeaderProto.Endianness")
        _field(hdr, "version", 3, _F.TYPE_MESSAGE, type_name=".tensorboard.VersionDef")
        ent = fdp.message_type.add(name="BundleEntryProto")
        _field(ent, "dtype", 1, _F.TYPE_ENUM, type_name=".tensorboard.DataType")
        _field(ent, "shape", 2, _F.TYPE_MESSAGE, type_name=".tensorboard.TensorShapeProto")
        _field(ent, "shard_id", 3, _F.TYPE_INT32)
        _field(ent, "offset", 4, _F.TYPE_INT64)
        _field(ent, "size", 5, _F.TYPE_INT64)
        _field(ent, "crc32c", 6, _F.TYPE_FIXED32)
        _field(ent, "slices", 7, _F.TYPE_MESSAGE, _F.LABEL_REPEATED, ".jitflow_bundle.TensorSliceProto")
        file_desc = pool.Add(fdp)
    get = message_factory.GetMessageClass
    return (get(file_desc.message_types_by_name["BundleHeaderProto"]),
            get(file_desc.message_types_by_name["BundleEntryProto"]),
            get(file_desc.message_types_by_name["TensorSliceProto"]))


BundleHeaderProto, BundleEntryProto, TensorSliceProto = _build()

__all__ = ["BundleHeaderProto", "BundleEntryProto", "TensorSliceProto"]
