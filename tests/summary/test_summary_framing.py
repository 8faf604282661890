"""Record framing, CRC-32C backends and the hand-encoded scalar fast path,
checked against independent references (known vectors, TensorBoard's own CRC,
the protobuf library)."""

from __future__ import annotations

import math
import os
import struct

import numpy as np
import pytest
from tensorboard.compat.proto import event_pb2
from tensorboard.compat.tensorflow_stub import pywrap_tensorflow
from tensorboard.util import tensor_util

from jitflow.summary import protos, record_writer, wire
from summary_testutil import accumulate, reference_crc32c

# --- CRC-32C ---------------------------------------------------------------------


def test_crc32c_known_vector():
    # The standard check value of CRC-32C (RFC 3720 appendix B.4).
    assert record_writer.crc32c(b"123456789") == 0xE3069283


@pytest.mark.parametrize("n", [0, 1, 7, 8, 9, 15, 16, 17, 63, 64, 65, 1000, 4099])
def test_numba_crc_matches_c_library(n):
    data = os.urandom(n)
    assert record_writer.numba_crc32c(data) == reference_crc32c(data)
    assert record_writer.numba_crc32c(data, 0xDEADBEEF) == reference_crc32c(data, 0xDEADBEEF)


def test_masked_crc_matches_tensorboard():
    for data in [b"", b"hello", os.urandom(100)]:
        assert record_writer.masked_crc32c(data) == pywrap_tensorflow.masked_crc32c(data)


# --- framing ---------------------------------------------------------------------


def test_frame_layout():
    payload = b"some event bytes"
    rec = record_writer.frame(payload)
    assert len(rec) == 8 + 4 + len(payload) + 4
    assert struct.unpack("<Q", rec[:8]) == (len(payload),)
    assert struct.unpack("<I", rec[8:12]) == (pywrap_tensorflow.masked_crc32c(rec[:8]),)
    assert rec[12:-4] == payload
    assert struct.unpack("<I", rec[-4:]) == (pywrap_tensorflow.masked_crc32c(payload),)


@pytest.mark.parametrize("count", [0, 1, 5, 31, 32, 500, 2500])
def test_all_framers_agree(count):
    rng = np.random.default_rng(count)
    payloads = [os.urandom(int(n)) for n in rng.integers(0, 300, size=count)]
    expected = b"".join(record_writer.frame(p) for p in payloads)
    assert record_writer.frame_many(payloads) == expected
    assert record_writer.numba_frame_many(payloads) == expected
    if record_writer._c_crc32c is not None:  # the C-library framers
        assert record_writer._c_frame_small(payloads) == expected
        if payloads:
            assert record_writer._c_frame_large(payloads) == expected


# --- hand-encoded scalar events ------------------------------------------------------

STEPS = [0, 1, 127, 128, 16383, 16384, 2097151, 2097152, 2**40, 2**63 - 1, -1, -(2**63)]
VALUES = [0.0, -0.0, 1.5, -2.0, 3, 1e-50, math.inf, -math.inf, math.nan, 1e39, -1e39]


@pytest.mark.parametrize("tag", ["loss", "x" * 200, "métriques/précision"])
@pytest.mark.parametrize("description", [None, "a description", "d" * 300])
def test_fast_tensor_scalar_is_byte_identical_to_protobuf(tag, description):
    md = protos.plugin_metadata(protos.SCALARS, description).SerializeToString()
    entry = wire.scalar_entry(wire.scalar_parts(tag, md))
    wall_time = 1_700_000_000.125
    for step in STEPS:
        for value in VALUES:
            fast = wire.fast_scalar_event(entry, value, step, wall_time)
            ref = protos.scalar_event(tag, value, step, wall_time, description).SerializeToString()
            assert fast == ref, (step, value)


def test_fast_scalar_matches_tensorboards_own_tensor_encoding():
    # tensorboard.util.tensor_util builds the same rank-0 float32 TensorProto.
    ev = event_pb2.Event.FromString(wire.fast_scalar_event(
        wire.scalar_entry(wire.scalar_parts("t", b"")), 0.3, 7, 12.5))
    tensor = ev.summary.value[0].tensor
    assert tensor == tensor_util.make_tensor_proto(np.float32(0.3))
    assert tensor_util.make_ndarray(tensor).dtype == np.float32
    assert (ev.step, ev.wall_time) == (7, 12.5)


def test_huge_values_round_to_infinity_like_float32():
    entry = wire.scalar_entry(wire.scalar_parts("t", b""))
    for value, expected in [(1e39, math.inf), (-1e39, -math.inf), (2**200, math.inf)]:
        ev = event_pb2.Event.FromString(wire.fast_scalar_event(entry, value, 1, 1.0))
        assert ev.summary.value[0].tensor.float_val[0] == expected
    # An int beyond float64 is not a float32 overflow but a value no float holds: the
    # front ends turn this into a ValueError naming the argument (issue 22, item 15).
    with pytest.raises(OverflowError):
        wire.fast_scalar_event(entry, 10**400, 1, 1.0)


@pytest.mark.parametrize("step", [None, 0, 5, 300, 70000, 2**30])
def test_fast_simple_value_is_byte_identical_to_protobuf(step):
    entry = wire.scalar_entry(wire.simple_value_parts("train/loss"))
    for value in [0.25, math.nan, -7]:
        fast = wire.fast_scalar_event(entry, value, step, 1234.5)
        ref = protos.simple_value_event("train/loss", value, step, 1234.5).SerializeToString()
        assert fast == ref


def test_zero_wall_time_is_omitted_like_protobuf():
    parts = wire.simple_value_parts("a")
    ref = protos.simple_value_event("a", 1.0, 3, 0.0).SerializeToString()
    assert wire.scalar_event(parts, 1.0, 3, 0.0) == ref


def test_varint():
    assert wire.varint(0) == b"\x00"
    assert wire.varint(300) == b"\xac\x02"
    assert wire.varint(-1) == b"\xff" * 9 + b"\x01"


def test_writer_works_on_the_numba_backend(tmp_path, monkeypatch):
    import jitflow.summary as s
    from jitflow.runtime.io import records  # where the framing lives (record_writer re-exports it)

    monkeypatch.setattr(records, "_c_crc32c", None)
    monkeypatch.setattr(records, "crc32c", records.numba_crc32c)
    monkeypatch.setattr(records, "_headers", {})
    with s.create_file_writer(str(tmp_path)).as_default() as w:
        for i in range(100):
            s.scalar("x", float(i), step=i)
    w.close()
    assert [e.step for e in accumulate(tmp_path).Tensors("x")] == list(range(100))
