"""Gradients of the convolution, pooling, bias and activation ops (`ops/nn_conv_ops.py`).

Same shape as `gradients.py`: each function gets the op's `Record` and the output's
gradient and returns one gradient per input, written with jitflow ops so that the
backward pass is graph nodes inside `jf.function`. The convolution gradients are the
TF pairs (`Conv2DBackpropInput`, `Conv2DBackpropFilter`), and those two have gradients
of their own (each is a convolution of the others), so second derivatives work too.
"""
from __future__ import annotations

from typing import Any, Tuple

from jitflow.runtime.autodiff.tape import gradient, not_differentiable
from jitflow.runtime.core.errors import InvalidArgumentError
from jitflow.runtime.ops import array_ops as A
from jitflow.runtime.ops import math_ops as M
from jitflow.runtime.ops import nn_conv_ops as N
from jitflow.runtime.ops.registry import apply
from jitflow.runtime.core.shapes import format_dims

not_differentiable("MaxPoolGrad")


def _static(t: Any, what: str) -> Tuple:
    """`t`'s shape with an unknown batch allowed: gradient kernels take it from `dy`."""
    dims = t._dims
    if dims is None or any(d is None for d in dims[1:]):
        raise InvalidArgumentError(f"the gradient of a convolution needs the {what}'s height, width and "
                                   f"channels statically; got shape {format_dims(dims)}")
    return tuple(-1 if d is None else d for d in dims)


def _conv_attrs(rec):
    a = rec.attrs
    return {"strides": a["strides"], "padding": a["padding"], "dilations": a["dilations"]}


@gradient("Conv2D")
def _conv2d(rec, g):
    x, w = rec.inputs
    attrs = _conv_attrs(rec)
    return [N.conv2d_backprop_input(_static(x, "input"), w, g, **attrs),
            N.conv2d_backprop_filter(x, w._dims, g, **attrs)]


@gradient("Conv2DBackpropInput")
def _conv2d_backprop_input(rec, g):
    w, dy = rec.inputs
    attrs = _conv_attrs(rec)
    return [N.conv2d_backprop_filter(g, w._dims, dy, **attrs), N.conv2d(g, w, **attrs)]


@gradient("Conv2DBackpropFilter")
def _conv2d_backprop_filter(rec, g):
    x, dy = rec.inputs
    attrs = _conv_attrs(rec)
    return [N.conv2d_backprop_input(_static(x, "input"), g, dy, **attrs), N.conv2d(x, g, **attrs)]


@gradient("DepthwiseConv2dNative")
def _depthwise(rec, g):
    x, w = rec.inputs
    attrs = _conv_attrs(rec)
    return [N.depthwise_conv2d_backprop_input(_static(x, "input"), w, g, **attrs),
            N.depthwise_conv2d_backprop_filter(x, w._dims, g, **attrs)]


@gradient("DepthwiseConv2dNativeBackpropInput")
def _depthwise_backprop_input(rec, g):
    w, dy = rec.inputs
    attrs = _conv_attrs(rec)
    return [N.depthwise_conv2d_backprop_filter(g, w._dims, dy, **attrs), N.depthwise_conv2d(g, w, **attrs)]


@gradient("DepthwiseConv2dNativeBackpropFilter")
def _depthwise_backprop_filter(rec, g):
    x, dy = rec.inputs
    attrs = _conv_attrs(rec)
    return [N.depthwise_conv2d_backprop_input(_static(x, "input"), g, dy, **attrs), N.depthwise_conv2d(x, g, **attrs)]


@gradient("MaxPool")
def _max_pool(rec, g):
    a = rec.attrs
    return [_apply_max_pool_grad(rec.inputs[0], rec.output(), g, a)]


def _apply_max_pool_grad(x, y, g, a):
    return apply("MaxPoolGrad", [x, y, g], {"ksize": a["ksize"], "strides": a["strides"],
                                            "padding": a["padding"], "data_format": "NHWC"})[0]


@gradient("AvgPool")
def _avg_pool(rec, g):
    a = rec.attrs
    return [apply("AvgPoolGrad", [g], {"orig_input_shape": _static(rec.inputs[0], "input"), "ksize": a["ksize"],
                                       "strides": a["strides"], "padding": a["padding"],
                                       "data_format": "NHWC"})[0]]


@gradient("AvgPoolGrad")
def _avg_pool_grad(rec, g):
    a = rec.attrs
    return [N.avg_pool2d(g, a["ksize"], a["strides"], a["padding"])]


@gradient("BiasAdd")
def _bias_add(rec, g):
    return [g, apply("BiasAddGrad", [g], {"data_format": "NHWC"})[0]]


@gradient("BiasAddGrad")
def _bias_add_grad(rec, g):
    return [M.add(A.zeros_like(rec.inputs[0]), g)]


@gradient("Softplus")
def _softplus(rec, g):
    return [M.multiply(g, M.sigmoid(rec.inputs[0]))]


@gradient("Elu")
def _elu(rec, g):
    y = rec.output()
    return [A.where(M.greater(y, 0), g, M.multiply(g, M.add(y, 1.0)))]


@gradient("LeakyRelu")
def _leaky_relu(rec, g):
    x = rec.inputs[0]
    return [A.where(M.greater(x, 0), g, M.multiply(g, rec.attrs["alpha"]))]
