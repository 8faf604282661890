"""The TF2-style API, read back with TensorBoard's own loaders."""

from __future__ import annotations

import io
import math
import os
import threading
import time

import numpy as np
import pytest
from summary_testutil import accumulate, event_files, load_all, load_events
from tensorboard.backend.event_processing import event_accumulator
from tensorboard.compat.proto import graph_pb2, summary_pb2
from tensorboard.util import tensor_util

import jitflow as jf
import jitflow.summary as s


class FakeTensor:
    """Stands in for a jitflow/torch/JAX array: only `__array__`."""

    def __init__(self, value):
        self._value = np.asarray(value)

    def __array__(self, dtype=None, copy=None):
        return self._value if dtype is None else self._value.astype(dtype)


class FakeTorchTensor:
    """Only `.numpy()` (and detach/cpu), as torch tensors that need grad."""

    def __init__(self, value):
        self._value = np.asarray(value)

    def detach(self):
        return self

    def cpu(self):
        return self

    def numpy(self):
        return self._value

    def __array__(self, *a, **k):
        raise RuntimeError("Can't call numpy() on Tensor that requires grad")


def test_first_record_is_the_file_version(tmp_path):
    w = s.create_file_writer(str(tmp_path))
    (path,) = event_files(tmp_path)
    first = load_events(path)  # readable before anything else is written
    w.close()
    assert len(first) == 1
    assert first[0].file_version == "brain.Event:2"
    assert first[0].wall_time == pytest.approx(time.time(), abs=60)
    assert path.endswith(".v2")


def test_file_name_fields_exactly(tmp_path):
    import socket

    w = s.create_file_writer(str(tmp_path), filename_suffix=".mine")
    w.close()
    name = os.path.basename(event_files(tmp_path)[0])
    head = "events.out.tfevents."
    assert name.startswith(head)
    rest = name[len(head):]
    secs = rest[:10]
    assert secs.isdigit() and rest[10] == "."
    host_pid_n = rest[11:-len(".mine")]
    assert host_pid_n.startswith(socket.gethostname() + ".")
    pid, n = host_pid_n[len(socket.gethostname()) + 1:].split(".")
    assert int(pid) == os.getpid() and n.isdigit()
    assert name.endswith(".mine")


def test_scalars_read_back(tmp_path):
    w = s.create_file_writer(str(tmp_path))
    t0 = time.time()
    with w.as_default():
        for step in range(20):
            assert bool(s.scalar("loss", 1.0 / (step + 1), step=step)) is True
        s.scalar("nan", math.nan, step=0)
        s.scalar("inf", -math.inf, step=0)
        s.scalar("described", 2.0, step=0, description="what it is")
    t1 = time.time()
    w.close()
    acc = accumulate(tmp_path)
    events = acc.Tensors("loss")
    assert [e.step for e in events] == list(range(20))
    values = [float(tensor_util.make_ndarray(e.tensor_proto)) for e in events]
    assert values == pytest.approx([np.float32(1.0 / (i + 1)) for i in range(20)])
    assert all(t0 <= e.wall_time <= t1 for e in events)
    assert tensor_util.make_ndarray(events[0].tensor_proto).shape == ()
    assert tensor_util.make_ndarray(events[0].tensor_proto).dtype == np.float32
    md = acc.SummaryMetadata("loss")
    assert md.plugin_data.plugin_name == "scalars"
    assert md.data_class == summary_pb2.DATA_CLASS_SCALAR
    assert math.isnan(float(tensor_util.make_ndarray(acc.Tensors("nan")[0].tensor_proto)))
    assert float(tensor_util.make_ndarray(acc.Tensors("inf")[0].tensor_proto)) == -math.inf
    assert acc.SummaryMetadata("described").summary_description == "what it is"
    # The classic accumulator sees them as scalars too.
    classic = event_accumulator.EventAccumulator(str(tmp_path))
    classic.Reload()
    assert "loss" in classic.Tags()["tensors"]


@pytest.mark.parametrize("value,expected", [
    (np.float32(1.25), 1.25), (np.int64(3), 3.0), (np.array(2.5), 2.5), (True, 1.0),
    (FakeTensor(4.5), 4.5), (FakeTorchTensor(np.float64(5.5)), 5.5), (7, 7.0),
])
def test_scalar_accepts_array_likes(tmp_path, value, expected):
    with s.create_file_writer(str(tmp_path)).as_default(step=3) as w:
        assert s.scalar("v", value)
    w.close()
    (ev,) = accumulate(tmp_path).Tensors("v")
    assert float(tensor_util.make_ndarray(ev.tensor_proto)) == expected and ev.step == 3


def test_step_can_be_numpy_int_or_array_like(tmp_path):
    with s.create_file_writer(str(tmp_path)).as_default() as w:
        s.scalar("a", 1.0, step=np.int32(5))
        s.scalar("a", 1.0, step=FakeTensor(np.int64(6)))
        s.scalar("a", 1.0, step=2**40)
    w.close()
    assert [e.step for e in accumulate(tmp_path).Tensors("a")] == [5, 6, 2**40]


def test_histogram_read_back(tmp_path):
    data = np.random.default_rng(0).normal(size=(50, 20))
    with s.create_file_writer(str(tmp_path)).as_default() as w:
        assert s.histogram("weights", data, step=4)
        assert s.histogram("few", FakeTensor([1.0, 2.0, 3.0]), step=5, buckets=3)
    w.close()
    acc = accumulate(tmp_path)
    (ev,) = acc.Tensors("weights")
    table = tensor_util.make_ndarray(ev.tensor_proto)
    assert ev.step == 4 and table.shape == (30, 3) and table.dtype == np.float64
    assert table[:, 2].sum() == data.size
    assert table[0, 0] == data.min() and table[-1, 1] == data.max()
    assert acc.SummaryMetadata("weights").plugin_data.plugin_name == "histograms"
    few = tensor_util.make_ndarray(acc.Tensors("few")[0].tensor_proto)
    assert few[:, 2].tolist() == [1, 1, 1]
    # The classic accumulator converts it for the histograms dashboard.
    classic = event_accumulator.EventAccumulator(str(tmp_path))
    classic.Reload()
    assert classic.Tags()["tensors"] and "weights" in classic.Tags()["tensors"]


def test_text_read_back(tmp_path):
    with s.create_file_writer(str(tmp_path)).as_default(step=2) as w:
        assert s.text("notes", "héllo **world**")
        assert s.text("table", np.array([["a", "b"], ["c", "d"]]))
        assert s.text("raw", b"bytes")
    w.close()
    acc = accumulate(tmp_path)
    (ev,) = acc.Tensors("notes")
    assert ev.step == 2
    assert tensor_util.make_ndarray(ev.tensor_proto).item() == "héllo **world**".encode()
    table = tensor_util.make_ndarray(acc.Tensors("table")[0].tensor_proto)
    assert table.shape == (2, 2) and table[1, 0] == b"c"
    assert acc.SummaryMetadata("notes").plugin_data.plugin_name == "text"


def test_image_read_back(tmp_path):
    Image = pytest.importorskip("PIL.Image")
    rng = np.random.default_rng(0)
    u8 = rng.integers(0, 256, size=(4, 6, 5, 3), dtype=np.uint8)
    floats = rng.random((2, 3, 4, 1))
    with s.create_file_writer(str(tmp_path)).as_default(step=7) as w:
        assert s.image("u8", u8)  # max_outputs=3 of 4
        assert s.image("float", floats, max_outputs=5)
    w.close()
    acc = accumulate(tmp_path)
    (ev,) = acc.Tensors("u8")
    strings = tensor_util.make_ndarray(ev.tensor_proto)
    assert ev.step == 7 and len(strings) == 2 + 3
    assert (strings[0], strings[1]) == (b"5", b"6")  # width, height
    for i in range(3):
        np.testing.assert_array_equal(np.asarray(Image.open(io.BytesIO(strings[2 + i]))), u8[i])
    f = tensor_util.make_ndarray(acc.Tensors("float")[0].tensor_proto)
    assert len(f) == 2 + 2
    decoded = np.asarray(Image.open(io.BytesIO(f[2])))
    np.testing.assert_array_equal(decoded, (floats[0, :, :, 0] * 255.5).astype(np.uint8))
    md = acc.SummaryMetadata("u8")
    assert md.plugin_data.plugin_name == "images"
    assert md.data_class == summary_pb2.DATA_CLASS_BLOB_SEQUENCE


def test_graph_read_back(tmp_path):
    g = graph_pb2.GraphDef()
    g.node.add(name="dense/x", op="Placeholder")
    g.node.add(name="dense/y", op="Tanh", input=["dense/x"])
    with s.create_file_writer(str(tmp_path)).as_default() as w:
        assert s.graph(g)
        assert s.graph(g.SerializeToString())
    w.close()
    graph_events = [e for e in load_all(tmp_path) if e.HasField("graph_def")]
    assert len(graph_events) == 2
    assert graph_pb2.GraphDef.FromString(graph_events[0].graph_def) == g
    classic = event_accumulator.EventAccumulator(str(tmp_path))
    classic.Reload()
    assert classic.Tags()["graph"] is True
    assert [n.name for n in classic.Graph().node] == ["dense/x", "dense/y"]


def test_raw_write_with_metadata(tmp_path):
    md = summary_pb2.SummaryMetadata()
    md.plugin_data.plugin_name = "custom"
    with s.create_file_writer(str(tmp_path)).as_default() as w:
        assert s.write("raw", np.arange(6).reshape(2, 3), step=1, metadata=md)
        assert s.write("lazy", lambda: np.array([1.5, 2.5]), step=2, metadata=md.SerializeToString())
    w.close()
    acc = accumulate(tmp_path)
    np.testing.assert_array_equal(tensor_util.make_ndarray(acc.Tensors("raw")[0].tensor_proto),
                                  np.arange(6).reshape(2, 3))
    assert acc.SummaryMetadata("lazy").plugin_data.plugin_name == "custom"
    assert acc.Tensors("lazy")[0].step == 2


def test_no_default_writer_returns_false(tmp_path):
    assert bool(s.scalar("x", 1.0, step=0)) is False
    assert bool(s.histogram("x", [1.0], step=0)) is False
    assert bool(s.text("x", "a", step=0)) is False
    assert bool(s.image("x", np.zeros((1, 2, 2, 3)), step=0)) is False
    assert s.graph(graph_pb2.GraphDef()) is False
    assert bool(s.write("x", 1.0, step=0)) is False
    assert s.should_record_summaries() is False
    # No step is needed to find out there is nothing to write.
    assert bool(s.scalar("x", 1.0)) is False


def test_record_if(tmp_path):
    w = s.create_file_writer(str(tmp_path))
    with w.as_default():
        with s.record_if(False):
            assert s.should_record_summaries() is False
            assert bool(s.scalar("x", 1.0, step=0)) is False
            assert bool(s.histogram("h", [1.0], step=0)) is False
        state = {"step": 0}
        with s.record_if(lambda: state["step"] % 2 == 0):
            for step in range(6):
                state["step"] = step
                s.scalar("even", float(step), step=step)
        with s.record_if(np.bool_(True)):
            assert s.scalar("y", 1.0, step=0)
        assert s.should_record_summaries() is True
    w.close()
    acc = accumulate(tmp_path)
    assert [e.step for e in acc.Tensors("even")] == [0, 2, 4]
    assert "x" not in acc.Tags()["tensors"] and "h" not in acc.Tags()["tensors"]


def test_default_step_and_as_default_step(tmp_path):
    w = s.create_file_writer(str(tmp_path))
    assert s.experimental.get_step() is None
    s.experimental.set_step(10)
    with w.as_default():
        s.scalar("a", 1.0)  # global step 10
        s.experimental.set_step(11)  # thread-local inside the block
        s.scalar("a", 1.0)
        assert s.experimental.get_step() == 11
    assert s.experimental.get_step() == 10  # restored on exit, as in TF
    with w.as_default(step=20):
        s.scalar("a", 1.0)
        assert s.experimental.get_step() == 20
    assert s.experimental.get_step() == 10
    w.close()
    assert [e.step for e in accumulate(tmp_path).Tensors("a")] == [10, 11, 20]


class Counter:
    """A mutable step read at every call (like a jitflow/TF variable)."""

    def __init__(self):
        self.value = 0

    def __array__(self, dtype=None, copy=None):
        return np.asarray(self.value, dtype=np.int64)


def test_variable_like_step_is_read_each_call(tmp_path):
    step = Counter()
    with s.create_file_writer(str(tmp_path)).as_default(step=step) as w:
        for i in range(3):
            step.value = i * 10
            s.scalar("a", 1.0)
    w.close()
    assert [e.step for e in accumulate(tmp_path).Tensors("a")] == [0, 10, 20]


def test_set_as_default_is_process_wide_and_thread_blocks_win(tmp_path):
    main = s.create_file_writer(str(tmp_path / "main"))
    own = s.create_file_writer(str(tmp_path / "own"))
    main.set_as_default(step=1)
    results = {}

    def worker():
        results["global"] = s.scalar("from_worker", 1.0)  # finds main + step 1
        with own.as_default(step=5):
            results["own"] = s.scalar("in_block", 2.0)

    t = threading.Thread(target=worker)
    t.start()
    t.join()
    assert results == {"global": True, "own": True}
    main.close()
    own.close()
    assert [e.step for e in accumulate(tmp_path / "main").Tensors("from_worker")] == [1]
    assert [e.step for e in accumulate(tmp_path / "own").Tensors("in_block")] == [5]
    assert "in_block" not in accumulate(tmp_path / "main").Tags()["tensors"]


def test_as_default_is_per_thread(tmp_path):
    w = s.create_file_writer(str(tmp_path))
    seen = {}
    with w.as_default(step=0):
        t = threading.Thread(target=lambda: seen.setdefault("other", s.scalar("x", 1.0, step=0)))
        t.start()
        t.join()
        assert s.scalar("x", 1.0)
    w.close()
    assert bool(seen["other"]) is False
    assert len(accumulate(tmp_path).Tensors("x")) == 1


def test_as_default_flushes_on_exit(tmp_path):
    w = s.create_file_writer(str(tmp_path), max_queue=1000, flush_millis=10**9)
    with w.as_default():
        s.scalar("x", 1.0, step=1)
    # Not closed, yet already readable.
    assert len(accumulate(tmp_path).Tensors("x")) == 1
    w.close()


def test_flush_function_and_writer_flush(tmp_path):
    w = s.create_file_writer(str(tmp_path), max_queue=1000, flush_millis=10**9)
    w.set_as_default(step=0)
    s.scalar("x", 1.0)
    assert "x" not in accumulate(tmp_path).Tags()["tensors"]  # still queued
    s.flush()
    assert len(accumulate(tmp_path).Tensors("x")) == 1
    s.scalar("x", 2.0, step=1)
    s.flush(writer=w)
    assert len(accumulate(tmp_path).Tensors("x")) == 2
    w.close()
    s.flush(writer=w)  # a no-op after close, as in TF


def test_flush_millis_writes_pending_in_background(tmp_path):
    w = s.create_file_writer(str(tmp_path), max_queue=1000, flush_millis=50)
    with s.record_if(True):
        w.set_as_default(step=0)
        s.scalar("x", 1.0)
    deadline = time.time() + 5
    while time.time() < deadline and "x" not in accumulate(tmp_path).Tags()["tensors"]:
        time.sleep(0.05)
    assert "x" in accumulate(tmp_path).Tags()["tensors"]
    w.close()


def test_max_queue_bounds_what_waits(tmp_path):
    # As in TF: at most max_queue summaries wait; the call that adds one more writes them all.
    w = s.create_file_writer(str(tmp_path), max_queue=5, flush_millis=10**9)
    w.set_as_default(step=0)
    for i in range(5):
        s.scalar("x", float(i), step=i)
    assert "x" not in accumulate(tmp_path).Tags()["tensors"]  # 5 wait in memory
    s.scalar("x", 5.0, step=5)
    assert len(accumulate(tmp_path).Tensors("x")) == 6  # written without flush()
    w.close()


def test_noop_writer():
    noop = s.create_noop_writer()
    with noop.as_default(step=3):
        assert bool(s.scalar("x", 1.0)) is False
    noop.set_as_default()
    assert bool(s.scalar("x", 1.0, step=0)) is False
    noop.flush()
    noop.close()
    assert isinstance(s.create_file_writer(None), s.NoopSummaryWriter)


def test_init_reopens_a_closed_writer(tmp_path):
    w = s.create_file_writer(str(tmp_path))
    w.close()
    w.init()
    with w.as_default():
        assert s.scalar("x", 1.0, step=0)
    w.close()
    assert len(event_files(tmp_path)) == 2
    assert len(accumulate(tmp_path).Tensors("x")) == 1


def test_tags_are_cleaned_with_a_warning(tmp_path):
    with s.create_file_writer(str(tmp_path)).as_default(step=0) as w:
        with pytest.warns(UserWarning, match="illegal"):
            s.scalar("/loss (train)", 1.0)
        with pytest.warns(UserWarning, match="illegal"):
            s.histogram("a b", [1.0, 2.0])
        s.scalar("ok/name-1.x_y", 1.0)
    w.close()
    tags = accumulate(tmp_path).Tags()["tensors"]
    assert set(tags) == {"loss__train_", "a_b", "ok/name-1.x_y"}


def test_fsspec_memory_logdir(tmp_path):
    fsspec = pytest.importorskip("fsspec")
    w = s.create_file_writer("memory://jf-summary-test/run1")
    with w.as_default():
        s.scalar("x", 3.0, step=1)
    w.close()
    fs = fsspec.filesystem("memory")
    (path,) = [p for p in fs.ls("/jf-summary-test/run1", detail=False) if "tfevents" in p]
    local = tmp_path / os.path.basename(path)
    local.write_bytes(fs.cat(path))
    (ev,) = accumulate(tmp_path).Tensors("x")
    assert ev.step == 1 and float(tensor_util.make_ndarray(ev.tensor_proto)) == 3.0
    fs.rm("/jf-summary-test", recursive=True)


def test_pathlib_logdir(tmp_path):
    w = s.create_file_writer(tmp_path / "p")
    with w.as_default():
        s.scalar("x", 1.0, step=0)
    w.close()
    assert len(accumulate(tmp_path / "p").Tensors("x")) == 1


def test_summary_ops_return_a_bool_tensor_as_tf_does(tmp_path):
    """tf.summary.scalar/.../write return a scalar bool tensor, eagerly too (TF's return value)."""
    results = [s.scalar("x", 1.0, step=0), s.write("x", 1.0, step=0)]
    with s.create_file_writer(str(tmp_path)).as_default():
        results += [s.scalar("x", 1.0, step=0), s.histogram("h", [1.0, 2.0], step=0), s.text("t", "a", step=0),
                    s.write("w", 1.0, step=0)]
    for r in results:
        assert isinstance(r, jf.Tensor) and r.dtype == jf.bool and r.shape == ()
    assert [bool(r) for r in results] == [False, False, True, True, True, True]
