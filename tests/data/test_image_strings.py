"""jf.image and jf.strings ops: eager and traced, with TF's rules (numpy as the oracle)."""
from __future__ import annotations

import numpy as np
import pytest

import jitflow as jf
from data_helpers import encode, gradient_image


def test_decode_channels_and_formats():
    img = gradient_image(12, 20)
    png = encode(img, "PNG")
    assert jf.io.decode_png(png).shape == (12, 20, 3)
    np.testing.assert_array_equal(jf.io.decode_png(png, channels=4).numpy()[..., 3], 255)
    grey = jf.io.decode_png(png, channels=1).numpy()
    assert grey.shape == (12, 20, 1)
    rgba = np.concatenate([img, np.full((12, 20, 1), 7, np.uint8)], -1)
    assert jf.io.decode_image(encode(rgba, "PNG")).shape == (12, 20, 4)
    assert jf.io.decode_jpeg(encode(img, "JPEG"), channels=1).shape == (12, 20, 1)
    assert jf.io.decode_jpeg(encode(img, "JPEG"), ratio=2).shape == (6, 10, 3)
    gif = encode(img, "GIF")
    assert jf.io.decode_image(gif).shape == (1, 12, 20, 3)
    assert jf.io.decode_image(gif, expand_animations=False).shape == (12, 20, 3)
    with pytest.raises(jf.errors.InvalidArgumentError, match="not a valid image"):
        jf.io.decode_jpeg(b"not an image")
    with pytest.raises(ValueError, match="channels must be one of"):
        jf.io.decode_jpeg(png, channels=2)


def test_encode_round_trips():
    img = gradient_image(9, 11)
    np.testing.assert_array_equal(jf.io.decode_png(jf.io.encode_png(img)).numpy(), img)
    jpg = jf.io.decode_jpeg(jf.io.encode_jpeg(img, quality=100)).numpy()
    assert np.abs(jpg.astype(int) - img.astype(int)).mean() < 6  # lossy (chroma subsampling)
    with pytest.raises(TypeError, match="uint8"):
        jf.io.encode_png(img.astype(np.float32))


def test_decode_and_resize_traced_in_a_function():
    png = encode(gradient_image(30, 40), "PNG")

    @jf.function
    def load(data):
        img = jf.io.decode_png(data, channels=3)
        return jf.image.resize(img, [16, 16]) / 255.0
    out = load(jf.constant(png))
    assert out.shape == (16, 16, 3) and out.dtype == jf.float32
    np.testing.assert_allclose(out.numpy(), jf.image.resize(jf.io.decode_png(png), [16, 16]).numpy() / 255.0,
                               rtol=1e-6)


def test_resize_rules():
    x = np.arange(16, dtype=np.float32).reshape(1, 4, 4, 1)
    # Downscaling by 2 with half-pixel centres averages 2x2 blocks.
    np.testing.assert_allclose(jf.image.resize(x, [2, 2]).numpy()[0, :, :, 0], [[2.5, 4.5], [10.5, 12.5]])
    np.testing.assert_array_equal(jf.image.resize(x.astype(np.int32), [2, 2], method="nearest").numpy()[0, :, :, 0],
                                  [[5, 7], [13, 15]])
    assert jf.image.resize(x, [8, 4], preserve_aspect_ratio=True).shape == (1, 4, 4, 1)
    with pytest.raises(ValueError, match="method"):
        jf.image.resize(x, [2, 2], method="bicubic-ish")
    with pytest.raises(jf.errors.InvalidArgumentError, match="3-D"):
        jf.image.resize(np.zeros((4, 4), np.float32), [2, 2])


def test_geometry_ops_match_numpy():
    img = gradient_image(5, 7)
    np.testing.assert_array_equal(jf.image.rot90(img).numpy(), np.rot90(img, 1, (0, 1)))
    np.testing.assert_array_equal(jf.image.rot90(img, k=3).numpy(), np.rot90(img, 3, (0, 1)))
    np.testing.assert_array_equal(jf.image.flip_left_right(img).numpy(), img[:, ::-1])
    np.testing.assert_array_equal(jf.image.flip_up_down(img).numpy(), img[::-1])
    batch = np.stack([img, img])
    np.testing.assert_array_equal(jf.image.rot90(batch).numpy()[1], np.rot90(img, 1, (0, 1)))
    np.testing.assert_array_equal(jf.image.crop_to_bounding_box(img, 1, 2, 3, 4).numpy(), img[1:4, 2:6])


def test_random_ops_follow_seeds_and_draw_every_call():
    img = gradient_image(8, 8)
    flips = {jf.image.random_flip_left_right(img).numpy().tobytes() for _ in range(40)}
    assert flips == {img.tobytes(), img[:, ::-1].tobytes()}
    crops = [jf.image.random_crop(img, [4, 4, 3]).numpy() for _ in range(30)]
    assert all(any((c == img[y:y + 4, x:x + 4]).all() for y in range(5) for x in range(5)) for c in crops)
    assert len({c.tobytes() for c in crops}) > 1
    jf.random.set_seed(5)
    a = [jf.image.random_crop(img, [4, 4, 3], seed=1).numpy() for _ in range(3)]
    jf.random.set_seed(5)
    b = [jf.image.random_crop(img, [4, 4, 3], seed=1).numpy() for _ in range(3)]
    jf.random.set_seed(None)
    assert all((x == y).all() for x, y in zip(a, b))


def test_convert_and_standardize():
    img = np.array([[[0, 128, 255]]], np.uint8)
    f = jf.image.convert_image_dtype(img, jf.float32).numpy()
    np.testing.assert_allclose(f, img / 255.0, rtol=1e-6)
    np.testing.assert_array_equal(jf.image.convert_image_dtype(np.array([[[1.2, -0.1, 0.5]]], np.float32),
                                                               jf.uint8, saturate=True).numpy(), [[[255, 0, 127]]])
    s = jf.image.per_image_standardization(gradient_image(6, 6)).numpy()
    assert abs(s.mean()) < 1e-5 and abs(s.std() - 1) < 1e-3


def test_strings():
    assert jf.strings.join(["a", jf.constant(["x", "y"])], separator="-").numpy().tolist() == [b"a-x", b"a-y"]
    assert jf.strings.split("a b  c").numpy().tolist() == [b"a", b"b", b"c"]
    assert jf.strings.split("a,b,,c", ",").numpy().tolist() == [b"a", b"b", b"", b"c"]
    np.testing.assert_array_equal(jf.strings.to_number(["1.5", " 2"]).numpy(), [1.5, 2.0])
    assert jf.strings.to_number(["7"], jf.int64).dtype == jf.int64
    with pytest.raises(jf.errors.InvalidArgumentError, match="could not correctly convert"):
        jf.strings.to_number(["x1"])
    assert jf.strings.length(["ab", "é"]).numpy().tolist() == [2, 2]
    assert jf.strings.length(["ab", "é"], unit="UTF8_CHAR").numpy().tolist() == [2, 1]
    assert jf.strings.as_string(jf.constant([1.5])).numpy().tolist() == [b"1.500000"]
    assert jf.strings.as_string(jf.constant([3]), width=3, fill="0").numpy().tolist() == [b"003"]
    assert jf.strings.format("x={} y={}", [jf.constant([1, 2]), jf.constant(2.5)]).numpy() == b"x=[1 2] y=2.5"
    assert jf.strings.regex_replace("a1b22", r"([0-9]+)", r"<\1>").numpy() == b"a<1>b<22>"
    assert jf.strings.upper("ab").numpy() == b"AB" and jf.strings.strip(" a ").numpy() == b"a"  # noqa: B005 (jf op, not str.strip)


def test_strings_flow_through_datasets():
    ds = jf.data.Dataset.from_tensor_slices(["3,1", "4,1,5"]).map(
        lambda s: jf.reduce_sum(jf.strings.to_number(jf.strings.split(s, ","), jf.int32)))
    assert [int(v) for v in ds] == [4, 10]


def test_jpeg_fast_path_and_pillow_path_agree(monkeypatch):
    pytest.importorskip("simplejpeg")
    from jitflow.runtime.io import image_codecs

    img = gradient_image(20, 28)
    rgb, grey = encode(img, "JPEG", quality=95), encode(img[:, :, 0], "JPEG", quality=95)
    cases = [(rgb, 0), (rgb, 1), (rgb, 3), (grey, 0), (grey, 3)]
    fast = [jf.io.decode_jpeg(data, channels=c).numpy() for data, c in cases]
    assert image_codecs._fast_jpeg(rgb, 0) is not None
    monkeypatch.setattr(image_codecs, "_SIMPLEJPEG", [None])  # as if simplejpeg were absent
    slow = [jf.io.decode_jpeg(data, channels=c).numpy() for data, c in cases]
    for (_data, c), a, b in zip(cases, fast, slow):
        assert a.shape == b.shape and a.dtype == b.dtype == np.uint8, (c, a.shape, b.shape)
        assert np.abs(a.astype(int) - b.astype(int)).max() <= 3
