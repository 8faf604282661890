"""Every `SummaryWriter.add_*` method for TensorBoard's dashboards, read back with
TensorBoard's own loaders (the tensor-based accumulator the plugins use, after
its legacy-value conversion), checking the plugin data each dashboard reads."""

from __future__ import annotations

import io
import os
import wave

import numpy as np
import pytest
from google.protobuf import text_format
from summary_testutil import accumulate, load_all
from tensorboard.plugins.custom_scalar import layout_pb2
from tensorboard.plugins.hparams import api_pb2
from tensorboard.plugins.hparams import metadata as hp_md
from tensorboard.plugins.mesh import metadata as mesh_md
from tensorboard.plugins.pr_curve import metadata as pr_md
from tensorboard.plugins.projector import projector_config_pb2
from tensorboard.util import tensor_util

import jitflow as jf
import jitflow.summary as s

Image = pytest.importorskip("PIL.Image")


def _tensor(acc, tag, i=0):
    return tensor_util.make_ndarray(acc.Tensors(tag)[i].tensor_proto)


def _plugin(acc, tag):
    return acc.SummaryMetadata(tag).plugin_data


def test_histogram_raw_reads_back_as_histogram_buckets(tmp_path):
    with s.SummaryWriter(str(tmp_path)) as w:
        w.add_histogram_raw("h", min=0.0, max=3.0, num=4, sum=6.0, sum_squares=14.0,
                            bucket_limits=[1.0, 2.0, 3.0], bucket_counts=[1, 2, 1], global_step=5)
    acc = accumulate(tmp_path)
    assert _plugin(acc, "h").plugin_name == "histograms"
    assert acc.Tensors("h")[0].step == 5
    buckets = _tensor(acc, "h")  # TensorBoard's conversion: (left, right, count) rows
    np.testing.assert_array_equal(buckets[:, 2], [1, 2, 1])
    np.testing.assert_array_equal(buckets[:, 1], [1.0, 2.0, 3.0])
    (raw,) = [v.histo for e in load_all(tmp_path, raw=True) for v in e.summary.value if v.tag == "h"]
    assert (raw.min, raw.max, raw.num, raw.sum, raw.sum_squares) == (0, 3, 4, 6, 14)
    with s.SummaryWriter(str(tmp_path / "bad")) as w:
        with pytest.raises(ValueError, match="same non-zero length"):
            w.add_histogram_raw("h", 0, 1, 1, 1, 1, [1.0, 2.0], [1], 0)


def test_images_from_lists_float_steps_and_tags_kept_as_given(tmp_path):
    a = np.zeros((3, 4, 5), np.uint8)
    b = np.full((3, 4, 5), 255, np.uint8)
    with s.SummaryWriter(str(tmp_path)) as w:
        w.add_images("list chw", [a, b], 3.0)
        w.add_images("list hwc", [a.transpose(1, 2, 0)], 4, dataformats="HWC")
        w.add_image("grey hw", np.ones((4, 5)), 5, dataformats="HW")
    acc = accumulate(tmp_path)
    assert {"list chw", "list hwc", "grey hw"} <= set(acc.Tags()["tensors"])  # no '_' substitution
    assert _plugin(acc, "list chw").plugin_name == "images"
    w_, h_, png = _tensor(acc, "list chw")
    assert (int(w_), int(h_), acc.Tensors("list chw")[0].step) == (10, 4, 3)
    img = np.asarray(Image.open(io.BytesIO(png)))
    np.testing.assert_array_equal(img[:, :5], 0)
    np.testing.assert_array_equal(img[:, 5:], 255)
    assert np.asarray(Image.open(io.BytesIO(_tensor(acc, "grey hw")[2]))).min() == 255
    with s.SummaryWriter(str(tmp_path / "bad")) as w:
        with pytest.raises(TypeError, match="global_step: expected an integer"):
            w.add_image("x", a, 1.5)


def test_image_with_boxes_draws_red_boxes_and_labels(tmp_path):
    img = np.zeros((3, 40, 40), np.float32)
    with s.SummaryWriter(str(tmp_path)) as w:
        w.add_image_with_boxes("det", img, np.array([[5, 5, 30, 30]]), 1, labels=["cat"])
        w.add_image_with_boxes("big", img, [[5, 5, 30, 30]], 1, rescale=2)
        with pytest.raises(ValueError, match="labels: expected one str per box"):
            w.add_image_with_boxes("det", img, [[1, 1, 2, 2]], 1, labels=["a", "b"])
        with pytest.raises(ValueError, match=r"box_tensor: expected \[N, 4\]"):
            w.add_image_with_boxes("det", img, [1, 2, 3], 1)
        with pytest.raises(ValueError, match="rescale: a 4000x40 image scaled by 64.0 would have"):
            w.add_image_with_boxes("det", np.zeros((3, 40, 4000)), [[1, 1, 2, 2]], 1, rescale=64)
    acc = accumulate(tmp_path)
    pixels = np.asarray(Image.open(io.BytesIO(_tensor(acc, "det")[2])))
    assert pixels.shape == (40, 40, 3)
    assert tuple(pixels[5, 15]) == (255, 0, 0)  # top edge of the box
    assert tuple(pixels[15, 15]) == (0, 0, 0)  # inside: untouched
    w_, h_ = (int(x) for x in _tensor(acc, "big")[:2])
    assert (w_, h_) == (80, 80)


def test_figure_is_rendered_and_closed(tmp_path):
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig = plt.figure(figsize=(2, 1), dpi=50)
    fig.add_subplot().plot([0, 1], [0, 1], color="blue")
    figs = [plt.figure(figsize=(1, 1), dpi=20) for _ in range(2)]
    with s.SummaryWriter(str(tmp_path)) as w:
        w.add_figure("fig", fig, 2)
        w.add_figure("figs", figs, 3, close=False)
    assert not plt.fignum_exists(fig.number) and all(plt.fignum_exists(f.number) for f in figs)
    plt.close("all")
    acc = accumulate(tmp_path)
    w_, h_, png = _tensor(acc, "fig")
    assert (int(w_), int(h_)) == (100, 50)
    pixels = np.asarray(Image.open(io.BytesIO(png)))
    assert ((pixels[:, :, 2] > 150) & (pixels[:, :, 0] < 100)).any()  # the blue line
    assert [int(x) for x in _tensor(acc, "figs")[:2]] == [40, 20]  # two figures side by side


def test_video_is_an_animated_gif_grid(tmp_path):
    vid = np.zeros((2, 3, 3, 8, 6), np.float32)  # N T C H W
    for t in range(3):
        vid[:, t, 0] = t / 2.0  # red fades in
    with s.SummaryWriter(str(tmp_path)) as w:
        w.add_video("clip", vid, 7, fps=10)
        w.add_video("grey", np.zeros((1, 2, 1, 4, 4), np.uint8), 7)
        with pytest.raises(ValueError, match="rank-5"):
            w.add_video("bad", np.zeros((3, 8, 6)), 0)
    acc = accumulate(tmp_path)
    assert _plugin(acc, "clip").plugin_name == "images"
    w_, h_, gif = _tensor(acc, "clip")
    assert (int(w_), int(h_)) == (12, 8)  # 2 videos side by side
    im = Image.open(io.BytesIO(gif))
    assert im.format == "GIF" and im.n_frames == 3 and im.info["duration"] == 100
    reds = []
    for t in range(3):
        im.seek(t)
        reds.append(np.asarray(im.convert("RGB"))[0, 0, 0])
    assert reds[0] < 10 and 120 < reds[1] < 135 and reds[2] > 250


def test_audio_reads_back_as_wav_in_the_audio_plugin(tmp_path):
    rate = 8000
    tone = 0.5 * np.sin(np.arange(800) / 5.0)
    stereo = np.stack([tone, -tone], axis=1)
    with s.SummaryWriter(str(tmp_path)) as w:
        w.add_audio("tone", tone, 1, sample_rate=rate)
        w.add_audio("stereo", stereo, 2, sample_rate=rate)
        with pytest.warns(UserWarning, match="clipping"):
            w.add_audio("loud", np.array([2.0, -3.0, 0.5]), 3, sample_rate=rate)
        with pytest.raises(ValueError, match="sample_rate"):
            w.add_audio("x", tone, 0, sample_rate=-1)
    acc = accumulate(tmp_path)
    assert _plugin(acc, "tone").plugin_name == "audio"
    for tag, expected in [("tone", tone[:, None]), ("stereo", stereo), ("loud", np.array([[1.0], [-1.0], [0.5]]))]:
        wav = _tensor(acc, tag).reshape(-1)[0]
        with wave.open(io.BytesIO(wav)) as f:
            assert (f.getframerate(), f.getnchannels(), f.getsampwidth()) == (rate, expected.shape[1], 2)
            pcm = np.frombuffer(f.readframes(f.getnframes()), "<i2").reshape(-1, expected.shape[1])
        np.testing.assert_allclose(pcm / 32767.0, expected, atol=1 / 32767)


def test_text_and_scalars_keep_pytorch_tags(tmp_path):
    with s.SummaryWriter(str(tmp_path)) as w:
        w.add_scalar("acc@1 (val)", 0.5, 0)
        w.add_text("notes: run 1", "hello", 0)
    acc = accumulate(tmp_path)
    assert {"acc@1 (val)", "notes: run 1/text_summary"} <= set(acc.Tags()["tensors"])


def test_pr_curve_matches_a_direct_count(tmp_path):
    rng = np.random.default_rng(0)
    labels = rng.integers(0, 2, 200).astype(bool)
    preds = rng.random(200)
    with s.SummaryWriter(str(tmp_path)) as w:
        w.add_pr_curve("pr", labels, preds, 4, num_thresholds=11)
        w.add_pr_curve("weighted", labels, preds, 4, num_thresholds=5, weights=np.full(200, 2.0))
        w.add_pr_curve_raw("raw", [3, 2], [2, 0], [0, 2], [0, 1], [0.6, 1.0], [1.0, 0.67], 5, num_thresholds=2)
        with pytest.raises(ValueError, match=r"predictions: expected values in \[0, 1\]"):
            w.add_pr_curve("pr", labels, preds * 2, 4)
        with pytest.raises(ValueError, match="true_negative_counts: expected 2 values"):
            w.add_pr_curve_raw("raw", [3, 2], [2, 0], [0], [0, 1], [0.6, 1.0], [1.0, 0.67], 5, num_thresholds=2)
    acc = accumulate(tmp_path)
    md = _plugin(acc, "pr")
    assert md.plugin_name == "pr_curves" and pr_md.parse_plugin_metadata(md.content).num_thresholds == 11
    data = _tensor(acc, "pr")
    assert data.shape == (6, 11) and data.dtype == np.float32
    bucket = np.floor(preds * 10).astype(int)
    for i in range(11):  # threshold i: predicted positive when bucket >= i
        pos = bucket >= i
        assert data[0, i] == np.sum(pos & labels) and data[1, i] == np.sum(pos & ~labels)
        assert data[2, i] == np.sum(~pos & ~labels) and data[3, i] == np.sum(~pos & labels)
    np.testing.assert_allclose(data[4, 0], labels.mean(), rtol=1e-6)
    np.testing.assert_allclose(_tensor(acc, "weighted")[0, 0], 2 * labels.sum())
    np.testing.assert_allclose(_tensor(acc, "raw"), [[3, 2], [2, 0], [0, 2], [0, 1], [0.6, 1], [1, 0.67]], rtol=1e-6)


def test_custom_scalars_layout(tmp_path):
    with s.SummaryWriter(str(tmp_path)) as w:
        w.add_custom_scalars({"Loss": {"both": ["Multiline", ["loss/train", "loss/val"]],
                                       "band": ["Margin", ["m/mid", "m/lo", "m/hi"]]}})
        with pytest.raises(ValueError, match="exactly 3 tags"):
            w.add_custom_scalars_marginchart(["a", "b"])
        with pytest.raises(TypeError, match="expected a list of tag strings"):
            w.add_custom_scalars({"c": {"t": ["Multiline", 5]}})
    acc = accumulate(tmp_path)
    assert _plugin(acc, "custom_scalars__config__").plugin_name == "custom_scalars"
    layout = layout_pb2.Layout.FromString(_tensor(acc, "custom_scalars__config__").item())
    (cat,) = layout.category
    assert cat.title == "Loss"
    assert list(cat.chart[0].multiline.tag) == ["loss/train", "loss/val"]
    series = cat.chart[1].margin.series[0]
    assert (series.value, series.lower, series.upper) == ("m/mid", "m/lo", "m/hi")


def test_mesh_components_with_plugin_metadata(tmp_path):
    verts = np.array([[[0, 0, 0], [1, 0, 0], [0, 1, 0], [0, 0, 1]]], np.float32)
    faces = np.array([[[0, 1, 2], [0, 1, 3]]], np.int32)
    colors = np.array([[[255, 0, 0]] * 4], np.uint8)
    with s.SummaryWriter(str(tmp_path)) as w:
        w.add_mesh("tet", verts, colors=colors, faces=faces, config_dict={"camera": {"fov": 60}}, global_step=3)
        with pytest.raises(ValueError, match="faces: expected vertex indices"):
            w.add_mesh("bad", verts, faces=faces + 10)
    acc = accumulate(tmp_path)
    CT = mesh_md.plugin_data_pb2.MeshPluginData
    for ct, values in [(CT.VERTEX, verts), (CT.FACE, faces), (CT.COLOR, colors)]:
        tag = mesh_md.get_instance_name("tet", ct)
        md = _plugin(acc, tag)
        assert md.plugin_name == "mesh"
        content = mesh_md.parse_plugin_metadata(md.content)
        assert (content.name, content.content_type, list(content.shape)) == ("tet", ct, list(values.shape))
        assert content.components == mesh_md.get_components_bitmask([CT.VERTEX, CT.FACE, CT.COLOR])
        assert '"fov": 60' in content.json_config
        np.testing.assert_array_equal(_tensor(acc, tag), values)


def test_hparams_session_and_metrics(tmp_path):
    with s.SummaryWriter(str(tmp_path)) as w:
        w.add_hparams({"lr": 0.1, "opt": "adam", "bn": True, "depth": np.int64(3), "skip": None},
                      {"hparam/acc": 0.9}, hparam_domain_discrete={"opt": ["adam", "sgd"]}, run_name="trial-1")
        with pytest.raises(TypeError, match=r"hparam_dict\['bad'\]"):
            w.add_hparams({"bad": object()}, {"m": 1.0})
        with pytest.raises(ValueError, match="run_name"):
            w.add_hparams({"lr": 0.1}, {"m": 1.0}, run_name="../escape")
    run = tmp_path / "trial-1"
    acc = accumulate(run)
    for tag in (hp_md.EXPERIMENT_TAG, hp_md.SESSION_START_INFO_TAG, hp_md.SESSION_END_INFO_TAG):
        assert _plugin(acc, tag).plugin_name == "hparams"
    exp = hp_md.parse_experiment_plugin_data(_plugin(acc, hp_md.EXPERIMENT_TAG).content)
    infos = {h.name: h for h in exp.hparam_infos}
    assert set(infos) == {"lr", "opt", "bn", "depth"}
    assert infos["opt"].type == api_pb2.DATA_TYPE_STRING
    assert [v.string_value for v in infos["opt"].domain_discrete.values] == ["adam", "sgd"]
    assert [m.name.tag for m in exp.metric_infos] == ["hparam/acc"]
    ssi = hp_md.parse_session_start_info_plugin_data(_plugin(acc, hp_md.SESSION_START_INFO_TAG).content)
    assert ssi.hparams["lr"].number_value == 0.1 and ssi.hparams["bn"].bool_value is True
    assert ssi.hparams["depth"].number_value == 3.0
    sei = hp_md.parse_session_end_info_plugin_data(_plugin(acc, hp_md.SESSION_END_INFO_TAG).content)
    assert sei.status == api_pb2.STATUS_SUCCESS
    assert float(_tensor(acc, "hparam/acc")) == pytest.approx(0.9)
    assert {p for p in os.listdir(tmp_path) if not p.startswith("events.")} == {"trial-1"}
    assert not (tmp_path.parent / "escape").exists()


def test_embedding_files_and_projector_config(tmp_path):
    mat = np.arange(12, dtype=np.float32).reshape(4, 3) / 7
    with s.SummaryWriter(str(tmp_path)) as w:
        w.add_embedding(mat, metadata=["a", "b", "c", "d"], label_img=np.random.rand(4, 3, 5, 5),
                        global_step=2, tag="emb/layer1")
        w.add_embedding(mat * 2, metadata=[["a", 1], ["b", 2], ["c", 3], ["d", 4]],
                        metadata_header=["name", "n"], tag="two")
        with pytest.raises(ValueError, match="one label per row"):
            w.add_embedding(mat, metadata=["a"], tag="bad")
        with pytest.raises(ValueError, match="tabs or newlines"):
            w.add_embedding(mat, metadata=["a\tb", "b", "c", "d"], tag="bad")
    config = text_format.Parse((tmp_path / "projector_config.pbtxt").read_text(),
                               projector_config_pb2.ProjectorConfig())
    by_name = {e.tensor_name: e for e in config.embeddings}
    assert set(by_name) == {"emb/layer1:00002", "two:00000"}
    e = by_name["emb/layer1:00002"]
    rows = [[float(x) for x in line.split("\t")] for line in (tmp_path / e.tensor_path).read_text().splitlines()]
    np.testing.assert_array_equal(np.array(rows, np.float32), mat)
    assert (tmp_path / e.metadata_path).read_text().splitlines() == ["a", "b", "c", "d"]
    sprite = np.asarray(Image.open(tmp_path / e.sprite.image_path))
    assert sprite.shape == (10, 10, 3) and list(e.sprite.single_image_dim) == [5, 5]
    two = by_name["two:00000"]
    assert (tmp_path / two.metadata_path).read_text().splitlines()[:2] == ["name\tn", "a\t1"]


def test_graph_of_a_jf_function(tmp_path):
    f = jf.function(lambda x: jf.tanh(x * 2.0))
    with s.SummaryWriter(str(tmp_path)) as w:
        w.add_graph(f, jf.constant([1.0, 2.0]))
    acc = accumulate(tmp_path)
    ops = {n.op for n in acc.Graph().node}
    assert {"Mul", "Tanh"} <= ops


def test_torch_tensors_and_modules(tmp_path):
    torch = pytest.importorskip("torch")
    with s.SummaryWriter(str(tmp_path)) as w:
        w.add_scalar("bf16", torch.tensor(1.5, dtype=torch.bfloat16), 0)
        w.add_histogram("grad", torch.randn(100, requires_grad=True) * 2, 0)
        w.add_graph(torch.nn.Linear(3, 2), torch.zeros(1, 3))
    acc = accumulate(tmp_path)
    assert float(_tensor(acc, "bf16")) == 1.5
    assert acc.Graph().node


def test_jitflow_tensors_and_numpy_scalars_as_inputs(tmp_path):
    with s.SummaryWriter(str(tmp_path)) as w:
        w.add_scalar("jf_scalar", jf.constant(2.5), jf.constant(3, jf.int64))
        w.add_scalar("np_scalar", np.float16(0.5), np.int32(4))
        w.add_histogram("jf_hist", jf.constant([1.0, 2.0, 2.0, 3.0]), 1, bins="auto")
        w.add_image("jf_img", jf.ones([3, 4, 4]), 1)
        w.add_pr_curve("jf_pr", jf.constant([True, False, True]), jf.constant([0.9, 0.2, 0.6]), 1)
        w.add_embedding(jf.ones([3, 2]), metadata=["a", "b", "c"], tag="jf_emb")
    acc = accumulate(tmp_path)
    assert (acc.Tensors("jf_scalar")[0].step, float(_tensor(acc, "jf_scalar"))) == (3, 2.5)
    assert (acc.Tensors("np_scalar")[0].step, float(_tensor(acc, "np_scalar"))) == (4, 0.5)
    assert _tensor(acc, "jf_hist")[:, 2].sum() == 4
    assert np.asarray(Image.open(io.BytesIO(_tensor(acc, "jf_img")[2]))).min() == 255
    assert _tensor(acc, "jf_pr")[0, 0] == 2  # two true positives at threshold 0
