"""Helpers for the summary tests: read event files back with TensorBoard's own
loaders, and check record framing independently of jitflow."""

from __future__ import annotations

import glob
import os
import struct

from tensorboard.backend.event_processing import event_file_loader
from tensorboard.backend.event_processing import plugin_event_accumulator
from tensorboard.compat.proto import event_pb2
from tensorboard.compat.tensorflow_stub import pywrap_tensorflow

try:  # an independent CRC-32C: the C library when installed ...
    from crc32c import crc32c as _c_crc32c
except ImportError:  # ... else TensorBoard's own pure-Python one (slow, fine for tests)
    _c_crc32c = None


def reference_crc32c(data: bytes, value: int = 0) -> int:
    """CRC-32C of `data` continuing from `value`, computed without jitflow."""
    if _c_crc32c is not None:
        return _c_crc32c(data, value)
    return pywrap_tensorflow.crc_update(value, data) & 0xFFFFFFFF


def reference_masked_crc32c(data: bytes) -> int:
    c = reference_crc32c(data)
    return (((c >> 15) | (c << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def event_files(logdir: str) -> list[str]:
    return sorted(glob.glob(os.path.join(str(logdir), "events.out.tfevents.*")))


def load_events(path: str) -> list[event_pb2.Event]:
    """All events in one file, via TensorBoard's EventFileLoader (CRC-checked)."""
    return list(event_file_loader.EventFileLoader(str(path)).Load())


def load_raw_events(path: str) -> list[event_pb2.Event]:
    """Events exactly as written (no conversion of legacy value kinds)."""
    return list(event_file_loader.LegacyEventFileLoader(str(path)).Load())


def load_all(logdir: str, raw: bool = False) -> list[event_pb2.Event]:
    files = event_files(logdir)
    assert files, f"no event file in {logdir}"
    load = load_raw_events if raw else load_events
    return [e for f in files for e in load(f)]


def accumulate(logdir: str) -> plugin_event_accumulator.EventAccumulator:
    """TensorBoard's tensor-based accumulator over one run directory."""
    acc = plugin_event_accumulator.EventAccumulator(
        str(logdir), size_guidance={"tensors": 0, "scalars": 0, "histograms": 0,
                                    "images": 0, "graph": 0})
    acc.Reload()
    return acc


def read_records(path: str) -> tuple[list[bytes], int]:
    """Payloads of all whole records (CRCs checked without jitflow's code), and
    the number of trailing bytes that do not form a whole record. Raises on a bad CRC."""
    masked = reference_masked_crc32c
    data = open(path, "rb").read()
    pos, out = 0, []
    while pos + 12 <= len(data):
        header = data[pos:pos + 8]
        (n,) = struct.unpack("<Q", header)
        (hcrc,) = struct.unpack("<I", data[pos + 8:pos + 12])
        assert hcrc == masked(header), f"bad length CRC at offset {pos}"
        if pos + 12 + n + 4 > len(data):
            break
        payload = data[pos + 12:pos + 12 + n]
        (pcrc,) = struct.unpack("<I", data[pos + 12 + n:pos + 16 + n])
        assert pcrc == masked(payload), f"bad payload CRC at offset {pos}"
        out.append(payload)
        pos += 16 + n
    return out, len(data) - pos
