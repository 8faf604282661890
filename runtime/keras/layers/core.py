"""Core layers: Dense, activations, Flatten, Reshape, Dropout, Embedding, Add, Concatenate."""
from __future__ import annotations

import math
from typing import Any, Optional, Sequence

from jitflow.runtime.core import dtypes as _dt
from jitflow.runtime.core.errors import InvalidArgumentError
from jitflow.runtime.ops import array_ops as A
from jitflow.runtime.ops import math_ops as M
from jitflow.runtime.ops import nn_conv_ops as N
from jitflow.runtime.ops import random_ops as R
from jitflow.runtime.ops.indexing_ops import gather
from jitflow.runtime.core.shapes import format_dims
from jitflow.runtime.keras import activations as _act
from jitflow.runtime.keras import initializers as _init
from jitflow.runtime.keras.layers.base import InputSpec, Layer


def _config_of(obj: Any) -> Any:
    get_config = getattr(obj, "get_config", None)
    return {"class_name": type(obj).__name__, "config": get_config()} if get_config else _act.serialize(obj)


class Dense(Layer):
    """`activation(inputs · kernel + bias)` (TF's `tf.keras.layers.Dense`).

    >>> Dense(3)(jf.ones([2, 4])).shape
    TensorShape([2, 3])
    """

    def __init__(self, units: int, activation: Any = None, use_bias: bool = True,
                 kernel_initializer: Any = "glorot_uniform", bias_initializer: Any = "zeros", **kwargs: Any) -> None:
        super().__init__(**kwargs)
        if not isinstance(units, int) or units <= 0:
            raise ValueError(f'Dense "{self.name}": units must be a positive integer; got {units!r}')
        self.units = units
        self.activation = _act.get(activation)
        self.use_bias = use_bias
        self.kernel_initializer = _init.get(kernel_initializer)
        self.bias_initializer = _init.get(bias_initializer)
        self.input_spec = InputSpec(min_ndim=2)

    def build(self, input_shape) -> None:
        last = input_shape[-1] if input_shape.rank else None
        if last is None:
            raise ValueError(f'Dense "{self.name}": the last dimension of the inputs must be known; got input '
                             f"shape {input_shape}")
        self.kernel = self.add_weight("kernel", (last, self.units), initializer=self.kernel_initializer)
        self.bias = self.add_weight("bias", (self.units,), initializer=self.bias_initializer) if self.use_bias else None
        self.input_spec = InputSpec(min_ndim=2, axes={-1: last})
        self.built = True

    def call(self, inputs):
        dims = inputs._dims
        if dims is not None and len(dims) > 2:
            flat = A.reshape(inputs, [-1, dims[-1]])
            out = M.matmul(flat, self.kernel)
            if self.bias is not None:
                out = N.bias_add(out, self.bias)
            lead = [d if d is not None else -1 for d in dims[:-1]]
            out = A.reshape(out, lead + [self.units])
        else:
            out = M.matmul(inputs, self.kernel)
            if self.bias is not None:
                out = N.bias_add(out, self.bias)
        return self.activation(out)

    def get_config(self):
        return {**super().get_config(), "units": self.units, "activation": _act.serialize(self.activation),
                "use_bias": self.use_bias, "kernel_initializer": _config_of(self.kernel_initializer),
                "bias_initializer": _config_of(self.bias_initializer)}


class Activation(Layer):
    """Applies an activation by name or function."""

    def __init__(self, activation: Any, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.activation = _act.get(activation)

    def call(self, inputs):
        return self.activation(inputs)

    def get_config(self):
        return {**super().get_config(), "activation": _act.serialize(self.activation)}


class ReLU(Layer):
    """max(x, 0), optionally capped (`max_value`) and leaky below `threshold` (`negative_slope`)."""

    def __init__(self, max_value: Optional[float] = None, negative_slope: float = 0.0, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.max_value, self.negative_slope = max_value, negative_slope

    def call(self, inputs):
        return _act.relu(inputs, alpha=self.negative_slope, max_value=self.max_value)

    def get_config(self):
        return {**super().get_config(), "max_value": self.max_value, "negative_slope": self.negative_slope}


class LeakyReLU(Layer):
    """x for x ≥ 0, `negative_slope`·x below (Keras 3's name; Keras 2's `alpha` is accepted too)."""

    def __init__(self, negative_slope: float = 0.3, alpha: Optional[float] = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.negative_slope = float(alpha if alpha is not None else negative_slope)

    @property
    def alpha(self) -> float:
        return self.negative_slope

    def call(self, inputs):
        return N.leaky_relu(inputs, self.negative_slope)

    def get_config(self):
        return {**super().get_config(), "negative_slope": self.negative_slope}


class ELU(Layer):
    def __init__(self, alpha: float = 1.0, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.alpha = float(alpha)

    def call(self, inputs):
        return _act.elu(inputs, self.alpha)

    def get_config(self):
        return {**super().get_config(), "alpha": self.alpha}


class Softmax(Layer):
    def __init__(self, axis: int = -1, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.axis = axis

    def call(self, inputs):
        return M.softmax(inputs, axis=self.axis)

    def get_config(self):
        return {**super().get_config(), "axis": self.axis}


class Flatten(Layer):
    """(batch, d1, d2, ...) → (batch, d1·d2·...)."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.input_spec = InputSpec(min_ndim=1)

    def call(self, inputs):
        dims = inputs._dims
        rest = dims[1:]
        if any(d is None for d in rest):
            raise ValueError(f'Flatten "{self.name}": every dimension but the batch must be known; got input shape '
                             f"{format_dims(dims)}")
        return A.reshape(inputs, [-1 if dims[0] is None else dims[0], math.prod(rest)])


class Reshape(Layer):
    """Reshape every example to `target_shape` (one entry may be -1)."""

    def __init__(self, target_shape: Sequence[int], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.target_shape = tuple(int(d) for d in target_shape)

    def call(self, inputs):
        dims = inputs._dims
        size = math.prod(dims[1:]) if dims is not None and None not in dims[1:] else None
        want = math.prod(d for d in self.target_shape if d != -1)
        if size is not None and (size % want if -1 in self.target_shape else size != want):
            raise ValueError(f'Reshape "{self.name}": total size of the new array must be unchanged: input shape '
                             f"{format_dims(dims)}, target shape {list(self.target_shape)}")
        batch = -1 if dims is None or dims[0] is None else dims[0]
        if batch == -1 and -1 in self.target_shape:
            target = [size // want if d == -1 else d for d in self.target_shape]
        else:
            target = list(self.target_shape)
        return A.reshape(inputs, [batch] + target)

    def get_config(self):
        return {**super().get_config(), "target_shape": self.target_shape}


class Dropout(Layer):
    """Zeroes a fraction `rate` of the inputs while training and scales the rest by 1/(1 − rate)."""

    def __init__(self, rate: float, noise_shape: Optional[Sequence[int]] = None, seed: Optional[int] = None,
                 **kwargs: Any) -> None:
        super().__init__(**kwargs)
        if not 0 <= float(rate) < 1:
            raise ValueError(f'Dropout "{self.name}": rate must be in [0, 1); got {rate}')
        self.rate, self.noise_shape, self.seed = float(rate), noise_shape, seed

    def call(self, inputs, training=None):
        if not training or self.rate == 0:
            return A.identity(inputs)
        dims = inputs._dims
        shape = self.noise_shape if self.noise_shape is not None else dims
        if shape is None or any(d is None for d in shape):
            raise ValueError(f'Dropout "{self.name}": the noise shape must be fully known while training; got input '
                             f"shape {format_dims(dims)} (trace with a fixed batch size)")
        keep = M.greater_equal(R.uniform(list(shape), dtype=inputs.dtype, seed=self.seed), self.rate)
        scaled = M.multiply(inputs, 1.0 / (1.0 - self.rate))
        return A.where(keep, scaled, A.zeros_like(scaled))

    def get_config(self):
        return {**super().get_config(), "rate": self.rate, "noise_shape": self.noise_shape, "seed": self.seed}


class Embedding(Layer):
    """Integer ids → rows of a trainable (input_dim, output_dim) table."""

    def __init__(self, input_dim: int, output_dim: int, embeddings_initializer: Any = "uniform", **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.input_dim, self.output_dim = int(input_dim), int(output_dim)
        init = "random_uniform" if embeddings_initializer == "uniform" else embeddings_initializer
        self.embeddings_initializer = _init.get(init)

    def build(self, input_shape) -> None:
        self.embeddings = self.add_weight("embeddings", (self.input_dim, self.output_dim),
                                          initializer=self.embeddings_initializer)
        self.built = True

    def call(self, inputs):
        if not inputs.dtype.is_integer:
            inputs = A.cast(inputs, _dt.int32)
        return gather(self.embeddings, inputs)

    def get_config(self):
        return {**super().get_config(), "input_dim": self.input_dim, "output_dim": self.output_dim}


class Add(Layer):
    """The sum of a list of inputs of one shape."""

    def call(self, inputs):
        if not isinstance(inputs, (list, tuple)) or len(inputs) < 2:
            raise ValueError(f'Add "{self.name}": expected a list of at least 2 inputs; got {inputs!r}')
        out = inputs[0]
        for x in inputs[1:]:
            out = M.add(out, x)
        return out


class Concatenate(Layer):
    """Concatenates a list of inputs along `axis`."""

    def __init__(self, axis: int = -1, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.axis = axis

    def call(self, inputs):
        if not isinstance(inputs, (list, tuple)) or len(inputs) < 2:
            raise ValueError(f'Concatenate "{self.name}": expected a list of at least 2 inputs; got {inputs!r}')
        try:
            return A.concat(list(inputs), axis=self.axis)
        except InvalidArgumentError as e:
            shapes = ", ".join(format_dims(x._dims) for x in inputs)
            raise ValueError(f"inputs of shapes {shapes} cannot be concatenated on axis {self.axis}: {e}") from None

    def get_config(self):
        return {**super().get_config(), "axis": self.axis}


__all__ = ["Dense", "Activation", "ReLU", "LeakyReLU", "ELU", "Softmax", "Flatten", "Reshape", "Dropout",
           "Embedding", "Add", "Concatenate"]
