"""`jf.TensorArray` eagerly (a list changed in place) and in graphs (a value carried by loops)."""
from __future__ import annotations

import numpy as np
import pytest

import jitflow as jf


# -- eager ---------------------------------------------------------------------------------------
def test_eager_write_read_stack_size_in_place():
    ta = jf.TensorArray(jf.float32, size=3)
    assert ta.write(0, 1.0) is ta  # eager writes change the array and return it
    ta.write(2, jf.constant(3.0))
    assert ta.size().numpy() == 3 and ta.size().dtype is jf.int32
    np.testing.assert_array_equal(ta.stack().numpy(), [1.0, 0.0, 3.0])  # never written: zeros
    assert ta.read(2).numpy() == 3.0


def test_eager_clear_after_read():
    ta = jf.TensorArray(jf.float32, size=1).write(0, 5.0)
    assert ta.read(0).numpy() == 5.0
    with pytest.raises(jf.errors.InvalidArgumentError, match="twice"):
        ta.read(0)
    keep = jf.TensorArray(jf.float32, size=1, clear_after_read=False).write(0, 5.0)
    assert keep.read(0).numpy() == keep.read(0).numpy() == 5.0


def test_eager_bounds_dtype_and_shape_checks():
    ta = jf.TensorArray(jf.float32, size=2)
    with pytest.raises(jf.errors.OutOfRangeError, match="not resizeable"):
        ta.write(2, 1.0)
    with pytest.raises(jf.errors.OutOfRangeError):
        ta.read(5)
    with pytest.raises(jf.errors.InvalidArgumentError, match="dtype"):
        ta.write(0, jf.constant(1))
    ta.write(0, [1.0, 2.0])
    with pytest.raises(ValueError, match="inconsistent element shapes"):
        ta.write(1, [1.0, 2.0, 3.0])
    assert ta.element_shape == jf.TensorShape([2])


def test_eager_dynamic_size_grows():
    ta = jf.TensorArray(jf.int32, size=0, dynamic_size=True)
    for i in range(4):
        ta = ta.write(i, i * i)
    np.testing.assert_array_equal(ta.stack().numpy(), [0, 1, 4, 9])
    ta.write(6, 36)
    assert ta.size().numpy() == 7


def test_eager_unstack_gather_scatter_split_concat():
    value = np.arange(12, dtype=np.float32).reshape(3, 2, 2)
    ta = jf.TensorArray(jf.float32, size=3, clear_after_read=False).unstack(value)
    np.testing.assert_array_equal(ta.gather([2, 0]).numpy(), value[[2, 0]])
    ta.scatter([2, 1, 0], value)
    np.testing.assert_array_equal(ta.stack().numpy(), value[::-1])
    np.testing.assert_array_equal(ta.concat().numpy(), value[::-1].reshape(6, 2))
    ragged = jf.TensorArray(jf.float32, size=3, infer_shape=False)
    ragged.split(np.arange(10, dtype=np.float32).reshape(5, 2), [1, 2, 2])
    assert [ragged.read(i).shape for i in range(3)] == [(1, 2), (2, 2), (2, 2)]
    with pytest.raises(jf.errors.InvalidArgumentError, match="sum of lengths"):
        ragged.split(np.zeros((5, 2), np.float32), [1, 1, 1])


# -- graphs ---------------------------------------------------------------------------------------
def test_write_and_read_in_a_function_handbook_example():
    @jf.function
    def array_write_and_read():
        arr = jf.TensorArray(dtype=jf.float32, size=3)
        arr = arr.write(0, jf.constant(0.0))
        arr = arr.write(1, jf.constant(1.0))
        arr = arr.write(2, jf.constant(2.0))
        return arr.read(0), arr.read(1), arr.read(2)

    assert [t.numpy() for t in array_write_and_read()] == [0.0, 1.0, 2.0]


def test_for_loop_writes_are_one_while_node():
    @jf.function
    def squares(n):
        ta = jf.TensorArray(jf.float32, size=n)
        for i in jf.range(n):
            ta = ta.write(i, jf.cast(i * i, jf.float32))
        return ta.stack()

    np.testing.assert_array_equal(squares(jf.constant(5)).numpy(), [0, 1, 4, 9, 16])
    np.testing.assert_array_equal(squares(jf.constant(2)).numpy(), [0, 1])
    assert squares.tracing_count == 1
    types = [n.type for n in squares.get_concrete_function(jf.constant(1)).graph.nodes]
    assert types.count("While") == 1


def test_dynamic_size_grows_inside_a_loop_with_unknown_element_shape():
    @jf.function
    def rows(x):
        ta = jf.TensorArray(jf.float32, size=0, dynamic_size=True)
        for i in jf.range(jf.shape(x)[0]):
            ta = ta.write(i, x[i] * 2.0)
        return ta.stack(), ta.size()

    x = np.arange(6, dtype=np.float32).reshape(3, 2)
    stacked, size = rows(jf.constant(x))
    np.testing.assert_array_equal(stacked.numpy(), x * 2)
    assert size.numpy() == 3
    out = rows.get_concrete_function(jf.constant(x)).graph.outputs[0]
    assert out.shape.as_list() == [None, 2]  # the loop relaxed the growing dimension


def test_read_inside_a_loop_prefix_sums():
    @jf.function
    def cumsum(x):
        inputs = jf.TensorArray(jf.float32, size=jf.shape(x)[0]).unstack(x)
        out = jf.TensorArray(jf.float32, size=jf.shape(x)[0], element_shape=[])
        total = jf.constant(0.0)
        for i in jf.range(jf.shape(x)[0]):
            total += inputs.read(i)
            out = out.write(i, total)
        return out.stack()

    np.testing.assert_allclose(cumsum(jf.constant([1.0, 2.0, 3.0, 4.0])).numpy(), [1, 3, 6, 10])


def test_while_loop_with_a_tensor_array_loop_variable():
    @jf.function
    def fib(n):
        ta = jf.TensorArray(jf.int32, size=0, dynamic_size=True, element_shape=[])
        ta = ta.write(0, 0).write(1, 1)

        def body(i, ta):
            return i + 1, ta.write(i, ta.read(i - 1) + ta.read(i - 2))
        _, ta = jf.while_loop(lambda i, ta: i < n, body, [jf.constant(2), ta])
        return ta.stack()

    np.testing.assert_array_equal(fib(jf.constant(8)).numpy(), [0, 1, 1, 2, 3, 5, 8, 13])


def test_tensor_array_through_a_tensor_if():
    @jf.function
    def f(flag):
        ta = jf.TensorArray(jf.float32, size=2, element_shape=[])
        if flag > 0:
            ta = ta.write(0, 1.0)
        else:
            ta = ta.write(1, 2.0)
        return ta.stack()

    np.testing.assert_array_equal(f(jf.constant(1)).numpy(), [1.0, 0.0])
    np.testing.assert_array_equal(f(jf.constant(-1)).numpy(), [0.0, 2.0])

    @jf.function
    def one_branch(flag):
        ta = jf.TensorArray(jf.float32, size=2)  # element shape unknown until the write
        if flag > 0:
            ta = ta.write(1, [5.0, 6.0])
        return ta.stack()

    np.testing.assert_array_equal(one_branch(jf.constant(1)).numpy(), [[0.0, 0.0], [5.0, 6.0]])
    np.testing.assert_array_equal(one_branch(jf.constant(0)).numpy(), np.zeros((2, 2)))


def test_cond_returns_tensor_arrays():
    @jf.function
    def f(flag):
        ta = jf.TensorArray(jf.float32, size=1, element_shape=[2])
        ta = jf.cond(flag, lambda: ta.write(0, [1.0, 2.0]), lambda: ta.write(0, [3.0, 4.0]))
        return ta.read(0)

    np.testing.assert_array_equal(f(jf.constant(True)).numpy(), [1.0, 2.0])
    np.testing.assert_array_equal(f(jf.constant(False)).numpy(), [3.0, 4.0])


def test_graph_gather_scatter_split_concat_unstack():
    @jf.function
    def f(x):
        ta = jf.TensorArray(jf.float32, size=3).unstack(x)
        a = ta.gather([2, 0])
        ta = ta.scatter([0, 2], jf.stack([x[2], x[0]]))
        pieces = jf.TensorArray(jf.float32, size=2).split(jf.reshape(x, [6]), [3, 3])
        return a, ta.stack(), ta.concat(), pieces.read(1)

    x = np.arange(6, dtype=np.float32).reshape(3, 2)
    a, stacked, cat, piece = f(jf.constant(x))
    np.testing.assert_array_equal(a.numpy(), x[[2, 0]])
    np.testing.assert_array_equal(stacked.numpy(), x[[2, 1, 0]])
    np.testing.assert_array_equal(cat.numpy(), x[[2, 1, 0]].reshape(6))
    np.testing.assert_array_equal(piece.numpy(), [3.0, 4.0, 5.0])


def test_graph_errors_explain_the_rule():
    @jf.function
    def never_written(n):
        ta = jf.TensorArray(jf.float32, size=n)
        for i in jf.range(n):
            ta.write(i, 1.0)  # not assigned: the loop never sees the write
        return ta.stack()

    with pytest.raises(ValueError, match="ta = ta.write"):
        never_written(jf.constant(2))

    @jf.function
    def ragged():
        return jf.TensorArray(jf.float32, size=3).split(jf.zeros([5]), [1, 2, 2]).read(0)

    with pytest.raises(ValueError, match="equal"):
        ragged()

    @jf.function
    def out_of_range():
        return jf.TensorArray(jf.float32, size=2).write(3, 1.0).stack()

    with pytest.raises(jf.errors.InvalidArgumentError, match=r"not in \[0, 2\)"):
        out_of_range()

    @jf.function
    def body_never_writes(n):
        ta = jf.TensorArray(jf.float32, size=n)
        return jf.while_loop(lambda i, ta: i < n, lambda i, ta: (i + 1, ta), [0, ta])[0]

    with pytest.raises(ValueError, match="does not write to it"):
        body_never_writes(jf.constant(2))

    eager = jf.TensorArray(jf.float32, size=1)
    with pytest.raises(ValueError, match="created eagerly"):
        jf.function(lambda: eager.write(0, 1.0).stack())()


def test_gradients_flow_through_writes_and_reads():
    x = jf.Variable([1.0, 2.0])

    @jf.function
    def traced():
        with jf.GradientTape() as tape:
            ta = jf.TensorArray(jf.float32, size=2)
            ta = ta.write(0, x * 2.0).write(1, x * x)
            loss = jf.reduce_sum(ta.stack()) + jf.reduce_sum(ta.read(0))
        return tape.gradient(loss, x)

    with jf.GradientTape() as tape:
        ta = jf.TensorArray(jf.float32, size=2, clear_after_read=False)
        ta = ta.write(0, x * 2.0).write(1, x * x)
        loss = jf.reduce_sum(ta.stack()) + jf.reduce_sum(ta.read(0))
    want = [4.0 + 2.0, 4.0 + 4.0]  # d/dx (2x + x² + 2x)
    np.testing.assert_allclose(tape.gradient(loss, x).numpy(), want)
    np.testing.assert_allclose(traced().numpy(), want)
