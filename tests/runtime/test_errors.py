"""Bad input gives clear errors: each names the argument, what was expected and what was given.

Where TensorFlow raises while tracing (shape and dtype checks, input signatures, Python
control flow on symbolic tensors), jitflow raises while tracing too: the graph never runs,
so a `jf.print` placed before the bad op prints nothing.
"""
import io
import re

import numpy as np
import pytest

import jitflow as jf
from jitflow.runtime.core.errors import InputSignatureError, InvalidArgumentError


def tensor_names(*names):
    """A regex matching all of `names` in any order (each escaped)."""
    return "".join(f"(?=.*{re.escape(n)})" for n in names)


def raises(exc, *parts):
    return pytest.raises(exc, match=re.compile(tensor_names(*parts), re.S))


# -- dtypes and conversion ----------------------------------------------------------------
@pytest.mark.parametrize("make", [
    lambda: jf.constant(1, dtype="float31"),
    lambda: jf.zeros([2], dtype="float31"),
    lambda: jf.cast(jf.constant(1), "float31"),
    lambda: jf.TensorSpec([2], "float31"),
    lambda: jf.Variable(1.0, dtype="float31"),
    lambda: jf.as_dtype("float31"),
], ids=["constant", "zeros", "cast", "TensorSpec", "Variable", "as_dtype"])
def test_unknown_dtype_names_argument_expected_and_given(make):
    with raises(TypeError, "dtype", "'float31'", "float32", "int32", "string"):
        make()


def test_unknown_numpy_and_python_dtypes():
    with raises(TypeError, "dtype", "uint16"):
        jf.as_dtype(np.uint16)
    with raises(TypeError, "value", "NoneType"):
        jf.constant(None)
    with raises(TypeError, "value", "object"):
        jf.constant(object())
    with raises(TypeError, "value", "numpy dtype", "uint16"):
        jf.constant(np.array([1], np.uint16))


def test_ragged_nested_list_is_a_clear_value_error():
    with raises(ValueError, "value", "non-rectangular", "[[1, 2], [3]]"):
        jf.constant([[1, 2], [3]])


@pytest.mark.parametrize("value, dtype, given", [
    (1.5, jf.int32, "1.5"), ([1.0, 2.5], jf.int64, "2.5"), (1.5, jf.uint8, "1.5"),
], ids=["scalar", "list", "uint8"])
def test_float_to_int_conversion_is_refused(value, dtype, given):
    with raises(TypeError, given, dtype.name):
        jf.constant(value, dtype)
    assert jf.constant(2.0, dtype).numpy() == 2  # integral floats convert


@pytest.mark.parametrize("value, dtype", [(300, jf.int8), (-1, jf.uint8), ([300], jf.int8), ([1, -1], jf.uint8),
                                          (2**31, jf.int32)])
def test_out_of_range_ints_are_refused_not_wrapped(value, dtype):
    info = np.iinfo(dtype.as_numpy_dtype)
    with raises(TypeError, dtype.name, "out of range", str(info.min), str(info.max)):
        jf.constant(value, dtype)


def test_strings_and_numbers_do_not_convert_into_each_other():
    with raises(TypeError, "string", "float32"):
        jf.constant("a", jf.float32)
    with raises(TypeError, "1.0", "string"):
        jf.constant(1.0, jf.string)
    with raises(TypeError, "cast", "string", "float32"):
        jf.cast(jf.constant("a"), jf.float32)
    with raises(TypeError, "1.0", "bool"):
        jf.constant(1.0, jf.bool_)


def test_convert_to_tensor_with_a_mismatching_dtype_suggests_cast():
    with raises(TypeError, "int32", "float32", "jf.cast"):
        jf.convert_to_tensor(jf.constant(1.5), jf.int32)
    with raises(TypeError, "float32", "int32", "jf.cast"):
        jf.constant(jf.constant(1), jf.float32)


# -- binary ops: broadcasting and dtypes -----------------------------------------------------
def test_non_broadcastable_shapes_name_both_shapes():
    with raises(InvalidArgumentError, "jf.add", "(3,)", "(2,)", "broadcast") as info:
        jf.constant([1, 2, 3]) + jf.constant([1, 2])
    assert isinstance(info.value, ValueError)
    with raises(InvalidArgumentError, "(2, 3)", "(4, 1)"):
        jf.multiply(jf.ones([2, 3]), jf.ones([4, 1]))
    with raises(InvalidArgumentError, "jf.where", "(3,)", "(2,)"):
        jf.where(jf.constant([True, False, True]), jf.ones([2]), 0.0)


@pytest.mark.parametrize("op", [lambda a, b: a + b, lambda a, b: a * b, jf.maximum, jf.less, jf.equal,
                                lambda a, b: jf.where(True, a, b)],
                         ids=["add", "mul", "maximum", "less", "equal", "where"])
def test_mixed_dtypes_are_refused_naming_both_and_suggesting_cast(op):
    with raises(TypeError, "int32", "float32", "jf.cast"):
        op(jf.constant(1), jf.constant(1.0))


def test_python_scalars_adopt_the_tensor_dtype_but_not_lossily():
    assert (jf.constant([1, 2], jf.int8) + 1).dtype == jf.int8
    with raises(TypeError, "int32", "float32", "jf.cast"):
        jf.constant([1, 2]) + 1.5   # 1.5 cannot be an int32: stays float32, then mismatches
    with raises(TypeError, "int8", "int32"):
        jf.constant([1, 2], jf.int8) + 300


@pytest.mark.parametrize("op, kinds", [(jf.sqrt, "floating-point"), (jf.exp, "floating-point"),
                                       (jf.logical_not, "bool"), (jf.nn.softmax, "floating-point")],
                         ids=["sqrt", "exp", "logical_not", "softmax"])
def test_ops_name_the_dtypes_they_accept(op, kinds):
    with raises(TypeError, kinds, "int32"):
        op(jf.constant([1, 2]))


def test_integer_input_to_float_op_suggests_a_cast():
    with raises(TypeError, "jf.sqrt", "floating-point", "int32", "jf.cast(x, jf.float32)"):
        jf.sqrt(jf.constant(4))
    with raises(TypeError, "input_tensor", "int32", "jf.cast"):
        jf.math.reduce_std(jf.constant([1, 2]))
    with raises(TypeError, "bool"):
        jf.constant(True) + jf.constant(False)


# -- shapes -------------------------------------------------------------------------------------
def test_matmul_inner_dimension_mismatch_names_shapes():
    with raises(InvalidArgumentError, "jf.matmul", "(2, 3)", "(4, 5)", "3 != 4"):
        jf.matmul(jf.ones([2, 3]), jf.ones([4, 5]))
    with raises(InvalidArgumentError, "(2, 3)", "3 != 2"):
        jf.ones([2, 3]) @ jf.ones([2, 3])
    with raises(InvalidArgumentError, "rank >= 2", "(3,)"):
        jf.matmul(jf.ones([3]), jf.ones([3, 2]))
    with raises(InvalidArgumentError, "(2,)", "(3,)"):
        jf.matmul(jf.ones([2, 2, 2]), jf.ones([3, 2, 2]))  # batch dimensions
    with raises(TypeError, "float32", "float64"):
        jf.matmul(jf.ones([2, 2]), jf.ones([2, 2], jf.float64))


def test_reshape_to_an_incompatible_size_names_both_sizes():
    with raises(InvalidArgumentError, "jf.reshape", "(2, 3)", "6 elements", "[4]", "4 elements"):
        jf.reshape(jf.ones([2, 3]), [4])
    with raises(InvalidArgumentError, "(5,)", "[-1, 2]"):
        jf.reshape(jf.ones([5]), [-1, 2])
    with raises(InvalidArgumentError, "more than one -1"):
        jf.reshape(jf.ones([4]), [-1, -1])


@pytest.mark.parametrize("make, parts", [
    (lambda: jf.transpose(jf.ones([2, 3]), [0, 0]), ("perm", "[0, 0]", "(2, 3)")),
    (lambda: jf.concat([jf.ones([2]), jf.ones([2, 2])], 0), ("equal rank", "(2,)", "(2, 2)")),
    (lambda: jf.concat([jf.ones([2, 3]), jf.ones([2, 2])], 0), ("dimension 1", "(2, 3)", "(2, 2)")),
    (lambda: jf.concat([jf.ones([2]), jf.ones([2], jf.int32)], 0), ("float32", "int32")),
    (lambda: jf.concat([jf.ones([2]), jf.ones([2])], 3), ("axis 3", "rank 1")),
    (lambda: jf.stack([jf.ones([2]), jf.ones([3])]), ("same shape", "(2,)", "(3,)")),
    (lambda: jf.squeeze(jf.ones([2, 3]), [0]), ("squeeze axis 0", "size 2")),
    (lambda: jf.expand_dims(jf.ones([2, 3]), 5), ("axis 5", "rank 3")),
    (lambda: jf.reduce_sum(jf.ones([2, 3]), 2), ("axis 2", "rank 2", "-2 <= axis < 2")),
    (lambda: jf.reduce_sum(jf.ones([2, 3]), 1.5), ("axis", "1.5")),
    (lambda: jf.argmax(jf.constant(1.0)), ("rank >= 1", "scalar")),
    (lambda: jf.nn.softmax(jf.constant(1.0)), ("logits", "rank >= 1")),
    (lambda: jf.unstack(jf.constant(1.0)), ("value", "rank >= 1", "scalar")),
    (lambda: jf.ones([2, 3])[5], ("index 5", "axis 0", "size 2")),
    (lambda: jf.ones([2])[0, 0], ("too many indices", "(2,)")),
    (lambda: jf.ones([2])[0.5], ("indices", "0.5")),
    (lambda: jf.ones([2])[::0], ("step", "zero")),
    (lambda: jf.where(jf.constant([1]), 1, 2), ("condition", "bool", "int32")),
    (lambda: jf.zeros([-1]), ("shape", "[-1]")),
    (lambda: jf.fill([2], object()), ("value", "object")),
    (lambda: jf.range(0, 5, 0), ("delta", "zero")),
    (lambda: jf.TensorSpec([-2]), ("shape", "-2")),
    (lambda: jf.TensorSpec([2], name=3), ("name", "3")),
], ids=["transpose", "concat-rank", "concat-dim", "concat-dtype", "concat-axis", "stack", "squeeze",
        "expand_dims", "reduce-axis", "reduce-axis-type", "argmax-scalar", "softmax-scalar", "unstack-scalar",
        "index-out-of-bounds", "too-many-indices", "float-index", "zero-step", "where-condition",
        "negative-shape", "fill-value", "range-delta", "spec-shape", "spec-name"])
def test_shape_and_argument_errors_say_what_and_why(make, parts):
    with raises((TypeError, ValueError), *parts):
        make()


# -- the same checks happen while tracing, before anything runs --------------------------------
def test_errors_are_raised_at_trace_time_before_the_graph_runs(capsys):
    traced = []

    @jf.function
    def f(a, b):
        traced.append(1)
        jf.print("the graph ran")
        return a + b

    with raises(InvalidArgumentError, "(3,)", "(2,)"):
        f.get_concrete_function(jf.TensorSpec([3]), jf.TensorSpec([2]))
    with raises(TypeError, "int32", "float32", "jf.cast"):
        f(jf.constant(1), jf.constant(1.0))
    with raises(InvalidArgumentError, "(2, 3)", "3 != 4"):
        jf.function(jf.matmul).get_concrete_function(jf.TensorSpec([2, 3]), jf.TensorSpec([4, 5]))
    with raises(InvalidArgumentError, "(2, 3)", "[4]"):
        jf.function(lambda x: jf.reshape(x, [4])).get_concrete_function(jf.TensorSpec([2, 3]))
    assert len(traced) == 2 and f.tracing_count == 0
    assert capsys.readouterr().out == ""


def test_partially_known_shapes_are_checked_as_far_as_they_are_known():
    f = jf.function(lambda a, b: a + b)
    cf = f.get_concrete_function(jf.TensorSpec([None, 3]), jf.TensorSpec([2, None]))
    assert cf.structured_outputs.shape == (2, 3)
    with raises(InvalidArgumentError, "(None, 3)", "(4,)"):
        f.get_concrete_function(jf.TensorSpec([None, 3]), jf.TensorSpec([4]))


def test_set_shape_incompatible_names_both_shapes():
    @jf.function
    def f(x):
        x.set_shape([3])
        return x

    with raises(ValueError, "set_shape", "x:0", "(2,)", "(3,)"):
        f.get_concrete_function(jf.TensorSpec([2]))
    cf = f.get_concrete_function(jf.TensorSpec([None]))
    assert cf.structured_outputs.shape == (3,)


# -- input signatures and concrete functions ------------------------------------------------------
@pytest.fixture
def signed():
    ran = []

    @jf.function(input_signature=[jf.TensorSpec([None], jf.float32, name="x")])
    def scale(x):
        ran.append(1)
        jf.print("ran")
        return x * 2

    return scale, ran


@pytest.mark.parametrize("arg, given", [
    (jf.constant([1, 2]), "dtype int32"),
    (jf.constant([[1.0, 2.0]]), "shape (1, 2)"),
    ("abc", "dtype string"),
    (np.ones(2, np.float64), "dtype float64"),
], ids=["dtype", "shape", "string", "numpy-float64"])
def test_wrong_input_signature_names_argument_expected_and_given(signed, capsys, arg, given):
    scale, ran = signed
    with raises(TypeError, "scale", "argument 'x'", "TensorSpec(shape=(None,), dtype=jf.float32", given) as info:
        scale(arg)
    assert isinstance(info.value, InvalidArgumentError)
    assert capsys.readouterr().out == "" and not ran  # neither traced nor run


def test_input_signature_call_arity_errors(signed):
    scale, _ = signed
    with raises(TypeError, "scale", "too many"):
        scale(jf.ones([2]), jf.ones([2]))
    with raises(TypeError, "scale", "missing", "'x'"):
        scale()
    assert scale(x=[1.0, 2.0]).numpy().tolist() == [2.0, 4.0]


@pytest.mark.parametrize("signature, parts", [
    (jf.TensorSpec([2]), ("input_signature", "list or tuple", "TensorSpec")),
    ([jf.TensorSpec([2]), jf.TensorSpec([2])], ("input_signature", "1 positional", "2 entries")),
    ([3], ("input_signature", "jf.TensorSpec", "3")),
], ids=["not-a-list", "too-long", "bad-entry"])
def test_bad_input_signature_is_refused_when_decorating(signature, parts):
    with raises(TypeError, *parts):
        jf.function(lambda x: x, input_signature=signature)


@pytest.fixture
def concrete():
    @jf.function
    def add(a, b):
        return a + b

    return add.get_concrete_function(jf.TensorSpec([2], jf.float32), jf.TensorSpec([2], jf.float32))


def test_concrete_function_wrong_dtype_or_shape(concrete):
    for b, given in ((jf.ones([2], jf.int32), "dtype int32"), (jf.ones([3]), "shape (3,)")):
        with raises(InvalidArgumentError, "argument 'b'", "TensorSpec(shape=(2,), dtype=jf.float32", given) as info:
            concrete(jf.ones([2]), b)
        assert isinstance(info.value, TypeError)


def test_concrete_function_extra_argument(concrete):
    with raises(InvalidArgumentError, "add", "2", "3") as info:
        concrete(jf.ones([2]), jf.ones([2]), jf.ones([2]))
    assert isinstance(info.value, TypeError)


def test_concrete_function_missing_argument(concrete):
    with raises(InvalidArgumentError, "add", "'b'") as info:
        concrete(jf.ones([2]))
    assert isinstance(info.value, TypeError)


def test_concrete_function_unknown_keyword(concrete):
    with raises(InvalidArgumentError, "add", "'c'") as info:
        concrete(a=jf.ones([2]), c=jf.ones([2]))
    assert isinstance(info.value, TypeError)


def test_concrete_function_of_python_values_takes_no_arguments():
    @jf.function
    def f(n):
        return jf.constant(n) * 2

    cf = f.get_concrete_function(3)
    assert cf().numpy() == 6
    with raises(TypeError, "f", "0", "1"):
        cf(jf.constant(3))


# -- what a traced function may do -----------------------------------------------------------------
def test_returning_an_unsupported_object_names_its_type():
    @jf.function
    def f(x):
        return x, object()

    with raises(TypeError, "f", "returned", "object", "tensors"):
        f(jf.constant(1))


def test_using_a_symbolic_tensor_as_a_python_bool_is_refused():
    @jf.function(autograph=False)
    def f(x):
        if x > 0:
            return x
        return -x

    with raises(TypeError, "Greater:0", "Python bool", "jf.cond"):
        f(jf.constant(1))

    @jf.function
    def g(x):
        return x if bool(x > 0) else -x  # conditional expressions and bool() stay Python

    with raises(TypeError, "symbolic tensor", "Python bool"):
        g(jf.constant(1))


@pytest.mark.parametrize("convert, parts", [
    (int, ("Python int", "x:0")), (float, ("Python float", "x:0")), (len, ("len()", "x:0")),
    (np.asarray, ("numpy", "x:0")),
    (lambda x: [1, 2][x], ("index", "x:0")), (list, ("iterate", "x:0")), (hash, ("unhashable", "ref()")),
], ids=["int", "float", "len", "np.asarray", "index", "iter", "hash"])
def test_symbolic_tensors_refuse_python_conversions_while_tracing(convert, parts):
    @jf.function
    def f(x):
        convert(x)
        return x

    with raises(TypeError, *parts):
        f(jf.constant(1))


def test_numpy_of_a_symbolic_tensor_raises_attribute_error_like_tf():
    @jf.function
    def f(x):
        x.numpy()
        return x

    with raises(AttributeError, "x:0", "no value"):
        f(jf.constant(1))


def test_symbolic_tensor_used_after_its_trace_is_refused():
    leaked = []

    @jf.function
    def f(x):
        leaked.append(x * 2)
        return x

    f(jf.constant(1.0))
    (t,) = leaked
    with raises(InvalidArgumentError, "mul:0", "outside the function", "return them"):
        t + 1
    with raises(InvalidArgumentError, "jf.exp", "mul:0"):
        jf.exp(t)
    with raises(AttributeError, "mul:0", "symbolic"):  # AttributeError, as TF (tutorials catch it)
        t.numpy()
    assert str(t) == 'Tensor("mul:0", shape=(), dtype=float32)'


def test_creating_a_variable_on_every_call_explains_the_rule():
    @jf.function
    def f(x):
        v = jf.Variable(1.0)
        return v + x

    with raises(ValueError, "'f'", "variable", "first", "outside the function", "if self.v is None"):
        f(jf.constant(1.0))


def test_creating_a_variable_on_a_later_trace_explains_the_rule():
    holder = {}

    @jf.function
    def f(x):
        if x.dtype == jf.float32 or "v" in holder:
            return x
        holder["v"] = jf.Variable(1, name="late")
        return x + holder["v"]

    f(jf.constant(1.0))
    with raises(ValueError, "late:0", "variable", "first"):
        f(jf.constant(1))


def test_variable_errors_name_argument_expected_and_given():
    with raises(ValueError, "initial_value"):
        jf.Variable(None)
    with raises(ValueError, "shape", "(2,)", "(3,)"):
        jf.Variable([1.0, 2.0], shape=[3])
    with raises(TypeError, "name", "3"):
        jf.Variable(1.0, name=3)
    with raises(TypeError, "1.5", "int32"):
        jf.Variable(1.5, dtype=jf.int32)
    v = jf.Variable([1.0, 2.0])
    with raises(TypeError, "float32", "int32", "jf.cast"):
        v.assign(jf.constant([1, 2]))
    with raises(InvalidArgumentError, "shape (3,)", "shape (2,)"):
        v.assign([1.0, 2.0, 3.0])
    assert v.numpy().tolist() == [1.0, 2.0]


# -- jf.print and jf.py_function ---------------------------------------------------------------------
def test_print_refuses_a_bad_output_stream_when_called_or_traced(capsys):
    with raises(TypeError, "output_stream", "write()", "42"):
        jf.print(jf.constant(1), output_stream=42)

    @jf.function
    def f(x):
        jf.print(x, output_stream=42)
        return x

    with raises(TypeError, "output_stream", "42"):
        f(jf.constant(1))
    with raises(TypeError, "summarize", "'x'"):
        jf.print(jf.constant(1), summarize="x")
    assert capsys.readouterr().out == ""


def test_print_accepts_file_like_streams():
    buffer = io.StringIO()
    jf.print("v:", jf.constant([1, 2]), output_stream=buffer, sep="|", end="!")
    assert buffer.getvalue() == "v:|[1 2]!"
    jf.print(jf.range(10), summarize=None, output_stream=buffer)
    assert buffer.getvalue().endswith("[0 1 2 ... 7 8 9]\n")


def test_py_function_returning_the_wrong_dtype_fails_on_every_run():
    @jf.function
    def f(x):
        return jf.py_function(lambda a: a.numpy().astype(np.int32), [x], jf.float32)

    for _ in range(2):
        with raises(TypeError, "py_function", "<lambda>", "int32", "float32"):
            f(jf.constant([1.0]))
    with raises(TypeError, "int32", "float32"):
        jf.py_function(lambda a: a.numpy().astype(np.int32), [jf.constant([1.0])], jf.float32)


def test_py_function_returning_the_wrong_count_names_both_counts():
    with raises(ValueError, "py_function", "returned 2", "Tout declares 1"):
        jf.py_function(lambda a: (a, a), [jf.constant([1.0])], [jf.float32])
    with raises(ValueError, "returned 1", "declares 2"):
        jf.py_function(lambda a: a, [jf.constant([1.0])], [jf.float32, jf.float32])


def test_py_function_argument_errors():
    with raises(TypeError, "func", "callable", "int"):
        jf.py_function(3, [jf.constant(1.0)], jf.float32)
    with raises(TypeError, "dtype", "'float31'"):
        jf.py_function(lambda a: a, [jf.constant(1.0)], "float31")
    with pytest.raises(ZeroDivisionError):
        jf.py_function(lambda a: 1 / 0, [jf.constant(1.0)], jf.float32)


def test_function_argument_errors():
    with raises(TypeError, "jf.function", "callable", "int"):
        jf.function(3)

    @jf.function
    def f(a, b=1):
        return a + b

    with raises(TypeError, "f()", "unexpected keyword", "'c'"):
        f(1, c=2)
    with raises(TypeError, "f()", "missing", "'a'"):
        f()


def test_errors_are_python_exceptions_users_expect():
    assert issubclass(jf.errors.InvalidArgumentError, ValueError)
    assert issubclass(InputSignatureError, TypeError) and issubclass(InputSignatureError, InvalidArgumentError)
    assert issubclass(jf.errors.UnimplementedError, NotImplementedError)
    assert jf.errors.InvalidArgumentError is InvalidArgumentError
