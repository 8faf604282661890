"""The protos of a SavedModel: TensorBoard's copies of TF's, plus `SavedModel` itself.

TensorBoard ships `meta_graph.proto`, `saved_object_graph.proto`, `struct.proto`,
`function.proto` and friends under `tensorboard.compat.proto`, but not the two-field
`saved_model.proto` wrapper; it is declared here with TF's field numbers and built by
protobuf's descriptor machinery (in a package of its own, so it never clashes with TF's).
"""
from __future__ import annotations

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
from tensorboard.compat.proto import (attr_value_pb2, function_pb2, graph_pb2, meta_graph_pb2,  # noqa: F401
                                      node_def_pb2, saved_object_graph_pb2, struct_pb2, tensor_pb2,
                                      tensor_shape_pb2, types_pb2, versions_pb2)


def _build_saved_model():
    pool = descriptor_pool.Default()
    name = "jitflow/tensorflow/core/protobuf/saved_model.proto"
    try:
        file_desc = pool.FindFileByName(name)
    except KeyError:
        F = descriptor_pb2.FieldDescriptorProto
        fdp = descriptor_pb2.FileDescriptorProto(name=name, package="jitflow_saved_model", syntax="proto3")
        fdp.dependency.append(meta_graph_pb2.DESCRIPTOR.name)
        msg = fdp.message_type.add(name="SavedModel")
        msg.field.add(name="saved_model_schema_version", number=1, type=F.TYPE_INT64, label=F.LABEL_OPTIONAL)
        msg.field.add(name="meta_graphs", number=2, type=F.TYPE_MESSAGE, label=F.LABEL_REPEATED,
                      type_name=".tensorboard.MetaGraphDef")
        file_desc = pool.Add(fdp)
    return message_factory.GetMessageClass(file_desc.message_types_by_name["SavedModel"])


SavedModel = _build_saved_model()

__all__ = ["SavedModel", "attr_value_pb2", "function_pb2", "graph_pb2", "meta_graph_pb2", "node_def_pb2",
           "saved_object_graph_pb2", "struct_pb2", "tensor_pb2", "tensor_shape_pb2", "types_pb2", "versions_pb2"]
