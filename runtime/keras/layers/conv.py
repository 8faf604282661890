"""Convolution and pooling layers (NHWC): Conv2D, MaxPool2D, AveragePooling2D, global pools."""
from __future__ import annotations

from typing import Any, Callable, Optional, Sequence, Tuple, Union

from jitflow.runtime.ops import math_ops as M
from jitflow.runtime.ops import nn_conv_ops as N
from jitflow.runtime.keras import activations as _act
from jitflow.runtime.keras import initializers as _init
from jitflow.runtime.keras.layers.base import InputSpec, Layer
from jitflow.runtime.keras.layers.core import _config_of

IntPair = Union[int, Sequence[int]]


def _pair(value: IntPair, name: str, layer: str) -> Tuple[int, int]:
    if isinstance(value, int):
        return (value, value)
    values = tuple(int(v) for v in value)
    if len(values) != 2:
        raise ValueError(f'{layer}: {name} must be an int or a pair of ints; got {value!r}')
    return values


def _padding(value: str, layer: str) -> str:
    if not isinstance(value, str) or value.lower() not in ("same", "valid"):
        raise ValueError(f"{layer}: padding must be 'same' or 'valid'; got {value!r}")
    return value.lower()


def _data_format(value: Optional[str], layer: str) -> None:
    if value not in (None, "channels_last"):
        raise ValueError(f"{layer}: only data_format='channels_last' (NHWC) is supported; got {value!r}")


class Conv2D(Layer):
    """2-D convolution over NHWC images (TF's `tf.keras.layers.Conv2D`).

    >>> Conv2D(8, 3, padding="same")(jf.ones([1, 5, 5, 3])).shape
    TensorShape([1, 5, 5, 8])
    """

    def __init__(self, filters: int, kernel_size: IntPair, strides: IntPair = (1, 1), padding: str = "valid",
                 data_format: Optional[str] = None, dilation_rate: IntPair = (1, 1), activation: Any = None,
                 use_bias: bool = True, kernel_initializer: Any = "glorot_uniform", bias_initializer: Any = "zeros",
                 **kwargs: Any) -> None:
        super().__init__(**kwargs)
        where = f'{type(self).__name__} "{self.name}"'
        if not isinstance(filters, int) or filters <= 0:
            raise ValueError(f"{where}: filters must be a positive integer; got {filters!r}")
        _data_format(data_format, where)
        self.filters = filters
        self.kernel_size = _pair(kernel_size, "kernel_size", where)
        self.strides = _pair(strides, "strides", where)
        self.dilation_rate = _pair(dilation_rate, "dilation_rate", where)
        self.padding = _padding(padding, where)
        self.activation = _act.get(activation)
        self.use_bias = use_bias
        self.kernel_initializer = _init.get(kernel_initializer)
        self.bias_initializer = _init.get(bias_initializer)
        self.input_spec = InputSpec(ndim=4)

    def build(self, input_shape) -> None:
        if input_shape.rank != 4:
            raise ValueError(f'Input 0 of layer "{self.name}" ({type(self).__name__}) is incompatible with the layer: '
                             f"expected ndim=4 (batch, height, width, channels), found ndim={input_shape.rank}. Full "
                             f"shape received: {input_shape}")
        channels = input_shape[-1]
        if channels is None:
            raise ValueError(f'{type(self).__name__} "{self.name}": the channel dimension of the inputs must be known; '
                             f"got {input_shape}")
        self.kernel = self.add_weight("kernel", self.kernel_size + (channels, self.filters),
                                      initializer=self.kernel_initializer)
        self.bias = (self.add_weight("bias", (self.filters,), initializer=self.bias_initializer)
                     if self.use_bias else None)
        self.input_spec = InputSpec(ndim=4, axes={-1: channels})
        self.built = True

    def call(self, inputs):
        out = N.conv2d(inputs, self.kernel, strides=self.strides, padding=self.padding.upper(),
                       dilations=self.dilation_rate)
        if self.bias is not None:
            out = N.bias_add(out, self.bias)
        return self.activation(out)

    def get_config(self):
        return {**super().get_config(), "filters": self.filters, "kernel_size": self.kernel_size,
                "strides": self.strides, "padding": self.padding, "dilation_rate": self.dilation_rate,
                "activation": _act.serialize(self.activation), "use_bias": self.use_bias,
                "kernel_initializer": _config_of(self.kernel_initializer),
                "bias_initializer": _config_of(self.bias_initializer)}


class DepthwiseConv2D(Layer):
    """Depthwise 2-D convolution: each input channel convolved with `depth_multiplier` filters of its own
    (TF's `tf.keras.layers.DepthwiseConv2D`).

    >>> DepthwiseConv2D(3, depth_multiplier=2, padding="same")(jf.ones([1, 5, 5, 3])).shape
    TensorShape([1, 5, 5, 6])
    """

    def __init__(self, kernel_size: IntPair, strides: IntPair = (1, 1), padding: str = "valid",
                 depth_multiplier: int = 1, data_format: Optional[str] = None, dilation_rate: IntPair = (1, 1),
                 activation: Any = None, use_bias: bool = True, depthwise_initializer: Any = "glorot_uniform",
                 bias_initializer: Any = "zeros", **kwargs: Any) -> None:
        super().__init__(**kwargs)
        where = f'DepthwiseConv2D "{self.name}"'
        _data_format(data_format, where)
        if not isinstance(depth_multiplier, int) or depth_multiplier <= 0:
            raise ValueError(f"{where}: depth_multiplier must be a positive integer; got {depth_multiplier!r}")
        self.kernel_size = _pair(kernel_size, "kernel_size", where)
        self.strides = _pair(strides, "strides", where)
        self.dilation_rate = _pair(dilation_rate, "dilation_rate", where)
        self.padding = _padding(padding, where)
        self.depth_multiplier = depth_multiplier
        self.activation = _act.get(activation)
        self.use_bias = use_bias
        self.depthwise_initializer = _init.get(depthwise_initializer)
        self.bias_initializer = _init.get(bias_initializer)
        self.input_spec = InputSpec(ndim=4)

    def build(self, input_shape) -> None:
        channels = input_shape[-1]
        if channels is None:
            raise ValueError(f'DepthwiseConv2D "{self.name}": the channel dimension of the inputs must be known; '
                             f"got {input_shape}")
        self.depthwise_kernel = self.add_weight("depthwise_kernel",
                                                self.kernel_size + (channels, self.depth_multiplier),
                                                initializer=self.depthwise_initializer)
        self.bias = (self.add_weight("bias", (channels * self.depth_multiplier,), initializer=self.bias_initializer)
                     if self.use_bias else None)
        self.input_spec = InputSpec(ndim=4, axes={-1: channels})
        self.built = True

    def call(self, inputs):
        out = N.depthwise_conv2d(inputs, self.depthwise_kernel, self.strides, self.padding.upper(),
                                 dilations=self.dilation_rate)
        if self.bias is not None:
            out = N.bias_add(out, self.bias)
        return self.activation(out)

    def get_config(self):
        return {**super().get_config(), "kernel_size": self.kernel_size, "strides": self.strides,
                "padding": self.padding, "depth_multiplier": self.depth_multiplier,
                "dilation_rate": self.dilation_rate, "activation": _act.serialize(self.activation),
                "use_bias": self.use_bias}


class _Pool2D(Layer):
    _pool: Optional[Callable[..., Any]] = None  # the pooling op; each subclass sets it

    def __init__(self, pool_size: IntPair = (2, 2), strides: Optional[IntPair] = None, padding: str = "valid",
                 data_format: Optional[str] = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        where = f'{type(self).__name__} "{self.name}"'
        _data_format(data_format, where)
        self.pool_size = _pair(pool_size, "pool_size", where)
        self.strides = _pair(strides, "strides", where) if strides is not None else self.pool_size
        self.padding = _padding(padding, where)
        self.input_spec = InputSpec(ndim=4)

    def call(self, inputs):
        pool = type(self)._pool
        assert pool is not None, "MaxPooling2D and AveragePooling2D set _pool"
        return pool(inputs, self.pool_size, self.strides, self.padding.upper())

    def get_config(self):
        return {**super().get_config(), "pool_size": self.pool_size, "strides": self.strides, "padding": self.padding}


class MaxPooling2D(_Pool2D):
    """Max over `pool_size` windows (TF's `tf.keras.layers.MaxPooling2D` / `MaxPool2D`)."""
    _pool = staticmethod(N.max_pool2d)


class AveragePooling2D(_Pool2D):
    """Mean over `pool_size` windows (TF's `tf.keras.layers.AveragePooling2D` / `AvgPool2D`)."""
    _pool = staticmethod(N.avg_pool2d)


class GlobalAveragePooling2D(Layer):
    """(batch, h, w, c) → (batch, c): the mean over height and width."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.input_spec = InputSpec(ndim=4)

    def call(self, inputs):
        return M.reduce_mean(inputs, axis=[1, 2])


class GlobalMaxPooling2D(Layer):
    """(batch, h, w, c) → (batch, c): the max over height and width."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.input_spec = InputSpec(ndim=4)

    def call(self, inputs):
        return M.reduce_max(inputs, axis=[1, 2])


MaxPool2D = MaxPooling2D
AvgPool2D = AveragePooling2D
GlobalAvgPool2D = GlobalAveragePooling2D
GlobalMaxPool2D = GlobalMaxPooling2D

__all__ = ["Conv2D", "DepthwiseConv2D", "MaxPool2D", "MaxPooling2D", "AveragePooling2D", "AvgPool2D",
           "GlobalAveragePooling2D", "GlobalAvgPool2D", "GlobalMaxPooling2D", "GlobalMaxPool2D"]
