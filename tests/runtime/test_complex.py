"""Complex dtypes: ops, TF's gradient convention and the compiled tier (issue #17).

Values and gradients are compared with TensorFlow in tests/tf_api (snippets_complex.txt);
here: numpy as the oracle, finite differences for the gradient convention, and the
compiled tier against the interpreter (bit-identical, as for real dtypes).
"""
import numpy as np
import pytest

import jitflow as jf

rng = np.random.default_rng(7)


def _c(shape, dtype=np.complex64):
    return (rng.normal(size=shape) + 1j * rng.normal(size=shape)).astype(dtype)


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("JITFLOW_CACHE_DIR", str(tmp_path / "jfcache"))


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
def test_ops_match_numpy(dtype):
    z, w = _c((3, 4), dtype), _c((4, 2), dtype)
    tol = 1e-5 if dtype == np.complex64 else 1e-12
    checks = [
        (jf.reduce_sum(z, axis=1), z.sum(1)), (jf.reduce_mean(z), z.mean()), (jf.reduce_prod(z, axis=0), z.prod(0)),
        (jf.matmul(z, w), z @ w), (jf.matmul(z, z, adjoint_b=True), z @ z.conj().T),
        (jf.exp(z), np.exp(z)), (jf.sqrt(z), np.sqrt(z)), (jf.math.log(z), np.log(z)), (jf.tanh(z), np.tanh(z)),
        (jf.abs(z), np.abs(z)), (jf.math.angle(z), np.angle(z)), (jf.math.conj(z), z.conj()),
        (jf.math.real(z), z.real), (jf.math.imag(z), z.imag), (jf.math.reduce_variance(z), np.var(z)),
        (jf.einsum("ij,jk->ik", z, w), z @ w), (jf.complex(z.real, z.imag), z),
    ]
    for got, want in checks:
        assert got.numpy().dtype == np.asarray(want).dtype
        np.testing.assert_allclose(got.numpy(), want, rtol=tol, atol=tol)


def _loss_grad(loss, z):
    t = jf.constant(z)
    with jf.GradientTape() as tape:
        tape.watch(t)
        y = loss(t)
    return tape.gradient(y, t).numpy()


def _finite_difference(loss, z, eps=1e-6):
    """dL/dx + i dL/dy for a real loss L: TF's convention for complex gradients."""
    out = np.zeros_like(z)
    for idx in np.ndindex(z.shape):
        for step, unit in ((eps, 1.0), (eps * 1j, 1j)):
            zp, zm = z.copy(), z.copy()
            zp[idx] += step
            zm[idx] -= step
            d = (float(loss(jf.constant(zp))) - float(loss(jf.constant(zm)))) / (2 * eps)
            out[idx] += unit * d
    return out


@pytest.mark.parametrize("loss", [
    lambda z: jf.reduce_sum(jf.abs(z) ** 2),
    lambda z: jf.reduce_sum(jf.math.real(jf.exp(z) * jf.math.conj(z))),
    lambda z: jf.reduce_sum(jf.math.angle(z * z)),
    lambda z: jf.math.real(jf.reduce_prod(z)) + jf.math.imag(jf.reduce_mean(jf.sqrt(z))),
    lambda z: jf.reduce_sum(jf.abs(jf.matmul(z, z, adjoint_a=True))),
    lambda z: jf.reduce_sum(jf.math.imag(jf.tanh(z) / (z + 2.0))),
])
def test_gradient_of_a_real_loss_is_df_dx_plus_i_df_dy(loss):
    z = _c((2, 2), np.complex128)
    np.testing.assert_allclose(_loss_grad(loss, z), _finite_difference(loss, z), rtol=1e-5, atol=1e-6)


def test_compiled_tier_fuses_complex_ops_with_the_interpreters_results(cache_dir):
    def body(z, w):
        a = jf.exp(z) * w + jf.math.conj(z) / (w + 1.0)
        b = jf.matmul(a, w, adjoint_b=True)
        c = jf.sqrt(b) + jf.complex(jf.math.real(a), jf.abs(w)) - jf.cast(jf.math.angle(z), jf.complex64)
        return (jf.reduce_sum(c), jf.reduce_mean(c * c), jf.reduce_prod(c), jf.math.imag(c),
                jf.tanh(c) + jf.sin(a) * jf.cos(a) + jf.math.log(c))

    z, w = _c((2, 2)), _c((2, 2))
    interpreted = jf.function(body, jit_compile=False)
    compiled = jf.function(body, jit_compile=True)
    for a, b in zip(interpreted(z, w), compiled(z, w)):
        assert a.dtype == b.dtype
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    cf = compiled.get_concrete_function(z, w)
    assert cf.tier == "compiled"
    fused = {n.op.tf_op for seg in cf._fast.segments for n in seg.fused}
    assert {"Complex", "ComplexAbs", "Conj", "Real", "Imag", "Angle", "Exp", "Sqrt", "MatMul", "Sum", "Prod"} <= fused


def test_real_inputs_to_complex_functions():
    x = jf.constant([-2.0, 3.0])
    assert jf.math.real(x) is x and jf.math.conj(x) is x
    assert jf.math.imag(x).numpy().tolist() == [0.0, 0.0]
    np.testing.assert_allclose(jf.math.angle(x).numpy(), [np.pi, 0.0])


def test_bad_inputs_name_the_argument():
    with pytest.raises(TypeError, match="real must be a float32 or float64"):
        jf.complex(jf.constant([1, 2]), jf.constant([1, 2]))
    with pytest.raises(TypeError, match="imag has dtype float64"):
        jf.complex(jf.constant([1.0]), jf.constant([1.0], jf.float64))
    with pytest.raises(TypeError, match="complex"):
        jf.reduce_max(jf.constant([1j]))
    with pytest.raises(ValueError, match="only one of each pair"):
        jf.matmul([[1j]], [[1j]], transpose_a=True, adjoint_a=True)


@pytest.mark.parametrize("op", ["Real", "Imag", "Conj", "Angle", "ComplexAbs", "Exp", "Log", "Sqrt", "Sin", "Cos",
                                "Tanh", "Sum", "Prod", "Mean", "MatMul"])
@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
def test_cpu_kernels_match_their_numpy_reference(op, dtype):
    from jitflow.runtime.ops.registry import KERNELS, OPS, bind_kernel
    z = _c((3, 3), dtype)
    attrs = {"axis": (1,), "keepdims": False} if op in ("Sum", "Prod", "Mean") else (
        {"transpose_a": False, "transpose_b": True} if op == "MatMul" else {})
    args = (z, z) if op == "MatMul" else (z,)
    in_dtypes = [jf.as_dtype(dtype)] * len(args)
    got = np.asarray(bind_kernel(OPS[op], "cpu", attrs, in_dtypes)(*args))
    want = np.asarray(KERNELS["reference"][op](*args, **attrs))
    assert got.dtype == want.dtype
    np.testing.assert_allclose(got, want, rtol=1e-5 if dtype == np.complex64 else 1e-12)


def test_complex_kernel_matches_reference():
    from jitflow.runtime.ops.registry import KERNELS, OPS, bind_kernel
    re, im = rng.normal(size=(2, 3)).astype(np.float32), rng.normal(size=(2, 3)).astype(np.float32)
    got = bind_kernel(OPS["Complex"], "cpu", {}, [jf.float32, jf.float32])(re, im)
    want = KERNELS["reference"]["Complex"](re, im)
    assert got.dtype == np.complex64 and want.dtype == np.complex64
    np.testing.assert_array_equal(got, want)
