"""jitflow reads what TensorFlow wrote: TFRecord files (plain, GZIP, ZLIB) of Examples,
serialize_tensor output, TF-encoded images; decode/resize/image ops match TF's results.

The fixtures come from tests/fixtures/data/make_fixtures.py (run once with TF).
"""
from __future__ import annotations

import os

import numpy as np
import pytest

import jitflow as jf

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "fixtures", "data")
DESC = {
    "id": jf.io.FixedLenFeature([], jf.int64),
    "score": jf.io.FixedLenFeature([2], jf.float32),
    "name": jf.io.FixedLenFeature([], jf.string),
    "tags": jf.io.VarLenFeature(jf.int64),
}


def fixture(name: str) -> str:
    return os.path.join(FIXTURES, name)


@pytest.mark.parametrize("suffix,compression", [("", None), (".gz", "GZIP"), (".zlib", "ZLIB")])
def test_reads_tf_written_tfrecords(suffix, compression):
    ds = jf.data.TFRecordDataset(fixture(f"tf_examples.tfrecord{suffix}"), compression_type=compression)
    rows = list(ds.map(lambda s: jf.io.parse_single_example(s, DESC)).as_numpy_iterator())
    assert [int(r["id"]) for r in rows] == [0, 1, 2, 3, 4]
    for i, r in enumerate(rows):
        np.testing.assert_array_equal(r["score"], np.array([i * 0.5, -1.25], np.float32))
        assert r["name"] == f"item-{i}".encode()
        np.testing.assert_array_equal(r["tags"], np.arange(i))  # as_numpy_iterator: dense, as TF 2.21's


def test_plain_reader_and_protos_read_tf_records():
    records = list(jf.io.tf_record_iterator(fixture("tf_examples.tfrecord")))
    assert len(records) == 5
    ex = jf.train.Example.FromString(records[3])
    assert list(ex.features.feature["tags"].int64_list.value) == [0, 1, 2]
    # Re-serializing the parsed message gives TF's bytes back.
    rebuilt = jf.train.Example(features=jf.train.Features(feature={
        "id": jf.train.Feature(int64_list=jf.train.Int64List(value=[3]))}))
    assert jf.train.Example.FromString(rebuilt.SerializeToString()) == rebuilt


def test_parse_example_batched_varlen_is_sparse():
    ds = jf.data.TFRecordDataset(fixture("tf_examples.tfrecord")).batch(5)
    batch = next(iter(ds.map(lambda s: jf.io.parse_example(s, DESC))))
    assert batch["id"].numpy().tolist() == [0, 1, 2, 3, 4]
    assert batch["score"].shape == (5, 2)
    tags = batch["tags"]
    assert isinstance(tags, jf.sparse.SparseTensor)
    # Record i holds tags 0..i-1: TF's indices are [record, position], dense_shape [5, longest].
    assert tags.indices.numpy().tolist() == [[i, j] for i in range(5) for j in range(i)]
    assert tags.values.numpy().tolist() == [j for i in range(5) for j in range(i)]
    assert tags.dense_shape.numpy().tolist() == [5, 4]
    dense = jf.sparse.to_dense(tags).numpy()  # the zero-padded form jitflow gave before
    assert dense.shape == (5, 4) and dense[4].tolist() == [0, 1, 2, 3] and dense[2].tolist() == [0, 1, 0, 0]


def test_parse_single_example_varlen_is_sparse():
    record = list(jf.io.tf_record_iterator(fixture("tf_examples.tfrecord")))[3]
    tags = jf.io.parse_single_example(record, DESC)["tags"]
    assert tags.indices.numpy().tolist() == [[0], [1], [2]]
    assert tags.values.numpy().tolist() == [0, 1, 2] and tags.dense_shape.numpy().tolist() == [3]
    assert tags.dtype == jf.int64 and tags.shape.as_list() == [3]  # eager: the constant dense shape


def test_parse_tensor_reads_tf_serialize_tensor():
    data = open(fixture("tf_tensor.pb"), "rb").read()
    np.testing.assert_array_equal(jf.io.parse_tensor(data, jf.float32).numpy(), [[1.5, 2.0], [3.0, -4.0]])
    assert jf.io.serialize_tensor(jf.constant([[1.5, 2.0], [3.0, -4.0]])).numpy() == data
    with pytest.raises(jf.errors.InvalidArgumentError, match="out_type is int32"):
        jf.io.parse_tensor(data, jf.int32)


@pytest.fixture(scope="module")
def tf_images():
    return np.load(fixture("tf_images.npz"))


def test_decode_tf_encoded_images(tf_images):
    png = jf.io.read_file(fixture("tf_image.png"))
    np.testing.assert_array_equal(jf.io.decode_png(png).numpy(), tf_images["image"])
    np.testing.assert_array_equal(jf.io.decode_image(png).numpy(), tf_images["image"])
    jpg = jf.io.decode_jpeg(jf.io.read_file(fixture("tf_image.jpg"))).numpy()
    # Both use libjpeg; the IDCT/upsampling variants may differ by up to three levels.
    assert jpg.shape == tf_images["decoded_jpeg"].shape
    assert np.abs(jpg.astype(int) - tf_images["decoded_jpeg"].astype(int)).max() <= 3


@pytest.mark.parametrize("size", [(12, 16), (7, 5), (40, 50), (24, 9)])
@pytest.mark.parametrize("method", ["bilinear", "nearest"])
def test_resize_matches_tf(tf_images, method, size):
    got = jf.image.resize(tf_images["image"], list(size), method=method).numpy()
    want = tf_images[f"{method}_{size[0]}x{size[1]}"]
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-4)


@pytest.mark.parametrize("size", [(12, 16), (7, 5), (40, 50), (24, 9)])
def test_antialiased_resize_matches_tf(tf_images, size):
    got = jf.image.resize(tf_images["image"], list(size), antialias=True).numpy()
    np.testing.assert_allclose(got, tf_images[f"antialias_{size[0]}x{size[1]}"], rtol=0, atol=1e-3)


def test_image_value_ops_match_tf(tf_images):
    img = tf_images["image"]
    np.testing.assert_allclose(jf.image.per_image_standardization(img).numpy(), tf_images["standardized"],
                               atol=1e-5)
    np.testing.assert_array_equal(jf.image.central_crop(img, 0.6).numpy(), tf_images["central_crop"])
    as_float = jf.image.convert_image_dtype(img, jf.float32)
    np.testing.assert_allclose(as_float.numpy(), tf_images["to_float"], atol=1e-7)
    np.testing.assert_array_equal(jf.image.convert_image_dtype(as_float * 0.7, jf.uint8).numpy(),
                                  tf_images["float_to_uint8"])


def test_colour_ops_match_tf(tf_images):
    img = tf_images["image"]
    np.testing.assert_array_equal(jf.image.rgb_to_grayscale(img).numpy(), tf_images["grey"])
    np.testing.assert_array_equal(jf.image.adjust_brightness(img, 0.1).numpy(), tf_images["bright"])
    np.testing.assert_array_equal(jf.image.adjust_contrast(img, 1.7).numpy(), tf_images["contrast"])
    as_float = jf.image.convert_image_dtype(img, jf.float32)
    np.testing.assert_allclose(jf.image.adjust_contrast(as_float, 0.5).numpy(), tf_images["contrast_float"],
                               atol=1e-5)  # float32 means summed in a different order
    np.testing.assert_array_equal(jf.image.grayscale_to_rgb(tf_images["grey"]).numpy()[..., 2],
                                  tf_images["grey"][..., 0])
