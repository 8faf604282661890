"""Against TensorFlow in the same process: TF reads jitflow's TFRecord files, Example bytes
are identical, and deterministic pipelines give TF's elements and cardinalities.

Run with `.venv-tf/bin/python -m pytest -m tf tests/data` (see PREAMBLE); skipped without TF.
"""
from __future__ import annotations

import numpy as np
import pytest

import jitflow as jf

pytestmark = pytest.mark.tf
tf = pytest.importorskip("tensorflow")


def _example(mod, i: int):
    t = mod.train
    return t.Example(features=t.Features(feature={
        "id": t.Feature(int64_list=t.Int64List(value=[i, -i, 2**40])),
        "x": t.Feature(float_list=t.FloatList(value=[0.1 * i, float("inf")])),
        "s": t.Feature(bytes_list=t.BytesList(value=[b"\x00\xff", f"n{i}".encode()])),
        "empty": t.Feature(),
    }))


def test_example_bytes_identical_to_tf():
    for i in range(4):
        assert _example(jf, i).SerializeToString() == _example(tf, i).SerializeToString()
    seq_jf = jf.train.SequenceExample(context=jf.train.Features(feature={
        "len": jf.train.Feature(int64_list=jf.train.Int64List(value=[2]))}))
    seq_jf.feature_lists.feature_list["frames"].feature.add().float_list.value.extend([1.0, 2.0])
    seq_tf = tf.train.SequenceExample.FromString(seq_jf.SerializeToString())
    assert seq_tf.SerializeToString() == seq_jf.SerializeToString()
    assert list(seq_tf.feature_lists.feature_list["frames"].feature[0].float_list.value) == [1.0, 2.0]


@pytest.mark.parametrize("compression", [None, "GZIP", "ZLIB"])
def test_tf_reads_jitflow_tfrecords(tmp_path, compression):
    path = str(tmp_path / "data.tfrecord")
    with jf.io.TFRecordWriter(path, jf.io.TFRecordOptions(compression)) as w:
        for i in range(20):
            w.write(_example(jf, i).SerializeToString())
    desc = {"id": tf.io.FixedLenFeature([3], tf.int64), "x": tf.io.FixedLenFeature([2], tf.float32),
            "s": tf.io.FixedLenFeature([2], tf.string)}
    ds = tf.data.TFRecordDataset(path, compression_type=compression).map(
        lambda r: tf.io.parse_single_example(r, desc))
    rows = list(ds.as_numpy_iterator())
    assert len(rows) == 20
    for i, r in enumerate(rows):
        assert r["id"].tolist() == [i, -i, 2**40]
        assert r["s"].tolist() == [b"\x00\xff", f"n{i}".encode()]
        np.testing.assert_array_equal(r["x"], np.array([0.1 * i, np.inf], np.float32))


def test_jitflow_reads_tf_tfrecords_and_parses_like_tf(tmp_path):
    path = str(tmp_path / "tf.tfrecord")
    with tf.io.TFRecordWriter(path) as w:
        for i in range(7):
            w.write(_example(tf, i).SerializeToString())
    desc_jf = {"id": jf.io.FixedLenFeature([3], jf.int64), "s": jf.io.VarLenFeature(jf.string),
               "missing": jf.io.FixedLenFeature([2], jf.float32, default_value=[1.0, 2.0])}
    desc_tf = {"id": tf.io.FixedLenFeature([3], tf.int64), "s": tf.io.VarLenFeature(tf.string),
               "missing": tf.io.FixedLenFeature([2], tf.float32, default_value=[1.0, 2.0])}
    ours = list(jf.data.TFRecordDataset(path).batch(3).map(lambda r: jf.io.parse_example(r, desc_jf)))
    theirs = list(tf.data.TFRecordDataset(path).batch(3).map(lambda r: tf.io.parse_example(r, desc_tf)))
    assert len(ours) == len(theirs) == 3
    for a, b in zip(ours, theirs):
        np.testing.assert_array_equal(a["id"].numpy(), b["id"].numpy())
        np.testing.assert_array_equal(a["missing"].numpy(), b["missing"].numpy())
        assert isinstance(a["s"], jf.sparse.SparseTensor) and isinstance(b["s"], tf.sparse.SparseTensor)
        for part in ("indices", "values", "dense_shape"):
            np.testing.assert_array_equal(getattr(a["s"], part).numpy(), getattr(b["s"], part).numpy())
    # One record at a time: 1-D indices and dense_shape [n], TF's too.
    one_jf = next(iter(jf.data.TFRecordDataset(path).map(lambda r: jf.io.parse_single_example(r, desc_jf))))
    one_tf = next(iter(tf.data.TFRecordDataset(path).map(lambda r: tf.io.parse_single_example(r, desc_tf))))
    for part in ("indices", "values", "dense_shape"):
        np.testing.assert_array_equal(getattr(one_jf["s"], part).numpy(), getattr(one_tf["s"], part).numpy())
    assert str(jf.data.TFRecordDataset(path).map(lambda r: jf.io.parse_single_example(r, desc_jf)).element_spec["s"]) \
        == str(tf.data.TFRecordDataset(path).map(lambda r: tf.io.parse_single_example(r, desc_tf))
               .element_spec["s"]).replace("tf.", "jf.")


def _both(build):
    ours = list(build(jf).as_numpy_iterator())
    theirs = list(build(tf).as_numpy_iterator())
    return ours, theirs


def _same(a, b) -> None:
    assert len(a) == len(b), (a, b)
    for x, y in zip(a, b):
        if isinstance(x, dict):
            assert sorted(x) == sorted(y)
            for k in x:
                np.testing.assert_array_equal(x[k], y[k])
        elif isinstance(x, tuple):
            for u, v in zip(x, y):
                np.testing.assert_array_equal(u, v)
        else:
            np.testing.assert_array_equal(x, y)


PIPELINES = {
    "batch": lambda m: m.data.Dataset.range(10).batch(3),
    "batch_drop": lambda m: m.data.Dataset.range(10).batch(3, drop_remainder=True),
    "repeat_take": lambda m: m.data.Dataset.range(3).repeat().take(7),
    "skip_take": lambda m: m.data.Dataset.range(10).skip(3).take(4),
    "interleave": lambda m: m.data.Dataset.range(1, 6).interleave(
        lambda x: m.data.Dataset.from_tensors(x).repeat(6), cycle_length=2, block_length=4),
    "interleave_uneven": lambda m: m.data.Dataset.range(1, 5).interleave(
        lambda x: m.data.Dataset.range(x), cycle_length=3),
    "flat_map": lambda m: m.data.Dataset.range(4).flat_map(lambda x: m.data.Dataset.range(x)),
    "unbatch": lambda m: m.data.Dataset.range(7).batch(3).unbatch(),
    "enumerate_zip": lambda m: m.data.Dataset.zip((m.data.Dataset.range(3), m.data.Dataset.range(5, 9))).enumerate(3),
    "dict_batch": lambda m: m.data.Dataset.from_tensor_slices(
        {"b": [1.0, 2.0, 3.0], "a": [[1, 2], [3, 4], [5, 6]]}).batch(2),
    "filter_map": lambda m: m.data.Dataset.range(12).filter(lambda x: x % 3 == 0).map(lambda x: (x, x * x)),
    "concatenate": lambda m: m.data.Dataset.range(2).concatenate(m.data.Dataset.range(5, 7)),
    "strings": lambda m: m.data.Dataset.from_tensor_slices(["a,b", "c"]).map(
        lambda s: m.strings.join([s, "x"], separator="|")),
}


@pytest.mark.parametrize("name", sorted(PIPELINES))
def test_pipelines_match_tf(name):
    ours, theirs = _both(PIPELINES[name])
    _same(ours, theirs)
    assert int(PIPELINES[name](jf).cardinality()) == int(PIPELINES[name](tf).cardinality())


def test_padded_batch_matches_tf():
    def gen():
        for i in range(1, 6):
            yield [i] * i
    ours = jf.data.Dataset.from_generator(gen, output_signature=jf.TensorSpec([None], jf.int64)).padded_batch(
        2, padding_values=np.int64(-1))
    theirs = tf.data.Dataset.from_generator(gen, output_signature=tf.TensorSpec([None], tf.int64)).padded_batch(
        2, padding_values=np.int64(-1))
    _same(list(ours.as_numpy_iterator()), list(theirs.as_numpy_iterator()))


def test_cardinality_constants_match_tf():
    assert jf.data.INFINITE_CARDINALITY == tf.data.INFINITE_CARDINALITY
    assert jf.data.UNKNOWN_CARDINALITY == tf.data.UNKNOWN_CARDINALITY
    assert jf.data.AUTOTUNE == tf.data.AUTOTUNE == jf.data.experimental.AUTOTUNE
    for m in (jf, tf):
        assert int(m.data.Dataset.range(3).repeat().cardinality()) == -1
        assert int(m.data.Dataset.range(3).filter(lambda x: x > 0).cardinality()) == -2


def test_sequence_example_parses_like_tf():
    seq = tf.train.SequenceExample(context=tf.train.Features(feature={
        "id": tf.train.Feature(int64_list=tf.train.Int64List(value=[7]))}))
    for t in range(4):
        seq.feature_lists.feature_list["x"].feature.add().float_list.value.extend([t, -t])
    data = seq.SerializeToString()
    ctx_tf, seq_tf = tf.io.parse_single_sequence_example(
        data, {"id": tf.io.FixedLenFeature([], tf.int64)}, {"x": tf.io.FixedLenSequenceFeature([2], tf.float32)})
    ctx_jf, seq_jf = jf.io.parse_single_sequence_example(
        data, {"id": jf.io.FixedLenFeature([], jf.int64)}, {"x": jf.io.FixedLenSequenceFeature([2], jf.float32)})
    assert int(ctx_jf["id"]) == int(ctx_tf["id"]) == 7
    np.testing.assert_array_equal(seq_jf["x"].numpy(), seq_tf["x"].numpy())


def test_tf_reads_jitflow_tensors_and_images():
    for value in (np.arange(6, dtype=np.float32).reshape(2, 3), np.array([b"a", b"\x00b"], dtype=object),
                  np.int64(-5)):
        t = jf.constant(value)
        back = tf.io.parse_tensor(jf.io.serialize_tensor(t).numpy(), tf.as_dtype(t.dtype.name))
        np.testing.assert_array_equal(back.numpy(), t.numpy())
    y, x = np.mgrid[0:12, 0:16]
    img = np.stack([x * 15, y * 20, (x + y) * 8], -1).astype(np.uint8)
    np.testing.assert_array_equal(tf.io.decode_png(jf.io.encode_png(img).numpy()).numpy(), img)
    jpg = tf.io.decode_jpeg(jf.io.encode_jpeg(img, quality=95).numpy()).numpy()
    assert jpg.shape == img.shape and np.abs(jpg.astype(int) - img.astype(int)).mean() < 4
