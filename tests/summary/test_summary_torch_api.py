"""The PyTorch-style SummaryWriter: read back with TensorBoard's loaders and
compared with what tensorboardX (PyTorch's writer's origin) writes."""

from __future__ import annotations

import io
import os
import re
import socket
import time

import numpy as np
import pytest
from summary_testutil import accumulate, event_files, load_all
from tensorboard.backend.event_processing import event_accumulator
from tensorboard.compat.proto import graph_pb2
from tensorboard.util import tensor_util

import jitflow.summary as s


def classic(logdir) -> event_accumulator.EventAccumulator:
    acc = event_accumulator.EventAccumulator(str(logdir), size_guidance={"scalars": 0, "histograms": 0,
                                                                         "images": 0, "tensors": 0})
    acc.Reload()
    return acc


def test_add_scalar_reads_back_as_simple_values(tmp_path):
    t0 = time.time()
    with s.SummaryWriter(str(tmp_path)) as w:
        for step in range(10):
            w.add_scalar("train/loss", 10.0 - step, step)
        w.add_scalar("np", np.float32(0.5), np.int64(3))
        w.add_scalar("one_element", np.array([2.5]), 4)
        w.add_scalar("fixed_time", 1.0, 1, walltime=1234.5)
        w.add_scalar("no_step", 3.0)
    t1 = time.time()
    acc = classic(tmp_path)
    pts = acc.Scalars("train/loss")
    assert [p.step for p in pts] == list(range(10))
    assert [p.value for p in pts] == [10.0 - i for i in range(10)]
    assert all(t0 <= p.wall_time <= t1 for p in pts)
    assert acc.Scalars("np")[0].value == 0.5 and acc.Scalars("np")[0].step == 3
    assert acc.Scalars("one_element")[0].value == 2.5
    assert acc.Scalars("fixed_time")[0].wall_time == 1234.5
    assert acc.Scalars("no_step")[0].step == 0
    raw = [v for e in load_all(tmp_path, raw=True) for v in e.summary.value if v.tag == "train/loss"]
    assert raw[0].WhichOneof("value") == "simple_value"  # PyTorch's old style


def test_new_style_scalars_are_tensors_the_scalars_plugin_reads(tmp_path):
    with s.SummaryWriter(str(tmp_path)) as w:
        w.add_scalar("new", 1.5, 1, new_style=True)
        w.add_scalar("double", 2.5, 2, new_style=True, double_precision=True)
        w.add_scalar("old", 3.5, 3)
    acc = accumulate(tmp_path)  # the tensor-based loader the scalars plugin uses
    for tag, value, step in [("new", 1.5, 1), ("double", 2.5, 2), ("old", 3.5, 3)]:
        (ev,) = acc.Tensors(tag)
        assert float(tensor_util.make_ndarray(ev.tensor_proto)) == value and ev.step == step
        assert acc.SummaryMetadata(tag).plugin_data.plugin_name == "scalars"
    assert tensor_util.make_ndarray(acc.Tensors("double")[0].tensor_proto).dtype == np.float64


def test_add_scalars_writes_sub_runs(tmp_path):
    with s.SummaryWriter(str(tmp_path)) as w:
        for step in range(3):
            w.add_scalars("loss/split", {"train": 1.0 * step, "val": 2.0 * step}, step)
    for key, factor in [("train", 1.0), ("val", 2.0)]:
        sub = tmp_path / f"loss_split_{key}"
        assert event_files(sub), f"no run directory {sub}"
        pts = classic(sub).Scalars("loss/split")
        assert [(p.step, p.value) for p in pts] == [(i, factor * i) for i in range(3)]


def test_matches_tensorboardx_values(tmp_path):
    tbx = pytest.importorskip("tensorboardX")
    values = np.random.default_rng(0).normal(size=300)
    img = np.random.default_rng(1).random((3, 5, 7)).astype(np.float32)
    for cls, sub in [(tbx.SummaryWriter, "tbx"), (s.SummaryWriter, "jf")]:
        w = cls(str(tmp_path / sub))
        w.add_scalar("s", 0.125, 2)
        w.add_histogram("h", values, 3)
        w.add_histogram("h_auto", values, 3, bins="auto")
        w.add_text("t", "**bold** text", 4)
        w.add_image("i", img, 5)
        w.close()
    ref, ours = classic(tmp_path / "tbx"), classic(tmp_path / "jf")
    a, b = ours.Scalars("s")[0], ref.Scalars("s")[0]
    assert (a.step, a.value) == (b.step, b.value) == (2, 0.125)
    for tag in ["h", "h_auto"]:
        assert ours.Histograms(tag)[0].histogram_value == ref.Histograms(tag)[0].histogram_value
    assert ours.Tags()["tensors"] == ref.Tags()["tensors"] == ["t/text_summary"]
    assert (tensor_util.make_ndarray(ours.Tensors("t/text_summary")[0].tensor_proto).tolist()
            == tensor_util.make_ndarray(ref.Tensors("t/text_summary")[0].tensor_proto).tolist())
    Image = pytest.importorskip("PIL.Image")
    a, b = ours.Images("i")[0], ref.Images("i")[0]
    assert (a.width, a.height, a.step) == (b.width, b.height, b.step) == (7, 5, 5)
    np.testing.assert_array_equal(np.asarray(Image.open(io.BytesIO(a.encoded_image_string))),
                                  np.asarray(Image.open(io.BytesIO(b.encoded_image_string))))


def test_add_images_makes_a_grid(tmp_path):
    Image = pytest.importorskip("PIL.Image")
    batch = np.random.default_rng(2).integers(0, 256, size=(10, 3, 4, 5), dtype=np.uint8)
    with s.SummaryWriter(str(tmp_path)) as w:
        w.add_images("batch", batch, 1)
        w.add_image("hwc", batch[0].transpose(1, 2, 0), 2, dataformats="HWC")
    acc = classic(tmp_path)
    grid = np.asarray(Image.open(io.BytesIO(acc.Images("batch")[0].encoded_image_string)))
    assert grid.shape == (2 * 4, 8 * 5, 3)  # 8 per row, 2 rows
    np.testing.assert_array_equal(grid[4:8, 5:10], batch[9].transpose(1, 2, 0))
    np.testing.assert_array_equal(grid[4:8, 10:15], 0)  # empty cell
    hwc = np.asarray(Image.open(io.BytesIO(acc.Images("hwc")[0].encoded_image_string)))
    np.testing.assert_array_equal(hwc, batch[0].transpose(1, 2, 0))


def test_add_graph(tmp_path):
    g = graph_pb2.GraphDef()
    g.node.add(name="layer1/matmul", op="MatMul")
    with s.SummaryWriter(str(tmp_path)) as w:
        w.add_graph(g)
    acc = classic(tmp_path)
    assert acc.Tags()["graph"] is True and acc.Graph().node[0].name == "layer1/matmul"
    with s.SummaryWriter(str(tmp_path / "b")) as w:
        with pytest.raises(ValueError, match="input_to_model"):
            w.add_graph(g, input_to_model=np.zeros(3))


def test_default_log_dir_like_pytorch(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with s.SummaryWriter(comment="_lr0.1") as w:
        w.add_scalar("x", 1.0, 0)
    pattern = (r"runs/(Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)\d\d_\d\d-\d\d-\d\d_"
               + re.escape(socket.gethostname()) + r"_lr0\.1")
    assert re.fullmatch(pattern, w.log_dir), w.log_dir
    assert w.get_logdir() == w.log_dir
    assert event_files(tmp_path / w.log_dir)


def test_purge_step_drops_later_steps(tmp_path):
    with s.SummaryWriter(str(tmp_path)) as w:
        for step in range(10):
            w.add_scalar("loss", 1.0, step)
    # TensorBoard reads files in name order; make sure the second file sorts last.
    time.sleep(1.05 - time.time() % 1)
    with s.SummaryWriter(str(tmp_path), purge_step=5) as w:
        for step in range(5, 8):
            w.add_scalar("loss", 2.0, step)
    pts = classic(tmp_path).Scalars("loss")
    assert [(p.step, p.value) for p in pts] == [(i, 1.0) for i in range(5)] + [(i, 2.0) for i in range(5, 8)]


def test_filename_suffix_and_flush(tmp_path):
    w = s.SummaryWriter(str(tmp_path), filename_suffix=".jf", max_queue=1000, flush_secs=1000)
    w.add_scalar("x", 1.0, 0)
    (path,) = event_files(tmp_path)
    assert path.endswith(".jf")
    assert "x" not in classic(tmp_path).Tags()["scalars"]
    w.flush()
    assert classic(tmp_path).Tags()["scalars"] == ["x"]
    w.close()
    assert os.path.getsize(path) > 0


def test_write_to_disk_false_writes_nothing_but_still_validates(tmp_path):
    """tensorboardX's `write_to_disk=False`: every call is checked as usual, nothing is written."""
    from jitflow.summary import SummaryWriter
    logdir = tmp_path / "off"
    with SummaryWriter(str(logdir), write_to_disk=False) as w:
        w.add_scalar("loss", 0.5, 1)
        w.add_scalars("run", {"a": 1.0, "b": 2.0}, 1)
        w.add_histogram("h", np.arange(10.0), 1)
        w.add_hparams({"lr": 0.1}, {"hparam/acc": 0.9})
        w.add_embedding(np.eye(3), global_step=0)
        with pytest.raises(ValueError):
            w.add_scalar("loss", 10 ** 400, 2)
    assert not logdir.exists()
    with pytest.raises(RuntimeError):
        w.add_scalar("loss", 0.5, 3)
