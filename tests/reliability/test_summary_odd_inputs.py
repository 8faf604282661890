"""Issue 22, item 15: odd inputs to the summary writers are written correctly or
refused with a clear error; nothing is silently replaced (inf for 10**400, an
empty histogram for buckets=-3) and nothing is written outside log_dir."""

from __future__ import annotations

import os

import numpy as np
import pytest
from tensorboard.backend.event_processing import plugin_event_accumulator as pea
from tensorboard.util import tensor_util

import jitflow.summary as s


def _acc(logdir):
    acc = pea.EventAccumulator(str(logdir), size_guidance={"tensors": 0})
    acc.Reload()
    return acc


def test_ints_beyond_float64_are_refused_and_nothing_is_written(tmp_path):
    w = s.create_file_writer(str(tmp_path / "tf"))
    with w.as_default(step=0):
        with pytest.raises(ValueError, match=r"data: expected a number within float64 range.*1329 bits"):
            s.scalar("big", 10 ** 400)
        with pytest.raises(ValueError, match="data: expected a number within float64 range"):
            s.scalar("big", -(10 ** 400), step=1)
        assert s.scalar("ok", 2 ** 200)  # fits float64; float32 rounds it to inf as TF's cast does
    w.close()
    with s.SummaryWriter(str(tmp_path / "torch")) as tw:
        with pytest.raises(ValueError, match="scalar_value: expected a number within float64 range"):
            tw.add_scalar("big", 10 ** 400, 0)
        with pytest.raises(ValueError, match="scalar_value: expected a number within float64 range"):
            tw.add_scalar("big", 10 ** 400, 0, walltime=5.0)
        with pytest.raises(ValueError, match="scalar_value: expected a number within float64 range"):
            tw.add_scalar("big", 10 ** 400, 0, new_style=True)
        with pytest.raises(ValueError, match=r"tag_scalar_dict\['a'\]: expected a number within float64"):
            tw.add_scalars("m", {"a": 10 ** 400}, 0)
    assert "big" not in _acc(tmp_path / "tf").Tags()["tensors"]
    assert "big" not in _acc(tmp_path / "torch").Tags()["tensors"]
    assert float(tensor_util.make_ndarray(_acc(tmp_path / "tf").Tensors("ok")[0].tensor_proto)) == np.inf


def test_histograms_spanning_the_whole_float64_range(tmp_path):
    data = np.array([-1e308, -4e307, 1e307, 2e307, 1e308, 1e308])
    w = s.create_file_writer(str(tmp_path))
    with w.as_default(step=0):
        assert s.histogram("wide", data, buckets=4)
        assert s.histogram("max", np.array([-np.finfo(np.float64).max, np.finfo(np.float64).max]), buckets=3)
    w.close()
    acc = _acc(tmp_path)
    buckets = tensor_util.make_ndarray(acc.Tensors("wide")[0].tensor_proto)
    np.testing.assert_array_equal(buckets[:, 2], [1, 1, 2, 2])
    assert buckets[0, 0] == -1e308 and buckets[-1, 1] == 1e308 and np.isfinite(buckets).all()
    edges = tensor_util.make_ndarray(acc.Tensors("max")[0].tensor_proto)
    assert np.isfinite(edges).all() and edges[:, 2].sum() == 2
    with s.SummaryWriter(str(tmp_path / "torch")) as tw:
        tw.add_histogram("wide", np.append(data, 0.5), 0)  # PyTorch's default bins end at 1e20
        with pytest.raises(ValueError, match="values: no value falls inside the histogram bins"):
            tw.add_histogram("outside", data, 0)
        with pytest.raises(ValueError, match="bins: numpy.histogram cannot bin these values"):
            tw.add_histogram("auto", data, 0, bins="auto")


def test_negative_bucket_counts_are_refused_even_without_a_writer(tmp_path):
    with pytest.raises(ValueError, match="buckets: expected an int >= 0, got -3"):
        s.histogram("h", [1.0, 2.0], step=0, buckets=-3)
    w = s.create_file_writer(str(tmp_path))
    with w.as_default(step=0):
        with pytest.raises(ValueError, match="buckets: expected an int >= 0, got -3"):
            s.histogram("h", [1.0, 2.0], buckets=-3)
        assert s.histogram("zero", [1.0, 2.0], buckets=0)  # TF writes an empty [0, 3] tensor
    w.close()
    acc = _acc(tmp_path)
    assert "h" not in acc.Tags()["tensors"]
    assert tensor_util.make_ndarray(acc.Tensors("zero")[0].tensor_proto).shape == (0, 3)


@pytest.mark.parametrize("key", ["../../escaped", "x/../../../escaped", "..\\..\\escaped", "/../escaped", "/.."])
def test_add_scalars_keys_cannot_leave_log_dir(tmp_path, key):
    logdir = tmp_path / "logs"
    with s.SummaryWriter(str(logdir)) as w:
        with pytest.raises(ValueError, match="stays inside log_dir"):
            w.add_scalars("m", {"fine": 1.0, key: 2.0}, 0)
        w.add_scalars("m", {"nested/ok": 3.0}, 0)  # PyTorch nests runs on '/': still inside
    outside = [p for p in tmp_path.rglob("*") if not str(p).startswith(str(logdir))]
    assert outside == [], outside
    assert sorted(os.listdir(logdir / "m_nested")) == ["ok"]
    assert not (logdir / "m_fine").exists()  # a refused call writes none of its keys
