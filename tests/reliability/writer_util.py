"""Helpers for the summary-writer reliability tests: read event files back with
TensorBoard's own loaders, check framing without jitflow, run child scripts."""

from __future__ import annotations

import glob
import os
import struct
import subprocess
import sys
import textwrap

import pytest
from tensorboard.backend.event_processing import event_file_loader, plugin_event_accumulator
from tensorboard.compat.proto import event_pb2
from tensorboard.compat.tensorflow_stub import pywrap_tensorflow
from tensorboard.util import tensor_util


def event_files(logdir) -> list[str]:
    return sorted(glob.glob(os.path.join(str(logdir), "events.out.tfevents.*")))


try:  # an independent CRC-32C: the C library when installed ...
    from crc32c import crc32c as _c_crc32c
except ImportError:  # ... else TensorBoard's own pure-Python one (slow, fine for tests)
    _c_crc32c = None


def _masked_crc(data: bytes) -> int:
    if _c_crc32c is not None:
        c = _c_crc32c(data)
    else:
        c = pywrap_tensorflow.crc_update(0, data) & 0xFFFFFFFF
    return (((c >> 15) | (c << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def whole_records(path) -> tuple[list[event_pb2.Event], int]:
    """Every whole record of a file (CRCs checked by TensorBoard's CRC code), and
    the count of trailing bytes that do not form one (a torn last record).
    Raises on a bad CRC: a file corrupted in the middle."""
    data = open(path, "rb").read()
    pos, out = 0, []
    while pos + 12 <= len(data):
        header = data[pos:pos + 8]
        (n,) = struct.unpack("<Q", header)
        assert struct.unpack("<I", data[pos + 8:pos + 12])[0] == _masked_crc(header), \
            f"{path}: bad length CRC at offset {pos}"
        if pos + 16 + n > len(data):
            break
        payload = data[pos + 12:pos + 12 + n]
        assert struct.unpack("<I", data[pos + 12 + n:pos + 16 + n])[0] == _masked_crc(payload), \
            f"{path}: bad data CRC at offset {pos}"
        out.append(event_pb2.Event.FromString(payload))
        pos += 16 + n
    return out, len(data) - pos


def loaded_events(path) -> list[event_pb2.Event]:
    """All events of one file as TensorBoard's EventFileLoader reads them."""
    return list(event_file_loader.EventFileLoader(str(path)).Load())


def run_scalars(logdir) -> dict[str, list[tuple[int, float]]]:
    """tag -> sorted [(step, value)] of a run directory (all its event files), read
    by TensorBoard's EventAccumulator."""
    acc = plugin_event_accumulator.EventAccumulator(
        str(logdir), size_guidance={"tensors": 0, "scalars": 0})
    acc.Reload()
    out = {}
    for tag in acc.Tags()["tensors"]:
        out[tag] = sorted((e.step, float(tensor_util.make_ndarray(e.tensor_proto).item()))
                          for e in acc.Tensors(tag))
    return out


def steps_of(path, tag: str) -> list[int]:
    """Steps of `tag` in one file's whole records, in file order."""
    events, _ = whole_records(path)
    return [e.step for e in events for v in e.summary.value if v.tag == tag]


def run_child(script: str, *args, timeout: float = 120, env: dict | None = None) -> subprocess.CompletedProcess:
    """Run a Python child script (dedented) with args; capture its output."""
    return subprocess.run([sys.executable, "-c", textwrap.dedent(script), *map(str, args)],
                          capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, **(env or {})})


@pytest.fixture(autouse=True)
def fresh_summary_defaults():
    """Import into a test module: its tests neither see nor leave a default writer."""
    from jitflow.summary import context

    def reset():
        context.set_global_writer(None)
        context.global_step = None
        context.tls.writer, context.tls.step, context.tls.record = None, context._UNSET, True

    reset()
    yield
    reset()
