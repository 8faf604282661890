"""Hand-encoded protobuf bytes for the hot path: one scalar Event.

Building `Event`/`Summary`/`TensorProto` messages costs ~10 us per scalar; the
bytes of a scalar event differ from call to call only in three places, so the
rest is encoded once per tag and cached. Field numbers (proto3, serialized in
field order, defaults omitted)::

    Event:        1 wall_time (fixed64 double)  2 step (varint)  5 summary (bytes)
    Summary:      1 value (bytes)
    Value:        1 tag (bytes)  2 simple_value (fixed32 float)
                  8 tensor (bytes)  9 metadata (bytes)
    TensorProto:  1 dtype (varint, DT_FLOAT = 1)  2 tensor_shape (bytes, empty)
                  5 float_val (packed fixed32)

so a scalar event is::

    09 <f64 wall_time> [10 <varint step>] <prefix(tag)> <f32 value> <suffix(tag)>

and for steps below 2**21 (a varint of at most 3 bytes) the whole event is one
`struct.pack` call with a per-tag format, ~3x faster than joining pieces.

`tests/summary/test_wire.py` checks these bytes against the proto library.
"""

from __future__ import annotations

import math
import struct

_pack_f64 = struct.Struct("<d").pack
_pack_f32 = struct.Struct("<f").pack
_F32_MAX = 3.4028234663852886e38


def varint(n: int) -> bytes:
    """Protobuf base-128 varint; negative int64 values take ten bytes."""
    if n < 0:
        n += 1 << 64
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def length_delimited(field: int, payload: bytes) -> bytes:
    return varint(field << 3 | 2) + varint(len(payload)) + payload


# Step 0 is the proto3 default and is not serialized.
_SMALL_STEPS = [b""] + [bytes((0x10, i)) for i in range(1, 128)]


def step_field(step: int) -> bytes:
    """Bytes of `Event.step` (field 2) for an int64 step."""
    if 0 <= step < 128:
        return _SMALL_STEPS[step]
    if 0 < step < 16384:
        return bytes((0x10, (step & 0x7F) | 0x80, step >> 7))
    if 0 < step < 2097152:
        return bytes((0x10, (step & 0x7F) | 0x80, ((step >> 7) & 0x7F) | 0x80, step >> 14))
    return b"\x10" + varint(step)


def wall_time_field(wall_time: float) -> bytes:
    """Bytes of `Event.wall_time` (field 1); 0.0 is the default and omitted."""
    if wall_time == 0.0 and math.copysign(1.0, wall_time) > 0:
        return b""
    return b"\x09" + _pack_f64(wall_time)


def f32(value: float) -> bytes:
    """float32 bytes of `value`, rounding out-of-range finite values to +-inf
    as a numpy float32 cast does (struct refuses them)."""
    try:
        return _pack_f32(value)
    except (OverflowError, struct.error):  # struct.error: an int too big for a double
        # float() raises OverflowError for an int beyond float64 (10**400): that is
        # an error for the front end to report, not a silent inf.
        if float(value) != value or abs(value) <= _F32_MAX:
            raise
        return _pack_f32(math.inf if value > 0 else -math.inf)


# A rank-0 float32 TensorProto minus its 4 value bytes.
_TENSOR_HEAD = b"\x08\x01\x12\x00\x2a\x04"


def scalar_parts(tag: str, metadata: bytes) -> tuple[bytes, bytes]:
    """(prefix, suffix) around the f32 value for a TF2 tensor scalar with the
    serialized SummaryMetadata `metadata`."""
    tensor_field = b"\x42" + varint(len(_TENSOR_HEAD) + 4) + _TENSOR_HEAD
    md_field = length_delimited(9, metadata)
    tag_field = length_delimited(1, tag.encode("utf-8"))
    value_len = len(tag_field) + len(tensor_field) + 4 + len(md_field)
    summary_len = 1 + len(varint(value_len)) + value_len
    prefix = (b"\x2a" + varint(summary_len) + b"\x0a" + varint(value_len)
              + tag_field + tensor_field)
    return prefix, md_field


def simple_value_parts(tag: str) -> tuple[bytes, bytes]:
    """(prefix, suffix) around the f32 value for an old-style `simple_value`."""
    tag_field = length_delimited(1, tag.encode("utf-8"))
    value_len = len(tag_field) + 5
    summary_len = 1 + len(varint(value_len)) + value_len
    prefix = b"\x2a" + varint(summary_len) + b"\x0a" + varint(value_len) + tag_field + b"\x15"
    return prefix, b""


def scalar_event(parts: tuple[bytes, bytes], value: float, step: int | None,
                 wall_time: float) -> bytes:
    """A whole serialized scalar Event from cached `parts` (reference version of
    what the writers inline in their hot paths)."""
    return b"".join((wall_time_field(wall_time), b"" if step is None else step_field(step),
                     parts[0], f32(value), parts[1]))


def scalar_entry(parts: tuple[bytes, bytes]) -> tuple:
    """What the hot paths cache per tag: (prefix, suffix, pack0, pack1, pack2,
    pack3), packK packing a whole event whose step varint has K bytes."""
    prefix, suffix = parts
    body = f"{len(prefix)}sf{len(suffix)}s"
    packs = tuple(struct.Struct("<Bd" + ("B" * (k + 1) if k else "") + body).pack for k in range(4))
    return (prefix, suffix) + packs


def fast_scalar_event(entry: tuple, value: float, step: int | None, wall_time: float) -> bytes:
    """`scalar_event` for a cached `entry`, an int (or None) step and a nonzero
    wall time, in one struct.pack for the common cases."""
    prefix, suffix, k0, k1, k2, k3 = entry
    try:
        if step is None or step == 0:
            return k0(9, wall_time, prefix, value, suffix)
        if 0 < step < 128:
            return k1(9, wall_time, 16, step, prefix, value, suffix)
        if 0 < step < 16384:
            return k2(9, wall_time, 16, (step & 127) | 128, step >> 7, prefix, value, suffix)
        if 0 < step < 2097152:
            return k3(9, wall_time, 16, (step & 127) | 128, ((step >> 7) & 127) | 128, step >> 14,
                      prefix, value, suffix)
    except (OverflowError, struct.error):  # beyond float32: f32() rounds it to +-inf
        pass
    return scalar_event((prefix, suffix), value, step, wall_time)
