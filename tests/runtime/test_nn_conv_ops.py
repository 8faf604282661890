"""Convolution, pooling, bias and activation ops (runtime/ops/nn_conv_ops.py, runtime/gradients_nn.py).

- every CPU kernel (im2col + BLAS, numba loops) against its independent numpy reference,
  over geometries that exercise strides, dilations, SAME/VALID padding with odd padding,
  1x1 shortcuts, float16/32/64;
- shape rules and clear errors;
- every gradient against central finite differences (float64), eagerly and inside
  `jf.function` (the backward pass is graph nodes);
- a TensorFlow cross-check of the forward ops when TF is installed.
"""
from __future__ import annotations

import numpy as np
import pytest

import jitflow as jf
from jitflow.runtime.ops.registry import KERNELS, OPS
from jitflow.runtime.core.errors import InvalidArgumentError
from jitflow.runtime.ops import nn_conv_ops as N
from jitflow.runtime.ops.registry import apply

RNG = np.random.default_rng(7)
TOL = {np.float16: 2e-2, np.float32: 2e-5, np.float64: 1e-12}

# (input shape, filter shape, strides, padding, dilations)
CONV_GEOMETRIES = [
    ((2, 7, 6, 3), (3, 2, 3, 4), (1, 1), "SAME", (1, 1)),
    ((2, 7, 6, 3), (3, 3, 3, 4), (2, 2), "VALID", (1, 1)),
    ((1, 8, 8, 2), (3, 3, 2, 2), (1, 1), "SAME", (2, 2)),
    ((1, 9, 7, 2), (2, 3, 2, 3), (1, 1), "VALID", (2, 1)),
    ((2, 5, 5, 3), (1, 1, 3, 4), (1, 1), "VALID", (1, 1)),   # the 1x1 shortcut (no im2col)
    ((2, 6, 7, 3), (3, 3, 3, 2), (2, 3), "SAME", (1, 1)),
    ((3, 4, 4, 1), (4, 4, 1, 2), (1, 1), "SAME", (1, 1)),    # even kernel: padding 1 before, 2 after
]
POOL_GEOMETRIES = [((1, 2, 2, 1), (1, 2, 2, 1), "VALID"), ((1, 3, 2, 1), (1, 2, 2, 1), "SAME"),
                   ((1, 3, 3, 1), (1, 1, 1, 1), "SAME"), ((1, 2, 3, 1), (1, 2, 1, 1), "VALID")]


def _attrs(strides, padding, dilations):
    return {"strides": N._four(strides, "strides"), "padding": padding, "dilations": N._four(dilations, "d"),
            "data_format": "NHWC"}


def _close(got, want, dtype):
    assert got.dtype == np.dtype(dtype) and got.shape == want.shape
    tol = TOL[dtype]
    np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=tol, atol=tol)


# -- kernels against the reference ------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
@pytest.mark.parametrize("geometry", CONV_GEOMETRIES, ids=[str(i) for i in range(len(CONV_GEOMETRIES))])
def test_convolution_kernels_match_the_reference(geometry, dtype):
    xs, ws, strides, padding, dilations = geometry
    x, w = RNG.normal(size=xs).astype(dtype), RNG.normal(size=ws).astype(dtype)
    attrs = _attrs(strides, padding, dilations)
    y = KERNELS["cpu"]["Conv2D"](x, w, **attrs)
    _close(y, KERNELS["reference"]["Conv2D"](x, w, **attrs), dtype)
    (dims, _), = OPS["Conv2D"].infer([(xs, jf.as_dtype(dtype)), (ws, jf.as_dtype(dtype))], attrs)
    assert dims == y.shape
    g = RNG.normal(size=y.shape).astype(dtype)
    _close(KERNELS["cpu"]["Conv2DBackpropInput"](w, g, input_sizes=xs, **attrs),
           KERNELS["reference"]["Conv2DBackpropInput"](w, g, input_sizes=xs, **attrs), dtype)
    _close(KERNELS["cpu"]["Conv2DBackpropFilter"](x, g, filter_sizes=ws, **attrs),
           KERNELS["reference"]["Conv2DBackpropFilter"](x, g, filter_sizes=ws, **attrs), dtype)


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
@pytest.mark.parametrize("geometry", CONV_GEOMETRIES, ids=[str(i) for i in range(len(CONV_GEOMETRIES))])
def test_depthwise_kernels_match_the_reference(geometry, dtype):
    xs, (kh, kw, c, _), strides, padding, dilations = geometry
    ws = (kh, kw, c, 2)   # channel multiplier 2
    x, w = RNG.normal(size=xs).astype(dtype), RNG.normal(size=ws).astype(dtype)
    attrs = _attrs(strides, padding, dilations)
    y = KERNELS["cpu"]["DepthwiseConv2dNative"](x, w, **attrs)
    _close(y, KERNELS["reference"]["DepthwiseConv2dNative"](x, w, **attrs), dtype)
    (dims, _), = OPS["DepthwiseConv2dNative"].infer([(xs, jf.as_dtype(dtype)), (ws, jf.as_dtype(dtype))], attrs)
    assert dims == y.shape == xs[:1] + y.shape[1:3] + (c * 2,)
    g = RNG.normal(size=y.shape).astype(dtype)
    _close(KERNELS["cpu"]["DepthwiseConv2dNativeBackpropInput"](w, g, input_sizes=xs, **attrs),
           KERNELS["reference"]["DepthwiseConv2dNativeBackpropInput"](w, g, input_sizes=xs, **attrs), dtype)
    _close(KERNELS["cpu"]["DepthwiseConv2dNativeBackpropFilter"](x, g, filter_sizes=ws, **attrs),
           KERNELS["reference"]["DepthwiseConv2dNativeBackpropFilter"](x, g, filter_sizes=ws, **attrs), dtype)


def test_depthwise_is_a_grouped_convolution():
    # Independent oracle: channel c of a depthwise conv is an ordinary conv of channel c alone.
    x, w = RNG.normal(size=(1, 5, 5, 2)), RNG.normal(size=(3, 3, 2, 2))
    got = jf.nn.depthwise_conv2d(x, w, 1, "SAME").numpy()
    for c in range(2):
        want = jf.nn.conv2d(x[..., c:c + 1], w[:, :, c:c + 1, :], 1, "SAME").numpy()
        np.testing.assert_allclose(got[..., 2 * c:2 * c + 2], want, rtol=1e-12)


def test_reference_convolution_is_the_textbook_sum():
    # An independent oracle for the reference itself: the 6-deep loop, on one small case.
    x, w = RNG.normal(size=(1, 4, 5, 2)), RNG.normal(size=(2, 3, 2, 3))
    want = np.zeros((1, 3, 3, 3))
    for i in range(3):
        for j in range(3):
            want[0, i, j] = np.einsum("abc,abco->o", x[0, i:i + 2, j:j + 3], w)
    np.testing.assert_allclose(KERNELS["reference"]["Conv2D"](x, w, **_attrs(1, "VALID", 1)), want, rtol=1e-12)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("ksize, strides, padding", POOL_GEOMETRIES)
def test_pooling_kernels_match_the_reference(ksize, strides, padding, dtype):
    x = RNG.permutation(2 * 5 * 7 * 3).reshape(2, 5, 7, 3).astype(dtype) * 0.5 - 10  # no ties
    attrs = {"ksize": ksize, "strides": strides, "padding": padding, "data_format": "NHWC"}
    for op in ("MaxPool", "AvgPool"):
        got = KERNELS["cpu"][op](x, **attrs)
        _close(got, KERNELS["reference"][op](x, **attrs), dtype)
        (dims, _), = OPS[op].infer([(x.shape, jf.as_dtype(dtype))], attrs)
        assert dims == got.shape
    y = KERNELS["cpu"]["MaxPool"](x, **attrs)
    g = RNG.normal(size=y.shape).astype(dtype)
    _close(KERNELS["cpu"]["MaxPoolGrad"](x, y, g, **attrs), KERNELS["reference"]["MaxPoolGrad"](x, y, g, **attrs),
           dtype)
    _close(KERNELS["cpu"]["AvgPoolGrad"](g, orig_input_shape=x.shape, **attrs),
           KERNELS["reference"]["AvgPoolGrad"](g, orig_input_shape=x.shape, **attrs), dtype)


def test_max_pool_gradient_goes_to_the_first_maximum_of_a_tie():
    x = np.array([[1.0, 3.0], [3.0, 0.0]]).reshape(1, 2, 2, 1)
    attrs = {"ksize": (1, 2, 2, 1), "strides": (1, 2, 2, 1), "padding": "VALID", "data_format": "NHWC"}
    for table in ("cpu", "reference"):
        dx = KERNELS[table]["MaxPoolGrad"](x, np.array([[[[3.0]]]]), np.array([[[[1.0]]]]), **attrs)
        np.testing.assert_array_equal(dx.ravel(), [0, 1, 0, 0])


def test_average_pool_same_padding_divides_by_the_real_elements():
    x = np.ones((1, 3, 3, 1), np.float32)
    out = jf.nn.avg_pool2d(x, 2, 2, "SAME").numpy()
    np.testing.assert_array_equal(out, np.ones((1, 2, 2, 1), np.float32))  # TF: padding is not averaged in


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_bias_and_activation_kernels_match_the_reference(dtype):
    x = np.concatenate([RNG.normal(size=20) * 3, [0.0, -0.0, 40.0, -40.0]]).astype(dtype).reshape(4, 6)
    b = RNG.normal(size=6).astype(dtype)
    _close(KERNELS["cpu"]["BiasAdd"](x, b), KERNELS["reference"]["BiasAdd"](x, b), dtype)
    _close(KERNELS["cpu"]["BiasAddGrad"](x), KERNELS["reference"]["BiasAddGrad"](x), dtype)
    for op in ("Softplus", "Elu"):
        _close(KERNELS["cpu"][op](x), KERNELS["reference"][op](x), dtype)
    _close(KERNELS["cpu"]["LeakyRelu"](x, alpha=0.2), KERNELS["reference"]["LeakyRelu"](x, alpha=0.2), dtype)


def test_softplus_does_not_overflow():
    out = jf.nn.softplus(np.array([-1000.0, 0.0, 1000.0], np.float32)).numpy()
    np.testing.assert_allclose(out, [0.0, np.log(2.0), 1000.0], rtol=1e-6)


# -- shape rules and errors --------------------------------------------------------------------------------
def test_public_functions_and_static_shapes():
    x = jf.ones([2, 28, 28, 1])
    y = jf.nn.conv2d(x, jf.ones([3, 3, 1, 32]), strides=1, padding="VALID")
    assert y.shape.as_list() == [2, 26, 26, 32]
    assert jf.nn.max_pool2d(y, 2, 2, "VALID").shape.as_list() == [2, 13, 13, 32]
    assert jf.nn.conv2d(x, jf.ones([5, 5, 1, 4]), strides=2, padding="SAME").shape.as_list() == [2, 14, 14, 4]
    m, v = jf.nn.moments(jf.constant([[1.0, 3.0], [5.0, 7.0]]), axes=[0])
    np.testing.assert_allclose(m.numpy(), [3.0, 5.0])
    np.testing.assert_allclose(v.numpy(), [4.0, 4.0])


def test_unknown_batch_keeps_static_spatial_dims_in_a_trace():
    @jf.function(input_signature=[jf.TensorSpec([None, 8, 8, 3], jf.float32)])
    def f(x):
        return jf.nn.max_pool2d(jf.nn.conv2d(x, jf.ones([3, 3, 3, 5]), 1, "SAME"), 2, 2, "VALID")
    assert f.get_concrete_function().structured_outputs.shape.as_list() == [None, 4, 4, 5]


@pytest.mark.parametrize("call, message", [
    (lambda: jf.nn.conv2d(jf.ones([1, 5, 5, 3]), jf.ones([3, 3, 2, 4]), 1, "SAME"),
     r"input has 3 channels \(shape \(1, 5, 5, 3\)\) but filters expect 2"),
    (lambda: jf.nn.conv2d(jf.ones([5, 5, 3]), jf.ones([3, 3, 3, 4]), 1, "SAME"), r"input must be 4-D"),
    (lambda: jf.nn.conv2d(jf.ones([1, 2, 2, 1]), jf.ones([3, 3, 1, 1]), 1, "VALID"), r"larger than the input"),
    (lambda: jf.nn.conv2d(jf.ones([1, 5, 5, 1]), jf.ones([3, 3, 1, 1]), 1, "FULL"), r"padding: expected 'SAME'"),
    (lambda: jf.nn.conv2d(jf.ones([1, 5, 5, 1]), jf.ones([3, 3, 1, 1]), [2, 2, 2, 2], "SAME"),
     r"must be 1 in the batch and channel"),
    (lambda: jf.nn.conv2d(jf.ones([1, 5, 5, 1], jf.int32), jf.ones([3, 3, 1, 1], jf.int32), 1, "SAME"),
     r"floating-point"),
    (lambda: jf.nn.bias_add(jf.ones([2, 3]), jf.ones([4])), r"bias has 4 entries but value has 3 channels"),
    (lambda: jf.nn.max_pool2d(jf.ones([1, 4, 4, 1]), 0, 1, "SAME"), r"ksize: every entry must be >= 1"),
])
def test_bad_arguments_raise_errors_naming_them(call, message):
    with pytest.raises((InvalidArgumentError, ValueError, TypeError), match=message):
        call()


# -- gradients against finite differences ------------------------------------------------------------------
def r(*shape):
    return RNG.uniform(-1, 1, size=shape)


def distinct(*shape):
    n = int(np.prod(shape))
    return (RNG.permutation(n) * 0.37 - n * 0.15).reshape(shape)


def away(*shape):
    return RNG.uniform(0.2, 1.0, size=shape) * RNG.choice([-1.0, 1.0], size=shape)


def _raw_avg_pool_grad(g):
    return apply("AvgPoolGrad", [g], {"orig_input_shape": (1, 5, 4, 2), "ksize": (1, 3, 3, 1),
                                      "strides": (1, 2, 2, 1), "padding": "SAME", "data_format": "NHWC"})[0]


def _raw_bias_add_grad(g):
    return apply("BiasAddGrad", [g], {"data_format": "NHWC"})[0]


GRAD_CASES = [
    ("Conv2D", lambda x, w: jf.nn.conv2d(x, w, 1, "SAME"), [r(2, 4, 5, 2), r(3, 2, 2, 3)]),
    ("Conv2D", lambda x, w: jf.nn.conv2d(x, w, 2, "VALID"), [r(1, 5, 6, 2), r(3, 3, 2, 2)]),
    ("Conv2D", lambda x, w: jf.nn.conv2d(x, w, 1, "SAME", dilations=2), [r(1, 5, 5, 1), r(2, 2, 1, 2)]),
    ("Conv2DBackpropInput", lambda w, g: N.conv2d_backprop_input((1, 4, 4, 2), w, g, 1, "SAME"),
     [r(3, 3, 2, 2), r(1, 4, 4, 2)]),
    ("Conv2DBackpropFilter", lambda x, g: N.conv2d_backprop_filter(x, (2, 2, 2, 3), g, 1, "VALID"),
     [r(1, 4, 4, 2), r(1, 3, 3, 3)]),
    ("DepthwiseConv2dNative", lambda x, w: jf.nn.depthwise_conv2d(x, w, 1, "SAME"), [r(1, 4, 5, 2), r(3, 2, 2, 2)]),
    ("DepthwiseConv2dNativeBackpropInput",
     lambda w, g: N.depthwise_conv2d_backprop_input((1, 4, 4, 2), w, g, 2, "SAME"), [r(3, 3, 2, 1), r(1, 2, 2, 2)]),
    ("DepthwiseConv2dNativeBackpropFilter",
     lambda x, g: N.depthwise_conv2d_backprop_filter(x, (2, 2, 2, 2), g, 1, "VALID"), [r(1, 3, 4, 2), r(1, 2, 3, 4)]),
    ("MaxPool", lambda x: jf.nn.max_pool2d(x, 2, 2, "SAME"), [distinct(2, 5, 5, 2)]),
    ("AvgPool", lambda x: jf.nn.avg_pool2d(x, 3, 2, "SAME"), [r(1, 5, 4, 2)]),
    ("AvgPoolGrad", _raw_avg_pool_grad, [r(1, 3, 2, 2)]),
    ("BiasAdd", lambda x, b: jf.nn.bias_add(x, b), [r(2, 3, 4), r(4)]),
    ("BiasAddGrad", _raw_bias_add_grad, [r(3, 4)]),
    ("Softplus", jf.nn.softplus, [r(3, 4) * 3]),
    ("Elu", jf.nn.elu, [away(3, 4)]),
    ("LeakyRelu", lambda x: jf.nn.leaky_relu(x, 0.3), [away(3, 4)]),
]


GRAD_IDS = [f"{op}-{i}" for i, (op, _, _) in enumerate(GRAD_CASES)]


def _taped(fn, xs, w):
    with jf.GradientTape() as tape:
        tape.watch(xs)
        loss = jf.reduce_sum(fn(*xs) * w)
    return tape.gradient(loss, xs), {rec.op for rec in tape._records}


def _numeric(fn, inputs, w, eps=1e-6):
    grads = []
    for i, x in enumerate(inputs):
        g = np.zeros_like(x)
        for idx in np.ndindex(x.shape):
            vals = []
            for sign in (1, -1):
                arrays = [a.copy() for a in inputs]
                arrays[i][idx] += sign * eps
                vals.append(float(np.sum(fn(*[jf.constant(a) for a in arrays]).numpy() * w)))
            g[idx] = (vals[0] - vals[1]) / (2 * eps)
        grads.append(g)
    return grads


@pytest.mark.parametrize("op, fn, inputs", GRAD_CASES, ids=GRAD_IDS)
def test_gradient_matches_finite_differences(op, fn, inputs):
    w = RNG.uniform(0.5, 1.5, size=fn(*[jf.constant(a) for a in inputs]).shape)
    grads, ops = _taped(fn, [jf.constant(a) for a in inputs], jf.constant(w))
    assert op in ops, f"the case for {op} recorded {sorted(ops)}"
    for i, (got, want) in enumerate(zip(grads, _numeric(fn, inputs, w))):
        assert got is not None and got.shape == inputs[i].shape, f"input {i}"
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-6, atol=1e-6, err_msg=f"input {i}")


@pytest.mark.filterwarnings("ignore::jitflow.runtime.tracing.function.RetraceWarning")
@pytest.mark.parametrize("op, fn, inputs", GRAD_CASES, ids=GRAD_IDS)
def test_gradient_inside_jf_function_equals_eager(op, fn, inputs):
    w = jf.constant(RNG.uniform(0.5, 1.5, size=fn(*[jf.constant(a) for a in inputs]).shape))
    eager, _ = _taped(fn, [jf.constant(a) for a in inputs], w)
    traced = jf.function(lambda *xs: _taped(fn, list(xs), w)[0])(*[jf.constant(a) for a in inputs])
    for a, b in zip(eager, traced):
        np.testing.assert_allclose(b.numpy(), a.numpy(), rtol=1e-12, atol=1e-12)


def test_second_derivative_of_a_convolution():
    x, w = jf.constant(r(1, 4, 4, 1)), jf.constant(r(2, 2, 1, 1))
    with jf.GradientTape() as outer:
        outer.watch(w)
        with jf.GradientTape() as inner:
            inner.watch(x)
            y = jf.reduce_sum(jf.square(jf.nn.conv2d(x, w, 1, "VALID")))
        gx = inner.gradient(y, x)
        z = jf.reduce_sum(gx)
    assert outer.gradient(z, w).shape.as_list() == [2, 2, 1, 1]


# -- TensorFlow cross-check ----------------------------------------------------------------------------------
@pytest.mark.tf
def test_forward_ops_match_tensorflow():
    tf = pytest.importorskip("tensorflow")
    for xs, ws, strides, padding, dilations in CONV_GEOMETRIES:
        if strides != (1, 1) and dilations != (1, 1):
            continue
        x, w = RNG.normal(size=xs).astype(np.float32), RNG.normal(size=ws).astype(np.float32)
        want = tf.nn.conv2d(x, w, strides=strides, padding=padding, dilations=dilations).numpy()
        got = jf.nn.conv2d(x, w, strides=strides, padding=padding, dilations=dilations).numpy()
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
    x = RNG.normal(size=(2, 5, 7, 3)).astype(np.float32)
    for ksize, strides, padding in POOL_GEOMETRIES:
        for jf_fn, tf_fn in ((jf.nn.max_pool2d, tf.nn.max_pool2d), (jf.nn.avg_pool2d, tf.nn.avg_pool2d)):
            np.testing.assert_allclose(jf_fn(x, ksize, strides, padding).numpy(),
                                       tf_fn(x, ksize, strides, padding).numpy(), rtol=1e-5, atol=1e-6)
    for name in ("softplus", "elu"):
        np.testing.assert_allclose(getattr(jf.nn, name)(x).numpy(), getattr(tf.nn, name)(x).numpy(), rtol=1e-5,
                                   atol=1e-6)
    np.testing.assert_allclose(jf.nn.leaky_relu(x).numpy(), tf.nn.leaky_relu(x).numpy(), rtol=1e-6)
    w = RNG.normal(size=(3, 3, 3, 2)).astype(np.float32)
    for strides, padding in (((1, 1, 1, 1), "SAME"), ((1, 2, 2, 1), "VALID")):
        np.testing.assert_allclose(jf.nn.depthwise_conv2d(x, w, strides, padding).numpy(),
                                   tf.nn.depthwise_conv2d(x, w, strides, padding).numpy(), rtol=1e-4, atol=1e-5)


# -- the blocked, threaded CPU paths -------------------------------------------------------------------------
@pytest.fixture
def threads():
    from jitflow.runtime.ops import cpu_parallel
    yield cpu_parallel.set_intra_op_threads
    cpu_parallel.set_intra_op_threads(0)


@pytest.mark.parametrize("xs, ws, strides, padding, dilations", [
    ((13, 9, 8, 5), (3, 3, 5, 7), (1, 1), "VALID", (1, 1)),   # K = 45: im2col + BLAS, several blocks
    ((11, 7, 9, 2), (3, 2, 2, 6), (2, 1), "SAME", (1, 1)),    # K = 12: the transposed matrix
    ((9, 10, 10, 4), (3, 3, 4, 3), (1, 1), "SAME", (2, 2)),
])
def test_blocked_threaded_convolution_matches_the_reference_on_any_thread_count(
        threads, monkeypatch, xs, ws, strides, padding, dilations):
    """Batches spanning many blocks and chains (blocks shrunk to a few images); 1 and 3
    threads give bit-identical results (chains fixed by the sizes, not the threads)."""
    from jitflow.runtime.ops import conv_cpu
    monkeypatch.setattr(conv_cpu, "BLOCK_BYTES", 2 * xs[1] * xs[2] * ws[0] * ws[1] * ws[2] * 4)
    x, w = RNG.normal(size=xs).astype(np.float32), RNG.normal(size=ws).astype(np.float32)
    attrs = _attrs(strides, padding, dilations)
    g = None
    results = []
    for n in (1, 3):
        threads(n)
        y = KERNELS["cpu"]["Conv2D"](x, w, **attrs)
        g = RNG.normal(size=y.shape).astype(np.float32) if g is None else g
        results.append((y, KERNELS["cpu"]["Conv2DBackpropInput"](w, g, input_sizes=xs, **attrs),
                        KERNELS["cpu"]["Conv2DBackpropFilter"](x, g, filter_sizes=ws, **attrs)))
    for one, three in zip(*results):
        np.testing.assert_array_equal(one, three)
    y, dx, dw = results[1]
    _close(y, KERNELS["reference"]["Conv2D"](x, w, **attrs), np.float32)
    _close(dx, KERNELS["reference"]["Conv2DBackpropInput"](w, g, input_sizes=xs, **attrs), np.float32)
    np.testing.assert_allclose(dw, KERNELS["reference"]["Conv2DBackpropFilter"](x, g, filter_sizes=ws, **attrs),
                               rtol=1e-4, atol=1e-4)


def test_threaded_pooling_and_bias_gradient_match_the_reference(threads):
    threads(2)
    x = RNG.normal(size=(9, 11, 10, 3)).astype(np.float32)
    x[0, :2, :2, 0] = 5.0   # a tie: the first maximum takes the gradient
    s = (1, 2, 2, 1)
    for k, padding in [((1, 3, 2, 1), "SAME"), ((1, 3, 2, 1), "VALID"), ((1, 2, 2, 1), "VALID")]:  # last: tiled
        y = KERNELS["cpu"]["MaxPool"](x, ksize=k, strides=s, padding=padding)
        _close(y, KERNELS["reference"]["MaxPool"](x, ksize=k, strides=s, padding=padding), np.float32)
        g = RNG.normal(size=y.shape).astype(np.float32)
        _close(KERNELS["cpu"]["MaxPoolGrad"](x, y, g, ksize=k, strides=s, padding=padding),
               KERNELS["reference"]["MaxPoolGrad"](x, y, g, ksize=k, strides=s, padding=padding), np.float32)
        _close(KERNELS["cpu"]["AvgPoolGrad"](g, orig_input_shape=x.shape, ksize=k, strides=s, padding=padding),
               KERNELS["reference"]["AvgPoolGrad"](g, orig_input_shape=x.shape, ksize=k, strides=s,
                                                   padding=padding), np.float32)
    big = RNG.normal(size=(40000, 5)).astype(np.float32)   # several chains of rows
    np.testing.assert_allclose(KERNELS["cpu"]["BiasAddGrad"](big), big.astype(np.float64).sum(axis=0),
                               rtol=1e-4, atol=1e-3)


def test_intra_op_pool_runs_every_piece_once_and_reraises_after_all_finished(threads):
    from jitflow.runtime.ops import cpu_parallel
    threads(3)
    seen = np.zeros(1000, int)

    def mark(lo, hi):
        seen[lo:hi] += 1
        cpu_parallel.run(lambda a, b: None, 10)   # a kernel inside a kernel runs serially
    cpu_parallel.run(mark, 1000)
    assert (seen == 1).all()
    finished = []

    def fail(lo, hi):
        if lo == 0:
            raise ValueError("piece 0")
        finished.extend(range(lo, hi))
    with pytest.raises(ValueError, match="piece 0"):
        cpu_parallel.run(fail, 12)
    assert finished and sorted(finished) == list(range(min(finished), 12))   # every other piece ran
    with pytest.raises(ValueError, match="non-negative integer"):
        cpu_parallel.set_intra_op_threads(-1)


def test_intra_op_threads_from_the_environment(monkeypatch):
    from jitflow.runtime.ops import cpu_parallel
    monkeypatch.setenv("JITFLOW_INTRA_OP_THREADS", "two")
    with pytest.raises(ValueError, match="JITFLOW_INTRA_OP_THREADS: expected a positive integer; got 'two'"):
        cpu_parallel._from_environment()
    monkeypatch.setenv("JITFLOW_INTRA_OP_THREADS", "3")
    assert cpu_parallel._from_environment() == 3


def test_config_threading_sets_the_kernels_threads(threads):
    jf.config.threading.set_intra_op_parallelism_threads(1)
    assert jf.config.threading.get_intra_op_parallelism_threads() == 1
    x = RNG.normal(size=(4, 6, 6, 3)).astype(np.float32)
    w = RNG.normal(size=(3, 3, 3, 4)).astype(np.float32)
    one = jf.nn.conv2d(x, w, 1, "SAME").numpy()
    jf.config.threading.set_intra_op_parallelism_threads(3)
    np.testing.assert_array_equal(jf.nn.conv2d(x, w, 1, "SAME").numpy(), one)
    with pytest.raises(ValueError, match="num_threads: expected a non-negative integer"):
        jf.config.threading.set_intra_op_parallelism_threads(-2)
