"""`jf.summary` and TensorFlow's `tf.summary` write the same thing for the same
calls (tags, plugin names and content, dtypes, shapes, values, steps), eagerly
and from inside a function with `as_default()` entered in its body.

Run in the TF venv: `.venv-tf/bin/python -m pytest -m tf tests/summary/test_summary_tf_parity.py`.
"""

from __future__ import annotations

import io
import wave

import numpy as np
import pytest
from summary_testutil import accumulate
from tensorboard.util import tensor_util

import jitflow as jf
import jitflow.summary as s

pytestmark = pytest.mark.tf
tf = pytest.importorskip("tensorflow")

RNG = np.random.default_rng(3)
HIST = RNG.normal(size=300)
IMAGES = RNG.random((2, 5, 6, 3)).astype(np.float32)
AUDIO = (0.5 * np.sin(np.arange(600) / 4.0)).astype(np.float32).reshape(1, 600, 1)


def _eager_calls(api, tensor) -> None:
    api.scalar("loss", 0.125, step=1, description="the loss")
    api.histogram("hist", tensor(HIST), step=2, buckets=7)
    api.histogram("empty_buckets", tensor(HIST), step=2, buckets=0)
    api.image("imgs", tensor(IMAGES), step=3, max_outputs=2)
    api.audio("clip", tensor(AUDIO), sample_rate=8000, step=4)
    api.text("note", "hello *world*", step=5)
    api.write("raw", tensor(np.arange(6.0).reshape(2, 3)), step=6)


def _compare(ref_dir, ours_dir, tags):
    ref, ours = accumulate(ref_dir), accumulate(ours_dir)
    for tag in tags:
        if tag != "raw":  # write() without metadata has none to compare
            a_md, b_md = ref.SummaryMetadata(tag), ours.SummaryMetadata(tag)
            assert a_md.plugin_data.plugin_name == b_md.plugin_data.plugin_name, tag
            assert a_md.plugin_data.content == b_md.plugin_data.content, tag
            assert a_md.summary_description == b_md.summary_description, tag
            assert a_md.data_class == b_md.data_class, tag
        (a,), (b,) = ref.Tensors(tag), ours.Tensors(tag)
        assert a.step == b.step, tag
        x, y = tensor_util.make_ndarray(a.tensor_proto), tensor_util.make_ndarray(b.tensor_proto)
        assert (x.dtype, x.shape) == (y.dtype, y.shape), tag
        yield tag, x, y


def test_eager_calls_match_tf(tmp_path):
    with tf.summary.create_file_writer(str(tmp_path / "tf")).as_default():
        _eager_calls(tf.summary, tf.constant)
    w = s.create_file_writer(str(tmp_path / "jf"))
    with w.as_default():
        _eager_calls(s, np.asarray)
    w.close()
    for tag, x, y in _compare(tmp_path / "tf", tmp_path / "jf",
                              ["loss", "hist", "empty_buckets", "imgs", "clip", "note", "raw"]):
        if tag in ("imgs", "clip"):
            continue
        if x.dtype.kind in "SO":
            assert x.tolist() == y.tolist(), tag
        else:
            np.testing.assert_allclose(x, y, rtol=1e-12, err_msg=tag)
    ref, ours = accumulate(tmp_path / "tf"), accumulate(tmp_path / "jf")
    a = tensor_util.make_ndarray(ref.Tensors("imgs")[0].tensor_proto)
    b = tensor_util.make_ndarray(ours.Tensors("imgs")[0].tensor_proto)
    assert a[:2].tolist() == b[:2].tolist() and len(a) == len(b) == 4
    for pa, pb in zip(a[2:], b[2:]):
        np.testing.assert_array_equal(tf.io.decode_png(pa).numpy(), tf.io.decode_png(pb).numpy())
    ca = tensor_util.make_ndarray(ref.Tensors("clip")[0].tensor_proto)
    cb = tensor_util.make_ndarray(ours.Tensors("clip")[0].tensor_proto)
    assert ca.shape == cb.shape == (1,)  # TensorBoard's loader keeps the clips, drops the labels
    wa, _ = tf.audio.decode_wav(ca[0])
    with wave.open(io.BytesIO(cb[0])) as f:
        assert f.getframerate() == 8000
        pcm = np.frombuffer(f.readframes(f.getnframes()), "<i2") / 32767.0
    np.testing.assert_allclose(pcm, wa.numpy()[:, 0], atol=2 / 32767)


def test_as_default_inside_a_function_matches_tf(tmp_path):
    tf_writer = tf.summary.create_file_writer(str(tmp_path / "tf"))
    jf_writer = s.create_file_writer(str(tmp_path / "jf"))

    @tf.function
    def tf_step(x, step):
        with tf_writer.as_default(step=step):
            return tf.summary.scalar("loss", x * 2.0)

    @jf.function
    def jf_step(x, step):
        with jf_writer.as_default(step=step):
            return s.scalar("loss", x * 2.0)

    for i in range(3):
        r_tf = tf_step(tf.constant(float(i)), tf.constant(i, tf.int64))
        r_jf = jf_step(jf.constant(float(i)), jf.constant(i, jf.int64))
        assert bool(r_tf) is bool(r_jf) is True
    tf_writer.close()
    jf_writer.close()
    ref = [(e.step, float(tensor_util.make_ndarray(e.tensor_proto)))
           for e in accumulate(tmp_path / "tf").Tensors("loss")]
    ours = [(e.step, float(tensor_util.make_ndarray(e.tensor_proto)))
            for e in accumulate(tmp_path / "jf").Tensors("loss")]
    assert ref == ours == [(0, 0.0), (1, 2.0), (2, 4.0)]


def test_hparams_api_matches_tensorboards_with_tf(tmp_path):
    from tensorboard.plugins.hparams import api as tb_hp
    from jitflow.summary import hparams as hp
    for api, sub, writer_api in [(tb_hp, "tf", tf.summary), (hp, "jf", s)]:
        lr = api.HParam("lr", api.RealInterval(0.001, 0.1))
        w = writer_api.create_file_writer(str(tmp_path / sub))
        with w.as_default():
            api.hparams_config(hparams=[lr], metrics=[api.Metric("acc")], time_created_secs=1.0)
            api.hparams({lr: 0.01}, trial_id="t", start_time_secs=2.0)
        w.close()
    list(_compare(tmp_path / "tf", tmp_path / "jf", ["_hparams_/experiment", "_hparams_/session_start_info"]))
