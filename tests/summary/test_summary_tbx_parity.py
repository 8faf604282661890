"""Files written by jitflow's SummaryWriter and by tensorboardX for the same calls
read back identically with TensorBoard's loaders: tags, plugin names, plugin
data, values and shapes. Known, deliberate differences are spelled out where
they are compared (mesh tags follow PyTorch / TensorBoard's `<tag>_VERTEX`,
tensorboardX writes `<tag>_1`; `add_scalars` runs follow PyTorch's
`<main_tag>_<key>`, tensorboardX nests `<main_tag>/<key>`; tensorboardX pads
sprites with uninitialised memory, jitflow with black)."""

from __future__ import annotations

import io
import os
import wave

import numpy as np
import pytest
from google.protobuf import text_format
from summary_testutil import accumulate
from tensorboard.plugins.hparams import metadata as hp_md
from tensorboard.plugins.mesh import metadata as mesh_md
from tensorboard.plugins.projector import projector_config_pb2
from tensorboard.util import tensor_util

import jitflow.summary as s

tbx = pytest.importorskip("tensorboardX")
Image = pytest.importorskip("PIL.Image")

RNG = np.random.default_rng(7)
IMG = RNG.random((3, 20, 24)).astype(np.float32)
BATCH = RNG.integers(0, 256, (5, 3, 6, 7), dtype=np.uint8)
VALUES = RNG.normal(size=500)
LABELS = RNG.integers(0, 2, 300)
PREDS = RNG.random(300)
VERTS = RNG.random((1, 5, 3)).astype(np.float32)
FACES = np.array([[[0, 1, 2], [1, 2, 3], [2, 3, 4]]])
COLORS = RNG.integers(0, 256, (1, 5, 3)).astype(np.uint8)
MAT = RNG.normal(size=(6, 4)).astype(np.float32)
SPRITES = RNG.random((6, 3, 8, 8)).astype(np.float32)
LAYOUT = {"Loss": {"both": ["Multiline", ["loss/train", "loss/val"]],
                   "band": ["Margin", ["m/mid", "m/lo", "m/hi"]]}}


def _write_common(w) -> None:
    """The same calls, through either writer."""
    for step in range(3):
        w.add_scalar("loss", 1.0 / (step + 1), step)
    w.add_scalars("pair", {"a": 1.0, "b": 2.0}, 1)
    w.add_histogram("h", VALUES, 2)
    w.add_histogram("h_auto", VALUES, 2, bins="auto")
    w.add_histogram("h_max", VALUES, 2, bins="fd", max_bins=5)
    w.add_histogram_raw("h_raw", min=0.0, max=3.0, num=4, sum=6.0, sum_squares=14.0,
                        bucket_limits=[1.0, 2.0, 3.0], bucket_counts=[1.0, 2.0, 1.0], global_step=3)
    w.add_text("t", "**bold** text", 4)
    w.add_image("img", IMG, 5)
    w.add_image("img_hwc", IMG.transpose(1, 2, 0), 5, dataformats="HWC")
    w.add_images("batch", BATCH, 6)
    w.add_images("batch_nhwc", BATCH.transpose(0, 2, 3, 1), 6, dataformats="NHWC")
    w.add_image_with_boxes("boxes", IMG, np.array([[2, 3, 15, 12], [1, 1, 5, 5]]), 7)
    w.add_pr_curve("pr", LABELS, PREDS, 8)
    w.add_pr_curve("pr_small", LABELS, PREDS, 8, num_thresholds=9, weights=np.full(300, 0.5))
    w.add_pr_curve_raw("pr_raw", [3, 2], [2, 0], [0, 2], [0, 1], [0.6, 1.0], [1.0, 0.67], 9, num_thresholds=2)
    w.add_custom_scalars(LAYOUT)
    w.add_mesh("mesh", VERTS, colors=COLORS, faces=FACES, config_dict={"camera": {"fov": 75}}, global_step=10)
    w.add_embedding(MAT, metadata=list("abcdef"), label_img=SPRITES, global_step=3, tag="emb")
    w.add_embedding(MAT, metadata=[[c, i] for i, c in enumerate("abcdef")], metadata_header=["c", "i"], tag="two")
    w.add_hparams({"lr": 0.1, "opt": "adam", "bn": True, "depth": 3}, {"hparam/acc": 0.75}, name="trial")


@pytest.fixture(scope="module")
def pair(tmp_path_factory):
    root = tmp_path_factory.mktemp("parity")
    for cls, sub in [(tbx.SummaryWriter, "tbx"), (s.SummaryWriter, "jf")]:
        w = cls(str(root / sub))
        _write_common(w)
        w.close()
    return root / "tbx", root / "jf"


def _arr(acc, tag):
    return tensor_util.make_ndarray(acc.Tensors(tag)[0].tensor_proto)


def _pixels(png: bytes) -> np.ndarray:
    return np.asarray(Image.open(io.BytesIO(png)))


def test_same_runs_and_tags(pair):
    ref, ours = pair
    runs = {p for p in os.listdir(ours) if not p.startswith("events.")}
    assert runs == {p for p in os.listdir(ref) if not p.startswith("events.")} - {"pair"} | {"pair_a", "pair_b"}
    assert runs == {"00000", "00003", "projector_config.pbtxt", "trial", "pair_a", "pair_b"}
    ra, oa = accumulate(ref), accumulate(ours)
    mesh_ref = {t for t in ra.Tags()["tensors"] if t.startswith("mesh_")}
    mesh_ours = {t for t in oa.Tags()["tensors"] if t.startswith("mesh_")}
    assert set(ra.Tags()["tensors"]) - mesh_ref == set(oa.Tags()["tensors"]) - mesh_ours
    assert len(mesh_ref) == len(mesh_ours) == 3
    for tag in set(ra.Tags()["tensors"]) - mesh_ref:
        assert ra.SummaryMetadata(tag).plugin_data.plugin_name == oa.SummaryMetadata(tag).plugin_data.plugin_name, tag
        assert [e.step for e in ra.Tensors(tag)] == [e.step for e in oa.Tensors(tag)], tag


def test_scalars_histograms_text(pair):
    ra, oa = (accumulate(p) for p in pair)
    for tag in ["loss", "h", "h_auto", "h_max", "h_raw", "t/text_summary"]:
        a, b = _arr(ra, tag), _arr(oa, tag)
        assert a.shape == b.shape, tag
        if a.dtype.kind == "O":
            assert a.tolist() == b.tolist()
        else:
            np.testing.assert_allclose(a, b, rtol=1e-12, err_msg=tag)
    for key in ["a", "b"]:
        ra_k, oa_k = accumulate(pair[0] / "pair" / key), accumulate(pair[1] / f"pair_{key}")
        assert float(_arr(ra_k, "pair")) == float(_arr(oa_k, "pair"))


@pytest.mark.parametrize("tag", ["img", "img_hwc", "batch", "batch_nhwc", "boxes"])
def test_images_have_the_same_pixels(pair, tag):
    ra, oa = (accumulate(p) for p in pair)
    a, b = _arr(ra, tag), _arr(oa, tag)
    assert a[:2].tolist() == b[:2].tolist()  # width, height
    np.testing.assert_array_equal(_pixels(a[2]), _pixels(b[2]))


@pytest.mark.parametrize("tag", ["pr", "pr_small", "pr_raw"])
def test_pr_curves(pair, tag):
    ra, oa = (accumulate(p) for p in pair)
    assert ra.SummaryMetadata(tag).plugin_data.content == oa.SummaryMetadata(tag).plugin_data.content
    a, b = _arr(ra, tag), _arr(oa, tag)
    assert a.shape == b.shape and a.dtype == b.dtype
    np.testing.assert_allclose(a, b, rtol=1e-6)


def test_custom_scalars_layout(pair):
    ra, oa = (accumulate(p) for p in pair)
    tag = "custom_scalars__config__"
    assert _arr(ra, tag).item() == _arr(oa, tag).item()


def test_mesh_components(pair):
    def components(acc):
        out = {}
        for tag in acc.Tags()["tensors"]:
            md = acc.SummaryMetadata(tag).plugin_data
            if md.plugin_name == "mesh":
                c = mesh_md.parse_plugin_metadata(md.content)
                out[c.content_type] = (c.name, list(c.shape), c.json_config, _arr(acc, tag).tolist())
        return out
    ref, ours = (components(accumulate(p)) for p in pair)
    assert ref == ours and len(ref) == 3


def test_hparams(pair):
    """Compared as messages: map entries (the hparam values) have no fixed wire order, and the
    session start/end times differ between the two writers."""
    from tensorboard.plugins.hparams import plugin_data_pb2

    def parsed(acc, tag):
        msg = plugin_data_pb2.HParamsPluginData.FromString(acc.SummaryMetadata(tag).plugin_data.content)
        kind = msg.WhichOneof("data")  # one of experiment / session_start_info / session_end_info
        assert kind is not None, tag
        time_field = {"experiment": "time_created_secs", "session_start_info": "start_time_secs",
                      "session_end_info": "end_time_secs"}[kind]
        setattr(getattr(msg, kind), time_field, 0)
        return kind, msg

    ra, oa = (accumulate(p / "trial") for p in pair)
    for tag in (hp_md.EXPERIMENT_TAG, hp_md.SESSION_START_INFO_TAG, hp_md.SESSION_END_INFO_TAG):
        (kind_a, a), (kind_b, b) = parsed(ra, tag), parsed(oa, tag)
        assert kind_a == kind_b and a == b, tag
    assert float(_arr(ra, "hparam/acc")) == float(_arr(oa, "hparam/acc"))


def test_embeddings(pair):
    def config(root):
        c = text_format.Parse((root / "projector_config.pbtxt").read_text(), projector_config_pb2.ProjectorConfig())
        return {e.tensor_name: e for e in c.embeddings}
    ref, ours = (config(p) for p in pair)
    assert set(ref) == set(ours) == {"emb:00003", "two:00000"}
    for name in ref:
        a, b = ref[name], ours[name]
        assert (a.tensor_path, a.metadata_path, a.sprite.image_path, list(a.sprite.single_image_dim)) == \
               (b.tensor_path, b.metadata_path, b.sprite.image_path, list(b.sprite.single_image_dim))
        ta = np.loadtxt(pair[0] / a.tensor_path, delimiter="\t")
        tb = np.loadtxt(pair[1] / b.tensor_path, delimiter="\t")
        np.testing.assert_array_equal(ta, tb)
        assert (pair[0] / a.metadata_path).read_text() == (pair[1] / b.metadata_path).read_text()
        if a.sprite.image_path:
            sa = np.asarray(Image.open(pair[0] / a.sprite.image_path))
            sb = np.asarray(Image.open(pair[1] / b.sprite.image_path))
            assert sa.shape == sb.shape == (24, 24, 3)  # 6 images of 8x8, 3 per row, padded square
            np.testing.assert_array_equal(sa[:16], sb[:16])  # the rows holding images
            np.testing.assert_array_equal(sb[16:], 0)


def test_audio(tmp_path):
    pytest.importorskip("soundfile")  # tensorboardX encodes WAV with it
    tone = 0.8 * np.sin(np.arange(4000) / 7.0)
    for cls, sub in [(tbx.SummaryWriter, "tbx"), (s.SummaryWriter, "jf")]:
        with cls(str(tmp_path / sub)) as w:
            w.add_audio("tone", tone, 1, sample_rate=16000)
    decoded = []
    for sub in ["tbx", "jf"]:
        acc = accumulate(tmp_path / sub)
        assert acc.SummaryMetadata("tone").plugin_data.plugin_name == "audio"
        with wave.open(io.BytesIO(_arr(acc, "tone").reshape(-1)[0])) as f:
            decoded.append((f.getframerate(), f.getnchannels(), f.getsampwidth(),
                            np.frombuffer(f.readframes(f.getnframes()), "<i2")))
    (ra, ca, wa, pa), (rb, cb, wb, pb) = decoded
    assert (ra, ca, wa) == (rb, cb, wb) == (16000, 1, 2)
    # tensorboardX (libsndfile) scales by 32768, PyTorch and jitflow by 32767: the 16-bit
    # samples differ by at most 2 steps of 1/32768.
    assert np.abs(pa.astype(int) - pb.astype(int)).max() <= 2


def test_figure(tmp_path):
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig = plt.figure(figsize=(2, 2), dpi=40)
    fig.add_subplot().plot([3, 1, 2])
    for cls, sub in [(tbx.SummaryWriter, "tbx"), (s.SummaryWriter, "jf")]:
        with cls(str(tmp_path / sub)) as w:
            w.add_figure("fig", fig, 0, close=False)
    plt.close(fig)
    a, b = (_arr(accumulate(tmp_path / sub), "fig") for sub in ["tbx", "jf"])
    np.testing.assert_array_equal(_pixels(a[2]), _pixels(b[2]))


def test_video(tmp_path):
    pytest.importorskip("moviepy")  # tensorboardX encodes GIFs with it
    vid = RNG.random((3, 4, 3, 8, 8)).astype(np.float32)
    for cls, sub in [(tbx.SummaryWriter, "tbx"), (s.SummaryWriter, "jf")]:
        with cls(str(tmp_path / sub)) as w:
            w.add_video("clip", vid, 0, fps=5)
    a, b = (_arr(accumulate(tmp_path / sub), "clip") for sub in ["tbx", "jf"])
    assert a[:2].tolist() == b[:2].tolist()
    ga, gb = Image.open(io.BytesIO(a[2])), Image.open(io.BytesIO(b[2]))
    assert ga.n_frames == gb.n_frames == 4 and ga.size == gb.size == (32, 8)  # 3 videos padded to 4 cells in a row
    for t in range(4):  # both quantize to a 256-colour palette per frame: close, not identical
        ga.seek(t)
        gb.seek(t)
        fa, fb = (np.asarray(g.convert("RGB"), dtype=float) for g in (ga, gb))
        assert np.abs(fa - fb).mean() < 8, t
        np.testing.assert_array_equal(fb[:, 24:], 0)  # the empty fourth cell
