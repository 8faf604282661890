"""Summary calls inside jf.function: graph nodes that write on every run, resolved at run time."""
import numpy as np
import pytest
from tensorboard.backend.event_processing import plugin_event_accumulator as pea
from tensorboard.util import tensor_util

import jitflow as jf


def _load(logdir):
    acc = pea.EventAccumulator(str(logdir), size_guidance={"tensors": 0})
    acc.Reload()
    return acc


def test_scalar_histogram_text_image_and_raw_write_every_run(tmp_path):
    @jf.function
    def step(x, i):
        loss = jf.reduce_sum(x * x)
        jf.summary.scalar("loss", loss, step=i)
        jf.summary.histogram("x", x, step=i)
        jf.summary.text("note", jf.constant("hello"), step=i)
        jf.summary.image("img", jf.ones([1, 2, 2, 1]), step=i)
        jf.summary.write("raw", x, step=i)
        return loss

    writer = jf.summary.create_file_writer(str(tmp_path))
    with writer.as_default():
        for i in range(3):
            step(jf.constant([1.0, 2.0]) * float(i), jf.constant(i, jf.int64))
    writer.close()
    assert step.tracing_count == 1
    acc = _load(tmp_path)
    losses = [(e.step, float(tensor_util.make_ndarray(e.tensor_proto))) for e in acc.Tensors("loss")]
    assert losses == [(0, 0.0), (1, 5.0), (2, 20.0)]
    assert [e.step for e in acc.Tensors("x")] == [0, 1, 2]
    assert tensor_util.make_ndarray(acc.Tensors("note/text_summary" if "note/text_summary" in acc.Tags()["tensors"]
                                                else "note")[0].tensor_proto).item() == b"hello"
    assert len(acc.Tensors("img")) == 3
    np.testing.assert_allclose(tensor_util.make_ndarray(acc.Tensors("raw")[2].tensor_proto), [2.0, 4.0])
    types = [n.type for n in step.get_concrete_function(jf.constant([1.0, 2.0]), jf.constant(0, jf.int64)).graph.nodes]
    for op in ("WriteScalarSummary", "WriteHistogramSummary", "WriteSummary", "WriteImageSummary", "WriteRawSummary"):
        assert op in types


def test_writer_and_default_step_are_resolved_when_the_graph_runs(tmp_path):
    @jf.function
    def log(v):
        return jf.summary.scalar("v", v)

    assert not bool(log(jf.constant(1.0)))  # no default writer: nothing written, False
    first = jf.summary.create_file_writer(str(tmp_path / "a"))
    second = jf.summary.create_file_writer(str(tmp_path / "b"))
    with first.as_default(step=7):
        assert bool(log(jf.constant(2.0)))
    with second.as_default(step=9):
        assert bool(log(jf.constant(3.0)))
    first.close()
    second.close()
    assert log.tracing_count == 1
    assert [(e.step, float(tensor_util.make_ndarray(e.tensor_proto)))
            for e in _load(tmp_path / "a").Tensors("v")] == [(7, 2.0)]
    assert [(e.step, float(tensor_util.make_ndarray(e.tensor_proto)))
            for e in _load(tmp_path / "b").Tensors("v")] == [(9, 3.0)]


def test_name_scopes_prefix_tags_in_graphs_and_eagerly(tmp_path):
    @jf.function
    def f(x):
        with jf.name_scope("train"):
            jf.summary.scalar("loss", x, step=0)

    writer = jf.summary.create_file_writer(str(tmp_path))
    with writer.as_default():
        f(jf.constant(1.0))
        with jf.name_scope("eval"):
            jf.summary.scalar("loss", 2.0, step=0)
    writer.close()
    assert {"train/loss", "eval/loss"} <= set(_load(tmp_path).Tags()["tensors"])


def test_missing_step_at_run_time_is_a_clear_error(tmp_path):
    @jf.function
    def f(x):
        jf.summary.scalar("loss", x)

    writer = jf.summary.create_file_writer(str(tmp_path))
    with writer.as_default():
        with pytest.raises(ValueError, match="step"):
            f(jf.constant(1.0))
    writer.close()


def test_trace_records_are_written_to_the_default_writer(tmp_path):
    @jf.function
    def g(n):
        return jf.constant(n)

    writer = jf.summary.create_file_writer(str(tmp_path))
    with writer.as_default(step=0):
        g(10)
        g(20)
    writer.close()
    acc = _load(tmp_path)
    import json
    tags = [t for t in acc.Tags()["tensors"] if t.startswith("jitflow/trace/")]
    assert len(tags) == 1 and tags[0].endswith("g")
    records = [json.loads(tensor_util.make_ndarray(e.tensor_proto).item()) for e in acc.Tensors(tags[0])]
    assert [r["reason"] for r in records] == ["first call", "arg 'n': Python int 10 → 20"]
    assert acc.PluginTagToContent("jitflow_trace")
    lines = [tensor_util.make_ndarray(e.tensor_proto).item().decode() for e in acc.Tensors("jitflow/retraces")]
    assert "Python int 10 → 20" in lines[1]
