"""`jf.sparse` against TensorFlow in the same process: every op's indices, values and dense
shape, datasets of sparse elements, `jf.function` retracing, and VarLenFeature parsing.

Run with `.venv-tf/bin/python -m pytest -m tf tests/data/test_sparse_tf.py` (see PREAMBLE).
"""
from __future__ import annotations

import numpy as np
import pytest

import jitflow as jf

pytestmark = pytest.mark.tf
tf = pytest.importorskip("tensorflow")


def _pair(dense):
    return jf.sparse.from_dense(dense), tf.sparse.from_dense(dense)


def _same(ours, theirs):
    if isinstance(theirs, tf.sparse.SparseTensor):
        assert isinstance(ours, jf.sparse.SparseTensor)
        for part in ("indices", "values", "dense_shape"):
            np.testing.assert_allclose(getattr(ours, part).numpy(), getattr(theirs, part).numpy(), rtol=1e-5)
        assert ours.shape.as_list() == theirs.shape.as_list()
    else:
        np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-5)
        assert ours.shape == tuple(theirs.shape)


@pytest.fixture
def operands():
    rng = np.random.default_rng(7)

    def make(shape):
        return (rng.integers(1, 9, size=shape) * (rng.random(shape) < 0.4)).astype(np.float32)
    return make, rng


def test_ops_match_tf(operands):
    make, rng = operands
    da, db = make((4, 5)), make((4, 5))
    (a, ta), (b, tb) = _pair(da), _pair(db)
    _same(a, ta)
    _same(jf.sparse.to_dense(a, default_value=-1.0), tf.sparse.to_dense(ta, default_value=-1.0))
    _same(jf.sparse.add(a, b), tf.sparse.add(ta, tb))
    neg = -db
    _same(jf.sparse.add(a, jf.sparse.from_dense(neg), threshold=0.5),
          tf.sparse.add(ta, tf.sparse.from_dense(neg), threshold=0.5))
    _same(jf.sparse.add(a, db), tf.sparse.add(ta, db))
    for axis, keep in ((None, False), (0, False), (1, True), ([0, 1], False), (-1, False)):
        _same(jf.sparse.reduce_sum(a, axis=axis, keepdims=keep), tf.sparse.reduce_sum(ta, axis=axis, keepdims=keep))
    dc = make((2, 5))
    c, tc = _pair(dc)
    _same(jf.sparse.concat(0, [a, c]), tf.sparse.concat(0, [ta, tc]))
    dd = make((3, 7))
    d, td = _pair(dd)
    _same(jf.sparse.concat(1, [a, d], expand_nonconcat_dims=True),
          tf.sparse.concat(1, [ta, td], expand_nonconcat_dims=True))
    m = rng.standard_normal((5, 3)).astype(np.float32)
    for adj_a, adj_b, rhs in ((False, False, m), (False, True, m.T), (True, False, m[:4]), (True, True, m[:4].T)):
        _same(jf.sparse.sparse_dense_matmul(a, rhs, adjoint_a=adj_a, adjoint_b=adj_b),
              tf.sparse.sparse_dense_matmul(ta, rhs, adjoint_a=adj_a, adjoint_b=adj_b))
    _same(jf.sparse.reshape(a, [2, -1, 5]), tf.sparse.reshape(ta, [2, -1, 5]))
    _same(jf.sparse.slice(a, [1, 3], [5, 5]), tf.sparse.slice(ta, [1, 3], [5, 5]))
    _same(jf.sparse.transpose(a), tf.sparse.transpose(ta))
    shuffled = ([[2, 1], [0, 3], [1, 1]], [1.0, 2.0, 3.0], [3, 4])
    _same(jf.sparse.reorder(jf.sparse.SparseTensor(*shuffled)), tf.sparse.reorder(tf.sparse.SparseTensor(*shuffled)))
    scale = np.arange(5, dtype=np.float32) + 1
    _same(a * scale, ta * scale)
    _same(a / scale, ta / scale)
    _same(a.with_values(a.values + 1), ta.with_values(ta.values + 1))
    assert repr(a._type_spec) == repr(tf.SparseTensorSpec.from_value(ta)).replace("tf.", "jf.")
    keep = (np.arange(int(ta.values.shape[0])) % 2 == 0)
    _same(jf.sparse.retain(a, keep), tf.sparse.retain(ta, keep))
    for axis in (0, 1, -1, 2):
        _same(jf.sparse.expand_dims(a, axis), tf.sparse.expand_dims(ta, axis))
    holes = make((6, 3))
    holes[[1, 4]] = 0
    h, th = _pair(holes)
    (ours, ours_empty), (theirs, theirs_empty) = jf.sparse.fill_empty_rows(h, -7.0), tf.sparse.fill_empty_rows(th, -7.0)
    _same(ours, theirs)
    np.testing.assert_array_equal(ours_empty.numpy(), theirs_empty.numpy())
    _same(jf.sparse.map_values(jf.multiply, a, 3.0), tf.sparse.map_values(tf.multiply, ta, 3.0))
    _same(jf.sparse.map_values(jf.add, a, a), tf.sparse.map_values(tf.add, ta, ta))


def test_gradients_match_tf(operands):
    make, rng = operands
    dense = make((3, 4))
    a, ta = _pair(dense)
    w = rng.standard_normal((4, 2)).astype(np.float32)
    jv, jw = jf.Variable(a.values), jf.Variable(w)
    tv, tw = tf.Variable(ta.values), tf.Variable(w)
    with jf.GradientTape() as jtape:
        js = jf.sparse.SparseTensor(a.indices, jv, a.dense_shape)
        jl = jf.reduce_sum(jf.sparse.sparse_dense_matmul(js, jw) ** 2) + jf.reduce_sum(jf.sparse.to_dense(js) ** 2)
    with tf.GradientTape() as ttape:
        ts = tf.sparse.SparseTensor(ta.indices, tv, ta.dense_shape)
        tl = tf.reduce_sum(tf.sparse.sparse_dense_matmul(ts, tw) ** 2) + tf.reduce_sum(tf.sparse.to_dense(ts) ** 2)
    for ours, theirs in zip(jtape.gradient(jl, [jv, jw]), ttape.gradient(tl, [tv, tw])):
        np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-5)


def test_datasets_of_sparse_elements_match_tf():
    def build(mod):
        st = mod.sparse.SparseTensor([[0, 1], [2, 3], [3, 0]], [1.0, 2.0, 3.0], [4, 4])
        return mod.data.Dataset.from_tensor_slices(st)

    ours, theirs = build(jf), build(tf)
    assert repr(ours.element_spec) == repr(theirs.element_spec).replace("tf.", "jf.")
    for o, t in zip(ours.batch(3), theirs.batch(3)):
        _same(o, t)
    for o, t in zip(ours.batch(3).unbatch(), theirs.batch(3).unbatch()):
        _same(o, t)
    assert repr(ours.batch(3, drop_remainder=True).element_spec) == \
        repr(theirs.batch(3, drop_remainder=True).element_spec).replace("tf.", "jf.")
    for o, t in zip(ours.batch(2).as_numpy_iterator(), theirs.batch(2).as_numpy_iterator()):
        np.testing.assert_array_equal(o, t)  # TF 2.21 gives the dense arrays here


def test_function_retraces_like_tf():
    def run(mod):
        @mod.function
        def f(sp):
            return mod.sparse.reduce_sum(sp)
        f(mod.sparse.SparseTensor([[0, 1]], [1.0], [3, 4]))
        f(mod.sparse.SparseTensor([[0, 1], [1, 1]], [1.0, 2.0], [3, 4]))  # more values: same trace
        f(mod.sparse.SparseTensor([[0, 1, 1]], [1.0], [3, 4, 4]))          # another rank: a new one
        return f.experimental_get_tracing_count()
    assert run(jf) == run(tf) == 2


def test_parse_example_varlen_matches_tf_for_every_dtype(tmp_path):
    path = str(tmp_path / "v.tfrecord")
    with tf.io.TFRecordWriter(path) as w:
        for i in range(6):
            w.write(tf.train.Example(features=tf.train.Features(feature={
                "i": tf.train.Feature(int64_list=tf.train.Int64List(value=list(range(i % 4)))),
                "f": tf.train.Feature(float_list=tf.train.FloatList(value=[0.5] * (3 - i % 3))),
                "s": tf.train.Feature(bytes_list=tf.train.BytesList(value=[b"x"] * (i % 2))),
            })).SerializeToString())
    jdesc = {k: jf.io.VarLenFeature(d) for k, d in (("i", jf.int64), ("f", jf.float32), ("s", jf.string))}
    tdesc = {k: tf.io.VarLenFeature(d) for k, d in (("i", tf.int64), ("f", tf.float32), ("s", tf.string))}
    jbatches = list(jf.data.TFRecordDataset(path).batch(4).map(lambda r: jf.io.parse_example(r, jdesc)))
    tbatches = list(tf.data.TFRecordDataset(path).batch(4).map(lambda r: tf.io.parse_example(r, tdesc)))
    for jb, tb in zip(jbatches, tbatches):
        for k in jdesc:
            for part in ("indices", "values", "dense_shape"):
                np.testing.assert_array_equal(getattr(jb[k], part).numpy(), getattr(tb[k], part).numpy())
    records = list(jf.io.tf_record_iterator(path))
    for r in records:
        jo, to = jf.io.parse_single_example(r, jdesc), tf.io.parse_single_example(r, tdesc)
        for k in ("i", "f"):
            _same(jo[k], to[k])
        assert jo["s"].values.numpy().tolist() == to["s"].values.numpy().tolist()
        np.testing.assert_array_equal(jo["s"].indices.numpy(), to["s"].indices.numpy())


@pytest.mark.parametrize("row_shape", [[6], [4], [None]])
def test_sparse_batch_matches_tf(row_shape):
    def build(m):
        ds = m.data.Dataset.from_generator(lambda: iter([[1, 2, 3], [4, 5], [6, 7, 8, 9], [0, 1]]),
                                           output_signature=m.TensorSpec([None], m.int32))
        return ds.sparse_batch(3, row_shape)
    ours, theirs = build(jf), build(tf)
    assert repr(ours.element_spec) == repr(theirs.element_spec).replace("tf.", "jf.")
    pairs = list(zip(ours, theirs))
    assert len(pairs) == 2
    for o, t in pairs:
        _same(o, t)
    applied = jf.data.Dataset.range(5).map(lambda x: jf.range(x)).apply(
        jf.data.experimental.dense_to_sparse_batch(2, [5]))
    assert [s.dense_shape.numpy().tolist() for s in applied] == [[2, 5], [2, 5], [1, 5]]
