"""BatchNormalization: batch statistics while training, moving averages at inference.

Composed of primitives (`nn.moments`, `nn.batch_normalization`); the moving mean and
variance are non-trainable weights updated with `assign` in the training call (graph
nodes inside `fit`'s train step), `moving ← moving·momentum + batch·(1 − momentum)`.
"""
from __future__ import annotations

from typing import Any

from jitflow.runtime.ops import nn_conv_ops as N
from jitflow.runtime.keras import initializers as _init
from jitflow.runtime.keras.layers.base import InputSpec, Layer


class BatchNormalization(Layer):
    """Normalises the last axis (TF's `tf.keras.layers.BatchNormalization`, `axis=-1`)."""

    def __init__(self, axis: int = -1, momentum: float = 0.99, epsilon: float = 1e-3, center: bool = True,
                 scale: bool = True, beta_initializer: Any = "zeros", gamma_initializer: Any = "ones",
                 moving_mean_initializer: Any = "zeros", moving_variance_initializer: Any = "ones",
                 **kwargs: Any) -> None:
        super().__init__(**kwargs)
        if axis not in (-1,):
            raise ValueError(f'BatchNormalization "{self.name}": only axis=-1 (channels last) is supported; got {axis}')
        self.axis, self.momentum, self.epsilon = axis, float(momentum), float(epsilon)
        self.center, self.scale = center, scale
        self._inits = [_init.get(i) for i in (beta_initializer, gamma_initializer, moving_mean_initializer,
                                               moving_variance_initializer)]

    def build(self, input_shape) -> None:
        c = input_shape[-1]
        if c is None:
            raise ValueError(f'BatchNormalization "{self.name}": the last dimension must be known; got {input_shape}')
        beta_i, gamma_i, mean_i, var_i = self._inits
        self.gamma = self.add_weight("gamma", (c,), initializer=gamma_i) if self.scale else None
        self.beta = self.add_weight("beta", (c,), initializer=beta_i) if self.center else None
        self.moving_mean = self.add_weight("moving_mean", (c,), initializer=mean_i, trainable=False)
        self.moving_variance = self.add_weight("moving_variance", (c,), initializer=var_i, trainable=False)
        self.input_spec = InputSpec(min_ndim=2, axes={-1: c})
        self.built = True

    def call(self, inputs, training=None):
        if training:
            axes = list(range(inputs.ndim - 1))
            mean, variance = N.moments(inputs, axes)
            m = self.momentum
            self.moving_mean.assign(self.moving_mean * m + mean * (1.0 - m), read_value=False)
            self.moving_variance.assign(self.moving_variance * m + variance * (1.0 - m), read_value=False)
        else:
            mean, variance = self.moving_mean.read_value(), self.moving_variance.read_value()
        return N.batch_normalization(inputs, mean, variance, self.beta, self.gamma, self.epsilon)

    def get_config(self):
        return {**super().get_config(), "axis": self.axis, "momentum": self.momentum, "epsilon": self.epsilon,
                "center": self.center, "scale": self.scale}


__all__ = ["BatchNormalization"]
