"""`jf.sparse`: SparseTensor, its ops (against numpy), datasets of sparse elements and
`jf.function` arguments. The same checks against TensorFlow are in test_sparse_tf.py."""
from __future__ import annotations

import numpy as np
import pytest

import jitflow as jf


def _st(indices, values, shape):
    return jf.sparse.SparseTensor(indices, values, shape)


def test_sparse_tensor_attributes_and_repr():
    st = _st([[0, 1], [2, 3]], [1.0, 2.0], [3, 4])
    assert st.indices.dtype == jf.int64 and st.dense_shape.dtype == jf.int64
    assert st.dtype == jf.float32 and st.shape == jf.TensorShape([3, 4]) and st.get_shape().as_list() == [3, 4]
    assert repr(st).startswith("SparseTensor(indices=jf.Tensor(") and "dense_shape=jf.Tensor([3 4]" in repr(st)
    assert jf.SparseTensor is jf.sparse.SparseTensor
    assert repr(jf.SparseTensorSpec([None, 3], jf.int32)) == "SparseTensorSpec(TensorShape([None, 3]), jf.int32)"
    doubled = st.with_values(st.values * 2)
    assert doubled.values.numpy().tolist() == [2.0, 4.0] and doubled.indices is st.indices
    with pytest.raises(ValueError, match="indices has 2 rows but values has 3"):
        _st([[0, 1], [2, 3]], [1.0, 2.0, 3.0], [3, 4])
    with pytest.raises(ValueError, match="indices has 2 columns but dense_shape has 3"):
        _st([[0, 1]], [1.0], [3, 4, 5])


def test_to_dense_from_dense_round_trip_and_validation():
    x = np.array([[0, 3, 0], [4, 0, 5]], np.int32)
    st = jf.sparse.from_dense(x)
    assert st.indices.numpy().tolist() == [[0, 1], [1, 0], [1, 2]] and st.values.numpy().tolist() == [3, 4, 5]
    np.testing.assert_array_equal(jf.sparse.to_dense(st).numpy(), x)
    assert jf.sparse.to_dense(st, default_value=-1).numpy().tolist() == [[-1, 3, -1], [4, -1, 5]]
    words = jf.sparse.from_dense(np.array([[b"", b"a"], [b"b", b""]], dtype=object))
    assert words.values.numpy().tolist() == [b"a", b"b"]
    assert jf.sparse.to_dense(words).numpy().tolist() == [[b"", b"a"], [b"b", b""]]
    unordered = _st([[1, 0], [0, 1]], [1, 2], [2, 2])
    with pytest.raises(jf.errors.InvalidArgumentError, match=r"indices\[1\] = \[0, 1\] is out of order"):
        jf.sparse.to_dense(unordered)
    assert jf.sparse.to_dense(unordered, validate_indices=False).numpy().tolist() == [[0, 2], [1, 0]]
    with pytest.raises(jf.errors.InvalidArgumentError, match="is repeated"):
        jf.sparse.to_dense(_st([[0, 0], [0, 0]], [1, 2], [2, 2]))
    with pytest.raises(jf.errors.InvalidArgumentError, match="out of bounds"):
        jf.sparse.to_dense(_st([[0, 5]], [1], [2, 2]))
    with pytest.raises(TypeError, match="sp_input: expected a jf.sparse.SparseTensor"):
        jf.sparse.to_dense(x)


def _random_sparse(rng, shape, density=0.4):
    dense = rng.integers(1, 9, size=shape).astype(np.float32) * (rng.random(shape) < density)
    return jf.sparse.from_dense(dense), dense


def test_ops_match_numpy():
    rng = np.random.default_rng(0)
    a, da = _random_sparse(rng, (4, 5))
    b, db = _random_sparse(rng, (4, 5))
    np.testing.assert_array_equal(jf.sparse.to_dense(jf.sparse.add(a, b)).numpy(), da + db)
    np.testing.assert_array_equal(jf.sparse.add(a, np.ones((4, 5), np.float32)).numpy(), da + 1)
    np.testing.assert_array_equal(jf.sparse.add(np.ones((4, 5), np.float32), a).numpy(), da + 1)
    np.testing.assert_array_equal(jf.sparse.to_dense(a + b).numpy(), da + db)
    for axis in (None, 0, 1, [0, 1], -1):
        np.testing.assert_allclose(jf.sparse.reduce_sum(a, axis=axis).numpy(),
                                   da.sum(axis=None if axis is None else tuple(np.atleast_1d(axis))))
    assert jf.sparse.reduce_sum(a, axis=1, keepdims=True).shape == (4, 1)
    m = rng.standard_normal((5, 3)).astype(np.float32)
    np.testing.assert_allclose(jf.sparse.sparse_dense_matmul(a, m).numpy(), da @ m, rtol=1e-5)
    np.testing.assert_allclose(jf.sparse.sparse_dense_matmul(a, m.T, adjoint_b=True).numpy(), da @ m, rtol=1e-5)
    np.testing.assert_allclose(jf.sparse.sparse_dense_matmul(a, m[:4], adjoint_a=True).numpy(), da.T @ m[:4],
                               rtol=1e-5)
    left = rng.standard_normal((3, 4)).astype(np.float32)
    np.testing.assert_allclose(jf.sparse.sparse_dense_matmul(left, a).numpy(), left @ da, rtol=1e-5)
    c, dc = _random_sparse(rng, (4, 2))
    np.testing.assert_array_equal(jf.sparse.to_dense(jf.sparse.concat(1, [a, c])).numpy(),
                                  np.concatenate([da, dc], axis=1))
    np.testing.assert_array_equal(jf.sparse.to_dense(jf.sparse.reshape(a, [10, -1])).numpy(), da.reshape(10, 2))
    np.testing.assert_array_equal(jf.sparse.to_dense(jf.sparse.slice(a, [1, 2], [2, 9])).numpy(), da[1:3, 2:])
    np.testing.assert_array_equal(jf.sparse.to_dense(jf.sparse.transpose(a)).numpy(), da.T)
    np.testing.assert_array_equal(jf.sparse.to_dense(a * np.arange(5, dtype=np.float32)).numpy(),
                                  da * np.arange(5))
    with pytest.raises(jf.errors.InvalidArgumentError, match="shapes do not match"):
        jf.sparse.add(a, c)
    with pytest.raises(jf.errors.InvalidArgumentError, match="dimension 0 must be 4"):
        jf.sparse.concat(1, [a, jf.sparse.from_dense(np.ones((3, 2), np.float32))])
    with pytest.raises(jf.errors.InvalidArgumentError, match="20 dense values"):
        jf.sparse.reshape(a, [3, 3])


def test_kernel_edge_cases_keep_dtypes_and_broadcast():
    """Found by comparing with the CUDA kernels: numpy widens int sums, np.conj makes bools int8,
    a copy of a broadcast view can keep zero strides, reshape(-1, 0) is ambiguous."""
    a = _st([[0, 0], [1, 1]], np.array([1, 2], np.int32), [2, 2])
    summed = jf.sparse.add(a, _st([[1, 1]], np.array([3], np.int32), [2, 2]))
    assert summed.values.dtype == jf.int32 and summed.values.numpy().tolist() == [1, 5]
    row = jf.sparse.add(_st([[0, 1], [1, 0]], [1.0, 2.0], [2, 2]), jf.constant([10.0, 20.0]))
    assert row.numpy().tolist() == [[10.0, 21.0], [12.0, 20.0]]
    scalar = jf.sparse.from_dense(jf.constant(3.0))
    assert scalar.indices.shape == [1, 0] and scalar.values.numpy().tolist() == [3.0]
    assert jf.sparse.from_dense(jf.constant(0)).indices.shape == [0, 0]
    flags = _st([[0, 1]], [True], [1, 2])
    prod = jf.sparse.sparse_dense_matmul(flags, jf.constant([[True, False]]), adjoint_b=True)
    assert prod.dtype == jf.bool_ and prod.numpy().tolist() == [[False]]


def test_gradients_through_to_dense_and_matmul():
    values = jf.Variable([1.0, 2.0])
    w = jf.Variable(np.arange(6, dtype=np.float32).reshape(3, 2))
    with jf.GradientTape() as tape:
        st = _st([[0, 1], [1, 2]], values, [2, 3])
        loss = jf.reduce_sum(jf.sparse.sparse_dense_matmul(st, w)) + jf.reduce_sum(jf.sparse.to_dense(st) * 3.0)
    gv, gw = tape.gradient(loss, [values, w])
    # d/dvalues: the row sums of w at the value's column, plus 3; d/dw: A^T @ ones.
    assert gv.numpy().tolist() == [w.numpy()[1].sum() + 3, w.numpy()[2].sum() + 3]
    assert gw.numpy().tolist() == [[0, 0], [1, 1], [2, 2]]


def test_function_takes_sparse_arguments_keyed_by_spec():
    traces = []

    @jf.function
    def total(sp):
        traces.append(sp.shape)
        return jf.sparse.reduce_sum(sp), sp.with_values(sp.values * 2)

    s, doubled = total(_st([[0, 1]], [1.0], [3, 4]))
    assert float(s) == 1.0 and isinstance(doubled, jf.sparse.SparseTensor)
    assert doubled.values.numpy().tolist() == [2.0] and doubled.dense_shape.numpy().tolist() == [3, 4]
    total(_st([[0, 1], [2, 2]], [1.0, 5.0], [3, 4]))  # more values, same dense shape: no retrace (TF's)
    assert len(traces) == 1 and traces[0].as_list() == [3, 4]
    total(_st([[0, 1, 1]], [1.0], [3, 4, 4]))  # another rank: a retrace
    assert len(traces) == 2
    record = total.experimental_get_tracing_count()
    assert record == 2


def test_dataset_of_sparse_elements():
    st = _st([[0, 1], [2, 3]], [1.0, 2.0], [3, 4])
    ds = jf.data.Dataset.from_tensor_slices(st)
    assert repr(ds.element_spec) == "SparseTensorSpec(TensorShape([4]), jf.float32)"
    rows = [(e.indices.numpy().tolist(), e.values.numpy().tolist()) for e in ds]
    assert rows == [([[1]], [1.0]), ([], []), ([[3]], [2.0])]
    batched = ds.batch(2)
    assert repr(batched.element_spec) == "SparseTensorSpec(TensorShape([None, 4]), jf.float32)"
    first = next(iter(batched))
    assert first.indices.numpy().tolist() == [[0, 1]] and first.dense_shape.numpy().tolist() == [2, 4]
    # as_numpy_iterator gives the dense arrays, as TF 2.21's does.
    assert [a.tolist() for a in batched.as_numpy_iterator()] == [[[0, 1, 0, 0], [0, 0, 0, 0]], [[0, 0, 0, 2]]]
    assert [e.dense_shape.numpy().tolist() for e in batched.unbatch()] == [[4], [4], [4]]
    # map functions receive and return SparseTensors; ragged rows batch to the longest.
    ragged = jf.data.Dataset.range(1, 4).map(lambda n: jf.sparse.from_dense(jf.range(n) * 0 + n))
    assert repr(ragged.element_spec) == "SparseTensorSpec(TensorShape([None]), jf.int64)"
    b = next(iter(ragged.batch(3)))
    assert b.dense_shape.numpy().tolist() == [3, 3]
    assert jf.sparse.to_dense(b).numpy().tolist() == [[1, 0, 0], [2, 2, 0], [3, 3, 3]]
    dense = ragged.map(lambda sp: jf.sparse.reduce_sum(sp))
    assert list(dense.as_numpy_iterator()) == [1, 4, 9]
    mixed = jf.data.Dataset.zip((jf.data.Dataset.range(3), ragged)).shuffle(3, seed=1).batch(3)
    ids, sp = next(iter(mixed))
    np.testing.assert_array_equal(jf.sparse.reduce_sum(sp, axis=1).numpy(), (ids.numpy() + 1) ** 2)
    with pytest.raises(TypeError, match="padded_batch: SparseTensor components cannot be padded"):
        ragged.padded_batch(2)


def test_parse_example_varlen_in_a_pipeline(tmp_path):
    path = str(tmp_path / "tags.tfrecord")
    with jf.io.TFRecordWriter(path) as w:
        for i in range(5):
            w.write(jf.train.Example(features=jf.train.Features(feature={
                "tags": jf.train.Feature(bytes_list=jf.train.BytesList(value=[b"t%d" % j for j in range(i)]))}))
                .SerializeToString())
    desc = {"tags": jf.io.VarLenFeature(jf.string)}
    ds = jf.data.TFRecordDataset(path).map(lambda r: jf.io.parse_single_example(r, desc)).batch(2)
    assert repr(ds.element_spec["tags"]) == "SparseTensorSpec(TensorShape([None, None]), jf.string)"
    batches = list(ds)
    assert [b["tags"].dense_shape.numpy().tolist() for b in batches] == [[2, 1], [2, 3], [1, 4]]
    assert batches[1]["tags"].values.numpy().tolist() == [b"t0", b"t1", b"t0", b"t1", b"t2"]
    assert batches[1]["tags"].indices.numpy().tolist() == [[0, 0], [0, 1], [1, 0], [1, 1], [1, 2]]


def test_sparse_input_signature_generator_and_graph_loop():
    traces = []

    @jf.function(input_signature=[jf.SparseTensorSpec([None, 3], jf.float32)])
    def rows(sp):
        traces.append(sp.shape.as_list())
        return jf.sparse.reduce_sum(sp, axis=1)

    assert rows(_st([[0, 1], [1, 2]], [1.0, 2.0], [2, 3])).numpy().tolist() == [1.0, 2.0]
    assert rows(_st([[3, 1]], [5.0], [4, 3])).numpy().tolist() == [0.0, 0.0, 0.0, 5.0]
    assert traces == [[None, 3]]
    assert rows.get_concrete_function().structured_input_signature[0][0] == jf.SparseTensorSpec([None, 3], jf.float32)
    with pytest.raises(jf.errors.InputSignatureError, match="expected a value of SparseTensorSpec"):
        rows(_st([[0, 1]], [5.0], [4, 4]))

    def gen():
        for n in range(1, 4):
            yield jf.sparse.SparseTensorValue([[i] for i in range(n)], [float(n)] * n, [n])
    ds = jf.data.Dataset.from_generator(gen, output_signature=jf.SparseTensorSpec([None], jf.float32))
    assert [float(jf.sparse.reduce_sum(s)) for s in ds] == [1.0, 4.0, 9.0]

    @jf.function
    def total():
        acc = jf.constant(0.0)
        for sp in ds:  # AutoGraph: a graph loop over the sparse elements
            acc += jf.sparse.reduce_sum(sp)
        return acc
    assert float(total()) == 14.0


def test_sparse_retrace_reason_and_reduce_retracing():
    from jitflow.runtime.tracing import trace_records

    @jf.function
    def total(sp):
        return jf.sparse.reduce_sum(sp)

    total(_st([[0, 1]], [1.0], [3, 4]))
    total(_st([[0, 1]], [1.0], [5, 4]))
    last = trace_records.records()[-1]
    assert [str(c) for c in last.changes] == ["arg 'sp': shape (3, 4) → (5, 4)"]

    @jf.function(reduce_retracing=True)
    def relaxed(sp):
        return jf.sparse.reduce_sum(sp)

    for n in (3, 5, 7, 9):
        relaxed(_st([[0, 1]], [1.0], [n, 4]))
    assert relaxed.experimental_get_tracing_count() == 2  # the second trace is relaxed to [None, 4]
    cf = relaxed.get_concrete_function(_st([[0, 1]], [1.0], [11, 4]))
    assert cf.structured_input_signature[0][0] == jf.SparseTensorSpec([None, 4], jf.float32)


def test_sparse_tensors_in_cond_and_while_loop():
    @jf.function
    def doubled_if(sp, flag):
        out = jf.cond(flag, lambda: sp.with_values(sp.values * 2), lambda: sp)
        return jf.sparse.to_dense(out)

    st = _st([[0, 1]], [3.0], [2, 2])
    assert doubled_if(st, jf.constant(True)).numpy().tolist() == [[0.0, 6.0], [0.0, 0.0]]
    assert doubled_if(st, jf.constant(False)).numpy().tolist() == [[0.0, 3.0], [0.0, 0.0]]

    @jf.function
    def add_three(sp):
        _, out = jf.while_loop(lambda i, s: i < 3, lambda i, s: (i + 1, s.with_values(s.values + 1.0)),
                               [jf.constant(0), sp])
        return out

    result = add_three(st)
    assert isinstance(result, jf.sparse.SparseTensor) and result.values.numpy().tolist() == [6.0]


def test_sparse_batch_of_variable_length_rows():
    rows = jf.data.Dataset.range(1, 5).map(lambda n: jf.range(n) * 0 + n)
    ds = rows.sparse_batch(3, [4])
    assert repr(ds.element_spec) == "SparseTensorSpec(TensorShape([None, 4]), jf.int64)"
    assert int(ds.cardinality()) == 2
    first = next(iter(ds))
    assert first.dense_shape.numpy().tolist() == [3, 4]
    assert jf.sparse.to_dense(first).numpy().tolist() == [[1, 0, 0, 0], [2, 2, 0, 0], [3, 3, 3, 0]]
    with pytest.raises(jf.errors.InvalidArgumentError, match=r"shape \[4\] does not fit row_shape \[3\]"):
        list(rows.sparse_batch(4, [3]))
    with pytest.raises(TypeError, match="sparse_batch: the elements must be single dense tensors"):
        jf.data.Dataset.zip((rows, rows)).sparse_batch(2, [4])
