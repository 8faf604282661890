"""The TF 2 API gaps of issue #17, each checked for its behaviour in jitflow (the outputs are
compared with TensorFlow's in tests/tf_api/, snippet names in the comments)."""
import warnings

import numpy as np
import pytest

import jitflow as jf
from jitflow.runtime.tracing.trace_types import TraceType


def test_recursion_by_name_without_new_object_warning():  # function/recursion
    @jf.function
    def fact(n):
        if n <= 1:
            return 1
        return n * fact(n - 1)

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert int(fact(5)) == 120
    assert not any("separate jf.function objects" in str(w.message) for w in caught)


def test_run_functions_eagerly_bypasses_traces_and_the_direct_path():  # function/run_eagerly
    seen = []

    @jf.function
    def f(x):
        seen.append(jf.executing_eagerly())
        return x * 2.0

    x = jf.constant(1.0)
    for _ in range(3):
        f(x)  # traced once, then served by the direct path
    assert seen == [False]
    jf.config.run_functions_eagerly(True)
    try:
        assert jf.config.functions_run_eagerly()
        assert float(f(x)) == 2.0
        assert seen == [False, True]
    finally:
        jf.config.run_functions_eagerly(False)
    f(x)
    assert seen == [False, True] and not jf.config.functions_run_eagerly()
    with pytest.raises(TypeError, match="run_eagerly"):
        jf.config.run_functions_eagerly(1)


def test_py_function_decorator_runs_python_inside_a_graph():  # function/py_function_decorator
    calls = []

    @jf.py_function(Tout=jf.float32)
    def double(x):
        calls.append(x.numpy())
        return x * 2

    f = jf.function(lambda x: double(x) + 1.0)
    assert float(f(jf.constant(2.0))) == 5.0 and float(f(jf.constant(3.0))) == 7.0
    assert calls == [2.0, 3.0]
    with pytest.raises(TypeError, match="Tout"):
        jf.py_function(lambda x: x)


def test_jacobian_of_a_matrix_target_and_batch_jacobian():  # autodiff/jacobian_*, batch_jacobian
    w = jf.Variable(np.arange(6.0).reshape(2, 3))
    x = jf.constant(np.ones((4, 2)))
    with jf.GradientTape(persistent=True) as tape:
        y = jf.matmul(x, w)           # [4, 3]
        z = w * w
    j = tape.jacobian(y, w)
    assert j.shape == (4, 3, 2, 3)
    np.testing.assert_allclose(j.numpy()[1, 2, :, 2], [1.0, 1.0])
    np.testing.assert_allclose(j.numpy()[1, 2, :, 0], [0.0, 0.0])
    bj = tape.batch_jacobian(z, w)    # [2, 3, 3]: d z[b, i] / d w[b, j]
    np.testing.assert_allclose(bj.numpy(), np.stack([np.diag(2 * r) for r in np.arange(6.0).reshape(2, 3)]))
    unconnected = jf.Variable([1.0])
    assert tape.jacobian(y, unconnected) is None
    assert tape.jacobian(y, unconnected, unconnected_gradients=jf.UnconnectedGradients.ZERO).shape == (4, 3, 1)


def test_jacobian_inside_a_function_matches_eager():
    v = jf.Variable([1.0, 2.0, 3.0])

    @jf.function
    def jac():
        with jf.GradientTape() as tape:
            y = jf.math.cumsum(v * v)
        return tape.jacobian(y, v)

    with jf.GradientTape() as tape:
        y = jf.math.cumsum(v * v)
    np.testing.assert_allclose(jac().numpy(), tape.jacobian(y, v).numpy())


def test_gradient_of_a_variable_with_respect_to_itself_is_one():  # autodiff/var_wrt_itself
    v = jf.Variable([2.0, 3.0])
    with jf.GradientTape() as tape:
        r = v
    assert tape.gradient(r, v).numpy().tolist() == [1.0, 1.0]


def test_custom_gradient_with_variables():
    v = jf.Variable(3.0)

    @jf.custom_gradient
    def scaled(x):
        def grad(dy, variables=None):
            return dy * 10.0, [dy * 100.0]
        return x * v, grad

    x = jf.constant(2.0)
    with jf.GradientTape() as tape:
        tape.watch(x)
        y = scaled(x)
    gx, gv = tape.gradient(y, [x, v])
    assert float(y) == 6.0 and float(gx) == 10.0 and float(gv) == 100.0


def test_custom_gradient_must_return_a_pair():
    @jf.custom_gradient
    def bad(x):
        return x

    with pytest.raises(TypeError, match="grad_fn"):
        bad(jf.constant(1.0))


def test_unconnected_gradients_enum_and_bad_value():  # autodiff/unconnected_zero
    x = jf.Variable([2.0, 2.0])
    y = jf.Variable(3.0)
    with jf.GradientTape(persistent=True) as tape:
        z = y * y
    assert tape.gradient(z, x, unconnected_gradients=jf.UnconnectedGradients.ZERO).numpy().tolist() == [0.0, 0.0]
    assert tape.gradient(z, x, unconnected_gradients="none") is None
    with pytest.raises(ValueError, match="unconnected_gradients"):
        tape.gradient(z, x, unconnected_gradients="zeros")


def test_variable_options():  # variable/aggregation, variable/shape_none, variable/class_name
    v = jf.Variable(1.0, aggregation=jf.VariableAggregation.MEAN,
                    synchronization=jf.VariableSynchronization.ON_READ)
    assert type(v).__name__ == "ResourceVariable" and isinstance(v, jf.Variable)
    assert v.aggregation is jf.VariableAggregation.MEAN and v.synchronization is jf.VariableSynchronization.ON_READ
    with pytest.raises(ValueError, match="aggregation"):
        jf.Variable(1.0, aggregation="sum")
    with pytest.raises(ValueError, match="constraint"):
        jf.Variable(1.0, constraint=3)
    u = jf.Variable([1.0], shape=jf.TensorShape(None))
    u.assign([1.0, 2.0])
    assert u.shape.rank is None and u.numpy().tolist() == [1.0, 2.0]
    fixed = jf.Variable([1.0])
    with pytest.raises(Exception, match="shape"):
        fixed.assign([1.0, 2.0])


def test_concrete_function_introspection():  # function/as_graph_def, function_type, pretty_signatures
    @jf.function
    def f(a, b=2):
        return {"y": a * 2.0}

    cf = f.get_concrete_function(jf.TensorSpec([None, 2], jf.float32))
    assert [n.op for n in cf.graph.as_graph_def().node] == ["Placeholder", "Const", "Mul"]
    assert list(cf.function_type.parameters) == ["a", "b"]
    assert repr(cf.function_type.parameters["b"].annotation) == "Literal[2]"
    assert cf.inference_fn is cf
    text = str(cf)
    assert text.startswith("ConcreteFunction Input Parameters:\n"
                           "  a (POSITIONAL_OR_KEYWORD): TensorSpec(shape=(None, 2)")
    assert "Output Type:\n  Dict[['y', TensorSpec(shape=(None, 2), dtype=jf.float32, name=None)]]" in text
    assert "Captures:\n  None" in text
    assert f.pretty_printed_concrete_signatures() == cf.pretty_printed_signature()


def test_trace_type_protocol_keys_arguments():  # types/trace_type
    class Kind(TraceType):
        def __init__(self, k):
            self.k = k

        def is_subtype_of(self, other):
            return self == other

        def most_specific_common_supertype(self, others):
            return self if all(self == o for o in others) else None

        def placeholder_value(self, placeholder_context=None):
            return self.k

        def __eq__(self, other):
            return isinstance(other, Kind) and other.k == self.k

        def __hash__(self):
            return hash(self.k)

    class Fruit:
        def __init__(self, k):
            self.k = k

        def __tf_tracing_type__(self, context):
            return Kind(self.k)

    f = jf.function(lambda fruit, x: x + 1)
    f(Fruit("apple"), jf.constant(1))
    f(Fruit("apple"), jf.constant(1))  # a new object with an equal trace type: no retrace
    f(Fruit("pear"), jf.constant(1))
    assert f.experimental_get_tracing_count() == 2
    assert jf.types.experimental.TraceType is TraceType


def test_jf_test_helpers():  # test/testcase, test/is_gpu_available
    class T(jf.test.TestCase):
        def test_ok(self):
            self.assertAllClose(jf.constant([1.0, 2.0]), [1.0, 2.0])
            self.assertAllEqual(self.evaluate({"a": jf.constant([1])})["a"], [1])
            self.assertAllInRange(jf.constant([0.5]), 0.0, 1.0)

        def test_fails(self):
            self.assertAllEqual(jf.constant([1, 2]), [1, 3])

    import io
    import unittest
    result = unittest.TextTestRunner(stream=io.StringIO()).run(unittest.defaultTestLoader.loadTestsFromTestCase(T))
    assert result.testsRun == 2 and len(result.failures) == 1
    assert jf.test.is_gpu_available() is False or jf.test.gpu_device_name() == "/device:GPU:0"
