"""Issue 22 item 10: hostile checkpoint files.

Data files must be regular files inside the checkpoint's directory, and every size is
checked against the index before anything is read or allocated: no /dev/zero, no FIFO
that hangs, no zip bomb, no reading arbitrary files, and a damaged index is a clean
`DataLossError` (never another exception, never a hang).
"""
from __future__ import annotations

import hashlib
import io
import json
import os
import random
import tracemalloc
import zipfile

import numpy as np
import pytest

import jitflow as jf
from jitflow.runtime.training import sstable
from jitflow.runtime.training.bundle_protos import BundleEntryProto, BundleHeaderProto

DATA = ".data-00000-of-00001"


@pytest.fixture
def saved(tmp_path):
    path = jf.train.Checkpoint(v=jf.Variable(np.arange(4, dtype=np.float32))).write(str(tmp_path / "c"))
    return path, jf.train.Checkpoint(v=jf.Variable(np.zeros(4, np.float32)))


def untouched(ckpt):
    return ckpt.v.numpy().tolist() == [0.0] * 4


def rewrite_index(path, edit):
    """Re-encode `path`'s index after `edit(key, proto)` changed the entries (a forged, CRC-valid index)."""
    items = sstable.read_table(open(path + ".index", "rb").read())
    out = []
    for key, value in items:
        proto = BundleHeaderProto() if key == b"" else BundleEntryProto()
        proto.ParseFromString(value)
        edit(key, proto)
        out.append((key, proto.SerializeToString()))
    open(path + ".index", "wb").write(sstable.build_table(out))


def test_a_data_file_symlinked_to_dev_zero_or_any_outside_file_is_refused(saved, tmp_path):
    path, fresh = saved
    os.remove(path + DATA)
    os.symlink("/dev/zero", path + DATA)
    with pytest.raises(jf.errors.DataLossError, match="outside the checkpoint's directory"):
        fresh.restore(path)
    os.remove(path + DATA)
    secret = tmp_path.parent / f"{tmp_path.name}-secret"
    secret.write_bytes(b"s3cret" * 100)
    os.symlink(str(secret), path + DATA)
    with pytest.raises(jf.errors.DataLossError, match="outside the checkpoint's directory"):
        fresh.restore(path)
    os.remove(path + ".index")
    os.symlink("/etc/passwd", path + ".index")
    with pytest.raises(jf.errors.DataLossError, match="outside the checkpoint's directory"):
        jf.train.list_variables(path)
    assert untouched(fresh)


def test_a_fifo_or_device_as_data_file_is_refused_without_hanging(saved):
    path, fresh = saved
    os.remove(path + DATA)
    os.mkfifo(path + DATA)  # opening it for reading would block forever without O_NONBLOCK
    with pytest.raises(jf.errors.DataLossError, match="not a regular file"):
        fresh.restore(path)
    os.remove(path + DATA)
    os.mkdir(path + DATA)
    with pytest.raises(jf.errors.DataLossError):
        fresh.restore(path)
    assert untouched(fresh)


def test_sizes_are_checked_against_the_index_before_reading(saved):
    path, fresh = saved
    rewrite_index(path, lambda key, p: key.startswith(b"v/") and setattr(p, "size", 4 << 30))
    tracemalloc.start()
    with pytest.raises(jf.errors.DataLossError, match="data file"):
        fresh.restore(path)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < 50 << 20  # nothing near the 4 GiB the index asked for was allocated
    rewrite_index(path, lambda key, p: key.startswith(b"v/") and (setattr(p, "size", 16), p.shape.dim[0].__setattr__(
        "size", 1 << 40)))
    with pytest.raises(jf.errors.DataLossError, match="bytes"):
        fresh.restore(path)
    rewrite_index(path, lambda key, p: key == b"" and setattr(p, "num_shards", 1 << 30))
    with pytest.raises(jf.errors.DataLossError, match="data shards"):
        fresh.restore(path)
    assert untouched(fresh)


def test_a_damaged_index_is_always_a_clean_data_loss_error(saved):
    path, fresh = saved
    good = open(path + ".index", "rb").read()
    rng = random.Random(7)
    outcomes = set()
    for trial in range(300):
        data = bytearray(good)
        for _ in range(rng.randint(1, 4)):
            data[rng.randrange(len(data))] = rng.randrange(256)
        if trial % 3 == 0:
            data = data[:rng.randrange(len(data))]
        open(path + ".index", "wb").write(bytes(data))
        fresh.v.assign(np.zeros(4, np.float32))
        try:
            fresh.restore(path)
        except jf.errors.DataLossError:
            outcomes.add("DataLossError")
            assert untouched(fresh)  # all or nothing
        else:  # a flip in the footer's padding: harmless, and the values are the saved ones
            outcomes.add("ok")
            assert fresh.v.numpy().tolist() == [0.0, 1.0, 2.0, 3.0]
    assert "DataLossError" in outcomes


# -- jitflow's older .json + .npz format ---------------------------------------------------------------
def legacy(tmp_path, data, data_file="c.npz", data_bytes=None):
    nodes = [{"kind": "object", "children": [{"name": "v", "node": 1}]},
             {"kind": "variable", "children": [], "variable": {"key": "n1", "dtype": "float32", "shape": [4],
                                                               "name": "v:0"}}]
    meta = {"format": "jitflow.checkpoint", "version": 1, "data_file": data_file,
            "data_bytes": len(data) if data_bytes is None else data_bytes,
            "data_sha256": hashlib.sha256(data).hexdigest(), "nodes": nodes}
    (tmp_path / "c.json").write_text(json.dumps(meta))
    return str(tmp_path / "c")


def test_legacy_index_cannot_point_outside_its_directory_or_at_devices(tmp_path):
    fresh = jf.train.Checkpoint(v=jf.Variable(np.zeros(4, np.float32)))
    for target in ("/dev/zero", "../../../../etc/passwd", "/etc/passwd", "sub/c.npz"):
        path = legacy(tmp_path, b"x", data_file=target, data_bytes=1 << 32)
        with pytest.raises(jf.errors.DataLossError, match="not a file name inside"):
            fresh.restore(path)
    os.mkfifo(tmp_path / "fifo.npz")
    with pytest.raises(jf.errors.DataLossError, match="not a regular file"):
        fresh.restore(legacy(tmp_path, b"x", data_file="fifo.npz"))
    assert untouched(fresh)


def test_legacy_zip_bomb_is_refused_before_decompressing(tmp_path):
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        with zf.open("n1.npy", "w", force_zip64=True) as member:
            header = io.BytesIO()
            np.lib.format.write_array_header_1_0(header, {"descr": "<f4", "fortran_order": False,
                                                          "shape": (1 << 28,)})
            member.write(header.getvalue())
            chunk = b"\0" * (1 << 20)
            for _ in range(64):  # 64 MiB of zeros that compress to ~64 KiB
                member.write(chunk)
    data = buffer.getvalue()
    assert len(data) < 1 << 20
    (tmp_path / "c.npz").write_bytes(data)
    fresh = jf.train.Checkpoint(v=jf.Variable(np.zeros(4, np.float32)))
    tracemalloc.start()
    with pytest.raises(jf.errors.DataLossError, match="compressed members"):
        fresh.restore(legacy(tmp_path, data))
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < 32 << 20
    (tmp_path / "c.npz").write_bytes(data + b"junk")  # size differs from the index: refused before reading
    with pytest.raises(jf.errors.DataLossError, match="the index says"):
        fresh.restore(legacy(tmp_path, data))
    assert untouched(fresh)


def test_saving_over_a_hostile_data_file_replaces_the_link_not_its_target(saved, tmp_path):
    path, fresh = saved
    outside = tmp_path.parent / f"{tmp_path.name}-victim"
    outside.write_bytes(b"precious")
    os.remove(path + DATA)
    os.symlink(str(outside), path + DATA)
    jf.train.Checkpoint(v=jf.Variable(np.full(4, 9.0, np.float32))).write(path)
    assert outside.read_bytes() == b"precious" and not os.path.islink(path + DATA)
    fresh.restore(path)
    assert fresh.v.numpy().tolist() == [9.0] * 4
