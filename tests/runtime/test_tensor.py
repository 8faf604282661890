"""`jf.Tensor` and `jf.Variable` as Python objects: reprs like TF's, operators (reflected ones
with Python scalars too), numpy interop without aliasing, conversions, hashing."""
import copy
import pickle

import numpy as np
import pytest

import jitflow as jf


# -- repr and str --------------------------------------------------------------------------
def test_eager_repr_matches_tf():
    assert repr(jf.constant([[1.0, 2.0], [3.0, 4.0]])) == (
        "<jf.Tensor: shape=(2, 2), dtype=float32, numpy=\n"
        "array([[1., 2.],\n"
        "       [3., 4.]], dtype=float32)>")
    assert repr(jf.constant([1, 2, 3])) == "<jf.Tensor: shape=(3,), dtype=int32, numpy=array([1, 2, 3], dtype=int32)>"
    assert repr(jf.constant([1, 2], jf.int64)) == "<jf.Tensor: shape=(2,), dtype=int64, numpy=array([1, 2])>"
    assert repr(jf.constant(5.0)) == "<jf.Tensor: shape=(), dtype=float32, numpy=5.0>"
    assert repr(jf.constant(3)) == "<jf.Tensor: shape=(), dtype=int32, numpy=3>"
    assert repr(jf.constant(True)) == "<jf.Tensor: shape=(), dtype=bool, numpy=True>"
    assert repr(jf.constant("cc")) == "<jf.Tensor: shape=(), dtype=string, numpy=b'cc'>"
    assert repr(jf.constant(["a", "b"])) == (
        "<jf.Tensor: shape=(2,), dtype=string, numpy=array([b'a', b'b'], dtype=object)>")
    assert repr(jf.zeros([0])) == "<jf.Tensor: shape=(0,), dtype=float32, numpy=array([], dtype=float32)>"
    assert repr(jf.constant([1.5], jf.float16)) == (
        "<jf.Tensor: shape=(1,), dtype=float16, numpy=array([1.5], dtype=float16)>")


def test_eager_str_matches_tf():
    assert str(jf.constant([[1.0, 2.0], [3.0, 4.0]])) == "jf.Tensor(\n[[1. 2.]\n [3. 4.]], shape=(2, 2), dtype=float32)"
    assert str(jf.constant([1, 2, 3])) == "jf.Tensor([1 2 3], shape=(3,), dtype=int32)"
    assert str(jf.constant(5.0)) == "jf.Tensor(5.0, shape=(), dtype=float32)"
    assert str(jf.constant(b"cc")) == "jf.Tensor(b'cc', shape=(), dtype=string)"
    assert str(jf.constant([True, False])) == "jf.Tensor([ True False], shape=(2,), dtype=bool)"
    assert f"{jf.constant(2.5):.2f}" == "2.50"
    assert f"{jf.constant([1, 2])}" == "jf.Tensor([1 2], shape=(2,), dtype=int32)"


def test_symbolic_repr_and_str_match_tf():
    seen = {}

    @jf.function
    def f(a, b):
        seen["a"], seen["b"] = str(a), repr(a)
        seen["sum"] = str(a + 1)
        seen["unknown"], seen["unknown_repr"] = str(b), repr(b)
        return a

    f.get_concrete_function(jf.TensorSpec([], jf.int32, name="a"), jf.TensorSpec(None, jf.float32))
    assert seen["a"] == 'Tensor("a:0", shape=(), dtype=int32)'
    assert seen["b"] == "<jf.Tensor 'a:0' shape=() dtype=int32>"
    assert seen["sum"] == 'Tensor("add:0", shape=(), dtype=int32)'
    assert seen["unknown"] == 'Tensor("b:0", dtype=float32)'  # TF leaves out an unknown shape
    assert seen["unknown_repr"] == "<jf.Tensor 'b:0' shape=<unknown> dtype=float32>"


def test_variable_repr():
    v = jf.Variable([1.0, 2.0], name="v")
    assert repr(v) == "<jf.Variable 'v:0' shape=(2,) dtype=float32, numpy=array([1., 2.], dtype=float32)>"
    assert str(v) == repr(v)
    with jf.name_scope("outer"):
        w = jf.Variable(3)
    assert repr(w) == "<jf.Variable 'outer/Variable:0' shape=() dtype=int32, numpy=3>"


# -- operators ------------------------------------------------------------------------------------
X = np.array([[1.0, -2.0], [3.0, 4.0]], np.float32)


@pytest.mark.parametrize("expr", [
    lambda x: x + 1, lambda x: 1 + x, lambda x: x - 1, lambda x: 1 - x, lambda x: 2 * x, lambda x: x * 2,
    lambda x: x / 2, lambda x: 2 / x, lambda x: x // 2, lambda x: 7 // x, lambda x: x % 3, lambda x: 7 % x,
    lambda x: x ** 2, lambda x: 2 ** x, lambda x: -x, lambda x: +x, lambda x: abs(x), lambda x: x @ x,
    lambda x: x < 2, lambda x: 2 < x, lambda x: x <= 1, lambda x: x > 1, lambda x: x >= 3, lambda x: x == 4,
    lambda x: x != 4, lambda x: (x > 0) & (x < 4), lambda x: (x > 3) | (x < 0), lambda x: ~(x > 0),
    lambda x: np.float32(2) * x, lambda x: x * np.float32(2), lambda x: X + x, lambda x: X @ x,
], ids=["add", "radd", "sub", "rsub", "rmul", "mul", "div", "rdiv", "floordiv", "rfloordiv", "mod", "rmod",
        "pow", "rpow", "neg", "pos", "abs", "matmul", "lt", "rlt", "le", "gt", "ge", "eq", "ne", "and", "or",
        "invert", "np-scalar-left", "np-scalar-right", "np-array-left", "np-array-matmul-left"])
def test_operators_match_numpy_and_keep_dtype(expr):
    got = expr(jf.constant(X))
    want = expr(X.copy())
    assert isinstance(got, jf.Tensor)
    assert got.dtype == jf.as_dtype(np.asarray(want).dtype)
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-6)


def test_integer_operators_with_python_scalars_keep_the_tensor_dtype():
    for dtype in (jf.int8, jf.uint8, jf.int64):
        x = jf.constant([1, 2, 3], dtype)
        for out in (x + 1, 1 + x, 3 * x, x - 1, x ** 2, x // 2, x % 2, -x if not dtype.is_unsigned else x):
            assert out.dtype == dtype and out.numpy().dtype == dtype.as_numpy_dtype
    assert (jf.constant([1, 2]) / 2).dtype == jf.float64  # int32 true division, as TF
    assert (jf.constant([1.0], jf.float64) * 2.5).dtype == jf.float64


def test_operators_on_variables_including_reflected_ones():
    v = jf.Variable([1.0, 2.0])
    assert (2 * v).numpy().tolist() == [2.0, 4.0]
    assert (1 - v).numpy().tolist() == [0.0, -1.0]
    assert (v ** 2).numpy().tolist() == [1.0, 4.0]
    assert (-v).numpy().tolist() == [-1.0, -2.0]
    assert (v + jf.constant([1.0, 1.0])).numpy().tolist() == [2.0, 3.0]
    assert (jf.constant([1.0, 1.0]) + v).numpy().tolist() == [2.0, 3.0]
    assert (v == [1.0, 0.0]).numpy().tolist() == [True, False]
    assert v[1].numpy() == 2.0
    assert (v == None) is False and (v != None) is True  # noqa: E711
    assert (jf.Variable([[1.0, 2.0]]) @ jf.constant([[1.0], [1.0]])).numpy().tolist() == [[3.0]]


def test_operators_inside_a_function_build_the_same_ops():
    @jf.function
    def f(x):
        return 2 * x - 1, 1 - x, x ** 2, -x, abs(x), x @ x, 2 < x

    eager = (2 * jf.constant(X) - 1, 1 - jf.constant(X), jf.constant(X) ** 2, -jf.constant(X),
             abs(jf.constant(X)), jf.constant(X) @ jf.constant(X), 2 < jf.constant(X))
    for got, want in zip(f(jf.constant(X)), eager):
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got.numpy(), want.numpy())
    ops = [n.type for n in f.get_concrete_function(jf.TensorSpec([2, 2])).graph.nodes]
    assert {"Mul", "Sub", "Pow", "Neg", "Abs", "MatMul", "Greater"} <= set(ops)


def test_equality_with_none_and_unconvertible_objects_is_false():
    x = jf.constant([1, 2])
    assert (x == None) is False  # noqa: E711
    assert (x != None) is True  # noqa: E711
    assert (x == object()) is False
    assert (x == jf.constant([1, 2, 3])) is False  # incompatible shapes, as TF
    assert x.__eq__(None) is NotImplemented
    assert (x == [1, 3]).numpy().tolist() == [True, False]

    @jf.function
    def f(a):
        assert (a == None) is False  # noqa: E711
        return a

    f(jf.constant(1))


# -- numpy interop and copies ------------------------------------------------------------------------
def test_numpy_returns_a_writable_copy():
    t = jf.constant([[1.0, 2.0], [3.0, 4.0]])
    a = t.numpy()
    a[0, 0] = 99
    assert t.numpy()[0, 0] == 1.0
    assert t.numpy() is not t.numpy()
    for made in (jf.zeros([3]), jf.fill([2], 1.0), jf.ones([2]) + 1, jf.reshape(jf.range(6), [2, 3])[:, 1:],
                 jf.transpose(jf.ones([2, 3]))):
        before = made.numpy()
        arr = made.numpy()
        assert arr.flags.writeable  # TF's .numpy() is a writable copy
        arr[...] = 7
        np.testing.assert_array_equal(made.numpy(), before)


def test_numpy_of_a_scalar_is_a_numpy_scalar_or_bytes():
    assert type(jf.constant(2.0).numpy()) is np.float32
    assert type(jf.constant(2).numpy()) is np.int32
    assert type(jf.constant(True).numpy()) is np.bool_
    assert jf.constant("x").numpy() == b"x"
    assert jf.constant(["x", "yy"]).numpy().tolist() == [b"x", b"yy"]


def test_constant_does_not_alias_the_callers_array():
    for source in (np.ones(3, np.float32), np.arange(6).reshape(2, 3), np.array([True, False])):
        original = source.copy()
        for make in (jf.constant, jf.convert_to_tensor, jf.Variable):
            t = make(source)
            source[...] = 0 if source.dtype != bool else False
            np.testing.assert_array_equal(t.numpy(), original)
            source[...] = original


def test_constant_of_empty_and_nested_lists():
    assert jf.constant([], jf.string).shape == (0,) and jf.constant([], jf.string).dtype == jf.string
    assert jf.constant([[]], jf.int8).shape == (1, 0) and jf.constant([[]], jf.int8).dtype == jf.int8
    assert jf.equal(jf.constant([], jf.string), "a").shape == (0,)
    assert (jf.constant(["a", "b"]) + jf.constant("!")).numpy().tolist() == [b"a!", b"b!"]
    assert jf.constant(((1, 2), (3, 4))).numpy().tolist() == [[1, 2], [3, 4]]
    assert jf.constant([np.float32(1.5), 2.5]).dtype == jf.float32


def test_function_results_do_not_alias_numpy_arguments():
    @jf.function
    def f(x):
        return x, x[:2], jf.identity(x)

    a = np.ones(3, np.float32)
    results = f(a)
    a[0] = 5
    for r in results:
        assert r.numpy()[0] == 1.0


def test_array_protocol_gives_a_read_only_view():
    t = jf.constant([1.0, 2.0])
    a = np.asarray(t)
    assert a.dtype == np.float32 and a.tolist() == [1.0, 2.0]
    with pytest.raises(ValueError, match="read-only"):
        a[0] = 5
    assert t.numpy().tolist() == [1.0, 2.0]
    assert np.asarray(t, dtype=np.float64).dtype == np.float64
    c = np.array(t, copy=True)
    c[0] = 7
    assert t.numpy()[0] == 1.0
    assert np.sum(t) == 3.0 and np.allclose(np.exp(t), np.exp([1.0, 2.0]))
    assert np.asarray(jf.constant(["a"])).dtype == object


def test_variable_array_protocol_does_not_expose_its_storage():
    v = jf.Variable([1.0, 2.0])
    with pytest.raises(ValueError, match="read-only"):
        np.asarray(v)[0] = 9
    r = v.read_value()
    with pytest.raises(ValueError, match="read-only"):
        np.asarray(r)[0] = 9
    n = v.numpy()
    n[0] = 9
    assert v.numpy().tolist() == [1.0, 2.0]
    v.assign_add([1.0, 1.0])
    assert r.numpy().tolist() == [1.0, 2.0]  # a tensor read earlier keeps its value
    assert v.numpy().tolist() == [2.0, 3.0]


def test_len_iteration_and_python_scalars():
    t = jf.constant([[1, 2], [3, 4], [5, 6]])
    assert len(t) == 3
    rows = list(t)
    assert [r.numpy().tolist() for r in rows] == [[1, 2], [3, 4], [5, 6]]
    assert all(isinstance(r, jf.Tensor) and r.dtype == jf.int32 for r in rows)
    assert 4 in jf.constant([3, 4])
    s = jf.constant(3.5)
    assert int(s) == 3 and float(s) == 3.5 and bool(s) is True and bool(jf.constant(0)) is False
    assert [10, 20, 30][jf.constant(1)] == 20 and range(5)[jf.constant(2, jf.int64)] == 2
    with pytest.raises(TypeError, match="integer tensors.*float32"):
        [1, 2][jf.constant(1.0)]
    with pytest.raises(TypeError, match="len.*scalar"):
        len(jf.constant(1))
    with pytest.raises(TypeError, match="iteration.*scalar"):
        list(jf.constant(1))
    with pytest.raises(ValueError, match="ambiguous"):
        bool(jf.constant([1, 2]))
    v = jf.Variable([1.0, 2.0, 3.0])
    assert len(v) == 3 and float(jf.Variable(2.5)) == 2.5 and int(jf.Variable(4)) == 4


def test_symbolic_len_and_iteration_use_the_static_shape():
    seen = {}

    @jf.function
    def f(x):
        seen["len"] = len(x)
        seen["rows"] = [r.shape for r in x]
        return x

    f(jf.ones([3, 2]))
    assert seen == {"len": 3, "rows": [jf.TensorShape([2])] * 3}


def test_tensors_are_unhashable_but_ref_is_hashable():
    a, b = jf.constant(1), jf.constant(1)
    with pytest.raises(TypeError, match="unhashable.*ref()"):
        hash(a)
    with pytest.raises(TypeError):
        {a}  # noqa: B018
    refs = {a.ref(): "a", b.ref(): "b"}
    assert refs[a.ref()] == "a" and refs[b.ref()] == "b"
    assert a.ref() == a.ref() and a.ref() != b.ref()
    assert a.ref().deref() is a
    v = jf.Variable(1.0)
    assert {v: 1}[v] == 1  # variables hash by identity


def test_shape_dtype_and_friends():
    t = jf.constant([[1, 2, 3]], jf.int64)
    assert t.shape == jf.TensorShape([1, 3]) and t.shape == (1, 3) and t.shape.as_list() == [1, 3]
    assert t.ndim == 2 and t.dtype == jf.int64 and t.get_shape() == t.shape
    assert jf.constant(1).shape == () and jf.constant(1).ndim == 0
    assert t.device.endswith("CPU:0")
    assert isinstance(t, jf.Tensor) and isinstance(jf.Variable(1.0), jf.Variable)
    assert jf.TensorShape([None, 3]).is_compatible_with([2, 3]) and str(jf.TensorShape([None, 3])) == "(None, 3)"
    assert repr(jf.TensorSpec([None, 3], jf.float32, "x")) == "TensorSpec(shape=(None, 3), dtype=jf.float32, name='x')"


def test_tensors_pickle_and_copy():
    t = jf.constant([[1, 2]], jf.int8)
    for back in (pickle.loads(pickle.dumps(t)), copy.deepcopy(t), copy.copy(t)):
        assert back.dtype == jf.int8 and back.numpy().tolist() == [[1, 2]]
    s = pickle.loads(pickle.dumps(jf.constant(["a", "b"])))
    assert s.dtype == jf.string and s.numpy().tolist() == [b"a", b"b"]
    assert pickle.loads(pickle.dumps(jf.float16)) is jf.float16


def test_dtype_objects():
    assert jf.float32.name == "float32" and repr(jf.float32) == "jf.float32" and str(jf.int8) == "<dtype: 'int8'>"
    assert jf.as_dtype("float") is jf.float32 and jf.as_dtype(np.int16) is jf.int16
    assert jf.as_dtype(bool) is jf.bool_ and jf.as_dtype(str) is jf.string and jf.as_dtype(int) is jf.int32
    assert jf.float32.is_floating and jf.uint8.is_unsigned and jf.uint8.is_integer and not jf.int8.is_unsigned
    assert jf.int8.min == -128 and jf.uint8.max == 255 and jf.float16.max == np.finfo(np.float16).max
    assert jf.half is jf.float16 and jf.double is jf.float64
    assert {jf.float32: 1}[jf.as_dtype("float32")] == 1


def test_jf_bool_is_the_bool_dtype():
    assert jf.bool is jf.bool_  # TF spells it tf.bool
    assert jf.cast(jf.constant([0, 2]), jf.bool).numpy().tolist() == [False, True]
