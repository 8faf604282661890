"""Convolution, pooling, bias and the smooth activations: the ops a CNN needs (TF's `tf.nn.*`).

Each op is registered with TensorFlow's op name and attrs (`Conv2D` with `strides`,
`padding`, `dilations`; `MaxPool` with `ksize`; NHWC layout, HWIO filters), a shape rule
that validates as it infers, the numba/BLAS CPU kernel and an independent numpy
reference (`nn_conv_kernels`). TF passes the sizes of the gradient ops
(`Conv2DBackpropInput`'s `input_sizes`, `AvgPoolGrad`'s `orig_input_shape`) as tensors;
here they are attrs (static, like `Reshape`'s shape), with an unknown batch taken from
the incoming gradient at run time. Batch normalisation is composed of primitives
(`moments` + `batch_normalization`), so it needs no op of its own.
"""
from __future__ import annotations

from typing import Any, Optional, Tuple

import numpy as np

from jitflow.runtime.core.errors import InvalidArgumentError
from jitflow.runtime.core.shapes import format_dims
from jitflow.runtime.ops import array_ops as A
from jitflow.runtime.ops import cpu_kernels as K
from jitflow.runtime.ops import math_ops as M
from jitflow.runtime.ops import nn_conv_kernels as NK
from jitflow.runtime.ops import nn_depthwise_kernels as DK
from jitflow.runtime.ops.constant_op import convert_to_tensor
from jitflow.runtime.ops.infer import check_kind, elementwise, same_dtype
from jitflow.runtime.ops.registry import apply, register

_PADDINGS = ("SAME", "VALID")


# -- attrs ------------------------------------------------------------------------------------------
def _four(value: Any, name: str, default: int = 1) -> Tuple[int, ...]:
    """An int, 2 ints (h, w) or 4 ints (NHWC, 1 for N and C) as TF's 4-tuple."""
    if value is None:
        value = default
    vals: Tuple[int, ...]
    if isinstance(value, (int, np.integer)):
        vals = (1, int(value), int(value), 1)
    else:
        seq = [int(v) for v in value]
        if len(seq) == 1:
            vals = (1, seq[0], seq[0], 1)
        elif len(seq) == 2:
            vals = (1, seq[0], seq[1], 1)
        elif len(seq) == 4:
            if seq[0] != 1 or seq[3] != 1:
                raise InvalidArgumentError(f"{name}: NHWC {name} must be 1 in the batch and channel "
                                           f"dimensions; got {seq}")
            vals = tuple(seq)
        else:
            raise ValueError(f"{name}: expected an int or a list of 1, 2 or 4 ints; got {list(value)}")
    if min(vals) < 1:
        raise ValueError(f"{name}: every entry must be >= 1; got {list(vals)}")
    return vals


def _padding(padding: Any) -> str:
    if not isinstance(padding, str) or padding.upper() not in _PADDINGS:
        raise ValueError(f"padding: expected 'SAME' or 'VALID'; got {padding!r}")
    return padding.upper()


def _data_format(data_format: Optional[str]) -> None:
    if data_format not in (None, "NHWC"):
        raise ValueError(f"data_format: only 'NHWC' is supported (channels last); got {data_format!r}")


# -- shape rules --------------------------------------------------------------------------------------
def _image(dims, what: str):
    if dims is not None and len(dims) != 4:
        raise InvalidArgumentError(f"{what} must be 4-D (batch, height, width, channels); got shape "
                                   f"{format_dims(dims)}")
    return (None,) * 4 if dims is None else tuple(dims)


def _spatial(size, k, stride, dilation, padding):
    if size is None or k is None:
        return None
    out, _ = NK.out_size(size, k, stride, dilation, padding)
    if padding == "VALID" and size < (k - 1) * dilation + 1:
        raise InvalidArgumentError(f"the window ({k} with dilation {dilation}) is larger than the input "
                                   f"({size}) with padding 'VALID'")
    return out


def _conv_infer(specs, attrs):
    (xd, xt), (fd, ft) = specs
    check_kind(xt, "f", "input")
    same_dtype(xt, ft, ("input", "filters"))
    n, h, w, c = _image(xd, "input")
    if fd is not None and len(fd) != 4:
        raise InvalidArgumentError(f"filters must be 4-D (height, width, in_channels, out_channels); got shape "
                                   f"{format_dims(fd)}")
    kh, kw, fc, o = (None,) * 4 if fd is None else fd
    if c is not None and fc is not None and c != fc:
        raise InvalidArgumentError(f"input has {c} channels (shape {format_dims(xd)}) but filters expect {fc} "
                                   f"(shape {format_dims(fd)})")
    s, d, p = attrs["strides"], attrs["dilations"], attrs["padding"]
    return [((n, _spatial(h, kh, s[1], d[1], p), _spatial(w, kw, s[2], d[2], p), o), xt)]


def _conv_input_infer(specs, attrs):
    (fd, ft), (gd, gt) = specs
    check_kind(gt, "f", "out_backprop")
    same_dtype(ft, gt, ("filters", "out_backprop"))
    sizes = tuple(attrs["input_sizes"])
    n = gd[0] if gd is not None else None
    return [((n,) + sizes[1:], gt)]


def _conv_filter_infer(specs, attrs):
    (xd, xt), (gd, gt) = specs
    check_kind(xt, "f", "input")
    same_dtype(xt, gt, ("input", "out_backprop"))
    return [(tuple(attrs["filter_sizes"]), xt)]


def _depthwise_infer(specs, attrs):
    (xd, xt), (fd, ft) = specs
    out = _conv_infer(specs, attrs)[0][0]
    c = xd[3] if xd is not None else None
    m = fd[3] if fd is not None else None
    return [(out[:3] + ((c * m) if c is not None and m is not None else None,), xt)]


def _pool_infer(specs, attrs):
    (xd, xt), = specs
    check_kind(xt, "f", "input")
    n, h, w, c = _image(xd, "input")
    k, s, p = attrs["ksize"], attrs["strides"], attrs["padding"]
    return [((n, _spatial(h, k[1], s[1], 1, p), _spatial(w, k[2], s[2], 1, p), c), xt)]


def _max_pool_grad_infer(specs, attrs):
    (xd, xt), _, (gd, gt) = specs
    same_dtype(xt, gt, ("orig_input", "grad"))
    return [(xd, xt)]


def _avg_pool_grad_infer(specs, attrs):
    (gd, gt), = specs
    check_kind(gt, "f", "grad")
    n = gd[0] if gd is not None else None
    return [((n,) + tuple(attrs["orig_input_shape"])[1:], gt)]


def _bias_infer(specs, attrs):
    (xd, xt), (bd, bt) = specs
    check_kind(xt, "f", "value")
    same_dtype(xt, bt, ("value", "bias"))
    if bd is not None and len(bd) != 1:
        raise InvalidArgumentError(f"bias must be 1-D; got shape {format_dims(bd)}")
    if xd is not None and len(xd) < 2:
        raise InvalidArgumentError(f"value must have at least 2 dimensions; got shape {format_dims(xd)}")
    if xd is not None and bd is not None and None not in (xd[-1], bd[0]) and xd[-1] != bd[0]:
        raise InvalidArgumentError(f"bias has {bd[0]} entries but value has {xd[-1]} channels in its last "
                                   f"dimension (shape {format_dims(xd)})")
    return [(xd, xt)]


def _bias_grad_infer(specs, attrs):
    (gd, gt), = specs
    check_kind(gt, "f", "out_backprop")
    return [(None if gd is None else (gd[-1],), gt)]


def _leaky_infer(specs, attrs):
    check_kind(specs[0][1], "f", "features")
    return [specs[0]]


register("Conv2D", _conv_infer, cpu=NK.conv2d, reference=NK.conv2d_ref, public_name="nn.conv2d")
register("Conv2DBackpropInput", _conv_input_infer, cpu=NK.conv2d_backprop_input,
         reference=NK.conv2d_backprop_input_ref, public_name="nn.conv2d_backprop_input")
register("Conv2DBackpropFilter", _conv_filter_infer, cpu=NK.conv2d_backprop_filter,
         reference=NK.conv2d_backprop_filter_ref, public_name="nn.conv2d_backprop_filter")
register("DepthwiseConv2dNative", _depthwise_infer, cpu=DK.depthwise_conv2d, reference=DK.depthwise_conv2d_ref,
         public_name="nn.depthwise_conv2d")
register("DepthwiseConv2dNativeBackpropInput", _conv_input_infer, cpu=DK.depthwise_conv2d_backprop_input,
         reference=DK.depthwise_conv2d_backprop_input_ref, public_name="nn.depthwise_conv2d_backprop_input")
register("DepthwiseConv2dNativeBackpropFilter", _conv_filter_infer, cpu=DK.depthwise_conv2d_backprop_filter,
         reference=DK.depthwise_conv2d_backprop_filter_ref, public_name="nn.depthwise_conv2d_backprop_filter")
register("MaxPool", _pool_infer, cpu=NK.max_pool, reference=NK.max_pool_ref, public_name="nn.max_pool2d")
register("MaxPoolGrad", _max_pool_grad_infer, cpu=NK.max_pool_grad, reference=NK.max_pool_grad_ref,
         public_name="nn.max_pool_grad")
register("AvgPool", _pool_infer, cpu=NK.avg_pool, reference=NK.avg_pool_ref, public_name="nn.avg_pool2d")
register("AvgPoolGrad", _avg_pool_grad_infer, cpu=NK.avg_pool_grad, reference=NK.avg_pool_grad_ref,
         public_name="nn.avg_pool_grad")
register("BiasAdd", _bias_infer, cpu=NK.bias_add, reference=NK.bias_add_ref, public_name="nn.bias_add")
register("BiasAddGrad", _bias_grad_infer, cpu=NK.bias_add_grad, reference=NK.bias_add_grad_ref,
         public_name="nn.bias_add_grad")
register("Softplus", elementwise("f"), cpu=K.UfuncKernel(NK.softplus_, "same", "Softplus"),
         reference=NK.softplus_ref, public_name="nn.softplus", bind=lambda k, a, d: k.bind(a, d))
register("Elu", elementwise("f"), cpu=K.UfuncKernel(NK.elu_, "same", "Elu"), reference=NK.elu_ref,
         public_name="nn.elu", bind=lambda k, a, d: k.bind(a, d))
register("LeakyRelu", _leaky_infer, cpu=NK.leaky_relu, reference=NK.leaky_relu_ref, public_name="nn.leaky_relu")


# -- public functions -----------------------------------------------------------------------------------
def conv2d(input, filters, strides=1, padding="VALID", data_format="NHWC", dilations=None, name=None):  # noqa: A002
    """2-D convolution of NHWC `input` with HWIO `filters` (TF's `tf.nn.conv2d`).

    >>> x = jf.ones([1, 4, 4, 1]); w = jf.ones([3, 3, 1, 2])
    >>> conv2d(x, w, strides=1, padding="SAME").shape
    TensorShape([1, 4, 4, 2])
    """
    _data_format(data_format)
    x = convert_to_tensor(input)
    w = convert_to_tensor(filters, dtype_hint=x.dtype)
    attrs = {"strides": _four(strides, "strides"), "padding": _padding(padding),
             "dilations": _four(dilations, "dilations"), "data_format": "NHWC"}
    if attrs["dilations"] != (1, 1, 1, 1) and attrs["strides"] != (1, 1, 1, 1):
        raise InvalidArgumentError(f"strides {list(attrs['strides'])} and dilations {list(attrs['dilations'])}: "
                                   "a convolution cannot have both strides and dilations > 1 (as in TF)")
    return apply("Conv2D", [x, w], attrs, name=name)[0]


def depthwise_conv2d(input, filter, strides, padding, data_format="NHWC", dilations=None, name=None):  # noqa: A002
    """Depthwise 2-D convolution (TF's `tf.nn.depthwise_conv2d`, 4-int strides or an int):
    each input channel c is convolved with its own `filter[:, :, c, :]`, giving
    channels·multiplier outputs (channel c·m + j).

    >>> depthwise_conv2d(jf.ones([1, 4, 4, 2]), jf.ones([3, 3, 2, 2]), 1, "SAME").shape
    TensorShape([1, 4, 4, 4])
    """
    _data_format(data_format)
    x = convert_to_tensor(input)
    w = convert_to_tensor(filter, dtype_hint=x.dtype)
    attrs = {"strides": _four(strides, "strides"), "padding": _padding(padding),
             "dilations": _four(dilations, "dilations"), "data_format": "NHWC"}
    return apply("DepthwiseConv2dNative", [x, w], attrs, name=name)[0]


def _depthwise_backprop(op: str, first, sizes_attr: str, sizes, second, strides, padding, dilations, name):
    return apply(op, [convert_to_tensor(first), convert_to_tensor(second)],
                 {sizes_attr: tuple(sizes), "strides": _four(strides, "strides"), "padding": _padding(padding),
                  "dilations": _four(dilations, "dilations"), "data_format": "NHWC"}, name=name)[0]


def depthwise_conv2d_backprop_input(input_sizes, filter, out_backprop, strides, padding, dilations=None,  # noqa: A002
                                    name=None):
    """The gradient of `depthwise_conv2d` with respect to its input (static `input_sizes`).

    >>> w, dy = jf.ones([2, 2, 2, 1]), jf.ones([1, 2, 2, 2])
    >>> jf.nn.depthwise_conv2d_backprop_input([1, 3, 3, 2], w, dy, [1, 1, 1, 1], 'VALID').shape
    TensorShape([1, 3, 3, 2])
    """
    return _depthwise_backprop("DepthwiseConv2dNativeBackpropInput", filter, "input_sizes", input_sizes,
                               out_backprop, strides, padding, dilations, name)


def depthwise_conv2d_backprop_filter(input, filter_sizes, out_backprop, strides, padding, dilations=None,  # noqa: A002
                                     name=None):
    """The gradient of `depthwise_conv2d` with respect to its filter (static `filter_sizes`).

    >>> x, dy = jf.ones([1, 3, 3, 2]), jf.ones([1, 2, 2, 2])
    >>> jf.nn.depthwise_conv2d_backprop_filter(x, [2, 2, 2, 1], dy, [1, 1, 1, 1], 'VALID').shape
    TensorShape([2, 2, 2, 1])
    """
    return _depthwise_backprop("DepthwiseConv2dNativeBackpropFilter", input, "filter_sizes",
                               [int(d) for d in filter_sizes], out_backprop, strides, padding, dilations, name)


def conv2d_backprop_input(input_sizes, filters, out_backprop, strides, padding, dilations=None, name=None):
    """The gradient of `conv2d` with respect to its input (static `input_sizes`, NHWC).

    >>> dy = jf.ones([1, 2, 2, 1])
    >>> jf.nn.conv2d_backprop_input([1, 3, 3, 1], jf.ones([2, 2, 1, 1]), dy, 1, 'VALID').numpy()[0, :, :, 0]
    array([[1., 2., 1.],
           [2., 4., 2.],
           [1., 2., 1.]], dtype=float32)
    """
    return apply("Conv2DBackpropInput", [convert_to_tensor(filters), convert_to_tensor(out_backprop)],
                 {"input_sizes": tuple(input_sizes), "strides": _four(strides, "strides"),
                  "padding": _padding(padding), "dilations": _four(dilations, "dilations"),
                  "data_format": "NHWC"}, name=name)[0]


def conv2d_backprop_filter(input, filter_sizes, out_backprop, strides, padding, dilations=None, name=None):  # noqa: A002
    """The gradient of `conv2d` with respect to its filters (static `filter_sizes`, HWIO).

    >>> x = jf.reshape(jf.range(9.0), [1, 3, 3, 1])
    >>> jf.nn.conv2d_backprop_filter(x, [2, 2, 1, 1], jf.ones([1, 2, 2, 1]), 1, 'VALID').numpy()[:, :, 0, 0]
    array([[ 8., 12.],
           [20., 24.]], dtype=float32)
    """
    return apply("Conv2DBackpropFilter", [convert_to_tensor(input), convert_to_tensor(out_backprop)],
                 {"filter_sizes": tuple(int(d) for d in filter_sizes), "strides": _four(strides, "strides"),
                  "padding": _padding(padding), "dilations": _four(dilations, "dilations"),
                  "data_format": "NHWC"}, name=name)[0]


def _pool(op: str, input, ksize, strides, padding, data_format, name):  # noqa: A002
    _data_format(data_format)
    return apply(op, [convert_to_tensor(input)],
                 {"ksize": _four(ksize, "ksize"), "strides": _four(strides, "strides"),
                  "padding": _padding(padding), "data_format": "NHWC"}, name=name)[0]


def max_pool2d(input, ksize, strides, padding, data_format="NHWC", name=None):  # noqa: A002
    """Max over `ksize` windows of NHWC `input` (TF's `tf.nn.max_pool2d`); padding never wins.

    >>> max_pool2d(jf.reshape(jf.range(16.), [1, 4, 4, 1]), 2, 2, "VALID").numpy().ravel()
    array([ 5.,  7., 13., 15.], dtype=float32)
    """
    return _pool("MaxPool", input, ksize, strides, padding, data_format, name)


def avg_pool2d(input, ksize, strides, padding, data_format="NHWC", name=None):  # noqa: A002
    """Mean over `ksize` windows (TF's `tf.nn.avg_pool2d`); `SAME` borders average real elements only.

    >>> x = jf.reshape(jf.range(16.0), [1, 4, 4, 1])
    >>> jf.nn.avg_pool2d(x, 2, 2, 'VALID').numpy()[0, :, :, 0]
    array([[ 2.5,  4.5],
           [10.5, 12.5]], dtype=float32)
    """
    return _pool("AvgPool", input, ksize, strides, padding, data_format, name)


def bias_add(value, bias, data_format=None, name=None):
    """`value + bias` along the last (channel) dimension (TF's `tf.nn.bias_add`).

    >>> bias_add(jf.zeros([2, 3]), [1., 2., 3.]).numpy()[0]
    array([1., 2., 3.], dtype=float32)
    """
    _data_format(None if data_format in (None, "NHWC", "N...C") else data_format)
    x = convert_to_tensor(value)
    return apply("BiasAdd", [x, convert_to_tensor(bias, dtype_hint=x.dtype)], {"data_format": "NHWC"},
                 name=name)[0]


def softplus(features, name=None):
    """log(1 + exp(x)), computed without overflow.

    >>> jf.nn.softplus([0.0, 100.0]).numpy()
    array([  0.6931472, 100.       ], dtype=float32)
    """
    return apply("Softplus", [convert_to_tensor(features)], name=name)[0]


def elu(features, name=None):
    """x for x > 0, exp(x) − 1 otherwise.

    >>> jf.nn.elu([-1.0, 2.0]).numpy()
    array([-0.63212055,  2.        ], dtype=float32)
    """
    return apply("Elu", [convert_to_tensor(features)], name=name)[0]


def leaky_relu(features, alpha=0.2, name=None):
    """x for x > 0, alpha·x otherwise (TF's default alpha is 0.2).

    >>> jf.nn.leaky_relu([-1.0, 2.0]).numpy()
    array([-0.2,  2. ], dtype=float32)
    """
    return apply("LeakyRelu", [convert_to_tensor(features)], {"alpha": float(alpha)}, name=name)[0]


def moments(x, axes, shift=None, keepdims=False, name=None):
    """(mean, variance) of `x` over `axes` (TF's `tf.nn.moments`), composed of primitives.

    >>> mean, variance = jf.nn.moments(jf.constant([1.0, 2.0, 3.0, 4.0]), axes=[0])
    >>> float(mean), float(variance)
    (2.5, 1.25)
    """
    x = convert_to_tensor(x)
    axes = [int(a) for a in axes]
    mean = M.reduce_mean(x, axis=axes, keepdims=True)
    variance = M.reduce_mean(M.square(M.subtract(x, A.stop_gradient(mean))), axis=axes, keepdims=True)
    if not keepdims:
        mean, variance = A.squeeze(mean, axes), A.squeeze(variance, axes)
    return mean, variance


def batch_normalization(x, mean, variance, offset, scale, variance_epsilon, name=None):
    """(x − mean) · scale / √(variance + ε) + offset (TF's `tf.nn.batch_normalization`).

    >>> jf.nn.batch_normalization(jf.constant([1.0, 3.0]), 2.0, 1.0, None, None, 0.0).numpy()
    array([-1.,  1.], dtype=float32)
    """
    inv = M.divide(1.0, M.sqrt(M.add(variance, variance_epsilon)))
    if scale is not None:
        inv = M.multiply(inv, scale)
    out = M.multiply(M.subtract(x, mean), inv)
    return out if offset is None else M.add(out, offset)


__all__ = ["conv2d", "conv2d_backprop_input", "conv2d_backprop_filter", "depthwise_conv2d",
           "depthwise_conv2d_backprop_input", "depthwise_conv2d_backprop_filter", "max_pool2d", "avg_pool2d",
           "bias_add", "softplus", "elu", "leaky_relu", "moments", "batch_normalization"]
