"""Every bad input raises a clear exception naming the argument, what was
expected and what was given, and leaves what was already written intact."""

from __future__ import annotations

import numpy as np
import pytest
from summary_testutil import accumulate
from tensorboard.backend.event_processing import event_accumulator
from tensorboard.compat.proto import event_pb2

import jitflow.summary as s


@pytest.fixture
def writer(tmp_path):
    w = s.create_file_writer(str(tmp_path))
    w.set_as_default()
    s.scalar("good", 1.0, step=0)
    yield w
    w.close()
    # Whatever failed, the good record before it is intact.
    assert len(accumulate(tmp_path).Tensors("good")) >= 1


@pytest.mark.parametrize("data,exc,words", [
    (np.ones(3), ValueError, ["data", "scalar", "shape (3,)"]),
    (np.ones((1,)), ValueError, ["data", "rank 0", "shape (1,)"]),
    ("1.5", TypeError, ["data", "real number", "str"]),
    (np.array(["a"]), TypeError, ["data", "real number", "<U1"]),
    (1 + 2j, TypeError, ["data", "real number", "complex"]),
    (None, TypeError, ["data", "real number", "NoneType"]),
])
def test_non_scalar_to_scalar(writer, data, exc, words):
    with pytest.raises(exc) as info:
        s.scalar("x", data, step=1)
    for w in words:
        assert w in str(info.value)


@pytest.mark.parametrize("step,exc,words", [
    (1.5, TypeError, ["step", "integer", "float 1.5"]),
    (2.0, TypeError, ["step", "integer", "float 2.0"]),
    (True, TypeError, ["step", "integer", "bool"]),
    ("3", TypeError, ["step", "integer", "str"]),
    (np.float32(1), TypeError, ["step", "integer", "float32"]),
    (np.array([1, 2]), TypeError, ["step", "integer scalar", "shape (2,)"]),
    (2**63, ValueError, ["step", "int64", str(2**63)]),
])
def test_non_integer_step(writer, step, exc, words):
    for call in (lambda: s.scalar("x", 1.0, step=step), lambda: s.histogram("h", [1.0], step=step),
                 lambda: s.text("t", "a", step=step)):
        with pytest.raises(exc) as info:
            call()
        for w in words:
            assert w in str(info.value)


def test_non_integer_default_step_rejected_early(writer):
    with pytest.raises(TypeError, match="step: expected an integer, got float 0.5"):
        s.experimental.set_step(0.5)
    with pytest.raises(TypeError, match="step"):
        writer.as_default(step=1.5)


def test_no_step_and_no_default_step(writer):
    for call in (lambda: s.scalar("x", 1.0), lambda: s.histogram("h", [1.0]),
                 lambda: s.text("t", "a"), lambda: s.image("i", np.zeros((1, 2, 2, 3))),
                 lambda: s.write("w", 1.0)):
        with pytest.raises(ValueError, match="no step given and no default step set"):
            call()


@pytest.mark.parametrize("data,exc,words", [
    (np.zeros((2, 2, 3)), ValueError, ["data", "rank-4", "shape (2, 2, 3)"]),
    (np.zeros((1, 2, 2, 2, 3)), ValueError, ["rank-4"]),
    (np.zeros((1, 2, 2, 5)), ValueError, ["channels", "shape (1, 2, 2, 5)"]),
    (np.zeros((1, 2, 2, 3), np.int32), TypeError, ["data", "uint8 or floating", "int32"]),
    (np.zeros((1, 2, 2, 3), bool), TypeError, ["uint8", "bool"]),
])
def test_image_of_wrong_rank_or_dtype(writer, data, exc, words):
    with pytest.raises(exc) as info:
        s.image("img", data, step=1)
    for w in words:
        assert w in str(info.value)


def test_torch_image_of_wrong_rank_dtype_or_format(tmp_path):
    with s.SummaryWriter(str(tmp_path)) as w:
        with pytest.raises(ValueError, match="dataformats 'CHW' needs a rank-3 array, got array of shape"):
            w.add_image("i", np.zeros((2, 2)))
        with pytest.raises(TypeError, match="img_tensor: expected uint8 or floating point.*int64"):
            w.add_image("i", np.zeros((3, 2, 2), np.int64))
        with pytest.raises(ValueError, match="dataformats: expected one of"):
            w.add_image("i", np.zeros((3, 2, 2)), dataformats="CHX")
        with pytest.raises(ValueError, match="expected 1, 3 or 4 channels, got 2"):
            w.add_image("i", np.zeros((2, 4, 4)))
        with pytest.raises(ValueError, match="dataformats: expected 'NCHW' or 'NHWC'"):
            w.add_images("i", np.zeros((3, 2, 2)), dataformats="CHW")


def test_logdir_that_cannot_be_created(tmp_path):
    blocker = tmp_path / "a_file"
    blocker.write_text("not a directory")
    with pytest.raises(OSError) as info:
        s.create_file_writer(str(blocker / "logs"))
    assert "cannot create summary log directory" in str(info.value)
    assert str(blocker / "logs") in str(info.value)
    with pytest.raises(OSError, match="cannot create summary log directory"):
        s.SummaryWriter(str(blocker / "torch"))


def test_bad_logdir_types_and_options(tmp_path):
    with pytest.raises(TypeError, match="logdir: expected a path.*int"):
        s.create_file_writer(42)
    with pytest.raises(ValueError, match="max_queue: expected an int >= 0, got int -1"):
        s.create_file_writer(str(tmp_path), max_queue=-1)
    with pytest.raises(ValueError, match="flush_millis: expected a number > 0"):
        s.create_file_writer(str(tmp_path), flush_millis=0)
    with pytest.raises(ValueError, match="flush_secs: expected a number > 0"):
        s.SummaryWriter(str(tmp_path), flush_secs=-1)


def test_writer_used_after_close(tmp_path):
    w = s.create_file_writer(str(tmp_path))
    w.set_as_default(step=0)
    assert s.scalar("x", 1.0)
    w.close()
    w.close()  # closing twice is fine
    w.flush()  # as is flushing a closed writer (TF does the same)
    for call in (lambda: s.scalar("x", 2.0), lambda: s.histogram("h", [1.0]),
                 lambda: s.text("t", "a"), lambda: s.image("i", np.zeros((1, 2, 2, 3)))):
        with pytest.raises(RuntimeError, match="is closed"):
            call()
    with pytest.raises(RuntimeError, match="already closed"):
        w.as_default()
    with pytest.raises(RuntimeError, match="already closed"):
        w.set_as_default()
    assert len(accumulate(tmp_path).Tensors("x")) == 1

    tw = s.SummaryWriter(str(tmp_path / "torch"))
    tw.add_scalar("x", 1.0, 0)
    tw.close()
    with pytest.raises(RuntimeError, match="is closed"):
        tw.add_scalar("x", 1.0, 1)
    with pytest.raises(RuntimeError, match="is closed"):
        tw.add_scalars("m", {"a": 1.0}, 1)


def test_bad_tags_and_text(writer):
    with pytest.raises(TypeError, match="name: expected a str tag, got int 5"):
        s.scalar(5, 1.0, step=0)
    with pytest.raises(TypeError, match="name: expected a str tag, got list"):
        s.scalar(["a"], 1.0, step=0)
    with pytest.raises(ValueError, match="non-empty tag"):
        s.scalar("", 1.0, step=0)
    with pytest.raises(ValueError, match="non-empty tag"):
        s.scalar("///", 1.0, step=0)
    with pytest.raises(TypeError, match="data: expected str or bytes.*int"):
        s.text("t", 5, step=0)
    with pytest.raises(TypeError, match="data: expected real numbers"):
        s.histogram("h", ["a", "b"], step=0)
    with pytest.raises(TypeError, match="buckets: expected an int"):
        s.histogram("h", [1.0], step=0, buckets=2.5)
    with pytest.raises(TypeError, match="description: expected a str or None"):
        s.scalar("d", 1.0, step=0, description=5)
    with pytest.raises(ValueError, match="max_outputs"):
        s.image("i", np.zeros((1, 2, 2, 3)), step=0, max_outputs=-1)


def test_bad_graph_input_names_the_type(writer):
    with pytest.raises(TypeError, match="builtins.dict"):
        s.graph({"not": "a graph"})
    with pytest.raises(TypeError, match="expected a GraphDef proto, got a tensorboard.Event message"):
        s.graph(event_pb2.Event())
    with pytest.raises(ValueError, match="do not parse as a serialized GraphDef"):
        s.graph(b"\xff\xff\xff garbage")


def test_torch_style_bad_inputs(tmp_path):
    with s.SummaryWriter(str(tmp_path)) as w:
        with pytest.raises(ValueError, match="scalar_value: expected a scalar"):
            w.add_scalar("x", np.ones(2), 0)
        with pytest.raises(TypeError,
                           match=r"global_step: expected an integer \(or a whole-number float\), got float 1.5"):
            w.add_scalar("x", 1.0, 1.5)
        with pytest.raises(TypeError, match="walltime: expected seconds"):
            w.add_scalar("x", 1.0, 1, walltime="now")
        with pytest.raises(TypeError, match="tag_scalar_dict: expected a dict"):
            w.add_scalars("m", [1, 2], 0)
        with pytest.raises(ValueError, match="values: expected at least one element"):
            w.add_histogram("h", np.array([]), 0)
        with pytest.raises(TypeError, match="text_string: expected a str, got int"):
            w.add_text("t", 3, 0)
        with pytest.raises(TypeError, match="cannot write a graph from an object of type builtins.object"):
            w.add_graph(object())
        w.add_scalar("ok", 1.0, 0)
    acc = event_accumulator.EventAccumulator(str(tmp_path))
    acc.Reload()
    assert acc.Tags()["scalars"] == ["ok"]


def test_raw_write_bad_metadata_and_tensor(writer):
    with pytest.raises(ValueError, match="metadata: bytes do not parse as a SummaryMetadata"):
        s.write("w", 1.0, step=0, metadata=b"\xff\xff\xff")
    with pytest.raises(TypeError, match="metadata: expected a SummaryMetadata proto, bytes or None, got int"):
        s.write("w", 1.0, step=0, metadata=5)
    with pytest.raises(TypeError, match="tensor: cannot store"):
        s.write("w", np.array([object()]), step=0)
