"""The CUDA kernels of the convolution, pooling, bias and activation ops against their CPU kernels.

Tiny shapes: under NUMBA_ENABLE_CUDASIM=1 every GPU thread is a Python thread. Each
case runs the CPU kernel and the CUDA kernel (on device copies) and compares them;
a `jf.function` with a conv step placed on the GPU checks that graphs run them too.
"""
from __future__ import annotations

import numpy as np
import pytest

import jitflow as jf  # noqa: F401 - registers the ops
from jitflow.runtime.ops.registry import KERNELS
from jitflow.runtime.execution import placement
from jitflow.runtime.execution import device_memory as D

TABLE = placement.cuda_table()
RNG = np.random.default_rng(3)
CONV = {"strides": (1, 1, 1, 1), "padding": "SAME", "dilations": (1, 1, 1, 1), "data_format": "NHWC"}
CONV_STRIDED = {"strides": (1, 2, 1, 1), "padding": "VALID", "dilations": (1, 1, 1, 1), "data_format": "NHWC"}
CONV_DILATED = {"strides": (1, 1, 1, 1), "padding": "SAME", "dilations": (1, 2, 2, 1), "data_format": "NHWC"}
POOL = {"ksize": (1, 2, 2, 1), "strides": (1, 1, 2, 1), "padding": "SAME", "data_format": "NHWC"}


def _cases(dtype):
    x = RNG.normal(size=(2, 4, 3, 2)).astype(dtype)
    w = RNG.normal(size=(2, 2, 2, 3)).astype(dtype)
    out = []
    for attrs in (CONV, CONV_STRIDED, CONV_DILATED):
        y = KERNELS["cpu"]["Conv2D"](x, w, **attrs)
        g = RNG.normal(size=y.shape).astype(dtype)
        out += [("Conv2D", (x, w), attrs),
                ("Conv2DBackpropInput", (w, g), {**attrs, "input_sizes": x.shape}),
                ("Conv2DBackpropFilter", (x, g), {**attrs, "filter_sizes": w.shape})]
        wd = RNG.normal(size=(2, 2, 2, 2)).astype(dtype)
        yd = KERNELS["cpu"]["DepthwiseConv2dNative"](x, wd, **attrs)
        gd = RNG.normal(size=yd.shape).astype(dtype)
        out += [("DepthwiseConv2dNative", (x, wd), attrs),
                ("DepthwiseConv2dNativeBackpropInput", (wd, gd), {**attrs, "input_sizes": x.shape}),
                ("DepthwiseConv2dNativeBackpropFilter", (x, gd), {**attrs, "filter_sizes": wd.shape})]
    xp = (RNG.permutation(x.size).reshape(x.shape) * 0.5).astype(dtype)  # no ties
    y = KERNELS["cpu"]["MaxPool"](xp, **POOL)
    g = RNG.normal(size=y.shape).astype(dtype)
    out += [("MaxPool", (xp,), POOL), ("MaxPoolGrad", (xp, y, g), POOL), ("AvgPool", (x,), POOL),
            ("AvgPoolGrad", (g,), {**POOL, "orig_input_shape": x.shape}),
            ("BiasAdd", (x, w[0, 0, 0, :2].copy()), {"data_format": "NHWC"}),
            ("BiasAddGrad", (x,), {"data_format": "NHWC"}),
            ("Softplus", (x,), {}), ("Elu", (x,), {}), ("LeakyRelu", (x,), {"alpha": 0.2})]
    return out


TOL = {np.float16: 2e-2, np.float32: 2e-5, np.float64: 1e-12}


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16])
def test_cuda_kernels_match_cpu(dtype):
    for op, args, attrs in _cases(dtype):
        kattrs = {k: v for k, v in attrs.items() if not k.startswith("_")}
        want = KERNELS["cpu"][op](*args, **kattrs)
        got = D.to_host(TABLE[op](*[D.to_device(a) for a in args], **kattrs))
        assert got.dtype == want.dtype and got.shape == want.shape, op
        np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=TOL[dtype], atol=TOL[dtype],
                                   err_msg=f"{op} {attrs}")


def test_every_new_op_has_its_own_cuda_kernel():
    for op in ("Conv2D", "Conv2DBackpropInput", "Conv2DBackpropFilter", "DepthwiseConv2dNative",
               "DepthwiseConv2dNativeBackpropInput", "DepthwiseConv2dNativeBackpropFilter", "MaxPool", "MaxPoolGrad",
               "AvgPool",
               "AvgPoolGrad", "BiasAdd", "BiasAddGrad", "Softplus", "Elu", "LeakyRelu"):
        assert placement.has_gpu_kernel(op), op


def test_a_conv_train_step_runs_on_the_gpu():
    x = RNG.normal(size=(1, 4, 4, 1)).astype(np.float32)
    w = RNG.normal(size=(2, 2, 1, 2)).astype(np.float32)

    @jf.function
    def step(x, w):
        with jf.GradientTape() as tape:
            tape.watch(w)
            y = jf.nn.max_pool2d(jf.nn.relu(jf.nn.conv2d(x, w, 1, "SAME")), 2, 2, "VALID")
            loss = jf.reduce_sum(y * y)
        return loss, tape.gradient(loss, w)

    with jf.device("/GPU:0"):
        loss, grad = step(jf.constant(x), jf.constant(w))
    with jf.device("/CPU:0"):
        want_loss, want_grad = step(jf.constant(x), jf.constant(w))
    np.testing.assert_allclose(loss.numpy(), want_loss.numpy(), rtol=1e-5)
    np.testing.assert_allclose(grad.numpy(), want_grad.numpy(), rtol=1e-5, atol=1e-6)
