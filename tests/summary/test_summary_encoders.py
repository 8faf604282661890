"""PNG encoding, histogram bucketing and image layouts against oracles:
Pillow's PNG decoder, TensorBoard's numpy histogram and tensorboardX (which
carries PyTorch's histogram and image code)."""

from __future__ import annotations

import io

import numpy as np
import pytest
from tensorboard.plugins.histogram import summary_v2 as tb_histogram
from tensorboard.util import tensor_util

from jitflow.summary import bucketing, imaging
from jitflow.summary.png import encode_png



@pytest.mark.parametrize("shape", [(1, 1), (5, 7), (5, 7, 1), (4, 3, 2), (6, 9, 3), (16, 16, 4)])
def test_png_decodes_to_the_same_pixels(shape):
    Image = pytest.importorskip("PIL.Image")
    rng = np.random.default_rng(0)
    img = rng.integers(0, 256, size=shape, dtype=np.uint8)
    decoded = np.asarray(Image.open(io.BytesIO(encode_png(img))))
    expected = img[:, :, 0] if img.ndim == 3 and img.shape[2] == 1 else img
    assert decoded.shape == expected.shape
    np.testing.assert_array_equal(decoded, expected)


def test_png_rejects_bad_input():
    with pytest.raises(ValueError, match="uint8"):
        encode_png(np.zeros((2, 2, 3), np.float32))
    with pytest.raises(ValueError, match="C in 1..4"):
        encode_png(np.zeros((2, 2, 5), np.uint8))
    with pytest.raises(ValueError, match="non-empty"):
        encode_png(np.zeros((0, 2, 3), np.uint8))


@pytest.mark.parametrize("data,buckets", [
    (np.random.default_rng(1).normal(size=1000), None),
    (np.random.default_rng(2).uniform(-5, 5, size=(20, 30)), 7),
    (np.arange(100.0), 30),
    (np.full(10, 3.5), 4),
    (np.array([]), 5),
    (np.arange(10), 0),
])
def test_tf_buckets_match_tensorboard(data, buckets):
    ours = bucketing.tf_buckets(data, bucketing.DEFAULT_BUCKET_COUNT if buckets is None else buckets)
    ref = tensor_util.make_ndarray(tb_histogram.histogram_pb("h", data, buckets).value[0].tensor)
    assert ours.shape == ref.shape
    np.testing.assert_allclose(ours, ref, rtol=1e-12, atol=1e-12)


def test_tf_buckets_drop_non_finite_with_warning():
    with pytest.warns(RuntimeWarning, match="2 NaN/inf"):
        table = bucketing.tf_buckets(np.array([1.0, np.nan, 2.0, np.inf, 3.0]), 2)
    assert table[:, 2].sum() == 3
    assert table[0, 0] == 1.0 and table[-1, 1] == 3.0


@pytest.fixture(scope="module")
def tbx_default_bins(tmp_path_factory):
    tbx = pytest.importorskip("tensorboardX")
    w = tbx.SummaryWriter(str(tmp_path_factory.mktemp("tbx")))
    bins = list(w.default_bins)
    w.close()
    return bins


def test_torch_default_bins_are_pytorchs(tbx_default_bins):
    ours = bucketing.torch_default_bins()
    assert len(ours) == len(tbx_default_bins)
    assert ours == pytest.approx(tbx_default_bins, rel=1e-12)


@pytest.mark.parametrize("bins,max_bins", [("tensorflow", None), ("auto", None), (10, None),
                                           ("tensorflow", 50), (64, 10)])
def test_torch_histogram_matches_tensorboardx(bins, max_bins, tbx_default_bins):
    make_histogram = pytest.importorskip("tensorboardX.summary").make_histogram

    values = np.random.default_rng(3).normal(size=500) * 3
    ref = make_histogram(values.astype(float), tbx_default_bins if bins == "tensorflow" else bins,
                         max_bins=max_bins)
    ours = bucketing.torch_histogram(values, bins, max_bins)
    assert ours["bucket_limit"] == pytest.approx(list(ref.bucket_limit))
    assert ours["bucket"] == pytest.approx(list(ref.bucket))
    assert (ours["vmin"], ours["vmax"], ours["num"]) == (ref.min, ref.max, ref.num)
    assert ours["total"] == pytest.approx(ref.sum) and ours["sum_squares"] == pytest.approx(ref.sum_squares)


@pytest.mark.parametrize("shape,fmt", [((3, 8, 6), "CHW"), ((8, 6, 3), "HWC"), ((8, 6), "HW"),
                                       ((1, 8, 6), "CHW"), ((8, 6, 4), "HWC"),
                                       ((5, 3, 8, 6), "NCHW"), ((10, 8, 6, 1), "NHWC")])
def test_torch_image_layout_matches_tensorboardx(shape, fmt):
    convert_to_HWC = pytest.importorskip("tensorboardX.utils").convert_to_HWC

    img = np.random.default_rng(4).random(shape).astype(np.float32)
    ours = imaging.torch_image(img, fmt)
    ref = convert_to_HWC(img, fmt)
    ref = (ref * 255).clip(0, 255).astype(np.uint8)
    np.testing.assert_array_equal(ours, ref)


def test_tf_images_convert_like_convert_image_dtype():
    data = np.array([0.0, 0.5, 1.0, 1.2, -0.3, np.nan]).reshape(1, 1, 6, 1)
    out = imaging.tf_images(data)
    # x * 255.5, clipped to [0, 255], truncated (TF's saturate_cast); NaN -> 0.
    assert out.dtype == np.uint8
    assert out.reshape(-1).tolist() == [0, 127, 255, 255, 0, 0]
    u8 = np.arange(12, dtype=np.uint8).reshape(1, 2, 2, 3)
    assert imaging.tf_images(u8) is u8
