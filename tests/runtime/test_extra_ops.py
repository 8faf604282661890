"""The ops added for TF 2 tutorials: CPU kernels against the numpy reference, gradients
against central finite differences, and the argument errors."""
import numpy as np
import pytest

import jitflow as jf
from jitflow.runtime.ops import registry

RNG = np.random.default_rng(0)
X = RNG.uniform(0.2, 0.9, size=(3, 4)).astype(np.float64)

UNARY = ["Log1p", "Expm1", "Erf", "Rsqrt", "Reciprocal", "Floor", "Ceil", "Round", "Tan", "Atan",
         "Asin", "Acos", "Sinh", "Cosh", "Softsign"]


@pytest.mark.parametrize("op", UNARY)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_unary_kernel_matches_reference(op, dtype):
    x = np.array([-2.5, -1.5, -0.5, 0.0, 0.3, 0.5, 1.5, 2.5, np.nan, np.inf], dtype)
    got = registry.KERNELS["cpu"][op](x)
    want = registry.KERNELS["reference"][op](x)
    assert got.dtype == want.dtype
    np.testing.assert_allclose(got, want, rtol=2e-6 if dtype == np.float32 else 1e-12, equal_nan=True)


@pytest.mark.parametrize("exclusive", [False, True])
@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("axis", [0, 1, -1])
def test_cumsum_kernel_matches_reference(exclusive, reverse, axis):
    x = np.arange(12, dtype=np.int32).reshape(3, 4)
    kw = dict(axis=axis, exclusive=exclusive, reverse=reverse)
    np.testing.assert_array_equal(registry.KERNELS["cpu"]["Cumsum"](x, **kw),
                                  registry.KERNELS["reference"]["Cumsum"](x, **kw))


def _numeric_grad(f, x, eps=1e-6):
    g = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        d = np.zeros_like(x)
        d[i] = eps
        g[i] = (f(x + d) - f(x - d)) / (2 * eps)
    return g


GRAD_CASES = {
    "log1p": lambda x: jf.math.log1p(x), "expm1": lambda x: jf.math.expm1(x),
    "erf": lambda x: jf.math.erf(x), "rsqrt": lambda x: jf.math.rsqrt(x),
    "reciprocal": lambda x: jf.math.reciprocal(x), "tan": lambda x: jf.math.tan(x),
    "atan": lambda x: jf.math.atan(x), "asin": lambda x: jf.math.asin(x),
    "acos": lambda x: jf.math.acos(x), "sinh": lambda x: jf.math.sinh(x),
    "cosh": lambda x: jf.math.cosh(x), "softsign": lambda x: jf.nn.softsign(x),
    "cumsum": lambda x: jf.math.cumsum(x, axis=1) * jf.constant(np.arange(4.0)),
    "cumsum_rev_excl": lambda x: jf.math.cumsum(x, axis=0, exclusive=True, reverse=True) * 1.5,
    "top_k": lambda x: jf.math.top_k(x, k=2).values * jf.constant(np.array([1.0, 3.0])),
    "sort": lambda x: jf.sort(x, axis=0) * jf.constant(np.arange(12.0).reshape(3, 4)),
    "tile": lambda x: jf.tile(x, [2, 1]) * jf.constant(np.arange(24.0).reshape(6, 4)),
    "broadcast_to": lambda x: jf.broadcast_to(x[0], [5, 4]) * jf.constant(np.arange(20.0).reshape(5, 4)),
    "split": lambda x: jf.split(x, [1, 3], axis=1)[1] * 2.0,
    "einsum_matmul": lambda x: jf.einsum("ij,kj->ik", x, x),
    "einsum_sum_only": lambda x: jf.einsum("ij->j", x) * jf.constant(np.arange(4.0)),
    "einsum_outer": lambda x: jf.einsum("i,j->ij", x[0], x[1]),
    "clip_by_value": lambda x: jf.clip_by_value(x, 0.4, 0.7) * 3.0,
    "clip_by_norm": lambda x: jf.clip_by_norm(x, 0.5),
    "clip_by_global_norm": lambda x: jf.clip_by_global_norm([x, x * 2.0], 1.0)[0][0],
    "euclidean_norm": lambda x: jf.math.reduce_euclidean_norm(x, axis=1),
    "l2_loss": lambda x: jf.nn.l2_loss(x),
    "squared_difference": lambda x: jf.math.squared_difference(x, 0.5),
}


@pytest.mark.parametrize("name", sorted(GRAD_CASES))
def test_gradient_matches_finite_differences(name):
    fn = GRAD_CASES[name]
    x0 = X.copy()
    v = jf.Variable(x0)
    with jf.GradientTape() as tape:
        y = jf.reduce_sum(fn(v))
    got = tape.gradient(y, v).numpy()
    want = _numeric_grad(lambda a: float(jf.reduce_sum(fn(jf.constant(a))).numpy()), x0)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_gradient_inside_function_matches_eager():
    v = jf.Variable(X.copy())

    @jf.function
    def step():
        with jf.GradientTape() as tape:
            y = jf.reduce_sum(jf.math.cumsum(jf.tile(v, [1, 2]), axis=1) * jf.math.erf(v[:, :1]))
        return tape.gradient(y, v)

    with jf.GradientTape() as tape:
        y = jf.reduce_sum(jf.math.cumsum(jf.tile(v, [1, 2]), axis=1) * jf.math.erf(v[:, :1]))
    np.testing.assert_allclose(step().numpy(), tape.gradient(y, v).numpy(), rtol=1e-12)


def test_linspace_linear_in_start_and_stop():
    a, b = jf.Variable(1.0), jf.Variable(3.0)
    with jf.GradientTape() as tape:
        y = jf.reduce_sum(jf.linspace(a, b, 5) * jf.constant([1.0, 2.0, 3.0, 4.0, 5.0]))
    ga, gb = tape.gradient(y, [a, b])
    # d/da sum(w_i (a + i (b-a)/4)) = sum w_i (1 - i/4); d/db = sum w_i i/4
    assert ga.numpy() == pytest.approx(1 + 2 * .75 + 3 * .5 + 4 * .25)
    assert gb.numpy() == pytest.approx(2 * .25 + 3 * .5 + 4 * .75 + 5)


@pytest.mark.parametrize("call, error, words", [
    (lambda: jf.split(jf.zeros([5]), 2), jf.errors.InvalidArgumentError, "not divisible"),
    (lambda: jf.split(jf.zeros([5]), [1, 1]), jf.errors.InvalidArgumentError, "must sum"),
    (lambda: jf.tile(jf.zeros([2]), [1, 2]), jf.errors.InvalidArgumentError, "multiples"),
    (lambda: jf.broadcast_to(jf.zeros([3]), [2, 2]), jf.errors.InvalidArgumentError, "cannot broadcast"),
    (lambda: jf.einsum("ij,jk->ik", jf.zeros([2, 3]), jf.zeros([2, 3])),
     jf.errors.InvalidArgumentError, "dimension 'j'"),
    (lambda: jf.einsum("ij->ik", jf.zeros([2, 3])), jf.errors.InvalidArgumentError, "not in any input"),
    (lambda: jf.math.top_k([1.0, 2.0], k=3), jf.errors.InvalidArgumentError, "k must be"),
    (lambda: jf.sort([1.0], direction="UP"), ValueError, "direction"),
    (lambda: jf.nn.dropout(jf.zeros([2]), rate=1.0), ValueError, "rate"),
    (lambda: jf.linspace(0.0, 1.0, -1), jf.errors.InvalidArgumentError, "num"),
])
def test_bad_arguments_name_the_argument(call, error, words):
    with pytest.raises(error, match=words):
        call()


def test_new_ops_trace_into_graphs_with_tf_op_names():
    @jf.function
    def f(x):
        parts = jf.split(jf.tile(x, [1, 2]), 2, axis=1)
        return jf.math.cumsum(jf.einsum("ij,ij->i", parts[0], parts[1])), jf.math.top_k(x[0], 1).indices

    x = jf.constant([[1.0, 2.0], [3.0, 4.0]])
    out, idx = f(x)
    np.testing.assert_allclose(out.numpy(), [5.0, 30.0])
    ops = {n.op.tf_op for n in f.get_concrete_function(x).graph.nodes}
    assert {"Tile", "SplitV", "Einsum", "Cumsum", "TopKV2"} <= ops
