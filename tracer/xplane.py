"""XSpace protobufs (xprof's `xplane.proto`) built from descriptors at import time.

No protoc step and no dependency on xprof: the message types are declared below as a
`FileDescriptorProto` with the field numbers of `tsl/profiler/protobuf/xplane.proto`
and turned into classes with `message_factory`. The package name matches upstream, so
the bytes are what the Profile plugin parses.
"""
from __future__ import annotations

from typing import Any

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

_F = descriptor_pb2.FieldDescriptorProto
_PACKAGE = "tensorflow.profiler"
_FILE = "jitflow/xplane.proto"


def _field(msg, name, number, ftype, label=_F.LABEL_OPTIONAL, type_name=None, oneof=None):
    f = msg.field.add(name=name, number=number, type=ftype, label=label)
    if type_name:
        f.type_name = f".{_PACKAGE}.{type_name}"
    if oneof is not None:
        f.oneof_index = oneof
    return f


def _map_entry(parent, entry_name, value_type):
    entry = parent.nested_type.add(name=entry_name)
    entry.options.map_entry = True
    _field(entry, "key", 1, _F.TYPE_INT64)
    _field(entry, "value", 2, _F.TYPE_MESSAGE, type_name=value_type)
    return entry


def _file() -> descriptor_pb2.FileDescriptorProto:
    fd = descriptor_pb2.FileDescriptorProto(name=_FILE, package=_PACKAGE, syntax="proto3")
    rep = _F.LABEL_REPEATED

    space = fd.message_type.add(name="XSpace")
    _field(space, "planes", 1, _F.TYPE_MESSAGE, rep, "XPlane")
    _field(space, "errors", 2, _F.TYPE_STRING, rep)
    _field(space, "warnings", 3, _F.TYPE_STRING, rep)
    _field(space, "hostnames", 4, _F.TYPE_STRING, rep)

    plane = fd.message_type.add(name="XPlane")
    _field(plane, "id", 1, _F.TYPE_INT64)
    _field(plane, "name", 2, _F.TYPE_STRING)
    _field(plane, "lines", 3, _F.TYPE_MESSAGE, rep, "XLine")
    _map_entry(plane, "EventMetadataEntry", "XEventMetadata")
    _field(plane, "event_metadata", 4, _F.TYPE_MESSAGE, rep, "XPlane.EventMetadataEntry")
    _map_entry(plane, "StatMetadataEntry", "XStatMetadata")
    _field(plane, "stat_metadata", 5, _F.TYPE_MESSAGE, rep, "XPlane.StatMetadataEntry")
    _field(plane, "stats", 6, _F.TYPE_MESSAGE, rep, "XStat")

    line = fd.message_type.add(name="XLine")
    _field(line, "id", 1, _F.TYPE_INT64)
    _field(line, "display_id", 10, _F.TYPE_INT64)
    _field(line, "name", 2, _F.TYPE_STRING)
    _field(line, "display_name", 11, _F.TYPE_STRING)
    _field(line, "timestamp_ns", 3, _F.TYPE_INT64)
    _field(line, "duration_ps", 9, _F.TYPE_INT64)
    _field(line, "events", 4, _F.TYPE_MESSAGE, rep, "XEvent")

    event = fd.message_type.add(name="XEvent")
    event.oneof_decl.add(name="data")
    _field(event, "metadata_id", 1, _F.TYPE_INT64)
    _field(event, "offset_ps", 2, _F.TYPE_INT64, oneof=0)
    _field(event, "num_occurrences", 5, _F.TYPE_INT64, oneof=0)
    _field(event, "duration_ps", 3, _F.TYPE_INT64)
    _field(event, "stats", 4, _F.TYPE_MESSAGE, rep, "XStat")

    stat = fd.message_type.add(name="XStat")
    stat.oneof_decl.add(name="value")
    _field(stat, "metadata_id", 1, _F.TYPE_INT64)
    _field(stat, "double_value", 2, _F.TYPE_DOUBLE, oneof=0)
    _field(stat, "uint64_value", 3, _F.TYPE_UINT64, oneof=0)
    _field(stat, "int64_value", 4, _F.TYPE_INT64, oneof=0)
    _field(stat, "str_value", 5, _F.TYPE_STRING, oneof=0)
    _field(stat, "bytes_value", 6, _F.TYPE_BYTES, oneof=0)
    _field(stat, "ref_value", 7, _F.TYPE_UINT64, oneof=0)

    emeta = fd.message_type.add(name="XEventMetadata")
    _field(emeta, "id", 1, _F.TYPE_INT64)
    _field(emeta, "name", 2, _F.TYPE_STRING)
    _field(emeta, "display_name", 4, _F.TYPE_STRING)
    _field(emeta, "metadata", 3, _F.TYPE_BYTES)
    _field(emeta, "stats", 5, _F.TYPE_MESSAGE, rep, "XStat")
    _field(emeta, "child_id", 6, _F.TYPE_INT64, rep)

    smeta = fd.message_type.add(name="XStatMetadata")
    _field(smeta, "id", 1, _F.TYPE_INT64)
    _field(smeta, "name", 2, _F.TYPE_STRING)
    _field(smeta, "description", 3, _F.TYPE_STRING)
    return fd


_pool = descriptor_pool.DescriptorPool()
_pool.Add(_file())


def _cls(name: str):
    return message_factory.GetMessageClass(_pool.FindMessageTypeByName(f"{_PACKAGE}.{name}"))


XSpace = _cls("XSpace")
XPlane = _cls("XPlane")
XLine = _cls("XLine")
XEvent = _cls("XEvent")
XStat = _cls("XStat")
XEventMetadata = _cls("XEventMetadata")
XStatMetadata = _cls("XStatMetadata")


class PlaneBuilder:
    """Interns event and stat metadata by name while events are added."""

    def __init__(self, plane_id: int, name: str) -> None:
        self.plane = XPlane(id=plane_id, name=name)
        self._events: dict = {}
        self._stats: dict = {}

    def event_metadata(self, name: str, display_name: str = "") -> int:
        found = self._events.get(name)
        if found is None:
            found = len(self._events) + 1
            self._events[name] = found
            self.plane.event_metadata[found].CopyFrom(XEventMetadata(id=found, name=name,
                                                                     display_name=display_name or name))
        return found

    def stat_metadata(self, name: str) -> int:
        found = self._stats.get(name)
        if found is None:
            found = len(self._stats) + 1
            self._stats[name] = found
            self.plane.stat_metadata[found].CopyFrom(XStatMetadata(id=found, name=name))
        return found

    def stat(self, name: str, value) -> Any:  # an XStat (a class built at import: no static type)
        sid = self.stat_metadata(name)
        if isinstance(value, bool):
            return XStat(metadata_id=sid, int64_value=int(value))
        if isinstance(value, int):
            return XStat(metadata_id=sid, int64_value=value)
        if isinstance(value, float):
            return XStat(metadata_id=sid, double_value=value)
        return XStat(metadata_id=sid, str_value=str(value))

    def line(self, line_id: int, name: str, timestamp_ns: int) -> Any:  # an XLine
        return self.plane.lines.add(id=line_id, display_id=line_id, name=name, display_name=name,
                                    timestamp_ns=timestamp_ns)
