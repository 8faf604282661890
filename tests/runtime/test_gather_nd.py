"""`jf.gather_nd` is one `GatherNd` op (TF's node), with TF's bounds error and a gradient that
scatters back to the gathered positions (repeats add up), in eager mode and in a trace."""
import numpy as np
import pytest

import jitflow as jf


def test_gather_nd_is_one_graph_node():
    f = jf.function(lambda p, i: jf.gather_nd(p, i))
    concrete = f.get_concrete_function(jf.TensorSpec([3, 4], jf.float32), jf.TensorSpec([2, 2], jf.int32))
    assert [n.op for n in concrete.graph.as_graph_def().node].count("GatherNd") == 1
    out = f(np.arange(12, dtype=np.float32).reshape(3, 4), np.int32([[2, 1], [0, 3]]))
    np.testing.assert_array_equal(out.numpy(), [9.0, 3.0])


def test_out_of_bounds_index_names_it():
    with pytest.raises(jf.errors.InvalidArgumentError, match=r"indices\[1\] = \[5\]"):
        jf.gather_nd([1.0, 2.0], [[0], [5]])


@pytest.mark.parametrize("traced", [False, True])
def test_gradient_scatters_back_and_repeats_add_up(traced):
    params = jf.Variable(np.arange(6, dtype=np.float32).reshape(3, 2))

    def loss():
        return jf.reduce_sum(jf.gather_nd(params, [[0], [2], [0]]) * [[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])

    def grad():
        with jf.GradientTape() as tape:
            value = loss()
        return tape.gradient(value, params)

    g = (jf.function(grad) if traced else grad)()
    np.testing.assert_array_equal(g.numpy(), [[6.0, 8.0], [0.0, 0.0], [3.0, 4.0]])
