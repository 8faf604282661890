"""`as_default()`, `set_step` and `record_if` entered *inside* a jf.function: the
values are written every time the function runs, as TF writes them (before, the
block was gone by run time and every value was lost while `write` said False)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from tensorboard.backend.event_processing import plugin_event_accumulator as pea
from tensorboard.util import tensor_util

import jitflow as jf
import jitflow.summary as s


def _points(logdir, tag):
    acc = pea.EventAccumulator(str(logdir), size_guidance={"tensors": 0})
    acc.Reload()
    if tag not in acc.Tags()["tensors"]:
        return []
    return [(e.step, tensor_util.make_ndarray(e.tensor_proto).tolist()) for e in acc.Tensors(tag)]


def test_as_default_inside_the_function_writes_every_call(tmp_path):
    writer = s.create_file_writer(str(tmp_path))

    @jf.function
    def train_step(x, step):
        with writer.as_default(step=step):
            ok = s.scalar("loss", x * 2.0)
            s.histogram("x", jf.stack([x, x + 1.0]))
            s.write("raw", x)
        return ok

    results = [train_step(jf.constant(float(i)), jf.constant(i, jf.int64)) for i in range(4)]
    writer.close()
    assert train_step.tracing_count == 1
    assert all(isinstance(r, jf.Tensor) and r.dtype == jf.bool and bool(r) for r in results)
    assert _points(tmp_path, "loss") == [(i, 2.0 * i) for i in range(4)]
    assert [p[0] for p in _points(tmp_path, "x")] == [0, 1, 2, 3]
    assert _points(tmp_path, "raw") == [(i, float(i)) for i in range(4)]


def test_inner_as_default_wins_over_the_callers_and_nests(tmp_path):
    inner = s.create_file_writer(str(tmp_path / "inner"))
    outer = s.create_file_writer(str(tmp_path / "outer"))

    @jf.function
    def f(x):
        s.scalar("outside_block", x, step=1)  # resolved at run time: the caller's writer
        with inner.as_default(step=5):
            s.scalar("inside_block", x)
            with outer.as_default(step=6):
                s.scalar("nested", x)

    with outer.as_default():
        f(jf.constant(1.0))
    f(jf.constant(2.0))  # no default writer at call time: only the captured ones write
    inner.close()
    outer.close()
    assert _points(tmp_path / "inner", "inside_block") == [(5, 1.0), (5, 2.0)]
    assert _points(tmp_path / "outer", "nested") == [(6, 1.0), (6, 2.0)]
    assert _points(tmp_path / "outer", "outside_block") == [(1, 1.0)]
    assert _points(tmp_path / "inner", "outside_block") == []


def test_set_step_and_record_if_with_tensors_inside_the_function(tmp_path):
    writer = s.create_file_writer(str(tmp_path))

    @jf.function
    def f(x, step):
        with writer.as_default():
            s.experimental.set_step(step)
            s.scalar("every", x)
            with s.record_if(jf.equal(step % 2, 0)):
                s.scalar("even", x)
            with s.record_if(False):
                s.scalar("never", x)

    for i in range(4):
        f(jf.constant(float(i)), jf.constant(i, jf.int64))
    writer.close()
    assert _points(tmp_path, "every") == [(i, float(i)) for i in range(4)]
    assert _points(tmp_path, "even") == [(0, 0.0), (2, 2.0)]
    assert _points(tmp_path, "never") == []


def test_write_returns_a_false_tensor_when_nothing_is_written():
    @jf.function
    def f(x):
        return s.write("t", x, step=0)

    r = f(jf.constant(1.0))
    assert isinstance(r, jf.Tensor) and r.dtype == jf.bool and not bool(r)


def test_trace_on_inside_a_function_warns_and_does_nothing(tmp_path):
    @jf.function
    def f(x):
        s.trace_on()
        return x + 1.0

    with pytest.warns(UserWarning, match="cannot enable a trace inside a jf.function"):
        f(jf.constant(1.0))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        s.trace_on()  # eagerly it works: no "already recording" warning either
    s.trace_off()


def test_audio_and_raw_pb_in_a_function(tmp_path):
    from tensorboard.compat.proto import summary_pb2
    writer = s.create_file_writer(str(tmp_path))
    pb = summary_pb2.Summary(value=[summary_pb2.Summary.Value(tag="pb", simple_value=3.0)]).SerializeToString()

    @jf.function
    def f(clip):
        with writer.as_default(step=2):
            s.audio("clip", clip, sample_rate=8000)
            s.experimental.write_raw_pb(jf.constant(pb))

    f(jf.constant(np.zeros((1, 100, 1), np.float32)))
    writer.close()
    acc = pea.EventAccumulator(str(tmp_path), size_guidance={"tensors": 0})
    acc.Reload()
    assert acc.SummaryMetadata("clip").plugin_data.plugin_name == "audio"
    assert acc.Tensors("clip")[0].step == 2 and acc.Tensors("pb")[0].step == 2


def test_a_symbolic_step_set_inside_a_function_does_not_leak_out(tmp_path):
    writer = s.create_file_writer(str(tmp_path))

    @jf.function
    def f(x, step):
        s.experimental.set_step(step)  # thread-local: the writer block below is open
        s.scalar("v", x)  # the trace record is written when tracing ends, with this step symbolic
        return x

    with writer.as_default():
        f(jf.constant(1.0), jf.constant(3, jf.int64))
        f(jf.constant(2.0), jf.constant(4, jf.int64))
        with pytest.raises(ValueError, match="no step given"):
            s.scalar("eager", 1.0)  # the symbolic step means nothing out here
        assert s.scalar("eager", 1.0, step=9)
    writer.close()
    acc = pea.EventAccumulator(str(tmp_path), size_guidance={"tensors": 0})
    acc.Reload()
    assert [(e.step, float(tensor_util.make_ndarray(e.tensor_proto))) for e in acc.Tensors("v")] == [(3, 1.0), (4, 2.0)]
    assert any(t.startswith("jitflow/trace/") for t in acc.Tags()["tensors"])
