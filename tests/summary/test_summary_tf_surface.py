"""The rest of `tf.summary`'s surface: audio, write_raw_pb, summary_scope,
has_default_writer, and TensorBoard's hparams API (`jf.summary.hparams`), read
back with TensorBoard's loaders."""

from __future__ import annotations

import io
import wave

import numpy as np
import pytest
from summary_testutil import accumulate
from tensorboard.compat.proto import summary_pb2
from tensorboard.plugins.audio import metadata as audio_md
from tensorboard.plugins.hparams import api_pb2
from tensorboard.plugins.hparams import metadata as hp_md
from tensorboard.util import tensor_util

import jitflow as jf
import jitflow.summary as s
from jitflow.summary import hparams as hp


def test_audio_writes_k_wav_clips(tmp_path):
    clips = np.stack([np.sin(np.arange(400) / (3.0 + i)) * 0.5 for i in range(4)])[:, :, None]
    w = s.create_file_writer(str(tmp_path))
    with w.as_default(step=3):
        assert s.audio("clips", clips, sample_rate=8000, max_outputs=2, description="tones")
        with pytest.raises(ValueError, match="rank-3"):
            s.audio("bad", clips[0], sample_rate=8000)
        with pytest.raises(ValueError, match="encoding"):
            s.audio("bad", clips, sample_rate=8000, encoding="mp3")
    assert not s.audio("none", clips, sample_rate=8000, step=0)  # no default writer
    w.close()
    acc = accumulate(tmp_path)
    md = acc.SummaryMetadata("clips")
    assert md.plugin_data.plugin_name == "audio" and md.summary_description == "tones"
    assert audio_md.parse_plugin_metadata(md.plugin_data.content).encoding == audio_md.Encoding.Value("WAV")
    data = tensor_util.make_ndarray(acc.Tensors("clips")[0].tensor_proto)
    assert data.shape == (2,) and acc.Tensors("clips")[0].step == 3  # the loader drops the labels
    with wave.open(io.BytesIO(data[1])) as f:
        pcm = np.frombuffer(f.readframes(f.getnframes()), "<i2")
        assert f.getframerate() == 8000
    np.testing.assert_allclose(pcm / 32767.0, clips[1, :, 0], atol=1 / 32767)


def test_write_raw_pb_keeps_the_summary_as_is(tmp_path):
    pb = summary_pb2.Summary(value=[summary_pb2.Summary.Value(tag="a", simple_value=1.5),
                                    summary_pb2.Summary.Value(tag="b", simple_value=2.5)])
    w = s.create_file_writer(str(tmp_path))
    with w.as_default(step=4):
        assert s.write_raw_pb(pb.SerializeToString())
        assert s.experimental.write_raw_pb([pb.SerializeToString()], step=5)
        with pytest.raises(ValueError, match="does not parse as a serialized Summary"):
            s.write_raw_pb(b"\xff\xff\xff")
    w.close()
    acc = accumulate(tmp_path)
    assert [(e.step, float(tensor_util.make_ndarray(e.tensor_proto))) for e in acc.Tensors("a")] == [(4, 1.5), (5, 1.5)]
    assert float(tensor_util.make_ndarray(acc.Tensors("b")[0].tensor_proto)) == 2.5


def test_summary_scope_and_has_default_writer(tmp_path):
    assert not s.has_default_writer() and not s.experimental.has_default_writer()
    w = s.create_file_writer(str(tmp_path))
    with w.as_default(step=0):
        assert s.has_default_writer()
        with jf.name_scope("train"):
            with s.summary_scope("loss") as (tag, scope):
                assert (tag, scope) == ("train/loss", "train/loss/")
                s.write(tag, 1.0)
            with s.experimental.summary_scope(None, default_name="acc") as (tag, _):
                assert tag == "train/acc"
    w.close()
    assert "train/loss" in accumulate(tmp_path).Tags()["tensors"]


def test_hparams_api_config_and_sessions(tmp_path):
    LR = hp.HParam("lr", hp.RealInterval(1e-4, 1e-1))
    OPT = hp.HParam("optimizer", hp.Discrete(["adam", "sgd"]))
    with s.create_file_writer(str(tmp_path)).as_default():
        assert hp.hparams_config(hparams=[LR, OPT], metrics=[hp.Metric("accuracy", display_name="Accuracy")])
    for i, (lr, opt) in enumerate([(0.01, "adam"), (0.05, "sgd")]):
        w = s.create_file_writer(str(tmp_path / f"run-{i}"))
        with w.as_default():
            assert hp.hparams({LR: lr, OPT: opt}, trial_id=f"run-{i}")
            s.scalar("accuracy", 0.8 + i / 10, step=1)
        w.close()
    root = accumulate(tmp_path)
    exp = hp_md.parse_experiment_plugin_data(root.SummaryMetadata(hp_md.EXPERIMENT_TAG).plugin_data.content)
    assert [h.name for h in exp.hparam_infos] == ["lr", "optimizer"]
    assert exp.hparam_infos[0].domain_interval.max_value == pytest.approx(0.1)
    assert [m.name.tag for m in exp.metric_infos] == ["accuracy"]
    run = accumulate(tmp_path / "run-1")
    ssi = hp_md.parse_session_start_info_plugin_data(
        run.SummaryMetadata(hp_md.SESSION_START_INFO_TAG).plugin_data.content)
    assert ssi.hparams["optimizer"].string_value == "sgd" and ssi.hparams["lr"].number_value == 0.05
    assert ssi.group_name  # TensorBoard groups sessions by this name
    assert exp.hparam_infos[1].type in (api_pb2.DATA_TYPE_UNSET, api_pb2.DATA_TYPE_STRING)


def test_create_file_writer_takes_all_of_tfs_arguments(tmp_path):
    w = s.create_file_writer(str(tmp_path), max_queue=None, flush_millis=None, filename_suffix=None,
                             name="w", experimental_trackable=True)
    assert w.path.endswith(".v2")
    with w.as_default(step=0):
        assert s.scalar("x", 1.0)
    w.close()
    with pytest.raises(ValueError, match="experimental_mesh"):
        s.create_file_writer(str(tmp_path), experimental_mesh=object())
    assert float(tensor_util.make_ndarray(accumulate(tmp_path).Tensors("x")[0].tensor_proto)) == 1.0
