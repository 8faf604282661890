"""`tensorflow.ProfilerService` messages (`tsl/profiler/protobuf/profiler_service.proto`).

Declared from descriptors at import time, like `xplane`: no protoc step and no
dependency on TensorFlow. Field numbers and types are those of the descriptor that
xprof's capture client is built with (`tests/tracer/test_tracer_service_protos.py` reads
it out of the installed xprof and compares field by field). Fields jitflow does not use
(`ProfileOptions.trace_options`, `advanced_configuration`, `MonitorResponse.monitor_result`)
are left undeclared: protobuf keeps them as unknown fields, the wire format is unchanged.
`ProfileResponse.xspace` is declared as bytes: an embedded message is bytes on the
wire, and jitflow serialises its XSpace itself (`xplane`).
"""
from __future__ import annotations

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

_F = descriptor_pb2.FieldDescriptorProto
_PACKAGE = "tensorflow"
SERVICE = "tensorflow.ProfilerService"


def _add(msg, name, number, ftype, repeated=False, type_name=None):
    f = msg.field.add(name=name, number=number, type=ftype,
                      label=_F.LABEL_REPEATED if repeated else _F.LABEL_OPTIONAL)
    if type_name:
        f.type_name = f".{_PACKAGE}.{type_name}"
    return f


def _file() -> descriptor_pb2.FileDescriptorProto:
    fd = descriptor_pb2.FileDescriptorProto(name="jitflow/profiler_service.proto", package=_PACKAGE,
                                            syntax="proto3")
    opts = fd.message_type.add(name="ProfileOptions")
    for name, number, ftype in (("include_dataset_ops", 1, _F.TYPE_BOOL), ("host_tracer_level", 2, _F.TYPE_UINT32),
                                ("device_tracer_level", 3, _F.TYPE_UINT32),
                                ("python_tracer_level", 4, _F.TYPE_UINT32), ("version", 5, _F.TYPE_UINT32),
                                ("device_type", 6, _F.TYPE_INT32),  # an enum: a varint on the wire
                                ("enable_hlo_proto", 7, _F.TYPE_BOOL), ("start_timestamp_ns", 8, _F.TYPE_UINT64),
                                ("duration_ms", 9, _F.TYPE_UINT64), ("repository_path", 10, _F.TYPE_STRING),
                                ("raise_error_on_start_failure", 13, _F.TYPE_BOOL),
                                ("session_id", 14, _F.TYPE_STRING), ("override_hostname", 15, _F.TYPE_STRING)):
        _add(opts, name, number, ftype)

    tro = fd.message_type.add(name="ToolRequestOptions")
    _add(tro, "output_formats", 2, _F.TYPE_STRING)
    _add(tro, "save_to_repo", 3, _F.TYPE_BOOL)

    req = fd.message_type.add(name="ProfileRequest")
    entry = req.nested_type.add(name="ToolOptionsEntry")
    entry.options.map_entry = True
    _add(entry, "key", 1, _F.TYPE_STRING)
    _add(entry, "value", 2, _F.TYPE_MESSAGE, type_name="ToolRequestOptions")
    _add(req, "duration_ms", 1, _F.TYPE_UINT64)
    _add(req, "max_events", 2, _F.TYPE_UINT64)
    _add(req, "tools", 3, _F.TYPE_STRING, repeated=True)
    _add(req, "tool_options", 8, _F.TYPE_MESSAGE, repeated=True, type_name="ProfileRequest.ToolOptionsEntry")
    _add(req, "opts", 4, _F.TYPE_MESSAGE, type_name="ProfileOptions")
    _add(req, "repository_root", 5, _F.TYPE_STRING)
    _add(req, "session_id", 6, _F.TYPE_STRING)
    _add(req, "host_name", 7, _F.TYPE_STRING)
    _add(req, "emit_xspace", 9, _F.TYPE_BOOL)

    tool = fd.message_type.add(name="ProfileToolData")
    _add(tool, "name", 1, _F.TYPE_STRING)
    _add(tool, "data", 2, _F.TYPE_BYTES)

    resp = fd.message_type.add(name="ProfileResponse")
    _add(resp, "tool_data", 6, _F.TYPE_MESSAGE, repeated=True, type_name="ProfileToolData")
    _add(resp, "empty_trace", 7, _F.TYPE_BOOL)
    _add(resp, "xspace", 8, _F.TYPE_BYTES)  # tensorflow.profiler.XSpace, serialised by `xplane`

    term = fd.message_type.add(name="TerminateRequest")
    _add(term, "session_id", 1, _F.TYPE_STRING)
    fd.message_type.add(name="TerminateResponse")

    mon = fd.message_type.add(name="MonitorRequest")
    _add(mon, "duration_ms", 1, _F.TYPE_UINT64)
    _add(mon, "monitoring_level", 2, _F.TYPE_INT32)
    _add(mon, "timestamp", 3, _F.TYPE_BOOL)
    monr = fd.message_type.add(name="MonitorResponse")
    _add(monr, "data", 1, _F.TYPE_STRING)
    return fd


_pool = descriptor_pool.DescriptorPool()
_pool.Add(_file())


def _cls(name: str):
    return message_factory.GetMessageClass(_pool.FindMessageTypeByName(f"{_PACKAGE}.{name}"))


ProfileOptions = _cls("ProfileOptions")
ToolRequestOptions = _cls("ToolRequestOptions")
ProfileRequest = _cls("ProfileRequest")
ProfileToolData = _cls("ProfileToolData")
ProfileResponse = _cls("ProfileResponse")
TerminateRequest = _cls("TerminateRequest")
TerminateResponse = _cls("TerminateResponse")
MonitorRequest = _cls("MonitorRequest")
MonitorResponse = _cls("MonitorResponse")

# method name -> (request class, response class)
METHODS = {
    "Profile": (ProfileRequest, ProfileResponse),
    "Terminate": (TerminateRequest, TerminateResponse),
    "Monitor": (MonitorRequest, MonitorResponse),
}


def method_path(method: str) -> str:
    return f"/{SERVICE}/{method}"
