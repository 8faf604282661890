"""jitflow's ProfilerService messages against the descriptor xprof's capture client is built with.

xprof ships `tsl/profiler/protobuf/profiler_service.proto` compiled into its plugin
library (as a serialised FileDescriptorProto, as every protobuf C++ binary does). The
test reads it out of the installed library and checks every field jitflow declares:
same number, same wire type. A mismatch would make TensorBoard's CAPTURE PROFILE send
requests jitflow misreads.
"""
from __future__ import annotations

import glob
import os

import pytest
from google.protobuf import descriptor_pb2
from google.protobuf.internal import decoder

from jitflow.tracer import service_protos as sp

PROTO = "tsl/profiler/protobuf/profiler_service.proto"
OPTIONS = "tsl/profiler/protobuf/profiler_options.proto"
_WIRE = {descriptor_pb2.FieldDescriptorProto.TYPE_ENUM: "varint", descriptor_pb2.FieldDescriptorProto.TYPE_INT32:
         "varint", descriptor_pb2.FieldDescriptorProto.TYPE_UINT32: "varint",
         descriptor_pb2.FieldDescriptorProto.TYPE_UINT64: "varint", descriptor_pb2.FieldDescriptorProto.TYPE_INT64:
         "varint", descriptor_pb2.FieldDescriptorProto.TYPE_BOOL: "varint",
         descriptor_pb2.FieldDescriptorProto.TYPE_STRING: "bytes", descriptor_pb2.FieldDescriptorProto.TYPE_BYTES:
         "bytes", descriptor_pb2.FieldDescriptorProto.TYPE_MESSAGE: "bytes"}


def _embedded(data: bytes, name: str) -> descriptor_pb2.FileDescriptorProto:
    """The FileDescriptorProto named `name` inside a binary: from its `name` field on,
    the longest run of well-formed top-level fields that parses as one."""
    key = b"\n" + bytes([len(name)]) + name.encode()
    pos = data.find(key)
    while pos >= 0:
        i, best = pos, None
        while True:
            try:
                tag, j = decoder._DecodeVarint(data, i)
                if tag >> 3 == 0 or tag >> 3 > 20 or tag & 7 not in (0, 2):
                    break
                if tag & 7 == 2:
                    n, j = decoder._DecodeVarint(data, j)
                    j += n
                else:
                    _, j = decoder._DecodeVarint(data, j)
            except Exception:  # noqa: BLE001 - ran off the descriptor
                break
            i = j
            try:
                fd = descriptor_pb2.FileDescriptorProto.FromString(data[pos:i])
                if fd.message_type:
                    best = fd
            except Exception:  # noqa: BLE001 - not a whole descriptor yet
                pass
        if best is not None:
            return best
        pos = data.find(key, pos + 1)
    pytest.skip(f"{name} is not embedded in the installed xprof library")


@pytest.fixture(scope="module")
def xprof_library() -> bytes:
    xprof = pytest.importorskip("xprof")
    paths = glob.glob(os.path.join(os.path.dirname(xprof.__file__), "convert", "profiler_plugin_c_api*.so"))
    if not paths:
        pytest.skip("xprof's plugin library is not installed")
    with open(paths[0], "rb") as f:
        return f.read()


@pytest.mark.parametrize("proto", [PROTO, OPTIONS])
def test_every_declared_field_matches_xprof(xprof_library, proto):
    upstream = {m.name: m for m in _embedded(xprof_library, proto).message_type}
    ours = sp._pool.FindFileByName("jitflow/profiler_service.proto")
    checked = 0
    for name, upstream_message in upstream.items():
        if name not in ours.message_types_by_name:
            continue
        mine = descriptor_pb2.DescriptorProto()
        ours.message_types_by_name[name].CopyToProto(mine)
        fields = {f.name: f for f in upstream_message.field}
        for field in mine.field:
            assert field.name in fields, f"{name}.{field.name} is not in xprof's {proto}"
            theirs = fields[field.name]
            assert field.number == theirs.number, f"{name}.{field.name}: {field.number} != {theirs.number}"
            assert _WIRE[field.type] == _WIRE[theirs.type], f"{name}.{field.name}: wire type differs"
            assert (field.label == field.LABEL_REPEATED) == (theirs.label == theirs.LABEL_REPEATED), field.name
            checked += 1
    assert checked >= (20 if proto == PROTO else 10)


def test_service_methods_match_xprof(xprof_library):
    (service,) = [s for s in _embedded(xprof_library, PROTO).service if s.name == "ProfilerService"]
    upstream = {m.name: (m.input_type, m.output_type) for m in service.method}
    for method, (request, response) in sp.METHODS.items():
        assert upstream[method] == (f".{request.DESCRIPTOR.full_name}", f".{response.DESCRIPTOR.full_name}")
    assert sp.method_path("Profile") == "/tensorflow.ProfilerService/Profile"
