"""jf.function mechanics: cache keys, retrace reasons, trace records, concrete functions."""
import re
import warnings

import numpy as np
import pytest

import jitflow as jf
from jitflow.runtime.core.tensor import SymbolicTensor
from jitflow.runtime.tracing import trace_records


@pytest.fixture
def records():
    """Trace records published while the test runs."""
    got = []
    unsubscribe = jf.trace_records.subscribe(got.append)
    yield got
    unsubscribe()


def test_first_call_record_has_source_call_site_and_timing(records):
    @jf.function
    def f(x):
        return x + 1

    f(jf.constant(1))
    (rec,) = records
    assert rec.reason_kind == trace_records.FIRST_CALL
    assert rec.reason == "first call"
    assert rec.function.endswith("f")
    first_line = test_first_call_record_has_source_call_site_and_timing.__code__.co_firstlineno
    assert rec.source.endswith("test_function.py:" + str(first_line + 1))
    assert "test_function.py" in rec.call_site and "test_first_call_record" in rec.call_site
    assert rec.trace_number == 1 and rec.trace_seconds > 0
    assert rec.num_nodes >= 3
    assert rec.to_dict()["reason"] == "first call"


def test_python_int_change_is_named_with_old_and_new_value(records):
    @jf.function
    def train(num_steps):
        return jf.constant(num_steps)

    train(num_steps=10)
    train(num_steps=20)
    assert [r.reason for r in records] == ["first call", "arg 'num_steps': Python int 10 → 20"]
    assert "tensor" in records[1].advice and "input_signature" in records[1].advice


def test_dtype_and_shape_changes_are_named(records):
    @jf.function
    def f(x):
        return x

    f(jf.constant([[1, 2, 3], [4, 5, 6]]))
    f(jf.constant([[1.0, 2, 3], [4, 5, 6]]))
    f(jf.zeros([2, 6]))
    assert records[1].reason == "arg 'x': dtype int32 → float32"
    assert records[2].reason == "arg 'x': shape (2, 3) → (2, 6)"
    assert "reduce_retracing" in records[2].advice


def test_new_object_is_named_by_type_and_address(records):
    class Person:
        def __init__(self, age):
            self.age = age

    @jf.function
    def f(p):
        return jf.constant(p.age)

    a, b = Person(1), Person(2)
    f(a)
    f(a)
    f(b)
    assert len(records) == 2
    assert re.fullmatch(r"arg 'p': new object <Person at 0x[0-9a-f]+>", records[1].reason)
    assert hex(id(b)) in records[1].reason
    assert "reuse" in records[1].advice


def test_nested_argument_paths(records):
    @jf.function
    def f(pair, cfg):
        return pair[0] * cfg["scale"]

    f([jf.constant(1.0), jf.constant(2.0)], {"scale": 2.0})
    f([jf.constant(1.0), jf.constant([2.0])], {"scale": 2.0})
    f([jf.constant(1.0), jf.constant([2.0])], {"scale": 3.0})
    assert records[1].reason == "arg 'pair'[1]: shape () → (1,)"
    assert records[2].reason == "arg 'cfg'['scale']: Python float 2.0 → 3.0"


def test_closest_trace_is_used_for_the_reason(records):
    @jf.function
    def f(x, n):
        return x * n

    f(jf.constant(1.0), 1)
    f(jf.constant([1.0, 2.0]), 2)
    f(jf.constant([1.0, 2.0]), 3)  # differs from the second trace only in n
    assert records[2].reason == "arg 'n': Python int 2 → 3"


def test_numpy_arrays_key_by_dtype_and_shape_like_tensors():
    calls = []

    @jf.function
    def f(x):
        calls.append(1)
        return x * 2

    np.testing.assert_array_equal(f(np.array([1, 2], np.int32)).numpy(), [2, 4])
    np.testing.assert_array_equal(f(jf.constant([3, 4])).numpy(), [6, 8])
    assert len(calls) == 1


def test_keyword_and_default_arguments_bind_like_positional():
    @jf.function
    def f(x, scale=2.0):
        return x * scale

    f(jf.constant(1.0))
    f(x=jf.constant(2.0))
    f(jf.constant(3.0), 2.0)
    assert f.tracing_count == 1
    f(jf.constant(3.0), scale=3.0)
    assert f.tracing_count == 2


def test_retrace_warning_names_function_and_reason():
    @jf.function
    def step(lr):
        return jf.constant(lr) * 2

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for i in range(7):
            step(float(i))
    retrace = [w for w in caught if issubclass(w.category, jf.RetraceWarning)]
    assert len(retrace) == 1  # warned once, not on every later retrace
    text = str(retrace[0].message)
    assert "step" in text and "arg 'lr'" in text and "Python value" in text
    assert "tensor" in text


def test_no_warning_when_traces_are_spread_out():
    @jf.function
    def f(x):
        return x

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for i in range(4):
            f(i)
        for _ in range(20):
            f(0)
        f(99)
    assert not [w for w in caught if issubclass(w.category, jf.RetraceWarning)]


def test_function_created_in_a_loop_is_detected(records):
    def body(x):
        return x + 1

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(6):
            jf.function(body)(jf.constant(1))
    kinds = [r.reason_kind for r in records]
    assert kinds[0] == trace_records.FIRST_CALL
    assert kinds[1:] == [trace_records.NEW_FUNCTION_OBJECT] * 5
    assert "Define the jf.function once" in records[1].advice
    assert any("separate jf.function objects" in str(w.message) for w in caught)


def test_reduce_retracing_generalises_shapes():
    @jf.function(reduce_retracing=True)
    def f(x):
        return jf.reduce_sum(x)

    f(jf.ones([2]))
    f(jf.ones([3]))
    f(jf.ones([7]))
    assert f.tracing_count == 2
    shapes = [cf.inputs[0].shape for cf in f.list_concrete_functions()]
    assert shapes == [jf.TensorShape([2]), jf.TensorShape([None])]
    assert f(jf.ones([11])).numpy() == 11.0


def test_input_signature_with_none_dimension_traces_once():
    @jf.function(input_signature=[jf.TensorSpec([None, 2], jf.float32)])
    def f(x):
        return jf.reduce_sum(x, axis=1)

    assert f(jf.ones([3, 2])).shape == (3,)
    assert f(np.ones([5, 2], np.float32)).shape == (5,)
    assert f.tracing_count == 1
    with pytest.raises(TypeError, match=r"argument 'x' expected TensorSpec\(shape=\(None, 2\)"):
        f(jf.ones([3, 3]))


def test_concrete_function_api():
    @jf.function
    def scale(x, factor):
        return {"y": x * factor, "factor": factor}

    cf = scale.get_concrete_function(jf.TensorSpec([None], jf.float32, name="x"), 3.0)
    assert cf.structured_input_signature == ((jf.TensorSpec([None], jf.float32, "x"), 3.0), {})
    out = cf(jf.constant([1.0, 2.0]))
    np.testing.assert_allclose(out["y"].numpy(), [3.0, 6.0])
    assert out["factor"].numpy() == 3.0
    assert isinstance(cf.structured_outputs["y"], SymbolicTensor)
    assert scale.list_concrete_functions() == [cf]
    with pytest.raises(TypeError, match="takes 1 tensor argument"):
        cf(jf.constant([1.0]), jf.constant([2.0]))
    with pytest.raises(jf.errors.InvalidArgumentError, match="dtype"):
        cf(jf.constant([1, 2]))
    with pytest.raises(TypeError, match="unexpected keyword argument 'z'"):
        cf(z=jf.constant([1.0]))


def test_graph_prints_one_line_per_node():
    @jf.function
    def f(a, b):
        return jf.reduce_sum(jf.tanh(a * b + 1.0))

    graph = f.get_concrete_function(jf.TensorSpec([3]), jf.TensorSpec([3])).graph
    text = str(graph)
    assert text.splitlines()[0] == "graph f(a:0: (3,) float32, b:0: (3,) float32)"
    assert "mul = Mul(a:0, b:0) -> (3,) float32" in text
    assert "Tanh = Tanh(add:0) -> (3,) float32" in text
    assert text.splitlines()[-1] == "  return Sum:0"
    assert [n.type for n in graph.nodes] == ["Placeholder", "Placeholder", "Mul", "Const", "AddV2", "Tanh", "Sum"]


def test_functions_call_functions_through_a_call_node():
    @jf.function
    def inner(x):
        return x * 2

    @jf.function
    def outer(x):
        return inner(x) + 1

    assert outer(jf.constant(3)).numpy() == 7
    graph = outer.get_concrete_function(jf.constant(3)).graph
    call = [n for n in graph.nodes if n.type == "StatefulPartitionedCall"]
    assert len(call) == 1 and call[0].attrs["f"].function is inner
    assert inner.tracing_count == 1


def test_methods_have_one_cache_per_instance():
    class Counter(jf.Module):
        def __init__(self, start):
            super().__init__()
            self.v = jf.Variable(start)

        @jf.function
        def bump(self, by):
            self.v.assign_add(by)
            return self.v.read_value()

    a, b = Counter(0), Counter(100)
    assert a.bump(jf.constant(1)).numpy() == 1
    assert a.bump(jf.constant(1)).numpy() == 2
    assert b.bump(jf.constant(5)).numpy() == 105
    assert a.bump.tracing_count == 1 and b.bump.tracing_count == 1
    assert a.bump is a.bump


def test_name_scopes_in_graphs_are_unique_and_modules_reenter_theirs():
    class Dense(jf.Module):
        def __init__(self):
            super().__init__()
            with self.name_scope:
                self.w = jf.Variable(jf.ones([2, 2]), name="w")

        @jf.function
        def __call__(self, x):
            with self.name_scope:
                return jf.matmul(x, self.w)

    layer = Dense()
    assert layer.name_scope.name == "dense/"
    assert layer.w.name == "dense/w:0"

    @jf.function
    def f(x):
        with jf.name_scope("layer"):
            y = x + 1
        with jf.name_scope("layer"):
            z = y * 2
        return z

    names = [n.name for n in f.get_concrete_function(jf.constant(1.0)).graph.nodes]
    assert "layer/add" in names and "layer_1/mul" in names
    dense_names = [n.name for n in layer.__call__.get_concrete_function(jf.ones([1, 2])).graph.nodes]
    assert "dense/MatMul" in dense_names
    assert any(n.startswith("dense/ReadVariableOp") for n in dense_names)


def test_print_and_py_function_run_on_every_call(capsys):
    seen = []

    @jf.function
    def f(x):
        print("tracing")
        jf.print("value:", x, [1, 2])
        jf.py_function(lambda t: seen.append(int(t)), [x], Tout=[])
        return x

    f(jf.constant(4))
    f(jf.constant(5))
    assert capsys.readouterr().out == "tracing\nvalue: 4 [1, 2]\nvalue: 5 [1, 2]\n"
    assert seen == [4, 5]


def test_print_formats_like_tf_print(capsys):
    jf.print(jf.constant([[1.5, 2.0], [3.25, 4.0]]), jf.constant(0.1), jf.constant(True),
             jf.constant(["a", "b"]), jf.range(10))
    assert capsys.readouterr().out == (
        '[[1.5 2]\n [3.25 4]] 0.1 1 ["a" "b"] [0 1 2 ... 7 8 9]\n')


def test_print_to_stderr_and_file(capsys, tmp_path):
    import sys
    jf.print("oops", output_stream=sys.stderr)
    path = tmp_path / "log.txt"
    jf.print("to file", 3, output_stream=f"file://{path}")
    assert capsys.readouterr().err == "oops\n"
    assert path.read_text() == "to file 3\n"


def test_function_returning_python_values_and_none():
    @jf.function
    def f(x):
        return None, 3, "s", [x]

    none, three, s, lst = f(jf.constant(1.0))
    assert none is None and three.numpy() == 3 and s.numpy() == b"s"
    assert lst[0].numpy() == 1.0


def test_trace_records_registry_lists_and_filters():
    @jf.function
    def registry_probe(x):
        return x

    registry_probe(1)
    registry_probe(2)
    mine = [r for r in jf.trace_records.records() if r.function.endswith("registry_probe")]
    assert [r.trace_number for r in mine][-2:] == [1, 2]
