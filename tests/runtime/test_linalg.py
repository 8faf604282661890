"""jf.linalg.inv / det (ops with LAPACK kernels) and their gradients; TF's values are checked in
tests/tf_api/snippets_api_gaps.txt."""
import numpy as np
import pytest

import jitflow as jf

rng = np.random.default_rng(11)


def _spd(n, batch=()):
    a = rng.normal(size=batch + (n, n))
    return a @ np.swapaxes(a, -1, -2) + n * np.eye(n)


@pytest.mark.parametrize("batch", [(), (2,), (2, 3)])
def test_inverse_and_determinant_match_numpy(batch):
    a = _spd(3, batch)
    np.testing.assert_allclose(jf.linalg.inv(a).numpy(), np.linalg.inv(a), rtol=1e-10)
    np.testing.assert_allclose(jf.linalg.det(a).numpy(), np.linalg.det(a), rtol=1e-10)
    assert jf.linalg.det(a).shape == batch
    np.testing.assert_allclose(jf.linalg.inv(a.astype(np.float32), adjoint=True).numpy(),
                               np.linalg.inv(np.swapaxes(a, -1, -2)), rtol=1e-4)


def _numeric(fn, x, eps=1e-6):
    g = np.zeros_like(x)
    for idx in np.ndindex(x.shape):
        xp, xm = x.copy(), x.copy()
        xp[idx] += eps
        xm[idx] -= eps
        g[idx] = (fn(xp) - fn(xm)) / (2 * eps)
    return g


@pytest.mark.parametrize("adjoint", [False, True])
def test_gradients_match_finite_differences(adjoint):
    a = _spd(3) + rng.normal(size=(3, 3)) * 0.3  # not symmetric: the adjoint matters
    w = rng.normal(size=(3, 3))
    t = jf.constant(a)
    with jf.GradientTape(persistent=True) as tape:
        tape.watch(t)
        li = jf.reduce_sum(jf.linalg.inv(t, adjoint=adjoint) * w)
        ld = jf.linalg.det(t) ** 2
    inv = (lambda v: np.linalg.inv(v.T)) if adjoint else np.linalg.inv
    np.testing.assert_allclose(tape.gradient(li, t).numpy(), _numeric(lambda v: float(np.sum(inv(v) * w)), a),
                               rtol=1e-5, atol=1e-8)
    np.testing.assert_allclose(tape.gradient(ld, t).numpy(), _numeric(lambda v: float(np.linalg.det(v) ** 2), a),
                               rtol=1e-5, atol=1e-8)


def test_traced_and_bad_inputs():
    f = jf.function(lambda m: jf.linalg.det(m) * jf.linalg.trace(jf.linalg.inv(m)))
    a = _spd(4)
    np.testing.assert_allclose(float(f(jf.constant(a))), np.linalg.det(a) * np.trace(np.linalg.inv(a)), rtol=1e-10)
    with pytest.raises(jf.errors.InvalidArgumentError, match="not invertible"):
        jf.linalg.inv([[1.0, 2.0], [2.0, 4.0]])
    with pytest.raises(jf.errors.InvalidArgumentError, match="square"):
        jf.linalg.det(jf.zeros([2, 3]))
    with pytest.raises(TypeError, match="input must be a floating-point or complex"):
        jf.linalg.inv(jf.constant([[1, 0], [0, 1]]))
