"""einsum gradients with a subscript repeated in one operand (diagonals), issue #17.

TF's values are checked in tests/tf_api/snippets_einsum_grad.txt; here: finite differences
as the oracle, eager and traced (also with dimensions unknown until run time).
"""
import numpy as np
import pytest

import jitflow as jf

rng = np.random.default_rng(3)


def _numeric(fn, x, eps=1e-6):
    g = np.zeros_like(x)
    for idx in np.ndindex(x.shape):
        xp, xm = x.copy(), x.copy()
        xp[idx] += eps
        xm[idx] -= eps
        g[idx] = (fn(xp) - fn(xm)) / (2 * eps)
    return g


@pytest.mark.parametrize("equation,shape", [
    ("ii->i", (3, 3)), ("ii->", (4, 4)), ("ii", (2, 2)), ("iij->j", (3, 3, 2)), ("iij->ij", (2, 2, 3)),
    ("iii->i", (3, 3, 3)), ("ijij->ij", (2, 3, 2, 3)), ("iji->j", (2, 3, 2)),
])
def test_diagonal_gradients_match_finite_differences(equation, shape):
    x = rng.normal(size=shape)
    weights = None

    def loss_np(v):
        r = np.einsum(equation, v)
        return float(np.sum(np.sin(r) * (1.0 if weights is None else weights)))

    t = jf.constant(x)
    with jf.GradientTape() as tape:
        tape.watch(t)
        loss = jf.reduce_sum(jf.sin(jf.einsum(equation, t)))
    np.testing.assert_allclose(tape.gradient(loss, t).numpy(), _numeric(loss_np, x), rtol=1e-6, atol=1e-8)


def test_diagonal_gradient_with_a_second_operand():
    m, w = rng.normal(size=(3, 3)), rng.normal(size=(3, 2))
    tm, tw = jf.constant(m), jf.constant(w)
    with jf.GradientTape() as tape:
        tape.watch([tm, tw])
        loss = jf.reduce_sum(jf.einsum("ii,ij->j", tm, tw) ** 2)
    gm, gw = tape.gradient(loss, [tm, tw])
    np.testing.assert_allclose(gm.numpy(), _numeric(lambda v: float(np.sum(np.einsum("ii,ij->j", v, w) ** 2)), m),
                               rtol=1e-6)
    np.testing.assert_allclose(gw.numpy(), _numeric(lambda v: float(np.sum(np.einsum("ii,ij->j", m, v) ** 2)), w),
                               rtol=1e-6)


def test_diagonal_gradient_traced_with_unknown_dimensions():
    @jf.function(input_signature=[jf.TensorSpec([None, None], jf.float64)])
    def grad(x):
        with jf.GradientTape() as tape:
            tape.watch(x)
            loss = jf.einsum("ii->", x * x)
        return tape.gradient(loss, x)

    x = rng.normal(size=(4, 4))
    np.testing.assert_allclose(grad(jf.constant(x)).numpy(), np.diag(2 * np.diag(x)))
    x5 = rng.normal(size=(5, 5))
    np.testing.assert_allclose(grad(jf.constant(x5)).numpy(), np.diag(2 * np.diag(x5)))
